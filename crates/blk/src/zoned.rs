//! Zone write plugging (`block/blk-zoned.c`): how the block layer keeps writes to
//! a zoned device's sequential zones in order.
//!
//! Followed: the `blk-zoned.c` of a post-6.18 mainline tree (stored commit
//! `fd0ae4754c7b`, which already has the cached zone conditions
//! `disk->zones_cond` with `BLK_ZONE_COND_ACTIVE` and cached zone reports), with
//! the `blk_mq_submit_bio` hooks of the same era and the 2025 operation numbering
//! (zone finish, reset and reset-all odd, so writes).
//!
//! Each sequential zone written to gets a *zone write plug* ([`ZoneWplugs`]
//! keeps them by zone number, as the disk's hash table does). The plug tracks
//! the zone's write pointer offset as the host sees it and lets **one write
//! BIO at a time** through to request allocation: while a write is in flight
//! (the plug is `PLUGGED`), further writes to the zone wait on the plug's BIO
//! list, in submission order. When the request ends
//! (`blk_zone_write_plug_finish_request`) the zone is unplugged: with BIOs
//! waiting, the plug's BIO work is scheduled, which submits the next one
//! (`blk_zone_wplug_bio_work`); without, the plug goes idle and is dropped if
//! the zone is empty or full. Plugged BIOs that continue the new request merge
//! into it when the request is set up (`blk_zone_write_plug_init_request`).
//!
//! Before a write goes on, it is checked against the plug's write pointer
//! (`blk_zone_wplug_prepare_bio`): a write elsewhere, into a full zone, or
//! after a write error left the write pointer unknown, fails. A zone append on a
//! device without native append is emulated there: it becomes a write at the
//! plug's write pointer, not mergeable, and is restored to an append on
//! completion with the sector it landed at. Reset, reset-all and finish
//! completions set the plug's write pointer (0, or the zone size) and fail the
//! plugged BIOs. A failed write fails the plugged BIOs too and marks the plug as
//! needing a write pointer update, which a zone report of the zone
//! ([`ZoneWplugs::report_zone`], `disk_report_zone`) or a reset/finish provides.
//!
//! Not modelled: `REQ_NOWAIT` (plugging always by work then), BIO-based
//! (device-mapper) devices, the mempool sizing of the plug pool, `BLKREPORTZONEV2`
//! cached reports as an interface.

use crate::request::Bio;
use crate::types::{Op, ReqFlags};
use std::collections::{BTreeMap, VecDeque};

/// `enum blk_zone_cond`, with `ACTIVE` (implicit open, explicit open or
/// closed, as the block layer caches it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneCond {
    /// `NOT_WP`: conventional.
    NotWp,
    /// `EMPTY`.
    Empty,
    /// `IMP_OPEN`.
    ImpOpen,
    /// `EXP_OPEN`.
    ExpOpen,
    /// `CLOSED`.
    Closed,
    /// `READONLY`.
    ReadOnly,
    /// `FULL`.
    Full,
    /// `OFFLINE`.
    Offline,
    /// `ACTIVE`: one of the three above, as cached.
    Active,
}

/// One zone of a zone report (`struct blk_zone`), sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkZone {
    /// First sector.
    pub start: u64,
    /// Size.
    pub len: u64,
    /// Writable sectors.
    pub capacity: u64,
    /// Write pointer (absolute).
    pub wp: u64,
    /// Conventional zone (`BLK_ZONE_TYPE_CONVENTIONAL`).
    pub conventional: bool,
    /// Condition.
    pub cond: ZoneCond,
}

/// The zone limits of a disk (`queue_limits` and `gendisk` zone fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZonedLimits {
    /// `chunk_sectors`: the zone size, a power of two.
    pub zone_sectors: u64,
    /// Disk capacity in sectors.
    pub capacity: u64,
    /// `disk->zone_capacity` (of every sequential zone but the last).
    pub zone_capacity: u64,
    /// Conventional zones at the start.
    pub nr_conv_zones: u32,
    /// `max_open_zones` (0 = none).
    pub max_open_zones: u32,
    /// `max_active_zones` (0 = none).
    pub max_active_zones: u32,
    /// The driver has no native zone append (`queue_emulates_zone_append`):
    /// SCSI/ATA SMR disks; NVMe ZNS has it.
    pub emulate_zone_append: bool,
}

impl ZonedLimits {
    /// `disk->nr_zones`.
    pub fn nr_zones(&self) -> u32 {
        self.capacity.div_ceil(self.zone_sectors) as u32
    }
    /// `disk_zone_no`.
    pub fn zone_no(&self, sector: u64) -> u32 {
        (sector / self.zone_sectors) as u32
    }
    /// `disk->last_zone_capacity`: the last zone's capacity, cut to its size.
    pub fn last_zone_capacity(&self) -> u64 {
        let last_start = u64::from(self.nr_zones() - 1) * self.zone_sectors;
        self.zone_capacity.min(self.capacity - last_start)
    }
    /// The limits as `disk_update_zone_resources` leaves them: a limit at or
    /// above the number of sequential zones means none.
    pub fn revalidated(mut self) -> ZonedLimits {
        let nr_seq = self.nr_zones() - self.nr_conv_zones;
        if self.max_open_zones >= nr_seq {
            self.max_open_zones = 0;
        }
        if self.max_active_zones >= nr_seq {
            self.max_active_zones = 0;
        }
        self
    }
}

/// `struct blk_zone_wplug`.
#[derive(Clone, Debug)]
struct Wplug {
    /// Plugged BIOs, in submission order.
    bio_list: VecDeque<Bio>,
    /// `BLK_ZONE_WPLUG_PLUGGED`.
    plugged: bool,
    /// `BLK_ZONE_WPLUG_NEED_WP_UPDATE`.
    need_wp_update: bool,
    /// Write pointer offset from the zone start, sectors.
    wp_offset: u64,
    /// Condition (`EMPTY`, `ACTIVE` or `FULL`).
    cond: ZoneCond,
    /// References beyond the hash table's: one per plugged or issued BIO, per
    /// request set up for the zone, and for a scheduled BIO work.
    refs: u32,
    /// The BIO work is scheduled.
    work_queued: bool,
}

/// What [`ZoneWplugs::plug_bio`] decided (`blk_zone_plug_bio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plugging {
    /// Go on with request allocation: the BIO (possibly turned from an
    /// emulated append into a write) is the only write in flight for its zone.
    Submit(Bio),
    /// The BIO waits on its zone's plug.
    Plugged,
    /// The BIO fails (`bio_io_error`); complete it with an error.
    Fail(Bio),
}

/// Counters of the plugging work done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneStats {
    /// BIOs that waited on a plug.
    pub plugged: u64,
    /// BIO work runs.
    pub works: u64,
    /// BIOs failed by aborts (reset, finish, write errors).
    pub aborted: u64,
    /// Zone appends turned into writes.
    pub emulated_appends: u64,
}

/// The zone write plugs of one disk; see the module docs.
#[derive(Clone, Debug)]
pub struct ZoneWplugs {
    lim: ZonedLimits,
    /// `disk->zones_cond`.
    zones_cond: Vec<ZoneCond>,
    /// `disk->zone_wplugs_hash`, ordered for determinism.
    plugs: BTreeMap<u32, Wplug>,
    /// Zones whose BIO work is queued, in queueing order.
    work: VecDeque<u32>,
    /// BIOs failed by aborts, for the caller to end with an error.
    aborted: Vec<Bio>,
    /// `GD_ZONE_APPEND_USED`.
    append_used: bool,
    stats: ZoneStats,
}

impl ZoneWplugs {
    /// The plugs of a disk whose zones are as `report` says
    /// (`blk_revalidate_disk_zones`: every zone checked, conditions cached;
    /// with append emulation, zones neither empty nor full get a plug at once).
    pub fn new(lim: ZonedLimits, report: &[BlkZone]) -> ZoneWplugs {
        let lim = lim.revalidated();
        let mut z = ZoneWplugs {
            lim,
            zones_cond: vec![ZoneCond::Empty; lim.nr_zones() as usize],
            plugs: BTreeMap::new(),
            work: VecDeque::new(),
            aborted: Vec::new(),
            append_used: false,
            stats: ZoneStats::default(),
        };
        for (i, zone) in report.iter().enumerate() {
            z.zones_cond[i] = cached(zone.cond);
            let off = wp_offset_of(zone);
            if lim.emulate_zone_append && !zone.conventional && off != 0 && off < zone.capacity {
                let mut p = z.new_plug(zone.start);
                p.wp_offset = off;
                p.cond = ZoneCond::Active;
                z.plugs.insert(i as u32, p);
            }
        }
        z
    }

    /// The limits (after revalidation).
    pub fn limits(&self) -> &ZonedLimits {
        &self.lim
    }

    /// Counters so far.
    pub fn stats(&self) -> ZoneStats {
        self.stats
    }

    /// `bdev_zone_is_seq`.
    pub fn zone_is_seq(&self, sector: u64) -> bool {
        let zno = self.lim.zone_no(sector) as usize;
        zno < self.zones_cond.len() && self.zones_cond[zno] != ZoneCond::NotWp
    }

    /// The cached condition of zone `zno`.
    pub fn cached_cond(&self, zno: u32) -> ZoneCond {
        self.zones_cond[zno as usize]
    }

    /// Zone `zno`'s plug: (write pointer offset, plugged, BIOs waiting, needs a
    /// write pointer update), if it has one.
    pub fn plug_state(&self, zno: u32) -> Option<(u64, bool, usize, bool)> {
        self.plugs
            .get(&zno)
            .map(|p| (p.wp_offset, p.plugged, p.bio_list.len(), p.need_wp_update))
    }

    /// Zones with a plug.
    pub fn nr_plugs(&self) -> usize {
        self.plugs.len()
    }

    /// BIOs failed by aborts since the last call (end each with an error).
    pub fn take_aborted(&mut self, out: &mut Vec<Bio>) {
        out.append(&mut self.aborted);
    }

    /// `bio_needs_zone_write_plugging`: writes, zone appends, and the zone
    /// management operations that move write pointers; not empty flushes, not
    /// BIOs already handled.
    pub fn needs_plugging(bio: &Bio) -> bool {
        if bio.op.number() & 1 == 0 {
            return false;
        }
        if bio.flags.has(ReqFlags::PREFLUSH) && bio.nr_sectors == 0 {
            return false;
        }
        if bio.flags.has(ReqFlags::ZONE_WRITE_PLUGGING) {
            return false;
        }
        matches!(
            bio.op,
            Op::ZoneAppend | Op::Write | Op::ZoneFinish | Op::ZoneReset | Op::ZoneResetAll
        )
    }

    /// `blk_zone_plug_bio` for a BIO that [`ZoneWplugs::needs_plugging`].
    pub fn plug_bio(&mut self, bio: Bio) -> Plugging {
        match bio.op {
            Op::ZoneAppend if !self.lim.emulate_zone_append => {
                self.native_zone_append(&bio);
                Plugging::Submit(bio)
            }
            Op::ZoneAppend | Op::Write => self.handle_write(bio),
            Op::ZoneReset | Op::ZoneFinish | Op::ZoneResetAll => {
                // blk_zone_wplug_handle_zone_mgmt: no reset or finish of a
                // conventional zone.
                if bio.op != Op::ZoneResetAll && !self.zone_is_seq(bio.sector.0) {
                    Plugging::Fail(bio)
                } else {
                    Plugging::Submit(bio)
                }
            }
            _ => Plugging::Submit(bio),
        }
    }

    fn new_plug(&self, sector: u64) -> Wplug {
        Wplug {
            bio_list: VecDeque::new(),
            plugged: false,
            need_wp_update: false,
            wp_offset: sector % self.lim.zone_sectors,
            cond: ZoneCond::Active,
            refs: 0,
            work_queued: false,
        }
    }

    /// `blk_zone_wplug_handle_write`.
    fn handle_write(&mut self, mut bio: Bio) -> Plugging {
        let zs = self.lim.zone_sectors;
        let last = bio.sector.0 + u64::from(bio.nr_sectors.max(1)) - 1;
        if bio.sector.0 / zs != last / zs {
            // bio_straddles_zones: the block layer split it already; a warning.
            return Plugging::Fail(bio);
        }
        if !self.zone_is_seq(bio.sector.0) {
            return if bio.op == Op::ZoneAppend {
                Plugging::Fail(bio)
            } else {
                Plugging::Submit(bio)
            };
        }
        let zno = self.lim.zone_no(bio.sector.0);
        // disk_get_and_lock_zone_wplug: a new plug assumes the write is at the
        // write pointer (a zone without a plug is empty or full).
        if !self.plugs.contains_key(&zno) {
            let mut p = self.new_plug(bio.sector.0);
            p.cond = self.zones_cond[zno as usize];
            self.plugs.insert(zno, p);
        }
        bio.flags = bio.flags.with(ReqFlags::ZONE_WRITE_PLUGGING);
        let lim = self.lim;
        let p = self.plugs.get_mut(&zno).expect("inserted above");
        // The BIO's reference on the plug.
        p.refs += 1;
        if p.plugged {
            p.bio_list.push_back(bio);
            self.stats.plugged += 1;
            return Plugging::Plugged;
        }
        if !prepare_bio(&lim, zno, p, &mut bio, &mut self.stats) {
            // bio_io_error: the BIO keeps its plugging flag, so its end
            // (`blk_zone_write_plug_bio_endio`) sees the error.
            return Plugging::Fail(bio);
        }
        p.plugged = true;
        Plugging::Submit(bio)
    }

    /// `blk_zone_wplug_handle_native_zone_append`: a native append bypasses
    /// plugging; a plug left by regular writes is removed (its plugged BIOs,
    /// an invalid mix of appends and writes, fail).
    fn native_zone_append(&mut self, bio: &Bio) {
        self.append_used = true;
        let zno = self.lim.zone_no(bio.sector.0);
        if self.plugs.contains_key(&zno) {
            self.abort(zno);
            self.remove(zno);
        }
    }

    /// `blk_zone_write_plug_bio_merged`: `bio` merged into a request that holds
    /// a plug reference; the write pointer moves past it.
    pub fn bio_merged(&mut self, bio: &mut Bio) {
        if bio.flags.has(ReqFlags::ZONE_WRITE_PLUGGING) {
            return;
        }
        bio.flags = bio.flags.with(ReqFlags::ZONE_WRITE_PLUGGING);
        let zno = self.lim.zone_no(bio.sector.0);
        let cap = self.zone_capacity(zno);
        if let Some(p) = self.plugs.get_mut(&zno) {
            p.refs += 1;
            p.wp_offset += u64::from(bio.nr_sectors);
            update_cond(p, cap);
        }
    }

    /// `blk_zone_write_plug_init_request` for a new request at `rq_sector`
    /// ending at `rq_end` (the caller marks it `RQF_ZONE_WRITE_PLUGGING`):
    /// the plugged BIOs that continue it, which `can_merge` accepts (the
    /// merge checks and limits of `bio_attempt_back_merge`, given the request's
    /// current end), are taken off the plug in order and returned for the
    /// caller to append to the request.
    pub fn init_request(
        &mut self,
        rq_sector: u64,
        rq_end: u64,
        nomerges: bool,
        mut can_merge: impl FnMut(&Bio, u64) -> bool,
    ) -> Vec<Bio> {
        let zno = self.lim.zone_no(rq_sector);
        let cap = self.zone_capacity(zno);
        let mut merged = Vec::new();
        let Some(p) = self.plugs.get_mut(&zno) else {
            return merged;
        };
        // The request's reference, dropped by finish_request.
        p.refs += 1;
        if nomerges {
            return merged;
        }
        let mut back = rq_end;
        while p.wp_offset < cap {
            let Some(bio) = p.bio_list.front() else { break };
            if bio.sector.0 != back || !can_merge(bio, back) {
                break;
            }
            let bio = p.bio_list.pop_front().expect("peeked");
            p.wp_offset += u64::from(bio.nr_sectors);
            update_cond(p, cap);
            back += u64::from(bio.nr_sectors);
            merged.push(bio);
        }
        merged
    }

    /// `blk_zone_write_plug_bio_endio`: `bio`, handled by plugging, ended
    /// (`ok` = `BLK_STS_OK`). An emulated append becomes an append again
    /// (its sector is where it landed). A failure fails the plugged BIOs and
    /// leaves the write pointer to be updated.
    pub fn bio_endio(&mut self, bio: &mut Bio, ok: bool) {
        let zno = self.lim.zone_no(bio.sector.0);
        bio.flags = bio.flags.without(ReqFlags::ZONE_WRITE_PLUGGING);
        if bio.flags.has(ReqFlags::EMULATES_ZONE_APPEND) {
            bio.op = Op::ZoneAppend;
            bio.flags = bio
                .flags
                .without(ReqFlags::EMULATES_ZONE_APPEND | ReqFlags::NOMERGE);
        }
        if !self.plugs.contains_key(&zno) {
            // Removed under it (a native append): nothing to account.
            return;
        }
        if !ok {
            self.abort(zno);
            self.plugs.get_mut(&zno).expect("checked").need_wp_update = true;
        }
        let p = self.plugs.get_mut(&zno).expect("checked");
        p.refs = p.refs.saturating_sub(1);
    }

    /// `blk_zone_write_plug_finish_request`: a request marked
    /// `RQF_ZONE_WRITE_PLUGGING`, starting at `rq_sector`, was freed.
    pub fn finish_request(&mut self, rq_sector: u64) {
        let zno = self.lim.zone_no(rq_sector);
        let Some(p) = self.plugs.get_mut(&zno) else {
            return;
        };
        p.refs = p.refs.saturating_sub(1);
        self.unplug(zno);
    }

    /// `disk_zone_wplug_unplug_bio`.
    fn unplug(&mut self, zno: u32) {
        let p = self.plugs.get_mut(&zno).expect("caller checked");
        if !p.bio_list.is_empty() {
            self.schedule_work(zno);
            return;
        }
        p.plugged = false;
        if self.should_remove(zno) {
            self.remove(zno);
        }
    }

    /// `disk_zone_wplug_schedule_bio_work`.
    fn schedule_work(&mut self, zno: u32) {
        let p = self.plugs.get_mut(&zno).expect("caller checked");
        if p.work_queued {
            // queue_work on a pending work does nothing (and takes no
            // reference that the work would drop twice).
            return;
        }
        p.work_queued = true;
        p.refs += 1;
        self.work.push_back(zno);
    }

    /// Whether a plug BIO work is queued.
    pub fn has_work(&self) -> bool {
        !self.work.is_empty()
    }

    /// Run the first queued BIO work (`blk_zone_wplug_bio_work`): the next
    /// plugged BIO of its zone that passes `blk_zone_wplug_prepare_bio`, to be
    /// submitted again — straight to request allocation, no merge attempt, as
    /// `blk_mq_submit_bio` does for a BIO released from a plug. BIOs that fail
    /// the check are aborted ([`ZoneWplugs::take_aborted`]). `None` when the
    /// plug had nothing left (it is unplugged then).
    pub fn run_work(&mut self) -> Option<Bio> {
        let zno = self.work.pop_front()?;
        self.stats.works += 1;
        let lim = self.lim;
        let p = self.plugs.get_mut(&zno)?;
        p.work_queued = false;
        p.refs = p.refs.saturating_sub(1);
        loop {
            let Some(mut bio) = p.bio_list.pop_front() else {
                p.plugged = false;
                return None;
            };
            if prepare_bio(&lim, zno, p, &mut bio, &mut self.stats) {
                return Some(bio);
            }
            // blk_zone_wplug_bio_io_error: the flag goes first, so its end
            // does not touch the plug.
            bio.flags = bio.flags.without(ReqFlags::ZONE_WRITE_PLUGGING);
            p.refs = p.refs.saturating_sub(1);
            self.stats.aborted += 1;
            self.aborted.push(bio);
        }
    }

    /// `blk_zone_mgmt_bio_endio`: a zone reset, reset-all or finish ended.
    pub fn mgmt_bio_endio(&mut self, bio: &Bio, ok: bool) {
        if !ok {
            return;
        }
        let zno = self.lim.zone_no(bio.sector.0);
        match bio.op {
            Op::ZoneReset => {
                if self.plugs.contains_key(&zno) {
                    self.set_wp_offset(zno, 0);
                } else {
                    self.set_cond(zno, ZoneCond::Empty);
                }
            }
            Op::ZoneResetAll => {
                let zones: Vec<u32> = self.plugs.keys().copied().collect();
                for z in zones {
                    self.set_wp_offset(z, 0);
                }
                for z in 0..self.lim.nr_zones() {
                    self.set_cond(z, ZoneCond::Empty);
                }
                self.append_used = false;
            }
            Op::ZoneFinish => {
                if self.plugs.contains_key(&zno) {
                    // The zone size, as the kernel sets it (not the capacity).
                    self.set_wp_offset(zno, self.lim.zone_sectors);
                } else {
                    self.set_cond(zno, ZoneCond::Full);
                }
            }
            _ => {}
        }
    }

    /// `disk_report_zone` for one zone of a report: a plug that lost track of
    /// its write pointer takes the reported one (`disk_zone_wplug_sync_wp_offset`).
    pub fn report_zone(&mut self, zone: &BlkZone) {
        let zno = self.lim.zone_no(zone.start);
        if self.plugs.get(&zno).is_some_and(|p| p.need_wp_update) {
            self.set_wp_offset(zno, wp_offset_of(zone));
        }
    }

    /// `disk_zone_set_cond`: conventional, read-only and offline zones keep
    /// their condition.
    fn set_cond(&mut self, zno: u32, cond: ZoneCond) {
        let c = &mut self.zones_cond[zno as usize];
        if !matches!(c, ZoneCond::NotWp | ZoneCond::ReadOnly | ZoneCond::Offline) {
            *c = cached(cond);
        }
    }

    /// `disk_zone_wplug_set_wp_offset`.
    fn set_wp_offset(&mut self, zno: u32, wp_offset: u64) {
        let cap = self.zone_capacity(zno);
        let p = self.plugs.get_mut(&zno).expect("caller checked");
        p.need_wp_update = false;
        p.wp_offset = wp_offset;
        update_cond(p, cap);
        self.abort(zno);
        if self.should_remove(zno) {
            self.remove(zno);
        }
    }

    /// `disk_zone_wplug_abort`: fail every plugged BIO.
    fn abort(&mut self, zno: u32) {
        let p = self.plugs.get_mut(&zno).expect("caller checked");
        while let Some(mut bio) = p.bio_list.pop_front() {
            bio.flags = bio.flags.without(ReqFlags::ZONE_WRITE_PLUGGING);
            p.refs = p.refs.saturating_sub(1);
            self.stats.aborted += 1;
            self.aborted.push(bio);
        }
    }

    /// `disk_should_remove_zone_wplug`: idle, unreferenced, empty or full.
    fn should_remove(&self, zno: u32) -> bool {
        let p = &self.plugs[&zno];
        !p.plugged && p.refs == 0 && (p.wp_offset == 0 || p.wp_offset >= self.zone_capacity(zno))
    }

    /// `disk_remove_zone_wplug`: the plug's condition goes to the cache.
    fn remove(&mut self, zno: u32) {
        if let Some(p) = self.plugs.remove(&zno) {
            self.zones_cond[zno as usize] = cached(p.cond);
            self.work.retain(|&z| z != zno);
        }
    }

    /// `disk_zone_is_full`'s capacity for zone `zno`.
    fn zone_capacity(&self, zno: u32) -> u64 {
        if zno + 1 < self.lim.nr_zones() {
            self.lim.zone_capacity
        } else {
            self.lim.last_zone_capacity()
        }
    }
}

/// `blk_zone_set_cond`: open and closed are cached as active.
fn cached(cond: ZoneCond) -> ZoneCond {
    match cond {
        ZoneCond::ImpOpen | ZoneCond::ExpOpen | ZoneCond::Closed => ZoneCond::Active,
        c => c,
    }
}

/// `blk_zone_wp_offset`: the write pointer offset a report gives; full,
/// conventional, offline and read-only zones have none (`UINT_MAX`).
fn wp_offset_of(zone: &BlkZone) -> u64 {
    match zone.cond {
        ZoneCond::ImpOpen | ZoneCond::ExpOpen | ZoneCond::Closed | ZoneCond::Active => {
            zone.wp - zone.start
        }
        ZoneCond::Empty => 0,
        _ => u64::from(u32::MAX),
    }
}

/// `disk_zone_wplug_update_cond`.
fn update_cond(p: &mut Wplug, cap: u64) {
    p.cond = if p.wp_offset >= cap {
        ZoneCond::Full
    } else if p.wp_offset == 0 {
        ZoneCond::Empty
    } else {
        ZoneCond::Active
    };
}

/// `blk_zone_wplug_prepare_bio`: check `bio` against the plug's write pointer,
/// turn an emulated append into a write there, advance the write pointer.
fn prepare_bio(
    lim: &ZonedLimits,
    zno: u32,
    p: &mut Wplug,
    bio: &mut Bio,
    st: &mut ZoneStats,
) -> bool {
    let cap = if zno + 1 < lim.nr_zones() {
        lim.zone_capacity
    } else {
        lim.last_zone_capacity()
    };
    if p.need_wp_update || p.wp_offset >= cap {
        return false;
    }
    if bio.op == Op::ZoneAppend {
        bio.op = Op::Write;
        bio.flags = bio
            .flags
            .with(ReqFlags::NOMERGE | ReqFlags::EMULATES_ZONE_APPEND);
        bio.sector.0 += p.wp_offset;
        st.emulated_appends += 1;
    } else if bio.sector.0 % lim.zone_sectors != p.wp_offset {
        return false;
    }
    p.wp_offset += u64::from(bio.nr_sectors);
    update_cond(p, cap);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{CgroupId, IoPrio, Sector};

    /// 4 zones of 64 sectors: zone 0 conventional, capacity 48 (a ZNS-like
    /// capacity below the size).
    fn wplugs(emulate: bool) -> ZoneWplugs {
        let lim = ZonedLimits {
            zone_sectors: 64,
            capacity: 256,
            zone_capacity: 48,
            nr_conv_zones: 1,
            max_open_zones: 0,
            max_active_zones: 0,
            emulate_zone_append: emulate,
        };
        let report: Vec<BlkZone> = (0..4)
            .map(|i| BlkZone {
                start: i * 64,
                len: 64,
                capacity: if i == 0 { 64 } else { 48 },
                wp: if i == 0 { 64 } else { i * 64 },
                conventional: i == 0,
                cond: if i == 0 {
                    ZoneCond::NotWp
                } else {
                    ZoneCond::Empty
                },
            })
            .collect();
        ZoneWplugs::new(lim, &report)
    }

    fn bio(op: Op, sector: u64, n: u32, owner: u64) -> Bio {
        Bio {
            op,
            flags: ReqFlags::NONE,
            sector: Sector(sector),
            nr_sectors: n,
            ioprio: IoPrio::default(),
            pid: 1,
            cpu: 0,
            cgroup: CgroupId(0),
            owner,
        }
    }

    fn submitted(p: Plugging) -> Bio {
        match p {
            Plugging::Submit(b) => b,
            other => panic!("expected Submit, got {other:?}"),
        }
    }

    /// Three writes to one zone: the first goes on, the others wait; each
    /// request's end releases exactly the next one, in order.
    #[test]
    fn one_write_in_flight_per_zone_in_submission_order() {
        let mut z = wplugs(true);
        let b1 = submitted(z.plug_bio(bio(Op::Write, 64, 8, 1)));
        assert!(b1.flags.has(ReqFlags::ZONE_WRITE_PLUGGING));
        assert_eq!(z.plug_bio(bio(Op::Write, 72, 8, 2)), Plugging::Plugged);
        assert_eq!(z.plug_bio(bio(Op::Write, 80, 8, 3)), Plugging::Plugged);
        // Another zone is independent.
        let b4 = submitted(z.plug_bio(bio(Op::Write, 128, 8, 4)));
        assert_eq!(b4.owner, 4);
        assert_eq!(z.plug_state(1), Some((8, true, 2, false)));
        // Request for b1: set up with merges disabled, so nothing joins it.
        assert!(z.init_request(64, 72, true, |_, _| true).is_empty());
        let mut b1 = b1;
        z.bio_endio(&mut b1, true);
        z.finish_request(64);
        assert!(z.has_work());
        let b2 = z.run_work().expect("b2 next");
        assert_eq!((b2.owner, b2.sector.0), (2, 72));
        assert_eq!(z.plug_state(1), Some((16, true, 1, false)));
        assert!(!z.has_work(), "one BIO per work run");
        z.init_request(72, 80, true, |_, _| true);
        let mut b2 = b2;
        z.bio_endio(&mut b2, true);
        z.finish_request(72);
        let b3 = z.run_work().expect("b3 next");
        assert_eq!(b3.owner, 3);
        z.init_request(80, 88, true, |_, _| true);
        let mut b3 = b3;
        z.bio_endio(&mut b3, true);
        z.finish_request(80);
        // Idle, partly written: the plug stays (it holds the write pointer).
        assert!(!z.has_work());
        assert_eq!(z.plug_state(1), Some((24, false, 0, false)));
    }

    /// Plugged BIOs continuing a new request merge into it when it is set up;
    /// one the merge check refuses stops the walk.
    #[test]
    fn init_request_merges_plugged_bios_in_order() {
        let mut z = wplugs(true);
        let first = submitted(z.plug_bio(bio(Op::Write, 64, 8, 1)));
        for (i, s) in [(2, 72), (3, 80), (4, 96)] {
            assert_eq!(z.plug_bio(bio(Op::Write, s, 8, i)), Plugging::Plugged);
        }
        let mut seen = Vec::new();
        let merged = z.init_request(64, 72, false, |b, back| {
            seen.push((b.owner, back));
            true
        });
        // 2 (at 72) and 3 (at 80) continue the request; 4 (at 96) does not.
        assert_eq!(merged.iter().map(|b| b.owner).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(seen, [(2, 72), (3, 80)]);
        assert_eq!(z.plug_state(1), Some((24, true, 1, false)));
        // The request ends: every BIO of it, then the request.
        for mut b in std::iter::once(first).chain(merged) {
            z.bio_endio(&mut b, true);
        }
        z.finish_request(64);
        // BIO 4 is not at the write pointer (88): the work aborts it.
        assert_eq!(z.run_work(), None);
        let mut out = Vec::new();
        z.take_aborted(&mut out);
        assert_eq!(out.iter().map(|b| b.owner).collect::<Vec<_>>(), [4]);
        assert_eq!(z.plug_state(1), Some((24, false, 0, false)));
    }

    #[test]
    fn emulated_append_writes_at_the_plug_write_pointer() {
        let mut z = wplugs(true);
        let w = submitted(z.plug_bio(bio(Op::Write, 128, 16, 1)));
        assert_eq!(
            z.plug_bio(bio(Op::ZoneAppend, 128, 8, 2)),
            Plugging::Plugged
        );
        let mut w = w;
        z.init_request(128, 144, true, |_, _| true);
        z.bio_endio(&mut w, true);
        z.finish_request(128);
        let a = z.run_work().expect("the append");
        assert_eq!((a.op, a.sector.0), (Op::Write, 144));
        assert!(a
            .flags
            .has(ReqFlags::NOMERGE | ReqFlags::EMULATES_ZONE_APPEND));
        let mut a = a;
        z.bio_endio(&mut a, true);
        assert_eq!((a.op, a.sector.0), (Op::ZoneAppend, 144));
        assert!(!a
            .flags
            .any(ReqFlags::NOMERGE | ReqFlags::EMULATES_ZONE_APPEND));
        assert_eq!(z.stats().emulated_appends, 1);
        // Appends to conventional zones fail.
        assert!(matches!(
            z.plug_bio(bio(Op::ZoneAppend, 0, 8, 3)),
            Plugging::Fail(_)
        ));
    }

    #[test]
    fn native_append_bypasses_and_removes_the_plug() {
        let mut z = wplugs(false);
        let _w = submitted(z.plug_bio(bio(Op::Write, 64, 8, 1)));
        assert_eq!(z.plug_bio(bio(Op::Write, 72, 8, 2)), Plugging::Plugged);
        let a = submitted(z.plug_bio(bio(Op::ZoneAppend, 64, 8, 3)));
        assert_eq!((a.op, a.sector.0), (Op::ZoneAppend, 64));
        assert_eq!(z.plug_state(1), None);
        let mut out = Vec::new();
        z.take_aborted(&mut out);
        assert_eq!(out.iter().map(|b| b.owner).collect::<Vec<_>>(), [2]);
    }

    /// A reset's completion rewinds the plug and fails what waited; the plug,
    /// idle and empty then, goes once its in-flight write ends.
    #[test]
    fn reset_aborts_plugged_bios() {
        let mut z = wplugs(true);
        let mut w = submitted(z.plug_bio(bio(Op::Write, 192, 8, 1)));
        z.init_request(192, 200, true, |_, _| true);
        assert_eq!(z.plug_bio(bio(Op::Write, 200, 8, 2)), Plugging::Plugged);
        assert_eq!(z.plug_bio(bio(Op::Write, 208, 8, 3)), Plugging::Plugged);
        let reset = submitted(z.plug_bio(bio(Op::ZoneReset, 192, 0, 9)));
        z.mgmt_bio_endio(&reset, true);
        let mut out = Vec::new();
        z.take_aborted(&mut out);
        assert_eq!(out.iter().map(|b| b.owner).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(z.plug_state(3), Some((0, true, 0, false)));
        z.bio_endio(&mut w, false);
        z.finish_request(192);
        // The in-flight write failed (the zone was reset under it): the plug
        // is marked for a write pointer update, but idle, unreferenced and at
        // offset 0 it is removed all the same (`disk_should_remove_zone_wplug`
        // does not look at the flag); the cache says empty.
        assert_eq!(z.plug_state(3), None);
        assert_eq!(z.cached_cond(3), ZoneCond::Empty);
        // A reset of a conventional zone fails before reaching the device.
        assert!(matches!(
            z.plug_bio(bio(Op::ZoneReset, 0, 0, 10)),
            Plugging::Fail(_)
        ));
        // Reset-all is not checked per zone.
        assert!(matches!(
            z.plug_bio(bio(Op::ZoneResetAll, 0, 0, 11)),
            Plugging::Submit(_)
        ));
    }

    /// A write error: plugged BIOs fail, later writes fail until a zone report
    /// gives the write pointer back; then writes at it go on.
    #[test]
    fn write_error_recovered_by_zone_report() {
        let mut z = wplugs(true);
        let mut w = submitted(z.plug_bio(bio(Op::Write, 64, 8, 1)));
        z.init_request(64, 72, true, |_, _| true);
        assert_eq!(z.plug_bio(bio(Op::Write, 72, 8, 2)), Plugging::Plugged);
        // The device failed the write (say it was not at its write pointer,
        // which the device had at 64 + 4).
        z.bio_endio(&mut w, false);
        z.finish_request(64);
        let mut out = Vec::new();
        z.take_aborted(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(z.plug_state(1), Some((8, false, 0, true)));
        assert!(matches!(
            z.plug_bio(bio(Op::Write, 72, 8, 3)),
            Plugging::Fail(_)
        ));
        z.report_zone(&BlkZone {
            start: 64,
            len: 64,
            capacity: 48,
            wp: 68,
            conventional: false,
            cond: ZoneCond::ImpOpen,
        });
        assert_eq!(z.plug_state(1), Some((4, false, 0, false)));
        let b = submitted(z.plug_bio(bio(Op::Write, 68, 8, 4)));
        assert_eq!(b.owner, 4);
    }

    #[test]
    fn full_zones_and_straddling_writes_fail() {
        let mut z = wplugs(true);
        // 48 sectors of capacity: a 48-sector write fills the zone.
        let mut w = submitted(z.plug_bio(bio(Op::Write, 64, 48, 1)));
        z.init_request(64, 112, true, |_, _| true);
        assert_eq!(z.plug_state(1).map(|s| s.0), Some(48));
        z.bio_endio(&mut w, true);
        z.finish_request(64);
        // Full and idle: removed, the cache says full.
        assert_eq!(z.plug_state(1), None);
        assert_eq!(z.cached_cond(1), ZoneCond::Full);
        assert!(matches!(
            z.plug_bio(bio(Op::Write, 120, 16, 2)),
            Plugging::Fail(_)
        ));
        // Conventional zones are not plugged.
        assert_eq!(
            z.plug_bio(bio(Op::Write, 8, 8, 3)),
            Plugging::Submit(bio(Op::Write, 8, 8, 3))
        );
    }

    #[test]
    fn finish_sets_the_zone_size_and_removes_the_idle_plug() {
        let mut z = wplugs(true);
        let mut w = submitted(z.plug_bio(bio(Op::Write, 64, 8, 1)));
        z.init_request(64, 72, true, |_, _| true);
        z.bio_endio(&mut w, true);
        z.finish_request(64);
        let f = submitted(z.plug_bio(bio(Op::ZoneFinish, 64, 0, 2)));
        z.mgmt_bio_endio(&f, true);
        assert_eq!(z.plug_state(1), None);
        assert_eq!(z.cached_cond(1), ZoneCond::Full);
        let r = submitted(z.plug_bio(bio(Op::ZoneResetAll, 0, 0, 3)));
        z.mgmt_bio_endio(&r, true);
        assert_eq!(z.cached_cond(1), ZoneCond::Empty);
        assert_eq!(z.cached_cond(0), ZoneCond::NotWp);
    }

    #[test]
    fn needs_plugging_follows_the_op_numbers() {
        let b = |op| bio(op, 64, 8, 0);
        assert!(ZoneWplugs::needs_plugging(&b(Op::Write)));
        assert!(ZoneWplugs::needs_plugging(&b(Op::ZoneAppend)));
        assert!(ZoneWplugs::needs_plugging(&b(Op::ZoneReset)));
        assert!(ZoneWplugs::needs_plugging(&b(Op::ZoneFinish)));
        assert!(!ZoneWplugs::needs_plugging(&b(Op::ZoneOpen)));
        assert!(!ZoneWplugs::needs_plugging(&b(Op::ZoneClose)));
        assert!(!ZoneWplugs::needs_plugging(&b(Op::Read)));
        assert!(!ZoneWplugs::needs_plugging(&b(Op::Discard)));
        let mut flush = bio(Op::Write, 0, 0, 0);
        flush.flags = ReqFlags::PREFLUSH;
        assert!(!ZoneWplugs::needs_plugging(&flush));
        let mut done = b(Op::Write);
        done.flags = ReqFlags::ZONE_WRITE_PLUGGING;
        assert!(!ZoneWplugs::needs_plugging(&done));
    }

    #[test]
    fn limits_at_or_above_the_sequential_zones_mean_none() {
        let lim = ZonedLimits {
            zone_sectors: 64,
            capacity: 256 + 16,
            zone_capacity: 64,
            nr_conv_zones: 1,
            max_open_zones: 4,
            max_active_zones: 3,
            emulate_zone_append: true,
        };
        assert_eq!(lim.nr_zones(), 5);
        assert_eq!(lim.last_zone_capacity(), 16);
        let r = lim.revalidated();
        assert_eq!((r.max_open_zones, r.max_active_zones), (0, 3));
    }
}
