//! Shared harness for the BFQ tests: drives the scheduler through the `Elevator`
//! trait the way `sched-replay` does (prepare + insert, one dispatch call, finish),
//! with a request arena of its own.
#![allow(dead_code)]

use blk::elevator::bfq::Bfq;
use blk::elevator::{Elevator, ElvCtx, QueueParams};
use blk::merge::MergeState;
use blk::request::{Bio, BioArena, Request, RqArena, RqId};
use blk::types::{CgroupId, IoClass, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};

pub struct Harness {
    pub b: Bfq,
    pub rqs: RqArena,
    pub bios: BioArena,
    pub merge: MergeState,
    pub now: Ns,
    pub hz: u32,
    /// Requests absorbed by merges and freed, in order.
    pub freed_log: Vec<RqId>,
}

/// What a test submits.
#[derive(Clone, Copy, Debug)]
pub struct Io {
    pub pid: u32,
    pub op: Op,
    pub sync: bool,
    pub sector: u64,
    pub sectors: u32,
    pub class: IoClass,
    pub level: u8,
}

impl Io {
    /// A sync read of `sectors` at `sector` by `pid`, class BE level 4.
    pub fn read(pid: u32, sector: u64, sectors: u32) -> Io {
        Io {
            pid,
            op: Op::Read,
            sync: true,
            sector,
            sectors,
            class: IoClass::Be,
            level: 4,
        }
    }
    /// A buffered (async) write.
    pub fn async_write(pid: u32, sector: u64, sectors: u32) -> Io {
        Io {
            op: Op::Write,
            sync: false,
            ..Io::read(pid, sector, sectors)
        }
    }
    pub fn level(mut self, level: u8) -> Io {
        self.level = level;
        self
    }
    pub fn class(mut self, class: IoClass) -> Io {
        self.class = class;
        self
    }
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with(QueueParams::default())
    }

    pub fn rotational() -> Harness {
        Harness::with(QueueParams {
            rotational: true,
            ..QueueParams::default()
        })
    }

    /// Weight raising off (`low_latency=0`) and queue merging off
    /// (`queue_merging=0`: processes started together would otherwise share one
    /// stably merged queue): the hand-worked core scenarios.
    pub fn with(p: QueueParams) -> Harness {
        let mut h = Harness::with_wr(p);
        h.b.set_tunable("low_latency", "0").unwrap();
        h.b.set_tunable("queue_merging", "0").unwrap();
        h
    }

    /// Kernel defaults, weight raising on.
    pub fn with_wr(p: QueueParams) -> Harness {
        Harness {
            b: Bfq::new(&p),
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            now: Ns::ZERO,
            hz: p.hz,
            freed_log: Vec::new(),
        }
    }

    pub fn call<R>(&mut self, f: impl FnOnce(&mut Bfq, &mut ElvCtx) -> R) -> R {
        let mut ctx = ElvCtx {
            now: self.now,
            jiffies: Jiffies::from_ns(self.now, self.hz),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        f(&mut self.b, &mut ctx)
    }

    /// Fire every timer due at or before `t`, then move the clock to `t`.
    pub fn advance(&mut self, t: Ns) {
        while let Some(due) = self.b.next_timer() {
            if due > t {
                break;
            }
            self.now = self.now.max(due);
            self.call(|k, c| k.timer_fired(c));
        }
        self.now = self.now.max(t);
    }

    fn bio_of(io: Io, cgroup: CgroupId) -> Bio {
        Bio {
            op: io.op,
            flags: if io.sync && io.op != Op::Read {
                ReqFlags::SYNC
            } else {
                ReqFlags::NONE
            },
            sector: Sector(io.sector),
            nr_sectors: io.sectors,
            ioprio: IoPrio {
                class: io.class,
                level: io.level,
            },
            pid: io.pid,
            cpu: 0,
            cgroup,
            owner: 0,
        }
    }

    /// A new request (prepare + insert). It may be absorbed by an insert merge
    /// (then it is freed and logged in `freed_log`).
    pub fn submit(&mut self, io: Io) -> RqId {
        self.submit_in(io, CgroupId(0))
    }

    /// [`Harness::submit`] from a task in cgroup `cgroup`.
    pub fn submit_in(&mut self, io: Io, cgroup: CgroupId) -> RqId {
        let b = Self::bio_of(io, cgroup);
        let bid = self.bios.alloc(b);
        let id = self.rqs.alloc(Request::from_bio(&b, bid, self.now));
        self.rqs.get_mut(id).uses_sched = true;
        self.call(|k, c| {
            k.prepare_request(c, id);
            k.insert_requests(c, &[id], false);
        });
        self.free_merged();
        id
    }

    /// A bio: elevator bio merge first, else a new request. `None` when merged.
    pub fn submit_bio(&mut self, io: Io) -> Option<RqId> {
        let b = Self::bio_of(io, CgroupId(0));
        let bid = self.bios.alloc(b);
        if self.call(|k, c| k.bio_merge(c, &b, bid)) {
            self.free_merged();
            return None;
        }
        self.bios.free(bid);
        Some(self.submit(io))
    }

    /// The block layer frees requests absorbed by merges (running finish_request).
    fn free_merged(&mut self) {
        while let Some(id) = self.merge.freed.pop() {
            self.call(|k, c| k.finish_request(c, id));
            self.rqs.free(id);
            self.freed_log.push(id);
        }
    }

    pub fn dispatch(&mut self) -> Option<RqId> {
        let rq = self.call(|k, c| k.dispatch_request(c))?;
        let now = self.now;
        let r = self.rqs.get_mut(rq);
        r.started = true;
        r.issue_ns = now;
        Some(rq)
    }

    pub fn complete(&mut self, rq: RqId) {
        let now = self.now;
        self.call(|k, c| {
            k.completed_request(c, rq, now);
            k.finish_request(c, rq);
        });
        let r = self.rqs.free(rq);
        let mut b = r.bio_head;
        while let Some(id) = b {
            b = self.bios.next(id);
            self.bios.free(id);
        }
    }

    pub fn has_work(&mut self) -> bool {
        self.call(|k, c| k.has_work(c))
    }

    pub fn pid_of(&self, rq: RqId) -> u32 {
        self.rqs.get(rq).pid
    }
}
