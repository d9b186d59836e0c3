//! Calibration: each profile against its published figures, through a tiny
//! closed-loop driver that talks to the device model directly (no simulator): keep N
//! requests outstanding, random offsets from a seeded PRNG, count completions over
//! simulated time.

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

fn request(op: Op, flags: ReqFlags, sector: u64, n: u32) -> Request {
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

fn dev(name: &str) -> Box<dyn Device> {
    devices::profile(name).unwrap().build()
}

#[track_caller]
fn within(what: &str, got: f64, published: f64, tol: f64) {
    let err = (got - published) / published;
    println!(
        "{what}: simulated {got:.1}, published {published:.1} ({:+.1}%)",
        err * 100.0
    );
    assert!(
        err.abs() <= tol,
        "{what}: simulated {got:.1} vs published {published:.1} ({:+.1}%, tolerance ±{:.0}%)",
        err * 100.0,
        tol * 100.0
    );
}

const TOL: f64 = 0.15;

/// One row of the calibration table.
struct Row {
    profile: &'static str,
    what: &'static str,
    op: Op,
    bs: u64,
    qd: u32,
    pat: Pat,
    /// Published figure: IOPS for 4 KiB, MB/s for 1 MiB.
    published: f64,
    secs: f64,
    warm: f64,
}

fn check(r: &Row) {
    let mut d = dev(r.profile);
    let run = closed_loop(d.as_mut(), r.qd, r.op, r.bs, r.pat, r.secs, r.warm, 7);
    let got = if r.bs >= 1 << 20 { run.mb_s } else { run.iops };
    within(&format!("{} {}", r.profile, r.what), got, r.published, TOL);
}

macro_rules! rows {
    ($($name:ident: $profile:expr, $what:expr, $op:expr, $bs:expr, $qd:expr, $pat:expr, $pub:expr, $secs:expr, $warm:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check(&Row { profile: $profile, what: $what, op: $op, bs: $bs, qd: $qd, pat: $pat, published: $pub, secs: $secs, warm: $warm });
            }
        )*
    };
}

const K4: u64 = 4096;
const M1: u64 = 1 << 20;
use Op::{Read as R, Write as W};
use Pat::{Rand, Seq};

rows! {
    // HDDs: QD1 random read is datasheet-derived: 1 / (avg seek + half a turn).
    hdd7200_randread_qd1: "hdd-7200", "4k randread QD1 IOPS", R, K4, 1, Rand, 78.7, 20.0, 0.0;
    hdd7200_seqread_1m: "hdd-7200", "1M seqread MB/s", R, M1, 1, Seq, 180.0, 5.0, 0.0;
    hdd7200_seqwrite_1m: "hdd-7200", "1M seqwrite MB/s", W, M1, 1, Seq, 180.0, 10.0, 2.0;
    mg04_randread_qd1: "mg04aca400n", "4k randread QD1 IOPS", R, K4, 1, Rand, 78.7, 20.0, 0.0;
    mg04_seqread_1m: "mg04aca400n", "1M seqread MB/s", R, M1, 1, Seq, 200.0, 5.0, 0.0;
    mg04_seqwrite_1m: "mg04aca400n", "1M seqwrite MB/s", W, M1, 1, Seq, 200.0, 10.0, 2.0;
    // SATA SSD: Samsung 870 EVO data sheet.
    ssd_randread_qd1: "ssd-sata", "4k randread QD1 IOPS", R, K4, 1, Rand, 13_000.0, 0.5, 0.0;
    ssd_randread_qd32: "ssd-sata", "4k randread QD32 IOPS", R, K4, 32, Rand, 98_000.0, 0.5, 0.0;
    ssd_randwrite_qd1: "ssd-sata", "4k randwrite QD1 IOPS", W, K4, 1, Rand, 36_000.0, 0.5, 0.1;
    ssd_randwrite_qd32: "ssd-sata", "4k randwrite QD32 IOPS", W, K4, 32, Rand, 88_000.0, 0.5, 0.1;
    ssd_seqread_1m: "ssd-sata", "1M seqread MB/s", R, M1, 32, Seq, 560.0, 0.5, 0.0;
    ssd_seqwrite_1m: "ssd-sata", "1M seqwrite MB/s", W, M1, 32, Seq, 530.0, 0.5, 0.1;
    // Intel 600p 128 GB: Intel's specification (no QD1 figures published).
    p600_randread_qd32: "nvme-600p-128g", "4k randread QD32 IOPS", R, K4, 32, Rand, 35_000.0, 0.5, 0.0;
    p600_randwrite_qd32: "nvme-600p-128g", "4k randwrite QD32 IOPS", W, K4, 32, Rand, 91_500.0, 0.5, 0.1;
    p600_seqread_1m: "nvme-600p-128g", "1M seqread MB/s", R, M1, 32, Seq, 770.0, 0.5, 0.0;
    p600_seqwrite_1m: "nvme-600p-128g", "1M seqwrite MB/s", W, M1, 32, Seq, 450.0, 0.5, 0.1;
    // PCIe 4 (980 PRO 1 TB data sheet; QD32 figures are QD32 x 16 threads = 512).
    gen4_randread_qd1: "nvme-gen4", "4k randread QD1 IOPS", R, K4, 1, Rand, 22_000.0, 0.2, 0.0;
    gen4_randread_qd32: "nvme-gen4", "4k randread QD32x16 IOPS", R, K4, 512, Rand, 1_000_000.0, 0.05, 0.0;
    gen4_randwrite_qd1: "nvme-gen4", "4k randwrite QD1 IOPS", W, K4, 1, Rand, 60_000.0, 0.2, 0.02;
    gen4_randwrite_qd32: "nvme-gen4", "4k randwrite QD32x16 IOPS", W, K4, 512, Rand, 1_000_000.0, 0.05, 0.01;
    gen4_seqread_1m: "nvme-gen4", "1M seqread MB/s", R, M1, 32, Seq, 7_000.0, 0.2, 0.0;
    gen4_seqwrite_1m: "nvme-gen4", "1M seqwrite MB/s", W, M1, 32, Seq, 5_000.0, 0.2, 0.05;
}

#[test]
fn print_table() {
    // `cargo test -p devices --test calibration print_table -- --nocapture` prints
    // every profile's figures (also those without a published counterpart).
    for p in [
        "hdd-7200",
        "mg04aca400n",
        "raid0-2x-mg04aca400n",
        "ssd-sata",
        "nvme-600p-128g",
        "nvme-gen4",
    ] {
        let rot = p.contains("hdd") || p.contains("mg04");
        let (s, w) = if rot { (10.0, 2.0) } else { (0.3, 0.05) };
        let mut line = format!("{p:<22}");
        for (op, bs, qd, pat) in [
            (R, K4, 1, Rand),
            (R, K4, 32, Rand),
            (W, K4, 1, Rand),
            (W, K4, 32, Rand),
            (R, M1, 1, Seq),
            (W, M1, 1, Seq),
            (R, 512, 1, Seq),
        ] {
            let mut d = dev(p);
            let r = closed_loop(d.as_mut(), qd, op, bs, pat, s, w, 7);
            let v = if bs >= M1 { r.mb_s } else { r.iops };
            line += &format!(" {v:>10.1}");
        }
        println!("{line}");
    }
}
