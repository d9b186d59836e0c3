//! `iosched replay --format F FILE`: replay a block trace or fio iolog under any
//! scheduler and device, open loop (at the trace's timestamps) or closed loop (a
//! fixed depth), and print fio's report with the replay's own figures; or, with
//! `--format disksim-validate`, replay a measured device trace against a DiskSim
//! disk model and compare service times (DiskSim's demerit figure).

use super::sim_opts::{run_options, run_ticking, SimArgs, Work};
use anyhow::{anyhow, bail, Result};
use devices::disksim::{demerit, trace, TableDisk};
use devices::ProfileKind;
use sim::fio::{parse_command_line, parse_output_format};
use sim::trace::replay::{OpenLoop, Placement, ReplaySource, ReplayStream};
use sim::trace::{CheckRules, Format};
use std::io::Write as _;
use std::path::Path;

/// Replay a block trace or fio iolog, or a DiskSim validation trace.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Formats: blkparse, blktrace, tracefs, msr, mqsim, disksim-ascii, fio (an iolog), disksim-validate.\n\nExamples:\n  iosched replay --format blkparse crates/sim/tests/data/traces/sample.blkparse --device ssd-sata --sched bfq\n  iosched replay --format msr crates/sim/tests/data/traces/sample.msr.csv --device hdd-7200 --time-scale 2\n  iosched replay --format mqsim crates/sim/tests/data/traces/sample.mqsim --iodepth 32 --sched kyber\n  iosched replay --format tracefs crates/sim/tests/data/kernel/kyber-randread.txt --device nvme-gen4 --output-format=json\n  iosched devices import-disksim data/disksim-valid/atlas_III.parv --out atlas_III.toml\n  iosched replay --format disksim-validate data/disksim-valid/atlas_III.trace --device-file atlas_III.toml --plot atlas_III.svg\n  iosched replay --format disksim-validate data/disksim-valid/atlas_III.trace --device-file data/disksim-valid/atlas_III.parv --write_lat_log=atlas"
)]
pub struct Args {
    /// Trace format: blkparse, blktrace, tracefs, msr, mqsim, disksim-ascii, fio,
    /// disksim-validate.
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// The trace (for blktrace: a per-CPU file, a `blkparse -d` dump, or the
    /// capture's name, reading every NAME.blktrace.N).
    pub file: String,
    /// Closed loop: keep N requests in flight, ignoring the timestamps (with
    /// --time-scale: open loop, at most N in flight).
    #[arg(long, value_name = "N")]
    pub iodepth: Option<u32>,
    /// Open loop (the default): issue each request at its timestamp divided by X
    /// (2 replays twice as fast), counted from the trace's first.
    #[arg(long, value_name = "X")]
    pub time_scale: Option<f64>,
    /// Sort the trace by timestamp first (reads it into memory); without it an
    /// unsorted trace is an error.
    #[arg(long)]
    pub sort: bool,
    /// Fold offsets beyond the device back onto it (modulo its size); without it
    /// they are an error.
    #[arg(long)]
    pub wrap: bool,
    /// The I/O engine whose submission path the replay uses (fio's names).
    #[arg(long, value_name = "ENGINE", default_value = "libaio")]
    pub ioengine: String,
    /// Output format, as fio's `--output-format` (normal, json, json+, terse).
    #[arg(long, value_name = "FORMAT", default_value = "normal")]
    pub output_format: String,
    /// Write the report to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<String>,
    /// Write fio-style latency logs with this prefix (as fio's `write_lat_log`).
    #[arg(long = "write_lat_log", value_name = "PREFIX")]
    pub write_lat_log: Option<String>,
    /// Plot both service-time CDFs to this SVG file (disksim-validate).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    if args.format == "disksim-validate" {
        return run_disksim(args);
    }
    let Some(format) = Format::from_name(&args.format) else {
        let names: Vec<&str> = Format::NAMES.iter().map(|(n, _)| *n).collect();
        bail!(
            "unknown --format '{}': expected one of {}, disksim-validate",
            args.format,
            names.join(", ")
        );
    };
    run_trace(args, format)
}

/// The open- or closed-loop timing asked for: the speed (`None`: closed loop)
/// and the depth cap.
fn timing(args: &Args) -> Result<(Option<f64>, u32)> {
    if let Some(x) = args.time_scale {
        if !(x.is_finite() && x > 0.0) {
            bail!("--time-scale {x}: expected a positive number (2 = twice as fast)");
        }
    }
    if args.iodepth == Some(0) {
        bail!("--iodepth 0: expected at least 1");
    }
    Ok(match (args.time_scale, args.iodepth) {
        (None, Some(n)) => (None, n),
        (s, n) => (
            Some(s.unwrap_or(1.0)),
            n.unwrap_or(sim::fio::MAX_IODEPTH as u32),
        ),
    })
}

fn run_trace(args: Args, format: Format) -> Result<()> {
    let opts = run_options(&args.sim)?;
    let (speed, depth) = timing(&args)?;
    let path = Path::new(&args.file).to_path_buf();
    let info = opts.device.build().info().clone();
    let capacity = info.capacity_sectors * 512;
    let rules = CheckRules {
        capacity,
        wrap: args.wrap,
        allow_unsorted: args.sort,
        check_units: speed.is_some(),
    };
    let summary = sim::trace::check(format, &path, &rules)?;
    if summary.ios == 0 {
        bail!(
            "{}: no requests to replay{}",
            args.file,
            if format == Format::Tracefs {
                " (a tracefs replay reads block_getrq events, which `iosched kernel-trace record` enables)"
            } else {
                ""
            }
        );
    }
    let mut cmdline = vec![
        "--name=replay".to_string(),
        format!("--ioengine={}", args.ioengine),
        "--direct=1".to_string(),
        format!("--iodepth={depth}"),
    ];
    if let Some(l) = &args.write_lat_log {
        cmdline.push(format!("--write_lat_log={l}"));
    }
    let mut input = parse_command_line(&cmdline)?;
    input.output.formats = parse_output_format(&args.output_format)
        .map_err(|e| anyhow!("--output-format={}: {e}", args.output_format))?;
    if args.output.is_some() {
        input.output.output_file = args.output.clone();
    }
    let origin = summary.first_ns.unwrap_or(0);
    let place = Placement {
        capacity,
        wrap: args.wrap,
        nr_cpus: opts.nr_cpus,
    };
    let sort = args.sort;
    let p = path.clone();
    let source = ReplaySource::new(move |shared| {
        let r = sim::trace::open_sorted(format, &p, sort)?;
        Ok(Box::new(OpenLoop::new(r, origin, speed, place, shared)) as Box<dyn ReplayStream>)
    });
    let mut plan = sim::runner::plan(&input, &opts)?;
    for c in &mut plan.clones {
        c.replay = Some(source.clone());
        c.sync_report = sim::job::SyncReport::Fsync;
        c.io_limit = u64::MAX;
        c.time_based = false;
        c.number_ios = None;
    }
    plan.expected_ns = None;
    plan.expected_bytes = Some(summary.bytes);
    let work = Work::of(&plan);
    super::signals::stop_gracefully();
    let bar = super::sim_opts::progress_bar("replaying");
    bar.set_length(work.len);
    let mut report = run_ticking(&input, &opts, plan, &bar, work)?;
    bar.finish_and_clear();
    let shared = source.shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = &shared.error {
        return Err(anyhow!("{e}"));
    }
    add_replay_section(&mut report, &args, format, &summary, speed, depth, &shared);
    drop(shared);
    let text = super::sim_opts::report_text(&input, &report);
    match &input.output.output_file {
        Some(path) => super::output::write_file(path, text.as_bytes())?,
        None => super::output::print(&text)?,
    }
    super::signals::check()?;
    Ok(())
}

/// Percentiles the replay section reports.
const PCTS: [f64; 7] = [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0];

/// The replay's own figures, after fio's report (text footer and JSON
/// `iosched.replay`): what was replayed and how, open loop's lateness, and the
/// trace's recorded service times beside the simulated completion latencies.
fn add_replay_section(
    report: &mut sim::report::RunReport,
    args: &Args,
    format: Format,
    s: &sim::trace::TraceSummary,
    speed: Option<f64>,
    depth: u32,
    shared: &sim::trace::replay::ReplayShared,
) {
    let f = &mut report.footer;
    let mode = match speed {
        Some(x) => format!("open loop, time scale {x}, at most {depth} in flight"),
        None => format!("closed loop, {depth} in flight"),
    };
    f.push(format!(
        "Replay of {} ({}): {} requests ({} reads, {} writes, {} trims, {} syncs), {}; {} issued",
        args.file,
        format.name(),
        s.ios,
        s.per_op[0],
        s.per_op[1],
        s.per_op[2],
        s.per_op[3],
        mode,
        shared.issued
    ));
    if !s.unknown.is_empty() {
        f.push(format!(
            "  skipped trace entries: {}",
            sim::trace::unknown_line(&s.unknown)
        ));
    }
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let mut json = serde_json::json!({
        "file": args.file,
        "format": format.name(),
        "requests": s.ios,
        "issued": shared.issued,
        "mode": if speed.is_some() { "open" } else { "closed" },
        "iodepth": depth,
        "skipped": s.unknown,
    });
    if let Some(h) = &shared.lateness {
        let row: Vec<String> = PCTS
            .iter()
            .map(|&p| format!("p{p}={}", us(h.value_at_quantile(p / 100.0))))
            .collect();
        f.push(format!(
            "  lateness (issued after its timestamp, us): {}",
            row.join(" ")
        ));
        json["lateness_ns"] = PCTS
            .iter()
            .map(|&p| {
                (
                    format!("{p}"),
                    serde_json::json!(h.value_at_quantile(p / 100.0)),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if let Some(rec) = &s.service_ns {
        let what = match format {
            Format::Msr => "response time",
            _ => "issue to complete (D to C)",
        };
        f.push(format!(
            "  service time, us: recorded in the trace ({what}) vs simulated clat:"
        ));
        let mut sim_row = Vec::new();
        for &p in &PCTS {
            let r = rec.value_at_quantile(p / 100.0);
            let simulated = merged_clat(report, p);
            sim_row.push((r, simulated));
        }
        let f = &mut report.footer;
        for (p, (r, m)) in PCTS.iter().zip(&sim_row) {
            f.push(format!("    p{:<6} {:>12} {:>12}", p, us(*r), us(*m)));
        }
        json["recorded_service_ns"] = PCTS
            .iter()
            .zip(&sim_row)
            .map(|(p, (r, _))| (format!("{p}"), serde_json::json!(r)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if let Some(serde_json::Value::Object(m)) = &mut report.extra {
        m.insert("replay".into(), json);
    }
}

/// The simulated completion latency at percentile `p` over every job and
/// direction (the replay has one job; reads and writes together).
fn merged_clat(report: &sim::report::RunReport, p: f64) -> u64 {
    let mut all = sim::stats::LatHist::new();
    for j in &report.jobs {
        for d in sim::stats::Dir::ALL {
            all.merge(&j.stats.dir(d).clat);
        }
    }
    all.percentile(p)
}

fn load_disk(path: &str) -> Result<(String, TableDisk)> {
    let p = Path::new(path);
    if p.extension().is_some_and(|e| e == "parv") {
        let imp = devices::disksim::import(p)?;
        return Ok((imp.name.clone(), TableDisk::new(&imp.name, imp.params)));
    }
    let prof = devices::load_profile_file(p)?;
    match prof.kind {
        ProfileKind::HddTable(t) => Ok((prof.name.clone(), TableDisk::new(&prof.name, *t))),
        _ => bail!(
            "{path}: model '{}' cannot replay disksim-validate traces; use an hdd-table profile (`iosched devices import-disksim`)",
            prof.model()
        ),
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// `--format disksim-validate`: one request at a time against a DiskSim model.
fn run_disksim(args: Args) -> Result<()> {
    let Some(device_file) = args.sim.target.device_file.as_deref() else {
        bail!("--format disksim-validate needs --device-file (an hdd-table profile or a DiskSim .parv)");
    };
    let (name, mut disk) = load_disk(device_file)?;
    let reqs = trace::read_trace(Path::new(&args.file))?;
    if reqs.is_empty() {
        bail!("{}: no requests", args.file);
    }
    let out = trace::replay(&mut disk, &reqs);
    let sim: Vec<f64> = out.iter().map(|r| r.sim_ms).collect();
    let real: Vec<f64> = out.iter().map(|r| r.real_ms).collect();
    let d = demerit::demerit(&sim, &real);
    let mut ss = sim.clone();
    ss.sort_by(f64::total_cmp);
    let mut rs = real.clone();
    rs.sort_by(f64::total_cmp);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // No wall time in the output: the same trace and profile give the same bytes.
    let mut text_out = crate::cmd::output::stdout();
    writeln!(
        text_out,
        "replay {} on {name}: {} requests ({} reads, {} writes)",
        args.file,
        reqs.len(),
        reqs.iter().filter(|r| !r.write).count(),
        reqs.iter().filter(|r| r.write).count(),
    )?;
    writeln!(text_out, "service time (ms)   simulated    measured")?;
    writeln!(
        text_out,
        "  mean            {:>11.3} {:>11.3}",
        mean(&sim),
        mean(&real)
    )?;
    for q in [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0] {
        writeln!(
            text_out,
            "  p{:<14} {:>11.3} {:>11.3}",
            format!("{}", q * 100.0),
            quantile(&ss, q),
            quantile(&rs, q)
        )?;
    }
    writeln!(
        text_out,
        "demerit (DiskSim rms of the CDF distance): {d:.3} ms"
    )?;
    text_out.flush()?;
    drop(text_out);
    if let Some(prefix) = &args.write_lat_log {
        // fio's clat log with log_offset=1 (time ms, clat ns, direction, bytes,
        // offset, priority), written whole or not at all.
        let path = sim::iolog::log_file_name(prefix, sim::iolog::LogKind::Clat, 1, true);
        let params = sim::iolog::LogParams {
            offset: true,
            ..Default::default()
        };
        let mut text = Vec::new();
        for (r, o) in reqs.iter().zip(&out) {
            let sample = sim::iolog::Sample {
                time_ms: ((o.arrive_ms + o.sim_ms).round()) as u64,
                value: (o.sim_ms * 1e6).round() as u64,
                ddir: u8::from(r.write),
                bs: r.bcount as u64 * 512,
                offset: r.blkno * 512,
                ..Default::default()
            };
            sim::iolog::format_sample(&mut text, &params, &sample);
        }
        let text = String::from_utf8(text).map_err(|e| anyhow!("{path}: {e}"))?;
        crate::cmd::output::write_file(&path, text.as_bytes())?;
        eprintln!("wrote {path}");
    }
    if let Some(svg) = &args.plot {
        let series = vec![
            ("measured".to_string(), demerit::binned_cdf(&real)),
            ("simulated".to_string(), demerit::binned_cdf(&sim)),
        ];
        crate::cmd::plot::cdf_lines(
            svg,
            &format!("{name}: service time CDF (demerit {d:.3} ms)"),
            "service time (ms)",
            &series,
        )?;
        eprintln!("wrote {svg}");
    }
    Ok(())
}
