//! A replayed trace is streamed: the heap a replay holds does not grow with the
//! trace's length. A counting global allocator measures the peak of live heap
//! bytes of checking and replaying synthetic MQSim traces of 20 000 and 200 000
//! requests (and, `--ignored`, 10 000 000).

use sim::trace::replay::{OpenLoop, Placement, ReplaySource, ReplayStream};
use sim::trace::{self, CheckRules, Format};
use std::io::Write as _;
use std::path::Path;

#[path = "common/peak_heap.rs"]
mod peak_heap;

/// A synthetic MQSim trace: `n` 4 KiB requests 1 µs apart, reads and writes
/// over 1 GiB.
fn write_trace(path: &Path, n: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        writeln!(f, "{} 0 {} 8 {}", i * 1000, (x % (1 << 18)) * 8, x >> 63).unwrap();
    }
    f.flush().unwrap();
}

/// Peak heap growth of checking and replaying `path` (open loop, `none`, the
/// ideal device), and the requests the run completed.
fn peak_of(path: &Path) -> (usize, u64) {
    let (peak, done) = peak_heap::peak_during(|| replay(path));
    (peak, done)
}

/// Check and replay `path`; the requests the run completed.
fn replay(path: &Path) -> u64 {
    let mut o = sim::runner::RunOptions::new(devices::profile("ideal").unwrap());
    o.scheduler = Some("none".into());
    o.write_logs = false;
    let cap = o.device.build().info().capacity_sectors * 512;
    let s = trace::check(
        Format::Mqsim,
        path,
        &CheckRules {
            capacity: cap,
            check_units: true,
            ..Default::default()
        },
    )
    .unwrap();
    let input = sim::fio::parse_command_line(&[
        "--name=replay".into(),
        "--ioengine=libaio".into(),
        "--direct=1".into(),
        "--iodepth=64".into(),
    ])
    .unwrap();
    let p = path.to_path_buf();
    let place = Placement {
        capacity: cap,
        wrap: false,
        nr_cpus: 8,
    };
    let origin = s.first_ns.unwrap_or(0);
    let src = ReplaySource::new(move |shared| {
        let r = trace::open(Format::Mqsim, &p)?;
        Ok(Box::new(OpenLoop::new(r, origin, Some(1.0), place, shared)) as Box<dyn ReplayStream>)
    });
    let mut plan = sim::runner::plan(&input, &o).unwrap();
    plan.clones[0].replay = Some(src.clone());
    plan.clones[0].io_limit = u64::MAX;
    let report = sim::runner::run(&input, &o, plan, None).unwrap();
    let st = &report.jobs[0].stats;
    st.dir(sim::stats::Dir::Read).total_ios + st.dir(sim::stats::Dir::Write).total_ios
}

fn measure(sizes: &[u64]) {
    let _g = peak_heap::serial();
    let dir = tempfile::tempdir().unwrap();
    let mut peaks = Vec::new();
    for &n in sizes {
        let p = dir.path().join(format!("t{n}.mqsim"));
        write_trace(&p, n);
        let (peak, done) = peak_of(&p);
        assert_eq!(done, n);
        eprintln!("{n} requests: peak heap {peak} bytes");
        peaks.push(peak);
    }
    let small = peaks[0];
    for (&n, &p) in sizes.iter().zip(&peaks) {
        // Histograms grow a little with the values seen; nothing per request.
        assert!(
            p <= small + small / 2 + (1 << 20),
            "{n} requests peaked at {p} bytes, {small} for {}",
            sizes[0]
        );
    }
}

#[test]
fn replay_memory_is_flat_in_trace_length() {
    measure(&[20_000, 200_000]);
}

/// The figure: 10 M requests in the memory of 20 000 (slow in a debug
/// build: run with `--release`).
#[test]
#[ignore]
fn ten_million_requests_in_bounded_memory() {
    measure(&[20_000, 10_000_000]);
}
