//! Budgets, budget timeouts and expiration (`bfq_bfqq_expire`,
//! `__bfq_bfqq_recalc_budget`, `bfq_bfqq_is_slow`, `bfq_bfqq_charge_time`,
//! `__bfq_bfqq_expire`, `__bfq_bfqd_reset_in_service`).

use super::queue::QueueId;
use super::{Bfq, Expiration, ExpireEvent, BFQ_MIN_TT, BFQ_STATS_MIN_BUDGETS};
use crate::elevator::ElvCtx;
use crate::types::Ns;

impl Bfq {
    /// `bfq_bfqq_budget_timeout`: `budget_timeout <= jiffies`.
    pub fn budget_timed_out(&self, q: QueueId) -> bool {
        self.before_eq_jiffies(self.queues[q].budget_timeout)
    }

    /// `bfq_may_expire_for_budg_timeout`.
    pub fn may_expire_for_budg_timeout(&self, q: QueueId) -> bool {
        let e = &self.wf.ents[q];
        (!self.queues[q].wait_request || self.budget_left(q) >= e.budget / 3)
            && self.budget_timed_out(q)
    }

    /// `bfq_bfqq_is_slow`: returns `(slow, delta_ms)`.
    fn bfqq_is_slow(&self, q: QueueId, compensate: bool) -> (bool, u64) {
        let mut slow = self.queues[q].seeky();
        if !self.queues[q].sync {
            return (false, 0);
        }
        let t = if compensate {
            self.last_idling_start
        } else {
            self.now
        };
        let delta_us = t.0.wrapping_sub(self.last_budget_start.0) as i64 / 1000;
        if delta_us < 1000 {
            // The static bfq_slice_idle (8 ms), not the tunable.
            let ms = if !self.rotational {
                BFQ_MIN_TT / Ns::MS
            } else {
                8
            };
            return (slow, ms);
        }
        let delta_ms = delta_us as u64 / 1000;
        if delta_us > 20000 {
            slow = self.wf.ents[q].service < self.bfq_max_budget / 2;
        }
        (slow, delta_ms)
    }

    /// `bfq_bfqq_charge_time`: charge a slow queue as if it had received service in
    /// proportion to the time it held the device. Quirk kept: the reference timeout
    /// is the compile-time `HZ / 8`, not the `timeout_sync` tunable.
    fn bfqq_charge_time(&mut self, q: QueueId, time_ms: u64) {
        let timeout_ms = self.jiffies_to_msecs(self.bfq_timeout_const()).max(1);
        let bounded = time_ms.min(timeout_ms);
        let serv_for_time = (self.bfq_max_budget as u64 * bounded / timeout_ms) as i64;
        let e = &mut self.wf.ents[q];
        let tot = serv_for_time.max(e.service);
        if tot > e.budget {
            e.budget = tot;
        }
        let extra = (tot - e.service).max(0);
        self.bfqq_served(q, extra);
    }

    /// `__bfq_bfqq_recalc_budget`: budget feedback at expiration.
    fn recalc_budget(&mut self, ctx: &ElvCtx, q: QueueId, reason: Expiration) {
        let min_budget = self.min_budget();
        let wr = self.wf.ents[q].wr_coeff;
        let mut budget = if wr == 1 {
            self.queues[q].max_budget
        } else {
            2 * min_budget
        };
        if self.queues[q].sync && wr == 1 {
            budget = match reason {
                Expiration::TooIdle => {
                    if self.queues[q].dispatched > 0 {
                        (budget * 2).min(self.bfq_max_budget)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expiration::BudgetTimeout => (budget * 2).min(self.bfq_max_budget),
                Expiration::BudgetExhausted => (budget * 4).min(self.bfq_max_budget),
                Expiration::NoMoreRequests => self.wf.ents[q].service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !self.queues[q].sync {
            budget = self.bfq_max_budget;
        }
        self.queues[q].max_budget = budget;
        if self.budgets_assigned >= BFQ_STATS_MIN_BUDGETS && self.bfq_user_max_budget == 0 {
            self.queues[q].max_budget = budget.min(self.bfq_max_budget);
        }
        if let Some(next) = self.queues[q].next_rq {
            let charge = self.serv_to_charge(ctx, next, q);
            self.wf.ents[q].budget = self.queues[q].max_budget.max(charge);
        }
    }

    /// `idling_needed_for_service_guarantees` is used by `__bfq_bfqq_expire` for
    /// preempted queues; `__bfq_bfqq_expire` itself:
    pub(super) fn __bfqq_expire(&mut self, q: QueueId, reason: Expiration) {
        // A shared queue gone seeky is split at its processes' next requests.
        if self.queues[q].coop && self.queues[q].seeky() {
            self.queues[q].split_coop = true;
        }
        if self.queues[q].sort.is_empty()
            && !(reason == Expiration::Preempted && self.idling_needed_for_service_guarantees(q))
        {
            if self.queues[q].dispatched == 0 {
                self.queues[q].budget_timeout = self.jiffies;
            }
            self.del_bfqq_busy(q, true);
        } else {
            self.requeue_bfqq(q, true);
            if !self.queues[q].sort.is_empty() {
                self.pos_tree_update(q);
            }
        }
        self.reset_in_service();
    }

    /// `__bfq_bfqd_reset_in_service`.
    fn reset_in_service(&mut self) {
        if let Some(q) = self.in_service_queue {
            self.queues[q].wait_request = false;
        }
        self.idle_timer = None;
        self.wf.reset_in_service(self.in_service_queue);
        self.in_service_queue = None;
    }

    /// `bfq_bfqq_expire`: end the service slot of `q`.
    pub fn bfqq_expire(&mut self, ctx: &ElvCtx, q: QueueId, compensate: bool, reason: Expiration) {
        if self.record_expirations {
            let e = &self.wf.ents[q];
            self.expirations.push(ExpireEvent {
                t: self.now,
                queue: q,
                reason,
                service: e.service,
                budget: e.budget,
            });
        }
        let (slow, delta) = self.bfqq_is_slow(q, compensate);
        let e = &self.wf.ents[q];
        if e.wr_coeff == 1
            && (slow
                || (reason == Expiration::BudgetTimeout && self.budget_left(q) >= e.budget / 3))
        {
            self.bfqq_charge_time(q, delta);
        }
        if self.low_latency && self.wf.ents[q].wr_coeff == 1 {
            self.queues[q].last_wr_start_finish = self.jiffies;
        }
        if self.low_latency && self.queues[q].sort.is_empty() {
            if self.queues[q].dispatched == 0 {
                self.queues[q].soft_rt_next_start = self.softrt_next_start(q);
            } else {
                self.queues[q].softrt_update = true;
            }
        }
        self.rqs_injected = false;
        self.wait_dispatch = false;
        self.waited_rq = None;
        self.recalc_budget(ctx, q, reason);
        self.__bfqq_expire(q, reason);
        if !self.queues[q].busy
            && reason != Expiration::BudgetTimeout
            && reason != Expiration::BudgetExhausted
        {
            self.queues[q].non_blocking_wait_rq = true;
        } else {
            self.wf.ents[q].service = 0;
        }
        self.wf.reset_parents_service(q);
    }
}
