//! fio's latency, bandwidth and IOPS logs, end to end: the files a job writes
//! hold exactly the samples its report is made of, in fio's format.

use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::runner::{self, RunError, RunOptions};
use std::path::{Path, PathBuf};

/// A fresh directory for one test's log files.
fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-iolog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn opts(device: &str) -> RunOptions {
    RunOptions {
        seed: 7,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile(device).unwrap())
    }
}

/// Run `job` (with `@` replaced by the log directory) on `device`.
fn run_in(dir: &Path, device: &str, job: &str) -> Result<RunReport, RunError> {
    let text = job.replace('@', &dir.to_string_lossy());
    let input = parse_job_file("t.fio", &text).unwrap();
    let o = opts(device);
    let plan = runner::plan(&input, &o)?;
    runner::run(&input, &o, plan, None)
}

/// The log's lines, split into their numeric columns.
fn read_log(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|f| match f.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => f.parse().unwrap(),
                })
                .collect()
        })
        .collect()
}

fn mean(v: &[u64]) -> f64 {
    v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

const LAT_JOB: &str = "\
[global]
ioengine=libaio
direct=1
bs=4k
size=1m
write_lat_log=@/x
log_offset=1

[j]
rw=randread
iodepth=4
";

#[test]
fn lat_logs_have_one_line_per_io_equal_to_the_report() {
    let dir = tmpdir("lat");
    let rep = run_in(&dir, "ideal", LAT_JOB).unwrap();
    let st = &rep.jobs[0].stats.read;
    assert_eq!(st.total_ios, 256);
    for (kind, hist) in [("clat", &st.clat), ("lat", &st.lat), ("slat", &st.slat)] {
        let log = read_log(&dir.join(format!("x_{kind}.1.log")));
        assert_eq!(log.len() as u64, hist.count(), "{kind}");
        // time, value, direction, block size, offset, priority
        assert!(log
            .iter()
            .all(|l| l.len() == 6 && l[2] == 0 && l[3] == 4096 && l[5] == 0));
        let values: Vec<u64> = log.iter().map(|l| l[1]).collect();
        assert_eq!(*values.iter().min().unwrap(), hist.min(), "{kind}");
        assert_eq!(*values.iter().max().unwrap(), hist.max(), "{kind}");
        assert!(close(mean(&values), hist.mean()), "{kind}");
        // Times are ms since the start, in the order samples were taken.
        assert!(log.windows(2).all(|w| w[0][0] <= w[1][0]), "{kind}");
        assert!(log.last().unwrap()[0] <= st.runtime_ms);
        // The random map reads every 4 KiB block of the 1 MiB once.
        let mut offs: Vec<u64> = log.iter().map(|l| l[4]).collect();
        offs.sort_unstable();
        assert_eq!(
            offs,
            (0..256).map(|i| i * 4096).collect::<Vec<_>>(),
            "{kind}"
        );
    }
    // lat = slat + clat, I/O by I/O (the lat and clat logs are both in
    // completion order).
    let lat = read_log(&dir.join("x_lat.1.log"));
    let clat = read_log(&dir.join("x_clat.1.log"));
    let slat = st.slat.min();
    assert_eq!(st.slat.max(), slat, "the ideal device never delays a tag");
    for (l, c) in lat.iter().zip(&clat) {
        assert_eq!((l[0], l[4]), (c[0], c[4]));
        assert_eq!(l[1], c[1] + slat);
    }
    // Nothing but the logs is left in the directory.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["x_clat.1.log", "x_lat.1.log", "x_slat.1.log"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn logs_are_byte_identical_for_the_same_seed() {
    let job = format!("{LAT_JOB}write_bw_log=@/x\nwrite_iops_log=@/x\nlog_avg_msec=1\n");
    let a = tmpdir("det-a");
    let b = tmpdir("det-b");
    run_in(&a, "hdd-7200", &job).unwrap();
    run_in(&b, "hdd-7200", &job).unwrap();
    for kind in ["lat", "clat", "slat", "bw", "iops"] {
        let name = format!("x_{kind}.1.log");
        let x = std::fs::read(a.join(&name)).unwrap();
        assert!(!x.is_empty(), "{name}");
        assert_eq!(x, std::fs::read(b.join(&name)).unwrap(), "{name}");
    }
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::remove_dir_all(&b).unwrap();
}

#[test]
fn bw_and_iops_logs_without_averaging_sample_every_io() {
    // fio's per-unit logs: one sample per I/O, bytes * 10^6 / clat ns for the
    // bandwidth and 1 for IOPS; the report's bw and iops lines are made of them.
    let dir = tmpdir("unit");
    let job = "\
[j]
ioengine=psync
direct=1
rw=write
bs=8k
size=512k
write_bw_log=@/u
write_iops_log=@/u
write_lat_log=@/u
";
    let rep = run_in(&dir, "ideal", job).unwrap();
    let st = &rep.jobs[0].stats.write;
    let bw = read_log(&dir.join("u_bw.1.log"));
    let iops = read_log(&dir.join("u_iops.1.log"));
    let clat = read_log(&dir.join("u_clat.1.log"));
    assert_eq!(bw.len(), 64);
    assert_eq!(st.bw.count(), 64);
    assert_eq!(st.iops.count(), 64);
    for ((b, i), c) in bw.iter().zip(&iops).zip(&clat) {
        assert_eq!(b.len(), 5);
        assert_eq!((b[0], b[2], b[3]), (c[0], 1, 8192));
        assert_eq!(b[1], 8192 * 1_000_000 / c[1]);
        assert_eq!(&i[..], &[c[0], 1, 1, 8192, 0]);
    }
    let values: Vec<u64> = bw.iter().map(|l| l[1]).collect();
    assert!(close(mean(&values), st.bw.mean()));
    assert_eq!(st.iops.mean(), 1.0);
    // A synchronous engine has no submission latency: its slat log is empty.
    assert_eq!(
        std::fs::read_to_string(dir.join("u_slat.1.log")).unwrap(),
        ""
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn averaged_logs_hold_the_reports_window_samples() {
    // log_avg_msec=1000 over 3 s: the bandwidth and IOPS windows of the report
    // become 1 s, one log line each; the latency logs average per second.
    let dir = tmpdir("avg");
    let job = "\
[j]
ioengine=libaio
iodepth=8
direct=1
rw=randread
bs=4k
time_based
runtime=3
write_bw_log=@/a
write_iops_log=@/a
write_lat_log=@/a
log_avg_msec=1000
log_max_value=both
";
    let rep = run_in(&dir, "ssd-sata", job).unwrap();
    let st = &rep.jobs[0].stats.read;
    let bw = read_log(&dir.join("a_bw.1.log"));
    let iops = read_log(&dir.join("a_iops.1.log"));
    assert_eq!(st.bw.count(), 3);
    assert_eq!(
        bw.iter().map(|l| l[0]).collect::<Vec<_>>(),
        [1000, 2000, 3000]
    );
    // time, mean, max, direction, block size (0 when averaged), priority
    assert!(bw
        .iter()
        .all(|l| l.len() == 6 && l[1] == l[2] && l[3] == 0 && l[4] == 0));
    let b: Vec<u64> = bw.iter().map(|l| l[1]).collect();
    assert_eq!(*b.iter().min().unwrap(), st.bw.min());
    assert_eq!(*b.iter().max().unwrap(), st.bw.max());
    assert!(close(mean(&b), st.bw.mean()));
    let i: Vec<u64> = iops.iter().map(|l| l[1]).collect();
    assert_eq!(i.len() as u64, st.iops.count());
    assert!(close(mean(&i), st.iops.mean()));
    // IOPS × 4 KiB = KiB/s × 1024, window by window.
    for (bw, io) in b.iter().zip(&i) {
        assert_eq!(*bw, io * 4);
    }
    // Latency windows: about one line per second, each the rounded mean of
    // its window with the window's maximum beside it.
    let clat = read_log(&dir.join("a_clat.1.log"));
    assert!((3..=4).contains(&clat.len()), "{clat:?}");
    for l in &clat {
        assert!(l[1] <= l[2] && l[2] <= st.clat.max() && l[1] >= st.clat.min());
    }
    assert_eq!(clat.iter().map(|l| l[2]).max().unwrap(), st.clat.max());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shared_logs_without_per_job_logs() {
    // per_job_logs=0: both clones write to PREFIX_KIND.log, one after the other.
    let dir = tmpdir("shared");
    let job = "\
[j]
ioengine=psync
direct=1
rw=read
bs=4k
size=64k
numjobs=2
per_job_logs=0
write_lat_log=@/s
";
    run_in(&dir, "ideal", job).unwrap();
    let lat = read_log(&dir.join("s_lat.log"));
    assert_eq!(lat.len(), 32);
    assert!(!dir.join("s_lat.1.log").exists());
    assert!(lat.iter().all(|l| l.len() == 5 && l[3] == 4096));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn numbered_per_clone_in_fio_order_and_ramp_excluded() {
    let dir = tmpdir("ramp");
    let job = "\
[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=2
time_based
runtime=200ms
ramp_time=100ms

[a]
write_lat_log=@/a
numjobs=2

[b]
write_lat_log=@/b
log_prio=1
prioclass=1
prio=3
";
    let rep = run_in(&dir, "ssd-sata", job).unwrap();
    // Clones are numbered 1, 2 (job a) and 3 (job b), as fio numbers them.
    for (name, entry) in [
        ("a_clat.1.log", 0),
        ("a_clat.2.log", 1),
        ("b_clat.3.log", 2),
    ] {
        let log = read_log(&dir.join(name));
        let st = &rep.jobs[entry].stats.read;
        // Only I/O after the ramp is logged, timed from the ramp's end.
        assert_eq!(log.len() as u64, st.clat.count(), "{name}");
        assert!(log.iter().all(|l| l[0] <= st.runtime_ms), "{name}");
        let want_prio = if entry == 2 { (1 << 13) | 3 } else { 0 };
        assert!(log.iter().all(|l| l[4] == want_prio), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_log_path_fails_before_the_run_and_leaves_nothing() {
    let dir = tmpdir("bad");
    let job = "[j]\ndirect=1\nsize=64k\nwrite_lat_log=@/x\nwrite_bw_log=@/missing/y\n";
    let err = run_in(&dir, "ideal", job).unwrap_err();
    assert!(matches!(err, RunError::Log(_)), "{err}");
    assert!(err.to_string().contains("missing/y_bw.1.log"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn log_option_errors_name_the_line() {
    for (text, want) in [
        (
            "[j]\ndirect=1\nwrite_lat_log\nlog_issue_time=1\n",
            "t.fio:1: job 'j': log_issue_time requires write_lat_log and log_offset",
        ),
        ("[j]\ndirect=1\nlog_max_value=mean\n", "t.fio:3: "),
        ("[j]\ndirect=1\nlog_avg_msec=-1\n", "t.fio:3: "),
        (
            "[j]\ndirect=1\nlog_store_compressed=1\n",
            "t.fio:3: option 'log_store_compressed' is not modeled yet",
        ),
    ] {
        let e = parse_job_file("t.fio", text).unwrap_err().to_string();
        assert!(e.starts_with(want), "{text:?}: {e}");
    }
    // A bare write_lat_log names the logs after the job; log_issue_time adds
    // the issue time of clat and slat samples.
    let input = parse_job_file(
        "t.fio",
        "[myjob]\ndirect=1\nwrite_lat_log\nlog_offset=1\nlog_issue_time=1\n",
    )
    .unwrap();
    assert_eq!(input.jobs[0].logs.lat_prefix.as_deref(), Some("myjob"));
    assert!(input.ignored.is_empty(), "{:?}", input.ignored);
}

#[test]
fn bwavgtime_and_iopsavgtime_set_the_sampling_windows() {
    let dir = tmpdir("avgtime");
    let base =
        "[j]\nioengine=libaio\niodepth=4\ndirect=1\nrw=randread\nbs=4k\ntime_based\nruntime=4\n";
    // Without logs: one bandwidth sample per second, one IOPS sample per 250 ms.
    let rep = run_in(
        &dir,
        "ssd-sata",
        &format!("{base}bwavgtime=1000\niopsavgtime=250\n"),
    )
    .unwrap();
    let st = &rep.jobs[0].stats.read;
    assert_eq!((st.bw.count(), st.iops.count()), (4, 16));
    // Given explicitly, bwavgtime stays the sampling window and the log
    // averages over the smaller of it and log_avg_msec (fio's add_job).
    let rep = run_in(
        &dir,
        "ssd-sata",
        &format!("{base}bwavgtime=1000\nlog_avg_msec=2000\nwrite_bw_log=@/w\n"),
    )
    .unwrap();
    let bw = read_log(&dir.join("w_bw.1.log"));
    assert_eq!(
        bw.iter().map(|l| l[0]).collect::<Vec<_>>(),
        [1000, 2000, 3000, 4000]
    );
    assert_eq!(rep.jobs[0].stats.read.bw.count(), 4);
    // With log_avg_msec=0 the log samples every I/O, and so does the report.
    let rep = run_in(
        &dir,
        "ssd-sata",
        &format!("{base}bwavgtime=1000\nwrite_bw_log=@/u\n"),
    )
    .unwrap();
    let st = &rep.jobs[0].stats.read;
    assert_eq!(st.bw.count(), st.total_ios);
    for bad in ["bwavgtime=0", "iopsavgtime=x"] {
        let e = parse_job_file("t.fio", &format!("[j]\ndirect=1\n{bad}\n")).unwrap_err();
        assert!(e.to_string().starts_with("t.fio:3:"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
