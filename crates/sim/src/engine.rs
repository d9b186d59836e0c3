//! The discrete-event engine: a virtual nanosecond clock and a queue of events.
//!
//! Events at the same instant leave in the order they were scheduled (a sequence number
//! breaks ties), so a run depends only on its inputs and seed, never on hashing,
//! addresses or thread timing.

use blk::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Ns,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that the max-heap pops the earliest (time, sequence) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// A priority queue of events ordered by (time, scheduling order).
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Ns,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: Ns::ZERO,
        }
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The time of the last event popped.
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule `ev` at `at`; a time in the past is moved to now, so the clock never
    /// runs backwards.
    pub fn push(&mut self, at: Ns, ev: E) {
        let at = at.max(self.now);
        self.seq += 1;
        self.heap.push(Entry {
            at,
            seq: self.seq,
            ev,
        });
    }

    /// The next event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        let e = self.heap.pop()?;
        self.now = e.at;
        Some((e.at, e.ev))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No pending events.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_by_scheduling_order() {
        let mut q = EventQueue::new();
        q.push(Ns(5), 'b');
        q.push(Ns(1), 'a');
        q.push(Ns(5), 'c');
        q.push(Ns(5), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
        assert_eq!(q.now(), Ns(5));
    }

    #[test]
    fn past_events_run_now() {
        let mut q = EventQueue::new();
        q.push(Ns(10), 1);
        q.pop();
        q.push(Ns(3), 2);
        assert_eq!(q.pop(), Some((Ns(10), 2)));
    }
}
