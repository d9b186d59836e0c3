//! Zoned block devices: the zone state machine a host-managed SMR disk (SCSI ZBC /
//! ATA ZAC) or an NVMe Zoned Namespace SSD (ZNS) keeps, independent of its media.
//!
//! A [`ZoneTable`] divides the LBA space into equal zones (the last may be
//! smaller). Each zone has a type ([`ZoneType`]), a condition ([`ZoneCond`]), a
//! write pointer and a capacity (ZNS: the writable part of the zone, possibly
//! smaller than its size; ZBC: the whole zone). Sequential-write-required zones
//! accept writes only at the write pointer; reads are not constrained here.
//!
//! # Open and active zone limits
//! A zone is *open* when implicitly or explicitly open, *active* when open or
//! closed. ZBC/ZAC bound the open zones (`MAXIMUM NUMBER OF OPEN SEQUENTIAL WRITE
//! REQUIRED ZONES`); ZNS bounds both (MOR, MAR). The rules followed are those of
//! the kernel's own emulation of both standards, null_blk's zoned mode
//! (`drivers/block/null_blk/zoned.c`: `null_check_open`, `null_check_active`,
//! `null_check_zone_resources`, `null_close_imp_open_zone`), which states that it
//! matches ZBC's "manage open zones" function with ZNS's active limit added:
//!
//! - a write to an empty or closed zone opens it implicitly; an open zone command
//!   opens it explicitly;
//! - when that would exceed the open limit and an implicitly open zone exists (and
//!   the active limit allows), the device closes one implicitly open zone — the
//!   next one round-robin from the last closed, as null_blk picks; ZBC leaves the
//!   choice to the device — and goes on;
//! - explicitly open zones are never closed by the device: with only those open,
//!   the command fails ([`ZoneError::TooManyOpen`]);
//! - an empty zone may become active only below the active limit
//!   ([`ZoneError::TooManyActive`]); closing frees no active resource, so there
//!   is no eviction for it.
//!
//! A limit of 0 means none. The ZNS specification's own text on implicit-open
//! eviction was not found in stored material: that ZNS drives evict as ZBC ones do
//! is null_blk's reading, unverified against the specification.
//!
//! # Errors
//! [`ZoneError`] names the ZBC sense key / additional sense code, the NVMe status
//! and the Linux `blk_status_t` / errno each failure maps to
//! ([`ZoneError::codes`]). NVMe statuses and the two resource errnos come from the
//! kernel (`include/linux/nvme.h`, `nvme_error_status`, and the commit "scsi:
//! handle zone resources errors"); of the SCSI sense codes, those for unaligned
//! writes, boundary violations and insufficient zone resources were found in
//! stored kernel and QEMU material, the others are recalled from ZBC and marked
//! unverified ([`ZoneErrorCodes::zbc_unverified`]).

use crate::profile::{Doc, ProfileError};
use crate::{Device, DeviceInfo};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Op, Request, RqId};
use std::collections::BTreeMap;

/// `BLK_ZONE_TYPE_*`: what writes a zone accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneType {
    /// `BLK_ZONE_TYPE_CONVENTIONAL`: random writes, no write pointer.
    Conventional,
    /// `BLK_ZONE_TYPE_SEQWRITE_REQ`: writes only at the write pointer
    /// (host-managed SMR, ZNS).
    SeqWriteRequired,
    /// `BLK_ZONE_TYPE_SEQWRITE_PREF`: sequential preferred, random writes accepted
    /// (host-aware SMR). The kernel refuses such zones since host-aware disks are
    /// handled as regular disks; the table keeps them for completeness.
    SeqWritePreferred,
}

/// `BLK_ZONE_COND_*`: the state of a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneCond {
    /// `NOT_WP`: a conventional zone.
    NotWp,
    /// `EMPTY`: write pointer at the zone start.
    Empty,
    /// `IMP_OPEN`: opened by a write.
    ImpOpen,
    /// `EXP_OPEN`: opened by an open zone command.
    ExpOpen,
    /// `CLOSED`: partly written, not open.
    Closed,
    /// `READONLY`.
    ReadOnly,
    /// `FULL`: written to capacity or finished.
    Full,
    /// `OFFLINE`.
    Offline,
}

impl ZoneCond {
    /// The kernel's name (`blk_zone_cond_str`).
    pub fn name(self) -> &'static str {
        match self {
            ZoneCond::NotWp => "NOT_WP",
            ZoneCond::Empty => "EMPTY",
            ZoneCond::ImpOpen => "IMP_OPEN",
            ZoneCond::ExpOpen => "EXP_OPEN",
            ZoneCond::Closed => "CLOSED",
            ZoneCond::ReadOnly => "READONLY",
            ZoneCond::Full => "FULL",
            ZoneCond::Offline => "OFFLINE",
        }
    }
}

/// One zone, as a zone report (`struct blk_zone`) gives it; positions in
/// 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// First sector.
    pub start: u64,
    /// Size in sectors.
    pub len: u64,
    /// Writable sectors from `start` (≤ `len`).
    pub capacity: u64,
    /// Write pointer (absolute sector); `start + len` for conventional zones.
    pub wp: u64,
    /// Type.
    pub ztype: ZoneType,
    /// Condition.
    pub cond: ZoneCond,
}

/// Which command set the device speaks: decides the error codes reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneProtocol {
    /// SCSI ZBC / ATA ZAC (SMR disks; libata translates ZAC to ZBC sense data).
    Zbc,
    /// NVMe Zoned Namespace command set.
    Zns,
}

/// A zoned device's layout and limits (a profile's `[zoned]` table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Zone size in sectors (a power of two: the kernel refuses others,
    /// `blk_revalidate_disk_zones`).
    pub zone_sectors: u64,
    /// Writable sectors per sequential zone.
    pub zone_capacity: u64,
    /// Conventional zones at the start of the LBA space.
    pub nr_conv_zones: u32,
    /// Most open zones; 0 = no limit.
    pub max_open: u32,
    /// Most active zones; 0 = no limit.
    pub max_active: u32,
    /// Command set (error codes).
    pub protocol: ZoneProtocol,
}

/// Sectors per MiB.
const MIB_SECTORS: u64 = 2048;

impl ZoneGeometry {
    /// Read the `[zoned]` table of a profile (keys `zoned.*`), if there is one,
    /// for a device of `capacity_sectors` speaking `protocol`. Every field is
    /// required once the table is present.
    pub fn from_doc(
        d: &mut Doc,
        capacity_sectors: u64,
        protocol: ZoneProtocol,
    ) -> Result<Option<ZoneGeometry>, ProfileError> {
        if !d.has_table("zoned") {
            return Ok(None);
        }
        let size_key = "zoned.zone_size_mib";
        let cap_key = "zoned.zone_capacity_mib";
        // The kernel keeps zone sizes and offsets in 32-bit sector counts
        // (`wp_offset`, `zone_capacity`): 2^31 sectors is 1 TiB.
        let size_mib =
            d.int_limited(size_key, 1, 1 << 20, "zone sizes are 32-bit sector counts")?;
        if !size_mib.is_power_of_two() {
            return Err(d.err(
                size_key,
                format!(
                    "{size_mib} MiB is not a power of two (the kernel refuses other zone sizes)"
                ),
            ));
        }
        let zone_sectors = size_mib * MIB_SECTORS;
        if zone_sectors > capacity_sectors {
            return Err(d.err(
                size_key,
                format!("{size_mib} MiB is larger than the device"),
            ));
        }
        let cap_mib = d.int(cap_key, 1, size_mib)?;
        if protocol == ZoneProtocol::Zbc && cap_mib != size_mib {
            return Err(d.err(
                cap_key,
                format!("{cap_mib} must equal zone_size_mib = {size_mib}: ZBC/ZAC zones are writable to their end"),
            ));
        }
        let nr_zones = capacity_sectors.div_ceil(zone_sectors);
        let nr_conv = d.int("zoned.nr_conv_zones", 0, nr_zones - 1)? as u32;
        let nr_seq = nr_zones - u64::from(nr_conv);
        let max_open = d.int("zoned.max_open_zones", 0, nr_seq.min(u32::MAX.into()))? as u32;
        let active_key = "zoned.max_active_zones";
        let max_active = d.int(active_key, 0, nr_seq.min(u32::MAX.into()))? as u32;
        if protocol == ZoneProtocol::Zbc && max_active != 0 {
            return Err(d.err(
                active_key,
                format!("{max_active} must be 0: ZBC/ZAC define no active-zone limit"),
            ));
        }
        if max_active != 0 && (max_open == 0 || max_open > max_active) {
            return Err(d.err(
                active_key,
                format!(
                    "{max_active} is below max_open_zones = {max_open} (0 = none): an open zone is active, so the open limit cannot exceed the active one"
                ),
            ));
        }
        Ok(Some(ZoneGeometry {
            zone_sectors,
            zone_capacity: cap_mib * MIB_SECTORS,
            nr_conv_zones: nr_conv,
            max_open,
            max_active,
            protocol,
        }))
    }

    /// `iosched devices` rows.
    pub fn describe(&self) -> Vec<crate::ParamInfo> {
        use crate::profile::row;
        vec![
            row(
                "zoned.zone_size_mib",
                "MiB",
                self.zone_sectors / MIB_SECTORS,
                "zone size (a power of two)",
            ),
            row(
                "zoned.zone_capacity_mib",
                "MiB",
                self.zone_capacity / MIB_SECTORS,
                "writable part of each sequential zone",
            ),
            row(
                "zoned.nr_conv_zones",
                "",
                self.nr_conv_zones,
                "conventional zones at the start",
            ),
            row(
                "zoned.max_open_zones",
                "",
                self.max_open,
                "most open zones (0 = no limit)",
            ),
            row(
                "zoned.max_active_zones",
                "",
                self.max_active,
                "most active zones (0 = no limit)",
            ),
        ]
    }
}

/// What a zone command or write can fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// A write to a sequential-write-required zone not at its write pointer.
    #[error("write at sector {sector} of zone {zone}, whose write pointer is at {wp}")]
    UnalignedWrite {
        /// Zone number.
        zone: u32,
        /// Where the write started.
        sector: u64,
        /// The zone's write pointer.
        wp: u64,
    },
    /// A write crossing the end of the zone's capacity or into the next zone.
    #[error("write of sectors {sector}..{end} crosses the end of zone {zone}")]
    Boundary {
        /// Zone number.
        zone: u32,
        /// First sector.
        sector: u64,
        /// One past the last sector.
        end: u64,
    },
    /// A write to a full zone.
    #[error("write to full zone {zone}")]
    ZoneFull {
        /// Zone number.
        zone: u32,
    },
    /// Opening the zone would exceed the open limit and no implicitly open zone
    /// can be closed to make room.
    #[error("zone {zone}: too many open zones (limit {limit})")]
    TooManyOpen {
        /// Zone number.
        zone: u32,
        /// The open limit.
        limit: u32,
    },
    /// Activating the zone would exceed the active limit.
    #[error("zone {zone}: too many active zones (limit {limit})")]
    TooManyActive {
        /// Zone number.
        zone: u32,
        /// The active limit.
        limit: u32,
    },
    /// A zone command (reset, open, close, finish) or zone append on a
    /// conventional zone.
    #[error("zone {zone} is conventional")]
    Conventional {
        /// Zone number.
        zone: u32,
    },
    /// A zone command the zone's condition does not allow (close of an empty or
    /// full zone, open of a full zone), or an append not addressed to a zone
    /// start.
    #[error("zone {zone}: invalid transition from {from}")]
    InvalidTransition {
        /// Zone number.
        zone: u32,
        /// The zone's condition.
        from: &'static str,
    },
    /// The zone is read-only.
    #[error("zone {zone} is read-only")]
    ReadOnly {
        /// Zone number.
        zone: u32,
    },
    /// The zone is offline.
    #[error("zone {zone} is offline")]
    Offline {
        /// Zone number.
        zone: u32,
    },
    /// Sectors beyond the device.
    #[error("sectors {sector}..{end} are beyond the device's {capacity}")]
    OutOfRange {
        /// First sector.
        sector: u64,
        /// One past the last.
        end: u64,
        /// Device capacity in sectors.
        capacity: u64,
    },
}

/// The codes a [`ZoneError`] is reported with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneErrorCodes {
    /// SCSI sense key, ASC, ASCQ (ZBC; libata reports ZAC errors the same way).
    pub zbc_sense: (u8, u8, u8),
    /// The sense code is recalled from ZBC, not found in stored material.
    pub zbc_unverified: bool,
    /// NVMe status (status code type << 8 | status code) — ZNS command-specific
    /// statuses are type 1.
    pub nvme_status: u16,
    /// The NVMe status is not taken from the kernel's `nvme.h`.
    pub nvme_unverified: bool,
    /// The kernel's `blk_status_t` name.
    pub blk_status: &'static str,
    /// The errno the submitter sees (negative, as the kernel returns it).
    pub errno: i32,
}

/// SCSI sense keys.
const ILLEGAL_REQUEST: u8 = 0x5;
const DATA_PROTECT: u8 = 0x7;
const MEDIUM_ERROR: u8 = 0x3;
/// Linux errnos.
const EIO: i32 = 5;
const EOVERFLOW: i32 = 75;
const ETOOMANYREFS: i32 = 109;

impl ZoneError {
    /// The error codes this failure is reported with. ZNS statuses are those of
    /// `include/linux/nvme.h` (`NVME_SC_ZONE_*`, 0x1b8–0x1bf); the kernel turns
    /// the two resource statuses into `BLK_STS_ZONE_{OPEN,ACTIVE}_RESOURCE`
    /// (`nvme_error_status`), everything else into `BLK_STS_IOERR`.
    pub fn codes(&self) -> ZoneErrorCodes {
        let (zbc_sense, nvme_status, nvme_unverified, blk_status, errno) = match *self {
            // UNALIGNED WRITE COMMAND.
            ZoneError::UnalignedWrite { .. } => (
                (ILLEGAL_REQUEST, 0x21, 0x04),
                0x1bc,
                false,
                "BLK_STS_IOERR",
                EIO,
            ),
            // WRITE BOUNDARY VIOLATION / Zone Boundary Error.
            ZoneError::Boundary { .. } => (
                (ILLEGAL_REQUEST, 0x21, 0x05),
                0x1b8,
                false,
                "BLK_STS_IOERR",
                EIO,
            ),
            // A full zone has no valid write pointer: ZBC reports the write as
            // unaligned; ZNS has Zone Is Full.
            ZoneError::ZoneFull { .. } => (
                (ILLEGAL_REQUEST, 0x21, 0x04),
                0x1b9,
                false,
                "BLK_STS_IOERR",
                EIO,
            ),
            // INSUFFICIENT ZONE RESOURCES / Too Many Open Zones.
            ZoneError::TooManyOpen { .. } => (
                (DATA_PROTECT, 0x55, 0x0e),
                0x1be,
                false,
                "BLK_STS_ZONE_OPEN_RESOURCE",
                ETOOMANYREFS,
            ),
            // ZBC has no active limit (the table never raises this for ZBC).
            ZoneError::TooManyActive { .. } => (
                (DATA_PROTECT, 0x55, 0x0e),
                0x1bd,
                false,
                "BLK_STS_ZONE_ACTIVE_RESOURCE",
                EOVERFLOW,
            ),
            // INVALID FIELD IN CDB / Invalid Field in Command (generic 0x02).
            ZoneError::Conventional { .. } => (
                (ILLEGAL_REQUEST, 0x24, 0x00),
                0x002,
                true,
                "BLK_STS_IOERR",
                EIO,
            ),
            // INVALID FIELD IN CDB / Invalid Zone State Transition.
            ZoneError::InvalidTransition { .. } => (
                (ILLEGAL_REQUEST, 0x24, 0x00),
                0x1bf,
                false,
                "BLK_STS_IOERR",
                EIO,
            ),
            // ZONE IS READ ONLY / Zone Is Read Only.
            ZoneError::ReadOnly { .. } => (
                (DATA_PROTECT, 0x27, 0x08),
                0x1ba,
                false,
                "BLK_STS_IOERR",
                EIO,
            ),
            // ZONE IS OFFLINE / Zone Is Offline.
            ZoneError::Offline { .. } => (
                (MEDIUM_ERROR, 0x2c, 0x0e),
                0x1bb,
                false,
                "BLK_STS_IOERR",
                EIO,
            ),
            // LOGICAL BLOCK ADDRESS OUT OF RANGE / LBA Out of Range (generic 0x80).
            ZoneError::OutOfRange { .. } => (
                (ILLEGAL_REQUEST, 0x21, 0x00),
                0x080,
                true,
                "BLK_STS_IOERR",
                EIO,
            ),
        };
        // ASC/ASCQ 21h/04h, 21h/05h and 55h/0Eh appear in stored kernel and QEMU
        // material (the kernel's `scsi_io_completion_action` maps DATA PROTECT
        // with 55h/0Eh to BLK_STS_ZONE_OPEN_RESOURCE); the rest are recalled.
        let zbc_verified = matches!(
            self,
            ZoneError::UnalignedWrite { .. }
                | ZoneError::Boundary { .. }
                | ZoneError::TooManyOpen { .. }
        );
        ZoneErrorCodes {
            zbc_sense,
            zbc_unverified: !zbc_verified,
            nvme_status,
            nvme_unverified,
            blk_status,
            errno: -errno,
        }
    }
}

/// Zone management commands (`REQ_OP_ZONE_*` but append).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneCommand {
    /// `REQ_OP_ZONE_RESET`.
    Reset,
    /// `REQ_OP_ZONE_RESET_ALL`.
    ResetAll,
    /// `REQ_OP_ZONE_OPEN`.
    Open,
    /// `REQ_OP_ZONE_CLOSE`.
    Close,
    /// `REQ_OP_ZONE_FINISH`.
    Finish,
}

/// The zones of one device; see the module docs.
#[derive(Clone, Debug)]
pub struct ZoneTable {
    geo: ZoneGeometry,
    capacity: u64,
    zones: Vec<Zone>,
    nr_imp_open: u32,
    nr_exp_open: u32,
    nr_closed: u32,
    /// Where the next search for an implicitly open zone to close starts
    /// (`imp_close_zone_no`).
    imp_close_next: u32,
    /// The zone the last operation closed to make room, before it was.
    evicted: Option<(u32, Zone)>,
}

/// What [`ZoneTable::begin`] saved.
#[derive(Clone, Copy, Debug)]
pub struct Undo {
    zone: (u32, Zone),
    counts: (u32, u32, u32, u32),
}

impl ZoneTable {
    /// All zones empty (conventional ones `NOT_WP`) on a device of
    /// `capacity_sectors`; the last zone is smaller when the capacity is not a
    /// multiple of the zone size, its capacity cut to fit.
    pub fn new(geo: ZoneGeometry, capacity_sectors: u64) -> ZoneTable {
        let nr = capacity_sectors.div_ceil(geo.zone_sectors);
        let zones = (0..nr)
            .map(|i| {
                let start = i * geo.zone_sectors;
                let len = geo.zone_sectors.min(capacity_sectors - start);
                if i < u64::from(geo.nr_conv_zones) {
                    Zone {
                        start,
                        len,
                        capacity: len,
                        wp: start + len,
                        ztype: ZoneType::Conventional,
                        cond: ZoneCond::NotWp,
                    }
                } else {
                    Zone {
                        start,
                        len,
                        capacity: geo.zone_capacity.min(len),
                        wp: start,
                        ztype: ZoneType::SeqWriteRequired,
                        cond: ZoneCond::Empty,
                    }
                }
            })
            .collect();
        ZoneTable {
            geo,
            capacity: capacity_sectors,
            zones,
            nr_imp_open: 0,
            nr_exp_open: 0,
            nr_closed: 0,
            imp_close_next: geo.nr_conv_zones,
            evicted: None,
        }
    }

    /// The geometry.
    pub fn geometry(&self) -> &ZoneGeometry {
        &self.geo
    }

    /// Number of zones.
    pub fn nr_zones(&self) -> u32 {
        self.zones.len() as u32
    }

    /// The zone containing `sector` (`disk_zone_no`).
    pub fn zone_no(&self, sector: u64) -> u32 {
        (sector / self.geo.zone_sectors) as u32
    }

    /// Zone `no` (a zone report entry).
    pub fn zone(&self, no: u32) -> &Zone {
        &self.zones[no as usize]
    }

    /// All zones, in LBA order (`report_zones`).
    pub fn report(&self) -> &[Zone] {
        &self.zones
    }

    /// Open zones (implicit + explicit).
    pub fn nr_open(&self) -> u32 {
        self.nr_imp_open + self.nr_exp_open
    }

    /// Active zones (open + closed).
    pub fn nr_active(&self) -> u32 {
        self.nr_open() + self.nr_closed
    }

    /// Remember what an operation on zone `no` may change, so that
    /// [`ZoneTable::undo`] can put it back (a command the media refused).
    pub fn begin(&mut self, no: u32) -> Undo {
        self.evicted = None;
        Undo {
            zone: (no, self.zones[no as usize]),
            counts: (
                self.nr_imp_open,
                self.nr_exp_open,
                self.nr_closed,
                self.imp_close_next,
            ),
        }
    }

    /// Undo everything since [`ZoneTable::begin`]: the zone, an implicitly
    /// open zone closed to make room, and the counts.
    pub fn undo(&mut self, u: Undo) {
        if let Some((n, z)) = self.evicted.take() {
            self.zones[n as usize] = z;
        }
        self.zones[u.zone.0 as usize] = u.zone.1;
        (
            self.nr_imp_open,
            self.nr_exp_open,
            self.nr_closed,
            self.imp_close_next,
        ) = u.counts;
    }

    /// Mark zone `no` read-only or offline (a failing head), as a device may at
    /// any time; a conventional zone stays as it is.
    pub fn set_failed(&mut self, no: u32, offline: bool) {
        let z = self.zones[no as usize];
        if z.ztype == ZoneType::Conventional {
            return;
        }
        self.leave(no);
        let z = &mut self.zones[no as usize];
        z.cond = if offline {
            ZoneCond::Offline
        } else {
            ZoneCond::ReadOnly
        };
    }

    fn check_range(&self, sector: u64, nr: u64) -> Result<(), ZoneError> {
        let end = sector.saturating_add(nr);
        if end > self.capacity || nr == 0 && sector >= self.capacity {
            return Err(ZoneError::OutOfRange {
                sector,
                end,
                capacity: self.capacity,
            });
        }
        Ok(())
    }

    /// Take zone `no` out of the open/closed counts (before changing its
    /// condition).
    fn leave(&mut self, no: u32) {
        match self.zones[no as usize].cond {
            ZoneCond::ImpOpen => self.nr_imp_open -= 1,
            ZoneCond::ExpOpen => self.nr_exp_open -= 1,
            ZoneCond::Closed => self.nr_closed -= 1,
            _ => {}
        }
    }

    /// `null_check_active`.
    fn check_active(&self, no: u32) -> Result<(), ZoneError> {
        let limit = self.geo.max_active;
        if limit == 0 || self.nr_active() < limit {
            Ok(())
        } else {
            Err(ZoneError::TooManyActive { zone: no, limit })
        }
    }

    /// `null_check_open`: room in the open limit, made by closing an implicitly
    /// open zone if need be.
    fn check_open(&mut self, no: u32) -> Result<(), ZoneError> {
        let limit = self.geo.max_open;
        if limit == 0 || self.nr_open() < limit {
            return Ok(());
        }
        if self.nr_imp_open > 0 && self.check_active(no).is_ok() {
            self.close_imp_open_zone();
            return Ok(());
        }
        Err(ZoneError::TooManyOpen { zone: no, limit })
    }

    /// `null_check_zone_resources`: may an empty or closed zone become open?
    fn check_resources(&mut self, no: u32) -> Result<(), ZoneError> {
        if self.zones[no as usize].cond == ZoneCond::Empty {
            self.check_active(no)?;
        }
        self.check_open(no)
    }

    /// `null_close_imp_open_zone`: close the first implicitly open zone from
    /// where the last search stopped, wrapping over the sequential zones.
    fn close_imp_open_zone(&mut self) {
        let first = self.geo.nr_conv_zones;
        let nr = self.nr_zones();
        let mut zno = if self.imp_close_next >= nr {
            first
        } else {
            self.imp_close_next
        };
        for _ in first..nr {
            let this = zno;
            zno += 1;
            if zno >= nr {
                zno = first;
            }
            if self.zones[this as usize].cond == ZoneCond::ImpOpen {
                self.evicted = Some((this, self.zones[this as usize]));
                self.leave(this);
                self.settle_closed(this);
                self.imp_close_next = zno;
                return;
            }
        }
    }

    /// A zone leaving the open state: empty again if unwritten, else closed.
    fn settle_closed(&mut self, no: u32) {
        let z = &mut self.zones[no as usize];
        if z.wp == z.start {
            z.cond = ZoneCond::Empty;
        } else {
            z.cond = ZoneCond::Closed;
            self.nr_closed += 1;
        }
    }

    fn check_usable(&self, no: u32) -> Result<&Zone, ZoneError> {
        let z = &self.zones[no as usize];
        match z.cond {
            ZoneCond::ReadOnly => Err(ZoneError::ReadOnly { zone: no }),
            ZoneCond::Offline => Err(ZoneError::Offline { zone: no }),
            _ => Ok(z),
        }
    }

    /// A write of `nr` sectors at `sector` (`null_zone_write`): checked against
    /// the zone's type, condition and write pointer, the zone opened implicitly
    /// if it was empty or closed, the write pointer advanced, the zone full when
    /// it reaches capacity. Returns the first sector written.
    pub fn write(&mut self, sector: u64, nr: u64) -> Result<u64, ZoneError> {
        self.check_range(sector, nr)?;
        let no = self.zone_no(sector);
        let z = *self.check_usable(no)?;
        let end = sector + nr;
        if z.ztype == ZoneType::Conventional {
            // Conventional zones take any write within the zone.
            if end > z.start + z.len {
                return Err(ZoneError::Boundary {
                    zone: no,
                    sector,
                    end,
                });
            }
            return Ok(sector);
        }
        self.write_seq(no, sector, nr)
    }

    /// `REQ_OP_ZONE_APPEND` of `nr` sectors to the zone starting at
    /// `zone_start`: written at the write pointer, whose old value is returned
    /// (the sector the data landed at, `bio->bi_iter.bi_sector` on completion).
    pub fn append(&mut self, zone_start: u64, nr: u64) -> Result<u64, ZoneError> {
        self.check_range(zone_start, nr.max(1))?;
        let no = self.zone_no(zone_start);
        let z = *self.check_usable(no)?;
        if z.ztype == ZoneType::Conventional {
            return Err(ZoneError::Conventional { zone: no });
        }
        if z.start != zone_start {
            // ZNS: the append's ZSLBA must be the zone's first LBA.
            return Err(ZoneError::InvalidTransition {
                zone: no,
                from: z.cond.name(),
            });
        }
        self.write_seq(no, z.wp, nr)
    }

    fn write_seq(&mut self, no: u32, sector: u64, nr: u64) -> Result<u64, ZoneError> {
        let z = self.zones[no as usize];
        if z.cond == ZoneCond::Full {
            return Err(ZoneError::ZoneFull { zone: no });
        }
        if z.ztype == ZoneType::SeqWriteRequired && sector != z.wp {
            return Err(ZoneError::UnalignedWrite {
                zone: no,
                sector,
                wp: z.wp,
            });
        }
        let end = sector + nr;
        if end > z.start + z.capacity {
            return Err(ZoneError::Boundary {
                zone: no,
                sector,
                end,
            });
        }
        if matches!(z.cond, ZoneCond::Empty | ZoneCond::Closed) {
            self.check_resources(no)?;
            self.leave(no);
            self.nr_imp_open += 1;
            self.zones[no as usize].cond = ZoneCond::ImpOpen;
        }
        let z = &mut self.zones[no as usize];
        // A host-aware zone written out of order keeps its highest point.
        z.wp = z.wp.max(end);
        if z.wp == z.start + z.capacity {
            self.leave(no);
            self.zones[no as usize].cond = ZoneCond::Full;
        }
        Ok(sector)
    }

    /// A zone management command on the zone containing `sector` (ignored for
    /// [`ZoneCommand::ResetAll`], which acts on every sequential zone).
    pub fn command(&mut self, cmd: ZoneCommand, sector: u64) -> Result<(), ZoneError> {
        if cmd == ZoneCommand::ResetAll {
            for no in self.geo.nr_conv_zones..self.nr_zones() {
                if matches!(
                    self.zones[no as usize].cond,
                    ZoneCond::ReadOnly | ZoneCond::Offline
                ) {
                    continue;
                }
                self.reset_zone(no);
            }
            return Ok(());
        }
        self.check_range(sector, 1)?;
        let no = self.zone_no(sector);
        self.check_usable(no)?;
        if self.zones[no as usize].ztype == ZoneType::Conventional {
            return Err(ZoneError::Conventional { zone: no });
        }
        match cmd {
            ZoneCommand::Reset => {
                self.reset_zone(no);
                Ok(())
            }
            ZoneCommand::Open => self.open_zone(no),
            ZoneCommand::Close => self.close_zone(no),
            ZoneCommand::Finish => self.finish_zone(no),
            ZoneCommand::ResetAll => unreachable!("handled above"),
        }
    }

    /// `null_reset_zone`.
    fn reset_zone(&mut self, no: u32) {
        self.leave(no);
        let z = &mut self.zones[no as usize];
        z.cond = ZoneCond::Empty;
        z.wp = z.start;
    }

    fn invalid(&self, no: u32) -> ZoneError {
        ZoneError::InvalidTransition {
            zone: no,
            from: self.zones[no as usize].cond.name(),
        }
    }

    /// `null_open_zone`.
    fn open_zone(&mut self, no: u32) -> Result<(), ZoneError> {
        match self.zones[no as usize].cond {
            ZoneCond::ExpOpen => return Ok(()),
            ZoneCond::Empty | ZoneCond::Closed => self.check_resources(no)?,
            ZoneCond::ImpOpen => {}
            _ => return Err(self.invalid(no)),
        }
        self.leave(no);
        self.zones[no as usize].cond = ZoneCond::ExpOpen;
        self.nr_exp_open += 1;
        Ok(())
    }

    /// `null_close_zone`.
    fn close_zone(&mut self, no: u32) -> Result<(), ZoneError> {
        match self.zones[no as usize].cond {
            ZoneCond::Closed => Ok(()),
            ZoneCond::ImpOpen | ZoneCond::ExpOpen => {
                self.leave(no);
                self.settle_closed(no);
                Ok(())
            }
            _ => Err(self.invalid(no)),
        }
    }

    /// `null_finish_zone`.
    fn finish_zone(&mut self, no: u32) -> Result<(), ZoneError> {
        match self.zones[no as usize].cond {
            ZoneCond::Full => return Ok(()),
            ZoneCond::Empty | ZoneCond::Closed => self.check_resources(no)?,
            ZoneCond::ImpOpen | ZoneCond::ExpOpen => {}
            _ => return Err(self.invalid(no)),
        }
        self.leave(no);
        let z = &mut self.zones[no as usize];
        z.cond = ZoneCond::Full;
        z.wp = z.start + z.len;
        Ok(())
    }

    /// Check the table's own consistency: counts match conditions, write
    /// pointers within their zones, limits respected. For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let count = |c: ZoneCond| self.zones.iter().filter(|z| z.cond == c).count() as u32;
        let (imp, exp, closed) = (
            count(ZoneCond::ImpOpen),
            count(ZoneCond::ExpOpen),
            count(ZoneCond::Closed),
        );
        if (imp, exp, closed) != (self.nr_imp_open, self.nr_exp_open, self.nr_closed) {
            return Err(format!(
                "counts {:?} != conditions {:?}",
                (self.nr_imp_open, self.nr_exp_open, self.nr_closed),
                (imp, exp, closed)
            ));
        }
        if self.geo.max_open != 0 && imp + exp > self.geo.max_open {
            return Err(format!("{} open zones > {}", imp + exp, self.geo.max_open));
        }
        if self.geo.max_active != 0 && imp + exp + closed > self.geo.max_active {
            return Err(format!(
                "{} active zones > {}",
                imp + exp + closed,
                self.geo.max_active
            ));
        }
        for (i, z) in self.zones.iter().enumerate() {
            let ok = match z.cond {
                ZoneCond::NotWp => z.ztype == ZoneType::Conventional,
                ZoneCond::Empty => z.wp == z.start,
                ZoneCond::Full => z.wp >= z.start + z.capacity,
                ZoneCond::Closed => z.wp > z.start && z.wp < z.start + z.capacity,
                ZoneCond::ImpOpen | ZoneCond::ExpOpen => z.wp < z.start + z.capacity,
                ZoneCond::ReadOnly | ZoneCond::Offline => true,
            };
            if !ok || z.wp > z.start + z.len {
                return Err(format!("zone {i} inconsistent: {z:?}"));
            }
        }
        Ok(())
    }
}

/// How long a device takes to refuse a zoned write it cannot take: the
/// command's round trip without media work. Unverified (no published figure).
const REJECT_NS: u64 = 10_000;

/// A zoned device: a media model behind a [`ZoneTable`]. Writes and appends
/// are checked against the table when the device accepts them; one the table
/// refuses never reaches the media and completes after [`REJECT_NS`] with its
/// [`ZoneError`] ([`Device::take_error`]). An append is written at the zone's
/// write pointer. Zone commands cost what the media model charges for a
/// command and change the table when accepted (a device that refused the
/// command leaves it as it was); a refused zone command completes with its
/// error once the media model is done with it.
pub struct ZonedDevice {
    inner: Box<dyn Device>,
    table: ZoneTable,
    /// Requests failed, with their errors, until [`Device::take_error`].
    errors: BTreeMap<RqId, ZoneError>,
    /// Rejected writes: (completion time, id), in time order.
    rejected: Vec<(Ns, RqId)>,
}

impl ZonedDevice {
    /// `inner` (the media) zoned as `geo` says, every zone empty.
    pub fn new(inner: Box<dyn Device>, geo: ZoneGeometry) -> ZonedDevice {
        let table = ZoneTable::new(geo, inner.info().capacity_sectors);
        ZonedDevice {
            inner,
            table,
            errors: BTreeMap::new(),
            rejected: Vec::new(),
        }
    }

    /// The zone table.
    pub fn table(&self) -> &ZoneTable {
        &self.table
    }

    fn reject(&mut self, now: Ns, id: RqId, e: ZoneError) -> QueueRqStatus {
        self.errors.insert(id, e);
        self.rejected.push((now.add(REJECT_NS), id));
        QueueRqStatus::Ok
    }

    fn write(&mut self, now: Ns, id: RqId, rq: &Request, last: bool) -> QueueRqStatus {
        let sector = rq.sector.0;
        let nr = u64::from(rq.nr_sectors);
        if let Err(e) = self.table.check_range(sector, nr.max(1)) {
            return self.reject(now, id, e);
        }
        let undo = self.table.begin(self.table.zone_no(sector));
        let res = if rq.op == Op::ZoneAppend {
            self.table.append(sector, nr)
        } else {
            self.table.write(sector, nr)
        };
        let at = match res {
            Ok(at) => at,
            Err(e) => return self.reject(now, id, e),
        };
        let st = if at == sector {
            self.inner.queue_rq(now, id, rq, last)
        } else {
            let mut moved = rq.clone();
            moved.sector = blk::Sector(at);
            self.inner.queue_rq(now, id, &moved, last)
        };
        if st != QueueRqStatus::Ok {
            self.table.undo(undo);
        }
        st
    }

    fn command(&mut self, now: Ns, id: RqId, rq: &Request, last: bool) -> QueueRqStatus {
        let cmd = match rq.op {
            Op::ZoneReset => ZoneCommand::Reset,
            Op::ZoneResetAll => ZoneCommand::ResetAll,
            Op::ZoneOpen => ZoneCommand::Open,
            Op::ZoneClose => ZoneCommand::Close,
            _ => ZoneCommand::Finish,
        };
        let st = self.inner.queue_rq(now, id, rq, last);
        if st == QueueRqStatus::Ok {
            if let Err(e) = self.table.command(cmd, rq.sector.0) {
                self.errors.insert(id, e);
            }
        }
        st
    }
}

impl Driver for ZonedDevice {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, last: bool) -> QueueRqStatus {
        match rq.op {
            Op::Write | Op::ZoneAppend => self.write(now, id, rq, last),
            op if op.is_zone_mgmt() => self.command(now, id, rq, last),
            _ => self.inner.queue_rq(now, id, rq, last),
        }
    }
    fn commit_rqs(&mut self, now: Ns) {
        self.inner.commit_rqs(now);
    }
}

impl Device for ZonedDevice {
    fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }
    fn next_event(&self) -> Option<Ns> {
        let r = self.rejected.first().map(|r| r.0);
        [self.inner.next_event(), r].into_iter().flatten().min()
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.inner.advance(now, done);
        let due = self.rejected.partition_point(|r| r.0 <= now);
        done.extend(self.rejected.drain(..due).map(|r| r.1));
    }
    fn take_error(&mut self, id: RqId) -> Option<ZoneError> {
        self.errors.remove(&id)
    }
    fn zone_geometry(&self) -> Option<ZoneGeometry> {
        Some(*self.table.geometry())
    }
    fn report_zones(&self) -> Vec<blk::zoned::BlkZone> {
        use blk::zoned::ZoneCond as B;
        self.table
            .report()
            .iter()
            .map(|z| blk::zoned::BlkZone {
                start: z.start,
                len: z.len,
                capacity: z.capacity,
                wp: z.wp,
                conventional: z.ztype == ZoneType::Conventional,
                cond: match z.cond {
                    ZoneCond::NotWp => B::NotWp,
                    ZoneCond::Empty => B::Empty,
                    ZoneCond::ImpOpen => B::ImpOpen,
                    ZoneCond::ExpOpen => B::ExpOpen,
                    ZoneCond::Closed => B::Closed,
                    ZoneCond::ReadOnly => B::ReadOnly,
                    ZoneCond::Full => B::Full,
                    ZoneCond::Offline => B::Offline,
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZS: u64 = 8; // sectors per zone in the small test table

    fn table(conv: u32, open: u32, active: u32, cap: u64) -> ZoneTable {
        ZoneTable::new(
            ZoneGeometry {
                zone_sectors: ZS,
                zone_capacity: cap,
                nr_conv_zones: conv,
                max_open: open,
                max_active: active,
                protocol: ZoneProtocol::Zns,
            },
            8 * ZS,
        )
    }

    fn conds(t: &ZoneTable) -> Vec<&'static str> {
        t.report().iter().map(|z| z.cond.name()).collect()
    }

    #[test]
    fn sequential_writes_advance_and_fill() {
        let mut t = table(1, 0, 0, ZS);
        assert_eq!(t.write(ZS, 4), Ok(ZS));
        assert_eq!(t.zone(1).cond, ZoneCond::ImpOpen);
        assert_eq!(t.zone(1).wp, ZS + 4);
        assert_eq!(t.write(ZS + 4, 4), Ok(ZS + 4));
        assert_eq!(t.zone(1).cond, ZoneCond::Full);
        assert_eq!(t.nr_open(), 0);
        assert_eq!(t.write(ZS + 8 - 1, 1), Err(ZoneError::ZoneFull { zone: 1 }));
        t.check_invariants().unwrap();
    }

    #[test]
    fn write_not_at_wp_is_refused_and_changes_nothing() {
        let mut t = table(1, 0, 0, ZS);
        t.write(2 * ZS, 2).unwrap();
        let e = t.write(2 * ZS + 3, 1).unwrap_err();
        assert_eq!(
            e,
            ZoneError::UnalignedWrite {
                zone: 2,
                sector: 2 * ZS + 3,
                wp: 2 * ZS + 2
            }
        );
        let c = e.codes();
        assert_eq!(
            (c.zbc_sense, c.nvme_status, c.errno),
            ((0x5, 0x21, 0x04), 0x1bc, -5)
        );
        assert_eq!(t.zone(2).wp, 2 * ZS + 2);
    }

    #[test]
    fn writes_across_a_zone_boundary_or_capacity_are_refused() {
        // Capacity 6 of 8: sectors 6 and 7 of each sequential zone are not
        // writable.
        let mut t = table(1, 0, 0, 6);
        assert_eq!(
            t.write(ZS, 7),
            Err(ZoneError::Boundary {
                zone: 1,
                sector: ZS,
                end: ZS + 7
            })
        );
        assert_eq!(t.zone(1).cond, ZoneCond::Empty);
        assert_eq!(t.write(ZS, 6), Ok(ZS));
        assert_eq!(t.zone(1).cond, ZoneCond::Full);
        // Conventional zones too stop at their end.
        assert!(matches!(
            t.write(ZS - 2, 4),
            Err(ZoneError::Boundary { .. })
        ));
        assert_eq!(t.write(3, 2), Ok(3));
        assert_eq!(t.write(3, 2), Ok(3), "conventional zones take rewrites");
        assert!(matches!(
            t.write(8 * ZS - 1, 2),
            Err(ZoneError::OutOfRange { .. })
        ));
    }

    #[test]
    fn implicit_open_evicts_round_robin_explicit_does_not() {
        // Zones 1..8 sequential, at most 2 open.
        let mut t = table(1, 2, 0, ZS);
        t.write(ZS, 1).unwrap();
        t.write(2 * ZS, 1).unwrap();
        // Third implicit open: zone 1 (first from imp_close_next = 1) closes.
        t.write(3 * ZS, 1).unwrap();
        assert_eq!(conds(&t)[..4], ["NOT_WP", "CLOSED", "IMP_OPEN", "IMP_OPEN"]);
        // Next eviction continues after zone 1: zone 2.
        t.write(4 * ZS, 1).unwrap();
        assert_eq!(
            conds(&t)[1..5],
            ["CLOSED", "CLOSED", "IMP_OPEN", "IMP_OPEN"]
        );
        // Two explicit opens take both slots (each evicting an implicit one) ...
        t.command(ZoneCommand::Open, 5 * ZS).unwrap();
        t.command(ZoneCommand::Open, 6 * ZS).unwrap();
        assert_eq!(t.nr_exp_open, 2);
        assert_eq!(t.nr_imp_open, 0);
        // ... and are never evicted: an implicit open now fails.
        assert_eq!(
            t.write(7 * ZS, 1),
            Err(ZoneError::TooManyOpen { zone: 7, limit: 2 })
        );
        assert_eq!(t.zone(7).cond, ZoneCond::Empty);
        let c = t.write(7 * ZS, 1).unwrap_err().codes();
        assert_eq!(
            (c.nvme_status, c.blk_status, c.errno),
            (0x1be, "BLK_STS_ZONE_OPEN_RESOURCE", -109)
        );
        // Writing a closed zone reopens it only with room: still none.
        assert!(matches!(
            t.write(ZS + 1, 1),
            Err(ZoneError::TooManyOpen { .. })
        ));
        t.command(ZoneCommand::Close, 5 * ZS).unwrap();
        // Zone 5 was empty (explicitly opened, never written): close empties it.
        assert_eq!(t.zone(5).cond, ZoneCond::Empty);
        t.write(ZS + 1, 1).unwrap();
        assert_eq!(t.zone(1).cond, ZoneCond::ImpOpen);
        t.check_invariants().unwrap();
    }

    /// Undo puts back the written zone, the zone closed to make room and the
    /// counts, including where the next eviction search starts.
    #[test]
    fn undo_restores_an_eviction() {
        let mut t = table(1, 2, 0, ZS);
        t.write(ZS, 1).unwrap();
        t.write(2 * ZS, 1).unwrap();
        let before: Vec<Zone> = t.report().to_vec();
        let u = t.begin(3);
        t.write(3 * ZS, 1).unwrap();
        assert_eq!(t.zone(1).cond, ZoneCond::Closed);
        t.undo(u);
        assert_eq!(t.report(), &before[..]);
        assert_eq!((t.nr_imp_open, t.nr_closed, t.imp_close_next), (2, 0, 1));
        t.check_invariants().unwrap();
    }

    #[test]
    fn active_limit_has_no_eviction() {
        // At most 2 open and 3 active.
        let mut t = table(0, 2, 3, ZS);
        for z in 0..3 {
            t.write(z * ZS, 1).unwrap();
        }
        // Zone 0 was closed to open zone 2: 2 open + 1 closed = 3 active.
        assert_eq!(t.nr_active(), 3);
        assert_eq!(
            t.write(3 * ZS, 1),
            Err(ZoneError::TooManyActive { zone: 3, limit: 3 })
        );
        // Finishing the closed zone needs an open resource first (null_blk's
        // `null_finish_zone`), and none can be made: closing an implicitly open
        // zone is refused at the active limit.
        assert_eq!(
            t.command(ZoneCommand::Finish, 0),
            Err(ZoneError::TooManyOpen { zone: 0, limit: 2 })
        );
        // Finishing an open one frees an open and an active resource.
        t.command(ZoneCommand::Finish, 2 * ZS).unwrap();
        assert_eq!(t.zone(2).cond, ZoneCond::Full);
        assert_eq!(t.zone(2).wp, 3 * ZS);
        t.write(3 * ZS, 1).unwrap();
        t.check_invariants().unwrap();
    }

    #[test]
    fn zone_commands() {
        let mut t = table(2, 0, 0, ZS);
        assert_eq!(
            t.command(ZoneCommand::Reset, 3),
            Err(ZoneError::Conventional { zone: 0 })
        );
        let c = ZoneError::Conventional { zone: 0 }.codes();
        assert_eq!(c.zbc_sense, (0x5, 0x24, 0x00));
        t.write(2 * ZS, 5).unwrap();
        assert!(matches!(
            t.command(ZoneCommand::Close, 3 * ZS),
            Err(ZoneError::InvalidTransition {
                zone: 3,
                from: "EMPTY"
            })
        ));
        t.command(ZoneCommand::Close, 2 * ZS).unwrap();
        assert_eq!(t.zone(2).cond, ZoneCond::Closed);
        t.command(ZoneCommand::Reset, 2 * ZS + 7).unwrap();
        assert_eq!((t.zone(2).cond, t.zone(2).wp), (ZoneCond::Empty, 2 * ZS));
        t.command(ZoneCommand::Finish, 4 * ZS).unwrap();
        assert!(matches!(
            t.command(ZoneCommand::Open, 4 * ZS),
            Err(ZoneError::InvalidTransition { from: "FULL", .. })
        ));
        t.write(5 * ZS, 1).unwrap();
        t.command(ZoneCommand::ResetAll, 0).unwrap();
        assert!(t.report()[2..]
            .iter()
            .all(|z| z.cond == ZoneCond::Empty && z.wp == z.start));
        assert_eq!(t.zone(0).cond, ZoneCond::NotWp);
        t.check_invariants().unwrap();
    }

    #[test]
    fn append_returns_the_written_sector() {
        let mut t = table(1, 0, 0, ZS);
        assert_eq!(t.append(ZS, 3), Ok(ZS));
        assert_eq!(t.append(ZS, 2), Ok(ZS + 3));
        assert_eq!(t.zone(1).wp, ZS + 5);
        assert!(matches!(t.append(ZS, 4), Err(ZoneError::Boundary { .. })));
        assert_eq!(t.append(0, 1), Err(ZoneError::Conventional { zone: 0 }));
        assert!(matches!(
            t.append(ZS + 1, 1),
            Err(ZoneError::InvalidTransition { .. })
        ));
    }

    #[test]
    fn failed_zones_refuse_writes() {
        let mut t = table(1, 0, 0, ZS);
        t.write(ZS, 1).unwrap();
        t.set_failed(1, false);
        assert_eq!(t.write(ZS + 1, 1), Err(ZoneError::ReadOnly { zone: 1 }));
        t.set_failed(2, true);
        assert_eq!(
            t.command(ZoneCommand::Reset, 2 * ZS),
            Err(ZoneError::Offline { zone: 2 })
        );
        assert_eq!(t.nr_open(), 0);
        t.check_invariants().unwrap();
    }

    fn geo(text: &str, protocol: ZoneProtocol) -> Result<Option<ZoneGeometry>, String> {
        let mut d = Doc::parse("z.toml", text).map_err(|e| e.to_string())?;
        d.str("name").map_err(|e| e.to_string())?;
        // 100 GiB.
        let r = ZoneGeometry::from_doc(&mut d, 100 << 21, protocol).map_err(|e| e.to_string());
        if r.is_ok() {
            d.finish().map_err(|e| e.to_string())?;
        }
        r
    }

    const GOOD: &str = "name = \"x\"\n[zoned]\nzone_size_mib = 256\nzone_capacity_mib = 256\nnr_conv_zones = 4\nmax_open_zones = 128\nmax_active_zones = 0\n";

    #[test]
    fn geometry_from_a_profile_table() {
        let g = geo(GOOD, ZoneProtocol::Zbc).unwrap().unwrap();
        assert_eq!(g.zone_sectors, 256 * 2048);
        assert_eq!((g.nr_conv_zones, g.max_open, g.max_active), (4, 128, 0));
        assert_eq!(geo("name = \"x\"\n", ZoneProtocol::Zbc), Ok(None));
        let t = ZoneTable::new(g, 100 << 21);
        assert_eq!(t.nr_zones(), 400);
        assert_eq!(t.zone(4).cond, ZoneCond::Empty);
        assert_eq!(t.zone(3).ztype, ZoneType::Conventional);
    }

    #[test]
    fn geometry_errors_name_field_and_line() {
        let bad = |text: String, p| geo(&text, p).unwrap_err();
        assert_eq!(
            bad(GOOD.replace("= 256\nzone_cap", "= 200\nzone_cap"), ZoneProtocol::Zbc),
            "z.toml:3: field 'zoned.zone_size_mib': 200 MiB is not a power of two (the kernel refuses other zone sizes)"
        );
        assert!(bad(
            GOOD.replace("capacity_mib = 256", "capacity_mib = 100"),
            ZoneProtocol::Zbc
        )
        .starts_with("z.toml:4: field 'zoned.zone_capacity_mib': 100 must equal zone_size_mib"));
        assert!(bad(
            GOOD.replace("capacity_mib = 256", "capacity_mib = 300"),
            ZoneProtocol::Zns
        )
        .starts_with(
            "z.toml:4: field 'zoned.zone_capacity_mib': 300 is out of range: expected 1 to 256"
        ));
        assert!(bad(
            GOOD.replace("conv_zones = 4", "conv_zones = 400"),
            ZoneProtocol::Zbc
        )
        .starts_with(
            "z.toml:5: field 'zoned.nr_conv_zones': 400 is out of range: expected 0 to 399"
        ));
        assert!(bad(
            GOOD.replace("active_zones = 0", "active_zones = 14"),
            ZoneProtocol::Zbc
        )
        .contains("z.toml:7: field 'zoned.max_active_zones': 14 must be 0"));
        assert!(bad(
            GOOD.replace("active_zones = 0", "active_zones = 14"),
            ZoneProtocol::Zns
        )
        .contains("z.toml:7: field 'zoned.max_active_zones': 14 is below max_open_zones = 128"));
        let e = bad(GOOD.replace("nr_conv_zones = 4\n", ""), ZoneProtocol::Zbc);
        assert_eq!(
            e,
            "z.toml:3: field 'zoned.nr_conv_zones': missing (every parameter must be given)"
        );
        let e = bad(format!("{GOOD}speed = 2\n"), ZoneProtocol::Zbc);
        assert!(
            e.contains("z.toml:8: field 'zoned.speed': unknown field"),
            "{e}"
        );
        let e = bad(
            GOOD.replace("max_open_zones = 128", "max_open_zones = \"many\""),
            ZoneProtocol::Zbc,
        );
        assert!(
            e.contains("z.toml:6: field 'zoned.max_open_zones': expected an integer"),
            "{e}"
        );
        let e = bad(format!("{GOOD}[zoned.inner]\na = 1\n"), ZoneProtocol::Zbc);
        assert!(
            e.contains("z.toml:8: field 'zoned.inner': syntax error"),
            "{e}"
        );
    }

    /// A deterministic pseudo-random mix of writes (some at the write pointer,
    /// some not) and commands: the table stays consistent, and a zone's write
    /// pointer never goes back except by a reset.
    #[test]
    fn random_mix_keeps_invariants_and_wp_monotone() {
        let mut t = table(1, 3, 5, 6);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut written, mut resets, mut evictions) = (0, 0, 0);
        for _ in 0..20_000 {
            let r = next();
            let closed_before = t.nr_closed;
            let zone = 1 + r % 7;
            let before = t.zone(zone as u32).wp;
            let mut reset = false;
            match (r >> 8) % 10 {
                0 => {
                    reset = t.command(ZoneCommand::Reset, zone * ZS).is_ok();
                }
                1 => {
                    let _ = t.command(ZoneCommand::Open, zone * ZS);
                }
                2 => {
                    let _ = t.command(ZoneCommand::Close, zone * ZS);
                }
                3 => {
                    let _ = t.command(ZoneCommand::Finish, zone * ZS);
                }
                4 => {
                    let _ = t.append(zone * ZS, 1 + (r >> 16) % 3);
                }
                5 => {
                    let off = (r >> 16) % ZS;
                    let _ = t.write(zone * ZS + off, 1 + (r >> 24) % 3);
                }
                _ => {
                    let wp = t.zone(zone as u32).wp;
                    written += u32::from(t.write(wp, 1 + (r >> 16) % 3).is_ok());
                }
            }
            resets += u32::from(reset);
            evictions += u32::from(t.nr_closed > closed_before);
            let after = t.zone(zone as u32).wp;
            assert!(
                reset || after >= before,
                "wp of zone {zone} went {before} -> {after}"
            );
            t.check_invariants().unwrap();
        }
        // The mix reached the interesting states, not only errors.
        assert!(
            written > 1000 && resets > 1000 && evictions > 100,
            "{written} {resets} {evictions}"
        );
    }
}
