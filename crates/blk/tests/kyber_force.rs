//! Kyber's `force_dispatch` (replay support for `kernel-trace compare`): the kernel's
//! request leaves with a token, flushed and on-kcq requests are handled as the
//! kernel's own paths allow.

mod kyber_support;

use blk::elevator::kyber::Domain;
use blk::elevator::Elevator;
use blk::types::{Ns, Op};
use kyber_support::Harness;

#[test]
fn on_kcq_with_empty_flushed_list_flushes_every_kcq_like_a_dispatch() {
    let mut h = Harness::new();
    let a = h.insert(Op::Read, 0, 8, 1);
    let b = h.insert(Op::Read, 64, 8, 0);
    let c = h.insert(Op::Read, 128, 8, 1);
    // The kernel chose c (ours would be b: CPU 0's kcq is flushed first).
    assert!(h.call(|k, ctx| k.force_dispatch(ctx, c)));
    assert_eq!(h.k.token_of(c), Some(0));
    assert_eq!(h.k.tokens_in_use(Domain::Read), 1);
    assert_eq!(h.k.queued(), 2);
    // Both kcqs were flushed: the rest leave in flushed order b, a.
    assert_eq!(h.dispatch(), Some(b));
    assert_eq!(h.dispatch(), Some(a));
    assert_eq!(h.dispatch(), None);
}

#[test]
fn on_kcq_with_busy_flushed_list_flushes_only_up_to_its_insert() {
    let mut h = Harness::new();
    let a = h.insert(Op::Read, 0, 8, 0);
    let b = h.insert(Op::Read, 64, 8, 0);
    assert_eq!(h.dispatch(), Some(a)); // flushes [a, b]
    h.now = Ns::from_us(10);
    let c = h.insert(Op::Read, 128, 8, 1);
    h.now = Ns::from_us(20);
    let d = h.insert(Op::Read, 256, 8, 1);
    // The kernel dispatched c: it had flushed it (and nothing inserted after it).
    assert!(h.call(|k, ctx| k.force_dispatch(ctx, c)));
    assert!(h.k.token_of(c).is_some());
    // d is still on its kcq: a bio can merge into it.
    assert_eq!(h.submit(Op::Read, 264, 8, 1), None);
    assert_eq!(h.dispatch(), Some(b));
    assert_eq!(h.dispatch(), Some(d));
    assert_eq!(h.rqs.get(d).nr_sectors, 16);
}

#[test]
fn batch_and_domain_follow_the_forced_request() {
    let mut h = Harness::new();
    let r: Vec<_> = (0..3).map(|i| h.insert(Op::Read, i * 64, 8, 0)).collect();
    let w = h.insert(Op::Write, 4096, 8, 0);
    assert!(h.call(|k, ctx| k.force_dispatch(ctx, w)));
    assert_eq!(h.k.tokens_in_use(Domain::Write), 1);
    // WRITE is now the current domain with one of its 8 in the batch; it has nothing
    // more, so the next dispatch moves on to READ.
    assert_eq!(h.dispatch(), Some(r[0]));
    // Not queued any more: refused, nothing changes.
    assert!(!h.call(|k, ctx| k.force_dispatch(ctx, w)));
    h.complete(w);
    assert_eq!(h.k.tokens_in_use(Domain::Write), 0);
}

#[test]
fn no_free_token_leaves_without_one() {
    let mut h = Harness::new();
    let ids: Vec<_> = (0..257).map(|i| h.insert(Op::Read, i * 8, 8, 0)).collect();
    assert_eq!(h.dispatch_all().len(), 256);
    assert!(h.call(|k, ctx| k.force_dispatch(ctx, ids[256])));
    assert_eq!(h.k.token_of(ids[256]), None);
    assert_eq!(h.k.forced_without_token(), 1);
    assert_eq!(h.k.tokens_in_use(Domain::Read), 256);
    h.complete(ids[256]);
    assert_eq!(h.k.tokens_in_use(Domain::Read), 256);
}
