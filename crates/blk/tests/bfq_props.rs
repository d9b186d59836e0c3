//! BFQ invariants under random workloads: every request is dispatched exactly once,
//! counters stay consistent, virtual time only goes back through the kernel's
//! `bfq_forget_idle` quirk, and no entity is served before it is eligible.

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::elevator::Elevator;
use blk::elevator::QueueParams;
use blk::request::RqId;
use blk::types::{IoClass, Ns, Op};
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Step {
    Insert {
        pid: u32,
        level: u8,
        class: u8,
        sync: bool,
        sector: u64,
        sectors: u32,
        bio: bool,
    },
    Dispatch,
    Complete(usize),
    Advance(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (
            (1u32..6, 0u8..8, 0u8..8, any::<bool>(), any::<bool>()),
            (0u64..60, 1u32..129, 0u8..4, any::<bool>()),
        )
            .prop_map(|((pid, level, class, sync, default_prio), (sector, sectors, align, bio))| Step::Insert {
                pid,
                // Half the requests use the default priority so that merges (which
                // need equal priorities) happen.
                level: if default_prio { 4 } else { level },
                class: if default_prio { 3 } else { class },
                sync,
                // Some requests land exactly after another one so that bio and
                // insert merges happen.
                sector: if align == 0 {
                    sector * 64 + 64 - (sectors as u64 % 64 + 1)
                } else {
                    sector * 64
                },
                sectors: if align == 0 { sectors % 64 + 1 } else { sectors },
                bio,
            }),
        4 => Just(Step::Dispatch),
        3 => (0usize..64).prop_map(Step::Complete),
        2 => (0u64..30_000).prop_map(Step::Advance),
    ]
}

struct Run {
    h: Harness,
    serial_of: HashMap<RqId, u64>,
    next_serial: u64,
    dispatched: Vec<u64>,
    in_flight: Vec<RqId>,
    vtime: [u64; 3],
    lowered: u64,
    absorbed: Vec<u64>,
}

impl Run {
    fn new(rotational: bool) -> Run {
        Run {
            h: Harness::with(QueueParams {
                rotational,
                ..QueueParams::default()
            }),
            serial_of: HashMap::new(),
            next_serial: 0,
            dispatched: Vec::new(),
            in_flight: Vec::new(),
            vtime: [0; 3],
            lowered: 0,
            absorbed: Vec::new(),
        }
    }

    fn check(&mut self) -> Result<(), TestCaseError> {
        self.h.b.check_invariants().map_err(TestCaseError::fail)?;
        let wf = &self.h.b.wf;
        for c in 0..3 {
            let v = wf.root().st[c].vtime;
            if v < self.vtime[c] {
                prop_assert!(
                    wf.vtime_lowered > self.lowered,
                    "vtime of class {c} went back from {} to {v} outside bfq_forget_idle",
                    self.vtime[c]
                );
            }
            self.vtime[c] = v;
        }
        self.lowered = wf.vtime_lowered;
        prop_assert_eq!(wf.ineligible_selections, 0, "entity served before eligible");
        Ok(())
    }

    fn dispatch(&mut self) -> Option<RqId> {
        let rq = self.h.dispatch()?;
        self.dispatched.push(self.serial_of[&rq]);
        self.in_flight.push(rq);
        Some(rq)
    }

    fn apply(&mut self, s: &Step) -> Result<(), TestCaseError> {
        match *s {
            Step::Insert {
                pid,
                level,
                class,
                sync,
                sector,
                sectors,
                bio,
            } => {
                let class = match class {
                    0 => IoClass::Rt,
                    1 => IoClass::Idle,
                    2 => IoClass::None,
                    _ => IoClass::Be,
                };
                let io = Io {
                    pid,
                    op: if sync && pid % 2 == 0 {
                        Op::Read
                    } else {
                        Op::Write
                    },
                    sync,
                    sector,
                    sectors,
                    class,
                    level,
                };
                let before = self.h.freed_log.len();
                let rq = if bio {
                    self.h.submit_bio(io)
                } else {
                    Some(self.h.submit(io))
                };
                if let Some(rq) = rq {
                    self.serial_of.insert(rq, self.next_serial);
                    self.next_serial += 1;
                }
                // Requests absorbed by an insert merge are freed, never dispatched
                // (the newest first: its serial is the one just assigned).
                for &gone in &self.h.freed_log[before..] {
                    if let Some(s) = self.serial_of.remove(&gone) {
                        self.absorbed.push(s);
                    }
                }
            }
            Step::Dispatch => {
                self.dispatch();
            }
            Step::Complete(i) => {
                if !self.in_flight.is_empty() {
                    let rq = self.in_flight.remove(i % self.in_flight.len());
                    self.serial_of.remove(&rq);
                    self.h.complete(rq);
                }
            }
            Step::Advance(us) => {
                let t = self.h.now.add(us * 1000);
                self.h.advance(t);
            }
        }
        self.check()
    }

    /// Let the device finish everything, as blk-mq would: dispatch while BFQ gives
    /// requests, complete them, follow the idle timer, poll every 3 ms.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1_000_000 {
            while self.dispatch().is_some() {
                self.check()?;
            }
            if self.in_flight.is_empty() && !self.h.has_work() {
                // An idling queue stays in service (and busy) until its timer.
                match self.h.b.next_timer() {
                    Some(due) => {
                        self.h.advance(due);
                        self.check()?;
                        continue;
                    }
                    None => return Ok(()),
                }
            }
            let t = self.h.now.add(100_000);
            self.h.advance(t);
            for rq in std::mem::take(&mut self.in_flight) {
                self.serial_of.remove(&rq);
                self.h.complete(rq);
                self.check()?;
            }
            if self.dispatch().is_none() {
                let t = match self.h.b.next_timer() {
                    Some(due) => due,
                    None => self.h.now.add(3 * Ns::MS),
                };
                self.h.advance(t);
            }
            self.check()?;
        }
        Err(TestCaseError::fail("BFQ did not drain"))
    }
}

fn run(steps: &[Step], rotational: bool) -> Result<(), TestCaseError> {
    run_from(steps, rotational, Ns::ZERO)
}

/// Start the clock at `start`: from 1 s of jiffies on, a sync queue's first request
/// resets its inject limit, so injection takes part.
fn run_from(steps: &[Step], rotational: bool, start: Ns) -> Result<(), TestCaseError> {
    run_with(steps, rotational, start, false)
}

fn run_with(steps: &[Step], rotational: bool, start: Ns, wr: bool) -> Result<(), TestCaseError> {
    run_opts(steps, rotational, start, wr, false)
}

fn run_opts(
    steps: &[Step],
    rotational: bool,
    start: Ns,
    wr: bool,
    merging: bool,
) -> Result<(), TestCaseError> {
    let mut r = Run::new(rotational);
    if wr {
        r.h.b.set_tunable("low_latency", "1").unwrap();
    }
    if merging {
        r.h.b.set_tunable("queue_merging", "1").unwrap();
    }
    r.h.advance(start);
    for s in steps {
        r.apply(s)?;
    }
    r.drain()?;
    let mut d = r.dispatched.clone();
    d.sort_unstable();
    let n = d.len();
    d.dedup();
    prop_assert_eq!(d.len(), n, "a request was dispatched twice");
    prop_assert_eq!(
        n as u64 + r.absorbed.len() as u64,
        r.next_serial,
        "every request not absorbed by a merge is dispatched"
    );
    for s in &r.absorbed {
        prop_assert!(
            d.binary_search(s).is_err(),
            "an absorbed request was dispatched"
        );
    }
    prop_assert_eq!(r.h.b.queued, 0);
    prop_assert_eq!(r.h.b.tot_rq_in_driver, 0);
    prop_assert_eq!(r.h.b.tot_busy_queues(), 0);
    prop_assert!(r.h.b.wf.weights.is_empty(), "weights tree empties");
    prop_assert_eq!(r.h.b.num_groups_with_pending_reqs, 0);
    if std::env::var("BFQ_PROP_STATS").is_ok() {
        let merged = r.h.b.queues.iter().filter(|q| q.process_refs == 0).count();
        let splits =
            r.h.b
                .queues
                .iter()
                .filter(|q| q.split_time == q.creation_time)
                .count();
        eprintln!(
            "absorbed {} merges {:?} queues {} merged away {merged} split off {splits}",
            r.absorbed.len(),
            r.h.merge.merges,
            r.h.b.queues.len()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn dispatch_once_vtime_and_eligibility_ssd(steps in prop::collection::vec(step(), 1..300)) {
        run(&steps, false)?;
    }

    #[test]
    fn dispatch_once_vtime_and_eligibility_hdd(steps in prop::collection::vec(step(), 1..300)) {
        run(&steps, true)?;
    }

    #[test]
    fn dispatch_once_with_injection_active(steps in prop::collection::vec(step(), 1..300)) {
        run_from(&steps, false, Ns::from_ms(2000))?;
    }

    #[test]
    fn dispatch_once_with_weight_raising(steps in prop::collection::vec(step(), 1..300), hdd in any::<bool>()) {
        run_with(&steps, hdd, Ns::from_ms(2000), true)?;
    }

    /// Queue merging on (EQM on the disk, stable merges on both): requests land
    /// within a few thousand sectors of each other, so queues merge, and split
    /// again when they turn seeky.
    #[test]
    fn dispatch_once_with_queue_merging(
        steps in prop::collection::vec(step(), 1..300),
        hdd in any::<bool>(),
        wr in any::<bool>(),
    ) {
        run_opts(&steps, hdd, Ns::from_ms(2000), wr, true)?;
    }

    #[test]
    fn strict_guarantees_keep_one_request_in_flight(steps in prop::collection::vec(step(), 1..200)) {
        let mut r = Run::new(false);
        r.h.b.set_tunable("strict_guarantees", "1").unwrap();
        for s in &steps {
            r.apply(s)?;
            prop_assert!(r.h.b.tot_rq_in_driver <= 1);
        }
        r.drain()?;
        prop_assert_eq!(r.dispatched.len() as u64 + r.absorbed.len() as u64, r.next_serial);
    }
}
