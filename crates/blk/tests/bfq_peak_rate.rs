//! BFQ peak-rate estimation (`bfq_update_peak_rate`, `bfq_update_rate_reset`,
//! `bfq_completed_request`), hand-worked against `block/bfq-iosched.c` v6.13, and its
//! effect on `bfq_max_budget` and on the interactive weight-raising duration.

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::elevator::Elevator;
use blk::types::Ns;

/// One process reads 8 sectors every millisecond at `sector(i)`; each read is
/// dispatched when it arrives and completes 0.5 ms later. Runs dispatches 0..=n.
fn one_reader(h: &mut Harness, n: u64, sector: impl Fn(u64) -> u64) {
    for i in 0..=n {
        h.advance(Ns(i * Ns::MS));
        h.submit(Io::read(1, sector(i), 8));
        let rq = h.dispatch().expect("the only queue has a request");
        h.advance(Ns(i * Ns::MS + Ns::MS / 2));
        h.complete(rq);
        h.b.check_invariants().unwrap();
    }
}

/// A sequential reader closes its first observation interval at the dispatch 1 s
/// after the first one (dispatch 1000):
/// - samples 1001, sequential 1000 (every dispatch but the first: the last
///   completion is 0.5 ms old and the request starts where the previous ended),
///   8008 sectors;
/// - the interval is extended to the last completion only if that is later
///   (999.5 ms < 1000 ms): 10⁶ µs, rate = (8008 << 16) / 10⁶ = 524;
/// - weight = min(8, (9·1000/1001 = 8) · 1 s / 1 s) = 8, divisor 2:
///   peak = 9333·1/2 + 524/2 = 4666 + 262 = 4928 (rotational start: 14000·2/3);
/// - `bfq_max_budget` = 4928 · 1000 · 125 >> 16 = 9399 sectors;
/// - interactive raising lasts 14000 · 7000 / 4928 = 19886 jiffies (was
///   98·10⁶ / 9333 = 10500).
#[test]
fn sequential_interval_updates_peak_rate_budget_and_wr_duration() {
    let mut h = Harness::rotational();
    assert_eq!(h.b.peak_rate(), 9333);
    assert_eq!(h.b.wr_duration(), 10500);
    one_reader(&mut h, 999, |i| 8 * i);
    let s = h.b.rate_sampling();
    assert_eq!((s.samples, s.sequential, s.tot_sectors), (1000, 999, 8000));
    assert_eq!(s.delta_from_first, 999 * Ns::MS);
    assert_eq!(h.b.peak_rate(), 9333);
    assert_eq!(h.b.bfq_max_budget, 16384);
    one_reader_from(&mut h, 1000, 1000, |i| 8 * i);
    assert_eq!(h.b.peak_rate(), 4928);
    assert_eq!(h.b.bfq_max_budget, 9399);
    assert_eq!(h.b.wr_duration(), 19886);
    // A new interval starts at that dispatch.
    let s = h.b.rate_sampling();
    assert_eq!((s.samples, s.sequential, s.tot_sectors), (1, 0, 8));
    assert_eq!(s.first_dispatch, 1000 * Ns::MS);
}

fn one_reader_from(h: &mut Harness, from: u64, to: u64, sector: impl Fn(u64) -> u64) {
    for i in from..=to {
        h.advance(Ns(i * Ns::MS));
        h.submit(Io::read(1, sector(i), 8));
        let rq = h.dispatch().expect("the only queue has a request");
        h.advance(Ns(i * Ns::MS + Ns::MS / 2));
        h.complete(rq);
    }
}

/// With `max_budget` set by the user the estimate still moves, the budget does not.
#[test]
fn user_max_budget_is_kept() {
    let mut h = Harness::rotational();
    h.b.set_tunable("max_budget", "4000").unwrap();
    one_reader(&mut h, 1000, |i| 8 * i);
    assert_eq!(h.b.peak_rate(), 4928);
    assert_eq!(h.b.bfq_max_budget, 4000);
}

/// Random reads (each 1 MiB past the previous one) are never sequential samples:
/// 0 < ¾ of 1001 and the measured 524 is below the estimate, so it is rejected.
#[test]
fn random_interval_slower_than_estimate_is_rejected() {
    let mut h = Harness::rotational();
    one_reader(&mut h, 1000, |i| 2048 * i);
    let s = h.b.rate_sampling();
    assert_eq!((s.samples, s.sequential), (1, 0));
    assert_eq!(h.b.peak_rate(), 9333);
    assert_eq!(h.b.bfq_max_budget, 16384);
}

/// More than 100 ms without dispatch and nothing in flight close the interval
/// at the next dispatch; with fewer than 32 samples nothing is computed and the
/// new interval starts there.
#[test]
fn idle_gap_closes_the_interval() {
    let mut h = Harness::rotational();
    one_reader(&mut h, 9, |i| 8 * i);
    assert_eq!(h.b.rate_sampling().samples, 10);
    h.advance(Ns(200 * Ns::MS));
    h.submit(Io::read(1, 80, 8));
    h.dispatch().unwrap();
    let s = h.b.rate_sampling();
    assert_eq!((s.samples, s.tot_sectors), (1, 8));
    assert_eq!(s.first_dispatch, 200 * Ns::MS);
    assert_eq!(h.b.peak_rate(), 9333);
}

/// A completion 50 ms after the previous one, for an interval whose largest
/// request is 8 sectors: (8 << 16) / 50000 = 10 < 64 (2⁻¹⁰ sectors/µs), so the
/// interval is dropped (samples 0) and the next dispatch starts a new one.
#[test]
fn slow_completion_resets_sampling() {
    let mut h = Harness::rotational();
    one_reader(&mut h, 3, |i| 8 * i);
    h.advance(Ns(4 * Ns::MS));
    h.submit(Io::read(1, 32, 8));
    let rq = h.dispatch().unwrap();
    assert_eq!(h.b.rate_sampling().samples, 5);
    h.advance(Ns(3 * Ns::MS + Ns::MS / 2 + 50 * Ns::MS));
    h.complete(rq);
    assert_eq!(h.b.rate_sampling().samples, 0);
}
