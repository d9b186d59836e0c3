//! A hardware RAID-0 controller (SAS3508 / MegaRAID class) in front of N member
//! devices of any model.
//!
//! **Striping**: the logical volume is cut into chunks of `chunk_kib`; chunk `k` lives
//! on member `k mod N` at member chunk `k div N`. A request is split at chunk
//! boundaries into parts, parts that are contiguous on the same member are merged, and
//! the request completes when all its parts have. A member that refuses a part (busy)
//! gets it again after its next completion, in order.
//!
//! **Controller**: it accepts `queue_depth` commands; each costs `controller_ns` of
//! serial firmware time (the controller's IOPS ceiling) plus `latency_us` of fixed
//! latency.
//!
//! **Cache** (`cache = true`): the controller's DRAM, battery/flash protected, so it
//! is not volatile from the host's view: FUA and FLUSH complete from it.
//! - *Write-back*: a write completes once in the cache (if the dirty data stays below
//!   `cache_mib / 2`; otherwise it waits for space) and is destaged to the members in
//!   the background, contiguous writes coalesced up to a full stripe, with at most
//!   `destage_depth` destage requests in flight, in one ascending LBA sweep. The cache
//!   holds one copy per sector: a rewrite of dirty data replaces it in place. Reads
//!   of dirty (or being-destaged) data are hits, and a write updates cached read data
//!   rather than dropping the segment ("Cached I/O: ... all writes to drive are also
//!   written to cache", LSI/Intel RAID cache-policy note).
//! - *Read-ahead*: a read miss fetches at least `read_ahead_kib` from its start; reads
//!   that fall into a fetch in flight wait for it instead of going to the members;
//!   the fetched ranges form `cache_segments` LRU segments, and a hit in the second
//!   half of the newest segment fetches the next range ahead of the reader.
//!
//! Without the cache, reads and writes go straight to the members and FLUSH is sent
//! to every member.
//!
//! **Left out**: parity (RAID-0 only), the controller's own request reordering,
//! partial-stripe write-back policies beyond coalescing, members' cache policy
//! overrides (the member profile's write cache applies), and the SAS link's bandwidth
//! (12 Gb/s per lane is above what two disks deliver).

use crate::completions::Completions;
use crate::profile::{fmt_num, row, us_to_ns, Doc, ProfileError};
use crate::{extents, Device, DeviceInfo, ParamInfo, Profile};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Bio, BioId, CgroupId, IoPrio, Ns, Op, ReqFlags, Request, RqId, Sector};
use std::collections::{BTreeMap, VecDeque};

/// Parameters of a [`Raid0`] volume; see the module docs.
#[derive(Clone, Debug)]
pub struct Raid0Params {
    /// Profile of every member.
    pub member: Box<Profile>,
    /// Number of members.
    pub members: u32,
    /// Chunk (stripe unit), KiB.
    pub chunk_kib: u32,
    /// Commands the controller accepts.
    pub queue_depth: u32,
    /// Serial controller time per command, ns.
    pub controller_ns: f64,
    /// Fixed latency per command, µs.
    pub latency_us: f64,
    /// Controller cache present and enabled.
    pub cache: bool,
    /// Cache size, MiB.
    pub cache_mib: u32,
    /// Read-ahead per fetch, KiB (0: none).
    pub read_ahead_kib: u32,
    /// Read cache segments.
    pub cache_segments: u32,
    /// Destage requests in flight at most.
    pub destage_depth: u32,
    /// Largest command, KiB.
    pub max_hw_kib: u32,
}

impl Raid0Params {
    /// Read and validate from a profile document; `lookup` resolves the member profile.
    pub fn from_doc(
        d: &mut Doc,
        lookup: &dyn Fn(&str) -> Option<Profile>,
    ) -> Result<Raid0Params, ProfileError> {
        let name = d.str("member")?;
        let member = lookup(&name).ok_or_else(|| {
            d.err(
                "member",
                format!("unknown member profile '{name}' (see `iosched devices`)"),
            )
        })?;
        if matches!(member.kind, crate::ProfileKind::Raid0(_)) {
            return Err(d.err("member", "nested RAID is not modelled"));
        }
        let p = Raid0Params {
            member: Box::new(member),
            members: d.int("members", 1, 64)? as u32,
            chunk_kib: d.int("chunk_kib", 4, 1 << 16)? as u32,
            queue_depth: d.int_limited(
                "queue_depth",
                1,
                blk::mq::BLK_MQ_MAX_DEPTH as u64,
                "BLK_MQ_MAX_DEPTH, the deepest tag set blk-mq allows",
            )? as u32,
            controller_ns: d.nonneg("controller_ns")?,
            latency_us: d.nonneg("latency_us")?,
            cache: d.bool("cache")?,
            cache_mib: d.int("cache_mib", 0, 1 << 20)? as u32,
            read_ahead_kib: d.int("read_ahead_kib", 0, 1 << 20)? as u32,
            cache_segments: d.int("cache_segments", 1, 4096)? as u32,
            destage_depth: d.int("destage_depth", 1, 4096)? as u32,
            max_hw_kib: d.int("max_hw_kib", 4, 1 << 16)? as u32,
        };
        if p.cache && p.cache_mib == 0 {
            return Err(d.err("cache_mib", "must be positive when cache = true"));
        }
        Ok(p)
    }

    /// Parameters with units and meaning.
    pub fn describe(&self) -> Vec<ParamInfo> {
        vec![
            row(
                "member",
                "profile",
                self.member.name.clone(),
                "profile of every member device",
            ),
            row("members", "devices", self.members, "member devices"),
            row(
                "chunk_kib",
                "KiB",
                self.chunk_kib,
                "stripe unit on one member",
            ),
            row(
                "queue_depth",
                "commands",
                self.queue_depth,
                "commands the controller accepts",
            ),
            row(
                "controller_ns",
                "ns",
                fmt_num(self.controller_ns),
                "serial firmware time per command",
            ),
            row(
                "latency_us",
                "us",
                fmt_num(self.latency_us),
                "fixed latency per command",
            ),
            row(
                "cache",
                "bool",
                self.cache,
                "controller cache (protected: write-back, read-ahead)",
            ),
            row("cache_mib", "MiB", self.cache_mib, "controller cache size"),
            row(
                "read_ahead_kib",
                "KiB",
                self.read_ahead_kib,
                "fetched per read miss (0: none)",
            ),
            row(
                "cache_segments",
                "segments",
                self.cache_segments,
                "read cache segments",
            ),
            row(
                "destage_depth",
                "requests",
                self.destage_depth,
                "destage requests in flight at most",
            ),
            row(
                "max_hw_kib",
                "KiB",
                self.max_hw_kib,
                "largest command (max_hw_sectors_kb)",
            ),
        ]
    }
}

/// Who waits for a group of parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// A host request.
    Host(RqId),
    /// A read-ahead fetch of `[start, end)` (volume sectors).
    Fetch { start: u64, end: u64 },
    /// A destage of `[start, end)` (volume sectors; still in the cache until done).
    Destage { start: u64, end: u64 },
    /// Unused slot.
    Free,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    owner: Owner,
    remaining: u32,
}

#[derive(Clone, Copy, Debug)]
struct Part {
    group: u32,
    op: Op,
    flags: ReqFlags,
    lba: u64,
    n: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Segment {
    start: u64,
    end: u64,
    lru: u64,
}

/// The RAID-0 controller model; see the module docs.
pub struct Raid0 {
    p: Raid0Params,
    info: DeviceInfo,
    devs: Vec<Box<dyn Device>>,
    chunk: u64,
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    parts: Vec<Part>,
    free_parts: Vec<u32>,
    /// Parts each member refused, to retry in order.
    pending: Vec<VecDeque<u32>>,
    ctrl_free: Ns,
    latency_ns: u64,
    outstanding: u32,
    segments: Vec<Segment>,
    lru_clock: u64,
    /// Host reads waiting for a fetch: (fetch group, read id, start, end).
    waiters: Vec<(u32, RqId, u64, u64)>,
    /// Dirty data, first sector → end: disjoint extents, one copy per sector.
    dirty: BTreeMap<u64, u64>,
    dirty_sectors: u64,
    /// Destage sweeps upward from here (a one-way elevator over the dirty extents).
    destage_at: u64,
    /// Scratch for `add_dirty`.
    absorb: Vec<(u64, u64)>,
    destaging: u32,
    /// Host writes waiting for cache space: (id, lba, n).
    write_wait: VecDeque<(RqId, u64, u32)>,
    done: Completions,
    scratch: Vec<RqId>,
    template: Request,
    /// Ends of recent read misses, to detect sequential readers.
    recent: [u64; 16],
    recent_at: usize,
}

impl std::fmt::Debug for Raid0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Raid0")
            .field("members", &self.p.members)
            .field("outstanding", &self.outstanding)
            .finish_non_exhaustive()
    }
}

impl Raid0 {
    /// A fresh volume called `name`, its members built from the member profile.
    pub fn new(name: &str, p: Raid0Params) -> Raid0 {
        let devs: Vec<Box<dyn Device>> = (0..p.members).map(|_| p.member.build()).collect();
        let m = devs[0].info().clone();
        let chunk = p.chunk_kib as u64 * 2;
        let per_member = m.capacity_sectors / chunk * chunk;
        let info = DeviceInfo {
            name: name.to_string(),
            capacity_sectors: per_member * p.members as u64,
            queue_depth: p.queue_depth,
            rotational: m.rotational,
            write_cache: false,
            fua: false,
            max_hw_sectors: p.max_hw_kib * 2,
            max_segments: 128,
            nr_hw_queues: 1,
            default_scheduler: "mq-deadline",
            completion: crate::CompletionCpu::Vector,
        };
        let bio = Bio {
            op: Op::Read,
            flags: ReqFlags::NONE,
            sector: Sector(0),
            nr_sectors: 0,
            ioprio: IoPrio::default(),
            pid: 0,
            cpu: 0,
            cgroup: CgroupId(0),
            owner: 0,
        };
        Raid0 {
            pending: (0..p.members).map(|_| VecDeque::new()).collect(),
            segments: vec![Segment::default(); p.cache_segments as usize],
            latency_ns: us_to_ns(p.latency_us),
            chunk,
            devs,
            groups: Vec::new(),
            free_groups: Vec::new(),
            parts: Vec::new(),
            free_parts: Vec::new(),
            ctrl_free: Ns::ZERO,
            outstanding: 0,
            lru_clock: 0,
            waiters: Vec::new(),
            dirty: BTreeMap::new(),
            dirty_sectors: 0,
            destage_at: 0,
            absorb: Vec::with_capacity(8),
            destaging: 0,
            write_wait: VecDeque::new(),
            done: Completions::new(),
            scratch: Vec::new(),
            template: Request::from_bio(&bio, BioId(0), Ns::ZERO),
            recent: [u64::MAX / 2; 16],
            recent_at: 0,
            info,
            p,
        }
    }

    fn complete(&mut self, t: Ns, id: RqId) {
        self.done.push(t, id);
    }

    fn controller(&mut self, now: Ns) -> Ns {
        self.ctrl_free = self.ctrl_free.max(now).add(self.p.controller_ns as u64);
        self.ctrl_free.add(self.latency_ns)
    }

    fn new_group(&mut self, owner: Owner) -> u32 {
        let g = Group {
            owner,
            remaining: 0,
        };
        match self.free_groups.pop() {
            Some(i) => {
                self.groups[i as usize] = g;
                i
            }
            None => {
                self.groups.push(g);
                self.groups.len() as u32 - 1
            }
        }
    }

    /// Split `[lba, lba + n)` over the members as parts of group `g`, and send them.
    fn split(&mut self, now: Ns, g: u32, op: Op, flags: ReqFlags, lba: u64, n: u32) {
        let m = self.p.members as u64;
        let mut at = lba;
        let end = lba + n as u64;
        // Last part per member in this split, to merge contiguous pieces.
        let mut last: [Option<u32>; 64] = [None; 64];
        while at < end {
            let k = at / self.chunk;
            let off = at % self.chunk;
            let take = (self.chunk - off).min(end - at);
            let member = (k % m) as usize;
            let mlba = (k / m) * self.chunk + off;
            if let Some(pi) = last[member] {
                let p = &mut self.parts[pi as usize];
                if p.lba + p.n as u64 == mlba {
                    p.n += take as u32;
                    at += take;
                    continue;
                }
            }
            let part = Part {
                group: g,
                op,
                flags,
                lba: mlba,
                n: take as u32,
            };
            let pi = self.alloc_part(part);
            last[member] = Some(pi);
            self.groups[g as usize].remaining += 1;
            self.pending[member].push_back(pi);
            at += take;
        }
        for (member, l) in last.iter().enumerate().take(m as usize) {
            if l.is_some() {
                self.kick(now, member);
            }
        }
    }

    fn alloc_part(&mut self, part: Part) -> u32 {
        match self.free_parts.pop() {
            Some(i) => {
                self.parts[i as usize] = part;
                i
            }
            None => {
                self.parts.push(part);
                self.parts.len() as u32 - 1
            }
        }
    }

    /// Send every member `g` its flush.
    fn flush_members(&mut self, now: Ns, g: u32) {
        for member in 0..self.p.members as usize {
            let part = Part {
                group: g,
                op: Op::Flush,
                flags: ReqFlags::NONE,
                lba: 0,
                n: 0,
            };
            let pi = self.alloc_part(part);
            self.groups[g as usize].remaining += 1;
            self.pending[member].push_back(pi);
            self.kick(now, member);
        }
    }

    /// Offer a member its pending parts, in order, until it refuses one.
    fn kick(&mut self, now: Ns, member: usize) {
        while let Some(&pi) = self.pending[member].front() {
            let part = self.parts[pi as usize];
            let mut rq = self.template.clone();
            rq.op = part.op;
            rq.flags = part.flags;
            rq.sector = Sector(part.lba);
            rq.nr_sectors = part.n;
            match self.devs[member].queue_rq(now, RqId(pi), &rq, true) {
                QueueRqStatus::Ok => {
                    self.pending[member].pop_front();
                }
                _ => break,
            }
        }
    }

    /// A part finished at `t`.
    fn part_done(&mut self, t: Ns, pi: u32) {
        let part = self.parts[pi as usize];
        self.free_parts.push(pi);
        let g = part.group;
        let grp = &mut self.groups[g as usize];
        grp.remaining -= 1;
        if grp.remaining > 0 {
            return;
        }
        let owner = grp.owner;
        self.groups[g as usize].owner = Owner::Free;
        self.free_groups.push(g);
        match owner {
            Owner::Host(id) => self.complete(t, id),
            Owner::Fetch { start, end } => {
                self.insert_segment(start, end);
                let mut i = 0;
                while i < self.waiters.len() {
                    if self.waiters[i].0 == g {
                        let id = self.waiters[i].1;
                        self.waiters.swap_remove(i);
                        self.complete(t, id);
                    } else {
                        i += 1;
                    }
                }
            }
            Owner::Destage { start, end } => {
                self.destaging -= 1;
                self.dirty_sectors -= end - start;
                self.admit_writes(t);
                self.destage(t);
            }
            Owner::Free => {}
        }
    }

    fn insert_segment(&mut self, start: u64, end: u64) {
        let i = self
            .segments
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.lru)
            .map(|(i, _)| i)
            .unwrap_or(0);
        self.lru_clock += 1;
        self.segments[i] = Segment {
            start,
            end,
            lru: self.lru_clock,
        };
    }

    fn cap_sectors(&self) -> u64 {
        self.p.cache_mib as u64 * 2048 / 2
    }

    /// Writes waiting for cache space, in order.
    fn admit_writes(&mut self, t: Ns) {
        while let Some(&(id, lba, n)) = self.write_wait.front() {
            if !self.fits(lba, n) {
                break;
            }
            self.write_wait.pop_front();
            self.add_dirty(lba, n);
            self.complete(t.add(self.latency_ns), id);
        }
    }

    /// Can a write of `[lba, lba + n)` enter the cache now?
    fn fits(&self, lba: u64, n: u32) -> bool {
        self.in_dirty(lba, lba + n as u64) || self.dirty_sectors + n as u64 <= self.cap_sectors()
    }

    /// Is `[lba, end)` entirely dirty in the cache?
    fn in_dirty(&self, lba: u64, end: u64) -> bool {
        self.dirty
            .range(..=lba)
            .next_back()
            .is_some_and(|(_, &e)| end <= e)
    }

    /// Is `[lba, end)` in the cache: dirty, or being destaged (destaged data stays in
    /// the controller's DRAM)?
    fn write_hit(&self, lba: u64, end: u64) -> bool {
        self.in_dirty(lba, end)
            || self.groups.iter().any(
                |g| matches!(g.owner, Owner::Destage { start, end: e } if lba >= start && end <= e),
            )
    }

    /// Put a write into the cache. A write-back cache holds one copy of each sector: a
    /// rewrite of dirty data replaces it in place, and extents that touch coalesce (up to
    /// a full stripe when merely adjacent, as before).
    fn add_dirty(&mut self, lba: u64, n: u32) {
        let stripe = self.chunk * self.p.members as u64;
        let (start, end, removed) = extents::coalesce(
            &mut self.dirty,
            &mut self.absorb,
            lba,
            lba + n as u64,
            stripe,
            |_, &e| e,
        );
        self.dirty_sectors -= removed;
        self.dirty.insert(start, end);
        self.dirty_sectors += end - start;
    }

    /// Start destages up to the allowed depth, in ascending LBA order from where the
    /// last one ended (wrapping to the lowest dirty extent).
    fn destage(&mut self, now: Ns) {
        while self.destaging < self.p.destage_depth {
            // Leave the newest extent to grow while writes are streaming in.
            if self.dirty.len() == 1 && !self.write_wait.is_empty() {
                break;
            }
            let next = self
                .dirty
                .range(self.destage_at..)
                .next()
                .or_else(|| self.dirty.iter().next())
                .map(|(&k, &e)| (k, e));
            let Some((start, end)) = next else {
                break;
            };
            self.dirty.remove(&start);
            self.destage_at = end;
            self.destaging += 1;
            let g = self.new_group(Owner::Destage { start, end });
            self.split(
                now,
                g,
                Op::Write,
                ReqFlags::NONE,
                start,
                (end - start) as u32,
            );
        }
    }

    fn cached(&self, lba: u64, end: u64) -> Option<usize> {
        self.segments
            .iter()
            .position(|s| s.end > s.start && lba >= s.start && end <= s.end)
    }

    /// A fetch in flight covering `[lba, end)`, if any.
    fn inflight_fetch(&self, lba: u64, end: u64) -> Option<u32> {
        self.groups
            .iter()
            .enumerate()
            .find_map(|(i, g)| match g.owner {
                Owner::Fetch { start, end: e } if lba >= start && end <= e => Some(i as u32),
                _ => None,
            })
    }

    fn fetch_ahead(&mut self, now: Ns, from: u64) -> u32 {
        let ra = (self.p.read_ahead_kib as u64 * 2).max(1);
        let end = (from + ra).min(self.info.capacity_sectors);
        let g = self.new_group(Owner::Fetch { start: from, end });
        self.split(now, g, Op::Read, ReqFlags::NONE, from, (end - from) as u32);
        g
    }

    fn read(&mut self, now: Ns, id: RqId, lba: u64, n: u32) {
        let end = lba + n as u64;
        let t = self.controller(now);
        // Data the host wrote is in the write-back cache until destaged, and the
        // controller serves reads of it from there ("Cached I/O ... All writes to drive
        // are also written to cache", Intel RAID (LSI MegaRAID) cache policy note).
        if self.p.cache && self.write_hit(lba, end) {
            self.complete(t, id);
            return;
        }
        if !self.p.cache || self.p.read_ahead_kib == 0 {
            if self.p.cache {
                if let Some(i) = self.cached(lba, end) {
                    self.lru_clock += 1;
                    self.segments[i].lru = self.lru_clock;
                    self.complete(t, id);
                    return;
                }
            }
            let g = self.new_group(Owner::Host(id));
            self.split(now, g, Op::Read, ReqFlags::NONE, lba, n);
            return;
        }
        if let Some(i) = self.cached(lba, end) {
            self.lru_clock += 1;
            self.segments[i].lru = self.lru_clock;
            let s = self.segments[i];
            self.complete(t, id);
            // Reader in the second half of the range: fetch the next one ahead.
            if lba >= s.start + (s.end - s.start) / 2
                && s.end < self.info.capacity_sectors
                && self.inflight_fetch(s.end, s.end + 1).is_none()
            {
                self.fetch_ahead(now, s.end);
            }
            return;
        }
        if let Some(g) = self.inflight_fetch(lba, end) {
            self.waiters.push((g, id, lba, end));
            return;
        }
        let ra = self.p.read_ahead_kib as u64 * 2;
        // Adaptive read-ahead: only a read that continues a recent one is fetched ahead.
        let sequential = self.recent.iter().any(|&e| lba >= e && lba <= e + ra / 8);
        self.recent[self.recent_at % self.recent.len()] = end;
        self.recent_at += 1;
        if n as u64 > ra || !sequential {
            let g = self.new_group(Owner::Host(id));
            self.split(now, g, Op::Read, ReqFlags::NONE, lba, n);
            return;
        }
        let g = self.fetch_ahead(now, lba);
        self.waiters.push((g, id, lba, end));
    }

    /// Advance members to `now` in time order, handling their completions.
    fn run(&mut self, now: Ns) {
        loop {
            let mut next: Option<(Ns, usize)> = None;
            for (i, d) in self.devs.iter().enumerate() {
                if let Some(t) = d.next_event() {
                    if t <= now && next.is_none_or(|(b, _)| t < b) {
                        next = Some((t, i));
                    }
                }
            }
            let Some((t, i)) = next else { return };
            let mut got = std::mem::take(&mut self.scratch);
            got.clear();
            self.devs[i].advance(t, &mut got);
            for id in &got {
                self.part_done(t, id.0);
            }
            self.scratch = got;
            for m in 0..self.devs.len() {
                self.kick(t, m);
            }
        }
    }
}

impl Driver for Raid0 {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        self.run(now);
        if self.outstanding >= self.p.queue_depth {
            return QueueRqStatus::DevResource;
        }
        self.outstanding += 1;
        let lba = rq
            .sector
            .0
            .min(self.info.capacity_sectors.saturating_sub(1));
        let n = rq.nr_sectors;
        match rq.op {
            Op::Read => self.read(now, id, lba, n.max(1)),
            Op::Write | Op::ZoneAppend if self.p.cache => {
                let t = self.controller(now);
                // The write lands in the cache: cached read data of those sectors is
                // updated in place, not dropped (the new data is what a read gets).
                if self.write_wait.is_empty() && self.fits(lba, n) {
                    self.add_dirty(lba, n);
                    self.complete(t, id);
                } else {
                    self.write_wait.push_back((id, lba, n));
                }
                self.destage(now);
            }
            Op::Write | Op::ZoneAppend => {
                self.controller(now);
                let g = self.new_group(Owner::Host(id));
                let flags = rq.flags.without(ReqFlags::PREFLUSH);
                self.split(now, g, Op::Write, flags, lba, n);
            }
            Op::Flush if self.p.cache => {
                // The cache is protected: nothing volatile to write back.
                let t = self.controller(now);
                self.complete(t, id);
            }
            Op::Flush => {
                self.controller(now);
                let g = self.new_group(Owner::Host(id));
                self.flush_members(now, g);
            }
            Op::Discard
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneFinish
            | Op::ZoneReset
            | Op::ZoneResetAll => {
                // A RAID-0 volume is never zoned: only the command costs.
                let t = self.controller(now);
                self.complete(t, id);
            }
        }
        QueueRqStatus::Ok
    }
}

impl Device for Raid0 {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn next_event(&self) -> Option<Ns> {
        let mut t = self.done.next();
        for d in &self.devs {
            if let Some(x) = d.next_event() {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        }
        t
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.run(now);
        while let Some(id) = self.done.pop_due(now) {
            self.outstanding -= 1;
            done.push(id);
        }
    }
}
