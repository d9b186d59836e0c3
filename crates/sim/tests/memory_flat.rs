//! Memory does not grow with simulated time: every scheduler on every built-in device
//! with synchronous and asynchronous engines (psync, sync, libaio, io_uring), run for
//! 1× and 100× the simulated time, must peak at about the same heap size. A counting global allocator measures
//! the peak of live heap bytes in this test binary.

#[path = "common/peak_heap.rs"]
mod peak_heap;

/// Peak heap growth (bytes above what was live at the start) of one run.
fn peak_of(sched: &str, device: &devices::Profile, engine: &str, runtime_ms: u64) -> usize {
    let job = format!(
        "[j]\nrw=randrw\nbs=4k\nsize=256m\ndirect=1\nioengine={engine}\niodepth=8\n\
         time_based\nruntime={runtime_ms}ms\nnumjobs=2\n"
    );
    let input = sim::fio::parse_job_file("mem.fio", &job).unwrap();
    let mut opts = sim::runner::RunOptions::new(device.clone());
    opts.scheduler = Some(sched.to_string());
    opts.write_logs = false;
    peak_heap::peak_during(|| {
        let plan = sim::runner::plan(&input, &opts).unwrap();
        sim::runner::run(&input, &opts, plan, None).unwrap()
    })
    .0
}

#[test]
fn peak_memory_is_flat_in_simulated_time() {
    let _g = peak_heap::serial();
    let mut failures = Vec::new();
    for device in devices::profiles() {
        for sched in ["none", "mq-deadline", "kyber", "bfq"] {
            for engine in ["psync", "sync", "libaio", "io_uring"] {
                let short = peak_of(sched, &device, engine, 1);
                let long = peak_of(sched, &device, engine, 100);
                // Some structures only reach their working size after a while
                // (histogram buckets, a device's cache): allow a fixed margin.
                if long > short * 2 + (1 << 20) {
                    failures.push(format!(
                        "{sched} on {} with {engine}: {short} B at 1x, {long} B at 100x",
                        device.name
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A slow leak — a few bytes kept per scheduler decision, such as a log of every
/// BFQ expiration — hides inside the margin of the test above, and disks' latency
/// tails make the histograms grow for a long while. So: an ideal device with a
/// fixed 200 µs latency (histograms reach their size at once), eight processes
/// (BFQ switches queues, idles and expires all the time), each scheduler run for
/// T, 10 T and 100 T. A working set grows less and less; a leak grows ten times as
/// much from 10 T to 100 T as from T to 10 T. The second growth may be at most
/// twice the first plus 16 KiB.
#[test]
fn no_slow_leak_per_decision() {
    let _g = peak_heap::serial();
    let device = devices::Profile {
        name: "ideal-200us".into(),
        about: "ideal device with a fixed 200 us latency".into(),
        kind: devices::ProfileKind::Ideal(devices::ideal::IdealParams {
            latency_ns: 200_000,
            rotational: true,
            ..Default::default()
        }),
        zoned: None,
    };
    let mut failures = Vec::new();
    for sched in ["none", "mq-deadline", "kyber", "bfq"] {
        let p: Vec<usize> = [40, 400, 4_000]
            .iter()
            .map(|&ms| peak_of_jobs(sched, &device, 8, ms))
            .collect();
        let (d1, d2) = (p[1].saturating_sub(p[0]), p[2].saturating_sub(p[1]));
        if d2 > 2 * d1 + (16 << 10) {
            failures.push(format!(
                "{sched}: peak {} B at 40 ms, {} B at 400 ms, {} B at 4 s",
                p[0], p[1], p[2]
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Peak heap growth of `numjobs` psync random readers and writers (each its own
/// process) for `runtime_ms`.
fn peak_of_jobs(sched: &str, device: &devices::Profile, numjobs: u32, runtime_ms: u64) -> usize {
    let job = format!(
        "[j]\nrw=randrw\nbs=4k\nsize=64m\ndirect=1\nioengine=psync\n\
         time_based\nruntime={runtime_ms}ms\nnumjobs={numjobs}\n"
    );
    let input = sim::fio::parse_job_file("leak.fio", &job).unwrap();
    let mut opts = sim::runner::RunOptions::new(device.clone());
    opts.scheduler = Some(sched.to_string());
    opts.write_logs = false;
    peak_heap::peak_during(|| {
        let plan = sim::runner::plan(&input, &opts).unwrap();
        sim::runner::run(&input, &opts, plan, None).unwrap()
    })
    .0
}
