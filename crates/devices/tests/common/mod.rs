//! A tiny closed-loop driver that talks to a device model directly (no simulator):
//! keep N requests outstanding, random offsets from a seeded PRNG, count completions
//! over simulated time.
#![allow(dead_code)]

use blk::mq::QueueRqStatus;
use blk::{Bio, BioId, CgroupId, IoPrio, Ns, Op, ReqFlags, Request, RqId, Sector};
use devices::Device;

/// Access pattern.
#[derive(Clone, Copy, PartialEq)]
pub enum Pat {
    Rand,
    Seq,
}

/// A seeded xorshift PRNG (no global state).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

pub fn request(op: Op, flags: ReqFlags, sector: u64, n: u32) -> Request {
    let bio = Bio {
        op,
        flags,
        sector: Sector(sector),
        nr_sectors: n,
        ioprio: IoPrio::default(),
        pid: 1,
        cpu: 0,
        cgroup: CgroupId(0),
        owner: 0,
    };
    Request::from_bio(&bio, BioId(0), Ns(0))
}

/// Result of a closed-loop run.
#[derive(Debug)]
pub struct Run {
    pub iops: f64,
    pub mb_s: f64,
}

/// Keep `qd` requests of `bs` bytes outstanding for `secs` simulated seconds (the first
/// `warm` seconds not counted); random offsets come from `seed`.
#[allow(clippy::too_many_arguments)]
pub fn closed_loop(
    dev: &mut dyn Device,
    qd: u32,
    op: Op,
    bs: u64,
    pat: Pat,
    secs: f64,
    warm: f64,
    seed: u64,
) -> Run {
    let n = (bs / 512) as u32;
    let span = dev.info().capacity_sectors / n as u64;
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut free: Vec<u32> = (0..qd).rev().collect();
    let mut next_seq = 0u64;
    let mut now = Ns(0);
    let end = Ns((secs * 1e9) as u64);
    let start = Ns((warm * 1e9) as u64);
    let mut counted = 0u64;
    let mut done = Vec::new();
    let mut pending: Option<(u32, Request)> = None;
    while now < end {
        loop {
            let (id, rq) = match pending.take() {
                Some(x) => x,
                None => {
                    let Some(id) = free.pop() else { break };
                    let blk = match pat {
                        Pat::Rand => rng.next() % span,
                        Pat::Seq => {
                            next_seq += 1;
                            (next_seq - 1) % span
                        }
                    };
                    (id, request(op, ReqFlags::NONE, blk * n as u64, n))
                }
            };
            match dev.queue_rq(now, RqId(id), &rq, true) {
                QueueRqStatus::Ok => {}
                _ => {
                    pending = Some((id, rq));
                    break;
                }
            }
        }
        let Some(t) = dev.next_event() else {
            panic!("device idle with requests outstanding")
        };
        now = t.max(now);
        done.clear();
        dev.advance(now, &mut done);
        for id in &done {
            if now >= start && now < end {
                counted += 1;
            }
            free.push(id.0);
        }
    }
    let secs = secs - warm;
    let iops = counted as f64 / secs;
    Run {
        iops,
        mb_s: iops * bs as f64 / 1e6,
    }
}
