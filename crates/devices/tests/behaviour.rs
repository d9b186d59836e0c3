//! Behaviour the schedulers depend on: NCQ gains, read-ahead, the SATA non-queued
//! flush rule, RAID splitting, no starvation, determinism.

use blk::mq::QueueRqStatus;
use blk::{Ns, Op, ReqFlags, Request, RqId};
use devices::Device;

mod common;
use common::{closed_loop, request as rq, Pat};

fn dev(name: &str) -> Box<dyn Device> {
    devices::profile(name).unwrap().build()
}

/// Run until `d` is idle; completions with their times.
fn drain(d: &mut dyn Device) -> Vec<(Ns, RqId)> {
    let mut out = vec![];
    let mut v = vec![];
    while let Some(t) = d.next_event() {
        v.clear();
        d.advance(t, &mut v);
        out.extend(v.iter().map(|id| (t, *id)));
    }
    out
}

#[test]
fn hdd_random_read_iops_rise_with_queue_depth_through_ncq() {
    for name in ["hdd-7200", "mg04aca400n"] {
        let mut last = 0.0;
        let mut first = 0.0;
        for qd in [1, 2, 4, 8, 16, 32] {
            let mut d = dev(name);
            let r = closed_loop(d.as_mut(), qd, Op::Read, 4096, Pat::Rand, 20.0, 0.0, 3);
            println!("{name} qd{qd}: {:.0} IOPS", r.iops);
            // With two commands the drive still has only one to choose from when
            // one finishes (the host's next arrives after the decision): no gain yet.
            assert!(
                r.iops > last * 0.97,
                "{name}: qd{qd} {:.0} < {last:.0}",
                r.iops
            );
            if qd >= 4 {
                assert!(
                    r.iops > last * 1.1,
                    "{name}: qd{qd} {:.0} vs {last:.0}",
                    r.iops
                );
            }
            if qd == 1 {
                first = r.iops;
            }
            last = r.iops;
        }
        assert!(last > 2.0 * first, "{name}: NCQ gain {:.2}x", last / first);
    }
}

#[test]
fn hdd_sequential_512b_reads_come_from_read_ahead() {
    let mut d = dev("mg04aca400n");
    let r = closed_loop(d.as_mut(), 1, Op::Read, 512, Pat::Seq, 2.0, 0.1, 1);
    // A media access per read would cost a revolution (8.3 ms): ~120 IOPS.
    assert!(r.iops > 15_000.0, "{:.0} IOPS", r.iops);
}

#[test]
fn hdd_seek_curve_matches_datasheet_points() {
    let p = devices::profile("hdd-7200").unwrap();
    let devices::ProfileKind::Hdd(hp) = &p.kind else {
        panic!()
    };
    let h = devices::hdd::Hdd::new("t", hp.clone());
    assert!((h.seek_ns(1) as f64 - 1e6).abs() < 1e4);
    assert!((h.seek_ns(hp.cylinders - 1) as f64 - 17e6).abs() < 1e5);
    let mut prev = 0;
    for d in (1..hp.cylinders).step_by(997) {
        assert!(h.seek_ns(d) >= prev, "seek curve not monotone at {d}");
        prev = h.seek_ns(d);
    }
    // Zoned recording: the outer zone is about twice as fast as the inner.
    let outer = h.media_rate(0);
    let inner = h.media_rate(p.build().info().capacity_sectors - 1);
    assert!(outer > 1.8 * inner, "{outer} vs {inner}");
}

#[test]
fn sata_flush_is_not_queued() {
    for name in ["hdd-7200", "ssd-sata"] {
        let mut d = dev(name);
        let t = Ns(0);
        assert_eq!(
            d.queue_rq(t, RqId(0), &rq(Op::Write, ReqFlags::NONE, 8, 8), true),
            QueueRqStatus::Ok
        );
        assert_eq!(
            d.queue_rq(t, RqId(1), &rq(Op::Read, ReqFlags::NONE, 1 << 20, 8), true),
            QueueRqStatus::Ok
        );
        // A flush waits while NCQ commands are outstanding...
        assert_eq!(
            d.queue_rq(t, RqId(2), &rq(Op::Flush, ReqFlags::NONE, 0, 0), true),
            QueueRqStatus::DevResource,
            "{name}"
        );
        let done = drain(d.as_mut());
        assert_eq!(done.len(), 2);
        let t = done.last().unwrap().0;
        // ...is accepted once they drained...
        assert_eq!(
            d.queue_rq(t, RqId(2), &rq(Op::Flush, ReqFlags::NONE, 0, 0), true),
            QueueRqStatus::Ok
        );
        // ...and holds every new command back while it runs.
        assert_eq!(
            d.queue_rq(t, RqId(3), &rq(Op::Read, ReqFlags::NONE, 0, 8), true),
            QueueRqStatus::DevResource,
            "{name}"
        );
        let done = drain(d.as_mut());
        assert_eq!(done.iter().map(|x| x.1).collect::<Vec<_>>(), vec![RqId(2)]);
        assert_eq!(
            d.queue_rq(
                done[0].0,
                RqId(3),
                &rq(Op::Read, ReqFlags::NONE, 0, 8),
                true
            ),
            QueueRqStatus::Ok
        );
    }
}

#[test]
fn nvme_flush_is_queued_and_waits_for_the_buffer() {
    let mut d = dev("nvme-gen4");
    assert_eq!(
        d.queue_rq(Ns(0), RqId(0), &rq(Op::Write, ReqFlags::NONE, 0, 8), true),
        QueueRqStatus::Ok
    );
    assert_eq!(
        d.queue_rq(Ns(0), RqId(1), &rq(Op::Flush, ReqFlags::NONE, 0, 0), true),
        QueueRqStatus::Ok
    );
    assert_eq!(
        d.queue_rq(Ns(0), RqId(2), &rq(Op::Read, ReqFlags::NONE, 64, 8), true),
        QueueRqStatus::Ok
    );
    let done = drain(d.as_mut());
    let at = |id| done.iter().find(|x| x.1 == RqId(id)).unwrap().0;
    // The flush programs the open page: slower than the write it follows.
    assert!(at(1) > at(0));
    assert!(at(1).0 > 200_000, "flush at {}", at(1));
    // FUA write: done when programmed, unlike a cached one.
    let mut d = dev("nvme-gen4");
    d.queue_rq(Ns(0), RqId(0), &rq(Op::Write, ReqFlags::NONE, 0, 8), true);
    let cached = drain(d.as_mut())[0].0;
    let mut d = dev("nvme-gen4");
    d.queue_rq(Ns(0), RqId(0), &rq(Op::Write, ReqFlags::FUA, 0, 8), true);
    let fua = drain(d.as_mut())[0].0;
    assert!(fua.0 > cached.0 + 100_000, "fua {fua} cached {cached}");
}

#[test]
fn hdd_ncq_depth_is_enforced_and_nothing_starves() {
    let mut d = dev("hdd-7200");
    let mut x = 12345u64;
    for i in 0..32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let s = (x >> 20) % (d.info().capacity_sectors - 8);
        assert_eq!(
            d.queue_rq(Ns(0), RqId(i), &rq(Op::Read, ReqFlags::NONE, s, 8), true),
            QueueRqStatus::Ok
        );
    }
    assert_eq!(
        d.queue_rq(Ns(0), RqId(99), &rq(Op::Read, ReqFlags::NONE, 0, 8), true),
        QueueRqStatus::DevResource
    );
    // Keep it full of new random work; every command must finish within a bound.
    let mut issued = [Ns(0); 32];
    let mut now = Ns(0);
    let mut worst = 0u64;
    let mut v = vec![];
    while now < Ns::from_ms(20_000) {
        now = d.next_event().unwrap();
        v.clear();
        d.advance(now, &mut v);
        for id in v.clone() {
            worst = worst.max(now.since(issued[id.0 as usize]));
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let s = (x >> 20) % (d.info().capacity_sectors - 8);
            issued[id.0 as usize] = now;
            assert_eq!(
                d.queue_rq(now, id, &rq(Op::Read, ReqFlags::NONE, s, 8), true),
                QueueRqStatus::Ok
            );
        }
    }
    // max_wait_ms = 500 plus one service in progress and the queue ahead at most.
    assert!(
        worst < 800_000_000,
        "worst latency {} ms",
        worst / 1_000_000
    );
}

#[test]
fn raid0_splits_and_completes_when_all_parts_do() {
    let mut d = dev("raid0-2x-mg04aca400n");
    // 1 MiB across four 256 KiB chunks on two members.
    assert_eq!(
        d.queue_rq(Ns(0), RqId(0), &rq(Op::Read, ReqFlags::NONE, 0, 2048), true),
        QueueRqStatus::Ok
    );
    let done = drain(d.as_mut());
    assert_eq!(done.len(), 1);
    // Each member reads 512 KiB (~2.6 ms at 200 MB/s) in parallel, plus positioning.
    let t = done[0].0 .0 as f64 / 1e6;
    assert!(t > 2.0 && t < 25.0, "{t} ms");
    // Striping doubles sequential bandwidth over one member.
    let mut r = dev("raid0-2x-mg04aca400n");
    let a = closed_loop(r.as_mut(), 4, Op::Read, 1 << 20, Pat::Seq, 3.0, 0.5, 1).mb_s;
    let mut m = dev("mg04aca400n");
    let b = closed_loop(m.as_mut(), 4, Op::Read, 1 << 20, Pat::Seq, 3.0, 0.5, 1).mb_s;
    assert!(a > 1.8 * b, "raid {a:.0} MB/s, member {b:.0} MB/s");
}

#[test]
fn runs_are_deterministic() {
    for name in [
        "hdd-7200",
        "raid0-2x-mg04aca400n",
        "ssd-sata",
        "nvme-600p-128g",
    ] {
        let mut a = dev(name);
        let mut b = dev(name);
        let x = closed_loop(a.as_mut(), 8, Op::Write, 4096, Pat::Rand, 1.0, 0.0, 9).iops;
        let y = closed_loop(b.as_mut(), 8, Op::Write, 4096, Pat::Rand, 1.0, 0.0, 9).iops;
        assert_eq!(x, y, "{name}");
    }
}

/// Queue `rqs` at `t0` (all accepted), then advance until all of them completed;
/// returns when the last one did. Background work (destage) is not waited for.
fn submit_all(d: &mut dyn Device, t0: Ns, rqs: &[Request], first_id: u32) -> Ns {
    for (i, r) in rqs.iter().enumerate() {
        let st = d.queue_rq(t0, RqId(first_id + i as u32), r, true);
        assert_eq!(st, QueueRqStatus::Ok);
    }
    let mut left = rqs.len();
    let mut v = vec![];
    let mut t = t0;
    while left > 0 {
        t = d.next_event().expect("pending completions");
        v.clear();
        d.advance(t, &mut v);
        left -= v.len();
    }
    t
}

/// Seed 0's single-disk write case: 32 writers rewriting the same 512-byte sectors
/// (every clone starts at offset 0). The write cache keeps one copy per sector, so
/// the rewrites are absorbed and every write completes from the cache (~55 µs of
/// firmware each), not after a media write per command (~8 ms for a rewrite of the
/// sector just written). Reads of sectors still in the write buffer are hits too.
#[test]
fn hdd_write_cache_absorbs_rewrites_and_serves_reads_of_them() {
    let mut d = dev("mg04aca400n");
    let mut t = Ns(0);
    let rounds = 200u64;
    for k in 0..rounds {
        let rqs: Vec<Request> = (0..32)
            .map(|_| rq(Op::Write, ReqFlags::NONE, k, 1))
            .collect();
        t = submit_all(d.as_mut(), t, &rqs, k as u32 * 32);
    }
    let per_write_us = t.0 as f64 / 1e3 / (rounds * 32) as f64;
    assert!(per_write_us < 100.0, "{per_write_us:.1} us per write");
    // A read of the last sectors written: in the write buffer, no media access.
    let t1 = submit_all(
        d.as_mut(),
        t,
        &[rq(Op::Read, ReqFlags::NONE, rounds - 4, 4)],
        1 << 20,
    );
    assert!(t1.since(t) < 200_000, "read took {} ns", t1.since(t));
}

/// The RAID controller's write-back cache serves reads of data just written (seed 0's
/// rw case: reads and writes of one sequential stream, 16 jobs at the same offsets).
#[test]
fn raid0_reads_of_written_data_come_from_the_controller_cache() {
    let mut d = dev("raid0-2x-mg04aca400n");
    let t = submit_all(
        d.as_mut(),
        Ns(0),
        &[rq(Op::Write, ReqFlags::NONE, 1000, 8)],
        0,
    );
    let t1 = submit_all(d.as_mut(), t, &[rq(Op::Read, ReqFlags::NONE, 1002, 2)], 1);
    // Controller latency only (25 us + 6 us), not a disk access (ms).
    assert!(t1.since(t) < 100_000, "read took {} ns", t1.since(t));
}
