//! The elevator core's generic merging: `q->last_merge`, the end-sector hash, and
//! the bio→request and request→request merge steps of `block/elevator.c` and
//! `block/blk-merge.c`.
//!
//! Schedulers call these from their hooks the way the kernel's do:
//! mq-deadline's `bio_merge` calls [`sched_try_merge`] (`blk_mq_sched_try_merge`), its
//! insert path calls [`attempt_insert_merge`] (`elv_attempt_insert_merge`). Both call
//! back into the scheduler (`request_merge`, `next_request`, `former_request`,
//! `request_merged`, `requests_merged`). A request absorbed by another is pushed on
//! [`MergeState::freed`]; the block layer frees it afterwards (running the scheduler's
//! `finish_request`), as the kernel frees the merge "free list" after dropping the lock.

use crate::elevator::{Elevator, ElvCtx};
use crate::request::{Bio, BioId, Request, RqId};
use crate::types::{Op, ReqFlags};

/// Kind of a merge (`enum elv_merge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The bio extends the request at its end (`ELEVATOR_BACK_MERGE`).
    Back,
    /// The bio extends the request at its start (`ELEVATOR_FRONT_MERGE`).
    Front,
    /// Multi-range discard (`ELEVATOR_DISCARD_MERGE`).
    Discard,
}

/// Queue limits that decide whether a merge may happen (`struct queue_limits`,
/// `queue/nomerges`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeLimits {
    /// `queue/nomerges`: 0 all merges, 1 only the one-hit cache, 2 none.
    pub nomerges: u8,
    /// `max_sectors` (sysfs `max_sectors_kb` × 2).
    pub max_sectors: u32,
    /// `max_segments`.
    pub max_segments: u32,
    /// `max_hw_sectors` (sysfs `max_hw_sectors_kb` × 2): the ceiling for
    /// `max_sectors`; only passthrough requests may grow up to it.
    pub max_hw_sectors: u32,
    /// `max_discard_segments`: discards merge as multi-range requests when above 1.
    pub max_discard_segments: u32,
    /// `chunk_sectors`: reads and writes neither split nor merge across a
    /// multiple of it (a zoned device's zone size); 0 = none.
    pub chunk_sectors: u64,
}

impl MergeLimits {
    /// `blk_rq_get_max_sectors` for a request starting at `pos`: `max_sectors`,
    /// cut at the next `chunk_sectors` boundary (`blk_chunk_sectors_left`).
    pub fn max_sectors_at(&self, pos: u64) -> u32 {
        match self.chunk_sectors {
            0 => self.max_sectors,
            chunk => (self.max_sectors as u64).min(chunk - pos % chunk) as u32,
        }
    }
}

impl Default for MergeLimits {
    /// v6.17+ defaults for a device that sets nothing but a large `max_hw_sectors`:
    /// 4 MiB requests, 128 segments.
    fn default() -> Self {
        MergeLimits {
            nomerges: 0,
            max_sectors: 8192,
            max_segments: 128,
            max_hw_sectors: 8192,
            max_discard_segments: 1,
            chunk_sectors: 0,
        }
    }
}

/// Sectors per page-sized segment: a direct-I/O bio from page-aligned user memory
/// has one segment per 4 KiB page it touches.
const SECTORS_PER_PAGE: u32 = 8;

/// Physical segments of a bio (at least one, even for sub-page I/O).
pub fn bio_segments(bio: &Bio) -> u32 {
    bio.nr_sectors.div_ceil(SECTORS_PER_PAGE).max(1)
}

/// The generic merge state of one request queue.
#[derive(Clone, Debug, Default)]
pub struct MergeState {
    /// Limits and `nomerges`.
    pub limits: MergeLimits,
    /// The one-hit cache (`q->last_merge`).
    pub last_merge: Option<RqId>,
    /// Requests absorbed by a merge, to be freed by the block layer.
    pub freed: Vec<RqId>,
    /// Merge counts per direction (`/proc/diskstats` read/write merges): each bio merged
    /// into a request and each request merged into another counts one.
    pub merges: [u64; 2],
    /// Discard merges (`/proc/diskstats` discard merges, `STAT_DISCARD`).
    pub discard_merges: u64,
    /// Bios back-merged into requests that hold a zone write plug reference
    /// (`RQF_ZONE_WRITE_PLUGGING`): the block layer hands each to
    /// `blk_zone_write_plug_bio_merged`.
    pub zone_merged: Vec<BioId>,
    /// End-sector hash: chained buckets (first request of each, or [`HASH_NIL`]), a
    /// power-of-two count at least four times the number of request slots, so chains
    /// stay short without a general-purpose map's probing and key copies.
    hash_head: Vec<u32>,
    /// Per request slot: its key and doubly linked bucket chain, so that removal
    /// (every dispatched request) is O(1) with no lookup.
    hash_link: Vec<HashLink>,
    /// `64 − log₂(buckets)`: the bucket of a key is the top bits of its product
    /// with a constant.
    hash_shift: u32,
}

/// End of a bucket chain, or an empty bucket.
const HASH_NIL: u32 = u32::MAX;
/// `HashLink::prev` of a request not in the hash.
const UNHASHED: u32 = u32::MAX - 1;
/// Fewest buckets (the kernel's `ELV_HASH_BITS` is 6).
const MIN_HASH_BITS: u32 = 6;

/// One request slot's place in the end-sector hash.
#[derive(Clone, Copy, Debug)]
struct HashLink {
    /// The end sector it was hashed under.
    key: u64,
    /// Previous request in the bucket, [`HASH_NIL`] for the first, or [`UNHASHED`].
    prev: u32,
    /// Next request in the bucket, or [`HASH_NIL`].
    next: u32,
}

impl HashLink {
    const UNHASHED: HashLink = HashLink {
        key: 0,
        prev: UNHASHED,
        next: HASH_NIL,
    };
}

impl MergeState {
    /// Merge state with the given limits.
    pub fn new(limits: MergeLimits) -> Self {
        MergeState {
            limits,
            ..Default::default()
        }
    }

    /// Bucket of `key`: Fibonacci hashing, whose high bits mix the low bits too (end
    /// sectors are often multiples of a power of two).
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.hash_shift) as usize
    }

    /// Grow the slot table to hold `rq`, and the bucket array to at least as many
    /// buckets as slots, rehashing. Every chain is rebuilt in its old order, so that
    /// requests with equal keys stay newest first.
    fn grow(&mut self, rq: RqId) {
        if rq.index() >= self.hash_link.len() {
            self.hash_link.resize(rq.index() + 1, HashLink::UNHASHED);
        }
        // At most one request per four buckets: most lookups then meet an empty
        // bucket or a single entry, which keeps the chain walks short and their
        // branches predictable (measured: 4× beat 2×, which beat 1×).
        let want = (4 * self.hash_link.len())
            .next_power_of_two()
            .max(1 << MIN_HASH_BITS);
        if want <= self.hash_head.len() {
            return;
        }
        let old = std::mem::replace(&mut self.hash_head, vec![HASH_NIL; want]);
        self.hash_shift = 64 - want.trailing_zeros();
        let mut tails = vec![HASH_NIL; want];
        for head in old {
            let mut cur = head;
            while cur != HASH_NIL {
                let next = self.hash_link[cur as usize].next;
                let b = self.bucket(self.hash_link[cur as usize].key);
                let tail = tails[b];
                self.hash_link[cur as usize].prev = tail;
                self.hash_link[cur as usize].next = HASH_NIL;
                match tail {
                    HASH_NIL => self.hash_head[b] = cur,
                    t => self.hash_link[t as usize].next = cur,
                }
                tails[b] = cur;
                cur = next;
            }
        }
    }

    /// Whether `rq` is in the end-sector hash.
    pub fn is_hashed(&self, rq: RqId) -> bool {
        self.hash_link
            .get(rq.index())
            .is_some_and(|l| l.prev != UNHASHED)
    }

    /// `elv_rqhash_add`: hash `rq` by its end sector (newest first among equals).
    pub fn rqhash_add(&mut self, rq: RqId, end_sector: u64) {
        debug_assert!(!self.is_hashed(rq));
        if rq.index() >= self.hash_link.len() || self.hash_head.is_empty() {
            self.grow(rq);
        }
        let b = self.bucket(end_sector);
        let head = self.hash_head[b];
        self.hash_link[rq.index()] = HashLink {
            key: end_sector,
            prev: HASH_NIL,
            next: head,
        };
        if head != HASH_NIL {
            self.hash_link[head as usize].prev = rq.0;
        }
        self.hash_head[b] = rq.0;
    }

    /// `elv_rqhash_del`: remove `rq` from the hash if it is there.
    pub fn rqhash_del(&mut self, rq: RqId) {
        let Some(link) = self.hash_link.get_mut(rq.index()) else {
            return;
        };
        let HashLink { key, prev, next } = *link;
        if prev == UNHASHED {
            return;
        }
        *link = HashLink::UNHASHED;
        match prev {
            HASH_NIL => {
                let b = self.bucket(key);
                self.hash_head[b] = next;
            }
            p => self.hash_link[p as usize].next = next,
        }
        if next != HASH_NIL {
            self.hash_link[next as usize].prev = prev;
        }
    }

    /// `elv_rqhash_find`: the newest hashed, still mergeable request ending at `sector`.
    /// Requests found unmergeable are dropped from the hash, as the kernel does (only
    /// those hashed under `sector`: other keys sharing the bucket are left alone).
    pub fn rqhash_find(&mut self, ctx_rqs: &crate::request::RqArena, sector: u64) -> Option<RqId> {
        if self.hash_head.is_empty() {
            return None;
        }
        let mut cur = self.hash_head[self.bucket(sector)];
        while cur != HASH_NIL {
            let HashLink { key, next, .. } = self.hash_link[cur as usize];
            if key == sector {
                let rq = RqId(cur);
                if rq_mergeable(ctx_rqs.get(rq)) {
                    return Some(rq);
                }
                self.rqhash_del(rq);
            }
            cur = next;
        }
        None
    }

    /// Remove every trace of `rq` from the generic merge state (hash and one-hit
    /// cache): what the kernel does when a request leaves the scheduler.
    pub fn forget(&mut self, rq: RqId) {
        self.rqhash_del(rq);
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
    }
}

/// Flags that forbid merging (`REQ_NOMERGE_FLAGS`).
const NOMERGE_FLAGS: ReqFlags =
    ReqFlags(ReqFlags::NOMERGE.0 | ReqFlags::PREFLUSH.0 | ReqFlags::FUA.0);

/// `rq_mergeable`: may anything merge into or with this request? Not a flush or
/// a zone append, not marked no-merge, not started, not part of a flush
/// sequence. Zone management requests carry no data and are kept out too (a
/// zero-length request's end is its start, so two resets of one zone would
/// otherwise look adjacent).
pub fn rq_mergeable(rq: &Request) -> bool {
    !matches!(rq.op, Op::Flush | Op::ZoneAppend)
        && !rq.op.is_zone_mgmt()
        && !rq.flags.any(NOMERGE_FLAGS)
        && !rq.started
        && !rq.flush_seq
}

/// `bio_mergeable`.
pub fn bio_mergeable(bio: &Bio) -> bool {
    !bio.flags.any(NOMERGE_FLAGS)
        && !matches!(bio.op, Op::Flush | Op::ZoneAppend)
        && !bio.op.is_zone_mgmt()
}

/// `blk_rq_merge_ok`: may `bio` merge into `rq` at all (ignoring geometry)?
pub fn bio_merge_ok(rq: &Request, bio: &Bio) -> bool {
    rq_mergeable(rq)
        && bio_mergeable(bio)
        && rq.op == bio.op
        && rq.cgroup == bio.cgroup
        && rq.ioprio == bio.ioprio
}

/// `blk_try_merge`: where `bio` would attach to `rq`, if it is adjacent.
pub fn try_merge(rq: &Request, bio: &Bio) -> Option<MergeKind> {
    if rq.end() == bio.sector {
        Some(MergeKind::Back)
    } else if bio.end() == rq.sector {
        Some(MergeKind::Front)
    } else {
        None
    }
}

/// Count a merge in the disk statistics the way `blk_account_io_merge_bio` /
/// `blk_account_io_merge_request` do: per `op_stat_group` (reads, writes, discards).
fn account_merge(ms: &mut MergeState, op: Op) {
    match op {
        Op::Discard => ms.discard_merges += 1,
        op => ms.merges[op.dir().idx()] += 1,
    }
}

/// `blk_discard_mergable`: discards on a device taking several ranges per command
/// merge whatever their position.
pub fn discard_mergeable(rq: &Request, lim: &MergeLimits) -> bool {
    rq.op == Op::Discard && lim.max_discard_segments > 1
}

/// Outcome of one bio→request merge attempt (`enum bio_merge_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioMerge {
    /// Not compatible or not adjacent: try the next candidate.
    None,
    /// Merged: the bio belongs to the request now.
    Ok,
    /// Adjacent but over a limit: the request is now marked no-merge; stop looking.
    Failed,
}

/// `blk_attempt_bio_merge`: the attempt used by the plug and by the software-queue
/// scan (no elevator hooks involved beyond what the caller does).
pub fn attempt_bio_merge(ctx: &mut ElvCtx, rq: RqId, bio: &Bio, bio_id: BioId) -> BioMerge {
    let lim = ctx.merge.limits;
    let r = ctx.rqs.get(rq);
    if !bio_merge_ok(r, bio) {
        return BioMerge::None;
    }
    let ok = if discard_mergeable(r, &lim) {
        bio_attempt_discard_merge(ctx, rq, bio, bio_id)
    } else {
        match try_merge(r, bio) {
            Some(MergeKind::Back) => bio_attempt_back_merge(ctx, rq, bio, bio_id),
            Some(MergeKind::Front) => bio_attempt_front_merge(ctx, rq, bio, bio_id),
            Some(MergeKind::Discard) => bio_attempt_discard_merge(ctx, rq, bio, bio_id),
            None => return BioMerge::None,
        }
    };
    if ok {
        BioMerge::Ok
    } else {
        BioMerge::Failed
    }
}

/// `bio_attempt_discard_merge`: add `bio` as one more range of a multi-range
/// discard, within `max_discard_segments` and the sector limit.
pub fn bio_attempt_discard_merge(ctx: &mut ElvCtx, rq: RqId, bio: &Bio, bio_id: BioId) -> bool {
    let lim = ctx.merge.limits;
    let r = ctx.rqs.get(rq);
    if r.nr_segments >= lim.max_discard_segments
        || r.nr_sectors + bio.nr_sectors > lim.max_sectors.max(lim.max_hw_sectors)
    {
        set_nomerge(ctx, rq);
        return false;
    }
    let r = ctx.rqs.get_mut(rq);
    let tail = r.bio_tail.replace(bio_id);
    if r.bio_head.is_none() {
        r.bio_head = Some(bio_id);
    }
    r.nr_sectors += bio.nr_sectors;
    r.nr_segments += 1;
    if let Some(t) = tail {
        ctx.bios.set_next(t, Some(bio_id));
    }
    account_merge(ctx.merge, Op::Discard);
    true
}

/// Mark `rq` as never mergeable again (`req_set_nomerge`).
fn set_nomerge(ctx: &mut ElvCtx, rq: RqId) {
    let r = ctx.rqs.get_mut(rq);
    r.flags = r.flags.with(ReqFlags::NOMERGE);
    if ctx.merge.last_merge == Some(rq) {
        ctx.merge.last_merge = None;
    }
}

/// Would `rq` stay within the queue limits after growing by `bio`
/// (`ll_back_merge_fn` / `ll_front_merge_fn`)? A failure marks `rq` unmergeable.
fn limits_allow_bio(ctx: &mut ElvCtx, rq: RqId, bio: &Bio) -> bool {
    let lim = ctx.merge.limits;
    let r = ctx.rqs.get(rq);
    // The new start: the request's for a back merge, the bio's for a front one.
    let pos = r.sector.0.min(bio.sector.0);
    if r.nr_sectors + bio.nr_sectors > lim.max_sectors_at(pos)
        || r.nr_segments + bio_segments(bio) > lim.max_segments
    {
        set_nomerge(ctx, rq);
        return false;
    }
    true
}

/// `bio_attempt_back_merge`: append `bio` to `rq`.
pub fn bio_attempt_back_merge(ctx: &mut ElvCtx, rq: RqId, bio: &Bio, bio_id: BioId) -> bool {
    if !limits_allow_bio(ctx, rq, bio) {
        return false;
    }
    let r = ctx.rqs.get_mut(rq);
    let tail = r.bio_tail.replace(bio_id);
    if r.bio_head.is_none() {
        r.bio_head = Some(bio_id);
    }
    r.nr_sectors += bio.nr_sectors;
    r.nr_segments += bio_segments(bio);
    let op = r.op;
    if r.zone_write_plugging {
        ctx.merge.zone_merged.push(bio_id);
    }
    if let Some(t) = tail {
        ctx.bios.set_next(t, Some(bio_id));
    }
    account_merge(ctx.merge, op);
    true
}

/// `bio_attempt_front_merge`: prepend `bio` to `rq`.
pub fn bio_attempt_front_merge(ctx: &mut ElvCtx, rq: RqId, bio: &Bio, bio_id: BioId) -> bool {
    if !limits_allow_bio(ctx, rq, bio) {
        return false;
    }
    let r = ctx.rqs.get_mut(rq);
    let head = r.bio_head.replace(bio_id);
    if r.bio_tail.is_none() {
        r.bio_tail = Some(bio_id);
    }
    r.sector = bio.sector;
    r.nr_sectors += bio.nr_sectors;
    r.nr_segments += bio_segments(bio);
    let op = r.op;
    ctx.bios.set_next(bio_id, head);
    account_merge(ctx.merge, op);
    true
}

/// `elv_merged_request`: tell the scheduler `rq` grew; a back-merged request is
/// re-hashed under its new end, and becomes the one-hit cache.
pub fn elv_merged_request(ctx: &mut ElvCtx, e: &mut dyn Elevator, rq: RqId, kind: MergeKind) {
    e.request_merged(ctx, rq, kind);
    if kind == MergeKind::Back {
        rqhash_reposition(ctx, rq);
    }
    ctx.merge.last_merge = Some(rq);
}

fn rqhash_reposition(ctx: &mut ElvCtx, rq: RqId) {
    if ctx.merge.is_hashed(rq) {
        ctx.merge.rqhash_del(rq);
        let end = ctx.rqs.get(rq).end().0;
        ctx.merge.rqhash_add(rq, end);
    }
}

/// `attempt_merge`: absorb `next` into `rq` if they are compatible, adjacent and fit
/// the limits. On success `next` is pushed on [`MergeState::freed`] and true returned.
pub fn attempt_merge(ctx: &mut ElvCtx, e: &mut dyn Elevator, rq: RqId, next: RqId) -> bool {
    let lim = ctx.merge.limits;
    {
        let (a, b) = (ctx.rqs.get(rq), ctx.rqs.get(next));
        if !rq_mergeable(a)
            || !rq_mergeable(b)
            || a.op != b.op
            || a.end() != b.sector
            || a.cgroup != b.cgroup
            || a.ioprio != b.ioprio
            || a.nr_sectors + b.nr_sectors > lim.max_sectors_at(a.sector.0)
            || a.nr_segments + b.nr_segments > lim.max_segments
        {
            return false;
        }
    }
    let b = ctx.rqs.get(next).clone();
    {
        let a = ctx.rqs.get_mut(rq);
        if b.alloc_ns < a.alloc_ns {
            a.alloc_ns = b.alloc_ns;
        }
        a.nr_sectors += b.nr_sectors;
        a.nr_segments += b.nr_segments;
        let tail = a.bio_tail;
        if b.bio_head.is_some() {
            a.bio_tail = b.bio_tail;
            if a.bio_head.is_none() {
                a.bio_head = b.bio_head;
            }
        }
        if let (Some(t), Some(h)) = (tail, b.bio_head) {
            ctx.bios.set_next(t, Some(h));
        }
    }
    {
        let n = ctx.rqs.get_mut(next);
        n.bio_head = None;
        n.bio_tail = None;
    }
    // elv_merge_requests
    e.requests_merged(ctx, rq, next);
    rqhash_reposition(ctx, rq);
    ctx.merge.last_merge = Some(rq);
    account_merge(ctx.merge, b.op);
    ctx.merge.freed.push(next);
    true
}

/// `elv_merge`: find a request `bio` can merge into: the one-hit cache, then the
/// end-sector hash (back merge), then the scheduler's own lookup (`request_merge`).
pub fn elv_merge(ctx: &mut ElvCtx, e: &mut dyn Elevator, bio: &Bio) -> Option<(RqId, MergeKind)> {
    if ctx.merge.limits.nomerges == 2 || !bio_mergeable(bio) {
        return None;
    }
    if let Some(lm) = ctx.merge.last_merge {
        let r = ctx.rqs.get(lm);
        if bio_merge_ok(r, bio) {
            if discard_mergeable(r, &ctx.merge.limits) {
                return Some((lm, MergeKind::Discard));
            }
            if let Some(kind) = try_merge(r, bio) {
                return Some((lm, kind));
            }
        }
    }
    if ctx.merge.limits.nomerges == 1 {
        return None;
    }
    if let Some(rq) = ctx.merge.rqhash_find(ctx.rqs, bio.sector.0) {
        if bio_merge_ok(ctx.rqs.get(rq), bio) {
            return Some((rq, MergeKind::Back));
        }
    }
    e.request_merge(ctx, bio)
}

/// `blk_mq_sched_try_merge`: merge `bio` into a queued request, then try to merge
/// the grown request with its neighbour in the scheduler's sort order.
pub fn sched_try_merge(ctx: &mut ElvCtx, e: &mut dyn Elevator, bio: &Bio, bio_id: BioId) -> bool {
    match elv_merge(ctx, e, bio) {
        Some((rq, MergeKind::Back)) => {
            if !bio_attempt_back_merge(ctx, rq, bio, bio_id) {
                return false;
            }
            let merged = match e.next_request(ctx, rq) {
                Some(next) => attempt_merge(ctx, e, rq, next),
                None => false,
            };
            if !merged {
                elv_merged_request(ctx, e, rq, MergeKind::Back);
            }
            true
        }
        Some((rq, MergeKind::Front)) => {
            if !bio_attempt_front_merge(ctx, rq, bio, bio_id) {
                return false;
            }
            let merged = match e.former_request(ctx, rq) {
                Some(prev) => attempt_merge(ctx, e, prev, rq),
                None => false,
            };
            if !merged {
                elv_merged_request(ctx, e, rq, MergeKind::Front);
            }
            true
        }
        Some((rq, MergeKind::Discard)) => bio_attempt_discard_merge(ctx, rq, bio, bio_id),
        None => false,
    }
}

/// `elv_attempt_insert_merge`: append the request being inserted to a queued one
/// (one-hit cache, then repeatedly through the hash so chains collapse). Returns true
/// if `rq` was absorbed (it is then on [`MergeState::freed`]).
pub fn attempt_insert_merge(ctx: &mut ElvCtx, e: &mut dyn Elevator, rq: RqId) -> bool {
    if ctx.merge.limits.nomerges == 2 {
        return false;
    }
    if let Some(lm) = ctx.merge.last_merge {
        if lm != rq && attempt_merge(ctx, e, lm, rq) {
            return true;
        }
    }
    if ctx.merge.limits.nomerges == 1 {
        return false;
    }
    let mut cur = rq;
    let mut merged = false;
    loop {
        let start = ctx.rqs.get(cur).sector.0;
        match ctx.merge.rqhash_find(ctx.rqs, start) {
            Some(prev) if prev != cur && attempt_merge(ctx, e, prev, cur) => {
                merged = true;
                cur = prev;
            }
            _ => return merged,
        }
    }
}
