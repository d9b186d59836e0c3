//! BFQ: process exit (`bfq_exit_icq`) and the unsigned clock arithmetic of a brand
//! new queue's first think-time and idle-time samples, hand-worked against
//! `block/bfq-iosched.c` (Linux 6.18).

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::elevator::{Elevator, QueueParams};
use blk::types::{IoClass, Ns};

/// A new queue's think-time reference is its creation instant + 1 ns, read from the
/// same clock as its first request's insert, so the first sample is `-1` as a u64:
/// clamped to `2 × slice_idle` = 16 ms. samples = (0 + 256) / 8 = 32, total =
/// 256 × 16 ms / 8 = 512 ms, mean = (512 ms + 128) / 32 = 16 ms + 4 ns. (Saturating
/// the sample at 0 instead gives mean (0 + 128) / 32 = 4 ns.)
#[test]
fn first_think_time_sample_wraps_to_twice_slice_idle() {
    let mut h = Harness::new();
    h.advance(Ns::from_ms(5));
    let r = h.submit(Io::read(1, 0, 8));
    let q = h.b.sync_queue_of(1).unwrap();
    let t = &h.b.queues[q].ttime;
    assert_eq!((t.samples, t.total, t.mean), (32, 512_000_000, 16_000_004));
    // Not a valid estimate yet (samples <= 80): still "short think time".
    assert!(h.b.queues[q].has_short_ttime);
    assert_eq!(h.dispatch(), Some(r));
}

/// The idle-time sum of the I/O-intensity window starts at `u64::MAX` (same
/// wrap): the queue counts as I/O bound while `just_created` (its first request
/// skips the check). A second request 100 us later, the first still queued, adds
/// no idle time, and 5 × `u64::MAX` (wrapping to `u64::MAX - 4`) is far above the
/// 100 us window, so `IO_bound` is cleared; with the sample saturated at 0 the sum
/// would be 0 and the queue I/O bound.
#[test]
fn first_idle_time_sample_wraps_and_clears_io_bound() {
    let mut h = Harness::new();
    let _r1 = h.submit(Io::read(1, 0, 8));
    let q = h.b.sync_queue_of(1).unwrap();
    assert_eq!(h.b.queues[q].tot_idle_time, u64::MAX);
    assert!(
        h.b.queues[q].io_bound,
        "set at creation, not checked on the first request"
    );
    h.advance(Ns::from_us(100));
    let _r2 = h.submit(Io::read(1, 4096, 8));
    assert_eq!(h.b.queues[q].tot_idle_time, u64::MAX);
    assert!(!h.b.queues[q].io_bound);
}

/// RT reader beside a BE reader (rotational device, raising off). The RT queue is
/// in service and idles after its request completes (two classes busy: asymmetric),
/// so the BE request waits. When the RT process exits, `bfq_exit_icq` ends the RT
/// queue's slot at once (`__bfq_bfqq_expire`, budget timeout) and drops its process
/// reference: the next dispatch serves the BE request, 2 ms into the idling window.
#[test]
fn exit_of_the_in_service_process_ends_its_idling_at_once() {
    let mut h = Harness::with(QueueParams {
        rotational: true,
        ..QueueParams::default()
    });
    let rt = h.submit(Io::read(1, 0, 8).class(IoClass::Rt).level(0));
    assert_eq!(h.dispatch(), Some(rt));
    h.advance(Ns::from_us(100));
    let be = h.submit(Io::read(2, 500_000, 8));
    h.advance(Ns::from_ms(1));
    h.complete(rt);
    let q_rt = h.b.sync_queue_of(1).unwrap();
    assert_eq!(h.b.in_service_queue, Some(q_rt));
    assert!(h.b.idling(), "idle timer armed for the RT queue");
    h.advance(Ns::from_ms(2));
    assert_eq!(h.dispatch(), None, "BE waits while the RT queue idles");
    h.call(|b, c| b.exit_icq(c, 1));
    assert_eq!(h.b.queues[q_rt].process_refs, 0);
    assert_eq!(h.b.in_service_queue, None);
    assert!(!h.b.idling(), "the idle timer went with the slot");
    assert!(!h.b.queues[q_rt].busy);
    assert_eq!(h.b.sync_queue_of(1), None);
    assert_eq!(h.dispatch(), Some(be));
    h.b.check_invariants().unwrap();
    // Without the exit the BE request would have waited for the 8 ms timer.
    let mut h2 = Harness::with(QueueParams {
        rotational: true,
        ..QueueParams::default()
    });
    let rt = h2.submit(Io::read(1, 0, 8).class(IoClass::Rt).level(0));
    h2.dispatch();
    h2.advance(Ns::from_us(100));
    let be2 = h2.submit(Io::read(2, 500_000, 8));
    h2.advance(Ns::from_ms(1));
    h2.complete(rt);
    h2.advance(Ns::from_ms(3));
    assert_eq!(h2.dispatch(), None);
    h2.advance(Ns::from_ms(10));
    assert_eq!(h2.dispatch(), Some(be2), "served only after the idle timer");
}

/// A queue shared by merged processes (stable merge of four processes started
/// together on a non-rotational device) loses one process reference per exit, and
/// the survivors keep using it; the last exit leaves it without processes, so it is
/// no longer idled for. An exited pid that comes back is a new process with a new
/// queue.
#[test]
fn exits_release_one_reference_each_on_a_shared_queue() {
    let mut h = Harness::with(QueueParams::default());
    h.b.set_tunable("queue_merging", "1").unwrap();
    for (i, s) in [3000u64, 1000, 2000, 4000].into_iter().enumerate() {
        h.advance(Ns::from_ms(i as u64));
        h.submit(Io::read(i as u32 + 1, s, 8));
    }
    let q1 = h.b.sync_queue_of(1).unwrap();
    assert_eq!(h.b.queues[q1].process_refs, 4);
    h.call(|b, c| b.exit_icq(c, 2));
    assert_eq!(h.b.queues[q1].process_refs, 3);
    assert_eq!(h.b.sync_queue_of(2), None);
    assert_eq!(h.b.sync_queue_of(3), Some(q1));
    // Exiting twice, or a process that never did I/O: nothing happens.
    h.call(|b, c| b.exit_icq(c, 2));
    h.call(|b, c| b.exit_icq(c, 99));
    assert_eq!(h.b.queues[q1].process_refs, 3);
    for pid in [1, 3, 4] {
        h.call(|b, c| b.exit_icq(c, pid));
    }
    assert_eq!(h.b.queues[q1].process_refs, 0);
    assert!(!h.b.better_to_idle(q1));
    // The queued requests are still served.
    for _ in 0..4 {
        assert!(h.dispatch().is_some());
    }
    h.b.check_invariants().unwrap();
    h.advance(Ns::from_ms(2000));
    h.submit(Io::read(2, 8000, 8));
    let q2 = h.b.sync_queue_of(2).unwrap();
    assert_ne!(q2, q1);
    assert_eq!(h.b.queues[q2].process_refs, 1);
}

/// `ioprio_set` between two requests of one process (BFQ sees it as a new
/// `bic->ioprio`, `bfq_check_ioprio_change`): the sync queue keeps its identity and
/// takes the new class and weight when it is next activated
/// (`bfq_set_next_ioprio_data`, applied by `__bfq_entity_update_weight_prio`); the
/// async queue is replaced by the group's queue of the new priority.
#[test]
fn ioprio_change_between_requests() {
    let mut h = Harness::new();
    h.submit(Io::read(1, 0, 8));
    let w1 = h.submit(Io::async_write(1, 100_000, 8));
    let q = h.b.sync_queue_of(1).unwrap();
    assert_eq!((h.b.entity(q).class, h.b.entity(q).weight), (1, 40));
    let async_be4 = h.b.queue_of(w1).unwrap();
    // Serve everything; the queues go idle.
    for _ in 0..2 {
        let d = h.dispatch().unwrap();
        h.advance(h.now.add(100_000));
        h.complete(d);
    }
    h.advance(Ns::from_ms(50));
    assert!(!h.b.queues[q].busy);
    // Now BE level 0: weight (8 - 0) × 10 = 80, same sync queue.
    h.submit(Io::read(1, 50_000, 8).level(0));
    assert_eq!(h.b.sync_queue_of(1), Some(q));
    assert_eq!((h.b.entity(q).class, h.b.entity(q).weight), (1, 80));
    let w2 = h.submit(Io::async_write(1, 200_000, 8).level(0));
    let async_be0 = h.b.queue_of(w2).unwrap();
    assert_ne!(async_be0, async_be4, "async_bfqq[BE][0] of the group");
    assert_eq!(h.b.entity(async_be0).weight, 80);
    for _ in 0..2 {
        let d = h.dispatch().unwrap();
        h.advance(h.now.add(100_000));
        h.complete(d);
    }
    h.advance(Ns::from_ms(100));
    // Then the RT class, level 2: RT weight (8 - 2) × 10 = 60, counted busy as RT.
    h.submit(Io::read(1, 70_000, 8).class(IoClass::Rt).level(2));
    assert_eq!(h.b.sync_queue_of(1), Some(q));
    assert_eq!((h.b.entity(q).class, h.b.entity(q).weight), (0, 60));
    assert_eq!(h.b.busy_queues, [1, 0, 0]);
    h.b.check_invariants().unwrap();
}
