//! The discrete-event engine: a virtual nanosecond clock and a queue of events.
//!
//! Events at the same instant leave in the order they were scheduled (a sequence number
//! breaks ties), so a run depends only on its inputs and seed, never on hashing,
//! addresses or thread timing.

use blk::timeline::Timeline;
use blk::Ns;

/// A priority queue of events ordered by (time, scheduling order).
pub struct EventQueue<E> {
    due: Timeline<E>,
    now: Ns,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            due: Timeline::new(),
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
        self.due.push(at.max(self.now), ev);
    }

    /// The next event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        let (at, ev) = self.due.pop()?;
        self.now = at;
        Some((at, ev))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.due.len()
    }

    /// No pending events.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
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
