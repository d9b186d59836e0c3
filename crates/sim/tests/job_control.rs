//! Jobs that depend on each other (`wait_for`, `exitall` / `exit_what`,
//! `flow`) and the minimum-rate check (`rate_min`, `rate_iops_min`), on the
//! `ideal` device, far faster than the rate limits used, so the limits set
//! the pace and the expected counts can be worked out by hand.

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

/// The error planning (or parsing) `job` gives.
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

fn ios(r: &RunReport, name: &str) -> u64 {
    r.jobs
        .iter()
        .filter(|j| j.jobname == name)
        .map(|j| j.stats.total_ios())
        .sum()
}

fn job<'a>(r: &'a RunReport, name: &str) -> &'a sim::report::JobResult {
    r.jobs.iter().find(|j| j.jobname == name).unwrap()
}

/// 1000 random 4 KiB reads per second, psync.
const PACED: &str = "[global]\nfilename=/dev/sda\ndirect=1\nrw=randread\nbs=4k\nrate_iops=1000\n";

#[test]
fn wait_for_starts_the_job_when_its_waitee_has_exited() {
    // `a` takes 0.5 s (500 I/Os at 1000/s); `b` runs 0.9 s. Without
    // wait_for both start at 0 and `b` ends at 0.9 s (elapsed rounds up to
    // 1 s); waiting, it ends at 1.4 s (2 s). `c` does not wait.
    let jobs =
        "[a]\nnumber_ios=500\n[b]\ntime_based\nruntime=900ms\n[c]\ntime_based\nruntime=900ms\n";
    let free = run(&format!("{PACED}{jobs}"));
    assert_eq!(job(&free, "b").elapsed_secs, 1);
    let text = format!("{PACED}{}", jobs.replace("[b]\n", "[b]\nwait_for=a\n"));
    let r = run(&text);
    assert_eq!(job(&r, "b").elapsed_secs, 2);
    assert_eq!(job(&r, "c").elapsed_secs, 1);
    assert_eq!(ios(&r, "a"), 500);
    let b = ios(&r, "b");
    assert!((899..=901).contains(&b), "{b}");
    // A name no job has: fio runs the job at once.
    let r = run(&format!(
        "{PACED}{}",
        jobs.replace("[b]\n", "[b]\nwait_for=zz\n")
    ));
    assert_eq!(job(&r, "b").elapsed_secs, 1);
}

#[test]
fn exitall_ends_the_group_when_a_job_exits() {
    // `a` exits after 100 I/Os (0.1 s): with exitall, `b` (same group) stops
    // then, after about 100 of its 2000.
    let jobs = "[a]\nnumber_ios=100\n[b]\ntime_based\nruntime=2\n";
    let r = run(&format!("{PACED}{jobs}"));
    assert!(ios(&r, "b") >= 1999, "{}", ios(&r, "b"));
    let r = run(&format!("{PACED}exitall\n{jobs}"));
    let b = ios(&r, "b");
    assert!((99..=102).contains(&b), "{b}");
    // exitall set in one job applies to all (fio's process-wide switch): `b`
    // sets it, `a`'s exit ends `b`.
    let r = run(&format!(
        "{PACED}{}",
        jobs.replace("runtime=2\n", "runtime=2\nexitall\n")
    ));
    assert!((99..=102).contains(&ios(&r, "b")));
    // exit_what=group only ends the reporting group: `b` in a new group runs on.
    let r = run(&format!(
        "{PACED}exitall\n{}",
        jobs.replace("[b]\n", "[b]\nnew_group\n")
    ));
    assert!(ios(&r, "b") >= 1999);
    // exit_what=stonewall ends every running job, whatever its group.
    let r = run(&format!(
        "{PACED}exitall\n{}",
        jobs.replace("[a]\n", "[a]\nexit_what=stonewall\n")
            .replace("[b]\n", "[b]\nnew_group\n")
    ));
    assert!((99..=102).contains(&ios(&r, "b")));
}

#[test]
fn a_terminated_job_asleep_wakes_at_the_end_of_its_second() {
    // `b` reads 4 KiB at 300 B/s (fio's exitwhat.fio): after its first I/O
    // it sleeps 13.65 s. `a` exits at 0.25 s (250 I/Os at 1000/s) and
    // terminates it; fio's usec_sleep sleeps in chunks of at most 1 s and
    // checks for termination after each, so `b` exits at 1 s, not 13.65 s.
    let r = run(&format!(
        "{PACED}exitall
[a]
number_ios=250
[b]
rate_iops=0
rate=300
time_based
runtime=30
"
    ));
    let b = job(&r, "b");
    assert_eq!(b.stats.read.total_ios, 1);
    // (The sleep starts once the first read has completed, a few µs in;
    // fio rounds the runtime up to ms.)
    assert!(
        (1000..=1001).contains(&b.stats.read.runtime_ms),
        "{}",
        b.stats.read.runtime_ms
    );
    // The sleep's own end, had it come first, is kept: a 0.5 s sleep.
    let r = run(&format!(
        "{PACED}exitall
[a]
number_ios=250
[b]
rate_iops=2
time_based
runtime=30
"
    ));
    let rt = job(&r, "b").stats.read.runtime_ms;
    assert!((500..=501).contains(&rt), "{rt}");
}

#[test]
fn exit_what_all_ends_jobs_not_started_yet_and_stonewall_does_not() {
    // `c` waits behind a stonewall: exit_what=all (when `a` exits) ends it
    // before it starts, so it reports no I/O; with exit_what=stonewall it is
    // not running then, and runs.
    let jobs = "[a]\nnumber_ios=100\n[b]\ntime_based\nruntime=1\n[c]\nstonewall\nnumber_ios=50\n";
    let all = run(&format!(
        "{PACED}exitall\n{}",
        jobs.replace("[a]\n", "[a]\nexit_what=all\n")
    ));
    assert!((99..=102).contains(&ios(&all, "b")));
    assert_eq!(ios(&all, "c"), 0);
    let sw = run(&format!(
        "{PACED}exitall\n{}",
        jobs.replace("[a]\n", "[a]\nexit_what=stonewall\n")
    ));
    assert!((99..=102).contains(&ios(&sw, "b")));
    assert_eq!(ios(&sw, "c"), 50);
}

#[test]
fn flow_shares_the_io_by_weight() {
    // Two unpaced jobs on the ideal device share flow 0 as 1:3 (flow.c's
    // counters): the I/O counts follow the weights whatever the speed.
    for sleep in ["", "flow_sleep=100\n"] {
        let r = run(&format!(
            "[global]\nfilename=/dev/sda\ndirect=1\nrw=randread\nbs=4k\nioengine=libaio\n\
             iodepth=4\ntime_based\nruntime=200ms\n{sleep}[x]\nflow=1\n[y]\nflow=3\n"
        ));
        let (x, y) = (ios(&r, "x") as f64, ios(&r, "y") as f64);
        assert!(x > 1000.0, "{sleep}: {x}");
        assert!((y / x - 3.0).abs() < 0.05, "{sleep}: {x} {y}");
    }
    // A separate flow id is a separate share: both run unhindered.
    let r = run(
        "[global]\nfilename=/dev/sda\ndirect=1\nrw=randread\nbs=4k\ntime_based\n\
         runtime=200ms\n[x]\nflow=1\n[y]\nflow=3\nflow_id=1\n",
    );
    let (x, y) = (ios(&r, "x") as f64, ios(&r, "y") as f64);
    assert!((y / x - 1.0).abs() < 0.05, "{x} {y}");
}

#[test]
fn rate_min_stops_a_slow_job_with_eio() {
    // Paced at 1000 IOPS, a minimum of 2000 fails at the first check after
    // the 2 s settle period: the sample at 2 s starts the cycle, the next
    // check at 3 s fails.
    let r = run(&format!(
        "{PACED}[slow]\ntime_based\nruntime=10\nrate_iops_min=2000\n"
    ));
    let j = job(&r, "slow");
    assert_eq!(j.error, 5);
    let n = ios(&r, "slow");
    assert!((2999..=3002).contains(&n), "{n}");
    assert!(
        r.header
            .iter()
            .any(|h| h.contains("slow: rate_iops_min=2000 not met, got 1000 IOPS")),
        "{:?}",
        r.header
    );
    // Met, it runs its whole runtime.
    let r = run(&format!(
        "{PACED}[ok]\ntime_based\nruntime=4\nrate_iops_min=900\n"
    ));
    assert_eq!(job(&r, "ok").error, 0);
    assert!(ios(&r, "ok") >= 3999);
    // In bytes: 1000 × 4 KiB/s against 8 MiB/s; exitall_on_error ends the
    // other job as it exits.
    let r = run(&format!(
        "{PACED}exitall_on_error\n[slow]\ntime_based\nruntime=10\nrate_min=8m\n\
         [other]\ntime_based\nruntime=10\n"
    ));
    assert_eq!(job(&r, "slow").error, 5);
    assert!(r
        .header
        .iter()
        .any(|h| h.contains("rate_min=8388608B/s not met")));
    let o = ios(&r, "other");
    assert!((2999..=3003).contains(&o), "{o}");
}

#[test]
fn refusals_name_the_line_and_the_reason() {
    let e = refused("[a]\nfilename=/dev/null\nrw=read\n");
    assert!(e.starts_with("t.fio:1:"), "{e}");
    assert!(e.contains("/dev/null is a character device"), "{e}");
    // The null engine never opens its file: /dev/null is fine there.
    run("[a]\nioengine=null\nfilename=/dev/null\nsize=1m\n");
    let e = refused("[a]\nfilename=/dev/sda\nwait_for=b\n[b]\nfilename=/dev/sda\nstonewall\n");
    assert!(
        e.contains("wait_for=b names a job behind a later stonewall"),
        "{e}"
    );
    let e = refused("[a]\nfilename=/dev/sda\nflow=1\n[b]\nfilename=/dev/sda\nstonewall\nflow=2\n");
    assert!(e.starts_with("t.fio:4:"), "{e}");
    assert!(
        e.contains("flow_id=0 is shared with a job behind another stonewall"),
        "{e}"
    );
    let e = refused("[a]\nexit_what=some\n");
    assert!(e.starts_with("t.fio:2:"), "{e}");
    assert!(e.contains("valid: group, stonewall, all"), "{e}");
    let e = refused("[a]\nflow=1001\n");
    assert!(e.starts_with("t.fio:2:"), "{e}");
}

/// 1 MiB random reads on the ideal device: 100 µs plus 524 µs of transfer
/// through its one pipe each, so at queue depth d an I/O takes about
/// 0.1 + 0.524 × d ms: depth 3 stays under 2 ms (1.67 ms), depth 4 does not
/// (2.2 ms).
const DEEP: &str = "[global]\nfilename=/dev/sda\ndirect=1\nrw=randread\nbs=1m\n\
                    ioengine=libaio\niodepth=16\ntime_based\nruntime=10\n";

#[test]
fn latency_target_finds_the_deepest_queue_under_the_target() {
    // fio's search by hand: depth 1 and 2 meet 2 ms and double; 4 misses and
    // bisects down to 3 (between the good 2 and the failing 4); 3 succeeds
    // and, bisecting towards 4, stays 3: one final window at 3 with fresh
    // statistics, then the job is done, long before its runtime.
    for pct in ["latency_percentile=99\n", "latency_percentile=95\n"] {
        let r = run(&format!(
            "{DEEP}[j]\nlatency_target=2ms\nlatency_window=50ms\n{pct}"
        ));
        let j = job(&r, "j");
        assert_eq!(j.error, 0, "{pct}");
        assert_eq!(j.latency_depth, 3, "{pct}");
        assert_eq!(j.latency_target_ns, 2_000_000);
        assert_eq!(j.latency_window_us, 50_000);
        assert_eq!(j.elapsed_secs, 1, "{pct}: ends early");
        let rd = &j.stats.read;
        // Only the final window is reported: ~50 ms / 0.524 ms of I/O, all
        // at depth 3 or less (under the target; the window starts from the
        // drained queue, so its first I/O takes 0.624 ms).
        assert!(
            (80..=100).contains(&rd.total_ios),
            "{pct}: {}",
            rd.total_ios
        );
        assert!(rd.clat.max() < 2_000_000, "{pct}: {}", rd.clat.max());
        assert!(rd.clat.min() >= 600_000, "{pct}: {}", rd.clat.min());
    }
    // latency_run: the search goes on until the runtime ends.
    let r = run(&format!(
        "{DEEP}runtime=1\n[j]\nlatency_target=2ms\nlatency_window=50ms\nlatency_percentile=99\nlatency_run=1\n"
    ));
    let j = job(&r, "j");
    assert!(j.stats.read.total_ios > 1000, "{}", j.stats.read.total_ios);
    assert!((2..=4).contains(&j.latency_depth), "{}", j.latency_depth);
    // Without a target, latency_depth is the iodepth, as fio reports it.
    let r = run(&format!("{DEEP}runtime=100ms\n[j]\n"));
    assert_eq!(job(&r, "j").latency_depth, 16);
}

#[test]
fn latency_target_missed_at_depth_one_fails_the_job() {
    // Every I/O takes over 0.6 ms: a 0.5 ms target fails at depth 1 (fio's
    // lat_fatal, ETIMEDOUT).
    let r = run(&format!("{DEEP}[j]\nlatency_target=500\n"));
    let j = job(&r, "j");
    assert_eq!(j.error, 110);
    assert!(j.stats.read.total_ios <= 2, "{}", j.stats.read.total_ios);
    assert!(
        r.header
            .iter()
            .any(|h| h.contains("exceeds specified max (500000 nsec)")),
        "{:?}",
        r.header
    );
    let e = refused("[a]\nlatency_percentile=101\n");
    assert!(e.starts_with("t.fio:2:"), "{e}");
}
