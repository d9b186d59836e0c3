//! `none`: no elevator.
//!
//! With no elevator the kernel puts requests that cannot be issued at once on per-CPU
//! software queues, and the dispatch loop takes them one software queue after another,
//! resuming after the queue it served last (`blk_mq_dequeue_from_ctx` with
//! `hctx->dispatch_from`). This model keeps one list per CPU and serves them round
//! robin, oldest first within a CPU; at-head inserts (requeues) go to the front of
//! their CPU's list, as `blk_mq_insert_request` does for the software queue. No
//! tunables.
//!
//! Merging is the kernel's no-elevator merge (`blk_mq_sched_bio_merge` without an
//! elevator → `blk_bio_list_merge`): the submitting CPU's software queue is scanned
//! from its newest request, at most 8 requests, skipping incompatible ones and
//! stopping at the first adjacent one that is over a limit.

use super::{unknown_tunable, Elevator, ElvCtx, QueueParams, TunableError, TunableInfo};
use crate::merge::{attempt_bio_merge, BioMerge};
use crate::request::{Bio, BioId, RqId};
use std::collections::VecDeque;

/// The `none` "scheduler": per-CPU FIFOs (see the module docs).
#[derive(Debug)]
pub struct NoneSched {
    ctx_lists: Vec<VecDeque<RqId>>,
    queued: usize,
    dispatch_from: usize,
}

impl NoneSched {
    /// A `none` scheduler for a queue with `params.nr_cpus` software queues.
    pub fn new(params: &QueueParams) -> Self {
        NoneSched {
            ctx_lists: vec![VecDeque::new(); params.nr_cpus.max(1) as usize],
            queued: 0,
            dispatch_from: 0,
        }
    }
}

/// How many requests `blk_bio_list_merge` looks at, newest first.
const CTX_MERGE_SCAN: usize = 8;

impl Elevator for NoneSched {
    fn name(&self) -> &'static str {
        "none"
    }

    fn bio_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio, bio_id: BioId) -> bool {
        let Some(list) = self.ctx_lists.get(bio.cpu as usize) else {
            return false;
        };
        for &rq in list.iter().rev().take(CTX_MERGE_SCAN) {
            match attempt_bio_merge(ctx, rq, bio, bio_id) {
                BioMerge::None => continue,
                BioMerge::Ok => return true,
                BioMerge::Failed => return false,
            }
        }
        false
    }

    fn insert_requests(&mut self, ctx: &mut ElvCtx, rqs: &[RqId], at_head: bool) {
        for &rq in rqs {
            let cpu = ctx.rqs.get(rq).cpu as usize;
            if cpu >= self.ctx_lists.len() {
                self.ctx_lists.resize(cpu + 1, VecDeque::new());
            }
            if at_head {
                self.ctx_lists[cpu].push_front(rq);
            } else {
                self.ctx_lists[cpu].push_back(rq);
            }
            self.queued += 1;
        }
    }

    fn dispatch_request(&mut self, _ctx: &mut ElvCtx) -> Option<RqId> {
        if self.queued == 0 {
            return None;
        }
        let n = self.ctx_lists.len();
        for k in 0..n {
            let cpu = (self.dispatch_from + k) % n;
            if let Some(rq) = self.ctx_lists[cpu].pop_front() {
                self.queued -= 1;
                self.dispatch_from = (cpu + 1) % n;
                return Some(rq);
            }
        }
        None
    }

    fn force_dispatch(&mut self, _ctx: &mut ElvCtx, rq: RqId) -> bool {
        let n = self.ctx_lists.len();
        for (cpu, l) in self.ctx_lists.iter_mut().enumerate() {
            if let Some(pos) = l.iter().position(|&r| r == rq) {
                l.remove(pos);
                self.queued -= 1;
                self.dispatch_from = (cpu + 1) % n;
                return true;
            }
        }
        false
    }

    fn has_work(&self, _ctx: &ElvCtx) -> bool {
        self.queued > 0
    }

    fn finish_request(&mut self, _ctx: &mut ElvCtx, _rq: RqId) {}

    fn tunables(&self) -> Vec<TunableInfo> {
        Vec::new()
    }

    fn get_tunable(&self, name: &str) -> Result<String, TunableError> {
        Err(unknown_tunable("none", name, &[]))
    }

    fn set_tunable(&mut self, name: &str, _value: &str) -> Result<(), TunableError> {
        Err(unknown_tunable("none", name, &[]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::MergeState;
    use crate::request::{Bio, BioArena, Request, RqArena};
    use crate::types::{CgroupId, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};

    #[test]
    fn software_queues_are_served_round_robin() {
        let mut rqs = RqArena::new();
        let mut bios = BioArena::new();
        let mut merge = MergeState::default();
        let mut e = NoneSched::new(&QueueParams::default());
        let mut ids = vec![];
        for (cpu, sector) in [(0, 0), (0, 8), (0, 16), (1, 100), (1, 108), (2, 200)] {
            let bio = Bio {
                op: Op::Read,
                flags: ReqFlags::NONE,
                sector: Sector(sector),
                nr_sectors: 8,
                ioprio: IoPrio::default(),
                pid: 1,
                cpu,
                cgroup: CgroupId(0),
                owner: 0,
            };
            let b = bios.alloc(bio);
            ids.push(rqs.alloc(Request::from_bio(&bio, b, Ns(0))));
        }
        let mut ctx = ElvCtx {
            now: Ns(0),
            jiffies: Jiffies(0),
            hctx: 0,
            rqs: &mut rqs,
            bios: &mut bios,
            merge: &mut merge,
        };
        e.insert_requests(&mut ctx, &ids, false);
        let mut order = vec![];
        while let Some(id) = e.dispatch_request(&mut ctx) {
            order.push(ctx.rqs.get(id).sector.0);
        }
        assert_eq!(order, vec![0, 100, 200, 8, 108, 16]);
        assert!(!e.has_work(&ctx));
    }
}
