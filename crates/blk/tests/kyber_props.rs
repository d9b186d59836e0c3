//! Kyber invariants under random operation sequences.

mod kyber_support;

use blk::elevator::kyber::{Domain, KYBER_DEPTH};
use blk::elevator::Elevator;
use blk::request::RqId;
use blk::types::Op;
use kyber_support::Harness;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

#[derive(Clone, Debug)]
enum Step {
    Insert {
        op: u8,
        cpu: u32,
        sector: u16,
        head: bool,
    },
    Submit {
        op: u8,
        cpu: u32,
        sector: u16,
    },
    Dispatch,
    Complete {
        pick: usize,
        lat_us: u32,
    },
    Requeue {
        pick: usize,
    },
    Resize {
        domain: u8,
        depth: u16,
    },
    Advance {
        ms: u16,
    },
}

fn step(resize: bool) -> impl Strategy<Value = Step> {
    let ops = prop_oneof![
        3 => (0u8..4, 0u32..8, any::<u16>(), any::<bool>())
            .prop_map(|(op, cpu, sector, head)| Step::Insert { op, cpu, sector, head: head && sector % 5 == 0 }),
        3 => (0u8..4, 0u32..8, any::<u16>()).prop_map(|(op, cpu, sector)| Step::Submit { op, cpu, sector }),
        5 => Just(Step::Dispatch),
        3 => (any::<usize>(), 0u32..20_000).prop_map(|(pick, lat_us)| Step::Complete { pick, lat_us }),
        1 => any::<usize>().prop_map(|pick| Step::Requeue { pick }),
        1 => (0u8..3, 0u16..300).prop_map(|(domain, depth)| Step::Resize { domain, depth }),
        1 => (0u16..400).prop_map(|ms| Step::Advance { ms }),
    ];
    ops.prop_filter("no resizing", move |s| {
        resize || !matches!(s, Step::Resize { .. } | Step::Advance { .. })
    })
}

fn op(o: u8) -> Op {
    [Op::Read, Op::Write, Op::Discard, Op::Flush][o as usize]
}

/// Runs `steps`, checking the invariants after each; then drains everything.
fn check(variant: &str, steps: &[Step], strict_depth: bool) -> Result<(), TestCaseError> {
    let mut h = Harness::new();
    h.k.set_tunable("variant", variant).unwrap();
    let mut queued: HashSet<RqId> = HashSet::new();
    let mut inflight: Vec<RqId> = Vec::new();
    let mut dispatched_once: HashMap<u64, u32> = HashMap::new();
    let mut serial: HashMap<RqId, u64> = HashMap::new();
    let mut next_serial = 0u64;
    let mut completed = 0u64;
    let mut requeued = 0u64;

    let mut on_dispatch = |h: &mut Harness,
                           rq: RqId,
                           queued: &mut HashSet<RqId>,
                           inflight: &mut Vec<RqId>,
                           serial: &HashMap<RqId, u64>|
     -> Result<(), TestCaseError> {
        prop_assert!(
            queued.remove(&rq),
            "dispatched a request that was not queued"
        );
        let d = Domain::of_op(h.op_of(rq));
        let tok = h.k.token_of(rq);
        prop_assert!(tok.is_some(), "dispatched without a token");
        prop_assert!(tok.unwrap() < h.depth(d), "token beyond the depth");
        for &o in inflight.iter() {
            if Domain::of_op(h.op_of(o)) == d {
                prop_assert_ne!(h.k.token_of(o), tok, "token held twice");
            }
        }
        *dispatched_once.entry(serial[&rq]).or_default() += 1;
        prop_assert_eq!(dispatched_once[&serial[&rq]], 1, "dispatched twice");
        inflight.push(rq);
        Ok(())
    };

    for s in steps {
        match *s {
            Step::Insert {
                op: o,
                cpu,
                sector,
                head,
            } => {
                let rq = h.insert_at(op(o), sector as u64 * 8, 8, cpu, head);
                queued.insert(rq);
                serial.insert(rq, next_serial);
                next_serial += 1;
            }
            Step::Submit { op: o, cpu, sector } => {
                if let Some(rq) = h.submit(op(o), sector as u64 * 8, 8, cpu) {
                    queued.insert(rq);
                    serial.insert(rq, next_serial);
                    next_serial += 1;
                }
            }
            Step::Dispatch => {
                if let Some(rq) = h.dispatch() {
                    on_dispatch(&mut h, rq, &mut queued, &mut inflight, &serial)?;
                } else if h.has_work() {
                    prop_assert!(!queued.is_empty());
                    // Nothing may come out only if every domain with queued work is out
                    // of tokens (exact when no pool was shrunk below its held tokens).
                    for &rq in &queued {
                        let d = Domain::of_op(h.op_of(rq));
                        if strict_depth {
                            prop_assert_eq!(
                                h.k.tokens_in_use(d),
                                h.depth(d),
                                "{:?} has free tokens",
                                d
                            );
                        } else {
                            prop_assert!(h.k.tokens_in_use(d) >= 1);
                        }
                    }
                }
            }
            Step::Complete { pick, lat_us } => {
                if !inflight.is_empty() {
                    let rq = inflight.swap_remove(pick % inflight.len());
                    h.now = h.now.add(lat_us as u64 * 1000);
                    h.complete(rq);
                    completed += 1;
                }
            }
            Step::Requeue { pick } => {
                if !inflight.is_empty() {
                    let rq = inflight.swap_remove(pick % inflight.len());
                    h.call(|k, c| k.requeue_request(c, rq));
                    prop_assert_eq!(h.k.token_of(rq), None);
                    h.rqs.get_mut(rq).started = false;
                    h.call(|k, c| k.insert_requests(c, &[rq], true));
                    queued.insert(rq);
                    // A requeued request is dispatched again: a new life.
                    serial.insert(rq, next_serial);
                    next_serial += 1;
                    requeued += 1;
                }
            }
            Step::Resize { domain, depth } => h.k.resize_domain(domain as usize, depth as u32),
            Step::Advance { ms } => {
                let t = h.now.add(ms as u64 * 1_000_000);
                h.advance(t);
            }
        }
        for d in Domain::ALL {
            let held = inflight
                .iter()
                .filter(|&&r| Domain::of_op(h.op_of(r)) == d)
                .count() as u32;
            prop_assert_eq!(h.k.tokens_in_use(d), held);
            prop_assert!(h.depth(d) >= 1 && h.depth(d) <= KYBER_DEPTH[d.idx()]);
            if strict_depth {
                prop_assert!(
                    held <= h.depth(d),
                    "in flight {} > depth {}",
                    held,
                    h.depth(d)
                );
            }
        }
        prop_assert_eq!(h.k.queued(), queued.len());
        prop_assert_eq!(h.has_work(), !queued.is_empty());
    }

    // Drain: everything queued is dispatched exactly once and completes.
    let mut guard = 0;
    while !queued.is_empty() || !inflight.is_empty() {
        guard += 1;
        prop_assert!(guard < 100_000, "drain does not terminate");
        match h.dispatch() {
            Some(rq) => on_dispatch(&mut h, rq, &mut queued, &mut inflight, &serial)?,
            None => {
                prop_assert!(
                    !inflight.is_empty(),
                    "queued work but nothing dispatchable with all tokens free"
                );
                let rq = inflight.remove(0);
                h.now = h.now.add(1000);
                h.complete(rq);
                completed += 1;
            }
        }
    }
    // Every request life was dispatched exactly once; every life not ended by a
    // requeue completed exactly once.
    prop_assert_eq!(dispatched_once.len() as u64, next_serial);
    prop_assert!(dispatched_once.values().all(|&n| n == 1));
    prop_assert_eq!(completed, next_serial - requeued);
    for d in Domain::ALL {
        prop_assert_eq!(h.k.tokens_in_use(d), 0);
    }
    prop_assert!(!h.has_work());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn invariants_mainline(steps in prop::collection::vec(step(true), 1..400)) {
        check("mainline", &steps, false)?;
    }

    #[test]
    fn invariants_pre_4_18(steps in prop::collection::vec(step(true), 1..400)) {
        check("pre-4.18", &steps, false)?;
    }

    #[test]
    fn in_flight_never_exceeds_depth_without_resizes(steps in prop::collection::vec(step(false), 1..600)) {
        check("mainline", &steps, true)?;
    }
}
