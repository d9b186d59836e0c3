//! `struct bfq_queue` and `struct bfq_io_cq` (the per-process context), plus the
//! per-request side data (`rq->elv.priv`, `rq->fifo_time`).

use crate::request::RqId;
use crate::types::{IoClass, IoPrio, Ns};
use std::collections::{BTreeSet, VecDeque};

use super::wf2q::{CLASS_BE, CLASS_IDLE, CLASS_RT};

/// Index of a `bfq_queue` (and of its entity).
pub type QueueId = usize;

/// `BFQ_WEIGHT_CONVERSION_COEFF`.
pub const BFQ_WEIGHT_CONVERSION_COEFF: u32 = 10;
/// `IOPRIO_NR_LEVELS` (`IOPRIO_BE_NR`).
pub const IOPRIO_NR_LEVELS: u8 = 8;
/// `IOPRIO_NORM` / `BFQ_DEFAULT_QUEUE_IOPRIO`: the level of a nice-0 task.
pub const IOPRIO_NORM: u8 = 4;

/// `bfq_ioprio_to_weight`: `(IOPRIO_NR_LEVELS - ioprio) * 10`.
pub fn ioprio_to_weight(ioprio: u8) -> u32 {
    (IOPRIO_NR_LEVELS.saturating_sub(ioprio)) as u32 * BFQ_WEIGHT_CONVERSION_COEFF
}

/// `bfq_set_next_ioprio_data`, the class/level part: class NONE inherits from the
/// CPU nice value (`task_nice_ioprio`/`task_nice_ioclass`), modelled as nice 0 →
/// BE level 4; IDLE is forced to level 7; out-of-range levels (which the kernel's
/// `ioprio_check_cap` never lets through) are clamped to 7. Returns
/// `(class index, level)`.
pub fn effective_ioprio(p: IoPrio) -> (usize, u8) {
    let (c, l) = match p.class {
        IoClass::None => (CLASS_BE, IOPRIO_NORM),
        IoClass::Rt => (CLASS_RT, p.level),
        IoClass::Be => (CLASS_BE, p.level),
        IoClass::Idle => (CLASS_IDLE, 7),
    };
    (c, l.min(IOPRIO_NR_LEVELS - 1))
}

/// Think-time statistics (`struct bfq_ttime`).
#[derive(Clone, Debug, Default)]
pub struct Ttime {
    /// `last_end_request` (ns).
    pub last_end_request: Ns,
    /// `ttime_total`.
    pub total: u64,
    /// `ttime_samples`.
    pub samples: u64,
    /// `ttime_mean` (ns).
    pub mean: u64,
}

/// The clocks at queue creation (`bfq_init_bfqq`).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// ns.
    pub now: Ns,
    /// jiffies.
    pub jiffies: u64,
    /// `bfq_smallest_from_now()`.
    pub smallest_from_now: u64,
}

/// `struct bfq_queue` (without its entity, which lives in [`super::wf2q::Wf2q`]).
#[derive(Clone, Debug)]
pub struct BfqQueue {
    /// `BFQQF_sync`.
    pub sync: bool,
    /// Process that created it (`bfqq->pid`).
    pub pid: u32,
    /// `ioprio` (level).
    pub ioprio: u8,
    /// Requests sorted by sector (`sort_list`); the second key keeps equal sectors
    /// in insertion order, to the right as `elv_rb_add` puts them.
    pub sort: BTreeSet<(u64, u64, RqId)>,
    /// FIFO in arrival order (`bfqq->fifo`), linked through [`RqData`].
    pub fifo: Fifo,
    /// `next_rq`.
    pub next_rq: Option<RqId>,
    /// `queued[async, sync]`.
    pub queued: [u32; 2],
    /// `dispatched`: requests dispatched and not completed.
    pub dispatched: u32,
    /// `max_budget` (sectors).
    pub max_budget: i64,
    /// `budget_timeout` (jiffies; overloaded as in the kernel).
    pub budget_timeout: u64,
    /// `BFQQF_busy`.
    pub busy: bool,
    /// `BFQQF_wait_request`.
    pub wait_request: bool,
    /// `BFQQF_non_blocking_wait_rq`.
    pub non_blocking_wait_rq: bool,
    /// `BFQQF_fifo_expire`.
    pub fifo_expire: bool,
    /// `BFQQF_has_short_ttime`.
    pub has_short_ttime: bool,
    /// `BFQQF_IO_bound`.
    pub io_bound: bool,
    /// `BFQQF_just_created`.
    pub just_created: bool,
    /// `entity.in_groups_with_pending_reqs` (≥ 6.2 per-queue flag).
    pub in_groups_with_pending_reqs: bool,
    /// `seek_history`.
    pub seek_history: u32,
    /// `last_request_pos`.
    pub last_request_pos: u64,
    /// Think time.
    pub ttime: Ttime,
    /// `io_start_time` (ns): start of the I/O-intensity observation window.
    pub io_start_time: u64,
    /// `tot_idle_time` (ns) within that window.
    pub tot_idle_time: u64,
    /// `inject_limit`.
    pub inject_limit: u32,
    /// `last_serv_time_ns`: baseline total service time of a first request.
    pub last_serv_time_ns: u64,
    /// `decrease_time_jif`.
    pub decrease_time_jif: u64,
    /// `waker_bfqq`.
    pub waker_bfqq: Option<QueueId>,
    /// `tentative_waker_bfqq`.
    pub tentative_waker_bfqq: Option<QueueId>,
    /// `num_waker_detections`.
    pub num_waker_detections: u32,
    /// `waker_detection_started` (ns).
    pub waker_detection_started: u64,
    /// `woken_list`: queues this one wakes, most recent first.
    pub woken_list: VecDeque<QueueId>,
    /// Whose `woken_list` this queue is on (`woken_list_node`).
    pub woken_of: Option<QueueId>,
    /// `wr_cur_max_time` (jiffies).
    pub wr_cur_max_time: u64,
    /// `last_wr_start_finish` (jiffies).
    pub last_wr_start_finish: u64,
    /// `wr_start_at_switch_to_srt` (jiffies).
    pub wr_start_at_switch_to_srt: u64,
    /// `soft_rt_next_start` (jiffies).
    pub soft_rt_next_start: u64,
    /// `last_idle_bklogged` (jiffies).
    pub last_idle_bklogged: u64,
    /// `service_from_backlogged` (sectors).
    pub service_from_backlogged: i64,
    /// `service_from_wr` (sectors).
    pub service_from_wr: i64,
    /// `first_IO_time` (jiffies).
    pub first_io_time: u64,
    /// `split_time` (jiffies; queues are never split here).
    pub split_time: u64,
    /// `BFQQF_softrt_update`.
    pub softrt_update: bool,
    /// `BFQQF_in_large_burst`.
    pub in_large_burst: bool,
    /// On `bfqd->burst_list`.
    pub in_burst_list: bool,
    /// `creation_time` (jiffies).
    pub creation_time: u64,
    /// `bfqq->bic`: the process owning the queue alone, `None` once shared (or
    /// before its first request).
    pub bic: Option<u32>,
    /// `bfqq_process_refs`: processes using the queue, or scheduled to (a merge
    /// set up by `bfq_setup_merge` counts the merging processes in advance).
    pub process_refs: i32,
    /// `entity.allocated`: requests set up for this queue and not yet freed
    /// (`bfqq_request_allocated` / `bfqq_request_freed`).
    pub allocated: u32,
    /// `new_bfqq`: the queue this one is scheduled to be merged into.
    pub new_bfqq: Option<QueueId>,
    /// `BFQQF_coop`: shared by merged processes.
    pub coop: bool,
    /// `BFQQF_split_coop`: shared and found seeky at an expiration, to be split at
    /// its next request.
    pub split_coop: bool,
    /// Position-tree entry (`pos_node`/`pos_root`): group and key (start sector of
    /// `next_rq` when inserted).
    pub pos: Option<(usize, u64)>,
}

impl BfqQueue {
    /// `bfq_init_bfqq`.
    pub fn new(sync: bool, pid: u32, class: usize, ioprio: u8, max_budget: i64, at: Clock) -> Self {
        let Clock {
            now,
            jiffies,
            smallest_from_now,
        } = at;
        BfqQueue {
            sync,
            pid,
            ioprio,
            sort: BTreeSet::new(),
            fifo: Fifo::default(),
            next_rq: None,
            queued: [0; 2],
            dispatched: 0,
            max_budget,
            // bfq_smallest_from_now(): minus infinity.
            budget_timeout: smallest_from_now,
            busy: false,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            has_short_ttime: sync && class != CLASS_IDLE,
            io_bound: true,
            just_created: sync,
            in_groups_with_pending_reqs: false,
            seek_history: 1,
            last_request_pos: 0,
            ttime: Ttime {
                last_end_request: Ns(now.0 + 1),
                ..Ttime::default()
            },
            io_start_time: now.0,
            tot_idle_time: 0,
            // kzalloc'ed in the kernel.
            inject_limit: 0,
            last_serv_time_ns: 0,
            decrease_time_jif: jiffies,
            waker_bfqq: None,
            tentative_waker_bfqq: None,
            num_waker_detections: 0,
            waker_detection_started: 0,
            woken_list: VecDeque::new(),
            woken_of: None,
            wr_cur_max_time: 0,
            last_wr_start_finish: jiffies,
            wr_start_at_switch_to_srt: smallest_from_now,
            soft_rt_next_start: jiffies,
            last_idle_bklogged: 0,
            service_from_backlogged: 0,
            service_from_wr: 0,
            first_io_time: 0,
            split_time: smallest_from_now,
            softrt_update: false,
            in_large_burst: false,
            in_burst_list: false,
            creation_time: jiffies,
            bic: None,
            process_refs: 1,
            allocated: 0,
            new_bfqq: None,
            coop: false,
            split_coop: false,
            pos: None,
        }
    }

    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests were seeky.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }

    /// Requests queued (not dispatched).
    pub fn nr_queued(&self) -> u32 {
        self.queued[0] + self.queued[1]
    }
}

/// `struct bfq_io_cq`: one per process (`Request::pid`).
#[derive(Clone, Debug, Default)]
pub struct Bic {
    /// `bic->ioprio` as last seen.
    pub ioprio: Option<IoPrio>,
    /// `bic->bfqq[1]`.
    pub sync_q: Option<QueueId>,
    /// `bic->bfqq[0]`.
    pub async_q: Option<QueueId>,
    /// `bic->requests`: requests of the process allocated and not yet freed.
    pub requests: u32,
    /// The cgroup the queues above belong to (`bic->blkcg_serial_nr`).
    pub cgroup: crate::types::CgroupId,
    /// `stable_merge_bfqq`: a delayed stable merge is scheduled with this queue.
    pub stable_merge_bfqq: Option<QueueId>,
    /// `stably_merged`.
    pub stably_merged: bool,
    /// What `bfq_bfqq_save_state` kept of the process's queue at a merge, for
    /// `bfq_bfqq_resume_state` at a split.
    pub saved: SavedState,
}

/// The per-process state saved at a queue merge (`saved_*` fields of
/// `bfq_iocq_bfqq_data`).
#[derive(Clone, Debug, Default)]
pub struct SavedState {
    /// `saved_last_serv_time_ns`.
    pub last_serv_time_ns: u64,
    /// `saved_inject_limit`.
    pub inject_limit: u32,
    /// `saved_decrease_time_jif`.
    pub decrease_time_jif: u64,
    /// `saved_weight` (the queue's `orig_weight`).
    pub weight: u32,
    /// `saved_ttime`.
    pub ttime: Ttime,
    /// `saved_has_short_ttime`.
    pub has_short_ttime: bool,
    /// `saved_IO_bound`.
    pub io_bound: bool,
    /// `saved_io_start_time`.
    pub io_start_time: u64,
    /// `saved_tot_idle_time`.
    pub tot_idle_time: u64,
    /// `saved_in_large_burst`.
    pub in_large_burst: bool,
    /// `was_in_burst_list`.
    pub was_in_burst_list: bool,
    /// `saved_wr_coeff`.
    pub wr_coeff: u32,
    /// `saved_wr_start_at_switch_to_srt`.
    pub wr_start_at_switch_to_srt: u64,
    /// `saved_service_from_wr`.
    pub service_from_wr: i64,
    /// `saved_last_wr_start_finish`.
    pub last_wr_start_finish: u64,
    /// `saved_wr_cur_max_time`.
    pub wr_cur_max_time: u64,
}

/// Per-request scheduler data, indexed by [`RqId::index`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RqData {
    /// `RQ_BFQQ(rq)`; `None` when the request is not BFQ's.
    pub bfqq: Option<QueueId>,
    /// `rq->fifo_time`.
    pub fifo_time: Ns,
    /// Insertion sequence (sort-tree tie break).
    pub seq: u64,
    /// Start sector the request is sorted under (`blk_rq_pos` when it was placed).
    pub sector: u64,
    /// Sits in its queue's sort tree.
    pub in_sort: bool,
    /// Sits in the `bfqd->dispatch` list.
    pub in_dispatch_list: bool,
    /// `RQF_STARTED` set by BFQ's dispatch (counted in `tot_rq_in_driver`).
    pub started: bool,
    /// Synchronous (`rq_is_sync`).
    pub sync: bool,
    /// Sits in its queue's [`Fifo`] (`rq->queuelist` linked).
    pub in_fifo: bool,
    /// Previous request in the queue's FIFO.
    pub fifo_prev: Option<RqId>,
    /// Next request in the queue's FIFO.
    pub fifo_next: Option<RqId>,
}

/// `bfqq->fifo`: requests in arrival order, as an intrusive doubly linked list whose
/// links live in the requests' [`RqData`] (indexed by [`RqId::index`]), so that
/// removing any request is O(1) (as `list_del_init` in the kernel).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fifo {
    head: Option<RqId>,
    tail: Option<RqId>,
    len: usize,
}

impl Fifo {
    /// Number of requests linked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No request linked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Oldest request.
    pub fn front(&self) -> Option<RqId> {
        self.head
    }

    /// `list_add_tail`. `rq` must not be linked.
    pub fn push_back(&mut self, rqd: &mut [RqData], rq: RqId) {
        debug_assert!(!rqd[rq.index()].in_fifo);
        let d = &mut rqd[rq.index()];
        d.in_fifo = true;
        d.fifo_prev = self.tail;
        d.fifo_next = None;
        match self.tail {
            Some(t) => rqd[t.index()].fifo_next = Some(rq),
            None => self.head = Some(rq),
        }
        self.tail = Some(rq);
        self.len += 1;
    }

    /// `list_del_init`: unlink `rq` if it is linked (in this FIFO). Returns whether
    /// it was.
    pub fn remove(&mut self, rqd: &mut [RqData], rq: RqId) -> bool {
        let d = &mut rqd[rq.index()];
        if !d.in_fifo {
            return false;
        }
        let (prev, next) = (d.fifo_prev, d.fifo_next);
        d.in_fifo = false;
        d.fifo_prev = None;
        d.fifo_next = None;
        match prev {
            Some(p) => rqd[p.index()].fifo_next = next,
            None => self.head = next,
        }
        match next {
            Some(n) => rqd[n.index()].fifo_prev = prev,
            None => self.tail = prev,
        }
        self.len -= 1;
        true
    }

    /// `list_replace_init(old, new)`: `new` (not linked) takes `old`'s place; a
    /// no-op when `old` is not linked.
    pub fn replace(&mut self, rqd: &mut [RqData], old: RqId, new: RqId) {
        debug_assert!(!rqd[new.index()].in_fifo);
        let d = &mut rqd[old.index()];
        if !d.in_fifo {
            return;
        }
        let (prev, next) = (d.fifo_prev, d.fifo_next);
        d.in_fifo = false;
        d.fifo_prev = None;
        d.fifo_next = None;
        let n = &mut rqd[new.index()];
        n.in_fifo = true;
        n.fifo_prev = prev;
        n.fifo_next = next;
        match prev {
            Some(p) => rqd[p.index()].fifo_next = Some(new),
            None => self.head = Some(new),
        }
        match next {
            Some(x) => rqd[x.index()].fifo_prev = Some(new),
            None => self.tail = Some(new),
        }
    }

    /// The linked requests, oldest first.
    pub fn iter<'a>(&self, rqd: &'a [RqData]) -> impl Iterator<Item = RqId> + 'a {
        std::iter::successors(self.head, move |r| rqd[r.index()].fifo_next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The intrusive [`Fifo`] against the `VecDeque` it replaced, on random pushes,
    /// removals (`list_del_init`) and merge replacements (`bfq_requests_merged`).
    #[test]
    fn fifo_matches_vecdeque() {
        let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            rng ^= rng >> 12;
            rng ^= rng << 25;
            rng ^= rng >> 27;
            rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        const N: u32 = 64;
        for _round in 0..50 {
            let mut rqd = vec![RqData::default(); N as usize];
            let mut fifo = Fifo::default();
            let mut old: VecDeque<RqId> = VecDeque::new();
            for _ in 0..2_000 {
                let r = next();
                let rq = RqId((r >> 8) as u32 % N);
                match r % 4 {
                    0 | 1 => {
                        if !old.contains(&rq) {
                            old.push_back(rq);
                            fifo.push_back(&mut rqd, rq);
                        }
                    }
                    2 => {
                        let was = old.iter().position(|&x| x == rq).map(|p| old.remove(p));
                        assert_eq!(fifo.remove(&mut rqd, rq), was.is_some());
                    }
                    _ => {
                        let nx = RqId((r >> 40) as u32 % N);
                        if nx != rq {
                            old.retain(|&x| x != rq);
                            if let Some(p) = old.iter().position(|&x| x == nx) {
                                old[p] = rq;
                            }
                            fifo.remove(&mut rqd, rq);
                            fifo.replace(&mut rqd, nx, rq);
                        }
                    }
                }
                assert_eq!(fifo.len(), old.len());
                assert_eq!(fifo.is_empty(), old.is_empty());
                assert_eq!(fifo.front(), old.front().copied());
                let got: Vec<RqId> = fifo.iter(&rqd).collect();
                assert_eq!(got, old.iter().copied().collect::<Vec<_>>());
                for i in 0..N {
                    assert_eq!(rqd[i as usize].in_fifo, old.contains(&RqId(i)));
                }
            }
        }
    }
}
