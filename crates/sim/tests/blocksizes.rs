//! `bssplit` and `bsrange` end to end: the sizes and offsets a job issues, seen
//! through its completion-latency log (with `log_offset=1`).

use sim::fio::{parse_job_file, BsDist};
use sim::report::RunReport;
use sim::runner::{self, RunOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-bs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `job` on `ideal` with a clat log; (report, per I/O: direction, bytes,
/// offset), in completion order.
fn run(name: &str, job: &str) -> (RunReport, Vec<(u64, u64, u64)>) {
    let dir = tmpdir(name);
    let prefix = dir.join("x").to_string_lossy().into_owned();
    let text = format!("{job}write_lat_log={prefix}\nlog_offset=1\n");
    let input = parse_job_file("t.fio", &text).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed: 3,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    let rep = runner::run(&input, &o, plan, None).unwrap();
    let log = std::fs::read_to_string(format!("{prefix}_clat.1.log")).unwrap();
    let ios = log
        .lines()
        .map(|l| {
            let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
            (f[2], f[3], f[4])
        })
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    (rep, ios)
}

fn shares(ios: &[(u64, u64, u64)], dir: u64) -> BTreeMap<u64, f64> {
    let mine: Vec<_> = ios.iter().filter(|io| io.0 == dir).collect();
    let mut m = BTreeMap::new();
    for io in &mine {
        *m.entry(io.1).or_insert(0.0) += 1.0 / mine.len() as f64;
    }
    m
}

const K: u64 = 1024;

#[test]
fn bssplit_shares_over_many_ios() {
    let (rep, ios) = run(
        "split",
        "[j]\ndirect=1\nrw=randread\nsize=1g\ntime_based\nruntime=60\nnumber_ios=20000\nbssplit=4k/50:64k/40:1m/10\n",
    );
    assert_eq!(ios.len(), 20_000);
    let s = shares(&ios, 0);
    assert_eq!(
        s.keys().copied().collect::<Vec<_>>(),
        [4 * K, 64 * K, 1024 * K]
    );
    for (bs, want) in [(4 * K, 0.5), (64 * K, 0.4), (1024 * K, 0.1)] {
        assert!((s[&bs] - want).abs() < 0.015, "{bs}: {s:?}");
    }
    // Random offsets are aligned to the smallest size and stay in the region.
    assert!(ios
        .iter()
        .all(|io| io.2 % (4 * K) == 0 && io.2 + io.1 <= 1 << 30));
    // The start line shows the range, as fio's does.
    assert_eq!(rep.jobs[0].bs[0], (4 * K, 1024 * K));
    let bytes: u64 = ios.iter().map(|io| io.1).sum();
    assert_eq!(rep.jobs[0].stats.read.io_bytes, bytes);
}

#[test]
fn bssplit_per_direction() {
    let (_, ios) = run(
        "dirs",
        "[j]\ndirect=1\nrw=randrw\nsize=256m\nnumber_ios=4000\nbssplit=4k/25:8k/75,64k\n",
    );
    let r = shares(&ios, 0);
    assert!(
        (r[&(4 * K)] - 0.25).abs() < 0.03 && (r[&(8 * K)] - 0.75).abs() < 0.03,
        "{r:?}"
    );
    assert_eq!(
        shares(&ios, 1).keys().copied().collect::<Vec<_>>(),
        [64 * K]
    );
    // An empty part leaves its direction alone: reads keep bs.
    let (rep, ios) = run(
        "dirs2",
        "[j]\ndirect=1\nrw=randrw\nbs=16k\nsize=256m\nnumber_ios=2000\nbssplit=,4k/50:8k/50\n",
    );
    assert_eq!(
        shares(&ios, 0).keys().copied().collect::<Vec<_>>(),
        [16 * K]
    );
    assert_eq!(shares(&ios, 1).len(), 2);
    assert_eq!(rep.jobs[0].bs[0], (16 * K, 16 * K));
    assert_eq!(rep.jobs[0].bs[1], (4 * K, 8 * K));
}

#[test]
fn bsrange_sequential_reads_follow_each_other() {
    // 4k-16k: multiples of 4 KiB, equally likely; a sequential job's I/Os are
    // contiguous (psync: completion order is issue order) and wrap at the end
    // of the region.
    let (_, ios) = run(
        "range",
        "[j]\ndirect=1\nrw=read\nsize=1m\ntime_based\nruntime=200ms\nbsrange=4k-16k\n",
    );
    let s = shares(&ios, 0);
    for bs in [4 * K, 8 * K, 12 * K, 16 * K] {
        assert!((s[&bs] - 0.25).abs() < 0.03, "{s:?}");
    }
    let mut wraps = 0;
    for w in ios.windows(2) {
        let (prev, next) = (w[0], w[1]);
        if next.2 == 0 {
            wraps += 1;
            // The previous I/O left less than the smallest size before the end.
            assert!((1 << 20) - (prev.2 + prev.1) < 4 * K, "{prev:?} {next:?}");
        } else {
            assert_eq!(next.2, prev.2 + prev.1, "{prev:?} {next:?}");
        }
    }
    assert!(wraps >= 10, "{wraps}");
    assert!(ios.iter().all(|io| io.2 + io.1 <= 1 << 20));
}

#[test]
fn block_size_option_errors() {
    for (opt, want) in [
        ("bsrange=4k", "expected a block size range MIN-MAX"),
        ("bsrange=0-4k", "at least 1"),
        ("bssplit=4k/90:8k/20:16k:32k", "add to more than 100%"),
        ("bssplit=4k/50:0/50", "at least 1"),
        ("bs=4k-8k", "bsrange=MIN-MAX"),
    ] {
        let e = parse_job_file("t.fio", &format!("[j]\ndirect=1\n{opt}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.fio:3:") && e.contains(want), "{opt}: {e}");
    }
    // bs after bssplit makes the sizes fixed again (fio: min_bs == max_bs).
    let input = parse_job_file("t.fio", "[j]\ndirect=1\nbssplit=4k:8k\nbs=16k\n").unwrap();
    assert_eq!(input.jobs[0].bs_dist[0], None);
    let input = parse_job_file("t.fio", "[j]\ndirect=1\nbsrange=512-2k,8k-8k\n").unwrap();
    assert_eq!(
        input.jobs[0].bs_dist,
        [
            Some(BsDist::Range {
                min: 512,
                max: 2048
            }),
            None,
            None
        ]
    );
    // Sizes direct I/O cannot issue are refused when the job is planned.
    let input = parse_job_file("t.fio", "[j]\ndirect=1\nbssplit=4k/50:5000/50\n").unwrap();
    let o = RunOptions {
        seed: 3,
        nr_cpus: 4,
        write_logs: false,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let e = runner::plan(&input, &o).err().unwrap().to_string();
    assert!(e.contains("5000 is not a multiple of 512"), "{e}");
}
