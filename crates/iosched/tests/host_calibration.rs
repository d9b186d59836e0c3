//! The host model against the published figures of docs/hosts.md ("Calibration"):
//! the one fitted figure within 5 %, the predictions within the bounds the table
//! states. Each runs the source's own fio job.

use std::process::Command;

/// The January 2024 scalability job (`fio --bs=512 --ioengine=io_uring ...`), with
/// `threads` jobs, as `iosched fio` arguments.
fn scaletest(threads: u32) -> Vec<String> {
    [
        "--name=scaletest",
        "--bs=512",
        "--group_reporting=1",
        "--gtod_reduce=1",
        "--invalidate=1",
        "--ioengine=io_uring",
        "--norandommap",
        "--runtime=50ms",
        "--rw=randread",
        "--thread",
        "--time_based=1",
        "--buffered=0",
        "--fixedbufs=1",
        "--iodepth=4",
        "--iodepth_batch_submit=4",
        "--iodepth_batch_complete=4",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--numjobs={threads}")])
    .collect()
}

fn iops(threads: u32, ours: &[&str]) -> f64 {
    let out = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .arg("fio")
        .args(scaletest(threads))
        .args(ours)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run iosched");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["jobs"][0]["read"]["iops"].as_f64().unwrap()
}

#[track_caller]
fn within(what: &str, ours: f64, published: f64, lo: f64, hi: f64) {
    let r = ours / published;
    assert!(
        (lo..=hi).contains(&r),
        "{what}: ours {ours:.0} published {published:.0} ratio {r:.2} not in {lo}..{hi}"
    );
}

#[test]
fn mq_deadline_lock_contention_on_the_7950x() {
    let h = ["--host", "ryzen-7950x", "--sched", "mq-deadline"];
    let dd = iops(32, &[&h[..], &["--device", "nullb"]].concat());
    within("mq-deadline null_blk (fitted)", dd, 879e3, 0.95, 1.05);
    let nvme = iops(32, &[&h[..], &["--device", "nullb-mq"]].concat());
    within("mq-deadline nvme0n1", nvme, 901e3, 0.75, 1.25);
    let lists = iops(
        32,
        &[
            &h[..],
            &["--device", "nullb", "--set", "mq-deadline.insert_lists=1"],
        ]
        .concat(),
    );
    within("insertion lists null_blk", lists, 2867e3, 0.5, 2.0);
    assert!(lists > 1.5 * dd, "insertion lists {lists} vs {dd}");
}

#[test]
fn bfq_ceilings() {
    let bfq = iops(
        32,
        &[
            "--host",
            "ryzen-7950x",
            "--sched",
            "bfq",
            "--device",
            "nullb-mq",
        ],
    );
    within("BFQ nvme0n1 (7950X)", bfq, 567e3, 0.75, 1.25);
    let laptop = iops(
        8,
        &[
            "--host",
            "laptop-4c",
            "--sched",
            "bfq",
            "--device",
            "nullb-mq",
        ],
    );
    within("BFQ i7-4850HQ ceiling", laptop, 400e3, 0.75, 1.25);
    let none = iops(
        8,
        &[
            "--host",
            "laptop-4c",
            "--sched",
            "none",
            "--device",
            "nullb-mq",
        ],
    );
    assert!(none > 2.0 * laptop, "none {none} BFQ {laptop}");
}
