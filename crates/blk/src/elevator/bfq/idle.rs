//! Idling (I/O-dispatch plugging): `bfq_better_to_idle`,
//! `idling_boosts_thr_without_issues`, `idling_needed_for_service_guarantees`,
//! `bfq_asymmetric_scenario`, `bfq_bfqq_must_idle`, `bfq_arm_slice_timer`,
//! `bfq_rq_enqueued`, `bfq_idle_slice_timer_body`.
//!
//! The idle timer is a "wake me at t" deadline ([`crate::elevator::Elevator::next_timer`]);
//! `hrtimer_try_to_cancel` clears it.

use super::queue::QueueId;
use super::wf2q::CLASS_IDLE;
use super::{Bfq, Expiration, BFQ_MIN_TT};
use crate::elevator::ElvCtx;
use crate::request::RqId;
use crate::types::Ns;

impl Bfq {
    /// `bfq_asymmetric_scenario`: differing weights among queues with pending
    /// requests (unless `q` has the smallest), several busy classes, or competing
    /// groups, as the variant counts and compares them
    /// ([`Bfq::groups_make_asymmetric`]; `mainline`: more than one group with
    /// pending requests).
    pub fn asymmetric_scenario(&self, q: Option<QueueId>) -> bool {
        let smallest_weight = q.is_some_and(|q| {
            let wc = self.wf.ents[q].weight_counter;
            wc.is_some() && wc == self.wf.weights.keys().next().copied()
        });
        let varied_queue_weights = !smallest_weight && self.wf.weights.len() >= 2;
        let b = &self.busy_queues;
        // At least two of the three classes have busy queues.
        let multiple_classes_busy = b.iter().filter(|&&n| n > 0).count() >= 2;
        varied_queue_weights || multiple_classes_busy || self.groups_make_asymmetric()
    }

    /// `idling_boosts_thr_without_issues`. `hw_tag == -1` (unknown) counts as
    /// "queueing", as `!bfqd->hw_tag` does in C.
    pub fn idling_boosts_thr_without_issues(&self, q: QueueId) -> bool {
        let no_hw_tag = self.hw_tag == 0;
        let rot_without_queueing = self.rotational && no_hw_tag;
        let bq = &self.queues[q];
        let seq_io_bound = !bq.seeky() && bq.io_bound && bq.has_short_ttime;
        let boosts = rot_without_queueing || ((self.rotational || no_hw_tag) && seq_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees` (v6.13, including the "only busy queue"
    /// clause).
    pub fn idling_needed_for_service_guarantees(&self, q: QueueId) -> bool {
        if self.queues[q].process_refs == 0 {
            return false;
        }
        let tot_busy = self.tot_busy_queues();
        let e = &self.wf.ents[q];
        (e.wr_coeff > 1
            && (self.wr_busy_queues < tot_busy
                || self.tot_rq_in_driver >= self.queues[q].dispatched + 4))
            || self.asymmetric_scenario(Some(q))
            || tot_busy == 1
    }

    /// `bfq_better_to_idle`.
    pub fn better_to_idle(&self, q: QueueId) -> bool {
        // No process will send it requests any more.
        if self.queues[q].process_refs == 0 {
            return false;
        }
        if self.strict_guarantees {
            return true;
        }
        if self.slice_idle == 0 || !self.queues[q].sync || self.wf.ents[q].class == CLASS_IDLE {
            return false;
        }
        self.idling_boosts_thr_without_issues(q) || self.idling_needed_for_service_guarantees(q)
    }

    /// `bfq_bfqq_must_idle`.
    pub fn must_idle(&self, q: QueueId) -> bool {
        self.queues[q].sort.is_empty() && self.better_to_idle(q)
    }

    /// `bfq_arm_slice_timer`.
    pub(super) fn arm_slice_timer(&mut self) {
        let Some(q) = self.in_service_queue else {
            return;
        };
        self.queues[q].wait_request = true;
        let mut sl = self.slice_idle;
        let wr = self.wf.ents[q].wr_coeff;
        if self.queues[q].seeky() && wr == 1 && !self.asymmetric_scenario(Some(q)) {
            sl = sl.min(BFQ_MIN_TT);
        } else if wr > 1 {
            sl = sl.max(20 * Ns::MS);
        }
        self.last_idling_start = self.now;
        self.last_idling_start_jiffies = self.jiffies;
        self.idle_timer = Some(self.now.add(sl));
    }

    /// `bfq_rq_enqueued`.
    pub(super) fn rq_enqueued(&mut self, ctx: &mut ElvCtx, q: QueueId, rq: RqId) {
        let r = ctx.rqs.get(rq);
        let (end, sectors, sync) = (r.end().0, r.nr_sectors, r.is_sync());
        self.queues[q].last_request_pos = end;
        if self.in_service_queue == Some(q) && self.queues[q].wait_request {
            let small_req = self.queues[q].queued[usize::from(sync)] == 1 && sectors < 32;
            let budget_timeout = self.budget_timed_out(q);
            if small_req && self.idling_boosts_thr_without_issues(q) && !budget_timeout {
                return;
            }
            self.queues[q].wait_request = false;
            self.idle_timer = None;
            if budget_timeout {
                self.bfqq_expire(ctx, q, false, Expiration::BudgetTimeout);
            }
        }
    }

    /// `bfq_idle_slice_timer` / `bfq_idle_slice_timer_body`.
    pub(super) fn idle_slice_timer(&mut self, ctx: &mut ElvCtx) {
        // Only an armed, due timer fires (a cancelled hrtimer never runs).
        match self.idle_timer {
            Some(due) if due <= self.now => {}
            _ => return,
        }
        self.idle_timer = None;
        let Some(q) = self.in_service_queue else {
            return;
        };
        self.queues[q].wait_request = false;
        let reason = if self.budget_timed_out(q) {
            Expiration::BudgetTimeout
        } else if self.queues[q].nr_queued() == 0 {
            Expiration::TooIdle
        } else {
            return;
        };
        self.bfqq_expire(ctx, q, true, reason);
    }
}
