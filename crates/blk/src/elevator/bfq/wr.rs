//! Low-latency heuristics (`low_latency`): weight raising of interactive and soft
//! real-time queues, async raising, large-burst detection (`bfq_handle_burst`).
//!
//! A raised queue's entity weight is `orig_weight × wr_coeff` (30 interactive,
//! 3000 soft real-time); raised queues stay out of the weights tree and are counted
//! in `wr_busy_queues`, which disables throughput-motivated idling for everyone.

use super::queue::QueueId;
use super::Bfq;

/// `bfq_wr_coeff`.
pub const BFQ_WR_COEFF: u32 = 30;
/// `BFQ_SOFTRT_WEIGHT_FACTOR`.
pub const BFQ_SOFTRT_WEIGHT_FACTOR: u32 = 100;
/// `bfq_wr_max_softrt_rate` (sectors/s).
pub const BFQ_WR_MAX_SOFTRT_RATE: u64 = 7000;
/// `max_service_from_wr` (sectors).
pub const MAX_SERVICE_FROM_WR: i64 = 120_000;
/// `bfq_large_burst_thresh`.
pub const BFQ_LARGE_BURST_THRESH: u32 = 8;
/// `MAX_JIFFY_OFFSET` for a 64-bit `long`: `(LONG_MAX >> 1) - 1`.
pub const MAX_JIFFY_OFFSET: u64 = ((i64::MAX >> 1) - 1) as u64;

/// What `bfq_bfqq_handle_idle_busy_switch` found out about a queue turning busy.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arrival {
    /// `bfq_bfqq_idle_for_long_time`.
    pub idle_for_long_time: bool,
    /// The arrival qualifies as soft real-time.
    pub soft_rt: bool,
    /// `BFQQF_in_large_burst`.
    pub in_burst: bool,
    /// The arrival qualifies as interactive.
    pub interactive: bool,
    /// The queue is not shared, or the request's process was stably merged into it.
    pub may_raise: bool,
}

impl Bfq {
    /// `bfq_smallest_from_now`: the farthest past instant for the jiffies macros.
    pub(super) fn smallest_from_now(&self) -> u64 {
        self.jiffies.wrapping_sub(MAX_JIFFY_OFFSET)
    }

    /// `time_is_before_jiffies(t)`: `t < jiffies`, wrap-safe.
    pub(super) fn before_jiffies(&self, t: u64) -> bool {
        (self.jiffies.wrapping_sub(t) as i64) > 0
    }

    /// `bfq_wr_rt_max_time` (300 ms in jiffies).
    pub(super) fn wr_rt_max_time(&self) -> u64 {
        self.msecs_to_jiffies(300)
    }

    /// `bfq_wr_min_idle_time` (2 s in jiffies).
    pub(super) fn wr_min_idle_time(&self) -> u64 {
        self.msecs_to_jiffies(2000)
    }

    /// `bfq_wr_duration`: `rate_dur_prod / peak_rate`, clamped to [3 s, 25 s].
    pub fn wr_duration(&self) -> u64 {
        let nonrot = usize::from(!self.rotational);
        let ref_wr_duration = [self.msecs_to_jiffies(7000), self.msecs_to_jiffies(2500)];
        let rate_dur_prod = super::REF_RATE[nonrot] as u64 * ref_wr_duration[nonrot];
        let dur = rate_dur_prod / self.peak_rate.max(1) as u64;
        dur.clamp(self.msecs_to_jiffies(3000), self.msecs_to_jiffies(25000))
    }

    fn set_wr_coeff(&mut self, q: QueueId, coeff: u32) {
        self.wf.ents[q].wr_coeff = coeff;
    }

    /// `switch_back_to_interactive_wr`.
    pub(super) fn switch_back_to_interactive_wr(&mut self, q: QueueId) {
        self.set_wr_coeff(q, BFQ_WR_COEFF);
        let d = self.wr_duration();
        let bq = &mut self.queues[q];
        bq.wr_cur_max_time = d;
        bq.last_wr_start_finish = bq.wr_start_at_switch_to_srt;
    }

    /// `bfq_bfqq_end_wr`.
    pub(super) fn bfqq_end_wr(&mut self, q: QueueId) {
        let (jiffies, rt) = (self.jiffies, self.wr_rt_max_time());
        if self.queues[q].wr_cur_max_time != rt {
            self.queues[q].soft_rt_next_start = jiffies;
        }
        if self.queues[q].busy {
            self.wr_busy_queues -= 1;
        }
        self.set_wr_coeff(q, 1);
        let bq = &mut self.queues[q];
        bq.wr_cur_max_time = 0;
        bq.last_wr_start_finish = jiffies;
        self.wf.ents[q].prio_changed = true;
    }

    /// `bfq_end_wr`: `low_latency` switched off.
    pub(super) fn end_wr_all(&mut self) {
        for q in 0..self.queues.len() {
            // The kernel walks the active and idle lists and the async queues; a
            // queue on none of them cannot be raised in a way that matters, but ending
            // it there too is harmless only if it is raised.
            if self.wf.ents[q].wr_coeff > 1 || self.wf.ents[q].on_st_or_in_serv {
                self.bfqq_end_wr(q);
            }
        }
    }

    /// `bfq_bfqq_idle_for_long_time`.
    pub(super) fn idle_for_long_time(&self, q: QueueId) -> bool {
        self.queues[q].dispatched == 0
            && self.before_jiffies(
                self.queues[q]
                    .budget_timeout
                    .wrapping_add(self.wr_min_idle_time()),
            )
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`.
    pub(super) fn update_wr_on_rq_arrival(
        &mut self,
        q: QueueId,
        old_wr_coeff: u32,
        wr_or_deserves_wr: bool,
        interactive: bool,
        in_burst: bool,
        soft_rt: bool,
    ) {
        let rt = self.wr_rt_max_time();
        if old_wr_coeff == 1 && wr_or_deserves_wr {
            if interactive {
                self.queues[q].service_from_wr = 0;
                self.set_wr_coeff(q, BFQ_WR_COEFF);
                self.queues[q].wr_cur_max_time = self.wr_duration();
            } else {
                self.queues[q].wr_start_at_switch_to_srt = self.smallest_from_now();
                self.set_wr_coeff(q, BFQ_WR_COEFF * BFQ_SOFTRT_WEIGHT_FACTOR);
                self.queues[q].wr_cur_max_time = rt;
            }
            let cap = 2 * self.min_budget();
            let e = &mut self.wf.ents[q];
            e.budget = e.budget.min(cap);
        } else if old_wr_coeff > 1 {
            if interactive {
                self.set_wr_coeff(q, BFQ_WR_COEFF);
                self.queues[q].wr_cur_max_time = self.wr_duration();
            } else if in_burst {
                self.set_wr_coeff(q, 1);
            } else if soft_rt {
                if self.queues[q].wr_cur_max_time != rt {
                    let bq = &mut self.queues[q];
                    bq.wr_start_at_switch_to_srt = bq.last_wr_start_finish;
                    bq.wr_cur_max_time = rt;
                    self.set_wr_coeff(q, BFQ_WR_COEFF * BFQ_SOFTRT_WEIGHT_FACTOR);
                }
                self.queues[q].last_wr_start_finish = self.jiffies;
            }
        }
    }

    /// `bfq_update_wr_data`, for the in-service queue after a dispatch.
    pub(super) fn update_wr_data(&mut self, q: QueueId) {
        let rt = self.wr_rt_max_time();
        if self.wf.ents[q].wr_coeff > 1 {
            let bq = &self.queues[q];
            if bq.in_large_burst {
                self.bfqq_end_wr(q);
            } else if self.before_jiffies(bq.last_wr_start_finish.wrapping_add(bq.wr_cur_max_time))
            {
                if bq.wr_cur_max_time != rt
                    || self.before_jiffies(
                        bq.wr_start_at_switch_to_srt
                            .wrapping_add(self.wr_duration()),
                    )
                {
                    self.bfqq_end_wr(q);
                } else {
                    self.switch_back_to_interactive_wr(q);
                    self.wf.ents[q].prio_changed = true;
                }
            }
            if self.wf.ents[q].wr_coeff > 1
                && self.queues[q].wr_cur_max_time != rt
                && self.queues[q].service_from_wr > MAX_SERVICE_FROM_WR
            {
                self.bfqq_end_wr(q);
            }
        }
        let e = &self.wf.ents[q];
        if (e.weight > e.orig_weight) != (e.wr_coeff > 1) {
            self.wf.update_weight_prio(q, false);
        }
    }

    /// `bfq_bfqq_softrt_next_start`.
    pub(super) fn softrt_next_start(&self, q: QueueId) -> u64 {
        let bq = &self.queues[q];
        let by_rate = bq.last_idle_bklogged.wrapping_add(
            self.hz as u64 * bq.service_from_backlogged.max(0) as u64 / BFQ_WR_MAX_SOFTRT_RATE,
        );
        // nsecs_to_jiffies(slice_idle) + 4
        let by_idle = self
            .jiffies
            .wrapping_add(self.slice_idle * self.hz as u64 / 1_000_000_000 + 4);
        bq.soft_rt_next_start.max(by_rate).max(by_idle)
    }

    /// `bfq_handle_burst`: bursts are detected per parent group
    /// (`burst_parent_entity`).
    pub(super) fn handle_burst(&mut self, q: QueueId) {
        let bq = &self.queues[q];
        if bq.in_burst_list
            || bq.in_large_burst
            || !self.before_jiffies(bq.split_time.wrapping_add(self.msecs_to_jiffies(10)))
        {
            return;
        }
        let interval = self.msecs_to_jiffies(180);
        let parent = self.wf.group_of(q);
        if self.before_jiffies(self.last_ins_in_burst.wrapping_add(interval))
            || parent != self.burst_parent
        {
            self.large_burst = false;
            // bfq_reset_burst_list
            for b in std::mem::take(&mut self.burst_list) {
                self.queues[b].in_burst_list = false;
            }
            if self.tot_busy_queues() == 0 {
                self.burst_list.push(q);
                self.queues[q].in_burst_list = true;
                self.burst_size = 1;
            } else {
                self.burst_size = 0;
            }
            self.burst_parent = parent;
        } else if self.large_burst {
            self.queues[q].in_large_burst = true;
        } else {
            // bfq_add_to_burst
            self.burst_size += 1;
            if self.burst_size == BFQ_LARGE_BURST_THRESH {
                self.large_burst = true;
                for b in std::mem::take(&mut self.burst_list) {
                    self.queues[b].in_burst_list = false;
                    self.queues[b].in_large_burst = true;
                }
                self.queues[q].in_large_burst = true;
            } else {
                self.burst_list.push(q);
                self.queues[q].in_burst_list = true;
            }
        }
        self.last_ins_in_burst = self.jiffies;
    }

    /// The raising part of `bfq_bfqq_handle_idle_busy_switch`, before the queue is
    /// added to the busy ones.
    pub(super) fn wr_on_idle_busy_switch(&mut self, q: QueueId, old_wr_coeff: u32, a: Arrival) {
        let Arrival {
            idle_for_long_time,
            soft_rt,
            in_burst,
            interactive,
            may_raise,
        } = a;
        let bq = &self.queues[q];
        if !bq.just_created
            && idle_for_long_time
            && self.before_jiffies(bq.budget_timeout.wrapping_add(self.msecs_to_jiffies(10000)))
        {
            if bq.in_burst_list {
                self.burst_list.retain(|&x| x != q);
            }
            self.queues[q].in_burst_list = false;
            self.queues[q].in_large_burst = false;
        }
        self.queues[q].just_created = false;
        if self.low_latency {
            let min_idle = self.wr_min_idle_time();
            // time_is_after_jiffies(split_time): wraparound fix.
            if (self.queues[q].split_time.wrapping_sub(self.jiffies) as i64) > 0 {
                self.queues[q].split_time = self.jiffies.wrapping_sub(min_idle + 1);
            }
            if self.before_jiffies(self.queues[q].split_time.wrapping_add(min_idle)) {
                let wr_or_deserves_wr = self.wf.ents[q].wr_coeff > 1
                    || (self.queues[q].sync && may_raise && (interactive || soft_rt));
                self.update_wr_on_rq_arrival(
                    q,
                    old_wr_coeff,
                    wr_or_deserves_wr,
                    interactive,
                    in_burst,
                    soft_rt,
                );
                if old_wr_coeff != self.wf.ents[q].wr_coeff {
                    self.wf.ents[q].prio_changed = true;
                }
            }
        }
        let j = self.jiffies;
        let bq = &mut self.queues[q];
        bq.last_idle_bklogged = j;
        bq.service_from_backlogged = 0;
        bq.softrt_update = false;
    }
}
