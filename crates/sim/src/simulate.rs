//! Wiring: jobs → block layer → device, driven by the event engine.
//!
//! [`Simulation::run`] plays every job clone to its end and reports each completed I/O
//! to an [`IoObserver`] (the statistics collector, or nothing in benchmarks). Groups
//! (`stonewall`) run one after another; clones of a group start together.

use crate::engine::EventQueue;
use crate::fio::ExitWhat;
use crate::job::{split_owner, IoDone, Job, JobConfig};
use crate::pagecache::{
    dirty_poll_interval, pos_ratio, NoSyncWalk, PageCache, RaState, SyncWalk, VmConfig, WalkStep,
    WriteBandwidth, BIO_MAX_PAGES, PAGE_SIZE,
};
use blk::elevator::{self, Elevator, QueueParams, TunableError};
use blk::mq::{DiskStats, Driver, FlushInsert, Queue, QueueConfig, Submitted};
use blk::{Bio, Ns, Op, ReqFlags, RqId, Sector};
use devices::Device;
use std::collections::BTreeMap;

mod host_path;
mod null_engine;
mod steady;

/// What the simulation reports as it runs.
pub trait IoObserver {
    /// Clone `job` started at `now`.
    fn job_started(&mut self, _job: usize, _now: Ns) {}
    /// Clone `job` submitted an I/O of operation `op` (a trim is a discard) with
    /// `depth` I/Os in flight including it.
    fn io_submitted(&mut self, _job: usize, _op: blk::Op, _depth: u32) {}
    /// The I/O just submitted by clone `job` (after [`IoObserver::io_submitted`]):
    /// where it goes and when it was issued.
    fn io_issued(&mut self, _job: usize, _io: IoDone) {}
    /// Called now and then (every few thousand events) with the virtual time, so a
    /// front end can show progress.
    fn progress(&mut self, _now: Ns) {}
    /// Asked after each [`IoObserver::progress`]: true ends the run there (an
    /// interrupted run reports what it simulated so far).
    fn stop_requested(&mut self) -> bool {
        false
    }
    /// An I/O of clone `job` completed at `now` (`issue` = when submission returned).
    fn io_completed(&mut self, _job: usize, _io: IoDone, _issue: Ns, _now: Ns) {}
    /// The ramp time of clone `job` ended: statistics restart.
    fn ramp_done(&mut self, _job: usize, _now: Ns) {}
    /// Clone `job` finished at `now`.
    fn job_finished(&mut self, _job: usize, _now: Ns) {}
    /// Clone `job` issued an fsync (an empty PREFLUSH bio) at `now`.
    fn sync_issued(&mut self, _job: usize, _now: Ns) {}
    /// Clone `job` issued a sync fio reports, with `depth` I/Os in flight (the
    /// sync included); `fsync`: an fsync, else an fdatasync.
    fn sync_submitted(&mut self, _job: usize, _depth: u32, _fsync: bool) {}
    /// A sync fio reports, issued at `issued`, completed at `now`.
    fn sync_completed(&mut self, _job: usize, _issued: Ns, _now: Ns) {}
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
    /// The third field is the stall's number: a stall cut short by a
    /// termination leaves its original end stale.
    StallEnd(usize, u64, u32),
    /// The job's buffered write in this I/O unit has copied its data into the
    /// page cache (`balance_dirty_pages` comes next).
    CopyDone(usize, u32),
    /// The job's pause in `balance_dirty_pages` ends; `true`: it was over the
    /// dirty limit and checks again.
    ThrottleDone(usize, u32, bool),
    /// The flusher's delayed wake-up (`wb->dwork`).
    FlusherWake,
    /// Host model: a CPU's item (or slice) ends (CPU, generation).
    Cpu(u32, u64),
    /// Host model: a lock is handed to its first waiter.
    LockGrant(usize),
    /// fio's helper thread checks for steady state (the check's generation).
    SsCheck(u64),
}

/// `MAX_PAUSE`: the longest a writer sleeps in one `balance_dirty_pages` round
/// (HZ/5).
const MAX_PAUSE_NS: u64 = 200_000_000;
/// `MIN_WRITEBACK_PAGES`: the flusher writes in chunks that are multiples of 4 MiB.
const MIN_WRITEBACK_PAGES: u64 = 1024;
/// `DIRTY_SCOPE`: a flusher chunk is at most an eighth of the dirty limit.
const DIRTY_SCOPE: u64 = 8;
/// Task id of the flusher's kworker, for schedulers that key on the submitter.
const FLUSHER_PID: u32 = 1;

/// Who sleeps on a scheduler tag with a writeback bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walker {
    Job(usize),
    Flusher,
}

/// One piece of the flusher's work (`struct wb_writeback_work`).
#[derive(Debug)]
struct FlushWork {
    /// `for_kupdate` (the periodic flush of expired data); else `for_background`.
    kupdate: bool,
    /// Pages left to write (`work->nr_pages`).
    nr_pages: u64,
    /// The inode has been picked (`queue_io`); it stays picked between chunks.
    picked: bool,
    /// The `do_writepages` call in progress.
    pass: Option<NoSyncWalk>,
}

/// The device's flusher (`wb_workfn` on the inode's `bdi_writeback`).
#[derive(Debug, Default)]
struct Flusher {
    /// The delayed wake-up is armed for this time.
    wake_at: Option<Ns>,
    /// The work in progress (woken, writing, maybe asleep on a tag).
    work: Option<FlushWork>,
    /// Kinds of work done in this wake-up (`wb_do_writeback` checks the periodic
    /// flush, then the background threshold, once each).
    did_kupdate: bool,
    did_background: bool,
    /// `wb->last_old_flush`.
    last_old_flush: Ns,
    /// Asleep until the bio of this owner has a scheduler tag.
    tag_wait: Option<u64>,
    /// `wb->avg_write_bandwidth`.
    bw: WriteBandwidth,
}

/// A buffered writer's dirty-throttling state (`current->nr_dirtied`,
/// `nr_dirtied_pause`).
#[derive(Clone, Copy, Debug)]
struct Dirtier {
    nr_dirtied: u64,
    nr_dirtied_pause: u64,
}

impl Default for Dirtier {
    fn default() -> Self {
        // 128 KiB worth of pages (`ratelimit_pages`'s start).
        Dirtier {
            nr_dirtied: 0,
            nr_dirtied_pause: 32,
        }
    }
}

/// Owner tokens of writeback bios: this bit and the page index.
const WB_OWNER: u64 = 1 << 63;
/// Owner tokens of read bios of the page cache: this bit and the first page.
const RA_OWNER: u64 = 1 << 62;

/// A job inside a buffered `read()` (`filemap_read`): pages `next..end` still to
/// be found uptodate.
#[derive(Clone, Copy, Debug)]
struct PendingRead {
    unit: u32,
    next: u64,
    end: u64,
}

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
    /// Asleep until the bio of this owner has a scheduler tag.
    tag_wait: Option<u64>,
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
    /// The page cache's settings: vm sysctls, memory, copy cost.
    pub vm: VmConfig,
    /// `queue/read_ahead_kb` (default 128: `VM_READAHEAD_PAGES`).
    pub read_ahead_kb: u32,
    /// The host: its CPUs and costs, or the free host.
    pub host: host::HostProfile,
    /// `queue/rq_affinity` (host model): 0 complete where the interrupt came, 1
    /// (default) on the submitting CPU unless it shares a cache with that one, 2 on
    /// the submitting CPU always.
    pub rq_affinity: u8,
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
            vm: VmConfig::default(),
            read_ahead_kb: 128,
            host: host::host("free").expect("the free host is built in"),
            rq_affinity: 1,
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
    /// Per job: the error it stopped with (`rate_min` not met, `latency_target`
    /// missed at depth 1), if any.
    pub errors: Vec<Option<crate::job::JobError>>,
    /// Per job: the queue depth it ended with (fio's `latency_qd`, which a
    /// `latency_target` search moves).
    pub latency_depths: Vec<u32>,
    /// Per job: the zone resets fio counted (`nr_zone_resets`), for a
    /// `zonemode=zbd` job that writes or trims (`count_zone_resets`).
    pub zone_resets: Vec<Option<u64>>,
    /// Per job: its steady-state section (the clones that keep a ring).
    pub steadystate: Vec<Option<crate::steadystate::SsReport>>,
    /// Requests completed by the device.
    pub requests: u64,
    /// Disk statistics.
    pub disk: DiskStats,
    /// The scheduler's debugfs counters.
    pub sched_stats: Vec<(String, String)>,
    /// What the host did, with a host model.
    pub host: Option<HostSummary>,
    /// Bios that ended with an error (a zoned device refusing a write).
    pub io_errors: u64,
    /// Zone write plugging's counters, on a zoned device.
    pub zone: Option<blk::zoned::ZoneStats>,
}

/// The host's accounting at the end of a run.
#[derive(Clone, Debug, Default)]
pub struct HostSummary {
    /// Per job clone: its thread's user and system time and context switches.
    pub jobs: Vec<host::cpu::ThreadTime>,
    /// Per CPU: where its time went.
    pub cpus: Vec<host::cpu::CpuTime>,
    /// The scheduler's locks (one, one per hctx, or none).
    pub locks: Vec<host::lock::LockStats>,
}

/// The request queue of a run: `cfg`'s scheduler with its tunables over a device
/// described by `info` (its queue depth, limits, cache and hardware queues). Shared
/// by [`Simulation`] and the real-time emulator ([`crate::emulate`]).
pub fn build_queue(cfg: &SimConfig, info: &devices::DeviceInfo) -> Result<Queue, SimError> {
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
            chunk_sectors: 0,
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
    Ok(queue)
}

/// Make `queue` the queue of a zoned `device` (zone write plugging, zone
/// boundaries), if it is one. SCSI/ATA disks have no native zone append, so
/// the block layer emulates it (`sd_zbc`); NVMe ZNS has it.
pub fn zone_queue(queue: &mut Queue, device: &dyn Device) {
    let Some(g) = device.zone_geometry() else {
        return;
    };
    let lim = blk::zoned::ZonedLimits {
        zone_sectors: g.zone_sectors,
        capacity: device.info().capacity_sectors,
        zone_capacity: g.zone_capacity,
        nr_conv_zones: g.nr_conv_zones,
        max_open_zones: g.max_open,
        max_active_zones: g.max_active,
        emulate_zone_append: g.protocol == devices::zoned::ZoneProtocol::Zbc,
    };
    queue.set_zoned(lim, &device.report_zones());
}

/// Complete request `id` with the status the device gives it.
pub(crate) fn complete_from(queue: &mut Queue, device: &mut dyn Device, now: Ns, id: RqId) {
    let ok = device.take_error(id).is_none();
    queue.complete_status(now, id, ok);
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
    /// Owners of failed bios (drained at each delivery).
    failed_owners: Vec<u64>,
    io_errors: u64,
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
    vm: VmConfig,
    flusher: Flusher,
    dirtiers: Vec<Dirtier>,
    /// Walks asleep on a scheduler tag.
    tag_sleepers: Vec<Walker>,
    /// Jobs not finished yet; at 0 fio has exited and the flusher stops.
    jobs_left: usize,
    /// Time of the last event that did something (the run's end).
    last_event: Ns,
    /// Per job: its file's readahead state.
    ras: Vec<RaState>,
    /// Per job: its buffered read in progress.
    reads: Vec<Option<PendingRead>>,
    /// Jobs waiting for a page being read, by page.
    page_readers: BTreeMap<u64, Vec<usize>>,
    /// Read bios in flight: first page → pages.
    read_bios: BTreeMap<u64, u64>,
    /// The host model (`None`: the free host).
    host: Option<host_path::HostState>,
    /// Per start barrier group: its start has been scheduled.
    group_begun: Vec<bool>,
    /// Per job: it is held back by `wait_for` until its waitees have exited.
    waiting: Vec<bool>,
    /// When the current start barrier's group started (`startdelay` counts
    /// from there).
    group_started_at: Ns,
    /// The jobs in a flow (`flow`), checked after every event for a share
    /// that now lets a spinning one go on.
    flow_jobs: Vec<usize>,
    /// Steady-state detection (`steadystate`).
    steady: steady::SteadyCheck,
}

impl Simulation {
    /// Set up a run. Clones must be ordered by group.
    pub fn new(
        cfg: &SimConfig,
        device: Box<dyn Device>,
        jobs: Vec<JobConfig>,
    ) -> Result<Simulation, SimError> {
        let info = device.info().clone();
        let mut queue = build_queue(cfg, &info)?;
        zone_queue(&mut queue, device.as_ref());
        let mut groups: Vec<u32> = jobs.iter().map(|j| j.group).collect();
        groups.dedup();
        let group_left = groups
            .iter()
            .map(|g| jobs.iter().filter(|j| j.group == *g).count())
            .collect();
        let group_begun = (0..groups.len()).map(|i| i == 0).collect();
        let mut events = EventQueue::new();
        if let Some(g) = groups.first() {
            events.push(Ns::ZERO, Ev::GroupStart(*g));
        }
        let nr_jobs = jobs.len();
        let host = cfg
            .host
            .cpus
            .as_ref()
            .map(|h| host_path::HostState::new(h, cfg, &queue, &jobs, info.completion));
        let flow_jobs = (0..nr_jobs)
            .filter(|&j| jobs[j].control.flow.is_some())
            .collect();
        let max_sectors = queue.config().limits.max_sectors as u64;
        let ras = jobs
            .iter()
            .map(|j| RaState::new(cfg.read_ahead_kb as u64, max_sectors, j.fadvise))
            .collect();
        let steady = steady::SteadyCheck::new(&jobs);
        let mut sim = Simulation {
            cache: PageCache::with_limits(
                cfg.vm.mem_mb * (1 << 20) / PAGE_SIZE,
                info.capacity_sectors * 512 / PAGE_SIZE,
            ),
            ras,
            reads: vec![None; nr_jobs],
            page_readers: BTreeMap::new(),
            read_bios: BTreeMap::new(),
            syncs: (0..nr_jobs).map(|_| None).collect(),
            page_waiters: BTreeMap::new(),
            vm: cfg.vm.clone(),
            flusher: Flusher::default(),
            dirtiers: vec![Dirtier::default(); nr_jobs],
            tag_sleepers: Vec::new(),
            jobs_left: nr_jobs,
            last_event: Ns::ZERO,
            queue,
            device,
            jobs: jobs.into_iter().map(Job::new).collect(),
            events,
            run_armed: None,
            dev_armed: None,
            timer_armed: None,
            done_rqs: Vec::new(),
            done_owners: Vec::new(),
            failed_owners: Vec::new(),
            io_errors: 0,
            requests: 0,
            groups,
            group_left,
            batch: Vec::new(),
            deliver_armed: false,
            host,
            group_begun,
            waiting: vec![false; nr_jobs],
            group_started_at: Ns::ZERO,
            flow_jobs,
            steady,
        };
        sim.steady_arm_first();
        Ok(sim)
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
            if matches!(ev, Ev::FlusherWake) && self.jobs_left == 0 {
                // fio has exited: what the flusher does next is not the run's.
                continue;
            }
            if let Ev::StallEnd(j, _, n) = ev {
                if n != self.jobs[j].stall_seq {
                    continue;
                }
            }
            if matches!(ev, Ev::SsCheck(_)) && !self.steady_pending() {
                // Every job that checks has exited: the check has no effect.
                continue;
            }
            self.last_event = now;
            n = n.wrapping_add(1);
            if n.is_multiple_of(16384) {
                obs.progress(now);
                if obs.stop_requested() {
                    break;
                }
            }
            match ev {
                Ev::GroupStart(g) => self.start_group(g, now, obs),
                Ev::JobStart(j) => self.start_job(j, now, obs),
                Ev::RampEnd(j) => {
                    self.jobs[j].ramp_over(now);
                    obs.ramp_done(j, now);
                    self.steady_rephase(now);
                }
                Ev::SsCheck(g) => self.steady_check(g, now, obs),
                Ev::Stop(j) => {
                    let job = &mut self.jobs[j];
                    if !job.stopping {
                        job.runtime_over_at = Some(now);
                    }
                    job.stopping = true;
                    self.maybe_finish(j, now, obs);
                }
                Ev::QueueRun => {
                    if self.run_armed == Some(now) {
                        self.run_armed = None;
                    }
                    if self.host.is_some() {
                        if self.queue.next_run().is_some_and(|t| t <= now) {
                            self.host_kblockd(now);
                        }
                    } else {
                        let dev: &mut dyn blk::mq::Driver = self.device.as_mut();
                        self.queue.run(now, dev);
                    }
                }
                Ev::Device if self.host.is_some() => {
                    if self.dev_armed == Some(now) {
                        self.dev_armed = None;
                    }
                    self.device.advance(now, &mut self.done_rqs);
                    let done = std::mem::take(&mut self.done_rqs);
                    self.host_device_done(now, &done);
                    self.done_rqs = done;
                    self.done_rqs.clear();
                }
                Ev::Cpu(c, g) => self.host_cpu_event(now, c, g, obs),
                Ev::LockGrant(l) => self.host_lock_grant(now, l, obs),
                Ev::Device => {
                    if self.dev_armed == Some(now) {
                        self.dev_armed = None;
                    }
                    self.device.advance(now, &mut self.done_rqs);
                    for i in 0..self.done_rqs.len() {
                        complete_from(&mut self.queue, self.device.as_mut(), now, self.done_rqs[i]);
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
                    let grace = self.begin_grace(j);
                    self.fill_now(j, now, n, obs);
                    self.end_grace(j, grace);
                    self.schedule_cpu(j, now);
                    self.maybe_finish(j, now, obs);
                }
                Ev::StallEnd(j, slept, _) => {
                    self.jobs[j].end_stall(now, slept);
                    self.fill(j, now, obs);
                    self.maybe_finish(j, now, obs);
                }
                Ev::CopyDone(j, unit) => self.copy_done(j, unit, now, obs),
                Ev::ThrottleDone(j, unit, recheck) => {
                    if recheck {
                        self.balance_dirty_pages(j, unit, now, obs);
                    } else {
                        self.write_returns(j, unit, now, obs);
                    }
                }
                Ev::FlusherWake => {
                    if self.flusher.wake_at == Some(now) {
                        self.flusher.wake_at = None;
                        self.wake_flusher(now);
                    }
                }
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
            if !self.tag_sleepers.is_empty() {
                self.wake_tag_sleepers(now, obs);
            }
            if !self.flow_jobs.is_empty() {
                self.wake_flow_spinners(now, obs);
            }
            self.arm(now);
        }
        let end = self.last_event;
        if let Some(h) = self.host.as_mut() {
            h.finish(end);
        }
        let host = self.host.as_ref().map(|h| HostSummary {
            jobs: (0..self.jobs.len()).map(|j| h.job_time(j)).collect(),
            cpus: (0..h.cpus.len()).map(|c| h.cpus.cpu_time(c)).collect(),
            locks: h.lock_stats(),
        });
        RunSummary {
            end,
            errors: self.jobs.iter().map(|j| j.error.clone()).collect(),
            latency_depths: self.jobs.iter().map(|j| j.lat_qd).collect(),
            zone_resets: self
                .jobs
                .iter()
                .map(|j| {
                    let counted = j.cfg.rw.writes() || j.cfg.rw.trims();
                    j.zbd.as_ref().filter(|_| counted).map(|z| z.resets)
                })
                .collect(),
            steadystate: self.steady_reports(),
            requests: self.requests,
            disk: self.queue.disk_stats(end),
            sched_stats: self.queue.elevator().debugfs(),
            host,
            io_errors: self.io_errors,
            zone: self.queue.zone_wplugs().map(|z| z.stats()),
        }
    }

    /// Schedule the queue run, device event and scheduler timer the components want.
    fn arm(&mut self, now: Ns) {
        if self.queue.has_completed() && !self.deliver_armed {
            self.deliver_armed = true;
            self.events.push(now, Ev::Deliver);
        }
        let kblockd_busy = self.host.as_ref().is_some_and(|h| h.kblockd_pending);
        if let Some(t) = self.queue.next_run().filter(|_| !kblockd_busy) {
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
        self.host_arm(now);
    }

    fn start_group(&mut self, g: u32, now: Ns, obs: &mut dyn IoObserver) {
        self.group_started_at = now;
        for j in 0..self.jobs.len() {
            if self.jobs[j].cfg.group != g || self.jobs[j].finished {
                continue;
            }
            if self.waitee_running(j) {
                self.waiting[j] = true;
                continue;
            }
            self.delay_start(j, now, obs);
        }
        // Every job of the group was terminated before it started.
        self.group_done_check(g, now);
    }

    /// Start job `j` once its `startdelay` (from its group's start) has passed.
    fn delay_start(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        let at = self.group_started_at.add(self.jobs[j].cfg.start_delay);
        if at <= now {
            self.start_job(j, now, obs);
        } else {
            self.events.push(at, Ev::JobStart(j));
        }
    }

    /// backend.c `waitee_running`: a job named by `wait_for` has not exited.
    fn waitee_running(&self, j: usize) -> bool {
        self.jobs[j]
            .cfg
            .control
            .wait_for
            .iter()
            .any(|&w| !self.jobs[w].finished)
    }

    /// The group's last job has exited: the next group starts (once).
    fn group_done_check(&mut self, g: u32, now: Ns) {
        let gi = self.groups.iter().position(|x| *x == g).unwrap_or(0);
        if self.group_left[gi] == 0 && gi + 1 < self.groups.len() && !self.group_begun[gi + 1] {
            self.group_begun[gi + 1] = true;
            self.events.push(now, Ev::GroupStart(self.groups[gi + 1]));
        }
    }

    /// libfio.c `fio_terminate_threads`, called as job `from` exits: the jobs
    /// its `exit_what` names stop. A running one stops submitting and exits
    /// when its I/O has completed; one not started yet never runs (with
    /// `exit_what=stonewall` only running jobs are ended).
    fn terminate(&mut self, from: usize, now: Ns, obs: &mut dyn IoObserver) {
        let what = self.jobs[from].cfg.control.exit_what;
        let groupid = self.jobs[from].cfg.control.groupid;
        for k in 0..self.jobs.len() {
            let job = &self.jobs[k];
            if job.finished {
                continue;
            }
            let chosen = match what {
                ExitWhat::Group => job.cfg.control.groupid == groupid,
                ExitWhat::Stonewall => job.started,
                ExitWhat::All => true,
            };
            if chosen {
                self.end_job(k, now, obs);
            }
        }
    }

    /// libfio.c `fio_mark_td_terminate`: a running job stops submitting and
    /// exits when its I/O has completed; one not started yet never runs.
    fn end_job(&mut self, k: usize, now: Ns, obs: &mut dyn IoObserver) {
        if self.jobs[k].finished {
            return;
        }
        if self.jobs[k].started {
            self.jobs[k].stopping = true;
            self.cut_sleep(k, now);
            self.maybe_finish(k, now, obs);
        } else if self.syncs[k].is_none() {
            self.finish_unstarted(k, now, obs);
        } else {
            // Its page cache is being written back before its clock
            // starts: it starts stopped, and exits at once.
            self.jobs[k].stopping = true;
        }
    }

    /// A terminated job asleep in fio's `usec_sleep` (a rate, flow or
    /// thinktime sleep) wakes at the end of the second it is in: fio sleeps
    /// in chunks of at most 1 s and checks `td->terminate` after each.
    fn cut_sleep(&mut self, k: usize, now: Ns) {
        const CHUNK_NS: u64 = 1_000_000_000;
        let job = &mut self.jobs[k];
        let Some(len) = job.usec_sleeping() else {
            return;
        };
        let since = job.stall_since;
        let chunks = now.0.saturating_sub(since.0).div_ceil(CHUNK_NS).max(1);
        let cut = chunks.saturating_mul(CHUNK_NS);
        if cut < len {
            job.stall_seq = job.stall_seq.wrapping_add(1);
            self.events
                .push(since.add(cut), Ev::StallEnd(k, cut, job.stall_seq));
        }
    }

    /// A job terminated before it started: it never runs (fio's
    /// `run_threads` skips a job marked `terminate`), reporting no I/O.
    fn finish_unstarted(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        let job = &mut self.jobs[j];
        job.finished = true;
        job.stopping = true;
        job.flow_exit();
        self.waiting[j] = false;
        self.jobs_left -= 1;
        let g = job.cfg.group;
        let gi = self.groups.iter().position(|x| *x == g).unwrap_or(0);
        self.group_left[gi] -= 1;
        self.wake_waiters(now, obs);
        // A group not begun yet checks when it begins (`start_group`).
        if self.group_begun[gi] {
            self.group_done_check(g, now);
        }
    }

    /// Jobs held back by `wait_for` whose waitees have all exited start.
    fn wake_waiters(&mut self, now: Ns, obs: &mut dyn IoObserver) {
        for k in 0..self.jobs.len() {
            if self.waiting[k] && !self.waitee_running(k) {
                self.waiting[k] = false;
                self.delay_start(k, now, obs);
            }
        }
    }

    /// A flow's share may let a spinning job (`flow` without `flow_sleep`)
    /// go on: it submits again.
    fn wake_flow_spinners(&mut self, now: Ns, obs: &mut dyn IoObserver) {
        for i in 0..self.flow_jobs.len() {
            let j = self.flow_jobs[i];
            if self.jobs[j].flow_waiting && !self.jobs[j].flow_exceeded() {
                self.jobs[j].flow_waiting = false;
                self.fill(j, now, obs);
                self.maybe_finish(j, now, obs);
            }
        }
    }

    /// Start job `j`. A buffered job with fio's `invalidate` (the default) first
    /// has the device's page cache dropped (`BLKFLSBUF`: `sync_blockdev`, a
    /// write-and-wait of every dirty page, then `invalidate_bdev`); its clock
    /// starts after that, as fio opens its files before the job's clock starts.
    fn start_job(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if self.jobs[j].finished {
            return;
        }
        let cfg = &self.jobs[j].cfg;
        if cfg.buffered && cfg.invalidate && self.cache.is_clean() {
            self.cache.drop_clean();
        }
        if cfg.buffered && cfg.invalidate && !self.cache.is_clean() {
            let walk = SyncWalk::whole(&mut self.cache);
            self.syncs[j] = Some(PendingSync {
                walk,
                then: AfterSync::Start,
                tag_wait: None,
            });
            self.advance_sync(j, now, obs);
            return;
        }
        self.begin_job(j, now, obs);
    }

    /// The job's clock starts: its ramp and runtime count from now.
    fn begin_job(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if self.jobs[j].zbd.is_some() {
            // fio reads the zones' write pointers as the job sets up.
            let report = self.device.report_zones();
            if let Some(z) = self.jobs[j].zbd.as_mut() {
                z.load_write_pointers(&report);
            }
        }
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
        if self.jobs[j].cfg.submit_cost_ns == 0 && self.host.is_none() {
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
        let Some(n) = self.next_submission(j, now) else {
            return;
        };
        self.jobs[j].cpu_pending = true;
        self.jobs[j].submit_decided = now;
        if self.host.is_some() {
            self.host_schedule_submit(j, now, n);
            return;
        }
        let at = now.add(self.jobs[j].cfg.submit_cost_ns * n as u64);
        self.events.push(at, Ev::JobCpu(j));
    }

    /// fio checks `runtime_exceeded` at the top of its submission loop, before the
    /// CPU work of the next I/O, so a submission whose work began before the job's
    /// runtime ended still issues its I/O when the work ends after it. If that is
    /// job `j`'s case (its [`Job::submit_decided`] is before its runtime's end), lift
    /// its stop until [`Simulation::end_grace`] and return true. Jobs that verify or
    /// replay keep their own end rules.
    fn begin_grace(&mut self, j: usize) -> bool {
        let job = &mut self.jobs[j];
        let grace = job.stopping
            && job.cfg.verify.is_none()
            && job.cfg.replay.is_none()
            && job.runtime_over_at.is_some_and(|t| job.submit_decided < t);
        if grace {
            job.stopping = false;
        }
        grace
    }

    /// The submission [`Simulation::begin_grace`] let through is done.
    fn end_grace(&mut self, j: usize, grace: bool) {
        if grace {
            self.jobs[j].stopping = true;
        }
    }

    /// Whether the thread of job `j` goes on to submit now, and how many I/Os:
    /// not while it is busy, not when its queue is full or nothing is due.
    fn next_submission(&mut self, j: usize, now: Ns) -> Option<usize> {
        if self.jobs[j].started {
            self.jobs[j].stop_if_done();
        }
        if self.jobs[j].cpu_pending {
            return None;
        }
        // Between two submissions fio reaps, if its queue is full
        // (`wait_for_completions`); completions posted while it was busy wait.
        self.jobs[j].reap(now);
        let job = &self.jobs[j];
        if !(job.can_submit() || job.sync_due() || job.end_sync_due()) {
            return None;
        }
        Some(if job.can_submit() {
            self.ios_per_call(j).min(job.reaped_free().max(1) as usize)
        } else {
            1
        })
    }

    /// Submit up to `max_ios` I/Os of job `j` now.
    /// Tell the observer job `j` submitted `bio`, unless it is a zone reset fio
    /// issues itself (`zbd_reset_zone`, an ioctl: not one of fio's I/O units).
    fn observe_submit(&self, j: usize, bio: &Bio, obs: &mut dyn IoObserver) {
        let unit = split_owner(bio.owner).1;
        if self.jobs[j].is_internal_reset(unit) {
            return;
        }
        obs.io_submitted(j, bio.op, self.jobs[j].inflight);
        obs.io_issued(j, self.jobs[j].in_flight(unit));
    }

    fn fill_now(&mut self, j: usize, now: Ns, max_ios: usize, obs: &mut dyn IoObserver) {
        if self.jobs[j].cfg.engine == crate::fio::IoEngine::Null {
            self.fill_null(j, now, max_ios, obs);
            return;
        }
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
                self.observe_submit(j, &bio, obs);
                let dev: &mut dyn Driver = self.device.as_mut();
                self.queue.submit_bio_direct(now, bio, dev);
            }
            self.submit_sync_if_due(j, now, budget < max_ios, obs);
            return;
        }
        let mut batch_buf = std::mem::take(&mut self.batch);
        while budget > 0 {
            while budget > 0 && self.jobs[j].can_submit() && batch_buf.len() < batch {
                budget -= 1;
                let Some(bio) = self.jobs[j].next_bio(now, j) else {
                    break;
                };
                self.observe_submit(j, &bio, obs);
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
        self.submit_sync_if_due(j, now, budget < max_ios, obs);
    }

    /// A buffered `write()` (`blkdev_write_iter` → `generic_perform_write`): the
    /// job's thread copies the data into the page cache, [`VmConfig::page_copy_ns`]
    /// per page ([`Ev::CopyDone`]), maybe pauses in `balance_dirty_pages`, and the
    /// call returns; no bio is submitted.
    /// Whatever the engine, one write at a time: libaio and io_uring perform a
    /// buffered write inline in the submission.
    fn write_buffered(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if !self.jobs[j].cpu_pending && self.jobs[j].can_submit() {
            if let Some(bio) = self.jobs[j].next_bio(now, j) {
                obs.io_submitted(j, bio.op, self.jobs[j].inflight);
                let unit = split_owner(bio.owner).1;
                let io = self.jobs[j].in_flight(unit);
                obs.io_issued(j, io);
                self.jobs[j].cpu_pending = true;
                if io.dir == blk::Dir::Read {
                    self.reads[j] = Some(PendingRead {
                        unit,
                        next: io.offset / PAGE_SIZE,
                        end: (io.offset + io.bytes).div_ceil(PAGE_SIZE),
                    });
                    self.advance_read(j, now);
                    return;
                }
                let pages = io.bytes.div_ceil(PAGE_SIZE);
                if self.host.is_some() {
                    self.host_copy(j, unit, pages, now);
                } else {
                    self.events
                        .push(now.add(pages * self.vm.page_copy_ns), Ev::CopyDone(j, unit));
                }
                return;
            }
        }
        self.submit_sync_if_due(j, now, false, obs);
    }

    /// The copy of a buffered write is done: its pages are dirty
    /// (`block_write_end`); the inode turning dirty arms the flusher's periodic
    /// wake-up (`wb_wakeup_delayed`). Every `nr_dirtied_pause` pages the writer
    /// checks the dirty limits (`balance_dirty_pages_ratelimited`).
    fn copy_done(&mut self, j: usize, unit: u32, now: Ns, obs: &mut dyn IoObserver) {
        let io = self.jobs[j].in_flight(unit);
        if io.dir == blk::Dir::Read {
            self.write_returns(j, unit, now, obs);
            return;
        }
        let pages = io.bytes.div_ceil(PAGE_SIZE);
        if self.cache.mark_dirty(io.offset / PAGE_SIZE, pages, now.0) {
            self.arm_flusher(now);
        }
        let d = &mut self.dirtiers[j];
        d.nr_dirtied += pages;
        if d.nr_dirtied >= d.nr_dirtied_pause {
            self.balance_dirty_pages(j, unit, now, obs);
        } else {
            self.write_returns(j, unit, now, obs);
        }
    }

    /// `balance_dirty_pages`, with a simplified rate control. Above
    /// `dirty_background_ratio` the flusher is woken. At or below the free-run
    /// ceiling (halfway between the background threshold and `dirty_ratio`,
    /// counting dirty pages and pages under writeback) the writer goes on and
    /// checks again after `dirty_poll_interval` pages. Above it, the writer
    /// sleeps for the pages it dirtied since its last check at its share of the
    /// flusher's measured write bandwidth (bandwidth / writers, as the kernel's
    /// `dirty_ratelimit` converges to) scaled by the global control line
    /// (`pos_ratio`: 2 at the ceiling, 1 halfway, 0 at the limit), at most 200 ms
    /// (`MAX_PAUSE`; the kernel's bound also depends on the bandwidth), then checks
    /// again after 10 ms worth of pages at that rate. At or over the limit it
    /// sleeps 200 ms and checks again, until under it. Not modelled: the per-wb
    /// limits and setpoints (one device, one wb), the smoothing of
    /// `dirty_ratelimit` and of the limit, `min_pause` and the pause's
    /// accumulation across calls.
    fn balance_dirty_pages(&mut self, j: usize, unit: u32, now: Ns, obs: &mut dyn IoObserver) {
        self.flusher.bw.update(now.0, self.cache.pages_written());
        let l = self.vm.limits();
        let reclaimable = self.cache.nr_dirty() as u64;
        let dirty = reclaimable + self.cache.nr_writeback() as u64;
        if reclaimable > l.bg_thresh {
            self.start_background_writeback(now);
        }
        let d = &mut self.dirtiers[j];
        if dirty <= l.freerun {
            d.nr_dirtied = 0;
            d.nr_dirtied_pause = dirty_poll_interval(dirty, l.thresh);
            self.write_returns(j, unit, now, obs);
            return;
        }
        let writers = self
            .jobs
            .iter()
            .filter(|x| x.cfg.buffered && x.cfg.rw.writes() && x.started && !x.finished)
            .count()
            .max(1);
        let rate = self.flusher.bw.pages_per_s as f64 / writers as f64 * pos_ratio(&l, dirty);
        let exceeded = dirty > l.thresh;
        let pause = if exceeded || rate <= 0.0 {
            MAX_PAUSE_NS
        } else {
            ((d.nr_dirtied as f64 / rate * 1e9) as u64).min(MAX_PAUSE_NS)
        };
        d.nr_dirtied = 0;
        d.nr_dirtied_pause = ((rate * 0.01) as u64).max(1);
        self.events
            .push(now.add(pause), Ev::ThrottleDone(j, unit, exceeded));
    }

    /// Carry job `j`'s buffered read on (`filemap_read` → `filemap_get_pages`):
    /// page by page, a page not in the cache starts synchronous readahead
    /// (`page_cache_sync_ra`), a page with the readahead marker asynchronous
    /// readahead (`page_cache_async_ra`), a page still being read puts the job
    /// to sleep until it is uptodate. Once every page is there, the job copies
    /// them out ([`VmConfig::page_copy_ns`] each; a hit costs only that) and the
    /// call returns; `ra->prev_pos` is the read's end.
    fn advance_read(&mut self, j: usize, now: Ns) {
        let Some(mut r) = self.reads[j] else {
            return;
        };
        while r.next < r.end {
            let p = r.next;
            let req = r.end - p;
            if !self.cache.is_present(p) {
                let mut runs = self.ras[j].sync_ra(&mut self.cache, p, req);
                if !self.cache.is_present(p) {
                    runs.extend(self.cache.add_for_read(p, 1, 0));
                }
                self.read_pages(j, now, &runs);
                continue;
            }
            if self.cache.has_readahead_mark(p) {
                let runs = self.ras[j].async_ra(&mut self.cache, p, req);
                self.read_pages(j, now, &runs);
            }
            if !self.cache.is_uptodate(p) {
                self.reads[j] = Some(r);
                self.page_readers.entry(p).or_default().push(j);
                return;
            }
            self.cache.touch(p);
            r.next += 1;
        }
        self.reads[j] = None;
        self.ras[j].prev_pos = Some(r.end * PAGE_SIZE);
        let io = self.jobs[j].in_flight(r.unit);
        let pages = (io.offset + io.bytes).div_ceil(PAGE_SIZE) - io.offset / PAGE_SIZE;
        if self.host.is_some() {
            self.host_copy(j, r.unit, pages, now);
        } else {
            self.events.push(
                now.add(pages * self.vm.page_copy_ns),
                Ev::CopyDone(j, r.unit),
            );
        }
    }

    /// `read_pages` → `mpage_readahead`: the runs of new pages go down as read
    /// bios of at most `BIO_MAX_VECS` pages, from job `j`'s task, under a plug.
    fn read_pages(&mut self, j: usize, now: Ns, runs: &[(u64, u64)]) {
        if runs.is_empty() {
            return;
        }
        self.queue.start_plug();
        for &(first, n) in runs {
            let mut at = first;
            while at < first + n {
                let k = (first + n - at).min(BIO_MAX_PAGES);
                let cfg = &self.jobs[j].cfg;
                let bio = Bio {
                    op: Op::Read,
                    flags: ReqFlags::NONE,
                    sector: Sector::from_bytes(at * PAGE_SIZE),
                    nr_sectors: (k * PAGE_SIZE / Sector::SIZE) as u32,
                    ioprio: cfg.ioprio,
                    pid: cfg.pid,
                    cpu: cfg.cpu,
                    cgroup: cfg.cgroup,
                    owner: RA_OWNER | at,
                };
                self.read_bios.insert(at, k);
                // A bio that must wait for a tag waits in order behind the
                // others; the job does not go on before its pages are read.
                self.queue.submit_bio(now, bio);
                at += k;
            }
        }
        let dev: &mut dyn Driver = self.device.as_mut();
        self.queue.finish_plug(now, Some(dev));
    }

    /// A read bio of the page cache completed: its pages are uptodate and the
    /// jobs waiting for them go on.
    fn read_done(&mut self, first: u64, now: Ns) {
        let n = self.read_bios.remove(&first).unwrap_or(1);
        let mut woken = Vec::new();
        for p in first..first + n {
            self.cache.end_read(p);
            if let Some(js) = self.page_readers.remove(&p) {
                woken.extend(js);
            }
        }
        for j in woken {
            self.advance_read(j, now);
        }
    }

    /// Job `j`'s unit `unit` completes at `now` (fio reaps it): the I/O to
    /// report, or `None` for a sync, whose latency goes to the observer here.
    fn complete_unit(
        &mut self,
        j: usize,
        unit: u32,
        now: Ns,
        obs: &mut dyn IoObserver,
    ) -> Option<IoDone> {
        let done = self.jobs[j].complete(unit, now);
        if let Some((issued, at)) = self.jobs[j].take_sync_done() {
            obs.sync_completed(j, issued, at);
        }
        done
    }

    /// The buffered `write()` returns.
    fn write_returns(&mut self, j: usize, unit: u32, now: Ns, obs: &mut dyn IoObserver) {
        self.jobs[j].cpu_pending = false;
        if let Some(io) = self.complete_unit(j, unit, now, obs) {
            obs.io_completed(j, io, io.issue, now);
        }
        self.fill(j, now, obs);
        self.maybe_finish(j, now, obs);
    }

    /// `wb_wakeup_delayed`: wake the flusher `dirty_writeback_centisecs` from
    /// now, unless a wake-up is armed or it is running.
    fn arm_flusher(&mut self, now: Ns) {
        let interval = self.vm.interval_ns();
        if interval == 0 || self.flusher.wake_at.is_some() || self.flusher.work.is_some() {
            return;
        }
        let at = now.add(interval);
        self.flusher.wake_at = Some(at);
        self.events.push(at, Ev::FlusherWake);
    }

    /// `wb_start_background_writeback`: wake the flusher now, unless it is
    /// writing already (`writeback_in_progress`).
    fn start_background_writeback(&mut self, now: Ns) {
        if self.flusher.work.is_some() || self.flusher.tag_wait.is_some() {
            return;
        }
        // mod_delayed_work(.., 0): the armed wake-up is replaced.
        self.flusher.wake_at = None;
        self.wake_flusher(now);
    }

    /// `wb_workfn` wakes: one round of `wb_do_writeback`.
    fn wake_flusher(&mut self, now: Ns) {
        self.flusher.did_kupdate = false;
        self.flusher.did_background = false;
        self.run_flusher(now);
    }

    /// `writeback_chunk_size` for the flusher's work: half a second of writing at
    /// the estimated bandwidth, at most an eighth of the dirty limit, rounded to
    /// 4 MiB.
    fn write_chunk(&self) -> u64 {
        let l = self.vm.limits();
        let pages = (self.flusher.bw.pages_per_s / 2).min(l.thresh / DIRTY_SCOPE);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// Carry the flusher's work on until it is done or asleep on a tag. In
    /// `wb_do_writeback`'s order: the periodic flush (`wb_check_old_data_flush`:
    /// every `dirty_writeback_centisecs`, all the dirty pages counted at its start,
    /// if the inode has been dirty for `dirty_expire_centisecs`), then background
    /// writeback (`wb_check_background_flush`: while more than
    /// `dirty_background_ratio` of memory is dirty). Each is `wb_writeback`: chunks
    /// of `writeback_chunk_size` pages, each one `WB_SYNC_NONE` `do_writepages`
    /// pass ([`NoSyncWalk`]), async writes (no `REQ_SYNC`) from the kworker under
    /// a plug, ending when a pass writes nothing (every dirty page already under
    /// writeback: the kernel then sleeps on the inode's writeback and tries
    /// again). After the round, the periodic wake-up is armed again while the
    /// inode is dirty.
    fn run_flusher(&mut self, now: Ns) {
        if self.jobs_left == 0 || self.flusher.tag_wait.is_some() {
            return;
        }
        self.flusher.bw.update(now.0, self.cache.pages_written());
        let l = self.vm.limits();
        let interval = self.vm.interval_ns();
        let mut plugged = false;
        loop {
            if self.flusher.work.is_none() {
                let f = &mut self.flusher;
                if !f.did_kupdate && interval > 0 && now.0 >= f.last_old_flush.0 + interval {
                    f.did_kupdate = true;
                    f.last_old_flush = now;
                    let n = self.cache.nr_dirty() as u64;
                    if n > 0 {
                        f.work = Some(FlushWork {
                            kupdate: true,
                            nr_pages: n,
                            picked: false,
                            pass: None,
                        });
                    }
                    continue;
                }
                if !f.did_background && self.cache.nr_dirty() as u64 > l.bg_thresh {
                    f.did_background = true;
                    f.work = Some(FlushWork {
                        kupdate: false,
                        nr_pages: u64::MAX,
                        picked: true,
                        pass: None,
                    });
                    continue;
                }
                break;
            }
            let chunk = self.write_chunk();
            let expired_cutoff = now.0.saturating_sub(self.vm.expire_ns());
            let Some(w) = self.flusher.work.as_mut() else {
                break;
            };
            if w.pass.is_none() {
                let stop = w.nr_pages == 0
                    || (!w.kupdate && self.cache.nr_dirty() as u64 <= l.bg_thresh)
                    || (!w.picked && !self.cache.inode_dirtied_before(expired_cutoff));
                if stop {
                    self.flusher.work = None;
                    continue;
                }
                w.picked = true;
                w.pass = Some(NoSyncWalk::new(&self.cache, chunk.min(w.nr_pages)));
            }
            let pass = w.pass.as_mut().expect("pass");
            match pass.next(&mut self.cache) {
                Some(p) => {
                    w.nr_pages -= 1;
                    if !plugged {
                        self.queue.start_plug();
                        plugged = true;
                    }
                    let bio = Bio {
                        op: Op::Write,
                        flags: ReqFlags::default(),
                        sector: Sector::from_bytes(p * PAGE_SIZE),
                        nr_sectors: (PAGE_SIZE / Sector::SIZE) as u32,
                        ioprio: Default::default(),
                        pid: FLUSHER_PID,
                        cpu: 0,
                        cgroup: Default::default(),
                        owner: WB_OWNER | p,
                    };
                    if let Submitted::Sleeping = self.queue.submit_bio(now, bio) {
                        // Asleep in blk_mq_get_tag (its plug was flushed on the
                        // way; the one plug of the queue model is released).
                        let dev: &mut dyn Driver = self.device.as_mut();
                        self.queue.finish_plug(now, Some(dev));
                        self.flusher.tag_wait = Some(bio.owner);
                        self.tag_sleepers.push(Walker::Flusher);
                        return;
                    }
                }
                None => {
                    let written = pass.written();
                    w.pass = None;
                    if written == 0 {
                        self.flusher.work = None;
                    }
                    self.cache.inode_written();
                    if plugged {
                        let dev: &mut dyn Driver = self.device.as_mut();
                        self.queue.finish_plug(now, Some(dev));
                        plugged = false;
                    }
                }
            }
        }
        if plugged {
            let dev: &mut dyn Driver = self.device.as_mut();
            self.queue.finish_plug(now, Some(dev));
        }
        if self.cache.inode_dirty() {
            self.arm_flusher(now);
        }
    }

    /// Wake the walks whose bio has got its scheduler tag.
    fn wake_tag_sleepers(&mut self, now: Ns, obs: &mut dyn IoObserver) {
        let sleepers = std::mem::take(&mut self.tag_sleepers);
        let mut still = Vec::new();
        let mut woken = Vec::new();
        for w in sleepers {
            let owner = match w {
                Walker::Flusher => self.flusher.tag_wait,
                Walker::Job(j) => self.syncs[j].as_ref().and_then(|s| s.tag_wait),
            };
            match owner {
                Some(o) if self.queue.waiting_for_tag(o) => still.push(w),
                _ => woken.push(w),
            }
        }
        self.tag_sleepers = still;
        for w in woken {
            match w {
                Walker::Flusher => {
                    self.flusher.tag_wait = None;
                    self.run_flusher(now);
                }
                Walker::Job(j) => {
                    if let Some(s) = self.syncs[j].as_mut() {
                        s.tag_wait = None;
                    }
                    self.advance_sync(j, now, obs);
                }
            }
        }
    }

    /// Issue the job's fsync once the I/Os before it are submitted; the job blocks
    /// until it completes. On a block device that is `blkdev_fsync`: a
    /// write-and-wait of every dirty page of the device (nothing to do when the
    /// page cache is clean, as it always is for direct I/O), then an empty
    /// PREFLUSH bio (`blkdev_issue_flush`).
    ///
    /// `after_io`: this submission already issued I/O before the fsync. If it did
    /// not, the submission's CPU work was the fsync's own, and fio stamps the fsync
    /// (`log_io_u`, like any I/O) when that work began, before the system call.
    fn submit_sync_if_due(&mut self, j: usize, now: Ns, after_io: bool, obs: &mut dyn IoObserver) {
        if self.jobs[j].sync_due() || self.jobs[j].end_sync_due() {
            let bio = self.jobs[j].sync_bio(now, j);
            let stamped = if after_io {
                now
            } else {
                Ns(now.0.saturating_sub(self.jobs[j].cfg.submit_cost_ns))
            };
            obs.sync_issued(j, stamped);
            if self.jobs[j].sync_reported() {
                let fsync = self.jobs[j].cfg.sync_report == crate::job::SyncReport::Fsync;
                obs.sync_submitted(j, self.jobs[j].inflight, fsync);
            }
            let walk = SyncWalk::whole(&mut self.cache);
            self.syncs[j] = Some(PendingSync {
                walk,
                then: AfterSync::Flush(bio),
                tag_wait: None,
            });
            self.advance_sync(j, now, obs);
        }
    }

    /// Carry job `j`'s write-and-wait on until it must sleep on a page's writeback
    /// or is done. The pages it writes go down under a plug (`blkdev_writepages`),
    /// one bio per page (`block_write_full_folio`: one buffer head per page), with
    /// `REQ_SYNC` (`wbc_to_write_flags` for `WB_SYNC_ALL`), from the job's task
    /// (its CPU, ioprio and cgroup); adjacent pages merge in the plug. Sleeping
    /// flushes the plug (`schedule`), whether on a page's writeback or on a
    /// scheduler tag for a bio (the walk goes on once the bio has its tag).
    fn advance_sync(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        let Some(mut ps) = self.syncs[j].take() else {
            return;
        };
        if ps.tag_wait.is_some() {
            self.syncs[j] = Some(ps);
            return;
        }
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
                    if let Submitted::Sleeping = self.queue.submit_bio(now, bio) {
                        let dev: &mut dyn Driver = self.device.as_mut();
                        self.queue.finish_plug(now, Some(dev));
                        ps.tag_wait = Some(bio.owner);
                        self.syncs[j] = Some(ps);
                        self.tag_sleepers.push(Walker::Job(j));
                        return;
                    }
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
                        AfterSync::Start => {
                            self.cache.drop_clean();
                            self.begin_job(j, now, obs);
                        }
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

    /// Completed bios: writeback and readahead go on at once; a job's I/O
    /// completes (or, on a host model, is posted for its thread to reap).
    fn deliver_completions(&mut self, now: Ns, obs: &mut dyn IoObserver) {
        self.queue.take_completed(&mut self.done_owners);
        self.queue.take_failed(&mut self.failed_owners);
        self.io_errors += self.failed_owners.len() as u64;
        self.failed_owners.clear();
        // No job issues zone appends; drained so the list cannot grow.
        let mut appended = Vec::new();
        self.queue.take_appended(&mut appended);
        for i in 0..self.done_owners.len() {
            let o = self.done_owners[i];
            if o & WB_OWNER != 0 {
                self.writeback_done(o & !WB_OWNER, now, obs);
                continue;
            }
            if o & RA_OWNER != 0 {
                self.read_done(o & !RA_OWNER, now);
                continue;
            }
            let (j, unit) = split_owner(o);
            if self.host.is_some() {
                // The thread reaps it when it gets its CPU (fio's completion time).
                self.host_post(j, unit, now);
                continue;
            }
            if let Some(io) = self.complete_unit(j, unit, now, obs) {
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
            let job = &mut self.jobs[j];
            job.stall_seq = job.stall_seq.wrapping_add(1);
            job.stall_since = now;
            self.events
                .push(now.add(dur), Ev::StallEnd(j, dur, job.stall_seq));
        }
    }

    fn maybe_finish(&mut self, j: usize, now: Ns, obs: &mut dyn IoObserver) {
        if self.jobs[j].stats_reset {
            // The latency target's final window: fio's reset_all_stats, as at
            // a ramp's end.
            self.jobs[j].stats_reset = false;
            self.jobs[j].ramp_over(now);
            obs.ramp_done(j, now);
            self.steady_rephase(now);
        }
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
        let pid = job.cfg.pid;
        self.jobs_left -= 1;
        let end = job
            .end
            .max(if job.cfg.runtime.is_some() && job.cfg.time_based {
                now
            } else {
                job.end
            });
        job.end = end;
        let g = job.cfg.group;
        job.flow_exit();
        let ctl = &job.cfg.control;
        let terminates = ctl.exitall || (ctl.exitall_on_error && job.error.is_some());
        obs.job_finished(j, end);
        // fio's job process exits with its job: the scheduler releases its queues
        // (`bfq_exit_icq`).
        self.queue.exit_task(now, pid);
        let gi = self.groups.iter().position(|x| *x == g).unwrap_or(0);
        self.group_left[gi] -= 1;
        if terminates {
            self.terminate(j, now, obs);
        }
        self.wake_waiters(now, obs);
        self.group_done_check(g, now);
    }
}
