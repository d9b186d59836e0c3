//! Kyber bio merging into `kyber_ctx_queue` lists (v4.18+) versus the pre-4.18
//! software-queue structure, directly and through the blk-mq core.

mod kyber_support;

use blk::elevator::kyber::{Domain, Kyber};
use blk::elevator::Elevator;
use blk::mq::{Driver, Queue, QueueConfig, QueueRqStatus, Submitted};
use blk::request::{Request, RqId};
use blk::types::{Ns, Op};
use kyber_support::{bio, Harness};

fn harness(variant: &str) -> Harness {
    let mut h = Harness::new();
    h.k.set_tunable("variant", variant).unwrap();
    h
}

#[test]
fn bios_merge_into_requests_waiting_for_a_token() {
    let mut h = harness("mainline");
    h.k.resize_domain(Domain::Read.idx(), 1);
    let a = h.insert(Op::Read, 0, 8, 0);
    assert_eq!(h.dispatch(), Some(a));
    let b = h.insert(Op::Read, 8, 8, 0);
    // No token: b stays in CPU 0's kcq ...
    assert_eq!(h.dispatch(), None);
    // ... where sequential bios still merge into it.
    assert_eq!(h.submit(Op::Read, 16, 8, 0), None);
    assert_eq!(h.rqs.get(b).nr_sectors, 16);
    assert_eq!(h.merge.merges, [1, 0]);
}

#[test]
fn pre_4_18_flushes_the_software_queues_and_loses_the_merge() {
    let mut h = harness("pre-4.18");
    h.k.resize_domain(Domain::Read.idx(), 1);
    let a = h.insert(Op::Read, 0, 8, 0);
    assert_eq!(h.dispatch(), Some(a));
    let b = h.insert(Op::Read, 8, 8, 0);
    assert_eq!(h.dispatch(), None);
    // b was moved to Kyber's hctx list by the failed dispatch: nothing merges.
    assert!(h.submit(Op::Read, 16, 8, 0).is_some());
    assert_eq!(h.rqs.get(b).nr_sectors, 8);
    assert_eq!(h.merge.merges, [0, 0]);
}

#[test]
fn pre_4_18_flushes_all_domains_even_when_another_is_throttled() {
    let mut h = harness("pre-4.18");
    h.k.resize_domain(Domain::Write.idx(), 1);
    let w0 = h.insert(Op::Write, 0, 8, 0);
    assert_eq!(h.dispatch(), Some(w0));
    let w1 = h.insert(Op::Write, 8, 8, 0);
    let r = h.insert(Op::Read, 1000, 8, 0);
    // The read goes out; the flush took the throttled write along.
    assert_eq!(h.dispatch(), Some(r));
    assert!(
        h.submit(Op::Write, 16, 8, 0).is_some(),
        "write cannot merge any more"
    );
    assert_eq!(h.rqs.get(w1).nr_sectors, 8);
    // Mainline: the write stays in its kcq and merges.
    let mut m = harness("mainline");
    m.k.resize_domain(Domain::Write.idx(), 1);
    let w0 = m.insert(Op::Write, 0, 8, 0);
    assert_eq!(m.dispatch(), Some(w0));
    let w1 = m.insert(Op::Write, 8, 8, 0);
    let r = m.insert(Op::Read, 1000, 8, 0);
    assert_eq!(m.dispatch(), Some(r));
    assert_eq!(m.submit(Op::Write, 16, 8, 0), None);
    assert_eq!(m.rqs.get(w1).nr_sectors, 16);
}

#[test]
fn before_dispatch_both_variants_merge() {
    for v in ["mainline", "pre-4.18"] {
        let mut h = harness(v);
        let a = h.insert(Op::Read, 0, 8, 3);
        assert_eq!(h.submit(Op::Read, 8, 8, 3), None, "{v}: back merge");
        assert_eq!(h.rqs.get(a).nr_sectors, 16);
    }
}

#[test]
fn merges_only_with_the_submitting_cpu_and_same_domain() {
    let mut h = harness("mainline");
    let a = h.insert(Op::Read, 0, 8, 0);
    assert!(h.submit(Op::Read, 8, 8, 1).is_some(), "other CPU's kcq");
    assert!(h.submit(Op::Write, 8, 8, 0).is_some(), "write domain list");
    // Front merge on the right CPU.
    let c = h.insert(Op::Read, 100, 8, 2);
    assert_eq!(h.submit(Op::Read, 92, 8, 2), None);
    assert_eq!(h.rqs.get(c).sector.0, 92);
    assert_eq!(h.rqs.get(a).nr_sectors, 8);
}

#[test]
fn only_the_newest_eight_are_looked_at() {
    let mut h = harness("mainline");
    let first = h.insert(Op::Read, 0, 8, 0);
    for i in 0..8 {
        h.insert(Op::Read, 10_000 + i * 100, 8, 0);
    }
    // `first` is the ninth from the tail.
    assert!(h.submit(Op::Read, 8, 8, 0).is_some());
    assert_eq!(h.rqs.get(first).nr_sectors, 8);
}

#[test]
fn pre_4_18_other_ops_use_up_the_eight() {
    // One mixed software queue: eight newer writes hide an adjacent read.
    let mut h = harness("pre-4.18");
    let first = h.insert(Op::Read, 0, 8, 0);
    for i in 0..8 {
        h.insert(Op::Write, 10_000 + i * 100, 8, 0);
    }
    assert!(h.submit(Op::Read, 8, 8, 0).is_some());
    assert_eq!(h.rqs.get(first).nr_sectors, 8);
    // With per-domain kcqs the read list only holds reads.
    let mut m = harness("mainline");
    let first = m.insert(Op::Read, 0, 8, 0);
    for i in 0..8 {
        m.insert(Op::Write, 10_000 + i * 100, 8, 0);
    }
    assert_eq!(m.submit(Op::Read, 8, 8, 0), None);
    assert_eq!(m.rqs.get(first).nr_sectors, 16);
}

#[test]
fn a_failed_attempt_ends_the_search() {
    let mut h = harness("mainline");
    h.merge.limits.max_sectors = 16;
    let old = h.insert(Op::Read, 0, 8, 0);
    let full = h.insert(Op::Read, 100, 16, 0);
    // Adjacent to `full` (tail) but too big: the search stops there. A later bio
    // adjacent only to `old` would still have found it, since `full` is now NOMERGE...
    assert!(h.submit(Op::Read, 116, 8, 0).is_some());
    assert_eq!(h.rqs.get(full).nr_sectors, 16);
    // ... but a bio adjacent to both stops at the newest adjacent one first.
    let _ = old;
    let mut g = harness("mainline");
    g.merge.limits.max_sectors = 16;
    let a = g.insert(Op::Read, 0, 8, 0); // [0, 8)
    let b = g.insert(Op::Read, 16, 16, 0); // [16, 32), full
                                           // Bio [8, 16) is a back merge for a and a front merge for b; b (newest) is tried
                                           // first, fails on max_sectors, and a is not tried.
    assert!(g.submit(Op::Read, 8, 8, 0).is_some());
    assert_eq!((g.rqs.get(a).nr_sectors, g.rqs.get(b).nr_sectors), (8, 16));
}

#[test]
fn nomerges_2_disables_elevator_merging() {
    let mut h = harness("mainline");
    h.merge.limits.nomerges = 2;
    h.insert(Op::Read, 0, 8, 0);
    assert!(h.submit(Op::Read, 8, 8, 0).is_some());
}

#[test]
fn variant_switch_needs_an_empty_scheduler() {
    let mut h = Harness::new();
    h.insert(Op::Read, 0, 8, 0);
    assert!(h.k.set_tunable("variant", "pre-4.18").is_err());
    assert!(h.k.set_tunable("variant", "2.6").is_err());
    h.dispatch_all();
    h.k.set_tunable("variant", "pre-4.18").unwrap();
    assert_eq!(h.k.get_tunable("variant").unwrap(), "pre-4.18");
}

/// A device that holds whatever it is given until told to complete.
#[derive(Default)]
struct Hold {
    inflight: Vec<RqId>,
}

impl Driver for Hold {
    fn queue_rq(&mut self, _now: Ns, id: RqId, _rq: &Request, _last: bool) -> QueueRqStatus {
        self.inflight.push(id);
        QueueRqStatus::Ok
    }
}

/// Eight sequential readers, one per CPU, each keeping 64 bios of 4 KiB in flight (as
/// fio's libaio at iodepth 64), through the blk-mq core with 1024 scheduler tags, on a
/// device that completes 16 requests per 100 µs: the 256 read tokens run out and a
/// backlog builds in Kyber. Returns read merges.
fn seed_like_merges(variant: &str) -> u64 {
    let mut q = Queue::new(
        QueueConfig {
            nr_requests: Some(1024),
            queue_depth: 1024,
            nr_cpus: 8,
            hz: 1000,
            ..Default::default()
        },
        |p| Box::new(Kyber::new(p)),
    );
    q.elevator_mut().set_tunable("variant", variant).unwrap();
    let mut dev = Hold::default();
    let mut next = [0u64; 8];
    let mut outstanding = [0u32; 8];
    let mut done = Vec::new();
    let mut now = Ns(0);
    let run = |q: &mut Queue, dev: &mut Hold, now: Ns| {
        while q.next_run().is_some_and(|t| t <= now) {
            q.run(now, dev);
        }
    };
    for _ in 0..200 {
        for cpu in 0..8 {
            while outstanding[cpu] < 64 {
                let b = {
                    let mut b = bio(Op::Read, cpu as u64 * 1_000_000 + next[cpu], 8, cpu as u32);
                    b.owner = cpu as u64;
                    b
                };
                next[cpu] += 8;
                outstanding[cpu] += 1;
                let s = q.submit_bio(now, b);
                assert_ne!(s, Submitted::Sleeping);
                run(&mut q, &mut dev, now);
            }
        }
        now = now.add(100_000);
        let n = dev.inflight.len().min(16);
        for id in dev.inflight.drain(..n).collect::<Vec<_>>() {
            q.complete(now, id);
        }
        q.take_completed(&mut done);
        for owner in done.drain(..) {
            outstanding[owner as usize] -= 1;
        }
        while let Some(t) = q.next_elevator_timer().filter(|&t| t <= now) {
            q.elevator_timer(t);
        }
        run(&mut q, &mut dev, now);
    }
    q.disk_stats(now).merges[0]
}

#[test]
fn seed_workload_merges_only_with_kcqs() {
    let mainline = seed_like_merges("mainline");
    let legacy = seed_like_merges("pre-4.18");
    eprintln!("read merges: mainline {mainline}, pre-4.18 {legacy}");
    assert!(mainline > 1000, "mainline merges: {mainline}");
    assert_eq!(legacy, 0, "pre-4.18 merges");
}
