//! Criterion benchmarks of the event engine, of a whole simulated run and of
//! `kernel-trace compare`.

use blk::Ns;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sim::engine::EventQueue;

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    g.throughput(Throughput::Elements(1));
    g.bench_function("push_pop_128_pending", |b| {
        b.iter_batched_ref(
            || {
                let mut q = EventQueue::new();
                for i in 0..128u64 {
                    q.push(Ns(i * 7919 % 1000), i);
                }
                q
            },
            |q| {
                let (t, e) = q.pop().unwrap();
                q.push(Ns(t.0 + 1000), e);
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn whole_run(c: &mut Criterion) {
    let w = &sim::bench::workloads()[0];
    let mut g = c.benchmark_group("simulation");
    g.sample_size(10);
    let reqs = sim::bench::run(w, 10).requests;
    g.throughput(Throughput::Elements(reqs));
    g.bench_function("none_ideal_randread_4k_qd32x4_10ms", |b| {
        b.iter(|| sim::bench::run(w, 10))
    });
    g.finish();
}

/// `kernel-trace compare` against schedulers other than the recorded one (most
/// decisions disagree, so the replay goes back to the kernel's choice again and
/// again): must stay linear in the recording.
fn compare_other_scheduler(c: &mut Criterion) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/kernel/kyber-lowlat-getrq.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut g = c.benchmark_group("kernel_trace_compare");
    g.sample_size(10);
    for sched in ["bfq", "mq-deadline"] {
        let (_, _, conv) =
            sim::kernel_trace::try_load(&text, sched, None, sim::kernel_trace::Malformed::Reject)
                .unwrap();
        g.bench_function(format!("kyber_recording_vs_{sched}"), |b| {
            b.iter(|| sim::kernel_trace::compare(&conv, &Default::default()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, event_queue, whole_run, compare_other_scheduler);
criterion_main!(benches);
