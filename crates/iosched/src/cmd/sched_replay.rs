//! `iosched sched-replay`: replay a scheduler conformance trace.

use anyhow::Context;
use std::path::PathBuf;

/// Replay a scheduler conformance trace (JSON Lines: a header, then insert /
/// dispatch / complete ops) through one scheduler in the replay environment and print
/// one `{"t":T,"id":ID}` line per dispatch op (`"id":null` when nothing was
/// dispatched). On any error in the trace nothing is printed on stdout; the error
/// names the file and line.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  iosched sched-replay crates/sim/tests/data/none-basic.jsonl\n\n\
Trace format: docs/trace-format.md in the iosched repository."
)]
pub struct Args {
    /// The conformance trace (`-` for stdin).
    pub file: PathBuf,
}

/// Run the subcommand.
pub fn run(args: Args) -> anyhow::Result<()> {
    let name = args.file.display().to_string();
    let text = if name == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading stdin")?;
        s
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {name}"))?
    };
    // The whole output is built first so that a failing trace prints nothing.
    let out = sim::replay::replay_to_string(&text, &name)?;
    super::output::print(&out)
}
