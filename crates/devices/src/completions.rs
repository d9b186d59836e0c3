//! Finished commands waiting for their completion time: the queue every device model
//! keeps between deciding when a command ends and reporting it in
//! [`crate::Device::advance`].

use blk::timeline::Timeline;
use blk::{Ns, RqId};

/// Commands ordered by completion time; commands due at the same time come out in
/// the order they were pushed. `T` is what a completion carries (by default the
/// request).
#[derive(Clone, Debug)]
pub struct Completions<T: Copy + Ord = RqId> {
    due: Timeline<T>,
}

impl<T: Copy + Ord> Completions<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `n` completions.
    pub fn with_capacity(n: usize) -> Self {
        Completions {
            due: Timeline::with_capacity(n),
        }
    }

    /// `item` completes at `at`.
    pub fn push(&mut self, at: Ns, item: T) {
        self.due.push(at, item);
    }

    /// The earliest completion time, if any.
    pub fn next(&self) -> Option<Ns> {
        self.due.next()
    }

    /// Removes and returns the earliest completion due by `now`.
    pub fn pop_due(&mut self, now: Ns) -> Option<T> {
        self.due.pop_due(now)
    }
}

impl<T: Copy + Ord> Default for Completions<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Commands in flight on a device with a fixed number of slots per hardware queue
/// (an NVMe submission queue, null_blk's `hw_queue_depth`): a command takes a slot
/// of its request's hctx and gives it back when it completes.
#[derive(Clone, Debug)]
pub struct QueueSlots {
    depth: u32,
    used: Vec<u32>,
    inflight: Completions<(RqId, u16)>,
}

impl QueueSlots {
    /// `queues` hardware queues of `depth` slots each.
    pub fn new(queues: u16, depth: u32) -> QueueSlots {
        QueueSlots {
            depth,
            used: vec![0; queues.max(1) as usize],
            inflight: Completions::new(),
        }
    }

    /// Take a slot of hctx `hctx`'s queue, if one is free: returns the queue.
    pub fn take(&mut self, hctx: u16) -> Option<u16> {
        let q = hctx as usize % self.used.len();
        if self.used[q] >= self.depth {
            return None;
        }
        self.used[q] += 1;
        Some(q as u16)
    }

    /// Command `id`, holding a slot of queue `q`, completes at `at`.
    pub fn complete_at(&mut self, at: Ns, id: RqId, q: u16) {
        self.inflight.push(at, (id, q));
    }

    /// The earliest completion time, if any.
    pub fn next(&self) -> Option<Ns> {
        self.inflight.next()
    }

    /// Push the commands due by `now` to `done`, freeing their slots.
    pub fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        while let Some((id, q)) = self.inflight.pop_due(now) {
            self.used[q as usize] -= 1;
            done.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_push_order() {
        let mut c = Completions::new();
        c.push(Ns(20), RqId(1));
        c.push(Ns(10), RqId(9));
        c.push(Ns(20), RqId(0));
        c.push(Ns(10), RqId(3));
        assert_eq!(c.next(), Some(Ns(10)));
        assert_eq!(c.pop_due(Ns(9)), None);
        assert_eq!(c.pop_due(Ns(10)), Some(RqId(9)));
        assert_eq!(c.pop_due(Ns(10)), Some(RqId(3)));
        assert_eq!(c.pop_due(Ns(10)), None);
        assert_eq!(c.pop_due(Ns(30)), Some(RqId(1)));
        assert_eq!(c.pop_due(Ns(30)), Some(RqId(0)));
        assert_eq!(c.next(), None);
    }
}
