//! Options shared by the commands that simulate (`run`, `fio`), and the common path
//! from parsed fio input to printed report.

use anyhow::{bail, Context, Result};
use blk::Ns;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::fio::{FioInput, OutputFormat};
use sim::report::RunReport;
use sim::runner::{self, RunOptions};

/// The device and the scheduler in front of it: what the commands that simulate
/// and `iosched serve` share.
#[derive(clap::Args, Debug, Clone)]
pub struct TargetArgs {
    /// Device profile (see `iosched devices`).
    #[arg(long, value_name = "NAME", conflicts_with = "device_file")]
    pub device: Option<String>,
    /// Load the device profile from a file (format: `iosched devices`, the files
    /// under crates/devices/profiles/).
    #[arg(long, value_name = "FILE")]
    pub device_file: Option<String>,
    /// Scheduler (see `iosched schedulers`); default: a job's `ioscheduler=` if it
    /// has one, else the kernel's default for the device.
    #[arg(long, value_name = "NAME")]
    pub sched: Option<String>,
    /// Set a scheduler tunable or a block-layer setting, by sysfs name and unit:
    /// `SCHED.TUNABLE=VALUE` (e.g. `mq-deadline.fifo_batch=1`,
    /// `mq-deadline.variant=head-request`) or `blk.nr_requests=N`. Repeatable.
    #[arg(long = "set", value_name = "NS.NAME=VALUE")]
    pub set: Vec<String>,
    /// The kernel's HZ (jiffies per second) for decisions made on jiffies.
    #[arg(long, value_name = "HZ", default_value_t = 250)]
    pub hz: u32,
}

impl Default for TargetArgs {
    fn default() -> Self {
        TargetArgs {
            device: None,
            device_file: None,
            sched: None,
            set: Vec::new(),
            hz: 250,
        }
    }
}

impl TargetArgs {
    /// The device profile: `--device-file`, else `--device`, else the default.
    pub fn profile(&self) -> Result<devices::Profile> {
        Ok(match &self.device_file {
            Some(f) => devices::load_profile_file(std::path::Path::new(f))?,
            None => devices::profile(self.device.as_deref().unwrap_or(devices::DEFAULT_DEVICE))?,
        })
    }

    /// `--hz`, within what a kernel can be configured with.
    pub fn checked_hz(&self) -> Result<u32> {
        if self.hz == 0 || self.hz > 10_000 {
            bail!(
                "--hz {}: expected a kernel HZ between 1 and 10000 (100, 250, 300 or 1000 in practice)",
                self.hz
            );
        }
        Ok(self.hz)
    }

    /// The `--set` values, split into (namespace, name, value).
    pub fn settings(&self) -> Result<Vec<(String, String, String)>> {
        self.set.iter().map(|s| parse_set(s)).collect()
    }
}

/// Simulation options (not fio options).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SimArgs {
    /// Device, scheduler, settings, HZ.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Run seed: different seeds give different random offsets.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Number of simulated CPUs (software queues); default: the host's (8 with
    /// `--host free`).
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,
    /// The host: its CPUs, what each step of an I/O costs them and its locks (see
    /// `iosched hosts`); `free` costs nothing but `--submit-ns`.
    #[arg(long, value_name = "NAME", conflicts_with = "host_file")]
    pub host: Option<String>,
    /// Load the host profile from a file (format: `iosched hosts`, the files under
    /// crates/host/profiles/).
    #[arg(long, value_name = "FILE")]
    pub host_file: Option<String>,
    /// With `--host free` only: CPU time a job spends submitting one I/O, ns
    /// (reported by fio as slat for asynchronous engines). Default per engine:
    /// io_uring 1000, libaio 2000, posixaio 4000, psync/sync/pvsync 1500. 0 makes
    /// submission free.
    #[arg(long = "submit-ns", value_name = "NS")]
    pub submit_ns: Option<u64>,
}

/// Split `NS.NAME=VALUE`.
pub fn parse_set(s: &str) -> Result<(String, String, String)> {
    let (key, value) = s.split_once('=').with_context(|| {
        format!("--set {s}: expected NS.NAME=VALUE, e.g. mq-deadline.fifo_batch=1")
    })?;
    let (ns, name) = key.split_once('.').with_context(|| {
        format!("--set {s}: expected NS.NAME=VALUE with NS a scheduler name or 'blk'")
    })?;
    if ns.is_empty() || name.is_empty() {
        bail!("--set {s}: expected NS.NAME=VALUE with non-empty NS and NAME");
    }
    Ok((ns.to_string(), name.to_string(), value.to_string()))
}

fn epoch_secs() -> Result<u64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v
            .trim()
            .parse()
            .with_context(|| format!("SOURCE_DATE_EPOCH={v}: expected seconds since 1970")),
        Err(_) => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)),
    }
}

/// Turn the command-line simulation options into the runner's options.
pub fn run_options(args: &SimArgs) -> Result<RunOptions> {
    let device = args.target.profile()?;
    let hz = args.target.checked_hz()?;
    let host = match &args.host_file {
        Some(f) => host::load_host_file(std::path::Path::new(f))?,
        None => host::host(args.host.as_deref().unwrap_or(host::DEFAULT_HOST))?,
    };
    let cpus = args
        .cpus
        .unwrap_or_else(|| host.cpus.as_ref().map_or(8, |h| h.nr_cpus));
    if cpus == 0 || cpus > 4096 {
        bail!("--cpus {cpus}: expected 1 to 4096");
    }
    let settings = args.target.settings()?;
    Ok(RunOptions {
        device,
        scheduler: args.target.sched.clone(),
        settings,
        seed: args.seed.unwrap_or(runner::DEFAULT_SEED),
        hz,
        nr_cpus: cpus,
        epoch_secs: epoch_secs()?,
        submit_ns: args.submit_ns,
        write_logs: true,
        host,
    })
}

/// Plan and run one simulation; with `progress`, show a progress bar on stderr (drawn
/// only when stderr is a terminal).
pub fn simulate(input: &FioInput, opts: &RunOptions, progress: bool) -> Result<RunReport> {
    let plan = runner::plan(input, opts)?;
    if !progress {
        return Ok(runner::run(input, opts, plan, None)?);
    }
    let bar = progress_bar("simulating");
    let work = Work::of(&plan);
    bar.set_length(work.len);
    let report = run_ticking(input, opts, plan, &bar, work)?;
    bar.finish_and_clear();
    Ok(report)
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress_bar(what: &str) -> ProgressBar {
    // Hidden until the run has lasted a second (see `run_ticking`): short runs
    // print nothing but their report.
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} [{{bar:40}}] {{percent}}% {{msg}} (eta {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// How a run's progress is measured: simulated time for time-based jobs, else bytes.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    /// Total, in the unit below.
    pub len: u64,
    by_time: bool,
}

impl Work {
    /// The expected amount of work of a planned run.
    pub fn of(plan: &runner::Plan) -> Work {
        match (plan.expected_ns, plan.expected_bytes) {
            (Some(ns), _) if ns > 0 => Work {
                len: ns,
                by_time: true,
            },
            (_, Some(b)) if b > 0 => Work {
                len: b,
                by_time: false,
            },
            _ => Work {
                len: 0,
                by_time: false,
            },
        }
    }
}

/// Run a planned simulation, advancing `bar` by its progress (several runs may share
/// one bar: each adds what it did, and the rest of `work` when it ends).
pub fn run_ticking(
    input: &FioInput,
    opts: &RunOptions,
    plan: runner::Plan,
    bar: &ProgressBar,
    work: Work,
) -> Result<RunReport> {
    let mut done = 0u64;
    let started = std::time::Instant::now();
    let mut shown = false;
    let mut tick = |now: Ns, bytes: u64| {
        if !shown && started.elapsed() >= std::time::Duration::from_secs(1) {
            // Drawn only on a terminal (indicatif checks).
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_message(format!("{:.3} s simulated", now.0 as f64 / 1e9));
        let pos = if work.by_time { now.0 } else { bytes }.min(work.len);
        bar.inc(pos.saturating_sub(done));
        done = done.max(pos);
    };
    let report = runner::run(input, opts, plan, Some(&mut tick))?;
    bar.inc(work.len.saturating_sub(done));
    Ok(report)
}

/// Plan, run and print in the format and to the file fio's output options ask for;
/// with `plot`, also draw the completion-latency CDF of every job and direction.
pub fn simulate_and_print(input: FioInput, args: &SimArgs) -> Result<()> {
    simulate_print_plot(input, args, None)
}

/// The report in every format the job's output options ask for, each once, in
/// the order given (fio prints JSON before normal when both are asked).
pub fn report_text(input: &FioInput, report: &RunReport) -> String {
    input
        .output
        .formats
        .iter()
        .map(|f| match f {
            OutputFormat::Terse => {
                sim::report::terse::to_string(report, input.output.terse_version)
            }
            OutputFormat::Json => sim::report::json::to_string(report),
            OutputFormat::JsonPlus => sim::report::json::to_string_plus(report),
            OutputFormat::Normal => sim::report::text::to_string(report),
        })
        .collect()
}

/// [`simulate_and_print`], plus an SVG of the clat CDFs to `plot` if given.
pub fn simulate_print_plot(input: FioInput, args: &SimArgs, plot: Option<&str>) -> Result<()> {
    let opts = run_options(args)?;
    super::signals::stop_gracefully();
    let report = simulate(&input, &opts, true)?;
    let text = report_text(&input, &report);
    if let Some(path) = plot {
        let series = latency_cdfs(&report);
        if series.is_empty() {
            bail!("--plot {path}: the run completed no I/O, nothing to draw");
        }
        super::plot::cdf_lines(path, "completion latency (clat) CDF", "clat (us)", &series)?;
    }
    match &input.output.output_file {
        Some(path) => super::output::write_file(path, text.as_bytes())?,
        None => super::output::print(&text)?,
    }
    super::signals::check()?;
    Ok(())
}

/// One CDF per job entry and direction with I/O: (clat in µs, cumulative fraction) at
/// percentiles from 0.1 to 99.99.
pub fn latency_cdfs(report: &RunReport) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut ps: Vec<f64> = (1..=999).map(|i| i as f64 / 10.0).collect();
    ps.extend([99.95, 99.99, 100.0]);
    let mut out = Vec::new();
    for (i, j) in report.jobs.iter().enumerate() {
        for d in sim::stats::Dir::ALL {
            let h = &j.stats.dir(d).clat;
            if h.count() == 0 {
                continue;
            }
            let pts = ps
                .iter()
                .map(|&p| (h.percentile(p) as f64 / 1e3, p / 100.0))
                .collect();
            let name = if report.jobs.len() > 1 {
                format!("{} #{i} {}", j.jobname, d.name())
            } else {
                format!("{} {}", j.jobname, d.name())
            };
            out.push((name, pts));
        }
    }
    out
}
