//! fio's trim modes (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`): the
//! order of trims and writes as fio's `set_rw_ddir`, `get_next_block` and
//! `get_next_buflen` give it, discards through the block layer, and the
//! synchronous trims of libaio.

use devices::ideal::{Ideal, IdealParams};
use sim::fio::IoEngine;
use sim::job::{IoDone, JobConfig, RwMode};
use sim::simulate::{IoObserver, SimConfig, Simulation};

/// (trim?, offset, bytes) of each issued I/O, and the most in flight at once.
#[derive(Default)]
struct Seen {
    ios: Vec<(bool, u64, u64)>,
    max_depth: u32,
}

impl IoObserver for Seen {
    fn io_issued(&mut self, _job: usize, io: IoDone) {
        self.ios.push((io.trim, io.offset, io.bytes));
    }
    fn io_submitted(&mut self, _job: usize, _op: blk::Op, depth: u32) {
        self.max_depth = self.max_depth.max(depth);
    }
}

fn run(job: JobConfig) -> (Seen, sim::simulate::RunSummary) {
    let dev = Box::new(Ideal::new("i", IdealParams::default()));
    let sim = Simulation::new(&SimConfig::default(), dev, vec![job]).unwrap();
    let mut seen = Seen::default();
    let summary = sim.run(&mut seen);
    (seen, summary)
}

const K: u64 = 1024;

#[test]
fn trimwrite_trims_then_writes_each_place() {
    let (seen, _) = run(JobConfig {
        rw: RwMode::TrimWrite,
        bs: [4 * K; 3],
        size: 16 * K,
        io_limit: 16 * K,
        ..JobConfig::default()
    });
    let want: Vec<(bool, u64, u64)> = (0..4)
        .flat_map(|b| [(true, b * 4 * K, 4 * K), (false, b * 4 * K, 4 * K)])
        .collect();
    assert_eq!(seen.ios, want);
}

#[test]
fn trimwrite_with_unequal_sizes_drifts_into_writes_as_fio_does() {
    // bs=,8k,4k: each lane goes on from its own last position (fio's
    // per-direction `last_pos`); once the two starts differ, `set_rw_ddir` sees
    // no finished pair and only writes follow. The limit counts writes only.
    // fio 3.33 on a loop device (psync, direct=1, size=64k, io_size=24k) issued
    // exactly this.
    let (seen, _) = run(JobConfig {
        rw: RwMode::TrimWrite,
        bs: [4 * K, 8 * K, 4 * K],
        size: 64 * K,
        io_limit: 24 * K,
        ..JobConfig::default()
    });
    assert_eq!(
        seen.ios,
        [
            (true, 0, 4 * K),
            (false, 0, 8 * K),
            (true, 4 * K, 4 * K),
            (false, 8 * K, 8 * K),
            (false, 16 * K, 8 * K),
        ]
    );
}

#[test]
fn randtrimwrite_writes_exactly_the_range_just_trimmed() {
    let (seen, _) = run(JobConfig {
        rw: RwMode::RandTrimWrite,
        bs: [4 * K; 3],
        size: 256 * K,
        io_limit: 256 * K,
        ..JobConfig::default()
    });
    assert_eq!(seen.ios.len(), 128);
    let mut trimmed: Vec<u64> = Vec::new();
    for pair in seen.ios.chunks(2) {
        let (t, w) = (pair[0], pair[1]);
        assert!(t.0 && !w.0, "a trim, then its write: {pair:?}");
        assert_eq!((t.1, t.2), (w.1, w.2));
        trimmed.push(t.1);
    }
    // The random map: every block trimmed once in the pass, not in order.
    let mut sorted = trimmed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..64).map(|b| b * 4 * K).collect::<Vec<_>>());
    assert_ne!(trimmed, sorted);
}

#[test]
fn randtrim_covers_the_region_once_with_discards_counted_apart_from_writes() {
    let (seen, summary) = run(JobConfig {
        rw: RwMode::RandTrim,
        bs: [4 * K, 4 * K, 64 * K],
        size: 1024 * K,
        io_limit: 1024 * K,
        ..JobConfig::default()
    });
    assert!(seen.ios.iter().all(|io| io.0 && io.2 == 64 * K));
    assert_eq!(seen.ios.len(), 16);
    let d = summary.disk;
    assert_eq!(d.ios, [0, 0]);
    assert_eq!((d.discard_ios, d.discard_sectors), (16, 2048));
    assert!(d.discard_ticks_ns > 0);
    assert_eq!(d.in_queue_ns(), d.discard_ticks_ns);
}

fn depth_of(engine: IoEngine) -> u32 {
    let (seen, _) = run(JobConfig {
        rw: RwMode::RandTrim,
        engine,
        async_engine: true,
        depth: 8,
        size: 1024 * K,
        io_limit: 1024 * K,
        ..JobConfig::default()
    });
    assert_eq!(seen.ios.len(), 256);
    seen.max_depth
}

#[test]
fn libaio_trims_one_at_a_time_io_uring_keeps_its_depth() {
    // fio's libaio and posixaio issue a trim with a synchronous BLKDISCARD;
    // io_uring sends BLOCK_URING_CMD_DISCARD asynchronously.
    assert_eq!(depth_of(IoEngine::Libaio), 1);
    assert_eq!(depth_of(IoEngine::Posixaio), 1);
    assert_eq!(depth_of(IoEngine::IoUring), 8);
}

#[test]
fn a_trim_on_a_file_or_with_buffered_io_is_refused_with_its_reason() {
    let parse = |text: &str| sim::fio::parse_job_file_with_env("t.fio", text, |_| None);
    let e = parse("[j]\ndirect=1\nrw=randtrim\nsize=1m\n").unwrap_err();
    assert!(e.to_string().contains("FALLOC_FL_PUNCH_HOLE"), "{e}");
    assert!(e.line().is_some(), "the error names the job's line");
    let ok = parse("[j]\ndirect=1\nrw=randtrim\nsize=1m\nfilename=/dev/sda\n");
    assert!(ok.is_ok());
    let e = parse("[j]\nrw=trim\nfilename=/dev/sda\n").unwrap_err();
    assert!(e.to_string().contains("with direct=0"), "{e}");
}
