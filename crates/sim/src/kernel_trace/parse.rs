//! Parser for the text of `/sys/kernel/tracing/trace` with the block and timer
//! events `kernel-trace record` enables, plus the `# iosched:` header lines it writes.

use blk::types::{Dir, IoClass};

/// Which block event a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// `block_rq_insert`: the request entered the elevator.
    Insert,
    /// `block_rq_issue`: the driver got the request (`queue_rq`).
    Issue,
    /// `block_rq_complete`: the device finished it.
    Complete,
    /// `block_rq_merge`: the request was absorbed into another one.
    Merge,
    /// `block_rq_requeue`: the driver gave it back.
    Requeue,
}

/// One block event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEvent {
    /// 1-based line in the trace file.
    pub line: usize,
    /// Timestamp in ns (tracefs prints µs by default).
    pub ts_ns: u64,
    /// CPU the event was logged on.
    pub cpu: u32,
    /// Task pid.
    pub pid: u32,
    /// The event.
    pub kind: BlockKind,
    /// Device major and minor.
    pub dev: (u32, u32),
    /// The RWBS string (`R`, `WS`, `FWFS`, ...).
    pub rwbs: String,
    /// Start sector.
    pub sector: u64,
    /// Length in sectors.
    pub nr_sectors: u32,
    /// I/O priority class (`none` on kernels that do not print it).
    pub class: IoClass,
    /// I/O priority level.
    pub level: u8,
}

impl BlockEvent {
    /// Data direction from RWBS, or `None` for a data-less flush (which never
    /// reaches the elevator).
    pub fn dir(&self) -> Option<Dir> {
        let mut c = self.rwbs.chars().peekable();
        // A leading F before the op letter is REQ_PREFLUSH.
        if self.rwbs.len() > 1 && self.rwbs.starts_with('F') {
            c.next();
        }
        match c.next() {
            Some('R') => Some(Dir::Read),
            Some('W') | Some('D') => Some(Dir::Write),
            _ => None,
        }
    }

    /// Flag letters after the op letter (`F` FUA, `A` ahead, `S` sync, `M` meta),
    /// and whether the preflush prefix was present.
    pub fn flags(&self) -> (bool, &str) {
        let preflush = self.rwbs.len() > 1 && self.rwbs.starts_with('F');
        let rest = if preflush {
            &self.rwbs[1..]
        } else {
            &self.rwbs[..]
        };
        (preflush, rest.get(1..).unwrap_or(""))
    }

    /// One past the last sector.
    pub fn end(&self) -> u64 {
        self.sector.saturating_add(self.nr_sectors as u64)
    }
}

/// A sample of the kernel's jiffies at a trace timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JiffySample {
    /// Timestamp in ns.
    pub ts_ns: u64,
    /// jiffies at that time (as the event saw it).
    pub jiffies: u64,
}

/// A delayed work armed one jiffy ahead (`timer_start` of `delayed_work_timer_fn`
/// with `[timeout=1]`): the mark blk-mq leaves when a dispatch run found work but the
/// scheduler returned nothing (`__blk_mq_do_dispatch_sched` →
/// `blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY)`), among other one-jiffy
/// delayed works; [`super::convert`] keeps the device's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDelay {
    /// Line number in the trace file.
    pub line: usize,
    /// Timestamp in ns.
    pub ts_ns: u64,
    /// Task that armed it.
    pub pid: u32,
    /// The timer's address as printed (one per work item).
    pub timer: String,
}

/// One of Kyber's own tracepoints (recorded with `--sched kyber`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KyberEventKind {
    /// `kyber_adjust`: the domain's token pool was resized to `depth`.
    Adjust {
        /// New depth.
        depth: u32,
    },
    /// `kyber_latency`: a percentile the timer produced (`type` is `total` or `I/O`;
    /// `bucket` is the tracepoint's numerator minus one).
    Latency {
        /// `total` or `I/O`.
        ty: String,
        /// 90 or 99.
        percentile: u32,
        /// Histogram bucket (0-7).
        bucket: u32,
        /// Samples the percentile was computed from.
        samples: u32,
    },
    /// `kyber_throttled`: a dispatch found the domain out of tokens.
    Throttled,
}

/// A Kyber tracepoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KyberEvent {
    /// 1-based line in the trace file.
    pub line: usize,
    /// Timestamp in ns.
    pub ts_ns: u64,
    /// Device major and minor.
    pub dev: (u32, u32),
    /// Domain name (`READ`, `WRITE`, `DISCARD`, `OTHER`).
    pub domain: String,
    /// The event.
    pub kind: KyberEventKind,
}

fn parse_kyber(event: &str, payload: &str) -> Option<(KyberEventKind, (u32, u32), String)> {
    let f: Vec<&str> = payload.split_whitespace().collect();
    let dev = parse_dev(f.first()?)?;
    let domain = f.get(1)?.to_string();
    let kind = match event {
        "kyber_adjust" => KyberEventKind::Adjust {
            depth: f.get(2)?.parse().ok()?,
        },
        "kyber_latency" => {
            // "7,0 READ I/O p90 8/8 samples=512"
            let (num, _) = f.get(4)?.split_once('/')?;
            KyberEventKind::Latency {
                ty: f.get(2)?.to_string(),
                percentile: f.get(3)?.strip_prefix('p')?.parse().ok()?,
                bucket: num.parse::<u32>().ok()?.checked_sub(1)?,
                samples: f.get(5)?.strip_prefix("samples=")?.parse().ok()?,
            }
        }
        "kyber_throttled" => KyberEventKind::Throttled,
        _ => return None,
    };
    Some((kind, dev, domain))
}

/// What `kernel-trace record` wrote about the recording (`# iosched: key=value`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceMeta {
    /// The kernel's HZ.
    pub hz: Option<u32>,
    /// Device major,minor traced.
    pub dev: Option<(u32, u32)>,
    /// Scheduler in effect.
    pub sched: Option<String>,
    /// Tunables in effect (sysfs names, values as read back).
    pub tunables: Vec<(String, String)>,
    /// `queue/nr_requests` in effect.
    pub nr_requests: Option<u32>,
    /// `queue/max_sectors_kb`.
    pub max_sectors_kb: Option<u32>,
    /// `queue/max_segments`.
    pub max_segments: Option<u32>,
    /// `queue/nomerges`.
    pub nomerges: Option<u8>,
    /// `queue/rotational` (BFQ's idling and merging rules read it).
    pub rotational: Option<bool>,
    /// `cgroup_root=N`: the hierarchy id of the block I/O controller (v1 `blkio`'s
    /// line of `/proc/cgroups`, 0 for the unified hierarchy), the `dst_root` of the
    /// [`CgroupAttach`] events that move tasks between block cgroups.
    pub cgroup_root: Option<u32>,
    /// Block cgroup of each task (tid) of the workload outside the root cgroup.
    pub task_cgroups: std::collections::BTreeMap<u32, String>,
    /// Each cgroup's default BFQ weight (`io.bfq.weight`'s `default W`, or
    /// v1 `blkio.bfq.weight`), by path (`# iosched: cgroup_weight=PATH W`).
    pub cgroup_weights: std::collections::BTreeMap<String, u32>,
    /// Per-device overrides of those weights (`io.bfq.weight`'s `MAJ:MIN W` lines,
    /// v1 `blkio.bfq.weight_device`), by path and device
    /// (`# iosched: cgroup_weight_device=PATH MAJ:MIN W`).
    pub cgroup_device_weights: std::collections::BTreeMap<(String, (u32, u32)), u32>,
    /// Other `key=value` lines (fio command, kernel release...).
    pub other: Vec<(String, String)>,
}

/// A parsed trace.
#[derive(Debug, Clone, Default)]
pub struct KernelTrace {
    /// Recording metadata.
    pub meta: TraceMeta,
    /// Block events in file order (tracefs prints them in time order).
    pub events: Vec<BlockEvent>,
    /// jiffies samples from the timer events.
    pub samples: Vec<JiffySample>,
    /// Kyber's tracepoints, when recorded.
    pub kyber: Vec<KyberEvent>,
    /// Timestamps (ns) at which `kyber_timer_fn` ran (`timer_expire_entry`), with the
    /// jiffies it ran at.
    pub kyber_timer_runs: Vec<JiffySample>,
    /// One-jiffy delayed works armed (candidate marks of refused dispatch runs).
    pub run_delays: Vec<RunDelay>,
    /// `block_getrq` events (a request allocated for a bio: `start_time_ns` is
    /// stamped then), in file order; `kind` is [`BlockKind::Insert`] and class/level
    /// are unknown (the event does not print them).
    pub getrqs: Vec<BlockEvent>,
    /// Lines that look like events but could not be parsed (line, reason).
    pub skipped: Vec<(usize, String)>,
    /// Events tracefs reported lost (`CPU:N [LOST M EVENTS]` lines).
    pub lost_events: u64,
    /// Process exits (`sched_process_exit`), in file order.
    pub exits: Vec<ProcessExit>,
    /// Tasks moved into a cgroup (`cgroup_attach_task`), in file order.
    pub cgroup_attaches: Vec<CgroupAttach>,
    /// BFQ's own log messages (`bfq_log_bfqq`/`bfq_log`, blktrace notes recorded
    /// with `kernel-trace record --bfq-log`), in file order: not decisions, shown
    /// beside them.
    pub bfq_log: Vec<BfqLogLine>,
    /// `# iosched:` header lines that could not be read (line, reason): a
    /// recording with any is refused by [`super::load_checked`].
    pub header_errors: Vec<(usize, String)>,
}

/// One BFQ log message: `TASK-PID [CPU] FLAGS SECS.USECS:   MAJ,MIN   CG  m   N TEXT`
/// as tracefs's `blk` tracer prints a blktrace note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfqLogLine {
    /// 1-based line in the trace file.
    pub line: usize,
    /// Timestamp in ns.
    pub ts_ns: u64,
    /// The CPU that logged it.
    pub cpu: u32,
    /// The message, from BFQ's `bfq<PID><class>` prefix on (`bfq15038S allocated`).
    pub text: String,
}

/// The message of a blktrace note (`  7,0   1,0  m   N bfq...`: device, cgroup
/// id, action `m`, `N`), if `rest` (what follows the timestamp) is one.
fn blk_note(rest: &str) -> Option<&str> {
    let mut it = rest.split_whitespace();
    parse_dev(it.next()?)?;
    let mut f = it.next()?;
    if parse_dev(f).is_some() {
        f = it.next()?;
    }
    if f != "m" || it.next()? != "N" {
        return None;
    }
    let at = rest.find(" N ")? + 3;
    Some(rest[at..].trim())
}

/// A task moved into a cgroup (`cgroup_attach_task`: `dst_root=R dst_id=I
/// dst_level=L dst_path=PATH pid=P comm=C`): fio's jobs join their `--cgroup=`
/// this way, each on its own, before their first I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupAttach {
    /// 1-based line in the trace file.
    pub line: usize,
    /// The hierarchy (`dst_root`).
    pub root: u32,
    /// The cgroup's path in that hierarchy (`dst_path`).
    pub path: String,
    /// The task moved.
    pub pid: u32,
}

/// A process exit (`sched_process_exit`): BFQ releases the process's queues
/// (`bfq_exit_icq`) when its I/O context goes, right after this event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessExit {
    /// 1-based line in the trace file.
    pub line: usize,
    /// Timestamp in ns.
    pub ts_ns: u64,
    /// The exiting task.
    pub pid: u32,
}

/// Header keys `kernel-trace record` writes that replay does not need, kept in
/// [`TraceMeta::other`]; any other unknown key is a header error.
const INFORMATIONAL_KEYS: [&str; 9] = [
    "format",
    "bfq_log",
    "kept_instance",
    "kernel",
    "device",
    "size",
    "fio",
    "stat_before",
    "stat_after",
];

/// `MAJ:MIN` (the form sysfs and cgroup files use) or `MAJ,MIN` (tracefs).
fn parse_majmin(s: &str) -> Option<(u32, u32)> {
    parse_dev(s).or_else(|| {
        let (a, b) = s.split_once(':')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    })
}

/// Read one `# iosched: key=value` line into `meta`; `Err` names what is wrong.
fn header_line(meta: &mut TraceMeta, h: &str) -> Result<(), String> {
    let (k, v) = h
        .trim()
        .split_once('=')
        .ok_or_else(|| format!("header line without '=': '{}'", h.trim()))?;
    let (k, v) = (k.trim(), v.trim());
    let bad = || format!("bad value '{v}' for header key '{k}'");
    match k {
        "format" if v != "kernel-trace 1" => {
            return Err(format!(
                "unknown recording format '{v}' (expected 'kernel-trace 1')"
            ))
        }
        "hz" => meta.hz = Some(v.parse().ok().filter(|&h| h > 0).ok_or_else(bad)?),
        "dev" => meta.dev = Some(parse_dev(v).ok_or_else(bad)?),
        "sched" => {
            if v.is_empty() {
                return Err(bad());
            }
            meta.sched = Some(v.to_string())
        }
        "nr_requests" => meta.nr_requests = Some(v.parse().map_err(|_| bad())?),
        "max_sectors_kb" => meta.max_sectors_kb = Some(v.parse().map_err(|_| bad())?),
        "max_segments" => meta.max_segments = Some(v.parse().map_err(|_| bad())?),
        "nomerges" => meta.nomerges = Some(v.parse().map_err(|_| bad())?),
        "cgroup_root" => meta.cgroup_root = Some(v.parse().map_err(|_| bad())?),
        "rotational" => match v {
            "0" => meta.rotational = Some(false),
            "1" => meta.rotational = Some(true),
            _ => return Err(bad()),
        },
        "task_cgroup" => match v.split_once(' ') {
            Some((tid, path)) if path.starts_with('/') => {
                let tid = tid
                    .parse()
                    .map_err(|_| format!("bad task_cgroup line '{v}'"))?;
                meta.task_cgroups.insert(tid, path.to_string());
            }
            _ => return Err(format!("bad task_cgroup line '{v}'")),
        },
        "cgroup_weight" => {
            let (path, w) = v
                .rsplit_once(' ')
                .filter(|(p, _)| p.starts_with('/'))
                .ok_or_else(|| format!("bad cgroup_weight line '{v}' (expected 'PATH W')"))?;
            let w = w
                .parse()
                .ok()
                .filter(|w| (1..=1000).contains(w))
                .ok_or_else(|| format!("bad cgroup_weight line '{v}' (weight 1..=1000)"))?;
            meta.cgroup_weights.insert(path.to_string(), w);
        }
        "cgroup_weight_device" => {
            let f: Vec<&str> = v.rsplitn(3, ' ').collect();
            let err = || format!("bad cgroup_weight_device line '{v}' (expected 'PATH MAJ:MIN W')");
            if f.len() != 3 || !f[2].starts_with('/') {
                return Err(err());
            }
            let dev = parse_majmin(f[1]).ok_or_else(err)?;
            let w = f[0]
                .parse()
                .ok()
                .filter(|w| (1..=1000).contains(w))
                .ok_or_else(err)?;
            meta.cgroup_device_weights
                .insert((f[2].to_string(), dev), w);
        }
        _ => {
            if let Some(t) = k.strip_prefix("tunable.") {
                if t.is_empty() {
                    return Err(bad());
                }
                meta.tunables.push((t.to_string(), v.to_string()));
            } else if INFORMATIONAL_KEYS.contains(&k) || k.starts_with("events.") {
                meta.other.push((k.to_string(), v.to_string()));
            } else {
                return Err(format!("unknown header key '{k}'"));
            }
        }
    }
    Ok(())
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(',')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `secs.fraction` → ns, for any number of fraction digits up to 9.
fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    let sec: u64 = sec.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
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

fn field<'a>(rest: &'a str, key: &str) -> Option<&'a str> {
    let pos = rest.find(key)?;
    let v = &rest[pos + key.len()..];
    let end = v.find([' ', ']']).unwrap_or(v.len());
    Some(&v[..end])
}

/// Parse the block event payload: `7,0 R 4096 () 1976 + 8 be,0,0 [fio]` (insert,
/// issue, merge) or `7,0 R () 1976 + 8 be,0,0 [0]` (complete, requeue).
/// Device, RWBS, sector, sector count, ioprio class and level of a block event.
type BlockFields = ((u32, u32), String, u64, u32, IoClass, u8);

/// The payload of `block_getrq`: `MAJ,MIN RWBS SECTOR + COUNT [COMM]`.
fn parse_getrq(rest: &str) -> Result<((u32, u32), String, u64, u32), String> {
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.len() < 5 || f[3] != "+" {
        return Err("block_getrq lacks 'DEV RWBS SECTOR + COUNT'".into());
    }
    let dev = parse_dev(f[0]).ok_or_else(|| format!("bad device '{}'", f[0]))?;
    let sector = f[2].parse().map_err(|_| format!("bad sector '{}'", f[2]))?;
    let nr = f[4]
        .parse()
        .map_err(|_| format!("bad sector count '{}'", f[4]))?;
    check_extent(sector, nr)?;
    Ok((dev, f[1].to_string(), sector, nr))
}

fn parse_block(rest: &str) -> Result<BlockFields, String> {
    let open = rest.find('(').ok_or("no '(' in block event")?;
    let close = rest[open..].find(')').ok_or("no ')' in block event")? + open;
    let head: Vec<&str> = rest[..open].split_whitespace().collect();
    if head.len() < 2 {
        return Err("block event lacks device and RWBS".into());
    }
    let dev = parse_dev(head[0]).ok_or_else(|| format!("bad device '{}'", head[0]))?;
    let rwbs = head[1].to_string();
    let tail: Vec<&str> = rest[close + 1..].split_whitespace().collect();
    if tail.len() < 3 || tail[1] != "+" {
        return Err("block event lacks 'SECTOR + COUNT'".into());
    }
    let sector = tail[0]
        .parse()
        .map_err(|_| format!("bad sector '{}'", tail[0]))?;
    let nr = tail[2]
        .parse()
        .map_err(|_| format!("bad sector count '{}'", tail[2]))?;
    let (mut class, mut level) = (IoClass::None, 4);
    if let Some(p) = tail.get(3).filter(|p| !p.starts_with('[')) {
        let parts: Vec<&str> = p.split(',').collect();
        if parts.len() == 3 {
            class = IoClass::from_name(parts[0]).ok_or_else(|| format!("bad ioprio '{p}'"))?;
            level = parts[2].parse().map_err(|_| format!("bad ioprio '{p}'"))?;
        }
    }
    check_extent(sector, nr)?;
    Ok((dev, rwbs, sector, nr, class, level))
}

/// Sector numbers fit a 64-bit byte offset (`sector_t` shifted by 9): larger ones no
/// kernel can print, and their ends would overflow.
fn check_extent(sector: u64, nr: u32) -> Result<(), String> {
    const MAX_SECTOR: u64 = u64::MAX >> 9;
    if sector.saturating_add(nr as u64) > MAX_SECTOR {
        return Err(format!(
            "sector {sector} + {nr} is beyond the largest block device (2^55 sectors)"
        ));
    }
    Ok(())
}

/// Parse the whole text of a recorded trace.
pub fn parse(text: &str) -> KernelTrace {
    let mut kt = KernelTrace::default();
    for (i, raw) in text.lines().enumerate() {
        parse_line(&mut kt, i + 1, raw);
    }
    kt
}

/// Parse line `n` (1-based) of a recording into `kt`: what [`parse`] does for
/// each line, for readers that stream the file instead of holding it.
pub fn parse_line(kt: &mut KernelTrace, n: usize, raw: &str) {
    if let Some(h) = raw.strip_prefix("# iosched:") {
        if let Err(e) = header_line(&mut kt.meta, h) {
            kt.header_errors.push((n, e));
        }
        return;
    }
    if raw.starts_with('#') || raw.trim().is_empty() {
        return;
    }
    // tracefs's own note that a CPU's buffer overflowed: a line the recorder
    // writes, counted (the recording warned about it when it was made).
    if let Some(lost) = lost_events(raw) {
        kt.lost_events = kt.lost_events.saturating_add(lost);
        return;
    }
    // "TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: PAYLOAD"; the task name may hold
    // spaces and dashes, so anchor on the "[NNN]" CPU field. Every line that is
    // not in this shape is one the recorder cannot have written: reported.
    const SHAPE: &str = "expected 'TASK-PID [CPU] FLAGS SECS.USECS: EVENT: PAYLOAD'";
    let Some((task, cpu, after)) = split_cpu(raw) else {
        kt.skipped.push((n, format!("no [CPU] field: {SHAPE}")));
        return;
    };
    let mut it = after.splitn(2, ": ");
    let pre = it.next().unwrap_or("");
    let Some(rest) = it.next() else {
        kt.skipped
            .push((n, format!("no ': ' after the timestamp: {SHAPE}")));
        return;
    };
    let Some(ts) = pre.split_whitespace().last().and_then(parse_ts) else {
        kt.skipped.push((n, format!("bad timestamp: {SHAPE}")));
        return;
    };
    if let Some(text) = blk_note(rest) {
        kt.bfq_log.push(BfqLogLine {
            line: n,
            ts_ns: ts,
            cpu,
            text: text.to_string(),
        });
        return;
    }
    let Some((event, payload)) = rest.split_once(": ") else {
        kt.skipped
            .push((n, format!("no ': ' after the event name: {SHAPE}")));
        return;
    };
    let pid = task
        .rsplit_once('-')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0);
    let kind = match event {
        "block_rq_insert" => BlockKind::Insert,
        "block_rq_issue" => BlockKind::Issue,
        "block_rq_complete" => BlockKind::Complete,
        "block_rq_merge" => BlockKind::Merge,
        "block_rq_requeue" => BlockKind::Requeue,
        "block_getrq" => {
            match parse_getrq(payload) {
                Ok((dev, rwbs, sector, nr_sectors)) => kt.getrqs.push(BlockEvent {
                    line: n,
                    ts_ns: ts,
                    cpu,
                    pid,
                    kind: BlockKind::Insert,
                    dev,
                    rwbs,
                    sector,
                    nr_sectors,
                    class: IoClass::None,
                    level: 4,
                }),
                Err(e) => kt.skipped.push((n, e)),
            }
            return;
        }
        "timer_start" => {
            // expires=J [timeout=N] → jiffies now = J − N.
            let e = field(payload, "expires=").and_then(|v| v.parse::<u64>().ok());
            let t = field(payload, "[timeout=").and_then(|v| v.parse::<i64>().ok());
            match (e, t) {
                (Some(e), Some(t)) => kt.samples.push(JiffySample {
                    ts_ns: ts,
                    jiffies: e.wrapping_sub(t as u64),
                }),
                _ => {
                    kt.skipped.push((
                        n,
                        "timer_start lacks 'expires=J' or '[timeout=N]'".to_string(),
                    ));
                    return;
                }
            }
            if t == Some(1) && field(payload, "function=") == Some("delayed_work_timer_fn") {
                kt.run_delays.push(RunDelay {
                    line: n,
                    ts_ns: ts,
                    pid,
                    timer: field(payload, "timer=").unwrap_or("").to_string(),
                });
            }
            return;
        }
        "cgroup_attach_task" => {
            let root = field(payload, "dst_root=").and_then(|v| v.parse().ok());
            let path = field(payload, "dst_path=");
            let pid = field(payload, " pid=").and_then(|v| v.parse().ok());
            match (root, path, pid) {
                (Some(root), Some(path), Some(pid)) if path.starts_with('/') => {
                    kt.cgroup_attaches.push(CgroupAttach {
                        line: n,
                        root,
                        path: path.to_string(),
                        pid,
                    })
                }
                _ => kt.skipped.push((
                    n,
                    "cgroup_attach_task lacks 'dst_root=R', 'dst_path=/PATH' or 'pid=P'".into(),
                )),
            }
            return;
        }
        "sched_process_exit" => {
            match field(payload, "pid=").and_then(|v| v.parse().ok()) {
                Some(pid) => kt.exits.push(ProcessExit {
                    line: n,
                    ts_ns: ts,
                    pid,
                }),
                None => kt
                    .skipped
                    .push((n, "sched_process_exit without pid".into())),
            }
            return;
        }
        "timer_expire_entry" => {
            let Some(j) = field(payload, "now=").and_then(|v| v.parse().ok()) else {
                kt.skipped
                    .push((n, "timer_expire_entry lacks 'now=J'".to_string()));
                return;
            };
            kt.samples.push(JiffySample {
                ts_ns: ts,
                jiffies: j,
            });
            if field(payload, "function=") == Some("kyber_timer_fn") {
                kt.kyber_timer_runs.push(JiffySample {
                    ts_ns: ts,
                    jiffies: j,
                });
            }
            return;
        }
        "kyber_adjust" | "kyber_latency" | "kyber_throttled" => {
            match parse_kyber(event, payload) {
                Some((kind, dev, domain)) => kt.kyber.push(KyberEvent {
                    line: n,
                    ts_ns: ts,
                    dev,
                    domain,
                    kind,
                }),
                None => kt.skipped.push((n, format!("bad {event} payload"))),
            }
            return;
        }
        _ => {
            kt.skipped.push((
                n,
                format!("event '{event}' is not one kernel-trace record enables"),
            ));
            return;
        }
    };
    match parse_block(payload) {
        Ok((dev, rwbs, sector, nr_sectors, class, level)) => kt.events.push(BlockEvent {
            line: n,
            ts_ns: ts,
            cpu,
            pid,
            kind,
            dev,
            rwbs,
            sector,
            nr_sectors,
            class,
            level,
        }),
        Err(e) => kt.skipped.push((n, e)),
    }
}

/// `CPU:N [LOST M EVENTS]`, tracefs's mark of an overflowed per-CPU buffer.
fn lost_events(line: &str) -> Option<u64> {
    let rest = line.trim().strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    cpu.parse::<u32>().ok()?;
    rest.strip_prefix("[LOST ")?
        .strip_suffix(" EVENTS]")?
        .parse()
        .ok()
}

fn split_cpu(line: &str) -> Option<(&str, u32, &str)> {
    let b = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find('[') {
        let s = i + off;
        if let Some(len) = line[s + 1..].find(']') {
            let inner = &line[s + 1..s + 1 + len];
            if !inner.is_empty()
                && inner.bytes().all(|c| c.is_ascii_digit())
                && b.get(s + 2 + len) == Some(&b' ')
            {
                return Some((line[..s].trim(), inner.parse().ok()?, &line[s + 2 + len..]));
            }
        }
        i = s + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# iosched: hz=250
# iosched: dev=7,0
# iosched: tunable.fifo_batch=16
# iosched: rotational=1
# iosched: task_cgroup=14589 /ga
           rustc-14579   [001] .Ns..   525.005569: timer_expire_entry: timer=00000000a4330550 function=process_timeout now=4295023478 baseclk=4295023478
     rcu_preempt-15      [001] d..1.   525.006147: timer_start: timer=00000000a4330550 function=process_timeout expires=4295023479 [timeout=1] bucket_expiry=4295023480 cpu=1 idx=56 flags=
 opt 6brjx-oh4lr-14589   [000] ...1.   525.281050: block_rq_insert: 7,0 R 4096 () 1976 + 8 be,0,0 [fio]
             fio-14755   [000] .....   525.281055: block_rq_issue: 7,0 WS 4096 () 1976 + 8 rt,0,3 [fio]
     ksoftirqd/1-22      [001] ..s..   525.281279: block_rq_complete: 7,0 R () 1976 + 8 be,0,0 [0]
";

    #[test]
    fn bfq_log_notes_are_kept_apart_from_events() {
        let text = "\
             fio-15038   [000] d..1.  3229.806048:   7,0   1,0  m   N bfq15038S set_in_service_queue, cur-budget = 1024
             fio-15038   [000] d....  3229.805996:   7,0   1,0  m   N bfq [bfq_limit_depth] wr_busy 0 sync 1 depth 256
             fio-15038   [001] d..1.  3229.806049:   7,0  m   N bfq15038S select_queue: checking new queue
             fio-15038   [000] .....  3229.806056: block_rq_issue: 7,0 RS 4096 () 7904 + 8 be,0,4 [fio]
             fio-15038   [000] .....  3229.806057:   7,0   1,0  x   N not a note
";
        let kt = parse(text);
        assert_eq!(kt.events.len(), 1);
        let texts: Vec<&str> = kt.bfq_log.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "bfq15038S set_in_service_queue, cur-budget = 1024",
                "bfq [bfq_limit_depth] wr_busy 0 sync 1 depth 256",
                "bfq15038S select_queue: checking new queue",
            ]
        );
        assert_eq!((kt.bfq_log[2].line, kt.bfq_log[2].cpu), (3, 1));
        assert_eq!(kt.bfq_log[0].ts_ns, 3_229_806_048_000);
        assert_eq!(kt.skipped.len(), 1, "{:?}", kt.skipped);
    }

    #[test]
    fn parses_events_and_samples() {
        let kt = parse(SAMPLE);
        assert_eq!(kt.meta.hz, Some(250));
        assert_eq!(kt.meta.dev, Some((7, 0)));
        assert_eq!(kt.meta.tunables, vec![("fifo_batch".into(), "16".into())]);
        assert_eq!(kt.meta.rotational, Some(true));
        assert_eq!(
            kt.meta.task_cgroups.get(&14589).map(String::as_str),
            Some("/ga")
        );
        assert_eq!(kt.samples.len(), 2);
        assert_eq!(kt.samples[1].jiffies, 4295023478);
        assert_eq!(kt.samples[1].ts_ns, 525_006_147_000);
        assert_eq!(kt.events.len(), 3);
        let e = &kt.events[0];
        assert_eq!((e.pid, e.cpu, e.kind), (14589, 0, BlockKind::Insert));
        assert_eq!(
            (e.sector, e.nr_sectors, e.class, e.level),
            (1976, 8, IoClass::Be, 0)
        );
        assert_eq!(kt.events[1].class, IoClass::Rt);
        assert_eq!(kt.events[1].dir(), Some(Dir::Write));
        assert_eq!(kt.events[1].flags(), (false, "S"));
        assert_eq!(kt.events[2].kind, BlockKind::Complete);
    }

    /// `cgroup_attach_task` lines become [`CgroupAttach`]es (one without a path is
    /// reported, not guessed); `cgroup_root` names the block controller's hierarchy.
    #[test]
    fn cgroup_attach_events() {
        let kt = parse(
            "# iosched: cgroup_root=7\n\
             fio-19078   [001] d..1.  3199.646142: cgroup_attach_task: dst_root=7 dst_id=3581 dst_level=1 dst_path=/s3 pid=19078 comm=fio\n\
             fio-19080   [001] d..1.  3199.701864: cgroup_attach_task: dst_root=4 dst_id=1 dst_level=0 dst_path=/ pid=19080 comm=fio\n\
             fio-19081   [001] d..1.  3199.701865: cgroup_attach_task: dst_root=7 dst_id=1 pid=19081 comm=fio\n",
        );
        assert_eq!(kt.meta.cgroup_root, Some(7));
        assert_eq!(
            kt.cgroup_attaches,
            [
                CgroupAttach {
                    line: 2,
                    root: 7,
                    path: "/s3".into(),
                    pid: 19078
                },
                CgroupAttach {
                    line: 3,
                    root: 4,
                    path: "/".into(),
                    pid: 19080
                }
            ]
        );
        assert_eq!(kt.skipped.len(), 1);
        assert_eq!(kt.skipped[0].0, 4);
    }

    /// `record --keep-instance` marks a recording made on a scheduler instance
    /// carried over from earlier uses of the device: an informational key, kept,
    /// not a header error.
    #[test]
    fn kept_instance_is_an_informational_key() {
        let kt = parse("# iosched: sched=bfq\n# iosched: kept_instance=1\n");
        assert!(kt.header_errors.is_empty(), "{:?}", kt.header_errors);
        assert!(kt
            .meta
            .other
            .contains(&("kept_instance".to_string(), "1".to_string())));
    }

    #[test]
    fn getrq_events_are_kept_apart() {
        let kt = parse(
            "             fio-7217    [001] .....   987.002000: block_getrq: 7,0 WS 66432 + 8 [fio]\n\
             fio-7217    [001] .....   987.002001: block_getrq: 7,0 R 8 + x [fio]\n",
        );
        assert!(kt.events.is_empty());
        assert_eq!(kt.getrqs.len(), 1);
        let g = &kt.getrqs[0];
        assert_eq!((g.pid, g.cpu, g.dev), (7217, 1, (7, 0)));
        assert_eq!(
            (g.sector, g.nr_sectors, g.ts_ns),
            (66432, 8, 987_002_000_000)
        );
        assert_eq!(g.dir(), Some(Dir::Write));
        assert_eq!(kt.skipped, vec![(2, "bad sector count 'x'".to_string())]);
    }

    #[test]
    fn bad_task_cgroup_lines_are_reported() {
        let kt = parse("# iosched: task_cgroup=12 /a\n# iosched: task_cgroup=x /b\n# iosched: task_cgroup=13 b\n");
        assert_eq!(kt.meta.task_cgroups.len(), 1);
        assert_eq!(
            kt.header_errors,
            vec![
                (2, "bad task_cgroup line 'x /b'".to_string()),
                (3, "bad task_cgroup line '13 b'".to_string())
            ]
        );
    }

    #[test]
    fn unreadable_header_lines_are_reported_with_their_line() {
        let text = "# iosched: format=kernel-trace 1\n# iosched: hz=fast\n# iosched sched=bfq\n\
                    # iosched: rotational=2\n# iosched: colour=blue\n# iosched: novalue\n\
                    # iosched: format=kernel-trace 9\n# iosched: cgroup_weight=/a 0\n\
                    # iosched: cgroup_weight_device=/a 7:0\n# iosched: sched=bfq\n";
        let kt = parse(text);
        let lines: Vec<usize> = kt.header_errors.iter().map(|e| e.0).collect();
        // Line 3 lacks the colon: not a header line at all (a comment).
        assert_eq!(lines, vec![2, 4, 5, 6, 7, 8, 9]);
        assert!(
            kt.header_errors[0].1.contains("'fast'"),
            "{:?}",
            kt.header_errors
        );
        assert!(kt.header_errors[2]
            .1
            .contains("unknown header key 'colour'"));
        assert_eq!(kt.meta.sched.as_deref(), Some("bfq"));
    }

    #[test]
    fn cgroup_weights_and_process_exits() {
        let text = "# iosched: cgroup_weight=/a b 300\n\
                    # iosched: cgroup_weight_device=/a b 7:0 800\n\
                    fio-31822   [001] .....   941.987699: sched_process_exit: comm=fio pid=31822 prio=120 group_dead=true\n";
        let kt = parse(text);
        assert!(kt.header_errors.is_empty(), "{:?}", kt.header_errors);
        assert_eq!(kt.meta.cgroup_weights.get("/a b"), Some(&300));
        assert_eq!(
            kt.meta
                .cgroup_device_weights
                .get(&("/a b".to_string(), (7, 0))),
            Some(&800)
        );
        assert_eq!(
            kt.exits,
            vec![ProcessExit {
                line: 3,
                ts_ns: 941_987_699_000,
                pid: 31822
            }]
        );
    }

    #[test]
    fn malformed_lines_are_reported_with_their_line() {
        let kt = parse(
            "garbage\n\
             fio-1 [000] ..... 1.000001: block_rq_issue 7,0 R () 8 + 8 [0]\n\
             fio-1 [000] ..... 99999999999999999999.0: block_rq_issue: 7,0 R () 8 + 8 [0]\n\
             fio-1 [000] ..... 1.000002: block_rq_frob: 7,0 R () 8 + 8 [0]\n\
             fio-1 [000] ..... 1.000003: timer_start: timer=1 function=f expires=x\n\
             fio-1 [000] ..... 1.000004: block_rq_issue: 7,0 R () 18446744073709551000 + 8 [0]\n\
             CPU:1 [LOST 12 EVENTS]\n",
        );
        let lines: Vec<usize> = kt.skipped.iter().map(|s| s.0).collect();
        assert_eq!(lines, vec![1, 2, 3, 4, 5, 6], "{:?}", kt.skipped);
        assert_eq!(kt.lost_events, 12);
    }

    #[test]
    fn kyber_events() {
        let kt = parse(
            "  kworker/0:1H-80 [000] ..s1.  10.000001: kyber_latency: 7,1 READ I/O p90 8/8 samples=512\n\
             kworker/0:1H-80 [000] ..s1.  10.000002: kyber_adjust: 7,1 WRITE 32\n\
             fio-99 [001] .....  10.000003: kyber_throttled: 7,1 WRITE\n",
        );
        assert_eq!(kt.kyber.len(), 3);
        assert_eq!(
            kt.kyber[0].kind,
            KyberEventKind::Latency {
                ty: "I/O".into(),
                percentile: 90,
                bucket: 7,
                samples: 512
            }
        );
        assert_eq!(kt.kyber[1].kind, KyberEventKind::Adjust { depth: 32 });
        assert_eq!(kt.kyber[1].domain, "WRITE");
        assert_eq!(kt.kyber[2].kind, KyberEventKind::Throttled);
        assert_eq!(kt.kyber[2].dev, (7, 1));
    }

    #[test]
    fn rwbs_preflush() {
        let mut e = parse(SAMPLE).events[0].clone();
        e.rwbs = "FWFS".into();
        assert_eq!(e.dir(), Some(Dir::Write));
        assert_eq!(e.flags(), (true, "FS"));
        e.rwbs = "F".into();
        assert_eq!(e.dir(), None);
    }
}
