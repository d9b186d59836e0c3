//! The discrete-event engine: a virtual nanosecond clock and a queue of events.
//!
//! Events at the same instant leave in the order they were scheduled (a sequence number
//! breaks ties), so a run depends only on its inputs and seed, never on hashing,
//! addresses or thread timing.
//!
//! Besides the ordinary events, the queue keeps *slot* events: at most one per slot
//! number, a new one replacing the pending one ([`EventQueue::push_slot`]). The host
//! model's CPUs use one slot each: a CPU's next event (its item's end) is rescheduled
//! far more often than it fires, and a replaced event would only have been skipped
//! when it came due. Slot events sort among the others by the same (time,
//! scheduling order) key.

use blk::timeline::Timeline;
use blk::Ns;

/// A priority queue of events ordered by (time, scheduling order).
pub struct EventQueue<E> {
    due: Timeline<E>,
    /// Slot events: ((time, order), slot, event), one per slot, unsorted (few).
    slots: Vec<((Ns, u64), u32, E)>,
    now: Ns,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            due: Timeline::new(),
            slots: Vec::new(),
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

    /// Schedule `ev` at `at` as slot `slot`'s event, replacing the one pending
    /// there (if any); a time in the past is moved to now.
    pub fn push_slot(&mut self, at: Ns, slot: u32, ev: E) {
        let key = (at.max(self.now), self.due.take_order());
        match self.slots.iter_mut().find(|e| e.1 == slot) {
            Some(e) => *e = (key, slot, ev),
            None => self.slots.push((key, slot, ev)),
        }
    }

    /// The next event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        if let Some(i) = self.first_slot() {
            let key = self.slots[i].0;
            if self.due.next_order().is_none_or(|q| key < q) {
                let ((at, _), _, ev) = self.slots.swap_remove(i);
                self.now = at;
                return Some((at, ev));
            }
        }
        let (at, ev) = self.due.pop()?;
        self.now = at;
        Some((at, ev))
    }

    /// Index of the earliest slot event.
    fn first_slot(&self) -> Option<usize> {
        // Keys are unique (each has its own scheduling order): no ties.
        (0..self.slots.len()).min_by_key(|&i| self.slots[i].0)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.due.len() + self.slots.len()
    }

    /// No pending events.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty() && self.slots.is_empty()
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
    fn slot_events_replace_and_sort_among_the_others() {
        let mut q = EventQueue::new();
        q.push(Ns(5), 'a');
        q.push_slot(Ns(5), 0, 'x'); // replaced below: never leaves
        q.push_slot(Ns(3), 1, 'b');
        q.push(Ns(5), 'c');
        q.push_slot(Ns(5), 0, 'd'); // after c: scheduled later at the same time
        q.push_slot(Ns(9), 2, 'e');
        q.push(Ns(7), 'f');
        assert_eq!(q.len(), 6);
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'a', 'c', 'd', 'f', 'e']);
        q.push_slot(Ns(1), 3, 'g');
        assert_eq!(q.pop(), Some((Ns(9), 'g')), "the past is now");
        assert!(q.is_empty());
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
