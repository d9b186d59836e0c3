//! `iosched sweep GRID.toml`: a grid of runs (devices × schedulers × hosts × settings
//! × seeds) in parallel, one CSV row per run, job and direction; resumable and
//! shardable so that a cluster's array jobs can split it (`--shard I/N`), and
//! `iosched sweep merge` joins the shards into one table, byte-identical whatever
//! the sharding and the thread count.
//!
//! The grid format and the columns are documented in docs/sweeps.md.

use super::sim_opts::{run_options, SimArgs};
use anyhow::{bail, Context, Result};
use clap::Parser;
use rayon::prelude::*;
use sim::fio::FioInput;
use sim::report::RunReport;
use sim::stats::Dir;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Run every combination of a grid file's axes and write one table of results.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  iosched sweep examples/sweep.toml --out sweep-out\n  \
     iosched sweep examples/sweep.toml --out shard0 --shard 0/2 && iosched sweep examples/sweep.toml --out shard1 --shard 1/2\n  \
     iosched sweep merge --out merged.csv shard0 shard1"
)]
pub struct Args {
    #[command(subcommand)]
    pub merge: Option<MergeCmd>,
    /// The grid file (TOML; see docs/sweeps.md).
    pub grid: Option<String>,
    /// Directory for the results: `results.csv`, and the finished runs in
    /// `runs/` (what a re-run skips).
    #[arg(long, value_name = "DIR", default_value = "sweep-out")]
    pub out: String,
    /// Runs at once (default: the machine's cores).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Run only the runs whose index is I modulo N (0 ≤ I < N): one slice of a
    /// grid for one task of a cluster's array job.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
}

/// `iosched sweep merge`.
#[derive(clap::Subcommand, Debug)]
pub enum MergeCmd {
    /// Join the runs of several sweep directories (shards) into one table.
    Merge {
        /// The merged table, CSV.
        #[arg(long, value_name = "FILE")]
        out: String,
        /// Sweep directories (each with `runs/`).
        #[arg(required = true)]
        dirs: Vec<String>,
    },
}

/// Most runs one grid may expand to.
const MAX_RUNS: usize = 1_000_000;

/// A grid: what every run shares, and the axes.
#[derive(Debug, Clone)]
struct Grid {
    /// The job, as a file's text (with its name) or a fio command line.
    job: JobSource,
    /// Axes in expansion order (outermost first): (column, values).
    axes: Vec<(String, Vec<String>)>,
    /// The grid file's line of each axis.
    lines: Vec<usize>,
}

#[derive(Debug, Clone)]
enum JobSource {
    File { name: String, text: String },
    CommandLine(Vec<String>),
}

impl JobSource {
    fn input(&self) -> Result<FioInput> {
        Ok(match self {
            JobSource::File { name, text } => sim::fio::parse_job_file(name, text)?,
            JobSource::CommandLine(a) => sim::fio::parse_command_line(a)?,
        })
    }

    fn identity(&self) -> String {
        match self {
            JobSource::File { text, .. } => text.clone(),
            JobSource::CommandLine(a) => a.join("\u{1f}"),
        }
    }
}

/// Line number (1-based) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// A TOML value as one or more strings (a scalar or an array of scalars).
fn values(item: &toml_edit::Item) -> Option<Vec<String>> {
    use toml_edit::Value;
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.value().clone()),
        Value::Integer(i) => Some(i.value().to_string()),
        Value::Float(f) => Some(f.value().to_string()),
        Value::Boolean(b) => Some(if *b.value() { "1" } else { "0" }.to_string()),
        _ => None,
    };
    match item.as_value()? {
        Value::Array(a) => a.iter().map(scalar).collect(),
        v => scalar(v).map(|s| vec![s]),
    }
}

fn parse_grid(path: &str) -> Result<Grid> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read grid '{path}'"))?;
    let doc: toml_edit::Document<&str> =
        toml_edit::Document::parse(text.as_str()).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(&text, s.start));
            anyhow::anyhow!("{path}:{line}: {}", e.message())
        })?;
    let at = |item: &toml_edit::Item| item.span().map_or(1, |s| line_of(&text, s.start));
    let root = doc.as_table();
    let mut job = None;
    let mut axes: Vec<(String, Vec<String>)> = Vec::new();
    let mut lines = Vec::new();
    let mut seeds = None;
    for (key, item) in root.iter() {
        let line = at(item);
        let list = |what: &str| -> Result<Vec<String>> {
            match values(item) {
                Some(v) if !v.is_empty() => Ok(v),
                Some(_) => {
                    bail!("{path}:{line}: `{key}` is an empty list: give at least one {what}")
                }
                None => bail!("{path}:{line}: `{key}` must be a {what} or a list of them"),
            }
        };
        match key {
            "job" | "fio" => {
                if job.is_some() {
                    bail!("{path}:{line}: give either `job` or `fio`, once");
                }
                let v = item
                    .as_str()
                    .with_context(|| format!("{path}:{line}: `{key}` must be a string"))?;
                job = Some(if key == "job" {
                    let base = Path::new(path).parent().unwrap_or(Path::new("."));
                    let file = base.join(v);
                    let text = std::fs::read_to_string(&file).with_context(|| {
                        format!("{path}:{line}: cannot read job file '{}'", file.display())
                    })?;
                    JobSource::File {
                        name: v.to_string(),
                        text,
                    }
                } else {
                    JobSource::CommandLine(v.split_whitespace().map(str::to_string).collect())
                });
            }
            "device" | "sched" | "host" => {
                axes.push((key.to_string(), list("name")?));
                lines.push(line);
            }
            "seed" => {
                let v = list("seed")?;
                for s in &v {
                    s.parse::<u64>()
                        .with_context(|| format!("{path}:{line}: seed '{s}' is not an unsigned integer"))?;
                }
                seeds = Some((v, line));
            }
            "set" => {
                let t = item
                    .as_table_like()
                    .with_context(|| format!("{path}:{line}: `set` must be a table of NS.NAME = values"))?;
                for (k, v) in t.iter() {
                    let line = at(v);
                    let vals = match values(v) {
                        Some(x) if !x.is_empty() => x,
                        _ => bail!("{path}:{line}: set `{k}` needs a value or a non-empty list"),
                    };
                    super::sim_opts::parse_set(&format!("{k}={}", vals[0]))
                        .with_context(|| format!("{path}:{line}"))?;
                    axes.push((format!("set.{k}"), vals));
                    lines.push(line);
                }
            }
            other => bail!(
                "{path}:{line}: unknown grid key `{other}` (expected job, fio, device, sched, host, seed, set)"
            ),
        }
    }
    let job =
        job.with_context(|| format!("{path}: no `job = \"FILE.fio\"` or `fio = \"--name=...\"`"))?;
    if let Some((s, line)) = seeds {
        axes.push(("seed".into(), s));
        lines.push(line);
    }
    Ok(Grid { job, axes, lines })
}

/// The grid line of the axis a run's error is about, when the message names it:
/// a `[set]` key by its name, a device, scheduler or host by its quoted value.
fn culprit_line(grid: &Grid, run: &Run, msg: &str) -> Option<usize> {
    run.settings
        .iter()
        .zip(&grid.lines)
        .find(|((k, v), _)| match k.strip_prefix("set.") {
            Some(key) => {
                let name = key.rsplit('.').next().unwrap_or(key);
                msg.contains(key) || msg.contains(&format!("'{name}'"))
            }
            None => k != "seed" && msg.contains(&format!("'{v}'")),
        })
        .map(|(_, &l)| l)
}

/// One run of the grid: its index and its (column, value) settings.
#[derive(Debug, Clone)]
struct Run {
    index: usize,
    settings: Vec<(String, String)>,
}

fn expand(grid: &Grid) -> Result<Vec<Run>> {
    let total = grid
        .axes
        .iter()
        .try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()))
        .filter(|&n| n <= MAX_RUNS)
        .with_context(|| format!("the grid expands to more than {MAX_RUNS} runs"))?;
    let mut runs = Vec::with_capacity(total);
    for index in 0..total {
        // Mixed radix, the last axis fastest.
        let mut rest = index;
        let mut settings = vec![(String::new(), String::new()); grid.axes.len()];
        for (slot, (key, vals)) in settings.iter_mut().zip(&grid.axes).rev() {
            *slot = (key.clone(), vals[rest % vals.len()].clone());
            rest /= vals.len();
        }
        runs.push(Run { index, settings });
    }
    Ok(runs)
}

/// The options of a run, as the command line would give them.
#[derive(Parser, Debug)]
struct RunFlags {
    #[command(flatten)]
    sim: SimArgs,
}

fn sim_args(run: &Run) -> Result<SimArgs> {
    let mut argv = vec!["sweep".to_string()];
    for (k, v) in &run.settings {
        match k.as_str() {
            "device" | "sched" | "host" | "seed" => {
                argv.push(format!("--{k}"));
                argv.push(v.clone());
            }
            k => {
                argv.push("--set".into());
                argv.push(format!("{}={v}", k.trim_start_matches("set.")));
            }
        }
    }
    Ok(RunFlags::try_parse_from(argv)?.sim)
}

/// FNV-1a, 64 bits: a stable key for a run's parameters (never changes with the
/// Rust version or the platform, unlike std's hasher).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn run_key(grid: &Grid, run: &Run) -> String {
    let mut parts = vec![env!("CARGO_PKG_VERSION").to_string(), grid.job.identity()];
    for (k, v) in &run.settings {
        parts.push(format!("{k}={v}"));
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    format!("{:016x}", fnv1a(&refs))
}

const FIGURES: [&str; 14] = [
    "iops",
    "bw_bytes",
    "io_bytes",
    "total_ios",
    "clat_mean_ns",
    "clat_p50_ns",
    "clat_p99_ns",
    "clat_p99.9_ns",
    "clat_max_ns",
    "lat_mean_ns",
    "lat_p99_ns",
    "read_merges",
    "write_merges",
    "util",
];

fn header(grid: &Grid) -> Vec<String> {
    let mut h = vec!["run".to_string(), "status".into(), "error".into()];
    h.extend(grid.axes.iter().map(|(k, _)| k.clone()));
    h.extend(["job".to_string(), "dir".into()]);
    h.extend(FIGURES.iter().map(|s| s.to_string()));
    h
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_line(fields: &[String]) -> String {
    let f: Vec<String> = fields.iter().map(|s| csv_field(s)).collect();
    f.join(",") + "\n"
}

/// The rows of one finished (or failed) run.
fn rows(run: &Run, result: &Result<RunReport>) -> Vec<Vec<String>> {
    let lead = |status: &str, err: &str| {
        let mut r = vec![run.index.to_string(), status.to_string(), err.to_string()];
        r.extend(run.settings.iter().map(|(_, v)| v.clone()));
        r
    };
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            let mut r = lead("failed", &format!("{e:#}"));
            r.extend(std::iter::repeat_n(String::new(), 2 + FIGURES.len()));
            return vec![r];
        }
    };
    let disk = report.disk_util.first().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for j in &report.jobs {
        for (dir, name) in [
            (Dir::Read, "read"),
            (Dir::Write, "write"),
            (Dir::Trim, "trim"),
        ] {
            let d = j.stats.dir(dir);
            if d.total_ios == 0 && d.io_bytes == 0 {
                continue;
            }
            let mut r = lead("ok", "");
            r.push(j.jobname.clone());
            r.push(name.into());
            r.extend([
                format!("{:.3}", d.iops_f64()),
                d.bw_bytes().to_string(),
                d.io_bytes.to_string(),
                d.total_ios.to_string(),
                format!("{:.1}", d.clat.mean()),
                d.clat.percentile(50.0).to_string(),
                d.clat.percentile(99.0).to_string(),
                d.clat.percentile(99.9).to_string(),
                d.clat.max().to_string(),
                format!("{:.1}", d.lat.mean()),
                d.lat.percentile(99.0).to_string(),
                disk.read_merges.to_string(),
                disk.write_merges.to_string(),
                format!("{:.2}", disk.util),
            ]);
            out.push(r);
        }
    }
    out
}

fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let (i, n) = s
        .split_once('/')
        .with_context(|| format!("--shard {s}: expected I/N, e.g. 0/4"))?;
    let (i, n): (usize, usize) = (
        i.parse()
            .with_context(|| format!("--shard {s}: I is not a number"))?,
        n.parse()
            .with_context(|| format!("--shard {s}: N is not a number"))?,
    );
    if n == 0 || i >= n {
        bail!("--shard {s}: expected 0 ≤ I < N");
    }
    Ok((i, n))
}

/// Write `text` to `path` whole or not at all ([`super::output::write_file`]), so
/// that a killed sweep never leaves a partial file under the final name.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    super::output::write_file(&path.to_string_lossy(), text.as_bytes())
}

fn run_one(grid: &Grid, run: &Run) -> Result<RunReport> {
    let input = grid.job.input()?;
    let mut opts = run_options(&sim_args(run)?)?;
    opts.write_logs = false;
    let plan = sim::runner::plan(&input, &opts)?;
    Ok(sim::runner::run(&input, &opts, plan, None)?)
}

/// The scheduler's tunables of `settings` exist and take their values (on a
/// default queue; what depends on the run's queue is checked when it runs).
fn check_tunables(sched: &str, settings: &[(String, String, String)]) -> Result<()> {
    let mut e = blk::elevator::create(sched, &blk::elevator::QueueParams::default())?;
    for (ns, name, value) in settings {
        if ns == sched {
            e.set_tunable(name, value)?;
        }
    }
    Ok(())
}

/// Ask the allocator to keep the memory a run frees for the next run, instead of
/// handing it back to the kernel after each one (glibc trims a thread's heap and
/// unmaps large blocks on free): a short run would otherwise spend part of its
/// time in page faults, and worker threads contend for the address space.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before the worker
    // threads start.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    if let Some(MergeCmd::Merge { out, dirs }) = args.merge {
        return merge(&out, &dirs);
    }
    let grid_path = args
        .grid
        .as_deref()
        .context("give a grid file: iosched sweep GRID.toml (see --help)")?;
    let started = std::time::Instant::now();
    let grid = parse_grid(grid_path)?;
    let runs = expand(&grid)?;
    // Every run's settings are checked before any runs (a scheduler name that
    // does not exist, a tunable out of range): a typo fails at once, not after
    // hours. What fails only while running becomes a failed row.
    let input = grid.job.input()?;
    for r in &runs {
        let check = sim_args(r).and_then(|a| run_options(&a)).and_then(|o| {
            let plan = sim::runner::plan(&input, &o)?;
            check_tunables(&plan.scheduler, &o.settings)
        });
        if let Err(e) = check {
            let what: Vec<String> = r.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let msg = format!("{e:#}");
            let at = culprit_line(&grid, r, &msg).map_or(String::new(), |l| format!(":{l}"));
            bail!(
                "{grid_path}{at}: run {} ({}): {msg}",
                r.index,
                what.join(" ")
            );
        }
    }
    let (shard, shards) = match &args.shard {
        Some(s) => parse_shard(s)?,
        None => (0, 1),
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        bail!("--jobs 0: expected at least 1");
    }
    let out = PathBuf::from(&args.out);
    let runs_dir = out.join("runs");
    std::fs::create_dir_all(&runs_dir)
        .with_context(|| format!("cannot create '{}'", runs_dir.display()))?;
    let head = csv_line(&header(&grid));
    let mine: Vec<&Run> = runs.iter().filter(|r| r.index % shards == shard).collect();
    let done = super::sweep_log::read_all(&runs_dir)?;
    let todo: Vec<&Run> = mine
        .iter()
        .copied()
        .filter(|r| !done.contains_key(&run_key(&grid, r)))
        .collect();
    let log = super::sweep_log::RunLog::open(&runs_dir, shard, shards)?;
    let bar = indicatif::ProgressBar::new(todo.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("sweep [{bar:40}] {pos}/{len} runs (eta {eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    keep_freed_memory();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .context("cannot start the worker threads")?;
    let outcomes = pool.install(|| {
        todo.par_iter()
            .map(|r| -> Result<(bool, f64, String)> {
                let t0 = std::time::Instant::now();
                let result = run_one(&grid, r);
                let simulated = t0.elapsed().as_secs_f64();
                let ok = result.is_ok();
                let mut text = head.clone();
                for row in rows(r, &result) {
                    text.push_str(&csv_line(&row));
                }
                log.append(&run_key(&grid, r), &text)?;
                bar.inc(1);
                Ok((!ok, simulated, text))
            })
            .collect::<Result<Vec<(bool, f64, String)>>>()
    })?;
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    // The table: every run of this shard that has a result, in grid order (the
    // runs done now from memory, the others from their files).
    let done_now: std::collections::HashMap<usize, &str> = todo
        .iter()
        .zip(&outcomes)
        .map(|(r, f)| (r.index, f.2.as_str()))
        .collect();
    let mut table = head.clone();
    for r in &mine {
        let text = match done_now.get(&r.index) {
            Some(t) => std::borrow::Cow::Borrowed(*t),
            None => match done.get(&run_key(&grid, r)) {
                Some(t) => std::borrow::Cow::Borrowed(t.as_str()),
                None => continue,
            },
        };
        table.extend(text.lines().skip(1).map(|l| format!("{l}\n")));
    }
    write_atomic(&out.join("results.csv"), &table)?;
    write_parquet(&table, &out.join("results.parquet"))?;
    write_summary(&table, &out.join("summary.csv"))?;
    let nfailed = outcomes.iter().filter(|f| f.0).count();
    eprintln!(
        "{} runs ({} run now, {} already done, {nfailed} failed): {}",
        mine.len(),
        todo.len(),
        mine.len() - todo.len(),
        out.join("results.csv").display()
    );
    let simulated: f64 = outcomes.iter().map(|f| f.1).sum();
    if let Some(line) = timing_line(todo.len(), jobs.min(todo.len()), wall, simulated) {
        eprintln!("{line}");
    }
    Ok(())
}

/// What the sweep itself cost besides its runs, for stderr: `n` runs on `jobs`
/// threads took `wall` seconds, of which the simulations themselves took
/// `simulated` (summed over threads). The overhead per run is the threads' time
/// not spent simulating, divided among the runs. (Parallel efficiency proper —
/// one thread's wall time over N threads' — needs two sweeps; docs/sweeps.md.)
fn timing_line(n: usize, jobs: usize, wall: f64, simulated: f64) -> Option<String> {
    if n == 0 || wall <= 0.0 || simulated <= 0.0 {
        return None;
    }
    let threads = wall * jobs as f64;
    let overhead = (threads - simulated).max(0.0) / n as f64;
    let mean = simulated / n as f64;
    Some(format!(
        "{wall:.2} s wall on {jobs} thread(s); a run simulates in {:.1} ms on average, the sweep adds {:.2} ms per run ({:.1} %); the threads were simulating {:.0} % of the time",
        mean * 1e3,
        overhead * 1e3,
        100.0 * overhead / mean,
        100.0 * simulated / threads
    ))
}

/// The same table as Parquet: `run` as an unsigned integer, the figures as
/// doubles (null where a failed run has none), everything else as strings.
fn write_parquet(table: &str, path: &Path) -> Result<()> {
    use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let mut lines = table.lines();
    let head = csv_split(lines.next().unwrap_or_default());
    let rows: Vec<Vec<String>> = lines.map(csv_split).collect();
    let cell = |r: &Vec<String>, i: usize| r.get(i).cloned().unwrap_or_default();
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (i, name) in head.iter().enumerate() {
        if name == "run" {
            fields.push(Field::new(name, DataType::UInt64, false));
            let v: Vec<u64> = rows
                .iter()
                .map(|r| cell(r, i).parse().unwrap_or(0))
                .collect();
            cols.push(Arc::new(UInt64Array::from(v)));
        } else if FIGURES.contains(&name.as_str()) {
            fields.push(Field::new(name, DataType::Float64, true));
            let v: Vec<Option<f64>> = rows.iter().map(|r| cell(r, i).parse().ok()).collect();
            cols.push(Arc::new(Float64Array::from(v)));
        } else {
            fields.push(Field::new(name, DataType::Utf8, false));
            let v: Vec<String> = rows.iter().map(|r| cell(r, i)).collect();
            cols.push(Arc::new(StringArray::from(v)));
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), cols).context("building the Parquet table")?;
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), schema, None)?;
    w.write(&batch)?;
    let bytes = w.into_inner()?;
    super::output::write_file(&path.to_string_lossy(), &bytes)
}

/// Figures summarised over seeds in `summary.csv`.
const SUMMARISED: [&str; 4] = ["iops", "bw_bytes", "clat_mean_ns", "clat_p99_ns"];

/// With a `seed` column: per setting, job and direction (every column but `run`,
/// `status`, `error`, `seed` and the figures), the number of seeds and each
/// summarised figure's mean, standard deviation and 95 % interval half-width
/// ([`sim::spread`]), over the runs that succeeded; in order of first
/// appearance. `None` without a seed column.
fn summarize(table: &str) -> Option<String> {
    let mut lines = table.lines();
    let head = csv_split(lines.next()?);
    let seed = head.iter().position(|h| h == "seed")?;
    let first_fig = head.iter().position(|h| h == FIGURES[0])?;
    let keys: Vec<usize> = (3..first_fig).filter(|&i| i != seed).collect();
    let figs: Vec<usize> = SUMMARISED
        .iter()
        .filter_map(|f| head.iter().position(|h| h == f))
        .collect();
    let mut groups: Vec<(Vec<String>, Vec<Vec<f64>>)> = Vec::new();
    for l in lines {
        let row = csv_split(l);
        if row.get(1).map(String::as_str) != Some("ok") {
            continue;
        }
        let key: Vec<String> = keys
            .iter()
            .map(|&i| row.get(i).cloned().unwrap_or_default())
            .collect();
        let vals: Vec<f64> = figs
            .iter()
            .map(|&i| row.get(i).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN))
            .collect();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(vals),
            None => groups.push((key, vec![vals])),
        }
    }
    let mut out_head: Vec<String> = keys.iter().map(|&i| head[i].clone()).collect();
    out_head.push("seeds".into());
    for &i in &figs {
        for suffix in ["mean", "sd", "ci95"] {
            out_head.push(format!("{}_{suffix}", head[i]));
        }
    }
    let mut text = csv_line(&out_head);
    for (key, runs) in &groups {
        let mut row = key.clone();
        row.push(runs.len().to_string());
        for k in 0..figs.len() {
            let xs: Vec<f64> = runs.iter().map(|r| r[k]).collect();
            let sp = sim::spread::Spread::of(&xs);
            row.push(format!("{:.3}", sp.mean));
            row.push(format!("{:.3}", sp.stddev));
            row.push(sp.ci95.map(|c| format!("{c:.3}")).unwrap_or_default());
        }
        text.push_str(&csv_line(&row));
    }
    Some(text)
}

/// Write `summary.csv` beside a table when it has seeds.
fn write_summary(table: &str, path: &Path) -> Result<()> {
    match summarize(table) {
        Some(s) => write_atomic(path, &s),
        None => Ok(()),
    }
}

/// Split one CSV line into fields (the quoting [`csv_line`] writes).
pub(crate) fn csv_split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// `iosched sweep merge`: every run file of `dirs`, ordered by run index.
fn merge(out: &str, dirs: &[String]) -> Result<()> {
    let mut head: Option<String> = None;
    let mut rows: Vec<(usize, String)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for d in dirs {
        let runs = Path::new(d).join("runs");
        if !runs.is_dir() {
            bail!("'{}' is not a sweep directory (no runs/)", d);
        }
        let found = super::sweep_log::read_all(&runs)?;
        let mut keys: Vec<&String> = found.keys().collect();
        keys.sort();
        for key in keys {
            if !seen.insert(key.clone()) {
                continue; // the same run in two directories
            }
            let text = &found[key];
            let mut lines = text.lines();
            let h = lines.next().unwrap_or_default().to_string();
            match &head {
                None => head = Some(h),
                Some(x) if *x != h => bail!(
                    "{}: run {key}: its columns differ from the other runs' (runs of different grids?)",
                    runs.display()
                ),
                _ => {}
            }
            for (n, l) in lines.enumerate() {
                let idx = csv_split(l)
                    .first()
                    .and_then(|s| s.parse::<usize>().ok())
                    .with_context(|| {
                        format!("{}: run {key}, row {}: no run index", runs.display(), n + 1)
                    })?;
                rows.push((idx, format!("{l}\n")));
            }
        }
    }
    let head = head.context("no runs found in the given directories")?;
    // Stable: a run's rows keep their order.
    rows.sort_by_key(|r| r.0);
    let mut text = head + "\n";
    for (_, l) in rows {
        text.push_str(&l);
    }
    write_atomic(Path::new(out), &text)?;
    let pq = Path::new(out).with_extension("parquet");
    write_parquet(&text, &pq)?;
    let mut e = std::io::stderr();
    writeln!(e, "wrote {out} and {}", pq.display())?;
    if summarize(&text).is_some() {
        let p = Path::new(out).with_extension("summary.csv");
        write_summary(&text, &p)?;
        writeln!(e, "wrote {}", p.display())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_is_mixed_radix_with_the_last_axis_fastest() {
        let g = Grid {
            job: JobSource::CommandLine(vec![]),
            lines: vec![1, 2],
            axes: vec![
                ("device".into(), vec!["a".into(), "b".into()]),
                ("seed".into(), vec!["1".into(), "2".into(), "3".into()]),
            ],
        };
        let r = expand(&g).unwrap();
        assert_eq!(r.len(), 6);
        assert_eq!(
            r[4].settings,
            vec![("device".into(), "b".into()), ("seed".into(), "2".into())]
        );
    }

    #[test]
    fn csv_round_trips_quotes_and_commas() {
        let f = vec![
            "a,b".to_string(),
            "say \"x\"".into(),
            "".into(),
            "plain".into(),
        ];
        assert_eq!(csv_split(csv_line(&f).trim_end()), f);
    }

    #[test]
    fn shards_are_checked() {
        assert_eq!(parse_shard("1/3").unwrap(), (1, 3));
        assert!(parse_shard("3/3").is_err());
        assert!(parse_shard("x").is_err());
        assert!(parse_shard("0/0").is_err());
    }

    #[test]
    fn keys_are_stable() {
        // FNV-1a of "a\0", worked by hand — fixed forever, so that resumed
        // sweeps find their runs.
        assert_eq!(fnv1a(&["a"]), 0x089b_e207_b544_f1e4);
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
    }

    #[test]
    fn timing_divides_the_idle_thread_time_among_the_runs() {
        // 10 runs on 2 threads in 1 s wall, 1.5 s simulating: 0.5 s of thread time
        // besides the runs, 50 ms per run against 150 ms runs.
        let line = timing_line(10, 2, 1.0, 1.5).unwrap();
        assert!(line.contains("150.0 ms on average"), "{line}");
        assert!(line.contains("adds 50.00 ms per run (33.3 %)"), "{line}");
        assert!(line.contains("simulating 75 %"), "{line}");
        assert_eq!(timing_line(0, 1, 1.0, 1.0), None);
    }
}
