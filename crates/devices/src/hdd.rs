//! A rotating disk: zoned geometry, a seek curve, a spinning platter, a segmented
//! read-ahead cache, an optional volatile write cache, and native command queueing
//! with shortest-positioning-time-first inside the drive.
//!
//! # Geometry
//! LBAs are laid out cylinder by cylinder, head by head (the usual serpentine-free
//! layout): zone `z` owns `cylinders / zones` consecutive cylinders and has its own
//! sectors per track, interpolated linearly from `outer_sectors_per_track` (LBA 0,
//! outer edge) to `inner_sectors_per_track`. The platter turns at the same speed
//! everywhere, so outer zones move more sectors per revolution: that is zoned
//! recording, and it is why a disk reads ~2x faster at its start than at its end.
//! Each track's first sector is skewed by the time of a head switch (and each
//! cylinder's by a track-to-track seek), so a transfer that runs onto the next track
//! loses only the switch time, not a revolution — as drives are formatted.
//!
//! # Seek curve
//! Ruemmler & Wilkes ("An introduction to disk drive modeling", IEEE Computer 1994):
//! `t(d) = a + b·√d` for short seeks (the arm accelerates then decelerates; coast is
//! never reached) and `t(d) = c + e·d` for long ones (the arm coasts at top speed),
//! continuous at the boundary, placed at a fifth of the stroke. The four
//! coefficients are fitted to the three figures datasheets publish: track-to-track
//! (`t(1)`), full stroke (`t(C-1)`), and the average over all seek pairs (weighted by
//! `C - d`, as the datasheets define it), by bisection on `b`.
//!
//! # Rotation
//! The platter's angle is a function of simulated time (plus a phase from `seed`): a
//! request waits, after its seek, until its first sector comes under the head. The
//! drive therefore picks requests by *positioning* time (seek + rotational wait), not
//! seek distance, which is what gives NCQ its gain: with 32 commands queued there is
//! usually one whose sector is about to pass under the head.
//!
//! # Queueing (NCQ) and its rules
//! Up to `queue_depth` commands are accepted. When the mechanism is free it serves
//! the queued command with the shortest positioning time, except that a command that
//! has waited more than `max_wait_ms` is served first (oldest first): real firmware
//! ages requests so nothing starves. A FLUSH CACHE (or a write with PREFLUSH) is a
//! non-queued command in SATA: it is refused (`DevResource`) while queued commands are
//! outstanding, and while it runs every new command is refused — libata defers them
//! the same way.
//!
//! # Caches
//! The read cache is `cache_segments` segments of `segment_kib`. After a media read the
//! drive keeps reading ahead (`read_ahead_kib`) into the segment, at the media rate,
//! until another media operation moves the head. A read that lies in a segment is a
//! hit: it costs `cache_hit_us` plus the interface transfer. A read that continues the
//! current read-ahead stream waits only for the stream to reach its end. Commands
//! served from the cache (hits, buffered writes) pass the firmware and link one at
//! a time, so `cache_hit_us` also caps cached IOPS (~18k for 55 µs, what the MG04 of
//! seed 0 shows with 32 sequential 512-byte readers). Writes invalidate overlapping
//! segments.
//!
//! With `write_cache = true`, writes (not FUA) are acknowledged once in the buffer
//! (`write_cache_kib`, at most `write_cache_extents` extents). The buffer holds one
//! copy per sector: a write over buffered data replaces it in place (no new space),
//! and a write touching any buffered extent merges with it; reads of buffered data
//! are cache hits (Seagate SAS product manuals, "Caching write data"; Fujitsu MHK2
//! manual §6.6). Extents are destaged later by the same SPTF scheduler; destage runs when the drive
//! has no host command needing the media, when the buffer is three quarters full, or
//! during a flush. A write that finds the buffer full waits for space.
//!
//! # Left out
//! Defects and spare sectors, per-surface differences, seek time depending on
//! direction, write settle time beyond track-to-track, thermal recalibration,
//! power states. None changes which request
//! a scheduler should send next, which is what the model is for.

use crate::completions::Completions;
use crate::profile::{fmt_num, ms_to_ns, row, us_to_ns, Doc, ProfileError};
use crate::{extents, Device, DeviceInfo, ParamInfo};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Op, ReqFlags, Request, RqId};
use std::collections::BTreeMap;

/// Parameters of an [`Hdd`]; see the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct HddParams {
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// Spindle speed, revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces (heads).
    pub heads: u32,
    /// Cylinders (tracks per surface).
    pub cylinders: u32,
    /// Recording zones.
    pub zones: u32,
    /// Sectors per track in the outermost zone.
    pub outer_sectors_per_track: u32,
    /// Sectors per track in the innermost zone.
    pub inner_sectors_per_track: u32,
    /// Single-cylinder seek, ms (includes settling).
    pub track_to_track_ms: f64,
    /// Average seek over all seek pairs, ms.
    pub average_seek_ms: f64,
    /// Full-stroke seek, ms.
    pub full_stroke_ms: f64,
    /// Head switch within a cylinder, ms.
    pub head_switch_ms: f64,
    /// Command processing before a media access, µs.
    pub command_overhead_us: f64,
    /// Service time of a cache hit (before the data transfer), µs.
    pub cache_hit_us: f64,
    /// Host interface rate, MB/s (10^6 bytes).
    pub interface_mb_s: f64,
    /// Read cache segments.
    pub cache_segments: u32,
    /// Size of one segment, KiB.
    pub segment_kib: u32,
    /// How far the drive reads ahead after a read, KiB.
    pub read_ahead_kib: u32,
    /// Minimum prefetch of a sequential stream, KiB: after a read that continues a
    /// segment, the drive reads at least this far ahead before it moves the head
    /// for another command (the SCSI caching page's "Minimum Pre-fetch"; 0: the
    /// read-ahead stops as soon as another command needs the head).
    pub min_prefetch_kib: u32,
    /// Volatile write cache enabled.
    pub write_cache: bool,
    /// Write buffer size, KiB.
    pub write_cache_kib: u32,
    /// Extents the write buffer can hold.
    pub write_cache_extents: u32,
    /// NCQ depth (1 to 32).
    pub queue_depth: u32,
    /// A queued command older than this is served next, ms.
    pub max_wait_ms: f64,
    /// Largest command, KiB (`max_hw_sectors_kb`).
    pub max_hw_kib: u32,
    /// Seed of the spindle's starting phase.
    pub seed: u64,
}

impl HddParams {
    /// Read and validate the parameters from a profile document.
    pub fn from_doc(d: &mut Doc) -> Result<HddParams, ProfileError> {
        let p = HddParams {
            capacity_bytes: d.int("capacity_bytes", 1 << 20, 1 << 60)?,
            rpm: d.int("rpm", 1, 30_000)? as u32,
            heads: d.int("heads", 1, 64)? as u32,
            cylinders: d.int("cylinders", 2, 10_000_000)? as u32,
            zones: d.int("zones", 1, 1024)? as u32,
            outer_sectors_per_track: d.int("outer_sectors_per_track", 1, 1_000_000)? as u32,
            inner_sectors_per_track: d.int("inner_sectors_per_track", 1, 1_000_000)? as u32,
            track_to_track_ms: d.pos("track_to_track_ms")?,
            average_seek_ms: d.pos("average_seek_ms")?,
            full_stroke_ms: d.pos("full_stroke_ms")?,
            head_switch_ms: d.pos("head_switch_ms")?,
            command_overhead_us: d.nonneg("command_overhead_us")?,
            cache_hit_us: d.nonneg("cache_hit_us")?,
            interface_mb_s: d.pos("interface_mb_s")?,
            cache_segments: d.int("cache_segments", 1, 1024)? as u32,
            segment_kib: d.int("segment_kib", 4, 1 << 20)? as u32,
            read_ahead_kib: d.int("read_ahead_kib", 0, 1 << 20)? as u32,
            min_prefetch_kib: d.int_or("min_prefetch_kib", 0, 1 << 20, 0)? as u32,
            write_cache: d.bool("write_cache")?,
            write_cache_kib: d.int("write_cache_kib", 0, 1 << 22)? as u32,
            write_cache_extents: d.int("write_cache_extents", 0, 65_536)? as u32,
            queue_depth: d.int("queue_depth", 1, 32)? as u32,
            max_wait_ms: d.pos("max_wait_ms")?,
            max_hw_kib: d.int("max_hw_kib", 4, 1 << 16)? as u32,
            seed: d.int_or("seed", 0, u64::MAX >> 1, 0)?,
        };
        if p.inner_sectors_per_track > p.outer_sectors_per_track {
            return Err(d.err(
                "inner_sectors_per_track",
                "must not exceed outer_sectors_per_track (outer tracks are longer)",
            ));
        }
        if p.zones > p.cylinders {
            return Err(d.err("zones", "more zones than cylinders"));
        }
        let geo_sectors = Geometry::new(&p).total_sectors;
        if geo_sectors < p.capacity_bytes / 512 {
            return Err(d.err(
                "cylinders",
                format!(
                    "the geometry holds {} bytes, less than capacity_bytes = {}: raise cylinders, heads or sectors per track",
                    geo_sectors * 512,
                    p.capacity_bytes
                ),
            ));
        }
        if !(p.track_to_track_ms < p.average_seek_ms && p.average_seek_ms < p.full_stroke_ms) {
            return Err(d.err(
                "average_seek_ms",
                "expected track_to_track_ms < average_seek_ms < full_stroke_ms",
            ));
        }
        if let Err(m) = SeekCurve::fitted(&p) {
            return Err(d.err("average_seek_ms", m));
        }
        if p.write_cache && (p.write_cache_kib < 4 || p.write_cache_extents == 0) {
            return Err(d.err(
                "write_cache_kib",
                "with write_cache = true the buffer needs at least 4 KiB and 1 extent",
            ));
        }
        if p.segment_kib < p.read_ahead_kib {
            return Err(d.err("read_ahead_kib", "must not exceed segment_kib"));
        }
        if p.min_prefetch_kib > p.read_ahead_kib {
            return Err(d.err("min_prefetch_kib", "must not exceed read_ahead_kib"));
        }
        Ok(p)
    }

    /// Parameters with units and meaning.
    pub fn describe(&self) -> Vec<ParamInfo> {
        vec![
            row(
                "capacity_bytes",
                "bytes",
                self.capacity_bytes,
                "device size",
            ),
            row("rpm", "rev/min", self.rpm, "spindle speed"),
            row(
                "heads",
                "surfaces",
                self.heads,
                "recording surfaces (heads)",
            ),
            row("cylinders", "tracks", self.cylinders, "tracks per surface"),
            row(
                "zones",
                "zones",
                self.zones,
                "recording zones (constant sectors per track within one)",
            ),
            row(
                "outer_sectors_per_track",
                "sectors",
                self.outer_sectors_per_track,
                "512-byte sectors per track at LBA 0",
            ),
            row(
                "inner_sectors_per_track",
                "sectors",
                self.inner_sectors_per_track,
                "sectors per track in the innermost zone",
            ),
            row(
                "track_to_track_ms",
                "ms",
                fmt_num(self.track_to_track_ms),
                "one-cylinder seek incl. settling",
            ),
            row(
                "average_seek_ms",
                "ms",
                fmt_num(self.average_seek_ms),
                "average seek over all seek pairs",
            ),
            row(
                "full_stroke_ms",
                "ms",
                fmt_num(self.full_stroke_ms),
                "seek across all cylinders",
            ),
            row(
                "head_switch_ms",
                "ms",
                fmt_num(self.head_switch_ms),
                "switch to another surface in the cylinder",
            ),
            row(
                "command_overhead_us",
                "us",
                fmt_num(self.command_overhead_us),
                "firmware time before a media access",
            ),
            row(
                "cache_hit_us",
                "us",
                fmt_num(self.cache_hit_us),
                "service time of a cache hit before its transfer",
            ),
            row(
                "interface_mb_s",
                "MB/s",
                fmt_num(self.interface_mb_s),
                "host link rate (SATA 6 Gb/s: 600)",
            ),
            row(
                "cache_segments",
                "segments",
                self.cache_segments,
                "read cache segments",
            ),
            row(
                "segment_kib",
                "KiB",
                self.segment_kib,
                "size of one read cache segment",
            ),
            row(
                "read_ahead_kib",
                "KiB",
                self.read_ahead_kib,
                "read-ahead after a media read",
            ),
            row(
                "min_prefetch_kib",
                "KiB",
                self.min_prefetch_kib,
                "read ahead before the head leaves a sequential stream",
            ),
            row(
                "write_cache",
                "bool",
                self.write_cache,
                "volatile write cache enabled",
            ),
            row(
                "write_cache_kib",
                "KiB",
                self.write_cache_kib,
                "write buffer size",
            ),
            row(
                "write_cache_extents",
                "extents",
                self.write_cache_extents,
                "extents the write buffer holds",
            ),
            row("queue_depth", "commands", self.queue_depth, "NCQ depth"),
            row(
                "max_wait_ms",
                "ms",
                fmt_num(self.max_wait_ms),
                "queued command age after which it is served first",
            ),
            row(
                "max_hw_kib",
                "KiB",
                self.max_hw_kib,
                "largest command (max_hw_sectors_kb)",
            ),
            row(
                "seed",
                "",
                self.seed,
                "seed of the spindle's starting phase",
            ),
        ]
    }
}

/// One recording zone.
#[derive(Clone, Copy, Debug)]
struct Zone {
    first_lba: u64,
    first_cyl: u32,
    spt: u32,
}

/// Where a sector lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pos {
    cyl: u32,
    head: u16,
    zone: u16,
    /// Sector within the track.
    sector: u32,
    /// Offset of the sector's start within a revolution, ns.
    angle: u32,
}

/// Where a sector lives, without the angle ([`Pos`] less what only a
/// rotational wait needs).
#[derive(Clone, Copy, Debug)]
struct Place {
    cyl: u32,
    head: u16,
    zone: u16,
    sector: u32,
}

/// Zones, skews and the LBA mapping.
#[derive(Clone, Debug)]
struct Geometry {
    zones: Vec<Zone>,
    heads: u32,
    rev_ns: u64,
    head_skew_ns: u64,
    cyl_skew_ns: u64,
    total_sectors: u64,
}

impl Geometry {
    fn new(p: &HddParams) -> Geometry {
        let rev_ns = 60_000_000_000 / p.rpm.max(1) as u64;
        let mut zones = Vec::with_capacity(p.zones as usize);
        let per = p.cylinders / p.zones.max(1);
        let mut lba = 0u64;
        let mut cyl = 0u32;
        for z in 0..p.zones.max(1) {
            let cyls = if z + 1 == p.zones {
                p.cylinders - cyl
            } else {
                per
            };
            let spt = if p.zones <= 1 {
                p.outer_sectors_per_track
            } else {
                let o = p.outer_sectors_per_track as u64;
                let i = p.inner_sectors_per_track as u64;
                (o - (o - i) * z as u64 / (p.zones as u64 - 1)) as u32
            };
            let n = cyls as u64 * p.heads as u64 * spt as u64;
            zones.push(Zone {
                first_lba: lba,
                first_cyl: cyl,
                spt,
            });
            lba += n;
            cyl += cyls;
        }
        Geometry {
            zones,
            heads: p.heads,
            rev_ns,
            head_skew_ns: ms_to_ns(p.head_switch_ms) % rev_ns,
            cyl_skew_ns: ms_to_ns(p.track_to_track_ms) % rev_ns,
            total_sectors: lba,
        }
    }

    fn zone_of(&self, lba: u64) -> usize {
        // Few zones: a binary search over their starts.
        match self.zones.binary_search_by(|z| z.first_lba.cmp(&lba)) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
        .min(self.zones.len() - 1)
    }

    /// Where `lba` (clamped to the disk) lies, without its angle: what moving the
    /// head there needs.
    fn place(&self, lba: u64) -> Place {
        let lba = lba.min(self.total_sectors - 1);
        let zi = self.zone_of(lba);
        let z = &self.zones[zi];
        let off = lba - z.first_lba;
        // 32-bit division where the offset fits (the quotient is the same; the
        // instruction is shorter), and the head by mask when there are 2^k.
        let (track, sector) = match u32::try_from(off) {
            Ok(o) => ((o / z.spt) as u64, o % z.spt),
            Err(_) => (off / z.spt as u64, (off % z.spt as u64) as u32),
        };
        let heads = self.heads as u64;
        let (cyl, head) = if heads.is_power_of_two() {
            (track >> heads.trailing_zeros(), track & (heads - 1))
        } else {
            (track / heads, track % heads)
        };
        Place {
            cyl: z.first_cyl + cyl as u32,
            head: head as u16,
            zone: zi as u16,
            sector,
        }
    }

    fn locate(&self, lba: u64) -> Pos {
        let Place {
            cyl,
            head,
            zone,
            sector,
        } = self.place(lba);
        let spt = self.zones[zone as usize].spt as u64;
        let skew = (cyl as u64 * ((self.heads as u64 - 1) * self.head_skew_ns + self.cyl_skew_ns)
            + head as u64 * self.head_skew_ns)
            % self.rev_ns;
        let angle = ((sector as u64 * self.rev_ns / spt + skew) % self.rev_ns) as u32;
        Pos {
            cyl,
            head,
            zone,
            sector,
            angle,
        }
    }

    /// Media time to transfer `n` sectors from `lba` (at `at`, its
    /// [`Geometry::locate`]) once its first sector is under the head, and the
    /// cylinder and head of the last sector.
    fn transfer(&self, lba: u64, at: &Pos, n: u32) -> (u64, u32, u16) {
        let mut t = 0u64;
        let mut lba = lba;
        let mut left = n as u64;
        let (mut zone, mut cyl, mut head, mut sector) = (at.zone, at.cyl, at.head, at.sector);
        loop {
            let spt = self.zones[zone as usize].spt as u64;
            let take = left.min(spt - sector as u64);
            t += take * self.rev_ns / spt;
            left -= take;
            lba += take;
            if left == 0 || lba >= self.total_sectors {
                // The last sector is on the track just read.
                return (t, cyl, head);
            }
            let next = self.place(lba);
            // The skew makes the switch cost exactly its own time.
            t += if next.cyl != cyl {
                self.cyl_skew_ns
            } else {
                self.head_skew_ns
            };
            (zone, cyl, head, sector) = (next.zone, next.cyl, next.head, next.sector);
        }
    }

    /// Sustained ns per sector when streaming through `zone` (track switches included).
    fn stream_ns_per_sector(&self, zone: u16) -> f64 {
        let spt = self.zones[zone as usize].spt as f64;
        (self.rev_ns + self.head_skew_ns) as f64 / spt
    }
}

/// The fitted Ruemmler–Wilkes seek curve.
#[derive(Clone, Copy, Debug)]
struct SeekCurve {
    a: f64,
    b: f64,
    c: f64,
    e: f64,
    boundary: f64,
}

/// `x mod m` without a division in the common cases (`x` under two revolutions).
#[inline]
fn wrap(x: u64, m: u64) -> u64 {
    if x < m {
        x
    } else if x - m < m {
        x - m
    } else {
        x % m
    }
}

/// `x mod m` for `x < 2m`, without a branch (the pricing loop's operands are
/// random, so a branch would be mispredicted half the time).
#[inline]
fn wrap2(x: u64, m: u64) -> u64 {
    debug_assert!(x < 2 * m);
    x - (m & 0u64.wrapping_sub((x >= m) as u64))
}

impl SeekCurve {
    fn eval(&self, d: u32) -> f64 {
        if d == 0 {
            0.0
        } else if (d as f64) <= self.boundary {
            self.a + self.b * (d as f64).sqrt()
        } else {
            self.c + self.e * d as f64
        }
    }

    /// [`SeekCurve::fit`], once per process for each set of figures: validating a
    /// profile fits its curve, and every drive built from it (each run, each RAID
    /// member) needs the same curve again. The fit is ~250,000 evaluations.
    fn fitted(p: &HddParams) -> Result<SeekCurve, String> {
        type Key = (u64, u64, u64, u32);
        static FITTED: std::sync::Mutex<Vec<(Key, Result<SeekCurve, String>)>> =
            std::sync::Mutex::new(Vec::new());
        let key = (
            p.track_to_track_ms.to_bits(),
            p.average_seek_ms.to_bits(),
            p.full_stroke_ms.to_bits(),
            p.cylinders,
        );
        let mut memo = FITTED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, r)) = memo.iter().find(|(k, _)| *k == key) {
            return r.clone();
        }
        let r = SeekCurve::fit(p);
        memo.push((key, r.clone()));
        r
    }

    /// Fit to the datasheet figures (ns); an error says why it cannot be.
    fn fit(p: &HddParams) -> Result<SeekCurve, String> {
        let t1 = p.track_to_track_ms * 1e6;
        let avg = p.average_seek_ms * 1e6;
        let full = p.full_stroke_ms * 1e6;
        let cmax = (p.cylinders - 1).max(2) as f64;
        let boundary = (cmax / 5.0).max(2.0);
        let make = |b: f64| {
            let a = t1 - b;
            let v0 = a + b * boundary.sqrt();
            let e = (full - v0) / (cmax - boundary).max(1.0);
            SeekCurve {
                a,
                b,
                c: v0 - e * boundary,
                e,
                boundary,
            }
        };
        // The datasheets' average: over seek lengths 1..=max weighted by (max + 1 - d).
        let mean = |s: &SeekCurve| {
            let n = 4000;
            let (mut num, mut den) = (0.0, 0.0);
            for i in 0..n {
                let d = 1.0 + (cmax - 1.0) * (i as f64 + 0.5) / n as f64;
                let w = cmax + 1.0 - d;
                num += w * s.eval(d.round().max(1.0) as u32);
                den += w;
            }
            num / den
        };
        let bmax = (full - t1) / (boundary.sqrt() - 1.0).max(1e-9);
        let (lo_avg, hi_avg) = (mean(&make(0.0)), mean(&make(bmax)));
        if avg < lo_avg || avg > hi_avg {
            return Err(format!(
                "no seek curve of the Ruemmler-Wilkes form fits: with these track-to-track and full-stroke times the average must lie between {:.2} and {:.2} ms",
                lo_avg / 1e6,
                hi_avg / 1e6
            ));
        }
        let (mut lo, mut hi) = (0.0, bmax);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if mean(&make(mid)) < avg {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(make((lo + hi) / 2.0))
    }
}

/// Lower bounds of the seek time by distance class, for pricing only the queued
/// commands that can win: distances under 16 are their own class, longer ones
/// share a class with those of the same bit length and the same next four bits
/// (at most 464 classes, about 6 % apart). Each class holds the seek time of its
/// shortest distance less 1 ns (the curve rises with distance; the nanosecond
/// covers floating-point rounding between neighbouring distances), with that
/// time modulo a revolution.
#[derive(Clone, Debug)]
struct SeekFloor {
    /// `(ns, ns % rev)` by class; empty when the fitted curve falls somewhere
    /// (then the floor is 0).
    by_class: Vec<(u64, u64)>,
}

impl SeekFloor {
    fn new(seek: &SeekCurve, cylinders: u32, rev: u64) -> SeekFloor {
        if seek.b < 0.0 || seek.e < 0.0 || !(seek.a.is_finite() && seek.c.is_finite()) {
            return SeekFloor {
                by_class: Vec::new(),
            };
        }
        let classes = Self::class(cylinders.max(2) - 1) + 1;
        let by_class = (0..classes)
            .map(|k| {
                let ns = (seek.eval(Self::class_start(k)) as u64).saturating_sub(1);
                (ns, ns % rev)
            })
            .collect();
        SeekFloor { by_class }
    }

    /// The class of distance `d`: `d` itself under 16, else 16 per bit length from
    /// 5 bits on plus the four bits after the leading one (`d >> shift` is then
    /// 16 to 31). No branch.
    #[inline]
    fn class(d: u32) -> usize {
        let shift = (31 - (d | 1).leading_zeros()).saturating_sub(4);
        ((shift << 4) + (d >> shift)) as usize
    }

    /// The shortest distance of class `k`.
    fn class_start(k: usize) -> u32 {
        if k < 16 {
            k as u32
        } else {
            let bits = (k / 16 + 3) as u32;
            (16 + (k % 16) as u32) << (bits - 4)
        }
    }

    /// A lower bound of the seek over `d > 0` cylinders and it modulo a
    /// revolution.
    #[inline]
    fn get(&self, d: u32) -> (u64, u64) {
        self.by_class.get(Self::class(d)).copied().unwrap_or((0, 0))
    }
}

/// What a queued host command needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A read not in the cache.
    Read,
    /// A write to the media (FUA, or no write cache).
    MediaWrite,
    /// A write waiting for write-buffer space.
    CachedWrite,
}

#[derive(Clone, Copy, Debug)]
struct Cmd {
    id: RqId,
    kind: Kind,
    lba: u64,
    n: u32,
    pos: Pos,
    arrived: Ns,
    /// Order of queueing (set by `Hdd::push_cmd`): the queue is in this order.
    seq: u64,
}

/// A positioned queued command (a read or a media write) in the rotational
/// index: what pricing it needs.
#[derive(Clone, Copy, Debug)]
struct Slot {
    pos: Pos,
    lba: u64,
    seq: u64,
    read: bool,
}

#[derive(Clone, Copy, Debug)]
struct Extent {
    lba: u64,
    n: u32,
    pos: Pos,
}

#[derive(Clone, Copy, Debug)]
enum Work {
    /// A host command; its completion is pushed when the mechanism finishes.
    Host(Cmd),
    /// A read served from the read-ahead stream: the mechanism streams until the
    /// data is in; then it is sent like a cache hit.
    Stream(Cmd),
    /// Writing back `n` sectors from the write buffer.
    Destage(u32),
    /// Finishing a sequential stream's minimum prefetch before the head moves.
    Prefetch,
}

#[derive(Clone, Copy, Debug, Default)]
struct Segment {
    start: u64,
    end: u64,
    lru: u64,
}

/// The read-ahead stream: the head kept reading from `pos` at time `t0`, at
/// `ns_per_sector`, up to `limit`, into segment `seg`.
#[derive(Clone, Copy, Debug)]
struct Stream {
    seg: usize,
    t0: Ns,
    pos: u64,
    limit: u64,
    ns_per_sector: f64,
    /// The head stays on the stream until it has read this far (minimum prefetch of
    /// a sequential stream).
    hold: u64,
}

impl Stream {
    fn valid_end(&self, t: Ns) -> u64 {
        let read = (t.since(self.t0) as f64 / self.ns_per_sector) as u64;
        (self.pos + read).min(self.limit)
    }
    fn ready_at(&self, end: u64) -> Ns {
        let more = end.saturating_sub(self.pos) as f64 * self.ns_per_sector;
        self.t0.add(more.ceil() as u64)
    }
}

/// A non-queued command in progress.
#[derive(Clone, Copy, Debug)]
struct FlushState {
    id: RqId,
    /// The write that follows a PREFLUSH, once the cache is clean.
    data: Option<Cmd>,
    /// The cache is clean; only `data` (if any) remains.
    drained: bool,
}

/// The disk model; see the module docs.
#[derive(Debug)]
pub struct Hdd {
    p: HddParams,
    info: DeviceInfo,
    geo: Geometry,
    seek: SeekCurve,
    seek_floor: SeekFloor,
    phase_ns: u64,
    overhead_ns: u64,
    hit_ns: u64,
    max_wait_ns: u64,
    /// Host commands waiting for the mechanism (or for buffer space), arrival order.
    queue: Vec<Cmd>,
    /// The positioned commands of `queue` by the angle of their first sector (then
    /// `seq`): the order in which they pass under the head.
    by_angle: Vec<Slot>,
    /// `seq` of the next queued command.
    next_seq: u64,
    /// Writes in `queue` waiting for buffer space (`Kind::CachedWrite`).
    waiting_writes: usize,
    /// Accepted host commands not yet completed (NCQ tags in use).
    outstanding: u32,
    busy: Option<(Ns, Work)>,
    /// When the mechanism last became free (decisions are made then).
    free_at: Ns,
    head_cyl: u32,
    head_head: u16,
    segments: Vec<Segment>,
    stream: Option<Stream>,
    lru_clock: u64,
    /// Dirty data by first LBA: disjoint extents (an overwrite replaces the buffered
    /// copy in place, neighbours coalesce).
    dirty: BTreeMap<u64, Extent>,
    dirty_sectors: u64,
    /// LBA just past the last sector the head accessed (centre of the destage window).
    head_lba: u64,
    /// Scratch for `buffer_write` (no allocation per write).
    absorb: Vec<(u64, u64)>,
    /// The extent being destaged, `[start, end)` (still in the buffer until written).
    destage_range: (u64, u64),
    /// Dirty sectors whose destage is in progress (still occupy the buffer).
    destaging: u64,
    wc_cap_sectors: u64,
    flush: Option<FlushState>,
    done: Completions,
    /// Firmware/link busy with cache-served commands until.
    iface_free: Ns,
}

impl Hdd {
    /// A fresh drive called `name`, spun up with its phase from the seed.
    pub fn new(name: &str, p: HddParams) -> Hdd {
        let geo = Geometry::new(&p);
        let seek = SeekCurve::fitted(&p).expect("validated profile");
        let phase_ns = splitmix(p.seed) % geo.rev_ns;
        let info = DeviceInfo {
            name: name.to_string(),
            capacity_sectors: p.capacity_bytes / 512,
            queue_depth: p.queue_depth,
            rotational: true,
            write_cache: p.write_cache,
            fua: false,
            max_hw_sectors: p.max_hw_kib * 2,
            max_segments: 168,
            nr_hw_queues: 1,
            default_scheduler: "mq-deadline",
            completion: crate::CompletionCpu::Vector,
        };
        let segments = vec![Segment::default(); p.cache_segments as usize];
        Hdd {
            overhead_ns: us_to_ns(p.command_overhead_us),
            hit_ns: us_to_ns(p.cache_hit_us),
            max_wait_ns: ms_to_ns(p.max_wait_ms),
            wc_cap_sectors: p.write_cache_kib as u64 * 2,
            queue: Vec::with_capacity(p.queue_depth as usize + 1),
            by_angle: Vec::with_capacity(p.queue_depth as usize + 1),
            next_seq: 0,
            waiting_writes: 0,
            outstanding: 0,
            busy: None,
            free_at: Ns::ZERO,
            head_cyl: 0,
            head_head: 0,
            segments,
            stream: None,
            lru_clock: 0,
            dirty: BTreeMap::new(),
            dirty_sectors: 0,
            head_lba: 0,
            absorb: Vec::with_capacity(8),
            destage_range: (0, 0),
            destaging: 0,
            flush: None,
            done: Completions::with_capacity(64),
            iface_free: Ns::ZERO,
            phase_ns,
            seek_floor: SeekFloor::new(&seek, p.cylinders, geo.rev_ns),
            geo,
            seek,
            info,
            p,
        }
    }

    /// Seek time for `d` cylinders, ns (for tests and docs).
    pub fn seek_ns(&self, d: u32) -> u64 {
        self.seek.eval(d) as u64
    }

    /// Sustained media rate at `lba`, bytes per second (track switches included).
    pub fn media_rate(&self, lba: u64) -> f64 {
        let z = self.geo.zone_of(lba.min(self.geo.total_sectors - 1)) as u16;
        512.0 * 1e9 / self.geo.stream_ns_per_sector(z)
    }

    /// One revolution, ns.
    pub fn rev_ns(&self) -> u64 {
        self.geo.rev_ns
    }

    fn complete(&mut self, t: Ns, id: RqId) {
        self.done.push(t, id);
    }

    fn iface_ns(&self, sectors: u32) -> u64 {
        (sectors as f64 * 512.0 * 1000.0 / self.p.interface_mb_s) as u64
    }

    /// A command served from the cache (read hit, buffered write) from `t`: the
    /// firmware and the link handle these one at a time, which caps cached IOPS.
    fn serve_from_cache(&mut self, t: Ns, sectors: u32) -> Ns {
        let start = t.max(self.iface_free);
        self.iface_free = start.add(self.hit_ns + self.iface_ns(sectors));
        self.iface_free
    }

    /// Seek or head switch, then rotational wait, from the current head position
    /// starting at `t`.
    fn positioning(&self, t: Ns, to: &Pos) -> u64 {
        self.positioning_at(self.angle_at(t), to)
    }

    /// The platter's angle (ns into a revolution) at `t`.
    fn angle_at(&self, t: Ns) -> u64 {
        (t.0 + self.phase_ns) % self.geo.rev_ns
    }

    /// [`Hdd::positioning`] from the angle the platter is at when the move
    /// starts: the dispatch loop computes it once for every queued command.
    fn positioning_at(&self, angle: u64, to: &Pos) -> u64 {
        let d = self.head_cyl.abs_diff(to.cyl);
        let mv = if d > 0 {
            self.seek.eval(d) as u64
        } else if self.head_head != to.head {
            self.geo.head_skew_ns
        } else {
            0
        };
        let rev = self.geo.rev_ns;
        settle(wrap(angle + mv, rev), mv, to.angle, rev)
    }

    /// A lower bound of [`Hdd::positioning_at`]: the same with the seek's floor
    /// ([`SeekFloor`]) for its time. A positioning ends when the sector passes
    /// under the head, so a longer move only ends at a later pass (or, within the
    /// slack, at the move's end); no division, no square root.
    #[inline]
    fn positioning_floor(&self, angle: u64, to: &Pos) -> u64 {
        let d = self.head_cyl.abs_diff(to.cyl);
        let (mv, mv_turn) = if d > 0 {
            self.seek_floor.get(d)
        } else if self.head_head != to.head {
            (self.geo.head_skew_ns, self.geo.head_skew_ns)
        } else {
            (0, 0)
        };
        let rev = self.geo.rev_ns;
        settle(wrap2(angle + mv_turn, rev), mv, to.angle, rev)
    }

    /// The segment holding `[lba, end)` at `t`, if any.
    fn cached(&self, lba: u64, end: u64, t: Ns) -> Option<usize> {
        let seg_sectors = self.p.segment_kib as u64 * 2;
        // The segment being read ahead into is valid as far as the stream got.
        let (live, live_end) = match self.stream {
            Some(st) => (st.seg, st.valid_end(t)),
            None => (usize::MAX, 0),
        };
        debug_assert!(lba < end && end < 1 << 62);
        self.segments.iter().enumerate().position(|(i, s)| {
            let valid = if i == live { live_end } else { s.end };
            let start = s.start.max(valid.saturating_sub(seg_sectors));
            // `start <= lba && end <= valid` (so `start < valid`, as `lba < end`) as
            // one sign test, without branches: usually no segment holds the read,
            // and compared one by one the outcomes are random. Sector numbers are
            // far below 2^63.
            (lba.wrapping_sub(start) | valid.wrapping_sub(end)) >> 63 == 0
        })
    }

    /// Stop the read-ahead stream at `t` (the head is leaving).
    fn stop_stream(&mut self, t: Ns) {
        if let Some(st) = self.stream.take() {
            let v = st.valid_end(t);
            self.segments[st.seg].end = v;
            if v > 0 {
                let p = self.geo.place(v - 1);
                self.head_cyl = p.cyl;
                self.head_head = p.head;
                self.head_lba = v;
            }
        }
    }

    fn invalidate(&mut self, lba: u64, end: u64, t: Ns) {
        if let Some(st) = &self.stream {
            let s = self.segments[st.seg];
            if lba < st.limit.max(s.end) && end > s.start {
                self.stop_stream(t);
            }
        }
        for s in &mut self.segments {
            if lba < s.end && end > s.start {
                *s = Segment::default();
            }
        }
    }

    /// Put `[lba, end)` into a segment and start reading ahead from `end` at `t`.
    /// A read that starts where a segment ends continues that segment's stream: it
    /// reuses the segment (one segment per stream) and is a detected sequential
    /// stream, which gets its minimum prefetch.
    fn start_stream(&mut self, lba: u64, end: u64, t: Ns) {
        let follows = self
            .segments
            .iter()
            .position(|s| s.end > s.start && s.end == lba);
        let i = follows.unwrap_or_else(|| {
            self.segments
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.lru)
                .map(|(i, _)| i)
                .unwrap_or(0)
        });
        self.lru_clock += 1;
        self.segments[i] = Segment {
            start: lba,
            end,
            lru: self.lru_clock,
        };
        let limit = (end + self.p.read_ahead_kib as u64 * 2).min(self.geo.total_sectors);
        let hold = if follows.is_some() {
            self.prefetch_hold(end, limit)
        } else {
            end
        };
        self.stream = Some(Stream {
            seg: i,
            t0: t,
            pos: end,
            limit,
            hold,
            ns_per_sector: self
                .geo
                .stream_ns_per_sector(self.geo.zone_of(end.min(self.geo.total_sectors - 1)) as u16),
        });
    }

    /// How far a sequential stream whose request ends at `end` must be read before
    /// the head may leave it.
    fn prefetch_hold(&self, end: u64, limit: u64) -> u64 {
        (end + self.p.min_prefetch_kib as u64 * 2).min(limit)
    }

    /// The stream's minimum prefetch is still running at `t`: when it is done.
    fn prefetch_pending(&self, t: Ns) -> Option<Ns> {
        let st = self.stream.as_ref()?;
        (st.valid_end(t) < st.hold).then(|| st.ready_at(st.hold))
    }

    /// Does `c` continue the read-ahead stream?
    fn continues_stream(&self, c: &Cmd) -> bool {
        match (&self.stream, c.kind) {
            (Some(st), Kind::Read) => {
                let s = self.segments[st.seg];
                c.lba >= s.start && c.lba <= st.limit
            }
            _ => false,
        }
    }

    fn wc_full(&self, lba: u64, n: u32) -> bool {
        if self.in_write_buffer(lba, lba + n as u64) {
            return false; // an overwrite in place takes no space
        }
        self.dirty_sectors + self.destaging + n as u64 > self.wc_cap_sectors
            || self.dirty.len() >= self.p.write_cache_extents as usize
    }

    /// Put a write into the buffer. The buffer keeps one copy per LBA: a write over
    /// buffered data replaces it in place (Seagate's SAS manuals: the cache is checked
    /// for blocks "already stored in the cache from a previous read or write command";
    /// "the new data is cached"), so 32 writers rewriting the same sectors occupy them
    /// once. A write touching or overlapping buffered extents merges with them (up to
    /// `MAX_EXTENT` when merely adjacent), wherever they are in the buffer.
    fn buffer_write(&mut self, lba: u64, n: u32) {
        let (start, end, removed) = extents::coalesce(
            &mut self.dirty,
            &mut self.absorb,
            lba,
            lba + n as u64,
            MAX_EXTENT as u64,
            |k, e| k + e.n as u64,
        );
        self.dirty_sectors -= removed;
        let pos = self.geo.locate(start);
        let n = (end - start) as u32;
        self.dirty.insert(start, Extent { lba: start, n, pos });
        self.dirty_sectors += n as u64;
    }

    /// Is `[lba, end)` entirely in the write buffer? (A read of it is a cache hit:
    /// drives serve reads of data they hold for writing, e.g. Fujitsu MHK2 manual §6.6,
    /// "the drive uses a cache data of the last write command as a read cache data".)
    fn in_write_buffer(&self, lba: u64, end: u64) -> bool {
        self.dirty
            .range(..=lba)
            .next_back()
            .is_some_and(|(&k, e)| k <= lba && end <= k + e.n as u64)
    }

    /// Admit writes waiting for buffer space, in arrival order, at `t`.
    fn admit_waiting(&mut self, t: Ns) {
        while self.waiting_writes > 0 {
            let i = self
                .queue
                .iter()
                .position(|c| c.kind == Kind::CachedWrite)
                .expect("a write waits for buffer space");
            let c = self.queue[i];
            if self.wc_full(c.lba, c.n) {
                break;
            }
            self.take_cmd(i);
            self.buffer_write(c.lba, c.n);
            let at = self.serve_from_cache(t, c.n);
            self.complete(at, c.id);
        }
    }

    /// Queue a host command (in arrival order; a positioned one also in the
    /// rotational index).
    fn push_cmd(&mut self, mut c: Cmd) {
        debug_assert!(
            self.queue.last().is_none_or(|l| l.arrived <= c.arrived),
            "commands are queued in arrival order"
        );
        c.seq = self.next_seq;
        self.next_seq += 1;
        if c.kind == Kind::CachedWrite {
            self.waiting_writes += 1;
        } else {
            // The newest command goes after every other at its angle.
            let at = self
                .by_angle
                .partition_point(|s| s.pos.angle <= c.pos.angle);
            self.by_angle.insert(
                at,
                Slot {
                    pos: c.pos,
                    lba: c.lba,
                    seq: c.seq,
                    read: c.kind == Kind::Read,
                },
            );
        }
        self.queue.push(c);
    }

    /// Take queued command `i` out of the queue (and the rotational index).
    fn take_cmd(&mut self, i: usize) -> Cmd {
        let c = self.queue.remove(i);
        if c.kind == Kind::CachedWrite {
            self.waiting_writes -= 1;
        } else {
            let j = self
                .by_angle
                .binary_search_by(|s| (s.pos.angle, s.seq).cmp(&(c.pos.angle, c.seq)))
                .expect("a positioned command is in the rotational index");
            self.by_angle.remove(j);
        }
        c
    }

    /// The cheapest queued host command to start at `t` (the platter at `angle`
    /// once the command overhead is spent): its cost and queue index, the
    /// earliest queued on ties. Reads the read-ahead stream is about to reach cost
    /// the wait for the stream; the others their positioning. Those are visited
    /// in the order their sectors pass under the head from `angle` on: a
    /// positioning ends when the sector passes under the head, so it costs at
    /// least that rotational distance, and once the distance alone exceeds the
    /// best cost found no later command can win — except those just behind the
    /// head, within the channel's slack, which a move can reach at its very end
    /// and are visited apart. Commands whose floor ([`Hdd::positioning_floor`])
    /// already loses are not priced. The same choice as pricing every command
    /// ([`Hdd::cheapest_host_exhaustive`]) in a fraction of the time.
    fn cheapest_host(&self, t: Ns, angle: u64) -> Option<(u64, usize)> {
        let rev = self.geo.rev_ns;
        let oh = self.overhead_ns;
        // (cost, seq): the sequence number orders commands as the queue does.
        let mut best: Option<(u64, u64)> = None;
        let stream = self
            .stream
            .map(|st| (self.segments[st.seg].start, st.limit));
        let streams = |read: bool, lba: u64| {
            read && stream.is_some_and(|(start, limit)| lba >= start && lba <= limit)
        };
        if let Some(st) = &self.stream {
            for c in &self.queue {
                if streams(c.kind == Kind::Read, c.lba) {
                    let cost = st.ready_at(c.lba + c.n as u64).since(t);
                    if best.is_none_or(|b| (cost, c.seq) < b) {
                        best = Some((cost, c.seq));
                    }
                }
            }
        }
        let price = |s: &Slot, best: &mut Option<(u64, u64)>| {
            if streams(s.read, s.lba) {
                return; // priced above
            }
            if best.is_some_and(|b| (oh + self.positioning_floor(angle, &s.pos), s.seq) > b) {
                return;
            }
            let cost = oh + self.positioning_at(angle, &s.pos);
            if best.is_none_or(|b| (cost, s.seq) < b) {
                *best = Some((cost, s.seq));
            }
        };
        let n = self.by_angle.len();
        let first = self
            .by_angle
            .partition_point(|s| (s.pos.angle as u64) < angle);
        let slot = |j: usize| {
            &self.by_angle[if first + j < n {
                first + j
            } else {
                first + j - n
            }]
        };
        let distance = |s: &Slot| wrap2(s.pos.angle as u64 + rev - angle, rev);
        let mut j = 0;
        while j < n {
            let s = slot(j);
            let r = distance(s);
            if r + SLACK_NS < rev && best.is_some_and(|b| oh + r > b.0) {
                break;
            }
            price(s, &mut best);
            j += 1;
        }
        // The commands just behind the head (the last in that order).
        let mut k = n;
        while k > j {
            let s = slot(k - 1);
            if distance(s) + SLACK_NS < rev {
                break;
            }
            price(s, &mut best);
            k -= 1;
        }
        let (cost, seq) = best?;
        let i = self
            .queue
            .binary_search_by_key(&seq, |c| c.seq)
            .expect("the chosen command is queued");
        Some((cost, i))
    }

    /// [`Hdd::cheapest_host`] by pricing every queued command in queue order (the
    /// definition; debug builds check the pruned scan against it).
    fn cheapest_host_exhaustive(&self, t: Ns, angle: u64) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for (i, c) in self.queue.iter().enumerate() {
            if c.kind == Kind::CachedWrite {
                continue;
            }
            let cost = if self.continues_stream(c) {
                let st = self.stream.as_ref().expect("stream");
                st.ready_at(c.lba + c.n as u64).since(t)
            } else {
                self.overhead_ns + self.positioning_at(angle, &c.pos)
            };
            if best.is_none_or(|b| cost < b.0) {
                best = Some((cost, i));
            }
        }
        best
    }

    /// Choose and start the next media operation at `t`; false if there is none.
    fn dispatch(&mut self, t: Ns) -> bool {
        let flushing = self.flush.is_some_and(|f| !f.drained);
        let host_media = self.queue.len() > self.waiting_writes;
        let pressure = self.dirty_sectors * 4 > self.wc_cap_sectors * 3
            || self.dirty.len() * 4 > self.p.write_cache_extents as usize * 3
            || self.waiting_writes > 0;
        let destage_ok = !self.dirty.is_empty() && (flushing || !host_media || pressure);

        // Aging: the oldest host command past its deadline goes first (the queue
        // is in arrival order: the first is the oldest).
        let mut best: Option<(u64, usize, bool)> = None; // (cost, index, is_destage)
        if let Some((i, c)) = self
            .queue
            .iter()
            .enumerate()
            .find(|(_, c)| c.kind != Kind::CachedWrite)
        {
            if t.since(c.arrived) > self.max_wait_ns {
                best = Some((0, i, false));
            }
        }
        if best.is_none() {
            let angle = self.angle_at(t.add(self.overhead_ns));
            best = self
                .cheapest_host(t, angle)
                .map(|(cost, i)| (cost, i, false));
            debug_assert_eq!(
                best.map(|(cost, i, _)| (cost, i)),
                self.cheapest_host_exhaustive(t, angle),
                "the pruned scan must choose as pricing every command does"
            );
            if destage_ok {
                // Bound the scan: the extents nearest the head in LBA order (32 at or
                // after it, 32 before it) are the candidates.
                let h = self.head_lba;
                let after = self.dirty.range(h..).take(32);
                let before = self.dirty.range(..h).rev().take(32);
                let angle = self.angle_at(t);
                for (_, e) in after.chain(before) {
                    let cost = self.positioning_at(angle, &e.pos);
                    if best.is_none_or(|b| cost < b.0) {
                        best = Some((cost, e.lba as usize, true));
                    }
                }
            }
        }
        let Some((_, i, is_destage)) = best else {
            return false;
        };
        let leaves = is_destage || !self.continues_stream(&self.queue[i]);
        if leaves {
            if let Some(until) = self.prefetch_pending(t) {
                // A detected sequential stream keeps the head until its minimum
                // prefetch is in; the chosen command is priced again then.
                self.busy = Some((until.max(t.add(1)), Work::Prefetch));
                return true;
            }
        }
        if is_destage {
            let e = self.dirty.remove(&(i as u64)).expect("destage candidate");
            self.dirty_sectors -= e.n as u64;
            self.destaging += e.n as u64;
            self.stop_stream(t);
            let pos = self.positioning(t, &e.pos);
            let (x, cyl, head) = self.geo.transfer(e.lba, &e.pos, e.n);
            self.head_cyl = cyl;
            self.head_head = head;
            self.head_lba = e.lba + e.n as u64;
            self.destage_range = (e.lba, e.lba + e.n as u64);
            self.busy = Some((t.add(pos + x), Work::Destage(e.n)));
            return true;
        }
        let c = self.take_cmd(i);
        if self.continues_stream(&c) {
            let end = c.lba + c.n as u64;
            let st = self.stream.as_mut().expect("stream");
            st.limit = st
                .limit
                .max((end + self.p.read_ahead_kib as u64 * 2).min(self.geo.total_sectors));
            let hold = (end + self.p.min_prefetch_kib as u64 * 2).min(st.limit);
            st.hold = st.hold.max(hold);
            let ready = st.ready_at(end).max(t);
            self.busy = Some((ready, Work::Stream(c)));
            return true;
        }
        self.stop_stream(t);
        let start = t.add(self.overhead_ns);
        let pos = self.positioning(start, &c.pos);
        let (x, cyl, head) = self.geo.transfer(c.lba, &c.pos, c.n);
        self.head_cyl = cyl;
        self.head_head = head;
        self.head_lba = c.lba + c.n as u64;
        self.busy = Some((start.add(pos + x), Work::Host(c)));
        true
    }

    /// Finish the operation that ends at `t`.
    fn finish(&mut self, t: Ns, w: Work) {
        match w {
            Work::Host(c) => {
                match c.kind {
                    Kind::Read => self.start_stream(c.lba, c.lba + c.n as u64, t),
                    Kind::MediaWrite | Kind::CachedWrite => {}
                }
                self.complete(t, c.id);
            }
            Work::Stream(c) => {
                let end = c.lba + c.n as u64;
                if let Some(st) = self.stream {
                    let s = &mut self.segments[st.seg];
                    s.end = s.end.max(end);
                    self.lru_clock += 1;
                    s.lru = self.lru_clock;
                }
                let at = self.serve_from_cache(t, c.n);
                self.complete(at, c.id);
            }
            Work::Prefetch => {}
            Work::Destage(n) => {
                self.destaging -= n as u64;
                self.destage_range = (0, 0);
                self.admit_waiting(t);
            }
        }
    }

    /// Advance the mechanism to `now`: finish operations and start new ones.
    fn run(&mut self, now: Ns) {
        loop {
            if let Some((until, w)) = self.busy {
                if until > now {
                    return;
                }
                self.busy = None;
                self.free_at = until;
                self.finish(until, w);
            }
            let t = self.free_at;
            if !self.dispatch(t) {
                self.check_flush(t);
                if self.busy.is_none() {
                    return;
                }
            }
        }
    }

    /// Progress a flush once the mechanism is idle and the buffer clean.
    fn check_flush(&mut self, t: Ns) {
        let Some(f) = self.flush else { return };
        if f.drained || !self.dirty.is_empty() || self.destaging > 0 || self.busy.is_some() {
            return;
        }
        match f.data {
            Some(c) => {
                self.flush = Some(FlushState { drained: true, ..f });
                self.push_cmd(c);
                self.dispatch(t);
            }
            None => {
                // Stays set (refusing new commands) until the completion is reaped.
                self.flush = Some(FlushState { drained: true, ..f });
                self.complete(t.add(self.overhead_ns), f.id);
            }
        }
    }
}

/// Positioning time when the move (seek or head switch) takes `mv` ns and ends
/// with the platter at angle `at` (ns into a revolution of `rev`): the move, then
/// the rotational wait until the sector at `to_angle` comes under the head.
#[inline]
fn settle(at: u64, mv: u64, to_angle: u32, rev: u64) -> u64 {
    let wait = wrap2(to_angle as u64 + rev - at, rev);
    // Integer rounding can put a perfectly sequential access a few ns past its
    // sector; the drive's timing slack absorbs that rather than losing a turn.
    let lost_turn = wait + SLACK_NS >= rev;
    mv + (wait & 0u64.wrapping_sub((!lost_turn) as u64))
}

/// Timing slack of the read/write channel, ns.
const SLACK_NS: u64 = 2_000;

/// Largest extent the write buffer builds by coalescing, sectors (1 MiB).
const MAX_EXTENT: u32 = 2048;

/// SplitMix64: a seed to a well-mixed value.
pub(crate) fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Driver for Hdd {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        self.run(now);
        if self.flush.is_some() || self.outstanding >= self.p.queue_depth {
            return QueueRqStatus::DevResource;
        }
        let preflush = matches!(rq.op, Op::Flush) || rq.flags.has(ReqFlags::PREFLUSH);
        if preflush && self.outstanding > 0 {
            // SATA: FLUSH CACHE is not an NCQ command; it waits for the queue to drain.
            return QueueRqStatus::DevResource;
        }
        self.outstanding += 1;
        if self.busy.is_none() {
            self.free_at = self.free_at.max(now);
        }
        let lba = rq.sector.0.min(self.geo.total_sectors - 1);
        let n = rq.nr_sectors.max(1);
        let end = lba + n as u64;
        let mk = |kind, geo: &Geometry| Cmd {
            id,
            kind,
            lba,
            n,
            pos: geo.locate(lba),
            arrived: now,
            seq: 0,
        };
        match rq.op {
            Op::Flush => {
                self.flush = Some(FlushState {
                    id,
                    data: None,
                    drained: false,
                });
            }
            Op::Discard
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneFinish
            | Op::ZoneReset
            | Op::ZoneResetAll => {
                // Disks ignore TRIM-like hints, and a zone command only moves
                // the drive's zone state (kept by the zone layer): only the
                // command costs (unverified for zone commands).
                self.complete(now.add(self.overhead_ns), id);
            }
            Op::Read => match self.cached(lba, end, now) {
                Some(seg) => {
                    self.lru_clock += 1;
                    self.segments[seg].lru = self.lru_clock;
                    let at = self.serve_from_cache(now, n);
                    self.complete(at, id);
                }
                None if self.in_write_buffer(lba, end)
                    || (lba >= self.destage_range.0 && end <= self.destage_range.1) =>
                {
                    let at = self.serve_from_cache(now, n);
                    self.complete(at, id);
                }
                None => {
                    let c = mk(Kind::Read, &self.geo);
                    self.push_cmd(c);
                }
            },
            Op::Write | Op::ZoneAppend => {
                self.invalidate(lba, end, now);
                let fua = rq.flags.has(ReqFlags::FUA) || !self.p.write_cache;
                let c = mk(
                    if fua {
                        Kind::MediaWrite
                    } else {
                        Kind::CachedWrite
                    },
                    &self.geo,
                );
                if preflush {
                    self.flush = Some(FlushState {
                        id,
                        data: Some(Cmd {
                            kind: Kind::MediaWrite,
                            ..c
                        }),
                        drained: false,
                    });
                } else {
                    self.push_cmd(c);
                    self.admit_waiting(now);
                }
            }
        }
        if self.busy.is_none() {
            self.run(now);
            self.check_flush(now);
        }
        QueueRqStatus::Ok
    }
}

impl Device for Hdd {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn next_event(&self) -> Option<Ns> {
        let a = self.done.next();
        let b = self.busy.map(|(t, _)| t);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.run(now);
        while let Some(id) = self.done.pop_due(now) {
            self.outstanding -= 1;
            if self.flush.is_some_and(|f| f.id == id) {
                self.flush = None;
            }
            done.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdd_profiles() -> Vec<(String, HddParams)> {
        crate::profiles()
            .into_iter()
            .filter_map(|prof| match prof.kind {
                crate::ProfileKind::Hdd(p) => Some((prof.name, p)),
                _ => None,
            })
            .collect()
    }

    /// Distance classes tile the distances: each class starts at its own first
    /// distance, and every distance lies in the class whose start is the largest
    /// not above it.
    #[test]
    fn seek_floor_classes_tile_the_distances() {
        for k in 1..464 {
            let start = SeekFloor::class_start(k);
            assert_eq!(SeekFloor::class(start), k, "class {k} starts at {start}");
            assert_eq!(SeekFloor::class(start - 1), k - 1, "before class {k}");
            if k < 463 {
                assert!(SeekFloor::class_start(k + 1) > start, "class {k}");
            }
        }
        for d in [1u32, 15, 16, 31, 32, 33, 1000, 65_535, 420_000, u32::MAX] {
            let k = SeekFloor::class(d);
            assert!(SeekFloor::class_start(k) <= d, "d={d}");
            assert!(k == 463 || SeekFloor::class_start(k + 1) > d, "d={d}");
        }
        assert_eq!(SeekFloor::class(u32::MAX), 463);
    }

    /// The floor never exceeds the seek it stands for, at every distance of each
    /// built-in disk, and is within a class's spread of it: exact (less the
    /// rounding nanosecond) at each class's first distance.
    #[test]
    fn seek_floor_is_below_every_seek_of_its_class() {
        for (name, p) in hdd_profiles() {
            let curve = SeekCurve::fit(&p).unwrap();
            let rev = Geometry::new(&p).rev_ns;
            let floor = SeekFloor::new(&curve, p.cylinders, rev);
            assert!(!floor.by_class.is_empty(), "{name}: the curve rises");
            for d in 1..p.cylinders {
                let seek = curve.eval(d) as u64;
                let (f, f_turn) = floor.get(d);
                assert!(f <= seek, "{name} d={d}: floor {f} > seek {seek}");
                assert_eq!(f_turn, f % rev);
                if SeekFloor::class_start(SeekFloor::class(d)) == d {
                    assert_eq!(f, seek.saturating_sub(1), "{name} d={d}");
                }
                // Classes are at most 1/16 of their distance wide.
                let start = SeekFloor::class_start(SeekFloor::class(d));
                assert!(d - start <= d / 16, "{name} d={d}");
            }
        }
    }

    /// The pruned choice of the next host command is the one pricing every queued
    /// command gives, on random queues: commands spread over the disk or packed
    /// into a few cylinders, a sector just behind the head's angle (within the
    /// channel's slack or just beyond it, on the head's track or elsewhere), reads a
    /// read-ahead stream is about to reach, and writes waiting for buffer space
    /// (never chosen).
    #[test]
    fn pruned_choice_is_the_cheapest_command() {
        let (_, p) = hdd_profiles()
            .into_iter()
            .find(|(n, _)| n == "hdd-7200")
            .expect("built-in disk");
        let mut d = Hdd::new("t", p);
        let total = d.geo.total_sectors;
        let rev = d.geo.rev_ns;
        let mut rng = 7u64;
        let mut next = || {
            rng = splitmix(rng);
            rng
        };
        let (mut streamed, mut slack_wins) = (0, 0);
        for round in 0..5000u64 {
            d.queue.clear();
            d.by_angle.clear();
            d.waiting_writes = 0;
            d.stream = None;
            let head = d.geo.locate(next() % total);
            d.head_cyl = head.cyl;
            d.head_head = head.head;
            let stream_start = next() % (total - 10_000);
            if round % 3 == 0 {
                d.segments[0] = Segment {
                    start: stream_start,
                    end: stream_start + 8,
                    lru: 0,
                };
                d.stream = Some(Stream {
                    seg: 0,
                    t0: Ns(next() % 1_000_000_000),
                    pos: stream_start + 8,
                    limit: stream_start + 2_056,
                    ns_per_sector: d.geo.stream_ns_per_sector(head.zone),
                    hold: stream_start + 8,
                });
            }
            let n = 1 + next() % 32;
            let packed = next() % 2 == 0;
            let base = next() % (total - 20_000_000);
            for i in 0..n {
                let lba = match next() % 6 {
                    0 if d.stream.is_some() => stream_start + next() % 4_000,
                    _ if packed => base + next() % 20_000_000,
                    _ => next() % total,
                };
                let kind = match next() % 10 {
                    0 => Kind::CachedWrite,
                    1 | 2 => Kind::MediaWrite,
                    _ => Kind::Read,
                };
                d.push_cmd(Cmd {
                    id: RqId(i as u32),
                    kind,
                    lba,
                    n: 8,
                    pos: d.geo.locate(lba),
                    arrived: Ns::ZERO,
                    seq: 0,
                });
            }
            // Half the time the platter is placed just past one command's sector
            // (and sometimes the head on its track): it is then in or near the slack.
            let mut angle = next() % rev;
            if next() % 2 == 0 {
                let c = d.queue[(next() % n) as usize];
                angle = (c.pos.angle as u64 + next() % (3 * SLACK_NS)) % rev;
                if next() % 2 == 0 {
                    d.head_cyl = c.pos.cyl;
                    d.head_head = c.pos.head;
                }
            }
            let before = 1 + next() % 1_000;
            let t = Ns(before * rev + (angle + 2 * rev - d.phase_ns - d.overhead_ns % rev) % rev);
            assert_eq!(d.angle_at(t.add(d.overhead_ns)), angle);
            let fast = d.cheapest_host(t, angle);
            assert_eq!(fast, d.cheapest_host_exhaustive(t, angle), "round {round}");
            if let Some((cost, i)) = fast {
                let c = &d.queue[i];
                assert_ne!(c.kind, Kind::CachedWrite);
                streamed += d.continues_stream(c) as u32;
                let behind = (angle + rev - c.pos.angle as u64) % rev;
                slack_wins += (behind > 0 && behind <= SLACK_NS && cost < rev) as u32;
            }
        }
        assert!(streamed > 20, "stream reads won {streamed} times");
        assert!(
            slack_wins > 20,
            "commands within the slack won {slack_wins} times"
        );
    }
}
