//! fio's `thinktime` family on the `ideal` device, where every 4 KiB read
//! takes exactly 102,048 ns (100 µs plus 4 KiB at 2 GB/s), so run times can be
//! computed by hand.

use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::runner::{self, RunOptions};
use sim::stats::DirStats;

/// Service time of one 4 KiB read on `ideal`, ns.
const IO_NS: u64 = 102_048;

fn run(job: &str) -> RunReport {
    let input = parse_job_file("t.fio", job).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed: 1,
        nr_cpus: 4,
        // Free submissions, so that only the device and the thinking take time.
        submit_ns: Some(0),
        write_logs: false,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    runner::run(&input, &o, plan, None).unwrap()
}

fn read(job: &str) -> DirStats {
    run(job).jobs[0].stats.read.clone()
}

/// fio's runtime in ms for `ns` of job time (µs rounded up to ms).
fn runtime_ms(ns: u64) -> u64 {
    (ns / 1_000).div_ceil(1_000)
}

const BASE: &str = "[j]\ndirect=1\nrw=randread\nbs=4k\nsize=4m\n";

#[test]
fn thinktime_after_every_io_halves_iops() {
    // 1024 reads, each followed by 100 µs (about one service time) of thinking.
    let plain = read(&format!("{BASE}ioengine=psync\n"));
    let think = read(&format!("{BASE}ioengine=psync\nthinktime=100\n"));
    assert_eq!(plain.runtime_ms, runtime_ms(1024 * IO_NS));
    assert_eq!(think.runtime_ms, runtime_ms(1024 * (IO_NS + 100_000)));
    assert_eq!(think.runtime_ms, 207);
    assert_eq!(think.total_ios, 1024);
    let ratio = think.iops_f64() / plain.iops_f64();
    assert!((ratio - 0.5).abs() < 0.02, "{ratio}");
    // Thinking is not latency.
    assert_eq!(think.clat.max(), IO_NS);
    // A time suffix works as in fio; a bare number is µs.
    let ms = read(&format!("{BASE}ioengine=psync\nthinktime=1ms\n"));
    assert_eq!(ms.runtime_ms, runtime_ms(1024 * (IO_NS + 1_000_000)));
}

#[test]
fn thinktime_blocks_and_spin() {
    // A stall after every 4 completed reads: 256 stalls.
    let r = read(&format!(
        "{BASE}ioengine=psync\nthinktime=100\nthinktime_blocks=4\n"
    ));
    assert_eq!(r.runtime_ms, runtime_ms(1024 * IO_NS + 256 * 100_000));
    // thinktime_spin is part of thinktime (and cut to it when larger).
    for spin in ["50", "300"] {
        let r = read(&format!(
            "{BASE}ioengine=psync\nthinktime=100\nthinktime_spin={spin}\n"
        ));
        assert_eq!(r.runtime_ms, 207, "spin={spin}");
    }
    // thinktime=0 turns the family off.
    let r = read(&format!(
        "{BASE}ioengine=psync\nthinktime=0\nthinktime_spin=50\n"
    ));
    assert_eq!(r.runtime_ms, runtime_ms(1024 * IO_NS));
}

#[test]
fn thinktime_caps_the_queue_depth() {
    // With thinktime_blocks=1 a libaio job at iodepth 4 waits for its I/O and
    // thinks after each one, whether blocks count at issue or at completion:
    // queue depth 1, as fio's documentation says.
    for kind in ["issue", "complete"] {
        let rep = run(&format!(
            "{BASE}ioengine=libaio\niodepth=4\nthinktime=100\nthinktime_blocks_type={kind}\n"
        ));
        let st = &rep.jobs[0].stats;
        assert_eq!(st.read.total_ios, 1024);
        assert!(st.depth_dist()[0] > 99.0, "{kind}: {:?}", st.depth_dist());
        let per_io = (IO_NS + 100_000) as f64;
        let want = 1024.0 * per_io / 1e6;
        let got = st.read.runtime_ms as f64;
        assert!(
            (got - want).abs() / want < 0.01,
            "{kind}: {got} ms, want {want}"
        );
    }
    // Blocks counted at issue: the stall comes after every 4 submissions, so
    // bursts of 4 reads in flight alternate with 100 µs pauses.
    let rep = run(&format!(
        "{BASE}ioengine=libaio\niodepth=4\nthinktime=100\nthinktime_blocks=4\nthinktime_blocks_type=issue\n"
    ));
    let st = &rep.jobs[0].stats;
    assert!(st.depth_dist()[2] > 20.0, "{:?}", st.depth_dist());
    // 256 bursts, each 4 reads (on the ideal device their latencies overlap,
    // their 2,048 ns transfers do not: the last ends 3 transfers after the
    // first) and a pause.
    let burst = IO_NS + 3 * 2_048 + 100_000;
    let want = runtime_ms(256 * burst) as f64;
    let got = st.read.runtime_ms as f64;
    assert!((got - want).abs() / want < 0.02, "{got} vs {want}");
}

#[test]
fn thinktime_iotime_alternates_io_and_stalls() {
    // 9 ms of I/O, then 1 ms of thinking, for 1 s: 90% of the plain rate.
    let job = "[j]\ndirect=1\nrw=randread\nbs=4k\nioengine=psync\ntime_based\nruntime=1\n";
    let plain = read(job);
    let r = read(&format!("{job}thinktime=1ms\nthinktime_iotime=9ms\n"));
    let ratio = r.total_ios as f64 / plain.total_ios as f64;
    assert!((ratio - 0.9).abs() < 0.01, "{ratio}");
    // A bare thinktime_iotime is in seconds.
    let input =
        parse_job_file("t.fio", &format!("{job}thinktime=1\nthinktime_iotime=2\n")).unwrap();
    assert_eq!(input.jobs[0].thinktime.unwrap().iotime_us, 2_000_000);
}

#[test]
fn a_stall_ends_with_the_runtime() {
    // fio cuts a stall short at the end of the runtime: one read, then the job
    // thinks until the 1 s runtime is over, not for 5 s.
    let r = read(
        "[j]\ndirect=1\nrw=read\nbs=4k\nioengine=psync\ntime_based\nruntime=1\nthinktime=5s\n",
    );
    assert_eq!(r.total_ios, 1);
    assert_eq!(r.runtime_ms, 1000);
}

#[test]
fn bad_thinktime_values_name_the_line() {
    for (opt, want) in [
        ("thinktime_blocks_type=sometimes", "valid: complete, issue"),
        ("thinktime=-1", "t.fio:3:"),
        ("thinktime=5000s", "too large"),
        ("thinktime_blocks=x", "t.fio:3:"),
        ("thinkcycles=10", "not modeled yet"),
    ] {
        let e = parse_job_file("t.fio", &format!("[j]\ndirect=1\n{opt}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.fio:3:") && e.contains(want), "{opt}: {e}");
    }
}
