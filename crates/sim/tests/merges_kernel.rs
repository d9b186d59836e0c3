//! Merge counts against the running kernel (kernel 6.18, HZ 250, 2 CPUs, loop device
//! with direct I/O): `/sys/block/loopN/stat` read/write merges and the merge
//! tracepoints of recorded fio runs (`kernel-trace record --merges-only`) beside the
//! merges of the same fio job through our block layer. See docs/validation.md,
//! section 5, for the table and the explanation.

use sim::kernel_trace::merges::{simulate, LoopModel, MergeRecording, SimMerges};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel")
}

fn load(name: &str) -> (MergeRecording, SimMerges) {
    let p = dir().join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let rec = MergeRecording::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let ours = simulate(&rec, &LoopModel::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    (rec, ours)
}

fn all() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("merges-") && n.ends_with(".txt"))
        .collect();
    v.sort();
    v
}

/// Ours equals the kernel's, per direction, merges and requests alike, with the
/// kernel's (read, write) merges written out. Nothing here depends on timing: one
/// plugged batch; fio reaping whole batches (`iodepth_batch_complete_min` = batch);
/// fio's default reaping; synchronous I/O; `nomerges=1` and `2`.
const EXACT: [(&str, [u64; 2]); 20] = [
    ("merges-onebatch-read64-none.txt", [63, 0]),
    ("merges-onebatch-write64-ddl.txt", [0, 63]),
    ("merges-onebatch-write128-kyber.txt", [0, 127]),
    ("merges-onebatch-write64-nomerges2.txt", [0, 0]),
    ("merges-seqwrite-b16-cmin16-ddl.txt", [0, 1920]),
    ("merges-seqread-b32-cmin32-ddl.txt", [1984, 0]),
    ("merges-seqwrite-b32-cmin32-kyber.txt", [0, 1984]),
    ("merges-seqwrite-b32-cmin32-none.txt", [0, 1984]),
    ("merges-psync-read-ddl.txt", [0, 0]),
    ("merges-psync-write-ddl.txt", [0, 0]),
    ("merges-seqwrite-b64-nomerges2.txt", [0, 0]),
    ("merges-seqwrite-b64-nomerges1.txt", [0, 63]),
    ("merges-seqread-b16-ddl.txt", [30, 0]),
    ("merges-seqread-b16-kyber.txt", [15, 0]),
    ("merges-seqread-b64-ddl.txt", [63, 0]),
    ("merges-seqread-b64-none.txt", [63, 0]),
    ("merges-seqwrite-b16-ddl.txt", [0, 30]),
    ("merges-seqwrite-b16-none.txt", [0, 30]),
    ("merges-seqwrite-b64-ddl.txt", [0, 63]),
    ("merges-seqwrite-b64-kyber.txt", [0, 63]),
];

/// fio's default reaping (`iodepth_batch_complete_min` = `_max` = 1): the kernel
/// and we merge only the first fill of the queue (`iodepth / batch` batches of
/// `batch - 1` merges); after it fio reaps one completion per `io_getevents` and
/// commits one I/O per `io_submit`, and a single bio has nothing to merge with.
/// (name, merges in the one direction, iodepth, batch).
const FIRST_FILL: [(&str, u64, u64, u64); 8] = [
    ("merges-seqread-b16-ddl.txt", 30, 32, 16),
    ("merges-seqread-b16-kyber.txt", 15, 16, 16),
    ("merges-seqread-b64-ddl.txt", 63, 64, 64),
    ("merges-seqread-b64-none.txt", 63, 64, 64),
    ("merges-seqwrite-b16-ddl.txt", 30, 32, 16),
    ("merges-seqwrite-b16-none.txt", 30, 32, 16),
    ("merges-seqwrite-b64-ddl.txt", 63, 64, 64),
    ("merges-seqwrite-b64-kyber.txt", 63, 64, 64),
];

#[test]
fn kernel_stat_agrees_with_merge_tracepoints() {
    let names = all();
    assert!(names.len() >= 20, "recordings missing: {names:?}");
    for n in &names {
        let text = std::fs::read_to_string(dir().join(n)).unwrap();
        let rec = MergeRecording::parse(&text).unwrap();
        assert_eq!(
            Some(rec.kernel_merges()),
            rec.event_merges(),
            "{n}: stat merges vs block_rq_merge + block_bio_backmerge + block_bio_frontmerge"
        );
    }
}

#[test]
fn same_bios_submitted() {
    // ios + merges = bios submitted (4 KiB bios, never split): the same job ran.
    // With rw=rw the direction of each I/O is drawn at random (fio's generator is
    // not ours), so only the total is compared there.
    for n in all() {
        let (rec, ours) = load(&n);
        let (km, ki) = (rec.kernel_merges(), rec.kernel_ios());
        let total = |m: [u64; 2], i: [u64; 2]| m[0] + m[1] + i[0] + i[1];
        assert_eq!(
            total(km, ki),
            total(ours.merges, ours.ios),
            "{n}: bios submitted"
        );
        if n.contains("seqrw") {
            continue;
        }
        for d in 0..2 {
            assert_eq!(
                km[d] + ki[d],
                ours.merges[d] + ours.ios[d],
                "{n} dir {d}: bios submitted differ"
            );
        }
    }
}

#[test]
fn exact_merges_and_requests() {
    for (n, k) in EXACT {
        let (rec, ours) = load(n);
        assert_eq!(rec.kernel_merges(), k, "{n}: recorded kernel merges");
        assert_eq!(ours.merges, k, "{n}: our merges (read, write)");
        assert_eq!(ours.ios, rec.kernel_ios(), "{n}: requests (read, write)");
    }
}

#[test]
fn nomerges_one_keeps_plug_merges() {
    // nomerges=1 only stops the elevator's hash lookups: plug merges stay, in the
    // kernel and ours alike.
    let (rec1, ours1) = load("merges-seqwrite-b64-nomerges1.txt");
    let (rec0, ours0) = load("merges-seqwrite-b64-ddl.txt");
    assert_eq!(rec1.kernel_merges(), rec0.kernel_merges());
    assert_eq!(ours1.merges, ours0.merges);
}

#[test]
fn default_reaping_merges_the_first_fill_only() {
    for (n, merges, depth, batch) in FIRST_FILL {
        let (rec, ours) = load(n);
        let d = if n.contains("read") { 0 } else { 1 };
        let km = rec.kernel_merges();
        assert_eq!(km[d], merges, "{n}: recorded kernel merges");
        assert_eq!(km[1 - d], 0, "{n}: other direction");
        assert_eq!(merges, depth / batch * (batch - 1), "{n}: first fill only");
        assert_eq!(ours.merges, km, "{n}: ours");
    }
}

#[test]
fn mixed_read_write_merges_the_first_fill() {
    // rw=rw, iodepth 32, batch 32, default reaping: both merge only the first fill
    // (32 bios into one read and one write request: 30 merges, recorded 14/16, ours
    // 16/14; the read/write split is drawn by different generators).
    let (rec, ours) = load("merges-seqrw-b32-ddl.txt");
    let k = rec.kernel_merges();
    assert_eq!(k[0] + k[1], 30, "{k:?}");
    assert_eq!(ours.merges[0] + ours.merges[1], 30, "{:?}", ours.merges);
    for d in 0..2 {
        assert!(k[d] > 0 && ours.merges[d] > 0, "{k:?} {:?}", ours.merges);
        assert!(
            ours.merges[d].abs_diff(k[d]) <= 4,
            "{k:?} {:?}",
            ours.merges
        );
    }
}
