//! `iosched bench`: simulator speed and memory, and the CPU cost of each scheduler.

use anyhow::{bail, Context, Result};
use blk::bench::BenchConfig;
use sim::bench;
use std::io::Write as _;

use super::sim_opts::parse_set;

/// Run the built-in workloads and print simulated requests per wall-clock second and
/// peak memory. Each workload runs twice, the second time 10x longer in simulated
/// time: equal peak memory shows that memory does not grow with simulated time; and
/// each on the free host and on the default host model, with the host model's speed
/// as a share of the free host's (what the CPU model costs the simulator). Then
/// time each scheduler alone: insert + dispatch + complete per request with 64, 1,024
/// and 16,384 requests queued.
///
/// When fio is installed (and not `--no-fio`), fio's null engine runs first in the
/// same process tree (`fio --ioengine=null --rw=randread --bs=4k --iodepth=32`,
/// one job, 2 s): its I/Os per wall second are the yardstick, and every workload's
/// rate is also printed as a multiple of it.
///
/// With `--sched`, `--set` or `--vary` only the scheduler timing runs, for the chosen
/// scheduler(s) and settings: the way to measure a patch whose effect is CPU time
/// (seed 3: `--sched mq-deadline --cpus 128 --vary
/// mq-deadline.variant=mainline,per-cpu-stats`).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  cargo run --release -- bench\n  iosched bench --simulated-ms 200\n  \
     iosched bench --sched mq-deadline --cpus 128 --vary mq-deadline.variant=mainline,per-cpu-stats"
)]
pub struct Args {
    /// Simulated time of each workload's short run, ms, times the workload's own
    /// scale (x1 for ideal and nvme-gen4, x10 for the hdd-7200 sequential read,
    /// x200 for the hdd-7200 random read, so that enough requests complete); the
    /// long run is 10x the short one. The scheduler timing does not use it.
    #[arg(long, default_value_t = 1000)]
    pub simulated_ms: u64,
    /// Time only this scheduler (repeatable).
    #[arg(long = "sched", value_name = "NAME")]
    pub sched: Vec<String>,
    /// CPUs of the benchmarked queue; requests come from each in turn.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub cpus: u32,
    /// Scheduler tunable for the timing, `SCHED.NAME=VALUE` (repeatable).
    #[arg(long = "set", value_name = "SCHED.NAME=VALUE")]
    pub set: Vec<String>,
    /// One row per value: `SCHED.NAME=V1,V2,...`.
    #[arg(long = "vary", value_name = "SCHED.NAME=V1,V2")]
    pub vary: Option<String>,
    /// Requests kept queued, one column each.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 1024, 16_384])]
    pub queued: Vec<usize>,
    /// Timed steps per figure (after a 10 % warm-up).
    #[arg(long, default_value_t = 200_000)]
    pub steps: u32,
    /// Do not run fio's null engine for comparison.
    #[arg(long)]
    pub no_fio: bool,
}

/// fio's null engine's I/Os per wall second (`fio --ioengine=null --rw=randread
/// --bs=4k --iodepth=32`, one job, 2 s), if fio runs here.
fn fio_null_rate() -> Option<f64> {
    let out = std::process::Command::new("fio")
        .args([
            "--name=null",
            "--ioengine=null",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=32",
            "--size=1t",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let read = &v["jobs"][0]["read"];
    let ios = read["total_ios"].as_f64()?;
    let ms = read["runtime"].as_f64()?;
    (ms > 0.0).then(|| ios * 1000.0 / ms)
}

/// One row of the scheduler table: a scheduler and the tunables written for it.
struct Row {
    label: String,
    sched: String,
    tunables: Vec<(String, String)>,
}

fn rows(args: &Args) -> Result<Vec<Row>> {
    let mut sets = Vec::new();
    for s in &args.set {
        sets.push(parse_set(s)?);
    }
    let scheds: Vec<String> = if args.sched.is_empty() {
        blk::elevator::SCHEDULERS
            .iter()
            .map(|s| s.name.to_string())
            .collect()
    } else {
        args.sched.clone()
    };
    for (ns, _, _) in &sets {
        if !scheds.contains(ns) {
            bail!("--set {ns}.…: scheduler {ns} is not benchmarked (add --sched {ns})");
        }
    }
    let vary = match &args.vary {
        None => None,
        Some(v) => {
            let (key, vals) = v
                .split_once('=')
                .with_context(|| format!("--vary {v}: expected SCHED.NAME=V1,V2,..."))?;
            let values: Vec<String> = vals.split(',').map(str::to_string).collect();
            if values.iter().any(String::is_empty) {
                bail!("--vary {v}: expected SCHED.NAME=V1,V2,... with non-empty values");
            }
            let (ns, name, _) = parse_set(&format!("{key}={}", values[0]))?;
            if !scheds.contains(&ns) {
                bail!("--vary {v}: scheduler {ns} is not benchmarked (add --sched {ns})");
            }
            Some((ns, name, values))
        }
    };
    let mut out = Vec::new();
    for sched in &scheds {
        let base: Vec<(String, String)> = sets
            .iter()
            .filter(|(ns, _, _)| ns == sched)
            .map(|(_, k, v)| (k.clone(), v.clone()))
            .collect();
        match &vary {
            Some((ns, name, values)) if ns == sched => {
                for v in values {
                    let mut t = base.clone();
                    t.push((name.clone(), v.clone()));
                    out.push(Row {
                        label: format!("{sched} {name}={v}"),
                        sched: sched.clone(),
                        tunables: t,
                    });
                }
            }
            _ => out.push(Row {
                label: sched.clone(),
                sched: sched.clone(),
                tunables: base,
            }),
        }
    }
    Ok(out)
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    if args.simulated_ms == 0 {
        bail!("--simulated-ms must be at least 1");
    }
    if args.cpus == 0 {
        bail!("--cpus must be at least 1");
    }
    if args.queued.is_empty() || args.queued.contains(&0) {
        bail!("--queued: expected a list of request counts, each at least 1");
    }
    let rows = rows(&args)?;
    // Validate every row's scheduler and tunables before printing anything.
    for r in &rows {
        let cfg = BenchConfig {
            nr_cpus: args.cpus,
            tunables: r.tunables.clone(),
        };
        blk::bench::SchedBench::with_config(&r.sched, 1, &cfg)?;
    }
    let only_scheds = !args.sched.is_empty() || !args.set.is_empty() || args.vary.is_some();
    let mut out = super::output::stdout();
    if !only_scheds {
        let fio = if args.no_fio { None } else { fio_null_rate() };
        match fio {
            Some(r) => writeln!(
                out,
                "fio null engine (randread 4k qd32, 1 job): {r:.0} I/Os per wall second\n"
            )?,
            None if !args.no_fio => writeln!(out, "fio null engine: fio not found or failed\n")?,
            None => {}
        }
        writeln!(
            out,
            "{:<38} {:>10} {:>12} {:>10} {:>9} {:>14} {:>8} {:>12}",
            "workload", "host", "requests", "sim s", "wall s", "requests/s", "x fio", "peak RSS"
        )?;
        let hosts = [host::host("free")?, host::host(host::DEFAULT_HOST)?];
        let mut shares = Vec::new();
        for w in bench::workloads() {
            for ms in [args.simulated_ms, args.simulated_ms * 10] {
                let mut rates = Vec::new();
                for h in &hosts {
                    let r = bench::run_on(&w, ms, h);
                    let rss = bench::peak_rss_bytes()
                        .map(|b| format!("{:.1} MiB", b as f64 / 1048576.0))
                        .unwrap_or_else(|| "n/a".into());
                    let vs_fio = fio
                        .map(|f| format!("{:.2}", r.rate() / f))
                        .unwrap_or_else(|| "-".into());
                    writeln!(
                        out,
                        "{:<38} {:>10} {:>12} {:>10.3} {:>9.3} {:>14.0} {:>8} {:>12}",
                        r.name,
                        h.name,
                        r.requests,
                        r.simulated_secs,
                        r.wall_secs,
                        r.rate(),
                        vs_fio,
                        rss
                    )?;
                    rates.push(r.rate());
                }
                if ms == args.simulated_ms * 10 {
                    shares.push((w.name, rates[1] / rates[0].max(1e-9)));
                }
            }
        }
        writeln!(out)?;
        writeln!(
            out,
            "host model speed ({} vs free, requests per wall second, long runs):",
            host::DEFAULT_HOST
        )?;
        for (name, share) in shares {
            writeln!(out, "  {name:<38} {:>5.0} %", share * 100.0)?;
        }
        writeln!(out)?;
    }
    writeln!(out,
        "scheduler insert+dispatch+complete, ns per request (lower is better), {} CPUs, by requests queued",
        args.cpus
    )?;
    let width = rows.iter().map(|r| r.label.len()).max().unwrap_or(9).max(9);
    let mut head = format!("{:<width$}", "scheduler");
    for q in &args.queued {
        head.push_str(&format!(" {q:>10}"));
    }
    writeln!(out, "{head}")?;
    for r in &rows {
        let cfg = BenchConfig {
            nr_cpus: args.cpus,
            tunables: r.tunables.clone(),
        };
        let mut line = format!("{:<width$}", r.label);
        for &queued in &args.queued {
            let ns = blk::bench::ns_per_request_with(&r.sched, queued, args.steps, &cfg)?;
            line.push_str(&format!(" {ns:>10.0}"));
        }
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}
