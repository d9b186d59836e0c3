//! blktrace's binary event records (`struct blk_io_trace`, 48 bytes, from the
//! kernel's include/uapi/linux/blktrace_api.h, trace version 7), in either byte
//! order, each followed by `pdu_len` bytes of payload.
//!
//! As fio's blktrace.c replays them, the requests are the queue events
//! (`__BLK_TA_QUEUE`, blkparse's `Q`): a discard is a trim, a flush (with or
//! without data) an fsync, anything else a read or a write; zero-byte reads and
//! writes are skipped (fio warns), notify records are skipped. The per-CPU files
//! of one capture are merged by timestamp. Issue (`D`) to complete (`C`) times
//! are collected as the trace's recorded service times, and the in-flight depth
//! as fio probes it (queue events up, merges down, its maximum at each
//! completion).

use super::{count_unknown, TraceError, TraceIo, TraceOp, TraceReader};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::PathBuf;

/// `BLK_IO_TRACE_MAGIC`: the magic's upper 24 bits.
pub const MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION`.
pub const VERSION: u32 = 0x07;
/// Size of `struct blk_io_trace`.
pub const RECORD: usize = 48;

/// `BLK_TC_SHIFT`: categories sit above the action code.
const TC_SHIFT: u32 = 16;
/// Category bits (`enum blktrace_cat`).
pub const TC_READ: u32 = 1 << 0;
/// `BLK_TC_WRITE`.
pub const TC_WRITE: u32 = 1 << 1;
/// `BLK_TC_FLUSH`.
pub const TC_FLUSH: u32 = 1 << 2;
/// `BLK_TC_SYNC`.
pub const TC_SYNC: u32 = 1 << 3;
/// `BLK_TC_QUEUE`.
pub const TC_QUEUE: u32 = 1 << 4;
/// `BLK_TC_ISSUE`.
pub const TC_ISSUE: u32 = 1 << 6;
/// `BLK_TC_COMPLETE`.
pub const TC_COMPLETE: u32 = 1 << 7;
/// `BLK_TC_FS`.
pub const TC_FS: u32 = 1 << 8;
/// `BLK_TC_NOTIFY`.
pub const TC_NOTIFY: u32 = 1 << 10;
/// `BLK_TC_DISCARD`.
pub const TC_DISCARD: u32 = 1 << 13;
/// Action codes (`enum blktrace_act`).
pub const TA_QUEUE: u32 = 1;
/// `__BLK_TA_BACKMERGE`.
pub const TA_BACKMERGE: u32 = 2;
/// `__BLK_TA_FRONTMERGE`.
pub const TA_FRONTMERGE: u32 = 3;
/// `__BLK_TA_ISSUE`.
pub const TA_ISSUE: u32 = 7;
/// `__BLK_TA_COMPLETE`.
pub const TA_COMPLETE: u32 = 8;
/// The last action code the kernel defines (`__BLK_TA_DRV_DATA`).
const TA_LAST: u32 = 17;

/// `BLK_TC_ACT(cat)`.
pub const fn act(cat: u32) -> u32 {
    cat << TC_SHIFT
}

/// One decoded record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// `magic` (MAGIC | version).
    pub magic: u32,
    /// `sequence`.
    pub sequence: u32,
    /// `time`, ns since the trace started.
    pub time: u64,
    /// `sector`.
    pub sector: u64,
    /// `bytes`.
    pub bytes: u32,
    /// `action`: category bits above, action code below.
    pub action: u32,
    /// `pid`.
    pub pid: u32,
    /// `device` (kernel dev_t: major << 20 | minor).
    pub device: u32,
    /// `cpu`.
    pub cpu: u32,
    /// `error`.
    pub error: u16,
    /// `pdu_len`: payload bytes after the record.
    pub pdu_len: u16,
}

impl Record {
    /// The record as blktrace writes it, little-endian (`big`: big-endian).
    pub fn encode(&self, big: bool) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            b[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        macro_rules! e {
            ($v:expr) => {
                if big {
                    put(&$v.to_be_bytes())
                } else {
                    put(&$v.to_le_bytes())
                }
            };
        }
        e!(self.magic);
        e!(self.sequence);
        e!(self.time);
        e!(self.sector);
        e!(self.bytes);
        e!(self.action);
        e!(self.pid);
        e!(self.device);
        e!(self.cpu);
        e!(self.error);
        e!(self.pdu_len);
        b
    }

    /// Decode 48 bytes in the given byte order.
    pub fn decode(b: &[u8; RECORD], big: bool) -> Record {
        let u32_at = |i: usize| {
            let a = [b[i], b[i + 1], b[i + 2], b[i + 3]];
            if big {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            if big {
                u64::from_be_bytes(a)
            } else {
                u64::from_le_bytes(a)
            }
        };
        let u16_at = |i: usize| {
            let a = [b[i], b[i + 1]];
            if big {
                u16::from_be_bytes(a)
            } else {
                u16::from_le_bytes(a)
            }
        };
        Record {
            magic: u32_at(0),
            sequence: u32_at(4),
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            cpu: u32_at(40),
            error: u16_at(44),
            pdu_len: u16_at(46),
        }
    }
}

/// fio's `is_blktrace`: the first 48 bytes are a record with the magic, in
/// either byte order. `Some(big_endian)` when they are.
pub fn detect(head: &[u8]) -> Option<bool> {
    let b: &[u8; RECORD] = head.get(..RECORD)?.try_into().ok()?;
    [false, true]
        .into_iter()
        .find(|&big| Record::decode(b, big).magic & 0xffff_ff00 == MAGIC)
}

/// One per-CPU file being read.
struct Input {
    name: String,
    r: Box<dyn Read + Send>,
    big: Option<bool>,
    record: u64,
    /// The next queue event of this file, with its record number.
    head: Option<(Record, u64)>,
}

/// Merges the per-CPU files of one capture into one stream of requests.
pub struct BlktraceReader {
    inputs: Vec<Input>,
    unknown: BTreeMap<String, u64>,
    issued: HashMap<(u32, u64), u64>,
    service: Vec<u64>,
    depth: [i64; 3],
    max_depth: [i64; 3],
}

/// Most issued requests remembered for pairing with their completions (a
/// capture never has more in flight; a hostile one cannot grow the map).
const MAX_PENDING: usize = 1 << 16;

impl BlktraceReader {
    /// Open the files of one capture.
    pub fn open(files: &[PathBuf]) -> Result<BlktraceReader, TraceError> {
        let mut inputs = Vec::new();
        for p in files {
            let f = std::fs::File::open(p).map_err(|e| TraceError {
                file: p.display().to_string(),
                line: 0,
                message: format!("cannot open: {e}"),
            })?;
            inputs.push((
                p.display().to_string(),
                Box::new(std::io::BufReader::with_capacity(1 << 16, f)) as Box<dyn Read + Send>,
            ));
        }
        BlktraceReader::from_readers(inputs)
    }

    /// Read a capture from already-open streams `(name, stream)`.
    pub fn from_readers(
        streams: Vec<(String, Box<dyn Read + Send>)>,
    ) -> Result<BlktraceReader, TraceError> {
        let mut r = BlktraceReader {
            inputs: streams
                .into_iter()
                .map(|(name, r)| Input {
                    name,
                    r,
                    big: None,
                    record: 0,
                    head: None,
                })
                .collect(),
            unknown: BTreeMap::new(),
            issued: HashMap::new(),
            service: Vec::new(),
            depth: [0; 3],
            max_depth: [0; 3],
        };
        for i in 0..r.inputs.len() {
            r.advance(i)?;
        }
        Ok(r)
    }

    /// The in-flight depth fio would probe from the events read so far
    /// (`read_blktrace`: at most 1024; 1 for a direction with I/O but no
    /// completions).
    pub fn depth(&self, ios: [u64; 3]) -> u32 {
        (0..3)
            .map(|d| match self.max_depth[d] {
                x if x > 1024 => 1024,
                0 if ios[d] > 0 => 1,
                x => x.max(0),
            })
            .max()
            .unwrap_or(0) as u32
    }

    /// Read records of input `i` until its next queue event (or its end).
    fn advance(&mut self, i: usize) -> Result<(), TraceError> {
        loop {
            let inp = &mut self.inputs[i];
            let mut b = [0u8; RECORD];
            let n = read_full(&mut *inp.r, &mut b).map_err(|e| TraceError {
                file: inp.name.clone(),
                line: inp.record + 1,
                message: format!("read error: {e}"),
            })?;
            if n == 0 {
                inp.head = None;
                return Ok(());
            }
            inp.record += 1;
            let rec_no = inp.record;
            let err = |m: String| TraceError {
                file: inp.name.clone(),
                line: rec_no,
                message: m,
            };
            if n < RECORD {
                return Err(err(format!(
                    "truncated record: {n} of {RECORD} bytes (record {rec_no})"
                )));
            }
            let big = match inp.big {
                Some(b) => b,
                None => {
                    let big = detect(&b).ok_or_else(|| {
                        err("not a blktrace file: no blk_io_trace magic 0x654174xx in either byte order".into())
                    })?;
                    inp.big = Some(big);
                    big
                }
            };
            let t = Record::decode(&b, big);
            if t.magic & 0xffff_ff00 != MAGIC {
                return Err(err(format!("bad magic {:#x} in record {rec_no}", t.magic)));
            }
            if t.magic & 0xff != VERSION {
                return Err(err(format!(
                    "blktrace version {} (expected {VERSION})",
                    t.magic & 0xff
                )));
            }
            let mut pdu = vec![0u8; t.pdu_len as usize];
            let got =
                read_full(&mut *inp.r, &mut pdu).map_err(|e| err(format!("read error: {e}")))?;
            if got < pdu.len() {
                return Err(err(format!(
                    "truncated payload: {got} of {} bytes",
                    t.pdu_len
                )));
            }
            if self.note(&t) {
                self.inputs[i].head = Some((t, rec_no));
                return Ok(());
            }
        }
    }

    /// Account one record; true for a queue event (a request to replay).
    fn note(&mut self, t: &Record) -> bool {
        if t.action & act(TC_NOTIFY) != 0 {
            return false;
        }
        let code = t.action & 0xffff;
        let d = if t.action & act(TC_READ) != 0 {
            Some(0)
        } else if t.action & act(TC_WRITE) != 0 {
            Some(1)
        } else if t.action & act(TC_DISCARD) != 0 {
            Some(2)
        } else {
            None
        };
        match code {
            TA_QUEUE => {
                if let Some(d) = d {
                    self.depth[d] += 1;
                }
                return true;
            }
            TA_BACKMERGE | TA_FRONTMERGE => {
                if let Some(d) = d {
                    self.depth[d] -= 1;
                }
            }
            TA_ISSUE if self.issued.len() < MAX_PENDING => {
                self.issued.insert((t.device, t.sector), t.time);
            }
            TA_COMPLETE => {
                if let Some(d) = d {
                    self.max_depth[d] = self.max_depth[d].max(self.depth[d]);
                    self.depth[d] = 0;
                }
                if let Some(at) = self.issued.remove(&(t.device, t.sector)) {
                    self.service.push(t.time.saturating_sub(at));
                }
            }
            c if c == 0 || c > TA_LAST => {
                count_unknown(&mut self.unknown, &format!("action {code:#x}"))
            }
            _ => {}
        }
        false
    }
}

/// Read as much of `buf` as the stream has; the count read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut at = 0;
    while at < buf.len() {
        match r.read(&mut buf[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}

impl TraceReader for BlktraceReader {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        loop {
            // The earliest head; ties go to the lower-numbered file.
            let Some(i) = (0..self.inputs.len())
                .filter(|&i| self.inputs[i].head.is_some())
                .min_by_key(|&i| self.inputs[i].head.map(|h| h.0.time))
            else {
                return Ok(None);
            };
            let (t, rec) = self.inputs[i].head.take().expect("head");
            self.advance(i)?;
            let op = if t.action & act(TC_DISCARD) != 0 {
                TraceOp::Trim
            } else if t.action & act(TC_FLUSH) != 0 {
                TraceOp::Sync
            } else if t.action & act(TC_WRITE) != 0 {
                TraceOp::Write
            } else {
                TraceOp::Read
            };
            if op != TraceOp::Sync && t.bytes == 0 {
                count_unknown(&mut self.unknown, "zero-byte queue event");
                continue;
            }
            let offset = t.sector.checked_mul(512).ok_or_else(|| TraceError {
                file: self.inputs[i].name.clone(),
                line: rec,
                message: format!("sector {} is beyond 2^64 bytes", t.sector),
            })?;
            return Ok(Some(TraceIo {
                line: rec,
                t_ns: Some(t.time),
                op,
                offset,
                bytes: if op == TraceOp::Sync {
                    0
                } else {
                    t.bytes as u64
                },
                pid: Some(t.pid),
                cpu: Some(t.cpu),
            }));
        }
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }

    fn take_service_times(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.service)
    }

    fn probed_depth(&self, ios: [u64; 3]) -> Option<u32> {
        Some(self.depth(ios))
    }
}

/// One input of [`merge`] (fio's `struct blktrace_cursor`).
struct Cursor {
    path: PathBuf,
    r: std::io::BufReader<std::fs::File>,
    big: bool,
    /// `merge_blktrace_scalars`: percent.
    scalar: u64,
    /// `merge_blktrace_iters`.
    nr_iter: u64,
    iter: u64,
    /// The trace's length: the last queue event's (scaled) time, set at the
    /// end of the first pass.
    length: u64,
    /// The last queue event read.
    t: Record,
    record: u64,
}

impl Cursor {
    fn err(&self, message: String) -> TraceError {
        TraceError {
            file: self.path.display().to_string(),
            line: self.record,
            message,
        }
    }

    /// fio's `read_trace`: the next queue event with a direction, its time
    /// shifted by the passes before (`iter × length`) and scaled; false at the end.
    fn read(&mut self) -> Result<bool, TraceError> {
        loop {
            let mut b = [0u8; RECORD];
            let n =
                read_full(&mut self.r, &mut b).map_err(|e| self.err(format!("read error: {e}")))?;
            if n == 0 {
                if self.length == 0 {
                    self.length = self.t.time;
                }
                return Ok(false);
            }
            self.record += 1;
            if n < RECORD {
                return Err(self.err(format!("truncated record: {n} of {RECORD} bytes")));
            }
            let t = Record::decode(&b, self.big);
            if t.magic & 0xffff_ff00 != MAGIC {
                return Err(self.err(format!("bad magic {:#x}", t.magic)));
            }
            let mut pdu = vec![0u8; t.pdu_len as usize];
            let got = read_full(&mut self.r, &mut pdu)
                .map_err(|e| self.err(format!("read error: {e}")))?;
            if got < pdu.len() {
                return Err(self.err(format!("truncated payload: {got} of {} bytes", t.pdu_len)));
            }
            let has_dir = t.action & act(TC_READ | TC_WRITE | TC_DISCARD) != 0;
            if t.action & 0xffff != TA_QUEUE || !has_dir {
                continue;
            }
            self.t = t;
            // Unsigned C arithmetic, as fio's.
            self.t.time = t
                .time
                .wrapping_add(self.iter.wrapping_mul(self.length))
                .wrapping_mul(self.scalar)
                / 100;
            return Ok(true);
        }
    }

    /// fio's `merge_finish_file`: another pass from the start, or done.
    fn finish(&mut self) -> Result<bool, TraceError> {
        self.iter += 1;
        if self.iter < self.nr_iter {
            use std::io::Seek;
            self.r
                .seek(std::io::SeekFrom::Start(0))
                .map_err(|e| self.err(format!("seek error: {e}")))?;
            self.record = 0;
            return Ok(true);
        }
        Ok(false)
    }
}

/// fio's `merge_blktrace_iologs` (`merge_blktrace_file`): the queue events of
/// `inputs` merged by time into one blktrace file at `out` (native byte order,
/// no payloads). Each input's times are scaled by its `scalars` percentage
/// (default 100) and it is read `iters` times (default 1), each pass shifted
/// by the trace's length. As in fio, when a pass ends the cursor still holds
/// its last event, which is therefore written once more before the next pass
/// starts. Returns the records written.
pub fn merge(
    inputs: &[PathBuf],
    scalars: &[f64],
    iters: &[f64],
    out: &std::path::Path,
) -> Result<u64, TraceError> {
    let param = |vals: &[f64], what: &str, def: u64| -> Result<Vec<u64>, TraceError> {
        // fio counts the leading non-zero values.
        let len = vals.iter().take_while(|v| **v != 0.0).count();
        if len != 0 && len != inputs.len() {
            return Err(TraceError {
                file: out.display().to_string(),
                line: 0,
                message: format!(
                    "{what} has {len} values for {} read_iolog files",
                    inputs.len()
                ),
            });
        }
        Ok((0..inputs.len())
            .map(|i| if len == 0 { def } else { vals[i] as u64 })
            .collect())
    };
    let scalars = param(scalars, "merge_blktrace_scalars", 100)?;
    let iters = param(iters, "merge_blktrace_iters", 1)?;
    let werr = |e: std::io::Error| TraceError {
        file: out.display().to_string(),
        line: 0,
        message: format!("cannot write: {e}"),
    };
    let mut cursors = Vec::new();
    for (i, p) in inputs.iter().enumerate() {
        let mut f = std::fs::File::open(p).map_err(|e| TraceError {
            file: p.display().to_string(),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
        let mut head = [0u8; RECORD];
        let n = read_full(&mut f, &mut head).unwrap_or(0);
        let big = (n == RECORD)
            .then(|| detect(&head))
            .flatten()
            .ok_or_else(|| TraceError {
                file: p.display().to_string(),
                line: 0,
                message: "not a blktrace file (merge_blktrace_file merges blktrace captures)"
                    .into(),
            })?;
        let f = std::fs::File::open(p).map_err(|e| TraceError {
            file: p.display().to_string(),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
        let mut c = Cursor {
            path: p.clone(),
            r: std::io::BufReader::with_capacity(1 << 16, f),
            big,
            scalar: scalars[i],
            nr_iter: iters[i],
            iter: 0,
            length: 0,
            t: Record::default(),
            record: 0,
        };
        // An input without queue events adds nothing (fio's handling of that
        // case reuses the cursor's slot).
        if c.read()? {
            cursors.push(c);
        }
    }
    let mut w =
        std::io::BufWriter::with_capacity(1 << 17, std::fs::File::create(out).map_err(werr)?);
    let mut written = 0u64;
    while !cursors.is_empty() {
        // fio's `find_earliest_io`: the first cursor with the smallest time.
        let mut i = 0;
        for k in 1..cursors.len() {
            if cursors[k].t.time < cursors[i].t.time {
                i = k;
            }
        }
        let mut t = cursors[i].t;
        t.pdu_len = 0;
        std::io::Write::write_all(&mut w, &t.encode(cfg!(target_endian = "big"))).map_err(werr)?;
        written += 1;
        if !cursors[i].read()? && !cursors[i].finish()? {
            // Keep the active cursors contiguous: the last takes its place.
            cursors.swap_remove(i);
        }
    }
    std::io::Write::flush(&mut w).map_err(werr)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time: u64, code: u32, cats: u32, sector: u64, bytes: u32) -> Record {
        Record {
            magic: MAGIC | VERSION,
            time,
            sector,
            bytes,
            action: code | act(cats),
            pid: 42,
            device: (8 << 20) | 16,
            cpu: 3,
            ..Default::default()
        }
    }

    fn capture(big: bool, recs: &[Record]) -> Vec<u8> {
        recs.iter().flat_map(|r| r.encode(big)).collect()
    }

    #[test]
    fn both_byte_orders_and_queue_events_only() {
        let recs = [
            rec(1_000, TA_QUEUE, TC_READ | TC_QUEUE | TC_SYNC, 8, 4096),
            rec(1_500, 4, TC_READ | TC_QUEUE, 8, 4096), // G
            rec(2_000, TA_ISSUE, TC_READ | TC_ISSUE, 8, 4096),
            rec(9_000, TA_COMPLETE, TC_READ | TC_COMPLETE, 8, 4096),
            rec(10_000, TA_QUEUE, TC_WRITE | TC_QUEUE, 100, 8192),
            rec(
                11_000,
                TA_QUEUE,
                TC_DISCARD | TC_WRITE | TC_QUEUE,
                200,
                65536,
            ),
            rec(12_000, TA_QUEUE, TC_FLUSH | TC_WRITE | TC_QUEUE, 0, 0),
        ];
        for big in [false, true] {
            let bytes = capture(big, &recs);
            assert_eq!(detect(&bytes), Some(big));
            let mut r = BlktraceReader::from_readers(vec![(
                "c".into(),
                Box::new(std::io::Cursor::new(bytes)),
            )])
            .unwrap();
            let mut got = Vec::new();
            while let Some(io) = r.next_io().unwrap() {
                got.push((io.t_ns.unwrap(), io.op, io.offset, io.bytes, io.pid, io.cpu));
            }
            assert_eq!(
                got,
                vec![
                    (1_000, TraceOp::Read, 4096, 4096, Some(42), Some(3)),
                    (10_000, TraceOp::Write, 51_200, 8192, Some(42), Some(3)),
                    (11_000, TraceOp::Trim, 102_400, 65536, Some(42), Some(3)),
                    (12_000, TraceOp::Sync, 0, 0, Some(42), Some(3)),
                ]
            );
            assert_eq!(r.take_service_times(), vec![7_000]);
            // One read queued before its completion; writes never complete.
            assert_eq!(r.depth([1, 1, 1]), 1);
        }
    }

    #[test]
    fn per_cpu_files_merge_by_time() {
        let a = capture(
            false,
            &[
                rec(5, TA_QUEUE, TC_READ, 0, 512),
                rec(30, TA_QUEUE, TC_READ, 2, 512),
            ],
        );
        let b = capture(true, &[rec(10, TA_QUEUE, TC_WRITE, 1, 512)]);
        let mut r = BlktraceReader::from_readers(vec![
            ("a".into(), Box::new(std::io::Cursor::new(a))),
            ("b".into(), Box::new(std::io::Cursor::new(b))),
        ])
        .unwrap();
        let mut t = Vec::new();
        while let Some(io) = r.next_io().unwrap() {
            t.push(io.t_ns.unwrap());
        }
        assert_eq!(t, vec![5, 10, 30]);
    }

    #[test]
    fn bad_records_are_errors() {
        let mut bytes = capture(false, &[rec(5, TA_QUEUE, TC_READ, 0, 512)]);
        bytes.extend_from_slice(&[1, 2, 3]);
        let mut r =
            BlktraceReader::from_readers(vec![("c".into(), Box::new(std::io::Cursor::new(bytes)))])
                .unwrap();
        let e = r.next_io().unwrap_err();
        assert!(e.to_string().contains("c:2: truncated record"), "{e}");
        let mut v = rec(5, TA_QUEUE, TC_READ, 0, 512);
        v.magic = MAGIC | 6;
        let e = BlktraceReader::from_readers(vec![(
            "c".into(),
            Box::new(std::io::Cursor::new(capture(false, &[v]))),
        )])
        .err()
        .unwrap();
        assert!(e.message.contains("version 6"), "{e}");
        assert_eq!(e.line, 1);
        assert_eq!(
            detect(b"fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n"),
            None
        );
    }
}
