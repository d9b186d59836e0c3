//! Block traces and fio iologs: read them as streams of I/Os, replay them as a
//! job's workload, and write fio iologs of what a job issued.
//!
//! - [`fio_iolog`] reads fio's iolog versions 2 and 3 and writes version 3;
//! - [`blktrace`] reads blktrace's binary event records (either endianness);
//! - [`text`] reads blkparse's default output, MSR Cambridge CSV, MQSim and
//!   DiskSim ASCII traces, and tracefs recordings (through
//!   [`crate::kernel_trace::parse`]);
//! - [`replay`] turns a stream into a job's I/O: with fio's timing rules
//!   (`read_iolog`), open loop (at the trace's timestamps) or closed loop.
//!
//! Every reader is a stream ([`TraceReader`]): it holds one line or record at
//! a time, never the trace. A trace is read twice: once to check it
//! ([`check`]), so that a bad line is refused before anything runs, and once
//! while the job runs.

pub mod blktrace;
pub mod fio_iolog;
pub mod replay;
pub mod text;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// What one trace entry asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    /// Read `bytes` at `offset`.
    Read,
    /// Write `bytes` at `offset`.
    Write,
    /// Discard (fio's trim).
    Trim,
    /// A cache flush / fsync (no data).
    Sync,
    /// fio iolog v2 `wait`: sleep until `offset` ms after the job's start.
    Wait,
    /// fio iolog file action (`add`, `open`, `close`): no I/O, but timed.
    File,
}

impl TraceOp {
    /// fio's name of the action (`io_ddir_name`).
    pub fn fio_name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Trim => "trim",
            TraceOp::Sync => "sync",
            TraceOp::Wait => "wait",
            TraceOp::File => "open",
        }
    }

    /// Reads, writes and trims carry data and an extent.
    pub fn has_extent(self) -> bool {
        matches!(self, TraceOp::Read | TraceOp::Write | TraceOp::Trim)
    }
}

/// One entry of a trace, in the trace's own terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceIo {
    /// 1-based line (text formats) or record number (binary formats).
    pub line: u64,
    /// Timestamp, ns from the trace's own origin; `None` when the format has
    /// none (fio iolog v2).
    pub t_ns: Option<u64>,
    /// What it does.
    pub op: TraceOp,
    /// Byte offset on the device (for `Wait`: the wait's argument).
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
    /// Submitting task, when the trace records it.
    pub pid: Option<u32>,
    /// CPU it was submitted on, when the trace records it.
    pub cpu: Option<u32>,
}

/// A malformed trace: where and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The trace file.
    pub file: String,
    /// 1-based line or record (0: the file as a whole).
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// A stream of trace entries.
pub trait TraceReader: Send {
    /// The next entry, `Ok(None)` at the end.
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError>;
    /// Entries skipped because their action or op is not one replay uses, by
    /// name, with counts (listed once, not per line).
    fn unknown(&self) -> &BTreeMap<String, u64>;
    /// Recorded service times seen so far (issue to completion, ns), when the
    /// format has them; drained by the caller.
    fn take_service_times(&mut self) -> Vec<u64> {
        Vec::new()
    }
    /// The in-flight depth the trace shows, as fio probes a blktrace, given the
    /// reads, writes and trims replayed; `None` when the format cannot tell.
    fn probed_depth(&self, _ios: [u64; 3]) -> Option<u32> {
        None
    }
}

/// The trace formats iosched reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// fio iolog version 2 or 3 (fio's `read_iolog`).
    FioIolog,
    /// blktrace's binary per-CPU files (`NAME.blktrace.N`) or a `blkparse -d` dump.
    Blktrace,
    /// blkparse's default text output.
    Blkparse,
    /// The block events of `/sys/kernel/tracing/trace` (`kernel-trace record`).
    Tracefs,
    /// MSR Cambridge CSV.
    Msr,
    /// MQSim's ASCII trace (ns arrival times).
    Mqsim,
    /// DiskSim's ASCII trace (ms arrival times).
    DisksimAscii,
}

impl Format {
    /// Formats by their `--format` name.
    pub const NAMES: &'static [(&'static str, Format)] = &[
        ("fio", Format::FioIolog),
        ("blktrace", Format::Blktrace),
        ("blkparse", Format::Blkparse),
        ("tracefs", Format::Tracefs),
        ("msr", Format::Msr),
        ("mqsim", Format::Mqsim),
        ("disksim-ascii", Format::DisksimAscii),
    ];

    /// The format called `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }

    /// Its `--format` name.
    pub fn name(self) -> &'static str {
        Format::NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
}

/// Open `path` as a stream of `format`. For `blktrace`, `path` may be the
/// name blktrace was given (`NAME`, reading every `NAME.blktrace.N`), one
/// per-CPU file, or a `blkparse -d` dump.
pub fn open(format: Format, path: &Path) -> Result<Box<dyn TraceReader>, TraceError> {
    let name = path.display().to_string();
    Ok(match format {
        Format::FioIolog => Box::new(fio_iolog::IologReader::open(path)?),
        Format::Blktrace => Box::new(blktrace::BlktraceReader::open(&blktrace_files(path)?)?),
        Format::Blkparse => Box::new(text::Blkparse::new(name.clone(), open_text(path)?)),
        Format::Tracefs => {
            let which = text::TracefsRequests::scan(open_text(path)?);
            Box::new(text::Tracefs::new(name.clone(), open_text(path)?, which))
        }
        Format::Msr => Box::new(text::Msr::new(name.clone(), open_text(path)?)),
        Format::Mqsim => Box::new(text::Ascii::new(name.clone(), open_text(path)?, false)),
        Format::DisksimAscii => Box::new(text::Ascii::new(name.clone(), open_text(path)?, true)),
    })
}

/// The files of a blktrace capture: `path` itself if it exists, else
/// `path.blktrace.0`, `path.blktrace.1`, ... (blktrace's per-CPU names).
pub fn blktrace_files(path: &Path) -> Result<Vec<PathBuf>, TraceError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for cpu in 0..4096 {
        let p = PathBuf::from(format!("{}.blktrace.{cpu}", path.display()));
        if !p.is_file() {
            break;
        }
        files.push(p);
    }
    if files.is_empty() {
        return Err(TraceError {
            file: path.display().to_string(),
            line: 0,
            message: "no such file, and no per-CPU files NAME.blktrace.0, NAME.blktrace.1, ..."
                .into(),
        });
    }
    Ok(files)
}

fn open_text(path: &Path) -> Result<std::io::BufReader<std::fs::File>, TraceError> {
    std::fs::File::open(path)
        .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
        .map_err(|e| TraceError {
            file: path.display().to_string(),
            line: 0,
            message: format!("cannot open: {e}"),
        })
}

/// Rules a replay checks the trace against.
#[derive(Clone, Debug, Default)]
pub struct CheckRules {
    /// Device capacity in bytes: extents beyond it are errors (unless `wrap`).
    pub capacity: u64,
    /// Fold offsets modulo the device instead of refusing them.
    pub wrap: bool,
    /// Timestamps out of order are accepted (`--sort`: the caller sorts them).
    pub allow_unsorted: bool,
    /// Check the timestamps' unit (open-loop replays of foreign formats).
    pub check_units: bool,
}

/// What [`check`] found in a trace.
#[derive(Clone, Debug, Default)]
pub struct TraceSummary {
    /// Entries that issue I/O (reads, writes, trims, syncs).
    pub ios: u64,
    /// Per op: reads, writes, trims, syncs.
    pub per_op: [u64; 4],
    /// Bytes of reads, writes, trims.
    pub bytes: u64,
    /// Largest I/O, bytes.
    pub max_bytes: u64,
    /// First and last timestamp, ns.
    pub first_ns: Option<u64>,
    /// Last timestamp.
    pub last_ns: Option<u64>,
    /// Skipped entries by action name, with counts.
    pub unknown: BTreeMap<String, u64>,
    /// Recorded service times (ns), when the trace has them.
    pub service_ns: Option<hdrhistogram::Histogram<u64>>,
    /// Distinct submitting pids seen (at most 4096 are kept).
    pub pids: std::collections::BTreeSet<u32>,
}

impl TraceSummary {
    fn add_service(&mut self, v: Vec<u64>) {
        if v.is_empty() {
            return;
        }
        let h = self.service_ns.get_or_insert_with(replay::new_histogram);
        for x in v {
            let _ = h.record(x);
        }
    }
}

/// Read the whole trace once, checking what a replay relies on: every line
/// well formed (the reader's own errors), extents within the device, and, as
/// `rules` ask, timestamps in order and of a plausible unit.
pub fn check(format: Format, path: &Path, rules: &CheckRules) -> Result<TraceSummary, TraceError> {
    let file = path.display().to_string();
    let mut r = open_sorted(format, path, rules.allow_unsorted)?;
    let mut s = TraceSummary::default();
    let err = |line: u64, message: String| TraceError {
        file: file.clone(),
        line,
        message,
    };
    let mut prev: Option<(u64, u64)> = None;
    while let Some(io) = r.next_io()? {
        s.add_service(r.take_service_times());
        if let Some(t) = io.t_ns {
            if let Some((pt, pl)) = prev {
                if t < pt && !rules.allow_unsorted {
                    return Err(err(
                        io.line,
                        format!(
                            "timestamp {} is earlier than line {pl}'s {}: the trace is not sorted by time (sort it, or pass --sort)",
                            fmt_ns(t),
                            fmt_ns(pt)
                        ),
                    ));
                }
            }
            prev = Some((t, io.line));
            s.first_ns = Some(s.first_ns.map_or(t, |f| f.min(t)));
            s.last_ns = Some(s.last_ns.map_or(t, |l| l.max(t)));
        }
        if let (Some(p), true) = (io.pid, s.pids.len() < 4096) {
            s.pids.insert(p);
        }
        let k = match io.op {
            TraceOp::Read => 0,
            TraceOp::Write => 1,
            TraceOp::Trim => 2,
            TraceOp::Sync => 3,
            TraceOp::Wait | TraceOp::File => continue,
        };
        s.ios += 1;
        s.per_op[k] += 1;
        if io.op.has_extent() {
            s.bytes = s.bytes.saturating_add(io.bytes);
            s.max_bytes = s.max_bytes.max(io.bytes);
            let end = io.offset.saturating_add(io.bytes);
            if rules.capacity > 0 && io.bytes > rules.capacity {
                return Err(err(
                    io.line,
                    format!(
                        "{} bytes is larger than the device ({} bytes)",
                        io.bytes, rules.capacity
                    ),
                ));
            }
            if rules.capacity > 0 && end > rules.capacity && !rules.wrap {
                return Err(err(
                    io.line,
                    format!(
                        "{} of {} bytes at offset {} ends beyond the device ({} bytes); use a larger --device, or --wrap to fold offsets modulo its size",
                        io.op.fio_name(),
                        io.bytes,
                        io.offset,
                        rules.capacity
                    ),
                ));
            }
        }
    }
    s.add_service(r.take_service_times());
    s.unknown = r.unknown().clone();
    if rules.check_units {
        check_units(&s, &file)?;
    }
    Ok(s)
}

/// The classic unit mistake: a trace in seconds (or ms) read as ns makes
/// every request arrive within a few µs — "infinite bandwidth" (MQSim issue
/// 74); one in ns read as ms spans years. Refused, naming what it looks like.
fn check_units(s: &TraceSummary, file: &str) -> Result<(), TraceError> {
    let (Some(first), Some(last)) = (s.first_ns, s.last_ns) else {
        return Ok(());
    };
    let span = last - first;
    let err = |message: String| TraceError {
        file: file.to_string(),
        line: 0,
        message,
    };
    // A thousand or more requests less than 50 ns apart on average (20 M
    // requests/s, beyond any single device): seconds or ms read as ns give gaps
    // of a few ns or less.
    if s.ios >= 1000 && span < s.ios.saturating_mul(50) {
        return Err(err(format!(
            "{} requests within {} of trace time ({} ns apart on average): the timestamps' unit looks wrong (seconds or ms read as ns?)",
            s.ios,
            fmt_ns(span),
            span / s.ios.max(1)
        )));
    }
    // More than 10 years of trace time.
    const TEN_YEARS_NS: u64 = 10 * 365 * 86_400 * 1_000_000_000;
    if span > TEN_YEARS_NS {
        return Err(err(format!(
            "the trace spans {} s (over ten years): the timestamps' unit looks wrong (ns read as ms or s?)",
            span / 1_000_000_000
        )));
    }
    Ok(())
}

/// `12.345678901s` style, for messages.
pub fn fmt_ns(ns: u64) -> String {
    format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The unknown actions as one line: `X: 3, N: 1`.
pub fn unknown_line(unknown: &BTreeMap<String, u64>) -> String {
    unknown
        .iter()
        .map(|(k, v)| format!("'{k}': {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Count one skipped entry by name (names are capped so a hostile trace cannot
/// grow the map without bound).
pub(crate) fn count_unknown(map: &mut BTreeMap<String, u64>, name: &str) {
    const MAX_NAMES: usize = 64;
    let name: String = name.chars().take(32).collect();
    if map.len() >= MAX_NAMES && !map.contains_key(&name) {
        *map.entry("(other)".into()).or_insert(0) += 1;
        return;
    }
    *map.entry(name).or_insert(0) += 1;
}

/// Read one line into `buf` (cleared first), at most `limit` bytes kept;
/// `Ok(false)` at the end. Lines longer than the limit are an error (no format
/// has lines that long; a binary file read as text would).
pub(crate) fn read_line(
    r: &mut (dyn std::io::BufRead + '_),
    buf: &mut Vec<u8>,
    file: &str,
    line: u64,
) -> Result<bool, TraceError> {
    const LIMIT: usize = 64 * 1024;
    buf.clear();
    let mut taken = std::io::Read::take(r, LIMIT as u64 + 1);
    let n = std::io::BufRead::read_until(&mut taken, b'\n', buf).map_err(|e| TraceError {
        file: file.to_string(),
        line,
        message: format!("read error: {e}"),
    })?;
    if n == 0 {
        return Ok(false);
    }
    if buf.len() > LIMIT {
        return Err(TraceError {
            file: file.to_string(),
            line,
            message: format!("line longer than {LIMIT} bytes: is this a text trace?"),
        });
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(true)
}

/// The line as text, or an error naming it.
pub(crate) fn line_str<'a>(buf: &'a [u8], file: &str, line: u64) -> Result<&'a str, TraceError> {
    std::str::from_utf8(buf).map_err(|_| TraceError {
        file: file.to_string(),
        line,
        message: "not UTF-8 text: is this a text trace?".into(),
    })
}

/// A trace read whole and sorted by timestamp (stable: equal times keep their
/// order), for `--sort`: the one replay that holds the trace in memory.
pub struct Sorted {
    ios: std::vec::IntoIter<TraceIo>,
    unknown: BTreeMap<String, u64>,
    service: Vec<u64>,
}

impl Sorted {
    /// Read all of `r` and sort it.
    pub fn new(mut r: Box<dyn TraceReader>) -> Result<Sorted, TraceError> {
        let mut v = Vec::new();
        let mut service = Vec::new();
        while let Some(io) = r.next_io()? {
            v.push(io);
            service.extend(r.take_service_times());
        }
        service.extend(r.take_service_times());
        v.sort_by_key(|io| io.t_ns.unwrap_or(0));
        Ok(Sorted {
            ios: v.into_iter(),
            unknown: r.unknown().clone(),
            service,
        })
    }
}

impl TraceReader for Sorted {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        Ok(self.ios.next())
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }

    fn take_service_times(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.service)
    }
}

/// Open `path` as `format`, sorted by time when `sort` (in memory).
pub fn open_sorted(
    format: Format,
    path: &Path,
    sort: bool,
) -> Result<Box<dyn TraceReader>, TraceError> {
    let r = open(format, path)?;
    if sort {
        Ok(Box::new(Sorted::new(r)?))
    } else {
        Ok(r)
    }
}

/// A decimal `u64` (ASCII digits only, as the trace formats write them);
/// `None` if empty, not digits, or too large. The readers' hot path: faster
/// than `str::parse`, which also takes a sign.
pub(crate) fn dec(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// The first `N` items of `it` and how many it had in all (no allocation: the
/// readers split every line).
pub(crate) fn fields<'a, const N: usize>(
    it: impl Iterator<Item = &'a str>,
) -> ([&'a str; N], usize) {
    let mut out = [""; N];
    let mut n = 0;
    for x in it {
        if n < N {
            out[n] = x;
        }
        n += 1;
    }
    (out, n)
}

/// The first `N` fields of `line` split at runs of ASCII spaces and tabs (what
/// `split_ascii_whitespace` gives for these formats' lines, without its
/// iterator's per-byte cost), and how many there were in all.
pub(crate) fn ws_fields<const N: usize>(line: &str) -> ([&str; N], usize) {
    let b = line.as_bytes();
    let mut out = [""; N];
    let (mut n, mut i) = (0, 0);
    let blank = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
    while i < b.len() {
        while i < b.len() && blank(b[i]) {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let start = i;
        while i < b.len() && !blank(b[i]) {
            i += 1;
        }
        if n < N {
            // Split at ASCII bytes: both ends are char boundaries.
            out[n] = &line[start..i];
        }
        n += 1;
    }
    (out, n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_and_decimals() {
        let (f, n) = super::ws_fields::<3>("  a\tbb  c d ");
        assert_eq!((f, n), (["a", "bb", "c"], 4));
        assert_eq!(super::ws_fields::<2>(""), (["", ""], 0));
        let line = "x \u{e9}\u{e9} y";
        let (f, _) = super::ws_fields::<3>(line);
        assert_eq!(f, ["x", "\u{e9}\u{e9}", "y"]);
        assert_eq!(super::dec("18446744073709551615"), Some(u64::MAX));
        assert_eq!(super::dec("18446744073709551616"), None);
        assert_eq!(super::dec("+1"), None);
        assert_eq!(super::dec(""), None);
        assert_eq!(super::dec("007"), Some(7));
    }
}
