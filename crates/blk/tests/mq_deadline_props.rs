//! Invariants of mq-deadline over random operation streams: inserts (some at head),
//! bio merges, dispatches, completions of dispatched requests and clock advances.

mod mq_deadline_harness;

use blk::elevator::mq_deadline::How;
use blk::request::RqId;
use blk::types::{Dir, IoClass, Jiffies};
use mq_deadline_harness::H;
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Op {
    Insert {
        sector: u64,
        len: u32,
        write: bool,
        class: u8,
        at_head: bool,
    },
    Bio {
        sector: u64,
        len: u32,
        write: bool,
        class: u8,
    },
    Dispatch,
    Complete(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let geom = (
        0u64..48,
        prop_oneof![Just(8u32), Just(16u32)],
        any::<bool>(),
        0u8..4,
    );
    prop_oneof![
        4 => (geom.clone(), prop::bool::weighted(0.1)).prop_map(
            |((s, len, write, class), at_head)| Op::Insert {
                sector: s * 8,
                len,
                write,
                class,
                at_head
            }
        ),
        2 => geom.prop_map(|(s, len, write, class)| Op::Bio {
            sector: s * 8,
            len,
            write,
            class
        }),
        4 => Just(Op::Dispatch),
        2 => (0usize..64).prop_map(Op::Complete),
        1 => (0u64..200).prop_map(Op::Advance),
    ]
}

fn class(c: u8) -> IoClass {
    [IoClass::None, IoClass::Rt, IoClass::Be, IoClass::Idle][c as usize]
}

const LEVEL_CLASS: [IoClass; 3] = [IoClass::Rt, IoClass::Be, IoClass::Idle];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Queued,
    InFlight,
    MergedAway,
    Done,
}

struct Model {
    h: H,
    /// Live request slot -> token.
    token: HashMap<RqId, usize>,
    state: Vec<St>,
    level: Vec<usize>,
    inflight: Vec<RqId>,
    dispatched: Vec<usize>,
}

impl Model {
    fn new(h: H) -> Model {
        Model {
            h,
            token: HashMap::new(),
            state: Vec::new(),
            level: Vec::new(),
            inflight: Vec::new(),
            dispatched: Vec::new(),
        }
    }

    fn note_new(&mut self, id: RqId, c: IoClass) {
        let lv = match c {
            IoClass::Rt => 0,
            IoClass::None | IoClass::Be => 1,
            IoClass::Idle => 2,
        };
        self.token.insert(id, self.state.len());
        self.state.push(St::Queued);
        self.level.push(lv);
    }

    fn insert(&mut self, sector: u64, len: u32, dir: Dir, c: IoClass, at_head: bool) {
        let id = self.h.alloc(sector, len, dir, c);
        self.note_new(id, c);
        self.h.insert_no_free(&[id], at_head);
        self.free_merged();
    }

    fn free_merged(&mut self) {
        let before = self.h.merged_away.len();
        self.h.free_merged();
        self.note_merged_away(before);
    }

    fn note_merged_away(&mut self, before: usize) {
        for i in before..self.h.merged_away.len() {
            let id = self.h.merged_away[i];
            let t = self
                .token
                .remove(&id)
                .expect("merged-away request is known");
            assert_eq!(self.state[t], St::Queued, "only queued requests merge away");
            self.state[t] = St::MergedAway;
        }
    }

    fn dispatch(&mut self) -> Option<RqId> {
        let now = Jiffies(self.h.jiffies);
        let heads: Vec<Vec<_>> = LEVEL_CLASS
            .iter()
            .map(|&c| {
                [Dir::Read, Dir::Write]
                    .iter()
                    .map(|&d| self.h.dd.fifo_head(c, d))
                    .collect()
            })
            .collect();
        let id = self.h.dispatch()?;
        let t = self.token[&id];
        assert_eq!(
            self.state[t],
            St::Queued,
            "dispatched twice or never inserted"
        );
        self.state[t] = St::InFlight;
        self.dispatched.push(t);
        self.inflight.push(id);
        let d = self.h.dd.last_decision().expect("decision recorded");
        assert_eq!(d.dir, self.h.rqs.get(id).dir());
        if d.how != How::AtHead {
            assert_eq!(d.level, self.level[t], "served from its own level");
        }
        if matches!(d.how, How::FifoExpired | How::Sorted | How::Wrap) {
            // A new batch: if that direction's FIFO head had expired, it is the pick.
            let head = heads[d.level][d.dir.idx()].expect("direction had requests");
            if now.after_eq(head.1) {
                assert_eq!(d.how, How::FifoExpired);
                assert_eq!(id, head.0);
            } else {
                assert_ne!(d.how, How::FifoExpired);
            }
        }
        Some(id)
    }

    fn complete(&mut self, i: usize) {
        if self.inflight.is_empty() {
            return;
        }
        let id = self.inflight.swap_remove(i % self.inflight.len());
        let t = self.token.remove(&id).unwrap();
        self.state[t] = St::Done;
        self.h.complete(id);
    }

    fn check_counters(&self) {
        for (lv, &c) in LEVEL_CLASS.iter().enumerate() {
            let s = self.h.dd.stats(c);
            let live = (0..self.state.len())
                .filter(|&t| {
                    self.level[t] == lv && matches!(self.state[t], St::Queued | St::InFlight)
                })
                .count() as u32;
            assert_eq!(s.nr_queued, s.queued(), "counter == inserted - completed");
            assert_eq!(s.nr_queued, live, "counter == requests queued or in flight");
            let inflight = (0..self.state.len())
                .filter(|&t| self.level[t] == lv && self.state[t] == St::InFlight)
                .count() as u32;
            assert_eq!(s.owned_by_driver(), inflight, "owned_by_driver");
        }
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Insert {
                sector,
                len,
                write,
                class: c,
                at_head,
            } => {
                let dir = if write { Dir::Write } else { Dir::Read };
                self.insert(sector, len, dir, class(c), at_head);
            }
            Op::Bio {
                sector,
                len,
                write,
                class: c,
            } => {
                let dir = if write { Dir::Write } else { Dir::Read };
                let before = self.h.merged_away.len();
                let merged = self.h.bio_merge(sector, len, dir, class(c));
                // A follow-up request-to-request merge may have freed one.
                self.note_merged_away(before);
                if !merged {
                    self.insert(sector, len, dir, class(c), false);
                }
            }
            Op::Dispatch => {
                self.dispatch();
            }
            Op::Complete(i) => self.complete(i),
            Op::Advance(j) => {
                let now = self.h.jiffies.wrapping_add(j);
                self.h.at(now);
            }
        }
        self.check_counters();
    }

    fn finish(&mut self) {
        while !self.inflight.is_empty() {
            self.complete(0);
        }
        while self.h.has_work() {
            let id = self
                .dispatch()
                .expect("work and nothing in flight: must dispatch");
            self.complete(self.inflight.iter().position(|&x| x == id).unwrap());
        }
        self.check_counters();
        for (t, s) in self.state.iter().enumerate() {
            assert!(
                matches!(s, St::Done | St::MergedAway),
                "token {t} left {s:?}"
            );
        }
        let mut seen = self.dispatched.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), self.dispatched.len(), "dispatched exactly once");
        let done = self.state.iter().filter(|s| **s == St::Done).count();
        assert_eq!(done, self.dispatched.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_streams_keep_the_invariants(
        ops in prop::collection::vec(op(), 1..200),
        fifo_batch in 0i32..5,
        writes_starved in -1i32..4,
        head_request in any::<bool>(),
        front_merges in any::<bool>(),
        start in prop_oneof![Just(0u64), Just(u64::MAX - 300)],
    ) {
        let mut h = H::new();
        h.set("fifo_batch", &fifo_batch.to_string());
        h.set("writes_starved", &writes_starved.to_string());
        h.set("front_merges", if front_merges { "1" } else { "0" });
        if head_request {
            h.set("variant", "head-request");
        }
        // Near the wrap of the jiffies counter as well as from 0.
        h.at(start);
        let mut m = Model::new(h);
        for op in &ops {
            m.apply(op);
        }
        m.finish();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Seed 3: summing per-CPU counters (v5.14) and keeping one counter per level
    /// (mainline) must give the same `dd_queued` at every dispatch, hence the same
    /// dispatch order, for every class mix, merge and completion pattern.
    #[test]
    fn per_cpu_stats_decide_exactly_as_mainline(
        ops in prop::collection::vec(op(), 1..200),
        fifo_batch in 0i32..5,
        prio_aging_expire in prop_oneof![Just("0"), Just("1"), Just("10000")],
    ) {
        let run = |variant: &str| {
            let mut h = H::new();
            h.set("fifo_batch", &fifo_batch.to_string());
            h.set("prio_aging_expire", prio_aging_expire);
            h.set("variant", variant);
            let mut m = Model::new(h);
            for op in &ops {
                m.apply(op);
            }
            let order = m.dispatched.clone();
            m.finish();
            order
        };
        prop_assert_eq!(run("mainline"), run("per-cpu-stats"));
    }
}
