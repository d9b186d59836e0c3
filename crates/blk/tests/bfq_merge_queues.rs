//! BFQ queue merging, hand-worked against `block/bfq-iosched.c` v6.13: stable merge
//! (`bfq_do_or_sched_stable_merge`, `bfq_setup_stable_merge`), early queue merge
//! (`bfq_setup_cooperator`, `bfq_merge_bfqqs`) and splitting
//! (`bfq_get_bfqq_handle_split`, `bfq_split_bfqq`).

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::elevator::bfq::Expiration;
use blk::elevator::{Elevator, QueueParams};
use blk::types::Ns;

fn merging(p: QueueParams) -> Harness {
    let mut h = Harness::with(p);
    h.b.set_tunable("queue_merging", "1").unwrap();
    h
}

fn rotational() -> QueueParams {
    QueueParams {
        rotational: true,
        ..QueueParams::default()
    }
}

/// Non-rotational device (queueing assumed until `hw_tag` says otherwise): four
/// processes whose first requests come 1 ms apart in one group are stably merged
/// into the first one's queue at once, and that queue serves their requests in
/// sector order (1000, 2000, 3000, 4000 from head position 0), whoever issued
/// them. A process starting 200 ms after the first queue was created (after the
/// 180 ms burst interval, within the 600 ms activation window) keeps its own
/// queue; one starting at 700 ms does too, and becomes the reference for later
/// queues.
#[test]
fn processes_started_together_share_one_queue_on_ssd() {
    let mut h = merging(QueueParams::default());
    let sectors = [3000u64, 1000, 2000, 4000];
    let mut rqs = Vec::new();
    for (i, &s) in sectors.iter().enumerate() {
        h.advance(Ns::from_ms(i as u64));
        rqs.push(h.submit(Io::read(i as u32 + 1, s, 8)));
    }
    let q1 = h.b.sync_queue_of(1).unwrap();
    for pid in 1..=4 {
        assert_eq!(h.b.sync_queue_of(pid), Some(q1), "pid {pid}");
    }
    assert!(h.b.queues[q1].coop);
    assert_eq!(h.b.queues[q1].process_refs, 4);
    assert_eq!(h.b.queues[q1].bic, None);
    assert_eq!(h.b.queues.len(), 4, "three queues created and merged away");
    for q in 1..4 {
        assert_eq!(h.b.queues[q].process_refs, 0);
        assert!(!h.b.queues[q].busy);
    }
    let order: Vec<_> = (0..4).map(|_| h.dispatch().unwrap()).collect();
    assert_eq!(order, [rqs[1], rqs[2], rqs[0], rqs[3]]);
    h.b.check_invariants().unwrap();

    h.advance(Ns::from_ms(200));
    h.submit(Io::read(5, 9000, 8));
    let q5 = h.b.sync_queue_of(5).unwrap();
    assert_ne!(q5, q1);
    h.advance(Ns::from_ms(700));
    h.submit(Io::read(6, 19000, 8));
    let q6 = h.b.sync_queue_of(6).unwrap();
    assert!(q6 != q1 && q6 != q5);
    h.advance(Ns::from_ms(750));
    h.submit(Io::read(7, 29000, 8));
    assert_eq!(
        h.b.sync_queue_of(7),
        Some(q6),
        "merged with the 700 ms queue"
    );
}

/// The switch and the class/level condition: with `queue_merging=0`, or with
/// another I/O priority level, processes keep their own queues.
#[test]
fn different_level_or_switch_off_keeps_queues_apart() {
    let mut h = merging(QueueParams::default());
    h.submit(Io::read(1, 0, 8));
    h.submit(Io::read(2, 1 << 20, 8).level(3));
    assert_ne!(h.b.sync_queue_of(1), h.b.sync_queue_of(2));
    let mut h = Harness::new();
    h.submit(Io::read(1, 0, 8));
    h.submit(Io::read(2, 1 << 20, 8));
    assert_ne!(h.b.sync_queue_of(1), h.b.sync_queue_of(2));
}

/// EQM on a rotational device, two processes reading interleaved 8-sector
/// chunks with 8-sector gaps, so that their requests do not merge (pid 1: 0, 32,
/// 64; pid 2: 16, 48):
/// - pid 1's request at 0 creates q1 (nothing to merge with); pid 2's at 16 creates
///   q2, whose stable merge with q1 is only scheduled (rotational), and EQM does
///   not search while only one queue is busy;
/// - q1 is served (0) and then idles for pid 1 (sequential, rotational: idling
///   boosts throughput): the next dispatch gives nothing;
/// - pid 1's request at 32 is 16 sectors from q2's head request (position tree):
///   q1 is merged into q2 (`new_bfqq`), pid 1 now uses q2 and q1 has no process
///   left, so it stops idling (NO_MORE_REQUESTS) and q2 serves 16, 32, 48, 64.
#[test]
fn interleaved_readers_merge_into_one_queue_on_a_disk() {
    let mut h = merging(rotational());
    let r0 = h.submit(Io::read(1, 0, 8));
    let r16 = h.submit(Io::read(2, 16, 8));
    let (q1, q2) = (h.b.sync_queue_of(1).unwrap(), h.b.sync_queue_of(2).unwrap());
    assert_ne!(q1, q2);
    assert_eq!(h.dispatch(), Some(r0));
    assert_eq!(h.dispatch(), None, "q1 idles for pid 1");
    let r32 = h.submit(Io::read(1, 32, 8));
    assert_eq!(h.b.queues[q1].new_bfqq, Some(q2));
    assert_eq!(h.b.sync_queue_of(1), Some(q2));
    assert_eq!(h.b.queue_of(r32), Some(q2));
    assert!(h.b.queues[q2].coop);
    assert_eq!(h.b.queues[q1].process_refs, 0);
    assert_eq!(h.b.queues[q2].process_refs, 2);
    assert_eq!(h.dispatch(), Some(r16));
    let last = *h.b.expirations.last().unwrap();
    assert_eq!((last.queue, last.reason), (q1, Expiration::NoMoreRequests));
    let r48 = h.submit(Io::read(2, 48, 8));
    let r64 = h.submit(Io::read(1, 64, 8));
    assert_eq!(h.dispatch(), Some(r32));
    assert_eq!(h.dispatch(), Some(r48));
    assert_eq!(h.dispatch(), Some(r64));
    assert_eq!(h.b.in_service_queue, Some(q2));
    h.b.check_invariants().unwrap();
}

/// Continuing the interleaved readers: both turn random (every request 1 GiB
/// from the previous one). The shared queue becomes seeky (more than 19 of its
/// last 32 requests seeky) and is marked for splitting when it next expires
/// (here: TOO_IDLE after the 2 ms idle slice of a seeky queue). Pid 1's next
/// request then takes it out into a new queue that gets back the state saved at
/// the merge; pid 2, the last process left in q2, gets q2 back unshared.
#[test]
fn seeky_shared_queue_is_split() {
    let mut h = merging(rotational());
    h.submit(Io::read(1, 0, 8));
    h.submit(Io::read(2, 16, 8));
    let rq = h.dispatch().unwrap();
    h.submit(Io::read(1, 32, 8));
    let q2 = h.b.sync_queue_of(2).unwrap();
    assert_eq!(h.b.sync_queue_of(1), Some(q2));
    let mut inflight = vec![rq];
    for i in 0..24u64 {
        let pid = 1 + (i % 2) as u32;
        h.submit(Io::read(pid, (i + 1) << 21, 8));
    }
    while let Some(r) = h.dispatch() {
        inflight.push(r);
    }
    assert!(h.b.queues[q2].seeky());
    assert!(!h.b.queues[q2].split_coop);
    h.advance(h.now.add(Ns::from_us(500).0));
    for r in inflight {
        h.complete(r);
    }
    assert!(h.b.idling());
    h.advance(h.now.add(Ns::from_ms(3).0));
    let last = *h.b.expirations.last().unwrap();
    assert_eq!((last.queue, last.reason), (q2, Expiration::TooIdle));
    assert!(h.b.queues[q2].split_coop);
    let n = h.b.queues.len();
    let r1 = h.submit(Io::read(1, 1 << 30, 8));
    let q3 = h.b.sync_queue_of(1).unwrap();
    assert_eq!(q3, n, "a new queue for pid 1");
    assert_eq!(h.b.queue_of(r1), Some(q3));
    assert_eq!(h.b.queues[q3].split_time, h.b.queues[q3].creation_time);
    assert_eq!(h.b.queues[q2].process_refs, 1);
    h.submit(Io::read(2, 1 << 31, 8));
    assert_eq!(h.b.sync_queue_of(2), Some(q2));
    assert!(!h.b.queues[q2].coop && !h.b.queues[q2].split_coop);
    h.b.check_invariants().unwrap();
}

/// Delayed stable merge on a rotational device: pid 2's queue, created 1 ms after
/// pid 1's, has a long think time (a request every 100 ms, served once pid 1's
/// queue has stopped idling), so idling does not boost its throughput; its first
/// request at least 600 ms after its creation (701 ms) merges it into pid 1's
/// queue.
#[test]
fn delayed_stable_merge_on_a_disk() {
    let mut h = merging(rotational());
    let r = h.submit(Io::read(1, 0, 8));
    assert_eq!(h.dispatch(), Some(r));
    h.advance(Ns::from_us(100));
    h.complete(r);
    let q1 = h.b.sync_queue_of(1).unwrap();
    for k in 0..7u64 {
        h.advance(Ns::from_ms(100 * k + 1));
        let r = h.submit(Io::read(2, (k + 1) << 24, 8));
        assert_ne!(h.b.queue_of(r), Some(q1), "{k}: not yet merged");
        h.advance(Ns::from_ms(100 * k + 10));
        assert_eq!(h.dispatch(), Some(r));
        h.advance(Ns::from_ms(100 * k + 11));
        h.complete(r);
    }
    assert!(!h.b.queues[h.b.sync_queue_of(2).unwrap()].has_short_ttime);
    h.advance(Ns::from_ms(701));
    let r = h.submit(Io::read(2, 1 << 30, 8));
    assert_eq!(h.b.queue_of(r), Some(q1));
    assert_eq!(h.b.sync_queue_of(2), Some(q1));
    assert!(h.b.queues[q1].coop);
    h.b.check_invariants().unwrap();
}

/// Merged queues are kept out of weight raising unless stably merged. Two
/// processes share a queue: on a disk through EQM (pid 1's second request lands
/// next to pid 2's), on an SSD through the stable merge at creation. Raising is
/// ended (`low_latency` 0 then 1), everything completes, and after 3 s of idleness
/// (more than `bfq_wr_min_idle_time`) pid 1 issues a request: the queue would be
/// interactive, but only the stably merged one is raised (coefficient 30).
#[test]
fn merged_queues_are_raised_only_if_stably_merged() {
    for (rot, raised) in [(true, false), (false, true)] {
        let mut h = Harness::with_wr(QueueParams {
            rotational: rot,
            ..QueueParams::default()
        });
        let mut inflight = vec![h.submit(Io::read(1, 0, 8)), h.submit(Io::read(2, 16, 8))];
        inflight.extend(h.dispatch());
        inflight.push(h.submit(Io::read(1, 32, 8)));
        let q = h.b.sync_queue_of(1).unwrap();
        assert_eq!(h.b.sync_queue_of(2), Some(q), "rotational {rot}");
        assert!(h.b.queues[q].coop);
        while let Some(r) = h.dispatch() {
            inflight.push(r);
        }
        inflight.sort();
        inflight.dedup();
        h.advance(Ns::from_ms(1));
        for r in inflight {
            h.complete(r);
        }
        h.b.set_tunable("low_latency", "0").unwrap();
        h.b.set_tunable("low_latency", "1").unwrap();
        h.advance(Ns::from_ms(3000));
        let r = h.submit(Io::read(1, 1 << 20, 8));
        assert_eq!(h.b.queue_of(r), Some(q));
        let wr = h.b.entity(q).wr_coeff;
        assert_eq!(wr, if raised { 30 } else { 1 }, "rotational {rot}");
        h.b.check_invariants().unwrap();
    }
}
