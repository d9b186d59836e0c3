//! fio options added for fio's own example jobs: `io_size`, `loops`,
//! `blockalign`, and the switches that change fio's report without changing
//! the I/O (`*_percentiles`, `disable_*`, `gtod_reduce`, `disk_util`,
//! `thread`), plus json+'s bins. Each is checked end to end through the
//! runner, against what the same job without the option does.

use sim::fio::parse_job_file;
use sim::report::{json, text, RunReport};
use sim::runner::{self, RunOptions};
use std::path::PathBuf;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-cov-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn report(job: &str) -> RunReport {
    let input = parse_job_file("t.fio", job).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed: 3,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    runner::run(&input, &o, plan, None).unwrap()
}

/// The offsets of every I/O of a one-job run, from its clat log.
fn offsets(name: &str, job: &str) -> Vec<(u64, u64)> {
    let dir = tmpdir(name);
    let prefix = dir.join("x").to_string_lossy().into_owned();
    report(&format!("{job}write_lat_log={prefix}\nlog_offset=1\n"));
    let log = std::fs::read_to_string(format!("{prefix}_clat.1.log")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    log.lines()
        .map(|l| {
            let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
            (f[3], f[4])
        })
        .collect()
}

const K: u64 = 1024;
const M: u64 = K * K;

fn read_bytes(r: &RunReport) -> u64 {
    r.jobs.iter().map(|j| j.stats.read.io_bytes).sum()
}

#[test]
fn io_size_and_loops_set_how_much_is_done() {
    let base = "[j]\ndirect=1\nrw=read\nbs=4k\nsize=1m\n";
    assert_eq!(read_bytes(&report(base)), M);
    // More than the region: fio wraps over it.
    assert_eq!(read_bytes(&report(&format!("{base}io_size=3m\n"))), 3 * M);
    assert_eq!(
        read_bytes(&report(&format!("{base}io_limit=512k\n"))),
        512 * K
    );
    assert_eq!(read_bytes(&report(&format!("{base}loops=4\n"))), 4 * M);
    assert_eq!(
        read_bytes(&report(&format!("{base}loops=2\nio_size=256k\n"))),
        512 * K
    );
    // A random job loops over a new pass of its random map each time: every
    // block exactly `loops` times.
    let ios = offsets(
        "loops",
        "[j]\ndirect=1\nrw=randread\nbs=4k\nsize=64k\nloops=3\n",
    );
    assert_eq!(ios.len(), 48);
    for b in 0..16 {
        assert_eq!(
            ios.iter().filter(|io| io.1 == b * 4 * K).count(),
            3,
            "{ios:?}"
        );
    }
}

#[test]
fn blockalign_aligns_random_offsets_only() {
    let ios = offsets(
        "ba",
        "[j]\ndirect=1\nrw=randread\nbs=8k\nba=2k\nsize=1m\nnorandommap\nio_size=32000k\n",
    );
    assert_eq!(ios.len(), 4000);
    assert!(ios
        .iter()
        .all(|io| io.1 % (2 * K) == 0 && io.1 + 8 * K <= M));
    // Without blockalign every offset is a multiple of the block size; with
    // it, offsets between them occur (about 3 in 4).
    let odd = ios.iter().filter(|io| io.1 % (8 * K) != 0).count();
    assert!(odd > 2500, "{odd}");
    let plain = offsets(
        "noba",
        "[j]\ndirect=1\nrw=randread\nbs=8k\nsize=1m\nnorandommap\nio_size=4m\n",
    );
    assert!(plain.iter().all(|io| io.1 % (8 * K) == 0));
    // Sequential offsets ignore it, as in fio.
    let seq = offsets("baseq", "[j]\ndirect=1\nrw=read\nbs=8k\nba=2k\nsize=64k\n");
    let want: Vec<u64> = (0..8).map(|i| i * 8 * K).collect();
    assert_eq!(seq.iter().map(|io| io.1).collect::<Vec<_>>(), want);
}

#[test]
fn bad_values_are_refused_with_file_and_line() {
    for (opt, want) in [
        ("loops=0", "below the minimum"),
        ("loops=x", "loops"),
        ("io_size=10%", "io_size as a percentage"),
        ("io_size=1m-2m", "single size"),
        ("ba=0", "below the minimum"),
        ("ba=1000", "not a multiple of 512"),
        ("blockalign=4q", "malformed number"),
        ("clat_percentiles=2", "expected 0 or 1"),
        ("gtod_reduce=yes", "gtod_reduce"),
        ("disk_util=x", "disk_util"),
        ("threads=x", "threads"),
        (
            "random_generator=mt",
            "invalid value 'mt' for random_generator",
        ),
        ("zonemode=strided", "zonemode=strided is not modeled yet"),
        ("zonemode=zone", "invalid value 'zone' for zonemode"),
        (
            "zone_reset_threshold=1.5",
            "invalid value '1.5' for zone_reset_threshold (a fraction from 0 to 1)",
        ),
        ("zone_reset_frequency=x", "for zone_reset_frequency"),
        ("max_open_zones=4097", "max_open_zones"),
        ("job_max_open_zones=-1", "job_max_open_zones"),
        ("zonesize=1q", "malformed number"),
        ("read_beyond_wp=2", "expected 0 or 1"),
        (
            "zonecapacity=1g",
            "zonemode=zbd takes its zones from a zoned device",
        ),
    ] {
        let e = parse_job_file("t.fio", &format!("[j]\ndirect=1\n{opt}\n")).unwrap_err();
        assert!(e.to_string().contains(want), "{opt}: {e}");
        assert_eq!(e.file(), Some("t.fio"), "{opt}");
        assert!(e.line().is_some(), "{opt}");
    }
}

const JOB: &str = "[j]\ndirect=1\nrw=randread\nbs=4k\nsize=4m\n";

#[test]
fn percentile_switches_change_the_report_as_in_fio() {
    let j = |extra: &str| json::to_value(&report(&format!("{JOB}{extra}")));
    let plain = j("");
    let r = &plain["jobs"][0]["read"];
    assert!(r["clat_ns"].get("percentile").is_some());
    assert!(r["lat_ns"].get("percentile").is_none());
    let v = j("lat_percentiles=1\nslat_percentiles=1\nclat_percentiles=0\n");
    let r = &v["jobs"][0]["read"];
    assert!(r["clat_ns"].get("percentile").is_none());
    assert!(r["lat_ns"].get("percentile").is_some());
    // psync has no slat samples, so no slat percentiles, as in fio.
    assert!(r["slat_ns"].get("percentile").is_none());
    // The I/O is the same: only the report changed.
    assert_eq!(r["lat_ns"]["N"], plain["jobs"][0]["read"]["lat_ns"]["N"]);
    let t = text::to_string(&report(&format!(
        "{JOB}lat_percentiles=1\nclat_percentiles=0\n"
    )));
    assert!(t.contains("\n    lat percentiles ("), "{t}");
    assert!(!t.contains("clat percentiles"), "{t}");
}

#[test]
fn gtod_reduce_reports_only_what_fio_measures() {
    let full = report(JOB);
    let red = report(&format!("{JOB}gtod_reduce=1\n"));
    let (f, r) = (&full.jobs[0].stats.read, &red.jobs[0].stats.read);
    assert_eq!(f.io_bytes, r.io_bytes);
    assert!(f.clat.count() > 0);
    assert_eq!((r.clat.count(), r.lat.count(), r.bw.count()), (0, 0, 0));
    let t = text::to_string(&red);
    assert!(t.contains("  read: IOPS="), "{t}");
    for gone in [
        "clat (",
        "lat (",
        "bw (",
        "iops        :",
        "clat percentiles",
    ] {
        assert!(!t.contains(gone), "{gone}: {t}");
    }
    // disable_clat alone keeps the total latency.
    let dc = report(&format!("{JOB}disable_clat=1\n"));
    assert_eq!(dc.jobs[0].stats.read.clat.count(), 0);
    assert!(dc.jobs[0].stats.read.lat.count() > 0);
}

#[test]
fn disk_util_and_thread() {
    let t = text::to_string(&report(&format!("{JOB}disk_util=0\n")));
    assert!(!t.contains("Disk stats"), "{t}");
    assert!(json::to_value(&report(&format!("{JOB}disk_util=0\n")))
        .get("disk_util")
        .is_none());
    assert!(text::to_string(&report(JOB)).contains("Disk stats (read/write):"));
    let t = text::to_string(&report(
        "[t]\ndirect=1\nthread\nnumjobs=2\nsize=1m\n[p]\ndirect=1\nsize=1m\n",
    ));
    assert!(t.contains("\nStarting 2 threads and 1 process\n"), "{t}");
    let t = text::to_string(&report("[t]\ndirect=1\nthread\nsize=1m\n"));
    assert!(t.contains("\nStarting 1 thread\n"), "{t}");
}

#[test]
fn json_plus_bins_hold_every_sample() {
    let rep = report(JOB);
    let v: serde_json::Value = serde_json::from_str(&json::to_string_plus(&rep)).unwrap();
    let clat = &v["jobs"][0]["read"]["clat_ns"];
    let bins = clat["bins"].as_object().expect("json+ has bins");
    let n: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(n, clat["N"].as_u64().unwrap());
    let lo: u64 = bins
        .keys()
        .map(|k| k.parse::<u64>().unwrap())
        .min()
        .unwrap();
    let hi: u64 = bins
        .keys()
        .map(|k| k.parse::<u64>().unwrap())
        .max()
        .unwrap();
    let (min, max) = (clat["min"].as_u64().unwrap(), clat["max"].as_u64().unwrap());
    // A bin's value is its middle: within 1/64 of the samples in it.
    assert!(lo.abs_diff(min) * 64 <= min.max(64), "{lo} vs {min}");
    assert!(hi.abs_diff(max) * 64 <= max.max(64), "{hi} vs {max}");
    // Only where percentiles are shown, and plain JSON has none.
    assert!(v["jobs"][0]["read"]["lat_ns"].get("bins").is_none());
    assert!(json::to_value(&rep)["jobs"][0]["read"]["clat_ns"]
        .get("bins")
        .is_none());
}

#[test]
fn fio_version_is_parseable() {
    let v = json::to_value(&report(JOB));
    let s = v["fio version"].as_str().unwrap();
    let (major, minor) = s.strip_prefix("fio-").unwrap().split_once('.').unwrap();
    assert!(
        major.parse::<u32>().is_ok() && minor.parse::<u32>().is_ok(),
        "{s}"
    );
    assert_eq!(v["iosched"]["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn rw_suffixes_follow_fios_offsets() {
    let offs = |name, job: &str| -> Vec<u64> { offsets(name, job).iter().map(|io| io.1).collect() };
    // fio's backwards-read.fio: the first read at 0, then from the end down
    // (fio 3.33 on a 64 KiB file gives exactly this sequence).
    let got = offs("back", "[j]\ndirect=1\nbs=4k\nrw=read:-8k\nsize=64k\n");
    let mut want = vec![0];
    want.extend((1..=14).rev().map(|i| i * 4 * K));
    want.push(0);
    assert_eq!(got, want);
    // Holes: every other block, then around again until size bytes are done.
    let got = offs("holes", "[j]\ndirect=1\nbs=4k\nrw=write:4k\nsize=64k\n");
    let pass: Vec<u64> = (0..8).map(|i| i * 8 * K).collect();
    assert_eq!(got, [pass.clone(), pass].concat());
    // randread:4: runs of four sequential reads from each random offset.
    let got = offs(
        "runs",
        "[j]\ndirect=1\nbs=4k\nrw=randread:4\nsize=1m\nio_size=256k\n",
    );
    assert_eq!(got.len(), 64);
    let mut starts = 0;
    for run in got.chunks(4) {
        if run.windows(2).all(|w| w[1] == w[0] + 4 * K) {
            starts += 1;
        }
    }
    // A run is cut short only where it would pass the end of the region.
    assert!(starts >= 14, "{got:?}");
    let plain = offs(
        "rand",
        "[j]\ndirect=1\nbs=4k\nrw=randread\nsize=1m\nio_size=256k\n",
    );
    let seqs = plain.windows(2).filter(|w| w[1] == w[0] + 4 * K).count();
    assert!(seqs < 8, "{plain:?}");
    for (rw, want) in [
        ("randread:0", "at least 1"),
        ("randread:x", "count of I/Os"),
        ("read:4q", "malformed number"),
        ("sideways:8", "invalid value 'sideways'"),
    ] {
        let e = parse_job_file("t.fio", &format!("[j]\ndirect=1\nrw={rw}\n")).unwrap_err();
        assert!(e.to_string().contains(want), "{rw}: {e}");
        assert_eq!((e.file(), e.line()), (Some("t.fio"), Some(3)), "{rw}");
    }
}

#[test]
fn terse_lines_have_fios_layout() {
    let rep = report(&format!("{JOB}description=a test\n"));
    // fio 3.33 writes 130, 171 and 189 fields for one job on one disk
    // (versions 3, 4, 5), the description one more.
    for (ver, fields) in [(3, 131), (4, 172), (5, 190)] {
        let t = sim::report::terse::to_string(&rep, ver);
        assert_eq!(t.lines().count(), 1, "{t}");
        let f: Vec<&str> = t.trim_end().split(';').collect();
        assert_eq!(f.len(), fields, "v{ver}: {t}");
        assert_eq!(f[0], ver.to_string());
        assert_eq!((f[1], f[2], f[3], f[4]), ("fio-3.42", "j", "0", "0"));
        let st = &rep.jobs[0].stats.read;
        assert_eq!(f[5], (st.io_bytes >> 10).to_string());
        assert_eq!(f[8], st.runtime_ms.to_string());
        // clat min/max in µs, then the first percentile as fio prints it.
        assert_eq!(f[13], (st.clat.min() / 1000).to_string());
        assert_eq!(f[14], (st.clat.max() / 1000).to_string());
        assert!(f[17].starts_with("1.000000%="), "{}", f[17]);
        assert_eq!(*f.last().unwrap(), "a test");
    }
}
