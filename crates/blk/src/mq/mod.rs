//! The blk-mq core between submitters and the driver (`block/blk-mq.c`,
//! `block/blk-mq-sched.c`): request allocation from scheduler tags, insertion into the
//! elevator, the dispatch loop with the hardware queue's dispatch list, driver tags and
//! `SCHED_RESTART`, completion and freeing.
//!
//! A [`Queue`] is driven from outside: [`Queue::submit_bio`] when a task submits I/O,
//! [`Queue::run`] when a queue run is due (see [`Queue::next_run`]), [`Queue::complete`]
//! when the device finishes a request and [`Queue::elevator_timer`] when the
//! scheduler's timer is due. Asynchronous runs (the kernel's kblockd work) are
//! requested, not performed: the caller reads [`Queue::next_run`] and calls
//! [`Queue::run`] then, so that ordering follows the caller's event clock.
//!
//! Modelled: one hardware queue; scheduler tags (`nr_requests`) with the elevator's
//! shallow depth (`limit_depth`); tasks sleeping on scheduler tags; driver tags (device
//! queue depth) taken at dispatch; `hctx->dispatch` served first and, when it cannot be
//! emptied, the elevator not consulted; pulls of up to `nr_requests` (one when
//! `dispatch_busy`); the 3 ms re-run when the elevator has work but returns nothing; the
//! 3 ms delay after `BLK_STS_RESOURCE`; `SCHED_RESTART` on every request free; the
//! `dispatch_busy` EWMA; bio merging through the elevator; `/proc/diskstats` counters.
//! Not yet: plugging, splitting, the flush machinery, requeue (see the blk-mq issue).

use crate::elevator::{Elevator, ElvCtx, QueueParams};
use crate::merge::{MergeLimits, MergeState};
use crate::request::{Bio, BioArena, Request, RqArena, RqId};
use crate::types::{msecs_to_jiffies, Jiffies, Ns};
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
    /// Merge limits and `nomerges`.
    pub limits: MergeLimits,
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
    /// Completed requests per direction.
    pub ios: [u64; 2],
    /// Sectors per direction.
    pub sectors: [u64; 2],
    /// Merges per direction.
    pub merges: [u64; 2],
    /// Sum of request lifetimes (allocation to completion) per direction, ns.
    pub ticks_ns: [u64; 2],
    /// Time with at least one request owned by the driver, ns (`io_ticks`).
    pub io_ticks_ns: u64,
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
    /// The bio merged into a queued request.
    Merged,
    /// A new request was allocated and inserted.
    Inserted(RqId),
    /// No scheduler tag was free: the submitter sleeps; the bio is allocated and
    /// inserted when a tag frees.
    Sleeping,
}

/// One request queue with one hardware queue; see the module docs.
pub struct Queue {
    cfg: QueueConfig,
    nr_requests: u32,
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
    /// A queue with the elevator built by `make`.
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

    /// Requests allocated and not yet freed.
    pub fn live_requests(&self) -> usize {
        self.rqs.live()
    }

    /// Owners of bios completed since the last call, in completion order.
    pub fn take_completed(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.done);
    }

    /// When the queue wants [`Queue::run`] called next, if at all.
    pub fn next_run(&self) -> Option<Ns> {
        self.run_at
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

    /// Submit one bio (`blk_mq_submit_bio`): elevator bio merge, else allocate a
    /// request from the scheduler tags (sleeping if none is free), insert it and
    /// request an asynchronous queue run.
    pub fn submit_bio(&mut self, now: Ns, bio: Bio) -> Submitted {
        let bio_id = self.bios.alloc(bio);
        let merged = {
            let (mut ctx, e) = self.ctx(now);
            e.bio_merge(&mut ctx, &bio, bio_id)
        };
        if merged {
            self.free_merged(now);
            return Submitted::Merged;
        }
        self.bios.free(bio_id);
        if !self.tag_waiters.is_empty() {
            // Tasks already asleep on tags get them first.
            self.tag_waiters.push_back(bio);
            return Submitted::Sleeping;
        }
        match self.alloc_and_insert(now, bio) {
            Some(id) => Submitted::Inserted(id),
            None => {
                self.tag_waiters.push_back(bio);
                Submitted::Sleeping
            }
        }
    }

    fn alloc_and_insert(&mut self, now: Ns, bio: Bio) -> Option<RqId> {
        let limit = self
            .elevator
            .limit_depth(bio.op, bio.flags)
            .unwrap_or(self.nr_requests);
        let tag = self.sched_tags.get(limit)?;
        let bio_id = self.bios.alloc(bio);
        let mut rq = Request::from_bio(&bio, bio_id, now);
        rq.sched_tag = Some(tag);
        rq.uses_sched = true;
        let id = self.rqs.alloc(rq);
        {
            let (mut ctx, e) = self.ctx(now);
            e.prepare_request(&mut ctx, id);
            e.insert_requests(&mut ctx, &[id], false);
        }
        self.free_merged(now);
        self.run_async(now);
        Some(id)
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
            let (mut ctx, e) = self.ctx(now);
            ctx.merge.forget(id);
            e.finish_request(&mut ctx, id);
        }
        let rq = self.rqs.free(id);
        if let Some(t) = rq.driver_tag {
            self.driver_tags.put(t);
        }
        if let Some(t) = rq.sched_tag {
            self.sched_tags.put(t);
        }
        if self.sched_restart {
            self.sched_restart = false;
            self.run_async(now);
        }
        while let Some(bio) = self.tag_waiters.front().copied() {
            if self.alloc_and_insert(now, bio).is_none() {
                break;
            }
            self.tag_waiters.pop_front();
        }
    }

    /// The device finished request `id` (`blk_mq_end_request`).
    pub fn complete(&mut self, now: Ns, id: RqId) {
        let (dir, sectors, alloc) = {
            let r = self.rqs.get(id);
            (r.dir().idx(), r.nr_sectors as u64, r.alloc_ns)
        };
        self.stats.ios[dir] += 1;
        self.stats.sectors[dir] += sectors;
        self.stats.ticks_ns[dir] += now.since(alloc);
        self.driver_inflight -= 1;
        if self.driver_inflight == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since);
        }
        {
            let (mut ctx, e) = self.ctx(now);
            e.completed_request(&mut ctx, id, now);
        }
        let mut bio = self.rqs.get(id).bio_head;
        while let Some(b) = bio {
            self.done.push(self.bios.get(b).owner);
            bio = self.bios.next(b);
            self.bios.free(b);
        }
        self.free_request(now, id);
    }

    /// The elevator's timer is due.
    pub fn elevator_timer(&mut self, now: Ns) {
        let (mut ctx, e) = self.ctx(now);
        e.timer_fired(&mut ctx);
        self.run_async(now);
    }

    /// A queue run (`blk_mq_sched_dispatch_requests`), if one is due at `now`.
    pub fn run(&mut self, now: Ns, drv: &mut dyn Driver) {
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
            if !self.dispatch_rq_list(now, drv, &mut list) {
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
            self.nr_requests
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
            {
                let r = self.rqs.get_mut(id);
                r.started = true;
                r.issue_ns = now;
            }
            match drv.queue_rq(now, id, self.rqs.get(id), last) {
                QueueRqStatus::Ok => {
                    queued += 1;
                    if self.driver_inflight == 0 {
                        self.busy_since = now;
                    }
                    self.driver_inflight += 1;
                }
                st => {
                    needs_resource = st == QueueRqStatus::Resource;
                    // __blk_mq_requeue_request: back to idle, tag returned.
                    self.rqs.get_mut(id).started = false;
                    self.put_driver_tag(id);
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
