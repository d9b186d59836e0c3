//! I/O injection while the in-service queue is plugged: the process's own async
//! queue, waker and woken queues (`bfq_check_waker`), and other queues within the
//! adaptive inject limit (`bfq_choose_bfqq_for_injection`,
//! `bfq_reset_inject_limit`, `bfq_update_inject_limit`).

use super::queue::QueueId;
use super::Bfq;
use crate::elevator::ElvCtx;
use crate::types::Ns;

impl Bfq {
    /// `bfq_check_waker`: `q` became non-empty shortly after a completion of another
    /// queue; three times in a row (within `128 × slice_idle`) makes that queue its
    /// waker.
    pub(super) fn check_waker(&mut self, q: QueueId) {
        let now = self.now.0;
        let Some(w) = self.last_completed_rq_bfqq else {
            return;
        };
        if w == q
            || self.queues[q].has_short_ttime
            || now.wrapping_sub(self.last_completion.0) >= 4 * Ns::MS
        {
            return;
        }
        let slice_idle = self.slice_idle;
        let bq = &mut self.queues[q];
        if bq.tentative_waker_bfqq != Some(w) || now > bq.waker_detection_started + 128 * slice_idle
        {
            bq.tentative_waker_bfqq = Some(w);
            bq.num_waker_detections = 1;
            bq.waker_detection_started = now;
        } else {
            bq.num_waker_detections += 1;
        }
        if bq.num_waker_detections == 3 {
            bq.waker_bfqq = Some(w);
            bq.tentative_waker_bfqq = None;
            if let Some(old) = bq.woken_of.take() {
                self.queues[old].woken_list.retain(|&x| x != q);
            }
            self.queues[w].woken_list.push_front(q);
            self.queues[q].woken_of = Some(w);
        }
    }

    /// `bfq_reset_inject_limit`.
    pub(super) fn reset_inject_limit(&mut self, q: QueueId) {
        self.waited_rq = None;
        let jiffies = self.jiffies;
        let bq = &mut self.queues[q];
        bq.last_serv_time_ns = 0;
        bq.inject_limit = if bq.has_short_ttime { 0 } else { 1 };
        bq.decrease_time_jif = jiffies;
    }

    /// The inject-limit part of `bfq_add_request` (sync queue, the process's only
    /// request): waker check, periodic limit reset, start of a service-time sample.
    pub(super) fn inject_on_add(&mut self, q: QueueId) {
        self.check_waker(q);
        let ms1000 = self.msecs_to_jiffies(1000);
        if self.before_eq_jiffies(self.queues[q].decrease_time_jif.wrapping_add(ms1000)) {
            self.reset_inject_limit(q);
        }
        let ms10 = self.msecs_to_jiffies(10);
        let bq = &self.queues[q];
        if self.in_service_queue == Some(q)
            && (self.tot_rq_in_driver == 0
                || (bq.last_serv_time_ns > 0 && self.rqs_injected && self.tot_rq_in_driver > 0))
            && self.before_eq_jiffies(bq.decrease_time_jif.wrapping_add(ms10))
        {
            self.last_empty_occupied_ns = self.now.0;
            self.wait_dispatch = true;
            if self.tot_rq_in_driver == 0 {
                self.rqs_injected = false;
            }
        }
    }

    /// `bfq_update_inject_limit`, at the completion of the sampled request (before
    /// the in-driver count drops).
    pub(super) fn update_inject_limit(&mut self, q: QueueId) {
        let tot_time_ns = self.now.0.wrapping_sub(self.last_empty_occupied_ns);
        let jiffies = self.jiffies;
        let (rqs_injected, in_driver, max_in_driver) = (
            self.rqs_injected,
            self.tot_rq_in_driver,
            self.max_rq_in_driver,
        );
        let bq = &mut self.queues[q];
        let old_limit = bq.inject_limit;
        if bq.last_serv_time_ns > 0 && rqs_injected {
            let threshold = (bq.last_serv_time_ns * 3) >> 1;
            if tot_time_ns >= threshold && old_limit > 0 {
                bq.inject_limit -= 1;
                bq.decrease_time_jif = jiffies;
            } else if tot_time_ns < threshold && old_limit <= max_in_driver {
                bq.inject_limit += 1;
            }
        }
        if (bq.last_serv_time_ns == 0 && in_driver == 1) || tot_time_ns < bq.last_serv_time_ns {
            if bq.last_serv_time_ns == 0 {
                bq.inject_limit = old_limit.max(1);
            }
            bq.last_serv_time_ns = tot_time_ns;
        } else if !rqs_injected && in_driver == 1 {
            bq.last_serv_time_ns = tot_time_ns;
        }
        self.waited_rq = None;
        self.rqs_injected = false;
    }

    /// Whether `q`'s head request fits its remaining budget.
    fn head_fits(&self, ctx: &ElvCtx, q: QueueId) -> bool {
        self.queues[q].busy
            && self.queues[q]
                .next_rq
                .is_some_and(|n| self.serv_to_charge(ctx, n, q) <= self.budget_left(q))
    }

    /// `bfq_choose_bfqq_for_injection`. Quirk kept: the lift of a zero limit after a
    /// long plug adds `slice_idle` in ns to a jiffies stamp, so it practically never
    /// applies.
    fn choose_bfqq_for_injection(&mut self, ctx: &ElvCtx) -> Option<QueueId> {
        let s = self.in_service_queue?;
        let sq = &self.queues[s];
        let mut limit = sq.inject_limit;
        let always_inject = self.wf.ents[s].wr_coeff == 1 || !sq.has_short_ttime;
        if limit == 0
            && sq.last_serv_time_ns == 0
            && sq.wait_request
            && self.before_eq_jiffies(self.last_idling_start_jiffies.wrapping_add(self.slice_idle))
        {
            limit = 1;
        }
        if self.tot_rq_in_driver >= limit {
            return None;
        }
        let candidates: Vec<QueueId> = self.wf.active_list.iter().copied().collect();
        for q in candidates {
            let Some(next) = self.queues[q].next_rq else {
                continue;
            };
            if (always_inject || self.wf.ents[q].wr_coeff > 1)
                && self.serv_to_charge(ctx, next, q) <= self.budget_left(q)
            {
                if !self.rotational
                    && ctx.rqs.get(next).nr_sectors >= super::BFQQ_SECT_THR_NONROT
                    && self.tot_rq_in_driver >= 1
                {
                    continue;
                }
                self.rqs_injected = true;
                return Some(q);
            }
        }
        None
    }

    /// The plugged branch of `bfq_select_queue`: which queue, if any, to take a
    /// request from while the in-service queue `s` keeps the device.
    pub(super) fn injection_candidate(&mut self, ctx: &ElvCtx, s: QueueId) -> Option<QueueId> {
        if !self.injection {
            return None;
        }
        // bfqq->bic: a shared queue has no owner.
        let owner = self.queues[s].bic;
        let owner_async = owner
            .and_then(|p| self.bics.get(&p))
            .and_then(|b| b.async_q);
        if let Some(a) = owner_async {
            if self.queues[a].busy {
                if let Some(n) = self.queues[a].next_rq {
                    if Some(ctx.rqs.get(n).pid) == owner
                        && self.serv_to_charge(ctx, n, a) <= self.budget_left(a)
                    {
                        return Some(a);
                    }
                }
            }
        }
        if let Some(w) = self.queues[s].waker_bfqq {
            if self.head_fits(ctx, w) {
                return Some(w);
            }
        }
        if let Some(&b) = self.queues[s].woken_list.front() {
            if self.head_fits(ctx, b) {
                return Some(b);
            }
        }
        if !self.idling_boosts_thr_without_issues(s)
            && (self.wf.ents[s].wr_coeff == 1
                || self.wr_busy_queues > 1
                || !self.queues[s].has_short_ttime)
        {
            return self.choose_bfqq_for_injection(ctx);
        }
        None
    }
}
