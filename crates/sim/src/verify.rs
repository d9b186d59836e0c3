//! The blocks a verifying job has written and will read back, as fio keeps
//! them (iolog.c `log_io_piece`, verify.c `get_next_verify`).
//!
//! fio logs each write when it is issued and reads the blocks back later,
//! either after the write phase (`do_verify`) or every `verify_backlog`
//! blocks (`check_get_verify`). The simulator has no data, so nothing is
//! compared: only the reads, their order and their time are simulated, and
//! `verify_fatal` / `verify_dump` can never trigger.
//!
//! Two orders, as in fio: without a risk of overlapping writes the log is a
//! list in the order the writes were issued; with one (`norandommap`, an
//! `rw` suffix, `io_size` larger than `size`: fio's
//! `fio_offset_overlap_risk`) it is sorted by offset, and a write replaces
//! the logged blocks it overlaps. Either way a block is read back only once
//! its write has completed.

use std::collections::{BTreeMap, VecDeque};

/// One logged write.
#[derive(Clone, Copy, Debug)]
struct Piece {
    offset: u64,
    len: u32,
    /// The I/O unit writing it, while the write is in flight.
    writer: Option<u32>,
}

/// The verification log of one job clone.
#[derive(Debug)]
pub struct VerifyLog {
    sorted: bool,
    /// In issue order (unsorted log); `head` is the sequence number of the
    /// front entry.
    list: VecDeque<Piece>,
    head: u64,
    /// By offset (sorted log).
    tree: BTreeMap<u64, Piece>,
    /// Per I/O unit, the key of the piece it is writing: a sequence number
    /// (list) or an offset (tree).
    writing: Vec<Option<u64>>,
}

impl VerifyLog {
    /// An empty log for a job with `units` I/O units; `sorted` as fio's
    /// `fio_offset_overlap_risk`.
    pub fn new(sorted: bool, units: usize) -> VerifyLog {
        VerifyLog {
            sorted,
            list: VecDeque::new(),
            head: 0,
            tree: BTreeMap::new(),
            writing: vec![None; units],
        }
    }

    /// Blocks logged and not read back yet (fio's `io_hist_len`).
    pub fn len(&self) -> usize {
        if self.sorted {
            self.tree.len()
        } else {
            self.list.len()
        }
    }

    /// Nothing left to read back.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A write of `len` bytes at `offset` was issued by I/O unit `unit`
    /// (`None`: a write already complete, as `verify_only`'s dry run logs
    /// them).
    pub fn log(&mut self, unit: Option<u32>, offset: u64, len: u32) {
        let piece = Piece {
            offset,
            len,
            writer: unit,
        };
        let key = if self.sorted {
            self.drop_overlaps(offset, len);
            self.tree.insert(offset, piece);
            offset
        } else {
            self.list.push_back(piece);
            self.head + self.list.len() as u64 - 1
        };
        if let Some(u) = unit {
            self.writing[u as usize] = Some(key);
        }
    }

    /// fio's rb-tree insert: an older piece that overlaps the new one is
    /// dropped (its blocks are overwritten).
    fn drop_overlaps(&mut self, offset: u64, len: u32) {
        let end = offset + u64::from(len);
        let before = self
            .tree
            .range(..offset)
            .next_back()
            .filter(|(_, p)| p.offset + u64::from(p.len) > offset)
            .map(|(k, _)| *k);
        let mut gone: Vec<u64> = before.into_iter().collect();
        gone.extend(self.tree.range(offset..end).map(|(k, _)| *k));
        for k in gone {
            self.tree.remove(&k);
        }
    }

    /// The write of I/O unit `unit` completed (no-op if it logged nothing
    /// or its piece was overwritten meanwhile).
    pub fn written(&mut self, unit: u32) {
        let Some(key) = self.writing.get_mut(unit as usize).and_then(Option::take) else {
            return;
        };
        let piece = if self.sorted {
            self.tree.get_mut(&key)
        } else {
            key.checked_sub(self.head)
                .and_then(|i| self.list.get_mut(i as usize))
        };
        if let Some(p) = piece.filter(|p| p.writer == Some(unit)) {
            p.writer = None;
        }
    }

    /// The next block to read back, taken off the log: the list's front, or
    /// the lowest offset, once its write has completed (fio's
    /// `get_next_verify`; the list waits for its front, the tree skips
    /// pieces in flight).
    pub fn take_next(&mut self) -> Option<(u64, u32)> {
        let p = if self.sorted {
            let key = self.tree.values().find(|p| p.writer.is_none())?.offset;
            self.tree.remove(&key)?
        } else {
            if self.list.front()?.writer.is_some() {
                return None;
            }
            self.head += 1;
            self.list.pop_front()?
        };
        Some((p.offset, p.len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_reads_back_in_issue_order_once_written() {
        let mut l = VerifyLog::new(false, 4);
        l.log(Some(0), 8192, 4096);
        l.log(Some(1), 0, 4096);
        assert_eq!(l.take_next(), None, "the front write is in flight");
        l.written(1);
        assert_eq!(l.take_next(), None, "still waiting for the front");
        l.written(0);
        assert_eq!(l.take_next(), Some((8192, 4096)));
        assert_eq!(l.take_next(), Some((0, 4096)));
        assert!(l.is_empty());
    }

    #[test]
    fn the_tree_reads_back_by_offset_and_drops_overwritten_blocks() {
        let mut l = VerifyLog::new(true, 4);
        l.log(None, 8192, 4096);
        l.log(None, 0, 8192);
        // Overlaps the second half of [0, 8192): that piece is dropped.
        l.log(Some(2), 4096, 4096);
        assert_eq!(l.len(), 2);
        // The piece in flight is skipped, the next completed one read.
        assert_eq!(l.take_next(), Some((8192, 4096)));
        l.written(2);
        assert_eq!(l.take_next(), Some((4096, 4096)));
        assert_eq!(l.take_next(), None);
    }
}
