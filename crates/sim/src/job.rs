//! The job model: one fio job clone as the simulator runs it.
//!
//! A [`JobConfig`] is what one clone of a fio job does, with fio's semantics already
//! resolved (numjobs expanded, sizes in bytes, times in ns). A [`Job`] is its run-time
//! state: which block comes next, how much was issued, which I/O units are in flight.

use crate::offsets::{BlockPicker, Skewed, ZoneBlocks};
use blk::{Bio, CgroupId, Dir, IoPrio, Ns, Op, ReqFlags, Sector};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Offset lanes, as fio keeps offsets, block sizes and alignment per data
/// direction: read, write and trim.
const LANES: usize = 3;
/// The trim lane (fio's `DDIR_TRIM`).
const TRIM_LANE: usize = 2;

pub use crate::fio::{BsDist, RandomDist, RateLimit, RwMode, ThinkTime};

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
    /// Block size per direction (read, write, trim), bytes (the smallest, when
    /// sizes vary).
    pub bs: [u64; 3],
    /// Per direction (read, write, trim), how block sizes vary (`bsrange`,
    /// `bssplit`); `None`: every I/O has `bs`.
    pub bs_dist: [Option<BsDist>; 3],
    /// `rw=randread:N`: a new random offset every N I/Os (1: every I/O).
    pub seq_nr: u32,
    /// `rw=read:N`: bytes added to each sequential offset (fio's
    /// `ddir_seq_add`).
    pub seq_add: i64,
    /// Random offsets' alignment per direction (read, write, trim), bytes (fio's
    /// `blockalign`); 0: the direction's smallest block size, fio's default.
    pub blockalign: [u64; 3],
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
    /// Delay from the group's start to the job's (fio `startdelay`), ns.
    pub start_delay: u64,
    /// Most I/Os in flight (1 for synchronous engines, `iodepth` for async ones).
    pub depth: u32,
    /// The engine is asynchronous: fio reports submission latency.
    pub async_engine: bool,
    /// CPU the clone runs on (its software queue); with a host model, the CPU its
    /// thread starts on.
    pub cpu: u32,
    /// CPUs the clone's thread may run on (fio `cpus_allowed`; with
    /// `cpus_allowed_policy=split`, one); empty: any CPU.
    pub cpus_allowed: Vec<u32>,
    /// The I/O engine (what a submission costs on a host model).
    pub engine: crate::fio::IoEngine,
    /// io_uring's registered buffers (`fixedbufs`): no page pinning per I/O.
    pub fixedbufs: bool,
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
    /// fio `random_distribution`.
    pub random_dist: RandomDist,
    /// I/Os submitted together (`iodepth_batch_submit`; 1 for synchronous engines).
    pub batch_submit: u32,
    /// The engine plugs a submission of more than two I/Os (libaio's
    /// `AIO_PLUG_THRESHOLD`, io_uring's `IO_PLUG_THRESHOLD`).
    pub plugs: bool,
    /// An fsync (an empty PREFLUSH bio on a block device) after every this many
    /// writes; 0 = never (fio `fsync` / `fdatasync`; `sync=1` with a synchronous
    /// engine also flushes after every write, through `generic_write_sync`).
    pub fsync_blocks: u32,
    /// One fsync when the job is done (fio `end_fsync`).
    pub end_fsync: bool,
    /// Writes carry `REQ_FUA` (fio `sync=1`: O_SYNC/O_DSYNC direct writes).
    pub fua_writes: bool,
    /// How fio reports the job's syncs.
    pub sync_report: SyncReport,
    /// Buffered I/O (fio `direct=0`): writes go to the page cache
    /// ([`crate::pagecache`]), an fsync writes it back first.
    pub buffered: bool,
    /// Drop the device's page cache when the job starts (fio `invalidate`,
    /// buffered jobs only).
    pub invalidate: bool,
    /// What fio advised the kernel about the file (`fadvise_hint`; buffered
    /// reads only).
    pub fadvise: crate::pagecache::Advice,
    /// CPU time the job's thread spends to prepare and submit one I/O (the system
    /// call and the block layer's submission path), ns. I/Os enter the block layer
    /// this long after the thread starts on them, one after another, and fio reports
    /// it as submission latency. 0 = submissions cost nothing.
    pub submit_cost_ns: u64,
    /// fio's `thinktime` family, if the job thinks.
    pub thinktime: Option<ThinkTime>,
    /// fio's rate limiting, if the job is limited.
    pub rate: Option<RateLimit>,
    /// The job replays a trace (fio's `read_iolog`, `iosched replay`): its I/O
    /// comes from here instead of `rw`, `bs` and the offsets.
    pub replay: Option<crate::trace::replay::ReplaySource>,
    /// fio's write-then-verify pattern, if the job verifies what it writes.
    pub verify: Option<VerifyConfig>,
    /// `zonemode=zbd`: fio's zone bookkeeping for the job's region.
    pub zbd: Option<crate::zbd::ZbdConfig>,
    /// `io_submit_mode=offload` (fio's rate-submit.c): each I/O goes to a
    /// worker thread that submits it alone and reaps it as soon as it
    /// completes, so completions are taken at once (not when the queue is
    /// full), and a rate-limit sleep does not first wait for the job's I/O
    /// to complete (`rate_ddir` quiesces only inline).
    pub offload: bool,
    /// Where a verifying job keeps its phases' runtimes (shared with the
    /// report).
    pub phase_clock: Option<Arc<PhaseClock>>,
    /// How the clone's run depends on other clones and on its own rate
    /// (`wait_for`, `exitall`, `flow`, `rate_min`).
    pub control: Control,
    /// A clone with several files (`nrfiles`, `filename=a:b`): each file's
    /// region (first byte on the device, length), the first being `offset`
    /// and `size`; empty for one file.
    pub files: Vec<(u64, u64)>,
    /// `file_service_type`: which file each I/O goes to.
    pub file_service: crate::fio::FileService,
    /// fio's cmdprio (libaio, io_uring): a share of the I/Os carries its
    /// own priority.
    pub cmdprio: Option<Arc<crate::fio::CmdPrio>>,
}

/// A clone's ties to the others, resolved (see [`crate::fio::JobControl`]).
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// `wait_for`: the clones that must all have exited before this one
    /// starts.
    pub wait_for: Vec<usize>,
    /// The reporting group (fio's `groupid`), which `exit_what=group` ends.
    pub groupid: u32,
    /// `exitall` (set in any job): the clone's exit terminates others.
    pub exitall: bool,
    /// `exitall_on_error`: an exit with an error terminates others.
    pub exitall_on_error: bool,
    /// `exit_what`: which others.
    pub exit_what: crate::fio::ExitWhat,
    /// `flow`: the clone's share of a flow's I/O.
    pub flow: Option<FlowShare>,
    /// `rate_min` / `rate_iops_min`: the smallest rate the clone must keep.
    pub rate_min: Option<RateMin>,
    /// `latency_target` and its settings.
    pub latency: Option<LatencyTarget>,
    /// `steadystate`: the detector's settings and the clone's part in it.
    pub steadystate: Option<SteadyState>,
}

/// A clone's part in fio's steady-state detection.
#[derive(Clone, Copy, Debug)]
pub struct SteadyState {
    /// The settings (the same for the clone's whole reporting group).
    pub spec: crate::steadystate::SsSpec,
    /// The job has `group_reporting`: its group is judged as one.
    pub group_reporting: bool,
    /// The clone keeps the ring: its own, or its group's (the group's last
    /// clone).
    pub holder: bool,
}

/// fio's latency-target search (io_u.c `lat_target_*`): the clone starts at
/// queue depth 1 and, after every window, doubles it (or bisects towards the
/// last depth that failed) while enough I/Os meet the target, halving it
/// towards the last good one when not.
#[derive(Clone, Copy, Debug)]
pub struct LatencyTarget {
    /// `latency_target`, ns.
    pub target_ns: u64,
    /// `latency_window`, ns.
    pub window_ns: u64,
    /// `latency_percentile`, percent.
    pub percentile: f64,
    /// `latency_run`: never settle.
    pub run: bool,
}

/// errno ETIMEDOUT, which fio's `lat_fatal` sets.
pub const ETIMEDOUT: i32 = 110;
/// errno EIO, which fio's failed `check_min_rate` sets.
pub const EIO: i32 = 5;

/// Why a clone stopped with an error (fio's `td_verror`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    /// errno.
    pub errno: i32,
    /// The failing step, as fio names it (`func=`).
    pub func: &'static str,
    /// fio's message for it.
    pub message: String,
}

/// A flow's shared counters (flow.c's `struct fio_flow`): I/Os issued by
/// its jobs plus one, and the weights of the jobs set up in it (every job
/// of the file from the start, as fio's `add_job` adds them, less those
/// that have exited).
#[derive(Debug)]
pub struct Flow {
    counter: AtomicU64,
    total_weight: AtomicU64,
}

impl Flow {
    /// A flow with no I/O yet and the jobs' weights added.
    pub fn new(total_weight: u64) -> Flow {
        Flow {
            counter: AtomicU64::new(1),
            total_weight: AtomicU64::new(total_weight),
        }
    }
}

/// One clone's place in a flow.
#[derive(Clone, Debug)]
pub struct FlowShare {
    /// The flow (shared by the clones with the same `flow_id`).
    pub flow: Arc<Flow>,
    /// `flow`: the clone's weight.
    pub weight: u64,
    /// `flow_sleep`, ns: how long a clone ahead of its share sleeps (after
    /// its I/O has completed); 0: it spins until the share allows.
    pub sleep_ns: u64,
}

/// fio's minimum-rate check (backend.c `__check_min_rate`), per direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateMin {
    /// `rate_min`, bytes/s (0: none).
    pub bps: [u64; 2],
    /// `rate_iops_min`, I/Os per second (0: none); only read when the
    /// direction has no `rate_min`.
    pub iops: [u64; 2],
    /// `rate_cycle`, ms.
    pub cycle_ms: u64,
}

/// How a job verifies what it writes (fio's `verify` family, resolved).
///
/// Each pass (one of fio's `loops`; a `time_based` job repeats them until
/// its runtime is over) writes `pass_bytes`, waits for its writes, issues
/// an fsync (fio's `do_verify` syncs the file first) and reads every
/// logged block back ([`crate::verify::VerifyLog`]). With `backlog`, after
/// every `backlog` blocks logged, `batch` of them are read back first
/// (`check_get_verify`). The reads are ordinary reads for the statistics,
/// as fio accounts them. No checksum is computed: its CPU time is not
/// modeled, so `verify_async` changes nothing here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyConfig {
    /// Bytes of I/O per pass (fio's `io_size`, else `size`).
    pub pass_bytes: u64,
    /// Passes (`loops`); a time-based job repeats them until its runtime.
    pub passes: u32,
    /// `verify_backlog` (0: only after the pass).
    pub backlog: u64,
    /// `verify_backlog_batch`, or `verify_backlog` when unset.
    pub batch: u64,
    /// The log is sorted by offset (fio's `fio_offset_overlap_risk`).
    pub sorted: bool,
    /// `verify_only`: no write is issued; the blocks a pass would write are
    /// logged and read back (fio's `do_dry_run`; its phantom writes are not
    /// reported).
    pub only: bool,
}

/// The time a verifying job spent writing and verifying, for fio's
/// per-direction runtimes: fio's `thread_main` adds `do_io`'s time to the
/// write runtime (and the read one, with a backlog) and `do_verify`'s
/// (from its fsync on) to the read runtime, each rounded up to ms
/// (`update_runtime`). The job updates it as it goes; the report reads it.
#[derive(Debug, Default)]
pub struct PhaseClock {
    /// Closed phases' runtimes, ms: read, write.
    ms: [AtomicU64; 2],
    /// The open phase: 0 none, 1 writing, 2 verifying; and since when, ns.
    open: AtomicU64,
    open_at: AtomicU64,
}

impl PhaseClock {
    fn open(&self, kind: u64, at: Ns) {
        self.open.store(kind, Ordering::Relaxed);
        self.open_at.store(at.0, Ordering::Relaxed);
    }

    fn close(&self, now: Ns, backlog: bool) {
        let kind = self.open.swap(0, Ordering::Relaxed);
        let ms =
            (now.0.saturating_sub(self.open_at.load(Ordering::Relaxed)) / 1_000).div_ceil(1_000);
        let add = |d: usize| self.ms[d].fetch_add(ms, Ordering::Relaxed);
        match kind {
            1 => {
                add(1);
                if backlog {
                    add(0);
                }
            }
            2 => {
                add(0);
            }
            _ => {}
        }
    }

    /// Read and write runtimes, ms, for a job that ended at `end` (the phase
    /// still open counted up to there, as fio counts a terminated phase).
    pub fn runtimes(&self, end: Ns, backlog: bool) -> [u64; 2] {
        self.close(end, backlog);
        [0, 1].map(|d| self.ms[d].load(Ordering::Relaxed))
    }
}

/// Where a verifying job is in its pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VerifyPhase {
    /// Writing (and, with a backlog, reading some blocks back).
    Io,
    /// The pass's I/O is issued: waiting for it, then the fsync.
    Drain,
    /// Reading back what is left in the log.
    Verify,
}

impl JobConfig {
    /// The step of direction `d`'s random offsets: `blockalign`, else the
    /// smallest block size.
    pub fn random_unit(&self, d: usize) -> u64 {
        match self.blockalign[d] {
            0 => self.bs[d].max(1),
            ba => ba,
        }
    }
}

impl Default for JobConfig {
    /// A one-job fio default, as a base for hand-built jobs: `psync` 4 KiB random
    /// reads, `direct=1`, depth 1, 1 GiB from offset 0, on CPU 0 as pid 1000, in the
    /// root cgroup, run seed 1, no fsync, free submissions.
    fn default() -> Self {
        JobConfig {
            name: "job".into(),
            job_index: 0,
            group: 0,
            rw: RwMode::RandRead,
            rwmixread: 50,
            bs: [4096; 3],
            bs_dist: [None, None, None],
            blockalign: [0; 3],
            seq_nr: 1,
            seq_add: 0,
            offset: 0,
            size: 1 << 30,
            io_limit: 1 << 30,
            number_ios: None,
            runtime: None,
            time_based: false,
            ramp_time: 0,
            start_delay: 0,
            depth: 1,
            async_engine: false,
            cpu: 0,
            cpus_allowed: Vec::new(),
            engine: crate::fio::IoEngine::Psync,
            fixedbufs: false,
            pid: 1000,
            ioprio: IoPrio::default(),
            cgroup: CgroupId(0),
            seed: 1,
            norandommap: false,
            random_dist: RandomDist::Random,
            batch_submit: 1,
            plugs: false,
            fsync_blocks: 0,
            end_fsync: false,
            fua_writes: false,
            sync_report: SyncReport::Hidden,
            buffered: false,
            invalidate: false,
            fadvise: crate::pagecache::Advice::Normal,
            submit_cost_ns: 0,
            thinktime: None,
            rate: None,
            replay: None,
            verify: None,
            zbd: None,
            offload: false,
            phase_clock: None,
            control: Control::default(),
            files: Vec::new(),
            file_service: Default::default(),
            cmdprio: None,
        }
    }
}

/// Why a job's thread stops submitting for a while.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StallKind {
    /// A thinktime stall.
    Think,
    /// Ahead of its rate: sleep this long, ns.
    Rate(u64),
    /// A replayed entry is not due yet: sleep this long, ns, without waiting
    /// for the I/O in flight (fio's `iolog_delay` reaps while it waits).
    Replay(u64),
    /// Ahead of its flow share with `flow_sleep`: sleep this long, ns.
    Flow(u64),
    /// `io_u_quiesce` for the latency target: wait for the I/O in flight,
    /// then go on (`true`: and start the statistics over, for the final
    /// window at the depth found).
    Quiesce(bool),
}

/// A stall's progress: fio first waits for all the job's I/O to complete
/// (`io_u_quiesce`), then sleeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stall {
    None,
    Draining(StallKind),
    Sleeping(StallKind),
}

/// One I/O in flight.
#[derive(Clone, Copy, Debug, Default)]
struct IoUnit {
    submit: Ns,
    issue: Ns,
    offset: u64,
    bytes: u32,
    dir: u8,
    sync: bool,
    trim: bool,
    /// The priority cmdprio gave it (its ioprio value), if any.
    prio: Option<u16>,
    /// A zone reset fio issues itself (`zbd_reset_zone`), not an I/O unit.
    zreset: bool,
}

/// An I/O `zbd_adjust_block` holds back until the job's I/O in flight has
/// completed (`io_u_quiesce`).
#[derive(Clone, Copy, Debug)]
enum ZbdHeld {
    /// Reset the zone at `zone` (bytes), then write.
    Reset { zone: u64, io: HeldIo },
    /// The write, once its zone's reset is done.
    Write(HeldIo),
    /// Open another zone after `zi`, then write.
    Quiesce { zi: usize, io: HeldIo },
}

#[derive(Clone, Copy, Debug)]
struct HeldIo {
    dir: Dir,
    lane: usize,
    byte: u64,
    bytes: u64,
}

/// What fio makes of a job's syncs in its report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncReport {
    /// The kernel's own (`sync=1` with a synchronous engine: `generic_write_sync`
    /// inside each write): part of the write, not reported apart.
    #[default]
    Hidden,
    /// fio issues them as `fsync` io_us (`fsync=`, a replayed `sync`):
    /// latencies reported, counted in `issued rwts`. (`end_fsync` and
    /// `fsync_on_close` are never reported.)
    Fsync,
    /// fio issues them as `fdatasync` (`fdatasync=`): latencies reported, not
    /// counted in `issued rwts`.
    Fdatasync,
}

/// A replaying job's stream, with what it is waiting to issue.
struct Replay {
    stream: Box<dyn crate::trace::replay::ReplayStream>,
    /// The step fetched but not issued yet (not due, or no free I/O unit).
    next: Option<crate::trace::replay::Step>,
    /// fio's `last_issue`: when the job last issued a step.
    last_issue: Ns,
    /// The stream has ended.
    done: bool,
    /// A replayed sync is to be issued once the I/O before it allows.
    sync: bool,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("next", &self.next)
            .field("done", &self.done)
            .finish()
    }
}

/// One of a clone's files while another is in use: its region and the
/// offset state it resumes with.
#[derive(Debug)]
struct FileSlot {
    offset: u64,
    size: u64,
    pickers: [BlockPicker; LANES],
    seq_pos: [u64; LANES],
    seq_count: [u64; LANES],
    last_start: [u64; LANES],
    /// Bytes issued to it.
    issued: u64,
}

/// Run-time state of one clone.
#[derive(Debug)]
pub struct Job {
    /// Several files: each but the one in use (`None` at `cur_file`).
    files: Vec<Option<FileSlot>>,
    /// The file in use.
    cur_file: usize,
    /// I/Os left before the next choice of file (fio's `file_service_left`).
    file_left: u32,
    /// Bytes issued to the file in use.
    file_issued: u64,
    /// Draws files for `file_service_type=random`.
    file_rng: Pcg64Mcg,
    /// Draws cmdprio's choices (fio's `prio_state`).
    prio_rng: Pcg64Mcg,
    /// What it does.
    pub cfg: JobConfig,
    /// When it started.
    pub start: Ns,
    /// Has it started?
    pub started: bool,
    /// No more submissions (limit reached or runtime over).
    pub stopping: bool,
    /// When the job's runtime ended, if that is what stopped it.
    pub runtime_over_at: Option<Ns>,
    /// When the thread began the CPU work of its current (or last) submission: the
    /// instant fio's loop checked `runtime_exceeded` before it.
    pub submit_decided: Ns,
    /// Finished: stopping and nothing in flight.
    pub finished: bool,
    /// When its last I/O completed.
    pub end: Ns,
    /// I/Os in flight.
    pub inflight: u32,
    /// The job's thread is busy submitting: a submission event is scheduled.
    pub cpu_pending: bool,
    issued_bytes: u64,
    issued_ios: u64,
    pickers: [BlockPicker; LANES],
    dir_rng: Pcg64Mcg,
    units: Vec<IoUnit>,
    free_units: Vec<u32>,
    writes_issued: u64,
    synced_at: u64,
    sync_inflight: bool,
    /// The sync in flight is one fio reports ([`Job::sync_reported`]).
    sync_reported: bool,
    /// A reported sync completed: (issued, completed), for [`Job::take_sync_done`].
    sync_done: Option<(Ns, Ns)>,
    end_sync_issued: bool,
    /// Completions the thread waits for in one `io_getevents` (fio's
    /// `iodepth_batch_complete_min`; 0 = 1).
    reap_min: u32,
    /// Completions it takes at most in one `io_getevents` (fio's
    /// `iodepth_batch_complete_max` after its fixup: at least `reap_min`).
    reap_max: u32,
    /// Completed I/O units the thread has not reaped yet: free in the kernel,
    /// not yet back on fio's free list.
    unreaped: u32,
    /// I/Os reaped (fio's `io_blocks`).
    reaped_ios: u64,
    /// The thinktime check of the last submission waits for the next reap (the
    /// submission filled the queue, so fio's loop iteration ends in a reap).
    think_check_pending: bool,
    /// A thinktime or rate stall in progress.
    stall: Stall,
    /// The number of the last sleep begun, when it began, and how long it
    /// was to last (ns).
    pub stall_seq: u32,
    pub stall_since: Ns,
    stall_len: u64,
    /// The block count at the last thinktime stall (fio's `last_thinktime_blocks`).
    last_think_blocks: u64,
    /// When the last thinktime stall ended (fio's `last_thinktime`).
    last_think_at: Ns,
    /// Direction of the last I/O issued.
    last_dir: Dir,
    /// Rate limiting: the time origin (fio's `epoch`: the start, then the end of
    /// the ramp time).
    rate_epoch: Ns,
    /// Bytes issued per direction since `rate_epoch` (`rate_io_issue_bytes`).
    rate_issue_bytes: [u64; 2],
    /// When the next I/O of each direction is due, µs after `rate_epoch`
    /// (`rate_next_io_time`).
    rate_next_us: [u64; 2],
    /// The Poisson process's clock per direction, µs (`last_usec`).
    rate_last_us: [u64; 2],
    /// The Poisson process's generators.
    rate_rng: [Pcg64Mcg; 2],
    /// The direction a rate sleep ended in: the next I/O goes that way without
    /// a new check (fio issues it right after `rate_ddir` returns).
    rate_dir: Option<Dir>,
    /// Draws block sizes that vary (fio's `bsrange_state`).
    bs_rng: Pcg64Mcg,
    /// Sequential position per direction, bytes into the region, when sizes
    /// vary (fio's `last_pos`).
    seq_pos: [u64; LANES],
    /// I/Os issued per direction, for `seq_nr`.
    seq_count: [u64; LANES],
    /// Start of the last I/O per lane, absolute bytes; `u64::MAX` before the
    /// first (fio's `last_start`, per file).
    last_start: [u64; LANES],
    /// Length of the last trim (`randtrimwrite` writes it again).
    last_trim_len: u64,
    /// fio's zone bookkeeping (`zonemode=zbd`).
    pub zbd: Option<crate::zbd::Zbd>,
    zbd_held: Option<ZbdHeld>,
    /// A sequential zbd job's next position per lane, relative to the region
    /// (fio's `last_pos`, which follows the adjusted I/O).
    zbd_pos: [u64; 3],
    /// A trim the thread waits for is in flight: libaio's and posixaio's queue
    /// functions issue a trim synchronously (`do_io_u_trim`, `BLKDISCARD`).
    trim_blocking: bool,
    /// The trace being replayed, if any.
    replay: Option<Replay>,
    /// The blocks written, to read back (verifying jobs only).
    vlog: Option<Box<crate::verify::VerifyLog>>,
    vphase: VerifyPhase,
    /// The fsync before this pass's verification has been issued.
    verify_synced: bool,
    /// Blocks left in the current backlog batch (fio's `verify_batch`).
    verify_batch: u64,
    /// Direction of the last completed I/O (fio's `last_ddir_completed`,
    /// which starts as a read).
    last_done_dir: Dir,
    /// Bytes of the pass's own I/O issued.
    pass_issued: u64,
    /// Passes completed.
    passes_done: u32,
    /// Every pass has been written and verified.
    verify_done: bool,
    /// I/Os the clone has counted in its flow (flow.c's `td->flow_counter`).
    flow_counter: u64,
    /// Ahead of its flow share without `flow_sleep`: it spins, submitting
    /// nothing, until the share allows ([`Job::flow_exceeded`] is false).
    pub flow_waiting: bool,
    /// Bytes and I/Os completed per direction since the start or the ramp's
    /// end (fio's `this_io_bytes`, `this_io_blocks`).
    done_bytes: [u64; 2],
    done_blocks: [u64; 2],
    /// Completion latencies of those I/Os: their sum (ns) and count (fio's
    /// `clat_stat` mean times samples, which the steady-state check reads).
    clat_sum: f64,
    clat_samples: u64,
    /// The steady-state check's view of this clone.
    pub ss: crate::steadystate::Sampler,
    /// The minimum-rate check's last sample per direction: bytes, I/Os and
    /// when (fio's `last_rate_check_*`).
    rate_check: [(u64, u64, Ns); 2],
    /// Why the clone stopped with an error (fio's `td->error`).
    pub error: Option<JobError>,
    /// Latency target: the depth in use and its bounds (fio's `latency_qd`,
    /// `latency_qd_high`, `latency_qd_low`), successes in a row at the top
    /// (`latency_stable_count`), the window's start, I/Os completed then,
    /// I/Os over the target in it, and whether the final window runs.
    pub lat_qd: u32,
    lat_high: u32,
    lat_low: u32,
    lat_stable: u32,
    lat_ts: Ns,
    lat_blocks: u64,
    lat_ios: u64,
    lat_failed: u64,
    lat_end_run: bool,
    /// The statistics are to start over now (the latency target's final
    /// window); the simulator tells the report, as at a ramp's end.
    pub stats_reset: bool,
}

/// What the rate limit says about the next I/O.
enum RateDecision {
    /// Issue it now, in this direction.
    Go(Dir),
    /// Sleep this long (µs), then issue it in this direction.
    Wait(Dir, u64),
    /// The runtime is over (fio's `DDIR_INVAL`).
    Stop,
}

/// One block size from `dist` that is at most `room` bytes, as fio's
/// `get_next_buflen` draws it: `bsrange` takes min + max × U (U uniform in
/// [0, 1)); `bssplit` takes the first entry whose running percentage total
/// reaches a uniform draw in 1..=100 (and fits), else the last one. Either is
/// then rounded down to a multiple of the smallest size and capped at the
/// largest, and drawn again until it fits (`io_u_fits`); the smallest size
/// when nothing else does.
pub fn draw_bs(dist: &BsDist, rng: &mut Pcg64Mcg, room: u64) -> u64 {
    let (min, max) = (dist.min(), dist.max());
    for _ in 0..64 {
        let raw = match dist {
            BsDist::Range { .. } => min + (max as f64 * rng.gen::<f64>()) as u64,
            BsDist::Split(table) => {
                let v = rng.gen_range(1..=100u64);
                let mut total = 0u64;
                let mut len = 0;
                for &(bs, perc) in table {
                    if perc == 0 {
                        continue;
                    }
                    len = bs;
                    total += perc as u64;
                    if v <= total && bs <= room {
                        break;
                    }
                }
                len
            }
        };
        let aligned = if min.is_power_of_two() {
            raw & !(min - 1)
        } else {
            raw - raw % min.max(1)
        };
        let len = aligned.min(max);
        if len > 0 && len <= room {
            return len;
        }
    }
    min
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
    /// When the job started submitting it (fio's `io_u` start time).
    pub submit: Ns,
    /// When it entered the block layer (the end of its submission).
    pub issue: Ns,
    /// Where, bytes from the start of the device.
    pub offset: u64,
    /// A discard (counted as a write in `dir`).
    pub trim: bool,
    /// The ioprio value cmdprio gave it; `None`: the job's own priority.
    pub prio: Option<u16>,
}

impl Job {
    /// The offset pickers of a region of `size` bytes, per direction.
    fn make_pickers(cfg: &JobConfig, size: u64, salt: u64) -> [BlockPicker; LANES] {
        let picker = |dir: usize, salt: u64| {
            let seed = cfg.seed ^ salt;
            if !cfg.rw.is_random() {
                let bs = cfg.bs[dir].max(1);
                return BlockPicker::sequential((size / bs).max(1));
            }
            // Random offsets are multiples of the alignment; the last one
            // leaves room for the smallest I/O (fio's `last_block`, with the
            // retry of `io_u_fits` folded in).
            let bs = cfg.random_unit(dir);
            let nblocks = (size.saturating_sub(cfg.bs[dir]) / bs + 1).max(1);
            let skewed = match &cfg.random_dist {
                RandomDist::Random => None,
                RandomDist::Zipf { theta, center } => {
                    Some(Skewed::zipf(nblocks, *theta, *center, seed))
                }
                RandomDist::Pareto { h, center } => {
                    Some(Skewed::pareto(nblocks, *h, *center, seed))
                }
                RandomDist::Normal { dev, center } => {
                    Some(Skewed::normal(nblocks, *dev, *center, seed))
                }
                RandomDist::Zoned(z) if !z[dir].is_empty() => {
                    // fio: a zone starts at its first percent of the blocks and
                    // spans its share of them.
                    let mut at = 0u64;
                    let zones: Vec<ZoneBlocks> = z[dir]
                        .iter()
                        .map(|&(access, size)| {
                            let start = at * nblocks / 100;
                            let len = nblocks * size as u64 / 100;
                            at += size as u64;
                            ZoneBlocks { access, start, len }
                        })
                        .collect();
                    Some(Skewed::zoned(nblocks, &zones, seed))
                }
                RandomDist::ZonedAbs(z) if !z[dir].is_empty() => {
                    let mut at = 0u64;
                    let zones: Vec<ZoneBlocks> = z[dir]
                        .iter()
                        .map(|&(access, size)| {
                            let start = at / bs;
                            at += size;
                            ZoneBlocks {
                                access,
                                start,
                                len: at / bs - start,
                            }
                        })
                        .collect();
                    Some(Skewed::zoned(nblocks, &zones, seed))
                }
                _ => None,
            };
            match skewed {
                Some(s) => BlockPicker::Skewed(Box::new(s)),
                None => BlockPicker::random(nblocks, seed, !cfg.norandommap),
            }
        };
        // A job without trims never draws from the trim lane: no random map for it.
        let trims = if cfg.rw.trims() {
            picker(TRIM_LANE, 0x5EED_0000_0000_0003 ^ salt)
        } else {
            BlockPicker::sequential(1)
        };
        [
            picker(0, 0x5EED_0000_0000_0001 ^ salt),
            picker(1, 0x5EED_0000_0000_0002 ^ salt),
            trims,
        ]
    }

    /// A job that has not started.
    pub fn new(cfg: JobConfig) -> Job {
        let pickers = Job::make_pickers(&cfg, cfg.size, 0);
        let files = cfg
            .files
            .iter()
            .enumerate()
            .map(|(k, &(offset, size))| {
                (k > 0).then(|| FileSlot {
                    offset,
                    size,
                    pickers: Job::make_pickers(
                        &cfg,
                        size,
                        (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    ),
                    seq_pos: [0; LANES],
                    seq_count: [0; LANES],
                    last_start: [u64::MAX; LANES],
                    issued: 0,
                })
            })
            .collect();

        let depth = cfg.depth.max(1);
        let replay = cfg.replay.as_ref().map(|src| Replay {
            stream: src.open(),
            next: None,
            last_issue: Ns::ZERO,
            done: false,
            sync: false,
        });
        Job {
            files,
            cur_file: 0,
            file_left: 0,
            file_issued: 0,
            file_rng: Pcg64Mcg::seed_from_u64(cfg.seed ^ 0xF11E),
            prio_rng: Pcg64Mcg::seed_from_u64(cfg.seed ^ 0x9210),
            replay,
            dir_rng: Pcg64Mcg::seed_from_u64(cfg.seed ^ 0xD1E),
            pickers,
            // One more unit than the depth: the fsync, which fio issues synchronously.
            units: vec![IoUnit::default(); depth as usize + 1],
            free_units: (0..depth).rev().collect(),
            writes_issued: 0,
            synced_at: 0,
            sync_reported: false,
            sync_done: None,
            sync_inflight: false,
            end_sync_issued: false,
            reap_min: 1,
            reap_max: 1,
            unreaped: 0,
            reaped_ios: 0,
            think_check_pending: false,
            stall: Stall::None,
            stall_seq: 0,
            stall_since: Ns::ZERO,
            stall_len: 0,
            last_think_blocks: 0,
            last_think_at: Ns::ZERO,
            last_dir: Dir::Read,
            rate_epoch: Ns::ZERO,
            rate_issue_bytes: [0; 2],
            rate_next_us: [0; 2],
            rate_last_us: [0; 2],
            rate_rng: [
                Pcg64Mcg::seed_from_u64(cfg.seed ^ 0x9015_5011_0000_0000),
                Pcg64Mcg::seed_from_u64(cfg.seed ^ 0x9015_5011_0000_0001),
            ],
            rate_dir: None,
            bs_rng: Pcg64Mcg::seed_from_u64(cfg.seed ^ 0xB55B_0000_0000_0000),
            seq_pos: [0; LANES],
            seq_count: [0; LANES],
            last_start: [u64::MAX; LANES],
            last_trim_len: 0,
            zbd: cfg.zbd.clone().map(crate::zbd::Zbd::new),
            zbd_held: None,
            zbd_pos: [0; 3],
            trim_blocking: false,
            vlog: cfg
                .verify
                .map(|v| Box::new(crate::verify::VerifyLog::new(v.sorted, depth as usize + 1))),
            vphase: VerifyPhase::Io,
            verify_synced: false,
            verify_batch: 0,
            last_done_dir: Dir::Read,
            pass_issued: 0,
            passes_done: 0,
            verify_done: false,
            cfg,
            start: Ns::ZERO,
            started: false,
            stopping: false,
            runtime_over_at: None,
            submit_decided: Ns::ZERO,
            finished: false,
            end: Ns::ZERO,
            inflight: 0,
            cpu_pending: false,
            issued_bytes: 0,
            issued_ios: 0,
            flow_counter: 0,
            flow_waiting: false,
            done_bytes: [0; 2],
            done_blocks: [0; 2],
            clat_sum: 0.0,
            clat_samples: 0,
            ss: Default::default(),
            rate_check: [(0, 0, Ns::ZERO); 2],
            error: None,
            lat_qd: 0,
            lat_high: 0,
            lat_low: 0,
            lat_stable: 0,
            lat_ts: Ns::ZERO,
            lat_blocks: 0,
            lat_ios: 0,
            lat_failed: 0,
            lat_end_run: false,
            stats_reset: false,
        }
    }

    /// Whether the job may submit another I/O now: started, not stopping, a reaped
    /// I/O unit free, not blocked in an fsync and no fsync due first.
    pub fn can_submit(&self) -> bool {
        self.started
            && !self.stopping
            && self.reaped_free() > 0
            && !self.sync_inflight
            && !self.trim_blocking
            && !self.sync_due()
            && !self.stalled()
            && !self.verify_blocked()
            && !self.flow_waiting
            && !self.lat_full()
            && !self.zbd_quiescing()
    }

    /// fio's `io_u_quiesce` for zbd.c: an I/O held back until the job's I/O
    /// in flight has completed (a zone reset, another zone to open).
    fn zbd_quiescing(&self) -> bool {
        self.zbd_held.is_some() && self.inflight > 0
    }

    /// fio's `queue_full` with a latency target: the I/O units out (in
    /// flight or not reaped) have reached the depth being tried.
    fn lat_full(&self) -> bool {
        self.cfg.control.latency.is_some() && self.cur_depth() >= self.lat_qd
    }

    /// fio's `cur_depth`: I/O units not back on its free list (the fsync,
    /// issued apart, not counted).
    fn cur_depth(&self) -> u32 {
        self.inflight - self.sync_inflight as u32 + self.unreaped
    }

    /// io_u.c `lat_target_init`: start the search at depth 1.
    fn lat_init(&mut self, now: Ns) {
        self.lat_end_run = false;
        if self.cfg.control.latency.is_some() {
            self.lat_ts = now;
            self.lat_qd = 1;
            self.lat_high = self.cfg.depth.max(1);
            self.lat_low = 1;
            self.lat_ios = self.lat_blocks;
        } else {
            self.lat_qd = self.cfg.depth;
        }
    }

    /// io_u.c `lat_new_cycle`.
    fn lat_new_cycle(&mut self, now: Ns) {
        self.lat_ts = now;
        self.lat_ios = self.lat_blocks;
        self.lat_failed = 0;
    }

    /// Wait for the I/O in flight (`io_u_quiesce`), then start a new window
    /// (and with `reset`, fresh statistics). fio's quiesce reaps inside the
    /// check, so the I/O it waits for counts in the old window. Already
    /// stalling (or nothing in flight), the window starts now.
    fn quiesce(&mut self, now: Ns, reset: bool) {
        if self.stall == Stall::None && self.inflight > 0 {
            self.stall = Stall::Draining(StallKind::Quiesce(reset));
            return;
        }
        if reset {
            self.stats_reset = true;
        }
        self.lat_new_cycle(now);
    }

    /// The latency target's quiesce is under way.
    fn lat_quiescing(&self) -> bool {
        matches!(self.stall, Stall::Draining(StallKind::Quiesce(_)))
    }

    /// io_u.c `__lat_target_failed`: halve the depth towards the last good
    /// one; at depth 1 the target cannot be met (true).
    fn lat_ramp_down(&mut self, now: Ns) -> bool {
        if self.lat_qd == 1 {
            return true;
        }
        self.lat_high = self.lat_qd;
        if self.lat_qd == self.lat_low {
            self.lat_low -= 1;
        }
        self.lat_qd = ((self.lat_qd + self.lat_low) / 2).max(1);
        self.lat_stable = 0;
        self.quiesce(now, false);
        false
    }

    /// io_u.c `lat_target_success`: double the depth (or bisect towards the
    /// last failing one); the same depth twice: one final window at it, with
    /// fresh statistics, then the job is done (unless `latency_run`).
    fn lat_ramp_up(&mut self, now: Ns, run: bool) {
        let qd = self.lat_qd;
        let depth = self.cfg.depth.max(1);
        self.lat_low = self.lat_qd;
        if self.lat_qd + 1 == self.lat_high {
            self.lat_stable += 1;
            if self.lat_stable >= 3 {
                self.lat_high += 1;
                self.lat_stable = 0;
            }
        }
        self.lat_qd = if self.lat_high != depth {
            (self.lat_qd + self.lat_high) / 2
        } else {
            self.lat_qd * 2
        }
        .min(depth);
        if !run && self.lat_qd == qd {
            if self.lat_end_run {
                self.stopping = true;
            } else {
                self.lat_end_run = true;
                self.quiesce(now, true);
                return;
            }
        }
        self.lat_new_cycle(now);
    }

    /// A read or write completed `lat_ns` after it was started: count it
    /// against the target (io_u.c `io_completed`: with a percentile of 100
    /// a single miss ramps down, or, at depth 1, fails the job with fio's
    /// `lat_fatal`), then, out of the ramp time, `lat_target_check`.
    fn lat_completed(&mut self, now: Ns, lat_ns: u64) {
        let Some(lt) = self.cfg.control.latency else {
            return;
        };
        self.lat_blocks += 1;
        if lat_ns > lt.target_ns {
            if lt.percentile == 100.0 {
                if self.lat_ramp_down(now) && self.error.is_none() {
                    self.error = Some(JobError {
                        errno: ETIMEDOUT,
                        func: "max latency exceeded",
                        message: format!(
                            "fio: latency of {lat_ns} nsec exceeds specified max ({} nsec)",
                            lt.target_ns
                        ),
                    });
                    self.stopping = true;
                }
            } else {
                self.lat_failed += 1;
            }
        }
        let ramping = self.cfg.ramp_time > 0 && now.0 < self.start.0 + self.cfg.ramp_time;
        if ramping
            || self.stopping
            || self.lat_quiescing()
            || now.0.saturating_sub(self.lat_ts.0) < lt.window_ns
        {
            return;
        }
        let ios = self.lat_blocks - self.lat_ios;
        let success = if ios == 0 {
            f64::NAN
        } else {
            (ios - self.lat_failed.min(ios)) as f64 / ios as f64 * 100.0
        };
        if success >= lt.percentile {
            self.lat_ramp_up(now, lt.run);
        } else {
            self.lat_ramp_down(now);
        }
    }

    /// flow.c's `flow_threshold_exceeded` test: the clone's share of its
    /// flow's I/O count is above its share of the flow's weight.
    pub fn flow_exceeded(&self) -> bool {
        let Some(f) = &self.cfg.control.flow else {
            return false;
        };
        let counter = f.flow.counter.load(Ordering::Relaxed).max(1);
        let weight = f.flow.total_weight.load(Ordering::Relaxed).max(1);
        self.flow_counter as f64 / counter as f64 > f.weight as f64 / weight as f64
    }

    /// fio's loop-top flow check before each I/O: ahead of its share, the
    /// clone sleeps (`flow_sleep`, after its I/O drains) or spins; else the
    /// I/O counts in the flow. Returns whether the I/O may go.
    fn flow_check(&mut self) -> bool {
        let Some(f) = self.cfg.control.flow.clone() else {
            return true;
        };
        if self.flow_exceeded() {
            if f.sleep_ns > 0 {
                self.stall = Stall::Draining(StallKind::Flow(f.sleep_ns));
            } else {
                self.flow_waiting = true;
            }
            return false;
        }
        f.flow.counter.fetch_add(1, Ordering::Relaxed);
        self.flow_counter += 1;
        true
    }

    /// The clone exits: its I/O count and weight leave its flow (flow.c
    /// `flow_put`).
    pub fn flow_exit(&mut self) {
        if let Some(f) = &self.cfg.control.flow {
            f.flow
                .counter
                .fetch_sub(self.flow_counter, Ordering::Relaxed);
            f.flow.total_weight.fetch_sub(f.weight, Ordering::Relaxed);
            self.flow_counter = 0;
        }
    }

    /// backend.c `__check_min_rate` for every direction, after a completion:
    /// from 2 s after the start, once per `rate_cycle`, the bytes (or I/Os)
    /// completed since the last sample must come to the minimum rate. The
    /// first failure stops the clone with fio's message.
    fn check_min_rate(&mut self, now: Ns) {
        let Some(rm) = self.cfg.control.rate_min else {
            return;
        };
        if self.error.is_some() || now.0.saturating_sub(self.rate_epoch.0) < 2_000_000_000 {
            return;
        }
        for d in 0..2 {
            if rm.bps[d] == 0 && rm.iops[d] == 0 {
                continue;
            }
            let (bytes, blocks, at) = self.rate_check[d];
            if bytes > 0 || blocks > 0 {
                let spent_ms = now.0.saturating_sub(at.0) / 1_000_000;
                if spent_ms < rm.cycle_ms || spent_ms == 0 {
                    continue;
                }
                let failed = if rm.bps[d] > 0 {
                    let rate = (self.done_bytes[d] - bytes) * 1000 / spent_ms;
                    (rate < rm.bps[d])
                        .then(|| format!("rate_min={}B/s not met, got {rate}B/s", rm.bps[d]))
                } else {
                    let rate = (self.done_blocks[d] - blocks) * 1000 / spent_ms;
                    (rate < rm.iops[d])
                        .then(|| format!("rate_iops_min={} not met, got {rate} IOPS", rm.iops[d]))
                };
                if let Some(m) = failed {
                    self.error = Some(JobError {
                        errno: EIO,
                        func: "check_min_rate",
                        message: format!("{}: {m}", self.cfg.name),
                    });
                    self.stopping = true;
                    return;
                }
            }
            self.rate_check[d] = (self.done_bytes[d], self.done_blocks[d], now);
        }
    }

    /// A verifying job waits: for its writes and the fsync before reading
    /// back, or for the last reads of a pass before the next one.
    fn verify_blocked(&self) -> bool {
        match self.vphase {
            VerifyPhase::Io => false,
            VerifyPhase::Drain => self.inflight > 0 || !self.verify_synced,
            VerifyPhase::Verify => {
                self.inflight > 0 && self.vlog.as_ref().is_some_and(|l| l.is_empty())
            }
        }
    }

    /// A replaying job waits for its next entry to be due (and has not started
    /// sleeping yet).
    pub fn replay_waiting(&self) -> bool {
        matches!(self.stall, Stall::Draining(StallKind::Replay(_)))
    }

    /// Stalled by thinktime or its rate limit: waiting for its I/O to drain, or
    /// sleeping.
    pub fn stalled(&self) -> bool {
        self.stall != Stall::None
    }

    /// The job started at `now` (thinktime's I/O time and the rate limit count
    /// from here).
    pub fn start_at(&mut self, now: Ns) {
        if let Some(r) = self.replay.as_mut() {
            r.last_issue = now;
        }
        self.started = true;
        self.start = now;
        self.end = now;
        self.last_think_at = now;
        self.rate_epoch = now;
        self.ss.restart(now);
        self.lat_init(now);
        self.clock(|c, _| c.open(1, now));
    }

    /// When the job's clock last started (fio's `epoch`: its start, then its
    /// ramp's end).
    pub fn epoch(&self) -> Ns {
        self.rate_epoch
    }

    /// What the steady-state check reads: I/Os, bytes and completion
    /// latencies since the clock started.
    pub fn ss_totals(&self) -> crate::steadystate::Totals {
        crate::steadystate::Totals {
            ios: self.done_blocks.iter().sum(),
            bytes: self.done_bytes.iter().sum(),
            clat_sum: self.clat_sum,
            clat_samples: self.clat_samples,
        }
    }

    /// Update the phase clock, if the job keeps one.
    fn clock(&self, f: impl FnOnce(&PhaseClock, bool)) {
        if let (Some(c), Some(v)) = (&self.cfg.phase_clock, self.cfg.verify) {
            f(c, v.backlog > 0);
        }
    }

    /// The ramp time ended at `now`: as fio resets its clock (`epoch`) and I/O
    /// counters, the rate limit starts over from here.
    pub fn ramp_over(&mut self, now: Ns) {
        self.rate_epoch = now;
        // reset_all_stats → lat_target_reset: the search starts over, except
        // for its final window.
        if !self.lat_end_run {
            self.lat_init(now);
        }
        self.done_bytes = [0; 2];
        self.done_blocks = [0; 2];
        self.clat_sum = 0.0;
        self.clat_samples = 0;
        self.ss.restart(now);
        self.rate_check = [(0, 0, Ns::ZERO); 2];
        self.rate_issue_bytes = [0; 2];
        self.rate_next_us = [0; 2];
        self.rate_last_us = [0; 2];
    }

    /// fio's `usec_for_io`: when the next I/O in direction `d` is due, µs after
    /// the epoch, once `rate_issue_bytes` have been issued.
    fn usec_for_io(&mut self, d: usize) -> u64 {
        let Some(r) = self.cfg.rate else {
            return 0;
        };
        let bps = r.bps[d];
        if bps == 0 {
            return 0;
        }
        if r.poisson {
            // Exponential gaps with mean 10^6 / IOPS µs (fio truncates the mean to
            // whole µs first); U in (0, 1].
            let bs = self.cfg.bs[d].max(1);
            let mean_us = match bps / bs {
                0 => 1_000_000 * bs / bps,
                iops => 1_000_000 / iops,
            };
            let u = (self.rate_rng[d].gen::<u64>() >> 11) as f64 + 1.0;
            let u = u / (1u64 << 53) as f64;
            let gap = (mean_us as f64 * -(u.ln())) as u64;
            self.rate_last_us[d] += gap;
            return self.rate_last_us[d];
        }
        let bytes = self.rate_issue_bytes[d];
        let secs = bytes / bps;
        let rem = bytes % bps;
        blk::types::mul_div(rem, 1_000_000, bps) + secs * 1_000_000
    }

    /// fio's `rate_ddir`: may the next I/O, in direction `dir`, go now? A mixed
    /// job ahead of its rate in one direction switches to the other when that
    /// one is due, and otherwise sleeps until the earlier of the two.
    fn rate_ddir(&self, dir: Dir, now: Ns) -> RateDecision {
        let now_us = now.0.saturating_sub(self.rate_epoch.0) / 1_000;
        let d = dir.idx();
        if self.rate_next_us[d] <= now_us {
            return RateDecision::Go(dir);
        }
        let other = if d == 0 { Dir::Write } else { Dir::Read };
        let o = other.idx();
        let other_share = if o == 0 {
            self.cfg.rwmixread
        } else {
            100 - self.cfg.rwmixread
        };
        let (mut dir, mut usec) = (dir, self.rate_next_us[d] - now_us);
        if self.cfg.rw.reads() && self.cfg.rw.writes() && other_share > 0 {
            if self.rate_next_us[o] <= now_us {
                return RateDecision::Go(other);
            }
            if self.rate_next_us[o] < self.rate_next_us[d] {
                dir = other;
                usec = self.rate_next_us[o] - now_us;
            }
        }
        if let Some(rt) = self.cfg.runtime {
            let timeout_us = rt / 1_000;
            if usec + now_us > timeout_us {
                if now_us > timeout_us {
                    return RateDecision::Stop;
                }
                usec = timeout_us - now_us;
            }
        }
        RateDecision::Wait(dir, usec)
    }

    /// fio's `handle_thinktime` check at the end of one loop iteration: stall
    /// once `thinktime_blocks` more I/Os have been issued or completed (as
    /// `thinktime_blocks_type` says) or `thinktime_iotime` has passed.
    fn think_check(&mut self, now: Ns) {
        let Some(t) = self.cfg.thinktime else {
            return;
        };
        let mut stall = false;
        if t.iotime_us > 0 {
            if now.0.saturating_sub(self.last_think_at.0) >= t.iotime_us * 1_000 {
                stall = true;
            } else if !t.blocks_set {
                return;
            }
        }
        let b = if t.by_issue {
            self.issued_ios
        } else {
            self.reaped_ios
        };
        if b >= self.last_think_blocks + t.blocks {
            stall = true;
        }
        if stall {
            self.stall = Stall::Draining(StallKind::Think);
            self.last_think_blocks = b;
        }
    }

    /// The pending stall may start now (nothing in flight, thread idle): how
    /// long the thread sleeps, ns. A thinktime stall lasts `thinktime` (of which
    /// `thinktime_spin` busy on the CPU, which the simulator does not tell
    /// apart), cut short at `limit` (the end of the job's runtime, as fio does);
    /// a rate stall as long as the rate check said. `None` when no stall is due.
    pub fn start_stall(&mut self, now: Ns, limit: Option<Ns>) -> Option<u64> {
        let Stall::Draining(kind) = self.stall else {
            return None;
        };
        if let StallKind::Replay(ns) = kind {
            if self.cpu_pending {
                return None;
            }
            self.stall = Stall::Sleeping(kind);
            return Some(match limit {
                Some(l) => ns.min(l.0.saturating_sub(now.0)),
                None => ns,
            });
        }
        let quiesces = !(self.cfg.offload && matches!(kind, StallKind::Rate(_)));
        if (quiesces && self.inflight > 0) || self.cpu_pending {
            return None;
        }
        // io_u_quiesce has reaped every completion.
        self.reaped_ios += self.unreaped as u64;
        self.unreaped = 0;
        self.stall = Stall::Sleeping(kind);
        let dur = match kind {
            StallKind::Rate(ns) | StallKind::Replay(ns) | StallKind::Flow(ns) => ns,
            StallKind::Quiesce(_) => 0,
            StallKind::Think => {
                let t = self.cfg.thinktime?;
                let mut dur = t.think_us.max(t.spin_us) * 1_000;
                if let Some(l) = limit {
                    dur = dur.min(l.0.saturating_sub(now.0));
                }
                dur
            }
        };
        self.stall_len = dur;
        Some(dur)
    }

    /// Asleep in fio's `usec_sleep` (a rate, flow or thinktime sleep): how
    /// long the sleep was to last, ns.
    pub fn usec_sleeping(&self) -> Option<u64> {
        match self.stall {
            Stall::Sleeping(StallKind::Rate(_) | StallKind::Flow(_) | StallKind::Think) => {
                Some(self.stall_len)
            }
            _ => None,
        }
    }

    /// The stall that started `slept` ns ago is over.
    pub fn end_stall(&mut self, now: Ns, slept: u64) {
        let Stall::Sleeping(kind) = self.stall else {
            return;
        };
        self.stall = Stall::None;
        self.end = self.end.max(now);
        if let StallKind::Quiesce(reset) = kind {
            self.stats_reset = reset;
            self.lat_new_cycle(now);
        }
        if kind != StallKind::Think {
            return;
        }
        self.last_think_at = now;
        // rate_ignore_thinktime: count the I/O the stall missed as issued (less
        // one block, so that the next one goes at once), as fio does.
        if let Some(r) = self.cfg.rate.filter(|r| r.ignore_thinktime) {
            let d = self.last_dir.idx();
            let total_us = slept / 1_000;
            let bps = r.bps[d];
            if bps > 0 && total_us > 0 {
                let missed = ((bps as u128 * total_us as u128) / 1_000_000) as u64;
                let bs = self.cfg.bs[d];
                let usperop = bs * 1_000_000 / bps;
                let over = if usperop <= total_us { bs } else { 0 };
                self.rate_issue_bytes[d] = self.rate_issue_bytes[d]
                    .wrapping_add(missed)
                    .wrapping_sub(over);
                self.rate_last_us[d] += total_us;
            }
        }
    }

    /// Free I/O units the thread holds (reaped; fio's `io_u_freelist`).
    pub fn reaped_free(&self) -> u32 {
        self.free_units.len() as u32 - self.unreaped
    }

    /// Set how many completions one `io_getevents` waits for and takes at most
    /// (fio's `iodepth_batch_complete_min` / `_max`, after fio's fixup).
    pub fn set_reaping(&mut self, min: u32, max: u32) {
        self.reap_min = min;
        self.reap_max = max.max(min);
    }

    /// The thread reaps, if fio would now: only when its queue is full (no free
    /// I/O unit on its list: `do_io` → `wait_for_completions`), and only once
    /// `min_evts = min(iodepth_batch_complete_min, cur_depth)` completions have
    /// been posted (it would block in `io_getevents` otherwise); it takes what has
    /// been posted, up to `iodepth_batch_complete_max` (`td_io_getevents` caps it
    /// at `cur_depth` and raises it to `min_evts`). `wait_for_completions` loops
    /// while `cur_depth > iodepth_low`, which (fio's default `iodepth_low` =
    /// `iodepth`) ends after the first call. Returns the completions reaped.
    pub fn reap(&mut self, now: Ns) -> u32 {
        if self.unreaped == 0 || (self.reaped_free() > 0 && !self.lat_full()) {
            return 0;
        }
        let cur_depth = self.cur_depth();
        let min_evts = self.reap_min.min(cur_depth).max(1);
        if self.unreaped < min_evts {
            return 0;
        }
        let max_evts = self.reap_max.min(cur_depth).max(min_evts);
        let r = self.unreaped.min(max_evts);
        self.unreaped -= r;
        self.reaped_ios += r as u64;
        if self.think_check_pending {
            self.think_check_pending = false;
            self.think_check(now);
        }
        r
    }

    /// An fsync is due (fio's `get_rw_ddir`: every `fsync_blocks` writes issued).
    /// A buffered write completes inside its system call, and so does every I/O of
    /// a synchronous engine (psync, sync, pvsync: `queue` returns
    /// `FIO_Q_COMPLETED`), so their fsync follows the write's completion; an
    /// asynchronous engine's fsync only waits until nothing is left uncommitted
    /// (libaio's `queue` returns `FIO_Q_BUSY` while `ld->queued`), writes still in
    /// flight.
    pub fn sync_due(&self) -> bool {
        let n = self.cfg.fsync_blocks as u64;
        // fio decides on its own fsync in get_io_u, at the top of its next turn:
        // a job that has issued all it may (size, number_ios, runtime) takes no
        // further turn, so its last writes go without one. The kernel's
        // (`sync=1`) is part of each write and always follows it.
        let goes_on = !self.stopping && !self.limit_reached();
        let periodic = n > 0
            && self.writes_issued > 0
            && self.writes_issued.is_multiple_of(n)
            && self.synced_at != self.writes_issued
            && (self.cfg.sync_report == SyncReport::Hidden || goes_on);
        let replayed = self.replay.as_ref().is_some_and(|r| r.sync);
        (periodic || replayed)
            && !self.sync_inflight
            && ((!self.cfg.buffered && self.cfg.async_engine) || self.inflight == 0)
            && !self.stalled()
    }

    /// The end-of-job fsync is due (`end_fsync`: all I/O done, none issued yet).
    /// Also the fsync a verifying job issues before reading back
    /// (`do_verify`'s `fio_io_sync`).
    pub fn end_sync_due(&self) -> bool {
        let verify_sync = self.verify_sync_due();
        let end_sync = self.cfg.end_fsync && self.stopping && !self.end_sync_issued;
        (verify_sync || end_sync) && self.started && self.inflight == 0 && !self.stalled()
    }

    fn verify_sync_due(&self) -> bool {
        self.vphase == VerifyPhase::Drain && !self.verify_synced && !self.stopping
    }

    /// The job is blocked in an fsync.
    pub fn in_sync(&self) -> bool {
        self.sync_inflight
    }

    /// Build the fsync's bio (`blkdev_issue_flush`: an empty `REQ_PREFLUSH` write)
    /// and mark it in flight.
    pub fn sync_bio(&mut self, now: Ns, job_idx: usize) -> Bio {
        let unit = self.cfg.depth.max(1);
        self.units[unit as usize] = IoUnit {
            submit: now,
            issue: now,
            offset: 0,
            bytes: 0,
            dir: 1,
            sync: true,
            trim: false,
            prio: None,
            zreset: false,
        };
        if let Some(r) = self.replay.as_mut() {
            r.sync = false;
        }
        self.synced_at = self.writes_issued;
        // fio reports the fsyncs it issues as io_us in its loop; the end-of-job
        // and pre-verify ones (`fio_io_sync`) are not accounted.
        self.sync_reported =
            self.cfg.sync_report != SyncReport::Hidden && !self.verify_sync_due() && !self.stopping;
        if self.verify_sync_due() {
            self.verify_synced = true;
            // do_io is over; do_verify starts with this fsync.
            self.clock(|c, b| {
                c.close(now, b);
                c.open(2, now);
            });
        } else if self.stopping {
            self.end_sync_issued = true;
        }
        self.sync_inflight = true;
        self.inflight += 1;
        Bio {
            op: Op::Write,
            flags: ReqFlags::PREFLUSH,
            sector: Sector(0),
            nr_sectors: 0,
            ioprio: self.cfg.ioprio,
            pid: self.cfg.pid,
            cpu: self.cfg.cpu,
            cgroup: self.cfg.cgroup,
            owner: owner(job_idx, unit),
        }
    }

    /// The job has issued all it may (size or `number_ios`): it stops submitting.
    /// Returns whether it is now stopping for that reason.
    pub fn stop_if_done(&mut self) -> bool {
        if self.limit_reached() {
            self.stopping = true;
        }
        self.stopping
    }

    fn limit_reached(&self) -> bool {
        if let Some(r) = &self.replay {
            return r.done;
        }
        if self.cfg.verify.is_some() {
            return self.verify_done;
        }
        if let Some(n) = self.cfg.number_ios {
            let n = if self.cfg.rw.trim_then_write() {
                n.saturating_mul(2)
            } else {
                n
            };
            if self.issued_ios >= n {
                return true;
            }
        }
        !self.cfg.time_based && self.issued_bytes >= self.cfg.io_limit
    }

    /// The offset lane of the next I/O in direction `dir`: its own direction's,
    /// or the trim lane. Trims travel as writes (`dir` is [`Dir::Write`]); a
    /// trim-then-write job alternates as fio's `set_rw_ddir` decides: a trim when
    /// the last write started where the last trim did (both unset at first),
    /// else the write that follows it.
    fn lane_of(&self, dir: Dir) -> usize {
        let rw = self.cfg.rw;
        if !rw.trims() {
            dir.idx()
        } else if !rw.trim_then_write() || self.last_start[1] == self.last_start[TRIM_LANE] {
            TRIM_LANE
        } else {
            1
        }
    }

    /// Where the next I/O of `lane` goes and its size. The write of
    /// `randtrimwrite` covers the trim just issued (fio's `get_next_block` and
    /// `get_next_buflen`); everything else follows its own lane.
    fn next_lane_extent(&mut self, lane: usize) -> (u64, u64) {
        if self.cfg.rw == RwMode::RandTrimWrite && lane == 1 {
            let rel = self.last_start[TRIM_LANE].wrapping_sub(self.cfg.offset);
            return (rel, self.last_trim_len);
        }
        self.next_extent(lane)
    }

    /// Record the start of an I/O of `lane` (fio's `last_start`, absolute bytes).
    /// A random trim that starts where the previous one did would read as a
    /// finished trim+write pair; fio then moves the last write's start off by one
    /// so that the write still follows (`get_next_offset`).
    fn note_lane_start(&mut self, lane: usize, byte: u64, bytes: u64) {
        if !self.cfg.rw.trims() {
            return;
        }
        if lane == TRIM_LANE {
            if self.cfg.rw == RwMode::RandTrimWrite && self.last_start[TRIM_LANE] == byte {
                self.last_start[1] = self.last_start[1].wrapping_sub(1);
            }
            self.last_trim_len = bytes;
        }
        self.last_start[lane] = byte;
    }

    fn next_dir(&mut self) -> Dir {
        match (self.cfg.rw.reads(), self.cfg.rw.writes()) {
            (true, false) => Dir::Read,
            // Trims travel as writes with the unit's trim flag.
            (false, _) => Dir::Write,
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
        if self.reaped_free() == 0 {
            return None;
        }
        if !self.flow_check() {
            return None;
        }
        if self.replay.is_some() {
            return self.next_replay_bio(now, job_idx);
        }
        if self.zbd_held.is_some() {
            return self.zbd_held_bio(now, job_idx);
        }
        if self.cfg.verify.is_some() {
            if let Some(step) = self.verify_step(now, job_idx) {
                return step;
            }
        }
        let dir = match self.rate_dir.take() {
            Some(d) => d,
            None => {
                let d = self.next_dir();
                if self.cfg.rate.is_some() {
                    match self.rate_ddir(d, now) {
                        RateDecision::Go(d) => d,
                        RateDecision::Wait(d, usec) => {
                            // fio waits for its I/O to complete, then sleeps.
                            self.rate_dir = Some(d);
                            self.stall = Stall::Draining(StallKind::Rate(usec * 1_000));
                            return None;
                        }
                        RateDecision::Stop => {
                            self.stopping = true;
                            return None;
                        }
                    }
                } else {
                    d
                }
            }
        };
        if self.sequence_ended(self.lane_of(dir)) {
            self.stopping = true;
            return None;
        }
        let unit = self.free_units.pop()?;
        if !self.files.is_empty() {
            self.next_file();
        }
        let lane = self.lane_of(dir);
        let trim = lane == TRIM_LANE;
        let (mut rel, bs) = self.next_lane_extent(lane);
        if let (Some(z), false) = (self.zbd.as_ref(), self.cfg.rw.is_random()) {
            // get_next_seq_offset from fio's last_pos, after
            // setup_zbd_zone_mode's jump past a zone's capacity.
            let mut pos = self.zbd_pos[lane];
            if dir == Dir::Write && !trim {
                pos = z.skip_capacity_gap(self.cfg.offset + pos) - self.cfg.offset;
            }
            if pos + bs > self.cfg.size {
                pos = 0;
            }
            rel = pos;
        }
        let mut byte = self.cfg.offset + rel;
        let remaining = self.cfg.io_limit.saturating_sub(self.issued_bytes);
        let mut bytes = if self.cfg.time_based {
            bs
        } else {
            bs.min(remaining.max(1))
        };
        if let Some(z) = self.zbd.as_mut() {
            let zdir = match dir {
                _ if trim => crate::zbd::ZDir::Trim,
                Dir::Read => crate::zbd::ZDir::Read,
                Dir::Write => crate::zbd::ZDir::Write,
            };
            let io = HeldIo {
                dir,
                lane,
                byte,
                bytes,
            };
            match z.adjust(zdir, byte, bytes, self.inflight > 0) {
                crate::zbd::Adjust::Accept { offset, len, reset } => {
                    byte = offset;
                    bytes = len;
                    if let Some(zone) = reset {
                        self.free_units.push(unit);
                        self.zbd_held = Some(ZbdHeld::Reset {
                            zone,
                            io: HeldIo { byte, bytes, ..io },
                        });
                        return self.zbd_held_bio(now, job_idx);
                    }
                }
                crate::zbd::Adjust::Quiesce(zi) => {
                    self.free_units.push(unit);
                    self.zbd_held = Some(ZbdHeld::Quiesce { zi, io });
                    return None;
                }
                crate::zbd::Adjust::Eof(_) => {
                    self.free_units.push(unit);
                    self.stopping = true;
                    return None;
                }
            }
        }
        if self.zbd.is_some() {
            self.zbd_pos[lane] = byte + bytes - self.cfg.offset;
        }
        Some(self.issue_io(now, job_idx, unit, dir, lane, byte, bytes))
    }

    /// Issue the I/O `zbd_adjust_block` held back, once the job's I/O in
    /// flight has completed: the zone reset first, then the write.
    fn zbd_held_bio(&mut self, now: Ns, job_idx: usize) -> Option<Bio> {
        if self.inflight > 0 {
            return None;
        }
        match self.zbd_held.take()? {
            ZbdHeld::Reset { zone, io } => {
                self.zbd_held = Some(ZbdHeld::Write(io));
                let unit = self.free_units.pop()?;
                self.units[unit as usize] = IoUnit {
                    submit: now,
                    issue: now,
                    offset: zone,
                    dir: 1,
                    zreset: true,
                    ..IoUnit::default()
                };
                self.inflight += 1;
                Some(Bio {
                    op: Op::ZoneReset,
                    flags: ReqFlags::NONE,
                    sector: Sector::from_bytes(zone),
                    nr_sectors: 0,
                    ioprio: self.cfg.ioprio,
                    pid: self.cfg.pid,
                    cpu: self.cfg.cpu,
                    cgroup: self.cfg.cgroup,
                    owner: owner(job_idx, unit),
                })
            }
            ZbdHeld::Write(io) => {
                let unit = self.free_units.pop()?;
                self.zbd_pos[io.lane] = io.byte + io.bytes - self.cfg.offset;
                Some(self.issue_io(now, job_idx, unit, io.dir, io.lane, io.byte, io.bytes))
            }
            ZbdHeld::Quiesce { zi, io } => {
                let z = self.zbd.as_mut()?;
                match z.resume_write(zi, io.bytes) {
                    crate::zbd::Adjust::Accept { offset, len, reset } => {
                        let io = HeldIo {
                            byte: offset,
                            bytes: len,
                            ..io
                        };
                        self.zbd_held = Some(match reset {
                            Some(zone) => ZbdHeld::Reset { zone, io },
                            None => ZbdHeld::Write(io),
                        });
                        self.zbd_held_bio(now, job_idx)
                    }
                    _ => {
                        self.stopping = true;
                        None
                    }
                }
            }
        }
    }

    /// Mark `unit` in flight with the I/O chosen and build its bio.
    #[allow(clippy::too_many_arguments)]
    fn issue_io(
        &mut self,
        now: Ns,
        job_idx: usize,
        unit: u32,
        dir: Dir,
        lane: usize,
        byte: u64,
        bytes: u64,
    ) -> Bio {
        let trim = lane == TRIM_LANE;
        // zbd_do_io_u_trim: a trim of a sequential zone resets it.
        let zone_trim = trim && self.zbd.as_mut().is_some_and(|z| z.trim(byte));
        if let (Some(z), Dir::Write, false) = (self.zbd.as_mut(), dir, trim) {
            z.queued(byte, bytes);
        }
        self.note_lane_start(lane, byte, bytes);
        let prio = self.cmdprio_pick(dir, bytes);
        self.units[unit as usize] = IoUnit {
            submit: Ns(now.0.saturating_sub(self.cfg.submit_cost_ns)),
            issue: now,
            offset: byte,
            bytes: bytes as u32,
            dir: dir as u8,
            sync: false,
            trim,
            prio: prio.map(|e| e.value()),
            zreset: false,
        };
        self.inflight += 1;
        // fio's libaio and posixaio engines discard synchronously once what they
        // have queued is submitted; io_uring (fio 3.38 and later) sends
        // BLOCK_URING_CMD_DISCARD like any other I/O.
        self.trim_blocking = trim
            && matches!(
                self.cfg.engine,
                crate::fio::IoEngine::Libaio | crate::fio::IoEngine::Posixaio
            );
        self.writes_issued += (dir == Dir::Write && !trim) as u64;
        // fio's `__io_bytes_exceeded` counts a trim-then-write job's writes only
        // (it is `td_write`); its `number_ios` covers both and is doubled.
        if !(trim && self.cfg.rw.trim_then_write()) {
            self.issued_bytes += bytes;
        }
        self.file_issued += bytes;
        self.issued_ios += 1;
        self.last_dir = dir;
        if let Some(v) = self.cfg.verify {
            if dir == Dir::Write {
                if let Some(l) = self.vlog.as_mut() {
                    l.log(Some(unit), byte, bytes as u32);
                }
            }
            self.pass_issued += bytes;
            let ios_over = self.cfg.number_ios.is_some_and(|n| self.issued_ios >= n);
            if self.pass_issued >= v.pass_bytes || ios_over {
                self.vphase = VerifyPhase::Drain;
                self.verify_synced = false;
            }
        }
        if self.cfg.rate.is_some() {
            let d = dir.idx();
            self.rate_issue_bytes[d] += bytes;
            self.rate_next_us[d] = self.usec_for_io(d);
        }
        if self.cfg.thinktime.is_some() {
            // fio checks for thinktime at the end of each loop iteration, which
            // ends in a reap when this submission filled the queue (always, for
            // a synchronous engine: its I/O completes within the iteration).
            if self.reaped_free() == 0 {
                self.think_check_pending = true;
            } else {
                self.think_check(now);
            }
        }
        let (op, flags) = match dir {
            // zbd.c resets the zone with BLKRESETZONE (blkdev_zone_mgmt).
            _ if zone_trim => (Op::ZoneReset, ReqFlags::NONE),
            // A discard from user space (`blkdev_fallocate` → `blkdev_issue_discard`)
            // carries no REQ_SYNC.
            _ if trim => (Op::Discard, ReqFlags::NONE),
            Dir::Read => (Op::Read, ReqFlags::SYNC),
            // Direct writes to a block device are REQ_SYNC | REQ_IDLE (dio_bio_write_op).
            // O_SYNC/O_DSYNC direct writes add REQ_FUA (blkdev_direct_IO).
            Dir::Write if self.cfg.fua_writes => {
                (Op::Write, ReqFlags::SYNC | ReqFlags::IDLE | ReqFlags::FUA)
            }
            Dir::Write => (Op::Write, ReqFlags::SYNC | ReqFlags::IDLE),
        };
        let ioprio = match prio {
            Some(e) => IoPrio {
                class: blk::IoClass::from_number(e.class).unwrap_or_default(),
                level: e.level,
            },
            None => self.cfg.ioprio,
        };
        Bio {
            op,
            flags,
            sector: Sector::from_bytes(byte),
            nr_sectors: if zone_trim {
                0
            } else {
                (bytes / Sector::SIZE).max(1) as u32
            },
            ioprio,
            pid: self.cfg.pid,
            cpu: self.cfg.cpu,
            cgroup: self.cfg.cgroup,
            owner: owner(job_idx, unit),
        }
    }

    /// cmdprio.c `fio_cmdprio_set_ioprio`: the I/O's share (its size's, with
    /// `cmdprio_bssplit`) against a draw from 0 to 99; under it, the entry
    /// the draw falls in gives the I/O its priority.
    fn cmdprio_pick(&mut self, dir: Dir, bytes: u64) -> Option<crate::fio::CmdPrioEntry> {
        let cp = self.cfg.cmdprio.as_ref()?;
        let entries = &cp.dirs[dir.idx()];
        let matching = || entries.iter().filter(|e| e.bs.is_none_or(|b| b == bytes));
        let total: u32 = matching().map(|e| e.perc).sum();
        if total == 0 {
            return None;
        }
        let draw = self.prio_rng.gen_range(0..100u32);
        if draw >= total {
            return None;
        }
        let mut acc = 0;
        matching()
            .find(|e| {
                acc += e.perc;
                draw < acc
            })
            .copied()
    }

    /// The I/O in flight in `unit` (as [`Job::complete`] will report it).
    pub fn in_flight(&self, unit: u32) -> IoDone {
        let u = self.units[unit as usize];
        IoDone {
            dir: if u.dir == 0 { Dir::Read } else { Dir::Write },
            bytes: u.bytes as u64,
            submit: u.submit,
            issue: u.issue,
            offset: u.offset,
            trim: u.trim,
            prio: u.prio,
        }
    }

    /// The next bio of a replaying job: the stream's next step, once it is due.
    /// A step not due yet stalls the job until it is (without draining its
    /// I/O); a `wait` only times, a file action times and counts as an issue, a
    /// sync becomes the job's fsync once the I/O before it allows.
    fn next_replay_bio(&mut self, now: Ns, job_idx: usize) -> Option<Bio> {
        use crate::trace::replay::Due;
        use crate::trace::TraceOp;
        let limit = self
            .cfg
            .runtime
            .map(|rt| self.start.add(self.cfg.ramp_time + rt));
        let step = loop {
            let r = self.replay.as_mut()?;
            if r.sync {
                return None;
            }
            let step = match r.next {
                Some(s) => s,
                None => match r.stream.next_step() {
                    Some(s) => {
                        r.next = Some(s);
                        s
                    }
                    None => {
                        r.done = true;
                        self.stopping = true;
                        return None;
                    }
                },
            };
            let due = match step.due {
                Due::Now => Ns::ZERO,
                Due::AfterLastIssue(d) => r.last_issue.add(d),
                Due::FromStart(t) => self.start.add(t),
            };
            // fio waits for the entry (`iolog_delay` in `get_io_u`) before it
            // spends the submission's CPU time; here that time has been spent
            // when the bio is asked for, so the wait counts from its start.
            let started = Ns(now.0.saturating_sub(self.cfg.submit_cost_ns));
            if due > started && due > now {
                if limit.is_some_and(|l| l <= now) {
                    r.done = true;
                    self.stopping = true;
                    return None;
                }
                self.stall = Stall::Draining(StallKind::Replay(due.0 - now.0));
                return None;
            }
            r.next = None;
            r.stream.issued(now.0.saturating_sub(due.0));
            // fio's `last_issue`: a synchronous engine stamps it before the
            // system call, an asynchronous one once `io_submit` returned.
            let issued_at = if self.cfg.async_engine { now } else { started };
            match step.op {
                TraceOp::Wait => continue,
                TraceOp::File => r.last_issue = issued_at,
                TraceOp::Sync => {
                    r.last_issue = issued_at;
                    r.sync = true;
                    return None;
                }
                _ => {
                    r.last_issue = issued_at;
                    break step;
                }
            }
        };
        let unit = self.free_units.pop()?;
        let trim = step.op == TraceOp::Trim;
        let dir = if step.op == TraceOp::Read {
            Dir::Read
        } else {
            Dir::Write
        };
        let bytes = step.bytes.min(u32::MAX as u64);
        self.units[unit as usize] = IoUnit {
            submit: Ns(now.0.saturating_sub(self.cfg.submit_cost_ns)),
            issue: now,
            offset: step.offset,
            bytes: bytes as u32,
            dir: dir as u8,
            sync: false,
            trim,
            prio: None,
            zreset: false,
        };
        self.inflight += 1;
        self.writes_issued += (dir == Dir::Write && !trim) as u64;
        self.issued_bytes += bytes;
        self.issued_ios += 1;
        self.last_dir = dir;
        let (op, flags) = match step.op {
            TraceOp::Read => (Op::Read, ReqFlags::SYNC),
            TraceOp::Trim => (Op::Discard, ReqFlags::NONE),
            _ if self.cfg.fua_writes => {
                (Op::Write, ReqFlags::SYNC | ReqFlags::IDLE | ReqFlags::FUA)
            }
            _ => (Op::Write, ReqFlags::SYNC | ReqFlags::IDLE),
        };
        Some(Bio {
            op,
            flags,
            sector: Sector::from_bytes(step.offset),
            nr_sectors: (bytes / Sector::SIZE).max(1) as u32,
            ioprio: self.cfg.ioprio,
            pid: step.pid.unwrap_or(self.cfg.pid),
            cpu: step.cpu.unwrap_or(self.cfg.cpu),
            cgroup: self.cfg.cgroup,
            owner: owner(job_idx, unit),
        })
    }

    /// A file's I/O is done (fio closes it): a job not `time_based` has
    /// issued the file's length to it. A time-based job's files wrap and
    /// are never done.
    fn file_done(&self, len: u64, issued: u64) -> bool {
        !self.cfg.time_based && issued >= len
    }

    /// io_u.c `__get_next_file`: `sequential` stays on a file until its I/O
    /// is done; `roundrobin` and `random` choose again after
    /// `file_service_nr` I/Os, skipping files that are done.
    fn next_file(&mut self) {
        use crate::fio::FileServiceKind as K;
        let n = self.files.len();
        let mut cur_done = self.file_done(self.cfg.size, self.file_issued);
        let all_done = cur_done
            && self
                .files
                .iter()
                .flatten()
                .all(|f| self.file_done(f.size, f.issued));
        if all_done {
            // The next loop: fio opens every file again.
            self.file_issued = 0;
            for f in self.files.iter_mut().flatten() {
                f.issued = 0;
            }
            cur_done = false;
        }
        let svc = self.cfg.file_service;
        let first = self.issued_ios == 0;
        if !first && !cur_done {
            if svc.kind == K::Sequential {
                return;
            }
            if self.file_left > 0 {
                self.file_left -= 1;
                return;
            }
        }
        let open = |job: &Job, k: usize| match &job.files[k] {
            Some(f) => !job.file_done(f.size, f.issued),
            None => !cur_done,
        };
        let next = match svc.kind {
            // The first I/O goes to the first file.
            _ if first => 0,
            K::Random => {
                let pick = self.file_rng.gen_range(0..n);
                (0..n)
                    .map(|i| (pick + i) % n)
                    .find(|&k| open(self, k))
                    .unwrap_or(self.cur_file)
            }
            K::RoundRobin | K::Sequential => (1..=n)
                .map(|i| (self.cur_file + i) % n)
                .find(|&k| open(self, k))
                .unwrap_or(self.cur_file),
        };
        self.file_left = svc.nr.saturating_sub(1);
        self.switch_file(next);
    }

    /// Make file `k` the one in use, keeping the current one's state.
    fn switch_file(&mut self, k: usize) {
        if k == self.cur_file {
            return;
        }
        let mut slot = self.files[k]
            .take()
            .expect("a file not in use has its slot");
        std::mem::swap(&mut self.cfg.offset, &mut slot.offset);
        std::mem::swap(&mut self.cfg.size, &mut slot.size);
        std::mem::swap(&mut self.pickers, &mut slot.pickers);
        std::mem::swap(&mut self.seq_pos, &mut slot.seq_pos);
        std::mem::swap(&mut self.seq_count, &mut slot.seq_count);
        std::mem::swap(&mut self.last_start, &mut slot.last_start);
        std::mem::swap(&mut self.file_issued, &mut slot.issued);
        self.files[self.cur_file] = Some(slot);
        self.cur_file = k;
    }

    /// Where the next I/O in direction `d` goes (bytes into the region) and its
    /// size. Fixed sizes: the picker's next block. Varying sizes: random
    /// offsets are aligned to the smallest size (fio's default `blockalign`)
    /// and sequential ones follow the previous I/O; the size is drawn as fio's
    /// `get_next_buflen` draws it, again until it fits before the region's end.
    fn next_extent(&mut self, d: usize) -> (u64, u64) {
        if let Some(b) = self.sequence_block(d) {
            self.seq_count[d] += 1;
            return (b * self.cfg.bs[d].max(1), self.cfg.bs[d]);
        }
        if self.cfg.seq_add != 0 || self.cfg.seq_nr > 1 {
            return self.next_extent_suffixed(d);
        }
        let bs = self.cfg.bs[d];
        let unit = if self.cfg.rw.is_random() {
            self.cfg.random_unit(d)
        } else {
            bs
        };
        let Some(dist) = self.cfg.bs_dist[d].clone() else {
            return (self.pickers[d].next_block() * unit, bs);
        };
        let size = self.cfg.size;
        if self.cfg.rw.is_random() {
            let off = self.pickers[d].next_block() * unit;
            let len = draw_bs(&dist, &mut self.bs_rng, size.saturating_sub(off));
            return (off, len);
        }
        if size.saturating_sub(self.seq_pos[d]) < bs {
            self.seq_pos[d] = 0;
        }
        let off = self.seq_pos[d];
        let len = draw_bs(&dist, &mut self.bs_rng, size - off);
        self.seq_pos[d] = off + len;
        (off, len)
    }

    /// The next block of a `sequence` distribution in direction `d` (fio's
    /// `__get_next_rand_offset_sequence`, counting the direction's I/Os).
    fn sequence_block(&self, d: usize) -> Option<u64> {
        let RandomDist::Sequence { blocks, stride } = &self.cfg.random_dist else {
            return None;
        };
        if !self.cfg.rw.is_random() || blocks.is_empty() {
            return None;
        }
        let n = self.seq_count[d];
        let len = blocks.len() as u64;
        let base = if *stride { n / len * len } else { 0 };
        Some(base + blocks[(n % len) as usize])
    }

    /// A `sequence` distribution's next block lies past the region: fio's
    /// offset lookup fails and the job ends.
    fn sequence_ended(&self, d: usize) -> bool {
        let max = self.cfg.size / self.cfg.bs[d].max(1);
        self.sequence_block(d).is_some_and(|b| b >= max)
    }

    /// `next_extent` under an `rw` suffix, as fio's `get_next_seq_offset` and
    /// `get_next_offset` do it. Sequential: each offset is the previous I/O's
    /// end plus `seq_add` (not the first one's); past either end it wraps, to
    /// the start going forwards, to `seq_add` before the end going backwards.
    /// Random: every `seq_nr`-th I/O draws a random offset, the others follow
    /// the previous I/O (those are not entered in the random map, unlike
    /// fio's, so a later draw may repeat them within the pass).
    fn next_extent_suffixed(&mut self, d: usize) -> (u64, u64) {
        let size = self.cfg.size;
        let bs = self.cfg.bs[d];
        let len = |job: &mut Job, off: u64| match job.cfg.bs_dist[d].clone() {
            Some(dist) => draw_bs(&dist, &mut job.bs_rng, size.saturating_sub(off)),
            None => bs,
        };
        let fits = |off: u64| off.checked_add(bs).is_some_and(|e| e <= size);
        let count = self.seq_count[d];
        self.seq_count[d] += 1;
        let off = if self.cfg.rw.is_random() {
            let seq = !count.is_multiple_of(u64::from(self.cfg.seq_nr.max(1)));
            if seq && fits(self.seq_pos[d]) {
                self.seq_pos[d]
            } else {
                self.pickers[d].next_block() * self.cfg.random_unit(d)
            }
        } else {
            let last = self.seq_pos[d];
            let add = self.cfg.seq_add;
            let next = if last == 0 {
                Some(0)
            } else {
                last.checked_add_signed(add).filter(|&o| fits(o))
            };
            match next {
                Some(o) => o,
                None if add > 0 => 0,
                // Backwards: from the end, minus the step's own size.
                None => size
                    .checked_add_signed(add)
                    .filter(|&o| fits(o))
                    .unwrap_or(0),
            }
        };
        let n = len(self, off);
        self.seq_pos[d] = off + n;
        (off, n)
    }

    /// The sync [`Job::sync_bio`] just built is one fio reports: one of the
    /// job's own `fsync`/`fdatasync` io_us, not the end-of-job or pre-verify
    /// fsync, nor the kernel's (`sync=1`).
    pub fn sync_reported(&self) -> bool {
        self.sync_reported
    }

    /// The reported sync that [`Job::complete`] just completed, as (issued,
    /// completed); taken once.
    pub fn take_sync_done(&mut self) -> Option<(Ns, Ns)> {
        self.sync_done.take()
    }

    /// Is `unit` a zone reset fio issues itself (`zbd_reset_zone`) rather than
    /// one of its I/O units?
    pub fn is_internal_reset(&self, unit: u32) -> bool {
        self.units[unit as usize].zreset
    }

    /// An I/O unit completed; `None` for an fsync (fio reports those apart:
    /// [`Job::take_sync_done`]).
    pub fn complete(&mut self, unit: u32, now: Ns) -> Option<IoDone> {
        let u = self.units[unit as usize];
        self.inflight -= 1;
        self.end = now;
        if u.zreset {
            self.free_units.push(unit);
            return None;
        }
        if let (Some(z), false, false) = (self.zbd.as_mut(), u.trim, u.dir == 0) {
            z.completed(u.offset, u.bytes as u64);
        }
        if u.sync {
            self.sync_inflight = false;
            if self.sync_reported {
                self.sync_done = Some((u.issue, now));
            }
            return None;
        }
        if u.trim {
            self.trim_blocking = false;
        }
        self.free_units.push(unit);
        if self.cfg.offload {
            // The worker thread reaps it at once.
            self.reaped_ios += 1;
            if self.think_check_pending {
                self.think_check_pending = false;
                self.think_check(now);
            }
        } else {
            self.unreaped += 1;
        }
        let done = self.in_flight(unit);
        self.last_done_dir = done.dir;
        if !u.trim {
            let d = done.dir.idx();
            self.done_bytes[d] += done.bytes;
            self.done_blocks[d] += 1;
            self.clat_sum += now.0.saturating_sub(u.issue.0) as f64;
            self.clat_samples += 1;
            self.check_min_rate(now);
            self.lat_completed(now, now.0.saturating_sub(u.submit.0));
        }
        if done.dir == Dir::Write {
            if let Some(l) = self.vlog.as_mut() {
                l.written(unit);
            }
        }
        Some(done)
    }

    /// The verification's part of choosing the next I/O: `Some(bio or
    /// nothing yet)` when it decides, `None` to go on with the pass's own
    /// I/O.
    fn verify_step(&mut self, now: Ns, job_idx: usize) -> Option<Option<Bio>> {
        if self.vphase == VerifyPhase::Io && self.passes_done == 0 && self.pass_issued == 0 {
            if let Some(v) = self.cfg.verify.filter(|v| v.only) {
                self.dry_run(v.pass_bytes);
            }
        }
        match self.vphase {
            VerifyPhase::Io => {
                let (off, len) = self.backlog_pick()?;
                return Some(Some(self.verify_read(now, job_idx, off, len)));
            }
            VerifyPhase::Drain if self.inflight > 0 || !self.verify_synced => return Some(None),
            VerifyPhase::Drain => self.vphase = VerifyPhase::Verify,
            VerifyPhase::Verify => {}
        }
        if let Some((off, len)) = self.vlog.as_mut().and_then(|l| l.take_next()) {
            return Some(Some(self.verify_read(now, job_idx, off, len)));
        }
        if self.inflight > 0 {
            return Some(None);
        }
        // The pass is verified: the next one, or the end.
        self.passes_done += 1;
        self.clock(|c, b| c.close(now, b));
        let v = self.cfg.verify?;
        if (self.cfg.time_based || self.passes_done < v.passes) && !self.stopping {
            self.vphase = VerifyPhase::Io;
            self.pass_issued = 0;
            self.verify_batch = 0;
            self.clock(|c, _| c.open(1, now));
            if v.only {
                self.dry_run(v.pass_bytes);
            }
            return None;
        }
        self.verify_done = true;
        self.stopping = true;
        Some(None)
    }

    /// fio's `check_get_verify`: with a backlog, once the log holds a
    /// multiple of `verify_backlog` blocks and the last completion was not a
    /// read, read back a batch of `verify_backlog_batch` blocks, one per I/O.
    fn backlog_pick(&mut self) -> Option<(u64, u32)> {
        let v = self.cfg.verify?;
        let log = self.vlog.as_mut()?;
        if v.backlog == 0 || log.is_empty() {
            return None;
        }
        let get = if self.verify_batch > 0 {
            true
        } else if (log.len() as u64).is_multiple_of(v.backlog) && self.last_done_dir != Dir::Read {
            self.verify_batch = v.batch;
            true
        } else {
            false
        };
        if !get {
            return None;
        }
        let p = log.take_next()?;
        self.verify_batch -= 1;
        Some(p)
    }

    /// `verify_only`: log the blocks the pass would write, as complete
    /// writes, without issuing them (fio's `do_dry_run`).
    fn dry_run(&mut self, pass_bytes: u64) {
        let mut done = 0u64;
        let mut ios = 0u64;
        while done < pass_bytes && self.cfg.number_ios.is_none_or(|n| ios < n) {
            let d = match self.next_dir() {
                Dir::Read => 0,
                Dir::Write => 1,
            };
            let (rel, bs) = self.next_extent(d);
            let bytes = bs.min((pass_bytes - done).max(1));
            if d == 1 {
                let byte = self.cfg.offset + rel;
                if let Some(l) = self.vlog.as_mut() {
                    l.log(None, byte, bytes as u32);
                }
            }
            done += bytes;
            ios += 1;
        }
        self.vphase = VerifyPhase::Drain;
        self.verify_synced = false;
    }

    /// One verification read of a logged block.
    fn verify_read(&mut self, now: Ns, job_idx: usize, offset: u64, len: u32) -> Bio {
        let unit = self.free_units.pop().expect("a reaped unit is free");
        self.units[unit as usize] = IoUnit {
            submit: Ns(now.0.saturating_sub(self.cfg.submit_cost_ns)),
            issue: now,
            offset,
            bytes: len,
            dir: 0,
            sync: false,
            trim: false,
            prio: None,
            zreset: false,
        };
        self.inflight += 1;
        self.last_dir = Dir::Read;
        Bio {
            op: Op::Read,
            flags: ReqFlags::SYNC,
            sector: Sector::from_bytes(offset),
            nr_sectors: (u64::from(len) / Sector::SIZE).max(1) as u32,
            ioprio: self.cfg.ioprio,
            pid: self.cfg.pid,
            cpu: self.cfg.cpu,
            cgroup: self.cfg.cgroup,
            owner: owner(job_idx, unit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(dist: &BsDist, room: u64, n: usize) -> Vec<(u64, f64)> {
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..n {
            *counts
                .entry(draw_bs(dist, &mut rng, room))
                .or_insert(0usize) += 1;
        }
        counts
            .into_iter()
            .map(|(k, c)| (k, c as f64 / n as f64))
            .collect()
    }

    fn assert_shares(got: &[(u64, f64)], want: &[(u64, f64)]) {
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((gb, gs), (wb, ws)) in got.iter().zip(want) {
            assert_eq!(gb, wb, "{got:?}");
            assert!((gs - ws).abs() < 0.01, "{got:?} vs {want:?}");
        }
    }

    const K: u64 = 1024;

    #[test]
    fn bssplit_proportions() {
        let d = BsDist::Split(vec![(4 * K, 50), (64 * K, 40), (1024 * K, 10)]);
        assert_shares(
            &shares(&d, u64::MAX, 200_000),
            &[(4 * K, 0.5), (64 * K, 0.4), (1024 * K, 0.1)],
        );
        // Percentages short of 100: the last entry takes the rest.
        let d = BsDist::Split(vec![(4 * K, 10), (8 * K, 10)]);
        assert_shares(
            &shares(&d, u64::MAX, 100_000),
            &[(4 * K, 0.1), (8 * K, 0.9)],
        );
        // Sizes are rounded down to a multiple of the smallest (a power of 2).
        let d = BsDist::Split(vec![(4 * K, 50), (6 * K, 50)]);
        assert_shares(&shares(&d, u64::MAX, 10_000), &[(4 * K, 1.0)]);
        // Only sizes that fit: 1 MiB never does here, so its share goes to the
        // draws that do fit (fio's retry loop), pro rata.
        let d = BsDist::Split(vec![(4 * K, 50), (64 * K, 40), (1024 * K, 10)]);
        assert_shares(
            &shares(&d, 512 * K, 100_000),
            &[(4 * K, 0.5 / 0.9), (64 * K, 0.4 / 0.9)],
        );
        assert_eq!(shares(&d, 4 * K, 100), vec![(4 * K, 1.0)]);
    }

    #[test]
    fn bsrange_proportions() {
        // min + max × U, rounded down to 4 KiB, capped at 16 KiB: four sizes,
        // equally likely.
        let d = BsDist::Range {
            min: 4 * K,
            max: 16 * K,
        };
        assert_shares(
            &shares(&d, u64::MAX, 200_000),
            &[(4 * K, 0.25), (8 * K, 0.25), (12 * K, 0.25), (16 * K, 0.25)],
        );
        // A minimum that is no power of two rounds to its multiples; the cap
        // takes the remainder: [1536, 5632) → 1536, 3072 (1536 values each),
        // 4096 (the 1024 values from 4608 on).
        let d = BsDist::Range {
            min: 1536,
            max: 4096,
        };
        assert_shares(
            &shares(&d, u64::MAX, 200_000),
            &[(1536, 0.375), (3072, 0.375), (4096, 0.25)],
        );
    }
}
