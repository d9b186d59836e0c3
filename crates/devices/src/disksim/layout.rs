//! DiskSim's zoned layout (`dm_layout_g1`, DiskSim 4.0 `diskmodel/layout_g1.c` and
//! `layout_g1_load.c`): which cylinder, surface and angle hold a logical block.
//!
//! Every rule of the g1 layout is here, each with the DiskSim function it follows:
//!
//! * **Mapping schemes** (`g1_surfno_on_cyl`): 0 — blocks run along surface 0, 1, …
//!   of each cylinder; 1 — serpentine, odd cylinders (counted from the zone's first)
//!   run from the last surface back to surface 0, so a cylinder switch stays on its
//!   surface; 2 — the same with odd cylinders counted on the whole disk.
//! * **Sparing schemes** (the `g1_ltop_*` functions and
//!   `dm_layout_g1_compute_blksinband`): 0 none; 1 spare tracks at the zone end,
//!   slips and defects counted in tracks; 2 spare sectors at the end of each
//!   cylinder; 3 at the end of each track; 4 per cylinder with slips pushing the
//!   blocks on to the zone end instead of using the spares; 5 at the front of each
//!   cylinder; 6 at the front with slips pushed to the zone end; 7 no spares in the
//!   zone, slips pushed to the end; 8 at the end of each range of `range`
//!   cylinders; 9 at the zone end; 10 at the zone end with slips pushed on.
//! * **Slips**: a slipped location (a physical sector index in the zone, or a track
//!   with scheme 1) holds no block; the blocks after it move up by one, inside the
//!   track, cylinder, range or zone whose spares absorb them (or to the zone end
//!   for the slip-to-end schemes).
//! * **Defects** (remapped): `(defective, replacement)` pairs of physical indices
//!   in the zone (tracks with scheme 1); the block that would sit on the defective
//!   location lives at the replacement instead.
//! * **Skew**: a block's angle is `offset of first block + track skew × track
//!   switches + cylinder skew × cylinders + sector` (all in sectors of the zone,
//!   counted from the zone's first cylinder; track switches by the block order, so
//!   serpentine layouts count them on the logical surface), plus one sector per
//!   slip on earlier tracks (scheme 3) or cylinders (schemes 2, 4, 5, 6), as
//!   `g1_map_pbn_skew` pushes the skew on past slips.
//! * **Empty space at the zone front** is counted in the scheme's block slots
//!   (spares excluded), as DiskSim adds `deadspace` to the block number.
//!
//! Where DiskSim's code contradicts its own manual, the manual's meaning is taken
//! (each in docs/devices.md): scheme 0's `g1_ltop_nosparing` stores the surface in
//! the cylinder field; schemes 5 and 6 place the spares at the cylinder front only
//! in the reverse mapping (`g1_ptol_sectpercylspare`), here in both; with schemes
//! 2 and 5 a cylinder's spares take its slips (DiskSim's `g1_ltop_sectpercylspare`
//! moves a block pushed past the last data slot to the next cylinder, onto the
//! sector of that cylinder's first block); slips are
//! taken in ascending order (DiskSim counts them in list order); scheme 3's
//! slip-pushed skew counts earlier tracks in block order (DiskSim uses the physical
//! surface, the same for mapping 0); a scheme-8
//! replacement is a zone index like every other scheme's (DiskSim keeps only its
//! offset inside the range).

/// Where a block is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pos {
    /// Cylinder.
    pub cyl: u32,
    /// Surface.
    pub head: u32,
    /// Angle of the sector's start, in revolutions (0 to 1).
    pub angle: f64,
    /// Time the sector takes to pass under the head, ms.
    pub sector_ms: f64,
}

/// One zone as the layout needs it (the profile's zone plus its slips and defects).
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneSpec {
    /// First cylinder.
    pub first_cyl: u32,
    /// Last cylinder (inclusive).
    pub last_cyl: u32,
    /// Sectors per track.
    pub spt: u32,
    /// Angle of the zone's first block, sectors.
    pub first_offset: f64,
    /// Empty space at the zone front, block slots.
    pub front: u64,
    /// Skew per track switch, sectors.
    pub track_skew: f64,
    /// Skew per cylinder switch, sectors.
    pub cyl_skew: f64,
    /// Spares per track, cylinder, range or zone, or spare tracks (scheme 1).
    pub spares: u32,
    /// Slipped locations.
    pub slips: Vec<u64>,
    /// Remapped defects: (defective, replacement).
    pub defects: Vec<(u64, u64)>,
}

/// The whole layout.
#[derive(Clone, Debug)]
pub struct Layout {
    zones: Vec<LZone>,
    heads: u64,
    sparing: u32,
    mapping: u32,
    range: u64,
    total: u64,
}

#[derive(Clone, Debug)]
struct LZone {
    z: ZoneSpec,
    first_lbn: u64,
    lbns: u64,
    sector_ms: f64,
}

/// A block's place inside its zone, before the surface mapping.
struct Phys {
    cyl_rel: u64,
    /// Surface in block order (the physical one for mapping 0).
    lhead: u64,
    sector: u64,
}

/// Slip-to-end schemes: slips do not use the cylinder's (zone's) spares.
fn slip_to_end(s: u32) -> bool {
    matches!(s, 4 | 6 | 7)
}

impl Layout {
    /// Build the layout; `rpm` sets each zone's sector time.
    pub fn new(
        zones: &[ZoneSpec],
        heads: u32,
        sparing: u32,
        mapping: u32,
        range: u32,
        rpm: f64,
    ) -> Layout {
        let rev = 60_000.0 / rpm;
        let heads = heads.max(1) as u64;
        let range = range.max(1) as u64;
        let mut lbn = 0;
        let mut out = Vec::new();
        for z in zones {
            let mut z = z.clone();
            z.slips.sort_unstable();
            let lbns = blocks_in_zone(&z, heads, sparing, range);
            out.push(LZone {
                sector_ms: rev / z.spt.max(1) as f64,
                z,
                first_lbn: lbn,
                lbns,
            });
            lbn += lbns;
        }
        Layout {
            zones: out,
            heads,
            sparing,
            mapping,
            range,
            total: lbn,
        }
    }

    /// Blocks the layout holds.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Where block `lbn` is (clamped to the last block).
    pub fn locate(&self, lbn: u64) -> Pos {
        let lbn = lbn.min(self.total.saturating_sub(1));
        let zi = self
            .zones
            .partition_point(|z| z.first_lbn + z.lbns <= lbn)
            .min(self.zones.len() - 1);
        let lz = &self.zones[zi];
        let z = &lz.z;
        let q = lbn - lz.first_lbn + z.front;
        let ph = self.place(z, q);
        let head = self.surface(z, ph.cyl_rel, ph.lhead);
        let switches = ph.lhead + (self.heads - 1) * ph.cyl_rel;
        let slipoffs = self.skew_slips(z, &ph);
        let skew = z.first_offset
            + z.track_skew * switches as f64
            + z.cyl_skew * ph.cyl_rel as f64
            + slipoffs as f64;
        let spt = z.spt as f64;
        let a = (skew + ph.sector as f64) / spt;
        Pos {
            cyl: z.first_cyl + ph.cyl_rel as u32,
            head: head as u32,
            angle: a - a.floor(),
            sector_ms: lz.sector_ms,
        }
    }

    /// The physical surface of logical surface `lhead` on zone cylinder `cyl_rel`
    /// (`g1_surfno_on_cyl`).
    fn surface(&self, z: &ZoneSpec, cyl_rel: u64, lhead: u64) -> u64 {
        let odd = match self.mapping {
            1 => cyl_rel % 2 == 1,
            2 => (z.first_cyl as u64 + cyl_rel) % 2 == 1,
            _ => false,
        };
        if odd {
            self.heads - 1 - lhead
        } else {
            lhead
        }
    }

    /// Slips that push the skew of this block's track on (`g1_map_pbn_skew`).
    fn skew_slips(&self, z: &ZoneSpec, ph: &Phys) -> usize {
        let tracks = match self.sparing {
            2 | 4 | 5 | 6 => ph.cyl_rel * self.heads,
            3 => ph.cyl_rel * self.heads + ph.lhead,
            _ => return 0,
        };
        let cutoff = tracks * z.spt as u64;
        z.slips.partition_point(|&s| s < cutoff)
    }

    /// Zone slot `q` (front space included) to its place in the zone.
    fn place(&self, z: &ZoneSpec, q: u64) -> Phys {
        let spt = z.spt as u64;
        let bpc = spt * self.heads;
        let spares = z.spares as u64;
        let from_index = |idx: u64| Phys {
            cyl_rel: idx / bpc,
            lhead: idx % bpc / spt,
            sector: idx % spt,
        };
        let remap = |idx: u64| -> u64 {
            z.defects
                .iter()
                .find(|d| d.0 == idx && d.1 != d.0)
                .map_or(idx, |d| d.1)
        };
        match self.sparing {
            1 => {
                // Spare tracks: slips and defects are tracks.
                let mut track = q / spt;
                for &s in &z.slips {
                    if s <= track {
                        track += 1;
                    }
                }
                let track = remap(track);
                Phys {
                    cyl_rel: track / self.heads,
                    lhead: track % self.heads,
                    sector: q % spt,
                }
            }
            3 => {
                let per = spt.saturating_sub(spares).max(1);
                let first = q / per * spt;
                let mut r = q % per;
                for &s in &z.slips {
                    if s >= first && s - first <= r {
                        r += 1;
                    }
                }
                from_index(remap(first + r))
            }
            2 | 4 | 5 | 6 | 7 => {
                let per = bpc.saturating_sub(spares).max(1);
                let mut cyl = q / per;
                let mut r = q % per;
                // Data of a cylinder starts after its spares with schemes 5 and 6.
                let off = if matches!(self.sparing, 5 | 6) {
                    spares
                } else {
                    0
                };
                let first = cyl * bpc + off;
                let mut n = 0;
                for &s in &z.slips {
                    if (slip_to_end(self.sparing) && s / bpc < cyl)
                        || (s >= first && s - first <= r + n)
                    {
                        n += 1;
                    }
                }
                r += n;
                // Slips pushed to the zone end leave the spares unused; otherwise
                // the cylinder's spares take them.
                let room = if slip_to_end(self.sparing) {
                    per
                } else {
                    bpc - off.min(bpc - 1)
                };
                cyl += r / room;
                r %= room;
                from_index(remap(cyl * bpc + off + r))
            }
            8 => {
                let bpr = bpc * self.range;
                let per = bpr.saturating_sub(spares).max(1);
                let first = q / per * bpr;
                let mut r = q % per;
                let mut n = 0;
                for &s in &z.slips {
                    if s >= first && s - first <= r + n {
                        n += 1;
                    }
                }
                r += n;
                from_index(remap(first + r))
            }
            9 | 10 => {
                let mut n = 0;
                for &s in &z.slips {
                    if s <= q + n {
                        n += 1;
                    }
                }
                from_index(remap(q + n))
            }
            _ => from_index(q),
        }
    }
}

/// Blocks a zone holds (`dm_layout_g1_compute_blksinband`).
fn blocks_in_zone(z: &ZoneSpec, heads: u64, sparing: u32, range: u64) -> u64 {
    let cyls = (z.last_cyl - z.first_cyl + 1) as u64;
    let spt = z.spt as u64;
    let spares = z.spares as u64;
    let slips = z.slips.len() as u64;
    let phys = cyls * spt * heads;
    let lost = match sparing {
        1 => spares * spt,
        3 => spares * cyls * heads,
        7 => slips,
        9 => spares,
        10 => spares + slips,
        2 | 5 => spares * cyls,
        4 | 6 => spares * cyls + slips,
        8 => spares * (cyls / range),
        _ => 0,
    };
    phys.saturating_sub(z.front).saturating_sub(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 surfaces, 10 sectors a track, 4 cylinders; no skew, so a block's angle is
    /// its sector / 10.
    fn zone() -> ZoneSpec {
        ZoneSpec {
            first_cyl: 0,
            last_cyl: 3,
            spt: 10,
            first_offset: 0.0,
            front: 0,
            track_skew: 0.0,
            cyl_skew: 0.0,
            spares: 0,
            slips: vec![],
            defects: vec![],
        }
    }

    fn lay(z: ZoneSpec, sparing: u32, mapping: u32, range: u32) -> Layout {
        Layout::new(&[z], 2, sparing, mapping, range, 6000.0)
    }

    /// (cylinder, surface, sector) of `lbn`.
    fn chs(l: &Layout, lbn: u64) -> (u32, u32, u32) {
        let p = l.locate(lbn);
        (p.cyl, p.head, (p.angle * 10.0).round() as u32 % 10)
    }

    #[test]
    fn scheme0_runs_surface_by_surface() {
        let l = lay(zone(), 0, 0, 1);
        assert_eq!(l.total(), 80);
        assert_eq!(chs(&l, 0), (0, 0, 0));
        assert_eq!(chs(&l, 19), (0, 1, 9));
        assert_eq!(chs(&l, 20), (1, 0, 0));
        assert_eq!(chs(&l, 79), (3, 1, 9));
    }

    #[test]
    fn mapping1_is_serpentine_from_each_zone_start() {
        // Odd zone cylinders run from the last surface back: block 20 (cylinder 1)
        // is on surface 1, block 30 on surface 0; cylinder 2 is normal again.
        let l = lay(zone(), 0, 1, 1);
        assert_eq!(chs(&l, 19), (0, 1, 9));
        assert_eq!(chs(&l, 20), (1, 1, 0));
        assert_eq!(chs(&l, 30), (1, 0, 0));
        assert_eq!(chs(&l, 40), (2, 0, 0));
        // Two zones: the second starts on cylinder 3 (odd on the disk, even in the
        // zone), so mapping 1 runs it normally and mapping 2 reverses it.
        let a = ZoneSpec {
            last_cyl: 2,
            ..zone()
        };
        let b = ZoneSpec {
            first_cyl: 3,
            last_cyl: 4,
            ..zone()
        };
        let m1 = Layout::new(&[a.clone(), b.clone()], 2, 0, 1, 1, 6000.0);
        let m2 = Layout::new(&[a, b], 2, 0, 2, 1, 6000.0);
        assert_eq!(chs(&m1, 60), (3, 0, 0));
        assert_eq!(chs(&m2, 60), (3, 1, 0));
        assert_eq!(chs(&m2, 80), (4, 0, 0));
    }

    #[test]
    fn serpentine_skew_counts_switches_in_block_order() {
        // Track skew 2, cylinder skew 3: block 30 is the second track of cylinder 1
        // in block order (surface 0 with mapping 1). DiskSim counts surface +
        // (surfaces − 1) × cylinder = 2 track switches and one cylinder switch:
        // 2·2 + 3 = 7 sectors.
        let z = ZoneSpec {
            track_skew: 2.0,
            cyl_skew: 3.0,
            ..zone()
        };
        let l = lay(z, 0, 1, 1);
        assert_eq!(chs(&l, 30), (1, 0, 7));
        assert_eq!(chs(&l, 20), (1, 1, 5)); // 1 switch: 2 + 3
    }

    #[test]
    fn scheme1_spare_tracks_absorb_slipped_tracks() {
        // One spare track; track 1 slipped: blocks 10..19 move to track 2.
        let z = ZoneSpec {
            spares: 1,
            slips: vec![1],
            ..zone()
        };
        let l = lay(z, 1, 0, 1);
        assert_eq!(l.total(), 70);
        assert_eq!(chs(&l, 9), (0, 0, 9));
        assert_eq!(chs(&l, 10), (1, 0, 0));
        assert_eq!(chs(&l, 69), (3, 1, 9));
    }

    #[test]
    fn scheme1_defective_track_is_remapped() {
        let z = ZoneSpec {
            spares: 1,
            defects: vec![(2, 7)],
            ..zone()
        };
        let l = lay(z, 1, 0, 1);
        assert_eq!(chs(&l, 25), (3, 1, 5)); // track 2 lives on track 7
        assert_eq!(chs(&l, 35), (1, 1, 5));
    }

    #[test]
    fn scheme3_spares_end_each_track_and_slips_stay_on_it() {
        // 2 spares a track: 8 blocks a track. Sector 3 of track 0 slipped: blocks
        // 3..7 move up one, block 8 starts track 1.
        let z = ZoneSpec {
            spares: 2,
            slips: vec![3],
            ..zone()
        };
        let l = lay(z, 3, 0, 1);
        assert_eq!(l.total(), 64);
        assert_eq!(chs(&l, 2), (0, 0, 2));
        assert_eq!(chs(&l, 3), (0, 0, 4));
        assert_eq!(chs(&l, 7), (0, 0, 8));
        assert_eq!(chs(&l, 8), (0, 1, 1)); // one slip on an earlier track: skew +1
        assert_eq!(chs(&l, 16), (1, 0, 1));
    }

    #[test]
    fn scheme2_spares_end_each_cylinder() {
        // 4 spares a cylinder: 16 blocks a cylinder; slip at sector 12 (surface 1,
        // sector 2) absorbed by cylinder 0's spares.
        let z = ZoneSpec {
            spares: 4,
            slips: vec![12],
            ..zone()
        };
        let l = lay(z, 2, 0, 1);
        assert_eq!(l.total(), 64);
        assert_eq!(chs(&l, 11), (0, 1, 1));
        assert_eq!(chs(&l, 12), (0, 1, 3));
        assert_eq!(chs(&l, 15), (0, 1, 6));
        // Cylinder 1 starts at its first sector, skew pushed on by the one slip.
        assert_eq!(chs(&l, 16), (1, 0, 1));
    }

    #[test]
    fn scheme4_slips_push_to_the_zone_end() {
        // As scheme 2, but the slip pushes every later block on by one and the
        // zone loses one block.
        let z = ZoneSpec {
            spares: 4,
            slips: vec![12],
            ..zone()
        };
        let l = lay(z, 4, 0, 1);
        assert_eq!(l.total(), 63);
        assert_eq!(chs(&l, 12), (0, 1, 3));
        // Block 16 is slot 17 of the disk: cylinder 1, sector 1, plus one sector of
        // skew for the slip on cylinder 0.
        assert_eq!(chs(&l, 16), (1, 0, 2));
    }

    #[test]
    fn scheme5_spares_lead_each_cylinder() {
        let z = ZoneSpec {
            spares: 4,
            ..zone()
        };
        let l = lay(z, 5, 0, 1);
        assert_eq!(l.total(), 64);
        assert_eq!(chs(&l, 0), (0, 0, 4));
        assert_eq!(chs(&l, 15), (0, 1, 9));
        assert_eq!(chs(&l, 16), (1, 0, 4));
    }

    #[test]
    fn scheme6_front_spares_and_slips_to_end() {
        let z = ZoneSpec {
            spares: 4,
            slips: vec![5],
            ..zone()
        };
        let l = lay(z, 6, 0, 1);
        assert_eq!(l.total(), 63);
        assert_eq!(chs(&l, 0), (0, 0, 4));
        // Slot 1 would be sector 5, which is slipped: sector 6.
        assert_eq!(chs(&l, 1), (0, 0, 6));
    }

    #[test]
    fn scheme7_slips_push_blocks_across_cylinders() {
        // No spares; a slip at sector 19 (last of cylinder 0) sends block 19 to
        // cylinder 1.
        let z = ZoneSpec {
            slips: vec![19],
            ..zone()
        };
        let l = lay(z, 7, 0, 1);
        assert_eq!(l.total(), 79);
        assert_eq!(chs(&l, 18), (0, 1, 8));
        assert_eq!(chs(&l, 19), (1, 0, 0));
        assert_eq!(chs(&l, 20), (1, 0, 1));
    }

    #[test]
    fn scheme8_spares_end_each_range() {
        // Ranges of 2 cylinders (40 sectors), 5 spares each: 35 blocks a range.
        let z = ZoneSpec {
            spares: 5,
            slips: vec![0],
            ..zone()
        };
        let l = lay(z, 8, 0, 2);
        assert_eq!(l.total(), 70);
        assert_eq!(chs(&l, 0), (0, 0, 1));
        assert_eq!(chs(&l, 34), (1, 1, 5));
        assert_eq!(chs(&l, 35), (2, 0, 0)); // the slip stays in range 0
    }

    #[test]
    fn scheme9_spares_end_the_zone_and_absorb_slips() {
        let z = ZoneSpec {
            spares: 3,
            slips: vec![10, 11],
            ..zone()
        };
        let l = lay(z, 9, 0, 1);
        assert_eq!(l.total(), 77);
        assert_eq!(chs(&l, 9), (0, 0, 9));
        assert_eq!(chs(&l, 10), (0, 1, 2));
        assert_eq!(chs(&l, 76), (3, 1, 8));
        let l10 = lay(
            ZoneSpec {
                spares: 3,
                slips: vec![10, 11],
                ..zone()
            },
            10,
            0,
            1,
        );
        assert_eq!(l10.total(), 75);
    }

    #[test]
    fn scheme9_defect_is_remapped_and_front_space_skipped() {
        let z = ZoneSpec {
            spares: 3,
            front: 5,
            defects: vec![(7, 78)],
            ..zone()
        };
        let l = lay(z, 9, 0, 1);
        assert_eq!(l.total(), 72);
        assert_eq!(chs(&l, 0), (0, 0, 5));
        assert_eq!(chs(&l, 2), (3, 1, 8)); // slot 7 is remapped to sector 78
        assert_eq!(chs(&l, 3), (0, 0, 8));
    }

    #[test]
    fn skew_and_offset_set_the_angle() {
        // Offset 1, track skew 2, cylinder skew 3: block 45 is cylinder 2, surface
        // 0, sector 5; 0 + (2 − 1)·2 = 2 track switches and 2 cylinders:
        // 1 + 2·2 + 3·2 + 5 = 16 ≡ 6.
        let z = ZoneSpec {
            first_offset: 1.0,
            track_skew: 2.0,
            cyl_skew: 3.0,
            ..zone()
        };
        let l = lay(z, 0, 0, 1);
        assert_eq!(chs(&l, 45), (2, 0, 6));
        assert_eq!(chs(&l, 10), (0, 1, 3));
    }
}
