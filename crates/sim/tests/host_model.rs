//! The simulator on a host model: CPU time, CPU contention, completion CPUs, the
//! scheduler's lock, and the accounting invariants.

use devices::ideal::{Ideal, IdealParams};
use sim::job::{JobConfig, RwMode};
use sim::simulate::{NoObserver, RunSummary, SimConfig, Simulation};

fn server() -> host::HostProfile {
    host::host("x86-server").unwrap()
}

fn costs() -> host::profile::Costs {
    server().cpus.unwrap().costs
}

/// A psync 4 KiB random-read job on `cpu`, allowed only there, for `ms`.
fn psync_job(i: u32, cpu: u32, ms: u64) -> JobConfig {
    JobConfig {
        name: format!("j{i}"),
        rw: RwMode::RandRead,
        size: 1 << 30,
        io_limit: 1 << 30,
        runtime: Some(ms * 1_000_000),
        time_based: true,
        depth: 1,
        cpu,
        cpus_allowed: vec![cpu],
        pid: 1000 + i,
        seed: 7 + u64::from(i),
        ..JobConfig::default()
    }
}

fn ideal(latency_ns: u64, nr_hw_queues: u16) -> Box<Ideal> {
    Box::new(Ideal::new(
        "ideal",
        IdealParams {
            latency_ns,
            bandwidth: 1 << 40,
            queue_depth: 64,
            nr_hw_queues,
            ..Default::default()
        },
    ))
}

fn run(sched: &str, dev: Box<Ideal>, jobs: Vec<JobConfig>) -> RunSummary {
    run_affinity(sched, dev, jobs, 1)
}

fn run_affinity(sched: &str, dev: Box<Ideal>, jobs: Vec<JobConfig>, rq_affinity: u8) -> RunSummary {
    let cfg = SimConfig {
        scheduler: sched.into(),
        nr_cpus: 16,
        host: server(),
        rq_affinity,
        ..Default::default()
    };
    Simulation::new(&cfg, dev, jobs)
        .unwrap()
        .run(&mut NoObserver)
}

/// Completions on the same LLC as the interrupt CPU run there; on another LLC
/// they go to the submitting CPU by IPI (`rq_affinity=1`).
#[test]
fn a_completion_runs_on_the_submitting_cpu_only_across_llcs() {
    let c = costs();
    // One hardware queue: its vector is CPU 0's. CPUs 0-7 share an L3.
    let near = run("none", ideal(20_000, 1), vec![psync_job(0, 3, 10)]);
    let far = run("none", ideal(20_000, 1), vec![psync_job(0, 12, 10)]);
    let h_near = near.host.unwrap();
    let h_far = far.host.unwrap();
    let n = near.requests;
    assert!(n > 100, "{n}");
    // Interrupts on CPU 0 either way.
    assert!(h_near.cpus[0].irq >= n * c.irq_ns);
    // Near: the completion work runs on CPU 0 too; CPU 3 runs only the thread.
    assert!(h_near.cpus[0].irq >= n * (c.irq_ns + c.complete_ns));
    assert_eq!(h_near.cpus[3].irq, 0);
    // Far: CPU 12 takes an IPI and the completion work for each request.
    let m = far.requests;
    assert!(h_far.cpus[12].irq >= m * (c.ipi_ns + c.complete_ns));
    assert!(h_far.cpus[0].irq < m * (c.irq_ns + c.complete_ns));
}

/// `rq_affinity=2` sends every completion to its submitting CPU, `0` none.
#[test]
fn rq_affinity_two_forces_and_zero_forbids_the_ipi() {
    let c = costs();
    let forced = run_affinity("none", ideal(20_000, 1), vec![psync_job(0, 3, 10)], 2);
    let n = forced.requests;
    assert!(forced.host.unwrap().cpus[3].irq >= n * (c.ipi_ns + c.complete_ns));
    let off = run_affinity("none", ideal(20_000, 1), vec![psync_job(0, 12, 10)], 0);
    let h = off.host.unwrap();
    assert_eq!(h.cpus[12].irq, 0);
    assert!(h.cpus[0].irq >= off.requests * (c.irq_ns + c.complete_ns));
}

/// Two synchronous jobs pinned to one CPU take turns on it: with CPU-bound
/// submissions on a device faster than the CPU, they share one CPU's throughput,
/// and each sleep or preemption is a context switch.
#[test]
fn two_threads_on_one_cpu_share_it() {
    let apart = run(
        "none",
        ideal(1_000, 4),
        vec![psync_job(0, 0, 5), psync_job(1, 1, 5)],
    );
    let together = run(
        "none",
        ideal(1_000, 4),
        vec![psync_job(0, 0, 5), psync_job(1, 0, 5)],
    );
    assert!(
        (together.requests as f64) < 0.75 * apart.requests as f64,
        "together {} apart {}",
        together.requests,
        apart.requests
    );
    let h = together.host.unwrap();
    assert!(h.jobs.iter().all(|t| t.nvcsw + t.nivcsw > 0));
    // CPU 0 was nearly always busy, CPU 1 never.
    assert!(h.cpus[0].busy() > together.end.0 * 9 / 10);
    assert_eq!(h.cpus[1].busy(), 0);
}

/// The scheduler's cost shows in IOPS on a device faster than the CPUs: none
/// above mq-deadline above BFQ (the kernel's BFQ documentation: its per-request
/// work is ~2.7x mq-deadline's).
#[test]
fn scheduler_overhead_shows_on_a_fast_device() {
    let jobs = || (0..8).map(|i| psync_job(i, i, 5)).collect::<Vec<_>>();
    let none = run("none", ideal(2_000, 1), jobs()).requests;
    let dd = run("mq-deadline", ideal(2_000, 1), jobs()).requests;
    let bfq_sum = run("bfq", ideal(2_000, 1), jobs());
    let bfq = bfq_sum.requests;
    assert!(none > dd && dd > bfq, "none {none} dd {dd} bfq {bfq}");
    let lock = &bfq_sum.host.unwrap().locks[0];
    assert!(lock.acquired > 0 && lock.contended > 0 && lock.wait_ns > 0);
}

/// Accounting: a CPU's busy time never exceeds the run; threads' and interrupt
/// time add up to the CPUs' busy time; the run is deterministic.
#[test]
fn cpu_time_adds_up_and_runs_repeat_exactly() {
    let jobs = || {
        (0..6)
            .map(|i| JobConfig {
                depth: 8,
                async_engine: true,
                engine: sim::fio::IoEngine::Libaio,
                cpus_allowed: (0..16).collect(),
                ..psync_job(i, i % 3, 5)
            })
            .collect::<Vec<_>>()
    };
    let a = run("mq-deadline", ideal(30_000, 1), jobs());
    let b = run("mq-deadline", ideal(30_000, 1), jobs());
    assert_eq!(format!("{:?}", a.host), format!("{:?}", b.host));
    assert_eq!(a.requests, b.requests);
    let h = a.host.unwrap();
    let busy: u64 = h.cpus.iter().map(|c| c.busy()).sum();
    for c in &h.cpus {
        assert!(c.busy() <= a.end.0, "{c:?} over {}", a.end.0);
        assert!(c.spin <= c.sys + c.irq);
    }
    let threads: u64 = h.jobs.iter().map(|t| t.usr + t.sys).sum();
    let irq: u64 = h.cpus.iter().map(|c| c.irq).sum();
    assert_eq!(threads + irq, busy);
    // Woken threads moved to idle CPUs they were allowed on.
    assert!(h.cpus.iter().filter(|c| c.usr > 0).count() > 3);
}
