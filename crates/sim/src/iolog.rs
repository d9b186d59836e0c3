//! fio's per-I/O and windowed logs: `write_lat_log`, `write_bw_log`,
//! `write_iops_log` (fio's iolog.c and the logging half of stat.c).
//!
//! # What is logged, and when
//!
//! One log belongs to one job clone; its samples are taken as fio takes them:
//!
//! * `lat`, `clat`: one sample per completed I/O, at its completion; `slat`: one
//!   per submitted I/O, when it enters the block layer (asynchronous engines
//!   only, as fio records submission latency only for them; a synchronous
//!   engine's `slat` log is created empty, as fio's is). Values in ns.
//! * `bw`, `iops` without `log_avg_msec` (fio's "per-unit" logs): one sample per
//!   completed I/O, the I/O's own rate: bytes × 10⁶ / clat ns (fio's
//!   `add_bw_sample`, about KB/s) and 1. fio then feeds the report's bandwidth
//!   and IOPS statistics from these samples too, instead of its 500 ms windows.
//! * `bw`, `iops` with `log_avg_msec=N`: fio's bandwidth and IOPS sampling
//!   window becomes N ms (unless `bwavgtime`/`iopsavgtime` say otherwise); each
//!   window with I/O yields one sample (KiB/s, I/Os per second), the same
//!   sample the report's `bw`/`iops` lines are computed from.
//!
//! With `log_avg_msec=N` every log averages (`log_max_value=avg`, default),
//! takes the maximum (`max`) or both (`both`) of its samples per direction:
//! the first sample whose time is N ms or more past the last window start
//! closes the window, which is logged at that sample's time and restarts at
//! the multiple of N at or below it (fio's `add_log_sample`). Averaged samples
//! carry no block size, offset or priority (0), as in fio.
//!
//! # File format (fio 3.x, "Log File Formats" in fio's HOWTO)
//!
//! `time, value[, max], direction, block size[, offset], priority[, issue time]`:
//! time in ms since the job started (after `ramp_time`), value as above,
//! direction 0 read / 1 write, block size in bytes, the offset in bytes with
//! `log_offset=1`, then the priority: with `log_prio=1` the I/O's whole ioprio
//! value as `0x%04x`, otherwise 1 for the real-time class and 0 else. The
//! second value column appears with `log_max_value=both`, the issue time (ns
//! since the job started; 0 except in the `clat` and `slat` logs) with
//! `log_issue_time=1`.
//!
//! # Files
//!
//! `PREFIX_KIND.N.log` with N fio's job number (1-based over all clones, in
//! job-file order), or `PREFIX_KIND.log` shared by every clone with
//! `per_job_logs=0`. Time is simulated time, so the files are byte-identical
//! for the same input and seed. [`LogFiles`] streams each clone's log into a
//! temporary file beside its target and renames it into place only when the
//! whole run succeeded, so a failed run leaves no half-written log; clones
//! sharing a file are concatenated in the order fio writes them (per-I/O logs
//! as each clone finishes, windowed ones in job order). Unlike fio, which
//! appends to an existing shared file, a shared file is written anew.

use crate::stats::SampleStat;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};

/// The kind of a log, which names its file (`PREFIX_KIND.N.log`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogKind {
    /// Total latency (`write_lat_log`).
    Lat,
    /// Completion latency (`write_lat_log`).
    Clat,
    /// Submission latency (`write_lat_log`).
    Slat,
    /// Bandwidth (`write_bw_log`).
    Bw,
    /// IOPS (`write_iops_log`).
    Iops,
}

impl LogKind {
    /// The kind as it appears in the file name.
    pub fn name(self) -> &'static str {
        match self {
            LogKind::Lat => "lat",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
        }
    }

    /// Whether fio writes this log when the job exits (per-I/O logs) rather
    /// than when all jobs are done (windowed bandwidth and IOPS logs).
    fn written_at_exit(self, avg_msec: u64) -> bool {
        matches!(self, LogKind::Lat | LogKind::Clat | LogKind::Slat) || avg_msec == 0
    }
}

/// What an averaging window logs (`log_max_value` / `log_window_value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WindowValue {
    /// The mean, rounded (`avg`, `0`; fio's default).
    #[default]
    Avg,
    /// The maximum (`max`, `1`).
    Max,
    /// Both, in two value columns (`both`).
    Both,
}

/// How one log is kept and printed (fio's `log_params`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogParams {
    /// Averaging window, ms; 0 logs every sample (`log_avg_msec`).
    pub avg_msec: u64,
    /// What a window logs (`log_max_value`).
    pub window_value: WindowValue,
    /// Add the offset column (`log_offset`).
    pub offset: bool,
    /// Print the whole ioprio value (`log_prio`).
    pub prio: bool,
    /// Add the issue-time column (`log_issue_time`).
    pub issue_time: bool,
}

/// One log sample (fio's `io_sample`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// ms since the job's start.
    pub time_ms: u64,
    /// The value (ns, KiB/s, IOPS, ...).
    pub value: u64,
    /// The second value (a window's maximum with `log_max_value=both`).
    pub value2: u64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Block size, bytes.
    pub bs: u64,
    /// Offset, bytes.
    pub offset: u64,
    /// The I/O's ioprio value (class << 13 | level).
    pub prio: u16,
    /// When the I/O was issued, ns since the job's start.
    pub issue_time_ns: u64,
}

/// The ioprio class shift (`IOPRIO_CLASS_SHIFT`).
const IOPRIO_CLASS_SHIFT: u16 = 13;
/// `IOPRIO_CLASS_RT`.
const IOPRIO_CLASS_RT: u16 = 1;

/// Append one line in fio's format (`flush_samples`) to `out`.
pub fn format_sample(out: &mut Vec<u8>, p: &LogParams, s: &Sample) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{}, {}", s.time_ms, s.value);
    if p.window_value == WindowValue::Both {
        let _ = write!(out, ", {}", s.value2);
    }
    let _ = write!(out, ", {}, {}", s.ddir, s.bs);
    if p.offset {
        let _ = write!(out, ", {}", s.offset);
    }
    if p.prio {
        let _ = write!(out, ", 0x{:04x}", s.prio);
    } else {
        let rt = (s.prio >> IOPRIO_CLASS_SHIFT) == IOPRIO_CLASS_RT;
        let _ = write!(out, ", {}", u8::from(rt));
    }
    if p.issue_time {
        let _ = write!(out, ", {}", s.issue_time_ns);
    }
    out.push(b'\n');
}

/// Bytes buffered before a log writes them out.
const FLUSH_BYTES: usize = 1 << 16;

/// One log of one clone: fio's windowing rules and the formatted lines.
pub struct IoLog {
    kind: LogKind,
    params: LogParams,
    window: [SampleStat; 2],
    avg_last: [u64; 2],
    buf: Vec<u8>,
    sink: Option<Box<dyn Write>>,
    error: Option<std::io::Error>,
    lines: u64,
}

impl std::fmt::Debug for IoLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoLog")
            .field("kind", &self.kind)
            .field("params", &self.params)
            .field("lines", &self.lines)
            .finish()
    }
}

impl IoLog {
    /// A log that keeps its lines in memory ([`IoLog::text`]).
    pub fn in_memory(kind: LogKind, params: LogParams) -> IoLog {
        IoLog {
            kind,
            params,
            window: Default::default(),
            avg_last: [0; 2],
            buf: Vec::new(),
            sink: None,
            error: None,
            lines: 0,
        }
    }

    /// A log that streams its lines to `sink`.
    pub fn to_writer(kind: LogKind, params: LogParams, sink: Box<dyn Write>) -> IoLog {
        IoLog {
            sink: Some(sink),
            ..IoLog::in_memory(kind, params)
        }
    }

    /// The log's kind.
    pub fn kind(&self) -> LogKind {
        self.kind
    }

    /// How it logs.
    pub fn params(&self) -> &LogParams {
        &self.params
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The lines not yet handed to the sink (all of them for an in-memory log).
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.buf).unwrap_or("")
    }

    fn push(&mut self, s: &Sample) {
        format_sample(&mut self.buf, &self.params, s);
        self.lines += 1;
        if self.buf.len() >= FLUSH_BYTES {
            self.flush_buf();
        }
    }

    fn flush_buf(&mut self) {
        if let Some(w) = &mut self.sink {
            if self.error.is_none() {
                if let Err(e) = w.write_all(&self.buf) {
                    self.error = Some(e);
                }
            }
            self.buf.clear();
        }
    }

    /// Log one sample taken at `s.time_ms` (fio's `add_log_sample`): kept as is
    /// without averaging, else added to its direction's window, which is logged
    /// once it spans `log_avg_msec`.
    pub fn add(&mut self, s: Sample) {
        let d = (s.ddir as usize).min(1);
        if self.params.avg_msec == 0 {
            self.push(&s);
            return;
        }
        self.window[d].add(s.value);
        let elapsed = s.time_ms;
        if elapsed < self.avg_last[d] || elapsed - self.avg_last[d] < self.params.avg_msec {
            return;
        }
        self.log_window(d, elapsed);
        self.avg_last[d] = elapsed - elapsed % self.params.avg_msec;
    }

    /// Log direction `d`'s window at `elapsed` ms if it holds samples, and empty
    /// it (fio's `__add_stat_to_log`).
    fn log_window(&mut self, d: usize, elapsed: u64) {
        let w = std::mem::take(&mut self.window[d]);
        if w.count() == 0 {
            return;
        }
        let mean = (w.mean() + 0.5) as u64;
        let (value, value2) = match self.params.window_value {
            WindowValue::Avg => (mean, 0),
            WindowValue::Max => (w.max(), 0),
            WindowValue::Both => (mean, w.max()),
        };
        self.push(&Sample {
            time_ms: elapsed,
            value,
            value2,
            ddir: d as u8,
            ..Sample::default()
        });
    }

    /// The job ended `elapsed` ms after its start: log what the windows still
    /// hold (fio's `finalize_logs`) and write everything out. Returns the first
    /// write error.
    pub fn finish(&mut self, elapsed: u64) -> std::io::Result<()> {
        if self.params.avg_msec > 0 {
            for d in 0..2 {
                self.log_window(d, elapsed);
            }
        }
        self.flush_buf();
        if let Some(w) = &mut self.sink {
            if self.error.is_none() {
                if let Err(e) = w.flush() {
                    self.error = Some(e);
                }
            }
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Where one clone's log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTarget {
    /// The clone (index into the run's clones).
    pub clone: usize,
    /// Its kind.
    pub kind: LogKind,
    /// How it logs.
    pub params: LogParams,
    /// The file it ends up in.
    pub path: String,
}

/// fio's log file name: `PREFIX_KIND.N.log`, or `PREFIX_KIND.log` when
/// `per_job` is off (`gen_log_name`).
pub fn log_file_name(prefix: &str, kind: LogKind, job_number: usize, per_job: bool) -> String {
    if per_job {
        format!("{prefix}_{}.{job_number}.log", kind.name())
    } else {
        format!("{prefix}_{}.log", kind.name())
    }
}

/// An error creating or writing log files.
#[derive(Debug, thiserror::Error)]
#[error("log file '{path}'")]
pub struct LogError {
    /// The file.
    pub path: String,
    /// What went wrong.
    #[source]
    pub source: std::io::Error,
}

/// A log being written: an unnamed scratch file (nothing to clean up, whatever ends
/// the process), copied into place by [`LogFiles::commit`].
struct Part {
    target: LogTarget,
    scratch: File,
}

/// The log files of one run: each clone's log streams into its own temporary
/// file; [`LogFiles::commit`] moves them into place, and dropping the set
/// without committing removes them.
pub struct LogFiles {
    parts: Vec<Part>,
}

impl std::fmt::Debug for LogFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFiles")
            .field("parts", &self.parts.len())
            .finish()
    }
}

impl LogFiles {
    /// Create the temporary file of every target; returns the set and one
    /// streaming [`IoLog`] per target, in the order given. Nothing is left
    /// behind on error.
    pub fn create(targets: Vec<LogTarget>) -> Result<(LogFiles, Vec<IoLog>), LogError> {
        let mut files = LogFiles { parts: Vec::new() };
        let mut logs = Vec::new();
        for t in targets {
            let err = |source| LogError {
                path: t.path.clone(),
                source,
            };
            // Beside the target when it is a regular file (so a directory that
            // cannot be written fails now, not after the run); a special file's
            // directory (`/dev`) is no place for scratch files.
            let path = std::path::Path::new(&t.path);
            let scratch = match path.parent() {
                _ if crate::output::writes_through(path) => tempfile::tempfile(),
                Some(d) if !d.as_os_str().is_empty() => tempfile::tempfile_in(d),
                _ => tempfile::tempfile_in("."),
            }
            .map_err(err)?;
            let w = scratch.try_clone().map_err(err)?;
            logs.push(IoLog::to_writer(
                t.kind,
                t.params,
                Box::new(BufWriter::new(w)),
            ));
            files.parts.push(Part { target: t, scratch });
        }
        Ok((files, logs))
    }

    /// Move the finished logs into place. `finish_order` lists the clones in
    /// the order they finished: clones sharing a file (`per_job_logs=0`)
    /// appear in it in that order for per-I/O logs (fio writes those as each
    /// job exits) and in clone order for windowed ones. Returns the files
    /// written, in order.
    pub fn commit(self, finish_order: &[usize]) -> Result<Vec<String>, LogError> {
        let rank = |clone: usize| {
            finish_order
                .iter()
                .position(|c| *c == clone)
                .unwrap_or(usize::MAX)
        };
        let mut paths: Vec<String> = Vec::new();
        for p in &self.parts {
            if !paths.contains(&p.target.path) {
                paths.push(p.target.path.clone());
            }
        }
        for path in &paths {
            let mut members: Vec<&Part> = self
                .parts
                .iter()
                .filter(|p| p.target.path == *path)
                .collect();
            members.sort_by_key(|p| {
                let at_exit = p.target.kind.written_at_exit(p.target.params.avg_msec);
                (
                    !at_exit,
                    if at_exit { rank(p.target.clone) } else { 0 },
                    p.target.clone,
                )
            });
            let err = |source| LogError {
                path: path.clone(),
                source,
            };
            let mut out = crate::output::Output::create(std::path::Path::new(path)).map_err(err)?;
            {
                let mut w = BufWriter::new(out.file());
                for m in &members {
                    let mut f = &m.scratch;
                    f.seek(std::io::SeekFrom::Start(0)).map_err(err)?;
                    std::io::copy(&mut f, &mut w).map_err(err)?;
                }
                w.flush().map_err(err)?;
            }
            out.commit().map_err(err)?;
        }
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(time_ms: u64, value: u64, ddir: u8) -> Sample {
        Sample {
            time_ms,
            value,
            ddir,
            bs: 4096,
            offset: 8192,
            ..Sample::default()
        }
    }

    #[test]
    fn formats_follow_fio() {
        let mut out = Vec::new();
        let rt = Sample {
            prio: (1 << 13) | 2,
            issue_time_ns: 77,
            ..s(3, 1500, 1)
        };
        format_sample(&mut out, &LogParams::default(), &rt);
        let p = LogParams {
            offset: true,
            ..Default::default()
        };
        format_sample(&mut out, &p, &s(3, 1500, 0));
        let p = LogParams {
            offset: true,
            prio: true,
            issue_time: true,
            window_value: WindowValue::Both,
            avg_msec: 0,
        };
        format_sample(&mut out, &p, &rt);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "3, 1500, 1, 4096, 1\n3, 1500, 0, 4096, 8192, 0\n3, 1500, 0, 1, 4096, 8192, 0x2002, 77\n"
        );
    }

    #[test]
    fn unaveraged_logs_every_sample() {
        let mut l = IoLog::in_memory(LogKind::Clat, LogParams::default());
        l.add(s(0, 10, 0));
        l.add(s(0, 20, 1));
        l.finish(5).unwrap();
        assert_eq!(l.text(), "0, 10, 0, 4096, 0\n0, 20, 1, 4096, 0\n");
    }

    #[test]
    fn averaging_windows_follow_add_log_sample() {
        let p = LogParams {
            avg_msec: 100,
            ..Default::default()
        };
        let mut l = IoLog::in_memory(LogKind::Lat, p);
        // Window [0, 100): 10 and 21 average 15.5, logged (rounded up) by the
        // sample at 100 ms, which belongs to it too: (10 + 21 + 31) / 3 = 20.67.
        l.add(s(5, 10, 0));
        l.add(s(50, 21, 0));
        l.add(s(100, 31, 0));
        // Next window starts at 100: 150 is not yet due; 250 is (250 - 100 >= 100).
        l.add(s(150, 40, 0));
        l.add(s(250, 60, 0));
        // Writes have a window of their own, which (as in fio) starts at 0, so
        // the first write 260 ms in is logged at once; the read window holding
        // 70 is logged when the job ends.
        l.add(s(260, 7, 1));
        l.add(s(270, 70, 0));
        l.finish(300).unwrap();
        assert_eq!(
            l.text(),
            "100, 21, 0, 0, 0\n250, 50, 0, 0, 0\n260, 7, 1, 0, 0\n300, 70, 0, 0, 0\n"
        );
    }

    #[test]
    fn window_max_and_both() {
        for (wv, want) in [
            (WindowValue::Max, "10, 9, 0, 0, 0\n"),
            (WindowValue::Both, "10, 5, 9, 0, 0, 0\n"),
        ] {
            let p = LogParams {
                avg_msec: 10,
                window_value: wv,
                ..Default::default()
            };
            let mut l = IoLog::in_memory(LogKind::Clat, p);
            l.add(s(1, 1, 0));
            l.add(s(10, 9, 0));
            l.finish(10).unwrap();
            assert_eq!(l.text(), want);
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            log_file_name("a/b", LogKind::Clat, 3, true),
            "a/b_clat.3.log"
        );
        assert_eq!(log_file_name("x", LogKind::Iops, 3, false), "x_iops.log");
    }

    #[test]
    fn files_commit_and_abort() {
        let dir = std::env::temp_dir().join(format!("iosched-iolog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = |n: &str| dir.join(n).to_string_lossy().into_owned();
        let target = |clone, kind, p: &str| LogTarget {
            clone,
            kind,
            params: LogParams::default(),
            path: path(p),
        };
        // Two clones sharing one file, written in finish order (1 then 0).
        let (files, mut logs) = LogFiles::create(vec![
            target(0, LogKind::Lat, "j_lat.log"),
            target(1, LogKind::Lat, "j_lat.log"),
            target(1, LogKind::Bw, "j_bw.2.log"),
        ])
        .unwrap();
        logs[0].add(s(1, 100, 0));
        logs[1].add(s(2, 200, 0));
        for l in &mut logs {
            l.finish(3).unwrap();
        }
        let written = files.commit(&[1, 0]).unwrap();
        assert_eq!(written, vec![path("j_lat.log"), path("j_bw.2.log")]);
        assert_eq!(
            std::fs::read_to_string(path("j_lat.log")).unwrap(),
            "2, 200, 0, 4096, 0\n1, 100, 0, 4096, 0\n"
        );
        assert_eq!(std::fs::read_to_string(path("j_bw.2.log")).unwrap(), "");
        // Not committed: nothing is left behind.
        let (files, _logs) =
            LogFiles::create(vec![target(0, LogKind::Slat, "k_slat.1.log")]).unwrap();
        drop(files);
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("k_"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // A target in a missing directory fails before anything is written.
        let err = LogFiles::create(vec![target(0, LogKind::Lat, "nope/x_lat.1.log")]).unwrap_err();
        assert!(err.to_string().contains("nope/x_lat.1.log"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
