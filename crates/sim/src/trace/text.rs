//! Text trace formats: blkparse's default output, tracefs recordings, MSR
//! Cambridge CSV, MQSim and DiskSim ASCII traces. Each is read a line at a time.

use super::{count_unknown, line_str, read_line, TraceError, TraceIo, TraceOp, TraceReader};
use crate::kernel_trace::parse::{parse_line, BlockKind, KernelTrace};
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

/// Most issued requests remembered for pairing with their completions.
const MAX_PENDING: usize = 1 << 16;

/// The line-reading state every text reader shares.
struct Lines<R> {
    file: String,
    input: R,
    line: u64,
    buf: Vec<u8>,
    unknown: BTreeMap<String, u64>,
}

impl<R: BufRead> Lines<R> {
    fn new(file: String, input: R) -> Lines<R> {
        Lines {
            file,
            input,
            line: 0,
            buf: Vec::new(),
            unknown: BTreeMap::new(),
        }
    }

    /// Read the next line into `buf`; false at the end.
    fn advance(&mut self) -> Result<bool, TraceError> {
        let n = self.line + 1;
        if !read_line(&mut self.input, &mut self.buf, &self.file, n)? {
            return Ok(false);
        }
        self.line = n;
        Ok(true)
    }
}

/// An error at `file:line`.
fn e(file: &str, line: u64, message: String) -> TraceError {
    TraceError {
        file: file.to_string(),
        line,
        message,
    }
}

/// `SECS.FRACTION` (up to 9 digits) → ns.
fn parse_secs(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sec: u64 = sec.parse().ok()?;
    let mut f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..9 {
        f *= 10;
    }
    sec.checked_mul(1_000_000_000)?.checked_add(f)
}

/// The op of an RWBS string with its sector count: a leading `F` is a preflush;
/// `R` read, `W` write, `D` discard; a preflush without data is a flush (sync).
/// `None`: no data and no flush (`N`), or not an RWBS string.
fn rwbs_op(rwbs: &str, sectors: u64) -> Option<TraceOp> {
    let preflush = rwbs.len() > 1 && rwbs.starts_with('F');
    let op = if preflush { &rwbs[1..] } else { rwbs };
    match op.chars().next()? {
        _ if preflush && sectors == 0 => Some(TraceOp::Sync),
        'F' if sectors == 0 => Some(TraceOp::Sync),
        'R' => Some(TraceOp::Read),
        'W' => Some(TraceOp::Write),
        'D' => Some(TraceOp::Trim),
        _ => None,
    }
}

/// blkparse's default text output (`%D %2c %8s %5T.%9t %5p %2a %3d ` then the
/// action's fields): `MAJ,MIN CPU SEQ SECS.NSECS PID ACTION RWBS SECTOR + COUNT
/// [PROCESS]`. The queue events (`Q`) are the requests; `D` and `C` pair into
/// the recorded service times; the per-CPU and total summary blkparse prints at
/// the end is not read.
pub struct Blkparse<R> {
    l: Lines<R>,
    issued: HashMap<((u32, u32), u64), u64>,
    service: Vec<u64>,
    done: bool,
}

impl<R: BufRead + Send> Blkparse<R> {
    /// Read blkparse output from `input` (named `file` in messages).
    pub fn new(file: String, input: R) -> Blkparse<R> {
        Blkparse {
            l: Lines::new(file, input),
            issued: HashMap::new(),
            service: Vec::new(),
            done: false,
        }
    }
}

/// Actions blkparse prints that replay reads no data from.
const BLKPARSE_ACTIONS: &str = "ABCDFGIMPQSTUXRNm";

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(',')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl<R: BufRead + Send> TraceReader for Blkparse<R> {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        const SHAPE: &str = "expected blkparse's 'MAJ,MIN CPU SEQ SECS.NSECS PID ACTION RWBS SECTOR + COUNT [PROCESS]'";
        while !self.done {
            if !self.l.advance()? {
                break;
            }
            let Lines {
                file,
                line,
                buf,
                unknown,
                ..
            } = &mut self.l;
            let text = line_str(buf, file, *line)?;
            let (all, nf) = super::ws_fields::<12>(text);
            let f = &all[..nf.min(12)];
            if f.is_empty() {
                continue;
            }
            // The summary: "CPU0 (8,0):", "Total (8,0):", then its counters.
            if f[0].starts_with("CPU") || f[0] == "Total" {
                self.done = true;
                break;
            }
            if f.len() < 7 {
                return Err(e(file, *line, format!("{nf} fields: {SHAPE}")));
            }
            let dev = parse_dev(f[0])
                .ok_or_else(|| e(file, *line, format!("bad device '{}': {SHAPE}", f[0])))?;
            let cpu: u32 = f[1]
                .parse()
                .map_err(|_| e(file, *line, format!("bad CPU '{}': {SHAPE}", f[1])))?;
            let t = parse_secs(f[3])
                .ok_or_else(|| e(file, *line, format!("bad timestamp '{}': {SHAPE}", f[3])))?;
            let pid: u32 = f[4]
                .parse()
                .map_err(|_| e(file, *line, format!("bad pid '{}': {SHAPE}", f[4])))?;
            let action = f[5];
            if action.len() != 1 || !BLKPARSE_ACTIONS.contains(action) {
                count_unknown(unknown, action);
                continue;
            }
            if !matches!(action, "Q" | "D" | "C") {
                continue;
            }
            if f.len() < 10 || f[8] != "+" {
                // A Q/D/C with no extent (a message-less PC request): nothing to replay.
                count_unknown(unknown, &format!("{action} without extent"));
                continue;
            }
            let sector: u64 = f[7]
                .parse()
                .map_err(|_| e(file, *line, format!("bad sector '{}': {SHAPE}", f[7])))?;
            let nr: u64 = f[9]
                .parse()
                .map_err(|_| e(file, *line, format!("bad sector count '{}': {SHAPE}", f[9])))?;
            match action {
                "D" => {
                    if self.issued.len() < MAX_PENDING {
                        self.issued.insert((dev, sector), t);
                    }
                    continue;
                }
                "C" => {
                    if let Some(at) = self.issued.remove(&(dev, sector)) {
                        self.service.push(t.saturating_sub(at));
                    }
                    continue;
                }
                _ => {}
            }
            let Some(op) = rwbs_op(f[6], nr) else {
                count_unknown(unknown, &format!("Q {}", f[6]));
                continue;
            };
            let offset = sector
                .checked_mul(512)
                .filter(|o| o.checked_add(nr * 512).is_some() && nr <= u32::MAX as u64)
                .ok_or_else(|| e(file, *line, format!("sector {sector} + {nr} overflows")))?;
            return Ok(Some(TraceIo {
                line: *line,
                t_ns: Some(t),
                op,
                offset,
                bytes: if op == TraceOp::Sync { 0 } else { nr * 512 },
                pid: Some(pid),
                cpu: Some(cpu),
            }));
        }
        Ok(None)
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.l.unknown
    }

    fn take_service_times(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.service)
    }
}

/// Which events of a tracefs recording are the requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracefsRequests {
    /// `block_getrq`: a request allocated for a bio, in the submitter's
    /// context (its pid and CPU); every request, whatever the scheduler.
    Getrq,
    /// `block_rq_insert`: requests entering the elevator (recordings without
    /// `block_getrq`; a request issued directly, bypassing the elevator, is
    /// missing).
    Insert,
    /// `block_rq_issue`: what the driver got (recordings with neither).
    Issue,
}

impl TracefsRequests {
    /// The best events a recording has: getrq, else insert, else issue (a scan
    /// of the file's event names).
    pub fn scan(input: impl BufRead) -> TracefsRequests {
        let (mut insert, mut issue) = (false, false);
        for line in input.split(b'\n').map_while(Result::ok) {
            let has = |n: &[u8]| line.windows(n.len()).any(|w| w == n);
            if has(b" block_getrq: ") {
                return TracefsRequests::Getrq;
            }
            insert |= has(b" block_rq_insert: ");
            issue |= has(b" block_rq_issue: ");
        }
        match (insert, issue) {
            (true, _) => TracefsRequests::Insert,
            _ => TracefsRequests::Issue,
        }
    }
}

/// A tracefs recording (`iosched kernel-trace record`'s file), read with the
/// validator's parser line by line: the requests are the events `which` names
/// (see [`TracefsRequests`]), with their pid and CPU; `block_rq_issue` →
/// `block_rq_complete` pairs are the recorded service times. Other events are
/// read and dropped; lines the parser rejects are errors.
pub struct Tracefs<R> {
    l: Lines<R>,
    kt: KernelTrace,
    which: TracefsRequests,
    issued: HashMap<((u32, u32), u64), u64>,
    service: Vec<u64>,
    pending: std::collections::VecDeque<crate::kernel_trace::parse::BlockEvent>,
}

impl<R: BufRead + Send> Tracefs<R> {
    /// Read a recording from `input` (named `file` in messages).
    pub fn new(file: String, input: R, which: TracefsRequests) -> Tracefs<R> {
        Tracefs {
            l: Lines::new(file, input),
            kt: KernelTrace::default(),
            which,
            issued: HashMap::new(),
            service: Vec::new(),
            pending: Default::default(),
        }
    }
}

impl<R: BufRead + Send> TraceReader for Tracefs<R> {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        loop {
            if !self.l.advance()? {
                return Ok(None);
            }
            let Lines {
                file,
                line,
                buf,
                unknown,
                ..
            } = &mut self.l;
            let text = line_str(buf, file, *line)?;
            let n = *line as usize;
            parse_line(&mut self.kt, n, text);
            if let Some((_, m)) = self.kt.header_errors.pop() {
                return Err(e(file, *line, m));
            }
            if let Some((_, m)) = self.kt.skipped.pop() {
                return Err(e(file, *line, m));
            }
            for e in self.kt.events.drain(..) {
                match e.kind {
                    BlockKind::Issue if self.issued.len() < MAX_PENDING => {
                        self.issued.insert((e.dev, e.sector), e.ts_ns);
                    }
                    BlockKind::Complete => {
                        if let Some(at) = self.issued.remove(&(e.dev, e.sector)) {
                            self.service.push(e.ts_ns.saturating_sub(at));
                        }
                    }
                    _ => {}
                }
                let wanted = match self.which {
                    TracefsRequests::Insert => e.kind == BlockKind::Insert,
                    TracefsRequests::Issue => e.kind == BlockKind::Issue,
                    TracefsRequests::Getrq => false,
                };
                if wanted {
                    self.pending.push_back(e);
                }
            }
            if self.which == TracefsRequests::Getrq {
                self.pending.extend(self.kt.getrqs.drain(..));
            } else {
                self.kt.getrqs.clear();
            }
            // What the replay does not use, dropped as it comes.
            self.kt.samples.clear();
            self.kt.kyber.clear();
            self.kt.kyber_timer_runs.clear();
            self.kt.run_delays.clear();
            self.kt.exits.clear();
            let Some(g) = self.pending.pop_front() else {
                continue;
            };
            if self.kt.meta.dev.is_some_and(|d| d != g.dev) {
                count_unknown(unknown, "other device");
                continue;
            }
            let Some(op) = rwbs_op(&g.rwbs, g.nr_sectors as u64) else {
                count_unknown(unknown, &format!("{:?} {}", self.which, g.rwbs));
                continue;
            };
            return Ok(Some(TraceIo {
                line: g.line as u64,
                t_ns: Some(g.ts_ns),
                op,
                offset: g.sector * 512,
                bytes: if op == TraceOp::Sync {
                    0
                } else {
                    g.nr_sectors as u64 * 512
                },
                pid: Some(g.pid),
                cpu: Some(g.cpu),
            }));
        }
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.l.unknown
    }

    fn take_service_times(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.service)
    }
}

/// MSR Cambridge CSV (SNIA IOTTA): `Timestamp,Hostname,DiskNumber,Type,Offset,
/// Size,ResponseTime`, timestamps and response times in Windows filetime units
/// (100 ns), offsets and sizes in bytes. The response time is the recorded
/// service time; hostname and disk number are not used (one device is simulated).
pub struct Msr<R> {
    l: Lines<R>,
    service: Vec<u64>,
}

impl<R: BufRead + Send> Msr<R> {
    /// Read MSR CSV from `input` (named `file` in messages).
    pub fn new(file: String, input: R) -> Msr<R> {
        Msr {
            l: Lines::new(file, input),
            service: Vec::new(),
        }
    }
}

impl<R: BufRead + Send> TraceReader for Msr<R> {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        const SHAPE: &str =
            "expected MSR's 'Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime'";
        loop {
            if !self.l.advance()? {
                return Ok(None);
            }
            let Lines {
                file,
                line,
                buf,
                unknown,
                ..
            } = &mut self.l;
            let text = line_str(buf, file, *line)?;
            if text.trim().is_empty() || (*line == 1 && text.starts_with("Timestamp")) {
                continue;
            }
            let (f, nf) = super::fields::<7>(text.split(',').map(str::trim));
            if nf != 7 {
                return Err(e(file, *line, format!("{nf} fields: {SHAPE}")));
            }
            let num = |i: usize, what: &str| {
                super::dec(f[i])
                    .ok_or_else(|| e(file, *line, format!("bad {what} '{}': {SHAPE}", f[i])))
            };
            let ticks = num(0, "timestamp")?;
            let offset = num(4, "offset")?;
            let bytes = num(5, "size")?;
            let resp = num(6, "response time")?;
            let op = match f[3].to_ascii_lowercase().as_str() {
                "read" => TraceOp::Read,
                "write" => TraceOp::Write,
                other => {
                    count_unknown(unknown, other);
                    continue;
                }
            };
            if bytes == 0 || bytes > u32::MAX as u64 || offset.checked_add(bytes).is_none() {
                return Err(e(
                    file,
                    *line,
                    format!(
                    "size {bytes} at offset {offset}: expected 1..=4294967295 bytes within 2^64"
                ),
                ));
            }
            let t_ns = ticks
                .checked_mul(100)
                .ok_or_else(|| e(file, *line, format!("timestamp {ticks} overflows ns")))?;
            self.service.push(resp.saturating_mul(100));
            return Ok(Some(TraceIo {
                line: *line,
                t_ns: Some(t_ns),
                op,
                offset,
                bytes,
                pid: None,
                cpu: None,
            }));
        }
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.l.unknown
    }

    fn take_service_times(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.service)
    }
}

/// The ASCII traces of MQSim (`ARRIVAL_NS DEVICE LBA SECTORS TYPE`, integer ns)
/// and DiskSim (`ARRIVAL_MS DEVICE BLOCK BLOCKS FLAGS`, ms with a fraction):
/// 512-byte sectors; type / flags bit 0 set is a read, clear a write (DiskSim's
/// `DISKSIM_READ`). The device number is not used.
pub struct Ascii<R> {
    l: Lines<R>,
    ms: bool,
}

impl<R: BufRead + Send> Ascii<R> {
    /// Read from `input`; `ms`: DiskSim's millisecond arrival times, else MQSim's ns.
    pub fn new(file: String, input: R, ms: bool) -> Ascii<R> {
        Ascii {
            l: Lines::new(file, input),
            ms,
        }
    }
}

/// A non-negative decimal ms value → ns.
fn parse_ms(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let int: u64 = int.parse().ok()?;
    let mut f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..6 {
        f *= 10;
    }
    int.checked_mul(1_000_000)?.checked_add(f)
}

impl<R: BufRead + Send> TraceReader for Ascii<R> {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        let shape = if self.ms {
            "expected DiskSim's 'ARRIVAL_MS DEVICE BLOCK BLOCKS FLAGS'"
        } else {
            "expected MQSim's 'ARRIVAL_NS DEVICE LBA SECTORS TYPE'"
        };
        loop {
            let ms = self.ms;
            if !self.l.advance()? {
                return Ok(None);
            }
            let Lines {
                file,
                line,
                buf,
                unknown: _,
                ..
            } = &mut self.l;
            let text = line_str(buf, file, *line)?;
            let (f, nf) = super::ws_fields::<5>(text);
            if nf == 0 {
                continue;
            }
            if nf != 5 {
                return Err(e(file, *line, format!("{nf} fields: {shape}")));
            }
            let t = if ms {
                parse_ms(f[0])
            } else {
                f[0].parse().ok()
            }
            .ok_or_else(|| e(file, *line, format!("bad arrival time '{}': {shape}", f[0])))?;
            let num = |i: usize, what: &str| {
                super::dec(f[i])
                    .ok_or_else(|| e(file, *line, format!("bad {what} '{}': {shape}", f[i])))
            };
            num(1, "device")?;
            let lba = num(2, "sector")?;
            let n = num(3, "size")?;
            let ty = num(4, "type")?;
            if n == 0 || n > (u32::MAX as u64) / 512 {
                return Err(e(
                    file,
                    *line,
                    format!("size {n} sectors: expected 1..=8388607"),
                ));
            }
            let offset = lba
                .checked_mul(512)
                .filter(|o| o.checked_add(n * 512).is_some())
                .ok_or_else(|| e(file, *line, format!("sector {lba} is beyond 2^64 bytes")))?;
            return Ok(Some(TraceIo {
                line: *line,
                t_ns: Some(t),
                op: if ty & 1 == 1 {
                    TraceOp::Read
                } else {
                    TraceOp::Write
                },
                offset,
                bytes: n * 512,
                pid: None,
                cpu: None,
            }));
        }
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.l.unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(r: &mut dyn TraceReader) -> Result<Vec<TraceIo>, TraceError> {
        let mut v = Vec::new();
        while let Some(io) = r.next_io()? {
            v.push(io);
        }
        Ok(v)
    }

    fn cur(s: &str) -> std::io::Cursor<Vec<u8>> {
        std::io::Cursor::new(s.as_bytes().to_vec())
    }

    #[test]
    fn blkparse_queue_events_and_service_times() {
        let text = "\
  8,16   3        1     0.000000000  4162  Q  WS 223490 + 8 [fio]
  8,16   3        2     0.000001000  4162  G  WS 223490 + 8 [fio]
  8,16   3        3     0.000002500  4162  D  WS 223490 + 8 [fio]
  8,16   1        4     0.000102500     0  C  WS 223490 + 8 [0]
  8,16   0        5     0.000200000  4170  Q   R 16 + 256 [dd]
  8,16   0        0     0.000200100     0  m   N bfq4170S dispatched
  8,16   0        6     0.000300000  4170  Q FWS 0 + 0 [jbd2]
  8,16   0        7     0.000400000  4170  Z   R 16 + 256 [dd]

CPU0 (sdb):
 Reads Queued:           1,      128KiB\t Writes Queued:           1,        4KiB
";
        let mut r = Blkparse::new("b.txt".into(), cur(text));
        let v = all(&mut r).unwrap();
        let got: Vec<_> = v
            .iter()
            .map(|i| (i.line, i.t_ns, i.op, i.offset, i.bytes, i.pid, i.cpu))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    1,
                    Some(0),
                    TraceOp::Write,
                    223490 * 512,
                    4096,
                    Some(4162),
                    Some(3)
                ),
                (
                    5,
                    Some(200_000),
                    TraceOp::Read,
                    8192,
                    131072,
                    Some(4170),
                    Some(0)
                ),
                (7, Some(300_000), TraceOp::Sync, 0, 0, Some(4170), Some(0)),
            ]
        );
        assert_eq!(r.take_service_times(), vec![100_000]);
        assert_eq!(r.unknown().get("Z"), Some(&1));
        let mut r = Blkparse::new("b.txt".into(), cur("  8,16 3 1 0.x 1 Q R 0 + 8 [a]\n"));
        let e = all(&mut r).unwrap_err();
        assert!(
            e.to_string().starts_with("b.txt:1: bad timestamp '0.x'"),
            "{e}"
        );
    }

    #[test]
    fn msr_lines() {
        let text = "128166372003061629,wdev,0,Read,9231036416,4096,2183\n128166372016382155,wdev,0,Write,1,512,100\n128166372016382156,wdev,0,Flush,0,0,1\n";
        let mut r = Msr::new("m.csv".into(), cur(text));
        let v = all(&mut r).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].t_ns, Some(12_816_637_200_306_162_900));
        assert_eq!(
            (v[0].op, v[0].offset, v[0].bytes),
            (TraceOp::Read, 9231036416, 4096)
        );
        assert_eq!(r.take_service_times(), vec![218_300, 10_000]);
        assert_eq!(r.unknown().get("flush"), Some(&1));
        let mut r = Msr::new("m.csv".into(), cur("1,h,0,Read,0,4096\n"));
        assert_eq!(all(&mut r).unwrap_err().line, 1);
    }

    #[test]
    fn ascii_lines() {
        let mut r = Ascii::new(
            "q".into(),
            cur("938513000 4 264719034 16 0\n938828000 3 5 8 1\n"),
            false,
        );
        let v = all(&mut r).unwrap();
        assert_eq!(
            (v[0].t_ns, v[0].op, v[0].offset, v[0].bytes),
            (Some(938_513_000), TraceOp::Write, 264719034 * 512, 8192)
        );
        assert_eq!(v[1].op, TraceOp::Read);
        let mut r = Ascii::new("d".into(), cur("12.5 0 100 8 1\n"), true);
        assert_eq!(all(&mut r).unwrap()[0].t_ns, Some(12_500_000));
        let mut r = Ascii::new("d".into(), cur("12.5 0 100 8\n"), true);
        assert!(all(&mut r)
            .unwrap_err()
            .to_string()
            .starts_with("d:1: 4 fields"));
    }
}
