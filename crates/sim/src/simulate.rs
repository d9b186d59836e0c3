//! Wiring: jobs → block layer → device, driven by the event engine.
//!
//! [`Simulation::run`] plays every job clone to its end and reports each completed I/O
//! to an [`IoObserver`] (the statistics collector, or nothing in benchmarks). Groups
//! (`stonewall`) run one after another; clones of a group start together.

use crate::engine::EventQueue;
use crate::job::{split_owner, IoDone, Job, JobConfig};
use crate::pagecache::{PageCache, SyncWalk, WalkStep, PAGE_SIZE};
use blk::elevator::{self, Elevator, QueueParams, TunableError};
use blk::mq::{DiskStats, Driver, FlushInsert, Queue, QueueConfig};
use blk::{Bio, Ns, Op, ReqFlags, RqId, Sector};
use devices::Device;
use std::collections::BTreeMap;

/// What the simulation reports as it runs.
pub trait IoObserver {
    /// Clone `job` started at `now`.
    fn job_started(&mut self, _job: usize, _now: Ns) {}
    /// Clone `job` submitted an I/O in direction `dir` with `depth` I/Os in flight
    /// including it.
    fn io_submitted(&mut self, _job: usize, _dir: blk::Dir, _depth: u32) {}
    /// The I/O just submitted by clone `job` (after [`IoObserver::io_submitted`]):
    /// where it goes and when it was issued.
    fn io_issued(&mut self, _job: usize, _io: IoDone) {}
    /// Called now and then (every few thousand events) with the virtual time, so a
    /// front end can show progress.
    fn progress(&mut self, _now: Ns) {}
    /// An I/O of clone `job` completed at `now` (`issue` = when submission returned).
    fn io_completed(&mut self, _job: usize, _io: IoDone, _issue: Ns, _now: Ns) {}
    /// The ramp time of clone `job` ended: statistics restart.
    fn ramp_done(&mut self, _job: usize, _now: Ns) {}
    /// Clone `job` finished at `now`.
    fn job_finished(&mut self, _job: usize, _now: Ns) {}
}

/// An observer that ignores everything.
pub struct NoObserver;
impl IoObserver for NoObserver {}

#[derive(Clone, Copy, Debug)]
enum Ev {
    GroupStart(u32),
    /// A job of a started group whose `startdelay` has passed.
    JobStart(usize),
    RampEnd(usize),
    Stop(usize),
    QueueRun,
    Device,
    ElvTimer,
    /// Bios completed during submission (an fsync on a device without a cache).
    Deliver,
    /// The job's thread finished the CPU work of submitting its next I/O (or batch).
    JobCpu(usize),
    /// The job's thinktime or rate stall, which lasted this long (ns), ends.
    StallEnd(usize, u64),
    /// The job's buffered write in this I/O unit has copied its data into the
    /// page cache: the system call returns.
    CopyDone(usize, u32),
}

/// Owner tokens of writeback bios: this bit and the page index.
const WB_OWNER: u64 = 1 << 63;

/// What a job does once its write-and-wait of the page cache is over.
#[derive(Debug)]
enum AfterSync {
    /// `blkdev_issue_flush`: submit this empty PREFLUSH bio (the fsync's end).
    Flush(Bio),
    /// fio's `invalidate` at the job's start (`BLKFLSBUF`): start the job.
    Start,
}

/// A job inside `blkdev_fsync` (or `BLKFLSBUF`): its page-cache walk.
#[derive(Debug)]
struct PendingSync {
    walk: SyncWalk,
    then: AfterSync,
}

/// Knobs of one run that are not fio options.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Scheduler name.
    pub scheduler: String,
    /// Tunables to apply after the scheduler's init, `(name, value)` in sysfs terms.
    pub tunables: Vec<(String, String)>,
    /// `queue/nr_requests`, if set.
    pub nr_requests: Option<u32>,
    /// The kernel's `HZ`.
    pub hz: u32,
    /// Simulated CPUs.
    pub nr_cpus: u32,
    /// `queue/nomerges` (0 all, 1 one-hit cache only, 2 none).
    pub nomerges: u8,
    /// `queue/max_sectors_kb`, if set (must not exceed the device's
    /// `max_hw_sectors_kb`).
    pub max_sectors_kb: Option<u32>,
    /// Where the flush request is inserted into `hctx->dispatch`.
    pub flush_insert: FlushInsert,
    /// Cap on requests pulled from the elevator per dispatch round.
    pub nr_sched_batch: Option<u32>,
    /// The cgroups the jobs' `CgroupId`s index (paths, nesting, weights).
    pub cgroups: blk::CgroupTable,
    /// CPU time of copying one page in a buffered write, ns.
    pub page_copy_ns: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            scheduler: "none".into(),
            tunables: Vec::new(),
            nr_requests: None,
            hz: 250,
            nr_cpus: 8,
            nomerges: 0,
            max_sectors_kb: None,
            flush_insert: FlushInsert::Head,
            nr_sched_batch: None,
            cgroups: blk::CgroupTable::new(),
            page_copy_ns: crate::pagecache::DEFAULT_PAGE_COPY_NS,
        }
    }
}

/// Errors setting up a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Unknown scheduler.
    #[error(transparent)]
    Scheduler(#[from] elevator::UnknownScheduler),
    /// A tunable was rejected.
    #[error(transparent)]
    Tunable(#[from] TunableError),
}

/// Summary of a finished run.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// Virtual time at the end.
    pub end: Ns,
    /// Requests completed by the device.
    pub requests: u64,
    /// Disk statistics.
    pub disk: DiskStats,
    /// The scheduler's debugfs counters.
    pub sched_stats: Vec<(String, String)>,
}

/// One simulation: a queue with its scheduler, a device, and the job clones.
pub struct Simulation {
    queue: Queue,
    device: Box<dyn Device>,
    jobs: Vec<Job>,
    events: EventQueue<Ev>,
    run_armed: Option<Ns>,
    dev_armed: Option<Ns>,
    timer_armed: Option<Ns>,
    done_rqs: Vec<RqId>,
    done_owners: Vec<u64>,
    requests: u64,
    groups: Vec<u32>,
    group_left: Vec<usize>,
    batch: Vec<Bio>,
    deliver_armed: bool,
    /// The device's page cache (buffered I/O).
    cache: PageCache,
    /// Per job: its write-and-wait in progress.
    syncs: Vec<Option<PendingSync>>,
    /// Jobs asleep until a page's writeback ends, by page.
    page_waiters: BTreeMap<u64, Vec<usize>>,
    page_copy_ns: u64,
}

impl Simulation {
    /// Set up a run. Clones must be ordered by group.
    pub fn new(
        cfg: &SimConfig,
        device: Box<dyn Device>,
        jobs: Vec<JobConfig>,
    ) -> Result<Simulation, SimError> {
        let info = device.info().clone();
        let make = elevator::SCHEDULERS
            .iter()
            .find(|s| s.name == cfg.scheduler)
            .ok_or_else(|| elevator::UnknownScheduler(cfg.scheduler.clone()))?
            .make;
        let qcfg = QueueConfig {
            // Without an elevator the kernel allocates straight from the driver tags.
            nr_requests: if cfg.scheduler == "none" {
                Some(cfg.nr_requests.unwrap_or(info.queue_depth))
            } else {
                cfg.nr_requests
            },
            queue_depth: info.queue_depth,
            nr_cpus: cfg.nr_cpus,
            hz: cfg.hz,
            rotational: info.rotational,
            limits: blk::merge::MergeLimits {
                // BLK_DEF_MAX_SECTORS_CAP is 8192 sectors (4 MiB) since v6.17.
                max_sectors: match cfg.max_sectors_kb {
                    Some(kb) => (kb * 2).min(info.max_hw_sectors),
                    None => info.max_hw_sectors.clamp(8, 8192),
                },
                max_segments: info.max_segments,
                max_hw_sectors: info.max_hw_sectors,
                max_discard_segments: 1,
                nomerges: cfg.nomerges,
            },
            write_cache: info.write_cache,
            fua: info.write_cache && info.fua,
            flush_insert: cfg.flush_insert,
            nr_sched_batch: cfg.nr_sched_batch,
            nr_hw_queues: info.nr_hw_queues,
        };
        let mut queue = Queue::new(qcfg, |p: &QueueParams| make(p));
        queue.elevator_mut().set_cgroups(&cfg.cgroups);
        for (k, v) in &cfg.tunables {
            queue.elevator_mut().set_tunable(k, v)?;
        }
        let mut groups: Vec<u32> = jobs.iter().map(|j| j.group).collect();
        groups.dedup();
        let group_left = groups
            .iter()
            .map(|g| jobs.iter().filter(|j| j.group == *g).count())
            .collect();
        let mut events = EventQueue::new();
        if let Some(g) = groups.first() {
            events.push(Ns::ZERO, Ev::GroupStart(*g));
        }
        let nr_jobs = jobs.len();
        Ok(Simulation {
            cache: PageCache::new(),
            syncs: (0..nr_jobs).map(|_| None).collect(),
            page_waiters: BTreeMap::new(),
            page_copy_ns: cfg.page_copy_ns,
            queue,
            device,
            jobs: jobs.into_iter().map(Job::new).collect(),
            events,
            run_armed: None,
            dev_armed: None,
            timer_armed: None,
            done_rqs: Vec::new(),
            done_owners: Vec::new(),
            requests: 0,
            groups,
            group_left,
            batch: Vec::new(),
            deliver_armed: false,
        })
    }

    /// Set how clone `j` reaps completions: `min` = fio's
    /// `iodepth_batch_complete_min` (completions one `io_getevents` waits for),
    /// `max` = `iodepth_batch_complete_max` (most it takes). Both default to 1, as
    /// in fio.
    pub fn set_reaping(&mut self, j: usize, min: u32, max: u32) {
        self.jobs[j].set_reaping(min, max);
    }

    /// The scheduler in use.
    pub fn elevator(&self) -> &dyn Elevator {
        self.queue.elevator()
    }

    /// Run to the end.
    pub fn run(mut self, obs: &mut dyn IoObserver) -> RunSummary {
        let mut n: u32 = 0;
        while let Some((now, ev)) = self.events.pop() {
            n = n.wrapping_add(1);
            if n.is_multiple_of(16384) {
                obs.progress(now);
            }
            match ev {
                Ev::GroupStart(g) => self.start_group(g, now, obs),
                Ev::JobStart(j) => self.start_job(j, now, obs),
                Ev::RampEnd(j) => {
                    self.jobs[j].ramp_over(now);
                    obs.ramp_done(j, now);
                }
                Ev::Stop(j) => {
                    self.jobs[j].stopping = true;
                    self.maybe_finish(j, now, obs);
                }
                Ev::QueueRun => {
                    if self.run_armed == Some(now) {
                        self.run_armed = None;
                    }
                    let dev: &mut dyn blk::mq::Driver = self.device.as_mut();
                    self.queue.run(now, dev);
                }
                Ev::Device => {
                    if self.dev_armed == Some(now) {
                        self.dev_armed = None;
                    }
                    self.device.advance(now, &mut self.done_rqs);
                    for i in 0..self.done_rqs.len() {
                        self.queue.complete(now, self.done_rqs[i]);
                    }
                    self.requests += self.done_rqs.len() as u64;
                    self.done_rqs.clear();
                    // The queue run a completion triggers (SCHED_RESTART, kblockd at
                    // high priority) goes before the submitters it wakes get to submit
                    // again; otherwise a task resubmitting at once would always win the
                    // freed driver tag by direct issue and starve the software queues.
                    if self.queue.next_run().is_some_and(|t| t <= now) {
                        let dev: &mut dyn blk::mq::Driver = self.device.as_mut();
                        self.queue.run(now, dev);
                    }
                    self.deliver_completions(now, obs);
                }
                Ev::JobCpu(j) => {
                    self.jobs[j].cpu_pending = false;
                    let n = self.ios_per_call(j);
                    self.fill_now(j, now, n, obs);
                    self.schedule_cpu(j, now);
                    self.maybe_finish(j, now, obs);
                }
                Ev::StallEnd(j, slept) => {
                    self.jobs[j].end_stall(now, slept);
                    self.fill(j, now, obs);
                    self.maybe_finish(j, now, obs);
                }
                Ev::CopyDone(j, unit) => self.copy_done(j, unit, now, obs),
                Ev::Deliver => {
                    self.deliver_armed = false;
                    self.deliver_completions(now, obs);
                }
                Ev::ElvTimer => {
                    if self.timer_armed == Some(now) {
                        self.timer_armed = None;
                        self.queue.elevator_timer(now);
                    }
                }
            }
            self.arm(now);
        }
        let end = self.events.now();
        RunSummary {
            end,
            requests: self.requests,
            disk: self.queue.disk_stats(end),
            sched_stats: self.queue.elevator().debugfs(),
        }
    }

    /// Schedule the queue run, device event and scheduler timer the components want.
    fn arm(&mut self, now: Ns) {
        if self.queue.has_completed() && !self.deliver_armed {
            self.deliver_armed = true;
            self.events.push(now, Ev::Deliver);
        }
        if let Some(t) = self.queue.next_run() {
            if self.run_armed.is_none_or(|a| t < a) {
                self.run_armed = Some(t.max(now));
                self.events.push(t, Ev::QueueRun);
            }
        }
        if let Some(t) = self.device.next_event() {
            if self.dev_armed.is_none_or(|a| t < a) {
                self.dev_armed = Some(t.max(now));
                self.events.push(t, Ev::Device);
            }
        }
        if let Some(t) = self.queue.next_elevator_timer() {
            if self.timer_armed.is_none_or(|a| t < a) {
                self.timer_armed = Some(t.max(now));
                self.events.push(t, Ev::ElvTimer);
            }
        }
    }

    fn start_group(&mut self, g: u32, now: Ns, obs: &mut dyn IoObserver) {
        for j in 0..self.jobs.len() {
            if self.jobs[j].cfg.group != g {
                continue;
            }
            match self.jobs[j].cfg.start_delay {
                0 => self.start_job(j, now, obs),
                d => self.events.push(now.add(d), Ev::JobStart(j)),
            }
        }
    }

    /// Start job `j`. A buffered job with fio's `invalidate` (the default) first
    /// has the device's page cache dropped (`BLKFLSBUF`: `sync_blockdev`, a
    /// write-and-wait of every dirty page, then `invalidate_bdev`); its clock
    /// starts after that, as fio opens its files before the job's clock starts.
    fn start_job(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        let cfg = &self.jobs[j].cfg;
        if cfg.buffered && cfg.invalidate && !self.cache.is_clean() {
            let walk = SyncWalk::whole(&mut self.cache);
            self.syncs[j] = Some(PendingSync {
                walk,
                then: AfterSync::Start,
            });
            self.advance_sync(j, now, obs);
            return;
        }
        self.begin_job(j, now, obs);
    }

    /// The job's clock starts: its ramp and runtime count from now.
    fn begin_job(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        let job = &mut self.jobs[j];
        job.start_at(now);
        let ramp = job.cfg.ramp_time;
        let runtime = job.cfg.runtime;
        obs.job_started(j, now);
        if ramp > 0 {
            self.events.push(now.add(ramp), Ev::RampEnd(j));
        }
        if let Some(rt) = runtime {
            self.events.push(now.add(ramp + rt), Ev::Stop(j));
        }
        self.fill(j, now, obs);
        self.maybe_finish(j, now, obs);
    }

    /// Submit until the job's depth is reached, it stops, or it blocks in an fsync.
    /// I/Os go down `batch_submit` at a time (fio's `iodepth_batch_submit`), under a
    /// plug when the engine plugs batches of more than two; an fsync is issued on
    /// its own once the I/Os before it are submitted.
    ///
    /// The thread submits only I/O units it has reaped ([`Job::reap`]): a
    /// completion is posted to it at once, but it takes it only when fio would —
    /// its queue full, at least `iodepth_batch_complete_min` posted, at most
    /// `iodepth_batch_complete_max` taken — and not while it is busy submitting.
    /// With fio's defaults (1 and 1) it thus resubmits one I/O per completion
    /// after the first fill of the queue, whatever `iodepth_batch_submit` is.
    fn fill(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if self.jobs[j].cfg.submit_cost_ns == 0 {
            self.jobs[j].reap(now);
            self.fill_now(j, now, usize::MAX, obs);
            while self.jobs[j].reap(now) > 0 {
                self.fill_now(j, now, usize::MAX, obs);
            }
        } else {
            self.schedule_cpu(j, now);
        }
        self.start_stall_if_due(j, now);
    }

    /// I/Os submitted per system call: a batch under a plug, else one (always one
    /// for buffered I/O, which completes inside the call).
    fn ios_per_call(&self, j: usize) -> usize {
        let cfg = &self.jobs[j].cfg;
        if cfg.plugs && cfg.batch_submit > 2 && !cfg.buffered {
            cfg.batch_submit as usize
        } else {
            1
        }
    }

    /// Start the thread's CPU work on its next submission, if it has one and is not
    /// busy already; the I/Os enter the block layer when the work is done.
    fn schedule_cpu(&mut self, j: usize, now: Ns) {
        if self.jobs[j].started {
            self.jobs[j].stop_if_done();
        }
        if self.jobs[j].cpu_pending {
            return;
        }
        // Between two submissions fio reaps, if its queue is full
        // (`wait_for_completions`); completions posted while it was busy wait.
        self.jobs[j].reap(now);
        let job = &self.jobs[j];
        if !(job.can_submit() || job.sync_due() || job.end_sync_due()) {
            return;
        }
        let n = if job.can_submit() {
            self.ios_per_call(j).min(job.reaped_free().max(1) as usize)
        } else {
            1
        };
        let at = now.add(job.cfg.submit_cost_ns * n as u64);
        self.jobs[j].cpu_pending = true;
        self.events.push(at, Ev::JobCpu(j));
    }

    /// Submit up to `max_ios` I/Os of job `j` now.
    fn fill_now(&mut self, j: usize, now: Ns, max_ios: usize, obs: &mut dyn IoObserver) {
        if self.jobs[j].cfg.buffered {
            self.write_buffered(j, now, obs);
            return;
        }
        let mut budget = max_ios;
        let batch = self.jobs[j].cfg.batch_submit.max(1) as usize;
        let plugs = self.jobs[j].cfg.plugs;
        if !plugs || batch <= 2 {
            // Unplugged: each I/O goes down as it is prepared (no batch buffer on
            // the hot path).
            while budget > 0 && self.jobs[j].can_submit() {
                let Some(bio) = self.jobs[j].next_bio(now, j) else {
                    break;
                };
                budget -= 1;
                obs.io_submitted(j, bio.op.dir(), self.jobs[j].inflight);
                obs.io_issued(j, self.jobs[j].in_flight(split_owner(bio.owner).1));
                let dev: &mut dyn Driver = self.device.as_mut();
                self.queue.submit_bio_direct(now, bio, dev);
            }
            self.submit_sync_if_due(j, now, obs);
            return;
        }
        let mut batch_buf = std::mem::take(&mut self.batch);
        while budget > 0 {
            while budget > 0 && self.jobs[j].can_submit() && batch_buf.len() < batch {
                budget -= 1;
                let Some(bio) = self.jobs[j].next_bio(now, j) else {
                    break;
                };
                obs.io_submitted(j, bio.op.dir(), self.jobs[j].inflight);
                obs.io_issued(j, self.jobs[j].in_flight(split_owner(bio.owner).1));
                batch_buf.push(bio);
            }
            if batch_buf.is_empty() {
                break;
            }
            let dev: &mut dyn Driver = self.device.as_mut();
            if plugs && batch_buf.len() > 2 {
                self.queue.start_plug();
                for bio in batch_buf.drain(..) {
                    self.queue.submit_bio(now, bio);
                }
                self.queue.finish_plug(now, Some(dev));
            } else {
                for bio in batch_buf.drain(..) {
                    self.queue.submit_bio_direct(now, bio, dev);
                }
            }
        }
        self.batch = batch_buf;
        self.submit_sync_if_due(j, now, obs);
    }

    /// A buffered `write()` (`blkdev_write_iter` → `generic_perform_write`): the
    /// job's thread copies the data into the page cache, [`SimConfig::page_copy_ns`]
    /// per page, and the call returns ([`Ev::CopyDone`]); no bio is submitted.
    /// Whatever the engine, one write at a time: libaio and io_uring perform a
    /// buffered write inline in the submission.
    fn write_buffered(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if !self.jobs[j].cpu_pending && self.jobs[j].can_submit() {
            if let Some(bio) = self.jobs[j].next_bio(now, j) {
                obs.io_submitted(j, bio.op.dir(), self.jobs[j].inflight);
                let unit = split_owner(bio.owner).1;
                let io = self.jobs[j].in_flight(unit);
                obs.io_issued(j, io);
                let pages = io.bytes.div_ceil(PAGE_SIZE);
                self.jobs[j].cpu_pending = true;
                self.events
                    .push(now.add(pages * self.page_copy_ns), Ev::CopyDone(j, unit));
                return;
            }
        }
        self.submit_sync_if_due(j, now, obs);
    }

    /// The copy of a buffered write is done: its pages are dirty
    /// (`block_write_end`), the call returns.
    fn copy_done(&mut self, j: usize, unit: u32, now: Ns, obs: &mut dyn IoObserver) {
        self.jobs[j].cpu_pending = false;
        let io = self.jobs[j].in_flight(unit);
        self.cache
            .mark_dirty(io.offset / PAGE_SIZE, io.bytes.div_ceil(PAGE_SIZE));
        if let Some(io) = self.jobs[j].complete(unit, now) {
            obs.io_completed(j, io, io.issue, now);
        }
        self.fill(j, now, obs);
        self.maybe_finish(j, now, obs);
    }

    /// Issue the job's fsync once the I/Os before it are submitted; the job blocks
    /// until it completes. On a block device that is `blkdev_fsync`: a
    /// write-and-wait of every dirty page of the device (nothing to do when the
    /// page cache is clean, as it always is for direct I/O), then an empty
    /// PREFLUSH bio (`blkdev_issue_flush`).
    fn submit_sync_if_due(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if self.jobs[j].sync_due() || self.jobs[j].end_sync_due() {
            let bio = self.jobs[j].sync_bio(now, j);
            let walk = SyncWalk::whole(&mut self.cache);
            self.syncs[j] = Some(PendingSync {
                walk,
                then: AfterSync::Flush(bio),
            });
            self.advance_sync(j, now, obs);
        }
    }

    /// Carry job `j`'s write-and-wait on until it must sleep on a page's writeback
    /// or is done. The pages it writes go down under a plug (`blkdev_writepages`),
    /// one bio per page (`block_write_full_folio`: one buffer head per page), with
    /// `REQ_SYNC` (`wbc_to_write_flags` for `WB_SYNC_ALL`), from the job's task
    /// (its CPU, ioprio and cgroup); adjacent pages merge in the plug. Sleeping
    /// flushes the plug (`schedule`). When a bio has to wait for a scheduler tag,
    /// the walk goes on (the later bios queue behind it in order) where the
    /// kernel's task would sleep: pages it would write after waking do not merge
    /// into one another.
    fn advance_sync(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        let Some(mut ps) = self.syncs[j].take() else {
            return;
        };
        let mut plugged = false;
        loop {
            match ps.walk.next(&mut self.cache) {
                WalkStep::Write(p) => {
                    if !plugged {
                        self.queue.start_plug();
                        plugged = true;
                    }
                    let cfg = &self.jobs[j].cfg;
                    let bio = Bio {
                        op: Op::Write,
                        flags: ReqFlags::SYNC,
                        sector: Sector::from_bytes(p * PAGE_SIZE),
                        nr_sectors: (PAGE_SIZE / Sector::SIZE) as u32,
                        ioprio: cfg.ioprio,
                        pid: cfg.pid,
                        cpu: cfg.cpu,
                        cgroup: cfg.cgroup,
                        owner: WB_OWNER | p,
                    };
                    self.queue.submit_bio(now, bio);
                }
                step => {
                    if plugged {
                        let dev: &mut dyn Driver = self.device.as_mut();
                        self.queue.finish_plug(now, Some(dev));
                    }
                    if let WalkStep::WaitOn(p) = step {
                        self.page_waiters.entry(p).or_default().push(j);
                        self.syncs[j] = Some(ps);
                        return;
                    }
                    match ps.then {
                        AfterSync::Flush(bio) => {
                            let dev: &mut dyn Driver = self.device.as_mut();
                            self.queue.submit_bio_direct(now, bio, dev);
                        }
                        AfterSync::Start => self.begin_job(j, now, obs),
                    }
                    return;
                }
            }
        }
    }

    /// A writeback bio completed (`end_buffer_async_write` →
    /// `folio_end_writeback`): the page's writeback ends and the tasks waiting for
    /// it go on, in the order they went to sleep.
    fn writeback_done(&mut self, page: u64, now: Ns, obs: &mut dyn IoObserver) {
        self.cache.end_writeback(page);
        if let Some(waiters) = self.page_waiters.remove(&page) {
            for j in waiters {
                self.advance_sync(j, now, obs);
            }
        }
    }

    fn deliver_completions(&mut self, now: Ns, obs: &mut dyn IoObserver) {
        self.queue.take_completed(&mut self.done_owners);
        for i in 0..self.done_owners.len() {
            let o = self.done_owners[i];
            if o & WB_OWNER != 0 {
                self.writeback_done(o & !WB_OWNER, now, obs);
                continue;
            }
            let (j, unit) = split_owner(o);
            if let Some(io) = self.jobs[j].complete(unit, now) {
                obs.io_completed(j, io, io.issue, now);
            }
            self.fill(j, now, obs);
            self.maybe_finish(j, now, obs);
        }
        self.done_owners.clear();
    }

    /// Start the job's thinktime or rate stall if one is due and its I/O has
    /// drained.
    fn start_stall_if_due(&mut self, j: usize, now: Ns) {
        let cfg = &self.jobs[j].cfg;
        let limit = cfg
            .runtime
            .map(|rt| self.jobs[j].start.add(cfg.ramp_time + rt));
        if let Some(dur) = self.jobs[j].start_stall(now, limit) {
            self.events.push(now.add(dur), Ev::StallEnd(j, dur));
        }
    }

    fn maybe_finish(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        self.start_stall_if_due(j, now);
        if self.jobs[j].end_sync_due() {
            self.fill(j, now, obs);
        }
        let job = &mut self.jobs[j];
        if job.finished
            || !job.started
            || !job.stopping
            || job.inflight > 0
            || job.cpu_pending
            || job.stalled()
        {
            return;
        }
        job.finished = true;
        let end = job
            .end
            .max(if job.cfg.runtime.is_some() && job.cfg.time_based {
                now
            } else {
                job.end
            });
        job.end = end;
        let g = job.cfg.group;
        obs.job_finished(j, end);
        let gi = self.groups.iter().position(|x| *x == g).unwrap_or(0);
        self.group_left[gi] -= 1;
        if self.group_left[gi] == 0 {
            if let Some(next) = self.groups.get(gi + 1) {
                self.events.push(now, Ev::GroupStart(*next));
            }
        }
    }
}
