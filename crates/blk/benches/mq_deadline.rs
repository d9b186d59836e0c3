//! Scheduler steady state: with N requests queued, each iteration inserts one
//! request, dispatches one and completes one (`finish_request` and free included).

use blk::bench::SchedBench;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn steady_state(c: &mut Criterion) {
    for sched in ["none", "mq-deadline"] {
        let mut g = c.benchmark_group(format!("{sched}/insert_dispatch_complete"));
        g.throughput(Throughput::Elements(1));
        for queued in [64usize, 1024, 16_384] {
            let mut b = SchedBench::new(sched, queued).expect("registered scheduler");
            g.bench_with_input(BenchmarkId::from_parameter(queued), &queued, |bench, _| {
                bench.iter(|| b.step())
            });
        }
        g.finish();
    }
}

criterion_group!(benches, steady_state);
criterion_main!(benches);
