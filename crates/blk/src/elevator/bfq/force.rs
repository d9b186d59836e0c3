//! Replay support for `iosched kernel-trace compare`: continue from the kernel's
//! dispatch after a disagreement ([`Bfq::force_dispatch_rq`]).
//!
//! The trace shows which request the kernel issued, not why, so each case follows the
//! path of `__bfq_dispatch_request` that can produce that request from our state:
//!
//! - the request sits in `bfqd->dispatch` (an at-head insert): it leaves that list;
//! - it belongs to the in-service queue: `bfq_dispatch_rq_from_bfqq` on that queue,
//!   with the request as the queue's `next_rq` (the kernel's head-request choice may
//!   have differed from ours);
//! - the in-service queue is plugged (waiting for its next request, or idling while
//!   its I/O is in flight): the request was **injected** (`bfq_select_queue`'s
//!   injection branch) and service stays where it is;
//! - otherwise the kernel ended the in-service queue's slot and selected the
//!   request's queue: the slot ends (`bfq_bfqq_expire`, with the reason our state
//!   gives: no requests left, budget timeout, else budget exhausted), the queue's
//!   path is made `next_in_service` at every level and `bfq_set_in_service_queue`
//!   selects it.

use super::{Bfq, Expiration};
use crate::elevator::ElvCtx;
use crate::request::RqId;

impl Bfq {
    /// Take `rq` out as the kernel's dispatch of it would (see the module docs).
    /// Returns false, changing nothing, if `rq` is not queued here.
    pub fn force_dispatch_rq(&mut self, ctx: &mut ElvCtx, rq: RqId) -> bool {
        self.set_clock(ctx);
        let Some(d) = self.rqd.get(rq.index()).copied() else {
            return false;
        };
        if d.started {
            return false;
        }
        if d.in_dispatch_list {
            let Some(pos) = self.dispatch.iter().position(|&r| r == rq) else {
                return false;
            };
            self.dispatch.remove(pos);
            self.start_from_dispatch_list(ctx, rq);
            return true;
        }
        let Some(q) = d.bfqq.filter(|_| d.in_sort) else {
            return false;
        };
        match self.in_service_queue {
            Some(s) if s == q => self.keep_or_renew_slot(ctx, q, rq),
            Some(s) if self.plugged(s) => {
                self.injected += 1;
                // Only the general path (`bfq_choose_bfqq_for_injection`) marks the
                // service hole as injected; the async, waker and woken queues are
                // served without touching `rqs_injected`.
                if !self.injects_unconditionally(s, q) {
                    self.rqs_injected = true;
                }
            }
            s => {
                if let Some(s) = s {
                    let reason = if self.queues[s].next_rq.is_none() {
                        Expiration::NoMoreRequests
                    } else if self.budget_timed_out(s) {
                        Expiration::BudgetTimeout
                    } else {
                        Expiration::BudgetExhausted
                    };
                    self.bfqq_expire(ctx, s, false, reason);
                }
                self.wf.force_next_in_service(q);
                if self.set_in_service_queue() != Some(q) {
                    // Cannot happen for a busy queue; fall back to an injection so
                    // the request still leaves.
                    self.injected += 1;
                }
            }
        }
        self.queues[q].next_rq = Some(rq);
        let got = self.dispatch_rq_from_bfqq(ctx, q);
        debug_assert_eq!(got, rq);
        self.start_from_queue(ctx, rq);
        true
    }

    /// The kernel dispatched `rq` from the in-service queue `q`: `bfq_select_queue`
    /// first expires `q` when its budget timed out or cannot cover `rq`, and, `q`
    /// being the one to serve, selects it again with a new budget and timestamps;
    /// otherwise it keeps `q`, ending any idling for it.
    fn keep_or_renew_slot(&mut self, ctx: &mut ElvCtx, q: super::QueueId, rq: RqId) {
        self.queues[q].next_rq = Some(rq);
        let reason = if self.may_expire_for_budg_timeout(q) {
            Expiration::BudgetTimeout
        } else if self.serv_to_charge(ctx, rq, q) > self.budget_left(q) {
            Expiration::BudgetExhausted
        } else {
            if self.queues[q].wait_request {
                self.queues[q].wait_request = false;
                self.idle_timer = None;
            }
            return;
        };
        self.bfqq_expire(ctx, q, false, reason);
        self.wf.force_next_in_service(q);
        if self.set_in_service_queue() != Some(q) {
            self.injected += 1;
        }
    }

    /// Whether `bfq_select_queue` would take `q` for the plugged `s` before trying the
    /// inject limit: `s`'s process's async queue, `s`'s waker, or the first queue `s`
    /// wakes.
    fn injects_unconditionally(&self, s: super::QueueId, q: super::QueueId) -> bool {
        let sq = &self.queues[s];
        let owner_async = sq
            .bic
            .and_then(|p| self.bics.get(&p))
            .and_then(|b| b.async_q);
        owner_async == Some(q) || sq.waker_bfqq == Some(q) || sq.woken_list.front() == Some(&q)
    }

    /// The in-service queue `s` keeps the device although it has nothing to
    /// dispatch: the plugged branch of `bfq_select_queue`.
    fn plugged(&self, s: super::QueueId) -> bool {
        let bq = &self.queues[s];
        bq.next_rq.is_none() && (bq.wait_request || (bq.dispatched != 0 && self.better_to_idle(s)))
    }
}
