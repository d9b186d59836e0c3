//! `mq-deadline`: the deadline I/O scheduler of `block/mq-deadline.c`, following
//! mainline **Linux v6.19**.
//!
//! Requests are kept per I/O priority level (RT, BE, IDLE; class NONE counts as BE) in
//! a sector-sorted tree and an arrival-ordered FIFO per direction. Dispatch serves
//! sector-ordered batches of up to `fifo_batch` requests in one direction, lets reads
//! starve writes for at most `writes_starved` batches, and starts a batch at the FIFO
//! head when that request's deadline (`read_expire` / `write_expire`) has passed. A
//! lower level is only served when every higher level has nothing queued *or in
//! flight*, except that BE and IDLE requests older than `prio_aging_expire` are let
//! out while more than one level is busy. Requests inserted at head (requeues, flush
//! data) bypass all of this through one queue-wide dispatch list.
//!
//! # Kernel version
//!
//! v6.19 ("Switch back to a single dispatch list"): at-head inserts go to the front of
//! one queue-wide list that is served before the aged pass and regardless of priority.
//! **v6.12–v6.18** kept one such list per priority level, served inside
//! `__dd_dispatch_request` of that level (behind higher levels, and subject to
//! `started_after`); that older behaviour is not modelled. The dispatch cursor is the
//! v6.5+ `latest_pos` (lowest start sector at or above the last dispatched start).
//! `async_depth` defaults to `nr_requests` (v6.11–v6.19) and is reset to it by
//! `depth_updated`. Zone write locking (removed in v6.10) is not modelled.
//!
//! # Tunables (`/sys/block/<dev>/queue/iosched/`)
//!
//! | name | default | unit | store clamps to |
//! | --- | --- | --- | --- |
//! | `read_expire` | 500 | ms (kept in jiffies, rounded up) | [0, INT_MAX] |
//! | `write_expire` | 5000 | ms (jiffies) | [0, INT_MAX] |
//! | `writes_starved` | 2 | read batches | [INT_MIN, INT_MAX] |
//! | `front_merges` | 1 | bool | [0, 1] |
//! | `async_depth` | `nr_requests` | requests | [1, INT_MAX] |
//! | `fifo_batch` | 16 | requests | [0, INT_MAX] |
//! | `prio_aging_expire` | 10000 | ms (jiffies) | [0, INT_MAX] |
//!
//! Values are parsed as `kstrtoint(.., 0, ..)` does; a value that does not parse, or
//! does not fit an `int`, is rejected; anything else is clamped, never rejected.
//! Note that `writes_starved` is compared with the unsigned `starved` counter, so a
//! negative value behaves like a huge one (writes are only chosen when no read is
//! queued), not like 0.
//!
//! # Variant
//!
//! `variant = head-request` (seed patch "block/mq-deadline: Prioritize first request",
//! Wang You, 2022, not merged): when a new batch starts, the FIFO head is not expired
//! and nothing lies at or above the cursor, the batch starts at the lowest-sector
//! request of the tree (a one-way sweep) instead of at the FIFO head.
//! `variant = per-cpu-stats` keeps the statistics as v5.14 did before seed 3 ("Speed
//! up the dispatch of low-priority requests", Zhen Lei, 2021): one copy per CPU,
//! summed over every CPU at each `dd_queued` call. Decisions are those of `mainline`;
//! only the CPU cost differs (`iosched bench --cpus 128 --vary
//! mq-deadline.variant=mainline,per-cpu-stats`).
//! `variant = mainline` restores the kernel behaviour.
//!
//! # Map to the kernel
//!
//! | kernel | here |
//! | --- | --- |
//! | `dd_insert_request`, `dd_insert_requests` | [`MqDeadline::insert_requests`] |
//! | `dd_dispatch_request` | [`MqDeadline::dispatch_request`] |
//! | `dd_dispatch_prio_aged_requests` | `dispatch_aged` |
//! | `__dd_dispatch_request` | `dispatch_level` |
//! | `deadline_next_request` / `deadline_from_pos` | `next_rq` |
//! | `deadline_check_fifo`, `deadline_fifo_request` | `fifo_head_expired`, `Fifo::head` |
//! | `started_after` | `started_after` |
//! | `dd_start_request` | `start_request` |
//! | `deadline_remove_request` | `remove_request` |
//! | `dd_queued`, `dd_owned_by_driver` | `queued`, `owned_by_driver` |
//! | `dd_request_merge`, `dd_bio_merge` | `request_merge`, `bio_merge` |
//! | `dd_request_merged`, `dd_merged_requests` | `request_merged`, `requests_merged` |
//! | `elv_rb_latter_request`, `elv_rb_former_request` | `next_request`, `former_request` |
//! | `dd_prepare_request`, `dd_finish_request` | `prepare_request`, `finish_request` |
//! | `dd_limit_depth`, `dd_depth_updated` | `limit_depth`, `depth_updated` |
//! | `dd_has_work` | `has_work` |
//!
//! # Data structures
//!
//! Per-request scheduler data lives in side tables indexed by [`RqId::index`], and
//! every per-request list is intrusive, so the steady state allocates nothing:
//! - the sort trees are intrusive red-black trees keyed by start sector, equal
//!   sectors in insertion order (module `rbtree`, which explains the choice);
//! - each level and direction remembers its last `deadline_from_pos` answer
//!   (`Cursor`) and keeps it exact as requests come and go, so a dispatch that
//!   continues the sweep (the common case) needs no tree search;
//! - the FIFOs are doubly linked through `DdRq`, so merges can unlink from the
//!   middle;
//! - the shared end-sector merge hash (`crate::merge`) is a chained table with O(1)
//!   removal.
//!
//! Known divergence: `elv_rb_find` (front-merge lookup) returns whichever of several
//! requests with the same start sector it meets first while descending the red-black
//! tree, which depends on the tree's shape; this model tests the oldest one (leftmost
//! in sort order). Only queues holding two mergeable requests of one level and
//! direction with the same start sector can tell the difference.

use super::{
    parse_kernel_int, unknown_tunable, Elevator, ElvCtx, QueueParams, TunableError, TunableInfo,
    VariantInfo,
};
use crate::merge::{self, MergeKind};
use crate::request::{Bio, BioId, RqId};
use crate::types::{jiffies_to_msecs, msecs_to_jiffies, Dir, IoClass, Jiffies, Op, ReqFlags};
use rbtree::Forest;
use std::collections::VecDeque;

mod rbtree;
#[cfg(test)]
mod tests;

const NAME: &str = "mq-deadline";

/// Scheduler priority levels (`enum dd_prio`).
const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;
const LEVELS: usize = 3;

const READ: usize = 0;
const WRITE: usize = 1;

/// "No request" in the intrusive FIFO links.
const NIL: u32 = u32::MAX;
/// "Never inserted" marker (`rq->elv.priv[0] == NULL`).
const NO_LEVEL: u8 = u8::MAX;

/// Kernel defaults, in ms where the kernel keeps jiffies.
const DEFAULT_READ_EXPIRE_MS: u64 = 500;
const DEFAULT_WRITE_EXPIRE_MS: u64 = 5000;
const DEFAULT_PRIO_AGING_EXPIRE_MS: u64 = 10_000;
const DEFAULT_WRITES_STARVED: i32 = 2;
const DEFAULT_FIFO_BATCH: i32 = 16;

/// `ioprio_class_to_prio[]`.
const fn level_of(class: IoClass) -> usize {
    match class {
        IoClass::Rt => RT,
        IoClass::None | IoClass::Be => BE,
        IoClass::Idle => IDLE,
    }
}

/// Seed-patch variants (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The kernel: wrap to the FIFO head when nothing lies at or above the cursor.
    Mainline,
    /// Wang You's "Prioritize first request": wrap to the lowest sector instead.
    HeadRequest,
    /// The statistics as before Zhen Lei's "Speed up the dispatch of low-priority
    /// requests" (seed 3): per-CPU counters, summed over every CPU at each
    /// `dd_queued` call. Same decisions as [`Variant::Mainline`], more work.
    PerCpuStats,
}

impl Variant {
    const ALL: [(Variant, VariantInfo); 3] = [
        (
            Variant::Mainline,
            VariantInfo {
                name: "mainline",
                help: "kernel v6.19 behaviour (wrap to the FIFO head)",
            },
        ),
        (
            Variant::HeadRequest,
            VariantInfo {
                name: "head-request",
                help:
                    "seed patch 'Prioritize first request' (Wang You, 2022): when no request \
                       lies at or above the cursor, restart at the lowest sector, not the FIFO head",
            },
        ),
        (
            Variant::PerCpuStats,
            VariantInfo {
                name: "per-cpu-stats",
                help:
                    "before seed patch 'Speed up the dispatch of low-priority requests' (Zhen Lei, \
                       2021): dd_queued() sums per-CPU inserted/completed counters over every CPU; \
                       same decisions, CPU cost only (measure with `iosched bench`)",
            },
        ),
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Mainline => "mainline",
            Variant::HeadRequest => "head-request",
            Variant::PerCpuStats => "per-cpu-stats",
        }
    }
}

/// How a dispatched request was chosen: lets a caller explain each decision, and
/// compare it with the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// From the queue-wide at-head list.
    AtHead,
    /// Continuing the current batch: lowest start at/above the level's cursor.
    BatchContinue,
    /// A new batch started at the FIFO head because its deadline had passed.
    FifoExpired,
    /// A new batch started at the lowest start at/above the level's cursor.
    Sorted,
    /// A new batch with nothing at/above the cursor started at the FIFO head
    /// (mainline) or at the lowest sector (`head-request`).
    Wrap,
}

/// The last decision of [`MqDeadline::dispatch_request`] that returned a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Priority level served: 0 RT, 1 BE, 2 IDLE.
    pub level: usize,
    /// Direction of the request.
    pub dir: Dir,
    /// How the request was chosen.
    pub how: How,
    /// Chosen by the aged pass (`dd_dispatch_prio_aged_requests`).
    pub aged: bool,
}

/// Where a request currently is, in the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Not held (never inserted, dispatched, or merged away).
    Out,
    /// On its level's sort tree and FIFO.
    Queued,
    /// On the queue-wide at-head dispatch list.
    Dispatch,
}

/// Per-request scheduler data, in a side table indexed by [`RqId::index`].
#[derive(Clone, Copy, Debug)]
struct DdRq {
    /// `rq->elv.priv[0]`: the level the request was inserted into, or [`NO_LEVEL`].
    level: u8,
    /// The request was counted in its level's `nr_queued` (see [`LevelStats`]).
    counted: bool,
    dir: u8,
    place: Place,
    /// `rq->fifo_time`: the deadline (or, at head, the insertion time) in jiffies.
    fifo_time: Jiffies,
    prev: u32,
    next: u32,
}

impl DdRq {
    const EMPTY: DdRq = DdRq {
        level: NO_LEVEL,
        counted: false,
        dir: 0,
        place: Place::Out,
        fifo_time: Jiffies(0),
        prev: NIL,
        next: NIL,
    };
}

/// An intrusive doubly linked list through the [`DdRq`] side table, so that a
/// request can leave the middle of its FIFO (merges) in O(1).
#[derive(Clone, Copy, Debug)]
struct Fifo {
    head: u32,
    tail: u32,
}

impl Fifo {
    const EMPTY: Fifo = Fifo {
        head: NIL,
        tail: NIL,
    };
    fn is_empty(&self) -> bool {
        self.head == NIL
    }
    /// `deadline_fifo_request`.
    fn head(&self) -> Option<RqId> {
        (self.head != NIL).then_some(RqId(self.head))
    }
}

/// Per-level statistics (`struct io_stats_per_prio`), 32-bit and wrapping as in the
/// kernel, plus the `nr_queued` counter.
///
/// `nr_queued` is the seed-3 bookkeeping (Zhen Lei's patch as corrected in review):
/// it is incremented when a request is placed on the level for the first time (not
/// when it is absorbed by an insert merge, and not again on a requeue), and
/// decremented when a request that was so counted is finished (completed, or freed
/// after a later merge absorbed it). A request absorbed *at insert* is counted in
/// `inserted` and, once the block layer frees it, in `completed`, but never in
/// `nr_queued`. Hence, at every instant,
///
/// `nr_queued = inserted − completed − P`,
///
/// where `P` is the number of this level's requests absorbed at insert whose
/// `finish_request` has not run yet. The block layer frees those right after the
/// insert call, before any dispatch, so at every dispatch `P = 0` and `nr_queued`
/// equals the kernel's `dd_queued()` (`inserted − completed`): it counts requests still
/// in the scheduler *or owned by the driver*.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// First insertions (requeues are not counted again).
    pub inserted: u32,
    /// Requests of this level absorbed into another request.
    pub merged: u32,
    /// Requests started by dispatch.
    pub dispatched: u32,
    /// `finish_request` calls for requests that went through insertion.
    pub completed: u32,
    /// Requests queued or in the driver, maintained as a counter (see above).
    pub nr_queued: u32,
}

impl LevelStats {
    /// The kernel's `dd_queued()`: `inserted − completed`.
    pub fn queued(&self) -> u32 {
        self.inserted.wrapping_sub(self.completed)
    }
    /// The kernel's `dd_owned_by_driver()`: `dispatched + merged − completed`.
    pub fn owned_by_driver(&self) -> u32 {
        self.dispatched
            .wrapping_add(self.merged)
            .wrapping_sub(self.completed)
    }
}

/// Index of each event in a [`CpuStats`] level row.
const EV_INSERTED: usize = 0;
const EV_MERGED: usize = 1;
const EV_DISPATCHED: usize = 2;
const EV_COMPLETED: usize = 3;

/// One CPU's copy of the statistics for [`Variant::PerCpuStats`] (`struct io_stats`
/// of v5.14: `local_t` `inserted`, `merged`, `dispatched`, `completed` per level),
/// each CPU's copy on its own cache lines as the per-CPU allocator places them.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(128))]
struct CpuStats {
    ev: [[i64; 4]; LEVELS],
}

/// One priority level (`struct dd_per_prio`, without the pre-v6.19 dispatch list).
#[derive(Clone, Debug)]
struct Level {
    /// Roots of the sort trees per direction, in [`MqDeadline::sort`].
    sort: [u32; 2],
    fifo: [Fifo; 2],
    /// Start sector of the last request dispatched from this level, per direction.
    latest_pos: [u64; 2],
    /// Cached `deadline_from_pos` per direction (see [`Cursor`]).
    cursor: [Cursor; 2],
    stats: LevelStats,
}

/// A remembered lower-bound lookup in a sort tree: `rq` is the first request in
/// sort order whose start is at or above `pos` (or [`rbtree::NIL`] if none).
///
/// Every dispatch needs `deadline_from_pos(latest_pos)`, and most dispatches take
/// exactly that request, after which `latest_pos` becomes its sector. Keeping the
/// answer up to date is O(1) per tree change, so the common dispatch needs no tree
/// descent:
/// - adding a request at or above `pos` and below `rq`'s sector makes it the answer
///   (an equal sector goes to the right of `rq`, so `rq` stays);
/// - removing `rq` makes its in-order successor the answer, for `pos` and also for
///   `rq`'s own sector: everything before `rq` is below `pos`, which is at most that
///   sector. The cursor moves to that sector, the `latest_pos` the dispatch of `rq`
///   sets;
/// - any other change leaves the answer as it is.
///
/// A lookup at another position (after a FIFO or at-head dispatch moved
/// `latest_pos` elsewhere) descends the tree once and re-anchors the cursor there.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    pos: u64,
    rq: u32,
}

impl Default for Level {
    fn default() -> Self {
        Level {
            sort: [rbtree::NIL; 2],
            fifo: [Fifo::EMPTY; 2],
            latest_pos: [0; 2],
            cursor: [Cursor {
                pos: 0,
                rq: rbtree::NIL,
            }; 2],
            stats: LevelStats::default(),
        }
    }
}

impl Default for Fifo {
    fn default() -> Self {
        Fifo::EMPTY
    }
}

/// The mq-deadline scheduler state (`struct deadline_data`); see the module docs.
#[derive(Clone, Debug)]
pub struct MqDeadline {
    hz: u32,
    variant: Variant,
    levels: [Level; LEVELS],
    /// Queue-wide at-head list; the front is dispatched first.
    dispatch: VecDeque<RqId>,
    /// Requests on any FIFO, for `has_work`.
    on_fifos: usize,
    last_dir: usize,
    batching: u32,
    starved: u32,
    /// Nodes of the six sort trees (see `rbtree`); roots in [`Level::sort`].
    sort: Forest,
    last_decision: Option<Decision>,
    rqs: Vec<DdRq>,
    // Tunables, in the kernel's internal units.
    fifo_expire: [i32; 2],
    fifo_batch: i32,
    writes_starved: i32,
    front_merges: i32,
    async_depth: u32,
    prio_aging_expire: i32,
    nr_requests: u32,
    /// Per-CPU statistics, one per possible CPU; only kept for
    /// [`Variant::PerCpuStats`].
    percpu: Vec<CpuStats>,
    /// Work for the host model ([`Elevator::take_work`]).
    work: std::cell::Cell<crate::elevator::ElvWork>,
    /// iosched-only `insert_lists`: the January 2024 locking ([`Elevator::lock_split`]).
    insert_lists: bool,
}

impl MqDeadline {
    /// A scheduler for a queue (`dd_init_sched` followed by `dd_depth_updated`).
    pub fn new(params: &QueueParams) -> Self {
        let hz = params.hz.max(1);
        let j = |ms| msecs_to_jiffies(ms, hz) as i32;
        MqDeadline {
            hz,
            variant: Variant::Mainline,
            levels: Default::default(),
            dispatch: VecDeque::new(),
            on_fifos: 0,
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            sort: Forest::default(),
            last_decision: None,
            rqs: Vec::new(),
            fifo_expire: [j(DEFAULT_READ_EXPIRE_MS), j(DEFAULT_WRITE_EXPIRE_MS)],
            fifo_batch: DEFAULT_FIFO_BATCH,
            writes_starved: DEFAULT_WRITES_STARVED,
            front_merges: 1,
            async_depth: params.nr_requests,
            prio_aging_expire: j(DEFAULT_PRIO_AGING_EXPIRE_MS),
            nr_requests: params.nr_requests,
            percpu: vec![CpuStats::default(); params.nr_cpus.max(1) as usize],
            work: Default::default(),
            insert_lists: false,
        }
    }

    /// How the last request returned by dispatch was chosen.
    pub fn last_decision(&self) -> Option<Decision> {
        self.last_decision
    }

    /// The active variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Statistics of level `class` maps to (RT, BE or IDLE).
    pub fn stats(&self, class: IoClass) -> LevelStats {
        self.levels[level_of(class)].stats
    }

    /// The FIFO head of the level `class` maps to, in direction `dir`, with its
    /// `fifo_time` (deadline): what `deadline_fifo_request` would return.
    pub fn fifo_head(&self, class: IoClass, dir: Dir) -> Option<(RqId, Jiffies)> {
        let id = self.levels[level_of(class)].fifo[dir.idx()].head()?;
        Some((id, self.rq(id).fifo_time))
    }

    #[inline]
    fn rq(&self, id: RqId) -> &DdRq {
        &self.rqs[id.index()]
    }

    #[inline]
    fn rq_mut(&mut self, id: RqId) -> &mut DdRq {
        let i = id.index();
        if i >= self.rqs.len() {
            self.rqs.resize(i + 1, DdRq::EMPTY);
        }
        &mut self.rqs[i]
    }

    // ---- FIFO links ------------------------------------------------------------

    fn fifo_push_back(&mut self, lv: usize, dir: usize, id: RqId) {
        let tail = self.levels[lv].fifo[dir].tail;
        {
            let d = self.rq_mut(id);
            d.prev = tail;
            d.next = NIL;
            d.place = Place::Queued;
        }
        match tail {
            NIL => self.levels[lv].fifo[dir].head = id.0,
            t => self.rqs[t as usize].next = id.0,
        }
        self.levels[lv].fifo[dir].tail = id.0;
        self.on_fifos += 1;
    }

    fn fifo_unlink(&mut self, lv: usize, dir: usize, id: RqId) {
        let DdRq { prev, next, .. } = self.rqs[id.index()];
        match prev {
            NIL => self.levels[lv].fifo[dir].head = next,
            p => self.rqs[p as usize].next = next,
        }
        match next {
            NIL => self.levels[lv].fifo[dir].tail = prev,
            n => self.rqs[n as usize].prev = prev,
        }
        let d = &mut self.rqs[id.index()];
        d.prev = NIL;
        d.next = NIL;
        d.place = Place::Out;
        self.on_fifos -= 1;
    }

    /// Link `id` right after `at` (`list_move(&req->queuelist, &next->queuelist)`
    /// once `id` has been unlinked).
    fn fifo_insert_after(&mut self, lv: usize, dir: usize, at: RqId, id: RqId) {
        let after = self.rqs[at.index()].next;
        {
            let d = &mut self.rqs[id.index()];
            d.prev = at.0;
            d.next = after;
            d.place = Place::Queued;
        }
        self.rqs[at.index()].next = id.0;
        match after {
            NIL => self.levels[lv].fifo[dir].tail = id.0,
            n => self.rqs[n as usize].prev = id.0,
        }
        self.on_fifos += 1;
    }

    // ---- sort tree -------------------------------------------------------------

    /// `deadline_add_rq_rb` / `elv_rb_add`: equal sectors go right of existing ones.
    fn tree_add(&mut self, lv: usize, dir: usize, id: RqId, sector: u64) {
        self.count_work(u64::from((self.on_fifos + 1).ilog2()) + 1, 0, 0);
        let l = &mut self.levels[lv];
        self.sort.insert(&mut l.sort[dir], id.0, sector);
        let c = &mut l.cursor[dir];
        if sector >= c.pos && (c.rq == rbtree::NIL || sector < self.sort.sector(c.rq)) {
            c.rq = id.0;
        }
    }

    fn tree_del(&mut self, lv: usize, dir: usize, id: RqId) {
        let l = &mut self.levels[lv];
        let sector = self.sort.sector(id.0);
        let next = self.sort.remove(&mut l.sort[dir], id.0);
        let c = &mut l.cursor[dir];
        if c.rq == id.0 {
            *c = Cursor {
                pos: sector,
                rq: next,
            };
        }
    }

    /// `rb` index → request, [`rbtree::NIL`] → `None`.
    #[inline]
    fn node(id: u32) -> Option<RqId> {
        (id != rbtree::NIL).then_some(RqId(id))
    }

    /// `deadline_next_request` (`deadline_from_pos`): the first request in sort
    /// order whose start is at or above `latest_pos`.
    #[inline]
    fn next_rq(&mut self, lv: usize, dir: usize) -> Option<RqId> {
        let l = &mut self.levels[lv];
        let pos = l.latest_pos[dir];
        if l.cursor[dir].pos != pos {
            l.cursor[dir] = Cursor {
                pos,
                rq: self.sort.lower_bound(l.sort[dir], pos),
            };
        }
        debug_assert_eq!(l.cursor[dir].rq, self.sort.lower_bound(l.sort[dir], pos));
        Self::node(l.cursor[dir].rq)
    }

    /// [`Self::next_rq`] without updating the cursor.
    fn peek_next_rq(&self, lv: usize, dir: usize) -> Option<RqId> {
        let l = &self.levels[lv];
        let pos = l.latest_pos[dir];
        Self::node(if l.cursor[dir].pos == pos {
            l.cursor[dir].rq
        } else {
            self.sort.lower_bound(l.sort[dir], pos)
        })
    }

    /// `deadline_check_fifo`: has the FIFO head's deadline passed (`now ≥ fifo_time`,
    /// wrap-safe)? The FIFO must not be empty.
    fn fifo_head_expired(&self, lv: usize, dir: usize, now: Jiffies) -> bool {
        let head = self.levels[lv].fifo[dir].head;
        now.after_eq(self.rqs[head as usize].fifo_time)
    }

    /// `started_after`: arrival, reconstructed as `fifo_time − fifo_expire[dir]`, is
    /// strictly later than `latest_start`.
    fn started_after(&self, id: RqId, latest_start: Jiffies) -> bool {
        let d = self.rq(id);
        let arrival = d
            .fifo_time
            .minus(self.fifo_expire[d.dir as usize] as i64 as u64);
        arrival.after(latest_start)
    }

    /// `dd_queued`, as the seed-3 counter (equal to `inserted − completed` whenever
    /// a dispatch runs; see [`LevelStats`]); with [`Variant::PerCpuStats`], as v5.14
    /// computed it: `dd_sum(inserted) − dd_sum(completed)`, each a pass over every
    /// CPU's copy.
    fn queued(&self, lv: usize) -> u32 {
        if self.variant == Variant::PerCpuStats {
            // Both sums read the same per-CPU structure: one cache line per CPU.
            self.count_work(0, self.percpu.len() as u64, 1);
            return self
                .dd_sum(lv, EV_INSERTED)
                .wrapping_sub(self.dd_sum(lv, EV_COMPLETED)) as u32;
        }
        self.levels[lv].stats.nr_queued
    }

    /// Count work for [`Elevator::take_work`] (from `&self`: `dd_queued` is a read).
    fn count_work(&self, tree_steps: u64, percpu_lines: u64, percpu_passes: u64) {
        let mut w = self.work.get();
        w.tree_steps += tree_steps;
        w.percpu_lines += percpu_lines;
        w.percpu_passes += percpu_passes;
        self.work.set(w);
    }

    /// `dd_sum` (v5.14): one event of one level, summed over the CPUs.
    fn dd_sum(&self, lv: usize, ev: usize) -> i64 {
        self.percpu
            .iter()
            .fold(0i64, |sum, c| sum.wrapping_add(c.ev[lv][ev]))
    }

    /// `dd_count` (v5.14): count one event on `cpu`'s copy.
    fn dd_count(&mut self, cpu: u32, lv: usize, ev: usize) {
        if self.variant == Variant::PerCpuStats {
            let n = self.percpu.len();
            let c = &mut self.percpu[cpu as usize % n].ev[lv][ev];
            *c = c.wrapping_add(1);
        }
    }

    /// `deadline_remove_request`: off the FIFO, the sort tree, the merge hash and the
    /// one-hit cache.
    fn remove_request(&mut self, ctx: &mut ElvCtx, id: RqId) {
        let d = self.rqs[id.index()];
        if d.place == Place::Queued {
            let (lv, dir) = (d.level as usize, d.dir as usize);
            self.fifo_unlink(lv, dir, id);
            self.tree_del(lv, dir, id);
        }
        ctx.merge.forget(id);
    }

    /// `dd_start_request`: move the level's cursor, count the dispatch and mark the
    /// request started (which also makes it unmergeable).
    fn start_request(&mut self, ctx: &mut ElvCtx, id: RqId) {
        let r = ctx.rqs.get_mut(id);
        r.started = true;
        let (lv, dir, sector, cpu) = (level_of(r.ioprio.class), r.dir().idx(), r.sector.0, r.cpu);
        let l = &mut self.levels[lv];
        l.latest_pos[dir] = sector;
        l.stats.dispatched = l.stats.dispatched.wrapping_add(1);
        self.dd_count(cpu, lv, EV_DISPATCHED);
        self.rqs[id.index()].place = Place::Out;
    }

    /// `__dd_dispatch_request`: pick from one level, refusing a request that arrived
    /// after `latest_start`. The batch/direction bookkeeping done before that refusal
    /// stays, as in the kernel.
    #[inline]
    fn dispatch_level(
        &mut self,
        ctx: &mut ElvCtx,
        lv: usize,
        latest_start: Jiffies,
        aged: bool,
    ) -> Option<RqId> {
        // An empty level (the usual case for RT and IDLE) has an empty tree, so the
        // kernel's path would find nothing and change nothing: skip it without
        // paying for the call.
        let l = &self.levels[lv];
        if l.fifo[READ].is_empty() && l.fifo[WRITE].is_empty() {
            return None;
        }
        self.dispatch_busy_level(ctx, lv, latest_start, aged)
    }

    /// [`Self::dispatch_level`] for a level with something queued.
    fn dispatch_busy_level(
        &mut self,
        ctx: &mut ElvCtx,
        lv: usize,
        latest_start: Jiffies,
        aged: bool,
    ) -> Option<RqId> {
        let now = ctx.jiffies;
        // The cursor lookup is only needed while the batch may still continue.
        let cont = if self.batching < self.fifo_batch as u32 {
            self.next_rq(lv, self.last_dir)
        } else {
            None
        };
        let (rq, how) = match cont {
            Some(c) => (c, How::BatchContinue),
            _ => {
                let fifo = self.levels[lv].fifo;
                let dir = if !fifo[READ].is_empty() {
                    let writes_waiting = !fifo[WRITE].is_empty();
                    // `starved` is post-incremented, and only while writes wait; the
                    // comparison is unsigned (a negative `writes_starved` is huge).
                    if writes_waiting && {
                        let s = self.starved;
                        self.starved = s.wrapping_add(1);
                        s >= self.writes_starved as u32
                    } {
                        WRITE
                    } else {
                        READ
                    }
                } else if !fifo[WRITE].is_empty() {
                    WRITE
                } else {
                    return None;
                };
                if dir == WRITE {
                    self.starved = 0;
                }
                let head = fifo[dir]
                    .head()
                    .expect("direction chosen with a non-empty FIFO");
                let pick = if self.fifo_head_expired(lv, dir, now) {
                    (head, How::FifoExpired)
                } else {
                    match (self.next_rq(lv, dir), self.variant) {
                        (Some(n), _) => (n, How::Sorted),
                        (None, Variant::Mainline | Variant::PerCpuStats) => (head, How::Wrap),
                        (None, Variant::HeadRequest) => {
                            let lowest = Self::node(self.sort.first(self.levels[lv].sort[dir]))
                                .expect("non-empty FIFO implies non-empty tree");
                            (lowest, How::Wrap)
                        }
                    }
                };
                self.last_dir = dir;
                self.batching = 0;
                pick
            }
        };
        if self.started_after(rq, latest_start) {
            return None;
        }
        self.batching += 1;
        self.remove_request(ctx, rq);
        self.start_request(ctx, rq);
        self.last_decision = Some(Decision {
            level: lv,
            dir: if self.rqs[rq.index()].dir == 0 {
                Dir::Read
            } else {
                Dir::Write
            },
            how,
            aged,
        });
        Some(rq)
    }

    /// `dd_dispatch_prio_aged_requests`: with at least two levels busy, let out a BE
    /// or IDLE request that arrived `prio_aging_expire` or more ago.
    fn dispatch_aged(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        let busy = (0..LEVELS).filter(|&lv| self.queued(lv) != 0).count();
        if busy < 2 {
            return None;
        }
        let threshold = ctx.jiffies.minus(self.prio_aging_expire as i64 as u64);
        for lv in [BE, IDLE] {
            if let Some(rq) = self.dispatch_level(ctx, lv, threshold, true) {
                return Some(rq);
            }
        }
        None
    }

    fn show_ms(&self, j: i32) -> String {
        // jiffies_to_msecs() returns an unsigned int that sysfs prints with "%d".
        (jiffies_to_msecs(j as u32 as u64, self.hz) as u32 as i32).to_string()
    }

    fn store_ms(&self, ms: i32) -> i32 {
        msecs_to_jiffies(ms as u64, self.hz) as i32
    }

    fn ids(iter: impl Iterator<Item = RqId>) -> String {
        iter.map(|id| id.0.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn fifo_ids(&self, lv: usize, dir: usize) -> Vec<RqId> {
        let mut out = Vec::new();
        let mut cur = self.levels[lv].fifo[dir].head;
        while cur != NIL {
            out.push(RqId(cur));
            cur = self.rqs[cur as usize].next;
        }
        out
    }

    fn per_level(&self, f: impl Fn(&LevelStats) -> u32) -> String {
        let v: Vec<String> = self
            .levels
            .iter()
            .map(|l| f(&l.stats).to_string())
            .collect();
        v.join(" ")
    }
}

impl Elevator for MqDeadline {
    fn clone_box(&self) -> Option<Box<dyn Elevator>> {
        Some(Box::new(self.clone()))
    }
    fn take_work(&mut self) -> crate::elevator::ElvWork {
        self.work.take()
    }

    fn lock_split(&self) -> bool {
        self.insert_lists
    }

    fn name(&self) -> &'static str {
        NAME
    }

    /// `ELEVATOR_FLAG_SQ_SCHED`: one instance for all hardware queues.
    fn single_queue(&self) -> bool {
        true
    }

    /// `dd_limit_depth`: synchronous reads are never throttled; everything else
    /// (asynchronous I/O and all writes) is limited to `async_depth` tags.
    fn limit_depth(&self, op: Op, flags: ReqFlags) -> Option<u32> {
        // op_is_write(): odd op numbers (WRITE, DISCARD); FLUSH (2) is not a write.
        let is_write = matches!(op, Op::Write | Op::Discard);
        let is_sync = matches!(op, Op::Read)
            || flags.any(ReqFlags(
                ReqFlags::SYNC.0 | ReqFlags::FUA.0 | ReqFlags::PREFLUSH.0,
            ));
        if is_sync && !is_write {
            None
        } else {
            Some(self.async_depth)
        }
    }

    /// `dd_depth_updated`: `async_depth` follows `nr_requests` (user setting lost).
    fn depth_updated(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests;
        self.async_depth = nr_requests;
    }

    /// `dd_prepare_request`: clear the "went through insert" marker.
    fn prepare_request(&mut self, _ctx: &mut ElvCtx, rq: RqId) {
        *self.rq_mut(rq) = DdRq::EMPTY;
    }

    /// `dd_bio_merge` → `blk_mq_sched_try_merge`.
    fn bio_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio, bio_id: BioId) -> bool {
        merge::sched_try_merge(ctx, self, bio, bio_id)
    }

    /// `dd_request_merge`: front-merge lookup in the sort tree of the bio's level and
    /// direction, for a request starting where the bio ends.
    fn request_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio) -> Option<(RqId, MergeKind)> {
        if self.front_merges == 0 {
            return None;
        }
        let lv = level_of(bio.ioprio.class);
        let end = bio.end().0;
        let rq = Self::node(
            self.sort
                .lower_bound(self.levels[lv].sort[bio.op.dir().idx()], end),
        )?;
        if self.sort.sector(rq.0) != end || !merge::bio_merge_ok(ctx.rqs.get(rq), bio) {
            return None;
        }
        Some((rq, MergeKind::Front))
    }

    /// `dd_request_merged`: a front merge moved the start sector; re-sort.
    fn request_merged(&mut self, ctx: &mut ElvCtx, rq: RqId, kind: MergeKind) {
        if kind != MergeKind::Front || self.rq(rq).place != Place::Queued {
            return;
        }
        let (lv, dir) = (self.rq(rq).level as usize, self.rq(rq).dir as usize);
        self.tree_del(lv, dir, rq);
        self.tree_add(lv, dir, rq, ctx.rqs.get(rq).sector.0);
    }

    /// `dd_merged_requests`: `next` was absorbed into `rq`. Count it, let `rq`
    /// inherit `next`'s deadline and FIFO slot if earlier, forget `next`.
    fn requests_merged(&mut self, ctx: &mut ElvCtx, rq: RqId, next: RqId) {
        let (lv, cpu) = {
            let r = ctx.rqs.get(next);
            (level_of(r.ioprio.class), r.cpu)
        };
        let s = &mut self.levels[lv].stats;
        s.merged = s.merged.wrapping_add(1);
        self.dd_count(cpu, lv, EV_MERGED);
        self.rq_mut(rq);
        self.rq_mut(next);
        let (a, b) = (self.rqs[rq.index()], self.rqs[next.index()]);
        if a.place == Place::Queued && b.place == Place::Queued && b.fifo_time.before(a.fifo_time) {
            let (alv, adir) = (a.level as usize, a.dir as usize);
            self.fifo_unlink(alv, adir, rq);
            self.fifo_insert_after(alv, adir, next, rq);
            self.rqs[rq.index()].fifo_time = b.fifo_time;
        }
        self.remove_request(ctx, next);
    }

    /// `elv_rb_latter_request`.
    fn next_request(&self, _ctx: &ElvCtx, rq: RqId) -> Option<RqId> {
        let d = self.rqs.get(rq.index())?;
        if d.place != Place::Queued {
            return None;
        }
        Self::node(self.sort.next(rq.0))
    }

    /// `elv_rb_former_request`.
    fn former_request(&self, _ctx: &ElvCtx, rq: RqId) -> Option<RqId> {
        let d = self.rqs.get(rq.index())?;
        if d.place != Place::Queued {
            return None;
        }
        Self::node(self.sort.prev(rq.0))
    }

    /// `dd_insert_requests` / `dd_insert_request`.
    fn insert_requests(&mut self, ctx: &mut ElvCtx, rqs: &[RqId], at_head: bool) {
        let now = ctx.jiffies;
        for &id in rqs {
            let (lv, dir, sector, end, mergeable, cpu) = {
                let r = ctx.rqs.get(id);
                (
                    level_of(r.ioprio.class),
                    r.dir().idx(),
                    r.sector.0,
                    r.end().0,
                    merge::rq_mergeable(r),
                    r.cpu,
                )
            };
            let d = self.rq_mut(id);
            let first = d.level == NO_LEVEL;
            d.level = lv as u8;
            d.dir = dir as u8;
            if first {
                let s = &mut self.levels[lv].stats;
                s.inserted = s.inserted.wrapping_add(1);
                self.dd_count(cpu, lv, EV_INSERTED);
            }
            // blk_mq_sched_try_insert_merge
            if mergeable && merge::attempt_insert_merge(ctx, self, id) {
                continue;
            }
            let d = &mut self.rqs[id.index()];
            if !d.counted {
                d.counted = true;
                let s = &mut self.levels[lv].stats;
                s.nr_queued = s.nr_queued.wrapping_add(1);
            }
            if at_head {
                self.rqs[id.index()].fifo_time = now;
                self.rqs[id.index()].place = Place::Dispatch;
                self.dispatch.push_front(id);
            } else {
                self.tree_add(lv, dir, id, sector);
                if mergeable {
                    ctx.merge.rqhash_add(id, end);
                    if ctx.merge.last_merge.is_none() {
                        ctx.merge.last_merge = Some(id);
                    }
                }
                self.rqs[id.index()].fifo_time = now.plus(self.fifo_expire[dir] as i64 as u64);
                self.fifo_push_back(lv, dir, id);
            }
        }
    }

    /// `dd_dispatch_request`: the at-head list, then the aged pass, then the levels
    /// in priority order, a lower level only when the higher ones have nothing queued
    /// or in flight.
    fn dispatch_request(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        if let Some(rq) = self.dispatch.pop_front() {
            self.start_request(ctx, rq);
            let r = ctx.rqs.get(rq);
            self.last_decision = Some(Decision {
                level: level_of(r.ioprio.class),
                dir: r.dir(),
                how: How::AtHead,
                aged: false,
            });
            return Some(rq);
        }
        if let Some(rq) = self.dispatch_aged(ctx) {
            return Some(rq);
        }
        let now = ctx.jiffies;
        for lv in 0..LEVELS {
            let rq = self.dispatch_level(ctx, lv, now, false);
            if rq.is_some() || self.queued(lv) != 0 {
                return rq;
            }
        }
        None
    }

    /// Replay support: take `rq` out as the kernel's dispatch of it would. The
    /// kernel's path to it is not recorded, so the batch bookkeeping assumes the most
    /// plausible one: a continuation of the current batch when `rq` is that batch's
    /// next request, else a new batch in its direction (counting `starved` as a
    /// direction choice would).
    fn force_dispatch(&mut self, ctx: &mut ElvCtx, rq: RqId) -> bool {
        let Some(d) = self.rqs.get(rq.index()).copied() else {
            return false;
        };
        match d.place {
            Place::Out => false,
            Place::Dispatch => {
                self.dispatch.retain(|&r| r != rq);
                self.start_request(ctx, rq);
                true
            }
            Place::Queued => {
                let (lv, dir) = (d.level as usize, d.dir as usize);
                let continues = dir == self.last_dir
                    && self.batching < self.fifo_batch as u32
                    && self.next_rq(lv, dir) == Some(rq);
                if !continues {
                    if dir == WRITE {
                        self.starved = 0;
                    } else if !self.levels[lv].fifo[WRITE].is_empty() {
                        self.starved = self.starved.wrapping_add(1);
                    }
                    self.last_dir = dir;
                    self.batching = 0;
                }
                self.batching += 1;
                self.remove_request(ctx, rq);
                self.start_request(ctx, rq);
                self.last_decision = None;
                true
            }
        }
    }

    /// `dd_has_work`.
    fn has_work(&self, _ctx: &ElvCtx) -> bool {
        !self.dispatch.is_empty() || self.on_fifos > 0
    }

    /// `dd_finish_request`: count the completion of a request that went through
    /// insertion; others (bypass inserts) are ignored.
    fn finish_request(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        let Some(&d) = self.rqs.get(rq.index()) else {
            return;
        };
        if d.level == NO_LEVEL {
            return;
        }
        // v5.14 counted the completion on the CPU running the completion; which CPU
        // that is does not change any sum.
        self.dd_count(ctx.rqs.get(rq).cpu, d.level as usize, EV_COMPLETED);
        let d = &mut self.rqs[rq.index()];
        let s = &mut self.levels[d.level as usize].stats;
        s.completed = s.completed.wrapping_add(1);
        if d.counted {
            s.nr_queued = s.nr_queued.wrapping_sub(1);
        }
        // The slot will be reused by another request: drop the marker now, so that
        // a later request in this slot that skips prepare_request is not miscounted.
        *d = DdRq::EMPTY;
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        vec![
            TunableInfo {
                name: "read_expire",
                unit: "ms",
                default: DEFAULT_READ_EXPIRE_MS.to_string(),
                help: "deadline of a read, from insertion",
            },
            TunableInfo {
                name: "write_expire",
                unit: "ms",
                default: DEFAULT_WRITE_EXPIRE_MS.to_string(),
                help: "deadline of a write, from insertion",
            },
            TunableInfo {
                name: "writes_starved",
                unit: "batches",
                default: DEFAULT_WRITES_STARVED.to_string(),
                help: "read batches that may be chosen while writes wait",
            },
            TunableInfo {
                name: "front_merges",
                unit: "bool",
                default: "1".to_string(),
                help: "look up front merges in the sort tree",
            },
            TunableInfo {
                name: "async_depth",
                unit: "requests",
                default: self.nr_requests.to_string(),
                help: "scheduler tags usable by anything but synchronous reads; default: the \
                       queue's nr_requests (dd_depth_updated)",
            },
            TunableInfo {
                name: "fifo_batch",
                unit: "requests",
                default: DEFAULT_FIFO_BATCH.to_string(),
                help: "maximum requests in one sector-ordered batch",
            },
            TunableInfo {
                name: "prio_aging_expire",
                unit: "ms",
                default: DEFAULT_PRIO_AGING_EXPIRE_MS.to_string(),
                help: "age after which BE/IDLE requests are served despite higher-priority work",
            },
            TunableInfo {
                name: "insert_lists",
                unit: "bool",
                default: "0".into(),
                help: "(iosched only, not in sysfs; host model) 1: the Jan 2024 scalability series' locking: \
                       per-CPU insertion lists, serialized dispatch, merge lookups skipped when contended",
            },
        ]
    }

    fn get_tunable(&self, name: &str) -> Result<String, TunableError> {
        Ok(match name {
            "read_expire" => self.show_ms(self.fifo_expire[READ]),
            "write_expire" => self.show_ms(self.fifo_expire[WRITE]),
            "prio_aging_expire" => self.show_ms(self.prio_aging_expire),
            "writes_starved" => self.writes_starved.to_string(),
            "front_merges" => self.front_merges.to_string(),
            // SHOW_INT prints the u32 with "%d".
            "async_depth" => (self.async_depth as i32).to_string(),
            "fifo_batch" => self.fifo_batch.to_string(),
            "variant" => self.variant.name().to_string(),
            "insert_lists" => u8::from(self.insert_lists).to_string(),
            _ => return Err(unknown_tunable(NAME, name, &self.tunables())),
        })
    }

    /// The kernel's `STORE_INT` / `STORE_JIFFIES`: `kstrtoint`, clamp, convert.
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let invalid = |reason: &str| TunableError::Invalid {
            sched: NAME,
            name: name.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };
        if name == "insert_lists" {
            self.insert_lists = match value.trim() {
                "0" => false,
                "1" => true,
                _ => return Err(invalid("expected 0 or 1")),
            };
            return Ok(());
        }
        if name == "variant" {
            let v = value.strip_suffix('\n').unwrap_or(value);
            let known = Variant::ALL.iter().map(|(_, i)| i.name).collect::<Vec<_>>();
            let new = Variant::ALL
                .iter()
                .find(|(_, i)| i.name == v)
                .map(|(var, _)| *var)
                .ok_or_else(|| {
                    invalid(&format!("unknown variant (known: {})", known.join(", ")))
                })?;
            if new == Variant::PerCpuStats && self.variant != Variant::PerCpuStats {
                // Start the per-CPU copies from the level counters so that their sums
                // agree with what is already queued.
                self.percpu
                    .iter_mut()
                    .for_each(|c| *c = CpuStats::default());
                for (lv, l) in self.levels.iter().enumerate() {
                    let row = &mut self.percpu[0].ev[lv];
                    row[EV_INSERTED] = i64::from(l.stats.nr_queued);
                }
            }
            self.variant = new;
            return Ok(());
        }
        if !self.tunables().iter().any(|t| t.name == name) {
            return Err(unknown_tunable(NAME, name, &self.tunables()));
        }
        let v = parse_kernel_int(value).ok_or_else(|| invalid("not an integer (EINVAL)"))?;
        let v = i32::try_from(v).map_err(|_| invalid("out of int range (ERANGE)"))?;
        let clamp = |lo: i32, hi: i32| v.clamp(lo, hi);
        match name {
            "read_expire" => self.fifo_expire[READ] = self.store_ms(clamp(0, i32::MAX)),
            "write_expire" => self.fifo_expire[WRITE] = self.store_ms(clamp(0, i32::MAX)),
            "prio_aging_expire" => self.prio_aging_expire = self.store_ms(clamp(0, i32::MAX)),
            "writes_starved" => self.writes_starved = v,
            "front_merges" => self.front_merges = clamp(0, 1),
            "async_depth" => self.async_depth = clamp(1, i32::MAX) as u32,
            "fifo_batch" => self.fifo_batch = clamp(0, i32::MAX),
            _ => unreachable!("checked against tunables()"),
        }
        Ok(())
    }

    fn variants(&self) -> Vec<VariantInfo> {
        Variant::ALL.iter().map(|(_, i)| *i).collect()
    }

    /// The kernel's debugfs `sched/` entries (requests shown by id), plus the raw
    /// per-level counters `inserted`, `merged`, `dispatched`, `completed` (not debugfs
    /// files in the kernel; each "RT BE IDLE" like `queued`).
    fn debugfs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (dir, dname) in [(READ, "read"), (WRITE, "write")] {
            for lv in 0..LEVELS {
                out.push((
                    format!("{dname}{lv}_fifo_list"),
                    Self::ids(self.fifo_ids(lv, dir).into_iter()),
                ));
            }
        }
        for (dir, dname) in [(READ, "read"), (WRITE, "write")] {
            for lv in 0..LEVELS {
                out.push((
                    format!("{dname}{lv}_next_rq"),
                    Self::ids(self.peek_next_rq(lv, dir).into_iter()),
                ));
            }
        }
        out.push(("batching".into(), self.batching.to_string()));
        out.push(("starved".into(), self.starved.to_string()));
        out.push(("async_depth".into(), self.async_depth.to_string()));
        out.push(("dispatch".into(), Self::ids(self.dispatch.iter().copied())));
        out.push((
            "owned_by_driver".into(),
            self.per_level(LevelStats::owned_by_driver),
        ));
        out.push(("queued".into(), self.per_level(LevelStats::queued)));
        out.push(("inserted".into(), self.per_level(|s| s.inserted)));
        out.push(("merged".into(), self.per_level(|s| s.merged)));
        out.push(("dispatched".into(), self.per_level(|s| s.dispatched)));
        out.push(("completed".into(), self.per_level(|s| s.completed)));
        out
    }
}
