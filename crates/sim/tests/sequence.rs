//! `random_distribution=sequence` (fio's `__get_next_rand_offset_sequence`).

use blk::Ns;
use devices::ideal::{Ideal, IdealParams};
use sim::job::{IoDone, JobConfig, RandomDist, RwMode};
use sim::simulate::{IoObserver, SimConfig, Simulation};

#[derive(Default)]
struct Blocks(Vec<u64>);

impl IoObserver for Blocks {
    fn io_completed(&mut self, _job: usize, io: IoDone, _issue: Ns, _now: Ns) {
        self.0.push(io.offset / 4096);
    }
}

fn blocks(seq: &[u64], stride: bool, ios: u64) -> Vec<u64> {
    let job = JobConfig {
        rw: RwMode::RandRead,
        size: 12 * 4096,
        io_limit: ios * 4096,
        random_dist: RandomDist::Sequence {
            blocks: seq.to_vec(),
            stride,
        },
        ..JobConfig::default()
    };
    let dev = Box::new(Ideal::new("i", IdealParams::default()));
    let sim = Simulation::new(&SimConfig::default(), dev, vec![job]).unwrap();
    let mut b = Blocks::default();
    sim.run(&mut b);
    b.0
}

#[test]
fn the_sequence_repeats_or_strides_and_ends_past_the_region() {
    assert_eq!(blocks(&[2, 0, 1], false, 6), [2, 0, 1, 2, 0, 1]);
    assert_eq!(blocks(&[2, 0, 1], true, 6), [2, 0, 1, 5, 3, 4]);
    // The 13th I/O would go to block 14 of 12: the job ends there.
    assert_eq!(
        blocks(&[2, 0, 1], true, 20),
        [2, 0, 1, 5, 3, 4, 8, 6, 7, 11, 9, 10]
    );
}
