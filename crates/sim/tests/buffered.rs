//! Buffered I/O through the device's page cache: writes, fsync and its
//! write-and-wait of every dirty page, with hand-computed outcomes.

use blk::{Dir, Ns};
use devices::ideal::{Ideal, IdealParams};
use sim::job::{IoDone, JobConfig, RwMode};
use sim::simulate::{IoObserver, RunSummary, SimConfig, Simulation};

#[derive(Default)]
struct Count {
    writes: u64,
    lat: Vec<u64>,
    finished: Vec<(usize, Ns)>,
}

impl IoObserver for Count {
    fn io_completed(&mut self, _job: usize, io: IoDone, _issue: Ns, now: Ns) {
        if io.dir == Dir::Write {
            self.writes += 1;
        }
        self.lat.push(now.since(io.submit));
    }
    fn job_finished(&mut self, job: usize, now: Ns) {
        self.finished.push((job, now));
    }
}

/// Clone `j` of a psync job writing `n` pages sequentially from page `first`,
/// buffered, with an fsync after every `fsync` writes.
fn writer(j: u32, first: u64, n: u64, fsync: u32, submit_cost_ns: u64) -> JobConfig {
    let size = n * 4096;
    JobConfig {
        name: "w".into(),
        rw: RwMode::Write,
        rwmixread: 0,
        offset: first * 4096,
        size,
        io_limit: size,
        cpu: j % 8,
        pid: 1000 + j,
        seed: j as u64,
        fsync_blocks: fsync,
        buffered: true,
        invalidate: true,
        submit_cost_ns,
        ..JobConfig::default()
    }
}

/// The `ideal` device as its profile has it: no write cache (an fsync's flush
/// completes at submission), 100 µs + 2 GB/s, max_hw_sectors 2560.
fn ideal() -> Box<Ideal> {
    Box::new(Ideal::new(
        "ideal",
        IdealParams {
            nr_hw_queues: 1,
            ..Default::default()
        },
    ))
}

fn run(jobs: Vec<JobConfig>, device: Box<dyn devices::Device>) -> (RunSummary, Count) {
    let cfg = SimConfig {
        scheduler: "none".into(),
        ..Default::default()
    };
    let sim = Simulation::new(&cfg, device, jobs).unwrap();
    let mut c = Count::default();
    let s = sim.run(&mut c);
    (s, c)
}

/// One job: write (1.5 µs system call + 1 µs copy), fsync (1.5 µs): the page
/// goes down alone, 100 µs + 2.048 µs on the ideal device; the write's latency
/// is the call's 2.5 µs, nothing of the disk's.
#[test]
fn one_write_and_fsync() {
    let (s, c) = run(vec![writer(0, 0, 1, 1, 1_500)], ideal());
    assert_eq!(c.writes, 1);
    assert_eq!(c.lat, vec![2_500]);
    assert_eq!(s.disk.ios, [0, 1]);
    assert_eq!(s.disk.sectors, [0, 8]);
    assert_eq!(s.disk.flush_ios, 0);
    // 2.5 µs write, 1.5 µs into fsync, then the page's write.
    assert_eq!(c.finished, vec![(0, Ns(4_000 + 102_048))]);
}

/// Without fsync a buffered write never reaches the disk (the run ends with its
/// page dirty, as fio exits without syncing).
#[test]
fn writes_without_fsync_stay_in_the_cache() {
    let (s, c) = run(vec![writer(0, 0, 8, 0, 1_500)], ideal());
    assert_eq!(c.writes, 8);
    assert_eq!(s.disk.ios, [0, 0]);
    assert_eq!(c.finished, vec![(0, Ns(8 * 2_500))]);
}

/// 64 jobs write one page each, at pages 0..64, and fsync. All copies end at
/// 2.5 µs and every fsync starts at 4 µs: the first writes back all 64 dirty
/// pages (the others' included) in index order under one plug, where they merge
/// into one 256 KiB request (≤ max_sectors 1280 KiB); the other 63 find nothing
/// to write and wait for that writeback. One write request, 63 merges.
#[test]
fn sixty_four_fsyncs_share_one_writeback() {
    let jobs = (0..64).map(|j| writer(j, j as u64, 1, 1, 1_500)).collect();
    let (s, c) = run(jobs, ideal());
    assert_eq!(c.writes, 64);
    assert_eq!(s.disk.ios, [0, 1]);
    assert_eq!(s.disk.merges, [0, 63]);
    assert_eq!(s.disk.sectors, [0, 64 * 8]);
    // 256 KiB at 2 GB/s: 131.072 µs of transfer after the 100 µs.
    let end = Ns(4_000 + 100_000 + 131_072);
    assert_eq!(c.finished.len(), 64);
    assert!(
        c.finished.iter().all(|&(_, t)| t == end),
        "{:?}",
        c.finished
    );
}

/// The same 64 jobs with pages 256 apart (their own 1 MiB each): 64 requests of
/// one page, dispatched in page order.
#[test]
fn scattered_pages_are_one_request_each() {
    let jobs = (0..64)
        .map(|j| writer(j, 256 * j as u64, 1, 1, 1_500))
        .collect();
    let (s, c) = run(jobs, ideal());
    assert_eq!(c.writes, 64);
    assert_eq!(s.disk.ios, [0, 64]);
    assert_eq!(s.disk.merges, [0, 0]);
}

/// 64 jobs × 256 writes + fsync each, every job in its own 1 MiB: every page is
/// dirtied once and written once — 16 384 pages, none adjacent to another job's
/// page of the same round, so 16 384 write requests, no merges — and the device
/// (no write cache) sees no flush.
#[test]
fn block004_like_every_page_written_once() {
    let jobs = (0..64)
        .map(|j| writer(j, 256 * j as u64, 256, 1, 1_500))
        .collect();
    let (s, c) = run(jobs, ideal());
    assert_eq!(c.writes, 64 * 256);
    assert_eq!(s.disk.sectors, [0, 64 * 256 * 8]);
    assert_eq!(s.disk.ios, [0, 64 * 256]);
    assert_eq!(s.disk.merges, [0, 0]);
    assert_eq!(s.disk.flush_ios, 0);
}

/// On a device with a volatile write cache every fsync ends in an empty
/// PREFLUSH; the 64 that finish together coalesce in the flush machinery.
#[test]
fn fsyncs_flush_a_write_cache() {
    let dev = devices::profile("ssd-sata").unwrap().build();
    let jobs = (0..64).map(|j| writer(j, j as u64, 1, 1, 1_500)).collect();
    let (s, _) = run(jobs, dev);
    assert_eq!(s.disk.sectors[1], 64 * 8);
    assert!(
        s.disk.flush_ios >= 1 && s.disk.flush_ios < 64,
        "{}",
        s.disk.flush_ios
    );
}

/// Byte-identical results for the same input.
#[test]
fn deterministic() {
    let jobs = || {
        (0..16)
            .map(|j| writer(j, 97 * j as u64, 64, 3, 1_500))
            .collect::<Vec<_>>()
    };
    let (a, ca) = run(jobs(), ideal());
    let (b, cb) = run(jobs(), ideal());
    assert_eq!(a.end, b.end);
    assert_eq!(a.disk.ios, b.disk.ios);
    assert_eq!(ca.lat, cb.lat);
    assert_eq!(ca.finished, cb.finished);
}

/// fio's `invalidate` (`BLKFLSBUF`): a buffered job of a later group finds the
/// 8 pages the first group left dirty (adjacent: one 32 KiB request) written back
/// before its clock starts; with `invalidate=0` it starts at once and they stay.
#[test]
fn invalidate_writes_back_what_an_earlier_group_left() {
    #[derive(Default)]
    struct Starts(Vec<(usize, Ns)>);
    impl IoObserver for Starts {
        fn job_started(&mut self, job: usize, now: Ns) {
            self.0.push((job, now));
        }
    }
    for invalidate in [true, false] {
        let a = writer(0, 0, 8, 0, 1_500);
        let mut b = writer(1, 100, 1, 0, 1_500);
        b.group = 1;
        b.job_index = 1;
        b.invalidate = invalidate;
        let sim = Simulation::new(&SimConfig::default(), ideal(), vec![a, b]).unwrap();
        let mut st = Starts::default();
        let s = sim.run(&mut st);
        let first_done = Ns(8 * 2_500);
        if invalidate {
            assert_eq!(s.disk.ios, [0, 1]);
            assert_eq!(s.disk.merges, [0, 7]);
            // 32 KiB: 100 µs + 16.384 µs.
            assert_eq!(st.0, vec![(0, Ns(0)), (1, first_done.add(116_384))]);
        } else {
            assert_eq!(s.disk.ios, [0, 0]);
            assert_eq!(st.0, vec![(0, Ns(0)), (1, first_done)]);
        }
    }
}

/// The periodic flush (`wb_workfn` every `dirty_writeback_centisecs`): pages left
/// dirty are written once the inode has been dirty for `dirty_expire_centisecs`
/// (30 s). The inode is dirtied at 2.5 µs, so the flusher wakes at 5 s + 2.5 µs
/// and every 5 s after; the wake at 30 s + 2.5 µs finds it expired and writes the
/// 8 pages, merged into one request. A second job starting at 40 s keeps the run
/// going; its own page is left dirty at the end (fio exits without syncing).
#[test]
fn periodic_flush_writes_expired_pages() {
    let a = writer(0, 0, 8, 0, 1_500);
    let mut b = writer(1, 1000, 1, 0, 1_500);
    b.start_delay = 40_000_000_000;
    b.invalidate = false;
    let (s, c) = run(vec![a, b], ideal());
    assert_eq!(s.disk.ios, [0, 1]);
    assert_eq!(s.disk.merges, [0, 7]);
    assert_eq!(s.disk.sectors, [0, 64]);
    // 32 KiB at 2 GB/s after 100 µs: done at 30.000118884 s, long before b.
    assert_eq!(c.finished[1], (1, Ns(40_000_000_000 + 2_500)));
    assert_eq!(s.end, Ns(40_000_002_500));
}

/// `vm.dirty_writeback_centisecs=0` disables the periodic flush: nothing is
/// written.
#[test]
fn no_periodic_flush_when_disabled() {
    let a = writer(0, 0, 8, 0, 1_500);
    let mut b = writer(1, 1000, 1, 0, 1_500);
    b.start_delay = 40_000_000_000;
    b.invalidate = false;
    let cfg = SimConfig {
        scheduler: "none".into(),
        vm: sim::pagecache::VmConfig {
            dirty_writeback_centisecs: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    let sim = Simulation::new(&cfg, ideal(), vec![a, b]).unwrap();
    let s = sim.run(&mut Count::default());
    assert_eq!(s.disk.ios, [0, 0]);
}

/// Background writeback and dirty throttling: 64 MiB of memory (limits: 1638
/// pages in the background, 3276 pages dirty), a 100 MB/s disk, one job writing
/// 64 MiB (16 384 pages) without fsync. Unthrottled the copies would take 41 ms;
/// the writer is held to the disk's pace once past the free-run ceiling, so the
/// run takes about as long as writing all but the limit's worth of pages at
/// 100 MB/s ((16 384 − 3276) / 25 600 pages/s = 0.51 s), and everything but
/// those is written back.
#[test]
fn background_writeback_and_throttling_hold_the_writer_to_the_disk() {
    let dev = Box::new(Ideal::new(
        "slow",
        IdealParams {
            bandwidth: 100 << 20,
            nr_hw_queues: 1,
            ..Default::default()
        },
    ));
    let cfg = SimConfig {
        scheduler: "none".into(),
        vm: sim::pagecache::VmConfig {
            mem_mb: 64,
            ..Default::default()
        },
        ..Default::default()
    };
    let sim = Simulation::new(&cfg, dev, vec![writer(0, 0, 16_384, 0, 1_500)]).unwrap();
    let mut c = Count::default();
    let s = sim.run(&mut c);
    assert_eq!(c.writes, 16_384);
    let end = c.finished[0].1 .0;
    assert!(end > 400_000_000 && end < 700_000_000, "{end}");
    assert!(s.disk.sectors[1] >= (16_384 - 3_276) * 8, "{:?}", s.disk);
    // Some writes waited in balance_dirty_pages (up to MAX_PAUSE).
    let max = *c.lat.iter().max().unwrap();
    assert!(max > 1_000_000 && max <= 200_000_000 + 2_500, "{max}");
}

/// A psync reader of `n` pages from page `first`, buffered, `fadvise_hint=0`
/// (no advice), reading `passes` times over its region.
fn reader(j: u32, first: u64, n: u64, passes: u64, rw: RwMode) -> JobConfig {
    let mut c = writer(j, first, n, 0, 1_500);
    c.rw = rw;
    c.io_limit = n * 4096 * passes;
    c
}

/// Sequential buffered reads of 1 MiB, 4 KiB at a time, `read_ahead_kb=128`: the
/// readahead windows are 4, 8, 16 pages, then 32 (16, 32, 64, 128 KiB...), each
/// started when the previous window's first page (its marker) is read; the
/// read of page 252 starts the window 284..316, so 316 pages are read in 12
/// requests. A second pass finds every page cached: no I/O, each read costs
/// the call and the copy (2.5 µs).
#[test]
fn sequential_reads_grow_the_readahead_window_and_hit_the_second_time() {
    let (s, c) = run(vec![reader(0, 0, 256, 2, RwMode::Read)], ideal());
    assert_eq!(s.disk.ios, [12, 0]);
    assert_eq!(s.disk.sectors, [316 * 8, 0]);
    assert_eq!(c.lat.len(), 512);
    assert!(
        c.lat[256..].iter().all(|&l| l == 2_500),
        "{:?}",
        &c.lat[256..260]
    );
    // The first read waits for the first window: 16 KiB in 100 µs + 8.192 µs.
    assert_eq!(c.lat[0], 1_500 + 108_192 + 1_000);
    // fio's default advice for a sequential job (POSIX_FADV_SEQUENTIAL) doubles
    // the window: 4, 8, 16, 32, then 64 pages; 380 pages in 9 requests.
    let mut r = reader(0, 0, 256, 1, RwMode::Read);
    r.fadvise = sim::pagecache::Advice::Sequential;
    let (s, _) = run(vec![r], ideal());
    assert_eq!(s.disk.ios, [9, 0]);
    assert_eq!(s.disk.sectors, [380 * 8, 0]);
}

/// Random reads advised `POSIX_FADV_RANDOM` (fio's default for random jobs)
/// read exactly the pages asked: 64 reads of 4 KiB, 64 one-page requests.
#[test]
fn random_reads_read_just_what_was_asked() {
    let mut r = reader(0, 0, 1 << 18, 1, RwMode::RandRead);
    r.number_ios = Some(64);
    r.fadvise = sim::pagecache::Advice::Random;
    let (s, c) = run(vec![r], ideal());
    assert_eq!(c.lat.len(), 64);
    assert_eq!(s.disk.ios, [64, 0]);
    assert_eq!(s.disk.sectors, [64 * 8, 0]);
}

/// `invalidate=1` drops the cache at a job's start: a second group reading the
/// same 64 pages reads them from the disk again; with `invalidate=0` it hits.
#[test]
fn invalidate_drops_clean_pages() {
    for invalidate in [true, false] {
        let a = reader(0, 0, 64, 1, RwMode::Read);
        let mut b = reader(1, 0, 64, 1, RwMode::Read);
        b.group = 1;
        b.job_index = 1;
        b.invalidate = invalidate;
        let (s, _) = run(vec![a, b], ideal());
        // 64 pages: windows 4, 8, 16, 32, 32, and reading page 60 (the last
        // window's marker) starts 92..124: 124 pages. Invalidated, the second
        // job reads 0..92 again; 92..124 are still being read when it starts
        // (locked pages are not dropped) and stay.
        let want = if invalidate { (124 + 92) * 8 } else { 124 * 8 };
        assert_eq!(s.disk.sectors[0], want, "invalidate={invalidate}");
    }
}

/// Pages written (dirty or written back) are in the cache: reading them back
/// costs no I/O.
#[test]
fn written_pages_are_read_from_the_cache() {
    let w = writer(0, 0, 16, 16, 1_500);
    let mut r = reader(1, 0, 16, 1, RwMode::Read);
    r.group = 1;
    r.job_index = 1;
    r.invalidate = false;
    let (s, _) = run(vec![w, r], ideal());
    assert_eq!(s.disk.ios[0], 0);
    assert_eq!(s.disk.sectors[1], 16 * 8);
}
