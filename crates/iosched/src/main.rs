//! `iosched`: the Linux block layer's I/O schedulers, rebuilt and put to work.
//!
//! One module per subcommand under `cmd/`; this file only parses the command line and
//! turns errors into one clear message and exit code 2.

use iosched::cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Simulate fio jobs against the kernel's I/O schedulers and device models in
/// virtual time, deterministically; check scheduler decisions against the kernel.
#[derive(Parser, Debug)]
#[command(name = "iosched", version, about, long_about = None)]
#[command(
    after_help = "Examples:\n  iosched run examples/randread-4k.fio\n  iosched fio --name=r --rw=randread --bs=4k --size=1g --direct=1 --ioengine=libaio --iodepth=32\n  iosched schedulers\n  iosched devices\n  iosched hosts\n  iosched serve --device nvme-gen4 --size 8g"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a fio job file and print fio's report.
    Run(cmd::run::Args),
    /// Simulate a job given in fio's own command-line syntax.
    Fio(cmd::fio::Args),
    /// List device profiles and their parameters.
    Devices(cmd::devices::Args),
    /// List schedulers with their tunables and variants.
    Schedulers(cmd::schedulers::Args),
    /// List host profiles: CPUs, what each step of an I/O costs, locks.
    Hosts(cmd::hosts::Args),
    /// Run one job under several settings and compare the results side by side.
    Compare(cmd::compare::Args),
    /// Run a grid of settings × seeds in parallel into one table (CSV, Parquet); shards, resumes.
    Sweep(cmd::sweep::Args),
    /// Write one self-contained HTML page of runs, sweeps and fio logs: tables and charts.
    Report(cmd::report::Args),
    /// Measure simulator speed and memory on built-in workloads.
    Bench(cmd::bench::Args),
    /// Replay a block trace or fio iolog under any scheduler and device (or a DiskSim
    /// validation trace against a disk model).
    Replay(cmd::replay::Args),
    /// Replay a scheduler conformance trace and print each dispatch decision.
    SchedReplay(cmd::sched_replay::Args),
    /// Record the running kernel's scheduler decisions, or compare ours with them.
    KernelTrace(cmd::kernel_trace::Args),
    /// Serve a modelled disk in real time over NBD (fio's nbd engine, qemu, nbdcopy).
    Serve(cmd::serve::Args),
}

fn main() -> ExitCode {
    // Like other Unix filters, end quietly when the reader of stdout goes away
    // (`iosched ... | head`) instead of failing a write; Rust ignores SIGPIPE by default.
    // SAFETY: restoring a signal's default disposition at start-up, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // `kernel-trace record` installs its own handlers: it must tear down what it
    // set up in the kernel before it exits.
    if !matches!(&cli.command, Command::KernelTrace(a) if a.is_record()) {
        if let Err(e) = cmd::signals::install() {
            eprintln!("error: cannot handle signals: {e}");
            return ExitCode::from(2);
        }
    }
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Fio(a) => cmd::fio::run(a),
        Command::Devices(a) => cmd::devices::run(a),
        Command::Schedulers(a) => cmd::schedulers::run(a),
        Command::Hosts(a) => cmd::hosts::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::SchedReplay(a) => cmd::sched_replay::run(a),
        Command::KernelTrace(a) => cmd::kernel_trace::run(a),
        Command::Serve(a) => cmd::serve::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", escape_controls(&format!("{e:#}")));
            match e.downcast_ref::<cmd::signals::Interrupted>() {
                Some(i) => ExitCode::from((128 + i.0).clamp(0, 255) as u8),
                None => ExitCode::from(2),
            }
        }
    }
}

/// Error messages quote their input (a job file's value, a trace line); a terminal
/// must not interpret what the input smuggled in (`ESC [2J`, a bell, a carriage
/// return hiding the real message), so control characters other than newline and tab
/// are shown escaped, as `\u{1b}`.
fn escape_controls(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            super::escape_controls("a\u{1b}[2Jb\rc\nd\u{7}\u{9b}"),
            "a\\u{1b}[2Jb\\rc\nd\\u{7}\\u{9b}"
        );
    }
}
