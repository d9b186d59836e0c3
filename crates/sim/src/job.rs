//! The job model: one fio job clone as the simulator runs it.
//!
//! A [`JobConfig`] is what one clone of a fio job does, with fio's semantics already
//! resolved (numjobs expanded, sizes in bytes, times in ns). A [`Job`] is its run-time
//! state: which block comes next, how much was issued, which I/O units are in flight.

use crate::offsets::BlockPicker;
use blk::{Bio, CgroupId, Dir, IoPrio, Ns, Op, ReqFlags, Sector};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// fio's `rw=` modes that iosched models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`.
    RandRead,
    /// `randwrite`.
    RandWrite,
    /// `rw` / `readwrite`: sequential mixed.
    ReadWrite,
    /// `randrw`: random mixed.
    RandRw,
}

impl RwMode {
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
        }
    }
    /// Random offsets?
    pub fn random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw)
    }
    fn reads(self) -> bool {
        !matches!(self, RwMode::Write | RwMode::RandWrite)
    }
    fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead)
    }
}

/// One job clone, fully resolved.
#[derive(Clone, Debug)]
pub struct JobConfig {
    /// fio job name (shared by the clones of a job).
    pub name: String,
    /// Index of the fio job this clone belongs to.
    pub job_index: u32,
    /// Reporting group (`groupid`): a new one starts at each `stonewall`.
    pub group: u32,
    /// I/O pattern.
    pub rw: RwMode,
    /// Share of reads in mixed modes, percent.
    pub rwmixread: u32,
    /// Block size per direction, bytes.
    pub bs: [u64; 2],
    /// Start of the region, bytes.
    pub offset: u64,
    /// Length of the region, bytes.
    pub size: u64,
    /// Bytes to transfer before stopping (ignored when `time_based`).
    pub io_limit: u64,
    /// Stop after this many I/Os (fio `number_ios`).
    pub number_ios: Option<u64>,
    /// Run time limit after ramp, ns.
    pub runtime: Option<u64>,
    /// Keep going until `runtime` even when the region has been covered.
    pub time_based: bool,
    /// Warm-up time whose I/O is not counted, ns.
    pub ramp_time: u64,
    /// Most I/Os in flight (1 for synchronous engines, `iodepth` for async ones).
    pub depth: u32,
    /// The engine is asynchronous: fio reports submission latency.
    pub async_engine: bool,
    /// CPU the clone runs on (its software queue).
    pub cpu: u32,
    /// Task id (one per clone, as BFQ keys its queues by process).
    pub pid: u32,
    /// I/O priority.
    pub ioprio: IoPrio,
    /// Cgroup.
    pub cgroup: CgroupId,
    /// Seed of this clone's random streams.
    pub seed: u64,
    /// fio `norandommap`.
    pub norandommap: bool,
}

/// One I/O in flight.
#[derive(Clone, Copy, Debug, Default)]
struct IoUnit {
    submit: Ns,
    bytes: u32,
    dir: u8,
}

/// Run-time state of one clone.
#[derive(Debug)]
pub struct Job {
    /// What it does.
    pub cfg: JobConfig,
    /// When it started.
    pub start: Ns,
    /// Has it started?
    pub started: bool,
    /// No more submissions (limit reached or runtime over).
    pub stopping: bool,
    /// Finished: stopping and nothing in flight.
    pub finished: bool,
    /// When its last I/O completed.
    pub end: Ns,
    /// I/Os in flight.
    pub inflight: u32,
    issued_bytes: u64,
    issued_ios: u64,
    pickers: [BlockPicker; 2],
    dir_rng: Pcg64Mcg,
    units: Vec<IoUnit>,
    free_units: Vec<u32>,
}

/// Owner token of a bio: job index and I/O unit.
pub fn owner(job: usize, unit: u32) -> u64 {
    ((job as u64) << 32) | unit as u64
}

/// Inverse of [`owner`].
pub fn split_owner(o: u64) -> (usize, u32) {
    ((o >> 32) as usize, o as u32)
}

/// A completed I/O as the job reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoDone {
    /// Direction.
    pub dir: Dir,
    /// Bytes.
    pub bytes: u64,
    /// When the job submitted it.
    pub submit: Ns,
}

impl Job {
    /// A job that has not started.
    pub fn new(cfg: JobConfig) -> Job {
        let picker = |dir: usize, salt: u64| {
            let nblocks = (cfg.size / cfg.bs[dir].max(1)).max(1);
            if cfg.rw.random() {
                BlockPicker::random(nblocks, cfg.seed ^ salt, !cfg.norandommap)
            } else {
                BlockPicker::sequential(nblocks)
            }
        };
        let pickers = [
            picker(0, 0x5EED_0000_0000_0001),
            picker(1, 0x5EED_0000_0000_0002),
        ];
        let depth = cfg.depth.max(1);
        Job {
            dir_rng: Pcg64Mcg::seed_from_u64(cfg.seed ^ 0xD1E),
            pickers,
            units: vec![IoUnit::default(); depth as usize],
            free_units: (0..depth).rev().collect(),
            cfg,
            start: Ns::ZERO,
            started: false,
            stopping: false,
            finished: false,
            end: Ns::ZERO,
            inflight: 0,
            issued_bytes: 0,
            issued_ios: 0,
        }
    }

    /// Whether the job may submit another I/O now.
    pub fn can_submit(&self) -> bool {
        self.started && !self.stopping && !self.free_units.is_empty()
    }

    fn limit_reached(&self) -> bool {
        if let Some(n) = self.cfg.number_ios {
            if self.issued_ios >= n {
                return true;
            }
        }
        !self.cfg.time_based && self.issued_bytes >= self.cfg.io_limit
    }

    fn next_dir(&mut self) -> Dir {
        match (self.cfg.rw.reads(), self.cfg.rw.writes()) {
            (true, false) => Dir::Read,
            (false, true) => Dir::Write,
            _ => {
                if self.dir_rng.gen_range(1..=100u32) <= self.cfg.rwmixread {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        }
    }

    /// Build the next bio and mark its I/O unit in flight; `None` when the job has
    /// reached its limit (it is then stopping).
    pub fn next_bio(&mut self, now: Ns, job_idx: usize) -> Option<Bio> {
        if self.limit_reached() {
            self.stopping = true;
            return None;
        }
        let unit = self.free_units.pop()?;
        let dir = self.next_dir();
        let bs = self.cfg.bs[dir.idx()];
        let block = self.pickers[dir.idx()].next_block();
        let byte = self.cfg.offset + block * bs;
        let remaining = self.cfg.io_limit.saturating_sub(self.issued_bytes);
        let bytes = if self.cfg.time_based {
            bs
        } else {
            bs.min(remaining.max(1))
        };
        self.units[unit as usize] = IoUnit {
            submit: now,
            bytes: bytes as u32,
            dir: dir as u8,
        };
        self.inflight += 1;
        self.issued_bytes += bytes;
        self.issued_ios += 1;
        let (op, flags) = match dir {
            Dir::Read => (Op::Read, ReqFlags::SYNC),
            // Direct writes to a block device are REQ_SYNC | REQ_IDLE (dio_bio_write_op).
            Dir::Write => (Op::Write, ReqFlags::SYNC | ReqFlags::IDLE),
        };
        Some(Bio {
            op,
            flags,
            sector: Sector::from_bytes(byte),
            nr_sectors: (bytes / Sector::SIZE).max(1) as u32,
            ioprio: self.cfg.ioprio,
            pid: self.cfg.pid,
            cpu: self.cfg.cpu,
            cgroup: self.cfg.cgroup,
            owner: owner(job_idx, unit),
        })
    }

    /// An I/O unit completed.
    pub fn complete(&mut self, unit: u32, now: Ns) -> IoDone {
        let u = self.units[unit as usize];
        self.free_units.push(unit);
        self.inflight -= 1;
        self.end = now;
        IoDone {
            dir: if u.dir == 0 { Dir::Read } else { Dir::Write },
            bytes: u.bytes as u64,
            submit: u.submit,
        }
    }
}
