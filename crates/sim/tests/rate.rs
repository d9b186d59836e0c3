//! fio's rate limiting (`rate`, `rate_iops`, `rate_process`,
//! `rate_ignore_thinktime`) on the `ideal` device, which is far faster than the
//! limits, so the limits alone set the pace.

use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::runner::{self, RunOptions};
use std::path::PathBuf;

fn run_seeded(job: &str, seed: u64) -> RunReport {
    let input = parse_job_file("t.fio", job).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    runner::run(&input, &o, plan, None).unwrap()
}

fn run(job: &str) -> RunReport {
    run_seeded(job, 1)
}

const BASE: &str = "[j]\ndirect=1\nrw=randread\nbs=4k\ntime_based\nruntime=2\n";

#[test]
fn rate_iops_holds_the_rate() {
    for engine in ["psync", "libaio\niodepth=8", "io_uring\niodepth=32"] {
        let r = run(&format!("{BASE}rate_iops=1000\nioengine={engine}\n"));
        let st = &r.jobs[0].stats.read;
        assert!(
            (st.iops_f64() - 1000.0).abs() <= 1.0,
            "{engine}: {}",
            st.iops_f64()
        );
        assert!(
            (1999..=2001).contains(&st.total_ios),
            "{engine}: {}",
            st.total_ios
        );
    }
}

#[test]
fn rate_in_bytes_and_its_precedence_over_rate_iops() {
    let r = run(&format!("{BASE}rate=4m\n"));
    let bw = r.jobs[0].stats.read.bw_bytes() as f64;
    assert!((bw / (4 << 20) as f64 - 1.0).abs() < 0.002, "{bw}");
    // fio's setup_rate: a direction's rate wins over its rate_iops.
    let r = run(&format!("{BASE}rate=400k\nrate_iops=1000\n"));
    let iops = r.jobs[0].stats.read.iops_f64();
    assert!((iops - 100.0).abs() <= 1.0, "{iops}");
}

#[test]
fn per_direction_limits() {
    let r = run(&format!("{BASE}rw=randrw\nrate_iops=500,100\n"));
    let st = &r.jobs[0].stats;
    assert!(
        (st.read.iops_f64() - 500.0).abs() <= 1.0,
        "{}",
        st.read.iops_f64()
    );
    assert!(
        (st.write.iops_f64() - 100.0).abs() <= 1.0,
        "{}",
        st.write.iops_f64()
    );
    // `rate=,400k`: writes only; reads run as fast as the device lets them.
    let r = run(&format!("{BASE}rw=randrw\nrwmixread=90\nrate=,400k\n"));
    let st = &r.jobs[0].stats;
    assert!(
        (st.write.iops_f64() - 100.0).abs() <= 1.0,
        "{}",
        st.write.iops_f64()
    );
    assert!(st.read.iops_f64() > 5_000.0, "{}", st.read.iops_f64());
}

#[test]
fn an_async_job_ahead_of_its_rate_drains_its_queue_before_sleeping() {
    // fio's rate_ddir quiesces (waits for all I/O in flight) before it sleeps,
    // so a rate-limited job far below the device's speed runs at depth 1.
    let r = run(&format!(
        "{BASE}ioengine=libaio\niodepth=16\nrate_iops=2000\n"
    ));
    assert!(r.jobs[0].stats.depth_dist()[0] > 99.0);
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-rate-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Gaps between consecutive issues, µs, from a clat log with issue times.
fn issue_gaps(job: &str, seed: u64, dir: &std::path::Path) -> Vec<f64> {
    let prefix = dir.join("g").to_string_lossy().into_owned();
    run_seeded(
        &format!("{job}write_lat_log={prefix}\nlog_offset=1\nlog_issue_time=1\n"),
        seed,
    );
    let text = std::fs::read_to_string(format!("{prefix}_clat.1.log")).unwrap();
    let mut issues: Vec<u64> = text
        .lines()
        .map(|l| l.rsplit(", ").next().unwrap().parse().unwrap())
        .collect();
    issues.sort_unstable();
    issues
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e3)
        .collect()
}

fn mean_cv(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
    (m, var.sqrt() / m)
}

#[test]
fn poisson_gaps_are_exponential_and_seeded() {
    let dir = tmpdir("poisson");
    let job = "[j]\ndirect=1\nrw=randread\nbs=4k\ntime_based\nruntime=10\nrate_iops=1000\n";
    // Linear: one I/O per ms, like clockwork.
    let (m, cv) = mean_cv(&issue_gaps(job, 1, &dir));
    assert!(
        (m - 1000.0).abs() < 1.0 && cv < 0.01,
        "linear: mean {m} cv {cv}"
    );
    // Poisson: exponential gaps, mean 1 ms and standard deviation as large.
    let poisson = format!("{job}rate_process=poisson\n");
    let gaps = issue_gaps(&poisson, 1, &dir);
    let (m, cv) = mean_cv(&gaps);
    assert!((m - 1000.0).abs() < 40.0, "poisson mean {m}");
    assert!((cv - 1.0).abs() < 0.05, "poisson cv {cv}");
    // The same seed gives the same process, another seed another one.
    assert_eq!(gaps, issue_gaps(&poisson, 1, &dir));
    assert_ne!(gaps, issue_gaps(&poisson, 2, &dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn thinktime_is_caught_up_unless_ignored() {
    // 2 ms of thinking after every 10 I/Os: by default fio catches up the I/O
    // the stall missed, so the rate holds; with rate_ignore_thinktime it lets
    // them go (crediting all but one block), and each 10 I/Os take 9 ms of
    // rate plus 2 ms of thinking.
    let job = "[j]\ndirect=1\nrw=randread\nbs=4k\ntime_based\nruntime=10\nrate_iops=1000\nthinktime=2ms\nthinktime_blocks=10\n";
    let iops = run(job).jobs[0].stats.read.iops_f64();
    assert!((iops - 1000.0).abs() <= 1.0, "{iops}");
    let iops = run(&format!("{job}rate_ignore_thinktime=1\n")).jobs[0]
        .stats
        .read
        .iops_f64();
    let want = 10.0 / 11e-3;
    assert!((iops - want).abs() / want < 0.01, "{iops} vs {want}");
}

#[test]
fn rate_restarts_after_the_ramp() {
    let r = run(&format!("{BASE}rate_iops=1000\nramp_time=1\n"));
    let iops = r.jobs[0].stats.read.iops_f64();
    assert!((iops - 1000.0).abs() <= 1.0, "{iops}");
}

#[test]
fn rate_option_errors() {
    for (opt, want) in [
        ("rate_process=bursty", "valid: linear, poisson"),
        ("rate=1,2,3,4", "too many values"),
        ("rate_iops=lots", "t.fio:3:"),
        ("rate_min=lots", "t.fio:3:"),
        ("rate_iops_min=1,2,3,4", "too many values"),
    ] {
        let e = parse_job_file("t.fio", &format!("[j]\ndirect=1\n{opt}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.fio:3:") && e.contains(want), "{opt}: {e}");
    }
    let input = parse_job_file("t.fio", "[j]\ndirect=1\nrate_cycle=500\nrate=0\n").unwrap();
    assert_eq!(input.jobs[0].rate, None);
    // rate_cycle is rate_min's window (see tests/job_control.rs).
    assert_eq!(input.jobs[0].control.rate_cycle_ms, 500);
    assert!(input.ignored.is_empty(), "{:?}", input.ignored);
}
