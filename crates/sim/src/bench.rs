//! Built-in throughput benchmarks (`iosched bench`): simulated requests per
//! wall-clock second and peak memory for fixed workloads.

use crate::job::{JobConfig, RwMode};
use crate::simulate::{NoObserver, SimConfig, Simulation};

use std::time::Instant;

/// One benchmark workload.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Name printed in the results.
    pub name: &'static str,
    /// Scheduler.
    pub scheduler: &'static str,
    /// Device profile the workload runs against.
    pub device: &'static str,
    /// Block size, bytes.
    pub bs: u64,
    /// I/O pattern.
    pub rw: RwMode,
    /// iodepth per job.
    pub iodepth: u32,
    /// Number of job clones.
    pub jobs: u32,
    /// Simulated time relative to the requested run time: slow devices run longer so
    /// that enough requests complete for the rate to mean something.
    pub time_scale: u64,
}

/// The built-in workloads.
pub fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "none+ideal randread 4k qd32 x4",
            scheduler: "none",
            device: "ideal",
            bs: 4096,
            rw: RwMode::RandRead,
            iodepth: 32,
            jobs: 4,
            time_scale: 1,
        },
        Workload {
            name: "none+hdd-7200 randread 4k qd32",
            scheduler: "none",
            device: "hdd-7200",
            bs: 4096,
            rw: RwMode::RandRead,
            iodepth: 32,
            jobs: 1,
            time_scale: 200,
        },
        Workload {
            name: "none+hdd-7200 read 4k qd32",
            scheduler: "none",
            device: "hdd-7200",
            bs: 4096,
            rw: RwMode::Read,
            iodepth: 32,
            jobs: 1,
            time_scale: 10,
        },
        Workload {
            name: "none+nvme-gen4 randread 4k qd32 x4",
            scheduler: "none",
            device: "nvme-gen4",
            bs: 4096,
            rw: RwMode::RandRead,
            iodepth: 32,
            jobs: 4,
            time_scale: 1,
        },
        Workload {
            name: "mq-deadline+hdd-7200 randread 4k qd32",
            scheduler: "mq-deadline",
            device: "hdd-7200",
            bs: 4096,
            rw: RwMode::RandRead,
            iodepth: 32,
            jobs: 1,
            time_scale: 200,
        },
        Workload {
            name: "kyber+nvme-gen4 randread 4k qd32 x4",
            scheduler: "kyber",
            device: "nvme-gen4",
            bs: 4096,
            rw: RwMode::RandRead,
            iodepth: 32,
            jobs: 4,
            time_scale: 1,
        },
        Workload {
            name: "bfq+nvme-gen4 randread 4k qd32 x4",
            scheduler: "bfq",
            device: "nvme-gen4",
            bs: 4096,
            rw: RwMode::RandRead,
            iodepth: 32,
            jobs: 4,
            time_scale: 1,
        },
    ]
}

/// Result of one benchmark run.
#[derive(Clone, Debug)]
pub struct BenchResult {
    /// Workload name.
    pub name: String,
    /// Requests completed.
    pub requests: u64,
    /// Simulated seconds.
    pub simulated_secs: f64,
    /// Wall-clock seconds.
    pub wall_secs: f64,
}

impl BenchResult {
    /// Simulated requests per wall-clock second.
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.wall_secs.max(1e-9)
    }
}

/// Run `w` for `simulated_ms` of virtual time against its device profile
/// (`w.device`, a built-in profile name), on the free host with submissions
/// that cost nothing: the event engine's own speed.
pub fn run(w: &Workload, simulated_ms: u64) -> BenchResult {
    let free = host::host("free").expect("the free host is built in");
    run_with(w, simulated_ms, &free, 0)
}

/// [`run`] on `host`, as `iosched run --host` would: 8 CPUs, io_uring
/// submissions (on the free host, costing the engine's `--submit-ns` default).
pub fn run_on(w: &Workload, simulated_ms: u64, host: &host::HostProfile) -> BenchResult {
    let engine = crate::fio::IoEngine::IoUring;
    let submit_cost_ns = match &host.cpus {
        Some(h) => crate::runner::host_submit_ns(&h.costs, engine, false),
        None => crate::runner::default_submit_cost_ns(engine),
    };
    run_with(w, simulated_ms, host, submit_cost_ns)
}

fn run_with(
    w: &Workload,
    simulated_ms: u64,
    host: &host::HostProfile,
    submit_cost_ns: u64,
) -> BenchResult {
    let engine = crate::fio::IoEngine::IoUring;
    let simulated_ms = simulated_ms * w.time_scale.max(1);
    let jobs = (0..w.jobs)
        .map(|i| JobConfig {
            name: w.name.to_string(),
            rw: w.rw,
            bs: [w.bs; 3],
            size: 1 << 30,
            io_limit: 1 << 30,
            runtime: Some(simulated_ms * 1_000_000),
            time_based: true,
            depth: w.iodepth,
            async_engine: true,
            cpu: i,
            pid: 1000 + i,
            seed: 42 + i as u64,
            random_dist: crate::job::RandomDist::Random,
            fadvise: crate::pagecache::Advice::Normal,
            engine,
            submit_cost_ns,
            ..JobConfig::default()
        })
        .collect();
    let dev = devices::profile(w.device)
        .expect("built-in workload names a built-in profile")
        .build();
    let cfg = SimConfig {
        scheduler: w.scheduler.to_string(),
        host: host.clone(),
        ..Default::default()
    };
    let sim = Simulation::new(&cfg, dev, jobs).expect("built-in workload is valid");
    let t0 = Instant::now();
    let s = sim.run(&mut NoObserver);
    BenchResult {
        name: w.name.to_string(),
        requests: s.requests,
        simulated_secs: s.end.0 as f64 / 1e9,
        wall_secs: t0.elapsed().as_secs_f64(),
    }
}

/// Peak resident memory of this process so far, bytes (`VmHWM`), where the OS
/// reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
