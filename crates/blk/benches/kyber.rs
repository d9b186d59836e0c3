//! Kyber hot path: insert + dispatch + complete of one request, with a backlog of
//! 64, 1,024 or 16,384 requests queued in the scheduler (reads and writes from 8 CPUs).

use blk::elevator::kyber::Kyber;
use blk::elevator::{Elevator, ElvCtx, QueueParams};
use blk::merge::MergeState;
use blk::request::{Bio, BioArena, Request, RqArena};
use blk::types::{CgroupId, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

struct Bench {
    k: Kyber,
    rqs: RqArena,
    bios: BioArena,
    merge: MergeState,
    now: Ns,
    n: u64,
}

impl Bench {
    fn new(queued: usize) -> Bench {
        let p = QueueParams::default();
        let mut b = Bench {
            k: Kyber::new(&p),
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            now: Ns::ZERO,
            n: 0,
        };
        for _ in 0..queued {
            b.insert();
        }
        b
    }

    fn insert(&mut self) {
        let n = self.n;
        self.n += 1;
        let bio = Bio {
            op: if n % 4 == 3 { Op::Write } else { Op::Read },
            flags: ReqFlags::SYNC,
            // Scattered sectors: nothing merges (merging is not what is measured).
            sector: Sector(n.wrapping_mul(0x9E37_79B9) % (1 << 30) * 8),
            nr_sectors: 8,
            ioprio: IoPrio::default(),
            pid: 1,
            cpu: (n % 8) as u32,
            cgroup: CgroupId(0),
            owner: n,
        };
        let bid = self.bios.alloc(bio);
        let id = self.rqs.alloc(Request::from_bio(&bio, bid, self.now));
        let mut ctx = ElvCtx {
            now: self.now,
            jiffies: Jiffies::from_ns(self.now, 1000),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        self.k.prepare_request(&mut ctx, id);
        self.k.insert_requests(&mut ctx, &[id], false);
    }

    /// One request in, one out, one completed.
    fn cycle(&mut self) {
        self.now = self.now.add(1_000);
        self.insert();
        let mut ctx = ElvCtx {
            now: self.now,
            jiffies: Jiffies::from_ns(self.now, 1000),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        if self.k.next_timer().is_some_and(|t| t <= self.now) {
            self.k.timer_fired(&mut ctx);
        }
        let rq = self.k.dispatch_request(&mut ctx).expect("tokens are free");
        ctx.rqs.get_mut(rq).issue_ns = self.now;
        let now = self.now;
        self.k.completed_request(&mut ctx, rq, now.add(50_000));
        self.k.finish_request(&mut ctx, rq);
        let r = self.rqs.free(rq);
        if let Some(b) = r.bio_head {
            self.bios.free(b);
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("kyber_insert_dispatch_complete");
    g.throughput(Throughput::Elements(1));
    for queued in [64usize, 1024, 16_384] {
        g.bench_with_input(BenchmarkId::from_parameter(queued), &queued, |b, &q| {
            let mut s = Bench::new(q);
            b.iter(|| s.cycle());
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
