//! `io_submit_mode=offload` (fio's rate-submit.c): worker threads submit and
//! reap each I/O on their own, so a rate-limited job's sleep does not first
//! wait for its I/O to complete, as it does inline (`rate_ddir` calls
//! `io_u_quiesce` only in inline mode).

use blk::Dir;
use devices::ideal::{Ideal, IdealParams};
use sim::job::{IoDone, JobConfig, RateLimit, RwMode};
use sim::simulate::{IoObserver, SimConfig, Simulation};

#[derive(Default)]
struct Issues(Vec<u64>);

impl IoObserver for Issues {
    fn io_issued(&mut self, _job: usize, io: IoDone) {
        assert_eq!(io.dir, Dir::Read);
        self.0.push(io.issue.0);
    }
}

/// 4 KiB reads at 1000 IOPS (one due every ms) on a device that takes 5 ms
/// per I/O, 4 I/O units.
fn issues(offload: bool) -> Vec<u64> {
    let dev = Box::new(Ideal::new(
        "slow",
        IdealParams {
            latency_ns: 5_000_000,
            bandwidth: 2_048_000_000,
            queue_depth: 32,
            ..Default::default()
        },
    ));
    let job = JobConfig {
        rw: RwMode::Read,
        size: 8 * 4096,
        io_limit: 8 * 4096,
        depth: 4,
        async_engine: true,
        rate: Some(RateLimit {
            bps: [4096 * 1000, 0],
            poisson: false,
            ignore_thinktime: false,
        }),
        offload,
        ..JobConfig::default()
    };
    let sim = Simulation::new(&SimConfig::default(), dev, vec![job]).unwrap();
    let mut t = Issues::default();
    sim.run(&mut t);
    t.0
}

#[test]
fn offloaded_rate_sleeps_keep_io_in_flight() {
    let ms = 1_000_000;
    let off = issues(true);
    // Each I/O when it is due, while the earlier ones are still in flight.
    assert_eq!(&off[..4], &[0, ms, 2 * ms, 3 * ms]);
    // The fifth waits for a free unit: the first I/O's completion (5 ms and
    // its 2 us transfer).
    assert_eq!(off[4], 5 * ms + 2_000);
    // Inline, the job waits for its I/O before each rate sleep: the second
    // I/O goes after the first completed (5.002 ms) and the rest of the
    // sleep the rate asked for at 0 (1 ms).
    let inl = issues(false);
    assert_eq!(inl[1], 6 * ms + 2_000);
    assert!(off[7] < inl[7], "{off:?} vs {inl:?}");
}
