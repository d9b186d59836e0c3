//! Shared harness for the Kyber tests: drives the scheduler through the `Elevator`
//! trait the way `sched-replay` does (prepare + insert, one dispatch call, completed +
//! finish), with a request arena of its own.
#![allow(dead_code)]

use blk::elevator::kyber::{Domain, Kyber};
use blk::elevator::{Elevator, ElvCtx, QueueParams};
use blk::merge::MergeState;
use blk::request::{Bio, BioArena, Request, RqArena, RqId};
use blk::types::{CgroupId, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};

pub struct Harness {
    pub k: Kyber,
    pub rqs: RqArena,
    pub bios: BioArena,
    pub merge: MergeState,
    pub now: Ns,
    pub hz: u32,
}

pub fn bio(op: Op, sector: u64, sectors: u32, cpu: u32) -> Bio {
    Bio {
        op,
        flags: if op == Op::Read {
            ReqFlags::NONE
        } else {
            ReqFlags::SYNC
        },
        sector: Sector(sector),
        nr_sectors: sectors,
        ioprio: IoPrio::default(),
        pid: 1,
        cpu,
        cgroup: CgroupId(0),
        owner: 0,
    }
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with(QueueParams::default())
    }

    pub fn with(p: QueueParams) -> Harness {
        Harness {
            k: Kyber::new(&p),
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            now: Ns::ZERO,
            hz: p.hz,
        }
    }

    /// Run `f` with a context at the current time.
    pub fn call<R>(&mut self, f: impl FnOnce(&mut Kyber, &mut ElvCtx) -> R) -> R {
        let mut ctx = ElvCtx {
            now: self.now,
            jiffies: Jiffies::from_ns(self.now, self.hz),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        f(&mut self.k, &mut ctx)
    }

    /// Fire every timer due at or before `t`, then move the clock to `t`.
    pub fn advance(&mut self, t: Ns) {
        while let Some(due) = self.k.next_timer() {
            if due > t {
                break;
            }
            self.now = self.now.max(due);
            self.call(|k, c| k.timer_fired(c));
        }
        self.now = self.now.max(t);
    }

    /// A new request (prepare + insert), allocated now.
    pub fn insert_at(
        &mut self,
        op: Op,
        sector: u64,
        sectors: u32,
        cpu: u32,
        at_head: bool,
    ) -> RqId {
        let b = bio(op, sector, sectors, cpu);
        let bid = self.bios.alloc(b);
        let id = self.rqs.alloc(Request::from_bio(&b, bid, self.now));
        self.rqs.get_mut(id).uses_sched = true;
        self.call(|k, c| {
            k.prepare_request(c, id);
            k.insert_requests(c, &[id], at_head);
        });
        id
    }

    pub fn insert(&mut self, op: Op, sector: u64, sectors: u32, cpu: u32) -> RqId {
        self.insert_at(op, sector, sectors, cpu, false)
    }

    /// Submit a bio: elevator merge, else a new request.
    pub fn submit(&mut self, op: Op, sector: u64, sectors: u32, cpu: u32) -> Option<RqId> {
        let b = bio(op, sector, sectors, cpu);
        let bid = self.bios.alloc(b);
        if self.call(|k, c| k.bio_merge(c, &b, bid)) {
            None
        } else {
            self.bios.free(bid);
            Some(self.insert(op, sector, sectors, cpu))
        }
    }

    /// One dispatch call; a dispatched request is issued now.
    pub fn dispatch(&mut self) -> Option<RqId> {
        let rq = self.call(|k, c| k.dispatch_request(c))?;
        let now = self.now;
        let r = self.rqs.get_mut(rq);
        r.started = true;
        r.issue_ns = now;
        Some(rq)
    }

    /// Dispatch until nothing comes out.
    pub fn dispatch_all(&mut self) -> Vec<RqId> {
        std::iter::from_fn(|| self.dispatch()).collect()
    }

    pub fn has_work(&mut self) -> bool {
        self.call(|k, c| k.has_work(c))
    }

    /// Completion at the current time: completed_request + finish_request + free.
    pub fn complete(&mut self, rq: RqId) {
        let now = self.now;
        self.call(|k, c| {
            k.completed_request(c, rq, now);
            k.finish_request(c, rq);
        });
        self.rqs.free(rq);
    }

    pub fn op_of(&self, rq: RqId) -> Op {
        self.rqs.get(rq).op
    }

    pub fn depth(&self, d: Domain) -> u32 {
        self.k.domain_depth(d)
    }

    /// Record `n` completions of `op` with the given total and I/O latencies: each
    /// request is allocated at `now`, issued after `total - io` and completed after
    /// `total` — without moving the harness clock or firing timers.
    pub fn samples(&mut self, op: Op, n: usize, total: u64, io: u64) {
        let start = self.now;
        for i in 0..n {
            let b = bio(op, 1_000_000 + i as u64 * 8, 8, 0);
            let bid = self.bios.alloc(b);
            let id = self.rqs.alloc(Request::from_bio(&b, bid, start));
            self.rqs.get_mut(id).issue_ns = start.add(total - io);
            let done = start.add(total);
            self.call(|k, c| k.completed_request(c, id, done));
            self.rqs.free(id);
        }
    }
}
