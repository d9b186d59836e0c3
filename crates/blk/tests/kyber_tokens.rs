//! Kyber token pools and dispatch order.

mod kyber_support;

use blk::elevator::kyber::{Domain, KYBER_DEPTH};
use blk::elevator::{create, Elevator, QueueParams};
use blk::types::{Ns, Op};
use kyber_support::Harness;

#[test]
fn registered_with_kernel_defaults() {
    let e = create("kyber", &QueueParams::default()).unwrap();
    assert_eq!(e.name(), "kyber");
    assert_eq!(e.get_tunable("read_lat_nsec").unwrap(), "2000000");
    assert_eq!(e.get_tunable("write_lat_nsec").unwrap(), "10000000");
    assert_eq!(e.get_tunable("variant").unwrap(), "mainline");
    let names: Vec<_> = e.variants().iter().map(|v| v.name).collect();
    assert_eq!(names, ["mainline", "pre-4.18"]);
    let h = Harness::new();
    assert_eq!(
        Domain::ALL.map(|d| h.depth(d)),
        KYBER_DEPTH,
        "initial depths 256/128/64/16"
    );
    assert_eq!(h.k.async_depth(), 192);
}

#[test]
fn token_exhaustion_and_return() {
    let mut h = Harness::new();
    let ids: Vec<_> = (0..300).map(|i| h.insert(Op::Read, i * 8, 8, 0)).collect();
    let out = h.dispatch_all();
    assert_eq!(out.len(), 256, "one read per token");
    assert_eq!(out, ids[..256], "FIFO within the domain");
    assert_eq!(h.k.tokens_in_use(Domain::Read), 256);
    assert!(h.has_work(), "44 reads still wait for tokens");
    // Tokens follow sbitmap order from CPU 0's hint: 0, 1, 2, ...
    for (i, rq) in out.iter().enumerate() {
        assert_eq!(h.k.token_of(*rq), Some(i as u32));
    }
    // Completing one returns its token; the next dispatch takes exactly that one.
    h.now = Ns::from_us(100);
    h.complete(out[77]);
    assert_eq!(h.k.tokens_in_use(Domain::Read), 255);
    let next = h.dispatch().unwrap();
    assert_eq!(next, ids[256]);
    assert_eq!(h.k.token_of(next), Some(77));
    assert_eq!(h.dispatch(), None);
}

#[test]
fn requeue_returns_the_token() {
    let mut h = Harness::new();
    let a = h.insert(Op::Write, 0, 8, 0);
    let got = h.dispatch().unwrap();
    assert_eq!(got, a);
    assert_eq!(h.k.tokens_in_use(Domain::Write), 1);
    h.call(|k, c| blk::elevator::Elevator::requeue_request(k, c, a));
    assert_eq!(h.k.tokens_in_use(Domain::Write), 0);
    assert_eq!(h.k.token_of(a), None);
    // Re-inserted at head and dispatched again with a fresh token; finishing it
    // releases once.
    h.rqs.get_mut(a).started = false;
    h.call(|k, c| k.insert_requests(c, &[a], true));
    assert_eq!(h.dispatch(), Some(a));
    h.complete(a);
    assert_eq!(h.k.tokens_in_use(Domain::Write), 0);
}

#[test]
fn other_domain_has_sixteen_tokens() {
    let mut h = Harness::new();
    for i in 0..20 {
        h.insert(Op::Flush, i, 0, 0);
    }
    assert_eq!(h.dispatch_all().len(), 16);
    assert_eq!(h.k.tokens_in_use(Domain::Other), 16);
}

#[test]
fn round_robin_with_batch_limits() {
    let mut h = Harness::new();
    for i in 0..40 {
        h.insert(Op::Read, i * 8, 8, 0);
    }
    for i in 0..20 {
        h.insert(Op::Write, 10_000 + i * 8, 8, 0);
    }
    for i in 0..3 {
        h.insert(Op::Discard, 50_000 + i * 8, 8, 0);
    }
    let ops: Vec<_> = h.dispatch_all().iter().map(|&r| h.op_of(r)).collect();
    let mut want = Vec::new();
    for (r, w, d) in [(16, 8, 1), (16, 8, 1), (8, 4, 1)] {
        want.extend(std::iter::repeat_n(Op::Read, r));
        want.extend(std::iter::repeat_n(Op::Write, w));
        want.extend(std::iter::repeat_n(Op::Discard, d));
    }
    assert_eq!(ops, want);
}

#[test]
fn no_domain_starves_under_a_read_flood() {
    let mut h = Harness::new();
    for i in 0..4 {
        h.insert(Op::Write, 90_000 + i * 8, 8, 1);
    }
    let mut since_write = 0;
    let mut writes = 0;
    let mut next = 0u64;
    // Keep 32 reads queued at all times; complete everything immediately.
    for _ in 0..200 {
        while h.k.queued() < 36 && next < 10_000 {
            h.insert(Op::Read, next * 8, 8, 0);
            next += 1;
        }
        let rq = h.dispatch().expect("work and tokens available");
        if h.op_of(rq) == Op::Write {
            writes += 1;
            since_write = 0;
        } else if writes < 4 {
            since_write += 1;
            assert!(since_write <= 16, "a write waits at most one read batch");
        }
        h.complete(rq);
    }
    assert_eq!(writes, 4);
}

#[test]
fn a_throttled_domain_does_not_block_others() {
    let mut h = Harness::new();
    h.k.resize_domain(Domain::Write.idx(), 2);
    for i in 0..5 {
        h.insert(Op::Write, i * 8, 8, 0);
    }
    for i in 0..5 {
        h.insert(Op::Read, 1000 + i * 8, 8, 0);
    }
    let ops: Vec<_> = h.dispatch_all().iter().map(|&r| h.op_of(r)).collect();
    assert_eq!(ops.iter().filter(|&&o| o == Op::Write).count(), 2);
    assert_eq!(ops.iter().filter(|&&o| o == Op::Read).count(), 5);
    assert!(h.has_work());
    let dbg = h.k.debugfs();
    let waiting = dbg.iter().find(|(k, _)| k == "write_waiting").unwrap();
    assert_eq!(waiting.1, "1", "the hctx waits on the write pool");
}

#[test]
fn shrunk_pool_admits_by_token_number() {
    // Which tokens are held decides what a shrunk pool admits.
    let mut h = Harness::new();
    for i in 0..128 {
        h.insert(Op::Write, i * 8, 8, 0);
    }
    let held = h.dispatch_all();
    assert_eq!(held.len(), 128);
    h.k.resize_domain(Domain::Write.idx(), 32);
    h.insert(Op::Write, 99_000, 8, 0);
    // Releasing a token above the new depth admits nothing ...
    h.complete(held[100]);
    assert_eq!(h.dispatch(), None);
    // ... releasing one below it admits one, although 126 are still held.
    h.complete(held[5]);
    let rq = h.dispatch().unwrap();
    assert_eq!(h.k.token_of(rq), Some(5));
    assert_eq!(h.k.tokens_in_use(Domain::Write), 127);
}

#[test]
fn token_release_wakes_the_queue_in_batches() {
    let mut h = Harness::new();
    h.k.resize_domain(Domain::Discard.idx(), 16); // wake batch 16/8 = 2
    let d: Vec<_> = (0..17)
        .map(|i| h.insert(Op::Discard, i * 8, 8, 0))
        .collect();
    let out = h.dispatch_all();
    assert_eq!(out.len(), 16);
    assert_eq!(h.k.next_timer(), None);
    h.now = Ns::from_us(10);
    // DISCARD completions arm the stats timer too; look only for an immediate wake.
    h.complete(out[0]);
    assert!(
        h.k.next_timer().unwrap() > h.now,
        "one release: no wake yet"
    );
    h.complete(out[1]);
    assert_eq!(h.k.next_timer(), Some(h.now), "two releases wake the hctx");
    h.call(|k, c| k.timer_fired(c));
    assert!(h.k.next_timer().unwrap() > h.now);
    assert_eq!(h.dispatch(), Some(d[16]));
}

#[test]
fn tokens_are_released_on_the_submitting_cpu() {
    let mut h = Harness::new();
    let a = h.insert(Op::Read, 0, 8, 5);
    let b = h.insert(Op::Read, 64, 8, 5);
    h.dispatch_all();
    assert_eq!((h.k.token_of(a), h.k.token_of(b)), (Some(0), Some(1)));
    h.complete(a);
    // CPU 5's hint now points at token 0; dispatch (CPU 0) continues from its own hint.
    let c = h.insert(Op::Read, 128, 8, 5);
    assert_eq!(h.dispatch(), Some(c));
    assert_eq!(h.k.token_of(c), Some(2));
}
