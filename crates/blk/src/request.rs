//! Requests and bios, and the arenas they live in.
//!
//! The block layer owns every request in one [`RqArena`]; schedulers and devices name
//! requests by [`RqId`], a small `Copy` index, and keep their own per-request data in
//! side tables indexed by [`RqId::index`]. Slots are reused, so the arena (and every side
//! table) stays as large as the most requests ever alive at once — bounded by the tags —
//! however long the run. Bios that merged into a request hang off it as a singly linked
//! chain in the [`BioArena`], as `rq->bio`/`bio->bi_next` do in the kernel, so completing
//! a request completes each submitter's I/O without allocating.

use crate::types::{CgroupId, Dir, IoPrio, Ns, Op, ReqFlags, Sector};

/// Names a request in the [`RqArena`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RqId(pub u32);

impl RqId {
    /// Index for side tables.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Names a bio in the [`BioArena`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BioId(pub u32);

/// What a submitter hands the block layer: one contiguous I/O (`struct bio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bio {
    /// Operation.
    pub op: Op,
    /// Flags (`REQ_SYNC`, `REQ_FUA`, ...).
    pub flags: ReqFlags,
    /// First sector.
    pub sector: Sector,
    /// Length in sectors (0 for an empty flush).
    pub nr_sectors: u32,
    /// I/O priority.
    pub ioprio: IoPrio,
    /// Submitting task.
    pub pid: u32,
    /// Submitting CPU (selects the software queue).
    pub cpu: u32,
    /// Cgroup of the submitter.
    pub cgroup: CgroupId,
    /// Opaque token the submitter uses to recognise its completion.
    pub owner: u64,
}

impl Bio {
    /// One past the last sector (`bio_end_sector`).
    pub const fn end(&self) -> Sector {
        Sector(self.sector.0 + self.nr_sectors as u64)
    }
}

/// A block request: one or more merged bios on their way to the device.
#[derive(Clone, Debug)]
pub struct Request {
    /// Operation.
    pub op: Op,
    /// Flags of the request (from its first bio, plus what the block layer adds).
    pub flags: ReqFlags,
    /// First sector (`blk_rq_pos`).
    pub sector: Sector,
    /// Length in sectors (`blk_rq_sectors`).
    pub nr_sectors: u32,
    /// Physical segments (each merged bio counts one in this model).
    pub nr_segments: u32,
    /// I/O priority (requests only merge with equal priority).
    pub ioprio: IoPrio,
    /// Task that allocated the request.
    pub pid: u32,
    /// Software queue (CPU) the request was allocated on.
    pub cpu: u32,
    /// Cgroup of the submitter.
    pub cgroup: CgroupId,
    /// Hardware queue the request belongs to.
    pub hctx: u16,
    /// When the request was allocated (`start_time_ns`).
    pub alloc_ns: Ns,
    /// When it was handed to the driver (`io_start_time_ns`); zero until then.
    pub issue_ns: Ns,
    /// The CPU that handed it to the driver ([`crate::mq::Queue::set_cpu`]; where
    /// null_blk completes it).
    pub issue_cpu: u32,
    /// Scheduler tag, if the queue has an elevator.
    pub sched_tag: Option<u32>,
    /// Driver tag, held from dispatch to completion.
    pub driver_tag: Option<u32>,
    /// The request went through the elevator (`RQF_USE_SCHED`).
    pub uses_sched: bool,
    /// The request was handed to the driver at least once (`blk_mq_start_request`);
    /// a started request never merges.
    pub started: bool,
    /// The request is part of a flush sequence (`RQF_FLUSH_SEQ`): it is driven by the
    /// flush state machine and never merged.
    pub flush_seq: bool,
    /// The request holds a reference on its zone's write plug
    /// (`RQF_ZONE_WRITE_PLUGGING`): its end unplugs the zone.
    pub zone_write_plugging: bool,
    /// First bio of the chain.
    pub bio_head: Option<BioId>,
    /// Last bio of the chain.
    pub bio_tail: Option<BioId>,
}

impl Request {
    /// A request built from its first bio.
    pub fn from_bio(bio: &Bio, id: BioId, now: Ns) -> Request {
        Request {
            op: bio.op,
            flags: bio.flags,
            sector: bio.sector,
            nr_sectors: bio.nr_sectors,
            nr_segments: 1,
            ioprio: bio.ioprio,
            pid: bio.pid,
            cpu: bio.cpu,
            cgroup: bio.cgroup,
            hctx: 0,
            alloc_ns: now,
            issue_ns: Ns::ZERO,
            issue_cpu: bio.cpu,
            sched_tag: None,
            driver_tag: None,
            uses_sched: false,
            started: false,
            flush_seq: false,
            zone_write_plugging: false,
            bio_head: Some(id),
            bio_tail: Some(id),
        }
    }
    /// Data direction (`rq_data_dir`).
    pub const fn dir(&self) -> Dir {
        self.op.dir()
    }
    /// One past the last sector (`blk_rq_pos + blk_rq_sectors`).
    pub const fn end(&self) -> Sector {
        Sector(self.sector.0 + self.nr_sectors as u64)
    }
    /// Is this a synchronous request (`op_is_sync`): reads, and writes with
    /// `REQ_SYNC`, FUA or PREFLUSH.
    pub const fn is_sync(&self) -> bool {
        matches!(self.op, Op::Read)
            || self.flags.any(ReqFlags(
                ReqFlags::SYNC.0 | ReqFlags::FUA.0 | ReqFlags::PREFLUSH.0,
            ))
    }
}

/// Owns all live requests; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct RqArena {
    slots: Vec<Option<Request>>,
    free: Vec<u32>,
    live: usize,
}

impl RqArena {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }
    /// Store a request; returns its id (a reused slot when one is free).
    pub fn alloc(&mut self, rq: Request) -> RqId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = Some(rq);
            RqId(i)
        } else {
            self.slots.push(Some(rq));
            RqId((self.slots.len() - 1) as u32)
        }
    }
    /// Remove a request, making its slot reusable.
    ///
    /// # Panics
    /// If `id` is not live: that is a block-layer bug, never an input error.
    pub fn free(&mut self, id: RqId) -> Request {
        let rq = self.slots[id.index()]
            .take()
            .expect("freeing a request that is not live");
        self.free.push(id.0);
        self.live -= 1;
        rq
    }
    /// The live request `id`.
    ///
    /// # Panics
    /// If `id` is not live.
    #[inline]
    pub fn get(&self, id: RqId) -> &Request {
        self.slots[id.index()].as_ref().expect("request not live")
    }
    /// The live request `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: RqId) -> &mut Request {
        self.slots[id.index()].as_mut().expect("request not live")
    }
    /// Whether `id` names a live request.
    pub fn is_live(&self, id: RqId) -> bool {
        self.slots.get(id.index()).is_some_and(|s| s.is_some())
    }
    /// Number of live requests.
    pub fn live(&self) -> usize {
        self.live
    }
    /// Number of slots ever used: the bound for side tables.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// Owns all bios that belong to live requests.
#[derive(Clone, Debug, Default)]
pub struct BioArena {
    slots: Vec<(Bio, Option<BioId>)>,
    free: Vec<u32>,
}

impl BioArena {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }
    /// Store a bio with no successor.
    pub fn alloc(&mut self, bio: Bio) -> BioId {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = (bio, None);
            BioId(i)
        } else {
            self.slots.push((bio, None));
            BioId((self.slots.len() - 1) as u32)
        }
    }
    /// The bio `id`.
    pub fn get(&self, id: BioId) -> &Bio {
        &self.slots[id.0 as usize].0
    }
    /// The bio `id`, mutably (its flags change as zone write plugging handles it).
    pub fn get_mut(&mut self, id: BioId) -> &mut Bio {
        &mut self.slots[id.0 as usize].0
    }
    /// The bio after `id` in its request's chain.
    pub fn next(&self, id: BioId) -> Option<BioId> {
        self.slots[id.0 as usize].1
    }
    /// Link `next` after `id`.
    pub fn set_next(&mut self, id: BioId, next: Option<BioId>) {
        self.slots[id.0 as usize].1 = next;
    }
    /// Release a bio's slot.
    pub fn free(&mut self, id: BioId) {
        self.free.push(id.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bio() -> Bio {
        Bio {
            op: Op::Read,
            flags: ReqFlags::NONE,
            sector: Sector(8),
            nr_sectors: 8,
            ioprio: IoPrio::default(),
            pid: 1,
            cpu: 0,
            cgroup: CgroupId(0),
            owner: 0,
        }
    }

    #[test]
    fn arena_reuses_slots() {
        let mut bios = BioArena::new();
        let b = bios.alloc(bio());
        let mut a = RqArena::new();
        let r1 = a.alloc(Request::from_bio(&bio(), b, Ns(0)));
        let r2 = a.alloc(Request::from_bio(&bio(), b, Ns(0)));
        assert_ne!(r1, r2);
        a.free(r1);
        let r3 = a.alloc(Request::from_bio(&bio(), b, Ns(0)));
        assert_eq!(r3, r1);
        assert_eq!(a.live(), 2);
        assert_eq!(a.capacity(), 2);
        assert_eq!(a.get(r2).end(), Sector(16));
    }
}
