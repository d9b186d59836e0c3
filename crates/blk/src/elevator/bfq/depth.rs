//! Tag-depth limits: `bfq_limit_depth`, `bfqq_request_over_limit`,
//! `bfq_depth_updated` / `bfq_update_depths`, and the per-entity `allocated`
//! counts they read (`bfqq_request_allocated`, `bfqq_request_freed`).
//!
//! Linux 6.17 changed what a shallow depth means (commit "lib/sbitmap: convert
//! shallow_depth from one word to the whole sbitmap"): it is now a number of tags
//! of the whole scheduler-tag map, and BFQ's limits are fractions of `nr_requests`
//! (`async_depths`) instead of fractions of one sbitmap word (`word_depths`, scaled
//! by `full_depth_shift`). This follows 6.17/6.18. The block layer here models the
//! scheduler tags as a count: an allocation with shallow depth `d` succeeds while
//! fewer than `d` tags are in use, and a task it holds back does not hold up the
//! tasks asleep behind it. The kernel's sbitmap instead restricts it to a share of
//! the bits of each word (`__map_depth_with_shallow`; for `d = 1`, tag 0), so there
//! a limited process may still get its tag while others hold tags elsewhere. The
//! wake batch follows the minimum shallow depth BFQ declares (1, since a queue over
//! its share is limited to one tag): `min(depth, 1) / 8` clamped to 1..=8, i.e. 1.
//!
//! Sync reads are never limited. Async requests and sync writes get at most 50 % /
//! 75 % of `nr_requests` (18 % / 37 % while some queue is weight-raised). Whatever the
//! kind, a process whose queue, or one of the queue's ancestor groups, already holds
//! its weighted share of the limit in allocated requests gets a depth of 1.

use super::queue::QueueId;
use super::wf2q::{EntityId, ROOT_GROUP};
use super::Bfq;
use crate::types::{Op, ReqFlags};

/// `IOPRIO_BE_NR`: the class-weighting base of `bfqq_request_over_limit`.
const IOPRIO_BE_NR: u64 = 8;

/// `DIV_ROUND_CLOSEST` for non-negative operands.
fn div_round_closest(a: u64, b: u64) -> u64 {
    (a + b / 2) / b
}

impl Bfq {
    /// `bfq_update_depths` (6.17+): the async / sync-write limits for
    /// `nr_requests` scheduler tags, without and with weight-raised queues.
    pub fn update_depths(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests;
        let n = nr_requests;
        self.async_depths = [
            [(n >> 1).max(1), ((n * 3) >> 2).max(1)],
            [((n * 3) >> 4).max(1), ((n * 6) >> 4).max(1)],
        ];
    }

    /// The `async_depths` table: `[raised busy queues?][sync write?]`.
    pub fn async_depths(&self) -> [[u32; 2]; 2] {
        self.async_depths
    }

    /// `bfq_limit_depth` for an allocation of `op`/`flags` by process `pid`: the
    /// shallow depth, or `None` for the full `nr_requests`.
    pub fn limit_depth_of(&self, op: Op, flags: ReqFlags, pid: u32) -> Option<u32> {
        let is_write = matches!(op, Op::Write | Op::Discard);
        let is_sync = matches!(op, Op::Read)
            || flags.any(ReqFlags(
                ReqFlags::SYNC.0 | ReqFlags::FUA.0 | ReqFlags::PREFLUSH.0,
            ));
        let mut limit = if is_sync && !is_write {
            self.nr_requests
        } else {
            self.async_depths[usize::from(self.wr_busy_queues > 0)][usize::from(is_sync)]
        };
        let q = self
            .bics
            .get(&pid)
            .and_then(|b| if is_sync { b.sync_q } else { b.async_q });
        if q.is_some_and(|q| self.request_over_limit(q, limit)) {
            limit = 1;
        }
        (limit < self.nr_requests).then_some(limit)
    }

    /// `bfqq_request_over_limit`: walking down from the top group to `q`, each
    /// level's share of `limit` is its weight over the weight sum of its service
    /// tree (for `q` itself, the trees of its class and the higher ones, each
    /// higher class counting `IOPRIO_BE_NR` times more); over its share if it
    /// already has that many requests allocated. Nothing is over its limit unless
    /// the whole path is active.
    pub fn request_over_limit(&self, q: QueueId, limit: u32) -> bool {
        // The whole path must be active (the root group has no entity).
        let mut g = self.wf.group_of(q);
        if !self.wf.ents[q].on_st_or_in_serv {
            return false;
        }
        while g != ROOT_GROUP {
            if !self.wf.groups[g].entity.on_st_or_in_serv {
                return false;
            }
            g = self.wf.groups[g].parent.unwrap_or(ROOT_GROUP);
        }
        self.share_of(EntityId::Queue(q), u64::from(limit))
            .is_none()
    }

    /// The share of `limit` left to entity `id` once every level above it took its
    /// own (top-down, by recursion up the groups), or `None` when `id` or an
    /// ancestor already holds its share in allocated requests.
    fn share_of(&self, id: EntityId, limit: u64) -> Option<u64> {
        let (e, allocated) = match id {
            EntityId::Queue(q) => (&self.wf.ents[q], self.queues[q].allocated),
            EntityId::Group(g) => (
                &self.wf.groups[g].entity,
                self.group_allocated.get(g).copied().unwrap_or(0),
            ),
        };
        // The parent level decides first.
        let limit = if e.sched_data == ROOT_GROUP {
            limit
        } else {
            self.share_of(EntityId::Group(e.sched_data), limit)?
        };
        let sd = &self.wf.groups[e.sched_data].sd;
        let wsum = match id {
            EntityId::Group(_) => sd.st[e.class].wsum,
            EntityId::Queue(_) => (0..=e.class).fold(0, |w, c| w * IOPRIO_BE_NR + sd.st[c].wsum),
        };
        if wsum == 0 {
            return Some(limit);
        }
        let limit = div_round_closest(limit * u64::from(e.weight), wsum);
        (u64::from(allocated) < limit).then_some(limit)
    }

    /// `bfqq_request_allocated` (`up`) / `bfqq_request_freed`: a request of `q` was
    /// set up or freed; the count is kept for `q` and each of its ancestor groups.
    pub(super) fn count_allocated(&mut self, q: QueueId, up: bool) {
        let step = |n: &mut u32| {
            *n = if up { *n + 1 } else { n.saturating_sub(1) };
        };
        step(&mut self.queues[q].allocated);
        let mut g = self.wf.group_of(q);
        while g != ROOT_GROUP {
            if self.group_allocated.len() <= g {
                self.group_allocated.resize(g + 1, 0);
            }
            step(&mut self.group_allocated[g]);
            g = self.wf.groups[g].parent.unwrap_or(ROOT_GROUP);
        }
    }
}
