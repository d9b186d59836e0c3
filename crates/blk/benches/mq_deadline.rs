//! mq-deadline steady state: with N requests queued, each iteration inserts one
//! request, dispatches one and completes one (`finish_request` and free included).

use blk::elevator::mq_deadline::MqDeadline;
use blk::elevator::{Elevator, ElvCtx, QueueParams};
use blk::merge::MergeState;
use blk::request::{Bio, BioArena, Request, RqArena};
use blk::types::{CgroupId, IoClass, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

struct Bench {
    dd: MqDeadline,
    rqs: RqArena,
    bios: BioArena,
    merge: MergeState,
    rng: u64,
    jiffies: u64,
}

impl Bench {
    fn new(queued: usize) -> Bench {
        let params = QueueParams {
            hz: 250,
            nr_requests: (queued as u32 + 1).max(256),
            ..QueueParams::default()
        };
        let mut b = Bench {
            dd: MqDeadline::new(&params),
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            rng: 0x9e37_79b9_7f4a_7c15,
            jiffies: 0,
        };
        for _ in 0..queued {
            b.insert();
        }
        b
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn insert(&mut self) {
        let r = self.next();
        // 8-sector requests on 16-sector boundaries: never adjacent, so no merges.
        let bio = Bio {
            op: if r & 1 == 0 { Op::Read } else { Op::Write },
            flags: ReqFlags::NONE,
            sector: Sector((r >> 8) % (1 << 24) * 16),
            nr_sectors: 8,
            ioprio: IoPrio {
                class: IoClass::Be,
                level: 4,
            },
            pid: 1,
            cpu: 0,
            cgroup: CgroupId(0),
            owner: 0,
        };
        let bid = self.bios.alloc(bio);
        let id = self.rqs.alloc(Request::from_bio(&bio, bid, Ns::ZERO));
        let mut ctx = ElvCtx {
            now: Ns::ZERO,
            jiffies: Jiffies(self.jiffies),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        self.dd.prepare_request(&mut ctx, id);
        self.dd.insert_requests(&mut ctx, &[id], false);
    }

    fn step(&mut self) {
        self.jiffies += 1;
        self.insert();
        let mut ctx = ElvCtx {
            now: Ns::ZERO,
            jiffies: Jiffies(self.jiffies),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        let id = self.dd.dispatch_request(&mut ctx).expect("work queued");
        ctx.merge.forget(id);
        self.dd.finish_request(&mut ctx, id);
        let rq = self.rqs.free(id);
        if let Some(b) = rq.bio_head {
            self.bios.free(b);
        }
        black_box(id);
    }
}

fn steady_state(c: &mut Criterion) {
    let mut g = c.benchmark_group("mq_deadline/insert_dispatch_complete");
    g.throughput(Throughput::Elements(1));
    for queued in [64usize, 1024, 16_384] {
        let mut b = Bench::new(queued);
        g.bench_with_input(BenchmarkId::from_parameter(queued), &queued, |bench, _| {
            bench.iter(|| b.step())
        });
    }
    g.finish();
}

criterion_group!(benches, steady_state);
criterion_main!(benches);
