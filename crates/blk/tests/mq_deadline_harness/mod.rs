//! A tiny block layer for driving mq-deadline directly: it owns the arenas and the
//! generic merge state, allocates requests and bios, calls the scheduler with explicit
//! jiffies, and frees merged-away requests (running `finish_request`) the way blk-mq
//! does after each insert or bio merge.
#![allow(dead_code)]

use blk::elevator::mq_deadline::MqDeadline;
use blk::elevator::{Elevator, ElvCtx, QueueParams};
use blk::merge::MergeState;
use blk::request::{Bio, BioArena, Request, RqArena, RqId};
use blk::types::{CgroupId, Dir, IoClass, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};

/// Scheduler plus the block-layer state it borrows.
pub struct H {
    pub dd: MqDeadline,
    pub rqs: RqArena,
    pub bios: BioArena,
    pub merge: MergeState,
    pub hz: u32,
    pub jiffies: u64,
    /// Requests freed after being absorbed by a merge, in free order.
    pub merged_away: Vec<RqId>,
}

pub fn bio(sector: u64, len: u32, dir: Dir, class: IoClass) -> Bio {
    Bio {
        op: match dir {
            Dir::Read => Op::Read,
            Dir::Write => Op::Write,
        },
        flags: ReqFlags::NONE,
        sector: Sector(sector),
        nr_sectors: len,
        ioprio: IoPrio { class, level: 4 },
        pid: 1,
        cpu: 0,
        cgroup: CgroupId(0),
        owner: sector,
    }
}

impl H {
    /// HZ = 250, nr_requests = 256.
    pub fn new() -> H {
        H::with(QueueParams {
            hz: 250,
            ..QueueParams::default()
        })
    }

    pub fn with(params: QueueParams) -> H {
        let mut dd = MqDeadline::new(&params);
        dd.depth_updated(params.nr_requests);
        H {
            dd,
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            hz: params.hz,
            jiffies: 0,
            merged_away: Vec::new(),
        }
    }

    pub fn set(&mut self, name: &str, value: &str) {
        self.dd.set_tunable(name, value).unwrap();
    }

    pub fn at(&mut self, j: u64) -> &mut Self {
        self.jiffies = j;
        self
    }

    fn call<T>(&mut self, f: impl FnOnce(&mut MqDeadline, &mut ElvCtx) -> T) -> T {
        let now = Ns((self.jiffies as u128 * 1_000_000_000 / self.hz as u128) as u64);
        let mut ctx = ElvCtx {
            now,
            jiffies: Jiffies(self.jiffies),
            hctx: 0,
            rqs: &mut self.rqs,
            bios: &mut self.bios,
            merge: &mut self.merge,
        };
        f(&mut self.dd, &mut ctx)
    }

    /// Allocate a request (with `prepare_request`) without inserting it.
    pub fn alloc(&mut self, sector: u64, len: u32, dir: Dir, class: IoClass) -> RqId {
        let b = bio(sector, len, dir, class);
        let bid = self.bios.alloc(b);
        let mut rq = Request::from_bio(&b, bid, Ns::ZERO);
        rq.uses_sched = true;
        let id = self.rqs.alloc(rq);
        self.call(|dd, ctx| dd.prepare_request(ctx, id));
        id
    }

    /// Insert already allocated requests, leaving merged-away ones on `merge.freed`.
    pub fn insert_no_free(&mut self, ids: &[RqId], at_head: bool) {
        self.call(|dd, ctx| dd.insert_requests(ctx, ids, at_head));
    }

    /// Allocate and insert one request; frees whatever merged away.
    pub fn ins(&mut self, sector: u64, len: u32, dir: Dir, class: IoClass) -> RqId {
        let id = self.alloc(sector, len, dir, class);
        self.insert_no_free(&[id], false);
        self.free_merged();
        id
    }

    /// A BE read of 8 sectors.
    pub fn r(&mut self, sector: u64) -> RqId {
        self.ins(sector, 8, Dir::Read, IoClass::Be)
    }

    /// A BE write of 8 sectors.
    pub fn w(&mut self, sector: u64) -> RqId {
        self.ins(sector, 8, Dir::Write, IoClass::Be)
    }

    /// Insert at head.
    pub fn ins_head(&mut self, sector: u64, dir: Dir, class: IoClass) -> RqId {
        let id = self.alloc(sector, 8, dir, class);
        self.insert_no_free(&[id], true);
        self.free_merged();
        id
    }

    /// Submit a bio through `bio_merge`; true if it merged.
    pub fn bio_merge(&mut self, sector: u64, len: u32, dir: Dir, class: IoClass) -> bool {
        let b = bio(sector, len, dir, class);
        let bid = self.bios.alloc(b);
        let merged = self.call(|dd, ctx| dd.bio_merge(ctx, &b, bid));
        if !merged {
            self.bios.free(bid);
        }
        self.free_merged();
        merged
    }

    /// `blk_mq_free_request` for every request absorbed by a merge.
    pub fn free_merged(&mut self) {
        while let Some(id) = self.merge.freed.pop() {
            self.merge.forget(id);
            self.call(|dd, ctx| dd.finish_request(ctx, id));
            self.rqs.free(id);
            self.merged_away.push(id);
        }
    }

    pub fn dispatch(&mut self) -> Option<RqId> {
        let id = self.call(|dd, ctx| dd.dispatch_request(ctx));
        if let Some(id) = id {
            self.merge.forget(id);
        }
        id
    }

    pub fn has_work(&mut self) -> bool {
        self.call(|dd, ctx| dd.has_work(ctx))
    }

    /// Completion: `finish_request`, then the request is freed.
    pub fn complete(&mut self, id: RqId) {
        self.merge.forget(id);
        self.call(|dd, ctx| dd.finish_request(ctx, id));
        self.rqs.free(id);
    }

    pub fn sector(&self, id: RqId) -> u64 {
        self.rqs.get(id).sector.0
    }

    /// Dispatch `n` times, completing each request at once; the start sectors.
    pub fn run(&mut self, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let id = self.dispatch().expect("a request");
                let s = self.sector(id);
                self.complete(id);
                s
            })
            .collect()
    }

    /// Dispatch and complete until nothing is left; the start sectors.
    pub fn drain(&mut self) -> Vec<u64> {
        let mut out = Vec::new();
        while let Some(id) = self.dispatch() {
            out.push(self.sector(id));
            self.complete(id);
        }
        out
    }

    pub fn dbg(&self, key: &str) -> String {
        self.dd
            .debugfs()
            .into_iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("no debugfs entry {key}"))
            .1
    }
}
