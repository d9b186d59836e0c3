//! Calibration: each profile against its published figures (see docs/devices.md),
//! through the closed-loop driver in `common`.

mod common;
use blk::Op;
use common::{closed_loop, Pat};
use devices::Device;

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

#[test]
fn hdd_sequential_small_reads_are_media_bound_at_any_depth() {
    for qd in [1, 4, 32] {
        let mut d = dev("hdd-7200");
        let r = closed_loop(d.as_mut(), qd, R, K4, Seq, 3.0, 0.5, 7);
        println!("qd{qd}: {:.1} MB/s {:.0} IOPS", r.mb_s, r.iops);
        // Never faster than the media; at least the cache-hit ceiling (1 / 57 µs).
        assert!(
            r.mb_s < 185.0 && r.iops > 15_000.0,
            "qd{qd}: {:.1} MB/s",
            r.mb_s
        );
    }
}
