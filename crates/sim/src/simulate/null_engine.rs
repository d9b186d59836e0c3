//! fio's null engine (engines/null.c): an I/O is queued, and completes when
//! it is committed; nothing reaches the block layer or the device.

use super::{IoObserver, Simulation};
use crate::job::split_owner;
use blk::Ns;

impl Simulation {
    /// Submit up to `max_ios` I/Os of null-engine job `j` now: each completes
    /// as it is committed (`null_commit` posts every queued I/O as an event),
    /// and the thread reaps them as for any engine.
    pub(super) fn fill_null(
        &mut self,
        j: usize,
        now: Ns,
        max_ios: usize,
        obs: &mut dyn IoObserver,
    ) {
        let mut budget = max_ios;
        while budget > 0 && self.jobs[j].can_submit() {
            let Some(bio) = self.jobs[j].next_bio(now, j) else {
                break;
            };
            budget -= 1;
            let unit = split_owner(bio.owner).1;
            obs.io_submitted(j, bio.op, self.jobs[j].inflight);
            obs.io_issued(j, self.jobs[j].in_flight(unit));
            if let Some(io) = self.complete_unit(j, unit, now, obs) {
                obs.io_completed(j, io, io.issue, now);
            }
        }
    }
}
