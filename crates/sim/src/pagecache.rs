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
//!
//! [`NoSyncWalk`] is one `WB_SYNC_NONE` `do_writepages` call of the flusher
//! (`wb_workfn`): dirty pages from the mapping's `writeback_index` on, up to a
//! chunk, skipping pages under writeback. [`VmConfig`] holds the vm sysctls and the
//! simulated memory; [`VmConfig::limits`] is `domain_dirty_limits`,
//! [`pos_ratio`] the dirty throttling's control line and [`WriteBandwidth`] the
//! flusher's bandwidth estimate (`wb_update_write_bandwidth`).
//!
//! Reads: the cache also holds clean pages (read, or written and written back),
//! each uptodate or still being read (locked), some carrying the readahead marker
//! (`PG_readahead`), on one LRU list bounded by the simulated memory.
//! [`RaState`] is one open file's readahead state (`struct file_ra_state`) with
//! mm/readahead.c's on-demand algorithm: `page_cache_sync_ra` on a miss,
//! `page_cache_async_ra` on a marked page, `force_page_cache_ra` for a file
//! advised `POSIX_FADV_RANDOM`.

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

/// The vm sysctls of buffered writeback and the simulated memory (`--set
/// vm.NAME=VALUE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmConfig {
    /// Simulated memory, MiB (`vm.mem_mb`, not a sysctl; default 8 GiB). All of
    /// it counts as dirtyable (`global_dirtyable_memory`: free plus file pages;
    /// the simulation has nothing else in memory).
    pub mem_mb: u64,
    /// `vm.dirty_ratio`, percent (default 20): writers are throttled towards it.
    pub dirty_ratio: u64,
    /// `vm.dirty_background_ratio`, percent (default 10): the flusher writes in
    /// the background above it.
    pub dirty_background_ratio: u64,
    /// `vm.dirty_expire_centisecs` (default 3000): data dirty longer than this is
    /// written by the periodic flush.
    pub dirty_expire_centisecs: u64,
    /// `vm.dirty_writeback_centisecs` (default 500): the period of the flusher's
    /// wake-ups; 0 disables them.
    pub dirty_writeback_centisecs: u64,
    /// CPU time of copying one page in a buffered write, ns (`vm.page_copy_ns`,
    /// not a sysctl; [`DEFAULT_PAGE_COPY_NS`]).
    pub page_copy_ns: u64,
}

impl Default for VmConfig {
    fn default() -> Self {
        VmConfig {
            mem_mb: 8192,
            dirty_ratio: 20,
            dirty_background_ratio: 10,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            page_copy_ns: DEFAULT_PAGE_COPY_NS,
        }
    }
}

/// Dirty limits in pages (`struct dirty_throttle_control`'s `bg_thresh` and
/// `thresh`, and the free-run ceiling between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyLimits {
    /// Above this many dirty pages the flusher writes in the background.
    pub bg_thresh: u64,
    /// The dirty limit writers are throttled towards.
    pub thresh: u64,
    /// `dirty_freerun_ceiling`: below this (dirty + writeback) writers are not
    /// throttled at all.
    pub freerun: u64,
}

impl VmConfig {
    /// `domain_dirty_limits` for the ratio sysctls: `dirty_background_ratio` and
    /// `dirty_ratio` percent of the dirtyable memory (a background ratio at or
    /// above the dirty ratio is halved, as the kernel does).
    pub fn limits(&self) -> DirtyLimits {
        let available = self.mem_mb * (1 << 20) / PAGE_SIZE;
        let thresh = available * self.dirty_ratio / 100;
        let mut bg_thresh = available * self.dirty_background_ratio / 100;
        if bg_thresh >= thresh {
            bg_thresh = thresh / 2;
        }
        DirtyLimits {
            bg_thresh,
            thresh,
            freerun: (thresh + bg_thresh) / 2,
        }
    }

    /// `dirty_expire_centisecs` in ns.
    pub fn expire_ns(&self) -> u64 {
        self.dirty_expire_centisecs * 10_000_000
    }

    /// `dirty_writeback_centisecs` in ns.
    pub fn interval_ns(&self) -> u64 {
        self.dirty_writeback_centisecs * 10_000_000
    }
}

/// The global control line of dirty throttling (`pos_ratio_polynom`): 1 at the
/// setpoint halfway between the free-run ceiling and the limit, 2 at the ceiling,
/// 0 at the limit, cubic in between.
pub fn pos_ratio(l: &DirtyLimits, dirty: u64) -> f64 {
    let setpoint = (l.freerun + l.thresh) as f64 / 2.0;
    let x = (setpoint - dirty as f64) / ((l.thresh as f64 - setpoint) + 1.0);
    (1.0 + x * x * x).clamp(0.0, 2.0)
}

/// `dirty_poll_interval`: pages a task may dirty before it checks the limits
/// again, when below the free-run ceiling: the square root of the headroom to
/// the limit, as a power of two.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() / 2)
    } else {
        1
    }
}

/// `INIT_BW`: the flusher's initial write bandwidth estimate, 100 MB/s in pages.
pub const INIT_BW_PAGES: u64 = (100 << 20) / PAGE_SIZE;
/// `BANDWIDTH_INTERVAL`: the bandwidth estimate is updated every 200 ms.
pub const BANDWIDTH_INTERVAL_NS: u64 = 200_000_000;

/// The flusher's write bandwidth estimate (`wb_update_write_bandwidth`): pages
/// written per second over each 200 ms, averaged over a 3 s period.
#[derive(Clone, Debug)]
pub struct WriteBandwidth {
    /// Estimated pages per second.
    pub pages_per_s: u64,
    stamp: u64,
    written_stamp: u64,
}

impl Default for WriteBandwidth {
    fn default() -> Self {
        WriteBandwidth {
            pages_per_s: INIT_BW_PAGES,
            stamp: 0,
            written_stamp: 0,
        }
    }
}

impl WriteBandwidth {
    /// Update with the pages written so far (`written`) at `now_ns`, if 200 ms
    /// have passed since the last update.
    pub fn update(&mut self, now_ns: u64, written: u64) {
        let elapsed = now_ns.saturating_sub(self.stamp);
        if elapsed < BANDWIDTH_INTERVAL_NS {
            return;
        }
        const PERIOD: u128 = 3_000_000_000;
        let measured = (written - self.written_stamp) as u128 * 1_000_000_000 / elapsed as u128;
        let e = (elapsed as u128).min(PERIOD);
        let bw = (self.pages_per_s as u128 * (PERIOD - e) + measured * e) / PERIOD;
        self.pages_per_s = (bw as u64).max(1);
        self.stamp = now_ns;
        self.written_stamp = written;
    }
}

/// A page present in the cache.
#[derive(Clone, Copy, Debug)]
struct Present {
    /// `PG_uptodate`: its data is there (not still being read).
    uptodate: bool,
    /// `PG_readahead`: reading it starts the next readahead window.
    readahead: bool,
    /// Its place on the LRU list.
    stamp: u64,
}

/// The page cache of the device's inode: its pages' marks, and the inode's
/// writeback state.
#[derive(Clone, Debug, Default)]
pub struct PageCache {
    /// Pages in memory, by index.
    present: std::collections::BTreeMap<u64, Present>,
    /// The LRU list: stamp → page, oldest first.
    lru: std::collections::BTreeMap<u64, u64>,
    next_stamp: u64,
    /// Most pages the cache may hold (the simulated memory); 0 = no limit.
    limit: u64,
    /// Pages of the device (reads stop at its end).
    dev_pages: u64,
    dirty: BTreeSet<u64>,
    towrite: BTreeSet<u64>,
    writeback: BTreeSet<u64>,
    /// The inode's `dirtied_when` while it is dirty (`I_DIRTY_PAGES`): set when
    /// a page is dirtied and the inode was clean; cleared only when the flusher
    /// writes the inode and finds no dirty page left (an fsync does not clean
    /// the inode's state).
    dirtied_when: Option<u64>,
    /// `mapping->writeback_index`: where the flusher's next cyclic pass starts.
    writeback_index: u64,
    /// Pages whose writeback completed, ever (for the bandwidth estimate).
    written: u64,
}

impl PageCache {
    /// An empty cache.
    pub fn new() -> PageCache {
        PageCache::default()
    }

    /// An empty cache of at most `limit` pages (0: unbounded) for a device of
    /// `dev_pages` pages.
    pub fn with_limits(limit: u64, dev_pages: u64) -> PageCache {
        PageCache {
            limit,
            dev_pages,
            ..Default::default()
        }
    }

    /// Pages in memory.
    pub fn nr_present(&self) -> usize {
        self.present.len()
    }

    /// Whether page `p` is in memory (uptodate or being read).
    pub fn is_present(&self, p: u64) -> bool {
        self.present.contains_key(&p)
    }

    /// Whether page `p` is in memory with its data.
    pub fn is_uptodate(&self, p: u64) -> bool {
        self.present.get(&p).is_some_and(|x| x.uptodate)
    }

    /// Whether page `p` carries the readahead marker.
    pub fn has_readahead_mark(&self, p: u64) -> bool {
        self.present.get(&p).is_some_and(|x| x.readahead)
    }

    /// `folio_clear_readahead`.
    pub fn clear_readahead_mark(&mut self, p: u64) {
        if let Some(x) = self.present.get_mut(&p) {
            x.readahead = false;
        }
    }

    /// `folio_mark_accessed`, simplified to a move to the LRU's young end.
    pub fn touch(&mut self, p: u64) {
        let stamp = self.next_stamp;
        if let Some(x) = self.present.get_mut(&p) {
            self.lru.remove(&x.stamp);
            x.stamp = stamp;
            self.lru.insert(stamp, p);
            self.next_stamp += 1;
        }
    }

    /// Put page `p` in the cache (`filemap_add_folio`): uptodate (written
    /// whole) or locked for a read, with the readahead marker if asked.
    fn insert(&mut self, p: u64, uptodate: bool, readahead: bool) {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        if let Some(old) = self.present.insert(
            p,
            Present {
                uptodate,
                readahead,
                stamp,
            },
        ) {
            self.lru.remove(&old.stamp);
        }
        self.lru.insert(stamp, p);
    }

    /// A read of page `p` completed (`folio_end_read`): its data is there.
    pub fn end_read(&mut self, p: u64) {
        if let Some(x) = self.present.get_mut(&p) {
            x.uptodate = true;
        }
        self.shrink();
    }

    /// Reclaim, simplified to one LRU list: while the cache holds more pages
    /// than the memory, drop the oldest clean, uptodate pages not under
    /// writeback (dirty ones wait for writeback; the kernel's active/inactive
    /// lists and their aging are not modelled).
    fn shrink(&mut self) {
        if self.limit == 0 || (self.present.len() as u64) <= self.limit {
            return;
        }
        let mut excess = self.present.len() as u64 - self.limit;
        let victims: Vec<(u64, u64)> = self
            .lru
            .iter()
            .filter(|(_, p)| {
                !self.dirty.contains(p)
                    && !self.writeback.contains(p)
                    && self.present.get(p).is_some_and(|x| x.uptodate)
            })
            .take(excess as usize)
            .map(|(s, p)| (*s, *p))
            .collect();
        for (stamp, p) in victims {
            self.lru.remove(&stamp);
            self.present.remove(&p);
            excess -= 1;
        }
        let _ = excess;
    }

    /// `invalidate_bdev` → `invalidate_mapping_pages`: drop every clean,
    /// uptodate page not under writeback.
    pub fn drop_clean(&mut self) {
        let keep: Vec<u64> = self
            .present
            .iter()
            .filter(|(p, x)| !x.uptodate || self.dirty.contains(p) || self.writeback.contains(p))
            .map(|(p, _)| *p)
            .collect();
        let old = std::mem::take(&mut self.present);
        self.lru.clear();
        for p in keep {
            let x = old[&p];
            self.present.insert(p, x);
            self.lru.insert(x.stamp, p);
        }
    }

    /// `page_cache_ra_unbounded`: put the pages `index..index + nr` not in the
    /// cache yet in it, locked for reading, the one `lookahead` pages before the
    /// end marked for readahead; nothing at or past the device's end. Returns the
    /// runs of new pages `(first, count)` to read, in order.
    pub fn add_for_read(&mut self, index: u64, nr: u64, lookahead: u64) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let nr = if self.dev_pages > 0 {
            nr.min(self.dev_pages.saturating_sub(index))
        } else {
            nr
        };
        for i in 0..nr {
            let p = index + i;
            if self.present.contains_key(&p) {
                continue;
            }
            let mark = lookahead > 0 && i == nr - lookahead;
            self.insert(p, false, mark);
            match runs.last_mut() {
                Some((first, n)) if *first + *n == p => *n += 1,
                _ => runs.push((p, 1)),
            }
        }
        runs
    }

    /// Pages `first..first + n` were written at `now` (`block_write_end` →
    /// `mark_buffer_dirty` → `__folio_mark_dirty`): they are dirty, whether or not
    /// under writeback. Returns whether the inode became dirty
    /// (`__mark_inode_dirty`: its `dirtied_when` is now, and the flusher's
    /// periodic wake-up is armed).
    pub fn mark_dirty(&mut self, first: u64, n: u64, now: u64) -> bool {
        for p in first..first + n {
            if self.is_uptodate(p) {
                self.touch(p);
            } else {
                self.insert(p, true, false);
            }
        }
        self.dirty.extend(first..first + n);
        self.shrink();
        if self.dirtied_when.is_none() {
            self.dirtied_when = Some(now);
            return true;
        }
        false
    }

    /// The inode is dirty (on the flusher's `b_dirty` list).
    pub fn inode_dirty(&self) -> bool {
        self.dirtied_when.is_some()
    }

    /// The inode has been dirty since at or before `cutoff` (`move_expired_inodes`).
    pub fn inode_dirtied_before(&self, cutoff: u64) -> bool {
        self.dirtied_when.is_some_and(|t| t <= cutoff)
    }

    /// The flusher wrote the inode: with no dirty page left its state is clean.
    pub fn inode_written(&mut self) {
        if self.dirty.is_empty() {
            self.dirtied_when = None;
        }
    }

    /// Pages whose writeback has completed, since the start.
    pub fn pages_written(&self) -> u64 {
        self.written
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
        if self.writeback.remove(&p) {
            self.written += 1;
        }
        self.shrink();
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

/// `BIO_MAX_VECS`: most pages `mpage_readahead` puts in one bio.
pub const BIO_MAX_PAGES: u64 = 256;

/// How fio advised the kernel about a job's file (`fadvise_hint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// No advice (`fadvise_hint=0`).
    Normal,
    /// `POSIX_FADV_SEQUENTIAL`: the file's readahead window is doubled.
    Sequential,
    /// `POSIX_FADV_RANDOM` (`FMODE_RANDOM`): no readahead, reads read what is
    /// asked.
    Random,
}

/// One open file's readahead state (`struct file_ra_state`).
#[derive(Clone, Debug)]
pub struct RaState {
    /// `ra->start`, `ra->size`, `ra->async_size`, in pages.
    pub start: u64,
    /// Size of the current window.
    pub size: u64,
    /// Pages of the window still ahead when its marker is hit.
    pub async_size: u64,
    /// `ra->ra_pages`: the window's maximum.
    pub ra_pages: u64,
    /// `bdi->io_pages`: the device's largest request, in pages.
    pub io_pages: u64,
    /// `ra->prev_pos`, bytes; `None` before the first read (-1).
    pub prev_pos: Option<u64>,
    /// `FMODE_RANDOM`.
    pub random: bool,
}

/// `get_init_ra_size`: the first window for a read of `size` pages.
fn init_ra_size(size: u64, max: u64) -> u64 {
    let n = size.next_power_of_two();
    if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the window after one of `cur` pages.
fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl RaState {
    /// `file_ra_state_init` for a device with `read_ahead_kb` and `max_sectors`
    /// (512-byte sectors), then fio's `posix_fadvise`.
    pub fn new(read_ahead_kb: u64, max_sectors: u64, advice: Advice) -> RaState {
        let bdi_ra = read_ahead_kb * 1024 / PAGE_SIZE;
        RaState {
            start: 0,
            size: 0,
            async_size: 0,
            ra_pages: if advice == Advice::Sequential {
                bdi_ra * 2
            } else {
                bdi_ra
            },
            io_pages: max_sectors * 512 / PAGE_SIZE,
            prev_pos: None,
            random: advice == Advice::Random,
        }
    }

    /// `ractl_max_pages`.
    fn max_pages(&self, req_count: u64) -> u64 {
        if req_count > self.ra_pages && self.io_pages > self.ra_pages {
            req_count.min(self.io_pages)
        } else {
            self.ra_pages
        }
    }

    /// `page_cache_sync_ra`: page `index` of a read of `req_count` pages is not
    /// in the cache. Adds the pages to read and returns their runs.
    pub fn sync_ra(
        &mut self,
        cache: &mut PageCache,
        index: u64,
        req_count: u64,
    ) -> Vec<(u64, u64)> {
        let mut req_count = req_count;
        let mut forced = self.random;
        if self.ra_pages == 0 {
            req_count = 1;
            forced = true;
        }
        if forced {
            // force_page_cache_ra: what is asked, up to max(io_pages, ra_pages),
            // in 2 MiB chunks, no marker.
            let n = req_count.min(self.io_pages.max(self.ra_pages)).max(1);
            return cache.add_for_read(index, n, 0);
        }
        let max = self.max_pages(req_count);
        let prev_index = self.prev_pos.map(|p| p / PAGE_SIZE);
        let sequential = prev_index.is_some_and(|pi| index.wrapping_sub(pi) <= 1);
        if index == 0 || req_count > max || sequential {
            self.start = index;
            self.size = init_ra_size(req_count, max);
            self.async_size = if self.size > req_count {
                self.size - req_count
            } else {
                self.size
            };
        } else {
            // page_cache_prev_miss from index - 1, at most max pages back: the
            // contiguous cached history of this stream. Reaching back past page
            // 0 (the kernel's wrap to ULONG_MAX) means the device is cached from
            // its start, a strong sign of a long stream: the history counts
            // twice.
            let mut contig = max - 1;
            let mut from_start = false;
            for k in 1..=max {
                let Some(p) = index.checked_sub(k) else {
                    contig = index;
                    from_start = true;
                    break;
                };
                if !cache.is_present(p) {
                    contig = index - p - 1;
                    break;
                }
            }
            if contig <= req_count {
                // A small random read: read as is, leave the state alone.
                return cache.add_for_read(index, req_count, 0);
            }
            if from_start {
                contig *= 2;
            }
            self.start = index;
            self.size = (contig + req_count).min(max);
            self.async_size = 1;
        }
        cache.add_for_read(self.start, self.size, self.async_size)
    }

    /// `page_cache_async_ra`: the read of `req_count` pages found the readahead
    /// marker on page `index` (uptodate or not). Clears it, moves the window on
    /// and returns the runs to read.
    pub fn async_ra(
        &mut self,
        cache: &mut PageCache,
        index: u64,
        req_count: u64,
    ) -> Vec<(u64, u64)> {
        if self.ra_pages == 0 || cache.is_writeback(index) {
            return Vec::new();
        }
        cache.clear_readahead_mark(index);
        let max = self.max_pages(req_count);
        let expected = self.start + self.size - self.async_size;
        if index == expected {
            self.start += self.size;
            self.size = next_ra_size(self.size, max);
            self.async_size = self.size;
        } else {
            // A marker without valid state (interleaved streams): ask the cache.
            let mut start = None;
            for p in index + 1..=index + max {
                if !cache.is_present(p) {
                    start = Some(p);
                    break;
                }
            }
            let Some(start) = start else {
                return Vec::new();
            };
            self.start = start;
            self.size = next_ra_size(start - index + req_count, max);
            self.async_size = self.size;
        }
        cache.add_for_read(self.start, self.size, self.async_size)
    }
}

/// One `WB_SYNC_NONE` `do_writepages` call (the flusher's): dirty pages from
/// `writeback_index` to the end of the device, up to `nr_to_write`, skipping
/// pages under writeback; `writeback_index` then moves to where it stopped, or
/// back to 0 when it reached the end (`write_cache_pages` with `range_cyclic`).
#[derive(Clone, Debug)]
pub struct NoSyncWalk {
    index: u64,
    nr_to_write: u64,
    written: u64,
    batch: std::collections::VecDeque<u64>,
}

impl NoSyncWalk {
    /// A pass of at most `nr_to_write` pages from the mapping's `writeback_index`.
    pub fn new(cache: &PageCache, nr_to_write: u64) -> NoSyncWalk {
        NoSyncWalk {
            index: cache.writeback_index,
            nr_to_write,
            written: 0,
            batch: Default::default(),
        }
    }

    /// Pages written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The next page to write, or `None` when the pass is over.
    pub fn next(&mut self, cache: &mut PageCache) -> Option<u64> {
        loop {
            if self.written >= self.nr_to_write {
                cache.writeback_index = self.index;
                return None;
            }
            if self.batch.is_empty() {
                let mut at = self.index;
                self.batch = lookup(&cache.dirty, &mut at, u64::MAX).into();
                if self.batch.is_empty() {
                    cache.writeback_index = 0;
                    return None;
                }
            }
            let p = self.batch.pop_front()?;
            self.index = p + 1;
            if !cache.is_dirty(p) || cache.is_writeback(p) {
                continue;
            }
            cache.start_writeback(p);
            self.written += 1;
            return Some(p);
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
        c.mark_dirty(9, 1, 0);
        c.mark_dirty(2, 2, 0);
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
        c.mark_dirty(0, 4, 0);
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
        c.mark_dirty(5, 1, 0);
        let mut a = SyncWalk::whole(&mut c);
        assert_eq!(a.next(&mut c), WalkStep::Write(5));
        c.mark_dirty(5, 1, 0); // written again while its write is in flight
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
        c.mark_dirty(10, 1, 0);
        let mut a = SyncWalk::whole(&mut c);
        c.mark_dirty(3, 1, 0); // after tagging: not TOWRITE
        assert_eq!(a.next(&mut c), WalkStep::Write(10));
        assert_eq!(a.next(&mut c), WalkStep::WaitOn(10));
        c.end_writeback(10);
        assert_eq!(a.next(&mut c), WalkStep::Done);
        assert!(c.is_dirty(3));
    }

    #[test]
    fn ranges_and_batches() {
        let mut c = PageCache::new();
        c.mark_dirty(0, 100, 0);
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

    #[test]
    fn default_limits_of_8_gib() {
        // 2 097 152 pages: 10 % and 20 %, free-run halfway.
        let l = VmConfig::default().limits();
        assert_eq!(
            l,
            DirtyLimits {
                bg_thresh: 209_715,
                thresh: 419_430,
                freerun: 314_572,
            }
        );
        assert!((pos_ratio(&l, l.freerun) - 2.0).abs() < 1e-3);
        assert!((pos_ratio(&l, (l.freerun + l.thresh) / 2) - 1.0).abs() < 1e-3);
        assert!(pos_ratio(&l, l.thresh) < 1e-3);
        // sqrt of 2^16 pages of headroom.
        assert_eq!(dirty_poll_interval(100, 100 + (1 << 16)), 256);
    }

    #[test]
    fn flusher_pass_is_cyclic_and_skips_writeback() {
        let mut c = PageCache::new();
        c.mark_dirty(0, 10, 0);
        let mut w = NoSyncWalk::new(&c, 4);
        let got: Vec<u64> = std::iter::from_fn(|| w.next(&mut c)).collect();
        assert_eq!(got, vec![0, 1, 2, 3]);
        // The next pass goes on from page 4; page 6 is under writeback (an
        // fsync took it) and is skipped.
        c.start_writeback(6);
        let mut w = NoSyncWalk::new(&c, 100);
        let got: Vec<u64> = std::iter::from_fn(|| w.next(&mut c)).collect();
        assert_eq!(got, vec![4, 5, 7, 8, 9]);
        // Having reached the end, the next starts from 0 again.
        c.end_writeback(1);
        c.mark_dirty(1, 1, 0);
        let mut w = NoSyncWalk::new(&c, 100);
        assert_eq!(w.next(&mut c), Some(1));
    }

    #[test]
    fn inode_dirty_state() {
        let mut c = PageCache::new();
        assert!(c.mark_dirty(3, 1, 7));
        assert!(!c.mark_dirty(4, 1, 9));
        assert!(c.inode_dirtied_before(7) && !c.inode_dirtied_before(6));
        // An fsync writes the pages but leaves the inode dirty.
        let mut w = SyncWalk::whole(&mut c);
        while let WalkStep::Write(p) = w.next(&mut c) {
            c.end_writeback(p);
        }
        assert!(c.inode_dirty());
        c.inode_written();
        assert!(!c.inode_dirty());
        assert_eq!(c.pages_written(), 2);
    }

    #[test]
    fn bandwidth_estimate_moves_towards_the_measured_rate() {
        let mut bw = WriteBandwidth::default();
        // 200 ms with 1000 pages written: 5000 pages/s measured, weight 1/15.
        bw.update(BANDWIDTH_INTERVAL_NS, 1000);
        assert_eq!(bw.pages_per_s, (25_600 * 14 + 5_000) / 15);
        bw.update(BANDWIDTH_INTERVAL_NS + 1, 2000); // too soon: unchanged
        assert_eq!(bw.pages_per_s, (25_600 * 14 + 5_000) / 15);
    }

    /// Pages read by a sequential stream of one-page reads over `n` pages,
    /// as the windows' runs in order (reads complete at once).
    fn stream(ra: &mut RaState, c: &mut PageCache, n: u64) -> Vec<(u64, u64)> {
        let mut all = Vec::new();
        for p in 0..n {
            let runs = if !c.is_present(p) {
                ra.sync_ra(c, p, 1)
            } else if c.has_readahead_mark(p) {
                ra.async_ra(c, p, 1)
            } else {
                Vec::new()
            };
            for &(f, k) in &runs {
                for q in f..f + k {
                    c.end_read(q);
                }
            }
            all.extend(runs);
            ra.prev_pos = Some((p + 1) * PAGE_SIZE);
        }
        all
    }

    #[test]
    fn sequential_windows_grow_to_read_ahead_kb() {
        // read_ahead_kb=128 (32 pages), no advice: 4, 8, 16, 32, 32, ... pages,
        // each window started when its predecessor's first page (the marker) is
        // read, the first when page 1 is.
        let mut c = PageCache::with_limits(0, 1 << 20);
        let mut ra = RaState::new(128, 2560, Advice::Normal);
        let runs = stream(&mut ra, &mut c, 256);
        let sizes: Vec<u64> = runs.iter().map(|r| r.1).collect();
        assert_eq!(sizes, vec![4, 8, 16, 32, 32, 32, 32, 32, 32, 32, 32, 32]);
        assert_eq!(runs[0], (0, 4));
        assert_eq!(runs.last(), Some(&(284, 32)));
        assert_eq!(runs[3], (28, 32));
        // POSIX_FADV_SEQUENTIAL (fio's default for sequential jobs): twice the
        // window.
        let mut c = PageCache::with_limits(0, 1 << 20);
        let mut ra = RaState::new(128, 2560, Advice::Sequential);
        let sizes: Vec<u64> = stream(&mut ra, &mut c, 256).iter().map(|r| r.1).collect();
        assert_eq!(sizes, vec![4, 8, 16, 32, 64, 64, 64, 64, 64]);
    }

    #[test]
    fn random_reads_read_what_is_asked() {
        let mut c = PageCache::with_limits(0, 1 << 20);
        let mut ra = RaState::new(128, 2560, Advice::Random);
        assert_eq!(ra.sync_ra(&mut c, 1000, 2), vec![(1000, 2)]);
        assert!(!c.has_readahead_mark(1000) && !c.has_readahead_mark(1001));
        // Without the advice, a read far from the previous one and with no
        // cached history is read as is too.
        let mut ra = RaState::new(128, 2560, Advice::Normal);
        ra.prev_pos = Some(5 * PAGE_SIZE);
        assert_eq!(ra.sync_ra(&mut c, 500, 1), vec![(500, 1)]);
    }

    #[test]
    fn a_cached_history_restarts_a_stream() {
        // Pages 100..110 cached, the file's last read elsewhere: a read of page
        // 110 finds 10 pages of history (page_cache_prev_miss stops at 99), so
        // the window is 10 + 1 pages with the marker on its last page.
        let mut c = PageCache::with_limits(0, 1 << 20);
        c.add_for_read(100, 10, 0);
        let mut ra = RaState::new(128, 2560, Advice::Normal);
        ra.prev_pos = Some(5000 * PAGE_SIZE);
        assert_eq!(ra.sync_ra(&mut c, 110, 1), vec![(110, 11)]);
        assert!(c.has_readahead_mark(120));
        // Cached from page 0: the history counts twice (8 pages → 16 + 1).
        let mut c = PageCache::with_limits(0, 1 << 20);
        c.add_for_read(0, 8, 0);
        let mut ra = RaState::new(128, 2560, Advice::Normal);
        ra.prev_pos = Some(5000 * PAGE_SIZE);
        assert_eq!(ra.sync_ra(&mut c, 8, 1), vec![(8, 17)]);
        // A full window of history: max - 1 pages, the window is the maximum.
        let mut c = PageCache::with_limits(0, 1 << 20);
        c.add_for_read(1000, 64, 0);
        let mut ra = RaState::new(128, 2560, Advice::Normal);
        assert_eq!(ra.sync_ra(&mut c, 1064, 1), vec![(1064, 32)]);
    }

    #[test]
    fn lru_keeps_the_cache_within_memory() {
        let mut c = PageCache::with_limits(4, 1 << 20);
        for p in 0..4 {
            c.add_for_read(p, 1, 0);
            c.end_read(p);
        }
        c.touch(0);
        c.mark_dirty(10, 1, 0); // a fifth page: the oldest clean one (1) goes
        assert_eq!(c.nr_present(), 4);
        assert!(!c.is_present(1) && c.is_present(0) && c.is_present(10));
        c.drop_clean();
        assert_eq!(c.nr_present(), 1);
    }
}
