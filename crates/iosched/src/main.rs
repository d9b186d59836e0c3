//! The `iosched` command line.

mod cmd;

use clap::{Parser, Subcommand};

/// Linux block-layer I/O schedulers, reimplemented: simulate, replay, validate.
#[derive(Parser, Debug)]
#[command(name = "iosched", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    SchedReplay(cmd::sched_replay::Args),
    KernelTrace(cmd::kernel_trace::Args),
}

fn main() {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::SchedReplay(a) => cmd::sched_replay::run(a),
        Command::KernelTrace(a) => cmd::kernel_trace::run(a),
    };
    if let Err(err) = res {
        eprintln!("error: {err:#}");
        std::process::exit(2);
    }
}
