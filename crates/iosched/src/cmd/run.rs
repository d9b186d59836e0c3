//! `iosched run FILE.fio`: simulate a fio job file.

use super::sim_opts::{simulate_print_plot, SimArgs};
use anyhow::{Context, Result};
use sim::fio::{parse_job_file, parse_output_format, parse_terse_version};

/// Simulate a fio job file in virtual time and print fio's report.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iosched run examples/randread-4k.fio\n  iosched run examples/seeds/0-mq-deadline-head-request.fio --device ideal-sq --set mq-deadline.fifo_batch=1\n  SOURCE_DATE_EPOCH=0 iosched run examples/app-like.fio --output-format=json --seed 7 > out.json\n  iosched run examples/mq-deadline-mixed-prio.fio --device ssd-sata --plot clat.svg"
)]
pub struct Args {
    /// The fio job file.
    pub file: String,
    /// Output format, as fio's `--output-format`: normal, json, json+ or terse, or
    /// a comma-separated list of them (each printed once: terse, JSON, normal).
    #[arg(long, value_name = "FORMAT", default_value = "normal")]
    pub output_format: String,
    /// Terse output's version, as fio's `--terse-version` (3, 4 or 5).
    #[arg(long, value_name = "N", default_value = "3")]
    pub terse_version: String,
    /// Write the report to FILE instead of stdout (fio's `--output`).
    #[arg(long, value_name = "FILE")]
    pub output: Option<String>,
    /// Also draw the completion-latency CDF of every job and direction (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read job file '{}'", args.file))?;
    let mut input = parse_job_file(&args.file, &text)?;
    input.output.formats = parse_output_format(&args.output_format)
        .map_err(|e| anyhow::anyhow!("--output-format={}: {e}", args.output_format))?;
    input.output.terse_version = parse_terse_version(&args.terse_version)
        .map_err(|e| anyhow::anyhow!("--terse-version={}: {e}", args.terse_version))?;
    if args.output.is_some() {
        input.output.output_file = args.output.clone();
    }
    simulate_print_plot(input, &args.sim, args.plot.as_deref())
}
