//! Peak-rate estimation and the parameters derived from it
//! (`bfq_update_peak_rate`, `bfq_update_rate_reset`, `bfq_reset_rate_computation`,
//! `update_thr_responsiveness_params`, the late-completion check of
//! `bfq_completed_request`).
//!
//! BFQ watches the dispatches. An observation interval starts at a dispatch and
//! collects the sectors dispatched, the number of samples and how many of them look
//! sequential (something in flight, or the last completion less than `BFQ_MIN_TT`
//! ago, and not a seek from the last dispatched position). The interval is closed
//! after 1 s, when the device was idle for more than 100 ms, or when a completion
//! shows a very slow device. A closed interval with at least 32 samples over at
//! least 300 ms gives a rate (sectors/µs, `<< 16`) that is blended into `peak_rate`
//! by a low-pass filter whose weight grows with how sequential and how long the
//! interval was; a mostly random interval is only taken if it is faster than the
//! estimate. A new estimate re-derives `bfq_max_budget` (unless the user set
//! `max_budget`); the interactive weight-raising duration ([`Bfq::wr_duration`])
//! divides by `peak_rate` each time it is read.

use super::{Bfq, BFQ_MIN_TT, BFQ_RATE_SHIFT};
use crate::elevator::ElvCtx;
use crate::request::RqId;
use crate::types::Ns;

/// `BFQ_RATE_MIN_SAMPLES`.
pub const BFQ_RATE_MIN_SAMPLES: u32 = 32;
/// `BFQ_RATE_MIN_INTERVAL` (ns).
pub const BFQ_RATE_MIN_INTERVAL: u64 = 300 * Ns::MS;
/// `BFQ_RATE_REF_INTERVAL` (ns).
pub const BFQ_RATE_REF_INTERVAL: u64 = 1_000_000_000;

/// The sampling state of the current observation interval (fields of `bfq_data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSampling {
    /// `peak_rate_samples`: 0 means "start a new interval at the next dispatch".
    pub samples: u32,
    /// `sequential_samples`.
    pub sequential: u32,
    /// `tot_sectors_dispatched`.
    pub tot_sectors: u64,
    /// `last_rq_max_size` (sectors; reset every 32 samples).
    pub last_rq_max_size: u32,
    /// `first_dispatch` (ns).
    pub first_dispatch: u64,
    /// `last_dispatch` (ns).
    pub last_dispatch: u64,
    /// `delta_from_first` (ns).
    pub delta_from_first: u64,
}

impl Bfq {
    /// The estimated peak rate, `(sectors/µs) << BFQ_RATE_SHIFT`.
    pub fn peak_rate(&self) -> u32 {
        self.peak_rate
    }

    /// The state of the current observation interval.
    pub fn rate_sampling(&self) -> RateSampling {
        self.rate
    }

    /// `bfq_reset_rate_computation`: start a new interval at `rq`'s dispatch, or,
    /// without a request, make the next dispatch start one.
    fn reset_rate_computation(&mut self, rq: Option<(u32, u64)>) {
        match rq {
            Some((sectors, now)) => {
                self.rate = RateSampling {
                    samples: 1,
                    sequential: 0,
                    tot_sectors: sectors as u64,
                    last_rq_max_size: sectors,
                    first_dispatch: now,
                    last_dispatch: now,
                    delta_from_first: self.rate.delta_from_first,
                };
            }
            None => self.rate.samples = 0,
        }
    }

    /// `bfq_update_rate_reset`: close the interval, fold its rate into `peak_rate`
    /// if it qualifies, and start over (at `rq`, if given).
    fn update_rate_reset(&mut self, rq: Option<(u32, u64)>) {
        let r = &mut self.rate;
        if r.samples >= BFQ_RATE_MIN_SAMPLES && r.delta_from_first >= BFQ_RATE_MIN_INTERVAL {
            // Extend the interval to the last completion (u64 arithmetic, as the
            // kernel's: a completion before the interval's start wraps).
            r.delta_from_first = r
                .delta_from_first
                .max(self.last_completion.0.wrapping_sub(r.first_dispatch));
            let delta_us = r.delta_from_first / 1000;
            let rate = ((r.tot_sectors << BFQ_RATE_SHIFT) / delta_us.max(1)) as u32;
            let mostly_random = r.sequential < (3 * r.samples) >> 2;
            if !((mostly_random && rate <= self.peak_rate) || rate > 20 << BFQ_RATE_SHIFT) {
                let weight = (9 * r.sequential) / r.samples;
                // u64 multiplication wraps in the kernel too (a wrapped
                // delta_from_first makes it overflow).
                let weight = ((weight as u64).wrapping_mul(r.delta_from_first)
                    / BFQ_RATE_REF_INTERVAL)
                    .min(8);
                let divisor = 10 - weight as u32;
                self.peak_rate = self.peak_rate * (divisor - 1) / divisor + rate / divisor;
                self.peak_rate = self.peak_rate.max(1);
                // update_thr_responsiveness_params
                if self.bfq_user_max_budget == 0 {
                    self.bfq_max_budget = self.calc_max_budget();
                }
            }
        }
        self.reset_rate_computation(rq);
    }

    /// `bfq_update_peak_rate`, at every dispatch from a BFQ queue (before the
    /// request leaves the queue and before it is counted in flight). Also keeps
    /// `last_position` and `in_serv_last_pos`.
    pub(super) fn update_peak_rate(&mut self, ctx: &ElvCtx, rq: RqId, q: super::QueueId) {
        let now = self.now.0;
        let r = ctx.rqs.get(rq);
        let (sector, sectors, end) = (r.sector.0, r.nr_sectors, r.end().0);
        let this = Some((sectors, now));
        if self.rate.samples == 0 {
            self.reset_rate_computation(this);
        } else if now.wrapping_sub(self.rate.last_dispatch) > 100 * Ns::MS
            && self.tot_rq_in_driver == 0
        {
            self.update_rate_reset(this);
        } else {
            self.rate.samples += 1;
            let recent =
                self.tot_rq_in_driver > 0 || now.wrapping_sub(self.last_completion.0) < BFQ_MIN_TT;
            if recent && !self.rq_seeky(self.last_position, sector, sectors) {
                self.rate.sequential += 1;
            }
            self.rate.tot_sectors += sectors as u64;
            self.rate.last_rq_max_size = if !self.rate.samples.is_multiple_of(32) {
                self.rate.last_rq_max_size.max(sectors)
            } else {
                sectors
            };
            self.rate.delta_from_first = now.wrapping_sub(self.rate.first_dispatch);
            if self.rate.delta_from_first >= BFQ_RATE_REF_INTERVAL {
                self.update_rate_reset(this);
            }
        }
        self.last_position = end;
        if Some(q) == self.in_service_queue {
            self.in_serv_last_pos = end;
        }
        self.rate.last_dispatch = now;
    }

    /// The peak-rate part of `bfq_completed_request`, before `last_completion`
    /// moves to now: a completion more than `BFQ_MIN_TT` after the previous one
    /// whose implied rate (largest recent request over the gap) is below 2⁻¹⁰
    /// sectors/µs closes the interval without starting a new one.
    pub(super) fn peak_rate_on_completion(&mut self) {
        let delta_us = (self.now.0.wrapping_sub(self.last_completion.0) / 1000) as u32;
        if delta_us > (BFQ_MIN_TT / 1000) as u32
            && (self.rate.last_rq_max_size << BFQ_RATE_SHIFT) / delta_us
                < 1 << (BFQ_RATE_SHIFT - 10)
        {
            self.update_rate_reset(None);
        }
    }
}
