//! Device-model throughput: requests through each model per wall-clock second, with
//! a closed loop at queue depth 32 and no block layer.

use blk::mq::QueueRqStatus;
use blk::{Bio, BioId, CgroupId, IoPrio, Ns, Op, ReqFlags, Request, RqId, Sector};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn closed_loop(name: &str, n: u64) {
    let mut d = devices::profile(name).unwrap().build();
    let cap = d.info().capacity_sectors - 8;
    let mut x = 88172645463325252u64;
    let mut free: Vec<u32> = (0..32).collect();
    let mut done = Vec::new();
    let mut now = Ns(0);
    let mut completed = 0;
    let bio = Bio {
        op: Op::Read,
        flags: ReqFlags::NONE,
        sector: Sector(0),
        nr_sectors: 8,
        ioprio: IoPrio::default(),
        pid: 1,
        cpu: 0,
        cgroup: CgroupId(0),
        owner: 0,
    };
    let mut rq = Request::from_bio(&bio, BioId(0), Ns(0));
    while completed < n {
        while let Some(id) = free.pop() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            rq.sector = Sector(x % cap / 8 * 8);
            if d.queue_rq(now, RqId(id), &rq, true) != QueueRqStatus::Ok {
                free.push(id);
                break;
            }
        }
        now = d.next_event().unwrap();
        done.clear();
        d.advance(now, &mut done);
        completed += done.len() as u64;
        free.extend(done.iter().map(|r| r.0));
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("randread_4k_qd32");
    g.throughput(Throughput::Elements(10_000));
    for name in ["hdd-7200", "ssd-sata", "nvme-gen4", "raid0-2x-mg04aca400n"] {
        g.bench_function(name, |b| b.iter(|| closed_loop(name, 10_000)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
