//! Replaying a converted kernel trace decision by decision.
//!
//! Each dispatch op is one decision: our scheduler, in the state the kernel's own
//! earlier decisions led to, is asked once; it agrees *exactly* when it returns the
//! request the kernel issued. After a disagreement the replay continues from the
//! kernel's choice: the scheduler is rebuilt by replaying every op so far with each
//! dispatch forced to the kernel's choice ([`Elevator::force_dispatch`]). That
//! forced replay is kept alongside, one op at a time, with recent copies
//! ([`Elevator::clone_box`]), so going back costs a copy and a few ops rather than a
//! pass over the prefix per disagreement: the comparison stays linear in the trace
//! even against another scheduler than the recorded one.
//!
//! An issue event is not a decision (see `docs/validation.md`): list pulls, parked
//! requests and two dispatchers move the instant of a decision relative to the
//! inserts and completions around it, or swap issue order. A disagreement counts as
//! *explained* when
//! - our choice is what the kernel issued within the next few issues (issue order
//!   swapped), or
//! - our scheduler picks the kernel's request when the decision is moved before some
//!   of the inserts/completions since the previous issues (decided earlier, issued
//!   later), or after some of the following ones (decided later), or
//! - our scheduler picks the kernel's request once an earlier issue is moved before
//!   the other CPU's events traced between its task's insert and that issue (issued
//!   late: the dispatching task decided, then was delayed before the issue event
//!   while the other CPU went on). The moved order is kept for the rest of the
//!   replay: it is the order the kernel's decisions were made in.
//!
//! A decision where ours dispatches the *twin* of the kernel's request (another
//! queued request of the same direction, class, sector and size, [`twins`]) is
//! counted exact: the issue event cannot tell the two apart, so the conversion's
//! naming is swapped for the rest of the trace ([`swap_ids`]).
//!
//! [`Elevator`]: blk::elevator::Elevator
//! [`Elevator::force_dispatch`]: blk::elevator::Elevator::force_dispatch
//! [`Elevator::clone_box`]: blk::elevator::Elevator::clone_box

use super::convert::{Converted, DepthChange};
use crate::replay::{OpKind, Replayer, TraceOp};

/// Knobs of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Try the explanations (costs up to `2 * window + 1` replays per disagreement).
    pub explain: bool,
    /// How many inserts/completions a decision may move across.
    pub window: usize,
    /// How many later issues a swapped order may reach (at least the rest of the
    /// current burst of back-to-back issues).
    pub swap: usize,
    /// Ops shown before and after a disagreement.
    pub context: usize,
    /// BFQ only: when an "issue order swapped" disagreement has its two issues on
    /// different CPUs (two dispatchers racing), replay the rest in the order the
    /// kernel decided them — ours first — rather than the traced one.
    pub keep_swaps: bool,
    /// Count ours dispatching the twin of the kernel's request ([`twins`]) as
    /// exact and swap the two ids for the rest of the trace.
    pub twins: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            explain: true,
            window: 8,
            swap: 4,
            context: 3,
            keep_swaps: true,
            twins: true,
        }
    }
}

/// One decision where our scheduler and the kernel differ.
#[derive(Debug, Clone)]
pub struct Disagreement {
    /// Index of the dispatch op in the converted trace.
    pub op_index: usize,
    /// Decision number (0-based).
    pub decision: usize,
    /// Time of the issue (ns from the start of the trace).
    pub t: u64,
    /// What the kernel issued.
    pub kernel: u64,
    /// What our scheduler chose.
    pub ours: Option<u64>,
    /// Which mechanism explains it, if any.
    pub explanation: Option<&'static str>,
}

/// The outcome of a comparison.
#[derive(Debug, Clone, Default)]
pub struct CompareReport {
    /// Decisions compared.
    pub decisions: usize,
    /// Decisions where we chose exactly the kernel's request.
    pub exact: usize,
    /// Disagreements explained by a tracing artefact.
    pub explained: usize,
    /// All disagreements, in order.
    pub disagreements: Vec<Disagreement>,
    /// Decisions where the kernel's request had been absorbed by our insert merge
    /// (the kernel did not merge it); skipped.
    pub missing: usize,
    /// Decisions where the kernel's request was not queued in our scheduler for
    /// another reason (never inserted, or already dispatched by our replay); skipped.
    pub not_queued: usize,
    /// Set when the comparison had to stop early (e.g. the scheduler cannot be forced).
    pub stopped: Option<String>,
    /// Recorded refused dispatch runs ([`Converted::refusals`]) replayed as dispatch
    /// calls (ours returned nothing there too).
    pub refusals: usize,
    /// Recorded refused dispatch runs where ours would have dispatched (skipped).
    pub refusals_not_reproduced: usize,
    /// Issues moved before other CPUs' events ("issued late"), the order kept.
    pub reordered: usize,
    /// Completions moved after the other CPU's inserts traced within
    /// [`COMPLETION_LAG_NS`] of them ("completed with other-CPU inserts"), the order kept.
    pub completions_moved: usize,
    /// Swapped issues of racing dispatchers kept in the decided order (BFQ,
    /// [`CompareOptions::keep_swaps`]).
    pub swaps_kept: usize,
    /// BFQ ([`CompareOptions::keep_swaps`]): "decided before recent
    /// inserts/completions" decisions replayed at the position they were decided.
    pub decisions_moved: usize,
    /// Decisions where ours dispatched the *twin* of the kernel's request (a queued
    /// request of the same direction, class, sector and size, [`twins`]), counted
    /// exact; the two ids are swapped for the rest of the trace.
    pub twins: usize,
    /// Our token-pool resizes during the replay (kyber), to set beside the kernel's
    /// ([`Converted::depth_changes`]); `t` is the op after which the change was seen.
    pub depth_changes: Vec<DepthChange>,
}

/// The token-pool depths a scheduler shows in debugfs (`read_tokens` ... with a
/// `depth=N` field): kyber's; empty for the others.
fn pool_depths(r: &Replayer) -> Vec<(String, u32)> {
    r.elevator()
        .debugfs()
        .into_iter()
        .filter_map(|(k, v)| {
            let d = k.strip_suffix("_tokens")?;
            let n = v
                .split_whitespace()
                .find_map(|f| f.strip_prefix("depth="))?;
            Some((d.to_ascii_uppercase(), n.parse().ok()?))
        })
        .collect()
}

fn note_depths(r: &Replayer, t: u64, last: &mut Vec<(String, u32)>, out: &mut Vec<DepthChange>) {
    let now = pool_depths(r);
    for (d, n) in &now {
        let before = last.iter().find(|(x, _)| x == d).map(|(_, m)| *m);
        if before.is_some_and(|m| m != *n) {
            out.push(DepthChange {
                t,
                domain: d.clone(),
                depth: *n,
            });
        }
    }
    *last = now;
}

impl CompareReport {
    /// Share of exact agreement, in percent.
    pub fn exact_pct(&self) -> f64 {
        pct(self.exact, self.decisions)
    }
    /// Share of exact or explained agreement, in percent.
    pub fn explained_pct(&self) -> f64 {
        pct(self.exact + self.explained, self.decisions)
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn forced_ok(r: &mut Replayer, op: &TraceOp, k: u64) -> Result<(), String> {
    let queued = r.is_queued(k);
    if !r.apply_forced(op, k)? && queued {
        return Err(format!(
            "scheduler '{}' cannot be forced to the kernel's choice (no force_dispatch)",
            r.elevator().name()
        ));
    }
    Ok(())
}

/// Replay ops `..end` with every dispatch forced to the kernel's choice and the
/// refused dispatch runs in `refused` (positions below `end`) replayed as dispatch
/// calls.
/// The token pools are held at `depths`, if given ([`Replayer::set_pool_depths`]).
fn rebuild_with(
    c: &Converted,
    end: usize,
    refused: &[usize],
    depths: Option<&[(u64, String, u32)]>,
) -> Result<Replayer, String> {
    let mut r = new_replayer(c)?;
    if let Some(d) = depths {
        r.set_pool_depths(d.to_vec());
    }
    replay_forced(&mut r, c, 0, end, refused)?;
    Ok(r)
}

/// Advance `r`, in the state [`rebuild_with`] gives at `from`, to its state at `end`.
fn replay_forced(
    r: &mut Replayer,
    c: &Converted,
    from: usize,
    end: usize,
    refused: &[usize],
) -> Result<(), String> {
    let mut next = refused.iter().copied().filter(|&p| p >= from).peekable();
    for (j, (op, exp)) in c.ops[..end]
        .iter()
        .zip(&c.expected[..end])
        .enumerate()
        .skip(from)
    {
        let r = &mut *r;
        while next.next_if(|&p| p <= j).is_some_and(|p| p == j) {
            refuse(r, c, j)?;
        }
        match (&op.kind, exp) {
            (OpKind::Dispatch, Some(k)) => forced_ok(r, op, *k)?,
            (OpKind::Dispatch, None) => {}
            _ => {
                apply_tolerant(r, op)?;
            }
        }
    }
    Ok(())
}

/// The forced replay ([`rebuild_with`]'s state) kept alongside the comparison, one op at
/// a time, with copies of it every [`Forced::EVERY`] ops: a rebuild at the current
/// position is a copy, one a little earlier a copy and a few ops. Without copies
/// (a scheduler that cannot be copied) every rebuild replays from the start.
struct Forced {
    /// The state at `at`, or the error the forced replay met at or before it.
    now: Result<Replayer, String>,
    at: usize,
    /// Recent copies, oldest first.
    saved: std::collections::VecDeque<(usize, Replayer)>,
    /// The token-pool depths its replays are held at, if any
    /// ([`Replayer::set_pool_depths`]).
    depths: Option<Vec<(u64, String, u32)>>,
}

impl Forced {
    const EVERY: usize = 32;
    const KEPT: usize = 8;

    fn new(c: &Converted) -> Result<Forced, String> {
        Self::with_depths(c, None)
    }

    /// A forced replay whose token pools are held at `depths`.
    fn with_depths(
        c: &Converted,
        depths: Option<Vec<(u64, String, u32)>>,
    ) -> Result<Forced, String> {
        let mut r = new_replayer(c)?;
        if let Some(d) = &depths {
            r.set_pool_depths(d.clone());
        }
        Ok(Forced {
            now: Ok(r),
            at: 0,
            saved: Default::default(),
            depths,
        })
    }

    /// Move to `end` (not before the current position).
    fn advance(&mut self, c: &Converted, end: usize, refused: &[usize]) {
        if let Ok(r) = &mut self.now {
            if let Err(e) = replay_forced(r, c, self.at, end, refused) {
                self.now = Err(e);
            }
        }
        self.at = end;
        if self.at.is_multiple_of(Self::EVERY) && self.saved.back().is_none_or(|s| s.0 != end) {
            if let Some(copy) = self.now.as_ref().ok().and_then(Replayer::try_clone) {
                if self.saved.len() == Self::KEPT {
                    self.saved.pop_front();
                }
                self.saved.push_back((self.at, copy));
            }
        }
    }

    /// The earliest position a rebuild can start from a copy (not the start).
    fn oldest(&self) -> usize {
        self.saved.front().map_or(0, |s| s.0)
    }

    /// Go back to `pos` after the ops from `pos` on were reordered: copies past it
    /// are dropped and the state is rebuilt there.
    fn rewind(&mut self, c: &Converted, pos: usize, refused: &[usize]) {
        while self.saved.back().is_some_and(|s| s.0 > pos) {
            self.saved.pop_back();
        }
        self.at = pos.min(self.at);
        self.now = if let Some((at, base)) = self.saved.back() {
            match base.try_clone() {
                Some(mut r) => replay_forced(&mut r, c, *at, pos, refused).map(|_| r),
                None => rebuild_with(c, pos, refused, self.depths.as_deref()),
            }
        } else {
            rebuild_with(c, pos, refused, self.depths.as_deref())
        };
        self.at = pos;
    }

    /// [`rebuild_with`]`(c, end, refused)`, from the nearest state at or before `end`.
    fn rebuild(&self, c: &Converted, end: usize, refused: &[usize]) -> Result<Replayer, String> {
        if end == self.at {
            if let Some(r) = self.now.as_ref().map_err(Clone::clone)?.try_clone() {
                return Ok(r);
            }
        }
        if end >= self.at {
            // Past where the forced replay stopped with an error: the same error.
            self.now.as_ref().map_err(Clone::clone)?;
        }
        if let Some((at, base)) = self.saved.iter().rev().find(|(at, _)| *at <= end) {
            if let Some(mut r) = base.try_clone() {
                replay_forced(&mut r, c, *at, end, refused)?;
                return Ok(r);
            }
        }
        rebuild_with(c, end, refused, self.depths.as_deref())
    }
}

/// The refused dispatch run before op `j` (`j > 0`): a dispatch call at the time of
/// the op before. Returns what our scheduler dispatched (it should be nothing).
fn refuse(r: &mut Replayer, c: &Converted, j: usize) -> Result<Option<u64>, String> {
    let prev = &c.ops[j - 1];
    let op = TraceOp {
        t: prev.t,
        jiffies: prev.jiffies,
        kind: OpKind::Dispatch,
    };
    Ok(r.apply(&op)?.flatten())
}

fn new_replayer(c: &Converted) -> Result<Replayer, String> {
    let mut r = Replayer::new(&c.header)?;
    r.set_merge_limits(c.merge_limits);
    if !c.timer_runs.is_empty() {
        // The kernel's timer ran late (timer-wheel granularity, softirq): run ours
        // when the recorded one ran, so that it sees the same completions.
        r.set_timer_runs(c.timer_runs.clone());
    }
    Ok(r)
}

/// Apply a non-dispatch op; the completion of a request our insert merge absorbed
/// (the kernel did not merge it) is skipped: it left with the request it joined.
fn apply_tolerant(r: &mut Replayer, op: &TraceOp) -> Result<bool, String> {
    if let OpKind::Complete { id, .. } = op.kind {
        if r.is_merged_away(id) {
            return Ok(false);
        }
    }
    r.apply(op)?;
    Ok(true)
}

/// "Issue order swapped": what we chose, the kernel issued shortly after.
fn swapped(
    c: &Converted,
    i: usize,
    ours: Option<u64>,
    o: &CompareOptions,
) -> Option<(&'static str, Option<usize>)> {
    if let Some(x) = ours {
        // A burst of issues with nothing in between was pulled as one list (or parked
        // and issued together): any order within it is the same decision block.
        let burst = c.ops[i + 1..]
            .iter()
            .take_while(|op| matches!(op.kind, OpKind::Dispatch))
            .count();
        let later = c.expected[i + 1..]
            .iter()
            .filter_map(|e| *e)
            .take(o.swap.max(burst))
            .any(|e| e == x);
        if later {
            return Some(("issue order swapped", None));
        }
    }
    None
}

const DECIDED_BEFORE: &str = "decided before recent inserts/completions";
/// [`at_kernel_depths`]'s explanation.
pub const AT_KERNEL_DEPTHS: &str =
    "chosen at the kernel's token-pool depths (kyber, no allocation times)";
/// [`try_flushed_at_park`]'s explanation.
pub const FLUSHED_AT_PARK: &str = "parked earlier, flushed then (kyber)";

/// Does moving decision `i` (kernel chose `k`) earlier or later make us choose `k`?
/// For "decided before", also the position the decision moved to.
fn try_explain(
    c: &Converted,
    forced: &Forced,
    i: usize,
    k: u64,
    ours: Option<u64>,
    o: &CompareOptions,
    refused: &[usize],
) -> Option<(&'static str, Option<usize>)> {
    if let Some(e) = swapped(c, i, ours, o) {
        return Some(e);
    }
    let is_dispatch = |j: usize| matches!(c.ops[j].kind, OpKind::Dispatch);
    let inserts_k = |j: usize| matches!(&c.ops[j].kind, OpKind::Insert(ins) if ins.id == k);
    // Decided earlier: move decision i (and the issues between) before the last m
    // inserts/completions.
    let mut moved = 0;
    let mut s = i;
    while moved < o.window && s > 0 {
        s -= 1;
        if is_dispatch(s) {
            continue;
        }
        if inserts_k(s) {
            break;
        }
        moved += 1;
        let (t, jiffies) = (c.ops[s].t, c.ops[s].jiffies);
        let mut r = forced.rebuild(c, s, refused).ok()?;
        let mut ok = true;
        for j in s..i {
            if is_dispatch(j) {
                let op = TraceOp {
                    t,
                    jiffies,
                    kind: OpKind::Dispatch,
                };
                if let Some(kk) = c.expected[j] {
                    if forced_ok(&mut r, &op, kk).is_err() {
                        ok = false;
                        break;
                    }
                }
            }
        }
        if !ok {
            break;
        }
        let op = TraceOp {
            t,
            jiffies,
            kind: OpKind::Dispatch,
        };
        if let Ok(Some(Some(got))) = r.apply(&op) {
            if got == k {
                return Some((DECIDED_BEFORE, Some(s)));
            }
        }
    }
    // Decided later: after the next m inserts/completions (up to the next issue).
    let mut e = i + 1;
    let mut m = 0;
    while m < o.window && e < c.ops.len() && !is_dispatch(e) {
        e += 1;
        m += 1;
        let mut r = forced.rebuild(c, i, refused).ok()?;
        for op in &c.ops[i + 1..e] {
            apply_tolerant(&mut r, op).ok()?;
        }
        let last = &c.ops[e - 1];
        let op = TraceOp {
            t: last.t,
            jiffies: last.jiffies,
            kind: OpKind::Dispatch,
        };
        if let Ok(Some(Some(got))) = r.apply(&op) {
            if got == k {
                return Some(("decided after following inserts/completions", None));
            }
        }
    }
    None
}

/// Requests in flight after each op, and the most ever in flight (the driver's
/// depth as the trace shows it).
fn in_flight(c: &Converted) -> (Vec<u32>, u32) {
    let mut n = 0u32;
    let mut out = Vec::with_capacity(c.ops.len());
    for (op, exp) in c.ops.iter().zip(&c.expected) {
        match (&op.kind, exp) {
            (OpKind::Dispatch, Some(_)) => n += 1,
            (OpKind::Complete { .. }, _) => n = n.saturating_sub(1),
            _ => {}
        }
        out.push(n);
    }
    let full = out.iter().copied().max().unwrap_or(0);
    (out, full)
}

/// "Parked while the driver was full": blk-mq takes a request from the scheduler,
/// finds no driver tag free and parks it on `hctx->dispatch`
/// (`blk_mq_dispatch_rq_list`); later runs issue the parked request before asking
/// the scheduler again (`__blk_mq_sched_dispatch_requests`). Its issue event then
/// shows a decision taken at the first queue run after its insert that found every
/// driver tag busy. Does our scheduler choose `k` right after an op `q` at which
/// all `full` driver tags were held ([`tags_held`]: the other CPU's pulled list
/// counts), from op `from` on (`k`'s insert, and the previous parked request's
/// park)? Returns the first such `q`. Every such instant in the window is tried
/// (kernel 6.18 `blk_mq_dispatch_rq_list`, `__blk_mq_do_dispatch_sched`).
fn try_parked(
    c: &Converted,
    forced: &Forced,
    i: usize,
    k: u64,
    from: usize,
    flight: &(Vec<u32>, u32),
    refused: &[usize],
) -> Option<usize> {
    first_park(c, forced, i, k, from, flight, refused, false)
}

/// How far apart (ns) two inserts of one CPU may be traced and still come from one
/// insert call (`blk_mq_insert_requests` → the scheduler's `insert_requests` with a
/// plugged list, `trace_block_rq_insert` per request inside its loop). blk-mq runs
/// the queue only after the whole list is inserted, so no dispatch decision falls
/// between them. Unverified: chosen from `kyber-throttle.txt`, where a CPU's
/// back-to-back inserts are 0–1 µs apart (2214 pairs, the plugged batches) or at
/// least 4 µs (147, one `io_submit` each).
pub const INSERT_CALL_GAP_NS: u64 = 2_000;

/// Is op `q` inside one insert call: an insert followed by an insert of the same
/// CPU and task traced within [`INSERT_CALL_GAP_NS`] ([`INSERT_CALL_GAP_NS`])?
fn inside_insert_call(c: &Converted, q: usize) -> bool {
    let (Some(a), Some(b)) = (c.ops.get(q), c.ops.get(q + 1)) else {
        return false;
    };
    match (&a.kind, &b.kind) {
        (OpKind::Insert(x), OpKind::Insert(y)) => {
            x.pid == y.pid
                && c.cpu[q].is_some()
                && c.cpu[q] == c.cpu[q + 1]
                && b.t.saturating_sub(a.t) <= INSERT_CALL_GAP_NS
        }
        _ => false,
    }
}

/// The first op `q` in `from..i - 1` right after which every driver tag was held
/// and our scheduler, asked there, chooses `k` ([`try_parked`]). With
/// `whole_calls`, instants inside one insert call ([`inside_insert_call`]) are not
/// queue runs and are skipped.
#[allow(clippy::too_many_arguments)]
fn first_park(
    c: &Converted,
    forced: &Forced,
    i: usize,
    k: u64,
    from: usize,
    flight: &(Vec<u32>, u32),
    refused: &[usize],
    whole_calls: bool,
) -> Option<usize> {
    let (counts, full) = flight;
    let end = i.saturating_sub(1);
    if from >= end {
        return None;
    }
    // One replay stepped through the window, copied at each full-driver instant: the
    // window can hold hundreds of such instants (inserts while every tag is busy), too
    // many for a rebuild each.
    let mut r = forced.rebuild(c, from, refused).ok()?;
    for q in from..end {
        replay_forced(&mut r, c, q, q + 1, refused).ok()?;
        if tags_held(c, counts, q) < *full || (whole_calls && inside_insert_call(c, q)) {
            continue;
        }
        let mut probe = r.try_clone()?;
        let op = TraceOp {
            kind: OpKind::Dispatch,
            ..c.ops[q].clone()
        };
        if matches!(probe.apply(&op), Ok(Some(Some(got))) if got == k) {
            return Some(q);
        }
    }
    None
}

/// The kernel's token-pool depths over time, for a kyber recording without
/// allocation times whose kernel resized a pool: each pool's depth at the start
/// (ours, before any op: the kernel's defaults) and the recorded `kyber_adjust`
/// changes. `None` otherwise. Kyber's total latency starts at the request's
/// allocation (`start_time_ns`); without `block_getrq` the trace gives the insert,
/// which for a plugged batch is later, so our timer's percentiles — and the depth
/// it sets — can differ from the kernel's by a bucket though both see the same
/// completions (`kyber-lowlat.txt`). The depth changes are reported on their own
/// ([`CompareReport::depth_changes`]).
fn kernel_depths(c: &Converted, r: &Replayer) -> Option<Vec<(u64, String, u32)>> {
    let has_alloc = c
        .ops
        .iter()
        .any(|op| matches!(&op.kind, OpKind::Insert(ins) if ins.alloc_t.is_some()));
    let start = pool_depths(r);
    if has_alloc || c.depth_changes.is_empty() || start.is_empty() {
        return None;
    }
    let mut d: Vec<(u64, String, u32)> = start.into_iter().map(|(dom, n)| (0, dom, n)).collect();
    d.extend(
        c.depth_changes
            .iter()
            .map(|x| (x.t, x.domain.clone(), x.depth)),
    );
    Some(d)
}

/// "Chosen at the kernel's token-pool depths": on a recording without allocation
/// times ([`kernel_depths`]), the forced replay with the pools held at the
/// kernel's depths chooses `k` at decision `i` (or a request the kernel issued
/// within the swap window, as "issue order swapped" allows). The comparison goes on
/// at our own depths: each such decision is tried on its own.
fn at_kernel_depths(
    c: &Converted,
    f: &Forced,
    i: usize,
    k: u64,
    o: &CompareOptions,
    refused: &[usize],
) -> bool {
    let Ok(mut r) = f.rebuild(c, i, refused) else {
        return false;
    };
    match r.apply(&c.ops[i]) {
        Ok(Some(Some(got))) => got == k || swapped(c, i, Some(got), o).is_some(),
        _ => false,
    }
}

/// Kyber's count of kcq flushes (debugfs `flushes`); `None` for a scheduler
/// without flushed lists.
fn flush_count(r: &Replayer) -> Option<u64> {
    r.elevator()
        .debugfs()
        .into_iter()
        .find(|(key, _)| key == "flushes")
        .and_then(|(_, v)| v.parse().ok())
}

/// "Parked earlier, flushed then" (kyber): an earlier dispatch `j` whose forced
/// replay flushed the kcqs, with its request inserted inside the window, was taken
/// by the kernel at a queue run that found the driver full and parked it
/// ([`try_parked`]'s mechanism: `kyber_dispatch_cur_domain` flushes and takes the
/// request in one call, before `blk_mq_dispatch_rq_list` finds no driver tag). The
/// flush then carried only what the kcqs held at that run, while ours, at the issue
/// event, also carried what was inserted since, so a later decision finds a
/// different flushed list, however many issues later. The issue agreed, so the
/// rule is tried from the disagreement back: the latest flushing dispatch (within
/// the forced replay's oldest copy) that, moved to its first full-driver queue run
/// after its insert at which ours chooses its request too (instants inside one
/// insert call excluded: [`inside_insert_call`]), makes ours choose `k` at `i`.
/// Returns `(j, s)`: dispatch `j` moves to position `s`.
fn try_flushed_at_park(
    c: &Converted,
    forced: &Forced,
    i: usize,
    k: u64,
    o: &CompareOptions,
    flight: &(Vec<u32>, u32),
    refused: &[usize],
) -> Option<(usize, usize)> {
    let lo = forced.oldest();
    if lo >= i {
        return None;
    }
    let mut r = forced.rebuild(c, lo, refused).ok()?;
    flush_count(&r)?;
    let mut flushing = Vec::new();
    for j in lo..i {
        let before = flush_count(&r);
        replay_forced(&mut r, c, j, j + 1, refused).ok()?;
        if matches!(c.ops[j].kind, OpKind::Dispatch)
            && c.expected[j].is_some()
            && flush_count(&r) != before
        {
            flushing.push(j);
        }
    }
    for &j in flushing.iter().rev() {
        let Some(kj) = c.expected[j] else { continue };
        let Some(ins) =
            (lo..j).rfind(|&p| matches!(&c.ops[p].kind, OpKind::Insert(x) if x.id == kj))
        else {
            continue;
        };
        let Some(q) = first_park(c, forced, j, kj, ins, flight, refused, true) else {
            continue;
        };
        let s = q + 1;
        let order = std::iter::once(j).chain(s..j).chain(j + 1..i);
        let Some(mut probe) = replay_order(c, forced, s, order, refused) else {
            continue;
        };
        let op = TraceOp {
            kind: OpKind::Dispatch,
            ..c.ops[i].clone()
        };
        // The decision at `i` may still be an issue-order swap inside the
        // corrected flushed list.
        if let Ok(Some(Some(got))) = probe.apply(&op) {
            if got == k || swapped(c, i, Some(got), o).is_some() {
                return Some((j, s));
            }
        }
    }
    None
}

/// Driver tags held right after op `q`: the requests in flight there, plus the
/// issues of *another* CPU traced right after `q` in the same run of back-to-back
/// issues. A list's issue events trail its pull, and the pull took a driver tag per
/// request (`blk_mq_get_driver_tag` in `__blk_mq_do_dispatch_sched`), so the other
/// CPU may hold those tags already when `q`'s CPU asks again and finds the driver
/// full; its own later issues were pulled after `q`, so they do not count.
fn tags_held(c: &Converted, counts: &[u32], q: usize) -> u32 {
    let Some(&n) = counts.get(q) else {
        return 0;
    };
    let cpu = match c.ops[q].kind {
        OpKind::Dispatch => c.cpu[q],
        _ => None,
    };
    let other = (q + 1..c.ops.len())
        .take_while(|&j| matches!(c.ops[j].kind, OpKind::Dispatch))
        .filter(|&j| cpu.is_some() && c.cpu[j].is_some() && c.cpu[j] != cpu)
        .count();
    n + u32::try_from(other).unwrap_or(u32::MAX)
}

/// "Issued late": does moving one of the last few issues (at op `j`) before the
/// other CPU's ops traced just before it (from op `s` on) make us choose `k` at
/// decision `i`? The issue may cross only ops of another CPU (a task's own events
/// are in the order it made them) and not the insert of its own request. Returns
/// `(j, s)`.
fn try_reorder(
    c: &Converted,
    forced: &Forced,
    i: usize,
    k: u64,
    o: &CompareOptions,
    refused: &[usize],
) -> Option<(usize, usize)> {
    let is_dispatch = |j: usize| matches!(c.ops[j].kind, OpKind::Dispatch);
    let mut issues = 0;
    let mut j = i;
    while j > 0 && issues < o.swap {
        j -= 1;
        let (true, Some(kj), Some(cpu)) = (is_dispatch(j), c.expected[j], c.cpu[j]) else {
            continue;
        };
        issues += 1;
        let mut s = j;
        let mut crossed = 0;
        while s > 0 && crossed < o.window {
            let p = s - 1;
            let own_insert = matches!(&c.ops[p].kind, OpKind::Insert(ins) if ins.id == kj);
            if c.cpu[p].is_none_or(|x| x == cpu) || own_insert {
                break;
            }
            s = p;
            if is_dispatch(p) {
                continue;
            }
            crossed += 1;
            let order = std::iter::once(j).chain(s..j).chain(j + 1..i);
            if replay_order(c, forced, s, order, refused).is_some_and(|mut r| {
                let op = TraceOp {
                    kind: OpKind::Dispatch,
                    ..c.ops[i].clone()
                };
                let res = r.apply(&op);
                matches!(res, Ok(Some(Some(got))) if got == k)
            }) {
                return Some((j, s));
            }
        }
    }
    None
}

/// How close (ns) an insert on another CPU may be traced after a completion for the
/// two to count as unordered. The completion's task reaches the scheduler's
/// `finish_request` (BFQ: `bfq_finish_requeue_request`, which logs `put_queue`)
/// only after its `block_rq_complete` event, and another CPU's insert can take the
/// scheduler's lock in between. Measured on three recordings with BFQ's log (the
/// seed-4 command, 4096 completions each): the gap from `block_rq_complete` to the
/// same CPU's `put_queue` is 0–3 µs for most completions, 12–14 µs for a second
/// group, and at most 15 µs for 97.4–98.7 %.
pub const COMPLETION_LAG_NS: u64 = 15_000;

/// "Completed with other-CPU inserts": is there a completion before decision `i`
/// (back to the forced replay's oldest copy), followed by inserts of *another* CPU
/// traced within [`COMPLETION_LAG_NS`] of it, such that replaying the completion
/// after those inserts makes us choose `k`? Returns `(p, q)`: the completion at op
/// `p` moves to just after op `q`. The look-back is not the explanation window: the
/// order BFQ saw changes state whose effect shows decisions later (an inject-limit
/// sample started with the injected request still counted in the driver).
fn try_completion_lag(
    c: &Converted,
    forced: &Forced,
    i: usize,
    k: u64,
    refused: &[usize],
) -> Option<(usize, usize)> {
    let lo = forced.oldest();
    let mut p = i;
    while p > lo {
        p -= 1;
        if !matches!(c.ops[p].kind, OpKind::Complete { .. }) {
            continue;
        }
        let cpu = c.cpu[p];
        let t = c.ops[p].t;
        let mut q = p;
        while q + 1 < i
            && matches!(c.ops[q + 1].kind, OpKind::Insert(_))
            && c.cpu[q + 1].is_some()
            && c.cpu[q + 1] != cpu
            && c.ops[q + 1].t.saturating_sub(t) <= COMPLETION_LAG_NS
        {
            q += 1;
        }
        if q == p {
            continue;
        }
        if refused.iter().any(|&x| x > p && x <= q) {
            continue;
        }
        let Ok(mut r) = forced.rebuild(c, p, refused) else {
            continue;
        };
        let moved = TraceOp {
            t: c.ops[q].t,
            jiffies: c.ops[q].jiffies,
            kind: c.ops[p].kind.clone(),
        };
        let ok = c.ops[p + 1..=q]
            .iter()
            .chain(std::iter::once(&moved))
            .all(|op| apply_tolerant(&mut r, op).is_ok())
            && replay_forced(&mut r, c, q + 1, i, refused).is_ok();
        if !ok {
            continue;
        }
        let op = TraceOp {
            kind: OpKind::Dispatch,
            ..c.ops[i].clone()
        };
        if matches!(r.apply(&op), Ok(Some(Some(got))) if got == k) {
            return Some((p, q));
        }
    }
    None
}

/// Keep the order [`try_completion_lag`] found: the completion at `p` moves to
/// just after `q`, taking `q`'s time.
fn move_later(c: &mut Converted, perm: &mut [usize], p: usize, q: usize) {
    let (t, jiffies) = (c.ops[q].t, c.ops[q].jiffies);
    c.ops[p..=q].rotate_left(1);
    c.ops[q].t = t;
    c.ops[q].jiffies = jiffies;
    c.expected[p..=q].rotate_left(1);
    c.source_line[p..=q].rotate_left(1);
    c.cpu[p..=q].rotate_left(1);
    perm[p..=q].rotate_left(1);
}

/// The forced replay at `s`, advanced through the ops `order` (indices from `s`
/// on, each dispatch forced to the kernel's choice; a moved dispatch takes the
/// time of the op it now precedes).
fn replay_order(
    c: &Converted,
    forced: &Forced,
    s: usize,
    order: impl Iterator<Item = usize>,
    refused: &[usize],
) -> Option<Replayer> {
    let mut r = forced.rebuild(c, s, refused).ok()?;
    for (pos, j) in (s..).zip(order) {
        if refused.binary_search(&j).is_ok() && j > s {
            refuse(&mut r, c, j).ok()?;
        }
        let at = &c.ops[pos.min(j)];
        match (&c.ops[j].kind, c.expected[j]) {
            (OpKind::Dispatch, Some(kk)) => {
                let op = TraceOp {
                    t: at.t,
                    jiffies: at.jiffies,
                    kind: OpKind::Dispatch,
                };
                forced_ok(&mut r, &op, kk).ok()?;
            }
            (OpKind::Dispatch, None) => {}
            _ => {
                apply_tolerant(&mut r, &c.ops[j]).ok()?;
            }
        }
    }
    Some(r)
}

/// Keep the order [`try_reorder`] found: op `j` moves to `s` (taking the time of
/// the op it now precedes); positions in between shift by one.
fn move_op(c: &mut Converted, perm: &mut [usize], j: usize, s: usize) {
    let (t, jiffies) = (c.ops[s].t, c.ops[s].jiffies);
    c.ops[s..=j].rotate_right(1);
    c.ops[s].t = t;
    c.ops[s].jiffies = jiffies;
    c.expected[s..=j].rotate_right(1);
    c.source_line[s..=j].rotate_right(1);
    c.cpu[s..=j].rotate_right(1);
    perm[s..=j].rotate_right(1);
}

/// What tells two requests apart at an issue event: direction, ioprio class,
/// start sector and size (`block_rq_issue` shows nothing else).
type Geometry = (blk::types::Dir, blk::types::IoClass, u64, u32);

/// Each request's [`Geometry`] as its insert op gives it (the conversion gives a
/// request grown by bio merges its issue-time geometry).
fn geometries(c: &Converted) -> rustc_hash::FxHashMap<u64, Geometry> {
    c.ops
        .iter()
        .filter_map(|op| match &op.kind {
            OpKind::Insert(ins) => Some((ins.id, (ins.dir, ins.class, ins.sector, ins.sectors))),
            _ => None,
        })
        .collect()
}

/// Are `a` and `b` *twins*: distinct requests of the same direction, class, sector
/// and size? Two processes reading the same random offsets (fio's default
/// `randrepeat` seeds every job's generator alike) can have such requests queued
/// at once. An issue event cannot say which of the two the kernel issued — the
/// conversion takes the one inserted first — so ours dispatching the other one is
/// no disagreement, only a naming of the two.
pub fn twins(geo: &rustc_hash::FxHashMap<u64, Geometry>, a: u64, b: u64) -> bool {
    a != b && geo.get(&a).is_some_and(|g| geo.get(&b) == Some(g))
}

/// Swap the names `a` and `b` in ops `from..` (the kernel's answers and the
/// completions): after ours dispatched `b` where the conversion named its twin
/// `a`, the kernel's later issue and completion of "`b`" are those of `a`.
pub fn swap_ids(c: &mut Converted, from: usize, a: u64, b: u64) {
    let other = |x: u64| {
        if x == a {
            b
        } else if x == b {
            a
        } else {
            x
        }
    };
    for (op, exp) in c.ops[from..].iter_mut().zip(&mut c.expected[from..]) {
        if let Some(e) = exp {
            *e = other(*e);
        }
        if let OpKind::Complete { id, .. } = &mut op.kind {
            *id = other(*id);
        }
    }
}

/// Compare our scheduler with the kernel's decisions in `c`.
pub fn compare(c: &Converted, o: &CompareOptions) -> Result<CompareReport, String> {
    // A working copy: "issued late" explanations reorder its ops; `perm` maps its
    // positions back to `c`'s.
    let mut work = c.clone();
    let mut perm: Vec<usize> = (0..c.ops.len()).collect();
    let mut rep = CompareReport::default();
    let mut r = new_replayer(c)?;
    let mut depths = pool_depths(&r);
    // The recorded refusals our scheduler reproduces (it returns nothing there too),
    // replayed as dispatch calls; a refusal where ours would dispatch is skipped (a
    // call that dispatched could not be undone).
    // A refusal is replayed at the first position of its range where ours refuses.
    let mut refused: Vec<usize> = Vec::new();
    let mut next_refusal = 0;
    let mut open: Vec<(usize, usize)> = Vec::new();
    // The forced replay at each position, so that going back to the kernel's choice
    // costs a copy rather than a replay of the whole prefix: linear, whatever the
    // share of disagreements (comparing against another scheduler than recorded).
    let mut forced = Forced::new(c)?;
    // Kyber on a recording without allocation times: a second forced replay with
    // the pools held at the kernel's depths ([`kernel_depths`]).
    let has_flushes = flush_count(&r).is_some();
    let mut forced_k = match kernel_depths(c, &r) {
        Some(d) => Some(Forced::with_depths(c, Some(d))?),
        None => None,
    };
    let flight = in_flight(c);
    let geo = geometries(c);
    let inserted_at: rustc_hash::FxHashMap<u64, usize> = c
        .ops
        .iter()
        .enumerate()
        .filter_map(|(j, op)| match &op.kind {
            OpKind::Insert(ins) => Some((ins.id, j)),
            _ => None,
        })
        .collect();
    let mut last_parked = 0;
    let keep_swaps = o.keep_swaps && r.elevator().name() == "bfq";
    for i in 0..c.ops.len() {
        let c = &work;
        let op = &c.ops[i].clone();
        if i > 0 {
            note_depths(&r, c.ops[i - 1].t, &mut depths, &mut rep.depth_changes);
            forced.advance(c, i, &refused);
            if let Some(f) = &mut forced_k {
                f.advance(c, i, &refused);
            }
        }
        while let Some(&w) = c.refusals.get(next_refusal).filter(|&&(a, _)| a <= i) {
            open.push(w);
            next_refusal += 1;
        }
        let mut k = 0;
        while k < open.len() {
            let (_, latest) = open[k];
            let mut probe = forced.rebuild(c, i, &refused)?;
            if refuse(&mut probe, c, i)?.is_none() {
                // Replay the refusal on the running replay. Its state can differ from
                // the rebuilt probe's (a rebuild forces every dispatch, also those ours
                // chose itself); if ours dispatches there, continue from the probe:
                // a request only our replay dispatched would later be counted as not
                // queued instead of being compared.
                if refuse(&mut r, c, i)?.is_some() {
                    r = probe;
                }
                refused.push(i);
                rep.refusals += 1;
                open.remove(k);
            } else if latest <= i {
                rep.refusals_not_reproduced += 1;
                open.remove(k);
            } else {
                k += 1;
            }
        }
        let Some(k) = c.expected[i] else {
            apply_tolerant(&mut r, op)
                .map_err(|e| format!("op {} (trace line {}): {e}", i + 1, c.source_line[i]))?;
            continue;
        };
        if !r.is_queued(k) {
            // Nothing to compare. Say why: our insert merge absorbed it, or (a
            // replay inconsistency) our replay already dispatched it.
            if r.is_merged_away(k) {
                rep.missing += 1;
            } else {
                rep.not_queued += 1;
            }
            continue;
        }
        let decision = rep.decisions;
        rep.decisions += 1;
        let ours = r
            .apply(op)
            .map_err(|e| format!("op {} (trace line {}): {e}", i + 1, c.source_line[i]))?
            .flatten();
        if ours == Some(k) {
            rep.exact += 1;
            continue;
        }
        if let Some(x) = ours.filter(|&x| o.twins && twins(&geo, k, x)) {
            // The kernel's request could as well have been ours: same geometry.
            rep.exact += 1;
            rep.twins += 1;
            swap_ids(&mut work, i, k, x);
            continue;
        }
        // The parked-request rule first: its decision instant is known (the queue
        // run that found the driver full), and the forced replay must take the
        // request there, not at its issue.
        let parked = if o.explain {
            // Parked requests leave `hctx->dispatch` in the order they were parked:
            // not before the previous one's park.
            // Not further back than the forced replay's oldest copy: a rebuild from
            // the start per trial would make the comparison quadratic.
            let from = inserted_at
                .get(&k)
                .copied()
                .unwrap_or(i)
                .max(last_parked)
                .max(forced.oldest());
            try_parked(c, &forced, i, k, from, &flight, &refused)
        } else {
            None
        };
        let (mut explanation, before) = match parked {
            Some(_) => (Some("parked while the driver was full"), None),
            None if o.explain => match try_explain(c, &forced, i, k, ours, o, &refused) {
                Some((e, at)) => (Some(e), at),
                None => (None, None),
            },
            None => (None, None),
        };
        let mut moved = parked.map(|q| (i, q + 1));
        let mut decided_before_kept = false;
        // BFQ: a decision taken before the inserts/completions traced ahead of its
        // issue is replayed there; forced at the issue, it would take another path
        // (a queue that got a request meanwhile is no longer plugged, so the forced
        // dispatch would end its slot instead of injecting).
        if let Some(s) = before
            .filter(|&s| keep_swaps && !(s..i).any(|j| matches!(c.ops[j].kind, OpKind::Dispatch)))
        {
            moved = Some((i, s));
            decided_before_kept = true;
        }
        if let Some(q) = parked {
            // `hctx->dispatch` is a FIFO (a failed list is spliced at its tail): a
            // request issued from it later was parked after this one. Two CPUs can
            // each pull one before either sees the other's parked (both passed the
            // empty-list check), so the bound is this park, not this issue. The
            // dispatch now sits at `q + 1`.
            last_parked = q + 2;
        }
        if explanation.is_none() && o.explain {
            moved = try_reorder(c, &forced, i, k, o, &refused);
            if moved.is_some() {
                explanation = Some("issued late (decided before the other CPU's events)");
            }
        }
        if explanation.is_none() && o.explain && has_flushes {
            moved = try_flushed_at_park(c, &forced, i, k, o, &flight, &refused);
            if moved.is_some() {
                explanation = Some(FLUSHED_AT_PARK);
            }
        }
        let mut lag = None;
        let mut swap_kept = false;
        if explanation.is_none() && o.explain {
            lag = try_completion_lag(c, &forced, i, k, &refused);
            if lag.is_some() {
                explanation = Some("completed with other-CPU inserts");
            }
        }
        if explanation.is_none() && o.explain {
            if let Some(f) = &forced_k {
                if at_kernel_depths(c, f, i, k, o, &refused) {
                    explanation = Some(AT_KERNEL_DEPTHS);
                }
            }
        }
        // Two dispatchers racing: the kernel decided ours first, the other CPU's issue
        // event came first. BFQ's state depends on the order of its decisions, so the
        // replay goes on in the decided one.
        if keep_swaps && explanation == Some("issue order swapped") && moved.is_none() {
            if let Some(j) = (i + 1..c.ops.len()).find(|&j| c.expected[j] == ours) {
                if c.cpu[j].is_some() && c.cpu[j] != c.cpu[i] {
                    moved = Some((j, i));
                    swap_kept = true;
                }
            }
        }
        if explanation.is_some() {
            rep.explained += 1;
        }
        rep.disagreements.push(Disagreement {
            op_index: perm[i],
            decision,
            t: op.t,
            kernel: k,
            ours,
            explanation,
        });
        if let Some((j, s)) = moved {
            move_op(&mut work, &mut perm, j, s);
            let shift = |p: &mut usize| {
                if *p > s && *p <= j {
                    *p += 1;
                }
            };
            refused.iter_mut().for_each(shift);
            refused.sort_unstable();
            for (a, b) in open.iter_mut() {
                shift(a);
                shift(b);
            }
            if swap_kept {
                rep.swaps_kept += 1;
            } else if decided_before_kept {
                rep.decisions_moved += 1;
            } else {
                rep.reordered += 1;
            }
            forced.rewind(&work, s, &refused);
            if let Some(f) = &mut forced_k {
                f.rewind(&work, s, &refused);
            }
        }
        if let Some((p, q)) = lag {
            move_later(&mut work, &mut perm, p, q);
            let shift = |x: &mut usize| {
                if *x > p && *x <= q {
                    *x -= 1;
                }
            };
            refused.iter_mut().for_each(shift);
            refused.sort_unstable();
            for (a, b) in open.iter_mut() {
                shift(a);
                shift(b);
            }
            rep.completions_moved += 1;
            forced.rewind(&work, p, &refused);
            if let Some(f) = &mut forced_k {
                f.rewind(&work, p, &refused);
            }
        }
        let c = &work;
        forced.advance(c, i + 1, &refused);
        if let Some(f) = &mut forced_k {
            f.advance(c, i + 1, &refused);
        }
        match forced.rebuild(c, i + 1, &refused) {
            Ok(nr) => r = nr,
            Err(e) => {
                rep.stopped = Some(e);
                break;
            }
        }
    }
    Ok(rep)
}

/// The ops around a disagreement, one per line, the disagreeing one marked `>>`.
pub fn context(c: &Converted, d: &Disagreement, around: usize) -> Vec<String> {
    let lo = d.op_index.saturating_sub(around);
    let hi = (d.op_index + around + 1).min(c.ops.len());
    (lo..hi)
        .map(|j| {
            let mark = if j == d.op_index { ">>" } else { "  " };
            let exp = match c.expected[j] {
                Some(k) => format!("  kernel issued {k}"),
                None => String::new(),
            };
            format!(
                "{mark} [trace line {}] {}{exp}",
                c.source_line[j],
                c.ops[j].to_json()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two psync readers of one random sequence: both queue a read of sector 800
    /// (ids 1 and 2), then the kernel issues and completes both.
    const TWINS: &str = "\
# iosched: format=kernel-trace 1
# iosched: hz=250
# iosched: dev=7,0
# iosched: sched=none
             fio-100     [000] d..1.   100.000010: block_rq_insert: 7,0 RS 4096 () 800 + 8 be,0,4 [fio]
             fio-101     [001] d..1.   100.000011: block_rq_insert: 7,0 RS 4096 () 800 + 8 be,0,4 [fio]
             fio-102     [001] d..1.   100.000012: block_rq_insert: 7,0 RS 4096 () 800 + 16 be,0,4 [fio]
             fio-103     [001] d..1.   100.000013: block_rq_insert: 7,0 WS 4096 () 800 + 8 be,0,4 [fio]
             fio-104     [001] d..1.   100.000014: block_rq_insert: 7,0 RS 4096 () 808 + 8 be,0,4 [fio]
             fio-105     [001] d..1.   100.000015: block_rq_insert: 7,0 RS 4096 () 800 + 8 rt,0,4 [fio]
             fio-100     [000] .....   100.000020: block_rq_issue: 7,0 RS 4096 () 800 + 8 be,0,4 [fio]
             fio-101     [001] .....   100.000021: block_rq_issue: 7,0 RS 4096 () 800 + 8 be,0,4 [fio]
     ksoftirqd/0-14      [000] ..s..   100.000030: block_rq_complete: 7,0 RS () 800 + 8 be,0,4 [0]
     ksoftirqd/0-14      [000] ..s..   100.000031: block_rq_complete: 7,0 RS () 800 + 8 be,0,4 [0]
";

    /// Four writes of one task (CPU 0); its issues of 1 and 4 interleave with the
    /// kblockd worker's issues of 2 and 3 (CPU 1) in one run of back-to-back issues.
    const TWO_DISPATCHERS: &str = "\
# iosched: format=kernel-trace 1
# iosched: hz=250
# iosched: dev=7,0
# iosched: sched=mq-deadline
             fio-100     [000] ...1.   100.000010: block_rq_insert: 7,0 WS 4096 () 800 + 8 be,0,4 [fio]
             fio-100     [000] ...1.   100.000011: block_rq_insert: 7,0 WS 4096 () 900 + 8 be,0,4 [fio]
             fio-100     [000] ...1.   100.000012: block_rq_insert: 7,0 WS 4096 () 1000 + 8 be,0,4 [fio]
             fio-100     [000] ...1.   100.000013: block_rq_insert: 7,0 WS 4096 () 1100 + 8 be,0,4 [fio]
             fio-100     [000] .....   100.000020: block_rq_issue: 7,0 WS 4096 () 800 + 8 be,0,4 [fio]
    kworker/1:1H-44      [001] .....   100.000021: block_rq_issue: 7,0 WS 4096 () 900 + 8 be,0,4 [kworker/1:1H]
    kworker/1:1H-44      [001] .....   100.000022: block_rq_issue: 7,0 WS 4096 () 1000 + 8 be,0,4 [kworker/1:1H]
             fio-100     [000] .....   100.000023: block_rq_issue: 7,0 WS 4096 () 1100 + 8 be,0,4 [fio]
     ksoftirqd/0-14      [000] ..s..   100.000030: block_rq_complete: 7,0 WS () 800 + 8 be,0,4 [0]
";

    /// Kyber, writes of one task, two driver tags (the most the trace has in
    /// flight). W3 (sector 1000) is inserted while both tags are busy and W4 (1100)
    /// 10 µs later, in another insert call; a completion frees a tag and W3 is
    /// issued. W5 (1200) is inserted on CPU 0 and issued next; W4 never is.
    /// `{W4_GAP}` is the time W4's insert is traced at.
    const FLUSH_AT_PARK: &str = "\
# iosched: format=kernel-trace 1
# iosched: hz=250
# iosched: dev=7,0
# iosched: sched=kyber
             fio-100     [001] ...1.   100.000010: block_rq_insert: 7,0 WS 4096 () 800 + 8 be,0,4 [fio]
             fio-100     [001] ...1.   100.000011: block_rq_insert: 7,0 WS 4096 () 900 + 8 be,0,4 [fio]
             fio-100     [001] .....   100.000020: block_rq_issue: 7,0 WS 4096 () 800 + 8 be,0,4 [fio]
             fio-100     [001] .....   100.000021: block_rq_issue: 7,0 WS 4096 () 900 + 8 be,0,4 [fio]
             fio-100     [001] ...1.   100.000030: block_rq_insert: 7,0 WS 4096 () 1000 + 8 be,0,4 [fio]
             fio-100     [001] ...1.   {W4_GAP}: block_rq_insert: 7,0 WS 4096 () 1100 + 8 be,0,4 [fio]
     ksoftirqd/0-14      [000] ..s..   100.000050: block_rq_complete: 7,0 WS () 800 + 8 be,0,4 [0]
    kworker/1:1H-44      [001] .....   100.000051: block_rq_issue: 7,0 WS 4096 () 1000 + 8 be,0,4 [kworker/1:1H]
             fio-100     [000] ...1.   100.000060: block_rq_insert: 7,0 WS 4096 () 1200 + 8 be,0,4 [fio]
     ksoftirqd/0-14      [000] ..s..   100.000070: block_rq_complete: 7,0 WS () 900 + 8 be,0,4 [0]
    kworker/0:1H-45      [000] .....   100.000071: block_rq_issue: 7,0 WS 4096 () 1200 + 8 be,0,4 [kworker/0:1H]
";

    /// "Parked earlier, flushed then": ours agrees on W3, but its flush at W3's
    /// issue also carries W4, so at W5's issue ours takes W4 from the flushed list
    /// where the kernel's list was empty and its flush (CPU 0 first) gave W5. The
    /// kernel took W3 at the queue run after its insert (the driver full) and
    /// parked it: flushed then, the list held W3 alone. Moved there, ours chooses
    /// W5. With W4 inserted 1 µs after W3 (one insert call: no queue run between),
    /// the first park instant is after W4's insert and the flush carries both: not
    /// explained.
    #[test]
    fn kyber_flush_at_the_park_instant() {
        let run = |w4: &str| {
            let text = FLUSH_AT_PARK.replace("{W4_GAP}", w4);
            let (_, _, c) = super::super::load(&text, "kyber", None);
            compare(&c, &CompareOptions::default()).unwrap()
        };
        let rep = run("100.000040");
        assert_eq!((rep.decisions, rep.exact, rep.explained), (4, 3, 1));
        let d = &rep.disagreements[0];
        assert_eq!((d.decision, d.kernel, d.ours), (3, 5, Some(4)));
        assert_eq!(d.explanation, Some(FLUSHED_AT_PARK));
        assert_eq!(rep.reordered, 1);
        let rep = run("100.000031");
        assert_eq!((rep.decisions, rep.exact, rep.explained), (4, 3, 0));
        assert_eq!(rep.disagreements[0].ours, Some(4));
        assert_eq!(rep.disagreements[0].explanation, None);
    }

    /// Tags held after an issue count the *other* CPU's issues traced right after
    /// it in the same run (pulled, tags taken, issue events still to come), not the
    /// same CPU's (pulled later): after 1 (CPU 0) one in flight plus 2 and 3 of
    /// CPU 1 is 3; after 2 (CPU 1) two plus 4 of CPU 0 is 3; after 3, three plus 4;
    /// after 4 the run ends; an insert or a completion counts what is in flight.
    #[test]
    fn tags_held_counts_the_other_cpus_pulled_issues() {
        let (_, _, c) = super::super::load(TWO_DISPATCHERS, "mq-deadline", None);
        let kinds: Vec<bool> = c
            .ops
            .iter()
            .map(|o| matches!(o.kind, OpKind::Dispatch))
            .collect();
        assert_eq!(
            kinds,
            [false, false, false, false, true, true, true, true, false]
        );
        let (counts, full) = in_flight(&c);
        assert_eq!(counts, [0, 0, 0, 0, 1, 2, 3, 4, 3]);
        assert_eq!(full, 4);
        let held: Vec<u32> = (0..c.ops.len())
            .map(|q| tags_held(&c, &counts, q))
            .collect();
        assert_eq!(held, [0, 0, 0, 0, 3, 3, 4, 4, 3]);
    }

    /// Only a request of the same direction, class, sector and size is a twin: not
    /// one twice as long (id 3), a write (4), the next sector (5), an RT read (6),
    /// nor the request itself.
    #[test]
    fn twins_share_direction_class_sector_and_size() {
        let (_, _, c) = super::super::load(TWINS, "none", None);
        let geo = geometries(&c);
        assert_eq!(geo.len(), 6);
        assert!(twins(&geo, 1, 2));
        assert!(twins(&geo, 2, 1));
        for other in 3..=6 {
            assert!(!twins(&geo, 1, other), "id {other}");
        }
        assert!(!twins(&geo, 1, 1));
        assert!(!twins(&geo, 1, 99), "an unknown id");
    }

    /// Swapping renames the kernel's answers and the completions from the given op
    /// on, and leaves the ops before it (the inserts) alone.
    #[test]
    fn swapping_twins_renames_later_issues_and_completions() {
        let (_, _, mut c) = super::super::load(TWINS, "none", None);
        // Ops: 6 inserts, issue (1), issue (2), complete 1, complete 2.
        assert_eq!(&c.expected[6..8], [Some(1), Some(2)]);
        let completes = |c: &Converted| -> Vec<u64> {
            c.ops
                .iter()
                .filter_map(|op| match op.kind {
                    OpKind::Complete { id, .. } => Some(id),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(completes(&c), [1, 2]);
        swap_ids(&mut c, 7, 1, 2);
        assert_eq!(&c.expected[6..8], [Some(1), Some(1)]);
        assert_eq!(completes(&c), [2, 1]);
        let ids: Vec<u64> = c.ops[..6]
            .iter()
            .filter_map(|op| match &op.kind {
                OpKind::Insert(ins) => Some(ins.id),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    }

    /// End to end: had the conversion named the kernel's first issue 2 (the twin
    /// inserted second), `none` (FIFO) dispatching 1 there agrees exactly, and the
    /// kernel's second issue, renamed 1 → 2, too. Without the rule the first
    /// decision would only be explained (issue order swapped).
    #[test]
    fn ours_dispatching_the_twin_counts_exact() {
        let (_, _, mut c) = super::super::load(TWINS, "none", None);
        // Only the twins: drop the four other inserts.
        let keep: Vec<bool> = (0..c.ops.len()).map(|j| !(2..6).contains(&j)).collect();
        c.retain_ops(&keep);
        c.refusals.clear();
        c.expected[2] = Some(2);
        c.expected[3] = Some(1);
        let rep = compare(&c, &CompareOptions::default()).unwrap();
        assert_eq!((rep.decisions, rep.exact, rep.twins), (2, 2, 1));
        assert!(rep.disagreements.is_empty());
        let o = CompareOptions {
            twins: false,
            ..Default::default()
        };
        let rep = compare(&c, &o).unwrap();
        assert_eq!((rep.decisions, rep.exact, rep.twins), (2, 1, 0));
        assert_eq!(
            rep.disagreements[0].explanation,
            Some("issue order swapped")
        );
    }
}
