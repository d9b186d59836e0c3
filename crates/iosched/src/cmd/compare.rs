//! `iosched compare FILE --vary ...`: one job under several settings, side by side.
//!
//! This is how a seed patch's experiment is reproduced with one command: the same job,
//! the same seed, run once per variant (e.g. `mq-deadline.variant=mainline,head-request`),
//! with the figures the patch mail quotes in one table and, on request, a chart.
//! With `--seeds N` every variant runs under N run seeds, and the table gives each
//! figure's mean and 95 % interval and says, for every variant against the first,
//! whether the difference is larger than the seed-to-seed spread
//! ([`sim::spread`]).

use super::plot;
use super::sim_opts::{parse_set, progress_bar, run_options, run_ticking, SimArgs, Work};
use anyhow::{bail, Context, Result};
use serde_json::json;
use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::stats::{Dir, JobStats};
use std::io::Write as _;

/// Run one fio job file once per combination of the `--vary` settings and print a
/// table of IOPS, bandwidth, latency and merges per variant.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iosched compare examples/seeds/0-mq-deadline-head-request.fio --device raid0-2x-mg04aca400n --set mq-deadline.fifo_batch=1 --vary mq-deadline.variant=mainline,head-request\n  iosched compare examples/randread-4k.fio --vary sched=none,mq-deadline --vary device=ideal,ideal-sq --plot cmp.svg\n  iosched compare examples/randread-4k.fio --device hdd-7200 --vary sched=none,mq-deadline --seeds 5"
)]
pub struct Args {
    /// The fio job file.
    pub file: String,
    /// `NS.NAME=V1,V2,...` (a `--set` key with several values), or `sched=A,B` /
    /// `device=A,B`. Repeatable: every combination is run.
    #[arg(long = "vary", value_name = "KEY=V1,V2")]
    pub vary: Vec<String>,
    /// Also draw an SVG bar chart of IOPS per variant to FILE.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
    /// `normal` (a table) or `json`.
    #[arg(long, value_name = "FORMAT", default_value = "normal")]
    pub output_format: String,
    /// Run every variant under N run seeds (`--seed`, `--seed`+1, ...): figures
    /// become means with 95 % intervals, and each variant is tested against the
    /// first for a difference larger than the seed-to-seed spread.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seeds: u32,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// Most seeds per variant: enough for any interval, small enough that a typo does
/// not start a million runs.
const MAX_SEEDS: u32 = 1000;

/// One axis of variation.
struct Axis {
    key: String,
    values: Vec<String>,
}

fn axes(vary: &[String]) -> Result<Vec<Axis>> {
    vary.iter()
        .map(|v| {
            let (key, vals) = v
                .split_once('=')
                .with_context(|| format!("--vary {v}: expected KEY=V1,V2,..."))?;
            let values: Vec<String> = vals.split(',').map(str::to_string).collect();
            if key.is_empty() || values.iter().any(|x| x.is_empty()) {
                bail!("--vary {v}: expected KEY=V1,V2,... with non-empty key and values");
            }
            if key != "sched" && key != "device" {
                parse_set(&format!("{key}={}", values[0]))?;
            }
            Ok(Axis {
                key: key.to_string(),
                values,
            })
        })
        .collect()
}

/// Every combination, as (label, settings) where settings are `(key, value)`.
fn combinations(axes: &[Axis]) -> Vec<Vec<(String, String)>> {
    let mut out = vec![Vec::new()];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|c| {
                a.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((a.key.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

struct Row {
    label: String,
    report: RunReport,
}

/// The report's entries merged per fio job name, in report order: a job's clones
/// (or a reporting group) become one line, and stonewalled phases stay apart.
fn per_job(r: &RunReport) -> Vec<(String, JobStats)> {
    let mut names: Vec<&str> = Vec::new();
    for j in &r.jobs {
        if !names.contains(&j.jobname.as_str()) {
            names.push(&j.jobname);
        }
    }
    names
        .into_iter()
        .map(|n| {
            let parts = r.jobs.iter().filter(|j| j.jobname == n).map(|j| &j.stats);
            (n.to_string(), JobStats::merged(parts))
        })
        .collect()
}

/// IOPS, bytes/s, clat p50 and p99 (ns) of one direction.
fn dir_figures(s: &JobStats, d: Dir) -> (f64, f64, u64, u64) {
    let ds = s.dir(d);
    (
        ds.iops_f64(),
        ds.bw_bytes() as f64,
        ds.clat.percentile(50.0),
        ds.clat.percentile(99.0),
    )
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read job file '{}'", args.file))?;
    let input = parse_job_file(&args.file, &text)?;
    let json_out = match args.output_format.as_str() {
        "normal" => false,
        "json" => true,
        other => bail!("--output-format={other}: expected 'normal' or 'json'"),
    };
    let axes = axes(&args.vary)?;
    if axes.is_empty() {
        bail!("nothing to compare: give at least one --vary KEY=V1,V2");
    }
    if args.seeds == 0 || args.seeds > MAX_SEEDS {
        bail!("--seeds {}: expected 1 to {MAX_SEEDS}", args.seeds);
    }
    let first_seed = args.sim.seed.unwrap_or(sim::runner::DEFAULT_SEED);
    if first_seed.checked_add(u64::from(args.seeds - 1)).is_none() {
        bail!(
            "--seed {first_seed} --seeds {}: the seeds overflow",
            args.seeds
        );
    }
    // Check every combination before running any, so a typo fails at once.
    let mut runs = Vec::new();
    for (combo, seed) in combinations(&axes)
        .into_iter()
        .flat_map(|c| (0..args.seeds).map(move |i| (c.clone(), first_seed + u64::from(i))))
    {
        let mut sa = args.sim.clone();
        if args.seeds > 1 {
            sa.seed = Some(seed);
        }
        let mut label = Vec::new();
        for (k, v) in &combo {
            match k.as_str() {
                "sched" => sa.target.sched = Some(v.clone()),
                "device" => sa.target.device = Some(v.clone()),
                _ => sa.target.set.push(format!("{k}={v}")),
            }
            label.push(format!("{k}={v}"));
        }
        let mut opts = run_options(&sa)?;
        // Every variant would write the same log files: compare writes none.
        opts.write_logs = false;
        let work = Work::of(&sim::runner::plan(&input, &opts)?);
        runs.push((label.join(" "), opts, work));
    }
    // One bar for all the runs (on stderr, only on a terminal).
    let bar = progress_bar(&format!("simulating {} variants", runs.len()));
    bar.set_length(runs.iter().map(|r| r.2.len).sum());
    // Independent runs in parallel; results are collected in order, so the output does
    // not depend on the number of threads.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows: Vec<Option<Result<Row>>> = (0..runs.len()).map(|_| None).collect();
    for chunk in runs.chunks(threads).zip(rows.chunks_mut(threads)) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .0
                .iter()
                .map(|(label, opts, work)| {
                    let (input, bar) = (&input, &bar);
                    s.spawn(move || {
                        let plan = sim::runner::plan(input, opts)?;
                        run_ticking(input, opts, plan, bar, *work).map(|report| Row {
                            label: label.clone(),
                            report,
                        })
                    })
                })
                .collect();
            for (slot, h) in chunk.1.iter_mut().zip(handles) {
                *slot = Some(h.join().expect("simulation thread panicked"));
            }
        });
    }
    bar.finish_and_clear();
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|r| r.expect("every run done"))
        .collect::<Result<_>>()?;
    if args.seeds > 1 {
        return print_spread(&rows, args.seeds as usize, json_out);
    }

    if json_out {
        let mut v = Vec::new();
        for r in &rows {
            let d = r.report.disk_util.first().cloned().unwrap_or_default();
            for (job, st) in per_job(&r.report) {
                let (ri, rb, r50, r99) = dir_figures(&st, Dir::Read);
                let (wi, wb, w50, w99) = dir_figures(&st, Dir::Write);
                v.push(json!({
                    "variant": r.label,
                    "job": job,
                    "read": {"iops": ri, "bw_bytes": rb, "clat_p50_ns": r50, "clat_p99_ns": r99},
                    "write": {"iops": wi, "bw_bytes": wb, "clat_p50_ns": w50, "clat_p99_ns": w99},
                    "read_merges": d.read_merges, "write_merges": d.write_merges, "util": d.util,
                }));
            }
        }
        let mut out = super::output::stdout();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        out.flush()?;
    } else {
        let mut out = super::output::stdout();
        let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(7).max(7);
        let jw = rows
            .iter()
            .flat_map(|r| r.report.jobs.iter().map(|j| j.jobname.len()))
            .max()
            .unwrap_or(3)
            .max(3);
        writeln!(out,
            "{:<w$}  {:<jw$}  {:>10} {:>11} {:>9} {:>9}  {:>10} {:>11} {:>9} {:>9}  {:>9} {:>9} {:>6}",
            "variant", "job", "read IOPS", "read MB/s", "r p50 us", "r p99 us", "write IOPS", "write MB/s", "w p50 us", "w p99 us", "r merges", "w merges", "util%"
        )?;
        for r in &rows {
            let d = r.report.disk_util.first().cloned().unwrap_or_default();
            for (job, st) in per_job(&r.report) {
                let (ri, rb, r50, r99) = dir_figures(&st, Dir::Read);
                let (wi, wb, w50, w99) = dir_figures(&st, Dir::Write);
                writeln!(out,
                    "{:<w$}  {:<jw$}  {:>10.0} {:>11.1} {:>9.1} {:>9.1}  {:>10.0} {:>11.1} {:>9.1} {:>9.1}  {:>9} {:>9} {:>6.1}",
                    r.label, job, ri, rb / 1e6, r50 as f64 / 1e3, r99 as f64 / 1e3,
                    wi, wb / 1e6, w50 as f64 / 1e3, w99 as f64 / 1e3,
                    d.read_merges, d.write_merges, d.util
                )?;
            }
        }
        writeln!(
            out,
            "(merges and util are the whole device's, over all jobs of the run)"
        )?;
        out.flush()?;
    }
    if let Some(path) = &args.plot {
        let groups: Vec<plot::Group> = rows
            .iter()
            .flat_map(|r| {
                let jobs = per_job(&r.report);
                let many = jobs.len() > 1;
                jobs.into_iter().map(move |(job, st)| plot::Group {
                    label: if many {
                        format!("{} {job}", r.label)
                    } else {
                        r.label.clone()
                    },
                    values: vec![
                        dir_figures(&st, Dir::Read).0,
                        dir_figures(&st, Dir::Write).0,
                    ],
                })
            })
            .collect();
        plot::bars(
            path,
            &format!("{}: IOPS per variant", args.file),
            "IOPS",
            &["read".into(), "write".into()],
            &groups,
        )?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

/// One variant's figures per job over its seeds: (job, [read IOPS, read B/s,
/// read p99 ns, write IOPS, write B/s, write p99 ns] per seed).
type SeedFigures = Vec<(String, Vec<[f64; 6]>)>;

/// The figures of `runs` (one variant's runs, one per seed), job by job.
fn seed_figures(runs: &[Row]) -> SeedFigures {
    let mut out: SeedFigures = Vec::new();
    for r in runs {
        for (k, (job, st)) in per_job(&r.report).into_iter().enumerate() {
            let (ri, rb, _, r99) = dir_figures(&st, Dir::Read);
            let (wi, wb, _, w99) = dir_figures(&st, Dir::Write);
            let f = [ri, rb, r99 as f64, wi, wb, w99 as f64];
            match out.get_mut(k) {
                Some((_, v)) => v.push(f),
                None => out.push((job, vec![f])),
            }
        }
    }
    out
}

/// Column `i` of every seed's figures.
fn column(v: &[[f64; 6]], i: usize) -> Vec<f64> {
    v.iter().map(|f| f[i]).collect()
}

/// `--seeds N`: means with intervals, and every variant against the first.
fn print_spread(rows: &[Row], seeds: usize, json_out: bool) -> Result<()> {
    use sim::spread::{Difference, Spread};
    let variants: Vec<(&str, SeedFigures)> = rows
        .chunks(seeds)
        .map(|c| (c[0].label.as_str(), seed_figures(c)))
        .collect();
    let names = [
        "read_iops",
        "read_bw_bytes",
        "read_clat_p99_ns",
        "write_iops",
        "write_bw_bytes",
        "write_clat_p99_ns",
    ];
    let spread_of = |v: &[[f64; 6]], i: usize| Spread::of(&column(v, i));
    let mut out = super::output::stdout();
    if json_out {
        let mut all = Vec::new();
        for (label, jobs) in &variants {
            for (k, (job, v)) in jobs.iter().enumerate() {
                let mut o = serde_json::Map::new();
                o.insert("variant".into(), json!(label));
                o.insert("job".into(), json!(job));
                o.insert("seeds".into(), json!(seeds));
                for (i, n) in names.iter().enumerate() {
                    let s = spread_of(v, i);
                    o.insert(
                        (*n).into(),
                        json!({"mean": s.mean, "stddev": s.stddev, "ci95": s.ci95}),
                    );
                }
                if let Some((_, base)) = variants[0].1.get(k).filter(|_| *label != variants[0].0) {
                    let mut vs = serde_json::Map::new();
                    for i in [0, 3] {
                        let d = Difference::between(&spread_of(base, i), &spread_of(v, i));
                        vs.insert(names[i].into(), json!({"delta": d.delta, "ci95": d.ci95, "beyond_spread": d.beyond_spread()}));
                    }
                    o.insert("vs_first".into(), serde_json::Value::Object(vs));
                }
                all.push(serde_json::Value::Object(o));
            }
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
        out.flush()?;
        return Ok(());
    }
    let w = variants.iter().map(|v| v.0.len()).max().unwrap_or(7).max(7);
    let jw = variants
        .iter()
        .flat_map(|v| v.1.iter().map(|j| j.0.len()))
        .max()
        .unwrap_or(3)
        .max(3);
    let pm = |s: Spread, scale: f64| {
        format!(
            "{:.0} ± {:.0}",
            s.mean / scale,
            s.ci95.unwrap_or(0.0) / scale
        )
    };
    writeln!(
        out,
        "{seeds} seeds per variant: mean ± half-width of the 95 % interval"
    )?;
    writeln!(
        out,
        "{:<w$}  {:<jw$}  {:>16} {:>14} {:>18}  {:>16} {:>14} {:>18}",
        "variant",
        "job",
        "read IOPS",
        "read KB/s",
        "r p99 us",
        "write IOPS",
        "write KB/s",
        "w p99 us"
    )?;
    for (label, jobs) in &variants {
        for (job, v) in jobs {
            writeln!(
                out,
                "{:<w$}  {:<jw$}  {:>16} {:>14} {:>18}  {:>16} {:>14} {:>18}",
                label,
                job,
                pm(spread_of(v, 0), 1.0),
                pm(spread_of(v, 1), 1e3),
                pm(spread_of(v, 2), 1e3),
                pm(spread_of(v, 3), 1.0),
                pm(spread_of(v, 4), 1e3),
                pm(spread_of(v, 5), 1e3),
            )?;
        }
    }
    if variants.len() > 1 {
        writeln!(out)?;
        writeln!(
            out,
            "against {} (Welch's 95 % interval of the difference in mean IOPS):",
            variants[0].0
        )?;
        for (label, jobs) in &variants[1..] {
            for (k, (job, v)) in jobs.iter().enumerate() {
                let Some((_, base)) = variants[0].1.get(k) else {
                    continue;
                };
                for (i, dir) in [(0, "read"), (3, "write")] {
                    let (a, b) = (spread_of(base, i), spread_of(v, i));
                    if a.mean == 0.0 && b.mean == 0.0 {
                        continue;
                    }
                    let d = Difference::between(&a, &b);
                    let pct = if a.mean != 0.0 {
                        100.0 * d.delta / a.mean
                    } else {
                        f64::NAN
                    };
                    let verdict = match d.beyond_spread() {
                        Some(true) => "larger than the seed-to-seed spread",
                        _ => "within the seed-to-seed spread",
                    };
                    writeln!(
                        out,
                        "  {label:<w$}  {job:<jw$}  {dir:<5} {:>+10.0} ± {:<8.0} ({pct:+.1} %)  {verdict}",
                        d.delta,
                        d.ci95.unwrap_or(0.0),
                    )?;
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_are_the_cartesian_product_in_order() {
        let a = axes(&[
            "sched=none,mq-deadline".into(),
            "mq-deadline.fifo_batch=1,16".into(),
        ])
        .unwrap();
        let c = combinations(&a);
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[1],
            vec![
                ("sched".into(), "none".into()),
                ("mq-deadline.fifo_batch".into(), "16".into())
            ]
        );
        assert!(axes(&["novalue".into()]).is_err());
        assert!(axes(&["x=".into()]).is_err());
    }
}
