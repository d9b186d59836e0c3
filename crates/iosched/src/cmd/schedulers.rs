//! `iosched schedulers`: list schedulers, tunables and variants.

use anyhow::{Context, Result};
use blk::elevator::{QueueParams, SCHEDULERS};
use std::io::Write as _;

/// List every scheduler with its tunables (sysfs name, unit, default, meaning) and the
/// seed-patch variants it offers. Defaults that depend on the queue are shown for
/// nr_requests=256 and HZ=250.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  iosched schedulers\n  iosched schedulers mq-deadline")]
pub struct Args {
    /// Show only this scheduler.
    pub name: Option<String>,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let params = QueueParams {
        hz: 250,
        ..Default::default()
    };
    let list: Vec<_> = match &args.name {
        Some(n) => vec![SCHEDULERS
            .iter()
            .find(|s| s.name == n)
            .with_context(|| blk::elevator::UnknownScheduler(n.clone()).to_string())?],
        None => SCHEDULERS.iter().collect(),
    };
    let mut out = super::output::stdout();
    writeln!(
        out,
        "Defaults that depend on the queue are shown for nr_requests={} and HZ={}.\n",
        params.nr_requests, params.hz
    )?;
    for s in list {
        let e = (s.make)(&params);
        writeln!(out, "{}: {}", s.name, s.about)?;
        let t = e.tunables();
        if t.is_empty() {
            writeln!(out, "  (no tunables)")?;
        }
        for t in t {
            writeln!(
                out,
                "  {:<18} {:>8} {:<9} {}",
                t.name, t.default, t.unit, t.help
            )?;
        }
        for v in e.variants() {
            writeln!(out, "  variant={:<13} {}", v.name, v.help)?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}
