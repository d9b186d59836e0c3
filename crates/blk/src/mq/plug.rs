//! Per-task plugging (`struct blk_plug`, `blk_start_plug` / `blk_finish_plug`,
//! `blk_add_rq_to_plug`, `blk_attempt_plug_merge`, `blk_mq_flush_plug_list`).
//!
//! The simulator is single threaded and a task submits its batch without
//! interruption, so at most one plug is active at a time: the [`Queue`] holds it.
//! Requests collected in the plug are invisible to the elevator until the plug is
//! flushed; bios merge into the newest plugged request only (one attempt).

use super::{Driver, Queue, QueueRqStatus};
use crate::merge::{attempt_bio_merge, BioMerge};
use crate::request::{Bio, BioId, RqId};
use crate::types::Ns;

/// `BLK_MAX_REQUEST_COUNT`: a plug holding this many requests is flushed before
/// another is added (16 before v5.16).
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// `BLK_PLUG_FLUSH_SIZE`: a plug whose newest request is at least this large (bytes)
/// is flushed before another is added, when merging is enabled.
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;

/// The active plug's state.
#[derive(Debug, Default)]
pub(super) struct Plug {
    /// A task has started a plug and not finished it.
    pub active: bool,
    /// Plugged requests in submission order (`plug->mq_list`).
    pub list: Vec<RqId>,
}

impl Queue {
    /// `blk_start_plug`: the submitting task starts a batch. Requests it allocates
    /// are held back until [`Queue::finish_plug`] (or an auto-flush).
    pub fn start_plug(&mut self) {
        self.plug.active = true;
    }

    /// `blk_finish_plug`: the batch ends; plugged requests go to the elevator (or,
    /// without one, straight to `drv` when given).
    pub fn finish_plug(&mut self, now: Ns, drv: Option<&mut dyn Driver>) {
        self.flush_plug(now, false, drv);
        self.plug.active = false;
    }

    /// Requests currently held in the plug.
    pub fn plugged(&self) -> usize {
        self.plug.list.len()
    }

    /// `blk_add_rq_to_plug`: flush first when the plug is full or its newest request
    /// is large, then append.
    pub(super) fn add_to_plug(&mut self, now: Ns, id: RqId) {
        if let Some(&last) = self.plug.list.last() {
            let big = self.merge.limits.nomerges < 2
                && self.rqs.get(last).nr_sectors as u64 * 512 >= BLK_PLUG_FLUSH_SIZE;
            if self.plug.list.len() >= BLK_MAX_REQUEST_COUNT || big {
                self.flush_plug(now, false, None);
            }
        }
        self.plug.list.push(id);
    }

    /// `blk_attempt_plug_merge`: one attempt, against the newest plugged request.
    pub(super) fn plug_merge(&mut self, now: Ns, bio: &Bio, bio_id: BioId) -> bool {
        let Some(&last) = self.plug.list.last() else {
            return false;
        };
        let (mut ctx, _) = self.ctx(now, 0);
        attempt_bio_merge(&mut ctx, last, bio, bio_id) == BioMerge::Ok
    }

    /// `blk_mq_flush_plug_list`. Without an elevator, not from the scheduler and
    /// with a driver at hand, requests are issued directly until the driver refuses
    /// one (`blk_mq_issue_direct`), which goes to the tail of `hctx->dispatch`; the
    /// rest, and everything when an elevator is attached, is inserted in one batch
    /// (`insert_requests`) and the queue run.
    pub(super) fn flush_plug(
        &mut self,
        now: Ns,
        from_schedule: bool,
        drv: Option<&mut dyn Driver>,
    ) {
        if self.plug.list.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut self.plug.list);
        let mut first = 0;
        if let (false, false, Some(drv)) = (self.has_elevator, from_schedule, drv) {
            let n = list.len();
            while first < n {
                let id = list[first];
                let hctx = self.hctx_of(id);
                first += 1;
                if !self.get_driver_tag(id) {
                    self.hctxs[hctx as usize].dispatch.push_back(id);
                    self.run_async(now, hctx);
                    break;
                }
                self.merge.forget(id);
                if self.queue_rq(now, id, drv, first == n) != QueueRqStatus::Ok {
                    self.update_dispatch_busy(hctx, true);
                    self.hctxs[hctx as usize].dispatch.push_back(id);
                    self.run_async(now, hctx);
                    break;
                }
                self.update_dispatch_busy(hctx, false);
            }
        }
        // blk_mq_dispatch_list: one insertion and one run per hctx (the plug of one
        // task normally holds requests of its CPU's hctx only).
        while first < list.len() {
            let hctx = self.hctx_of(list[first]);
            let n = list[first..]
                .iter()
                .take_while(|&&id| self.rqs.get(id).hctx == hctx)
                .count();
            self.work.insert_calls += 1;
            self.work.inserts += n as u64;
            let (mut ctx, e) = self.ctx(now, hctx);
            e.insert_requests(&mut ctx, &list[first..first + n], false);
            first += n;
            self.free_merged(now);
            self.run_async(now, hctx);
        }
        list.clear();
        // Keep the allocation unless an auto-flush refilled the plug meanwhile.
        if self.plug.list.is_empty() {
            self.plug.list = list;
        }
    }
}
