//! Merging hooks: `bfq_bio_merge` (with `bfq_allow_bio_merge`), `bfq_request_merge`,
//! `bfq_request_merged`, `bfq_requests_merged`, `elv_rb_latter_request` /
//! `elv_rb_former_request`, and the insert merge of `bfq_insert_request`.
//!
//! The generic steps come from [`crate::merge`]; what BFQ adds is that a bio only
//! merges into a request of the queue the bio itself would go to (`bfqd->bio_bfqq`),
//! and never a sync bio into an async request. That check is also where EQM merges
//! the bio's queue into a cooperating one ([`super::coop`]).

use super::queue::QueueId;
use super::Bfq;
use crate::elevator::{Elevator, ElvCtx};
use crate::merge::{self, MergeKind};
use crate::request::{Bio, BioId, RqId};
use crate::types::{Op, ReqFlags};

/// `op_is_sync` for a bio.
fn bio_is_sync(bio: &Bio) -> bool {
    matches!(bio.op, Op::Read)
        || bio.flags.any(ReqFlags(
            ReqFlags::SYNC.0 | ReqFlags::FUA.0 | ReqFlags::PREFLUSH.0,
        ))
}

impl Bfq {
    /// `bic_to_bfqq(bic, op_is_sync(bio))` for the submitting process.
    fn bio_queue(&self, bio: &Bio) -> Option<QueueId> {
        let bic = self.bics.get(&bio.pid)?;
        if bio_is_sync(bio) {
            bic.sync_q
        } else {
            bic.async_q
        }
    }

    /// `elv_bio_merge_ok` = `blk_rq_merge_ok` + `bfq_allow_bio_merge`. The bio's
    /// queue is `bfqd->bio_bfqq` ([`Bfq::bio_bfqq`]); EQM may merge it into a
    /// cooperator here (`bfq_setup_cooperator`, `bfq_merge_bfqqs`), which then is
    /// the bio's queue.
    fn bfq_bio_merge_ok(&mut self, ctx: &ElvCtx, rq: RqId, bio: &Bio) -> bool {
        let r = ctx.rqs.get(rq);
        if !merge::bio_merge_ok(r, bio) {
            return false;
        }
        if bio_is_sync(bio) && !r.is_sync() {
            return false;
        }
        let Some(mut q) = self.bio_bfqq else {
            return false;
        };
        if let Some(new) = self.setup_cooperator(q, bio.sector.0, bio.pid) {
            while q != new {
                q = self.merge_bfqqs(bio.pid, q);
            }
            self.bio_bfqq = Some(q);
        }
        Some(q) == self.queue_of(rq)
    }

    /// `elv_merge` with BFQ's `allow_merge`: the one-hit cache, the end-sector hash
    /// (back merge), then `bfq_request_merge` (front merge in the bio's queue).
    fn bfq_elv_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio) -> Option<(RqId, MergeKind)> {
        if ctx.merge.limits.nomerges == 2 || !merge::bio_mergeable(bio) {
            return None;
        }
        self.bio_bfqq = self.bio_queue(bio);
        if let Some(lm) = ctx.merge.last_merge {
            if self.bfq_bio_merge_ok(ctx, lm, bio) {
                let r = ctx.rqs.get(lm);
                if merge::discard_mergeable(r, &ctx.merge.limits) {
                    return Some((lm, MergeKind::Discard));
                }
                if let Some(kind) = merge::try_merge(r, bio) {
                    return Some((lm, kind));
                }
            }
        }
        if ctx.merge.limits.nomerges == 1 {
            return None;
        }
        if let Some(rq) = ctx.merge.rqhash_find(ctx.rqs, bio.sector.0) {
            if self.bfq_bio_merge_ok(ctx, rq, bio) {
                return Some((rq, MergeKind::Back));
            }
        }
        self.bfq_request_merge(ctx, bio)
    }

    /// `bfq_bio_merge` → `blk_mq_sched_try_merge` with BFQ's merge rule.
    pub(super) fn bfq_bio_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio, bio_id: BioId) -> bool {
        self.set_clock(ctx);
        match self.bfq_elv_merge(ctx, bio) {
            Some((rq, MergeKind::Back)) => {
                if !merge::bio_attempt_back_merge(ctx, rq, bio, bio_id) {
                    return false;
                }
                let merged = match self.next_request(ctx, rq) {
                    Some(next) => merge::attempt_merge(ctx, self, rq, next),
                    None => false,
                };
                if !merged {
                    merge::elv_merged_request(ctx, self, rq, MergeKind::Back);
                }
                true
            }
            Some((rq, MergeKind::Front)) => {
                if !merge::bio_attempt_front_merge(ctx, rq, bio, bio_id) {
                    return false;
                }
                let merged = match self.former_request(ctx, rq) {
                    Some(prev) => merge::attempt_merge(ctx, self, prev, rq),
                    None => false,
                };
                if !merged {
                    merge::elv_merged_request(ctx, self, rq, MergeKind::Front);
                }
                true
            }
            Some((rq, MergeKind::Discard)) => {
                merge::bio_attempt_discard_merge(ctx, rq, bio, bio_id)
            }
            None => false,
        }
    }

    /// `bfq_request_merge`: a request of the bio's queue starting where the bio ends.
    pub(super) fn bfq_request_merge(
        &mut self,
        ctx: &ElvCtx,
        bio: &Bio,
    ) -> Option<(RqId, MergeKind)> {
        let q = self.bio_bfqq?;
        let end = bio.end().0;
        // elv_rb_find: a request whose start sector is `end`.
        let rq = self.queues[q]
            .sort
            .range((end, 0, RqId(0))..)
            .next()
            .filter(|k| k.0 == end)
            .map(|k| k.2)?;
        if !self.bfq_bio_merge_ok(ctx, rq, bio) {
            return None;
        }
        if merge::discard_mergeable(ctx.rqs.get(rq), &ctx.merge.limits) {
            return Some((rq, MergeKind::Discard));
        }
        Some((rq, MergeKind::Front))
    }

    /// `bfq_request_merged`: after a front merge, re-sort the request if it now
    /// starts before its predecessor, and reconsider the queue's head.
    pub(super) fn bfq_request_merged(&mut self, ctx: &mut ElvCtx, rq: RqId, kind: MergeKind) {
        let Some(q) = self.queue_of(rq) else {
            return;
        };
        if kind != MergeKind::Front || !self.rqd(rq).in_sort {
            return;
        }
        let key = self.sort_key(rq);
        let prev = self.queues[q].sort.range(..key).next_back().map(|k| k.2);
        let pos = ctx.rqs.get(rq).sector.0;
        let Some(prev) = prev else {
            return;
        };
        if pos >= self.rqd(prev).sector {
            return;
        }
        self.queues[q].sort.remove(&key);
        self.rqd_mut(rq).sector = pos;
        let key = self.sort_key(rq);
        self.queues[q].sort.insert(key);
        let old = self.queues[q].next_rq;
        let next = self.choose_req(ctx, old, Some(rq), self.last_position);
        self.queues[q].next_rq = next;
        if old != next {
            self.updated_next_req(ctx, q);
            self.pos_tree_update(q);
        }
    }

    /// `bfq_requests_merged`: `next` was absorbed into `rq`.
    pub(super) fn bfq_requests_merged(&mut self, ctx: &mut ElvCtx, rq: RqId, next: RqId) {
        let q = self.queue_of(rq);
        let next_q = self.queue_of(next);
        if let Some(q) = q {
            let (a, b) = (*self.rqd(rq), *self.rqd(next));
            if Some(q) == next_q && a.in_sort && b.in_sort && b.fifo_time < a.fifo_time {
                // list_del_init(rq) + list_replace_init(next -> rq)
                let fifo = &mut self.queues[q].fifo;
                fifo.remove(&mut self.rqd, rq);
                fifo.replace(&mut self.rqd, next, rq); // `next` leaves the FIFO here
                self.rqd_mut(rq).fifo_time = b.fifo_time;
            }
            if self.queues[q].next_rq == Some(next) {
                self.queues[q].next_rq = Some(rq);
            }
        }
        if self.rqd.get(next.index()).is_some_and(|d| d.in_sort) {
            self.remove_request(ctx, next);
        }
    }

    /// `elv_rb_latter_request` within the request's queue.
    pub(super) fn latter_request(&self, rq: RqId) -> Option<RqId> {
        let d = self.rqd.get(rq.index())?;
        let q = d.bfqq.filter(|_| d.in_sort)?;
        let key = self.sort_key(rq);
        self.queues[q]
            .sort
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .map(|k| k.2)
    }

    /// `elv_rb_former_request` within the request's queue.
    pub(super) fn former_rq(&self, rq: RqId) -> Option<RqId> {
        let d = self.rqd.get(rq.index())?;
        let q = d.bfqq.filter(|_| d.in_sort)?;
        let key = self.sort_key(rq);
        self.queues[q].sort.range(..key).next_back().map(|k| k.2)
    }
}
