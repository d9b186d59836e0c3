//! Scheduler conformance trace replay (`iosched sched-replay`).
//!
//! A conformance trace (JSON Lines, see docs/trace-format.md)
//! is a header naming a scheduler and its tunables, then a stream of `insert`,
//! `dispatch` and `complete` ops with nanosecond timestamps. Replaying it drives one
//! [`Elevator`] through exactly those calls in the *replay environment*: one request
//! queue with one hardware queue, `nr_requests` 256, queue depth 128, software queues
//! for CPUs 0–7, every dispatch on CPU 0. Each `dispatch` op produces one output line,
//! `{"t":T,"id":ID}` or `{"t":T,"id":null}`.
//!
//! The replayer is split in two so that `kernel-trace compare` can reuse it:
//! [`parse_line`] turns one line into a [`TraceOp`] (or the [`Header`]), and
//! [`Replayer`] executes ops against the scheduler. [`replay_str`] combines both and
//! buffers the output, so that a trace that fails half-way produces an error and no
//! output at all.

use blk::cgroup::CgroupTable;
use blk::elevator::{self, Elevator, ElvCtx, QueueParams};
use blk::merge::{MergeLimits, MergeState};
use blk::request::{Bio, BioArena, Request, RqArena, RqId};
use blk::types::{Dir, IoClass, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;

/// An error in a trace, located at a line (1-based) of a named file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// File name as given by the caller (for the message only).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for ReplayError {}

/// The header line: which scheduler, configured how, on what queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Scheduler name (`mq-deadline`, `none`, ...).
    pub sched: String,
    /// Tunables as sysfs attribute name and the value as it would be written.
    pub tunables: Vec<(String, String)>,
    /// Seed-patch variant, if any.
    pub variant: Option<String>,
    /// The kernel's HZ (default 1000).
    pub hz: u32,
    /// Rotational flag of the device (default false).
    pub rotational: bool,
    /// Scheduler tags (default 256).
    pub nr_requests: u32,
    /// Driver tags (default 128).
    pub queue_depth: u32,
    /// `io.bfq.weight` of cgroups, by path (`"cgroup_weights": {"/a": 200}`;
    /// others have the default 100). Naming a cgroup here creates it.
    pub cgroup_weights: Vec<(String, u32)>,
    /// `"follows_kernel": true`: the trace was converted from a kernel recording
    /// (`kernel-trace compare --emit-conformance`). Its dispatch ops name the request
    /// the kernel issued (`"kernel": ID`); the replay prints our choice and then
    /// continues from the kernel's, and the completion of a request our insert merge
    /// absorbed (the kernel did not merge it) is skipped, as `compare` does.
    pub follows_kernel: bool,
}

impl Header {
    /// A header for `sched` with every setting at its default.
    pub fn new(sched: &str) -> Header {
        let p = QueueParams::default();
        Header {
            sched: sched.to_string(),
            tunables: Vec::new(),
            variant: None,
            hz: p.hz,
            rotational: p.rotational,
            nr_requests: p.nr_requests,
            queue_depth: p.queue_depth,
            cgroup_weights: Vec::new(),
            follows_kernel: false,
        }
    }

    /// The limits on the sizes a header gives, checked by [`Replayer::new`] whatever
    /// made the header (a trace's first line, a converted kernel recording): they
    /// size the tag pools allocated up front.
    pub fn check_limits(&self) -> Result<(), String> {
        // As queue_requests_store accepts it (see `blk::mq::MAX_SCHED_RQ`).
        if self.nr_requests == 0 || self.nr_requests > blk::mq::MAX_SCHED_RQ {
            return Err(format!(
                "field 'nr_requests' must be 1 to {} (MAX_SCHED_RQ, the most scheduler tags the kernel allows), got {}",
                blk::mq::MAX_SCHED_RQ, self.nr_requests
            ));
        }
        if self.queue_depth == 0 || self.queue_depth > blk::mq::BLK_MQ_MAX_DEPTH {
            return Err(format!(
                "field 'queue_depth' must be 1 to {} (BLK_MQ_MAX_DEPTH, the deepest tag set a driver can have), got {}",
                blk::mq::BLK_MQ_MAX_DEPTH, self.queue_depth
            ));
        }
        if self.hz == 0 {
            return Err("field 'hz' must be positive".into());
        }
        Ok(())
    }

    /// The queue parameters this header describes.
    pub fn queue_params(&self) -> QueueParams {
        QueueParams {
            nr_requests: self.nr_requests,
            queue_depth: self.queue_depth,
            hz: self.hz,
            rotational: self.rotational,
            ..QueueParams::default()
        }
    }

    /// The header as one JSON line (no newline), omitting defaults.
    pub fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("sched".into(), Value::from(self.sched.clone()));
        let mut t = Map::new();
        for (k, v) in &self.tunables {
            // Integers are written as numbers, which is what hand-written traces use.
            let val = v
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::from(v.clone()));
            t.insert(k.clone(), val);
        }
        m.insert("tunables".into(), Value::Object(t));
        if let Some(v) = &self.variant {
            m.insert("variant".into(), Value::from(v.clone()));
        }
        let d = QueueParams::default();
        if self.hz != d.hz {
            m.insert("hz".into(), Value::from(self.hz));
        }
        if self.rotational {
            m.insert("rotational".into(), Value::from(true));
        }
        if self.nr_requests != d.nr_requests {
            m.insert("nr_requests".into(), Value::from(self.nr_requests));
        }
        if self.queue_depth != d.queue_depth {
            m.insert("queue_depth".into(), Value::from(self.queue_depth));
        }
        if !self.cgroup_weights.is_empty() {
            let w: Map<String, Value> = self
                .cgroup_weights
                .iter()
                .map(|(p, w)| (p.clone(), Value::from(*w)))
                .collect();
            m.insert("cgroup_weights".into(), Value::Object(w));
        }
        if self.follows_kernel {
            m.insert("follows_kernel".into(), Value::from(true));
        }
        Value::Object(m).to_string()
    }
}

/// An `insert` op: one request, as `prepare_request` + `insert_requests` see it.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertOp {
    /// The trace's name for the request.
    pub id: u64,
    /// First sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Direction.
    pub dir: Dir,
    /// I/O priority class.
    pub class: IoClass,
    /// I/O priority level (0–7, default 4).
    pub level: u8,
    /// Inserted at the head (`BLK_MQ_INSERT_AT_HEAD`).
    pub at_head: bool,
    /// Submitting task (default 1).
    pub pid: u32,
    /// Submitting CPU (default 0).
    pub cpu: u32,
    /// Cgroup path (default `/`).
    pub cgroup: String,
    /// Flags (`sync`, `fua`, `preflush`, `meta`).
    pub flags: ReqFlags,
    /// When the request was allocated (`start_time_ns`, the kernel's `block_getrq`),
    /// ns on the ops' clock; `None` means at the insert's `t`. Kyber's total latency
    /// is measured from it.
    pub alloc_t: Option<u64>,
}

impl InsertOp {
    /// The op as the JSON object of a trace line (with `t`, without the newline).
    pub fn to_json(&self, t: u64, jiffies: Option<u64>) -> String {
        let mut m = Map::new();
        m.insert("t".into(), Value::from(t));
        if let Some(j) = jiffies {
            m.insert("jiffies".into(), Value::from(j));
        }
        m.insert("op".into(), Value::from("insert"));
        m.insert("id".into(), Value::from(self.id));
        m.insert("sector".into(), Value::from(self.sector));
        m.insert("sectors".into(), Value::from(self.sectors));
        m.insert("dir".into(), Value::from(self.dir.name()));
        m.insert("class".into(), Value::from(self.class.name()));
        if self.level != 4 {
            m.insert("level".into(), Value::from(self.level));
        }
        m.insert("at_head".into(), Value::from(self.at_head));
        if self.pid != 1 {
            m.insert("pid".into(), Value::from(self.pid));
        }
        if self.cpu != 0 {
            m.insert("cpu".into(), Value::from(self.cpu));
        }
        if self.cgroup != "/" {
            m.insert("cgroup".into(), Value::from(self.cgroup.clone()));
        }
        if let Some(a) = self.alloc_t {
            m.insert("alloc_t".into(), Value::from(a));
        }
        let names: Vec<&str> = self
            .flags
            .names()
            .into_iter()
            .filter(|n| TRACE_FLAGS.iter().any(|(tn, _)| tn == n))
            .collect();
        if !names.is_empty() {
            m.insert("flags".into(), Value::from(names));
        }
        Value::Object(m).to_string()
    }
}

/// The flags a conformance trace may name.
const TRACE_FLAGS: [(&str, ReqFlags); 4] = [
    ("sync", ReqFlags::SYNC),
    ("fua", ReqFlags::FUA),
    ("preflush", ReqFlags::PREFLUSH),
    ("meta", ReqFlags::META),
];

/// What an op does.
#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    /// Insert one request.
    Insert(InsertOp),
    /// One `dispatch_request` call.
    Dispatch,
    /// The device finished request `id`; `latency_ns` overrides "t minus dispatch t".
    Complete {
        /// The trace's request id.
        id: u64,
        /// Device latency, if given.
        latency_ns: Option<u64>,
    },
    /// Process `pid` exited: the scheduler's `exit_icq` (an iosched extension of the
    /// format: `{"t":T,"op":"exit","pid":P}`).
    Exit {
        /// The process.
        pid: u32,
    },
}

/// One op line of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceOp {
    /// Time in ns.
    pub t: u64,
    /// The kernel's jiffies at this op, if the trace gives them.
    pub jiffies: Option<u64>,
    /// The op.
    pub kind: OpKind,
}

/// A parsed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Nothing (blank line).
    Blank,
    /// The header.
    Header(Header),
    /// An op.
    Op(TraceOp),
    /// A dispatch op naming the request the kernel issued (`"kernel": ID`).
    Follow(TraceOp, u64),
}

fn get_u64(m: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("field '{key}' must be a non-negative integer, got {v}")),
    }
}

fn get_u32(m: &Map<String, Value>, key: &str) -> Result<Option<u32>, String> {
    match get_u64(m, key)? {
        None => Ok(None),
        Some(v) => u32::try_from(v)
            .map(Some)
            .map_err(|_| format!("field '{key}' out of range: {v}")),
    }
}

fn get_bool(m: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| format!("field '{key}' must be true or false, got {v}")),
    }
}

fn get_str<'a>(m: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| format!("field '{key}' must be a string, got {v}")),
    }
}

fn require<T>(v: Option<T>, key: &str, op: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{op} op is missing field '{key}'"))
}

fn check_fields(m: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(format!(
                "unknown field '{k}' in {what} (allowed: {})",
                allowed.join(", ")
            ));
        }
    }
    Ok(())
}

fn parse_header(m: &Map<String, Value>) -> Result<Header, String> {
    check_fields(
        m,
        &[
            "sched",
            "tunables",
            "variant",
            "hz",
            "rotational",
            "nr_requests",
            "queue_depth",
            "cgroup_weights",
            "follows_kernel",
        ],
        "header",
    )?;
    let sched = get_str(m, "sched")?.ok_or("header is missing field 'sched'")?;
    let mut h = Header::new(sched);
    if let Some(t) = m.get("tunables") {
        let obj = t
            .as_object()
            .ok_or_else(|| format!("field 'tunables' must be an object, got {t}"))?;
        for (k, v) in obj {
            let s = match v {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                Value::Bool(b) => (*b as u8).to_string(),
                other => return Err(format!("tunable '{k}' has an invalid value {other}")),
            };
            h.tunables.push((k.clone(), s));
        }
    }
    h.variant = get_str(m, "variant")?.map(str::to_string);
    if let Some(hz) = get_u32(m, "hz")? {
        if hz == 0 {
            return Err("field 'hz' must be positive".into());
        }
        h.hz = hz;
    }
    if let Some(r) = get_bool(m, "rotational")? {
        h.rotational = r;
    }
    h.follows_kernel = get_bool(m, "follows_kernel")?.unwrap_or(false);
    if let Some(n) = get_u32(m, "nr_requests")? {
        h.nr_requests = n;
    }
    if let Some(n) = get_u32(m, "queue_depth")? {
        h.queue_depth = n;
    }
    h.check_limits()?;
    if let Some(w) = m.get("cgroup_weights") {
        let obj = w
            .as_object()
            .ok_or_else(|| format!("field 'cgroup_weights' must be an object, got {w}"))?;
        for (path, v) in obj {
            let weight = v
                .as_u64()
                .filter(|w| (1..=1000).contains(w))
                .ok_or_else(|| {
                    format!("cgroup weight of '{path}' must be an integer 1..1000, got {v}")
                })?;
            if path.trim_matches('/').is_empty() {
                return Err("the root cgroup '/' has no weight".into());
            }
            h.cgroup_weights.push((path.clone(), weight as u32));
        }
    }
    Ok(h)
}

fn parse_op(m: &Map<String, Value>) -> Result<TraceOp, String> {
    let op = get_str(m, "op")?.ok_or("missing field 'op'")?;
    let t = require(get_u64(m, "t")?, "t", op)?;
    // Room for the schedulers' own arithmetic on times (deadlines, slices, idle
    // timers) without overflow.
    const MAX_T: u64 = 1 << 62;
    if t > MAX_T {
        return Err(format!(
            "field 't' must be at most {MAX_T} ns (2^62, about 146 years), got {t}"
        ));
    }
    let jiffies = get_u64(m, "jiffies")?;
    let kind = match op {
        "insert" => {
            check_fields(
                m,
                &[
                    "t", "jiffies", "op", "id", "sector", "sectors", "dir", "class", "at_head",
                    "level", "pid", "cpu", "cgroup", "flags", "alloc_t",
                ],
                "insert op",
            )?;
            let alloc_t = get_u64(m, "alloc_t")?;
            if let Some(a) = alloc_t.filter(|&a| a > t) {
                return Err(format!(
                    "field 'alloc_t' ({a}) is after the insert's 't' ({t}): a request is allocated before it is inserted"
                ));
            }
            let dir = match require(get_str(m, "dir")?, "dir", op)? {
                "read" => Dir::Read,
                "write" => Dir::Write,
                d => return Err(format!("unknown dir '{d}' (read, write)")),
            };
            let class = match get_str(m, "class")? {
                None => IoClass::None,
                Some(c) => IoClass::from_name(c)
                    .ok_or_else(|| format!("unknown class '{c}' (rt, be, idle, none)"))?,
            };
            let level = get_u64(m, "level")?.unwrap_or(4);
            if level > 7 {
                return Err(format!("field 'level' must be 0-7, got {level}"));
            }
            let mut flags = ReqFlags::NONE;
            if let Some(f) = m.get("flags") {
                let arr = f
                    .as_array()
                    .ok_or_else(|| format!("field 'flags' must be a list, got {f}"))?;
                for x in arr {
                    let name = x.as_str().unwrap_or("");
                    let (_, bit) = TRACE_FLAGS
                        .iter()
                        .find(|(n, _)| *n == name)
                        .ok_or_else(|| format!("unknown flag {x} (sync, fua, preflush, meta)"))?;
                    flags = flags.with(*bit);
                }
            }
            let sector = require(get_u64(m, "sector")?, "sector", op)?;
            let sectors = require(get_u32(m, "sectors")?, "sectors", op)?;
            // The end of the extent must be a sector of a possible device (a
            // 64-bit byte offset), so that no arithmetic on it overflows.
            const MAX_SECTOR: u64 = u64::MAX >> 9;
            if sector.saturating_add(sectors as u64) > MAX_SECTOR {
                return Err(format!(
                    "field 'sector' + 'sectors' must end at most at sector {MAX_SECTOR} (2^55, a 64-bit byte offset), got {sector} + {sectors}"
                ));
            }
            OpKind::Insert(InsertOp {
                id: require(get_u64(m, "id")?, "id", op)?,
                sector,
                sectors,
                dir,
                class,
                level: level as u8,
                at_head: get_bool(m, "at_head")?.unwrap_or(false),
                pid: get_u32(m, "pid")?.unwrap_or(1),
                cpu: get_u32(m, "cpu")?.unwrap_or(0),
                cgroup: get_str(m, "cgroup")?.unwrap_or("/").to_string(),
                flags,
                alloc_t,
            })
        }
        "dispatch" => {
            check_fields(m, &["t", "jiffies", "op"], "dispatch op")?;
            OpKind::Dispatch
        }
        "complete" => {
            check_fields(
                m,
                &["t", "jiffies", "op", "id", "latency_ns"],
                "complete op",
            )?;
            OpKind::Complete {
                id: require(get_u64(m, "id")?, "id", op)?,
                latency_ns: get_u64(m, "latency_ns")?,
            }
        }
        "exit" => {
            check_fields(m, &["t", "jiffies", "op", "pid"], "exit op")?;
            OpKind::Exit {
                pid: require(get_u32(m, "pid")?, "pid", op)?,
            }
        }
        other => {
            return Err(format!(
                "unknown op '{other}' (insert, dispatch, complete, exit)"
            ))
        }
    };
    Ok(TraceOp { t, jiffies, kind })
}

/// Parse one line. `first` says whether this is the header line.
pub fn parse_line(text: &str, first: bool) -> Result<Line, String> {
    if text.trim().is_empty() {
        return Ok(Line::Blank);
    }
    let v: Value = serde_json::from_str(text).map_err(|e| format!("malformed JSON: {e}"))?;
    let m = v
        .as_object()
        .ok_or_else(|| "expected a JSON object".to_string())?;
    if first {
        if m.contains_key("op") {
            return Err("the first line must be the header ({\"sched\":...})".into());
        }
        parse_header(m).map(Line::Header)
    } else {
        if m.contains_key("sched") {
            return Err("a second header line (only line 1 is a header)".into());
        }
        if m.get("op").and_then(Value::as_str) == Some("dispatch") && m.contains_key("kernel") {
            let mut rest = m.clone();
            let k = rest
                .remove("kernel")
                .and_then(|v| v.as_u64())
                .ok_or_else(|| {
                    "field 'kernel' must be the id the kernel issued (a non-negative integer)"
                        .to_string()
                })?;
            return parse_op(&rest).map(|op| Line::Follow(op, k));
        }
        parse_op(m).map(Line::Op)
    }
}

impl TraceOp {
    /// The op as one trace line (no newline).
    pub fn to_json(&self) -> String {
        match &self.kind {
            OpKind::Insert(i) => i.to_json(self.t, self.jiffies),
            OpKind::Dispatch => {
                let mut m = Map::new();
                m.insert("t".into(), Value::from(self.t));
                if let Some(j) = self.jiffies {
                    m.insert("jiffies".into(), Value::from(j));
                }
                m.insert("op".into(), Value::from("dispatch"));
                Value::Object(m).to_string()
            }
            OpKind::Complete { id, latency_ns } => {
                let mut m = Map::new();
                m.insert("t".into(), Value::from(self.t));
                if let Some(j) = self.jiffies {
                    m.insert("jiffies".into(), Value::from(j));
                }
                m.insert("op".into(), Value::from("complete"));
                m.insert("id".into(), Value::from(*id));
                if let Some(l) = latency_ns {
                    m.insert("latency_ns".into(), Value::from(*l));
                }
                Value::Object(m).to_string()
            }
            OpKind::Exit { pid } => {
                let mut m = Map::new();
                m.insert("t".into(), Value::from(self.t));
                if let Some(j) = self.jiffies {
                    m.insert("jiffies".into(), Value::from(j));
                }
                m.insert("op".into(), Value::from("exit"));
                m.insert("pid".into(), Value::from(*pid));
                Value::Object(m).to_string()
            }
        }
    }
}

/// Where a trace id's request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Inserted, owned by the scheduler.
    Queued(RqId),
    /// Dispatched at `t`, owned by the "device".
    Dispatched(RqId, u64),
}

/// Executes trace ops against one scheduler in the replay environment.
pub struct Replayer {
    elevator: Box<dyn Elevator>,
    hz: u32,
    nr_requests: u32,
    nr_cpus: u32,
    rqs: RqArena,
    bios: BioArena,
    merge: MergeState,
    /// Trace id → where its request is.
    ids: HashMap<u64, Slot>,
    /// Trace ids absorbed by insert merges, with the id they merged into; a later
    /// `complete` of one of them is an error (the kernel freed that request).
    /// Shared between copies ([`Replayer::try_clone`]) until one changes it: it
    /// grows with the trace, the rest of the state with the requests live.
    merged_away: std::sync::Arc<HashMap<u64, u64>>,
    /// RqId index → trace id.
    rev: Vec<Option<u64>>,
    /// Free scheduler tags (lowest first when taken).
    free_tags: Vec<u32>,
    cgroups: CgroupTable,
    last_t: u64,
    last_jiffies: Option<(u64, u64)>,
    /// When set (`kernel-trace compare`), the times at which the recorded kernel's
    /// scheduler timer actually ran: a due timer fires at the first of them not
    /// before its due time (less one jiffy of rounding) instead of exactly at expiry.
    timer_runs: Option<std::sync::Arc<[u64]>>,
    /// When set (`kernel-trace compare`), the recorded kernel's token-pool depths
    /// over time (`(t, domain, depth)`, sorted by `t`, each domain's first entry at
    /// 0): before each op, each domain's pool is set to its latest depth at or
    /// before the op ([`Elevator::force_pool_depth`]).
    pool_depths: Option<std::sync::Arc<[(u64, String, u32)]>>,
}

impl fmt::Debug for Replayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replayer")
            .field("sched", &self.elevator.name())
            .field("live", &self.rqs.live())
            .finish()
    }
}

impl Replayer {
    /// Build the scheduler a header names and apply its tunables and variant, through
    /// the same validation as a sysfs write.
    pub fn new(h: &Header) -> Result<Replayer, String> {
        h.check_limits()?;
        let params = h.queue_params();
        let mut elevator = elevator::create(&h.sched, &params).map_err(|e| e.to_string())?;
        elevator.depth_updated(params.nr_requests);
        if let Some(v) = &h.variant {
            elevator
                .set_tunable("variant", v)
                .map_err(|e| e.to_string())?;
        }
        for (k, v) in &h.tunables {
            elevator.set_tunable(k, v).map_err(|e| e.to_string())?;
        }
        let mut cgroups = CgroupTable::new();
        for (path, w) in &h.cgroup_weights {
            let id = cgroups.intern(path);
            cgroups
                .set_weight(id, *w as u64)
                .map_err(|e| e.to_string())?;
        }
        elevator.set_cgroups(&cgroups);
        Ok(Replayer {
            elevator,
            hz: params.hz,
            nr_requests: params.nr_requests,
            nr_cpus: params.nr_cpus,
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            ids: HashMap::new(),
            merged_away: Default::default(),
            rev: Vec::new(),
            free_tags: (0..params.nr_requests).rev().collect(),
            cgroups,
            last_t: 0,
            last_jiffies: None,
            timer_runs: None,
            pool_depths: None,
        })
    }

    /// Set the queue's merge limits (`max_sectors`, `max_segments`, `nomerges`); the
    /// replay environment uses [`MergeLimits::default`]. `kernel-trace compare` sets
    /// the recorded device's, which decide whether the scheduler's insert merges
    /// happen as they did in the kernel.
    pub fn set_merge_limits(&mut self, limits: MergeLimits) {
        self.merge.limits = limits;
    }

    /// The scheduler being driven.
    pub fn elevator(&self) -> &dyn Elevator {
        self.elevator.as_ref()
    }

    /// Trace ids of the requests the scheduler holds (inserted, not dispatched).
    pub fn queued_ids(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .ids
            .iter()
            .filter(|(_, s)| matches!(s, Slot::Queued(_)))
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether trace id `id` was absorbed by an insert merge (and not reused since).
    pub fn is_merged_away(&self, id: u64) -> bool {
        self.merged_away.contains_key(&id)
    }

    /// Whether trace id `id` names a request the scheduler holds.
    pub fn is_queued(&self, id: u64) -> bool {
        matches!(self.ids.get(&id), Some(Slot::Queued(_)))
    }

    /// The jiffies at `t`: the op's explicit value, else extrapolated from the last
    /// explicit value (so timers between kernel-recorded ops stay on the kernel's
    /// clock), else `floor(t * hz / 1e9)`.
    /// An explicit jiffies value may wrap (the kernel starts them just below the wrap,
    /// `INITIAL_JIFFIES`), but not move by 2^62 or more from the previous one: the
    /// kernel's `time_after` compares only differences below 2^63, so after such a
    /// jump every request would look inserted in the future and mq-deadline would
    /// dispatch nothing (the kernel's own arithmetic, on a clock no kernel has).
    fn check_jiffies(&self, explicit: Option<u64>) -> Result<(), String> {
        if let (Some(j), Some((_, j0))) = (explicit, self.last_jiffies) {
            let d = j.wrapping_sub(j0) as i64;
            if d.unsigned_abs() >= 1 << 62 {
                return Err(format!(
                    "jiffies {j} after {j0}: a jump of 2^62 or more (the kernel's time_after compares differences below 2^63 only)"
                ));
            }
        }
        Ok(())
    }

    fn jiffies_at(&mut self, t: u64, explicit: Option<u64>) -> Jiffies {
        if let Some(j) = explicit {
            self.last_jiffies = Some((t, j));
            return Jiffies(j);
        }
        match self.last_jiffies {
            Some((t0, j0)) => {
                let d = Jiffies::from_ns(Ns(t - t0), self.hz).0;
                Jiffies(j0.wrapping_add(d))
            }
            None => Jiffies::from_ns(Ns(t), self.hz),
        }
    }

    fn with_ctx<R>(
        &mut self,
        t: u64,
        j: Jiffies,
        f: impl FnOnce(&mut dyn Elevator, &mut ElvCtx) -> R,
    ) -> R {
        let mut ctx = ElvCtx {
            now: Ns(t),
            jiffies: j,
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        f(self.elevator.as_mut(), &mut ctx)
    }

    /// Fire timers at the recorded kernel's timer runs (sorted ns on the ops' clock)
    /// instead of exactly at expiry: the kernel's timer wheel runs a timer at a tick
    /// at or after its expiry, in softirq, which can be jiffies late. A timer with no
    /// recorded run at or after its due time never fires.
    pub fn set_timer_runs(&mut self, mut runs: Vec<u64>) {
        runs.sort_unstable();
        self.timer_runs = Some(runs.into());
    }

    /// Hold the scheduler's token pools at the recorded kernel's depths
    /// (`(t, domain, depth)`; each domain's depth at `t` is its latest entry at or
    /// before `t`, and a domain's depth before its first entry is left alone).
    pub fn set_pool_depths(&mut self, mut depths: Vec<(u64, String, u32)>) {
        depths.sort_by_key(|d| d.0);
        self.pool_depths = Some(depths.into());
    }

    fn hold_pool_depths(&mut self, t: u64) {
        let Some(script) = &self.pool_depths else {
            return;
        };
        let upto = script.partition_point(|d| d.0 <= t);
        let mut seen: Vec<&str> = Vec::new();
        for (_, domain, depth) in script[..upto].iter().rev() {
            if !seen.contains(&domain.as_str()) {
                seen.push(domain);
                self.elevator.force_pool_depth(domain, *depth);
            }
        }
    }

    /// A copy of the replay in its current state (`None` if the scheduler cannot be
    /// copied): [`crate::kernel_trace::compare`] asks a copy for each decision and
    /// keeps the original to follow the kernel's choice, instead of replaying the
    /// whole prefix after every disagreement.
    pub fn try_clone(&self) -> Option<Replayer> {
        Some(Replayer {
            elevator: self.elevator.clone_box()?,
            hz: self.hz,
            nr_requests: self.nr_requests,
            nr_cpus: self.nr_cpus,
            rqs: self.rqs.clone(),
            bios: self.bios.clone(),
            merge: self.merge.clone(),
            ids: self.ids.clone(),
            merged_away: self.merged_away.clone(),
            rev: self.rev.clone(),
            free_tags: self.free_tags.clone(),
            cgroups: self.cgroups.clone(),
            last_t: self.last_t,
            last_jiffies: self.last_jiffies,
            timer_runs: self.timer_runs.clone(),
            pool_depths: self.pool_depths.clone(),
        })
    }

    /// When a timer due at `due` fires.
    fn fire_time(&self, due: u64) -> Option<u64> {
        let Some(runs) = &self.timer_runs else {
            return Some(due);
        };
        let slack = 1_000_000_000 / self.hz.max(1) as u64;
        let from = due.saturating_sub(slack);
        let i = runs.partition_point(|&r| r < from);
        runs.get(i).map(|&r| r.max(due))
    }

    /// Fire every timer due at or before `t`, in due order.
    fn fire_timers(&mut self, t: u64) {
        while let Some(due) = self.elevator.next_timer() {
            let Some(fire) = self.fire_time(due.0) else {
                break;
            };
            if fire > t {
                break;
            }
            // A timer due before the previous op (it was armed for the past) fires now.
            let at = fire.max(self.last_t);
            let j = self.jiffies_at(at, None);
            self.with_ctx(at, j, |e, ctx| e.timer_fired(ctx));
        }
    }

    /// Execute one op. Returns `Some(dispatched)` for a dispatch op (the trace id of
    /// the request dispatched, or `None`), `None` for the others.
    pub fn apply(&mut self, op: &TraceOp) -> Result<Option<Option<u64>>, String> {
        if op.t < self.last_t {
            return Err(format!(
                "time goes backwards: t={} after t={}",
                op.t, self.last_t
            ));
        }
        self.check_jiffies(op.jiffies)?;
        self.fire_timers(op.t);
        self.hold_pool_depths(op.t);
        self.last_t = op.t;
        let j = self.jiffies_at(op.t, op.jiffies);
        match &op.kind {
            OpKind::Insert(ins) => self.insert(op.t, j, ins).map(|_| None),
            OpKind::Dispatch => Ok(Some(self.dispatch(op.t, j))),
            OpKind::Complete { id, latency_ns } => {
                self.complete(op.t, j, *id, *latency_ns).map(|_| None)
            }
            OpKind::Exit { pid } => {
                let pid = *pid;
                // The replay's dispatches come from the trace; a run the scheduler
                // asks for has nothing to add.
                self.with_ctx(op.t, j, |e, ctx| e.exit_icq(ctx, pid));
                Ok(None)
            }
        }
    }

    /// Execute a dispatch op as the kernel decided it: request `id` leaves the
    /// scheduler through [`Elevator::force_dispatch`]. Returns `Ok(false)` when the
    /// request is not queued here or the scheduler cannot be forced.
    pub fn apply_forced(&mut self, op: &TraceOp, id: u64) -> Result<bool, String> {
        if op.t < self.last_t {
            return Err(format!(
                "time goes backwards: t={} after t={}",
                op.t, self.last_t
            ));
        }
        self.check_jiffies(op.jiffies)?;
        self.fire_timers(op.t);
        self.last_t = op.t;
        Ok(self.force_dispatch(op.t, op.jiffies, id))
    }

    fn insert(&mut self, t: u64, j: Jiffies, ins: &InsertOp) -> Result<(), String> {
        if self.ids.contains_key(&ins.id) {
            return Err(format!(
                "duplicate id {}: that request is still live",
                ins.id
            ));
        }
        if ins.cpu >= self.nr_cpus {
            return Err(format!(
                "cpu {} out of range (the replay environment has CPUs 0-{})",
                ins.cpu,
                self.nr_cpus - 1
            ));
        }
        let Some(tag) = self.free_tags.pop() else {
            return Err(format!(
                "insert of id {} exceeds nr_requests ({} live requests)",
                ins.id, self.nr_requests
            ));
        };
        let known = self.cgroups.len();
        let cg = self.cgroups.intern(&ins.cgroup);
        if self.cgroups.len() != known {
            self.elevator.set_cgroups(&self.cgroups);
        }
        let op = match ins.dir {
            Dir::Read => Op::Read,
            Dir::Write => Op::Write,
        };
        let bio = Bio {
            op,
            flags: ins.flags,
            sector: Sector(ins.sector),
            nr_sectors: ins.sectors,
            ioprio: IoPrio {
                class: ins.class,
                level: ins.level,
            },
            pid: ins.pid,
            cpu: ins.cpu,
            cgroup: cg,
            owner: ins.id,
        };
        let bio_id = self.bios.alloc(bio);
        let mut rq = Request::from_bio(&bio, bio_id, Ns(ins.alloc_t.unwrap_or(t)));
        rq.sched_tag = Some(tag);
        rq.uses_sched = true;
        let rid = self.rqs.alloc(rq);
        if self.rev.len() <= rid.index() {
            self.rev.resize(rid.index() + 1, None);
        }
        self.rev[rid.index()] = Some(ins.id);
        self.ids.insert(ins.id, Slot::Queued(rid));
        if self.merged_away.contains_key(&ins.id) {
            std::sync::Arc::make_mut(&mut self.merged_away).remove(&ins.id);
        }
        let at_head = ins.at_head;
        self.with_ctx(t, j, |e, ctx| {
            e.prepare_request(ctx, rid);
            e.insert_requests(ctx, &[rid], at_head);
        });
        self.free_merged(t, j);
        Ok(())
    }

    /// Free the requests the scheduler's insert merge absorbed, as the kernel frees
    /// the merge free list (running `finish_request`).
    fn free_merged(&mut self, t: u64, j: Jiffies) {
        // Every merge of one operation ends in the last request that absorbed
        // another (`attempt_merge` sets `last_merge` to it; an insert-merge chain
        // collapses into its final request): the likely owner, checked below.
        let absorber = self.merge.last_merge;
        while let Some(rid) = self.merge.freed.pop() {
            self.with_ctx(t, j, |e, ctx| {
                ctx.merge.forget(rid);
                e.finish_request(ctx, rid);
            });
            let rq = self.rqs.free(rid);
            if let Some(tag) = rq.sched_tag {
                self.free_tags.push(tag);
            }
            // The absorbed request's bios now belong to the absorbing one.
            if let Some(tid) = self.rev[rid.index()].take() {
                self.ids.remove(&tid);
                // Which request absorbed it: the one whose bio chain holds its bio.
                let into = absorber
                    .filter(|&a| self.holds_bio_of(a, tid))
                    .and_then(|a| self.rev.get(a.index()).copied().flatten())
                    .or_else(|| self.owner_of_bio_of(tid))
                    .unwrap_or(tid);
                std::sync::Arc::make_mut(&mut self.merged_away).insert(tid, into);
            }
        }
    }

    /// Whether live request `rid`'s bio chain holds the bio of trace id `tid` (a
    /// walk of one request's bios, bounded by the merge limits).
    fn holds_bio_of(&self, rid: RqId, tid: u64) -> bool {
        if !self.rqs.is_live(rid) {
            return false;
        }
        let mut b = self.rqs.get(rid).bio_head;
        while let Some(bid) = b {
            if self.bios.get(bid).owner == tid {
                return true;
            }
            b = self.bios.next(bid);
        }
        false
    }

    /// The live request holding `tid`'s bio, by a scan of every live request: the
    /// fallback when the absorber is not the last merge's.
    fn owner_of_bio_of(&self, tid: u64) -> Option<u64> {
        for (id, slot) in &self.ids {
            let rid = match slot {
                Slot::Queued(r) | Slot::Dispatched(r, _) => *r,
            };
            let mut b = self.rqs.get(rid).bio_head;
            while let Some(bid) = b {
                if self.bios.get(bid).owner == tid {
                    return Some(*id);
                }
                b = self.bios.next(bid);
            }
        }
        None
    }

    fn mark_dispatched(&mut self, t: u64, rid: RqId) -> u64 {
        self.merge.forget(rid);
        let r = self.rqs.get_mut(rid);
        r.started = true;
        r.issue_ns = Ns(t);
        let tid = self.rev[rid.index()].expect("dispatched request has a trace id");
        self.ids.insert(tid, Slot::Dispatched(rid, t));
        tid
    }

    fn dispatch(&mut self, t: u64, j: Jiffies) -> Option<u64> {
        let got = self.with_ctx(t, j, |e, ctx| {
            if e.has_work(ctx) {
                e.dispatch_request(ctx)
            } else {
                None
            }
        });
        got.map(|rid| self.mark_dispatched(t, rid))
    }

    /// Dispatch the request named `id` as if the scheduler had chosen it, through the
    /// scheduler's `force_dispatch` hook. Returns false when the scheduler does not
    /// support forcing or `id` is not queued.
    pub fn force_dispatch(&mut self, t: u64, jiffies: Option<u64>, id: u64) -> bool {
        let Some(Slot::Queued(rid)) = self.ids.get(&id).copied() else {
            return false;
        };
        let j = self.jiffies_at(t, jiffies);
        let ok = self.with_ctx(t, j, |e, ctx| e.force_dispatch(ctx, rid));
        if ok {
            self.mark_dispatched(t, rid);
        }
        ok
    }

    fn complete(
        &mut self,
        t: u64,
        j: Jiffies,
        id: u64,
        latency_ns: Option<u64>,
    ) -> Result<(), String> {
        let (rid, dt) = match self.ids.get(&id) {
            Some(Slot::Dispatched(rid, dt)) => (*rid, *dt),
            Some(Slot::Queued(_)) => {
                return Err(format!("complete of id {id}, which was not dispatched"))
            }
            None => {
                return Err(match self.merged_away.get(&id) {
                    Some(into) => format!(
                        "complete of id {id}, which was merged into id {into} at insert and no longer exists"
                    ),
                    None => format!("complete of unknown id {id}"),
                })
            }
        };
        // The scheduler measures latency from issue_ns; make "now - issue" the given
        // latency (default: since the dispatch op).
        let lat = latency_ns.unwrap_or(t - dt);
        self.rqs.get_mut(rid).issue_ns = Ns(t.saturating_sub(lat));
        self.with_ctx(t, j, |e, ctx| {
            e.completed_request(ctx, rid, Ns(t));
            ctx.merge.forget(rid);
            e.finish_request(ctx, rid);
        });
        let rq = self.rqs.free(rid);
        let mut b = rq.bio_head;
        while let Some(bid) = b {
            b = self.bios.next(bid);
            self.bios.free(bid);
        }
        if let Some(tag) = rq.sched_tag {
            self.free_tags.push(tag);
        }
        self.rev[rid.index()] = None;
        self.ids.remove(&id);
        Ok(())
    }
}

/// One output line of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatched {
    /// Time of the dispatch op.
    pub t: u64,
    /// Trace id dispatched, or `None`.
    pub id: Option<u64>,
}

impl Dispatched {
    /// The output line (no newline): `{"t":T,"id":ID}` or `{"t":T,"id":null}`.
    pub fn to_json(&self) -> String {
        match self.id {
            Some(id) => format!("{{\"t\":{},\"id\":{}}}", self.t, id),
            None => format!("{{\"t\":{},\"id\":null}}", self.t),
        }
    }
}

/// Replay a whole trace held in `text`; `file` names it in errors. Returns every
/// dispatch result in order, or the first error (and no results).
pub fn replay_str(text: &str, file: &str) -> Result<Vec<Dispatched>, ReplayError> {
    let err = |line: usize, message: String| ReplayError {
        file: file.to_string(),
        line,
        message,
    };
    let mut replayer: Option<Replayer> = None;
    let mut follows_kernel = false;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        match parse_line(raw, replayer.is_none()).map_err(|m| err(n, m))? {
            Line::Blank => {}
            Line::Header(h) => {
                follows_kernel = h.follows_kernel;
                replayer = Some(Replayer::new(&h).map_err(|m| err(n, m))?);
            }
            Line::Op(op) => {
                let r = replayer.as_mut().expect("header parsed first");
                if let OpKind::Complete { id, .. } = op.kind {
                    if follows_kernel && r.is_merged_away(id) {
                        continue;
                    }
                }
                if let Some(id) = r.apply(&op).map_err(|m| err(n, m))? {
                    out.push(Dispatched { t: op.t, id });
                }
            }
            Line::Follow(op, k) => {
                let r = replayer.as_mut().expect("header parsed first");
                if !follows_kernel {
                    return Err(err(
                        n,
                        "field 'kernel' needs \"follows_kernel\": true in the header".into(),
                    ));
                }
                // Ask a copy, then take the kernel's choice: one decision at a time,
                // each in the state the kernel's earlier ones led to.
                let mut probe = r
                    .try_clone()
                    .ok_or_else(|| err(n, "this scheduler cannot be copied".into()))?;
                let ours = probe.apply(&op).map_err(|m| err(n, m))?.flatten();
                out.push(Dispatched { t: op.t, id: ours });
                if r.is_queued(k) && !r.apply_forced(&op, k).map_err(|m| err(n, m))? {
                    return Err(err(
                        n,
                        format!(
                            "scheduler '{}' cannot be forced to request {k}",
                            r.elevator().name()
                        ),
                    ));
                }
            }
        }
    }
    if replayer.is_none() {
        return Err(err(1, "empty trace: no header line".into()));
    }
    Ok(out)
}

/// Replay and render the output text (one line per dispatch op, newline-terminated).
pub fn replay_to_string(text: &str, file: &str) -> Result<String, ReplayError> {
    let mut s = String::new();
    for d in replay_str(text, file)? {
        s.push_str(&d.to_json());
        s.push('\n');
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip() {
        let mut h = Header::new("none");
        h.hz = 250;
        h.tunables.push(("fifo_batch".into(), "1".into()));
        let line = h.to_json();
        assert_eq!(
            line,
            r#"{"sched":"none","tunables":{"fifo_batch":1},"hz":250}"#
        );
        assert_eq!(parse_line(&line, true).unwrap(), Line::Header(h));
    }

    #[test]
    fn cgroup_weights_reach_bfq() {
        let mut h = Header::new("bfq");
        // No weight raising: queues keep their first budget (10922 sectors).
        h.tunables.push(("low_latency".into(), "0".into()));
        h.cgroup_weights.push(("/b".into(), 300));
        let line = h.to_json();
        assert!(line.contains(r#""cgroup_weights":{"/b":300}"#), "{line}");
        assert_eq!(parse_line(&line, true).unwrap(), Line::Header(h));
        // pid 1 in /a (weight 100) inserts first, pid 2 in /b (300) second: with
        // equal start times the heavier group has the smaller finish time and is
        // served first, in slots of 10 requests (the first budget, 10922 sectors).
        let mut trace = format!("{line}\n");
        for i in 0..12u64 {
            for (pid, cg) in [(1, "/a"), (2, "/b")] {
                let id = pid * 100 + i;
                trace.push_str(&format!(
                    r#"{{"t":0,"op":"insert","id":{id},"sector":{},"sectors":1024,"dir":"read","class":"be","pid":{pid},"cgroup":"{cg}"}}"#,
                    id * 4096
                ));
                trace.push('\n');
            }
        }
        for k in 0..20u64 {
            trace.push_str(&format!("{{\"t\":{},\"op\":\"dispatch\"}}\n", k * 1000));
        }
        let out = replay_str(&trace, "t").unwrap();
        let pids: Vec<u64> = out.iter().map(|d| d.id.unwrap() / 100).collect();
        assert_eq!(pids, [[2; 10], [1; 10]].concat());
        assert!(replay_str(&trace.replacen(r#""/b":300"#, r#""/b":0"#, 1), "t").is_err());
    }

    #[test]
    fn op_roundtrip() {
        let op = TraceOp {
            t: 5,
            jiffies: Some(77),
            kind: OpKind::Insert(InsertOp {
                id: 3,
                sector: 8,
                sectors: 8,
                dir: Dir::Write,
                class: IoClass::Rt,
                level: 2,
                at_head: false,
                pid: 9,
                cpu: 1,
                cgroup: "/a".into(),
                flags: ReqFlags::SYNC,
                alloc_t: Some(4),
            }),
        };
        assert_eq!(parse_line(&op.to_json(), false).unwrap(), Line::Op(op));
    }

    #[test]
    fn allocation_after_insert_is_refused() {
        let line =
            r#"{"t":5,"op":"insert","id":1,"sector":0,"sectors":8,"dir":"read","alloc_t":6}"#;
        let e = parse_line(line, false).unwrap_err();
        assert!(
            e.contains("'alloc_t' (6) is after the insert's 't' (5)"),
            "{e}"
        );
    }
}
