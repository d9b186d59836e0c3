//! BFQ, Budget Fair Queueing (`block/bfq-iosched.c`, `block/bfq-wf2q.c`,
//! `block/bfq-cgroup.c`), following **mainline v6.13**, with group scheduling.
//!
//! Every process (`Request::pid`) gets its own **sync** `bfq_queue`; async
//! (buffered-write) requests go to a queue shared by all processes of the same
//! group with the same class and level. Each cgroup that issues I/O
//! (`Request::cgroup`) has a `bfq_group` ([`cgroup`]) whose weight is the cgroup's
//! `io.bfq.weight` (default 100) from the table the driver passes with
//! [`Elevator::set_cgroups`]. Queues and groups are scheduled by hierarchical
//! **B-WF2Q+** ([`wf2q`]): groups by their weights at each level, queues within
//! their group by theirs (`(8 - ioprio level) × 10`: level 4 → 40, level 0 → 80). The queue in
//! service is served until its **budget** (sectors) is exhausted, its **budget
//! timeout** (`timeout_sync`, jiffies) expires, or it runs out of requests; an empty
//! sync queue may keep the device **idle** (`slice_idle`) waiting for its process's
//! next request, through the idle timer ([`Elevator::next_timer`]).
//!
//! # Tunables (`/sys/block/<dev>/queue/iosched/`)
//!
//! | name | unit | default | store (as the kernel's) |
//! | --- | --- | --- | --- |
//! | `back_seek_max` | KiB | 16384 | 0..INT_MAX, clamped |
//! | `back_seek_penalty` | factor | 2 | 1..INT_MAX, clamped |
//! | `fifo_expire_async` | ms | 250 | 1..INT_MAX, clamped, stored in ns |
//! | `fifo_expire_sync` | ms | 125 | 1..INT_MAX, clamped, stored in ns |
//! | `low_latency` | bool | 1 | >1 → 1; writing 0 ends all weight raising |
//! | `max_budget` | sectors | 0 (auto) | 0 → recomputed from the peak rate; else fixed |
//! | `slice_idle` | ms | 8 | 0..INT_MAX, stored in ns |
//! | `slice_idle_us` | µs | 8000 | same variable as `slice_idle` |
//! | `strict_guarantees` | bool | 0 | >1 → 1; enabling raises `slice_idle` to ≥ 8 ms |
//! | `timeout_sync` | ms | 125 (HZ 1000) | ≥ 1, stored in jiffies (`msecs_to_jiffies`) |
//!
//! Values are parsed as `kstrtoul(.., 10, ..)` (decimal, unsigned). Two
//! pseudo-attributes are not kernel files: `variant` picks the seed-4 rule for
//! `num_groups_with_pending_reqs` (`mainline`, `legacy`, `seed-v1-p1`, `seed-v1`;
//! see [`cgroup`]), `injection` (1, or 0 to never inject while plugged) and
//! `queue_merging` (1, or 0 to turn off EQM and stable merging, [`coop`]).
//!
//! # Mapping to the kernel
//!
//! | kernel | here |
//! | --- | --- |
//! | `bfq_insert_request`, `__bfq_insert_request`, `bfq_init_rq`, `bfq_get_queue` | `insert_requests`, [`Bfq::insert_one`], [`Bfq::get_queue`] |
//! | `bfq_add_request`, `bfq_bfqq_handle_idle_busy_switch` | [`Bfq::add_request`], [`Bfq::handle_idle_busy_switch`] |
//! | `bfq_rq_enqueued` | `Bfq::rq_enqueued` ([`idle`]) |
//! | `bfq_dispatch_request`, `bfq_select_queue`, `bfq_dispatch_rq_from_bfqq` | `dispatch_request`, [`Bfq::select_queue`], [`Bfq::dispatch_rq_from_bfqq`] |
//! | `bfq_finish_requeue_request`, `bfq_completed_request` | `finish_request`/`requeue_request`, [`Bfq::bfq_completed_request`] |
//! | `bfq_bfqq_expire`, `__bfq_bfqq_recalc_budget`, `bfq_bfqq_is_slow`, `bfq_bfqq_charge_time` | [`budget`] |
//! | `bfq_better_to_idle`, `idling_needed_for_service_guarantees`, `bfq_asymmetric_scenario`, `bfq_arm_slice_timer`, `bfq_idle_slice_timer` | [`idle`] |
//! | injection: `bfq_check_waker`, `bfq_choose_bfqq_for_injection`, `bfq_reset_inject_limit`, `bfq_update_inject_limit` | [`inject`] |
//! | `bfq_bio_merge`, `bfq_allow_bio_merge`, `bfq_request_merge(d)`, `bfq_requests_merged` | [`merge`] |
//! | queue merging: `bfq_setup_cooperator`, `bfq_setup_merge`, `bfq_merge_bfqqs`, `bfq_do_or_sched_stable_merge`, `bfq_split_bfqq`, `bfq_pos_tree_add_move` | [`coop`] |
//! | `bfq_update_peak_rate`, `bfq_update_rate_reset`, `bfq_reset_rate_computation` | [`peak_rate`] |
//! | `lib/rbtree.c` for `rq_pos_tree` (`rb_insert_color`, `rb_erase`, `rb_next`, `rb_prev`) | [`rbtree`] |
//! | weight raising, `bfq_handle_burst` | [`wr`] |
//! | B-WF2Q+, the group hierarchy (`bfq_activate_requeue_entity`, `bfq_deactivate_entity`, `bfq_update_parent_budget`, `bfq_get_next_queue`, ...) | [`wf2q`] |
//! | `bfq_bio_bfqg`, `bfq_bic_update_cgroup`, `bfq_bfqq_move`, `bfq_add/del_bfqq_in_groups_with_pending_reqs`, `bfq_bfqq_higher_class_or_weight`, the seed's `bfq_update_dispatch_size_info` | [`cgroup`] |
//!
//! # Not modelled yet (extension points)
//!
//! - per-device group weight overrides, group statistics, offlining groups;
//!
//! `force_dispatch` ([`force`]) lets `kernel-trace compare` follow the kernel's
//! choices; the agreement on recorded traces is in `docs/validation.md` §5.

pub mod budget;
pub mod cgroup;
pub mod coop;
pub mod depth;
pub mod exit;
pub mod force;
pub mod idle;
pub mod inject;
pub mod merge;
pub mod peak_rate;
pub mod queue;
pub mod rbtree;
pub mod wf2q;
pub mod wr;

use crate::cgroup::CgroupTable;
use crate::elevator::{
    unknown_tunable, Elevator, ElvCtx, QueueParams, TunableError, TunableInfo, VariantInfo,
};
use crate::merge::MergeKind;
use crate::request::{Bio, BioId, RqId};
use crate::types::{CgroupId, Ns, Op, ReqFlags};
use cgroup::{BfqGroup, DispatchSizeInfo, Variant};
use queue::{effective_ioprio, ioprio_to_weight, BfqQueue, Bic, QueueId, RqData};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use wf2q::{Entity, GroupId, Wf2q, CLASS_IDLE, ROOT_GROUP};

/// `bfq_default_max_budget` (sectors).
pub const BFQ_DEFAULT_MAX_BUDGET: i64 = 16 * 1024;
/// `bfq_stats_min_budgets`.
pub const BFQ_STATS_MIN_BUDGETS: u32 = 194;
/// `bfq_async_charge_factor`.
pub const BFQ_ASYNC_CHARGE_FACTOR: i64 = 3;
/// `BFQ_MIN_TT` (ns).
pub const BFQ_MIN_TT: u64 = 2 * Ns::MS;
/// `BFQQ_SEEK_THR` (sectors).
pub const BFQQ_SEEK_THR: u64 = 8 * 100;
/// `BFQQ_SECT_THR_NONROT` (sectors).
pub const BFQQ_SECT_THR_NONROT: u32 = 2 * 32;
/// `BFQ_HW_QUEUE_THRESHOLD`.
pub const BFQ_HW_QUEUE_THRESHOLD: u32 = 3;
/// `BFQ_HW_QUEUE_SAMPLES`.
pub const BFQ_HW_QUEUE_SAMPLES: u32 = 32;
/// `ref_rate[]` (rotational, non-rotational), `(sectors/µs) << 16`.
pub const REF_RATE: [u32; 2] = [14000, 33000];
/// `BFQ_RATE_SHIFT`.
pub const BFQ_RATE_SHIFT: u32 = 16;
/// `INT_MAX`, the clamp of most stores.
const INT_MAX: u64 = i32::MAX as u64;

/// Why the in-service queue expired (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiration {
    /// `BFQQE_TOO_IDLE`: the idle timer fired and the queue is still empty.
    TooIdle,
    /// `BFQQE_BUDGET_TIMEOUT`.
    BudgetTimeout,
    /// `BFQQE_BUDGET_EXHAUSTED`.
    BudgetExhausted,
    /// `BFQQE_NO_MORE_REQUESTS`.
    NoMoreRequests,
    /// `BFQQE_PREEMPTED`.
    Preempted,
}

/// One expiration, for tests and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpireEvent {
    /// When.
    pub t: Ns,
    /// Which queue.
    pub queue: QueueId,
    /// Why.
    pub reason: Expiration,
    /// Service received in the slot when it expired (before time charging).
    pub service: i64,
    /// Budget of the slot.
    pub budget: i64,
}

/// The BFQ scheduler (`struct bfq_data`).
#[derive(Clone, Debug)]
pub struct Bfq {
    hz: u32,
    rotational: bool,
    /// B-WF2Q+ state of the root level and all entities.
    pub wf: Wf2q,
    /// All queues ever created, by id (queues are never freed in this model).
    pub queues: Vec<BfqQueue>,
    /// The queues' position-tree links (`pos_node`), by queue id.
    pos_nodes: Vec<rbtree::RbNode>,
    /// Per-process state (`bfq_io_cq`), by pid.
    bics: FxHashMap<u32, Bic>,
    /// BFQ's per-group data (cgroup, async queues), indexed like `wf.groups`.
    pub bfqg: Vec<BfqGroup>,
    /// The run's cgroups (paths, nesting, weights).
    cgroups: CgroupTable,
    group_of_cgroup: FxHashMap<CgroupId, GroupId>,
    /// Which `num_groups_with_pending_reqs` rule applies (`bfq.variant`).
    pub variant: Variant,
    /// The seed's dispatch-size record (kept under every variant, read by `seed-v1`).
    pub dispatch_size: DispatchSizeInfo,
    rqd: Vec<RqData>,
    rq_seq: u64,
    /// `bfqd->dispatch`.
    dispatch: VecDeque<RqId>,
    /// `bfqd->bio_bfqq`: the queue of the bio being merged.
    bio_bfqq: Option<QueueId>,
    /// `busy_queues[class]`.
    pub busy_queues: [u32; 3],
    /// `wr_busy_queues`.
    pub wr_busy_queues: u32,
    /// Work for the host model ([`Elevator::take_work`]).
    host_work: crate::elevator::ElvWork,
    /// `queued`.
    pub queued: u32,
    /// `tot_rq_in_driver`.
    pub tot_rq_in_driver: u32,
    max_rq_in_driver: u32,
    /// `hw_tag` (-1 unknown, 0, 1).
    pub hw_tag: i32,
    hw_tag_samples: u32,
    nonrot_with_queueing: bool,
    /// `num_groups_with_pending_reqs` as ≥ 6.2 counts it (the ≤ 6.1 count is
    /// `wf.legacy_groups_with_pending_reqs`).
    pub num_groups_with_pending_reqs: u32,
    /// `budgets_assigned`.
    pub budgets_assigned: u32,
    /// `bfqd->bfq_max_budget` (sectors).
    pub bfq_max_budget: i64,
    bfq_user_max_budget: i64,
    peak_rate: u32,
    /// The peak-rate observation interval.
    rate: peak_rate::RateSampling,
    /// `in_service_queue`.
    pub in_service_queue: Option<QueueId>,
    last_position: u64,
    in_serv_last_pos: u64,
    last_budget_start: Ns,
    last_idling_start: Ns,
    last_idling_start_jiffies: u64,
    last_completion: Ns,
    /// The idle slice timer's expiry, when armed.
    idle_timer: Option<Ns>,
    rqs_injected: bool,
    wait_dispatch: bool,
    waited_rq: Option<RqId>,
    last_empty_occupied_ns: u64,
    last_completed_rq_bfqq: Option<QueueId>,
    burst_list: Vec<QueueId>,
    /// `burst_parent_entity`: the group of the queues in the current burst.
    burst_parent: GroupId,
    burst_size: u32,
    large_burst: bool,
    last_ins_in_burst: u64,
    now: Ns,
    jiffies: u64,
    clock_seen: bool,
    // tunables
    fifo_expire: [u64; 2],
    back_max: u64,
    back_penalty: u64,
    slice_idle: u64,
    timeout: u64,
    strict_guarantees: bool,
    low_latency: bool,
    /// Every expiration, in order (bounded: tests and reports read it).
    pub expirations: Vec<ExpireEvent>,
    /// Log expirations into [`Bfq::expirations`] (on from [`Bfq::new`], off for
    /// schedulers made through [`crate::elevator::SCHEDULERS`]: unbounded).
    pub record_expirations: bool,
    /// Diagnostics: requests dispatched by injection (from a queue other than the
    /// one in service).
    pub injected: u64,
    /// The iosched-only switch `injection` (not a kernel attribute): 0 makes the
    /// plugged branch of `bfq_select_queue` never inject.
    injection: bool,
    /// The iosched-only switch `queue_merging` (not a kernel attribute): 0 turns
    /// off EQM and stable merging.
    queue_merging: bool,
    /// `queue/nr_requests` as last told (`bfq_depth_updated`).
    nr_requests: u32,
    /// `async_depths[raised busy queues?][sync write?]` (6.17+ `bfq_update_depths`).
    async_depths: [[u32; 2]; 2],
    /// `entity.allocated` of each group entity (index: group).
    group_allocated: Vec<u32>,
}

impl Bfq {
    /// `bfq_init_queue`.
    pub fn new(p: &QueueParams) -> Bfq {
        let hz = p.hz.max(1);
        let mut b = Bfq {
            hz,
            rotational: p.rotational,
            wf: Wf2q::new(hz, 0),
            queues: Vec::new(),
            pos_nodes: Vec::new(),
            bics: FxHashMap::default(),
            bfqg: vec![BfqGroup::default()],
            cgroups: CgroupTable::new(),
            group_of_cgroup: FxHashMap::default(),
            variant: Variant::Mainline,
            dispatch_size: DispatchSizeInfo::default(),
            rqd: Vec::new(),
            rq_seq: 0,
            dispatch: VecDeque::new(),
            bio_bfqq: None,
            busy_queues: [0; 3],
            host_work: Default::default(),
            wr_busy_queues: 0,
            queued: 0,
            tot_rq_in_driver: 0,
            max_rq_in_driver: 0,
            hw_tag: -1,
            hw_tag_samples: 0,
            nonrot_with_queueing: !p.rotational,
            num_groups_with_pending_reqs: 0,
            budgets_assigned: 0,
            bfq_max_budget: BFQ_DEFAULT_MAX_BUDGET,
            bfq_user_max_budget: 0,
            peak_rate: REF_RATE[usize::from(!p.rotational)] * 2 / 3,
            rate: peak_rate::RateSampling::default(),
            in_service_queue: None,
            last_position: 0,
            in_serv_last_pos: 0,
            last_budget_start: Ns::ZERO,
            last_idling_start: Ns::ZERO,
            last_idling_start_jiffies: 0,
            last_completion: Ns::ZERO,
            idle_timer: None,
            rqs_injected: false,
            wait_dispatch: false,
            waited_rq: None,
            last_empty_occupied_ns: 0,
            last_completed_rq_bfqq: None,
            burst_list: Vec::new(),
            burst_parent: ROOT_GROUP,
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: 0,
            now: Ns::ZERO,
            jiffies: 0,
            clock_seen: false,
            fifo_expire: [1_000_000_000 / 4, 1_000_000_000 / 8],
            back_max: 16 * 1024,
            back_penalty: 2,
            slice_idle: 1_000_000_000 / 125,
            timeout: (hz / 8) as u64,
            strict_guarantees: false,
            low_latency: true,
            expirations: Vec::new(),
            record_expirations: true,
            injected: 0,
            injection: true,
            queue_merging: true,
            nr_requests: 0,
            async_depths: [[1; 2]; 2],
            group_allocated: Vec::new(),
        };
        b.update_depths(p.nr_requests);
        b
    }

    fn set_clock(&mut self, ctx: &ElvCtx) {
        self.now = ctx.now;
        self.jiffies = ctx.jiffies.0;
        if !self.clock_seen {
            // bfq_init_root_group: bfq_class_idle_last_service = jiffies at init;
            // the first call is the closest we know to the init time.
            self.clock_seen = true;
            self.wf.groups[ROOT_GROUP].sd.class_idle_last_service = self.jiffies;
        }
    }

    /// `time_is_before_eq_jiffies(t)`: `t <= jiffies`.
    fn before_eq_jiffies(&self, t: u64) -> bool {
        (self.jiffies.wrapping_sub(t) as i64) >= 0
    }

    /// The compile-time `bfq_timeout` (`HZ / 8` jiffies).
    fn bfq_timeout_const(&self) -> u64 {
        (self.hz / 8) as u64
    }

    fn jiffies_to_msecs(&self, j: u64) -> u64 {
        j * 1000 / self.hz as u64
    }

    fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        (ms * self.hz as u64).div_ceil(1000)
    }

    /// `bfq_tot_busy_queues`.
    pub fn tot_busy_queues(&self) -> u32 {
        self.busy_queues
            .iter()
            .fold(0u32, |a, &b| a.wrapping_add(b))
    }

    /// The entity of queue `q`.
    pub fn entity(&self, q: QueueId) -> &Entity {
        &self.wf.ents[q]
    }

    /// The sync queue of process `pid`, if it has one.
    pub fn sync_queue_of(&self, pid: u32) -> Option<QueueId> {
        self.bics.get(&pid).and_then(|b| b.sync_q)
    }

    /// The queue a request was put in.
    pub fn queue_of(&self, rq: RqId) -> Option<QueueId> {
        self.rqd.get(rq.index()).and_then(|d| d.bfqq)
    }

    /// Whether the idle timer is armed (the in-service queue waits for a request).
    pub fn idling(&self) -> bool {
        self.idle_timer.is_some()
    }

    /// `bfq_max_budget(bfqd)`.
    pub fn max_budget(&self) -> i64 {
        if self.budgets_assigned < BFQ_STATS_MIN_BUDGETS {
            BFQ_DEFAULT_MAX_BUDGET
        } else {
            self.bfq_max_budget
        }
    }

    /// `bfq_min_budget(bfqd)`.
    pub fn min_budget(&self) -> i64 {
        self.max_budget() / 32
    }

    /// `bfq_calc_max_budget`.
    fn calc_max_budget(&self) -> i64 {
        ((self.peak_rate as u64 * 1000 * self.jiffies_to_msecs(self.timeout)) >> BFQ_RATE_SHIFT)
            as i64
    }

    /// The request's key in its queue's sort tree.
    fn sort_key(&self, rq: RqId) -> (u64, u64, RqId) {
        let d = &self.rqd[rq.index()];
        (d.sector, d.seq, rq)
    }

    fn rqd(&self, rq: RqId) -> &RqData {
        &self.rqd[rq.index()]
    }

    fn rqd_mut(&mut self, rq: RqId) -> &mut RqData {
        if self.rqd.len() <= rq.index() {
            self.rqd.resize(rq.index() + 1, RqData::default());
        }
        &mut self.rqd[rq.index()]
    }

    // ---------------------------------------------------------------- queues

    /// `bfq_get_queue` / `bfq_init_rq`: find or create the queue of a request from
    /// `pid` in cgroup `cg` with priority `prio`. A process seen in another cgroup
    /// than before has its sync queue moved there and its async queue dropped
    /// (`bfq_bic_update_cgroup`).
    pub fn get_queue(
        &mut self,
        ctx: &ElvCtx,
        pid: u32,
        cg: CgroupId,
        prio: crate::types::IoPrio,
        is_sync: bool,
    ) -> QueueId {
        let g = self.group_for(cg);
        self.bic_update_cgroup(ctx, pid, cg, g);
        let bic = self.bics.entry(pid).or_default();
        // bfq_check_ioprio_change
        let changed = bic.ioprio != Some(prio);
        bic.ioprio = Some(prio);
        let (class, level) = effective_ioprio(prio);
        if changed {
            bic.async_q = None;
            if let Some(sq) = bic.sync_q {
                // bfq_set_next_ioprio_data
                let e = &mut self.wf.ents[sq];
                e.new_class = class;
                e.new_weight = ioprio_to_weight(level);
                e.prio_changed = true;
            }
        }
        let bic = self.bics.get(&pid).cloned().unwrap_or_default();
        if is_sync {
            if let Some(q) = bic.sync_q {
                // bfq_get_bfqq_handle_split
                return self.split_if_needed(q, pid, |b| b.new_queue(g, pid, class, level, true));
            }
        } else {
            if let Some(q) = bic.async_q {
                return q;
            }
            let slot = match class {
                CLASS_IDLE => self.bfqg[g].async_idle_bfqq,
                c => self.bfqg[g].async_bfqq[c][level as usize],
            };
            if let Some(q) = slot {
                self.bics.get_mut(&pid).unwrap().async_q = Some(q);
                return q;
            }
        }
        let id = self.new_queue(g, pid, class, level, is_sync);
        let bic = self.bics.get_mut(&pid).unwrap();
        if is_sync {
            bic.sync_q = Some(id);
            self.do_or_sched_stable_merge(id, pid)
        } else {
            bic.async_q = Some(id);
            match class {
                CLASS_IDLE => self.bfqg[g].async_idle_bfqq = Some(id),
                c => self.bfqg[g].async_bfqq[c][level as usize] = Some(id),
            }
            id
        }
    }

    /// `bfq_init_bfqq` + `bfq_init_entity`: a new queue in group `g`.
    fn new_queue(
        &mut self,
        g: GroupId,
        pid: u32,
        class: usize,
        level: u8,
        is_sync: bool,
    ) -> QueueId {
        let id = self.queues.len();
        let maxb = 2 * self.max_budget() / 3;
        let smallest = self.smallest_from_now();
        let at = queue::Clock {
            now: self.now,
            jiffies: self.jiffies,
            smallest_from_now: smallest,
        };
        self.queues
            .push(BfqQueue::new(is_sync, pid, class, level, maxb, at));
        self.wf
            .ents
            .push(Entity::new(ioprio_to_weight(level), class).in_group(g));
        self.pos_nodes.push(rbtree::RbNode::default());
        id
    }

    // ------------------------------------------------------------- insertion

    /// `bfq_insert_request` for one request.
    pub fn insert_one(&mut self, ctx: &mut ElvCtx, rq: RqId, at_head: bool) {
        let r = ctx.rqs.get(rq);
        let (pid, cg, prio, sync) = (r.pid, r.cgroup, r.ioprio, r.is_sync());
        let mut q = self.get_queue(ctx, pid, cg, prio, sync);
        self.bics
            .get_mut(&pid)
            .expect("bic created by get_queue")
            .requests += 1;
        // bfq_init_rq: a queue used by this process alone is its own.
        if sync && self.queues[q].new_bfqq.is_none() && self.queues[q].process_refs == 1 {
            self.queues[q].bic = Some(pid);
        }
        self.rq_seq += 1;
        let seq = self.rq_seq;
        // bfq_init_rq: burst detection for just-created queues.
        if self.queues[q].just_created && (self.burst_size > 0 || self.tot_busy_queues() == 0) {
            self.handle_burst(q);
        }
        let (sector, end, mergeable) = {
            let r = ctx.rqs.get(rq);
            (r.sector.0, r.end().0, crate::merge::rq_mergeable(r))
        };
        *self.rqd_mut(rq) = RqData {
            bfqq: Some(q),
            seq,
            sync,
            sector,
            ..RqData::default()
        };
        self.count_allocated(q, true);
        // blk_mq_sched_try_insert_merge (after bfq_init_rq, as in v6.13)
        if mergeable && crate::merge::attempt_insert_merge(ctx, self, rq) {
            return;
        }
        if at_head {
            self.rqd_mut(rq).in_dispatch_list = true;
            self.dispatch.push_front(rq);
            return;
        }
        // __bfq_insert_request: EQM may send the request (and the process) to a
        // cooperating queue. (If the process had already left `q`, v6.13 goes on
        // updating `q`'s statistics and FIFO with the request; here the request
        // simply goes to the cooperator.)
        if let Some(new) = self.setup_cooperator(q, sector, pid) {
            if self.bics.get(&pid).and_then(|b| b.sync_q) == Some(q) {
                let mut x = q;
                while x != new {
                    x = self.merge_bfqqs(pid, x);
                }
            }
            self.queues[q].just_created = false;
            // The request's allocation moves to the shared queue.
            self.count_allocated(q, false);
            self.count_allocated(new, true);
            q = new;
            self.rqd_mut(rq).bfqq = Some(new);
        }
        self.update_io_thinktime(q);
        self.update_has_short_ttime(q);
        self.update_io_seektime(ctx, q, rq);
        self.add_request(ctx, q, rq);
        let fifo_time = self.now.add(self.fifo_expire[usize::from(sync)]);
        self.rqd_mut(rq).fifo_time = fifo_time;
        self.queues[q].fifo.push_back(&mut self.rqd, rq);
        self.rq_enqueued(ctx, q, rq);
        if mergeable {
            ctx.merge.rqhash_add(rq, end);
            if ctx.merge.last_merge.is_none() {
                ctx.merge.last_merge = Some(rq);
            }
        }
    }

    /// `bfq_update_io_thinktime` (v6.13: only when nothing is queued or in flight).
    fn update_io_thinktime(&mut self, q: QueueId) {
        let slice_idle = self.slice_idle;
        let now = self.now;
        let bq = &mut self.queues[q];
        if bq.dispatched > 0 || bq.busy {
            return;
        }
        // Unsigned, as in the kernel: a brand-new queue's reference is its creation
        // instant + 1 ns, read from the same (plug-cached) clock as `now`, so its
        // first sample wraps and is clamped to the maximum, `2 × slice_idle`.
        let elapsed = now
            .0
            .wrapping_sub(bq.ttime.last_end_request.0)
            .min(2 * slice_idle);
        let t = &mut bq.ttime;
        t.samples = (7 * t.samples + 256) / 8;
        t.total = (7 * t.total + 256 * elapsed) / 8;
        t.mean = (t.total + 128) / t.samples;
    }

    /// `bfq_update_has_short_ttime` (v6.13: long if mean > `slice_idle / 2`).
    fn update_has_short_ttime(&mut self, q: QueueId) {
        let class = self.wf.ents[q].class;
        let bq = &mut self.queues[q];
        if !bq.sync || class == CLASS_IDLE || self.slice_idle == 0 {
            return;
        }
        // Think-time statistics just restored by a split are not trusted yet.
        let restored_until = bq.split_time.wrapping_add(self.wr_min_idle_time());
        if (restored_until.wrapping_sub(self.jiffies) as i64) >= 0 {
            return;
        }
        let bq = &mut self.queues[q];
        // bfq_sample_valid: samples > 80
        let short = !(bq.ttime.samples > 80 && bq.ttime.mean > self.slice_idle >> 1);
        let state_changed = short != bq.has_short_ttime;
        bq.has_short_ttime = short;
        let ms100 = self.msecs_to_jiffies(100);
        if state_changed
            && self.queues[q].last_serv_time_ns == 0
            && (self.before_eq_jiffies(self.queues[q].decrease_time_jif.wrapping_add(ms100))
                || !short)
        {
            self.reset_inject_limit(q);
        }
    }

    /// `BFQ_RQ_SEEKY`.
    pub(super) fn rq_seeky(&self, last_pos: u64, sector: u64, sectors: u32) -> bool {
        let sdist = if last_pos != 0 {
            sector.abs_diff(last_pos)
        } else {
            0
        };
        sdist > BFQQ_SEEK_THR && (self.rotational || sectors < BFQQ_SECT_THR_NONROT)
    }

    /// `bfq_update_io_seektime`.
    fn update_io_seektime(&mut self, ctx: &ElvCtx, q: QueueId, rq: RqId) {
        let r = ctx.rqs.get(rq);
        let seeky = self.rq_seeky(self.queues[q].last_request_pos, r.sector.0, r.nr_sectors);
        let bq = &mut self.queues[q];
        bq.seek_history = (bq.seek_history << 1) | u32::from(seeky);
        // A totally seeky queue is not soft real-time: its soft real-time raising
        // stops, falling back to interactive raising if the interactive period
        // that preceded it has not elapsed yet.
        if self.wf.ents[q].wr_coeff > 1
            && self.queues[q].wr_cur_max_time == self.wr_rt_max_time()
            && self.queues[q].seek_history == u32::MAX
        {
            let switched = self.queues[q].wr_start_at_switch_to_srt;
            if self.before_jiffies(switched.wrapping_add(self.wr_duration())) {
                self.bfqq_end_wr(q);
            } else {
                self.switch_back_to_interactive_wr(q);
                self.wf.ents[q].prio_changed = true;
            }
        }
    }

    /// `bfq_choose_req`: which of two requests to serve first from head `last`.
    pub fn choose_req(
        &self,
        ctx: &ElvCtx,
        rq1: Option<RqId>,
        rq2: Option<RqId>,
        last: u64,
    ) -> Option<RqId> {
        let (r1, r2) = match (rq1, rq2) {
            (None, r) => return r,
            (r, None) => return r,
            (Some(a), Some(b)) if a == b => return Some(b),
            (Some(a), Some(b)) => (a, b),
        };
        let (q1, q2) = (ctx.rqs.get(r1), ctx.rqs.get(r2));
        if q1.is_sync() && !q2.is_sync() {
            return Some(r1);
        } else if q2.is_sync() && !q1.is_sync() {
            return Some(r2);
        }
        let (m1, m2) = (q1.flags.has(ReqFlags::META), q2.flags.has(ReqFlags::META));
        if m1 && !m2 {
            return Some(r1);
        } else if m2 && !m1 {
            return Some(r2);
        }
        let (s1, s2) = (q1.sector.0, q2.sector.0);
        let back_max = self.back_max * 2;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.back_penalty)
            } else {
                None
            }
        };
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 {
                    r1
                } else if d2 < d1 {
                    r2
                } else if s1 >= s2 {
                    r1
                } else {
                    r2
                }
            }
            (Some(_), None) => r1,
            (None, Some(_)) => r2,
            (None, None) => {
                if s1 <= s2 {
                    r1
                } else {
                    r2
                }
            }
        })
    }

    /// `bfq_serv_to_charge`.
    pub fn serv_to_charge(&self, ctx: &ElvCtx, rq: RqId, q: QueueId) -> i64 {
        let sectors = ctx.rqs.get(rq).nr_sectors as i64;
        if self.queues[q].sync || self.wf.ents[q].wr_coeff > 1 || self.asymmetric_scenario(Some(q))
        {
            sectors
        } else {
            sectors * BFQ_ASYNC_CHARGE_FACTOR
        }
    }

    /// `bfq_add_request`.
    pub fn add_request(&mut self, ctx: &mut ElvCtx, q: QueueId, rq: RqId) {
        let sync = self.rqd(rq).sync;
        let old_wr_coeff = self.wf.ents[q].wr_coeff;
        let mut interactive = false;
        let key = self.sort_key(rq);
        self.queues[q].queued[usize::from(sync)] += 1;
        self.queued += 1;
        let pid = ctx.rqs.get(rq).pid;
        if self.queues[q].sync && self.bics.get(&pid).is_some_and(|b| b.requests <= 1) {
            self.inject_on_add(q);
        }
        if self.queues[q].sync {
            self.update_io_intensity(q);
        }
        self.queues[q].sort.insert(key);
        self.rqd_mut(rq).in_sort = true;
        let prev = self.queues[q].next_rq;
        let next = self.choose_req(ctx, prev, Some(rq), self.last_position);
        self.queues[q].next_rq = next;
        if prev != next {
            self.pos_tree_update(q);
        }
        if !self.queues[q].busy {
            let may_raise = self.non_merged_or_stably_merged(q, pid);
            interactive = self.handle_idle_busy_switch(ctx, q, old_wr_coeff, may_raise);
        } else {
            // Async raising.
            let min_inter_arr = self.msecs_to_jiffies(500);
            if self.low_latency
                && old_wr_coeff == 1
                && !sync
                && self.before_jiffies(
                    self.queues[q]
                        .last_wr_start_finish
                        .wrapping_add(min_inter_arr),
                )
            {
                self.wf.ents[q].wr_coeff = wr::BFQ_WR_COEFF;
                self.queues[q].wr_cur_max_time = self.wr_duration();
                self.wr_busy_queues += 1;
                self.wf.ents[q].prio_changed = true;
            }
            if prev != next {
                self.updated_next_req(ctx, q);
            }
        }
        if self.low_latency && (old_wr_coeff == 1 || self.wf.ents[q].wr_coeff == 1 || interactive) {
            self.queues[q].last_wr_start_finish = self.jiffies;
        }
    }

    /// `bfq_update_io_intensity`: I/O bound iff busy (not empty with nothing in
    /// flight) at least 80% of a sliding window of at most 200 ms.
    fn update_io_intensity(&mut self, q: QueueId) {
        let now = self.now.0;
        let bq = &mut self.queues[q];
        let tot_io_time = now.wrapping_sub(bq.io_start_time);
        if bq.sort.is_empty() && bq.dispatched == 0 {
            // Unsigned, as in the kernel: a brand-new queue's reference is its
            // creation instant + 1 ns on the same clock, so its first sample is
            // -1 ns, i.e. `u64::MAX`. That clears `IO_bound` at the next request
            // (`5 × tot_idle_time` wraps but stays above any window) until another
            // idle sample wraps the sum back.
            bq.tot_idle_time = bq
                .tot_idle_time
                .wrapping_add(now.wrapping_sub(bq.ttime.last_end_request.0));
        }
        if bq.just_created {
            return;
        }
        bq.io_bound = bq.tot_idle_time.wrapping_mul(5) <= tot_io_time;
        if tot_io_time > 200 * Ns::MS {
            bq.io_start_time = now - (tot_io_time >> 1);
            bq.tot_idle_time >>= 1;
        }
    }

    /// `bfq_updated_next_req`: a queue not in service follows its head request's size.
    fn updated_next_req(&mut self, ctx: &mut ElvCtx, q: QueueId) {
        let Some(next) = self.queues[q].next_rq else {
            return;
        };
        if self.in_service_queue == Some(q) {
            return;
        }
        let charge = self.serv_to_charge(ctx, next, q);
        let e = &self.wf.ents[q];
        let new_budget = self.queues[q].max_budget.max(charge).max(e.service);
        if e.budget != new_budget {
            self.wf.ents[q].budget = new_budget;
            self.requeue_bfqq(q, false);
        }
    }

    /// `bfq_bfqq_update_budg_for_activation`. Returns "wants to preempt".
    fn update_budg_for_activation(
        &mut self,
        ctx: &ElvCtx,
        q: QueueId,
        arrived_in_time: bool,
    ) -> bool {
        let left = self.budget_left(q);
        if self.queues[q].non_blocking_wait_rq && arrived_in_time && left > 0 {
            let e = &mut self.wf.ents[q];
            e.budget = left.min(self.queues[q].max_budget);
            e.service = 0;
            return true;
        }
        let charge = match self.queues[q].next_rq {
            Some(n) => self.serv_to_charge(ctx, n, q),
            None => 0,
        };
        let e = &mut self.wf.ents[q];
        e.service = 0;
        e.budget = self.queues[q].max_budget.max(charge);
        self.queues[q].non_blocking_wait_rq = false;
        false
    }

    /// `bfq_bfqq_budget_left`.
    pub fn budget_left(&self, q: QueueId) -> i64 {
        self.wf.ents[q].budget - self.wf.ents[q].service
    }

    /// `next_queue_may_preempt`: at the root, `next_in_service != in_service_entity`.
    fn next_queue_may_preempt(&self) -> bool {
        let root = self.wf.root();
        root.next_in_service != root.in_service_entity
    }

    /// `bfq_bfqq_handle_idle_busy_switch`. Returns `interactive`.
    /// `may_raise`: the queue is not shared, or the request's process was stably
    /// merged into it (merged queues are kept out of weight raising otherwise).
    pub fn handle_idle_busy_switch(
        &mut self,
        ctx: &mut ElvCtx,
        q: QueueId,
        old_wr_coeff: u32,
        may_raise: bool,
    ) -> bool {
        let idle_for_long_time = self.idle_for_long_time(q);
        let arrived_in_time =
            self.now.0 <= self.queues[q].ttime.last_end_request.0 + self.slice_idle * 3;
        let bq = &self.queues[q];
        let in_burst = bq.in_large_burst;
        let default_weight = self.wf.ents[q].new_weight == 40;
        let soft_rt = bq.seek_history != u32::MAX
            && !in_burst
            && self.before_jiffies(bq.soft_rt_next_start)
            && bq.dispatched == 0
            && default_weight;
        let interactive = !in_burst && idle_for_long_time && default_weight;
        let wants_to_preempt = self.update_budg_for_activation(ctx, q, arrived_in_time);
        self.wr_on_idle_busy_switch(
            q,
            old_wr_coeff,
            wr::Arrival {
                idle_for_long_time,
                soft_rt,
                in_burst,
                interactive,
                may_raise,
            },
        );
        self.add_bfqq_busy(q);
        if let Some(s) = self.in_service_queue {
            if ((wants_to_preempt && self.wf.ents[q].wr_coeff >= self.wf.ents[s].wr_coeff)
                || self.higher_class_or_weight(q, s)
                || !self.better_to_idle(s))
                && self.next_queue_may_preempt()
            {
                self.bfqq_expire(ctx, s, false, Expiration::Preempted);
            }
        }
        interactive
    }

    /// `bfq_activate_bfqq`.
    fn activate_bfqq(&mut self, q: QueueId) {
        let nb = self.queues[q].non_blocking_wait_rq;
        self.wf
            .activate_requeue_entity(q, nb, false, false, self.jiffies);
        self.queues[q].non_blocking_wait_rq = false;
    }

    /// `bfq_requeue_bfqq`.
    fn requeue_bfqq(&mut self, q: QueueId, expiration: bool) {
        let requeue = self.in_service_queue == Some(q);
        self.wf
            .activate_requeue_entity(q, false, requeue, expiration, self.jiffies);
    }

    /// `bfq_add_bfqq_busy`.
    fn add_bfqq_busy(&mut self, q: QueueId) {
        self.activate_bfqq(q);
        self.queues[q].busy = true;
        // Counted under the class the queue has *now*; a pending class change applied
        // at a later requeue makes the decrement hit another class, as in the kernel
        // (unsigned, wrapping) — see `check_invariants`.
        let c = self.wf.ents[q].class;
        self.busy_queues[c] = self.busy_queues[c].wrapping_add(1);
        if self.queues[q].dispatched == 0 {
            self.add_in_groups_with_pending_reqs(q);
            if self.wf.ents[q].wr_coeff == 1 {
                self.wf.weights_tree_add(q);
            }
        }
        if self.wf.ents[q].wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
    }

    /// `bfq_del_bfqq_busy`.
    fn del_bfqq_busy(&mut self, q: QueueId, expiration: bool) {
        self.queues[q].busy = false;
        let c = self.wf.ents[q].class;
        self.busy_queues[c] = self.busy_queues[c].wrapping_sub(1);
        if self.wf.ents[q].wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        self.wf.deactivate_entity(q, true, expiration, self.jiffies);
        if self.queues[q].dispatched == 0 {
            self.del_in_groups_with_pending_reqs(q);
            self.wf.weights_tree_remove(q);
        }
    }

    // -------------------------------------------------------------- removal

    /// `bfq_check_fifo`: at most once per service slot.
    fn check_fifo(&mut self, q: QueueId, last: RqId) -> Option<RqId> {
        if self.queues[q].fifo_expire {
            return None;
        }
        self.queues[q].fifo_expire = true;
        let rq = self.queues[q].fifo.front()?;
        if rq == last || self.now < self.rqd(rq).fifo_time {
            return None;
        }
        Some(rq)
    }

    /// `bfq_find_next_rq`.
    fn find_next_rq(&mut self, ctx: &ElvCtx, q: QueueId, last: RqId) -> Option<RqId> {
        if let Some(rq) = self.check_fifo(q, last) {
            return Some(rq);
        }
        let key = self.sort_key(last);
        let sort = &self.queues[q].sort;
        let prev = sort.range(..key).next_back().map(|k| k.2);
        let next = sort
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .map(|k| k.2)
            .or_else(|| sort.first().map(|k| k.2).filter(|&r| r != last));
        self.choose_req(ctx, next, prev, ctx.rqs.get(last).sector.0)
    }

    /// `bfq_remove_request`.
    fn remove_request(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        let q = self.rqd(rq).bfqq.expect("BFQ request without queue");
        if self.queues[q].next_rq == Some(rq) {
            let n = self.find_next_rq(ctx, q, rq);
            self.queues[q].next_rq = n;
            self.updated_next_req(ctx, q);
        }
        let d = *self.rqd(rq);
        self.queues[q].fifo.remove(&mut self.rqd, rq);
        self.queues[q].queued[usize::from(d.sync)] -= 1;
        self.queued -= 1;
        let key = self.sort_key(rq);
        self.queues[q].sort.remove(&key);
        self.rqd_mut(rq).in_sort = false;
        ctx.merge.forget(rq);
        if self.queues[q].sort.is_empty() {
            self.queues[q].next_rq = None;
            if self.queues[q].busy && self.in_service_queue != Some(q) {
                self.del_bfqq_busy(q, false);
                let e = &mut self.wf.ents[q];
                e.budget = 0;
                e.service = 0;
            }
            self.pos_tree_remove(q);
        } else {
            self.pos_tree_update(q);
        }
    }

    // ------------------------------------------------------------- dispatch

    /// `bfq_dispatch_rq_from_bfqq`.
    pub fn dispatch_rq_from_bfqq(&mut self, ctx: &mut ElvCtx, q: QueueId) -> RqId {
        let rq = self.queues[q]
            .next_rq
            .expect("dispatch from an empty queue");
        let charge = self.serv_to_charge(ctx, rq, q);
        self.bfqq_served(q, charge);
        if self.in_service_queue == Some(q) && self.wait_dispatch {
            self.wait_dispatch = false;
            self.waited_rq = Some(rq);
        }
        // bfq_dispatch_remove
        self.queues[q].dispatched += 1;
        self.update_peak_rate(ctx, rq, q);
        self.remove_request(ctx, rq);
        if self.in_service_queue != Some(q) {
            return rq;
        }
        self.update_wr_data(q);
        if self.tot_busy_queues() > 1 && self.wf.ents[q].class == CLASS_IDLE {
            self.bfqq_expire(ctx, q, false, Expiration::BudgetExhausted);
        }
        rq
    }

    /// `bfq_bfqq_served`: charge `served` sectors to `q` (and B-WF2Q+ time).
    pub(super) fn bfqq_served(&mut self, q: QueueId, served: i64) {
        let j = self.jiffies;
        let wr = self.wf.ents[q].wr_coeff;
        let bq = &mut self.queues[q];
        if bq.service_from_backlogged == 0 {
            bq.first_io_time = j;
        }
        if wr > 1 {
            bq.service_from_wr += served;
        }
        bq.service_from_backlogged += served;
        self.wf.served(q, served);
    }

    /// `bfq_set_in_service_queue` (`bfq_get_next_queue` + `__bfq_set_in_service_queue`).
    fn set_in_service_queue(&mut self) -> Option<QueueId> {
        let q = if self.tot_busy_queues() == 0 {
            None
        } else {
            self.wf.get_next_entity(self.jiffies)
        };
        if let Some(q) = q {
            self.queues[q].fifo_expire = false;
            self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
            let rt = self.wr_rt_max_time();
            let bq = &self.queues[q];
            if self.before_jiffies(bq.last_wr_start_finish)
                && self.wf.ents[q].wr_coeff > 1
                && bq.wr_cur_max_time == rt
                && self.before_jiffies(bq.budget_timeout)
            {
                // Soft real-time: move the raising start forward by the time the
                // queue went without service.
                let j = self.jiffies;
                let bq = &mut self.queues[q];
                if (bq.budget_timeout.wrapping_sub(bq.last_wr_start_finish) as i64) > 0 {
                    bq.last_wr_start_finish = bq
                        .last_wr_start_finish
                        .wrapping_add(j.wrapping_sub(bq.budget_timeout));
                } else {
                    bq.last_wr_start_finish = j;
                }
            }
            // bfq_set_budget_timeout
            let e = &self.wf.ents[q];
            let coeff = if self.queues[q].wr_cur_max_time == rt {
                1
            } else {
                (e.weight / e.orig_weight.max(1)) as u64
            };
            self.last_budget_start = self.now;
            self.queues[q].budget_timeout = self.jiffies.wrapping_add(self.timeout * coeff);
        }
        self.in_service_queue = q;
        self.in_serv_last_pos = 0;
        q
    }

    /// `bfq_select_queue` (injection not modelled: the plugged branch returns none).
    pub fn select_queue(&mut self, ctx: &mut ElvCtx) -> Option<QueueId> {
        let mut reason = Expiration::BudgetTimeout;
        let mut cur = self.in_service_queue;
        let mut expire_first = false;
        if let Some(q) = cur {
            if self.may_expire_for_budg_timeout(q) && !self.must_idle(q) {
                expire_first = true;
            }
        }
        loop {
            match cur {
                Some(q) if !expire_first => {
                    if let Some(next) = self.queues[q].next_rq {
                        if self.serv_to_charge(ctx, next, q) > self.budget_left(q) {
                            reason = Expiration::BudgetExhausted;
                        } else {
                            if self.queues[q].wait_request {
                                self.queues[q].wait_request = false;
                                self.idle_timer = None;
                            }
                            return Some(q);
                        }
                    } else if self.queues[q].wait_request
                        || (self.queues[q].dispatched != 0 && self.better_to_idle(q))
                    {
                        // Plugged: `q` keeps the device; maybe inject another queue's I/O.
                        return self.injection_candidate(ctx, q);
                    } else {
                        reason = Expiration::NoMoreRequests;
                    }
                    self.bfqq_expire(ctx, q, false, reason);
                }
                Some(q) => {
                    expire_first = false;
                    self.bfqq_expire(ctx, q, false, reason);
                }
                None => {}
            }
            cur = self.set_in_service_queue();
            cur?;
        }
    }

    /// `__bfq_dispatch_request`'s first branch for `rq`, just taken off
    /// `bfqd->dispatch`: it goes to the driver, counted against its queue if any.
    pub(super) fn start_from_dispatch_list(&mut self, ctx: &ElvCtx, rq: RqId) {
        let d = self.rqd_mut(rq);
        d.in_dispatch_list = false;
        d.started = true;
        if let Some(q) = d.bfqq {
            self.queues[q].dispatched += 1;
        }
        self.tot_rq_in_driver += 1;
        self.update_dispatch_size_info(ctx.rqs.get(rq).nr_sectors as u64 * 512);
    }

    /// The end of `__bfq_dispatch_request` for `rq`, dispatched from a queue.
    pub(super) fn start_from_queue(&mut self, ctx: &ElvCtx, rq: RqId) {
        self.rqd_mut(rq).started = true;
        self.tot_rq_in_driver += 1;
        self.update_dispatch_size_info(ctx.rqs.get(rq).nr_sectors as u64 * 512);
    }

    /// `__bfq_dispatch_request`.
    fn dispatch_one(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        if let Some(rq) = self.dispatch.pop_front() {
            self.start_from_dispatch_list(ctx, rq);
            return Some(rq);
        }
        if self.tot_busy_queues() == 0 {
            return None;
        }
        if self.strict_guarantees && self.tot_rq_in_driver > 0 {
            return None;
        }
        let q = self.select_queue(ctx)?;
        if self.in_service_queue != Some(q) {
            self.injected += 1;
        }
        let rq = self.dispatch_rq_from_bfqq(ctx, q);
        self.start_from_queue(ctx, rq);
        Some(rq)
    }

    // ----------------------------------------------------------- completion

    /// `bfq_update_hw_tag`.
    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.tot_rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.tot_rq_in_driver + self.queued <= BFQ_HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(q) = self.in_service_queue {
            let bq = &self.queues[q];
            if bq.has_short_ttime
                && bq.dispatched + bq.nr_queued() < BFQ_HW_QUEUE_THRESHOLD
                && self.tot_rq_in_driver < BFQ_HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        let s = self.hw_tag_samples;
        self.hw_tag_samples += 1;
        if s < BFQ_HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = i32::from(self.max_rq_in_driver > BFQ_HW_QUEUE_THRESHOLD);
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
        self.nonrot_with_queueing = !self.rotational && self.hw_tag == 1;
    }

    /// `bfq_completed_request`.
    pub fn bfq_completed_request(&mut self, ctx: &mut ElvCtx, q: QueueId) {
        self.update_hw_tag();
        self.tot_rq_in_driver -= 1;
        self.queues[q].dispatched -= 1;
        if self.queues[q].dispatched == 0 && !self.queues[q].busy {
            self.queues[q].budget_timeout = self.jiffies;
            self.del_in_groups_with_pending_reqs(q);
            self.wf.weights_tree_remove(q);
        }
        self.queues[q].ttime.last_end_request = self.now;
        self.peak_rate_on_completion();
        self.last_completion = self.now;
        // Shared queues are not taken as wakers.
        self.last_completed_rq_bfqq = (!self.queues[q].coop).then_some(q);
        if self.queues[q].softrt_update
            && self.queues[q].dispatched == 0
            && self.queues[q].sort.is_empty()
            && self.wf.ents[q].wr_coeff != wr::BFQ_WR_COEFF
        {
            self.queues[q].soft_rt_next_start = self.softrt_next_start(q);
        }
        if self.in_service_queue == Some(q) {
            if self.must_idle(q) {
                // Stay in service even if timed out: idling is due.
                if self.queues[q].dispatched == 0 {
                    self.arm_slice_timer();
                }
            } else if self.may_expire_for_budg_timeout(q) {
                self.bfqq_expire(ctx, q, false, Expiration::BudgetTimeout);
            } else if self.queues[q].sort.is_empty()
                && (self.queues[q].dispatched == 0 || !self.better_to_idle(q))
            {
                self.bfqq_expire(ctx, q, false, Expiration::NoMoreRequests);
            }
        }
    }

    /// `bfq_finish_requeue_request`.
    fn finish_requeue(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        let Some(d) = self.rqd.get(rq.index()).copied() else {
            return;
        };
        let Some(q) = d.bfqq else {
            return;
        };
        self.set_clock(ctx);
        self.count_allocated(q, false);
        if d.started {
            if self.waited_rq == Some(rq) {
                self.update_inject_limit(q);
            }
            self.bfq_completed_request(ctx, q);
        } else if d.in_sort {
            self.remove_request(ctx, rq);
        } else if d.in_dispatch_list {
            self.dispatch.retain(|&x| x != rq);
        }
        let pid = ctx.rqs.get(rq).pid;
        if let Some(b) = self.bics.get_mut(&pid) {
            b.requests = b.requests.saturating_sub(1);
        }
        self.rqd[rq.index()] = RqData::default();
    }

    /// Internal consistency checks (for tests): counters agree with the queues.
    pub fn check_invariants(&self) -> Result<(), String> {
        let queued: u32 = self.queues.iter().map(|q| q.nr_queued()).sum();
        if queued != self.queued {
            return Err(format!("queued {} != sum {}", self.queued, queued));
        }
        let mut busy = [0u32; 3];
        for (i, q) in self.queues.iter().enumerate() {
            if q.busy {
                busy[self.wf.ents[i].class] += 1;
            }
            if q.sort.len() as u32 != q.nr_queued() || q.fifo.len() != q.sort.len() {
                return Err(format!("queue {i}: sort/fifo/queued disagree"));
            }
            if q.nr_queued() > 0 && !q.busy {
                return Err(format!("queue {i} has requests but is not busy"));
            }
            if q.next_rq.is_some() != (q.nr_queued() > 0) {
                return Err(format!("queue {i}: next_rq inconsistent"));
            }
        }
        if let Some((i, q)) = self
            .queues
            .iter()
            .enumerate()
            .find(|(_, q)| q.process_refs < 0)
        {
            return Err(format!("queue {i}: process_refs {}", q.process_refs));
        }
        for (g, bg) in self.bfqg.iter().enumerate() {
            bg.rq_pos_tree
                .check(&self.pos_nodes)
                .map_err(|e| format!("group {g} position tree: {e}"))?;
            for q in bg.rq_pos_tree.in_order(&self.pos_nodes) {
                if self.queues[q].pos != Some((g, self.pos_nodes[q].key)) {
                    return Err(format!("queue {q} in group {g}'s position tree unawares"));
                }
            }
        }
        let filed = self.queues.iter().filter(|q| q.pos.is_some()).count();
        let in_trees: usize = self
            .bfqg
            .iter()
            .map(|bg| bg.rq_pos_tree.in_order(&self.pos_nodes).len())
            .sum();
        if filed != in_trees {
            return Err(format!(
                "{filed} queues filed, {in_trees} in position trees"
            ));
        }
        for (pid, b) in &self.bics {
            if let Some(q) = b.sync_q {
                if self.queues[q].process_refs < 1 {
                    return Err(format!(
                        "pid {pid} uses queue {q} without a process reference"
                    ));
                }
                if self.queues[q].new_bfqq.is_none()
                    && self.queues[q].bic.is_some_and(|o| o != *pid)
                {
                    return Err(format!(
                        "pid {pid} uses queue {q}, owned by another process"
                    ));
                }
            }
        }
        let wr_busy = self
            .queues
            .iter()
            .enumerate()
            .filter(|(i, q)| q.busy && self.wf.ents[*i].wr_coeff > 1)
            .count() as u32;
        if wr_busy != self.wr_busy_queues {
            return Err(format!(
                "wr_busy_queues {} != {wr_busy}",
                self.wr_busy_queues
            ));
        }
        if let Some((i, _)) = self
            .wf
            .ents
            .iter()
            .enumerate()
            // (A queue raised while busy keeps its counter until its new weight is
            // applied at the next (re)queueing, as in the kernel.)
            .find(|(_, e)| {
                e.wr_coeff > 1
                    && e.weight_counter.is_some()
                    && !(e.prio_changed && e.weight == e.orig_weight)
            })
        {
            return Err(format!("raised queue {i} in the weights tree"));
        }
        // Per class the kernel's counters drift when a busy queue changes class
        // (quirk kept); their sum is exact.
        let total: u32 = busy.iter().sum();
        if total != self.tot_busy_queues() {
            return Err(format!("busy {:?} != {:?}", self.busy_queues, busy));
        }
        self.wf.check_wsum()?;
        // ≥ 6.2 counting: per group, the queues flagged; in total, the groups with
        // at least one.
        let mut per_group = vec![0u32; self.wf.groups.len()];
        for (i, q) in self.queues.iter().enumerate() {
            if q.in_groups_with_pending_reqs {
                per_group[self.wf.group_of(i)] += 1;
            }
        }
        for (g, n) in per_group.iter().enumerate() {
            if *n != self.wf.groups[g].num_queues_with_pending_reqs {
                return Err(format!("group {g}: num_queues_with_pending_reqs"));
            }
        }
        let groups = per_group.iter().filter(|&&n| n > 0).count() as u32;
        if groups != self.num_groups_with_pending_reqs {
            return Err(format!(
                "num_groups_with_pending_reqs {} != {groups}",
                self.num_groups_with_pending_reqs
            ));
        }
        let legacy = self.wf.groups.iter().filter(|g| g.legacy_pending).count() as u32;
        if legacy != self.wf.legacy_groups_with_pending_reqs {
            return Err("legacy num_groups_with_pending_reqs".into());
        }
        Ok(())
    }
}

impl Bfq {
    /// A B-WF2Q+ service-tree update (activation, selection): O(log n) in the busy
    /// queues, as the host model prices it.
    fn count_tree_work(&mut self) {
        let busy = self
            .busy_queues
            .iter()
            .fold(0u32, |a, &b| a.saturating_add(b));
        self.host_work.tree_steps += u64::from(busy.saturating_add(1).ilog2()) + 1;
    }
}

impl Elevator for Bfq {
    fn clone_box(&self) -> Option<Box<dyn Elevator>> {
        Some(Box::new(self.clone()))
    }
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn single_queue(&self) -> bool {
        true
    }

    fn limit_depth_for(&self, op: Op, flags: ReqFlags, pid: u32) -> Option<u32> {
        self.limit_depth_of(op, flags, pid)
    }

    fn depth_updated(&mut self, nr_requests: u32) {
        self.update_depths(nr_requests);
    }

    fn bio_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio, bio_id: BioId) -> bool {
        self.bfq_bio_merge(ctx, bio, bio_id)
    }

    fn request_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio) -> Option<(RqId, MergeKind)> {
        self.bfq_request_merge(ctx, bio)
    }

    fn request_merged(&mut self, ctx: &mut ElvCtx, rq: RqId, kind: MergeKind) {
        self.bfq_request_merged(ctx, rq, kind);
    }

    fn requests_merged(&mut self, ctx: &mut ElvCtx, rq: RqId, next: RqId) {
        self.bfq_requests_merged(ctx, rq, next);
    }

    fn next_request(&self, _ctx: &ElvCtx, rq: RqId) -> Option<RqId> {
        self.latter_request(rq)
    }

    fn former_request(&self, _ctx: &ElvCtx, rq: RqId) -> Option<RqId> {
        self.former_rq(rq)
    }

    fn insert_requests(&mut self, ctx: &mut ElvCtx, rqs: &[RqId], at_head: bool) {
        self.set_clock(ctx);
        for &rq in rqs {
            self.count_tree_work();
            self.insert_one(ctx, rq, at_head);
        }
    }

    fn dispatch_request(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        self.set_clock(ctx);
        self.count_tree_work();
        self.dispatch_one(ctx)
    }

    fn take_work(&mut self) -> crate::elevator::ElvWork {
        std::mem::take(&mut self.host_work)
    }

    fn finish_locks(&self) -> bool {
        true
    }

    fn has_work(&self, _ctx: &ElvCtx) -> bool {
        !self.dispatch.is_empty() || self.queued > 0
    }

    fn force_dispatch(&mut self, ctx: &mut ElvCtx, rq: RqId) -> bool {
        self.force_dispatch_rq(ctx, rq)
    }

    fn exit_icq(&mut self, ctx: &mut ElvCtx, pid: u32) -> bool {
        Bfq::exit_icq(self, ctx, pid)
    }

    fn completed_request(&mut self, _ctx: &mut ElvCtx, _rq: RqId, _now: Ns) {
        // BFQ does its completion work in the finish hook (bfq_finish_requeue_request).
    }

    fn requeue_request(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        self.finish_requeue(ctx, rq);
    }

    fn finish_request(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        self.finish_requeue(ctx, rq);
    }

    fn next_timer(&self) -> Option<Ns> {
        self.idle_timer
    }

    fn set_cgroups(&mut self, table: &CgroupTable) {
        self.set_cgroup_table(table);
    }

    fn variants(&self) -> Vec<VariantInfo> {
        Variant::ALL.iter().map(|(_, i)| *i).collect()
    }

    fn timer_fired(&mut self, ctx: &mut ElvCtx) {
        self.set_clock(ctx);
        self.idle_slice_timer(ctx);
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        let t = |name, unit, default: String, help| TunableInfo {
            name,
            unit,
            default,
            help,
        };
        vec![
            t(
                "back_seek_max",
                "KiB",
                "16384".into(),
                "largest backward seek preferred over a forward one",
            ),
            t(
                "back_seek_penalty",
                "factor",
                "2".into(),
                "cost multiplier of a backward seek",
            ),
            t(
                "fifo_expire_async",
                "ms",
                "250".into(),
                "deadline of an async request in its queue's FIFO",
            ),
            t(
                "fifo_expire_sync",
                "ms",
                "125".into(),
                "deadline of a sync request in its queue's FIFO",
            ),
            t(
                "low_latency",
                "bool",
                "1".into(),
                "weight raising for interactive and soft real-time queues",
            ),
            t(
                "max_budget",
                "sectors",
                "0".into(),
                "largest budget; 0 = auto-tuned from the peak rate",
            ),
            t(
                "slice_idle",
                "ms",
                "8".into(),
                "how long an empty sync queue keeps the device idle",
            ),
            t(
                "slice_idle_us",
                "us",
                "8000".into(),
                "slice_idle in microseconds",
            ),
            t(
                "strict_guarantees",
                "bool",
                "0".into(),
                "always idle, one request in the device at a time",
            ),
            t(
                "timeout_sync",
                "ms",
                self.jiffies_to_msecs(self.bfq_timeout_const()).to_string(),
                "budget timeout of the queue in service",
            ),
            t(
                "injection",
                "bool",
                "1".into(),
                "(iosched only, not in sysfs) 0: a plugged queue never lets other queues' I/O in",
            ),
            t(
                "queue_merging",
                "bool",
                "1".into(),
                "(iosched only, not in sysfs) 0: no early or stable queue merging",
            ),
        ]
    }

    fn get_tunable(&self, name: &str) -> Result<String, TunableError> {
        Ok(match name {
            "back_seek_max" => self.back_max.to_string(),
            "back_seek_penalty" => self.back_penalty.to_string(),
            "fifo_expire_async" => (self.fifo_expire[0] / Ns::MS).to_string(),
            "fifo_expire_sync" => (self.fifo_expire[1] / Ns::MS).to_string(),
            "low_latency" => u8::from(self.low_latency).to_string(),
            "max_budget" => self.bfq_user_max_budget.to_string(),
            "slice_idle" => (self.slice_idle / Ns::MS).to_string(),
            "slice_idle_us" => (self.slice_idle / 1000).to_string(),
            "strict_guarantees" => u8::from(self.strict_guarantees).to_string(),
            "timeout_sync" => self.jiffies_to_msecs(self.timeout).to_string(),
            "variant" => self.variant.name().to_string(),
            "injection" => u8::from(self.injection).to_string(),
            "queue_merging" => u8::from(self.queue_merging).to_string(),
            _ => return Err(unknown_tunable("bfq", name, &self.tunables())),
        })
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let invalid = |reason: &str| TunableError::Invalid {
            sched: "bfq",
            name: name.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };
        if name == "variant" {
            let v = value.strip_suffix('\n').unwrap_or(value);
            return match Variant::from_name(v) {
                Some(v) => {
                    self.variant = v;
                    Ok(())
                }
                None => Err(invalid(
                    "BFQ variants: mainline, legacy, seed-v1-p1, seed-v1",
                )),
            };
        }
        if name == "injection" || name == "queue_merging" {
            let on = match value.strip_suffix('\n').unwrap_or(value) {
                "0" => false,
                "1" => true,
                _ => return Err(invalid("expected 0 or 1")),
            };
            if name == "injection" {
                self.injection = on;
            } else {
                self.queue_merging = on;
            }
            return Ok(());
        }
        if !self.tunables().iter().any(|t| t.name == name) {
            return Err(unknown_tunable("bfq", name, &self.tunables()));
        }
        // bfq_var_store: kstrtoul(page, 10, ..)
        let s = value.strip_suffix('\n').unwrap_or(value);
        let s = s.strip_prefix('+').unwrap_or(s);
        let v: u64 = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse()
                .map_err(|_| invalid("out of range for unsigned long"))?
        } else {
            return Err(invalid("not a decimal unsigned integer"));
        };
        match name {
            "fifo_expire_sync" => self.fifo_expire[1] = v.clamp(1, INT_MAX) * Ns::MS,
            "fifo_expire_async" => self.fifo_expire[0] = v.clamp(1, INT_MAX) * Ns::MS,
            "back_seek_max" => self.back_max = v.min(INT_MAX),
            "back_seek_penalty" => self.back_penalty = v.clamp(1, INT_MAX),
            "slice_idle" => self.slice_idle = v.min(INT_MAX) * Ns::MS,
            "slice_idle_us" => self.slice_idle = v.min(u32::MAX as u64) * 1000,
            "max_budget" => {
                if v == 0 {
                    self.bfq_max_budget = self.calc_max_budget();
                } else {
                    self.bfq_max_budget = v.min(INT_MAX) as i64;
                }
                self.bfq_user_max_budget = v.min(INT_MAX) as i64;
            }
            "timeout_sync" => {
                self.timeout = self.msecs_to_jiffies(v.clamp(1, INT_MAX));
                if self.bfq_user_max_budget == 0 {
                    self.bfq_max_budget = self.calc_max_budget();
                }
            }
            "strict_guarantees" => {
                let v = v.min(1) == 1;
                if !self.strict_guarantees && v && self.slice_idle < 8 * Ns::MS {
                    self.slice_idle = 8 * Ns::MS;
                }
                self.strict_guarantees = v;
            }
            "low_latency" => {
                let v = v.min(1) == 1;
                if !v && self.low_latency {
                    self.end_wr_all();
                }
                self.low_latency = v;
            }
            _ => unreachable!("checked against the tunable list"),
        }
        Ok(())
    }

    fn debugfs(&self) -> Vec<(String, String)> {
        vec![
            ("busy_queues".into(), format!("{:?}", self.busy_queues)),
            ("queued".into(), self.queued.to_string()),
            ("tot_rq_in_driver".into(), self.tot_rq_in_driver.to_string()),
            ("budgets_assigned".into(), self.budgets_assigned.to_string()),
            ("bfq_max_budget".into(), self.bfq_max_budget.to_string()),
            ("hw_tag".into(), self.hw_tag.to_string()),
            ("max_rq_in_driver".into(), self.max_rq_in_driver.to_string()),
            ("rqs_injected".into(), self.rqs_injected.to_string()),
            ("waited_rq".into(), format!("{:?}", self.waited_rq)),
            (
                "in_service_queue".into(),
                format!("{:?}", self.in_service_queue),
            ),
            ("wr_busy_queues".into(), self.wr_busy_queues.to_string()),
            ("injected".into(), self.injected.to_string()),
            (
                "in_service".into(),
                self.in_service_queue
                    .map(|q| {
                        let (b, e) = (&self.queues[q], &self.wf.ents[q]);
                        format!(
                            "pid={} class={} weight={} wr_coeff={} queued={} dispatched={} \
                             wait_request={} short_ttime={} io_bound={} inject_limit={} \
                             last_serv_time_ns={} process_refs={} budget={} service={}",
                            b.pid,
                            e.class,
                            e.weight,
                            e.wr_coeff,
                            b.nr_queued(),
                            b.dispatched,
                            b.wait_request,
                            b.has_short_ttime,
                            b.io_bound,
                            b.inject_limit,
                            b.last_serv_time_ns,
                            b.process_refs,
                            e.budget,
                            e.service
                        )
                    })
                    .unwrap_or_default(),
            ),
        ]
    }
}
