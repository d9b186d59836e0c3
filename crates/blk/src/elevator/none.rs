//! `none`: no elevator.
//!
//! With no elevator the kernel puts requests on per-CPU software queues and the
//! dispatch loop drains them in CPU order (`blk_mq_flush_busy_ctxs`). This model keeps
//! one list per CPU and dispatches from the lowest-numbered CPU with requests, oldest
//! first; at-head inserts (requeues) go to the front of their CPU's list, as
//! `blk_mq_insert_request` does for the software queue. No tunables.
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
}

impl NoneSched {
    /// A `none` scheduler for a queue with `params.nr_cpus` software queues.
    pub fn new(params: &QueueParams) -> Self {
        NoneSched {
            ctx_lists: vec![VecDeque::new(); params.nr_cpus.max(1) as usize],
            queued: 0,
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
        let rq = self.ctx_lists.iter_mut().find_map(|l| l.pop_front());
        self.queued -= rq.is_some() as usize;
        rq
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
