//! `none`: no elevator.
//!
//! With no elevator the kernel puts requests that cannot be issued at once on per-CPU
//! software queues, and the dispatch loop takes them one software queue after another,
//! resuming after the queue it served last (`blk_mq_dequeue_from_ctx` with
//! `hctx->dispatch_from`). This model keeps one list per CPU and serves them round
//! robin, oldest first within a CPU; at-head inserts (requeues) go to the front of
//! their CPU's list, as `blk_mq_insert_request` does for the software queue. Each
//! hardware queue serves only the software queues of the CPUs mapped to it
//! (`blk_mq_map_queues`), with its own round-robin position. No tunables.
//!
//! Merging is the kernel's no-elevator merge (`blk_mq_sched_bio_merge` without an
//! elevator → `blk_bio_list_merge`): the submitting CPU's software queue is scanned
//! from its newest request, at most 8 requests, skipping incompatible ones and
//! stopping at the first adjacent one that is over a limit.

use super::{unknown_tunable, Elevator, ElvCtx, QueueParams, TunableError, TunableInfo};
use crate::merge::{attempt_bio_merge, BioMerge};
use crate::request::{Bio, BioId, RqId};
use std::collections::VecDeque;

/// The `none` "scheduler": per-CPU FIFOs served per hardware queue (see the module
/// docs).
#[derive(Clone, Debug)]
pub struct NoneSched {
    /// Software queues, by CPU.
    ctx_lists: Vec<VecDeque<RqId>>,
    /// Per hardware queue.
    hctxs: Vec<HctxLists>,
}

/// One hardware queue's view of the software queues.
#[derive(Clone, Debug, Default)]
struct HctxLists {
    /// Its CPUs, ascending (`hctx->ctxs` by `index_hw`).
    cpus: Vec<u32>,
    /// Requests queued on them.
    queued: usize,
    /// The index in `cpus` to serve first (`hctx->dispatch_from`).
    dispatch_from: usize,
}

impl NoneSched {
    /// A `none` scheduler for a queue with `params.nr_cpus` software queues mapped
    /// onto `params.nr_hw_queues` hardware queues as blk-mq maps them.
    pub fn new(params: &QueueParams) -> Self {
        let nr_cpus = params.nr_cpus.max(1);
        let map = crate::mq::cpumap::map_queues(nr_cpus, params.nr_hw_queues);
        let nr_hw = map.iter().copied().max().unwrap_or(0) as usize + 1;
        let mut hctxs = vec![HctxLists::default(); nr_hw];
        for (cpu, &h) in map.iter().enumerate() {
            hctxs[h as usize].cpus.push(cpu as u32);
        }
        NoneSched {
            ctx_lists: vec![VecDeque::new(); nr_cpus as usize],
            hctxs,
        }
    }

    /// Make room for a request of `cpu` on hardware queue `hctx` (CPUs beyond the
    /// configured count join the hctx their requests come from).
    fn ensure(&mut self, cpu: usize, hctx: usize) {
        if cpu >= self.ctx_lists.len() {
            self.ctx_lists.resize(cpu + 1, VecDeque::new());
        }
        if hctx >= self.hctxs.len() {
            self.hctxs.resize(hctx + 1, HctxLists::default());
        }
        let cpus = &mut self.hctxs[hctx].cpus;
        if let Err(pos) = cpus.binary_search(&(cpu as u32)) {
            cpus.insert(pos, cpu as u32);
        }
    }
}

/// How many requests `blk_bio_list_merge` looks at, newest first.
const CTX_MERGE_SCAN: usize = 8;

impl Elevator for NoneSched {
    fn clone_box(&self) -> Option<Box<dyn Elevator>> {
        Some(Box::new(self.clone()))
    }
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
            let r = ctx.rqs.get(rq);
            let (cpu, hctx) = (r.cpu as usize, r.hctx as usize);
            if cpu >= self.ctx_lists.len()
                || hctx >= self.hctxs.len()
                || (self.hctxs.len() > 1
                    && self.hctxs[hctx].cpus.binary_search(&(cpu as u32)).is_err())
            {
                self.ensure(cpu, hctx);
            }
            if at_head {
                self.ctx_lists[cpu].push_front(rq);
            } else {
                self.ctx_lists[cpu].push_back(rq);
            }
            self.hctxs[hctx].queued += 1;
        }
    }

    /// `blk_mq_dequeue_from_ctx`: the next software queue of this hctx with a request,
    /// starting after the one served last.
    fn dispatch_request(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        let hl = self.hctxs.get_mut(ctx.hctx as usize)?;
        if hl.queued == 0 {
            return None;
        }
        let n = hl.cpus.len();
        let mut i = hl.dispatch_from;
        for _ in 0..n {
            if let Some(rq) = self.ctx_lists[hl.cpus[i] as usize].pop_front() {
                hl.queued -= 1;
                hl.dispatch_from = if i + 1 == n { 0 } else { i + 1 };
                return Some(rq);
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        None
    }

    fn force_dispatch(&mut self, ctx: &mut ElvCtx, rq: RqId) -> bool {
        let r = ctx.rqs.get(rq);
        let (cpu, h) = (r.cpu as usize, r.hctx as usize);
        let Some(l) = self.ctx_lists.get_mut(cpu) else {
            return false;
        };
        let Some(pos) = l.iter().position(|&x| x == rq) else {
            return false;
        };
        l.remove(pos);
        let hl = &mut self.hctxs[h];
        hl.queued -= 1;
        if let Ok(i) = hl.cpus.binary_search(&(cpu as u32)) {
            hl.dispatch_from = (i + 1) % hl.cpus.len();
        }
        true
    }

    fn has_work(&self, ctx: &ElvCtx) -> bool {
        self.hctxs
            .get(ctx.hctx as usize)
            .is_some_and(|h| h.queued > 0)
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
