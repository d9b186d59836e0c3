//! BFQ's inject limit grows only from a service-time sample that starts while
//! injected I/O is still in the driver (`bfq_add_request`: `tot_rq_in_driver > 0`
//! and `rqs_injected`), so whether the in-service queue's next request is inserted
//! before or after BFQ takes in the injected request's completion decides the limit.
//! Hand-worked against `block/bfq-iosched.c` (Linux 6.13: `bfq_add_request`,
//! `bfq_update_inject_limit`, `bfq_choose_bfqq_for_injection`,
//! `bfq_finish_requeue_request`).

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::elevator::Elevator;
use blk::request::RqId;
use blk::types::Ns;

/// S (pid 1, level 0: weight 80) reads at QD1 with a request every 2 ms, one
/// completing 1 ms after its insert; B (pid 2, weight 40) is backlogged. The
/// asymmetric weights keep S plugged whenever it is empty. Returned at 2012 ms,
/// when the first sample (S's request of 2011 ms, inserted with nothing in flight,
/// ≥ 10 jiffies after the limit's reset at 2000 ms) has completed: S's
/// `last_serv_time_ns` is 1 ms, its limit 1, and one request of B has just been
/// injected (the limit allows one in flight) — it is the only request in flight.
fn plugged_with_one_injected() -> (Harness, RqId, u64) {
    let mut h = Harness::new();
    h.advance(Ns::from_ms(2000));
    let mut s_next = 0u64;
    h.submit(Io::read(1, s_next, 8).level(0));
    s_next += 16;
    for i in 0..200u64 {
        h.submit(Io::read(2, 90_000_000 + i * 16, 8));
    }
    let mut in_flight = Vec::new();
    for tick in 0..=12u64 {
        h.advance(Ns::from_ms(2000 + tick));
        for rq in std::mem::take(&mut in_flight) {
            h.complete(rq);
        }
        if tick % 2 == 1 {
            h.submit(Io::read(1, s_next, 8).level(0));
            s_next += 16;
        }
        while let Some(rq) = h.dispatch() {
            in_flight.push(rq);
        }
    }
    let qs = h.b.sync_queue_of(1).unwrap();
    assert_eq!(h.b.queues[qs].inject_limit, 1);
    assert_eq!(h.b.queues[qs].last_serv_time_ns, 1_000_000);
    assert_eq!(in_flight.len(), 1);
    assert_eq!(h.pid_of(in_flight[0]), 2, "B's request injected at 2012 ms");
    (h, in_flight[0], s_next)
}

/// The kernel's order: S's next request (2013 ms) is inserted while BFQ still counts
/// B's injected request in the driver (its completion event has fired, but
/// `bfq_finish_requeue_request` has not run yet). The sample starts with
/// `rqs_injected` kept; B's completion follows; S's request completes 0.5 ms after
/// its insert: 0.5 ms < 3/2 × 1 ms and old limit 1 ≤ `max_rq_in_driver` (2, sampled
/// at B's completion with S's request in flight), so the limit becomes 2; the
/// sample, below the baseline, also lowers `last_serv_time_ns` to 0.5 ms. With the
/// limit at 2, two of B's requests are injected into S's next service hole, not
/// one.
#[test]
fn insert_before_the_injected_completion_grows_the_limit() {
    let (mut h, b_rq, s_next) = plugged_with_one_injected();
    let qs = h.b.sync_queue_of(1).unwrap();
    h.advance(Ns::from_ms(2013));
    let s_rq = h.submit(Io::read(1, s_next, 8).level(0));
    assert_eq!(h.dispatch(), Some(s_rq), "S's own request first");
    h.complete(b_rq);
    h.advance(Ns::from_us(2_013_500));
    h.complete(s_rq);
    assert_eq!(h.b.queues[qs].inject_limit, 2);
    assert_eq!(h.b.queues[qs].last_serv_time_ns, 500_000);
    let first = h.dispatch().expect("one injected");
    let second = h.dispatch().expect("a second one with the first in flight");
    assert_eq!((h.pid_of(first), h.pid_of(second)), (2, 2));
    assert_eq!(h.dispatch(), None, "limit 2 reached");
}

/// The order the completion tracepoint shows: B's request completes first, so S's
/// insert finds the driver empty, the sample starts afresh (`rqs_injected` cleared),
/// and its completion only lowers the baseline (0.5 ms); the limit stays 1 and one
/// request of B is injected into S's next hole.
#[test]
fn insert_after_the_injected_completion_keeps_the_limit() {
    let (mut h, b_rq, s_next) = plugged_with_one_injected();
    let qs = h.b.sync_queue_of(1).unwrap();
    h.advance(Ns::from_ms(2013));
    h.complete(b_rq);
    let s_rq = h.submit(Io::read(1, s_next, 8).level(0));
    assert_eq!(h.dispatch(), Some(s_rq));
    h.advance(Ns::from_us(2_013_500));
    h.complete(s_rq);
    assert_eq!(h.b.queues[qs].inject_limit, 1);
    assert_eq!(h.b.queues[qs].last_serv_time_ns, 500_000);
    let first = h.dispatch().expect("one injected");
    assert_eq!(h.pid_of(first), 2);
    assert_eq!(h.dispatch(), None, "limit 1 reached");
}

/// `kernel-trace compare` follows the kernel's dispatches with `force_dispatch`. An
/// injection it forces while S is plugged is one `bfq_choose_bfqq_for_injection`
/// made (B is neither S's async queue, waker nor woken queue), so it marks the hole
/// as injected as that function does; before, the forced replay left
/// `rqs_injected` false and the limit it derived never grew.
#[test]
fn forced_injection_marks_the_hole_injected() {
    let (mut h, b_rq, s_next) = plugged_with_one_injected();
    h.advance(Ns::from_ms(2013));
    h.complete(b_rq);
    let s_rq = h.submit(Io::read(1, s_next, 8).level(0));
    assert_eq!(h.dispatch(), Some(s_rq));
    let flag = |h: &Harness| {
        h.b.debugfs()
            .into_iter()
            .find(|(k, _)| k == "rqs_injected")
            .map(|(_, v)| v)
    };
    assert_eq!(flag(&h).as_deref(), Some("false"), "cleared by S's sample");
    h.advance(Ns::from_us(2_013_500));
    h.complete(s_rq);
    // S is plugged (waiting for its next request); take B's head by force.
    let b_head = h.submit(Io::read(2, 0, 8));
    assert!(h.call(|b, ctx| b.force_dispatch(ctx, b_head)));
    assert_eq!(flag(&h).as_deref(), Some("true"));
    assert_eq!(
        h.b.in_service_queue,
        h.b.sync_queue_of(1),
        "S keeps its slot"
    );
}
