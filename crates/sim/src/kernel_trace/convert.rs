//! Turning recorded block events into a scheduler conformance trace.
//!
//! - `block_rq_insert` → an `insert` op with a fresh id.
//! - `block_rq_issue` → a `dispatch` op whose expected answer is the request the
//!   kernel issued, matched among the queued requests by direction, ioprio class and
//!   start sector, else end sector (a front merge moved the start), else overlap.
//!   Bio merges grow a queued request without an event; since the conversion sees the
//!   whole trace, the request's insert op is given the geometry it had at issue.
//! - `block_rq_complete` → a `complete` op for the in-flight request at that sector.
//! - `block_rq_merge` of a queued request (the follow-up merge after a bio merge) →
//!   that request's insert is dropped: it never reaches the device on its own. An
//!   insert merge (the merged request was never inserted) needs nothing.
//! - `block_rq_requeue` → a `complete` of the in-flight request; its re-insert is
//!   an at-head insert with a new id (the kernel re-inserts requeued requests at head).
//! - Issues that match no queued request (flushes and other requests that bypass the
//!   elevator, requests inserted before the recording) are skipped and counted.
//!
//! Every op carries the fitted jiffies, so the replay decides on the kernel's clock.

use super::fit::JiffiesFit;
use super::parse::{BlockEvent, BlockKind, KernelTrace};
use crate::replay::{Header, InsertOp, OpKind, TraceOp};
use blk::merge::MergeLimits;
use blk::types::{Dir, IoClass, ReqFlags};

/// A conformance trace converted from a kernel trace, with the kernel's answers.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The header (scheduler, tunables, HZ, nr_requests of the recording).
    pub header: Header,
    /// The recorded device's merge limits (not expressible in the header).
    pub merge_limits: MergeLimits,
    /// The ops.
    pub ops: Vec<TraceOp>,
    /// Per op: for a dispatch op, the id the kernel issued.
    pub expected: Vec<Option<u64>>,
    /// Per op: the line of the kernel trace it came from.
    pub source_line: Vec<usize>,
    /// Per op: the CPU its event was traced on (`None` for a process exit). Events
    /// of one CPU are in decision order; a dispatch and another CPU's events traced
    /// between its task's insert and its issue are not (see
    /// [`super::compare`]'s "issued late").
    pub cpu: Vec<Option<u32>>,
    /// What could not be converted.
    pub stats: ConvertStats,
    /// The kernel's token-pool resizes (`kyber_adjust`), as (t, domain, new depth),
    /// `t` on the ops' clock; empty for other schedulers or when not recorded.
    pub depth_changes: Vec<DepthChange>,
    /// When the kernel's `kyber_timer_fn` ran, on the ops' clock.
    pub timer_runs: Vec<u64>,
    /// Dispatch runs in which the scheduler returned nothing, each as the range of
    /// op indices it may have come before, earliest and latest (ascending by the
    /// earliest; see [`refusals`]).
    pub refusals: Vec<(usize, usize)>,
}

impl Converted {
    /// Keep the ops whose `keep` entry is true, with their per-op columns
    /// (expected answer, source line, CPU).
    pub fn retain_ops(&mut self, keep: &[bool]) {
        let mut k = keep.iter();
        self.ops.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        self.expected.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        self.source_line.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        self.cpu.retain(|_| *k.next().unwrap());
    }
}

/// A token-pool resize: at `t` (ns, the ops' clock) `domain`'s depth became `depth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepthChange {
    /// Time in ns.
    pub t: u64,
    /// Domain name (`READ`, `WRITE`, ...).
    pub domain: String,
    /// New depth.
    pub depth: u32,
}

/// Counts of events the conversion skipped or interpreted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertStats {
    /// Block events of the traced device.
    pub events: usize,
    /// Issues matching no queued request.
    pub unmatched_issues: usize,
    /// Completions matching no in-flight request.
    pub unmatched_completes: usize,
    /// Queued requests absorbed by a request merge (insert dropped).
    pub request_merges: usize,
    /// Insert merges (nothing to do).
    pub insert_merges: usize,
    /// Requests whose geometry changed between insert and issue (bio merges).
    pub grown: usize,
    /// Requeues.
    pub requeues: usize,
    /// Flushes and other data-less requests ignored.
    pub no_data: usize,
}

#[derive(Debug, Clone)]
struct Pending {
    id: u64,
    dir: Dir,
    class: IoClass,
    sector: u64,
    end: u64,
    op_index: usize,
    /// Kernel timestamp of the issue (0 while queued).
    issue_ts: u64,
}

fn class_key(c: IoClass) -> IoClass {
    // The kernel maps NONE to BE; a request keeps the class its bio carried.
    c
}

fn flags_of(e: &BlockEvent) -> ReqFlags {
    let (preflush, rest) = e.flags();
    let mut f = ReqFlags::NONE;
    if preflush {
        f = f.with(ReqFlags::PREFLUSH);
    }
    for c in rest.chars() {
        match c {
            'F' => f = f.with(ReqFlags::FUA),
            'S' => f = f.with(ReqFlags::SYNC),
            'M' => f = f.with(ReqFlags::META),
            _ => {}
        }
    }
    f
}

/// The allocation (`block_getrq`) of the request `insert` carries: the most recent
/// unmatched one in its direction at its start sector, else (a front merge in the
/// plug moved the start) inside its range. Allocations whose request was merged at
/// insert (no insert event) stay unmatched and are passed over by newer ones.
/// Returns the allocation's time and CPU.
fn take_allocation(
    allocated: &mut Vec<&BlockEvent>,
    dir: Dir,
    insert: &BlockEvent,
) -> Option<(u64, u32)> {
    let same = |g: &&BlockEvent| g.dir() == Some(dir);
    let pos = allocated
        .iter()
        .rposition(|g| same(g) && g.sector == insert.sector)
        .or_else(|| {
            allocated
                .iter()
                .rposition(|g| same(g) && g.sector > insert.sector && g.sector < insert.end())
        })?;
    let g = allocated.remove(pos);
    Some((g.ts_ns, g.cpu))
}

/// Convert `kt` (events of device `dev`, or the first device seen) into a conformance
/// trace for scheduler `sched`, timing ops from the first block event.
pub fn convert(kt: &KernelTrace, sched: &str, hz: u32, fit: &JiffiesFit) -> Converted {
    let dev = kt
        .meta
        .dev
        .or_else(|| kt.events.first().map(|e| e.dev))
        .unwrap_or((0, 0));
    let mut header = Header::new(sched);
    header.hz = hz;
    if let Some(n) = kt.meta.nr_requests {
        header.nr_requests = n;
    }
    if let Some(r) = kt.meta.rotational {
        header.rotational = r;
    }
    if kt.meta.sched.as_deref() == Some(sched) {
        // The recorder reads every attribute back, written or not. One at its default
        // was (almost certainly) not written, and writing it is not a no-op: BFQ's
        // `bfq_max_budget_store` and `bfq_timeout_sync_store` recompute
        // `bfq_max_budget` from the peak rate (`bfq_calc_max_budget`), where the
        // kernel's stayed at `bfq_default_max_budget` until its first peak-rate
        // update. So only values that differ from the default are replayed.
        let defaults = blk::elevator::create(sched, &header.queue_params()).ok();
        let is_default = |k: &str, v: &str| {
            defaults
                .as_ref()
                .and_then(|e| e.get_tunable(k).ok())
                .is_some_and(|d| d == v)
        };
        header.tunables = kt
            .meta
            .tunables
            .iter()
            // async_depth is a tag-allocation limit: it never changes a decision, and
            // its value depends on nr_requests, so leave it at the default.
            .filter(|(k, v)| k != "async_depth" && !is_default(k, v))
            .cloned()
            .collect();
    }
    let events: Vec<&BlockEvent> = kt.events.iter().filter(|e| e.dev == dev).collect();
    // With BFQ's log recorded, each completion is replayed where BFQ took it in (see
    // `bfq_completion_points`), not where its tracepoint fired.
    let points = if sched == "bfq" {
        bfq_completion_points(&events, &kt.bfq_log)
    } else {
        std::collections::HashMap::new()
    };
    let at = |e: &BlockEvent| points.get(&e.line).copied().unwrap_or((e.line, e.ts_ns));
    let mut ordered: Vec<&BlockEvent> = events.clone();
    ordered.sort_by_key(|e| at(e).0);
    let mut op_lines: Vec<usize> = Vec::new();
    let getrqs: Vec<&BlockEvent> = kt.getrqs.iter().filter(|e| e.dev == dev).collect();
    let t0 = events
        .first()
        .map(|e| e.ts_ns)
        .into_iter()
        .chain(getrqs.first().map(|e| e.ts_ns))
        .min()
        .unwrap_or(0);
    // Allocations seen so far and not yet matched to an insert.
    let mut next_getrq = 0usize;
    let mut allocated: Vec<&BlockEvent> = Vec::new();
    let mut merge_limits = MergeLimits::default();
    if let Some(kb) = kt.meta.max_sectors_kb {
        merge_limits.max_sectors = kb * 2;
    }
    if let Some(n) = kt.meta.max_segments {
        merge_limits.max_segments = n;
    }
    if let Some(n) = kt.meta.nomerges {
        merge_limits.nomerges = n;
    }
    let mut c = Converted {
        header,
        merge_limits,
        ops: Vec::new(),
        expected: Vec::new(),
        source_line: Vec::new(),
        cpu: Vec::new(),
        stats: ConvertStats {
            events: events.len(),
            ..Default::default()
        },
        depth_changes: Vec::new(),
        timer_runs: Vec::new(),
        refusals: Vec::new(),
    };
    if sched == "kyber" {
        for k in kt.kyber.iter().filter(|k| k.dev == dev) {
            if let super::parse::KyberEventKind::Adjust { depth } = k.kind {
                c.depth_changes.push(DepthChange {
                    t: k.ts_ns.saturating_sub(t0),
                    domain: k.domain.clone(),
                    depth,
                });
            }
        }
        c.timer_runs = kt
            .kyber_timer_runs
            .iter()
            .map(|s| s.ts_ns.saturating_sub(t0))
            .collect();
    }
    // Each cgroup's weight on the recorded device: its override for this device if
    // it has one, else its default (what `bfq_io_set_weight` /
    // `bfq_io_set_device_weight` leave in the group's entity).
    for (path, &w) in &kt.meta.cgroup_weights {
        let w = kt
            .meta
            .cgroup_device_weights
            .get(&(path.clone(), dev))
            .copied()
            .unwrap_or(w);
        c.header.cgroup_weights.push((path.clone(), w));
    }
    for ((path, d), &w) in &kt.meta.cgroup_device_weights {
        if *d == dev && !kt.meta.cgroup_weights.contains_key(path) {
            c.header.cgroup_weights.push((path.clone(), w));
        }
    }
    // Exits of the processes that inserted requests, in trace order among the block
    // events (the kernel releases the process's queues right after the event).
    let submitters: std::collections::BTreeSet<u32> = events
        .iter()
        .filter(|e| e.kind == BlockKind::Insert)
        .map(|e| e.pid)
        .collect();
    let mut exits: Vec<super::parse::ProcessExit> = kt
        .exits
        .iter()
        .filter(|x| submitters.contains(&x.pid))
        .map(|x| {
            if sched == "bfq" {
                bfq_exit_point(x, &kt.bfq_log)
            } else {
                *x
            }
        })
        .collect();
    exits.sort_by_key(|x| x.line);
    let mut next_exit = 0usize;
    let push_exit = |c: &mut Converted, x: &super::parse::ProcessExit, last_t: &mut u64| {
        let t = x.ts_ns.saturating_sub(t0).max(*last_t);
        *last_t = t;
        c.ops.push(TraceOp {
            t,
            jiffies: Some(fit.jiffies_at(x.ts_ns)),
            kind: OpKind::Exit { pid: x.pid.max(1) },
        });
        c.expected.push(None);
        c.source_line.push(x.line);
        c.cpu.push(None);
    };
    let attaches = block_cgroup_attaches(kt);
    let cgroup_of = |e: &BlockEvent| task_cgroup(kt, &attaches, e.pid, e.line);
    let mut dropped = vec![];
    let mut queued: Vec<Pending> = Vec::new();
    let mut inflight: Vec<Pending> = Vec::new();
    let mut requeued: Vec<(Dir, u64)> = Vec::new();
    let mut next_id = 1u64;
    let mut last_t = 0u64;
    for e in ordered.iter().copied() {
        let (e_line, e_ts) = at(e);
        while let Some(x) = exits.get(next_exit).filter(|x| x.line < e_line) {
            push_exit(&mut c, x, &mut last_t);
            op_lines.push(x.line);
            next_exit += 1;
        }
        // tracefs sorts per-CPU buffers by time; never let t go backwards anyway.
        let t = e_ts.saturating_sub(t0).max(last_t);
        last_t = t;
        let jiffies = Some(fit.jiffies_at(e_ts));
        let Some(dir) = e.dir().filter(|_| e.nr_sectors > 0) else {
            c.stats.no_data += 1;
            continue;
        };
        let class = class_key(e.class);
        let push = |c: &mut Converted, ol: &mut Vec<usize>, kind: OpKind, exp: Option<u64>| {
            c.ops.push(TraceOp { t, jiffies, kind });
            c.expected.push(exp);
            c.source_line.push(e.line);
            c.cpu.push(Some(e.cpu));
            ol.push(e_line);
        };
        match e.kind {
            BlockKind::Insert => {
                while let Some(g) = getrqs.get(next_getrq).filter(|g| g.ts_ns <= e.ts_ns) {
                    allocated.push(g);
                    next_getrq += 1;
                }
                let alloc = take_allocation(&mut allocated, dir, e);
                let alloc_t = alloc.map(|(ts, _)| ts.saturating_sub(t0).min(t));
                // The software queue (kyber's kcq) is the allocating CPU's
                // (`rq->mq_ctx`, set in `__blk_mq_alloc_requests`), not the CPU
                // that flushed the plug and traced the insert.
                let queue_cpu = alloc.map_or(e.cpu, |(_, cpu)| cpu);
                let at_head = match requeued
                    .iter()
                    .position(|&(d, s)| d == dir && s == e.sector)
                {
                    Some(p) => {
                        requeued.remove(p);
                        true
                    }
                    None => false,
                };
                let id = next_id;
                next_id += 1;
                queued.push(Pending {
                    id,
                    dir,
                    class,
                    sector: e.sector,
                    end: e.end(),
                    op_index: c.ops.len(),
                    issue_ts: 0,
                });
                let op = InsertOp {
                    id,
                    sector: e.sector,
                    sectors: e.nr_sectors,
                    dir,
                    class: e.class,
                    level: e.level.min(7),
                    at_head,
                    pid: e.pid.max(1),
                    cpu: queue_cpu.min(7),
                    cgroup: cgroup_of(e),
                    flags: flags_of(e),
                    alloc_t,
                };
                push(&mut c, &mut op_lines, OpKind::Insert(op), None);
            }
            BlockKind::Merge => {
                let pos = queued.iter().position(|p| {
                    p.dir == dir && p.class == class && p.sector == e.sector && p.end == e.end()
                });
                match pos {
                    Some(p) => {
                        let p = queued.remove(p);
                        dropped.push(p.op_index);
                        c.stats.request_merges += 1;
                    }
                    None => {
                        c.stats.insert_merges += 1;
                        // An insert merge (`blk_mq_sched_try_insert_merge`): the new
                        // request joined a queued one before its insert event, growing
                        // it then and not at its issue. Replay the new request's insert
                        // so that the scheduler merges it at the same moment (its
                        // `bfq_init_rq` side effects included); the request it grew
                        // keeps the geometry it had at its own insert.
                        let into = queued.iter_mut().rev().find(|p| {
                            p.dir == dir
                                && p.class == class
                                && (p.end == e.sector || p.sector == e.end())
                        });
                        if let Some(p) = into {
                            if p.end == e.sector {
                                p.end = e.end();
                            } else {
                                p.sector = e.sector;
                            }
                            let id = next_id;
                            next_id += 1;
                            let op = InsertOp {
                                id,
                                sector: e.sector,
                                sectors: e.nr_sectors,
                                dir,
                                class: e.class,
                                level: e.level.min(7),
                                at_head: false,
                                pid: e.pid.max(1),
                                cpu: e.cpu.min(7),
                                cgroup: cgroup_of(e),
                                flags: flags_of(e),
                                alloc_t: None,
                            };
                            push(&mut c, &mut op_lines, OpKind::Insert(op), None);
                        }
                    }
                }
            }
            BlockKind::Issue => {
                let same = |p: &&Pending| p.dir == dir && p.class == class;
                let pos = queued
                    .iter()
                    .position(|p| same(&p) && p.sector == e.sector)
                    .or_else(|| queued.iter().position(|p| same(&p) && p.end == e.end()))
                    .or_else(|| {
                        queued
                            .iter()
                            .position(|p| same(&p) && p.sector < e.end() && e.sector < p.end)
                    });
                let Some(pos) = pos else {
                    c.stats.unmatched_issues += 1;
                    continue;
                };
                let mut p = queued.remove(pos);
                if p.sector != e.sector || p.end != e.end() {
                    c.stats.grown += 1;
                    if let OpKind::Insert(ins) = &mut c.ops[p.op_index].kind {
                        ins.sector = e.sector;
                        ins.sectors = e.nr_sectors;
                    }
                    p.sector = e.sector;
                    p.end = e.end();
                }
                let id = p.id;
                p.issue_ts = e.ts_ns;
                inflight.push(p);
                push(&mut c, &mut op_lines, OpKind::Dispatch, Some(id));
            }
            BlockKind::Complete | BlockKind::Requeue => {
                let pos = inflight
                    .iter()
                    .position(|p| p.dir == dir && p.sector == e.sector)
                    .or_else(|| {
                        inflight
                            .iter()
                            .position(|p| p.dir == dir && p.sector < e.end() && e.sector < p.end)
                    });
                let Some(pos) = pos else {
                    c.stats.unmatched_completes += 1;
                    continue;
                };
                let p = inflight.remove(pos);
                if e.kind == BlockKind::Requeue {
                    c.stats.requeues += 1;
                    requeued.push((dir, p.sector));
                }
                // The device's latency as the kernel measures it (io_start_time_ns is
                // stamped at issue): complete minus issue, both kernel timestamps.
                let latency_ns = (e.kind == BlockKind::Complete)
                    .then(|| e.ts_ns.saturating_sub(p.issue_ts))
                    .filter(|_| p.issue_ts > 0);
                push(
                    &mut c,
                    &mut op_lines,
                    OpKind::Complete {
                        id: p.id,
                        latency_ns,
                    },
                    None,
                );
            }
        }
    }
    for x in &exits[next_exit..] {
        push_exit(&mut c, x, &mut last_t);
        op_lines.push(x.line);
    }
    if !dropped.is_empty() {
        dropped.sort_unstable();
        let mut keep = vec![true; c.ops.len()];
        for i in dropped {
            keep[i] = false;
        }
        c.retain_ops(&keep);
        let mut k = keep.iter();
        op_lines.retain(|_| *k.next().unwrap());
    }
    c.refusals = refusals(&events, &kt.run_delays, &op_lines);
    c
}

/// The recorded moves of tasks between block cgroups (`cgroup_attach_task` in the
/// hierarchy the header's `cgroup_root` names), per task in file order.
fn block_cgroup_attaches(kt: &KernelTrace) -> std::collections::HashMap<u32, Vec<(usize, &str)>> {
    let mut out: std::collections::HashMap<u32, Vec<(usize, &str)>> =
        std::collections::HashMap::new();
    let Some(root) = kt.meta.cgroup_root else {
        return out;
    };
    for a in kt.cgroup_attaches.iter().filter(|a| a.root == root) {
        out.entry(a.pid)
            .or_default()
            .push((a.line, a.path.as_str()));
    }
    out
}

/// The block cgroup task `pid` was in at trace line `line`: the last recorded move
/// before it, else the cgroup the recorder saw the task in (`task_cgroup`, polled
/// every few milliseconds while fio runs: a job that starts and ends between two
/// polls is missed), else the root.
fn task_cgroup(
    kt: &KernelTrace,
    attaches: &std::collections::HashMap<u32, Vec<(usize, &str)>>,
    pid: u32,
    line: usize,
) -> String {
    let moved = attaches.get(&pid).and_then(|v| {
        let n = v.partition_point(|&(l, _)| l < line);
        n.checked_sub(1).map(|i| v[i].1)
    });
    moved
        .map(str::to_string)
        .or_else(|| kt.meta.task_cgroups.get(&pid).cloned())
        .unwrap_or_else(|| "/".into())
}

/// Where BFQ took in each completion, for the completions of `events` whose place
/// BFQ's log shows: trace line → (line, timestamp) of the completing CPU's first BFQ
/// message after the `block_rq_complete` event.
///
/// The tracepoint fires in `blk_update_request`, before the request is freed; BFQ
/// learns of the completion only later, in `bfq_finish_requeue_request` under its
/// lock, which always logs `put_queue` (`bfq_put_queue`). Meanwhile another CPU may
/// take the lock and insert a request, which then sees the completed request still
/// in the driver (`tot_rq_in_driver`): in `bfq-seed4` recordings an insert so placed
/// starts an inject-limit sample with `rqs_injected` still set, and the limit grows
/// (`bfq_add_request`, `bfq_update_inject_limit`, Linux 6.13). A completion is moved
/// only when a `put_queue` of that CPU follows it before the CPU's next block event.
fn bfq_completion_points(
    events: &[&BlockEvent],
    log: &[super::parse::BfqLogLine],
) -> std::collections::HashMap<usize, (usize, u64)> {
    let mut out = std::collections::HashMap::new();
    if log.is_empty() {
        return out;
    }
    for (i, e) in events.iter().enumerate() {
        if e.kind != BlockKind::Complete {
            continue;
        }
        let next_event = events[i + 1..]
            .iter()
            .find(|x| x.cpu == e.cpu)
            .map_or(usize::MAX, |x| x.line);
        let from = log.partition_point(|l| l.line < e.line);
        let mut mine = log[from..]
            .iter()
            .take_while(|l| l.line < next_event)
            .filter(|l| l.cpu == e.cpu);
        let Some(first) = mine.clone().next() else {
            continue;
        };
        if mine.any(|l| l.text.contains(" put_queue: ")) {
            out.insert(e.line, (first.line, first.ts_ns));
        }
    }
    bfq_dispatch_points(events, log, &mut out);
    out
}

/// Where BFQ released the queues of the process `x` exited from: its first
/// `exit_bfqq` message (`bfq_exit_bfqq`, under BFQ's lock, from `bfq_exit_icq`)
/// naming a queue of that process after its `sched_process_exit` event, if BFQ's
/// log shows one; else the exit event itself. The task's I/O context goes only
/// later in `do_exit` (in the recordings here 0.8–1.2 ms later, the exiting task
/// being scheduled out in between), and until then BFQ still serves and idles for
/// the process's queue.
fn bfq_exit_point(
    x: &super::parse::ProcessExit,
    log: &[super::parse::BfqLogLine],
) -> super::parse::ProcessExit {
    let from = log.partition_point(|l| l.line < x.line);
    log[from..]
        .iter()
        .find(|l| l.text.contains(" exit_bfqq: ") && bfq_log_pid(&l.text) == Some(x.pid))
        .map_or(*x, |l| super::parse::ProcessExit {
            line: l.line,
            ts_ns: l.ts_ns,
            pid: x.pid,
        })
}

/// The pid in a BFQ queue name at the start of a log message (`bfq15038S ...`).
fn bfq_log_pid(text: &str) -> Option<u32> {
    let rest = text.strip_prefix("bfq")?;
    let end = rest.find(|ch: char| !ch.is_ascii_digit())?;
    rest[..end].parse().ok()
}

/// Where BFQ chose each issued request, for the issues whose choice BFQ's log shows:
/// trace line → (line, timestamp) of the `select_queue: returned this queue` message
/// (`bfq_select_queue`, under BFQ's lock) that picked it.
///
/// blk-mq takes a batch of requests from the scheduler and only then hands them to
/// the driver (`__blk_mq_do_dispatch_sched`, `blk_mq_dispatch_rq_list`), so an issue
/// event can come after other CPUs' inserts and completions that BFQ saw after its
/// choice. Each CPU's choices are matched to that CPU's issues in order, the choice
/// naming the queue of the inserting process first (a merged queue keeps one
/// process's name: then the CPU's oldest unmatched choice), never a choice traced
/// before the request's insert. An issue without a
/// choice before it (an at-head request from `bfqd->dispatch`) stays where it is.
fn bfq_dispatch_points(
    events: &[&BlockEvent],
    log: &[super::parse::BfqLogLine],
    out: &mut std::collections::HashMap<usize, (usize, u64)>,
) {
    let mut insert_pid: Vec<(u64, u32, usize)> = Vec::new(); // (sector, pid, line)
    let mut open: Vec<(u32, usize, u32, u64)> = Vec::new(); // (cpu, line, pid, ts)
    let mut next_log = 0usize;
    for e in events {
        while let Some(l) = log.get(next_log).filter(|l| l.line < e.line) {
            if l.text.contains(" select_queue: returned this queue") {
                if let Some(pid) = bfq_log_pid(&l.text) {
                    open.push((l.cpu, l.line, pid, l.ts_ns));
                }
            }
            next_log += 1;
        }
        match e.kind {
            BlockKind::Insert => insert_pid.push((e.sector, e.pid, e.line)),
            BlockKind::Issue => {
                let Some((_, owner, inserted)) = insert_pid
                    .iter()
                    .rposition(|&(s, _, _)| s == e.sector)
                    .map(|i| insert_pid.remove(i))
                else {
                    continue;
                };
                // A choice made before the request was queued is not its choice.
                let mine = |o: &&(u32, usize, u32, u64)| o.0 == e.cpu && o.1 > inserted;
                let pick = open
                    .iter()
                    .position(|o| mine(&o) && o.2 == owner)
                    .or_else(|| open.iter().position(|o| mine(&o)));
                if let Some(i) = pick {
                    let (_, line, _, ts) = open.remove(i);
                    out.insert(e.line, (line, ts));
                }
            }
            _ => {}
        }
    }
}

/// Where the recorded dispatch runs that found work but got nothing from the
/// scheduler fall among the ops. A refusal leaves no block event, but blk-mq then
/// re-runs the queue one jiffy later (`__blk_mq_do_dispatch_sched`: nothing
/// dispatched and `run_queue` set → `blk_mq_delay_run_hw_queues(q,
/// BLK_MQ_BUDGET_DELAY)`), which arms the hardware queue's delayed work: a
/// `timer_start` of `delayed_work_timer_fn` with `[timeout=1]`. The device's work item
/// is the timer most often armed by a task right after its own insert on the device
/// (the insert's queue run); other one-jiffy delayed works are ignored. A refusal
/// armed by a task whose last event on the device is an insert ran right after that
/// insert (the same call chain) and before the `timer_start`, on either side of the
/// other CPU's events traced in between (that CPU may have taken the request first);
/// one armed by another task (the kblockd worker) ran just before the `timer_start`.
fn refusals(
    events: &[&BlockEvent],
    delays: &[super::parse::RunDelay],
    source_line: &[usize],
) -> Vec<(usize, usize)> {
    // The last event of `pid` on the device before trace line `line`.
    let last_of = |pid: u32, line: usize| {
        let end = events.partition_point(|e| e.line < line);
        events[..end].iter().rev().find(|e| e.pid == pid).copied()
    };
    let after_insert =
        |d: &super::parse::RunDelay| last_of(d.pid, d.line).filter(|e| e.kind == BlockKind::Insert);
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for d in delays.iter().filter(|d| after_insert(d).is_some()) {
        match counts.iter_mut().find(|(t, _)| *t == d.timer) {
            Some((_, n)) => *n += 1,
            None => counts.push((&d.timer, 1)),
        }
    }
    let Some(&(timer, _)) = counts.iter().max_by_key(|(_, n)| *n) else {
        return Vec::new();
    };
    let mut out: Vec<(usize, usize)> = delays
        .iter()
        .filter(|d| d.timer == timer)
        .filter_map(|d| {
            let latest = source_line.partition_point(|&l| l < d.line);
            let earliest = match after_insert(d) {
                // Right after the op of that insert (absent when the insert was dropped).
                Some(ins) => source_line.iter().position(|&l| l == ins.line)? + 1,
                None => latest,
            };
            Some((earliest, latest))
        })
        .filter(|&(a, _)| a > 0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

impl Converted {
    /// The conformance trace text (header and ops, one per line).
    pub fn to_trace_text(&self) -> String {
        // The dispatch ops name the kernel's choice, which `sched-replay` follows
        // after asking ours: without it, a replay that chose differently would
        // later complete requests it never dispatched.
        let mut h = self.header.clone();
        h.follows_kernel = true;
        let mut s = h.to_json();
        s.push('\n');
        for (op, e) in self.ops.iter().zip(&self.expected) {
            let mut line = op.to_json();
            if let (crate::replay::OpKind::Dispatch, Some(k)) = (&op.kind, e) {
                line.pop();
                line.push_str(&format!(",\"kernel\":{k}}}"));
            }
            s.push_str(&line);
            s.push('\n');
        }
        s
    }

    /// The kernel's answers in `sched-replay`'s output format, for diffing.
    pub fn expected_text(&self) -> String {
        let mut s = String::new();
        for (op, e) in self.ops.iter().zip(&self.expected) {
            if let Some(id) = e {
                s.push_str(&format!("{{\"t\":{},\"id\":{}}}\n", op.t, id));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::Converted;
    use crate::replay::OpKind;

    /// Each converted op as a short label and its time.
    fn kinds(c: &Converted) -> Vec<(String, u64)> {
        c.ops
            .iter()
            .map(|o| {
                let k = match &o.kind {
                    OpKind::Insert(i) => format!("insert {}", i.sector),
                    OpKind::Dispatch => "dispatch".into(),
                    OpKind::Complete { id, .. } => format!("complete {id}"),
                    OpKind::Exit { pid } => format!("exit {pid}"),
                };
                (k, o.t)
            })
            .collect()
    }

    /// A refusal armed by the inserting task comes right after its insert (even when
    /// another CPU's event is traced in between); one armed by the kblockd worker
    /// comes where its timer was armed; other one-jiffy delayed works (another timer,
    /// armed by a task with no event on the device) are not refusals.
    #[test]
    fn refusals_from_the_re_run_timer() {
        let t = "\
# iosched: format=kernel-trace 1
# iosched: hz=250
# iosched: dev=7,0
# iosched: sched=bfq
             fio-100     [000] d..1.   100.000010: block_rq_insert: 7,0 R 4096 () 800 + 8 be,0,4 [fio]
             fio-100     [000] .....   100.000012: block_rq_issue: 7,0 R 4096 () 800 + 8 be,0,4 [fio]
             fio-101     [001] d..1.   100.000020: block_rq_insert: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
             fio-100     [000] d..1.   100.000021: block_rq_insert: 7,0 R 4096 () 808 + 8 be,0,4 [fio]
             fio-101     [001] d..1.   100.000022: timer_start: timer=00000000aaaa function=delayed_work_timer_fn expires=1001 [timeout=1] bucket_expiry=1002 cpu=1 idx=1 flags=I
     kworker/u8:0-77     [001] d..1.   100.000023: timer_start: timer=00000000bbbb function=delayed_work_timer_fn expires=1001 [timeout=1] bucket_expiry=1002 cpu=1 idx=1 flags=I
     kworker/0:1H-54     [000] .....   100.000030: block_rq_issue: 7,0 R 4096 () 808 + 8 be,0,4 [kworker/0:1H]
     kworker/0:1H-54     [000] d..1.   100.000031: timer_start: timer=00000000aaaa function=delayed_work_timer_fn expires=1001 [timeout=1] bucket_expiry=1002 cpu=0 idx=1 flags=I
             fio-101     [001] .....   100.000040: block_rq_issue: 7,0 R 4096 () 9000 + 8 be,0,4 [fio]
";
        let (kt, _, c) = super::super::load(t, "bfq", None);
        assert_eq!(kt.run_delays.len(), 3);
        assert_eq!(c.ops.len(), 6);
        // Between the insert of 9000 and its timer (before op 3, the insert of 808,
        // or op 4, the kblockd worker's issue), and before op 5 (the issue of 9000).
        assert_eq!(c.refusals, [(3, 4), (5, 5)]);
    }

    /// BFQ's log places a completion where BFQ took it in and a dispatch where BFQ
    /// chose it (the pattern of a seed-4-shape recording, 4 × 4 MiB, 6.18): CPU 0
    /// traces the completion of 33200 at .924, but its `put_queue` (under BFQ's lock)
    /// comes at .931, after CPU 1's insert of 111224 at .925, so the insert is
    /// replayed first and sees 33200 still in the driver. 111224's issue (.940) is
    /// replayed at its `select_queue` choice (.933), before the kworker's refusal
    /// messages on CPU 0. Without the log the tracepoint order stays.
    #[test]
    fn bfq_log_places_completions_and_choices() {
        let body = "\
             fio-10988   [001] d..1.   717.750886: block_rq_insert: 7,0 RS 4096 () 33200 + 8 be,0,4 [fio]
             fio-10988   [001] d..1.   717.750895:   7,0   1,0  m   N bfq10988S select_queue: returned this queue
             fio-10988   [001] .....   717.750900: block_rq_issue: 7,0 RS 4096 () 33200 + 8 be,0,4 [fio]
     ksoftirqd/0-14      [000] ..s..   717.750924: block_rq_complete: 7,0 RS () 33200 + 8 be,0,4 [0]
             fio-10987   [001] d..1.   717.750925: block_rq_insert: 7,0 RS 4096 () 111224 + 8 be,0,4 [fio]
             fio-10987   [001] d..1.   717.750926:   7,0   1,0  m   N bfq10987S add_request 1
     ksoftirqd/0-14      [000] d.s1.   717.750928:   7,0   1,0  m   N bfq schedule dispatch
     ksoftirqd/0-14      [000] d.s1.   717.750931:   7,0   1,0  m   N bfq10988S put_queue: 00000000172c4105 3
             fio-10987   [001] d..1.   717.750933:   7,0   1,0  m   N bfq10987S select_queue: returned this queue
    kworker/0:1H-44      [000] d..1.   717.750935:   7,0   1,0  m   N bfq dispatch requests: 3 busy queues
             fio-10987   [001] .....   717.750940: block_rq_issue: 7,0 RS 4096 () 111224 + 8 be,0,4 [fio]
";
        let head = "# iosched: format=kernel-trace 1\n# iosched: hz=250\n# iosched: dev=7,0\n# iosched: sched=bfq\n";
        let (_, _, c) = super::super::load(&format!("{head}{body}"), "bfq", None);
        assert_eq!(
            kinds(&c),
            [
                ("insert 33200".to_string(), 0),
                ("dispatch".to_string(), 9_000),
                ("insert 111224".to_string(), 39_000),
                ("complete 1".to_string(), 42_000),
                ("dispatch".to_string(), 47_000),
            ]
        );
        assert_eq!(c.expected[4], Some(2));
        // The same events without BFQ's messages: tracepoint order and times.
        let plain: String = body
            .lines()
            .filter(|l| !l.contains(" m   N "))
            .map(|l| format!("{l}\n"))
            .collect();
        let (_, _, c) = super::super::load(&format!("{head}{plain}"), "bfq", None);
        assert_eq!(
            kinds(&c),
            [
                ("insert 33200".to_string(), 0),
                ("dispatch".to_string(), 14_000),
                ("complete 1".to_string(), 38_000),
                ("insert 111224".to_string(), 39_000),
                ("dispatch".to_string(), 54_000),
            ]
        );
    }

    /// An insert's cgroup is the last `cgroup_attach_task` of its task before it in
    /// the header's `cgroup_root` hierarchy (another hierarchy's moves do not
    /// count), else its polled `task_cgroup`, else the root.
    #[test]
    fn cgroups_from_attach_events_then_polled_lines() {
        let t = "\
# iosched: format=kernel-trace 1
# iosched: hz=250
# iosched: dev=7,0
# iosched: sched=bfq
# iosched: cgroup_root=7
# iosched: task_cgroup=102 /polled
             fio-100     [000] d..1.   100.000001: cgroup_attach_task: dst_root=7 dst_id=5 dst_level=1 dst_path=/a pid=100 comm=fio
             fio-100     [000] d..1.   100.000002: cgroup_attach_task: dst_root=3 dst_id=9 dst_level=1 dst_path=/other pid=100 comm=fio
             fio-100     [000] d..1.   100.000010: block_rq_insert: 7,0 R 4096 () 800 + 8 be,0,4 [fio]
             fio-100     [000] d..1.   100.000011: cgroup_attach_task: dst_root=7 dst_id=1 dst_level=0 dst_path=/ pid=100 comm=fio
             fio-100     [000] d..1.   100.000012: block_rq_insert: 7,0 R 4096 () 900 + 8 be,0,4 [fio]
             fio-102     [001] d..1.   100.000013: block_rq_insert: 7,0 R 4096 () 1000 + 8 be,0,4 [fio]
             fio-103     [001] d..1.   100.000014: block_rq_insert: 7,0 R 4096 () 1100 + 8 be,0,4 [fio]
";
        let (_, _, c) = super::super::load(t, "bfq", None);
        let groups: Vec<String> = c
            .ops
            .iter()
            .filter_map(|o| match &o.kind {
                crate::replay::OpKind::Insert(i) => Some(i.cgroup.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(groups, ["/a", "/", "/polled", "/"]);
        // Without the header's hierarchy the events are not used.
        let (_, _, c) =
            super::super::load(&t.replace("# iosched: cgroup_root=7\n", ""), "bfq", None);
        match &c.ops[0].kind {
            crate::replay::OpKind::Insert(i) => assert_eq!(i.cgroup, "/"),
            other => panic!("{other:?}"),
        }
    }

    /// With BFQ's log a process exit is replayed where BFQ released the process's
    /// queue (`exit_bfqq`, from `bfq_exit_icq`, here 0.9 ms after
    /// `sched_process_exit`, as in the seed-4-shape recordings): the other reader's
    /// insert in between still finds the exiting process's queue (in service and
    /// idling, in the recording this is cut from). Without the message the exit
    /// stays at `sched_process_exit`.
    #[test]
    fn bfq_log_places_process_exits() {
        let body = "\
             fio-19256   [000] .....   781.281449: sched_process_exit: comm=fio pid=19256 prio=120 group_dead=true
             fio-19251   [001] d..1.   781.281741: block_rq_insert: 7,0 RS 4096 () 79736 + 8 be,0,4 [fio]
             fio-19251   [001] d..1.   781.281742:   7,0   1,0  m   N bfq19251S add_request 1
             fio-19256   [000] dN.2.   781.282301:   7,0   1,0  m   N bfq19256S exit_bfqq: 0000000059ac11b8, 2
    kworker/0:1H-54      [000] .....   781.282326: block_rq_issue: 7,0 RS 4096 () 79736 + 8 be,0,4 [kworker/0:1H]
";
        let head = "# iosched: format=kernel-trace 1\n# iosched: hz=250\n# iosched: dev=7,0\n# iosched: sched=bfq\n";
        // A block event of the exiting process before, so that it is a submitter.
        let before = "             fio-19256   [000] d..1.   781.281000: block_rq_insert: 7,0 RS 4096 () 100 + 8 be,0,4 [fio]\n";
        let (_, _, c) = super::super::load(&format!("{head}{before}{body}"), "bfq", None);
        assert_eq!(
            kinds(&c),
            [
                ("insert 100".to_string(), 0),
                ("insert 79736".to_string(), 741_000),
                ("exit 19256".to_string(), 1_301_000),
                ("dispatch".to_string(), 1_326_000),
            ]
        );
        let plain: String = body
            .lines()
            .filter(|l| !l.contains(" m   N "))
            .map(|l| format!("{l}\n"))
            .collect();
        let (_, _, c) = super::super::load(&format!("{head}{before}{plain}"), "bfq", None);
        assert_eq!(
            kinds(&c),
            [
                ("insert 100".to_string(), 0),
                ("exit 19256".to_string(), 449_000),
                ("insert 79736".to_string(), 741_000),
                ("dispatch".to_string(), 1_326_000),
            ]
        );
    }
}
