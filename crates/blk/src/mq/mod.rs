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
//! Modelled: several hardware queues (hctxs) with the kernel's CPU → hctx map
//! ([`cpumap`]); per hctx: scheduler tags (`nr_requests` each) with the elevator's
//! shallow depth (`limit_depth`, as a limit on that hctx's tag space), tasks sleeping
//! on their hctx's scheduler tags (flushing their plug first), driver tags (the
//! device's queue depth per hardware queue) taken at dispatch, `hctx->dispatch`,
//! `SCHED_RESTART`, `dispatch_busy`, the flush queue and the kblockd run work (one
//! pending run time per hctx). A request belongs to the hctx of the CPU it was
//! allocated on, and the elevator is called with that hctx; a freed request restarts
//! only its own hctx. With an elevator that sets `QUEUE_FLAG_SQ_SCHED`
//! ([`Elevator::single_queue`], mq-deadline) a run of one hctx may pull requests of
//! others: they are sorted by hctx and handed to the driver per hctx, and
//! "run all hardware queues" means the running hctx plus those with a non-empty
//! dispatch list. Also: the per-task plug with plug merging and auto-flush at 32
//! requests or after a ≥ 128 KiB request; bio splitting at `max_sectors` /
//! `max_segments`; merging (plug, then the elevator's `bio_merge` — for `none` the
//! software-queue scan) under `nomerges`; direct issue without an elevator;
//! `hctx->dispatch` served first and, when it cannot be emptied, the elevator not
//! consulted; pulls of up to `nr_requests` (one when `dispatch_busy`); the 3 ms
//! re-run when the elevator has work but returns nothing; the 3 ms delay after
//! `BLK_STS_RESOURCE`; `BLK_STS_DEV_RESOURCE` on one hctx re-run by the next
//! completion on any hctx; the flush machinery (decomposition, double-buffered pending
//! lists, one flush in flight per hctx, `FLUSH_PENDING_TIMEOUT`, flush request at the
//! head of `hctx->dispatch`); requeue through the requeue list; `/proc/diskstats`
//! counters. Not modelled: shared tag sets (`BLK_MQ_F_TAG_HCTX_SHARED`, SCSI hosts),
//! SMT/NUMA-aware CPU grouping, READ/POLL queue maps, `rq_qos` throttling, plug
//! request caching (`nr_ios`).
//!
//! Zoned devices ([`Queue::set_zoned`]): bios are split at zone boundaries
//! (`chunk_sectors`), and writes to sequential zones go through zone write
//! plugging ([`crate::zoned`]) at the points `blk_mq_submit_bio` calls it:
//! after the merge attempt (`blk_zone_plug_bio`), when the request is set up
//! (`blk_zone_write_plug_init_request`), at each bio's end and at the request's
//! free (`blk_zone_write_plug_finish_request`). The plug BIO work is requested
//! like the run work ([`Queue::next_run`]) and runs at the start of
//! [`Queue::run`]. Requests the device fails ([`Queue::complete_status`]) end
//! their bios with an error ([`Queue::take_failed`]).

pub mod cpumap;
mod flush;
mod plug;
mod split;

pub use flush::FlushInsert;

use crate::elevator::{Elevator, ElvCtx, QueueParams};
use crate::merge::{bio_mergeable, MergeLimits, MergeState};
use crate::request::{Bio, BioArena, Request, RqArena, RqId};
use crate::types::{msecs_to_jiffies, Jiffies, Ns, Op, ReqFlags};
use crate::zoned::{BlkZone, Plugging, ZoneWplugs, ZonedLimits};
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
    /// Driver tags: the device's queue depth per hardware queue.
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
    /// Hardware queues the device has; the queue gets at most one per CPU
    /// ([`cpumap::effective_nr_hw_queues`]), each with its own driver tags
    /// (`queue_depth`), scheduler tags (`nr_requests`) and dispatch list.
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
/// `MAX_SCHED_RQ` (`16 * BLKDEV_DEFAULT_RQ`): the most scheduler tags
/// `queue/nr_requests` can ask for.
pub const MAX_SCHED_RQ: u32 = 16 * BLKDEV_DEFAULT_RQ;
/// `BLK_MQ_MAX_DEPTH`: the deepest tag set a driver can register.
pub const BLK_MQ_MAX_DEPTH: u32 = 10240;
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
    /// Whether [`TagPool::get`] with `limit` would succeed.
    fn fits(&self, limit: u32) -> bool {
        self.used < limit.min(self.depth) && !self.free.is_empty()
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
    /// Completed discards (`STAT_DISCARD`: not among the writes).
    pub discard_ios: u64,
    /// Sectors discarded.
    pub discard_sectors: u64,
    /// Discard merges.
    pub discard_merges: u64,
    /// Sum of discard lifetimes, ns.
    pub discard_ticks_ns: u64,
}

impl DiskStats {
    /// `time_in_queue` (field 11 of `/sys/block/*/stat`, what fio's `in_queue`
    /// reads): the sum of the read, write, discard and flush ticks, as
    /// `part_stat_show` computes it.
    pub fn in_queue_ns(&self) -> u64 {
        self.ticks_ns[0] + self.ticks_ns[1] + self.discard_ticks_ns + self.flush_ticks_ns
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
    /// A write to a zone with a write in flight: the bio waits on the zone's
    /// write plug.
    ZonePlugged,
    /// The bio failed at once (zone write plugging refused it: not at the
    /// write pointer, across a zone, to a full zone, a reset of a conventional
    /// zone); its owner is in [`Queue::take_completed`] and
    /// [`Queue::take_failed`].
    Failed,
}

/// Block-layer work done since the last [`Queue::take_work`]: what a host model
/// prices in CPU time and lock hold time. Counts of calls, as the kernel makes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Bios submitted (`submit_bio`), split pieces counted once each.
    pub bios: u64,
    /// Elevator `bio_merge` lookups (each takes the scheduler's lock).
    pub merge_calls: u64,
    /// Requests allocated (a scheduler or driver tag taken).
    pub tags: u64,
    /// `insert_requests` calls (one lock acquisition each).
    pub insert_calls: u64,
    /// Requests inserted by them.
    pub inserts: u64,
    /// `dispatch_request` calls, those returning nothing included.
    pub dispatch_calls: u64,
    /// Requests handed to the driver (`queue_rq`).
    pub queue_rqs: u64,
    /// Requests ended (`blk_mq_end_request`).
    pub completions: u64,
    /// Elevator `finish_request` calls.
    pub finishes: u64,
    /// The elevator's own work ([`Elevator::take_work`]).
    pub elv: crate::elevator::ElvWork,
}

impl Work {
    /// Calls that take the elevator's queue-wide lock in the kernel (`bio_merge`,
    /// `insert_requests`, `dispatch_request`; `finish_request` when `finish_locks`).
    pub fn lock_calls(&self, finish_locks: bool) -> u64 {
        self.merge_calls
            + self.insert_calls
            + self.dispatch_calls
            + if finish_locks { self.finishes } else { 0 }
    }
}

/// One hardware context (`struct blk_mq_hw_ctx`).
#[derive(Debug)]
struct Hctx {
    sched_tags: TagPool,
    driver_tags: TagPool,
    /// `hctx->dispatch`.
    dispatch: VecDeque<RqId>,
    /// `BLK_MQ_S_SCHED_RESTART`.
    sched_restart: bool,
    dispatch_busy: u32,
    /// Bios of tasks sleeping on this hctx's scheduler tags.
    tag_waiters: VecDeque<Bio>,
    /// When the run work (kblockd) is due.
    run_at: Option<Ns>,
    /// The driver answered `BLK_STS_DEV_RESOURCE`: a completion on any hctx re-runs
    /// this one (the driver's guarantee; only used with several hctxs).
    dev_resource: bool,
}

impl Hctx {
    fn new(nr_requests: u32, queue_depth: u32) -> Hctx {
        Hctx {
            sched_tags: TagPool::new(nr_requests),
            driver_tags: TagPool::new(queue_depth),
            dispatch: VecDeque::new(),
            sched_restart: false,
            dispatch_busy: 0,
            tag_waiters: VecDeque::new(),
            run_at: None,
            dev_resource: false,
        }
    }
}

/// One request queue with its hardware queues; see the module docs.
pub struct Queue {
    cfg: QueueConfig,
    nr_requests: u32,
    /// An elevator other than `none` is attached (`q->elevator`).
    has_elevator: bool,
    /// `QUEUE_FLAG_SQ_SCHED`.
    sq_sched: bool,
    elevator: Box<dyn Elevator>,
    rqs: RqArena,
    bios: BioArena,
    merge: MergeState,
    /// `mq_map`: CPU → hctx.
    cpu_map: Vec<u16>,
    hctxs: Vec<Hctx>,
    /// The earliest `run_at` over all hctxs.
    run_min: Option<Ns>,
    /// Per-hctx flush queues (`hctx->fq`).
    fqs: Vec<flush::FlushQueue>,
    driver_inflight: u32,
    /// Hctxs with `dev_resource` set.
    dev_resource_waiters: u32,
    busy_since: Ns,
    stats: DiskStats,
    done: Vec<u64>,
    scratch: VecDeque<RqId>,
    /// One hctx's share of an `SQ_SCHED` pull.
    scratch_hctx: VecDeque<RqId>,
    plug: plug::Plug,
    /// `q->requeue_list`: (request, already prepared by the driver — `RQF_DONTPREP`).
    requeue_list: VecDeque<(RqId, bool)>,
    /// `q->flush_list`: flush requests waiting for the requeue work.
    flush_list: Vec<RqId>,
    /// When the requeue work is due.
    requeue_at: Option<Ns>,
    /// Owners of split bios → pieces not completed yet (`bio_chain`).
    split_left: FxHashMap<u64, u32>,
    /// Work counted for the host model.
    work: Work,
    /// The CPU the caller acts on ([`Queue::set_cpu`]).
    cur_cpu: u32,
    /// Zone write plugs of a zoned device.
    zwplugs: Option<ZoneWplugs>,
    /// When the zone write plug BIO work is due.
    zone_work_at: Option<Ns>,
    /// Owners of bios that ended with an error.
    failed: Vec<u64>,
    /// (owner, sector) of emulated zone appends that completed.
    appended: Vec<(u64, u64)>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("elevator", &self.elevator.name())
            .field("nr_requests", &self.nr_requests)
            .field("nr_hw_queues", &self.hctxs.len())
            .finish_non_exhaustive()
    }
}

impl Queue {
    /// A queue with the elevator built by `make`. An elevator named `none` is treated
    /// as "no elevator": its lists are the software queues, and requests may be
    /// issued directly.
    pub fn new(cfg: QueueConfig, make: impl FnOnce(&QueueParams) -> Box<dyn Elevator>) -> Queue {
        let nr_requests = cfg.effective_nr_requests();
        let nr_hw = cpumap::effective_nr_hw_queues(cfg.nr_hw_queues, cfg.nr_cpus);
        let params = QueueParams {
            nr_requests,
            queue_depth: cfg.queue_depth,
            nr_hw_queues: nr_hw,
            nr_cpus: cfg.nr_cpus,
            hz: cfg.hz,
            rotational: cfg.rotational,
        };
        let mut elevator = make(&params);
        elevator.depth_updated(nr_requests);
        Queue {
            nr_requests,
            has_elevator: elevator.name() != "none",
            sq_sched: elevator.single_queue(),
            elevator,
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::new(cfg.limits),
            cpu_map: cpumap::map_queues(cfg.nr_cpus, nr_hw),
            hctxs: (0..nr_hw)
                .map(|_| Hctx::new(nr_requests, cfg.queue_depth))
                .collect(),
            run_min: None,
            fqs: (0..nr_hw).map(|_| flush::FlushQueue::default()).collect(),
            driver_inflight: 0,
            dev_resource_waiters: 0,
            busy_since: Ns::ZERO,
            stats: DiskStats::default(),
            done: Vec::new(),
            scratch: VecDeque::new(),
            scratch_hctx: VecDeque::new(),
            plug: plug::Plug::default(),
            requeue_list: VecDeque::new(),
            flush_list: Vec::new(),
            requeue_at: None,
            split_left: FxHashMap::default(),
            work: Work::default(),
            cur_cpu: 0,
            zwplugs: None,
            zone_work_at: None,
            failed: Vec::new(),
            appended: Vec::new(),
            cfg,
        }
    }

    /// Make this the queue of a zoned device (`blk_revalidate_disk_zones`):
    /// zones as `report` gives them, bios split at zone boundaries
    /// (`chunk_sectors`), writes handled by zone write plugging.
    pub fn set_zoned(&mut self, lim: ZonedLimits, report: &[BlkZone]) {
        self.merge.limits.chunk_sectors = lim.zone_sectors;
        self.zwplugs = Some(ZoneWplugs::new(lim, report));
    }

    /// The zone write plugs, on a zoned device.
    pub fn zone_wplugs(&self) -> Option<&ZoneWplugs> {
        self.zwplugs.as_ref()
    }

    /// A zone report reached the block layer (`disk_report_zone` for each
    /// zone): plugs that lost their write pointer after an error take it.
    pub fn report_zones(&mut self, zones: &[BlkZone]) {
        if let Some(z) = &mut self.zwplugs {
            for zone in zones {
                z.report_zone(zone);
            }
        }
    }

    /// Owners of bios that ended with an error since the last call (they are
    /// in [`Queue::take_completed`] too).
    pub fn take_failed(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.failed);
    }

    /// (owner, sector written) of emulated zone appends completed since the
    /// last call.
    pub fn take_appended(&mut self, out: &mut Vec<(u64, u64)>) {
        out.append(&mut self.appended);
    }

    /// The attached elevator.
    pub fn elevator(&self) -> &dyn Elevator {
        self.elevator.as_ref()
    }

    /// The attached elevator, mutably (for tunables).
    pub fn elevator_mut(&mut self) -> &mut dyn Elevator {
        self.elevator.as_mut()
    }

    /// The block-layer work done since the last call (the elevator's included),
    /// and start counting afresh.
    pub fn take_work(&mut self) -> Work {
        let mut w = std::mem::take(&mut self.work);
        w.elv = self.elevator.take_work();
        w
    }

    /// The CPU the caller's next calls act on (a host model): requests handed to
    /// the driver record it as their [`Request::issue_cpu`].
    pub fn set_cpu(&mut self, cpu: u32) {
        self.cur_cpu = cpu;
    }

    /// An elevator other than `none` is attached.
    pub fn has_elevator(&self) -> bool {
        self.has_elevator
    }

    /// Effective `nr_requests` (per hardware queue).
    pub fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    /// The queue's configuration.
    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }

    /// Hardware queues in use.
    pub fn nr_hw_queues(&self) -> u16 {
        self.hctxs.len() as u16
    }

    /// The hardware queue requests allocated on `cpu` belong to.
    pub fn hctx_of_cpu(&self, cpu: u32) -> u16 {
        cpumap::hctx_of_cpu(&self.cpu_map, cpu)
    }

    /// The CPU → hardware queue map (`mq_map`).
    pub fn cpu_map(&self) -> &[u16] {
        &self.cpu_map
    }

    /// Scheduler tags of `hctx` currently allocated.
    pub fn sched_tags_in_use(&self, hctx: u16) -> u32 {
        self.hctxs[hctx as usize].sched_tags.used
    }

    /// Driver tags of `hctx` currently held.
    pub fn driver_tags_in_use(&self, hctx: u16) -> u32 {
        self.hctxs[hctx as usize].driver_tags.used
    }

    /// Tasks sleeping on `hctx`'s scheduler tags.
    pub fn tag_sleepers(&self, hctx: u16) -> usize {
        self.hctxs[hctx as usize].tag_waiters.len()
    }

    /// Whether the bio of `owner` is still asleep waiting for a scheduler tag
    /// ([`Submitted::Sleeping`]): its task is blocked until it is not.
    pub fn waiting_for_tag(&self, owner: u64) -> bool {
        self.hctxs
            .iter()
            .any(|h| h.tag_waiters.iter().any(|b| b.owner == owner))
    }

    /// When `hctx`'s run work is due, if pending.
    pub fn hctx_next_run(&self, hctx: u16) -> Option<Ns> {
        self.hctxs[hctx as usize].run_at
    }

    /// The live request `id`.
    pub fn request(&self, id: RqId) -> &Request {
        self.rqs.get(id)
    }

    /// Disk statistics so far (merge counts included).
    pub fn disk_stats(&self, now: Ns) -> DiskStats {
        let mut s = self.stats.clone();
        s.merges = self.merge.merges;
        s.discard_merges = self.merge.discard_merges;
        if self.driver_inflight > 0 {
            s.io_ticks_ns += now.since(self.busy_since);
        }
        s
    }

    /// Requests allocated and not yet freed (the flush machinery's preallocated flush
    /// requests are not counted).
    pub fn live_requests(&self) -> usize {
        self.rqs.live() - self.fqs.iter().filter(|f| f.flush_rq.is_some()).count()
    }

    /// Requests waiting on the `hctx->dispatch` lists.
    pub fn dispatch_list_len(&self) -> usize {
        self.hctxs.iter().map(|h| h.dispatch.len()).sum()
    }

    /// Owners of bios completed since the last call, in completion order.
    pub fn take_completed(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.done);
    }

    /// Whether completed bios are waiting for [`Queue::take_completed`].
    pub fn has_completed(&self) -> bool {
        !self.done.is_empty()
    }

    /// When the queue wants [`Queue::run`] called next, if at all: the earliest
    /// hardware queue run or the requeue work.
    pub fn next_run(&self) -> Option<Ns> {
        // Pairwise: the simulator asks after every event, and the array form
        // compiled to stack copies the loads then stalled on.
        fn earlier(a: Option<Ns>, b: Option<Ns>) -> Option<Ns> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, None) => a,
                (None, b) => b,
            }
        }
        earlier(earlier(self.run_min, self.requeue_at), self.zone_work_at)
    }

    /// When the elevator wants [`Queue::elevator_timer`] called, if at all.
    pub fn next_elevator_timer(&self) -> Option<Ns> {
        self.elevator.next_timer()
    }

    fn jiffies(&self, now: Ns) -> Jiffies {
        Jiffies::from_ns(now, self.cfg.hz)
    }

    /// `blk_mq_run_hw_queue(hctx, true)`: run as soon as possible.
    fn run_async(&mut self, now: Ns, hctx: u16) {
        self.set_run_at(hctx, Some(now));
    }

    /// Set `hctx`'s run time, keeping `run_min` (the earliest over all hctxs) exact.
    fn set_run_at(&mut self, hctx: u16, v: Option<Ns>) {
        let old = std::mem::replace(&mut self.hctxs[hctx as usize].run_at, v);
        if let Some(t) = v {
            if self.run_min.is_none_or(|m| t <= m) {
                self.run_min = Some(t);
                return;
            }
        }
        if old.is_some() && old == self.run_min {
            self.run_min = self.hctxs.iter().filter_map(|h| h.run_at).min();
        }
    }

    /// Whether `hctx` has anything to run (`blk_mq_hctx_has_pending`).
    fn hctx_has_pending(&mut self, now: Ns, hctx: u16) -> bool {
        if !self.hctxs[hctx as usize].dispatch.is_empty() {
            return true;
        }
        let (ctx, e) = self.ctx(now, hctx);
        e.has_work(&ctx)
    }

    /// `blk_mq_run_hw_queues(q, true)` from a context running on a CPU of `cur`:
    /// with one hctx, that one; with an `SQ_SCHED` elevator, `cur` and every hctx
    /// with a non-empty dispatch list; else every hctx with pending work.
    fn run_all_async(&mut self, now: Ns, cur: u16) {
        if self.hctxs.len() == 1 {
            self.run_async(now, 0);
            return;
        }
        for h in 0..self.hctxs.len() as u16 {
            let run = if self.sq_sched {
                h == cur || !self.hctxs[h as usize].dispatch.is_empty()
            } else {
                self.hctx_has_pending(now, h)
            };
            if run {
                self.run_async(now, h);
            }
        }
    }

    /// Time at which a kernel timer armed now for `ms` fires: `msecs_to_jiffies`
    /// rounds up, and the timer fires on a jiffy tick.
    fn delay_time(&self, now: Ns, ms: u64) -> Ns {
        let hz = self.cfg.hz as u64;
        let j = self.jiffies(now).0 + msecs_to_jiffies(ms, self.cfg.hz);
        Ns(crate::types::mul_div_ceil(j, 1_000_000_000, hz))
    }

    /// `blk_mq_delay_run_hw_queue`: (re)arm the run work `ms` from now; like
    /// `mod_delayed_work`, this replaces a pending run.
    fn delay_run(&mut self, now: Ns, hctx: u16, ms: u64) {
        let t = self.delay_time(now, ms);
        self.set_run_at(hctx, Some(t));
    }

    /// `blk_mq_delay_run_hw_queues` from a run of `cur`: arm the run work of every
    /// hctx (`SQ_SCHED`: `cur` and those with a non-empty dispatch list) unless a run
    /// is already pending there.
    fn delay_run_all_if_idle(&mut self, now: Ns, cur: u16, ms: u64) {
        let t = self.delay_time(now, ms);
        for h in 0..self.hctxs.len() {
            let hc = &self.hctxs[h];
            if self.sq_sched && h != cur as usize && hc.dispatch.is_empty() {
                continue;
            }
            if hc.run_at.is_none() {
                self.set_run_at(h as u16, Some(t));
            }
        }
    }

    fn ctx(&mut self, now: Ns, hctx: u16) -> (ElvCtx<'_>, &mut dyn Elevator) {
        let jiffies = Jiffies::from_ns(now, self.cfg.hz);
        (
            ElvCtx {
                now,
                jiffies,
                hctx,
                rqs: &mut self.rqs,
                bios: &mut self.bios,
                merge: &mut self.merge,
            },
            self.elevator.as_mut(),
        )
    }

    /// The hctx of live request `id`.
    fn hctx_of(&self, id: RqId) -> u16 {
        self.rqs.get(id).hctx
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
        self.work.bios += 1;
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
    fn submit_one(&mut self, now: Ns, mut bio: Bio, drv: Option<&mut dyn Driver>) -> Submitted {
        let hctx = self.hctx_of_cpu(bio.cpu);
        if self.merge.limits.nomerges < 2 && bio_mergeable(&bio) {
            let bio_id = self.bios.alloc(bio);
            // blk_mq_attempt_bio_merge: the plug first, then the elevator (or the
            // software queue).
            let merged = self.plug_merge(now, &bio, bio_id) || {
                self.work.merge_calls += u64::from(self.has_elevator);
                let (mut ctx, e) = self.ctx(now, hctx);
                e.bio_merge(&mut ctx, &bio, bio_id)
            };
            if merged {
                self.zone_merged();
                self.free_merged(now);
                return Submitted::Merged;
            }
            self.bios.free(bio_id);
        }
        if let Some(z) = &mut self.zwplugs {
            if ZoneWplugs::needs_plugging(&bio) {
                match z.plug_bio(bio) {
                    Plugging::Submit(b) => bio = b,
                    Plugging::Plugged => return Submitted::ZonePlugged,
                    Plugging::Fail(mut b) => {
                        // Its end goes through plugging too (a failed write
                        // leaves the plug needing a write pointer update).
                        self.zone_bio_endio(&mut b, false);
                        self.fail_bio(b);
                        self.zone_aborted();
                        return Submitted::Failed;
                    }
                }
            }
        }
        self.submit_new_request(now, hctx, bio, drv)
    }

    /// A bio released from a zone write plug: it went through merging and
    /// plugging already, so it goes straight to a new request.
    fn submit_released(&mut self, now: Ns, bio: Bio, drv: Option<&mut dyn Driver>) -> Submitted {
        let hctx = self.hctx_of_cpu(bio.cpu);
        self.submit_new_request(now, hctx, bio, drv)
    }

    /// Bios that back-merged into zone-plugged requests move their zones'
    /// write pointers (`blk_zone_write_plug_bio_merged`).
    fn zone_merged(&mut self) {
        let Some(z) = &mut self.zwplugs else {
            self.merge.zone_merged.clear();
            return;
        };
        for id in self.merge.zone_merged.drain(..) {
            z.bio_merged(self.bios.get_mut(id));
        }
    }

    /// `new_request:` onwards: a request for `bio`, or sleep for a tag.
    fn submit_new_request(
        &mut self,
        now: Ns,
        hctx: u16,
        bio: Bio,
        drv: Option<&mut dyn Driver>,
    ) -> Submitted {
        if self.waiter_fits(hctx).is_some() {
            // Tasks already asleep on this hctx's tags get them first — those that
            // can take one: a waiter held back by its own shallow depth (BFQ's one
            // tag for a process over its share) does not hold up the others.
            self.sleep_on_tag(now, hctx, bio);
            return Submitted::Sleeping;
        }
        match self.alloc_request(now, hctx, &bio) {
            Some(id) => self.place(now, id, drv),
            None => {
                self.sleep_on_tag(now, hctx, bio);
                Submitted::Sleeping
            }
        }
    }

    /// The submitter sleeps in `blk_mq_get_tag` on `hctx`'s tags: going to sleep
    /// flushes its plug (`from_schedule`, so queue runs are asynchronous).
    fn sleep_on_tag(&mut self, now: Ns, hctx: u16, bio: Bio) {
        self.flush_plug(now, true, None);
        self.hctxs[hctx as usize].tag_waiters.push_back(bio);
    }

    /// The shallow depth an allocation for `bio` may use (`limit_depth`).
    fn alloc_limit(&self, bio: &Bio) -> u32 {
        if self.has_elevator {
            self.elevator
                .limit_depth_for(bio.op, bio.flags, bio.pid)
                .unwrap_or(self.nr_requests)
        } else {
            self.nr_requests
        }
    }

    /// The first task asleep on `hctx`'s tags whose allocation would succeed now.
    fn waiter_fits(&self, hctx: u16) -> Option<usize> {
        let h = &self.hctxs[hctx as usize];
        if h.tag_waiters.is_empty() || !h.sched_tags.fits(u32::MAX) {
            // No tag free at all: nobody fits (without a scan of every sleeper).
            return None;
        }
        h.tag_waiters
            .iter()
            .position(|b| h.sched_tags.fits(self.alloc_limit(b)))
    }

    /// `__blk_mq_alloc_requests` + `blk_mq_bio_to_request`: a scheduler tag of the
    /// submitting CPU's hctx (within the elevator's shallow depth), a request built
    /// from the bio, and the elevator's `prepare_request`.
    fn alloc_request(&mut self, now: Ns, hctx: u16, bio: &Bio) -> Option<RqId> {
        let limit = self.alloc_limit(bio);
        let tag = self.hctxs[hctx as usize].sched_tags.get(limit)?;
        self.work.tags += 1;
        let bio_id = self.bios.alloc(*bio);
        let mut rq = Request::from_bio(bio, bio_id, now);
        rq.sched_tag = Some(tag);
        rq.uses_sched = true;
        rq.hctx = hctx;
        let id = self.rqs.alloc(rq);
        let (mut ctx, e) = self.ctx(now, hctx);
        e.prepare_request(&mut ctx, id);
        if bio.flags.has(ReqFlags::ZONE_WRITE_PLUGGING) {
            self.zone_init_request(id);
        }
        Some(id)
    }

    /// `blk_zone_write_plug_init_request`: the request holds a plug reference,
    /// and plugged bios that continue it merge into its back.
    fn zone_init_request(&mut self, id: RqId) {
        let Some(z) = &mut self.zwplugs else { return };
        let lim = self.merge.limits;
        let r = self.rqs.get_mut(id);
        r.zone_write_plugging = true;
        let (pos, end) = (r.sector.0, r.end().0);
        let (mut sectors, mut segs) = (r.nr_sectors, r.nr_segments);
        let rq_view = r.clone();
        let merged = z.init_request(pos, end, lim.nomerges >= 2, |b, _| {
            let ok = crate::merge::bio_merge_ok(&rq_view, b)
                && sectors + b.nr_sectors <= lim.max_sectors_at(pos)
                && segs + crate::merge::bio_segments(b) <= lim.max_segments;
            if ok {
                sectors += b.nr_sectors;
                segs += crate::merge::bio_segments(b);
            }
            ok
        });
        for b in merged {
            let bid = self.bios.alloc(b);
            let r = self.rqs.get_mut(id);
            let tail = r.bio_tail.replace(bid);
            r.nr_sectors += b.nr_sectors;
            r.nr_segments += crate::merge::bio_segments(&b);
            if let Some(t) = tail {
                self.bios.set_next(t, Some(bid));
            }
            self.merge.merges[b.op.dir().idx()] += 1;
        }
    }

    /// Steps 7–10 of `blk_mq_submit_bio`: flush machinery, plug, insertion, or
    /// direct issue.
    fn place(&mut self, now: Ns, id: RqId, drv: Option<&mut dyn Driver>) -> Submitted {
        let rq = self.rqs.get(id);
        let is_sync = rq.is_sync();
        let hctx = rq.hctx;
        if rq.flags.any(ReqFlags::PREFLUSH | ReqFlags::FUA) && self.insert_flush(now, id) {
            return Submitted::Flush(id);
        }
        if self.plug.active {
            self.add_to_plug(now, id);
            return Submitted::Plugged(id);
        }
        let busy =
            self.hctxs[hctx as usize].dispatch_busy > 0 && (self.hctxs.len() <= 1 || !is_sync);
        match drv {
            Some(drv) if !self.has_elevator && !busy => self.issue_directly(now, id, drv),
            _ => {
                self.insert_request(now, id, false);
                self.free_merged(now);
                self.run_async(now, hctx);
                Submitted::Inserted(id)
            }
        }
    }

    /// `blk_mq_try_issue_directly`: driver tag, `queue_rq`; a refused request goes to
    /// the tail of `hctx->dispatch` and the queue is run.
    fn issue_directly(&mut self, now: Ns, id: RqId, drv: &mut dyn Driver) -> Submitted {
        let hctx = self.hctx_of(id);
        if !self.get_driver_tag(id) {
            self.insert_request(now, id, false);
            self.run_async(now, hctx);
            return Submitted::Inserted(id);
        }
        {
            self.merge.forget(id);
        }
        match self.queue_rq(now, id, drv, true) {
            QueueRqStatus::Ok => {
                self.update_dispatch_busy(hctx, false);
                Submitted::Issued(id)
            }
            _ => {
                self.update_dispatch_busy(hctx, true);
                self.hctxs[hctx as usize].dispatch.push_back(id);
                self.run_async(now, hctx);
                Submitted::Inserted(id)
            }
        }
    }

    /// `blk_mq_insert_request`: the flush request to `hctx->dispatch` (head in
    /// mainline), everything else to the elevator (or the software queue).
    fn insert_request(&mut self, now: Ns, id: RqId, at_head: bool) {
        let (op, hctx) = {
            let r = self.rqs.get(id);
            (r.op, r.hctx)
        };
        if op == Op::Flush {
            // The seed-2 comment: with NCQ a flush cannot be queued while normal
            // commands are in flight; at the head it blocks further pulls from the
            // elevator (SCHED_RESTART) and waits longer, so more flushes merge.
            let d = &mut self.hctxs[hctx as usize].dispatch;
            match self.cfg.flush_insert {
                FlushInsert::Head => d.push_front(id),
                FlushInsert::Tail => d.push_back(id),
            }
            return;
        }
        self.work.insert_calls += 1;
        self.work.inserts += 1;
        let (mut ctx, e) = self.ctx(now, hctx);
        e.insert_requests(&mut ctx, &[id], at_head);
    }

    /// Free requests absorbed by merges (`blk_mq_free_request` on the merge free list).
    fn free_merged(&mut self, now: Ns) {
        while let Some(id) = self.merge.freed.pop() {
            self.free_request(now, id);
        }
    }

    /// `blk_mq_free_request`: scheduler `finish_request`, tags returned to the
    /// request's hctx, restart check of that hctx, tasks sleeping on its tags woken.
    fn free_request(&mut self, now: Ns, id: RqId) {
        let hctx = self.hctx_of(id);
        {
            let uses_sched = self.rqs.get(id).uses_sched;
            let (mut ctx, e) = self.ctx(now, hctx);
            ctx.merge.forget(id);
            if uses_sched {
                e.finish_request(&mut ctx, id);
                self.work.finishes += 1;
            }
        }
        let rq = self.rqs.free(id);
        if rq.zone_write_plugging {
            if let Some(z) = &mut self.zwplugs {
                z.finish_request(rq.sector.0);
                if z.has_work() && self.zone_work_at.is_none() {
                    // queue_work on the zone write plug workqueue.
                    self.zone_work_at = Some(now);
                }
            }
        }
        let h = &mut self.hctxs[hctx as usize];
        if let Some(t) = rq.driver_tag {
            h.driver_tags.put(t);
        }
        if let Some(t) = rq.sched_tag {
            h.sched_tags.put(t);
        }
        self.sched_restart(now, hctx);
        // Wake waiters in order, passing over those their own shallow depth still
        // holds back (they retry at the next release).
        while let Some(i) = self.waiter_fits(hctx) {
            let bio = self.hctxs[hctx as usize].tag_waiters[i];
            let Some(id) = self.alloc_request(now, hctx, &bio) else {
                break;
            };
            self.hctxs[hctx as usize].tag_waiters.remove(i);
            self.place(now, id, None);
        }
    }

    /// `blk_mq_sched_restart`.
    fn sched_restart(&mut self, now: Ns, hctx: u16) {
        if self.hctxs[hctx as usize].sched_restart {
            self.hctxs[hctx as usize].sched_restart = false;
            self.run_async(now, hctx);
        }
    }

    /// The device finished request `id` (`blk_mq_end_request`, or the flush
    /// machinery's end handlers for flush-sequence requests).
    pub fn complete(&mut self, now: Ns, id: RqId) {
        self.complete_status(now, id, true);
    }

    /// The device finished request `id`, successfully or not (`ok` =
    /// `BLK_STS_OK`). A failed request ends its bios with an error; requests
    /// of the flush machinery are always taken as successful.
    pub fn complete_status(&mut self, now: Ns, id: RqId, ok: bool) {
        self.driver_inflight -= 1;
        if self.driver_inflight == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since);
        }
        let hctx = self.hctx_of(id);
        if self.dev_resource_waiters > 0 && self.hctxs.len() > 1 {
            // BLK_STS_DEV_RESOURCE: the driver re-runs queues it refused when one of
            // its commands completes.
            for h in 0..self.hctxs.len() {
                if h != hctx as usize && self.hctxs[h].dev_resource {
                    self.hctxs[h].dev_resource = false;
                    self.dev_resource_waiters -= 1;
                    self.run_async(now, h as u16);
                }
            }
        }
        if self.fqs[hctx as usize].flush_rq == Some(id) {
            self.flush_end_io(now, hctx);
        } else if self.rqs.get(id).flush_seq {
            self.flush_data_end_io(now, id);
        } else {
            self.end_request_status(now, id, ok);
        }
    }

    /// `blk_mq_end_request`: account the I/O, end its bios, free the request.
    fn end_request(&mut self, now: Ns, id: RqId) {
        self.end_request_status(now, id, true);
    }

    /// `blk_mq_end_request` with a status.
    fn end_request_status(&mut self, now: Ns, id: RqId, ok: bool) {
        let (op, sectors, alloc, uses_sched, hctx) = {
            let r = self.rqs.get(id);
            (r.op, r.nr_sectors as u64, r.alloc_ns, r.uses_sched, r.hctx)
        };
        self.work.completions += 1;
        // `blk_account_io_done`, by `op_stat_group`.
        let ticks = now.since(alloc);
        if op == Op::Discard {
            self.stats.discard_ios += 1;
            self.stats.discard_sectors += sectors;
            self.stats.discard_ticks_ns += ticks;
        } else {
            let dir = op.dir().idx();
            self.stats.ios[dir] += 1;
            self.stats.sectors[dir] += sectors;
            self.stats.ticks_ns[dir] += ticks;
        }
        if uses_sched {
            let (mut ctx, e) = self.ctx(now, hctx);
            e.completed_request(&mut ctx, id, now);
        }
        let mut bio = self.rqs.get(id).bio_head;
        while let Some(b) = bio {
            let owner = self.bios.get(b).owner;
            if self.zwplugs.is_some() {
                let mut done = *self.bios.get(b);
                self.zone_bio_endio(&mut done, ok);
            }
            bio = self.bios.next(b);
            self.bios.free(b);
            if !ok {
                self.failed.push(owner);
            }
            self.bio_endio(owner);
        }
        self.free_request(now, id);
        self.zone_aborted();
    }

    /// `blk_zone_bio_endio`: a bio handled by zone write plugging, or a zone
    /// reset/finish, ended.
    fn zone_bio_endio(&mut self, bio: &mut Bio, ok: bool) {
        let Some(z) = &mut self.zwplugs else { return };
        if bio.flags.has(ReqFlags::ZONE_WRITE_PLUGGING) {
            let emulated = bio.flags.has(ReqFlags::EMULATES_ZONE_APPEND);
            z.bio_endio(bio, ok);
            if emulated && ok {
                self.appended.push((bio.owner, bio.sector.0));
            }
        } else if matches!(bio.op, Op::ZoneReset | Op::ZoneResetAll | Op::ZoneFinish) {
            z.mgmt_bio_endio(bio, ok);
        }
    }

    /// End with an error the bios zone write plugging aborted.
    fn zone_aborted(&mut self) {
        let Some(z) = &mut self.zwplugs else { return };
        let mut out = Vec::new();
        z.take_aborted(&mut out);
        for b in out {
            self.fail_bio(b);
        }
    }

    /// `bio_io_error`.
    fn fail_bio(&mut self, bio: Bio) {
        self.failed.push(bio.owner);
        self.bio_endio(bio.owner);
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
        let (uses_sched, hctx) = {
            let r = self.rqs.get_mut(id);
            r.started = false;
            (r.uses_sched, r.hctx)
        };
        if uses_sched {
            let (mut ctx, e) = self.ctx(now, hctx);
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
    /// requests, then run the hardware queues.
    fn requeue_work(&mut self, now: Ns) {
        let mut cur = None;
        while let Some((id, prepared)) = self.requeue_list.pop_front() {
            let h = self.hctx_of(id);
            cur.get_or_insert(h);
            if prepared {
                self.hctxs[h as usize].dispatch.push_back(id);
            } else {
                self.insert_request(now, id, true);
            }
        }
        let mut flushes = std::mem::take(&mut self.flush_list);
        for &f in &flushes {
            cur.get_or_insert(self.hctx_of(f));
            self.insert_request(now, f, false);
        }
        flushes.clear();
        if self.flush_list.is_empty() {
            self.flush_list = flushes;
        }
        self.free_merged(now);
        self.run_all_async(now, cur.unwrap_or(0));
    }

    /// Process `pid` exited (`exit_io_context`): the elevator's `exit_icq`; the
    /// hardware queues are run if it schedules a dispatch.
    pub fn exit_task(&mut self, now: Ns, pid: u32) {
        if !self.has_elevator {
            return;
        }
        let run = {
            let (mut ctx, e) = self.ctx(now, 0);
            e.exit_icq(&mut ctx, pid)
        };
        if run {
            for h in 0..self.hctxs.len() as u16 {
                self.run_async(now, h);
            }
        }
    }

    /// The elevator's timer is due; afterwards the hardware queues the elevator
    /// names ([`Elevator::timer_runs_hctx`]) are run.
    pub fn elevator_timer(&mut self, now: Ns) {
        {
            let (mut ctx, e) = self.ctx(now, 0);
            e.timer_fired(&mut ctx);
        }
        for h in 0..self.hctxs.len() as u16 {
            if self.elevator.timer_runs_hctx(h) {
                self.run_async(now, h);
            }
        }
    }

    /// Work due at `now`: the requeue work, then the runs of every hardware queue
    /// that is due (`blk_mq_sched_dispatch_requests`), lowest hctx first.
    pub fn run(&mut self, now: Ns, drv: &mut dyn Driver) {
        if self.zone_work_at.is_some_and(|t| t <= now) {
            self.zone_work_at = None;
            self.zone_work(now, drv);
        }
        if self.requeue_at.is_some_and(|t| t <= now) {
            self.requeue_at = None;
            self.requeue_work(now);
        }
        if self.run_min.is_none_or(|t| t > now) {
            return;
        }
        for h in 0..self.hctxs.len() as u16 {
            match self.hctxs[h as usize].run_at {
                Some(t) if t <= now => self.set_run_at(h, None),
                _ => continue,
            }
            self.run_hctx(now, h, drv);
        }
    }

    /// The zone write plug BIO works queued (`blk_zone_wplug_bio_work`), each
    /// submitting the next plugged bio of its zone straight to request
    /// allocation.
    fn zone_work(&mut self, now: Ns, drv: &mut dyn Driver) {
        while let Some(z) = &mut self.zwplugs {
            if !z.has_work() {
                break;
            }
            if let Some(bio) = z.run_work() {
                self.submit_released(now, bio, Some(&mut *drv));
            }
            self.zone_aborted();
        }
    }

    /// Run hardware queue `hctx` now if its run work is due (what a test driving
    /// one hctx at a time calls).
    pub fn run_hw_queue(&mut self, now: Ns, hctx: u16, drv: &mut dyn Driver) {
        match self.hctxs[hctx as usize].run_at {
            Some(t) if t <= now => self.set_run_at(hctx, None),
            _ => return,
        }
        self.run_hctx(now, hctx, drv);
    }

    /// `blk_mq_sched_dispatch_requests` on `hctx`.
    fn run_hctx(&mut self, now: Ns, hctx: u16, drv: &mut dyn Driver) {
        if self.dispatch_round(now, hctx, drv) && self.dispatch_round(now, hctx, drv) {
            self.run_async(now, hctx);
        }
    }

    /// One `__blk_mq_sched_dispatch_requests`; true means "busy" (`-EAGAIN`).
    fn dispatch_round(&mut self, now: Ns, hctx: u16, drv: &mut dyn Driver) -> bool {
        let h = hctx as usize;
        if !self.hctxs[h].dispatch.is_empty() {
            let mut list = std::mem::take(&mut self.hctxs[h].dispatch);
            self.hctxs[h].sched_restart = true;
            let all = self.dispatch_rq_list(now, hctx, drv, &mut list);
            // Keep the allocation: the list is empty now (leftovers moved back).
            if self.hctxs[h].dispatch.is_empty() {
                self.hctxs[h].dispatch = list;
            }
            if !all {
                return false;
            }
        }
        loop {
            match self.do_dispatch_sched(now, hctx, drv) {
                SchedRound::AllDispatched => continue,
                SchedRound::Busy => return true,
                SchedRound::Stop => return false,
            }
        }
    }

    /// `__blk_mq_do_dispatch_sched`: pull from the elevator and hand to the driver.
    /// An `SQ_SCHED` elevator may hand out requests of other hctxs: those are sorted
    /// by hctx (stable) and each hctx's run handed to the driver on that hctx.
    fn do_dispatch_sched(&mut self, now: Ns, hctx: u16, drv: &mut dyn Driver) -> SchedRound {
        let h = hctx as usize;
        let max_dispatch = if self.hctxs[h].dispatch_busy > 0 {
            1
        } else {
            self.cfg.nr_sched_batch.unwrap_or(self.nr_requests).max(1)
        };
        let mut list = std::mem::take(&mut self.scratch);
        let mut busy = false;
        let mut run_queue = false;
        let mut multi_hctxs = false;
        while (list.len() as u32) < max_dispatch {
            let (ctx, e) = self.ctx(now, hctx);
            if !e.has_work(&ctx) {
                break;
            }
            if !self.hctxs[h].dispatch.is_empty() {
                busy = true;
                break;
            }
            self.work.dispatch_calls += 1;
            let (mut ctx, e) = self.ctx(now, hctx);
            let Some(id) = e.dispatch_request(&mut ctx) else {
                run_queue = true;
                break;
            };
            ctx.merge.forget(id);
            list.push_back(id);
            if self.rqs.get(id).hctx != hctx {
                multi_hctxs = true;
            }
            if !self.get_driver_tag(id) {
                break;
            }
        }
        let dispatched = if list.is_empty() {
            if run_queue {
                self.delay_run_all_if_idle(now, hctx, RERUN_DELAY_MS);
            }
            false
        } else if multi_hctxs {
            let rqs = &self.rqs;
            list.make_contiguous().sort_by_key(|&id| rqs.get(id).hctx);
            let mut any = false;
            let mut sub = std::mem::take(&mut self.scratch_hctx);
            while let Some(&first) = list.front() {
                let target = self.hctx_of(first);
                let n = list
                    .iter()
                    .take_while(|&&id| self.rqs.get(id).hctx == target)
                    .count();
                sub.extend(list.drain(..n));
                any |= self.dispatch_rq_list(now, target, drv, &mut sub);
                sub.clear();
            }
            self.scratch_hctx = sub;
            any
        } else {
            self.dispatch_rq_list(now, hctx, drv, &mut list)
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

    /// A driver tag of the request's hctx.
    fn get_driver_tag(&mut self, id: RqId) -> bool {
        let r = self.rqs.get(id);
        if r.driver_tag.is_some() {
            return true;
        }
        let hctx = r.hctx as usize;
        match self.hctxs[hctx].driver_tags.get(u32::MAX) {
            Some(t) => {
                self.rqs.get_mut(id).driver_tag = Some(t);
                true
            }
            None => false,
        }
    }

    fn put_driver_tag(&mut self, id: RqId) {
        let r = self.rqs.get_mut(id);
        if let Some(t) = r.driver_tag.take() {
            let h = r.hctx as usize;
            self.hctxs[h].driver_tags.put(t);
        }
    }

    /// `blk_mq_start_request` + `queue_rq`: on refusal the request is made idle
    /// again and its driver tag returned (`__blk_mq_requeue_request`).
    fn queue_rq(&mut self, now: Ns, id: RqId, drv: &mut dyn Driver, last: bool) -> QueueRqStatus {
        {
            let r = self.rqs.get_mut(id);
            r.started = true;
            r.issue_ns = now;
            r.issue_cpu = self.cur_cpu;
        }
        self.work.queue_rqs += 1;
        let st = drv.queue_rq(now, id, self.rqs.get(id), last);
        if st == QueueRqStatus::Ok {
            if self.driver_inflight == 0 {
                self.busy_since = now;
            }
            self.driver_inflight += 1;
        } else {
            let r = self.rqs.get_mut(id);
            r.started = false;
            if st == QueueRqStatus::DevResource {
                let h = r.hctx as usize;
                if !self.hctxs[h].dev_resource {
                    self.hctxs[h].dev_resource = true;
                    self.dev_resource_waiters += 1;
                }
            }
            self.put_driver_tag(id);
        }
        st
    }

    /// `blk_mq_dispatch_rq_list` on `hctx` (every request of `list` belongs to it):
    /// true when the whole list went to the driver.
    fn dispatch_rq_list(
        &mut self,
        now: Ns,
        hctx: u16,
        drv: &mut dyn Driver,
        list: &mut VecDeque<RqId>,
    ) -> bool {
        if list.is_empty() {
            return false;
        }
        let h = hctx as usize;
        let mut needs_resource = false;
        let mut queued = 0;
        while let Some(&id) = list.front() {
            if !self.get_driver_tag(id) {
                // Non-shared tags: mark for restart, retry once.
                self.hctxs[h].sched_restart = true;
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
            self.hctxs[h].dispatch.extend(list.drain(..));
            if !self.hctxs[h].sched_restart {
                self.run_async(now, hctx);
            } else if needs_resource {
                self.delay_run(now, hctx, RERUN_DELAY_MS);
            }
            self.update_dispatch_busy(hctx, true);
            return false;
        }
        self.update_dispatch_busy(hctx, false);
        true
    }

    /// `blk_mq_update_dispatch_busy`: EWMA with weight 8, factor 4.
    fn update_dispatch_busy(&mut self, hctx: u16, busy: bool) {
        let b = &mut self.hctxs[hctx as usize].dispatch_busy;
        let mut ewma = *b;
        if ewma == 0 && !busy {
            return;
        }
        ewma *= 7;
        if busy {
            ewma += 16;
        }
        *b = ewma / 8;
    }
}

enum SchedRound {
    AllDispatched,
    Busy,
    Stop,
}

#[cfg(test)]
mod tests;
