//! Flash SSDs: the model behind `ssd-sata` and the NVMe profiles ([`crate::nvme`]).
//!
//! A request passes three stages, each a resource served first come, first served:
//!
//! 1. **Controller**: firmware handles one command at a time, `controller_read_ns` or
//!    `controller_write_ns` each. This caps IOPS at high queue depth, as it does in
//!    the drives whose datasheet IOPS sit below what their flash could do.
//! 2. **Flash**: data lives in pages of `page_kib` striped over
//!    `channels × dies_per_channel × planes` units (logical page `p` on unit
//!    `p mod units`, so sequential data spans every unit, as an FTL writing a stream
//!    lays it out; random pages land on random units). A read costs `read_us` on its
//!    unit, then the page's data crosses the unit's channel at `channel_mb_s`. Reads
//!    of one request proceed in parallel on different units; requests queue on a busy
//!    unit — that contention is what makes QD1 latency-bound and QD32 parallel.
//! 3. **Host link**: data crosses the interface at `host_mb_s` (SATA 6 Gb/s, PCIe
//!    lanes), in the order requests become ready.
//!
//! Writes cross the link first and land in the write buffer (`write_buffer_kib` of
//! DRAM/SLC). With `write_cache = true` (a volatile cache, as on client drives) the
//! write completes there, after `write_overhead_us`; the buffer is programmed a die
//! page at a time (`planes × page_kib`), round robin over the dies (a log-structured
//! write point), each program taking `program_us` (the SLC-cache program time). A
//! write finding the buffer full waits for programs to finish. FUA writes and writes
//! on a drive without a volatile cache complete only once their page is programmed
//! (the open page is padded and programmed at once). FLUSH programs the open page and
//! completes when every scheduled program has finished, plus `flush_us`.
//!
//! On `interface = "sata"` FLUSH is a non-queued command: refused (`DevResource`)
//! while NCQ commands are outstanding, and every command is refused while it runs. On
//! NVMe, FLUSH is an ordinary queued command.
//!
//! # Left out, and why it does not matter for the shipped profiles
//! Garbage collection, write amplification and the drop to native TLC speed once the
//! SLC cache is full: the profiles' published figures are measured fresh-out-of-box
//! within the SLC cache (datasheets state "performance may vary"; reviews show the
//! drop only after several GB of sustained writes), and the scheduler questions this
//! simulator answers are about ordering and latency under load, not steady-state
//! endurance. Also left out: read disturb and retries, read caching of recently
//! written data, power states (APST), thermal throttling, the host memory buffer, and
//! out-of-order gap filling on a channel (a page waits behind pages of earlier
//! requests on the same channel even if those are not ready yet).

use crate::completions::Completions;
use crate::profile::{fmt_num, row, us_to_ns, Doc, ProfileError};
use crate::{Device, DeviceInfo, ParamInfo};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Op, ReqFlags, Request, RqId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Granularity of the FTL's logical-to-physical map, sectors (4 KiB).
const MAP_SECTORS: u64 = 8;

/// The host interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// SATA with NCQ: one queue of ≤ 32, FLUSH non-queued, half-duplex link.
    Sata,
    /// NVMe over PCIe: many deep queues, FLUSH queued, full-duplex link.
    Nvme,
}

/// Parameters of a [`Flash`] device; see the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct FlashParams {
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// Host interface.
    pub interface: Interface,
    /// Commands per hardware queue.
    pub queue_depth: u32,
    /// Hardware queues.
    pub nr_hw_queues: u16,
    /// Flash channels.
    pub channels: u32,
    /// Dies per channel.
    pub dies_per_channel: u32,
    /// Independent planes per die.
    pub planes: u32,
    /// Flash page, KiB.
    pub page_kib: u32,
    /// Page read (tR), µs.
    pub read_us: f64,
    /// Page program (tPROG, SLC cache), µs.
    pub program_us: f64,
    /// Channel bus rate, MB/s.
    pub channel_mb_s: f64,
    /// Host link rate, MB/s.
    pub host_mb_s: f64,
    /// Serial controller time per read command, ns.
    pub controller_read_ns: f64,
    /// Serial controller time per write command, ns.
    pub controller_write_ns: f64,
    /// Fixed latency added to a read, µs.
    pub read_overhead_us: f64,
    /// Fixed latency added to a write, µs.
    pub write_overhead_us: f64,
    /// Volatile write cache.
    pub write_cache: bool,
    /// FUA supported (as the kernel sees it).
    pub fua: bool,
    /// Write buffer, KiB.
    pub write_buffer_kib: u32,
    /// Extra cost of a flush, µs.
    pub flush_us: f64,
    /// Largest command, KiB.
    pub max_hw_kib: u32,
    /// The drive starts with every LBA deallocated (new, secure-erased, or after a
    /// whole-device discard): reads of LBAs not written since touch no flash.
    pub trimmed: bool,
    /// Serial controller time per read whose LBAs are all deallocated, ns.
    pub unmapped_read_ns: f64,
}

impl FlashParams {
    /// Read and validate the parameters from a profile document.
    pub fn from_doc(d: &mut Doc) -> Result<FlashParams, ProfileError> {
        let interface = match d.str("interface")?.as_str() {
            "sata" => Interface::Sata,
            "nvme" => Interface::Nvme,
            other => {
                return Err(d.err(
                    "interface",
                    format!("'{other}': expected \"sata\" or \"nvme\""),
                ))
            }
        };
        let p = FlashParams {
            capacity_bytes: d.int_limited("capacity_bytes", 1 << 20, 1 << 50, "1 PiB: the deallocation map of a trimmed drive is kept in memory, one bit per 4 KiB")?,
            interface,
            queue_depth: d.int_limited("queue_depth", 1, blk::mq::BLK_MQ_MAX_DEPTH as u64, "BLK_MQ_MAX_DEPTH, the deepest tag set blk-mq allows")? as u32,
            nr_hw_queues: d.int("nr_hw_queues", 1, 1024)? as u16,
            channels: d.int("channels", 1, 64)? as u32,
            dies_per_channel: d.int("dies_per_channel", 1, 64)? as u32,
            planes: d.int("planes", 1, 16)? as u32,
            page_kib: d.int("page_kib", 4, 256)? as u32,
            read_us: d.pos("read_us")?,
            program_us: d.pos("program_us")?,
            channel_mb_s: d.pos("channel_mb_s")?,
            host_mb_s: d.pos("host_mb_s")?,
            controller_read_ns: d.nonneg("controller_read_ns")?,
            controller_write_ns: d.nonneg("controller_write_ns")?,
            read_overhead_us: d.nonneg("read_overhead_us")?,
            write_overhead_us: d.nonneg("write_overhead_us")?,
            write_cache: d.bool("write_cache")?,
            fua: d.bool("fua")?,
            write_buffer_kib: d.int("write_buffer_kib", 4, 1 << 24)? as u32,
            flush_us: d.nonneg("flush_us")?,
            max_hw_kib: d.int("max_hw_kib", 4, 1 << 16)? as u32,
            trimmed: d.bool("trimmed")?,
            unmapped_read_ns: d.nonneg("unmapped_read_ns")?,
        };
        if p.interface == Interface::Sata {
            if p.queue_depth > 32 {
                return Err(d.err("queue_depth", "SATA NCQ allows at most 32 commands"));
            }
            if p.nr_hw_queues != 1 {
                return Err(d.err("nr_hw_queues", "a SATA device has one hardware queue"));
            }
        }
        if (p.write_buffer_kib as u64) < p.page_kib as u64 * p.planes as u64 {
            return Err(d.err(
                "write_buffer_kib",
                "must hold at least one die page (page_kib x planes)",
            ));
        }
        Ok(p)
    }

    /// Parameters with units and meaning.
    pub fn describe(&self) -> Vec<ParamInfo> {
        let iface = match self.interface {
            Interface::Sata => "sata",
            Interface::Nvme => "nvme",
        };
        vec![
            row(
                "capacity_bytes",
                "bytes",
                self.capacity_bytes,
                "device size",
            ),
            row(
                "interface",
                "",
                iface,
                "sata (NCQ, non-queued flush) or nvme",
            ),
            row(
                "queue_depth",
                "commands",
                self.queue_depth,
                "commands per hardware queue",
            ),
            row(
                "nr_hw_queues",
                "queues",
                self.nr_hw_queues,
                "hardware queues",
            ),
            row("channels", "channels", self.channels, "flash channels"),
            row(
                "dies_per_channel",
                "dies",
                self.dies_per_channel,
                "dies on each channel",
            ),
            row(
                "planes",
                "planes",
                self.planes,
                "independent planes per die",
            ),
            row("page_kib", "KiB", self.page_kib, "flash page size"),
            row(
                "read_us",
                "us",
                fmt_num(self.read_us),
                "page read time (tR)",
            ),
            row(
                "program_us",
                "us",
                fmt_num(self.program_us),
                "page program time (SLC cache)",
            ),
            row(
                "channel_mb_s",
                "MB/s",
                fmt_num(self.channel_mb_s),
                "flash channel bus rate",
            ),
            row(
                "host_mb_s",
                "MB/s",
                fmt_num(self.host_mb_s),
                "host link rate",
            ),
            row(
                "controller_read_ns",
                "ns",
                fmt_num(self.controller_read_ns),
                "serial firmware time per read",
            ),
            row(
                "controller_write_ns",
                "ns",
                fmt_num(self.controller_write_ns),
                "serial firmware time per write",
            ),
            row(
                "read_overhead_us",
                "us",
                fmt_num(self.read_overhead_us),
                "fixed latency added to a read",
            ),
            row(
                "write_overhead_us",
                "us",
                fmt_num(self.write_overhead_us),
                "fixed latency added to a write",
            ),
            row(
                "write_cache",
                "bool",
                self.write_cache,
                "volatile write cache",
            ),
            row("fua", "bool", self.fua, "FUA writes supported"),
            row(
                "write_buffer_kib",
                "KiB",
                self.write_buffer_kib,
                "write buffer",
            ),
            row(
                "flush_us",
                "us",
                fmt_num(self.flush_us),
                "extra cost of a flush",
            ),
            row(
                "max_hw_kib",
                "KiB",
                self.max_hw_kib,
                "largest command (max_hw_sectors_kb)",
            ),
            row(
                "trimmed",
                "bool",
                self.trimmed,
                "every LBA starts deallocated: reads of unwritten LBAs skip the flash",
            ),
            row(
                "unmapped_read_ns",
                "ns",
                fmt_num(self.unmapped_read_ns),
                "serial firmware time per read of deallocated LBAs only",
            ),
        ]
    }
}

/// A request between the flash and the host link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct LinkJob {
    ready: Ns,
    seq: u64,
    id: RqId,
    sectors: u32,
    /// 0 read (to host), 1 write (from host), 2 flush, 3 flush then write.
    kind: u8,
    fua: bool,
}

/// The flash SSD model; see the module docs.
#[derive(Debug)]
pub struct Flash {
    p: FlashParams,
    info: DeviceInfo,
    units: u32,
    page_sectors: u64,
    read_ns: u64,
    program_ns: u64,
    ctrl_free: Ns,
    unit_free: Vec<Ns>,
    chan_free: Vec<Ns>,
    /// Link busy until, per direction (SATA shares one).
    link_free: [Ns; 2],
    link: BinaryHeap<Reverse<LinkJob>>,
    /// Scheduled programs (end, bytes), in scheduling order.
    programs: VecDeque<(Ns, u64)>,
    buf_used: u64,
    open_fill: u64,
    admit_floor: Ns,
    last_program_end: Ns,
    next_die: u32,
    outstanding: u32,
    flush_id: Option<RqId>,
    /// With `trimmed`: one bit per 4 KiB of LBA space, set once written (the FTL has
    /// a mapping for it). `None`: every LBA is mapped.
    mapped: Option<Vec<u64>>,
    done: Completions,
    /// Orders link jobs ready at the same time.
    seq: u64,
}

impl Flash {
    /// A fresh device called `name`.
    pub fn new(name: &str, p: FlashParams) -> Flash {
        let dies = p.channels * p.dies_per_channel;
        let units = dies * p.planes;
        let info = DeviceInfo {
            name: name.to_string(),
            capacity_sectors: p.capacity_bytes / 512,
            queue_depth: p.queue_depth,
            rotational: false,
            write_cache: p.write_cache,
            fua: p.fua,
            max_hw_sectors: p.max_hw_kib * 2,
            max_segments: 128,
            nr_hw_queues: p.nr_hw_queues,
            default_scheduler: if p.nr_hw_queues == 1 {
                "mq-deadline"
            } else {
                "none"
            },
            completion: crate::CompletionCpu::Vector,
        };
        Flash {
            units,
            page_sectors: p.page_kib as u64 * 2,
            read_ns: us_to_ns(p.read_us),
            program_ns: us_to_ns(p.program_us),
            ctrl_free: Ns::ZERO,
            unit_free: vec![Ns::ZERO; units as usize],
            chan_free: vec![Ns::ZERO; p.channels as usize],
            link_free: [Ns::ZERO; 2],
            link: BinaryHeap::with_capacity(256),
            programs: VecDeque::with_capacity(256),
            buf_used: 0,
            open_fill: 0,
            admit_floor: Ns::ZERO,
            last_program_end: Ns::ZERO,
            next_die: 0,
            outstanding: 0,
            flush_id: None,
            mapped: p
                .trimmed
                .then(|| vec![0u64; (p.capacity_bytes / 4096 / 64 + 1) as usize]),
            done: Completions::with_capacity(256),
            seq: 0,
            info,
            p,
        }
    }

    fn capacity_cmds(&self) -> u32 {
        self.p.queue_depth * self.p.nr_hw_queues as u32
    }

    fn bytes_ns(bytes: u64, mb_s: f64) -> u64 {
        (bytes as f64 * 1000.0 / mb_s) as u64
    }

    fn complete(&mut self, t: Ns, id: RqId) {
        self.done.push(t, id);
    }

    fn enqueue_link(&mut self, ready: Ns, id: RqId, sectors: u32, kind: u8, fua: bool) {
        self.seq += 1;
        self.link.push(Reverse(LinkJob {
            ready,
            seq: self.seq,
            id,
            sectors,
            kind,
            fua,
        }));
    }

    /// The 4 KiB mapping units `[lba, lba + n)` touches.
    fn map_units(lba: u64, n: u32) -> std::ops::Range<u64> {
        lba / MAP_SECTORS..(lba + n.max(1) as u64).div_ceil(MAP_SECTORS)
    }

    /// Whether every LBA of `[lba, lba + n)` is deallocated.
    fn all_unmapped(&self, lba: u64, n: u32) -> bool {
        let Some(m) = &self.mapped else {
            return false;
        };
        Self::map_units(lba, n).all(|u| m[(u / 64) as usize] & (1 << (u % 64)) == 0)
    }

    /// A write gives `[lba, lba + n)` a mapping; a discard removes the mapping of the
    /// 4 KiB units it covers entirely.
    fn set_mapped(&mut self, lba: u64, n: u32, on: bool) {
        let Some(m) = &mut self.mapped else {
            return;
        };
        let r = if on {
            Self::map_units(lba, n)
        } else {
            lba.div_ceil(MAP_SECTORS)..(lba + n as u64) / MAP_SECTORS
        };
        for u in r {
            let (w, b) = ((u / 64) as usize, 1u64 << (u % 64));
            if w < m.len() {
                if on {
                    m[w] |= b;
                } else {
                    m[w] &= !b;
                }
            }
        }
    }

    /// Serial controller stage.
    fn controller(&mut self, now: Ns, ns: f64) -> Ns {
        self.ctrl_free = self.ctrl_free.max(now).add(ns as u64);
        self.ctrl_free
    }

    /// Read `[lba, lba + n)` from flash starting at `t`; when the last byte is off the
    /// channels.
    fn flash_read(&mut self, t: Ns, lba: u64, n: u32) -> Ns {
        let end = lba + n as u64;
        let mut lpn = lba / self.page_sectors;
        let mut all = t;
        while lpn * self.page_sectors < end {
            let lo = (lpn * self.page_sectors).max(lba);
            let hi = ((lpn + 1) * self.page_sectors).min(end);
            let u = (lpn % self.units as u64) as usize;
            let die = u as u32 / self.p.planes;
            let ch = (die % self.p.channels) as usize;
            let start = self.unit_free[u].max(t);
            let sensed = start.add(self.read_ns);
            self.unit_free[u] = sensed;
            let xs = sensed.max(self.chan_free[ch]);
            let xe = xs.add(Self::bytes_ns((hi - lo) * 512, self.p.channel_mb_s));
            self.chan_free[ch] = xe;
            all = all.max(xe);
            lpn += 1;
        }
        all
    }

    /// Program the next die page (`bytes` of it used) starting no earlier than `t`.
    fn program_page(&mut self, t: Ns, bytes: u64) -> Ns {
        let dies = self.p.channels * self.p.dies_per_channel;
        let die = self.next_die;
        self.next_die = (self.next_die + 1) % dies;
        let first = (die * self.p.planes) as usize;
        let planes = self.p.planes as usize;
        let free = self.unit_free[first..first + planes]
            .iter()
            .copied()
            .max()
            .unwrap_or(Ns::ZERO);
        let ch = (die % self.p.channels) as usize;
        let page_bytes = self.page_sectors * 512 * planes as u64;
        let xs = t.max(self.chan_free[ch]);
        let xe = xs.add(Self::bytes_ns(page_bytes, self.p.channel_mb_s));
        self.chan_free[ch] = xe;
        let end = xe.max(free).add(self.program_ns);
        for f in &mut self.unit_free[first..first + planes] {
            *f = end;
        }
        self.programs.push_back((end, bytes));
        self.last_program_end = self.last_program_end.max(end);
        end
    }

    /// Program the partly filled open page now.
    fn program_open(&mut self, t: Ns) -> Ns {
        if self.open_fill == 0 {
            return t;
        }
        let b = self.open_fill;
        self.open_fill = 0;
        self.program_page(t, b)
    }

    /// Data of a write arrived at `t`: buffer it; when it counts as done.
    fn buffer_write(&mut self, t: Ns, sectors: u32, fua: bool) -> Ns {
        let bytes = sectors as u64 * 512;
        let cap = self.p.write_buffer_kib as u64 * 1024;
        while let Some(&(end, b)) = self.programs.front() {
            if end > t {
                break;
            }
            self.programs.pop_front();
            self.buf_used -= b;
        }
        let mut at = t.max(self.admit_floor);
        while self.buf_used + bytes > cap {
            let Some((end, b)) = self.programs.pop_front() else {
                break;
            };
            self.buf_used -= b;
            at = at.max(end);
        }
        self.admit_floor = at;
        self.buf_used += bytes;
        self.open_fill += bytes;
        let die_page = self.page_sectors * 512 * self.p.planes as u64;
        while self.open_fill >= die_page {
            self.open_fill -= die_page;
            self.program_page(at, die_page);
        }
        if fua || !self.p.write_cache {
            // Our data is in the open page or an earlier one: done when those programs are.
            self.program_open(at);
            let end = self.programs.back().map(|p| p.0).unwrap_or(at).max(at);
            end.add(us_to_ns(self.p.write_overhead_us))
        } else {
            at.add(us_to_ns(self.p.write_overhead_us))
        }
    }

    /// A flush starting at `t`: when the buffer is programmed (plus `flush_us`).
    fn clean_at(&mut self, t: Ns) -> Ns {
        if !self.p.write_cache {
            return t;
        }
        let clean = self.program_open(t).max(self.last_program_end).max(t);
        clean.add(us_to_ns(self.p.flush_us))
    }

    /// Move jobs whose flash/controller stage ended by `now` across the link.
    fn process(&mut self, now: Ns) {
        while let Some(Reverse(j)) = self.link.peek().copied() {
            if j.ready > now {
                break;
            }
            self.link.pop();
            let dir = match self.p.interface {
                Interface::Sata => 0,
                Interface::Nvme => (j.kind == 1) as usize,
            };
            let mut ready = j.ready;
            if j.kind >= 2 {
                ready = self.clean_at(ready);
                if j.kind == 2 {
                    self.complete(ready, j.id);
                    continue;
                }
            }
            let xfer = Self::bytes_ns(j.sectors as u64 * 512, self.p.host_mb_s);
            let start = ready.max(self.link_free[dir]);
            let end = start.add(xfer);
            self.link_free[dir] = end;
            match j.kind {
                0 => self.complete(end, j.id),
                _ => {
                    let at = self.buffer_write(end, j.sectors, j.fua);
                    self.complete(at, j.id);
                }
            }
        }
    }
}

impl Driver for Flash {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        self.process(now);
        let is_flush = matches!(rq.op, Op::Flush) || rq.flags.has(ReqFlags::PREFLUSH);
        if self.outstanding >= self.capacity_cmds() {
            return QueueRqStatus::DevResource;
        }
        if self.p.interface == Interface::Sata
            && (self.flush_id.is_some() || (is_flush && self.outstanding > 0))
        {
            // SATA: FLUSH CACHE is not queued; it waits for the queue and blocks it.
            return QueueRqStatus::DevResource;
        }
        self.outstanding += 1;
        let n = rq.nr_sectors;
        match rq.op {
            Op::Read => {
                let lba = rq
                    .sector
                    .0
                    .min(self.info.capacity_sectors.saturating_sub(1));
                let ready = if self.all_unmapped(lba, n) {
                    // Deallocated: the FTL finds no mapping and returns zeros
                    // without a flash read (NVMe DLFEAT / ATA "deterministic read
                    // zeros after TRIM").
                    let t = self.controller(now, self.p.unmapped_read_ns);
                    t.add(us_to_ns(self.p.read_overhead_us))
                } else {
                    let t = self.controller(now, self.p.controller_read_ns);
                    let t = t.add(us_to_ns(self.p.read_overhead_us));
                    self.flash_read(t, lba, n.max(1))
                };
                self.enqueue_link(ready, id, n, 0, false);
            }
            Op::Write | Op::ZoneAppend => {
                self.set_mapped(rq.sector.0, n, true);
                let t = self.controller(now, self.p.controller_write_ns);
                let fua = rq.flags.has(ReqFlags::FUA);
                if rq.flags.has(ReqFlags::PREFLUSH) {
                    // Flush first (once earlier writes are in), then the data.
                    if self.p.interface == Interface::Sata {
                        self.flush_id = Some(id);
                    }
                    self.enqueue_link(t, id, n, 3, fua);
                } else {
                    self.enqueue_link(t, id, n, 1, fua);
                }
            }
            Op::Flush => {
                let t = self.controller(now, self.p.controller_write_ns);
                if self.p.interface == Interface::Sata {
                    self.flush_id = Some(id);
                }
                // Through the link stage so that every earlier write is buffered first.
                self.enqueue_link(t, id, 0, 2, false);
            }
            Op::Discard => {
                self.set_mapped(rq.sector.0, n, false);
                // Only the mapping update: controller time.
                let t = self.controller(now, self.p.controller_write_ns);
                self.complete(t, id);
            }
            Op::ZoneOpen | Op::ZoneClose | Op::ZoneFinish | Op::ZoneReset | Op::ZoneResetAll => {
                // The zone state lives in the zone layer; a reset's unmapping is
                // done there. Controller time only (unverified).
                let t = self.controller(now, self.p.controller_write_ns);
                self.complete(t, id);
            }
        }
        QueueRqStatus::Ok
    }
}

impl Device for Flash {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn next_event(&self) -> Option<Ns> {
        let a = self.done.next();
        let b = self.link.peek().map(|Reverse(j)| j.ready);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.process(now);
        while let Some(id) = self.done.pop_due(now) {
            self.outstanding -= 1;
            if self.flush_id == Some(id) {
                self.flush_id = None;
            }
            done.push(id);
        }
    }
}
