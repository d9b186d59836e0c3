//! The blk-mq core between submitters and the driver (`block/blk-mq.c`,
//! `block/blk-mq-sched.c`, `block/blk-flush.c`, `block/blk-merge.c`): request
//! allocation from scheduler tags, plugging, merging and splitting, insertion into the
//! elevator, the dispatch loop with the hardware queue's dispatch list, driver tags and
//! `SCHED_RESTART`, the flush state machine, requeue, completion and freeing.
//!
//! A [`Queue`] is driven from outside: [`Queue::submit_bio`] (or
//! [`Queue::submit_bio_direct`], which may hand the request straight to the driver as
//! the kernel does without an elevator) when a task submits I/O, [`Queue::start_plug`]
//! / [`Queue::finish_plug`] around a batch, [`Queue::run`] when a queue run is due
//! (see [`Queue::next_run`]), [`Queue::complete`] when the device finishes a request,
//! [`Queue::requeue_request`] when the driver gives one back, and
//! [`Queue::elevator_timer`] when the scheduler's timer is due. Asynchronous work (the
//! kernel's kblockd run work and requeue work) is requested, not performed: the caller
//! reads [`Queue::next_run`] and calls [`Queue::run`] then, so that ordering follows
//! the caller's event clock.
//!
//! Modelled: one hardware queue; scheduler tags (`nr_requests`) with the elevator's
//! shallow depth (`limit_depth`, as a limit on the whole tag space); tasks sleeping on
//! scheduler tags (flushing their plug first); driver tags (device queue depth) taken
//! at dispatch; the per-task plug with plug merging and auto-flush at 32 requests or
//! after a ≥ 128 KiB request; bio splitting at `max_sectors` / `max_segments`; merging
//! (plug, then the elevator's `bio_merge` — for `none` the software-queue scan) under
//! `nomerges`; direct issue without an elevator; `hctx->dispatch` served first and,
//! when it cannot be emptied, the elevator not consulted; pulls of up to `nr_requests`
//! (one when `dispatch_busy`); the 3 ms re-run when the elevator has work but returns
//! nothing; the 3 ms delay after `BLK_STS_RESOURCE`; `SCHED_RESTART` on every request
//! free; the `dispatch_busy` EWMA; the flush machinery (decomposition, double-buffered
//! pending lists, one flush in flight, `FLUSH_PENDING_TIMEOUT`, flush request at the
//! head of `hctx->dispatch`); requeue through the requeue list; `/proc/diskstats`
//! counters. Not modelled: several hardware queues, shared tag sets, `rq_qos`
//! throttling, plug request caching (`nr_ios`), zoned devices.

mod flush;
mod plug;
mod split;

pub use flush::FlushInsert;

use crate::elevator::{Elevator, ElvCtx, QueueParams};
use crate::merge::{bio_mergeable, MergeLimits, MergeState};
use crate::request::{Bio, BioArena, Request, RqArena, RqId};
use crate::types::{msecs_to_jiffies, Jiffies, Ns, Op, ReqFlags};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// What the driver answers to `queue_rq` (`blk_status_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueRqStatus {
    /// `BLK_STS_OK`: the driver owns the request now.
    Ok,
    /// `BLK_STS_RESOURCE`: busy, no guaranteed restart (re-run after 3 ms).
    Resource,
    /// `BLK_STS_DEV_RESOURCE`: busy; a completion of this device will restart the queue.
    DevResource,
}

/// The driver side of the queue (`struct blk_mq_ops`).
pub trait Driver {
    /// `queue_rq`: hand request `id` to the device. `last` is false when more requests
    /// follow in the same batch.
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, last: bool) -> QueueRqStatus;
    /// `commit_rqs`: the batch ended early.
    fn commit_rqs(&mut self, _now: Ns) {}
}

/// Configuration of one request queue.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// `queue/nr_requests`; `None` = the kernel's default for an elevator,
    /// `2 × min(queue_depth, 128)`.
    pub nr_requests: Option<u32>,
    /// Driver tags: the device's queue depth.
    pub queue_depth: u32,
    /// Number of CPUs (software queues).
    pub nr_cpus: u32,
    /// The kernel's `HZ`.
    pub hz: u32,
    /// The device is rotational.
    pub rotational: bool,
    /// Merge and size limits and `nomerges`.
    pub limits: MergeLimits,
    /// The device has a volatile write cache (`queue/write_cache` = "write back"):
    /// without one, PREFLUSH and FUA are stripped and empty flushes complete at once.
    pub write_cache: bool,
    /// The device supports FUA writes natively (`BLK_FEAT_FUA`); without it a FUA
    /// write is followed by a post-flush.
    pub fua: bool,
    /// Where the flush request goes in `hctx->dispatch` (seed 2).
    pub flush_insert: FlushInsert,
    /// Most requests pulled from the elevator per dispatch round (the proposed
    /// `nr_sched_batch` attribute); `None` = `nr_requests`, as mainline does.
    pub nr_sched_batch: Option<u32>,
    /// Hardware queues the device has (only "one or several" matters here: with
    /// several, a busy hardware queue still issues synchronous requests directly).
    pub nr_hw_queues: u16,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            nr_requests: None,
            queue_depth: 32,
            nr_cpus: 8,
            hz: 250,
            rotational: false,
            limits: MergeLimits::default(),
            write_cache: false,
            fua: false,
            flush_insert: FlushInsert::Head,
            nr_sched_batch: None,
            nr_hw_queues: 1,
        }
    }
}

/// `BLKDEV_DEFAULT_RQ`.
const BLKDEV_DEFAULT_RQ: u32 = 128;
/// `BLK_MQ_BUDGET_DELAY` and `BLK_MQ_RESOURCE_DELAY`, in ms.
const RERUN_DELAY_MS: u64 = 3;

impl QueueConfig {
    /// Effective `nr_requests` for a queue with an elevator.
    pub fn effective_nr_requests(&self) -> u32 {
        self.nr_requests
            .unwrap_or(2 * self.queue_depth.min(BLKDEV_DEFAULT_RQ))
            .max(4)
    }
}

/// A pool of tags (`struct sbitmap_queue` simplified: lowest free tag first).
#[derive(Debug, Clone)]
struct TagPool {
    depth: u32,
    used: u32,
    free: Vec<u32>,
}

impl TagPool {
    fn new(depth: u32) -> Self {
        TagPool {
            depth,
            used: 0,
            free: (0..depth).rev().collect(),
        }
    }
    /// Take a tag if fewer than `limit` (≤ depth) are in use.
    fn get(&mut self, limit: u32) -> Option<u32> {
        if self.used >= limit.min(self.depth) {
            return None;
        }
        let t = self.free.pop()?;
        self.used += 1;
        Some(t)
    }
    fn put(&mut self, tag: u32) {
        self.used -= 1;
        self.free.push(tag);
    }
}

/// `/proc/diskstats` counters of the queue's disk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Completed requests per direction (an empty PREFLUSH write counts as a write
    /// with no sectors, as in the kernel; the flush machinery's own flush requests
    /// do not count here).
    pub ios: [u64; 2],
    /// Sectors per direction.
    pub sectors: [u64; 2],
    /// Merges per direction.
    pub merges: [u64; 2],
    /// Sum of request lifetimes (allocation to completion) per direction, ns.
    pub ticks_ns: [u64; 2],
    /// Time with at least one request owned by the driver, ns (`io_ticks`).
    pub io_ticks_ns: u64,
    /// Cache flushes sent to the device (`blk_account_io_flush`: the flush fields
    /// of `/proc/diskstats`).
    pub flush_ios: u64,
    /// Sum of flush lifetimes, ns.
    pub flush_ticks_ns: u64,
}

impl DiskStats {
    /// `time_in_queue`: the sum of the per-direction ticks, as the kernel computes it
    /// since v5.x.
    pub fn in_queue_ns(&self) -> u64 {
        self.ticks_ns[0] + self.ticks_ns[1]
    }
}

/// Outcome of [`Queue::submit_bio`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// The bio merged into a queued or plugged request.
    Merged,
    /// A new request was allocated and inserted (elevator or software queue).
    Inserted(RqId),
    /// A new request was added to the active plug.
    Plugged(RqId),
    /// A new request was handed straight to the driver (no elevator).
    Issued(RqId),
    /// A new request went to the flush state machine.
    Flush(RqId),
    /// Nothing to do (an empty flush on a device without a volatile cache): the bio
    /// completed at once, its owner is in [`Queue::take_completed`].
    Completed,
    /// The bio exceeded the queue limits and was split into this many pieces, each
    /// submitted on its own; the owner completes when all have.
    Split(u32),
    /// No scheduler tag was free: the submitter sleeps; the bio is allocated and
    /// inserted when a tag frees.
    Sleeping,
}

/// One request queue with one hardware queue; see the module docs.
pub struct Queue {
    cfg: QueueConfig,
    nr_requests: u32,
    /// An elevator other than `none` is attached (`q->elevator`).
    has_elevator: bool,
    elevator: Box<dyn Elevator>,
    rqs: RqArena,
    bios: BioArena,
    merge: MergeState,
    sched_tags: TagPool,
    driver_tags: TagPool,
    dispatch: VecDeque<RqId>,
    sched_restart: bool,
    dispatch_busy: u32,
    tag_waiters: VecDeque<Bio>,
    run_at: Option<Ns>,
    driver_inflight: u32,
    busy_since: Ns,
    stats: DiskStats,
    done: Vec<u64>,
    scratch: VecDeque<RqId>,
    plug: plug::Plug,
    fq: flush::FlushQueue,
    /// `q->requeue_list`: (request, already prepared by the driver — `RQF_DONTPREP`).
    requeue_list: VecDeque<(RqId, bool)>,
    /// `q->flush_list`: the flush request waiting for the requeue work.
    flush_list: Option<RqId>,
    /// When the requeue work is due.
    requeue_at: Option<Ns>,
    /// Owners of split bios → pieces not completed yet (`bio_chain`).
    split_left: FxHashMap<u64, u32>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("elevator", &self.elevator.name())
            .field("nr_requests", &self.nr_requests)
            .field("dispatch", &self.dispatch)
            .finish_non_exhaustive()
    }
}

impl Queue {
    /// A queue with the elevator built by `make`. An elevator named `none` is treated
    /// as "no elevator": its lists are the software queues, and requests may be
    /// issued directly.
    pub fn new(cfg: QueueConfig, make: impl FnOnce(&QueueParams) -> Box<dyn Elevator>) -> Queue {
        let nr_requests = cfg.effective_nr_requests();
        let params = QueueParams {
            nr_requests,
            queue_depth: cfg.queue_depth,
            nr_hw_queues: 1,
            nr_cpus: cfg.nr_cpus,
            hz: cfg.hz,
            rotational: cfg.rotational,
        };
        let mut elevator = make(&params);
        elevator.depth_updated(nr_requests);
        Queue {
            nr_requests,
            has_elevator: elevator.name() != "none",
            elevator,
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::new(cfg.limits),
            sched_tags: TagPool::new(nr_requests),
            driver_tags: TagPool::new(cfg.queue_depth),
            dispatch: VecDeque::new(),
            sched_restart: false,
            dispatch_busy: 0,
            tag_waiters: VecDeque::new(),
            run_at: None,
            driver_inflight: 0,
            busy_since: Ns::ZERO,
            stats: DiskStats::default(),
            done: Vec::new(),
            scratch: VecDeque::new(),
            plug: plug::Plug::default(),
            fq: flush::FlushQueue::default(),
            requeue_list: VecDeque::new(),
            flush_list: None,
            requeue_at: None,
            split_left: FxHashMap::default(),
            cfg,
        }
    }

    /// The attached elevator.
    pub fn elevator(&self) -> &dyn Elevator {
        self.elevator.as_ref()
    }

    /// The attached elevator, mutably (for tunables).
    pub fn elevator_mut(&mut self) -> &mut dyn Elevator {
        self.elevator.as_mut()
    }

    /// Effective `nr_requests`.
    pub fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    /// The queue's configuration.
    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }

    /// The live request `id`.
    pub fn request(&self, id: RqId) -> &Request {
        self.rqs.get(id)
    }

    /// Disk statistics so far (merge counts included).
    pub fn disk_stats(&self, now: Ns) -> DiskStats {
        let mut s = self.stats.clone();
        s.merges = self.merge.merges;
        if self.driver_inflight > 0 {
            s.io_ticks_ns += now.since(self.busy_since);
        }
        s
    }

    /// Requests allocated and not yet freed (the flush machinery's preallocated flush
    /// request is not counted).
    pub fn live_requests(&self) -> usize {
        self.rqs.live() - self.fq.flush_rq.is_some() as usize
    }

    /// Requests waiting on `hctx->dispatch`.
    pub fn dispatch_list_len(&self) -> usize {
        self.dispatch.len()
    }

    /// Owners of bios completed since the last call, in completion order.
    pub fn take_completed(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.done);
    }

    /// Whether completed bios are waiting for [`Queue::take_completed`].
    pub fn has_completed(&self) -> bool {
        !self.done.is_empty()
    }

    /// When the queue wants [`Queue::run`] called next, if at all (a hardware queue
    /// run or the requeue work).
    pub fn next_run(&self) -> Option<Ns> {
        match (self.run_at, self.requeue_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the elevator wants [`Queue::elevator_timer`] called, if at all.
    pub fn next_elevator_timer(&self) -> Option<Ns> {
        self.elevator.next_timer()
    }

    fn jiffies(&self, now: Ns) -> Jiffies {
        Jiffies::from_ns(now, self.cfg.hz)
    }

    /// `blk_mq_run_hw_queue(hctx, true)`: run as soon as possible.
    fn run_async(&mut self, now: Ns) {
        self.run_at = Some(now);
    }

    /// Time at which a kernel timer armed now for `ms` fires: `msecs_to_jiffies`
    /// rounds up, and the timer fires on a jiffy tick.
    fn delay_time(&self, now: Ns, ms: u64) -> Ns {
        let hz = self.cfg.hz as u64;
        let j = self.jiffies(now).0 + msecs_to_jiffies(ms, self.cfg.hz);
        Ns(((j as u128 * 1_000_000_000u128).div_ceil(hz as u128)) as u64)
    }

    /// `blk_mq_delay_run_hw_queue`: (re)arm the run work `ms` from now; like
    /// `mod_delayed_work`, this replaces a pending run.
    fn delay_run(&mut self, now: Ns, ms: u64) {
        self.run_at = Some(self.delay_time(now, ms));
    }

    /// `blk_mq_delay_run_hw_queues`: arm the run work unless a run is already pending.
    fn delay_run_if_idle(&mut self, now: Ns, ms: u64) {
        if self.run_at.is_none() {
            self.run_at = Some(self.delay_time(now, ms));
        }
    }

    fn ctx(&mut self, now: Ns) -> (ElvCtx<'_>, &mut dyn Elevator) {
        let jiffies = Jiffies::from_ns(now, self.cfg.hz);
        (
            ElvCtx {
                now,
                jiffies,
                hctx: 0,
                rqs: &mut self.rqs,
                bios: &mut self.bios,
                merge: &mut self.merge,
            },
            self.elevator.as_mut(),
        )
    }

    /// Submit one bio (`blk_mq_submit_bio`) with no driver at hand: where the kernel
    /// would issue directly (no elevator, hardware queue not busy), the request is
    /// inserted into its software queue and an immediate run requested instead.
    pub fn submit_bio(&mut self, now: Ns, bio: Bio) -> Submitted {
        self.submit(now, bio, None)
    }

    /// Submit one bio (`blk_mq_submit_bio`), issuing it directly to `drv` where the
    /// kernel does (`blk_mq_try_issue_directly`: no elevator, no plug, hardware
    /// queue not busy).
    pub fn submit_bio_direct(&mut self, now: Ns, bio: Bio, drv: &mut dyn Driver) -> Submitted {
        self.submit(now, bio, Some(drv))
    }

    fn submit(&mut self, now: Ns, mut bio: Bio, drv: Option<&mut dyn Driver>) -> Submitted {
        // submit_bio_noacct: without a volatile cache PREFLUSH and FUA mean nothing;
        // an empty flush completes at once.
        if bio.flags.any(ReqFlags::PREFLUSH | ReqFlags::FUA) && !self.cfg.write_cache {
            bio.flags = bio.flags.without(ReqFlags::PREFLUSH | ReqFlags::FUA);
            if bio.nr_sectors == 0 {
                self.done.push(bio.owner);
                return Submitted::Completed;
            }
        }
        let max = split::max_io_sectors(&bio, &self.merge.limits);
        if bio.nr_sectors > max {
            return self.submit_split(now, bio, max, drv);
        }
        self.submit_one(now, bio, drv)
    }

    /// Steps 4–10 of `blk_mq_submit_bio` for a bio within the limits.
    fn submit_one(&mut self, now: Ns, bio: Bio, drv: Option<&mut dyn Driver>) -> Submitted {
        if self.merge.limits.nomerges < 2 && bio_mergeable(&bio) {
            let bio_id = self.bios.alloc(bio);
            // blk_mq_attempt_bio_merge: the plug first, then the elevator (or the
            // software queue).
            let merged = self.plug_merge(now, &bio, bio_id) || {
                let (mut ctx, e) = self.ctx(now);
                e.bio_merge(&mut ctx, &bio, bio_id)
            };
            if merged {
                self.free_merged(now);
                return Submitted::Merged;
            }
            self.bios.free(bio_id);
        }
        if !self.tag_waiters.is_empty() {
            // Tasks already asleep on tags get them first.
            self.sleep_on_tag(now, bio);
            return Submitted::Sleeping;
        }
        match self.alloc_request(now, &bio) {
            Some(id) => self.place(now, id, drv),
            None => {
                self.sleep_on_tag(now, bio);
                Submitted::Sleeping
            }
        }
    }

    /// The submitter sleeps in `blk_mq_get_tag`: going to sleep flushes its plug
    /// (`from_schedule`, so queue runs are asynchronous).
    fn sleep_on_tag(&mut self, now: Ns, bio: Bio) {
        self.flush_plug(now, true, None);
        self.tag_waiters.push_back(bio);
    }

    /// `__blk_mq_alloc_requests` + `blk_mq_bio_to_request`: a scheduler tag (within
    /// the elevator's shallow depth), a request built from the bio, and the
    /// elevator's `prepare_request`.
    fn alloc_request(&mut self, now: Ns, bio: &Bio) -> Option<RqId> {
        let limit = if self.has_elevator {
            self.elevator
                .limit_depth(bio.op, bio.flags)
                .unwrap_or(self.nr_requests)
        } else {
            self.nr_requests
        };
        let tag = self.sched_tags.get(limit)?;
        let bio_id = self.bios.alloc(*bio);
        let mut rq = Request::from_bio(bio, bio_id, now);
        rq.sched_tag = Some(tag);
        rq.uses_sched = true;
        let id = self.rqs.alloc(rq);
        let (mut ctx, e) = self.ctx(now);
        e.prepare_request(&mut ctx, id);
        Some(id)
    }

    /// Steps 7–10 of `blk_mq_submit_bio`: flush machinery, plug, insertion, or
    /// direct issue.
    fn place(&mut self, now: Ns, id: RqId, drv: Option<&mut dyn Driver>) -> Submitted {
        let rq = self.rqs.get(id);
        let is_sync = rq.is_sync();
        if rq.flags.any(ReqFlags::PREFLUSH | ReqFlags::FUA) && self.insert_flush(now, id) {
            return Submitted::Flush(id);
        }
        if self.plug.active {
            self.add_to_plug(now, id);
            return Submitted::Plugged(id);
        }
        let busy = self.dispatch_busy > 0 && (self.cfg.nr_hw_queues <= 1 || !is_sync);
        match drv {
            Some(drv) if !self.has_elevator && !busy => self.issue_directly(now, id, drv),
            _ => {
                self.insert_request(now, id, false);
                self.free_merged(now);
                self.run_async(now);
                Submitted::Inserted(id)
            }
        }
    }

    /// `blk_mq_try_issue_directly`: driver tag, `queue_rq`; a refused request goes to
    /// the tail of `hctx->dispatch` and the queue is run.
    fn issue_directly(&mut self, now: Ns, id: RqId, drv: &mut dyn Driver) -> Submitted {
        if !self.get_driver_tag(id) {
            self.insert_request(now, id, false);
            self.run_async(now);
            return Submitted::Inserted(id);
        }
        {
            self.merge.forget(id);
        }
        match self.queue_rq(now, id, drv, true) {
            QueueRqStatus::Ok => {
                self.update_dispatch_busy(false);
                Submitted::Issued(id)
            }
            _ => {
                self.update_dispatch_busy(true);
                self.dispatch.push_back(id);
                self.run_async(now);
                Submitted::Inserted(id)
            }
        }
    }

    /// `blk_mq_insert_request`: the flush request to `hctx->dispatch` (head in
    /// mainline), everything else to the elevator (or the software queue).
    fn insert_request(&mut self, now: Ns, id: RqId, at_head: bool) {
        if self.rqs.get(id).op == Op::Flush {
            // The seed-2 comment: with NCQ a flush cannot be queued while normal
            // commands are in flight; at the head it blocks further pulls from the
            // elevator (SCHED_RESTART) and waits longer, so more flushes merge.
            match self.cfg.flush_insert {
                FlushInsert::Head => self.dispatch.push_front(id),
                FlushInsert::Tail => self.dispatch.push_back(id),
            }
            return;
        }
        let (mut ctx, e) = self.ctx(now);
        e.insert_requests(&mut ctx, &[id], at_head);
    }

    /// Free requests absorbed by merges (`blk_mq_free_request` on the merge free list).
    fn free_merged(&mut self, now: Ns) {
        while let Some(id) = self.merge.freed.pop() {
            self.free_request(now, id);
        }
    }

    /// `blk_mq_free_request`: scheduler `finish_request`, tags returned, restart check,
    /// sleeping submitters woken.
    fn free_request(&mut self, now: Ns, id: RqId) {
        {
            let uses_sched = self.rqs.get(id).uses_sched;
            let (mut ctx, e) = self.ctx(now);
            ctx.merge.forget(id);
            if uses_sched {
                e.finish_request(&mut ctx, id);
            }
        }
        let rq = self.rqs.free(id);
        if let Some(t) = rq.driver_tag {
            self.driver_tags.put(t);
        }
        if let Some(t) = rq.sched_tag {
            self.sched_tags.put(t);
        }
        self.sched_restart(now);
        while let Some(bio) = self.tag_waiters.front().copied() {
            let Some(id) = self.alloc_request(now, &bio) else {
                break;
            };
            self.tag_waiters.pop_front();
            self.place(now, id, None);
        }
    }

    /// `blk_mq_sched_restart`.
    fn sched_restart(&mut self, now: Ns) {
        if self.sched_restart {
            self.sched_restart = false;
            self.run_async(now);
        }
    }

    /// The device finished request `id` (`blk_mq_end_request`, or the flush
    /// machinery's end handlers for flush-sequence requests).
    pub fn complete(&mut self, now: Ns, id: RqId) {
        self.driver_inflight -= 1;
        if self.driver_inflight == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since);
        }
        if self.fq.flush_rq == Some(id) {
            self.flush_end_io(now);
        } else if self.rqs.get(id).flush_seq {
            self.flush_data_end_io(now, id);
        } else {
            self.end_request(now, id);
        }
    }

    /// `blk_mq_end_request`: account the I/O, end its bios, free the request.
    fn end_request(&mut self, now: Ns, id: RqId) {
        let (dir, sectors, alloc, uses_sched) = {
            let r = self.rqs.get(id);
            (r.dir().idx(), r.nr_sectors as u64, r.alloc_ns, r.uses_sched)
        };
        self.stats.ios[dir] += 1;
        self.stats.sectors[dir] += sectors;
        self.stats.ticks_ns[dir] += now.since(alloc);
        if uses_sched {
            let (mut ctx, e) = self.ctx(now);
            e.completed_request(&mut ctx, id, now);
        }
        let mut bio = self.rqs.get(id).bio_head;
        while let Some(b) = bio {
            let owner = self.bios.get(b).owner;
            bio = self.bios.next(b);
            self.bios.free(b);
            self.bio_endio(owner);
        }
        self.free_request(now, id);
    }

    /// `bio_endio`: a split bio's owner completes with its last piece.
    fn bio_endio(&mut self, owner: u64) {
        if !self.split_left.is_empty() {
            if let Some(left) = self.split_left.get_mut(&owner) {
                *left -= 1;
                if *left > 0 {
                    return;
                }
                self.split_left.remove(&owner);
            }
        }
        self.done.push(owner);
    }

    /// `blk_mq_requeue_request`: the driver gives back request `id` it had accepted.
    /// Its driver tag is returned, the elevator's `requeue_request` runs, and the
    /// requeue work re-inserts it: at the head through the elevator, or — when the
    /// driver already prepared it (`prepared`, `RQF_DONTPREP`) — at the tail of
    /// `hctx->dispatch`, where it cannot merge.
    pub fn requeue_request(&mut self, now: Ns, id: RqId, prepared: bool) {
        self.driver_inflight -= 1;
        if self.driver_inflight == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since);
        }
        self.put_driver_tag(id);
        let uses_sched = {
            let r = self.rqs.get_mut(id);
            r.started = false;
            r.uses_sched
        };
        if uses_sched {
            let (mut ctx, e) = self.ctx(now);
            e.requeue_request(&mut ctx, id);
        }
        self.requeue_list.push_back((id, prepared));
        self.kick_requeue(now);
    }

    /// `blk_mq_kick_requeue_list`: the requeue work runs now (kblockd, no delay).
    fn kick_requeue(&mut self, now: Ns) {
        if self.requeue_at.is_none_or(|t| t > now) {
            self.requeue_at = Some(now);
        }
    }

    /// `blk_mq_requeue_work`: re-insert requeued requests (at head through the
    /// elevator; prepared ones to the tail of `hctx->dispatch`), then the flush
    /// request, then run the queue.
    fn requeue_work(&mut self, now: Ns) {
        while let Some((id, prepared)) = self.requeue_list.pop_front() {
            if prepared {
                self.dispatch.push_back(id);
            } else {
                self.insert_request(now, id, true);
            }
        }
        if let Some(f) = self.flush_list.take() {
            self.insert_request(now, f, false);
        }
        self.free_merged(now);
        self.run_async(now);
    }

    /// The elevator's timer is due.
    pub fn elevator_timer(&mut self, now: Ns) {
        let (mut ctx, e) = self.ctx(now);
        e.timer_fired(&mut ctx);
        self.run_async(now);
    }

    /// Work due at `now`: the requeue work, then a queue run
    /// (`blk_mq_sched_dispatch_requests`).
    pub fn run(&mut self, now: Ns, drv: &mut dyn Driver) {
        if self.requeue_at.is_some_and(|t| t <= now) {
            self.requeue_at = None;
            self.requeue_work(now);
        }
        match self.run_at {
            Some(t) if t <= now => self.run_at = None,
            _ => return,
        }
        if self.dispatch_round(now, drv) && self.dispatch_round(now, drv) {
            self.run_async(now);
        }
    }

    /// One `__blk_mq_sched_dispatch_requests`; true means "busy" (`-EAGAIN`).
    fn dispatch_round(&mut self, now: Ns, drv: &mut dyn Driver) -> bool {
        if !self.dispatch.is_empty() {
            let mut list = std::mem::take(&mut self.dispatch);
            self.sched_restart = true;
            let all = self.dispatch_rq_list(now, drv, &mut list);
            // Keep the allocation: the list is empty now (leftovers moved back).
            if self.dispatch.is_empty() {
                self.dispatch = list;
            }
            if !all {
                return false;
            }
        }
        loop {
            match self.do_dispatch_sched(now, drv) {
                SchedRound::AllDispatched => continue,
                SchedRound::Busy => return true,
                SchedRound::Stop => return false,
            }
        }
    }

    /// `__blk_mq_do_dispatch_sched`: pull from the elevator and hand to the driver.
    fn do_dispatch_sched(&mut self, now: Ns, drv: &mut dyn Driver) -> SchedRound {
        let max_dispatch = if self.dispatch_busy > 0 {
            1
        } else {
            self.cfg.nr_sched_batch.unwrap_or(self.nr_requests).max(1)
        };
        let mut list = std::mem::take(&mut self.scratch);
        let mut busy = false;
        let mut run_queue = false;
        while (list.len() as u32) < max_dispatch {
            let (ctx, e) = self.ctx(now);
            if !e.has_work(&ctx) {
                break;
            }
            if !self.dispatch.is_empty() {
                busy = true;
                break;
            }
            let (mut ctx, e) = self.ctx(now);
            let Some(id) = e.dispatch_request(&mut ctx) else {
                run_queue = true;
                break;
            };
            ctx.merge.forget(id);
            list.push_back(id);
            if !self.get_driver_tag(id) {
                break;
            }
        }
        let dispatched = if list.is_empty() {
            if run_queue {
                self.delay_run_if_idle(now, RERUN_DELAY_MS);
            }
            false
        } else {
            self.dispatch_rq_list(now, drv, &mut list)
        };
        list.clear();
        self.scratch = list;
        if busy {
            SchedRound::Busy
        } else if dispatched {
            SchedRound::AllDispatched
        } else {
            SchedRound::Stop
        }
    }

    fn get_driver_tag(&mut self, id: RqId) -> bool {
        if self.rqs.get(id).driver_tag.is_some() {
            return true;
        }
        match self.driver_tags.get(u32::MAX) {
            Some(t) => {
                self.rqs.get_mut(id).driver_tag = Some(t);
                true
            }
            None => false,
        }
    }

    fn put_driver_tag(&mut self, id: RqId) {
        if let Some(t) = self.rqs.get_mut(id).driver_tag.take() {
            self.driver_tags.put(t);
        }
    }

    /// `blk_mq_start_request` + `queue_rq`: on refusal the request is made idle
    /// again and its driver tag returned (`__blk_mq_requeue_request`).
    fn queue_rq(&mut self, now: Ns, id: RqId, drv: &mut dyn Driver, last: bool) -> QueueRqStatus {
        {
            let r = self.rqs.get_mut(id);
            r.started = true;
            r.issue_ns = now;
        }
        let st = drv.queue_rq(now, id, self.rqs.get(id), last);
        if st == QueueRqStatus::Ok {
            if self.driver_inflight == 0 {
                self.busy_since = now;
            }
            self.driver_inflight += 1;
        } else {
            self.rqs.get_mut(id).started = false;
            self.put_driver_tag(id);
        }
        st
    }

    /// `blk_mq_dispatch_rq_list`: true when the whole list went to the driver.
    fn dispatch_rq_list(
        &mut self,
        now: Ns,
        drv: &mut dyn Driver,
        list: &mut VecDeque<RqId>,
    ) -> bool {
        if list.is_empty() {
            return false;
        }
        let mut needs_resource = false;
        let mut queued = 0;
        while let Some(&id) = list.front() {
            if !self.get_driver_tag(id) {
                // Non-shared tags: mark for restart, retry once.
                self.sched_restart = true;
                if !self.get_driver_tag(id) {
                    break;
                }
            }
            list.pop_front();
            let last = list.is_empty();
            match self.queue_rq(now, id, drv, last) {
                QueueRqStatus::Ok => queued += 1,
                st => {
                    needs_resource = st == QueueRqStatus::Resource;
                    list.push_front(id);
                    break;
                }
            }
        }
        if !list.is_empty() {
            if queued > 0 {
                drv.commit_rqs(now);
            }
            self.dispatch.extend(list.drain(..));
            if !self.sched_restart {
                self.run_async(now);
            } else if needs_resource {
                self.delay_run(now, RERUN_DELAY_MS);
            }
            self.update_dispatch_busy(true);
            return false;
        }
        self.update_dispatch_busy(false);
        true
    }

    /// `blk_mq_update_dispatch_busy`: EWMA with weight 8, factor 4.
    fn update_dispatch_busy(&mut self, busy: bool) {
        let mut ewma = self.dispatch_busy;
        if ewma == 0 && !busy {
            return;
        }
        ewma *= 7;
        if busy {
            ewma += 16;
        }
        self.dispatch_busy = ewma / 8;
    }
}

enum SchedRound {
    AllDispatched,
    Busy,
    Stop,
}

#[cfg(test)]
mod tests;
