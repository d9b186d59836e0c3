//! `iosched kernel-trace record|compare`: record the running kernel's scheduler
//! decisions on a loop device with tracefs, and compare ours with them.

use anyhow::{anyhow, bail, Context, Result};
use sim::kernel_trace::{self, CompareOptions};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Record the running kernel's I/O scheduler decisions, or compare ours with a recording.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
iosched kernel-trace record --out rr.txt --set fifo_batch=1 -- --name=rr --rw=randread \
--ioengine=libaio --iodepth=32 --bs=4k --direct=1 --io_size=4M\n  \
iosched kernel-trace compare rr.txt --sched mq-deadline\n  \
iosched kernel-trace compare crates/sim/tests/data/kernel/randwrite.txt --sched mq-deadline\n\n\
(the last one compares a recording kept in the repository)")]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

impl Args {
    /// Whether this is `record`, which handles SIGINT and SIGTERM itself (it must
    /// tear down what it set up in the kernel).
    pub fn is_record(&self) -> bool {
        matches!(self.cmd, Sub::Record(_))
    }
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    Record(RecordArgs),
    Compare(CompareArgs),
    Merges(MergesArgs),
}

/// Record block and timer events while fio runs against a scratch loop device
/// (needs root, tracefs, fio and loop devices; everything set up is torn down again,
/// also on error or Ctrl-C).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  iosched kernel-trace record --out w.txt --sched mq-deadline \
--set write_expire=100 -- --name=w --rw=randwrite --ioengine=libaio --iodepth=64 --bs=4k \
--direct=1 --io_size=2M\n\n--filename=/dev/loopN is put before the fio arguments (a global option)."
)]
pub struct RecordArgs {
    /// Where to write the trace text.
    #[arg(long)]
    out: PathBuf,
    /// Scheduler to attach to the loop device.
    #[arg(long, default_value = "mq-deadline")]
    sched: String,
    /// A tunable to write to queue/iosched/ (repeatable), e.g. `fifo_batch=1`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Size of the scratch file backing the loop device (K, M, G suffixes).
    #[arg(long, default_value = "256M")]
    size: String,
    /// Write queue/nr_requests.
    #[arg(long)]
    nr_requests: Option<u32>,
    /// Write queue/nomerges (0 all merges, 1 one-hit merges only, 2 none).
    #[arg(long)]
    nomerges: Option<u8>,
    /// Save only the header, `/sys/block/loopN/stat` before and after the run and the
    /// per-direction counts of the merge events (`block_rq_merge`,
    /// `block_bio_backmerge`, `block_bio_frontmerge`), not the trace: a compact
    /// recording for `kernel-trace merges`.
    #[arg(long)]
    merges_only: bool,
    /// tracefs buffer size per CPU, in KiB.
    #[arg(long, default_value_t = 131072)]
    buffer_kb: u64,
    /// Directory for the scratch file.
    #[arg(long, default_value = "/var/tmp")]
    scratch_dir: PathBuf,
    /// Write queue/rotational (loop devices report 1; BFQ's idling, merging and
    /// injection rules read it). Restored on teardown.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1))]
    rotational: Option<u8>,
    /// Create block cgroup PATH (if missing) and set its BFQ weight before fio runs
    /// (repeatable): `blkio.bfq.weight` (cgroup v1) or `io.bfq.weight` (v2). Jobs
    /// join it with fio's `--cgroup=`. Cgroups created here are removed on teardown.
    #[arg(long = "cgroup-weight", value_name = "PATH=W")]
    cgroup_weight: Vec<String>,
    /// Give block cgroup PATH a weight for the loop device only (repeatable): a
    /// `MAJ:MIN W` line in `blkio.bfq.weight_device` (v1) or `io.bfq.weight` (v2).
    #[arg(long = "cgroup-device-weight", value_name = "PATH=W")]
    cgroup_device_weight: Vec<String>,
    /// With `--sched bfq`: also record BFQ's own log messages (`bfq_log_bfqq`,
    /// blktrace notes), through tracefs's `blk` tracer with the device's
    /// `trace/act_mask` set to `notify`. They show why BFQ decided (queue selected,
    /// injected, expired, idling); compare ignores them. Costs about 20 lines per
    /// request.
    #[arg(long)]
    bfq_log: bool,
    /// When `--sched` is the scheduler already selected on the loop device, keep
    /// that instance instead of selecting `none` first: its state from earlier
    /// uses of the device (BFQ's peak rate, budget count, group counters) carries
    /// over, as in recordings made before the recorder started from a fresh
    /// instance. For finding out what such state changes; the header says
    /// `kept_instance=1`.
    #[arg(long)]
    keep_instance: bool,
    /// fio arguments (after `--`).
    #[arg(last = true, required = true)]
    fio: Vec<String>,
}

/// Replay a recording through one of our schedulers and report how many of the
/// kernel's decisions it reproduces, exactly and with tracing artefacts explained.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  iosched kernel-trace compare \
crates/sim/tests/data/kernel/randwrite.txt --sched mq-deadline --show 3")]
pub struct CompareArgs {
    /// The recorded trace.
    trace: PathBuf,
    /// Our scheduler to compare.
    #[arg(long, default_value = "mq-deadline")]
    sched: String,
    /// Override the HZ the recording names.
    #[arg(long)]
    hz: Option<u32>,
    /// Also write the converted conformance trace here (runnable by sched-replay).
    #[arg(long, value_name = "FILE")]
    emit_conformance: Option<PathBuf>,
    /// Also write the kernel's answers here, in sched-replay's output format.
    #[arg(long, value_name = "FILE")]
    emit_expected: Option<PathBuf>,
    /// Do not try to explain disagreements (faster on long traces).
    #[arg(long)]
    no_explain: bool,
    /// How many inserts/completions an explanation may move a decision across.
    #[arg(long, default_value_t = 8)]
    window: usize,
    /// How many later issues a swapped issue order may reach.
    #[arg(long, default_value_t = 4)]
    swap: usize,
    /// BFQ: replay a swapped issue order of two racing dispatchers in the traced
    /// order, not the decided one (by default the decided order is kept).
    #[arg(long)]
    no_keep_swaps: bool,
    /// Do not count ours dispatching the twin of the kernel's request (another
    /// queued request of the same direction, class, sector and size) as exact.
    #[arg(long)]
    no_twins: bool,
    /// How many disagreements to show with context.
    #[arg(long, default_value_t = 5)]
    show: usize,
    /// Print the figures as one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Leave out lines that cannot be parsed (counted and reported) instead of
    /// stopping at the first one.
    #[arg(long)]
    skip_malformed: bool,
}

/// Run the subcommand.
pub fn run(args: Args) -> Result<()> {
    match args.cmd {
        Sub::Record(a) => record(a),
        Sub::Compare(a) => compare(a),
        Sub::Merges(a) => merges(a),
    }
}

fn compare(a: CompareArgs) -> Result<()> {
    let name = a.trace.display().to_string();
    let text = fs::read_to_string(&a.trace).with_context(|| format!("cannot read {name}"))?;
    let malformed = if a.skip_malformed {
        kernel_trace::Malformed::Skip
    } else {
        kernel_trace::Malformed::Reject
    };
    let (kt, fit, conv) =
        kernel_trace::try_load(&text, &a.sched, a.hz, malformed).map_err(|e| {
            // "N: ..." becomes "FILE:N: ...", as every other input error.
            if e.starts_with(|c: char| c.is_ascii_digit()) {
                anyhow!("{name}:{e}")
            } else {
                anyhow!("{name}: {e}")
            }
        })?;
    if kt.events.is_empty() {
        bail!("{name}: no block events found (is this a tracefs recording?)");
    }
    let opts = CompareOptions {
        explain: !a.no_explain,
        window: a.window,
        swap: a.swap,
        keep_swaps: !a.no_keep_swaps,
        twins: !a.no_twins,
        ..Default::default()
    };
    let rep = kernel_trace::compare(&conv, &opts).map_err(|e| anyhow!("{name}: {e}"))?;
    // The side files are written only once the comparison has succeeded, each whole
    // or not at all, so a failed compare leaves nothing behind.
    if let Some(p) = &a.emit_conformance {
        super::output::write_file(&p.display().to_string(), conv.to_trace_text().as_bytes())?;
    }
    if let Some(p) = &a.emit_expected {
        super::output::write_file(&p.display().to_string(), conv.expected_text().as_bytes())?;
    }
    let mut by: Vec<(&str, usize)> = Vec::new();
    for d in &rep.disagreements {
        let k = d.explanation.unwrap_or("unexplained");
        match by.iter_mut().find(|(n, _)| *n == k) {
            Some(e) => e.1 += 1,
            None => by.push((k, 1)),
        }
    }
    let mut out = String::new();
    if a.json {
        let v = serde_json::json!({
            "trace": name,
            "sched": a.sched,
            "recorded_sched": kt.meta.sched,
            "hz": conv.header.hz,
            "decisions": rep.decisions,
            "exact": rep.exact,
            "explained": rep.explained,
            "exact_pct": rep.exact_pct(),
            "explained_pct": rep.explained_pct(),
            "missing": rep.missing,
            "not_queued": rep.not_queued,
            "refusals": rep.refusals,
            "refusals_not_reproduced": rep.refusals_not_reproduced,
            "reordered": rep.reordered,
            "completions_moved": rep.completions_moved,
            "swaps_kept": rep.swaps_kept,
            "decisions_moved": rep.decisions_moved,
            "twins": rep.twins,
            "stopped": rep.stopped,
            "malformed_lines_skipped": kt.skipped.len(),
            "lost_events": kt.lost_events,
            "depth_changes_kernel": conv.depth_changes.iter().map(|d| serde_json::json!({"t": d.t, "domain": d.domain, "depth": d.depth})).collect::<Vec<_>>(),
            "depth_changes_ours": rep.depth_changes.iter().map(|d| serde_json::json!({"t": d.t, "domain": d.domain, "depth": d.depth})).collect::<Vec<_>>(),
            "by_explanation": by.iter().map(|(k, n)| (k.to_string(), serde_json::Value::from(*n))).collect::<serde_json::Map<_, _>>(),
        });
        out.push_str(&v.to_string());
        out.push('\n');
    } else {
        let st = &conv.stats;
        out.push_str(&format!(
            "trace: {name} (recorded with {}, HZ {}, tunables: {})\n",
            kt.meta.sched.as_deref().unwrap_or("unknown scheduler"),
            conv.header.hz,
            if conv.header.tunables.is_empty() {
                "defaults".to_string()
            } else {
                conv.header
                    .tunables
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        ));
        out.push_str(&format!(
            "jiffies fit: {}/{} timer samples agree\n",
            fit.agree, fit.samples
        ));
        if !kt.skipped.is_empty() {
            out.push_str(&format!(
                "malformed lines left out: {} (first: line {})\n",
                kt.skipped.len(),
                kt.skipped[0].0
            ));
        }
        if kt.lost_events > 0 {
            out.push_str(&format!("events tracefs lost: {}\n", kt.lost_events));
        }
        out.push_str(&format!(
            "events: {}; skipped: {} unmatched issues, {} unmatched completions, {} data-less; \
             {} request merges, {} insert merges, {} grown by bio merges, {} requeues\n",
            st.events,
            st.unmatched_issues,
            st.unmatched_completes,
            st.no_data,
            st.request_merges,
            st.insert_merges,
            st.grown,
            st.requeues
        ));
        out.push_str(&format!("decisions: {}\n", rep.decisions));
        out.push_str(&format!("exact: {} ({:.2}%)\n", rep.exact, rep.exact_pct()));
        out.push_str(&format!(
            "exact or explained: {} ({:.2}%)\n",
            rep.exact + rep.explained,
            rep.explained_pct()
        ));
        for (k, n) in &by {
            out.push_str(&format!("  {k}: {n}\n"));
        }
        if rep.twins > 0 {
            out.push_str(&format!(
                "twins: {} (ours dispatched another queued request of the same direction, class, sector and size: counted exact, the two ids swapped from there on)\n",
                rep.twins
            ));
        }
        if rep.missing > 0 {
            out.push_str(&format!(
                "not compared: {} (the kernel's request was merged away in our replay)\n",
                rep.missing
            ));
        }
        if rep.not_queued > 0 {
            out.push_str(&format!(
                "not compared: {} (the kernel's request was not queued in our replay)\n",
                rep.not_queued
            ));
        }
        if rep.refusals + rep.refusals_not_reproduced > 0 {
            out.push_str(&format!(
                "refused dispatch runs (blk-mq re-run timer): {} replayed, {} where {} would dispatch\n",
                rep.refusals, rep.refusals_not_reproduced, a.sched
            ));
        }
        if rep.reordered + rep.completions_moved + rep.swaps_kept + rep.decisions_moved > 0 {
            out.push_str(&format!(
                "order kept from explanations: {} issues moved earlier, {} completions moved after other-CPU inserts, {} swapped issues in decided order, {} decisions moved before recent inserts/completions\n",
                rep.reordered, rep.completions_moved, rep.swaps_kept, rep.decisions_moved
            ));
        }
        if let Some(s) = &rep.stopped {
            out.push_str(&format!("stopped early: {s}\n"));
        }
        if !conv.timer_runs.is_empty() || !conv.depth_changes.is_empty() {
            let fmt = |v: &[kernel_trace::DepthChange]| {
                if v.is_empty() {
                    return "none".to_string();
                }
                v.iter()
                    .map(|d| format!("{}→{} at {:.1}ms", d.domain, d.depth, d.t as f64 / 1e6))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push_str(&format!(
                "kernel timer runs: {}\n",
                conv.timer_runs
                    .iter()
                    .map(|t| format!("{:.1}ms", *t as f64 / 1e6))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            out.push_str(&format!(
                "depth changes, kernel: {}\n",
                fmt(&conv.depth_changes)
            ));
            out.push_str(&format!(
                "depth changes, ours:   {}\n",
                fmt(&rep.depth_changes)
            ));
        }
        for d in rep.disagreements.iter().take(a.show) {
            out.push_str(&format!(
                "\ndecision {} at t={}ns: kernel issued {}, {} chose {} ({})\n",
                d.decision,
                d.t,
                d.kernel,
                a.sched,
                d.ours.map_or("nothing".to_string(), |x| x.to_string()),
                d.explanation.unwrap_or("unexplained")
            ));
            for l in kernel_trace::compare::context(&conv, d, opts.context) {
                out.push_str(&l);
                out.push('\n');
            }
            // BFQ's own log (`record --bfq-log`) from the op before the decision to
            // the issue: why the kernel chose.
            let line = conv.source_line[d.op_index];
            let from = conv.source_line[d.op_index.saturating_sub(1)];
            let notes: Vec<_> = kt
                .bfq_log
                .iter()
                .filter(|l| l.line > from && l.line < line)
                .collect();
            if !notes.is_empty() {
                out.push_str("   BFQ's log before the issue:\n");
                for l in notes.iter().rev().take(40).rev() {
                    out.push_str(&format!(
                        "     [line {}] cpu {} {}\n",
                        l.line, l.cpu, l.text
                    ));
                }
            }
        }
    }
    super::output::print(&out)
}

// ---------------------------------------------------------------- recording

const TRACEFS: &str = "/sys/kernel/tracing";
const EVENTS: [&str; 8] = [
    "block/block_rq_insert",
    "block/block_rq_issue",
    "block/block_rq_complete",
    "block/block_rq_merge",
    "block/block_rq_requeue",
    "timer/timer_start",
    "timer/timer_expire_entry",
    // fio's job processes exiting: BFQ drops a process's queues then (bfq_exit_icq).
    "sched/sched_process_exit",
];

/// The filter of each non-block event in [`EVENTS`] (block events are filtered by
/// device): only fio's processes' exits matter.
fn event_filter(e: &str, devt: u64) -> Option<String> {
    if e.starts_with("block/") {
        Some(format!("dev == {devt}"))
    } else if e == "sched/sched_process_exit" {
        Some("comm == \"fio\"".to_string())
    } else {
        None
    }
}

/// Tasks moving between cgroups, filtered to fio's: each job joins its `--cgroup=`
/// itself, and the event names the task and the cgroup, where polling `/proc`
/// misses a job that starts and ends between two polls. Recorded when the kernel
/// has it.
const CGROUP_EVENT: &str = "cgroup/cgroup_attach_task";

/// The hierarchy id of the block I/O controller, as `cgroup_attach_task` names it
/// (`dst_root`): v1 `blkio`'s line of `/proc/cgroups`, 0 for the unified hierarchy.
fn block_hierarchy_id() -> Option<u32> {
    let (_, v1) = blkio_root()?;
    if !v1 {
        return Some(0);
    }
    let text = fs::read_to_string("/proc/cgroups").ok()?;
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"blkio"))
        .and_then(|f| f.get(1)?.parse().ok())
}

/// Bio merge events, enabled with `--merges-only` (counted, not saved).
const BIO_MERGE_EVENTS: [&str; 2] = ["block/block_bio_backmerge", "block/block_bio_frontmerge"];

/// Kyber's own tracepoints (depth changes, percentiles, throttling), enabled when
/// recording kyber: they show the kernel's controller, which the block events cannot;
/// and request allocations (`block_getrq`), where kyber's total latency starts.
const KYBER_EVENTS: [&str; 4] = [
    "block/block_getrq",
    "kyber/kyber_adjust",
    "kyber/kyber_latency",
    "kyber/kyber_throttled",
];

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn check_interrupted() -> Result<()> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    Ok(())
}

/// Everything set up for a recording; dropping it tears it all down (best effort,
/// each step independent), so errors, panics and Ctrl-C all leave the machine clean.
#[derive(Default)]
struct Recording {
    mounted_tracefs: bool,
    tracing_touched: bool,
    old_buffer_kb: Option<String>,
    old_overwrite: Option<String>,
    /// Scheduler events enabled in addition to [`EVENTS`].
    extra_events: Vec<&'static str>,
    loopdev: Option<String>,
    /// The loop device's scheduler before we changed it (its queue outlives the
    /// detach), restored on teardown.
    old_sched: Option<(PathBuf, String)>,
    /// `--keep-instance` took effect: the scheduler in use was kept.
    kept_instance: bool,
    /// `queue/nomerges` before we changed it (the queue outlives the detach too).
    old_nomerges: Option<(PathBuf, String)>,
    /// `queue/rotational` before we changed it.
    old_rotational: Option<(PathBuf, String)>,
    /// Cgroup directories we created, removed (deepest first) on teardown.
    cgroups_made: Vec<PathBuf>,
    scratch: Option<PathBuf>,
    /// `--bfq-log`: the tracer before we selected `blk`, and the loop device's
    /// `trace/` directory whose blktrace we enabled.
    old_tracer: Option<String>,
    blk_trace_dir: Option<PathBuf>,
}

fn write_attr(path: impl AsRef<Path>, val: &str) -> Result<()> {
    let p = path.as_ref();
    fs::write(p, val).with_context(|| format!("writing '{}' to {}", val.trim(), p.display()))
}

fn read_attr(path: impl AsRef<Path>) -> Result<String> {
    let p = path.as_ref();
    Ok(fs::read_to_string(p)
        .with_context(|| format!("reading {}", p.display()))?
        .trim()
        .to_string())
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.tracing_touched {
            let _ = fs::write(format!("{TRACEFS}/tracing_on"), "0");
            if let Some(d) = &self.blk_trace_dir {
                let _ = fs::write(d.join("enable"), "0");
            }
            if let Some(t) = &self.old_tracer {
                let _ = fs::write(format!("{TRACEFS}/current_tracer"), t);
            }
            for e in EVENTS.iter().chain(&self.extra_events) {
                let _ = fs::write(format!("{TRACEFS}/events/{e}/enable"), "0");
                let _ = fs::write(format!("{TRACEFS}/events/{e}/filter"), "0");
            }
            let _ = fs::write(format!("{TRACEFS}/trace"), "");
            if let Some(v) = &self.old_overwrite {
                let _ = fs::write(format!("{TRACEFS}/options/overwrite"), v);
            }
            if let Some(v) = &self.old_buffer_kb {
                // "7 (expanded: 1408)" style values: keep the number only.
                let n: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
                if !n.is_empty() {
                    let _ = fs::write(format!("{TRACEFS}/buffer_size_kb"), n);
                }
            }
        }
        if let Some((p, v)) = &self.old_sched {
            let _ = fs::write(p, v);
        }
        if let Some((p, v)) = &self.old_nomerges {
            let _ = fs::write(p, v);
        }
        if let Some((p, v)) = &self.old_rotational {
            let _ = fs::write(p, v);
        }
        for d in self.cgroups_made.iter().rev() {
            // Tasks left in it (fio's are gone by now) would make rmdir fail: move
            // any stragglers to the parent first.
            if let (Ok(tasks), Some(parent)) = (fs::read_to_string(d.join("tasks")), d.parent()) {
                for t in tasks.split_whitespace() {
                    let _ = fs::write(parent.join("tasks"), t);
                }
            }
            let _ = fs::remove_dir(d);
        }
        if let Some(dev) = &self.loopdev {
            let _ = Command::new("losetup").arg("-d").arg(dev).status();
        }
        if let Some(f) = &self.scratch {
            let _ = fs::remove_file(f);
        }
        if self.mounted_tracefs {
            let _ = Command::new("umount").arg(TRACEFS).status();
        }
    }
}

fn parse_size(s: &str) -> Result<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('K') | Some('k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') | Some('m') => (&s[..s.len() - 1], 1 << 20),
        Some('G') | Some('g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow!("bad --size '{s}' (e.g. 256M)"))?;
    if n == 0 {
        bail!("--size must be positive");
    }
    Ok(n * mul)
}

fn kernel_hz() -> Option<u32> {
    let rel = read_attr("/proc/sys/kernel/osrelease").ok()?;
    let cfg = fs::read_to_string(format!("/boot/config-{rel}"))
        .ok()
        .or_else(|| {
            let o = Command::new("zcat").arg("/proc/config.gz").output().ok()?;
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
        })?;
    cfg.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn record(a: RecordArgs) -> Result<()> {
    if !is_root() {
        bail!("kernel-trace record needs root (loop devices, tracefs, sysfs writes)");
    }
    let fio_ok = Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !fio_ok {
        bail!("fio not found in PATH (install it, e.g. apt-get install fio)");
    }
    let size = parse_size(&a.size)?;
    let mut sets = Vec::new();
    for s in &a.set {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| anyhow!("--set '{s}': expected NAME=VALUE"))?;
        if k.is_empty() || k.contains('/') || k.contains("..") {
            bail!("--set '{s}': bad tunable name");
        }
        sets.push((k.to_string(), v.to_string()));
    }
    // SAFETY: installing an async-signal-safe handler that only stores an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut rec = Recording::default();
    let res = record_inner(&a, size, &sets, &mut rec);
    drop(rec);
    res
}

fn record_inner(
    a: &RecordArgs,
    size: u64,
    sets: &[(String, String)],
    rec: &mut Recording,
) -> Result<()> {
    // tracefs
    if !Path::new(TRACEFS).join("events").exists() {
        let ok = Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok || !Path::new(TRACEFS).join("events").exists() {
            bail!("tracefs is not available at {TRACEFS} and could not be mounted");
        }
        rec.mounted_tracefs = true;
    }
    for e in EVENTS {
        if !Path::new(TRACEFS).join("events").join(e).exists() {
            bail!("tracepoint {e} is not available in this kernel");
        }
    }
    check_interrupted()?;
    // scratch file and loop device
    let scratch = a
        .scratch_dir
        .join(format!("iosched-kernel-trace-{}.img", std::process::id()));
    {
        let f = fs::File::create(&scratch)
            .with_context(|| format!("creating scratch file {}", scratch.display()))?;
        rec.scratch = Some(scratch.clone());
        f.set_len(size)?;
    }
    let o = Command::new("losetup")
        .args(["--direct-io=on", "-f", "--show"])
        .arg(&scratch)
        .output()
        .context("running losetup")?;
    if !o.status.success() {
        bail!(
            "losetup failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
    rec.loopdev = Some(dev.clone());
    let base = dev.trim_start_matches("/dev/").to_string();
    let q = PathBuf::from(format!("/sys/block/{base}/queue"));
    let majmin = read_attr(format!("/sys/block/{base}/dev"))?;
    let (maj, min) = majmin
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| anyhow!("unexpected dev '{majmin}' for {dev}"))?;
    // scheduler, tunables
    if let Ok(cur) = read_attr(q.join("scheduler")) {
        if let Some(name) = cur
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        {
            rec.old_sched = Some((q.join("scheduler"), name.to_string()));
        }
    }
    // Selecting the scheduler already in use is a no-op (`elevator_change`), which
    // would leave its state (BFQ's peak rate, budget count, ...) from an earlier
    // use of the queue — the loop device's queue outlives the detach. Switch to
    // `none` first, so the recording starts from a fresh instance.
    let in_use = rec.old_sched.as_ref().is_some_and(|(_, n)| *n == a.sched);
    if in_use && a.sched != "none" && !a.keep_instance {
        write_attr(q.join("scheduler"), "none")?;
    }
    rec.kept_instance = in_use && a.keep_instance;
    write_attr(q.join("scheduler"), &a.sched)?;
    let cur = read_attr(q.join("scheduler"))?;
    if !cur.contains(&format!("[{}]", a.sched)) {
        bail!("could not select scheduler '{}' (have: {cur})", a.sched);
    }
    if let Some(n) = a.nr_requests {
        write_attr(q.join("nr_requests"), &n.to_string())?;
    }
    if let Some(n) = a.nomerges {
        if let Ok(old) = read_attr(q.join("nomerges")) {
            rec.old_nomerges = Some((q.join("nomerges"), old));
        }
        write_attr(q.join("nomerges"), &n.to_string())?;
    }
    if let Some(r) = a.rotational {
        if let Ok(old) = read_attr(q.join("rotational")) {
            rec.old_rotational = Some((q.join("rotational"), old));
        }
        write_attr(q.join("rotational"), &r.to_string())?;
    }
    for (spec, per_device) in a
        .cgroup_weight
        .iter()
        .map(|s| (s, false))
        .chain(a.cgroup_device_weight.iter().map(|s| (s, true)))
    {
        set_cgroup_weight(rec, spec, per_device.then_some((maj, min)))?;
    }
    for (k, v) in sets {
        let p = q.join("iosched").join(k);
        if !p.exists() {
            bail!("scheduler '{}' has no tunable '{k}'", a.sched);
        }
        write_attr(p, v)?;
    }
    check_interrupted()?;
    // tracing
    rec.tracing_touched = true;
    rec.old_buffer_kb = read_attr(format!("{TRACEFS}/buffer_size_kb")).ok();
    rec.old_overwrite = read_attr(format!("{TRACEFS}/options/overwrite")).ok();
    write_attr(format!("{TRACEFS}/tracing_on"), "0")?;
    write_attr(format!("{TRACEFS}/trace"), "")?;
    write_attr(format!("{TRACEFS}/options/overwrite"), "0")?;
    write_attr(
        format!("{TRACEFS}/buffer_size_kb"),
        &a.buffer_kb.to_string(),
    )?;
    let devt = ((maj as u64) << 20) | min as u64;
    for e in EVENTS {
        if let Some(f) = event_filter(e, devt) {
            write_attr(format!("{TRACEFS}/events/{e}/filter"), &f)?;
        }
        write_attr(format!("{TRACEFS}/events/{e}/enable"), "1")?;
    }
    if Path::new(TRACEFS)
        .join("events")
        .join(CGROUP_EVENT)
        .exists()
    {
        rec.extra_events.push(CGROUP_EVENT);
        write_attr(
            format!("{TRACEFS}/events/{CGROUP_EVENT}/filter"),
            "comm == \"fio\"",
        )?;
        write_attr(format!("{TRACEFS}/events/{CGROUP_EVENT}/enable"), "1")?;
    }
    if a.sched == "kyber" {
        for e in KYBER_EVENTS {
            if !Path::new(TRACEFS).join("events").join(e).exists() {
                eprintln!("warning: tracepoint {e} not available; not recorded");
                continue;
            }
            rec.extra_events.push(e);
            write_attr(
                format!("{TRACEFS}/events/{e}/filter"),
                &format!("dev == {devt}"),
            )?;
            write_attr(format!("{TRACEFS}/events/{e}/enable"), "1")?;
        }
    }
    if a.merges_only {
        for e in BIO_MERGE_EVENTS {
            if !Path::new(TRACEFS).join("events").join(e).exists() {
                eprintln!("warning: tracepoint {e} not available; not counted");
                continue;
            }
            rec.extra_events.push(e);
            write_attr(
                format!("{TRACEFS}/events/{e}/filter"),
                &format!("dev == {devt}"),
            )?;
            write_attr(format!("{TRACEFS}/events/{e}/enable"), "1")?;
        }
    }
    if a.bfq_log {
        if a.sched != "bfq" {
            bail!("--bfq-log needs --sched bfq");
        }
        let tracers = read_attr(format!("{TRACEFS}/available_tracers")).unwrap_or_default();
        if !tracers.split_whitespace().any(|t| t == "blk") {
            bail!("--bfq-log: this kernel has no 'blk' tracer (CONFIG_BLK_DEV_IO_TRACE)");
        }
        rec.old_tracer = Some(read_attr(format!("{TRACEFS}/current_tracer"))?);
        // Selecting a tracer clears the buffer, so it comes before anything is traced.
        write_attr(format!("{TRACEFS}/current_tracer"), "blk")?;
        let d = PathBuf::from(format!("/sys/block/{base}/trace"));
        write_attr(d.join("act_mask"), "notify")?;
        rec.blk_trace_dir = Some(d.clone());
        write_attr(d.join("enable"), "1")?;
    }
    let stat_path = format!("/sys/block/{base}/stat");
    let stat_before = read_attr(&stat_path)?;
    write_attr(format!("{TRACEFS}/tracing_on"), "1")?;
    // fio
    let mut fio = Command::new("fio");
    // Global options go before the first --name, so the device applies to every job.
    fio.arg(format!("--filename={dev}")).args(&a.fio);
    let FioRun {
        output: fio_out,
        task_cgroups,
        weights,
    } = run_watching_cgroups(fio, (maj, min))?;
    write_attr(format!("{TRACEFS}/tracing_on"), "0")?;
    let stat_after = read_attr(&stat_path)?;
    check_interrupted()?;
    if !fio_out.status.success() {
        bail!(
            "fio failed ({}): {}",
            fio_out.status,
            String::from_utf8_lossy(&fio_out.stderr).trim()
        );
    }
    // save: header with what was in effect, read back from sysfs, then the trace
    let mut hdr = String::new();
    hdr.push_str("# iosched: format=kernel-trace 1\n");
    if let Some(hz) = kernel_hz() {
        hdr.push_str(&format!("# iosched: hz={hz}\n"));
    } else {
        eprintln!("warning: could not read CONFIG_HZ; compare will need --hz");
    }
    if let Ok(r) = read_attr("/proc/sys/kernel/osrelease") {
        hdr.push_str(&format!("# iosched: kernel={r}\n"));
    }
    hdr.push_str(&format!("# iosched: device={dev}\n"));
    hdr.push_str(&format!("# iosched: dev={maj},{min}\n"));
    hdr.push_str(&format!("# iosched: sched={}\n", a.sched));
    hdr.push_str(&format!(
        "# iosched: nr_requests={}\n",
        read_attr(q.join("nr_requests"))?
    ));
    for attr in ["max_sectors_kb", "max_segments", "nomerges", "rotational"] {
        if let Ok(v) = read_attr(q.join(attr)) {
            hdr.push_str(&format!("# iosched: {attr}={v}\n"));
        }
    }
    let mut names: Vec<String> = fs::read_dir(q.join("iosched"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in names {
        if let Ok(v) = read_attr(q.join("iosched").join(&n)) {
            hdr.push_str(&format!("# iosched: tunable.{n}={v}\n"));
        }
    }
    if let Some(id) = block_hierarchy_id() {
        hdr.push_str(&format!("# iosched: cgroup_root={id}\n"));
    }
    for (tid, path) in &task_cgroups {
        hdr.push_str(&format!("# iosched: task_cgroup={tid} {path}\n"));
    }
    for (path, w) in &weights {
        if let Some(d) = w.default {
            hdr.push_str(&format!("# iosched: cgroup_weight={path} {d}\n"));
        }
        if let Some(d) = w.device {
            hdr.push_str(&format!(
                "# iosched: cgroup_weight_device={path} {maj}:{min} {d}\n"
            ));
        }
    }
    if a.bfq_log {
        hdr.push_str("# iosched: bfq_log=1\n");
    }
    if rec.kept_instance {
        hdr.push_str("# iosched: kept_instance=1\n");
    }
    hdr.push_str(&format!("# iosched: size={size}\n"));
    hdr.push_str(&format!("# iosched: fio={}\n", a.fio.join(" ")));
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    hdr.push_str(&format!("# iosched: stat_before={}\n", norm(&stat_before)));
    hdr.push_str(&format!("# iosched: stat_after={}\n", norm(&stat_after)));
    let mut out =
        fs::File::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    if a.merges_only {
        let text = fs::read_to_string(format!("{TRACEFS}/trace")).context("reading trace")?;
        let lost = text
            .lines()
            .take(40)
            .find(|l| l.contains("entries-in-buffer/entries-written"))
            .and_then(|l| l.split(": ").nth(1))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|w| w.split_once('/'))
            .is_some_and(|(x, y)| x != y);
        if lost {
            eprintln!("warning: tracefs dropped events; merge event counts are short");
        }
        for (name, [r, w]) in kernel_trace::merges::count_merge_events(&text) {
            hdr.push_str(&format!("# iosched: events.{name}={r},{w}\n"));
        }
        out.write_all(hdr.as_bytes())?;
        out.flush()?;
        eprintln!(
            "recorded {} ({dev}, {}, merges only)",
            a.out.display(),
            a.sched
        );
        return Ok(());
    }
    out.write_all(hdr.as_bytes())?;
    let mut tr = fs::File::open(format!("{TRACEFS}/trace")).context("opening trace")?;
    std::io::copy(&mut tr, &mut out).context("saving trace")?;
    out.flush()?;
    drop(out);
    // tracefs reports lost events in its header: say so, the start must be complete.
    let head = fs::read_to_string(&a.out).unwrap_or_default();
    if let Some(l) = head
        .lines()
        .take(40)
        .find(|l| l.contains("entries-in-buffer/entries-written"))
    {
        if let Some((x, y)) = l
            .split(": ")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|w| w.split_once('/'))
        {
            if x != y {
                eprintln!("warning: tracefs dropped events ({x} of {y} kept); raise --buffer-kb");
            }
        }
    }
    eprintln!("recorded {} ({dev}, {})", a.out.display(), a.sched);
    Ok(())
}

/// Run fio to the end, noting the block cgroup of each of its tasks (processes and
/// threads) while they live: block events name the submitting task, not its cgroup,
/// and BFQ schedules by cgroup. Only tasks outside the root cgroup are listed, in tid
/// order.
fn run_watching_cgroups(mut fio: Command, dev: (u32, u32)) -> Result<FioRun> {
    use std::process::Stdio;
    let mut child = fio
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running fio")?;
    let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut b);
        b
    });
    let root = child.id();
    let mut seen = std::collections::BTreeMap::new();
    let mut weights = std::collections::BTreeMap::new();
    let status = loop {
        note_task_cgroups(root, &mut seen);
        // Read each cgroup's weights when first seen: fio removes the cgroups it
        // made when it ends.
        for path in seen.values() {
            if !weights.contains_key(path) {
                weights.insert(path.clone(), read_cgroup_weight(path, dev));
            }
        }
        if let Some(st) = child.try_wait().context("waiting for fio")? {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    Ok(FioRun {
        output: std::process::Output {
            status,
            stdout,
            stderr,
        },
        task_cgroups: seen,
        weights,
    })
}

/// What [`run_watching_cgroups`] saw: fio's output, the block cgroup of each of its
/// tasks outside the root, and those cgroups' BFQ weights.
struct FioRun {
    output: std::process::Output,
    task_cgroups: std::collections::BTreeMap<u32, String>,
    weights: std::collections::BTreeMap<String, CgroupWeight>,
}

/// Where the block cgroup hierarchy is mounted: the v1 `blkio` controller's
/// directory if there is one, else the unified (v2) hierarchy; and whether it is v1.
fn blkio_root() -> Option<(PathBuf, bool)> {
    for (p, v1) in [
        ("/sys/fs/cgroup/blkio", true),
        ("/sys/fs/cgroup/unified", false),
        ("/sys/fs/cgroup", false),
    ] {
        let p = PathBuf::from(p);
        // The root has no weight file: a v1 blkio root has blkio.reset_stats, a v2
        // root cgroup.controllers.
        let is = if v1 {
            p.join("blkio.reset_stats").exists()
        } else {
            p.join("cgroup.controllers").exists()
        };
        if is {
            return Some((p, v1));
        }
    }
    None
}

/// A cgroup's BFQ weights as read back: the default, and the override for the
/// recorded device if it has one.
#[derive(Debug, Clone, Copy, Default)]
struct CgroupWeight {
    default: Option<u32>,
    device: Option<u32>,
}

/// Parse the text of `io.bfq.weight` (`default W` then `MAJ:MIN W` lines) or of v1
/// `blkio.bfq.weight` (`W`) / `blkio.bfq.weight_device` (`MAJ:MIN W` lines).
fn parse_weight_text(text: &str, dev: (u32, u32), w: &mut CgroupWeight) {
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            [v] => w.default = v.parse().ok(),
            ["default", v] => w.default = v.parse().ok(),
            [d, v] => {
                let d = d
                    .split_once(':')
                    .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
                if d == Some(dev) {
                    w.device = v.parse().ok();
                }
            }
            _ => {}
        }
    }
}

/// The BFQ weights of block cgroup `path` (absolute, as in `/proc/PID/cgroup`).
fn read_cgroup_weight(path: &str, dev: (u32, u32)) -> CgroupWeight {
    let mut w = CgroupWeight::default();
    let Some((root, v1)) = blkio_root() else {
        return w;
    };
    let dir = root.join(path.trim_start_matches('/'));
    let files: &[&str] = if v1 {
        &["blkio.bfq.weight", "blkio.bfq.weight_device"]
    } else {
        &["io.bfq.weight"]
    };
    for f in files {
        if let Ok(t) = fs::read_to_string(dir.join(f)) {
            parse_weight_text(&t, dev, &mut w);
        }
    }
    w
}

/// `--cgroup-weight PATH=W` / `--cgroup-device-weight PATH=W` (with `dev`): create
/// the cgroup if needed (noted for removal) and write its weight.
fn set_cgroup_weight(rec: &mut Recording, spec: &str, dev: Option<(u32, u32)>) -> Result<()> {
    let (path, w) = spec
        .split_once('=')
        .ok_or_else(|| anyhow!("--cgroup-weight '{spec}': expected PATH=W"))?;
    let w: u32 = w
        .parse()
        .ok()
        .filter(|w| (1..=1000).contains(w))
        .ok_or_else(|| anyhow!("--cgroup-weight '{spec}': the weight must be 1..=1000"))?;
    let rel = path.trim_matches('/');
    if rel.is_empty()
        || rel
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        bail!("--cgroup-weight '{spec}': bad cgroup path");
    }
    let (root, v1) = blkio_root().ok_or_else(|| anyhow!("no block cgroup hierarchy found"))?;
    let mut dir = root.clone();
    for c in rel.split('/') {
        dir = dir.join(c);
        if !dir.exists() {
            fs::create_dir(&dir).with_context(|| format!("creating cgroup {}", dir.display()))?;
            rec.cgroups_made.push(dir.clone());
        }
    }
    let (file, text) = match (v1, dev) {
        (true, None) => ("blkio.bfq.weight", w.to_string()),
        (true, Some((a, b))) => ("blkio.bfq.weight_device", format!("{a}:{b} {w}")),
        (false, None) => ("io.bfq.weight", format!("default {w}")),
        (false, Some((a, b))) => ("io.bfq.weight", format!("{a}:{b} {w}")),
    };
    write_attr(dir.join(file), &text)
}

/// The block cgroup path of every task of `root` and of its child processes.
fn note_task_cgroups(root: u32, seen: &mut std::collections::BTreeMap<u32, String>) {
    let mut pids = vec![root];
    // The kernel lists each task's children (`/proc/PID/task/TID/children`); reading
    // those is far cheaper than scanning every process, which matters when the
    // recording is polled every few milliseconds beside the workload.
    if let Some(children) = child_pids(root) {
        pids.extend(children);
    } else if let Ok(d) = fs::read_dir("/proc") {
        for e in d.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            // Field 4 of /proc/PID/stat, after the parenthesised command name.
            let ppid = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|st| {
                    st.rsplit_once(") ")
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                });
            if ppid == Some(root) {
                pids.push(pid);
            }
        }
    }
    for pid in pids {
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(path) = fs::read_to_string(t.path().join("cgroup"))
                .ok()
                .and_then(|c| block_cgroup(&c))
            {
                if path != "/" {
                    seen.insert(tid, path);
                }
            }
        }
    }
}

/// The child processes of `root`, from the `children` file of each of its tasks;
/// `None` when the kernel does not provide those files (`CONFIG_PROC_CHILDREN`).
fn child_pids(root: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut any = false;
    for t in fs::read_dir(format!("/proc/{root}/task")).ok()?.flatten() {
        if let Ok(text) = fs::read_to_string(t.path().join("children")) {
            any = true;
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    any.then_some(out)
}

/// The block I/O cgroup in the text of `/proc/TID/cgroup`: the v1 `blkio` hierarchy's
/// line if there is one, else the unified (v2, `0::`) line.
fn block_cgroup(text: &str) -> Option<String> {
    let mut unified = None;
    for l in text.lines() {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        if ctrls.split(',').any(|c| c == "blkio" || c == "io") {
            return Some(path.to_string());
        }
        if ctrls.is_empty() {
            unified = Some(path.to_string());
        }
    }
    unified
}

// ---------------------------------------------------------------- merges

/// Run the fio job of merges recordings (`record --merges-only`) through our block
/// layer, with an ideal device standing in for the loop device, and print our read
/// and write merges beside the kernel's (`/sys/block/loopN/stat` fields 2 and 6, and
/// the merge tracepoints).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  iosched kernel-trace merges crates/sim/tests/data/kernel/merges-*.txt"
)]
pub struct MergesArgs {
    /// Merges recordings (or full recordings made with stat lines).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Per-request latency of the stand-in device, µs.
    #[arg(long, default_value_t = 20.0)]
    latency_us: f64,
    /// Simulated CPUs.
    #[arg(long, default_value_t = 2)]
    cpus: u32,
    /// Run seed.
    #[arg(long)]
    seed: Option<u64>,
    /// CPU cost of one submission, ns (default: the engine's).
    #[arg(long)]
    submit_ns: Option<u64>,
    /// Print one JSON object per recording instead of the table.
    #[arg(long)]
    json: bool,
}

fn merges(a: MergesArgs) -> Result<()> {
    use kernel_trace::merges::{simulate, LoopModel, MergeRecording};
    if !(a.latency_us.is_finite() && a.latency_us >= 0.0) {
        bail!("--latency-us must be a non-negative number");
    }
    let mut model = LoopModel {
        latency_ns: (a.latency_us * 1000.0).round() as u64,
        nr_cpus: a.cpus.max(1),
        submit_ns: a.submit_ns,
        ..Default::default()
    };
    if let Some(s) = a.seed {
        model.seed = s;
    }
    let mut out = String::new();
    if !a.json {
        out.push_str(
            "| recording | sched | nomerges | kernel stat merges R/W | kernel events R/W (rq+back+front) | ours R/W | kernel ios R/W | our ios R/W |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
    }
    for p in &a.traces {
        let name = p.display().to_string();
        let text = fs::read_to_string(p).with_context(|| format!("cannot read {name}"))?;
        let rec = MergeRecording::parse(&text).map_err(|e| anyhow!("{name}: {e}"))?;
        let ours = simulate(&rec, &model).map_err(|e| anyhow!("{name}: {e}"))?;
        let k = rec.kernel_merges();
        let kio = rec.kernel_ios();
        let ev = rec.event_merges();
        let short = p
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(name.clone());
        if a.json {
            let v = serde_json::json!({
                "recording": name,
                "sched": rec.meta.sched,
                "nomerges": rec.meta.nomerges,
                "fio": rec.fio.join(" "),
                "kernel_stat_merges": k,
                "kernel_events": rec.events.iter().map(|(n, c)| (n.clone(), serde_json::json!(c))).collect::<serde_json::Map<_, _>>(),
                "kernel_ios": kio,
                "our_merges": ours.merges,
                "our_ios": ours.ios,
            });
            out.push_str(&v.to_string());
            out.push('\n');
        } else {
            let evs = match ev {
                None => "—".to_string(),
                Some(s) => {
                    let f = |n: &str| rec.event(n).unwrap_or([0, 0]);
                    let (q, b, fr) = (
                        f("block_rq_merge"),
                        f("block_bio_backmerge"),
                        f("block_bio_frontmerge"),
                    );
                    format!(
                        "{}/{} ({}+{}+{} / {}+{}+{})",
                        s[0], s[1], q[0], b[0], fr[0], q[1], b[1], fr[1]
                    )
                }
            };
            out.push_str(&format!(
                "| {short} | {} | {} | {}/{} | {evs} | {}/{} | {}/{} | {}/{} |\n",
                rec.meta.sched.as_deref().unwrap_or("?"),
                rec.meta.nomerges.map_or("?".to_string(), |v| v.to_string()),
                k[0],
                k[1],
                ours.merges[0],
                ours.merges[1],
                kio[0],
                kio[1],
                ours.ios[0],
                ours.ios[1],
            ));
        }
    }
    super::output::print(&out)
}

#[cfg(test)]
mod tests {
    use super::block_cgroup;

    #[test]
    fn block_cgroup_prefers_the_v1_blkio_hierarchy() {
        let hybrid = "12:pids:/\n7:blkio:/ga\n1:name=systemd:/user.slice\n0::/user.slice/x\n";
        assert_eq!(block_cgroup(hybrid).as_deref(), Some("/ga"));
        let v2 = "0::/test/a\n";
        assert_eq!(block_cgroup(v2).as_deref(), Some("/test/a"));
        assert_eq!(block_cgroup("3:cpu,cpuacct:/x\n"), None);
    }
}
