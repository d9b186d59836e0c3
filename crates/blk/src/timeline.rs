//! Items ordered by time, ties broken by the order they were pushed: the event
//! queue of the simulator and the completion queue of every device model.
//!
//! Most pushes in a simulation come in time order (a device with a fixed latency
//! completes commands in submission order; events scheduled "now" follow each
//! other), so a [`Timeline`] keeps two lanes: a FIFO for items pushed at or after
//! the latest item already in it, and a binary heap for the rest. Popping takes
//! the earlier head of the two, comparing (time, push order), so the order is
//! exactly that of a single heap keyed the same way — only cheaper when the FIFO
//! takes most of the traffic.

use crate::Ns;
use std::collections::VecDeque;

/// (time, push order) in one integer, so that an ordering is one comparison.
type Key = u128;

#[inline]
fn key(at: Ns, seq: u64) -> Key {
    (u128::from(at.0) << 64) | u128::from(seq)
}

#[inline]
fn time_of(k: Key) -> Ns {
    Ns((k >> 64) as u64)
}

/// A 4-ary min-heap of (key, item): shallower than a binary heap, and the four
/// children of a node are adjacent in memory.
#[derive(Debug, Clone)]
struct QuadHeap<T> {
    v: Vec<(Key, T)>,
}

impl<T> QuadHeap<T> {
    fn with_capacity(n: usize) -> Self {
        QuadHeap {
            v: Vec::with_capacity(n),
        }
    }

    #[inline]
    fn peek_key(&self) -> Option<Key> {
        self.v.first().map(|e| e.0)
    }

    #[inline]
    fn push(&mut self, k: Key, item: T) {
        self.v.push((k, item));
        let mut i = self.v.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.v[parent].0 <= k {
                break;
            }
            self.v.swap(i, parent);
            i = parent;
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(Key, T)> {
        if self.v.is_empty() {
            return None;
        }
        let top = self.v.swap_remove(0);
        let n = self.v.len();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let last = (first + 4).min(n);
            // Written to select without branching: which child is smallest is
            // unpredictable, and mispredictions dominate a small heap's cost.
            let mut min = first;
            let mut min_key = self.v[first].0;
            for c in first + 1..last {
                let k = self.v[c].0;
                let less = k < min_key;
                min = if less { c } else { min };
                min_key = if less { k } else { min_key };
            }
            if self.v[i].0 <= min_key {
                break;
            }
            self.v.swap(i, min);
            i = min;
        }
        Some(top)
    }

    fn len(&self) -> usize {
        self.v.len()
    }
}

/// A priority queue of items by (time, push order); see the module docs.
#[derive(Debug, Clone)]
pub struct Timeline<T> {
    fifo: VecDeque<(Key, T)>,
    heap: QuadHeap<T>,
    seq: u64,
}

impl<T> Default for Timeline<T> {
    fn default() -> Self {
        Timeline {
            fifo: VecDeque::new(),
            heap: QuadHeap::with_capacity(0),
            seq: 0,
        }
    }
}

impl<T> Timeline<T> {
    /// An empty timeline.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty timeline with room for `n` items in each lane.
    pub fn with_capacity(n: usize) -> Self {
        Timeline {
            fifo: VecDeque::with_capacity(n),
            heap: QuadHeap::with_capacity(n),
            seq: 0,
        }
    }

    /// `item` is due at `at`.
    #[inline]
    pub fn push(&mut self, at: Ns, item: T) {
        self.seq += 1;
        let k = key(at, self.seq);
        // A later sequence number at an equal or later time sorts after every
        // item in the FIFO, so the FIFO stays sorted.
        if self.fifo.back().is_none_or(|b| b.0 <= k) {
            self.fifo.push_back((k, item));
        } else {
            self.heap.push(k, item);
        }
    }

    /// The earliest key, and whether the FIFO holds it.
    #[inline]
    fn head(&self) -> Option<(Key, bool)> {
        match (self.fifo.front().map(|e| e.0), self.heap.peek_key()) {
            (None, None) => None,
            (Some(f), None) => Some((f, true)),
            (None, Some(h)) => Some((h, false)),
            (Some(f), Some(h)) => Some(if f < h { (f, true) } else { (h, false) }),
        }
    }

    /// The earliest item's (time, push order), as [`Timeline::take_order`] hands
    /// them out: for a caller that keeps some items outside and merges them in.
    #[inline]
    pub fn next_order(&self) -> Option<(Ns, u64)> {
        self.head().map(|(k, _)| (time_of(k), k as u64))
    }

    /// A push order for an item kept outside the timeline (what a push now would
    /// give it), so that it sorts against the items inside as if it were pushed.
    #[inline]
    pub fn take_order(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The earliest item's time.
    #[inline]
    pub fn next(&self) -> Option<Ns> {
        self.head().map(|(k, _)| time_of(k))
    }

    /// Removes and returns the earliest item with its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, T)> {
        let (_, in_fifo) = self.head()?;
        let (k, item) = if in_fifo {
            self.fifo.pop_front()?
        } else {
            self.heap.pop()?
        };
        Some((time_of(k), item))
    }

    /// Removes and returns the earliest item if it is due by `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Ns) -> Option<T> {
        let (k, _) = self.head()?;
        if time_of(k) > now {
            return None;
        }
        self.pop().map(|(_, x)| x)
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    /// No items.
    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty() && self.heap.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_leave_in_push_order_across_lanes() {
        let mut t = Timeline::new();
        t.push(Ns(5), 'a'); // fifo
        t.push(Ns(9), 'b'); // fifo
        t.push(Ns(5), 'c'); // heap: before b, after a
        t.push(Ns(9), 'd'); // fifo
        t.push(Ns(1), 'e'); // heap
        let order: Vec<char> = std::iter::from_fn(|| t.pop().map(|(_, x)| x)).collect();
        assert_eq!(order, vec!['e', 'a', 'c', 'b', 'd']);
    }

    proptest! {
        /// Same order as a plain stable sort by time (push order for ties),
        /// with pops interleaved among the pushes.
        #[test]
        fn order_is_time_then_push_order(ops in proptest::collection::vec((0u64..50, any::<bool>()), 0..200)) {
            let mut t = Timeline::new();
            let mut model: Vec<(u64, usize)> = Vec::new();
            for (i, &(at, pop)) in ops.iter().enumerate() {
                if pop {
                    let want = model.iter().enumerate().min_by_key(|(_, e)| **e).map(|(k, _)| k);
                    let want = want.map(|k| model.remove(k));
                    prop_assert_eq!(t.pop().map(|(a, x)| (a.0, x)), want);
                } else {
                    t.push(Ns(at), i);
                    model.push((at, i));
                }
                prop_assert_eq!(t.len(), model.len());
            }
        }
    }
}
