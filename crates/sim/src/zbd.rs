//! fio's `zonemode=zbd` (zbd.c, fio commit 000ecb5f): fio's own view of the
//! zones of the job's region — write pointers as fio advances them when it
//! queues a write (`zbd_queue_io`), the open-zone list (`zbd_open_zone`,
//! `zbd_close_zone`) — and `zbd_adjust_block`'s placement of each I/O.
//!
//! The report side (`count_zone_resets` for jobs that write or trim, the
//! `zone resets` text and `zone_resets` JSON) follows the newer stat.c and
//! zbd.c `zbd_setup_files`; the placement is this older zbd.c's (before its
//! write-zone rework), which keeps a zone with less than `min_bs` left open.
//!
//! One instance per job clone: fio shares `zbd_info` among the jobs that open
//! the same device (`zbd_init_zone_info`); iosched keeps it per clone, so two
//! zbd jobs on one device do not see each other's write pointers or open zones.

/// One zone as fio tracks it (`struct fio_zone_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// First byte of the zone.
    pub start: u64,
    /// Writable bytes (ZNS zone capacity).
    pub capacity: u64,
    /// A sequential zone (`has_wp`); conventional zones have none.
    pub has_wp: bool,
    /// fio's write pointer (bytes); a conventional zone's is its capacity end.
    pub wp: u64,
    /// In fio's open-zone list.
    pub open: bool,
}

/// Options and geometry the job gives `zonemode=zbd`.
#[derive(Clone, Debug, PartialEq)]
pub struct ZbdConfig {
    /// Device zone size, bytes.
    pub zone_size: u64,
    /// Writable bytes per sequential zone.
    pub zone_capacity: u64,
    /// Conventional zones at the start of the device.
    pub nr_conv: u64,
    /// The job's region (bytes): fio's `file_offset` and `io_size`.
    pub file_offset: u64,
    pub io_size: u64,
    /// The open-zone limit in force (`zbd_set_max_open_zones`); 0: none.
    pub max_open: u32,
    /// `job_max_open_zones`; 0: none.
    pub job_max_open: u32,
    /// `read_beyond_wp`.
    pub read_beyond_wp: bool,
    /// `td_random`.
    pub random: bool,
    /// `zone_reset_threshold` (fraction) and `zone_reset_frequency`.
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    /// Smallest block size per direction (read, write, trim).
    pub min_bs: [u64; 3],
}

/// What `zbd_adjust_block` made of an I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjust {
    /// Issue it at `offset` for `len` bytes; `reset`: first reset the zone
    /// starting at that byte (fio quiesces, then resets synchronously).
    Accept {
        offset: u64,
        len: u64,
        reset: Option<u64>,
    },
    /// All open zones are full: wait for the I/O in flight, then
    /// [`Zbd::resume_write`] from this zone.
    Quiesce(usize),
    /// `io_u_eof`: the job ends (`why` as fio's `td_verror`/`dprint` say).
    Eof(&'static str),
}

/// Where `zbd_convert_to_open_zone` goes on.
enum Convert {
    Zone(usize),
    Other(usize),
    Quiesce(usize),
    None,
}

/// The I/O's direction as zbd.c distinguishes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZDir {
    Read,
    Write,
    Trim,
}

/// fio's `zoned_block_device_info` for one job.
#[derive(Clone, Debug)]
pub struct Zbd {
    cfg: ZbdConfig,
    /// The zones of the region and a sentinel (its `start` only).
    zones: Vec<Zone>,
    /// Device index of `zones[0]` (fio's `min_zone`).
    first: u64,
    open: Vec<usize>,
    write_cnt: u32,
    sectors_with_data: u64,
    wp_sectors_with_data: u64,
    /// `ts.nr_zone_resets`.
    pub resets: u64,
}

impl Zbd {
    /// `parse_zone_info` on a fresh device (every sequential zone empty) and
    /// `zbd_file_reset`. The region is whole zones (`zbd_verify_sizes`).
    pub fn new(cfg: ZbdConfig) -> Zbd {
        let zs = cfg.zone_size;
        let first = cfg.file_offset / zs;
        let end = (cfg.file_offset + cfg.io_size).div_ceil(zs);
        let mut zones: Vec<Zone> = (first..end)
            .map(|i| {
                let start = i * zs;
                let has_wp = i >= cfg.nr_conv;
                let capacity = if has_wp { cfg.zone_capacity } else { zs };
                Zone {
                    start,
                    capacity,
                    has_wp,
                    wp: if has_wp { start } else { start + capacity },
                    open: false,
                }
            })
            .collect();
        zones.push(Zone {
            start: end * zs,
            capacity: 0,
            has_wp: false,
            wp: end * zs,
            open: false,
        });
        let mut z = Zbd {
            cfg,
            zones,
            first,
            open: Vec::new(),
            write_cnt: 0,
            sectors_with_data: 0,
            wp_sectors_with_data: 0,
            resets: 0,
        };
        z.sectors_with_data = z.zones[..z.nr()].iter().map(|z| z.wp - z.start).sum();
        z.reset_write_cnt();
        z
    }

    /// `parse_zone_info` at the job's start: the write pointers the device
    /// reports (sectors) for the region's sequential zones (a full zone's at
    /// its capacity end), and `zbd_file_reset`'s recount of written bytes.
    pub fn load_write_pointers(&mut self, report: &[blk::zoned::BlkZone]) {
        for i in 0..self.nr() {
            let start = self.zones[i].start;
            let Some(r) = report.iter().find(|r| r.start * 512 == start) else {
                continue;
            };
            if !self.zones[i].has_wp {
                continue;
            }
            let wp = if r.cond == blk::zoned::ZoneCond::Full {
                start + self.zones[i].capacity
            } else {
                r.wp * 512
            };
            self.zones[i].wp = wp.clamp(start, start + self.zones[i].capacity);
        }
        let nr = self.nr();
        self.sectors_with_data = self.zones[..nr].iter().map(|z| z.wp - z.start).sum();
        self.wp_sectors_with_data = self.zones[..nr]
            .iter()
            .filter(|z| z.has_wp)
            .map(|z| z.wp - z.start)
            .sum();
    }

    fn nr(&self) -> usize {
        self.zones.len() - 1
    }

    /// The zones (without the sentinel).
    pub fn zones(&self) -> &[Zone] {
        &self.zones[..self.nr()]
    }

    /// Device indices of the open zones, in fio's list order.
    pub fn open_zones(&self) -> Vec<u64> {
        self.open.iter().map(|&i| i as u64 + self.first).collect()
    }

    /// `zbd_zone_idx`, relative to the region (clamped to the sentinel).
    fn idx(&self, offset: u64) -> usize {
        let i = (offset / self.cfg.zone_size).saturating_sub(self.first) as usize;
        i.min(self.nr())
    }

    fn cap_end(&self, i: usize) -> u64 {
        self.zones[i].start + self.zones[i].capacity
    }

    /// `zbd_zone_full`.
    fn full(&self, i: usize, required: u64) -> bool {
        self.zones[i].has_wp && self.zones[i].wp + required > self.cap_end(i)
    }

    fn valid(&self, offset: u64) -> bool {
        offset.wrapping_sub(self.cfg.file_offset) < self.cfg.io_size
    }

    /// `_zbd_reset_write_cnt`.
    fn reset_write_cnt(&mut self) {
        let f = self.cfg.reset_frequency;
        self.write_cnt = if f > 0.0 {
            (1.0 / f).min(u32::MAX as f64) as u32
        } else {
            u32::MAX
        };
    }

    /// `zbd_dec_and_reset_write_cnt`.
    fn dec_and_reset_write_cnt(&mut self) -> bool {
        let mut cnt = 0;
        if self.write_cnt > 0 {
            self.write_cnt -= 1;
            cnt = self.write_cnt;
        }
        if cnt == 0 {
            self.reset_write_cnt();
        }
        cnt == 0
    }

    /// `zbd_reset_zone` (fio's side): whether a reset command goes out.
    fn reset_zone(&mut self, i: usize) -> bool {
        let data = self.zones[i].wp - self.zones[i].start;
        if data == 0 {
            return false;
        }
        self.sectors_with_data -= data;
        self.wp_sectors_with_data -= data;
        self.zones[i].wp = self.zones[i].start;
        self.resets += 1;
        true
    }

    /// `zbd_close_zone`.
    fn close_zone(&mut self, i: usize) {
        if let Some(p) = self.open.iter().position(|&z| z == i) {
            self.open.remove(p);
            self.zones[i].open = false;
        }
    }

    /// `zbd_open_zone` (the job's count is the list's: one job per list).
    fn open_zone(&mut self, i: usize) -> bool {
        if self.cfg.max_open == 0 {
            return true;
        }
        if self.zones[i].open {
            return self.zones[i].wp < self.cap_end(i);
        }
        let n = self.open.len() as u32;
        if (self.cfg.job_max_open > 0 && n >= self.cfg.job_max_open) || n >= self.cfg.max_open {
            return false;
        }
        self.open.push(i);
        self.zones[i].open = true;
        true
    }

    /// `pick_random_zone_idx`.
    fn pick(&self, offset: u64) -> usize {
        let rel = offset - self.cfg.file_offset;
        (rel as u128 * self.open.len() as u128 / self.cfg.io_size as u128) as usize
    }

    /// `zbd_convert_to_open_zone` up to its search for another zone: the
    /// open zone `offset`'s write goes to, or where that search starts.
    fn convert_to_open_zone(&mut self, offset: u64, min_bs: u64) -> Convert {
        let limited = self.cfg.max_open > 0 || self.cfg.job_max_open > 0;
        // fio reads open_zones[] unlocked: past the list it holds zeros
        // (device zone 0, clamped to the region's first).
        let zi = if limited {
            self.open.get(self.pick(offset)).copied().unwrap_or(0)
        } else {
            self.idx(offset)
        }
        .min(self.nr() - 1);
        if self.zones[zi].has_wp && limited && self.open.is_empty() {
            return self.other_zone(zi);
        }
        if !self.zones[zi].has_wp || limited {
            // The candidate is open_zones[pick] (every listed zone is in the
            // region), which is zi itself.
            if self.open.is_empty() {
                return Convert::None;
            }
        }
        if self.zones[zi].wp + min_bs <= self.cap_end(zi) {
            return Convert::Zone(zi);
        }
        self.other_zone(zi)
    }

    /// `open_other_zone`'s check: at an open-zone limit fio first waits for
    /// its I/O in flight to complete (`io_u_quiesce`).
    fn other_zone(&self, zi: usize) -> Convert {
        let n = self.open.len() as u32;
        let wait = n as usize == self.nr()
            || (self.cfg.max_open > 0 && n == self.cfg.max_open)
            || (self.cfg.job_max_open > 0 && n == self.cfg.job_max_open);
        if wait {
            Convert::Quiesce(zi)
        } else {
            Convert::Other(zi)
        }
    }

    /// The rest of `zbd_convert_to_open_zone`, from `zi` (full): open the
    /// next zone that can be, wrapping at the region's end, or else take any
    /// open zone with room.
    fn open_other_zone(&mut self, mut zi: usize, min_bs: u64) -> Option<usize> {
        for _ in 0..self.cfg.io_size / self.cfg.zone_size {
            zi += 1;
            if !self.valid(self.zones[zi].start) {
                zi = 0;
            }
            if !self.zones[zi].has_wp || self.zones[zi].open {
                continue;
            }
            if self.open_zone(zi) {
                return Some(zi);
            }
        }
        self.open
            .iter()
            .copied()
            .find(|&z| self.zones[z].wp + min_bs <= self.cap_end(z))
    }

    /// `zbd_find_zone`: the nearest zone after `zb` (and, random, before it)
    /// with `min_bytes` written.
    fn find_zone(&self, zb: usize, min_bytes: u64) -> Option<usize> {
        let nr = self.nr() as isize;
        let (mut z1, mut z2) = (zb as isize + 1, zb as isize - 1);
        while z1 < nr || z2 >= 0 {
            if z1 < nr {
                let z = &self.zones[z1 as usize];
                if z.start + min_bytes <= z.wp {
                    return Some(z1 as usize);
                }
            } else if !self.cfg.random {
                break;
            }
            if self.cfg.random && z2 >= 0 {
                let z = &self.zones[z2 as usize];
                if z.start + min_bytes <= z.wp {
                    return Some(z2 as usize);
                }
            }
            z1 += 1;
            z2 -= 1;
        }
        None
    }

    /// `setup_zbd_zone_mode`'s jump for a sequential writer: from a zone's
    /// capacity end to its end (the next zone's start).
    pub fn skip_capacity_gap(&self, pos: u64) -> u64 {
        let i = self.idx(pos);
        if i < self.nr() && self.zones[i].capacity < self.cfg.zone_size && pos >= self.cap_end(i) {
            self.zones[i + 1].start
        } else {
            pos
        }
    }

    /// `zbd_adjust_ddir`: a mixed job's read before anything is written
    /// becomes a write.
    pub fn adjust_ddir(&self, read: bool, mixed: bool) -> bool {
        !read || !mixed || self.sectors_with_data > 0 || self.cfg.read_beyond_wp
    }

    /// `zbd_adjust_block`: where the I/O of `len` bytes the job chose at
    /// `offset` goes. A write's zone state (open list, reset) changes here;
    /// [`Zbd::queued`] then advances the write pointer.
    pub fn adjust(&mut self, dir: ZDir, offset: u64, len: u64, inflight: bool) -> Adjust {
        let min_bs = self.cfg.min_bs[match dir {
            ZDir::Read => 0,
            ZDir::Write => 1,
            ZDir::Trim => 2,
        }]
        .max(1);
        let orig = self.idx(offset);
        let mut zb = orig;
        let accept = |offset, len| Adjust::Accept {
            offset,
            len,
            reset: None,
        };
        if !self.zones[zb].has_wp {
            if dir != ZDir::Write {
                return accept(offset, len);
            }
            let next = self.zones[zb + 1];
            if !next.has_wp || offset + len <= next.start {
                return accept(offset, len);
            }
            let (off, new_len) = if offset + min_bs > next.start {
                let off = self.zones[zb].start + next.start - offset;
                (off, len.min(next.start - off))
            } else {
                (offset, next.start - offset)
            };
            return accept(off, new_len / min_bs * min_bs);
        }
        if dir == ZDir::Read && self.cfg.read_beyond_wp {
            return accept(offset, len);
        }
        match dir {
            ZDir::Read => {
                let mut offset = offset;
                let mut range = self.zones[zb].wp - self.zones[zb].start;
                if range < min_bs || (!self.cfg.random && offset + min_bs > self.zones[zb].wp) {
                    let Some(z) = self.find_zone(zb, min_bs) else {
                        return Adjust::Eof("no zone has readable data");
                    };
                    zb = z;
                    range = self.zones[zb].wp - self.zones[zb].start;
                    if !self.cfg.random {
                        offset = self.zones[zb].start;
                    }
                }
                if range <= len {
                    offset = self.zones[zb].start;
                } else if self.cfg.random {
                    offset = self.zones[zb].start
                        + (offset - self.zones[orig].start) % (range - len) / min_bs * min_bs;
                }
                if !self.zones[zb].has_wp {
                    return accept(offset, len);
                }
                let new_len = len.min(self.zones[zb].wp - offset) / min_bs * min_bs;
                accept(offset, new_len)
            }
            ZDir::Write => {
                if len > self.cfg.zone_size {
                    return Adjust::Eof("I/O buflen exceeds zone size");
                }
                if !self.open_zone(zb) {
                    let z = match self.convert_to_open_zone(offset, min_bs) {
                        Convert::Zone(z) => Some(z),
                        Convert::Other(z) => self.open_other_zone(z, min_bs),
                        Convert::Quiesce(z) if inflight => return Adjust::Quiesce(z),
                        Convert::Quiesce(z) => self.open_other_zone(z, min_bs),
                        Convert::None => None,
                    };
                    match z {
                        Some(z) => zb = z,
                        None => return Adjust::Eof("can't convert to open zone"),
                    }
                }
                self.place_write(zb, len, min_bs)
            }
            ZDir::Trim => {
                if !self.cfg.random || self.zones[zb].wp > self.zones[zb].start {
                    return accept(offset, len);
                }
                match self.find_zone(zb, 1) {
                    Some(z) => accept(self.zones[z].start, len),
                    None => Adjust::Eof("no zone to trim"),
                }
            }
        }
    }

    /// After [`Adjust::Quiesce`]: fio goes on opening another zone after
    /// `zi`, then places the write as [`Zbd::adjust`] does.
    pub fn resume_write(&mut self, zi: usize, len: u64) -> Adjust {
        let min_bs = self.cfg.min_bs[1].max(1);
        match self.open_other_zone(zi, min_bs) {
            Some(z) => self.place_write(z, len, min_bs),
            None => Adjust::Eof("can't convert to open zone"),
        }
    }

    /// The end of `zbd_adjust_block`'s write case, for zone `zb`: a reset
    /// when `zone_reset_frequency` says so or the zone is full, then the
    /// write at the write pointer, cut to the zone's capacity.
    fn place_write(&mut self, zb: usize, len: u64, min_bs: u64) -> Adjust {
        let mut reset_zone = false;
        if self.cfg.reset_frequency > 0.0
            && self.wp_sectors_with_data as f64
                >= self.cfg.io_size as f64 * self.cfg.reset_threshold
            && self.dec_and_reset_write_cnt()
        {
            reset_zone = true;
        }
        let mut reset = None;
        if reset_zone || self.full(zb, min_bs) {
            if self.reset_zone(zb) {
                reset = Some(self.zones[zb].start);
            }
            if self.zones[zb].capacity < min_bs {
                return Adjust::Eof("ZCAP is less min_bs");
            }
        }
        let offset = self.zones[zb].wp;
        if !self.valid(offset) {
            return Adjust::Eof("invalid WP value");
        }
        let new_len = len.min(self.cap_end(zb) - offset) / min_bs * min_bs;
        if new_len == len || new_len >= min_bs {
            Adjust::Accept {
                offset,
                len: new_len,
                reset,
            }
        } else {
            Adjust::Eof("zone remainder too small")
        }
    }

    /// `zbd_do_io_u_trim`: a trim of a sequential zone is its reset; whether
    /// the zone is one (`false`: an ordinary discard).
    pub fn trim(&mut self, offset: u64) -> bool {
        let i = self.idx(offset);
        if i >= self.nr() || !self.zones[i].has_wp {
            return false;
        }
        self.reset_zone(i);
        true
    }

    /// `zbd_queue_io`: a write was queued; fio's write pointer moves to its end.
    pub fn queued(&mut self, offset: u64, len: u64) {
        let i = self.idx(offset);
        if i >= self.nr() || !self.zones[i].has_wp {
            return;
        }
        let end = (offset + len).min(self.cap_end(i));
        if self.zones[i].wp <= end {
            self.sectors_with_data += end - self.zones[i].wp;
            self.wp_sectors_with_data += end - self.zones[i].wp;
        }
        self.zones[i].wp = end;
    }

    /// `zbd_end_zone_io`: a write completed; one that reached the zone's
    /// capacity closes it.
    pub fn completed(&mut self, offset: u64, len: u64) {
        let i = self.idx(offset);
        if i >= self.nr() || !self.zones[i].has_wp {
            return;
        }
        if offset + len >= self.cap_end(i) {
            self.close_zone(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;
    const K: u64 = 1 << 10;

    fn cfg(zones: u64, random: bool) -> ZbdConfig {
        ZbdConfig {
            zone_size: M,
            zone_capacity: M,
            nr_conv: 0,
            file_offset: 0,
            io_size: zones * M,
            max_open: 0,
            job_max_open: 0,
            read_beyond_wp: false,
            random,
            reset_threshold: 0.0,
            reset_frequency: 0.0,
            min_bs: [128 * K; 3],
        }
    }

    fn acc(offset: u64, len: u64) -> Adjust {
        Adjust::Accept {
            offset,
            len,
            reset: None,
        }
    }

    /// Issue a write as the job does: adjust, then queue what was accepted.
    fn write(z: &mut Zbd, off: u64, len: u64) -> Adjust {
        let a = z.adjust(ZDir::Write, off, len, false);
        if let Adjust::Accept { offset, len, .. } = a {
            z.queued(offset, len);
            z.completed(offset, len);
        }
        a
    }

    /// A sequential writer of 384 KiB across a zone boundary: the third
    /// write is cut to the 256 KiB left in zone 0 (a multiple of the 128 KiB
    /// min_bs); the next starts zone 1 at its write pointer.
    #[test]
    fn sequential_write_is_cut_at_the_zone_end() {
        let mut z = Zbd::new(cfg(2, false));
        assert_eq!(write(&mut z, 0, 384 * K), acc(0, 384 * K));
        assert_eq!(write(&mut z, 384 * K, 384 * K), acc(384 * K, 384 * K));
        assert_eq!(write(&mut z, 768 * K, 384 * K), acc(768 * K, 256 * K));
        assert_eq!(z.zones()[0].wp, M);
        assert_eq!(write(&mut z, M, 384 * K), acc(M, 384 * K));
        assert_eq!(z.zones()[1].wp, M + 384 * K);
        // With min_bs the whole 384 KiB, zone 0 with 256 KiB left counts as
        // full (`zbd_zone_full`): fio resets it and writes at its start.
        let mut c = cfg(2, false);
        c.min_bs = [384 * K; 3];
        let mut z = Zbd::new(c);
        write(&mut z, 0, 384 * K);
        write(&mut z, 384 * K, 384 * K);
        assert_eq!(
            write(&mut z, 768 * K, 384 * K),
            Adjust::Accept {
                offset: 0,
                len: 384 * K,
                reset: Some(0)
            }
        );
        assert_eq!(z.resets, 1);
    }

    /// max_open_zones=2 over 4 zones, 256 KiB random writes: the first two
    /// zones written are opened; a write aimed at a third goes to
    /// open_zones[(offset * 2) / 4 MiB] at its write pointer. A zone filled
    /// (4 writes) closes on completion and the next write opens another.
    #[test]
    fn random_writes_land_at_the_write_pointers_of_two_open_zones() {
        let mut c = cfg(4, true);
        c.max_open = 2;
        let mut z = Zbd::new(c);
        let b = 256 * K;
        assert_eq!(write(&mut z, 2 * M + 512 * K, b), acc(2 * M, b));
        assert_eq!(write(&mut z, 128 * K, b), acc(0, b));
        assert_eq!(z.open_zones(), vec![2, 0]);
        // 3.5 MiB: pick (3.5 * 2 / 4) = 1 -> zone 0, at 256 KiB.
        assert_eq!(write(&mut z, 3 * M + 512 * K, b), acc(b, b));
        // 1 MiB + 4 KiB: pick 0 -> zone 2, at 2 MiB + 256 KiB.
        assert_eq!(write(&mut z, M + 4 * K, b), acc(2 * M + b, b));
        // Zone 0 fills: 512 KiB, 768 KiB; then it closes.
        assert_eq!(write(&mut z, 0, b), acc(512 * K, b));
        assert_eq!(write(&mut z, 0, b), acc(768 * K, b));
        assert_eq!(z.open_zones(), vec![2]);
        // Zone 3 can open now.
        assert_eq!(write(&mut z, 3 * M, b), acc(3 * M, b));
        assert_eq!(z.open_zones(), vec![2, 3]);
        // Every write went to a write pointer of at most two zones at once.
        let wps: Vec<u64> = z.zones().iter().map(|x| x.wp - x.start).collect();
        assert_eq!(wps, vec![M, 0, 512 * K, b]);
        assert_eq!(z.resets, 0);
    }

    /// A full zone chosen again: with no open-zone limit fio resets it and
    /// writes at its start; the reset is counted.
    #[test]
    fn full_zone_is_reset_before_the_write() {
        let mut z = Zbd::new(cfg(2, true));
        for _ in 0..4 {
            write(&mut z, 0, 256 * K);
        }
        assert_eq!(z.zones()[0].wp, M);
        assert_eq!(
            write(&mut z, 512 * K, 256 * K),
            Adjust::Accept {
                offset: 0,
                len: 256 * K,
                reset: Some(0)
            }
        );
        assert_eq!(z.resets, 1);
        assert_eq!(z.zones()[0].wp, 256 * K);
    }

    /// zone_reset_threshold=0.5, zone_reset_frequency=1 over 2 zones (2 MiB):
    /// once 1 MiB is written, every write resets its zone first; an empty
    /// zone's reset is no command and no count (`zbd_reset_zone`).
    #[test]
    fn reset_at_threshold() {
        let mut c = cfg(2, false);
        c.reset_threshold = 0.5;
        c.reset_frequency = 1.0;
        let mut z = Zbd::new(c);
        let b = 512 * K;
        assert_eq!(write(&mut z, 0, b), acc(0, b));
        assert_eq!(write(&mut z, b, b), acc(b, b));
        // 1 MiB written: zone 1 is empty, nothing to reset.
        assert_eq!(write(&mut z, M, b), acc(M, b));
        assert_eq!(z.resets, 0);
        // 1.5 MiB written: zone 1 (512 KiB) is reset, the write at its start.
        assert_eq!(
            write(&mut z, M + b, b),
            Adjust::Accept {
                offset: M,
                len: b,
                reset: Some(M)
            }
        );
        assert_eq!(z.resets, 1);
        // zone_reset_frequency=0.5: every second write past the threshold.
        let mut c = cfg(2, false);
        c.reset_threshold = 0.5;
        c.reset_frequency = 0.5;
        let mut z = Zbd::new(c);
        write(&mut z, 0, b);
        write(&mut z, b, b);
        // 1 MiB written: the count goes 2 -> 1, no reset.
        assert_eq!(write(&mut z, M, b), acc(M, b));
        // 1.5 MiB: 1 -> 0, zone 1 reset (the count back to 2).
        assert_eq!(
            write(&mut z, M + b, b),
            Adjust::Accept {
                offset: M,
                len: b,
                reset: Some(M)
            }
        );
        // 1.5 MiB again: 2 -> 1, written at zone 1's write pointer.
        assert_eq!(write(&mut z, M + b, b), acc(M + b, b));
        assert_eq!(z.resets, 1);
    }

    /// Reads stay below the write pointer: a sequential read past it moves to
    /// the next zone with data, or ends the job; read_beyond_wp lets it be.
    #[test]
    fn reads_stay_below_the_write_pointer() {
        let mut z = Zbd::new(cfg(3, false));
        write(&mut z, 0, 512 * K);
        write(&mut z, 2 * M, 256 * K);
        assert_eq!(z.adjust(ZDir::Read, 0, 384 * K, false), acc(0, 384 * K));
        // 384 KiB + 384 KiB crosses the wp at 512 KiB: cut to 128 KiB.
        assert_eq!(
            z.adjust(ZDir::Read, 384 * K, 384 * K, false),
            acc(384 * K, 128 * K)
        );
        // At the wp: on to zone 2 (zone 1 is empty), whose 256 KiB is all.
        assert_eq!(
            z.adjust(ZDir::Read, 512 * K, 384 * K, false),
            acc(2 * M, 256 * K)
        );
        assert_eq!(
            z.adjust(ZDir::Read, 2 * M + 256 * K, 128 * K, false),
            Adjust::Eof("no zone has readable data")
        );
        let mut c = cfg(3, false);
        c.read_beyond_wp = true;
        let mut z = Zbd::new(c);
        assert_eq!(z.adjust(ZDir::Read, M, 128 * K, false), acc(M, 128 * K));
    }

    /// A write into a conventional zone that would cross into a sequential
    /// one is cut at the boundary; a trim of a sequential zone is its reset.
    #[test]
    fn conventional_zone_writes_and_trim_resets() {
        let mut c = cfg(2, true);
        c.nr_conv = 1;
        let mut z = Zbd::new(c);
        assert_eq!(
            z.adjust(ZDir::Write, 768 * K, 512 * K, false),
            acc(768 * K, 256 * K)
        );
        write(&mut z, M, 256 * K);
        assert!(z.trim(M));
        assert_eq!(z.resets, 1);
        assert_eq!(z.zones()[1].wp, M);
        assert!(!z.trim(0));
    }
}
