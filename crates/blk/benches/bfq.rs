//! BFQ steady state: with N requests queued (one process, random 4 KiB reads and
//! writes, see `blk::bench::SchedBench`), each
//! iteration inserts one request, dispatches one and completes one
//! (`finish_request` and free included) — the figure `iosched bench --sched bfq`
//! prints, with criterion's statistics.

use blk::bench::SchedBench;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn steady_state(c: &mut Criterion) {
    let mut g = c.benchmark_group("bfq/insert_dispatch_complete");
    g.throughput(Throughput::Elements(1));
    for queued in [1024usize, 16_384] {
        let mut b = SchedBench::new("bfq", queued).expect("registered scheduler");
        g.bench_with_input(BenchmarkId::from_parameter(queued), &queued, |bench, _| {
            bench.iter(|| b.step())
        });
    }
    g.finish();
}

criterion_group!(benches, steady_state);
criterion_main!(benches);
