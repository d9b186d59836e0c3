//! fio's steady-state detection (`steadystate`, `ss_dur`, `ss_ramp`,
//! `ss_interval`) over simulated runs on the `ideal` device, paced by
//! `rate_iops` so that each one-second sample is worked out by hand.

use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::runner::{self, RunOptions};

fn opts() -> RunOptions {
    RunOptions {
        seed: 1,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    }
}

fn run(job: &str) -> RunReport {
    let input = parse_job_file("t.fio", job).unwrap_or_else(|e| panic!("{e}"));
    let o = opts();
    let plan = runner::plan(&input, &o).unwrap_or_else(|e| panic!("{e}"));
    runner::run(&input, &o, plan, None).unwrap()
}

fn refused(job: &str) -> String {
    let input = match parse_job_file("t.fio", job) {
        Ok(i) => i,
        Err(e) => return e.to_string(),
    };
    match runner::plan(&input, &opts()) {
        Ok(_) => panic!("accepted: {job}"),
        Err(e) => e.to_string(),
    }
}

/// 1000 random 4 KiB reads per second, psync, for at most 30 s.
const PACED: &str = "[global]\nfilename=/dev/sda\ndirect=1\nrw=randread\nbs=4k\n\
                     rate_iops=1000\ntime_based\nruntime=30\n";

#[test]
fn a_steady_job_ends_after_its_ramp_and_one_full_ring() {
    // The ramp (2 s) plus one interval must pass before a sample counts:
    // the check at 3 s takes the I/O of 2..3 s. Five samples fill the ring
    // at 7 s: 1000 IOPS each, no deviation, attained. fio's own test of the
    // feature expects the same: runtime = ss_dur + ss_ramp.
    let r = run(&format!("{PACED}[a]\nss=iops:1%\nss_dur=5s\nss_ramp=2s\n"));
    let j = &r.jobs[0];
    let ss = j.steadystate.as_ref().expect("a steadystate section");
    assert!(ss.attained);
    assert_eq!(j.stats.read.runtime_ms, 7000);
    assert_eq!(ss.samples.len(), 5);
    for s in &ss.samples {
        assert!((999..=1001).contains(&s.iops), "{s:?}");
        assert_eq!(s.bw, s.iops * 4096);
    }
    assert!(ss.value < 1.0);
    let json = sim::report::json::to_string(&r);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let o = &v["jobs"][0]["steadystate"];
    assert_eq!(o["ss"], "iops:1.000000%");
    assert_eq!(o["duration"], 5);
    assert_eq!(o["attained"], 1);
    assert_eq!(o["data"]["iops"].as_array().unwrap().len(), 5);
    assert!(
        o["data"].get("lat_ns").is_none(),
        "only for a latency criterion"
    );
    let text = sim::report::text::to_string(&r);
    let line = text
        .lines()
        .find(|l| l.starts_with("  steadystate  : "))
        .unwrap();
    // 1000 IOPS of 4 KiB: 4000 KiB/s, which fio prints again with an SI
    // prefix (the same number: fio divides by kb_base for both).
    assert_eq!(
        line,
        format!(
            "  steadystate  : attained=yes, bw=4000KiB/s (4000kB/s), iops=1000, iops mean dev={:.3}%",
            ss.value
        )
    );
}

#[test]
fn an_unmet_criterion_runs_to_the_runtime_and_reports_the_ring() {
    // A limit of 0 is never met (the test is `criterion < limit`); the job
    // runs its 30 s and the ring holds the last 4 samples, oldest first.
    let r = run(&format!("{PACED}[a]\nss=iops_slope:0\nss_dur=4\n"));
    let j = &r.jobs[0];
    let ss = j.steadystate.as_ref().unwrap();
    assert!(!ss.attained);
    assert_eq!(j.stats.read.runtime_ms, 30_000);
    assert_eq!(ss.samples.len(), 4);
    assert!(ss.samples.iter().all(|s| (999..=1001).contains(&s.iops)));
}

#[test]
fn group_reporting_judges_the_group_and_ends_every_clone() {
    // Three clones at 1000 IOPS each: the group's samples are their sum.
    // Without a ramp, fio counts from the first check (1 s): the ring of 3
    // is full at 3 s.
    let r = run(&format!(
        "{PACED}[a]\nnumjobs=3\ngroup_reporting\nss=bw:5%\nss_dur=3\n"
    ));
    assert_eq!(r.jobs.len(), 1);
    let j = &r.jobs[0];
    let ss = j.steadystate.as_ref().unwrap();
    assert!(ss.attained);
    for s in &ss.samples {
        assert!((2997..=3003).contains(&s.iops), "{s:?}");
    }
    assert_eq!(j.stats.read.runtime_ms, 3000);
    // Without group_reporting each clone has its own ring and ends alone.
    let r = run(&format!("{PACED}[a]\nnumjobs=2\nss=bw:5%\nss_dur=3\n"));
    assert_eq!(r.jobs.len(), 2);
    assert!(r
        .jobs
        .iter()
        .all(|j| j.steadystate.as_ref().unwrap().attained));
}

#[test]
fn a_longer_interval_takes_fewer_samples() {
    // ss_interval=2: 6 s make 3 samples, each the I/O of 2 s scaled to
    // a rate per second.
    let r = run(&format!(
        "{PACED}[a]\nss=iops:1%\nss_dur=6\nss_interval=2\n"
    ));
    let j = &r.jobs[0];
    let ss = j.steadystate.as_ref().unwrap();
    assert_eq!(ss.samples.len(), 3);
    assert!(ss.samples.iter().all(|s| (999..=1001).contains(&s.iops)));
    assert_eq!(j.stats.read.runtime_ms, 6000);
}

#[test]
fn a_latency_criterion_reports_the_latencies() {
    let r = run(&format!("{PACED}[a]\nss=lat:10%\nss_dur=2\n"));
    let ss = r.jobs[0].steadystate.as_ref().unwrap();
    assert!(ss.attained);
    assert!(ss.samples.iter().all(|s| s.lat > 0));
    let json = sim::report::json::to_string(&r);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let d = &v["jobs"][0]["steadystate"]["data"];
    assert_eq!(d["lat_ns"].as_array().unwrap().len(), 2);
    assert!(d["lat_mean"].as_u64().unwrap() > 0);
    let text = sim::report::text::to_string(&r);
    assert!(text.contains(", lat="), "{text}");
}

#[test]
fn no_duration_means_no_detection() {
    // fio's default ss_dur is 0: `steadystate` alone changes nothing.
    let r = run(&format!("{PACED}runtime=2\n[a]\nss=iops:50%\n"));
    assert!(r.jobs[0].steadystate.is_none());
    assert_eq!(r.jobs[0].stats.read.runtime_ms, 2000);
    let v = sim::report::json::to_value(&r);
    assert!(v["jobs"][0].get("steadystate").is_none());
}

#[test]
fn bad_settings_are_refused_with_their_line() {
    let cases = [
        (
            "ss=iopz:1%",
            "t.fio:2: ",
            "invalid value 'iopz:1%' for steadystate",
        ),
        ("ss=iops", "t.fio:2: ", "threshold must be specified"),
        ("ss=iops:x%", "t.fio:2: ", "percentage threshold 'x%'"),
        ("ss=bw:fast", "t.fio:2: ", "BW threshold 'fast'"),
        ("ss_dur=1500ms", "t.fio:", "must be a multiple of"),
        (
            "ss_dur=1",
            "t.fio:",
            "must be a multiple of, and longer than",
        ),
        ("ss_dur=4\nss_interval=500ms", "t.fio:", "at least 1s"),
        ("ss_dur=soon", "t.fio:2: ", "malformed number 'soon'"),
    ];
    for (opts, at, want) in cases {
        let e = refused(&format!("[a]\n{opts}\nfilename=/dev/sda\n"));
        assert!(e.starts_with(at) && e.contains(want), "{opts}: {e}");
    }
    // fio wants one check interval in the whole run, and the same
    // settings within a reporting group.
    let e = refused("[a]\nfilename=/dev/sda\n[b]\nfilename=/dev/sda\nss_interval=2\n");
    assert!(e.contains("t.fio:3") && e.contains("conflicting"), "{e}");
    let e = refused("[a]\nfilename=/dev/sda\nss_dur=3\n[b]\nfilename=/dev/sda\n");
    assert!(
        e.contains("t.fio:4") && e.contains("consistent within reporting groups"),
        "{e}"
    );
    // Behind a new_group, another setting is fine.
    let input = parse_job_file(
        "t.fio",
        "[a]\nfilename=/dev/sda\nss_dur=3\n[b]\nnew_group\nfilename=/dev/sda\n",
    )
    .unwrap();
    runner::plan(&input, &opts()).unwrap();
}
