//! A trace as a job's workload: the steps a replaying job takes, and the three
//! ways of timing them.
//!
//! - fio's `read_iolog` ([`FioTiming`]): each entry is delayed relative to the
//!   job's previous issue by the difference of its timestamp and the previous
//!   entry's (fio's `delay_since_ttime` and `iolog_delay`), scaled by
//!   `replay_time_scale`, none with `replay_no_stall`;
//! - open loop ([`OpenLoop`]): each request is due at its own timestamp
//!   (scaled), counted from the job's start; how late it was issued is recorded;
//! - closed loop: every request is due at once; the job's depth paces them.
//!
//! In every mode the job's depth caps what is in flight: a request due while
//! the queue is full waits for a completion.

use super::{TraceError, TraceIo, TraceOp, TraceReader};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// When a step may be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// At once.
    Now,
    /// This many ns after the job's previous issue (fio's `last_issue`).
    AfterLastIssue(u64),
    /// This many ns after the job's start.
    FromStart(u64),
}

/// One step of a replaying job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// When it may go.
    pub due: Due,
    /// What it does: an I/O, a sync, a v2 `wait` (only the timing), or a file
    /// action (timing, and it counts as an issue, as fio's `ipo_special` sets
    /// `last_issue`).
    pub op: TraceOp,
    /// Byte offset.
    pub offset: u64,
    /// Bytes.
    pub bytes: u64,
    /// Submitting task from the trace.
    pub pid: Option<u32>,
    /// Submitting CPU from the trace.
    pub cpu: Option<u32>,
    /// The trace line (or record) it comes from.
    pub line: u64,
}

/// What a replay reports back once its job is done.
#[derive(Debug, Default)]
pub struct ReplayShared {
    /// The trace failed mid-run (it passed [`super::check`], so only if the file
    /// changed or could not be read again).
    pub error: Option<TraceError>,
    /// Open loop: how late each request was issued after its timestamp, ns.
    pub lateness: Option<hdrhistogram::Histogram<u64>>,
    /// Steps issued.
    pub issued: u64,
}

/// A job's stream of steps.
pub trait ReplayStream: Send {
    /// The next step, `None` at the end (or on an error, kept in the shared state).
    fn next_step(&mut self) -> Option<Step>;
    /// The step last returned was issued this long after it was due.
    fn issued(&mut self, _late_ns: u64) {}
}

/// Opens a job's stream when the job is built.
type Opener = dyn Fn() -> Result<Box<dyn ReplayStream>, TraceError> + Send + Sync;

/// A job's workload from a trace: how to open its stream, and where the stream
/// reports back. Cheap to clone (every clone of a job config shares it).
#[derive(Clone)]
pub struct ReplaySource {
    open: Arc<Opener>,
    /// What the replay reports back.
    pub shared: Arc<Mutex<ReplayShared>>,
}

impl std::fmt::Debug for ReplaySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplaySource")
    }
}

impl ReplaySource {
    /// A source whose stream `open` builds (it gets the shared state to report to).
    pub fn new(
        open: impl Fn(Arc<Mutex<ReplayShared>>) -> Result<Box<dyn ReplayStream>, TraceError>
            + Send
            + Sync
            + 'static,
    ) -> ReplaySource {
        let shared = Arc::new(Mutex::new(ReplayShared::default()));
        let s2 = shared.clone();
        ReplaySource {
            open: Arc::new(move || open(s2.clone())),
            shared,
        }
    }

    /// Open the stream; an error is kept in the shared state and the stream is
    /// empty.
    pub fn open(&self) -> Box<dyn ReplayStream> {
        match (self.open)() {
            Ok(s) => s,
            Err(e) => {
                lock(&self.shared).error.get_or_insert(e);
                Box::new(Empty)
            }
        }
    }

    /// The error the replay met, if any.
    pub fn error(&self) -> Option<TraceError> {
        lock(&self.shared).error.clone()
    }
}

fn lock(m: &Mutex<ReplayShared>) -> std::sync::MutexGuard<'_, ReplayShared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Empty;
impl ReplayStream for Empty {
    fn next_step(&mut self) -> Option<Step> {
        None
    }
}

/// fio's replay options (`replay_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FioReplayOptions {
    /// `replay_no_stall`.
    pub no_stall: bool,
    /// `replay_time_scale`, percent (default 100).
    pub time_scale: u32,
    /// `replay_align`, bytes (0: none; a power of 2).
    pub align: u64,
    /// `replay_scale` (0: none).
    pub scale: u64,
    /// `replay_skip`: read, write, trim, sync.
    pub skip: [bool; 4],
}

impl Default for FioReplayOptions {
    fn default() -> Self {
        FioReplayOptions {
            no_stall: false,
            time_scale: 100,
            align: 0,
            scale: 0,
            skip: [false; 4],
        }
    }
}

/// fio's timing of an iolog or blktrace replay (`read_iolog_get`).
pub struct FioTiming {
    reader: Box<dyn TraceReader>,
    opts: FioReplayOptions,
    /// Timestamps are ns (blktrace) rather than µs (iolog v3).
    blktrace: bool,
    /// fio's `io_log_last_ttime`, in the trace's unit.
    last_ttime: u64,
    shared: Arc<Mutex<ReplayShared>>,
    issued: u64,
}

impl FioTiming {
    /// Time `reader`'s entries as fio does; `blktrace`: its timestamps are blktrace's ns.
    pub fn new(
        reader: Box<dyn TraceReader>,
        opts: FioReplayOptions,
        blktrace: bool,
        shared: Arc<Mutex<ReplayShared>>,
    ) -> FioTiming {
        FioTiming {
            reader,
            opts,
            blktrace,
            last_ttime: 0,
            shared,
            issued: 0,
        }
    }

    /// fio's `delay_since_ttime`: nothing for the first entry, after an entry at
    /// time 0, with `replay_no_stall`, or going back in time; else the
    /// difference, scaled by 100 / `replay_time_scale` (truncated).
    fn delay_since(&self, t: u64) -> u64 {
        let last = self.last_ttime;
        if last == 0 || self.opts.no_stall || t < last {
            0
        } else if self.opts.time_scale == 100 {
            t - last
        } else {
            ((t - last) as f64 * (100.0 / self.opts.time_scale as f64)) as u64
        }
    }

    fn step(&mut self, io: TraceIo) -> Option<Step> {
        let mut delay_us = 0;
        if let Some(t_ns) = io.t_ns {
            let t = if self.blktrace { t_ns } else { t_ns / 1_000 };
            let d = self.delay_since(t);
            self.last_ttime = t;
            // blktrace.c stores ttime / 1000: ns to µs.
            delay_us = if self.blktrace { d / 1_000 } else { d };
        }
        let skip = match io.op {
            TraceOp::Read => self.opts.skip[0],
            TraceOp::Write => self.opts.skip[1],
            TraceOp::Trim => self.opts.skip[2],
            TraceOp::Sync => self.opts.skip[3],
            TraceOp::Wait => self.opts.no_stall,
            TraceOp::File => false,
        };
        if skip {
            return None;
        }
        if io.op == TraceOp::Wait {
            // `ipo->delay = offset`, then compared with `mtime_since_genesis`: ms.
            return Some(Step {
                due: Due::FromStart(io.offset.saturating_mul(1_000_000)),
                op: TraceOp::Wait,
                offset: 0,
                bytes: 0,
                pid: None,
                cpu: None,
                line: io.line,
            });
        }
        let mut offset = io.offset;
        let mut bytes = io.bytes;
        if let Some(o) = offset.checked_div(self.opts.scale) {
            offset = o;
        }
        if self.opts.align > 0 {
            offset &= !(self.opts.align - 1);
            // blktrace.c's t_bytes_align also rounds the length up.
            if self.blktrace {
                bytes = bytes.div_ceil(self.opts.align) * self.opts.align;
            }
        }
        Some(Step {
            due: if delay_us == 0 {
                Due::Now
            } else {
                Due::AfterLastIssue(delay_us * 1_000)
            },
            op: io.op,
            offset,
            bytes,
            pid: None,
            cpu: None,
            line: io.line,
        })
    }
}

impl ReplayStream for FioTiming {
    fn next_step(&mut self) -> Option<Step> {
        loop {
            match self.reader.next_io() {
                Ok(Some(io)) => {
                    if let Some(s) = self.step(io) {
                        return Some(s);
                    }
                }
                Ok(None) => return None,
                Err(e) => {
                    lock(&self.shared).error.get_or_insert(e);
                    return None;
                }
            }
        }
    }

    fn issued(&mut self, _late_ns: u64) {
        self.issued += 1;
    }
}

impl Drop for FioTiming {
    fn drop(&mut self) {
        lock(&self.shared).issued += self.issued;
    }
}

/// How `iosched replay` maps a trace onto the simulated device.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    /// Device capacity, bytes.
    pub capacity: u64,
    /// Fold offsets beyond the device back onto it (modulo its size).
    pub wrap: bool,
    /// CPUs of the simulation (a trace's CPU numbers are taken modulo this).
    pub nr_cpus: u32,
}

impl Placement {
    /// The offset an extent goes to: as given, or folded modulo the device
    /// (rounded down to a sector, and moved back so that it ends on the device).
    pub fn place(&self, offset: u64, bytes: u64) -> u64 {
        if !self.wrap || offset.saturating_add(bytes) <= self.capacity || self.capacity == 0 {
            return offset;
        }
        let o = (offset % self.capacity) & !511;
        if o + bytes > self.capacity {
            self.capacity.saturating_sub(bytes) & !511
        } else {
            o
        }
    }
}

/// `iosched replay`'s timing: open loop (each request at its timestamp,
/// relative to the trace's first, divided by `speed`) or closed loop (every
/// request at once).
pub struct OpenLoop {
    reader: Box<dyn TraceReader>,
    /// The trace's first timestamp, ns.
    origin: u64,
    /// `--time-scale`: 2 replays twice as fast; `None`: closed loop.
    speed: Option<f64>,
    place: Placement,
    lateness: hdrhistogram::Histogram<u64>,
    issued: u64,
    shared: Arc<Mutex<ReplayShared>>,
}

impl OpenLoop {
    /// Time `reader`'s requests; `speed: None` for a closed loop.
    pub fn new(
        reader: Box<dyn TraceReader>,
        origin: u64,
        speed: Option<f64>,
        place: Placement,
        shared: Arc<Mutex<ReplayShared>>,
    ) -> OpenLoop {
        OpenLoop {
            reader,
            origin,
            speed,
            place,
            lateness: new_histogram(),
            issued: 0,
            shared,
        }
    }
}

/// A histogram of ns values, 3 significant digits, growing as needed.
pub fn new_histogram() -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new(3).expect("3 significant digits is valid");
    h.auto(true);
    h
}

impl ReplayStream for OpenLoop {
    fn next_step(&mut self) -> Option<Step> {
        let io = match self.reader.next_io() {
            Ok(Some(io)) => io,
            Ok(None) => return None,
            Err(e) => {
                lock(&self.shared).error.get_or_insert(e);
                return None;
            }
        };
        let due = match (self.speed, io.t_ns) {
            (Some(s), Some(t)) => {
                Due::FromStart((t.saturating_sub(self.origin) as f64 / s).round() as u64)
            }
            _ => Due::Now,
        };
        let nr_cpus = self.place.nr_cpus.max(1);
        Some(Step {
            due,
            op: io.op,
            offset: self.place.place(io.offset, io.bytes),
            bytes: io.bytes,
            pid: io.pid,
            cpu: io.cpu.map(|c| c % nr_cpus),
            line: io.line,
        })
    }

    fn issued(&mut self, late_ns: u64) {
        self.issued += 1;
        if self.speed.is_some() {
            let _ = self.lateness.record(late_ns);
        }
    }
}

impl Drop for OpenLoop {
    fn drop(&mut self) {
        let mut s = lock(&self.shared);
        s.issued += self.issued;
        if self.speed.is_some() {
            let h = s.lateness.get_or_insert_with(new_histogram);
            let _ = h.add(&self.lateness);
        }
    }
}

/// Open `path` as fio's `read_iolog` does (`init_iolog`): a blktrace file if
/// its first record has blktrace's magic (either byte order), else an iolog.
/// Returns the reader and whether it is blktrace.
pub fn open_read_iolog(path: &Path) -> Result<(Box<dyn TraceReader>, bool), TraceError> {
    let files = super::blktrace_files(path)?;
    let mut head = [0u8; super::blktrace::RECORD];
    let n = std::fs::File::open(&files[0])
        .and_then(|mut f| {
            let mut at = 0;
            while at < head.len() {
                match std::io::Read::read(&mut f, &mut head[at..])? {
                    0 => break,
                    k => at += k,
                }
            }
            Ok(at)
        })
        .map_err(|e| TraceError {
            file: path.display().to_string(),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
    if n == head.len() && super::blktrace::detect(&head).is_some() {
        return Ok((
            Box::new(super::blktrace::BlktraceReader::open(&files)?),
            true,
        ));
    }
    Ok((Box::new(super::fio_iolog::IologReader::open(path)?), false))
}

/// A checked `read_iolog` replay, ready to run.
pub struct FioReplay {
    /// The job's workload.
    pub source: ReplaySource,
    /// I/Os (reads, writes, trims, syncs) it issues.
    pub ios: u64,
    /// Bytes it transfers.
    pub bytes: u64,
    /// Its reads, writes and trims.
    pub per_dir: [u64; 3],
    /// The log is a blktrace capture.
    pub blktrace: bool,
    /// blktrace: the depth fio probes from it (used when `iodepth` is not set).
    pub probed_depth: Option<u32>,
    /// Entries skipped as unknown, by name.
    pub unknown: std::collections::BTreeMap<String, u64>,
}

/// Check `path` for a `read_iolog` replay onto a device of `capacity` bytes (every
/// entry parsed, every extent, after `replay_scale` and `replay_align`, on the
/// device) and build its source.
pub fn fio_replay(
    path: &Path,
    opts: FioReplayOptions,
    capacity: u64,
) -> Result<FioReplay, TraceError> {
    let (reader, blktrace) = open_read_iolog(path)?;
    let shared = Arc::new(Mutex::new(ReplayShared::default()));
    let mut t = FioTiming::new(reader, opts, blktrace, shared.clone());
    let (mut ios, mut bytes, mut per_dir) = (0u64, 0u64, [0u64; 3]);
    while let Some(s) = t.next_step() {
        match s.op {
            TraceOp::Wait | TraceOp::File => continue,
            TraceOp::Sync => {
                ios += 1;
                continue;
            }
            TraceOp::Read => per_dir[0] += 1,
            TraceOp::Write => per_dir[1] += 1,
            TraceOp::Trim => per_dir[2] += 1,
        }
        ios += 1;
        bytes = bytes.saturating_add(s.bytes);
        if s.offset.saturating_add(s.bytes) > capacity {
            return Err(TraceError {
                file: path.display().to_string(),
                line: s.line,
                message: format!(
                    "{} of {} bytes at offset {} ends beyond the device ({capacity} bytes); use a larger --device, or replay_scale",
                    s.op.fio_name(),
                    s.bytes,
                    s.offset
                ),
            });
        }
    }
    if let Some(e) = lock(&shared).error.take() {
        return Err(e);
    }
    let probed_depth = blktrace.then(|| t.reader.probed_depth(per_dir)).flatten();
    let unknown = t.reader.unknown().clone();
    let p = path.to_path_buf();
    let source = ReplaySource::new(move |shared| {
        let (reader, blktrace) = open_read_iolog(&p)?;
        Ok(Box::new(FioTiming::new(reader, opts, blktrace, shared)) as Box<dyn ReplayStream>)
    });
    Ok(FioReplay {
        source,
        ios,
        bytes,
        per_dir,
        blktrace,
        probed_depth,
        unknown,
    })
}
