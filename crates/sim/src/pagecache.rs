//! The page cache of the simulated block device's inode, for fio's buffered I/O
//! (`direct=0`, fio's default).
//!
//! A buffered `write()` to a block device copies the data into page-cache pages
//! and marks them dirty (`generic_perform_write` → `block_write_begin` /
//! `block_write_end`); nothing reaches the block layer until the pages are written
//! back. On a block device `fsync`/`fdatasync` is `blkdev_fsync`:
//! `file_write_and_wait_range` over the range asked for (all of the device for
//! `fsync(2)`), then `blkdev_issue_flush`. That writes back *every* dirty page of the
//! device, whoever dirtied it, so concurrent fsyncs of several jobs share and wait on
//! each other's writeback.
//!
//! The state kept is what the kernel keeps in the mapping's xarray marks, one set
//! per mark, ordered by page index:
//!
//! | set | kernel mark | meaning |
//! | --- | --- | --- |
//! | `dirty` | `PAGECACHE_TAG_DIRTY` | the page holds data not yet written |
//! | `towrite` | `PAGECACHE_TAG_TOWRITE` | tagged by a `WB_SYNC_ALL` walk (`tag_pages_for_writeback`), not yet written |
//! | `writeback` | `PAGECACHE_TAG_WRITEBACK` | a write of the page is in flight |
//!
//! A page may be dirty and under writeback at once (written again while its
//! previous contents are on the way to the disk: block devices do not require
//! stable pages, so `folio_wait_stable` does not wait).
//!
//! [`SyncWalk`] is one `WB_SYNC_ALL` writeback of a range, as
//! `__filemap_fdatawrite_range` + `filemap_fdatawait_range` do it: tag the dirty
//! pages `TOWRITE`, then walk the tagged pages in index order in batches of
//! [`FOLIO_BATCH`] (`writeback_iter` / `filemap_get_folios_tag`): a page no longer
//! dirty is skipped (someone else wrote it), a page under writeback is waited for
//! and then written again (`folio_prepare_writeback`), any other page has its dirty
//! bit cleared and its write started (`folio_clear_dirty_for_io`,
//! `__folio_start_writeback`, which also drops `TOWRITE`). Then walk the pages under
//! writeback in the range, again in batches, waiting for each
//! (`__filemap_fdatawait_range`). The walk is a pure state machine: the simulator
//! turns its steps into bios and waits.

use std::collections::BTreeSet;

/// Page size, bytes: the unit of the page cache, and of the block device's
/// buffer heads (`set_init_blocksize` picks the largest power of two up to a
/// page that divides the device size: a page on every device we model).
pub const PAGE_SIZE: u64 = 4096;

/// Folios one tagged lookup returns (`PAGEVEC_SIZE`, the size of a
/// `struct folio_batch`).
pub const FOLIO_BATCH: usize = 31;

/// CPU time to copy one page into the page cache in a buffered `write()`, ns, on
/// top of the system call's own cost (`--submit-ns`). It covers finding or
/// allocating the folio, `copy_from_user` of 4 KiB (≈ 0.4 µs at the ≈ 10 GB/s a
/// current x86 core copies cached data at), `block_write_begin`/`block_write_end`
/// and the dirty accounting. An order of magnitude, not a calibration: with the
/// psync default of 1.5 µs per call, a 4 KiB buffered write costs 2.5 µs, i.e.
/// 400k IOPS for one job writing into the cache, the range fio reports for 4 KiB
/// buffered writes that do not hit the dirty limit on current servers.
pub const DEFAULT_PAGE_COPY_NS: u64 = 1_000;

/// The page cache of the device's inode: its pages' marks.
#[derive(Clone, Debug, Default)]
pub struct PageCache {
    dirty: BTreeSet<u64>,
    towrite: BTreeSet<u64>,
    writeback: BTreeSet<u64>,
}

impl PageCache {
    /// An empty cache.
    pub fn new() -> PageCache {
        PageCache::default()
    }

    /// Pages `first..first + n` were written (`block_write_end` → `mark_buffer_dirty`
    /// → `__folio_mark_dirty`): they are dirty, whether or not under writeback.
    pub fn mark_dirty(&mut self, first: u64, n: u64) {
        self.dirty.extend(first..first + n);
    }

    /// Dirty pages (`NR_FILE_DIRTY` of this inode).
    pub fn nr_dirty(&self) -> usize {
        self.dirty.len()
    }

    /// Pages under writeback (`NR_WRITEBACK`).
    pub fn nr_writeback(&self) -> usize {
        self.writeback.len()
    }

    /// Whether page `p` is dirty.
    pub fn is_dirty(&self, p: u64) -> bool {
        self.dirty.contains(&p)
    }

    /// Whether page `p` is under writeback.
    pub fn is_writeback(&self, p: u64) -> bool {
        self.writeback.contains(&p)
    }

    /// Nothing dirty and nothing in flight.
    pub fn is_clean(&self) -> bool {
        self.dirty.is_empty() && self.writeback.is_empty()
    }

    /// `tag_pages_for_writeback`: every dirty page in `range` gets `TOWRITE`.
    fn tag_for_writeback(&mut self, range: (u64, u64)) {
        self.towrite
            .extend(self.dirty.range(range.0..=range.1).copied());
    }

    /// `folio_clear_dirty_for_io` + `__folio_start_writeback`: page `p`'s write
    /// starts; it is clean (until written again) and loses `TOWRITE`.
    fn start_writeback(&mut self, p: u64) {
        self.dirty.remove(&p);
        self.towrite.remove(&p);
        self.writeback.insert(p);
    }

    /// `folio_end_writeback`: page `p`'s write completed.
    pub fn end_writeback(&mut self, p: u64) {
        self.writeback.remove(&p);
    }
}

/// Up to [`FOLIO_BATCH`] pages of `set` from `*index` to `end`, in order
/// (`filemap_get_folios_tag`); `*index` moves past the last one found.
fn lookup(set: &BTreeSet<u64>, index: &mut u64, end: u64) -> Vec<u64> {
    if *index > end {
        return Vec::new();
    }
    let batch: Vec<u64> = set.range(*index..=end).take(FOLIO_BATCH).copied().collect();
    if let Some(&last) = batch.last() {
        *index = last + 1;
    }
    batch
}

/// What a [`SyncWalk`] does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkStep {
    /// Write page `p` (its writeback has started): submit its bio.
    Write(u64),
    /// Sleep until page `p`'s writeback ends, then ask again.
    WaitOn(u64),
    /// The range is written and waited for.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// `__filemap_fdatawrite_range` (`writeback_iter` over `TOWRITE`).
    Write,
    /// `__filemap_fdatawait_range` (over `WRITEBACK`).
    Wait,
}

/// One `WB_SYNC_ALL` write-and-wait of a page range (`file_write_and_wait_range`).
#[derive(Clone, Debug)]
pub struct SyncWalk {
    start: u64,
    end: u64,
    phase: Phase,
    index: u64,
    batch: std::collections::VecDeque<u64>,
}

impl SyncWalk {
    /// Start a write-and-wait of pages `first..=last`: the range's dirty pages are
    /// tagged for writeback now.
    pub fn new(cache: &mut PageCache, first: u64, last: u64) -> SyncWalk {
        cache.tag_for_writeback((first, last));
        SyncWalk {
            start: first,
            end: last,
            phase: Phase::Write,
            index: first,
            batch: Default::default(),
        }
    }

    /// A write-and-wait of the whole device (`fsync(2)`).
    pub fn whole(cache: &mut PageCache) -> SyncWalk {
        SyncWalk::new(cache, 0, u64::MAX)
    }

    /// The walk's next step. After [`WalkStep::WaitOn`], call again once that
    /// page's writeback has ended.
    pub fn next(&mut self, cache: &mut PageCache) -> WalkStep {
        loop {
            if self.batch.is_empty() {
                let set = match self.phase {
                    Phase::Write => &cache.towrite,
                    Phase::Wait => &cache.writeback,
                };
                self.batch = lookup(set, &mut self.index, self.end).into();
                if self.batch.is_empty() {
                    match self.phase {
                        Phase::Write => {
                            self.phase = Phase::Wait;
                            self.index = self.start;
                            continue;
                        }
                        Phase::Wait => return WalkStep::Done,
                    }
                }
            }
            let p = self.batch[0];
            match self.phase {
                Phase::Write => {
                    // folio_prepare_writeback: skip a page someone else has
                    // written meanwhile; wait for a write in flight, then write
                    // the page again.
                    if !cache.is_dirty(p) {
                        self.batch.pop_front();
                        continue;
                    }
                    if cache.is_writeback(p) {
                        return WalkStep::WaitOn(p);
                    }
                    self.batch.pop_front();
                    cache.start_writeback(p);
                    return WalkStep::Write(p);
                }
                Phase::Wait => {
                    if cache.is_writeback(p) {
                        return WalkStep::WaitOn(p);
                    }
                    self.batch.pop_front();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `walk` to its first wait or its end, collecting the pages written.
    fn run(walk: &mut SyncWalk, cache: &mut PageCache) -> (Vec<u64>, WalkStep) {
        let mut written = Vec::new();
        loop {
            match walk.next(cache) {
                WalkStep::Write(p) => written.push(p),
                other => return (written, other),
            }
        }
    }

    #[test]
    fn writes_dirty_pages_in_index_order_then_waits_for_them() {
        let mut c = PageCache::new();
        c.mark_dirty(9, 1);
        c.mark_dirty(2, 2);
        let mut w = SyncWalk::whole(&mut c);
        let (written, step) = run(&mut w, &mut c);
        assert_eq!(written, vec![2, 3, 9]);
        assert_eq!(step, WalkStep::WaitOn(2));
        assert_eq!(c.nr_dirty(), 0);
        assert_eq!(c.nr_writeback(), 3);
        c.end_writeback(2);
        c.end_writeback(9);
        assert_eq!(w.next(&mut c), WalkStep::WaitOn(3));
        c.end_writeback(3);
        assert_eq!(w.next(&mut c), WalkStep::Done);
        assert!(c.is_clean());
    }

    #[test]
    fn second_sync_skips_pages_the_first_wrote_and_waits_for_them() {
        let mut c = PageCache::new();
        c.mark_dirty(0, 4);
        let mut a = SyncWalk::whole(&mut c);
        // A writes pages 0 and 1, then (say) blocks; B starts: 2 and 3 are its.
        assert_eq!(a.next(&mut c), WalkStep::Write(0));
        assert_eq!(a.next(&mut c), WalkStep::Write(1));
        let mut b = SyncWalk::whole(&mut c);
        let (written, step) = run(&mut b, &mut c);
        assert_eq!(written, vec![2, 3]);
        assert_eq!(step, WalkStep::WaitOn(0));
        // A's batch still holds 2 and 3: no longer dirty, skipped.
        assert_eq!(a.next(&mut c), WalkStep::WaitOn(0));
        for p in 0..4 {
            c.end_writeback(p);
        }
        assert_eq!(a.next(&mut c), WalkStep::Done);
        assert_eq!(b.next(&mut c), WalkStep::Done);
    }

    #[test]
    fn redirtied_page_under_writeback_is_waited_for_and_written_again() {
        let mut c = PageCache::new();
        c.mark_dirty(5, 1);
        let mut a = SyncWalk::whole(&mut c);
        assert_eq!(a.next(&mut c), WalkStep::Write(5));
        c.mark_dirty(5, 1); // written again while its write is in flight
        let mut b = SyncWalk::whole(&mut c);
        assert_eq!(b.next(&mut c), WalkStep::WaitOn(5));
        c.end_writeback(5);
        assert_eq!(b.next(&mut c), WalkStep::Write(5));
        // A waits for the second write too (it is under writeback again).
        assert_eq!(a.next(&mut c), WalkStep::WaitOn(5));
        c.end_writeback(5);
        assert_eq!(a.next(&mut c), WalkStep::Done);
        assert_eq!(b.next(&mut c), WalkStep::Done);
    }

    #[test]
    fn pages_dirtied_after_the_walk_started_are_not_its_business() {
        let mut c = PageCache::new();
        c.mark_dirty(10, 1);
        let mut a = SyncWalk::whole(&mut c);
        c.mark_dirty(3, 1); // after tagging: not TOWRITE
        assert_eq!(a.next(&mut c), WalkStep::Write(10));
        assert_eq!(a.next(&mut c), WalkStep::WaitOn(10));
        c.end_writeback(10);
        assert_eq!(a.next(&mut c), WalkStep::Done);
        assert!(c.is_dirty(3));
    }

    #[test]
    fn ranges_and_batches() {
        let mut c = PageCache::new();
        c.mark_dirty(0, 100);
        let mut w = SyncWalk::new(&mut c, 10, 79);
        let (written, step) = run(&mut w, &mut c);
        assert_eq!(written, (10..80).collect::<Vec<_>>());
        assert_eq!(step, WalkStep::WaitOn(10));
        assert_eq!(c.nr_dirty(), 30);
        // The wait pass takes batches of 31: pages 10..41 first.
        for p in 10..41 {
            c.end_writeback(p);
        }
        assert_eq!(w.next(&mut c), WalkStep::WaitOn(41));
    }
}
