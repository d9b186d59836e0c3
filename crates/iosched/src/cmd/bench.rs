//! `iosched bench`: simulator speed and memory.

use anyhow::Result;
use sim::bench;

/// Run the built-in workloads and print simulated requests per wall-clock second and
/// peak memory. Each workload runs twice, the second time 10x longer in simulated
/// time: equal peak memory shows that memory does not grow with simulated time.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  cargo run --release -- bench\n  iosched bench --simulated-ms 200"
)]
pub struct Args {
    /// Simulated time of the short run, ms (the long run is 10x this).
    #[arg(long, default_value_t = 1000)]
    pub simulated_ms: u64,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    if args.simulated_ms == 0 {
        anyhow::bail!("--simulated-ms must be at least 1");
    }
    println!(
        "{:<34} {:>12} {:>10} {:>9} {:>14} {:>12}",
        "workload", "requests", "sim s", "wall s", "requests/s", "peak RSS"
    );
    for w in bench::workloads() {
        for ms in [args.simulated_ms, args.simulated_ms * 10] {
            let r = bench::run(&w, ms);
            let rss = bench::peak_rss_bytes()
                .map(|b| format!("{:.1} MiB", b as f64 / 1048576.0))
                .unwrap_or_else(|| "n/a".into());
            println!(
                "{:<34} {:>12} {:>10.3} {:>9.3} {:>14.0} {:>12}",
                r.name,
                r.requests,
                r.simulated_secs,
                r.wall_secs,
                r.rate(),
                rss
            );
        }
    }
    Ok(())
}
