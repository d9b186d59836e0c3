//! A table-driven SCSI disk (`model = "hdd-table"`): the drive described the way
//! DiskSim's extracted parameters describe it, and simulated one command at a time.
//!
//! * **Layout**: explicit zones (first/last cylinder, sectors per track, offset of the
//!   first block, empty space at the zone front, track and cylinder skew in sectors),
//!   spare sectors by DiskSim's sparing scheme (per track, per cylinder, per range of
//!   cylinders, spare tracks per zone, at the zone end) and slipped sectors or tracks.
//!   A sector's angle is `first + track_skew·head_switches + cyl_skew·cylinders +
//!   sector` (in sectors of its zone), so sequential transfers lose only the skews.
//! * **Mechanics**: the measured seek table, interpolated linearly (or the HPL
//!   formula `a + b·√d` / `c + e·d` with the ten measured short seeks), head switch
//!   time, write settle added to seeks of writes, a platter turning at `rpm` from
//!   angle 0 at time 0. Media access is computed sector by sector: each sector is
//!   read (written) when it passes under the head after the head has arrived (and,
//!   for writes, after its data has crossed the bus).
//! * **Controller**: command overheads by read/write × cache hit/miss × previous
//!   command, data preparation, completion, reselection, read and write disconnect
//!   overheads, the "extra write disconnect" of the HP drives (a non-sequential write
//!   after a write disconnects after its command and is reselected for its data; the
//!   media write waits for min(n, 10) blocks, 15 from 45 on, in the buffer), the
//!   minimum delay before a write reaches the media, and a bus moving one sector per
//!   `bus_*_ms_per_sector`; reads either stream over the bus as sectors come off the
//!   media, or (hold bus) wait for the high water mark and then send the whole request.
//! * **Cache**: `cache_segments` segments of `segment_sectors`; after a read the drive
//!   keeps reading ahead (to the end of the track or cylinder holding the first block
//!   after the request, the segment end or the next track end, capped by the maximum
//!   read-ahead) until another command needs the head; a read wholly in a segment is
//!   a hit; a read whose first sector is cached or about to be read continues the
//!   read-ahead stream without repositioning. Written
//!   data stays readable. With `fast_write` the drive reports a write complete once
//!   its data is in the buffer and writes it to the media in the background; the next
//!   command needing the head waits for that.
//!
//! Requests are served in arrival order (DiskSim's validation drives have a queue of
//! one). Time inside the model is in milliseconds (`f64`), DiskSim's unit.

use crate::profile::{fmt_num, row, Doc, ProfileError};
use crate::{Device, DeviceInfo, ParamInfo};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Op, Request, RqId};
use std::collections::VecDeque;

pub use super::layout::Pos;
use super::layout::{Layout, ZoneSpec};

/// One zone of the layout.
#[derive(Clone, Debug, PartialEq)]
pub struct TableZone {
    /// First cylinder.
    pub first_cyl: u32,
    /// Last cylinder (inclusive).
    pub last_cyl: u32,
    /// Sectors per track.
    pub spt: u32,
    /// Angle of the zone's first sector, in sectors.
    pub first_offset: f64,
    /// Empty space at the zone front, in data slots (blocks; spares excluded).
    pub front: u64,
    /// Skew per head switch, sectors.
    pub track_skew: f64,
    /// Skew per cylinder, sectors.
    pub cyl_skew: f64,
    /// Spares (per track, cylinder, range or zone, or spare tracks: see `sparing`).
    pub spares: u32,
    /// Slipped sectors (or tracks, with track sparing), zone-relative physical index.
    pub slips: Vec<u64>,
    /// Remapped defects (defective, replacement), zone-relative physical sectors
    /// (tracks, with track sparing).
    pub defects: Vec<(u64, u64)>,
}

/// Seek time model.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekModel {
    /// Measured (distance in cylinders, time in ms), interpolated linearly.
    Table(Vec<(u32, f64)>),
    /// HPL: `a + b·√d` below `boundary`, `c + e·d` from it; `first_ten` override d = 1..10.
    Hpl {
        /// Boundary distance.
        boundary: u32,
        /// Short-seek constant, ms.
        a: f64,
        /// Short-seek √d factor.
        b: f64,
        /// Long-seek constant, ms.
        c: f64,
        /// Long-seek per-cylinder factor.
        e: f64,
        /// Measured seeks for d = 1..10 (may be empty).
        first_ten: Vec<f64>,
    },
}

impl SeekModel {
    /// Seek time for `d` cylinders, ms.
    pub fn eval(&self, d: u32) -> f64 {
        if d == 0 {
            return 0.0;
        }
        match self {
            SeekModel::Table(t) => {
                let i = t.partition_point(|(x, _)| *x < d);
                if i < t.len() && t[i].0 == d {
                    return t[i].1;
                }
                let (a, b) = if i == 0 {
                    (t[0], t[1.min(t.len() - 1)])
                } else if i >= t.len() {
                    (t[t.len().saturating_sub(2)], t[t.len() - 1])
                } else {
                    (t[i - 1], t[i])
                };
                if a.0 == b.0 {
                    return a.1;
                }
                let f = (d as f64 - a.0 as f64) / (b.0 as f64 - a.0 as f64);
                (a.1 + f * (b.1 - a.1)).max(0.0)
            }
            SeekModel::Hpl {
                boundary,
                a,
                b,
                c,
                e,
                first_ten,
            } => {
                if (d as usize) <= first_ten.len() {
                    first_ten[d as usize - 1]
                } else if d < *boundary {
                    a + b * (d as f64).sqrt()
                } else {
                    c + e * d as f64
                }
            }
        }
    }
}

/// Parameters of a [`TableDisk`]; the names follow DiskSim's.
#[derive(Clone, Debug, PartialEq)]
pub struct TableParams {
    /// Capacity, 512-byte blocks.
    pub capacity_sectors: u64,
    /// Recording surfaces.
    pub heads: u32,
    /// Cylinders.
    pub cylinders: u32,
    /// Spindle speed.
    pub rpm: f64,
    /// DiskSim sparing scheme (0 none, 1 spare tracks per zone, 2/4/5/6 sectors per
    /// cylinder, 3 sectors per track, 7 at zone end, 8 per range, 9/10 per zone).
    pub sparing: u32,
    /// DiskSim LBN-to-PBN mapping scheme (0 normal, 1 serpentine from each zone's
    /// first cylinder, 2 serpentine on odd cylinders of the disk).
    pub mapping: u32,
    /// Cylinders per range (scheme 8).
    pub range_size: u32,
    /// Zones, outermost first.
    pub zones: Vec<TableZone>,
    /// Seek model.
    pub seek: SeekModel,
    /// Head switch, ms.
    pub head_switch_ms: f64,
    /// Added to the seek of a write, ms (may be negative).
    pub write_settle_ms: f64,
    /// Per-request overhead, ms.
    pub per_request_ms: f64,
    /// Scale of all overheads.
    pub overhead_scale: f64,
    /// Read hit after read / after write, ms.
    pub read_hit_ms: [f64; 2],
    /// Read miss after read / after write, ms.
    pub read_miss_ms: [f64; 2],
    /// Write hit (fast write) after read / after write, ms.
    pub write_hit_ms: [f64; 2],
    /// Write miss after read / after write, ms.
    pub write_miss_ms: [f64; 2],
    /// Read completion overhead, ms.
    pub read_complete_ms: f64,
    /// Write completion overhead, ms.
    pub write_complete_ms: f64,
    /// Data preparation overhead, ms.
    pub data_prep_ms: f64,
    /// First / other reselection overhead, ms.
    pub reselect_ms: [f64; 2],
    /// Extra write disconnect (HP): a write disconnects before its data moves.
    pub extra_write_disconnect: bool,
    /// Extra-disconnect command overhead, ms.
    pub extradisc_command_ms: f64,
    /// Extra-disconnect first disconnect overhead, ms.
    pub extradisc_disconnect_ms: f64,
    /// Extra-disconnect delay before reconnecting, ms.
    pub extradisc_inter_ms: f64,
    /// Extra-disconnect delay before the seek starts, ms.
    pub extradisc_seek_delta_ms: f64,
    /// Extra-disconnect second disconnect (after the data moved), ms.
    pub extradisc_second_disconnect_ms: f64,
    /// Disconnect after a write's data moved (write-through), ms.
    pub write_disconnect_ms: f64,
    /// Disconnect after a read miss's command, after a read / after a write, ms.
    pub read_disconnect_ms: [f64; 2],
    /// Minimum delay before a non-sequential write reaches the media, ms.
    pub min_seek_delay_ms: f64,
    /// Bus time per sector for reads, ms.
    pub bus_read_ms: f64,
    /// Bus time per sector for writes, ms.
    pub bus_write_ms: f64,
    /// Hold the bus for the whole read transfer (wait for the high water mark).
    pub hold_bus_read: bool,
    /// High (read) water mark, fraction.
    pub read_water: f64,
    /// Water marks are fractions of the request (else of the segment).
    pub water_by_request: bool,
    /// Cache segments.
    pub segments: u32,
    /// Segment size, sectors.
    pub segment_sectors: u32,
    /// Cache enabled for reads.
    pub read_cache: bool,
    /// One segment is reserved for write data.
    pub separate_write_segment: bool,
    /// Segments that may hold write data at once (DiskSim's "Maximum number of
    /// write segments"): a fast write waits for a free one, not for the media.
    pub write_segments: u32,
    /// Blocks of the request's first track that pass under the head before its
    /// first block are read into the segment too (DiskSim's "Read any free
    /// blocks").
    pub read_any_free_blocks: bool,
    /// Reads may hit data a write left in the buffer (DiskSim's "Allow read hits on
    /// write data"); when false, written data is in the buffer only until it is on
    /// the media and never serves a read.
    pub read_hits_on_write_data: bool,
    /// Read-ahead: 0 none, 1 track end, 2 cylinder end, 3 segment full, 4 next track end.
    pub read_ahead_mode: u32,
    /// Maximum read-ahead, sectors.
    pub max_read_ahead: u32,
    /// Read-ahead may overwrite the request's own data in the segment.
    pub read_ahead_over_requested: bool,
    /// Start read-ahead again after a full hit.
    pub read_ahead_on_idle_hit: bool,
    /// Fast write level (0 off, 1/2 write-back for writes).
    pub fast_write: u32,
    /// Zero-latency reads: a read within one track takes its sectors in the order
    /// they pass under the head.
    pub immediate_read: bool,
    /// Commands the drive queues.
    pub queue_depth: u32,
}

fn fmt_list(v: &[f64]) -> String {
    v.iter().map(|x| fmt_num(*x)).collect::<Vec<_>>().join(" ")
}

/// A zone's slip or defect list: whole non-negative numbers (absent: empty).
fn zone_list(d: &mut Doc, key: &str) -> Result<Vec<u64>, ProfileError> {
    let Some(s) = d.opt_str(key)? else {
        return Ok(Vec::new());
    };
    parse_nums(d, key, &s)?
        .into_iter()
        .map(|x| {
            if x < 0.0 || x.fract() != 0.0 || x > (1u64 << 48) as f64 {
                Err(d.err(key, format!("'{x}' is not a whole non-negative number")))
            } else {
                Ok(x as u64)
            }
        })
        .collect()
}

fn parse_nums(d: &Doc, key: &str, s: &str) -> Result<Vec<f64>, ProfileError> {
    s.split_whitespace()
        .map(|w| {
            w.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| d.err(key, format!("'{w}' is not a number")))
        })
        .collect()
}

impl TableParams {
    /// Read and validate the parameters from a profile document.
    pub fn from_doc(d: &mut Doc) -> Result<TableParams, ProfileError> {
        let capacity_sectors = d.int("capacity_sectors", 1, 1 << 48)?;
        let heads = d.int("heads", 1, 1024)? as u32;
        let cylinders = d.int("cylinders", 1, 10_000_000)? as u32;
        let rpm = d.pos("rpm")?;
        let sparing = d.int("sparing_scheme", 0, 10)? as u32;
        let range_size = d.int_or("sparing_range_cylinders", 1, 1_000_000, 1)? as u32;
        let mapping = d.int_or("mapping_scheme", 0, 2, 0)? as u32;
        let mut zones = Vec::new();
        for i in 0.. {
            let key = format!("zone{i}");
            let Some(z) = d.opt_str(&key)? else { break };
            let nums = parse_nums(d, &key, &z)?;
            if nums.len() != 8 {
                return Err(d.err(&key, "expected 8 numbers: first_cyl last_cyl sectors_per_track first_offset front_empty track_skew cyl_skew spares"));
            }
            let slips_key = format!("zone{i}_slips");
            let slips = zone_list(d, &slips_key)?;
            let defects_key = format!("zone{i}_defects");
            let defect_nums = zone_list(d, &defects_key)?;
            if defect_nums.len() % 2 != 0 {
                return Err(d.err(
                    &defects_key,
                    "expected pairs: defective replacement defective replacement ...",
                ));
            }
            let defects: Vec<(u64, u64)> = defect_nums.chunks(2).map(|c| (c[0], c[1])).collect();
            let zone = TableZone {
                first_cyl: nums[0] as u32,
                last_cyl: nums[1] as u32,
                spt: nums[2] as u32,
                first_offset: nums[3],
                front: nums[4] as u64,
                track_skew: nums[5],
                cyl_skew: nums[6],
                spares: nums[7] as u32,
                slips,
                defects,
            };
            if zone.spt == 0 || zone.last_cyl < zone.first_cyl || zone.last_cyl >= cylinders {
                return Err(d.err(
                    &key,
                    "needs sectors per track > 0 and first_cyl <= last_cyl < cylinders",
                ));
            }
            // Counts are whole, non-negative and within the zone: the layout
            // arithmetic multiplies them (a slipped track by the track size).
            let counts = [nums[0], nums[1], nums[2], nums[4], nums[7]];
            if counts
                .iter()
                .any(|x| !x.is_finite() || *x < 0.0 || x.fract() != 0.0)
                || zone.spt > 1_000_000
            {
                return Err(d.err(
                    &key,
                    "cylinders, sectors per track (at most 1000000), front_empty and spares must be whole non-negative numbers",
                ));
            }
            let zone_blocks =
                (zone.last_cyl - zone.first_cyl + 1) as u64 * heads as u64 * zone.spt as u64;
            if zone.front > zone_blocks {
                return Err(d.err(
                    &key,
                    format!("front_empty is larger than the zone ({zone_blocks} blocks)"),
                ));
            }
            if let Some(s) = zone.slips.iter().find(|&&s| s > zone_blocks) {
                return Err(d.err(
                    &slips_key,
                    format!("slip {s} is beyond the zone ({zone_blocks} blocks)"),
                ));
            }
            if let Some(x) = defect_nums.iter().find(|&&x| x >= zone_blocks) {
                return Err(d.err(
                    &defects_key,
                    format!("location {x} is beyond the zone ({zone_blocks} blocks)"),
                ));
            }
            zones.push(zone);
        }
        if zones.is_empty() {
            return Err(d.err("zone0", "missing (at least one zone is required)"));
        }
        let seek = match d.opt_str("seek_table_ms")? {
            Some(s) => {
                let mut t = Vec::new();
                for w in s.split_whitespace() {
                    let (a, b) = w.split_once(':').ok_or_else(|| {
                        d.err("seek_table_ms", format!("'{w}' is not DISTANCE:MS"))
                    })?;
                    let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<f64>()) else {
                        return Err(d.err("seek_table_ms", format!("'{w}' is not DISTANCE:MS")));
                    };
                    if t.last().is_some_and(|(x, _): &(u32, f64)| *x >= a) || a == 0 || b < 0.0 {
                        return Err(d.err(
                            "seek_table_ms",
                            "distances must be positive and increasing, times not negative",
                        ));
                    }
                    t.push((a, b));
                }
                if t.is_empty() {
                    return Err(d.err("seek_table_ms", "empty"));
                }
                SeekModel::Table(t)
            }
            None => {
                let Some(h) = d.opt_str("seek_hpl")? else {
                    return Err(d.err("seek_table_ms", "missing: give seek_table_ms or seek_hpl"));
                };
                let v = parse_nums(d, "seek_hpl", &h)?;
                if v.len() < 5 || v[0] < 1.0 {
                    return Err(d.err("seek_hpl", "expected: boundary a b c e"));
                }
                let first_ten = match d.opt_str("seek_first_ten_ms")? {
                    Some(s) => parse_nums(d, "seek_first_ten_ms", &s)?,
                    None => Vec::new(),
                };
                SeekModel::Hpl {
                    boundary: v[0] as u32,
                    a: v[1],
                    b: v[2],
                    c: v[3],
                    e: v[4],
                    first_ten,
                }
            }
        };
        let pair = |d: &mut Doc, k: &str| -> Result<[f64; 2], ProfileError> {
            Ok([
                d.nonneg(&format!("{k}_after_read_ms"))?,
                d.nonneg(&format!("{k}_after_write_ms"))?,
            ])
        };
        let p = TableParams {
            capacity_sectors,
            heads,
            cylinders,
            rpm,
            sparing,
            mapping,
            range_size,
            zones,
            seek,
            head_switch_ms: d.nonneg("head_switch_ms")?,
            write_settle_ms: d.signed("write_settle_ms")?,
            per_request_ms: d.nonneg("per_request_ms")?,
            overhead_scale: d.nonneg("overhead_scale")?,
            read_hit_ms: pair(d, "read_hit")?,
            read_miss_ms: pair(d, "read_miss")?,
            write_hit_ms: pair(d, "write_hit")?,
            write_miss_ms: pair(d, "write_miss")?,
            read_complete_ms: d.nonneg("read_complete_ms")?,
            write_complete_ms: d.nonneg("write_complete_ms")?,
            data_prep_ms: d.nonneg("data_prep_ms")?,
            reselect_ms: [
                d.nonneg("reselect_first_ms")?,
                d.nonneg("reselect_other_ms")?,
            ],
            extra_write_disconnect: d.bool("extra_write_disconnect")?,
            extradisc_command_ms: d.nonneg("extradisc_command_ms")?,
            extradisc_disconnect_ms: d.nonneg("extradisc_disconnect_ms")?,
            extradisc_inter_ms: d.nonneg("extradisc_inter_disconnect_ms")?,
            extradisc_seek_delta_ms: d.nonneg("extradisc_seek_delta_ms")?,
            extradisc_second_disconnect_ms: d.nonneg("extradisc_second_disconnect_ms")?,
            write_disconnect_ms: d.nonneg("write_disconnect_ms")?,
            read_disconnect_ms: [
                d.nonneg("read_disconnect_after_read_ms")?,
                d.nonneg("read_disconnect_after_write_ms")?,
            ],
            min_seek_delay_ms: d.nonneg("min_seek_delay_ms")?,
            bus_read_ms: d.nonneg("bus_read_ms_per_sector")?,
            bus_write_ms: d.nonneg("bus_write_ms_per_sector")?,
            hold_bus_read: d.bool("hold_bus_read")?,
            read_water: d.nonneg("read_water_mark")?,
            water_by_request: d.bool("water_mark_by_request")?,
            segments: d.int("cache_segments", 1, 4096)? as u32,
            segment_sectors: d.int("segment_sectors", 1, 1 << 24)? as u32,
            read_cache: d.bool("read_cache")?,
            separate_write_segment: d.bool("separate_write_segment")?,
            read_hits_on_write_data: d.bool_or("read_hits_on_write_data", true)?,
            write_segments: d.int_or("write_segments", 1, 4096, 1)? as u32,
            read_any_free_blocks: d.bool_or("read_any_free_blocks", false)?,
            read_ahead_mode: d.int("read_ahead_mode", 0, 4)? as u32,
            max_read_ahead: d.int("max_read_ahead_sectors", 0, 1 << 24)? as u32,
            read_ahead_over_requested: d.bool("read_ahead_over_requested")?,
            read_ahead_on_idle_hit: d.bool("read_ahead_on_idle_hit")?,
            fast_write: d.int("fast_write", 0, 2)? as u32,
            immediate_read: d.bool("immediate_read")?,
            queue_depth: d.int("queue_depth", 1, 32)? as u32,
        };
        if p.read_water > 1.0 {
            return Err(d.err("read_water_mark", "must be a fraction (0 to 1)"));
        }
        let g = Geo::new(&p);
        if g.total < p.capacity_sectors {
            return Err(d.err(
                "capacity_sectors",
                format!("the zones hold only {} sectors", g.total),
            ));
        }
        Ok(p)
    }

    /// The profile document (without name/about/model lines).
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        let mut kv = |k: &str, v: String| {
            s.push_str(&format!("{k} = {v}\n"));
        };
        kv("capacity_sectors", self.capacity_sectors.to_string());
        kv("heads", self.heads.to_string());
        kv("cylinders", self.cylinders.to_string());
        kv("rpm", fmt_num(self.rpm));
        kv("sparing_scheme", self.sparing.to_string());
        kv("sparing_range_cylinders", self.range_size.to_string());
        kv("mapping_scheme", self.mapping.to_string());
        for (i, z) in self.zones.iter().enumerate() {
            kv(
                &format!("zone{i}"),
                format!(
                    "\"{} {} {} {} {} {} {} {}\"",
                    z.first_cyl,
                    z.last_cyl,
                    z.spt,
                    fmt_num(z.first_offset),
                    z.front,
                    fmt_num(z.track_skew),
                    fmt_num(z.cyl_skew),
                    z.spares
                ),
            );
            if !z.slips.is_empty() {
                kv(
                    &format!("zone{i}_slips"),
                    format!(
                        "\"{}\"",
                        z.slips
                            .iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                );
            }
            if !z.defects.is_empty() {
                kv(
                    &format!("zone{i}_defects"),
                    format!(
                        "\"{}\"",
                        z.defects
                            .iter()
                            .map(|(a, b)| format!("{a} {b}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                );
            }
        }
        match &self.seek {
            SeekModel::Table(t) => kv(
                "seek_table_ms",
                format!(
                    "\"{}\"",
                    t.iter()
                        .map(|(a, b)| format!("{a}:{}", fmt_num(*b)))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            ),
            SeekModel::Hpl {
                boundary,
                a,
                b,
                c,
                e,
                first_ten,
            } => {
                kv(
                    "seek_hpl",
                    format!("\"{boundary} {}\"", fmt_list(&[*a, *b, *c, *e])),
                );
                if !first_ten.is_empty() {
                    kv("seek_first_ten_ms", format!("\"{}\"", fmt_list(first_ten)));
                }
            }
        }
        let f = |x: f64| {
            let s = fmt_num(x);
            if s.contains('.') {
                s
            } else {
                format!("{s}.0")
            }
        };
        kv("head_switch_ms", f(self.head_switch_ms));
        kv("write_settle_ms", f(self.write_settle_ms));
        kv("per_request_ms", f(self.per_request_ms));
        kv("overhead_scale", f(self.overhead_scale));
        for (k, v) in [
            ("read_hit", self.read_hit_ms),
            ("read_miss", self.read_miss_ms),
            ("write_hit", self.write_hit_ms),
            ("write_miss", self.write_miss_ms),
        ] {
            kv(&format!("{k}_after_read_ms"), f(v[0]));
            kv(&format!("{k}_after_write_ms"), f(v[1]));
        }
        kv("read_complete_ms", f(self.read_complete_ms));
        kv("write_complete_ms", f(self.write_complete_ms));
        kv("data_prep_ms", f(self.data_prep_ms));
        kv("reselect_first_ms", f(self.reselect_ms[0]));
        kv("reselect_other_ms", f(self.reselect_ms[1]));
        kv(
            "extra_write_disconnect",
            self.extra_write_disconnect.to_string(),
        );
        kv("extradisc_command_ms", f(self.extradisc_command_ms));
        kv("extradisc_disconnect_ms", f(self.extradisc_disconnect_ms));
        kv("extradisc_inter_disconnect_ms", f(self.extradisc_inter_ms));
        kv("extradisc_seek_delta_ms", f(self.extradisc_seek_delta_ms));
        kv(
            "extradisc_second_disconnect_ms",
            f(self.extradisc_second_disconnect_ms),
        );
        kv("write_disconnect_ms", f(self.write_disconnect_ms));
        kv(
            "read_disconnect_after_read_ms",
            f(self.read_disconnect_ms[0]),
        );
        kv(
            "read_disconnect_after_write_ms",
            f(self.read_disconnect_ms[1]),
        );
        kv("min_seek_delay_ms", f(self.min_seek_delay_ms));
        kv("bus_read_ms_per_sector", f(self.bus_read_ms));
        kv("bus_write_ms_per_sector", f(self.bus_write_ms));
        kv("hold_bus_read", self.hold_bus_read.to_string());
        kv("read_water_mark", f(self.read_water));
        kv("water_mark_by_request", self.water_by_request.to_string());
        kv("cache_segments", self.segments.to_string());
        kv("segment_sectors", self.segment_sectors.to_string());
        kv("read_cache", self.read_cache.to_string());
        kv(
            "separate_write_segment",
            self.separate_write_segment.to_string(),
        );
        kv(
            "read_hits_on_write_data",
            self.read_hits_on_write_data.to_string(),
        );
        kv("write_segments", self.write_segments.to_string());
        kv(
            "read_any_free_blocks",
            self.read_any_free_blocks.to_string(),
        );
        kv("read_ahead_mode", self.read_ahead_mode.to_string());
        kv("max_read_ahead_sectors", self.max_read_ahead.to_string());
        kv(
            "read_ahead_over_requested",
            self.read_ahead_over_requested.to_string(),
        );
        kv(
            "read_ahead_on_idle_hit",
            self.read_ahead_on_idle_hit.to_string(),
        );
        kv("fast_write", self.fast_write.to_string());
        kv("immediate_read", self.immediate_read.to_string());
        kv("queue_depth", self.queue_depth.to_string());
        s
    }

    /// Parameters with units and meaning (the main ones; zones are summarised).
    pub fn describe(&self) -> Vec<ParamInfo> {
        let seek = match &self.seek {
            SeekModel::Table(t) => format!("table, {} points", t.len()),
            SeekModel::Hpl { .. } => "HPL formula".to_string(),
        };
        vec![
            row(
                "capacity_sectors",
                "sectors",
                self.capacity_sectors,
                "512-byte blocks",
            ),
            row("rpm", "rev/min", fmt_num(self.rpm), "spindle speed"),
            row("heads", "surfaces", self.heads, "recording surfaces"),
            row("cylinders", "cylinders", self.cylinders, "cylinders"),
            row(
                "zones",
                "zones",
                self.zones.len(),
                "zone table entries (zoneN keys)",
            ),
            row("sparing_scheme", "", self.sparing, "DiskSim sparing scheme"),
            row(
                "mapping_scheme",
                "",
                self.mapping,
                "DiskSim LBN-to-PBN mapping (0 normal, 1/2 serpentine)",
            ),
            row("seek", "", seek, "seek model (seek_table_ms or seek_hpl)"),
            row(
                "head_switch_ms",
                "ms",
                fmt_num(self.head_switch_ms),
                "head switch",
            ),
            row(
                "write_settle_ms",
                "ms",
                fmt_num(self.write_settle_ms),
                "added to write seeks",
            ),
            row(
                "read_miss_after_read_ms",
                "ms",
                fmt_num(self.read_miss_ms[0]),
                "command overhead, read miss after a read",
            ),
            row(
                "read_hit_after_read_ms",
                "ms",
                fmt_num(self.read_hit_ms[0]),
                "command overhead, read hit after a read",
            ),
            row(
                "bus_read_ms_per_sector",
                "ms",
                fmt_num(self.bus_read_ms),
                "bus time per sector (reads)",
            ),
            row(
                "bus_write_ms_per_sector",
                "ms",
                fmt_num(self.bus_write_ms),
                "bus time per sector (writes)",
            ),
            row(
                "cache_segments",
                "segments",
                self.segments,
                "cache segments",
            ),
            row(
                "segment_sectors",
                "sectors",
                self.segment_sectors,
                "segment size",
            ),
            row(
                "read_ahead_mode",
                "",
                self.read_ahead_mode,
                "0 none, 1 track, 2 cylinder, 3 segment, 4 next track",
            ),
            row(
                "max_read_ahead_sectors",
                "sectors",
                self.max_read_ahead,
                "read-ahead cap",
            ),
            row(
                "fast_write",
                "",
                self.fast_write,
                "0 write-through, 1/2 write-back",
            ),
            row(
                "queue_depth",
                "commands",
                self.queue_depth,
                "commands queued in the drive",
            ),
        ]
    }
}

/// The layout, as DiskSim's `dm_layout_g1` maps blocks ([`super::layout`]).
#[derive(Clone, Debug)]
struct Geo {
    lay: Layout,
    total: u64,
}

impl Geo {
    fn new(p: &TableParams) -> Geo {
        let specs: Vec<ZoneSpec> = p
            .zones
            .iter()
            .map(|z| ZoneSpec {
                first_cyl: z.first_cyl,
                last_cyl: z.last_cyl,
                spt: z.spt,
                first_offset: z.first_offset,
                front: z.front,
                track_skew: z.track_skew,
                cyl_skew: z.cyl_skew,
                spares: z.spares,
                slips: z.slips.clone(),
                defects: z.defects.clone(),
            })
            .collect();
        let lay = Layout::new(&specs, p.heads, p.sparing, p.mapping, p.range_size, p.rpm);
        Geo {
            total: lay.total(),
            lay,
        }
    }

    fn locate(&self, lbn: u64) -> Pos {
        self.lay.locate(lbn)
    }
}

/// A cache segment's contents.
#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    start: u64,
    end: u64,
    lru: u64,
    /// Write data that reads may not hit (`read_hits_on_write_data = false`).
    write_only: bool,
}

/// The read-ahead (or the read) the head is doing: sector `first + i` is in the buffer
/// at `times[i]`.
#[derive(Clone, Debug, Default)]
struct Stream {
    seg: usize,
    first: u64,
    times: Vec<f64>,
    /// Position of the head after the last sector of `times`.
    cyl: u32,
    head: u32,
}

impl Stream {
    fn valid_end(&self, t: f64) -> u64 {
        self.first + self.times.partition_point(|x| *x <= t) as u64
    }
    fn end(&self) -> u64 {
        self.first + self.times.len() as u64
    }
    fn finish(&self) -> f64 {
        self.times.last().copied().unwrap_or(0.0)
    }
}

/// One served command: its completion time and what happened (for reports).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Served {
    /// Completion time, ms.
    pub done_ms: f64,
    /// Served entirely from the cache.
    pub hit: bool,
}

/// The table-driven disk; see the module docs.
#[derive(Clone, Debug)]
pub struct TableDisk {
    p: TableParams,
    geo: Geo,
    rev: f64,
    info: DeviceInfo,
    cyl: u32,
    head: u32,
    /// The mechanism is busy (background write) until then.
    mech_free: f64,
    /// When each buffered (fast) write is on the media, ascending.
    dirty: VecDeque<f64>,
    last_write: bool,
    /// One past the last block of the previous command, if it was a write.
    last_write_end: Option<u64>,
    segs: Vec<Seg>,
    lru: u64,
    stream: Option<Stream>,
    // Device wrapper state.
    queue: VecDeque<(RqId, Op, u64, u32, f64)>,
    free_at: f64,
    done: VecDeque<(Ns, RqId)>,
}

const EPS: f64 = 1e-7;

impl TableDisk {
    /// A drive in its initial state (head at cylinder 0, angle 0 at time 0).
    pub fn new(name: &str, p: TableParams) -> TableDisk {
        let geo = Geo::new(&p);
        let info = DeviceInfo {
            name: name.to_string(),
            capacity_sectors: p.capacity_sectors,
            queue_depth: p.queue_depth,
            rotational: true,
            write_cache: p.fast_write > 0,
            fua: false,
            max_hw_sectors: 2048,
            max_segments: 128,
            nr_hw_queues: 1,
            default_scheduler: "mq-deadline",
            completion: crate::CompletionCpu::Vector,
        };
        TableDisk {
            rev: 60_000.0 / p.rpm,
            segs: vec![Seg::default(); p.segments.max(1) as usize],
            geo,
            info,
            p,
            cyl: 0,
            head: 0,
            mech_free: 0.0,
            dirty: VecDeque::new(),
            last_write: false,
            last_write_end: None,
            lru: 0,
            stream: None,
            queue: VecDeque::new(),
            free_at: 0.0,
            done: VecDeque::new(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &TableParams {
        &self.p
    }

    /// Where block `lbn` lives.
    pub fn locate(&self, lbn: u64) -> Pos {
        self.geo.locate(lbn)
    }

    /// Blocks the layout holds.
    pub fn layout_sectors(&self) -> u64 {
        self.geo.total
    }

    fn oh(&self, v: f64) -> f64 {
        v * self.p.overhead_scale
    }

    /// Wait from `t` until `angle` passes under the head.
    fn rot_wait(&self, t: f64, angle: f64) -> f64 {
        let ph = t / self.rev;
        let mut f = angle - (ph - ph.floor());
        if f < 0.0 {
            f += 1.0;
        }
        if !(EPS..=1.0 - EPS).contains(&f) {
            0.0
        } else {
            f * self.rev
        }
    }

    /// Move the head from (`cyl`, `head`) for sector at `pos`, from `t`.
    fn move_time(&self, cyl: u32, head: u32, pos: &Pos, write: bool) -> f64 {
        // Any repositioning (seek or head switch, whichever is longer) of a write
        // is followed by the write settle.
        let seek = if pos.cyl != cyl {
            self.p.seek.eval(pos.cyl.abs_diff(cyl))
        } else {
            0.0
        };
        let hs = if pos.head != head {
            self.p.head_switch_ms
        } else {
            0.0
        };
        let m = seek.max(hs);
        if write && m > 0.0 {
            (m + self.p.write_settle_ms).max(0.0)
        } else {
            m
        }
    }

    /// Access `n` sectors from `lbn` sector by sector from time `t` with the head at
    /// (`cyl`, `head`); sector `k` may not start before `ready(k)`. Pushes the time each
    /// sector is done to `out`; returns the head position after.
    #[allow(clippy::too_many_arguments)]
    fn media(
        &self,
        mut t: f64,
        mut cyl: u32,
        mut head: u32,
        lbn: u64,
        n: u64,
        write: bool,
        ready: &dyn Fn(u64) -> f64,
        out: &mut Vec<f64>,
    ) -> (u32, u32) {
        for k in 0..n {
            let pos = self.geo.locate(lbn + k);
            t += self.move_time(cyl, head, &pos, write);
            cyl = pos.cyl;
            head = pos.head;
            let r = ready(k);
            if r > t {
                t = r;
            }
            t += self.rot_wait(t, pos.angle) + pos.sector_ms;
            out.push(t);
        }
        (cyl, head)
    }

    /// The track holding `lbn`: (first block, one past the last).
    fn track_bounds(&self, lbn: u64) -> (u64, u64) {
        let p = self.geo.locate(lbn);
        let same = |x: u64| {
            let q = self.geo.locate(x);
            q.cyl == p.cyl && q.head == p.head
        };
        let mut s = lbn;
        while s > 0 && same(s - 1) {
            s -= 1;
        }
        let mut e = lbn + 1;
        while e < self.geo.total && same(e) {
            e += 1;
        }
        (s, e)
    }

    /// How far read-ahead after a read of `[lbn, end)` goes (exclusive end), for a
    /// segment that starts at `seg_start`. Mode 4 (DEC) reads to the end of the track
    /// holding `end`, or one track further when the segment began on an earlier track
    /// (a sequential stream); otherwise the maximum read-ahead past the request (or a
    /// segment's worth), cut at the end of the track (1) or cylinder (2) that holds
    /// `end`, the first block after the request: a request that ends at a track end
    /// reads the next track ahead.
    fn read_ahead_limit(&self, seg_start: u64, lbn: u64, end: u64) -> u64 {
        let p = &self.p;
        if !p.read_cache || p.read_ahead_mode == 0 || end >= self.geo.total {
            return end;
        }
        if p.read_ahead_mode == 4 {
            let (s, e) = self.track_bounds(end);
            let lim = if seg_start < s { e + (e - s) } else { e };
            return lim.min(self.geo.total).max(end);
        }
        let mut limit = if p.max_read_ahead > 0 {
            end + p.max_read_ahead as u64
        } else if p.read_ahead_over_requested {
            lbn + p.segment_sectors as u64
        } else {
            end + p.segment_sectors as u64
        }
        .min(self.geo.total);
        if matches!(p.read_ahead_mode, 1 | 2) {
            // The track (cylinder) that counts is the one the read-ahead starts on,
            // as in DiskSim's DEC prefetch scheme; DiskSim's own mode 1 refuses any
            // head switch to a background read, so a request ending at a track end
            // gets no read-ahead there (the DEC drive reads the next track).
            let first = self.geo.locate(end);
            let mut x = end;
            while x < limit {
                let q = self.geo.locate(x);
                if q.cyl != first.cyl || (p.read_ahead_mode == 1 && q.head != first.head) {
                    break;
                }
                x += 1;
            }
            limit = x;
        }
        limit.max(end)
    }

    /// Stop the stream at `t`; the head stays where reading stopped.
    fn stop_stream(&mut self, t: f64) {
        if let Some(st) = self.stream.take() {
            let v = st.valid_end(t);
            self.segs[st.seg].end = self.segs[st.seg].end.max(v).min(st.end());
            if v < st.end() {
                self.segs[st.seg].end = v.max(self.segs[st.seg].start);
                if v > 0 {
                    let q = self.geo.locate(v.saturating_sub(1).max(st.first));
                    self.cyl = q.cyl;
                    self.head = q.head;
                }
            } else {
                self.cyl = st.cyl;
                self.head = st.head;
            }
        }
    }

    fn seg_valid(&self, i: usize, t: f64) -> (u64, u64) {
        let s = self.segs[i];
        if s.write_only {
            return (s.start, s.start);
        }
        match &self.stream {
            Some(st) if st.seg == i => {
                let e = st.valid_end(t).max(s.start);
                (
                    s.start.max(e.saturating_sub(self.p.segment_sectors as u64)),
                    e,
                )
            }
            _ => (
                s.start
                    .max(s.end.saturating_sub(self.p.segment_sectors as u64)),
                s.end,
            ),
        }
    }

    /// The least recently used segment for a read, or the segment for a write
    /// (with a separate write segment, segment 0 holds writes and only writes).
    fn lru_seg(&self, write: bool) -> usize {
        if self.p.separate_write_segment && self.segs.len() > 1 {
            if write {
                return 0;
            }
            return self
                .segs
                .iter()
                .enumerate()
                .skip(1)
                .min_by_key(|(_, s)| s.lru)
                .map(|(i, _)| i)
                .unwrap_or(1);
        }
        self.segs
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.lru)
            .map(|(i, _)| i)
            .unwrap_or(0)
    }

    fn invalidate(&mut self, lbn: u64, end: u64) {
        for s in &mut self.segs {
            if lbn < s.end && end > s.start {
                *s = Seg::default();
            }
        }
    }

    /// Serve one command arriving at `t` (ms) with the drive otherwise idle apart
    /// from background work; returns its completion.
    pub fn serve(&mut self, t: f64, write: bool, lbn: u64, n: u32) -> Served {
        let n = n.max(1) as u64;
        let lbn = lbn.min(self.geo.total.saturating_sub(n));
        let end = lbn + n;
        let after = self.last_write as usize;
        self.last_write = write;
        if write {
            // The HP drives' extra disconnect hits a write that follows a write
            // without continuing it (DiskSim sets it only then).
            let ewd =
                self.p.extra_write_disconnect && self.last_write_end.is_some_and(|e| e != lbn);
            self.last_write_end = Some(end);
            self.write(t, lbn, end, after, ewd)
        } else {
            self.last_write_end = None;
            self.read(t, lbn, end, after)
        }
    }

    fn read(&mut self, t: f64, lbn: u64, end: u64, after: usize) -> Served {
        let p = self.p.clone();
        let n = end - lbn;
        // Full hit?
        if p.read_cache {
            for i in 0..self.segs.len() {
                let (s, e) = self.seg_valid(i, t);
                if lbn >= s && end <= e && e > s {
                    self.lru += 1;
                    self.segs[i].lru = self.lru;
                    let start = t + self.oh(p.per_request_ms + p.read_hit_ms[after]);
                    let done = start
                        + self.oh(p.data_prep_ms)
                        + n as f64 * p.bus_read_ms
                        + self.oh(p.read_complete_ms);
                    let idle = self.stream.as_ref().is_none_or(|st| st.finish() <= t);
                    if p.read_ahead_on_idle_hit && idle && t >= self.mech_free {
                        // Prefetch on from the segment's end.
                        self.stop_stream(t);
                        let limit = self.read_ahead_limit(s, lbn, end).max(e);
                        if limit > e {
                            let mut times = Vec::new();
                            let (c, h) = self.media(
                                start,
                                self.cyl,
                                self.head,
                                e,
                                limit - e,
                                false,
                                &|_| 0.0,
                                &mut times,
                            );
                            self.stream = Some(Stream {
                                seg: i,
                                first: e,
                                times,
                                cyl: c,
                                head: h,
                            });
                        }
                    }
                    return Served {
                        done_ms: done,
                        hit: true,
                    };
                }
            }
        }
        // Does the current read stream cover (or run into) the request?
        let first_cached = p.read_cache
            && (0..self.segs.len()).any(|i| {
                let (s, e) = self.seg_valid(i, t);
                lbn >= s && lbn < e
            });
        let ohv = if first_cached {
            p.read_hit_ms[after]
        } else {
            p.read_miss_ms[after]
        };
        let cmd_done = t + self.oh(p.per_request_ms + ohv);
        let stream_seg_start = self.stream.as_ref().map(|st| self.seg_valid(st.seg, t).0);
        let continues = p.read_cache
            && self.stream.as_ref().is_some_and(|st| {
                let (s, _) = self.seg_valid(st.seg, t);
                lbn >= s && lbn <= st.end()
            });
        let avail: Vec<f64>;
        if continues {
            let limit = self.read_ahead_limit(stream_seg_start.unwrap_or(lbn), lbn, end);
            let mut st = self.stream.take().expect("stream");
            // Extend the stream to cover the request and its read-ahead.
            let want = limit.max(end);
            if want > st.end() {
                let from = st.end();
                // DiskSim: a read arriving while the read-ahead still runs takes the
                // access over (`disk_buffer_attempt_access_swap`), which goes on
                // without a break, across the track end too (it is no longer a
                // background read); a stopped read-ahead restarts after the command.
                let t0 = if st.finish() > t {
                    st.finish()
                } else {
                    st.finish().max(cmd_done)
                };
                let (c, h) = self.media(
                    t0,
                    st.cyl,
                    st.head,
                    from,
                    want - from,
                    false,
                    &|_| 0.0,
                    &mut st.times,
                );
                st.cyl = c;
                st.head = h;
            }
            avail = (lbn..end)
                .map(|x| {
                    if x < st.first {
                        t
                    } else {
                        st.times[(x - st.first) as usize]
                    }
                })
                .collect();
            self.lru += 1;
            self.segs[st.seg].lru = self.lru;
            self.segs[st.seg].end = self.segs[st.seg].end.max(st.first);
            // Keep the segment window: at most segment_sectors behind the stream.
            self.stream = Some(st);
        } else {
            self.stop_stream(cmd_done);
            let limit = self.read_ahead_limit(lbn, lbn, end);
            let start = cmd_done.max(self.mech_free);
            let mut times = Vec::with_capacity((limit - lbn) as usize);
            let p0 = self.geo.locate(lbn);
            let p1 = self.geo.locate(end - 1);
            let (c, h) = if p.immediate_read && p0.cyl == p1.cyl && p0.head == p1.head {
                // Zero-latency read: each sector as it first passes under the head.
                let at = start + self.move_time(self.cyl, self.head, &p0, false);
                let mut last = at;
                for k in 0..n {
                    let q = self.geo.locate(lbn + k);
                    let x = at + self.rot_wait(at, q.angle) + q.sector_ms;
                    last = last.max(x);
                    times.push(x);
                }
                // Read-ahead continues once the request is in.
                let mut rest = Vec::new();
                let (c, h) = self.media(
                    last,
                    p0.cyl,
                    p0.head,
                    end,
                    limit - end,
                    false,
                    &|_| 0.0,
                    &mut rest,
                );
                times.extend(rest);
                (c, h)
            } else {
                self.media(
                    start,
                    self.cyl,
                    self.head,
                    lbn,
                    limit - lbn,
                    false,
                    &|_| 0.0,
                    &mut times,
                )
            };
            avail = times[..n as usize].to_vec();
            let before = if p.read_any_free_blocks && !p.immediate_read && p.read_cache {
                let arrive = start + self.move_time(self.cyl, self.head, &p0, false);
                let room = (p.segment_sectors as u64).saturating_sub(limit - lbn);
                self.free_blocks_before(lbn, arrive, room)
            } else {
                0
            };
            let i = self.lru_seg(false);
            self.invalidate(lbn - before, limit);
            self.lru += 1;
            self.segs[i] = Seg {
                start: lbn - before,
                end: lbn,
                lru: self.lru,
                write_only: false,
            };
            if p.read_cache {
                self.stream = Some(Stream {
                    seg: i,
                    first: lbn,
                    times,
                    cyl: c,
                    head: h,
                });
            } else {
                self.cyl = c;
                self.head = h;
                self.mech_free = self.mech_free.max(avail[avail.len() - 1]);
            }
        }
        let waited = avail[0] > cmd_done + EPS;
        let bus = p.bus_read_ms;
        let mut b = cmd_done + self.oh(p.data_prep_ms);
        if waited {
            b += self.oh(p.reselect_ms[0]);
        }
        let done_bus = if p.hold_bus_read {
            // DiskSim's high water mark: a fraction of the request (rounded down,
            // at least one block) or of the segment (rounded up).
            let wm = if p.water_by_request {
                (p.read_water * n.min(p.segment_sectors as u64) as f64) as usize
            } else {
                (p.read_water * p.segment_sectors as f64).ceil() as usize
            }
            .clamp(1, n as usize);
            // A miss disconnects after its command; the drive reselects once the
            // disconnect is over and the water mark is reached.
            let mut start = if waited {
                (cmd_done + self.oh(p.read_disconnect_ms[after])).max(avail[wm - 1])
                    + self.oh(p.reselect_ms[0] + p.data_prep_ms)
            } else {
                b
            };
            for (k, a) in avail.iter().enumerate() {
                start = start.max(a - k as f64 * bus);
            }
            start + n as f64 * bus
        } else {
            for a in &avail {
                b = b.max(*a) + bus;
            }
            b
        };
        Served {
            done_ms: done_bus + self.oh(p.read_complete_ms),
            hit: false,
        }
    }

    fn write(&mut self, t: f64, lbn: u64, end: u64, after: usize, ewd: bool) -> Served {
        let p = self.p.clone();
        let n = end - lbn;
        let bus = p.bus_write_ms;
        let fast = p.fast_write > 0;
        // A fast write needs a write segment: wait until fewer than
        // `write_segments` buffered writes are still to reach the media.
        let t = if fast { self.write_segment_free(t) } else { t };
        let ohv = if ewd {
            p.extradisc_command_ms
        } else if fast {
            p.write_hit_ms[after]
        } else {
            p.write_miss_ms[after]
        };
        let cmd_done = t + self.oh(p.per_request_ms + ohv);
        let (bus_start, seek_start) = if ewd {
            (
                cmd_done
                    + self.oh(p.extradisc_disconnect_ms + p.extradisc_inter_ms + p.reselect_ms[0])
                    + self.oh(p.data_prep_ms),
                cmd_done + self.oh(p.extradisc_seek_delta_ms),
            )
        } else {
            (cmd_done + self.oh(p.data_prep_ms), cmd_done)
        };
        self.stop_stream(cmd_done);
        // The minimum delay counts from the start of the seek; only a write that
        // appends to a write the mechanism is still doing is exempt.
        let start = seek_start.max(self.mech_free);
        let sequential = self.mech_free > seek_start
            && self.segs.iter().any(|s| s.end == lbn && s.end > s.start);
        let min_media = if sequential {
            0.0
        } else {
            start + self.oh(p.min_seek_delay_ms)
        };
        let mut times = Vec::with_capacity(n as usize);
        // The HP drives (those with the extra write disconnect) start writing only
        // once the buffer holds min(n, 10) of the request's blocks, or 15 for
        // requests of 45 blocks or more.
        let first = if p.extra_write_disconnect {
            if n < 45 {
                n.min(10)
            } else {
                15
            }
        } else {
            1
        };
        let ready = |k: u64| (bus_start + (k + 1).max(first) as f64 * bus).max(min_media);
        let (c, h) = self.media(start, self.cyl, self.head, lbn, n, true, &ready, &mut times);
        self.cyl = c;
        self.head = h;
        let media_done = times[times.len() - 1];
        self.mech_free = media_done;
        if fast {
            self.dirty.push_back(media_done);
        }
        // The written data stays in a segment (readable unless the drive allows no
        // read hits on write data).
        self.invalidate(lbn, end);
        let i = self.lru_seg(true);
        self.lru += 1;
        self.segs[i] = Seg {
            start: lbn,
            end,
            lru: self.lru,
            write_only: !p.read_hits_on_write_data,
        };
        let done = if fast {
            bus_start + n as f64 * bus + self.oh(p.write_complete_ms)
        } else {
            // Once its data has crossed the bus the drive disconnects; it
            // reselects for the completion when the media write is done and the
            // disconnect is over.
            let (disc, resel) = if ewd {
                (p.extradisc_second_disconnect_ms, p.reselect_ms[1])
            } else {
                (p.write_disconnect_ms, p.reselect_ms[0])
            };
            let bus_done = bus_start + n as f64 * bus;
            media_done.max(bus_done + self.oh(disc)) + self.oh(resel + p.write_complete_ms)
        };
        Served {
            done_ms: done,
            hit: fast,
        }
    }

    /// When, from `t`, a write segment is free for a fast write.
    fn write_segment_free(&mut self, t: f64) -> f64 {
        while self.dirty.front().is_some_and(|&d| d <= t) {
            self.dirty.pop_front();
        }
        let w = self.p.write_segments.max(1) as usize;
        if self.dirty.len() >= w {
            t.max(self.dirty[self.dirty.len() - w])
        } else {
            t
        }
    }

    /// Blocks just before `lbn` on its track that pass under the head between its
    /// arrival at `arrive` and the start of `lbn` ("Read any free blocks"), at
    /// most `cap`.
    fn free_blocks_before(&self, lbn: u64, arrive: f64, cap: u64) -> u64 {
        let p0 = self.geo.locate(lbn);
        let wait = self.rot_wait(arrive, p0.angle);
        let passing = ((wait + EPS) / p0.sector_ms).floor() as u64;
        let (track_start, _) = self.track_bounds(lbn);
        passing.min(lbn - track_start).min(cap)
    }

    /// The instant (ns) a queued command whose service starts at `start_ms` is
    /// due: what [`Device::next_event`] reports and what [`TableDisk::pump`] compares
    /// with. Comparing the milliseconds instead would livelock whenever rounding
    /// puts the reported instant before the start: the event would fire, start
    /// nothing and be reported again at the same instant.
    fn start_ns(start_ms: f64) -> Ns {
        Ns((start_ms * 1e6).round() as u64)
    }

    fn pump(&mut self, now: Ns) {
        while let Some(&(id, op, lbn, n, arr)) = self.queue.front() {
            let start = arr.max(self.free_at);
            if Self::start_ns(start) > now {
                break;
            }
            self.queue.pop_front();
            let done = match op {
                Op::Read => self.serve(start, false, lbn, n).done_ms,
                Op::Write => self.serve(start, true, lbn, n).done_ms,
                _ => start.max(self.mech_free),
            };
            self.free_at = done;
            self.done.push_back((Ns((done * 1e6).round() as u64), id));
        }
    }
}

impl Driver for TableDisk {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        if self.queue.len() + self.done.len() >= self.p.queue_depth as usize {
            return QueueRqStatus::DevResource;
        }
        let t = now.0 as f64 / 1e6;
        self.queue
            .push_back((id, rq.op, rq.sector.0, rq.nr_sectors, t));
        self.pump(now);
        QueueRqStatus::Ok
    }
}

impl Device for TableDisk {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn next_event(&self) -> Option<Ns> {
        let a = self.done.front().map(|d| d.0);
        let b = self
            .queue
            .front()
            .map(|q| Self::start_ns(q.4.max(self.free_at)));
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.pump(now);
        while let Some(&(t, id)) = self.done.front() {
            if t > now {
                break;
            }
            self.done.pop_front();
            done.push(id);
        }
    }
}
