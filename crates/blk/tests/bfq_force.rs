//! BFQ's `force_dispatch` (replay support for `kernel-trace compare`): the kernel's
//! dispatch of a request of the in-service queue goes through `bfq_select_queue`,
//! which ends the slot first when the budget cannot cover the request, and selects
//! the queue again. Hand-worked against `block/bfq-iosched.c` (Linux 6.18).

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::elevator::bfq::Expiration;
use blk::elevator::Elevator;
use blk::types::Ns;

/// One reader, weight raising off. Its queue starts with `max_budget` = 2/3 of the
/// default 16384 sectors = 10922 (`bfq_init_bfqq`), so the slot's budget is 10922.
/// A first 8192-sector read leaves 2730; the second 8192-sector read does not fit:
/// `bfq_select_queue` expires the queue (budget exhausted), `__bfq_bfqq_recalc_budget`
/// gives it min(4 × 10922, 16384) = 16384, and the queue, the only one busy, is
/// selected again (`budgets_assigned` (0·7+256)/8 = 32, then (32·7+256)/8 = 60).
/// A forced dispatch of that request must leave the scheduler exactly where the
/// natural one does: before, it dispatched from the exhausted slot, leaving budget
/// 10922 with 16384 served and no expiration.
#[test]
fn forced_dispatch_from_an_exhausted_slot_renews_it_as_select_queue_does() {
    let mut states = Vec::new();
    for forced in [false, true] {
        let mut h = Harness::new();
        let r1 = h.submit(Io::read(1, 0, 8192));
        assert_eq!(h.dispatch(), Some(r1));
        let q = h.b.sync_queue_of(1).unwrap();
        assert_eq!(h.b.entity(q).budget, 10922);
        h.advance(Ns::from_us(100));
        let r2 = h.submit(Io::read(1, 8192, 8192));
        if forced {
            assert!(h.call(|b, ctx| b.force_dispatch(ctx, r2)));
        } else {
            assert_eq!(h.dispatch(), Some(r2));
        }
        let e = h.b.entity(q);
        let exp: Vec<_> =
            h.b.expirations
                .iter()
                .map(|x| (x.reason, x.service, x.budget))
                .collect();
        states.push((
            e.budget,
            e.service,
            h.b.budgets_assigned,
            h.b.in_service_queue,
            exp,
        ));
    }
    let want = (
        16384,
        8192,
        60,
        states[0].3,
        vec![(Expiration::BudgetExhausted, 8192, 10922)],
    );
    assert_eq!(states[0], want);
    assert_eq!(states[1], want);
}

/// The in-service queue has budget left: a forced dispatch keeps its slot (no
/// expiration, one selection), as `bfq_select_queue`'s keep branch does.
#[test]
fn forced_dispatch_within_budget_keeps_the_slot() {
    let mut h = Harness::new();
    let r1 = h.submit(Io::read(1, 0, 8));
    assert_eq!(h.dispatch(), Some(r1));
    let r2 = h.submit(Io::read(1, 8, 8));
    assert!(h.call(|b, ctx| b.force_dispatch(ctx, r2)));
    let q = h.b.sync_queue_of(1).unwrap();
    assert!(h.b.expirations.is_empty());
    assert_eq!(h.b.budgets_assigned, 32);
    assert_eq!((h.b.entity(q).budget, h.b.entity(q).service), (10922, 16));
}
