//! Fake devices and a tiny event loop for the blk-mq integration tests.
#![allow(dead_code)]

use blk::elevator::none::NoneSched;
use blk::mq::{Driver, FlushInsert, Queue, QueueConfig, QueueRqStatus};
use blk::{Bio, CgroupId, IoPrio, Ns, Op, ReqFlags, Request, RqId, Sector};

/// A cached write: first sector, sectors, when it entered the cache.
pub type Cached = (u64, u32, Ns);

/// What the device saw, in acceptance order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cmd {
    pub t: Ns,
    pub id: RqId,
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u32,
    pub fua: bool,
}

/// A SATA-like disk: NCQ commands up to `depth`; a cache flush is a non-queued
/// command, refused (`DEV_RESOURCE`) while NCQ commands are outstanding, and no NCQ
/// command is accepted while it runs. Writes land in a volatile cache (unless FUA or
/// the cache is off); a flush persists what was in the cache when it started.
pub struct Disk {
    pub depth: usize,
    pub rw_ns: u64,
    pub flush_ns: u64,
    /// A flush is exclusive (SATA NCQ); otherwise flushes queue like any command.
    pub exclusive_flush: bool,
    /// Refuse every command with this status (for requeue tests), if set.
    pub refuse_all: Option<QueueRqStatus>,
    pub write_cache: bool,
    inflight: Vec<(Ns, RqId, Op, u64, u32, bool)>,
    flush_running: bool,
    pub log: Vec<Cmd>,
    pub refused: u64,
    /// Written sectors still in the volatile cache, with the time they entered it.
    pub cache: Vec<Cached>,
    /// Persisted sectors.
    pub media: Vec<(u64, u32)>,
}

impl Disk {
    pub fn ncq(depth: usize) -> Disk {
        Disk {
            depth,
            rw_ns: 200_000,
            flush_ns: 2_000_000,
            exclusive_flush: true,
            refuse_all: None,
            write_cache: true,
            inflight: Vec::new(),
            flush_running: false,
            log: Vec::new(),
            refused: 0,
            cache: Vec::new(),
            media: Vec::new(),
        }
    }
    pub fn next_done(&self) -> Option<Ns> {
        self.inflight.iter().map(|c| c.0).min()
    }
    pub fn outstanding(&self) -> usize {
        self.inflight.len()
    }
    /// Finish every command due by `now`, in completion order.
    pub fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.inflight.sort_by_key(|c| (c.0, c.1));
        while let Some(&(t, id, op, sector, n, fua)) = self.inflight.first() {
            if t > now {
                break;
            }
            self.inflight.remove(0);
            match op {
                Op::Flush => {
                    self.flush_running = false;
                    // Persist what was cached before the flush started.
                    let started = Ns(t.0 - self.flush_ns);
                    let (keep, persist): (Vec<Cached>, Vec<Cached>) =
                        self.cache.iter().partition(|c| c.2 > started);
                    self.media.extend(persist.iter().map(|c| (c.0, c.1)));
                    self.cache = keep;
                }
                Op::Write if fua || !self.write_cache => self.media.push((sector, n)),
                Op::Write => self.cache.push((sector, n, t)),
                _ => {}
            }
            done.push(id);
        }
    }
    /// Power cut: the volatile cache is lost.
    pub fn power_cut(&mut self) {
        self.cache.clear();
    }
    pub fn persisted(&self, sector: u64, n: u32) -> bool {
        (sector..sector + n as u64).all(|s| {
            self.media
                .iter()
                .any(|m| (m.0..m.0 + m.1 as u64).contains(&s))
        })
    }
    pub fn flushes(&self) -> usize {
        self.log.iter().filter(|c| c.op == Op::Flush).count()
    }
}

impl Driver for Disk {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        if let Some(st) = self.refuse_all {
            self.refused += 1;
            return st;
        }
        let is_flush = rq.op == Op::Flush;
        let busy = if self.exclusive_flush {
            self.flush_running || (is_flush && !self.inflight.is_empty())
        } else {
            false
        } || self.inflight.len() >= self.depth;
        if busy {
            self.refused += 1;
            return QueueRqStatus::DevResource;
        }
        let fua = rq.flags.has(ReqFlags::FUA);
        let cost = if is_flush { self.flush_ns } else { self.rw_ns };
        if is_flush {
            self.flush_running = true;
        }
        self.inflight
            .push((now.add(cost), id, rq.op, rq.sector.0, rq.nr_sectors, fua));
        self.log.push(Cmd {
            t: now,
            id,
            op: rq.op,
            sector: rq.sector.0,
            nr_sectors: rq.nr_sectors,
            fua,
        });
        QueueRqStatus::Ok
    }
}

pub fn bio(op: Op, sector: u64, nr_sectors: u32, owner: u64) -> Bio {
    Bio {
        op,
        flags: match op {
            Op::Read => ReqFlags::SYNC,
            _ => ReqFlags::SYNC | ReqFlags::IDLE,
        },
        sector: Sector(sector),
        nr_sectors,
        ioprio: IoPrio::default(),
        pid: 1,
        cpu: 0,
        cgroup: CgroupId(0),
        owner,
    }
}

pub fn write(sector: u64, nr_sectors: u32, owner: u64) -> Bio {
    bio(Op::Write, sector, nr_sectors, owner)
}

/// An empty PREFLUSH write, as `blkdev_issue_flush` (fsync on a block device) sends.
pub fn fsync(owner: u64) -> Bio {
    Bio {
        flags: ReqFlags::PREFLUSH,
        ..write(0, 0, owner)
    }
}

pub fn none_queue(cfg: QueueConfig) -> Queue {
    Queue::new(cfg, |p| Box::new(NoneSched::new(p)))
}

pub fn cfg(depth: u32, write_cache: bool, fua: bool, flush_insert: FlushInsert) -> QueueConfig {
    QueueConfig {
        queue_depth: depth,
        nr_requests: Some(depth),
        write_cache,
        fua,
        flush_insert,
        ..Default::default()
    }
}

/// Drive queue and disk until nothing is pending or `until` is reached; bio
/// completions are handed to `on_done(now, owner)`, which may submit more.
pub fn run_until(
    q: &mut Queue,
    d: &mut Disk,
    until: Ns,
    mut on_done: impl FnMut(&mut Queue, &mut Disk, Ns, u64),
) -> Ns {
    let mut now = Ns::ZERO;
    let mut done = Vec::new();
    let mut owners = Vec::new();
    loop {
        q.take_completed(&mut owners);
        for o in owners.drain(..) {
            on_done(q, d, now, o);
        }
        if q.has_completed() {
            continue;
        }
        let next = match (q.next_run(), d.next_done()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return now,
            },
        };
        if next > until {
            return now;
        }
        now = now.max(next);
        d.advance(now, &mut done);
        for id in done.drain(..) {
            q.complete(now, id);
        }
        if q.next_run().is_some_and(|t| t <= now) {
            q.run(now, d);
        }
    }
}
