//! From fio's input to fio's report: resolve the jobs (clones, sizes, seeds, CPUs,
//! groups), pick the scheduler and device settings, run the simulation and collect
//! fio's statistics.
//!
//! This is what `iosched run` and `iosched fio` do between parsing and printing.

use crate::fio::{FioInput, IoEngine, JobSpec, SizeSpec};
use crate::iolog::{log_file_name, IoLog, LogError, LogFiles, LogKind, LogParams, LogTarget};
use crate::job::{IoDone, JobConfig, RwMode};
use crate::pagecache::Advice;
use crate::report::{DiskUtil, JobResult, RunReport};
use crate::simulate::{IoObserver, SimConfig, SimError, Simulation};
use crate::stats::{self, JobLogs, JobRecorder, JobStats, RecorderConfig};
use blk::{CgroupId, IoClass, IoPrio, Ns};
use devices::Profile;
use serde_json::json;

mod files;

/// Run settings that are not fio options.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Device profile.
    pub device: Profile,
    /// Scheduler chosen on the command line (wins over fio's `ioscheduler=`).
    pub scheduler: Option<String>,
    /// `--set NS.NAME=VALUE` settings, in order: `NS` is a scheduler name or `blk`.
    pub settings: Vec<(String, String, String)>,
    /// Run seed (`--seed`).
    pub seed: u64,
    /// The kernel's `HZ`.
    pub hz: u32,
    /// Simulated CPUs.
    pub nr_cpus: u32,
    /// Report time, seconds since the epoch (`SOURCE_DATE_EPOCH` or the clock).
    pub epoch_secs: u64,
    /// CPU cost of submitting one I/O, ns (`--submit-ns`); `None` = the engine's
    /// default ([`default_submit_cost_ns`]).
    pub submit_ns: Option<u64>,
    /// Write the logs the jobs ask for (`write_lat_log`, ...). Off, the logs'
    /// effect on the statistics (fio's sampling windows) stays, but no file is
    /// written.
    pub write_logs: bool,
    /// The host (`--host`): its CPUs and costs, or the free host.
    pub host: host::HostProfile,
}

impl RunOptions {
    /// Options for a run on `device`: the job's own scheduler, no settings, seed 1,
    /// HZ 250, 8 CPUs, the free host with the engines' submission costs, logs
    /// written, report time 0 (the epoch). (The command line's default host is
    /// [`host::DEFAULT_HOST`]; [`RunOptions::with_host`] sets one.)
    pub fn new(device: Profile) -> RunOptions {
        RunOptions {
            device,
            scheduler: None,
            settings: Vec::new(),
            seed: 1,
            hz: 250,
            nr_cpus: 8,
            epoch_secs: 0,
            submit_ns: None,
            write_logs: true,
            host: host::host("free").expect("the free host is built in"),
        }
    }

    /// The same options on `host`, with its CPU count.
    pub fn with_host(mut self, host: host::HostProfile) -> RunOptions {
        if let Some(h) = &host.cpus {
            self.nr_cpus = h.nr_cpus;
        }
        self.host = host;
        self
    }
}

/// What one I/O submission costs the job's thread by default, ns: the system call
/// and the block layer's submission path on a current x86 server, the order of
/// magnitude fio reports as `slat` for asynchronous engines (io_uring cheapest,
/// POSIX AIO, which runs on helper threads, dearest). It matters because the kernel
/// runs the hardware queue (kblockd) while a job is still submitting: with free
/// submissions, a job's whole queue depth would reach the scheduler at one instant.
pub fn default_submit_cost_ns(engine: crate::fio::IoEngine) -> u64 {
    use crate::fio::IoEngine as E;
    match engine {
        E::IoUring => 1_000,
        E::Libaio => 2_000,
        E::Posixaio => 4_000,
        // fio's own work per I/O, no system call: the x86-server host's
        // fio_io_ns, measured with fio's null engine (crates/host/profiles).
        E::Null => 220,
        E::Psync | E::Sync | E::Pvsync | E::Pvsync2 => 1_500,
    }
}

/// A host's CPU time per I/O before the block layer: fio's own work, the system call
/// and the engine's (what the submission item of the host model costs per I/O).
pub fn host_submit_ns(
    c: &host::profile::Costs,
    engine: crate::fio::IoEngine,
    fixedbufs: bool,
) -> u64 {
    c.fio_io_ns + c.syscall_ns + host::profile::engine_io_ns(c, engine.host_kind(), fixedbufs)
}

/// Errors that stop a run before it starts.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A job cannot run on this device or with these settings.
    #[error("{location}: {message}")]
    Job {
        /// Where the job was defined.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// A bad `--set` or scheduler choice.
    #[error("{0}")]
    Setting(String),
    /// Scheduler set-up failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A log file could not be created or written.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A trace (`read_iolog`) is malformed or does not fit the device.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    /// A `write_iolog` file could not be written.
    #[error("write_iolog {path}: {source}")]
    WriteIolog {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
}

/// The default run seed.
pub const DEFAULT_SEED: u64 = 0x1057_CED0;

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One fio job as resolved for the run: its clones and how it is reported.
struct Resolved {
    spec: JobSpec,
    groupid: u32,
    clones: std::ops::Range<usize>,
    /// A `read_iolog` job: the `rw` fio reports, from the log's directions.
    replay_rw: Option<&'static str>,
}

/// The plan of a run: what [`run`] will simulate.
pub struct Plan {
    /// The scheduler in use.
    pub scheduler: String,
    /// Job clones, ordered by start barrier.
    pub clones: Vec<JobConfig>,
    /// The log files the clones write (`write_lat_log`, ...), per clone in
    /// fio's order.
    pub logs: Vec<LogTarget>,
    /// Per clone: how its statistics sample bandwidth and IOPS, and the ioprio
    /// value its logs show.
    recording: Vec<(RecorderConfig, u16)>,
    jobs: Vec<Resolved>,
    sim: SimConfig,
    disk_name: String,
    /// Total virtual time if every job is time based, for progress display.
    pub expected_ns: Option<u64>,
    /// Total bytes to transfer if no job is time based, for progress display.
    pub expected_bytes: Option<u64>,
    /// Lines for the report's header about replayed iologs (what was skipped).
    pub replay_notes: Vec<String>,
    /// Per clone: the `write_iolog` file it records to, and the file name its
    /// lines name.
    pub write_iologs: Vec<Option<(String, String)>>,
}

fn job_err(spec: &JobSpec, message: impl Into<String>) -> RunError {
    RunError::Job {
        location: spec.source.to_string(),
        message: format!("job '{}': {}", spec.name, message.into()),
    }
}

/// Resolve fio's jobs against the device and options.
pub fn plan(input: &FioInput, opts: &RunOptions) -> Result<Plan, RunError> {
    let resolved = resolve_zone_units(input, &opts.device)?;
    let input = &resolved;
    let info = opts.device.build().info().clone();
    let capacity = info.capacity_sectors * 512;
    let scheduler = choose_scheduler(input, opts, &info)?;
    let mut sim = sim_config(opts, &info, &scheduler)?;
    null_engine_setup(input, opts, &mut sim)?;
    check_io_modes(input)?;
    let mut disk_name = None::<String>;
    let mut clones = Vec::new();
    let mut jobs = Vec::new();
    let mut barrier = 0u32;
    let mut groupid = 0u32;
    let mut cgroups = blk::CgroupTable::new();
    // Weights set by `cgroup_weight=`, with the job that set them.
    let mut weight_set: std::collections::HashMap<CgroupId, (u32, String)> =
        std::collections::HashMap::new();
    let mut cpu_rr = 0u32;
    let mut expected_ns = Some(0u64);
    let mut expected_bytes = Some(0u64);
    let mut group_ns = 0u64;
    let mut log_targets = Vec::new();
    let mut recording = Vec::new();
    let mut replay_notes = Vec::new();
    let mut write_iologs = Vec::new();
    let layout = files::lay_out(&input.jobs, capacity, opts.seed)
        .map_err(|(k, e)| job_err(&input.jobs[k], e))?;
    for (k, spec) in input.jobs.iter().enumerate() {
        let merged;
        let read = match (&spec.iolog.read, &spec.iolog.merge_file) {
            (Some(files), Some(out)) => {
                // fio merges the captures before the job runs, then replays the
                // merged file.
                let inputs: Vec<std::path::PathBuf> = files.iter().map(Into::into).collect();
                crate::trace::blktrace::merge(
                    &inputs,
                    &spec.iolog.merge_scalars,
                    &spec.iolog.merge_iters,
                    std::path::Path::new(out),
                )?;
                merged = Some(vec![out.clone()]);
                &merged
            }
            (None, Some(_)) => {
                return Err(job_err(
                    spec,
                    "merge_blktrace_file needs read_iolog (the captures to merge)",
                ))
            }
            _ => &spec.iolog.read,
        };
        let replays = match read {
            None => Vec::new(),
            Some(files) => files
                .iter()
                .take(spec.numjobs as usize)
                .map(|f| {
                    crate::trace::replay::fio_replay(
                        std::path::Path::new(f),
                        spec.iolog.replay,
                        capacity,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        if !replays.is_empty() && (spec.rate.is_some() || spec.thinktime.is_some()) {
            return Err(job_err(
                spec,
                "rate or thinktime with read_iolog is not modeled yet (the replay's timing comes from the log)",
            ));
        }
        if !spec.direct && replays.iter().any(|r| r.per_dir[2] > 0) {
            return Err(job_err(
                spec,
                "read_iolog with trims and buffered I/O is not modeled yet; use direct=1",
            ));
        }
        for (r, f) in replays.iter().zip(read.iter().flatten()) {
            if !r.unknown.is_empty() {
                replay_notes.push(format!(
                    "iosched: job '{}': read_iolog {f}: skipped entries: {}",
                    spec.name,
                    crate::trace::unknown_line(&r.unknown)
                ));
            }
        }
        note_device(spec, &mut disk_name)?;
        if k > 0 && spec.stonewall {
            barrier += 1;
            expected_ns = expected_ns.map(|t| t + group_ns);
            group_ns = 0;
        }
        if k > 0 && (spec.stonewall || spec.new_group) {
            groupid += 1;
        }
        check_alignment(spec)?;
        // Per clone: each file's region (start on the device, length).
        let clone_regions = |c: u32| -> Result<Vec<(u64, u64)>, RunError> {
            let exts = &layout[k][c as usize];
            let off = spec.offset.saturating_add(
                files::subjob_number(c, spec.numjobs).saturating_mul(spec.files.offset_increment),
            );
            exts.iter()
                .map(|ext| {
                    let r = region(spec, *ext, off, &info.name, exts.len() as u64)
                        .map(|size| (ext.start + off, size))?;
                    zbd_region(spec, r, &opts.device)
                })
                .collect()
        };
        let total = |r: &[(u64, u64)]| r.iter().map(|x| x.1).sum::<u64>();
        let size = total(&clone_regions(0)?);
        check_region(spec, size, &sim)?;
        let cgroup = job_cgroup(spec, &mut cgroups, &mut weight_set)?;
        let ioprio = job_ioprio(spec);
        let time_based = spec.time_based && spec.runtime_ns.is_some() && replays.is_empty();
        let job_ns = spec
            .start_delay_ns
            .saturating_add(spec.ramp_time_ns)
            .saturating_add(spec.runtime_ns.unwrap_or(0));
        group_ns = group_ns.max(job_ns);
        if !replays.is_empty() {
            expected_ns = None;
            let total: u64 = (0..spec.numjobs as usize)
                .map(|c| replays[c % replays.len()].bytes)
                .sum();
            expected_bytes = expected_bytes.map(|b| b.saturating_add(total));
        } else if !time_based {
            expected_ns = None;
            expected_bytes =
                expected_bytes.map(|b| b.saturating_add(size.saturating_mul(spec.numjobs as u64)));
        } else {
            expected_bytes = None;
        }
        let first = clones.len();
        if first as u64 + spec.numjobs as u64 > crate::fio::MAX_JOBS {
            return Err(job_err(
                spec,
                format!(
                    "numjobs={} makes more than {} jobs in the run (fio's REAL_MAX_JOBS)",
                    spec.numjobs,
                    crate::fio::MAX_JOBS
                ),
            ));
        }
        // fio's td->ioprio: set when the job sets a class or a level; a level
        // alone is best effort.
        let log_prio = match (spec.prioclass, spec.prio) {
            (None, None) => 0,
            (c, l) => {
                let class = match c.unwrap_or(0) {
                    0 => 2,
                    c => c as u16,
                };
                (class << 13) | l.unwrap_or(0) as u16
            }
        };
        let lo = &spec.logs;
        // bwavgtime / iopsavgtime, and with a bandwidth (IOPS) log, log_avg_msec
        // (0: one sample per I/O), set how the statistics sample.
        let (bw_avg_ms, bw_log_ms) = lo.windows(true);
        let (iops_avg_ms, iops_log_ms) = lo.windows(false);
        let recorder = RecorderConfig {
            record_slat: spec.ioengine.is_async(),
            bw_avg_ms,
            iops_avg_ms,
            prios: spec
                .cmdprio
                .as_ref()
                .map(|cp| prio_config(cp, log_prio, spec)),
        };
        let params = |avg_msec| LogParams {
            avg_msec,
            window_value: lo.window_value,
            offset: lo.offset,
            prio: lo.prio,
            issue_time: lo.issue_time,
        };
        for c in 0..spec.numjobs {
            let idx = clones.len() as u32;
            let regions = clone_regions(c)?;
            let (offset, size) = regions[0];
            recording.push((recorder.clone(), log_prio));
            let mut target = |kind, prefix: &Option<String>, off: bool| {
                let avg = match kind {
                    LogKind::Bw => bw_log_ms,
                    LogKind::Iops => iops_log_ms,
                    _ => lo.avg_msec,
                };
                if let (Some(p), false) = (prefix, off) {
                    log_targets.push(LogTarget {
                        clone: idx as usize,
                        kind,
                        params: params(avg),
                        path: log_file_name(p, kind, idx as usize + 1, lo.per_job),
                    });
                }
            };
            // fio's order: lat, slat, clat, then bw, then iops.
            target(LogKind::Lat, &lo.lat_prefix, lo.disable_lat);
            target(LogKind::Slat, &lo.lat_prefix, lo.disable_slat);
            target(LogKind::Clat, &lo.lat_prefix, lo.disable_clat);
            target(LogKind::Bw, &lo.bw_prefix, false);
            target(LogKind::Iops, &lo.iops_prefix, false);
            let (cpu, cpus_allowed) = clone_cpus(spec, c, opts.nr_cpus, &mut cpu_rr);
            let mut cfg = clone_config(
                spec,
                opts,
                Placement {
                    job_index: k as u32,
                    idx,
                    group: barrier,
                    offset,
                    size,
                    cpu,
                    cpus_allowed,
                    cgroup,
                    ioprio,
                    time_based,
                },
            );
            if regions.len() > 1 {
                if let Some(o) = spec
                    .files
                    .openfiles
                    .filter(|&o| (o as usize) < regions.len())
                {
                    return Err(job_err(
                        spec,
                        format!(
                            "openfiles={o} with {} files (fio then closes a file when its I/O \
                             is done and opens the next) is not modeled yet; leave openfiles at \
                             the number of files",
                            regions.len()
                        ),
                    ));
                }
                if spec.verify.is_some() {
                    return Err(job_err(
                        spec,
                        "verify with several files per job is not modeled yet",
                    ));
                }
                cfg.io_limit = spec
                    .io_size
                    .unwrap_or(total(&regions))
                    .saturating_mul(u64::from(spec.loops));
                cfg.files = regions;
                cfg.file_service = spec.files.service;
            }
            let replay = (!replays.is_empty()).then(|| &replays[c as usize % replays.len()]);
            write_iologs.push(spec.iolog.write.as_ref().map(|w| {
                let name = spec
                    .filename
                    .clone()
                    .unwrap_or_else(|| format!("/dev/{}", opts.device.name));
                (w.clone(), name)
            }));
            if let Some(r) = replay {
                // A replay's I/O ends with its log; fio probes a blktrace's
                // depth unless `iodepth` is given.
                cfg.replay = Some(r.source.clone());
                // fio issues a replayed `sync` as an fsync io_u.
                cfg.sync_report = crate::job::SyncReport::Fsync;
                cfg.io_limit = u64::MAX;
                if let Some(d) = r.probed_depth {
                    if !spec.options.iter().any(|(k, _)| k == "iodepth") {
                        cfg.depth = spec.ioengine.max_in_flight(d.max(1));
                    }
                }
            }
            clones.push(cfg);
        }
        let replay_rw = (!replays.is_empty()).then(|| {
            let any = |d: usize| replays.iter().any(|r| r.per_dir[d] > 0);
            // fio's `ddir_str` of the td_ddir read_iolog sets.
            match (any(0), any(1), any(2)) {
                (true, true, _) => "rw",
                (true, false, _) => "read",
                (false, true, true) => "trimwrite",
                (false, true, false) => "write",
                (false, false, true) => "trim",
                _ => "read",
            }
        });
        jobs.push(Resolved {
            spec: spec.clone(),
            groupid,
            clones: first..clones.len(),
            replay_rw,
        });
    }
    let expected_ns = expected_ns.map(|t| t + group_ns);
    resolve_control(&jobs, &mut clones)?;
    sim.cgroups = cgroups;
    Ok(Plan {
        scheduler,
        clones,
        logs: log_targets,
        recording,
        jobs,
        sim,
        disk_name: disk_name.unwrap_or_else(|| opts.device.name.to_string()),
        expected_ns,
        expected_bytes,
        replay_notes,
        write_iologs,
    })
}

/// The priorities a cmdprio job's statistics keep apart, in fio's order
/// (cmdprio.c `init_cmdprio_values` / `assign_clat_prio_index`): the job's
/// own at index 0, then each new one as its options list it.
fn prio_config(cp: &crate::fio::CmdPrio, default: u16, spec: &JobSpec) -> crate::stats::PrioConfig {
    let order = |d: usize| {
        let mut v = vec![default];
        for e in cp.dirs.get(d).into_iter().flatten() {
            if !v.contains(&e.value()) {
                v.push(e.value());
            }
        }
        v
    };
    crate::stats::PrioConfig {
        order: [order(0), order(1), vec![default]],
        default,
        use_lat: spec.report.lat_percentiles,
    }
}

/// The CPU clone `c` starts on (`cpus_allowed` in turn, else the next CPU
/// round-robin) and the CPUs the kernel may run its thread on: its one CPU
/// with `split`, else the whole set (or every CPU).
fn clone_cpus(spec: &JobSpec, c: u32, nr_cpus: u32, cpu_rr: &mut u32) -> (u32, Vec<u32>) {
    let nr_cpus = nr_cpus.max(1);
    let cpu = match &spec.cpus_allowed {
        Some(list) if !list.is_empty() => list[c as usize % list.len()] % nr_cpus,
        _ => {
            let cpu = *cpu_rr % nr_cpus;
            *cpu_rr += 1;
            cpu
        }
    };
    // Where the kernel may run the clone's thread: its one CPU with
    // `split`, else the whole set (or every CPU).
    let cpus_allowed = match &spec.cpus_allowed {
        Some(list) if !list.is_empty() && !spec.cpus_allowed_split => {
            let mut v: Vec<u32> = list.iter().map(|c| c % nr_cpus).collect();
            v.dedup();
            v
        }
        Some(list) if !list.is_empty() => vec![cpu],
        _ => (0..nr_cpus).collect(),
    };
    (cpu, cpus_allowed)
}

/// Where one clone sits: its job, index, group, region, CPUs, cgroup and
/// priority, as the plan resolved them.
struct Placement {
    job_index: u32,
    idx: u32,
    group: u32,
    offset: u64,
    size: u64,
    cpu: u32,
    cpus_allowed: Vec<u32>,
    cgroup: CgroupId,
    ioprio: IoPrio,
    time_based: bool,
}

/// One clone of `spec` as the simulator runs it: fio's options resolved
/// (depth, batching, fsync, page-cache advice, submission cost, verification).
/// How fio reports a job's syncs: its own `fsync`/`fdatasync` io_us are
/// reported, the kernel's (`sync=1` alone, inside each write) are not.
fn sync_report(spec: &JobSpec) -> crate::job::SyncReport {
    use crate::job::SyncReport;
    if spec.fsync_blocks > 0 {
        SyncReport::Fsync
    } else if spec.fdatasync_blocks > 0 {
        SyncReport::Fdatasync
    } else {
        SyncReport::Hidden
    }
}

fn clone_config(spec: &JobSpec, opts: &RunOptions, p: Placement) -> JobConfig {
    let Placement {
        job_index,
        idx,
        group,
        offset,
        size,
        cpu,
        cpus_allowed,
        cgroup,
        ioprio,
        time_based,
    } = p;
    let base = spec.randseed.unwrap_or(0);
    JobConfig {
        cpus_allowed,
        engine: spec.ioengine,
        fixedbufs: spec.fixedbufs && spec.ioengine == crate::fio::IoEngine::IoUring,
        name: spec.name.clone(),
        job_index,
        group,
        rw: spec.rw,
        zbd: zbd_config(spec, &opts.device, offset, size),
        rwmixread: spec.rwmixread,
        bs: [spec.bs.read, spec.bs.write, spec.bs.trim],
        bs_dist: spec.bs_dist.clone(),
        blockalign: spec.blockalign,
        seq_nr: spec.rw_seq_nr,
        seq_add: spec.rw_seq_add,
        offset,
        size,
        // fio: `io_size` bytes (default: the region) per loop.
        io_limit: spec
            .io_size
            .unwrap_or(size)
            .saturating_mul(u64::from(spec.loops)),
        number_ios: spec.number_ios,
        runtime: spec.runtime_ns,
        time_based,
        ramp_time: spec.ramp_time_ns,
        start_delay: spec.start_delay_ns,
        // Offloaded, every worker has an I/O in flight, even with a
        // synchronous engine (fio caps the depth at 1 only inline).
        depth: if spec.offload {
            spec.iodepth.max(1)
        } else {
            spec.ioengine.max_in_flight(spec.iodepth)
        },
        async_engine: spec.ioengine.is_async(),
        cpu,
        pid: 1000 + idx,
        ioprio,
        cgroup,
        seed: splitmix(
            opts.seed ^ splitmix(base) ^ (idx as u64).wrapping_mul(0xA24B_AED4_963E_E407),
        ),
        norandommap: spec.norandommap,
        random_dist: spec.random_distribution.clone(),
        batch_submit: if spec.ioengine.is_async() && !spec.offload {
            spec.iodepth_batch_submit.max(1)
        } else {
            1
        },
        // Offloaded, each worker submits its one I/O alone.
        plugs: !spec.offload
            && matches!(
                spec.ioengine,
                crate::fio::IoEngine::Libaio | crate::fio::IoEngine::IoUring
            ),
        offload: spec.offload,
        phase_clock: spec.verify.as_ref().map(|_| Default::default()),
        fsync_blocks: {
            let n = match (spec.fsync_blocks, spec.fdatasync_blocks) {
                (0, d) => d,
                (f, 0) => f,
                (f, d) => f.min(d),
            };
            // O_SYNC with a synchronous engine: generic_write_sync flushes
            // after every write.
            if spec.sync && !spec.ioengine.is_async() {
                1
            } else {
                n
            }
        },
        end_fsync: spec.end_fsync || spec.fsync_on_close,
        sync_report: sync_report(spec),
        fua_writes: spec.sync,
        buffered: !spec.direct && spec.ioengine != IoEngine::Null,
        invalidate: spec.invalidate,
        // fio's td_io_open_file: posix_fadvise on the job's region.
        fadvise: match spec.fadvise_hint.as_str() {
            "0" => Advice::Normal,
            "random" => Advice::Random,
            "sequential" => Advice::Sequential,
            _ if spec.rw.is_random() => Advice::Random,
            _ => Advice::Sequential,
        },
        submit_cost_ns: match &opts.host.cpus {
            // The null engine: fio's own work only.
            Some(h) if spec.ioengine == IoEngine::Null => h.costs.fio_io_ns,
            // On a host model the thread's work before the lock (fio, the
            // system call, the engine) is what fio sees as slat.
            Some(h) => host_submit_ns(&h.costs, spec.ioengine, spec.fixedbufs),
            None => opts
                .submit_ns
                .unwrap_or_else(|| default_submit_cost_ns(spec.ioengine)),
        },
        thinktime: spec.thinktime,
        rate: spec.rate,
        verify: spec.verify.as_ref().map(|v| crate::job::VerifyConfig {
            pass_bytes: spec.io_size.unwrap_or(size),
            passes: spec.loops.max(1),
            backlog: v.backlog,
            batch: if v.backlog_batch > 0 {
                v.backlog_batch
            } else {
                v.backlog
            },
            sorted: spec.norandommap
                || spec.rw_seq_add != 0
                || spec.rw_seq_nr > 1
                || spec.io_size.is_some_and(|n| n > size),
            only: v.only,
        }),
        // A replaying clone gets its source after this (see `plan`).
        replay: None,
        // Resolved once every clone is known (`resolve_control`).
        control: crate::job::Control::default(),
        files: Vec::new(),
        file_service: Default::default(),
        cmdprio: spec.cmdprio.clone().map(std::sync::Arc::new),
    }
}

/// The ties between clones (`wait_for`, `exitall`, `flow`) and each clone's
/// `rate_min`, once every clone is known.
fn resolve_control(jobs: &[Resolved], clones: &mut [JobConfig]) -> Result<(), RunError> {
    use crate::job::{Flow, FlowShare, RateMin};
    // fio's exitall is one switch for the whole run (options.c
    // `str_exitall_cb` sets `exitall_on_terminate`).
    let exitall = jobs.iter().any(|r| r.spec.control.exitall);
    // flow.c `flow_init_job` runs as each job is added: every job's weight
    // is in its flow from the start.
    let mut flows: Vec<(u32, u64, u32, std::sync::Arc<Flow>)> = Vec::new();
    for r in jobs {
        let c = &r.spec.control;
        if c.flow == 0 {
            continue;
        }
        let barrier = clones[r.clones.start].group;
        let weight = c.flow as u64 * r.clones.len() as u64;
        match flows.iter_mut().find(|f| f.0 == c.flow_id) {
            Some(f) if f.2 != barrier => {
                return Err(job_err(
                    &r.spec,
                    format!(
                        "flow_id={} is shared with a job behind another stonewall: fio counts \
                         every job's flow weight from the start, so the jobs that run first \
                         would wait for a share that jobs not started yet hold (fio spins until \
                         the runtime ends); give each stonewall group its own flow_id",
                        c.flow_id
                    ),
                ))
            }
            Some(f) => f.1 += weight,
            None => flows.push((
                c.flow_id,
                weight,
                barrier,
                std::sync::Arc::new(Flow::new(0)),
            )),
        }
    }
    let steady = steadystate_roles(jobs)?;
    let flows: Vec<(u32, std::sync::Arc<Flow>)> = flows
        .into_iter()
        .map(|(id, w, _, _)| (id, std::sync::Arc::new(Flow::new(w))))
        .collect();
    for r in jobs {
        let c = &r.spec.control;
        let mut wait_for = Vec::new();
        if let Some(name) = &c.wait_for {
            for o in jobs
                .iter()
                .filter(|o| o.spec.name == *name && o.spec.name != r.spec.name)
            {
                if clones[o.clones.start].group > clones[r.clones.start].group {
                    return Err(job_err(
                        &r.spec,
                        format!(
                            "wait_for={name} names a job behind a later stonewall; in fio \
                             this job would start only after that stonewall is reached, \
                             which iosched does not model: move the job after '{name}'"
                        ),
                    ));
                }
                wait_for.extend(o.clones.clone());
            }
        }
        let rate_min =
            (c.rate_min.iter().chain(&c.rate_iops_min).any(|&n| n > 0)).then_some(RateMin {
                bps: c.rate_min,
                iops: c.rate_iops_min,
                cycle_ms: c.rate_cycle_ms,
            });
        let flow = (c.flow > 0).then(|| FlowShare {
            flow: flows
                .iter()
                .find(|f| f.0 == c.flow_id)
                .map(|f| f.1.clone())
                .expect("every flow_id in use has its flow"),
            weight: c.flow as u64,
            sleep_ns: c.flow_sleep_us * 1_000,
        });
        for (i, cfg) in clones[r.clones.clone()].iter_mut().enumerate() {
            let steadystate = c.steadystate.map(|spec| crate::job::SteadyState {
                spec,
                group_reporting: r.spec.group_reporting,
                holder: steady.contains(&(r.clones.start + i)),
            });
            cfg.control = crate::job::Control {
                steadystate,
                wait_for: wait_for.clone(),
                groupid: r.groupid,
                exitall,
                exitall_on_error: c.exitall_on_error,
                exit_what: c.exit_what,
                flow: flow.clone(),
                rate_min,
                latency: (c.latency_target_ns > 0).then_some(crate::job::LatencyTarget {
                    target_ns: c.latency_target_ns,
                    window_ns: c.latency_window_us * 1_000,
                    percentile: c.latency_percentile,
                    run: c.latency_run,
                }),
            };
        }
    }
    Ok(())
}

/// The clones that keep a steady-state ring (steadystate.c
/// `steadystate_setup`): every clone without `group_reporting`, else the
/// last clone of each reporting group. Refuses what fio's
/// `td_steadystate_init` and `fixup_options` refuse: steady-state settings
/// that differ within a reporting group, check intervals that differ
/// between jobs.
fn steadystate_roles(jobs: &[Resolved]) -> Result<Vec<usize>, RunError> {
    let interval = jobs[0].spec.control.ss_check_interval_us;
    for r in jobs {
        let c = &r.spec.control;
        if c.ss_check_interval_us != interval {
            return Err(job_err(
                &r.spec,
                format!(
                    "conflicting steadystate_check_interval: {interval}us and {}us, must be \
                     the same in every job",
                    c.ss_check_interval_us
                ),
            ));
        }
        let first = jobs.iter().find(|o| o.groupid == r.groupid).unwrap_or(r);
        if first.spec.control.steadystate != c.steadystate {
            return Err(job_err(
                &r.spec,
                "job rejected: steadystate options must be consistent within reporting groups",
            ));
        }
    }
    let mut holders = Vec::new();
    let mut last: Option<(u32, usize)> = None;
    for r in jobs.iter().filter(|r| r.spec.control.steadystate.is_some()) {
        for k in r.clones.clone() {
            if !r.spec.group_reporting {
                holders.push(k);
                continue;
            }
            if let Some((g, prev)) = last {
                if g != r.groupid {
                    holders.push(prev);
                }
            }
            last = Some((r.groupid, k));
        }
    }
    holders.extend(last.map(|(_, k)| k));
    Ok(holders)
}

/// A device filename (under `/dev/`) names the simulated device: the disk
/// statistics' name. Two different ones cannot be simulated.
fn note_device(spec: &JobSpec, disk_name: &mut Option<String>) -> Result<(), RunError> {
    if let Some(f) = spec.filename.as_ref().filter(|f| f.starts_with("/dev/")) {
        let chr = if spec.ioengine == crate::fio::IoEngine::Null {
            &[][..]
        } else {
            &[
                "null", "zero", "full", "random", "urandom", "mem", "kmem", "port",
            ][..]
        };
        let base = f.trim_start_matches("/dev/");
        let tty = spec.ioengine != crate::fio::IoEngine::Null
            && (base.starts_with("tty") || base.starts_with("pts/"));
        if chr.contains(&base) || tty {
            return Err(job_err(
                spec,
                format!(
                    "filename={f} is a character device: its reads and writes never reach a \
                     block device or an I/O scheduler, so there is nothing to simulate \
                     (use the simulated block device, or ioengine=null for fio's own cost)"
                ),
            ));
        }
        let name = f.rsplit('/').next().unwrap_or(f).to_string();
        match disk_name {
            Some(d) if *d != name => {
                return Err(job_err(
                    spec,
                    format!(
                        "filename={f} differs from an earlier job's; iosched simulates one device"
                    ),
                ))
            }
            _ => *disk_name = Some(name),
        }
    }
    Ok(())
}

/// Direct I/O's alignment: block sizes and the offset in 512-byte sectors.
fn check_alignment(spec: &JobSpec) -> Result<(), RunError> {
    for (i, (d, bs)) in [("read", spec.bs.read), ("write", spec.bs.write)]
        .into_iter()
        .enumerate()
    {
        let sizes: Vec<u64> = match &spec.bs_dist[i] {
            None => vec![bs],
            Some(crate::fio::BsDist::Range { min, max }) => vec![*min, *max],
            Some(crate::fio::BsDist::Split(t)) => t.iter().map(|e| e.0).collect(),
        };
        for bs in sizes {
            if bs % 512 != 0 {
                return Err(job_err(spec, format!("{d} block size {bs} is not a multiple of 512 bytes, which direct I/O requires")));
            }
        }
    }
    if !spec.offset.is_multiple_of(512) {
        return Err(job_err(
            spec,
            format!("offset={} is not a multiple of 512 bytes", spec.offset),
        ));
    }
    Ok(())
}

/// What the job's region (its first clone's `size` bytes) must allow: its
/// distribution's blocks and zones, one block, and for buffered I/O a block
/// the page cache can hold.
fn check_region(spec: &JobSpec, size: u64, sim: &SimConfig) -> Result<(), RunError> {
    if let crate::fio::RandomDist::Sequence { blocks, .. } = &spec.random_distribution {
        let max = size / spec.bs.min().max(1);
        if let Some(b) = blocks.iter().find(|&&b| b >= max) {
            return Err(job_err(
                spec,
                format!("sequence block {b} is out of bounds (the region has {max} blocks)"),
            ));
        }
    }
    if let crate::fio::RandomDist::ZonedAbs(z) = &spec.random_distribution {
        for (d, zones) in z.iter().enumerate().take(2) {
            let total: u64 = zones.iter().map(|z| z.1).sum();
            if total > size {
                return Err(job_err(
                    spec,
                    format!(
                        "zoned_abs {} zones add up to {total} bytes, more than the region's {size}",
                        ["read", "write"][d]
                    ),
                ));
            }
        }
    }
    let min_bs = match spec.rw {
        RwMode::Read | RwMode::RandRead => spec.bs.read,
        RwMode::Write | RwMode::RandWrite => spec.bs.write,
        _ => spec.bs.read.max(spec.bs.write),
    };
    if size < min_bs {
        return Err(job_err(
            spec,
            format!("size={size} is smaller than the block size {min_bs}"),
        ));
    }
    if !spec.direct {
        let max_bs = spec.bs_dist[..2]
            .iter()
            .zip([spec.bs.read, spec.bs.write])
            .map(|(d, bs)| d.as_ref().map_or(bs, |d| d.max()))
            .max()
            .unwrap_or(0);
        if max_bs * 4 > sim.vm.mem_mb << 20 {
            return Err(job_err(
                spec,
                format!(
                    "block size {max_bs} is more than a quarter of the simulated memory \
                     (vm.mem_mb={}); the page cache could not hold a buffered I/O",
                    sim.vm.mem_mb
                ),
            ));
        }
    }
    Ok(())
}

/// The job's cgroup, interned, with its `cgroup_weight` (which jobs sharing
/// the cgroup must agree on).
fn job_cgroup(
    spec: &JobSpec,
    cgroups: &mut blk::CgroupTable,
    weight_set: &mut std::collections::HashMap<CgroupId, (u32, String)>,
) -> Result<CgroupId, RunError> {
    let cgroup = match &spec.cgroup {
        None => CgroupId(0),
        Some(c) => cgroups.intern(c),
    };
    if let Some(w) = spec.cgroup_weight {
        // fio writes the weight into the job's cgroup; with BFQ that is the
        // group weight (io.bfq.weight).
        if cgroup == CgroupId(0) {
            return Err(job_err(
                spec,
                "cgroup_weight= needs cgroup= (the root cgroup has no weight)",
            ));
        }
        if let Some((prev, by)) = weight_set.get(&cgroup) {
            if *prev != w {
                return Err(job_err(
                    spec,
                    format!(
                        "cgroup_weight={w} differs from cgroup_weight={prev} set by job '{by}' for the same cgroup"
                    ),
                ));
            }
        }
        weight_set.insert(cgroup, (w, spec.name.clone()));
        cgroups
            .set_weight(cgroup, w as u64)
            .map_err(|e| job_err(spec, e.to_string()))?;
    }
    Ok(cgroup)
}

/// The job's I/O priority (`prioclass`, `prio`), as `ioprio_value` makes it.
fn job_ioprio(spec: &JobSpec) -> IoPrio {
    IoPrio {
        class: match (spec.prioclass, spec.prio) {
            (Some(c), _) => IoClass::from_number(c).unwrap_or_default(),
            // ioprio_value() with class 0 and a level: the kernel treats a level
            // without a class as best effort.
            (None, Some(_)) => IoClass::Be,
            (None, None) => IoClass::None,
        },
        level: spec.prio.unwrap_or(4),
    }
}

/// The scheduler: the command line's, else the jobs' `ioscheduler` (which
/// must agree), else the kernel's default for the device.
fn choose_scheduler(
    input: &FioInput,
    opts: &RunOptions,
    info: &devices::DeviceInfo,
) -> Result<String, RunError> {
    let mut from_jobs: Option<&str> = None;
    for j in &input.jobs {
        if let Some(s) = j.ioscheduler.as_deref() {
            match from_jobs {
                Some(prev) if prev != s => {
                    return Err(job_err(
                        j,
                        format!("ioscheduler={s} differs from an earlier job's ioscheduler={prev}; iosched simulates one device with one scheduler"),
                    ))
                }
                _ => from_jobs = Some(s),
            }
        }
    }
    let scheduler = opts
        .scheduler
        .clone()
        .or(from_jobs.map(str::to_string))
        .unwrap_or_else(|| info.default_scheduler.to_string());
    if !blk::elevator::SCHEDULERS
        .iter()
        .any(|s| s.name == scheduler)
    {
        return Err(RunError::Setting(
            blk::elevator::UnknownScheduler(scheduler).to_string(),
        ));
    }
    Ok(scheduler)
}

/// The settings for driving the block layer without jobs (the real-time emulator,
/// `iosched serve`): the scheduler named in `opts` (else the device's default, as
/// the kernel attaches), every `--set` applied as for a run. The host is the free
/// one: the real machine's CPUs do the work.
pub fn emulator_config(
    opts: &RunOptions,
    info: &devices::DeviceInfo,
) -> Result<SimConfig, RunError> {
    let scheduler = opts
        .scheduler
        .clone()
        .unwrap_or_else(|| info.default_scheduler.to_string());
    if !blk::elevator::SCHEDULERS
        .iter()
        .any(|s| s.name == scheduler)
    {
        return Err(RunError::Setting(
            blk::elevator::UnknownScheduler(scheduler).to_string(),
        ));
    }
    if opts.host.cpus.is_some() {
        return Err(RunError::Setting(format!(
            "host '{}': the emulator runs on the real host; only the free host applies",
            opts.host.name
        )));
    }
    sim_config(opts, info, &scheduler)
}

/// The simulation's settings: the host, then every `--set` (`blk.*`,
/// `vm.*`, the scheduler's tunables) in order.
fn sim_config(
    opts: &RunOptions,
    info: &devices::DeviceInfo,
    scheduler: &str,
) -> Result<SimConfig, RunError> {
    let mut sim = SimConfig {
        scheduler: scheduler.to_string(),
        hz: opts.hz,
        nr_cpus: opts.nr_cpus,
        host: opts.host.clone(),
        ..Default::default()
    };
    if let Some(h) = &opts.host.cpus {
        // The page copy is a host cost; `--set vm.page_copy_ns` still overrides it.
        sim.vm.page_copy_ns = h.costs.page_copy_ns;
        if opts.submit_ns.is_some() {
            return Err(RunError::Setting(format!(
                "--submit-ns applies to --host free only; host '{}' prices each step of a \
                 submission itself (change its costs with --host-file)",
                opts.host.name
            )));
        }
    }
    for (ns, name, value) in &opts.settings {
        if ns == "blk" {
            apply_blk_setting(&mut sim, info, name, value)?;
        } else if ns == "vm" {
            apply_vm_setting(&mut sim, name, value)?;
        } else if *ns == scheduler {
            sim.tunables.push((name.clone(), value.clone()));
        } else {
            return Err(RunError::Setting(format!(
                "--set {ns}.{name}={value}: the run uses scheduler '{scheduler}', not '{ns}'"
            )));
        }
    }
    Ok(sim)
}

/// One page cache is shared by every job of the run; direct I/O to a range
/// with cached pages writes them back and invalidates them first
/// (`kiocb_invalidate_pages`), which is not modeled: no mixing. Buffered
/// writeback is not attributed to cgroups either.
fn check_io_modes(input: &FioInput) -> Result<(), RunError> {
    let block_jobs = || input.jobs.iter().filter(|j| j.ioengine != IoEngine::Null);
    if let (Some(d), Some(b)) = (
        block_jobs().find(|j| j.direct),
        block_jobs().find(|j| !j.direct),
    ) {
        return Err(job_err(
            b,
            format!(
                "buffered I/O in a run that also has direct I/O (job '{}') is not modeled; \
                 make every job direct=1 or every job buffered",
                d.name
            ),
        ));
    }
    if let Some(j) = block_jobs().find(|j| !j.direct && j.cgroup.is_some()) {
        return Err(job_err(
            j,
            "cgroup= with buffered I/O (cgroup writeback attribution) is not modeled; use direct=1",
        ));
    }
    Ok(())
}

/// The size of a clone's region in one of its `nfiles` files (or the
/// device): `size` (shared out among the files, as fio gives each
/// `size / nrfiles`), a percentage of what follows `offset`, or all of it
/// (`fill_device`, no size); `offset` is bytes into the file.
/// fio's `zbd_verify_sizes` for `zonemode=zbd`: the device must be zoned, and
/// the region (start, length in bytes) is cut to whole zones — its start
/// rounded up, its end down — so that sequential writes begin at a zone's
/// write pointer on a fresh device.
fn zbd_region(spec: &JobSpec, r: (u64, u64), dev: &Profile) -> Result<(u64, u64), RunError> {
    if !spec.zonemode_zbd {
        return Ok(r);
    }
    let Some(g) = dev.zoned else {
        return Err(job_err(
            spec,
            format!(
                "zonemode=zbd: device '{}' is not a zoned block device",
                dev.name
            ),
        ));
    };
    let zone = g.zone_sectors * 512;
    zbd_check(spec, &g).map_err(|m| job_err(spec, m))?;
    let start = r.0.div_ceil(zone) * zone;
    let end = (r.0 + r.1) / zone * zone;
    if end <= start {
        return Err(job_err(
            spec,
            format!(
                "zonemode=zbd: the I/O region ({} bytes at {}) holds no whole zone of {zone} bytes",
                r.1, r.0
            ),
        ));
    }
    Ok((start, end - start))
}

/// fio's `zbd_recalc_options_with_zone_granularity`: sizes and offsets given
/// in zones become bytes of the device's zone size (or `zonesize` on a
/// device without zones).
fn resolve_zone_units<'a>(
    input: &'a FioInput,
    dev: &Profile,
) -> Result<std::borrow::Cow<'a, FioInput>, RunError> {
    let in_zones =
        |z: &crate::fio::ZoneOptions| z.size_nz != 0 || z.offset_nz != 0 || z.io_size_nz != 0;
    if !input.jobs.iter().any(|spec| in_zones(&spec.zones)) {
        // The common case: nothing to resolve, no copy of the jobs.
        return Ok(std::borrow::Cow::Borrowed(input));
    }
    let mut out = input.clone();
    for spec in &mut out.jobs {
        let z = spec.zones.clone();
        if !in_zones(&z) {
            continue;
        }
        let zone = match (dev.zoned, z.zone_size) {
            (Some(g), _) => g.zone_sectors * 512,
            (None, n) if n > 0 => n,
            _ => {
                return Err(job_err(
                    spec,
                    "sizes or offsets in zones ('z') need a zoned device or zonesize".to_string(),
                ))
            }
        };
        if z.size_nz > 0 {
            spec.size = Some(crate::fio::SizeSpec::Bytes(z.size_nz.saturating_mul(zone)));
        }
        if z.offset_nz > 0 {
            spec.offset = z.offset_nz.saturating_mul(zone);
        }
        if z.io_size_nz > 0 {
            spec.io_size = Some(z.io_size_nz.saturating_mul(zone));
        }
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// fio's checks of the zoned options against the device (`parse_zone_info`,
/// `zbd_verify_sizes`, `zbd_verify_bs`, `zbd_setup_files`).
fn zbd_check(spec: &JobSpec, g: &devices::zoned::ZoneGeometry) -> Result<(), String> {
    let zone = g.zone_sectors * 512;
    let z = &spec.zones;
    if z.zone_size != 0 && z.zone_size != zone {
        return Err(format!(
            "zonemode=zbd: job parameter zonesize {} does not match disk zone size {zone}",
            z.zone_size
        ));
    }
    if !z.zone_skip.is_multiple_of(zone) {
        return Err(format!(
            "zonemode=zbd: zoneskip {} is not a multiple of the device zone size {zone}",
            z.zone_skip
        ));
    }
    if spec.rw.trims() && spec.bs.trim != zone {
        return Err(format!(
            "zonemode=zbd: trim block size {} is not the zone size {zone}",
            spec.bs.trim
        ));
    }
    let max = zbd_max_open(spec, g)?;
    if z.job_max_open_zones > 0 && max == 0 {
        return Err(
            "zonemode=zbd: 'job_max_open_zones' cannot be used without a global open zones limit"
                .to_string(),
        );
    }
    Ok(())
}

/// `zbd_set_max_open_zones`: the open-zone limit fio keeps to. Zoned devices
/// here are host-managed (SMR HM, ZNS), whose limit fio reads.
fn zbd_max_open(spec: &JobSpec, g: &devices::zoned::ZoneGeometry) -> Result<u32, String> {
    let user = spec.zones.max_open_zones;
    if spec.zones.ignore_zone_limits || g.max_open == 0 {
        return Ok(user);
    }
    if user == 0 {
        Ok(g.max_open)
    } else if user <= g.max_open {
        Ok(user)
    } else {
        Err(format!(
            "zonemode=zbd: specified max_open_zones ({user}) is larger than the device's maximum ({})",
            g.max_open
        ))
    }
}

/// The job's `zonemode=zbd` bookkeeping for its region (`offset`, `size`
/// bytes), if it has one on a zoned device.
fn zbd_config(
    spec: &JobSpec,
    dev: &Profile,
    offset: u64,
    size: u64,
) -> Option<crate::zbd::ZbdConfig> {
    if !spec.zonemode_zbd || !spec.files.more_names.is_empty() || spec.files.nrfiles > 1 {
        return None;
    }
    let g = dev.zoned?;
    Some(crate::zbd::ZbdConfig {
        zone_size: g.zone_sectors * 512,
        zone_capacity: g.zone_capacity * 512,
        nr_conv: g.nr_conv_zones as u64,
        file_offset: offset,
        io_size: size,
        max_open: zbd_max_open(spec, &g).ok()?,
        job_max_open: spec.zones.job_max_open_zones,
        read_beyond_wp: spec.zones.read_beyond_wp,
        random: spec.rw.is_random(),
        reset_threshold: spec.zones.reset_threshold,
        reset_frequency: spec.zones.reset_frequency,
        min_bs: [spec.bs.read, spec.bs.write, spec.bs.trim],
    })
}

fn region(
    spec: &JobSpec,
    file: files::Extent,
    offset: u64,
    dev: &str,
    nfiles: u64,
) -> Result<u64, RunError> {
    let what = if file.start == 0
        && spec
            .filename
            .as_deref()
            .is_none_or(|f| f.starts_with("/dev/"))
    {
        format!("device '{dev}'")
    } else {
        "its file".to_string()
    };
    if offset >= file.len {
        return Err(job_err(
            spec,
            format!(
                "offset={offset} is beyond the end of {what} ({} bytes)",
                file.len
            ),
        ));
    }
    let rest = file.len - offset;
    let size = match spec.size {
        _ if spec.files.fill_device => rest,
        None => rest,
        Some(SizeSpec::Bytes(b)) => b / nfiles.max(1),
        Some(SizeSpec::Percent(p)) => rest * p as u64 / 100 / 512 * 512,
    };
    if size > rest {
        return Err(job_err(spec, format!(
            "offset+size={} exceeds the capacity of {what} ({} bytes); use a smaller size or another --device",
            offset + size, file.len
        )));
    }
    Ok(size)
}

/// fio's null engine: its jobs never reach the block layer, so a run of
/// them is simulated on the free host, each I/O costing its thread fio's
/// own work (the host's `fio_io_ns`, or `--submit-ns`). Mixing them with
/// block-engine jobs, and what only a file can do (fsync, verification),
/// is refused.
fn null_engine_setup(
    input: &FioInput,
    opts: &RunOptions,
    sim: &mut SimConfig,
) -> Result<(), RunError> {
    let null = |j: &&JobSpec| j.ioengine == IoEngine::Null;
    let Some(first) = input.jobs.iter().find(null) else {
        return Ok(());
    };
    if let Some(b) = input.jobs.iter().find(|j| !null(j)) {
        return Err(job_err(
            b,
            format!(
                "ioengine={} in a run with ioengine=null jobs (job '{}') is not modeled; \
                 the null engine's jobs run apart from the block layer",
                b.ioengine.as_str(),
                first.name
            ),
        ));
    }
    for j in &input.jobs {
        if j.fsync_blocks > 0 || j.fdatasync_blocks > 0 || j.end_fsync || j.fsync_on_close {
            return Err(job_err(j, "fsync with ioengine=null is not modeled"));
        }
        if j.verify.is_some() {
            return Err(job_err(j, "verify with ioengine=null is not modeled"));
        }
    }
    let cost = match &opts.host.cpus {
        Some(h) => h.costs.fio_io_ns,
        None => opts
            .submit_ns
            .unwrap_or_else(|| default_submit_cost_ns(IoEngine::Null)),
    };
    if cost == 0 {
        return Err(job_err(
            first,
            "ioengine=null with free submissions would do all its I/O at one instant; \
             give --submit-ns a cost",
        ));
    }
    sim.host = host::host("free").expect("the free host is built in");
    Ok(())
}

/// Page-cache settings `--set vm.NAME=VALUE` knows, for error messages.
pub const VM_SETTINGS: &str = "dirty_ratio, dirty_background_ratio, dirty_expire_centisecs, \
     dirty_writeback_centisecs, mem_mb, page_copy_ns";

/// Apply one `--set vm.NAME=VALUE`: the page cache's settings for buffered I/O.
fn apply_vm_setting(sim: &mut SimConfig, name: &str, value: &str) -> Result<(), RunError> {
    let err = |why: &str| RunError::Setting(format!("--set vm.{name}={value}: {why}"));
    let uint = || -> Result<u64, RunError> {
        value
            .parse::<u64>()
            .map_err(|_| err("expected a non-negative integer"))
    };
    let vm = &mut sim.vm;
    match name {
        // proc_dointvec_minmax with 0..=100, as the kernel's dirty_ratio and
        // dirty_background_ratio tables.
        "dirty_ratio" | "dirty_background_ratio" => {
            let v = uint()?;
            if v > 100 {
                return Err(err("must be between 0 and 100 (percent)"));
            }
            if name == "dirty_ratio" {
                vm.dirty_ratio = v;
            } else {
                vm.dirty_background_ratio = v;
            }
        }
        "dirty_expire_centisecs" => vm.dirty_expire_centisecs = uint()?,
        "dirty_writeback_centisecs" => vm.dirty_writeback_centisecs = uint()?,
        // Not sysctls: the simulated memory and the CPU time of copying one page.
        "mem_mb" => {
            let v = uint()?;
            if v == 0 {
                return Err(err("must be at least 1"));
            }
            vm.mem_mb = v;
        }
        "page_copy_ns" => vm.page_copy_ns = uint()?,
        other => {
            return Err(RunError::Setting(format!(
                "--set vm.{other}: unknown page-cache setting (known: {VM_SETTINGS})"
            )))
        }
    }
    Ok(())
}

/// Block-layer settings `--set blk.NAME=VALUE` knows, for error messages.
pub const BLK_SETTINGS: &str =
    "nr_requests, nomerges, max_sectors_kb, flush_insert, nr_sched_batch, read_ahead_kb, rq_affinity";

/// Apply one `--set blk.NAME=VALUE`, validated as the kernel's sysfs store
/// functions validate it.
fn apply_blk_setting(
    sim: &mut SimConfig,
    info: &devices::DeviceInfo,
    name: &str,
    value: &str,
) -> Result<(), RunError> {
    let err = |why: &str| RunError::Setting(format!("--set blk.{name}={value}: {why}"));
    let uint = || -> Result<u32, RunError> {
        value
            .parse::<u32>()
            .map_err(|_| err("expected a non-negative integer"))
    };
    match name {
        "nr_requests" => {
            let v = uint()?;
            if v == 0 {
                return Err(err("must be at least 1"));
            }
            // queue_requests_store → blk_mq_update_nr_requests: scheduler tags grow
            // up to MAX_SCHED_RQ; without a scheduler the driver's tag set cannot
            // grow at all (blk_mq_tag_update_depth returns -EINVAL).
            if sim.scheduler == "none" && v > info.queue_depth {
                return Err(err(&format!(
                    "at most the device's queue depth ({}) without a scheduler: the kernel cannot grow the driver's tags",
                    info.queue_depth
                )));
            }
            if v > blk::mq::MAX_SCHED_RQ {
                return Err(err(&format!(
                    "at most {} (MAX_SCHED_RQ): the kernel does not grow scheduler tags beyond it",
                    blk::mq::MAX_SCHED_RQ
                )));
            }
            sim.nr_requests = Some(v);
        }
        "nomerges" => {
            // queue_nomerges_store: 0 all merges, 1 simple one-hit merges only,
            // 2 (or more) no merges.
            sim.nomerges = uint()?.min(2) as u8;
        }
        "max_sectors_kb" => {
            let v = uint()?;
            let hw_kb = info.max_hw_sectors / 2;
            // queue_max_sectors_store: at least a page, at most max_hw_sectors_kb.
            if v < 4 || v > hw_kb {
                return Err(err(&format!(
                    "must be between 4 and the device's max_hw_sectors_kb ({hw_kb})"
                )));
            }
            sim.max_sectors_kb = Some(v);
        }
        "flush_insert" => {
            sim.flush_insert = blk::mq::FlushInsert::from_name(value)
                .ok_or_else(|| err("expected 'head' (mainline) or 'tail' (v5.6-rc regression)"))?;
        }
        "read_ahead_kb" => {
            // queue_ra_store: any value; the bdi's ra_pages.
            sim.read_ahead_kb = uint()?;
        }
        "nr_sched_batch" => {
            let v = uint()?;
            if v == 0 {
                return Err(err("must be at least 1"));
            }
            sim.nr_sched_batch = Some(v);
        }
        "rq_affinity" => {
            // queue_rq_affinity_store: 0 off, 1 same cache group, 2 (or more)
            // forced to the submitting CPU.
            sim.rq_affinity = uint()?.min(2) as u8;
        }
        other => {
            return Err(RunError::Setting(format!(
                "--set blk.{other}: unknown block-layer setting (known: {BLK_SETTINGS})"
            )))
        }
    }
    Ok(())
}

/// Collects fio statistics per clone.
struct Collector<'a> {
    recorders: Vec<Option<JobRecorder>>,
    stats: Vec<Option<JobStats>>,
    async_engine: Vec<bool>,
    ends: Vec<Ns>,
    done_bytes: u64,
    progress: Option<&'a mut dyn FnMut(Ns, u64)>,
    /// Per clone: its recorder's configuration and its logs' ioprio value.
    recording: Vec<(RecorderConfig, u16)>,
    /// Per clone: its logs, until they are attached to its recorder (at its
    /// start, or when its ramp time ends: fio logs nothing while ramping) and
    /// again once it has finished.
    logs: Vec<Option<JobLogs>>,
    /// Per clone: has a ramp time.
    ramps: Vec<bool>,
    /// Clones in the order they finished.
    finish_order: Vec<usize>,
    /// The first error writing a log.
    log_error: Option<LogError>,
    /// Log paths per clone, for error messages.
    log_paths: Vec<Vec<String>>,
    /// `write_iolog`: per clone, the writer it records to.
    iolog_of: Vec<Option<usize>>,
    /// The writers, each with its time origin (its first clone's start).
    iologs: Vec<(crate::trace::fio_iolog::IologWriter, Option<Ns>)>,
    /// The first error writing an iolog (writer index, error).
    iolog_error: Option<(usize, std::io::Error)>,
    /// Per clone: a verifying job's phase clock, and whether it has a
    /// backlog.
    clocks: Vec<Option<(std::sync::Arc<crate::job::PhaseClock>, bool)>>,
    /// Per clone: the error it stopped with.
    errors: Vec<Option<crate::job::JobError>>,
    /// Per clone: the queue depth it ended with (`latency_qd`).
    latency_depths: Vec<u32>,
    /// Per clone: its steady-state section (holders only).
    steadystate: Vec<Option<crate::steadystate::SsReport>>,
}

impl Collector<'_> {
    /// Record one entry of clone `job`'s `write_iolog` at `now`.
    fn log_iolog(
        &mut self,
        job: usize,
        now: Ns,
        op: crate::trace::TraceOp,
        offset: u64,
        bytes: u64,
    ) {
        let Some(w) = self.iolog_of[job] else {
            return;
        };
        let (writer, origin) = &mut self.iologs[w];
        let at_us = now.0.saturating_sub(origin.unwrap_or(Ns::ZERO).0) / 1_000;
        if let Err(e) = writer.io(at_us, op, offset, bytes) {
            self.iolog_error.get_or_insert((w, e));
        }
    }

    fn attach_logs(&mut self, job: usize) {
        if let (Some(r), Some(l)) = (&mut self.recorders[job], self.logs[job].take()) {
            r.attach_logs(l);
        }
    }
}

/// The report direction of an I/O: fio counts trims in a direction of their own.
fn sdir(d: blk::Dir, trim: bool) -> stats::Dir {
    match (d, trim) {
        (_, true) => stats::Dir::Trim,
        (blk::Dir::Read, _) => stats::Dir::Read,
        (blk::Dir::Write, _) => stats::Dir::Write,
    }
}

impl IoObserver for Collector<'_> {
    fn job_started(&mut self, job: usize, now: Ns) {
        if let Some(w) = self.iolog_of[job] {
            self.iologs[w].1.get_or_insert(now);
        }
        let cfg = self.recording[job].0.clone();
        self.recorders[job] = Some(JobRecorder::new(cfg, now.0));
        if !self.ramps[job] {
            self.attach_logs(job);
        }
    }
    fn io_issued(&mut self, job: usize, io: IoDone) {
        if self.iolog_of[job].is_some() {
            let op = match (io.dir, io.trim) {
                (_, true) => crate::trace::TraceOp::Trim,
                (blk::Dir::Read, _) => crate::trace::TraceOp::Read,
                (blk::Dir::Write, _) => crate::trace::TraceOp::Write,
            };
            // fio's `log_io_u` stamps the I/O as it is queued, before the
            // engine's system call: the start of its submission.
            self.log_iolog(job, io.submit, op, io.offset, io.bytes);
        }
        if let Some(r) = &mut self.recorders[job] {
            r.record_issue(
                sdir(io.dir, io.trim),
                io.bytes,
                io.offset,
                io.submit.0,
                io.issue.0,
            );
        }
    }
    fn io_submitted(&mut self, job: usize, op: blk::Op, depth: u32) {
        if let Some(r) = &mut self.recorders[job] {
            // A trim of a zbd job is a zone reset (`zbd_do_io_u_trim`).
            let trim = matches!(op, blk::Op::Discard | blk::Op::ZoneReset);
            r.record_submit(sdir(op.dir(), trim), depth);
            r.record_submit_batch(1);
        }
    }
    fn io_completed(&mut self, job: usize, io: IoDone, issue: Ns, now: Ns) {
        self.done_bytes += io.bytes;
        // A synchronous engine's completion latency is the whole system call (fio
        // records no separate submission latency for it).
        let issue = if self.async_engine[job] {
            issue
        } else {
            io.submit
        };
        if let Some(r) = &mut self.recorders[job] {
            r.record_complete_batch(1);
            r.record_completion(
                sdir(io.dir, io.trim),
                io.bytes,
                io.offset,
                io.submit.0,
                issue.0,
                now.0,
                io.prio,
            );
        }
    }
    fn ramp_done(&mut self, job: usize, now: Ns) {
        if let Some(r) = &mut self.recorders[job] {
            r.ramp_done(now.0);
        }
        self.attach_logs(job);
    }
    fn job_finished(&mut self, job: usize, now: Ns) {
        self.ends[job] = now;
        self.finish_order.push(job);
        if let Some(r) = self.recorders[job].take() {
            let start = r.start_ns();
            let (mut stats, logs) = r.finish_logged(now.0);
            if let Some((c, backlog)) = &self.clocks[job] {
                // fio's runtimes per phase: writing, then verifying.
                let [read, write] = c.runtimes(now, *backlog);
                if stats.read.runtime_ms > 0 {
                    stats.read.runtime_ms = read;
                }
                if stats.write.runtime_ms > 0 {
                    stats.write.runtime_ms = write;
                }
            }
            self.stats[job] = Some(stats);
            // A clone still ramping when it ends logs nothing, as in fio.
            let mut logs = logs.or_else(|| self.logs[job].take());
            if let Some(l) = &mut logs {
                if let Err(e) = l.finish(now.0.saturating_sub(start) / 1_000_000) {
                    self.log_error.get_or_insert(LogError {
                        path: self.log_paths[job].join(", "),
                        source: e,
                    });
                }
            }
            // Dropping the logs closes their files.
        }
    }
    fn sync_issued(&mut self, job: usize, now: Ns) {
        self.log_iolog(job, now, crate::trace::TraceOp::Sync, 0, 0);
    }
    fn sync_submitted(&mut self, job: usize, depth: u32, fsync: bool) {
        if let Some(r) = &mut self.recorders[job] {
            r.record_sync_submit(depth, fsync);
        }
    }
    fn sync_completed(&mut self, job: usize, issued: Ns, now: Ns) {
        if let Some(r) = &mut self.recorders[job] {
            r.record_sync(now.0.saturating_sub(issued.0));
        }
    }
    fn progress(&mut self, now: Ns) {
        let b = self.done_bytes;
        if let Some(p) = &mut self.progress {
            p(now, b);
        }
    }
    fn stop_requested(&mut self) -> bool {
        stop_requested()
    }
}

/// Set by [`request_stop`]: process-wide, as the signal that sets it is.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ask the running simulation to stop at its next check (every few thousand events);
/// [`run`] then reports what was simulated so far, marked interrupted. Called from a
/// signal-handling thread on SIGINT or SIGTERM, as fio stops on Ctrl-C.
pub fn request_stop() {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`request_stop`] was called.
pub fn stop_requested() -> bool {
    STOP.load(std::sync::atomic::Ordering::SeqCst)
}

/// Civil date from days since 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

/// `ctime()`-style UTC time, as fio prints it: `Wed Jul  8 09:07:52 2026`.
pub fn ctime(epoch: u64) -> String {
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (epoch / 86_400) as i64;
    let secs = epoch % 86_400;
    let (y, m, d) = civil(days);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        WD[(days % 7) as usize],
        MO[m as usize - 1],
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        y
    )
}

/// How each clone reaps completions (fio's `iodepth_batch_complete_min` /
/// `_max`); a synchronous engine completes each I/O in its system call.
fn set_reaping(sim: &mut Simulation, plan: &Plan) {
    for r in &plan.jobs {
        if r.spec.ioengine.is_async() {
            for c in r.clones.clone() {
                sim.set_reaping(
                    c,
                    r.spec.iodepth_batch_complete_min,
                    r.spec.iodepth_batch_complete_max,
                );
            }
        }
    }
}

/// Per clone, the logs it writes and their paths, and the files they go to:
/// created before the run (so a bad path fails at once) as temporaries, moved
/// into place once everything has succeeded.
#[allow(clippy::type_complexity)]
fn open_logs(
    opts: &RunOptions,
    plan: &Plan,
) -> Result<(Vec<Option<JobLogs>>, Vec<Vec<String>>, Option<LogFiles>), RunError> {
    let n = plan.clones.len();
    let mut logs: Vec<Option<JobLogs>> = (0..n).map(|_| None).collect();
    let mut log_paths: Vec<Vec<String>> = vec![Vec::new(); n];
    let log_files = if opts.write_logs && !plan.logs.is_empty() {
        let (files, streams) = LogFiles::create(plan.logs.clone())?;
        for (t, log) in plan.logs.iter().zip(streams) {
            let l = logs[t.clone].get_or_insert_with(|| JobLogs {
                prio: plan.recording[t.clone].1,
                ..Default::default()
            });
            log_paths[t.clone].push(t.path.clone());
            let slot: &mut Option<IoLog> = match t.kind {
                LogKind::Lat => &mut l.lat,
                LogKind::Clat => &mut l.clat,
                LogKind::Slat => &mut l.slat,
                LogKind::Bw => &mut l.bw,
                LogKind::Iops => &mut l.iops,
            };
            *slot = Some(log);
        }
        Some(files)
    } else {
        None
    };
    Ok((logs, log_paths, log_files))
}

/// The `write_iolog` files of a run: one writer per distinct path, written to a
/// temporary in the same directory and moved into place once the run has
/// succeeded.
struct IologFiles {
    /// Per clone: the writer it records to.
    of: Vec<Option<usize>>,
    paths: Vec<String>,
    tmps: Vec<tempfile::NamedTempFile>,
    writers: Vec<(crate::trace::fio_iolog::IologWriter, Option<Ns>)>,
}

impl IologFiles {
    /// The writers, for the collector (which records into them).
    fn take_writers(&mut self) -> Vec<(crate::trace::fio_iolog::IologWriter, Option<Ns>)> {
        std::mem::take(&mut self.writers)
    }

    /// Close every writer at `end` and, unless the run was interrupted, put
    /// the files in place.
    fn finish(self, col: &mut Collector<'_>, end: Ns, interrupted: bool) -> Result<(), RunError> {
        if let Some((w, e)) = col.iolog_error.take() {
            return Err(RunError::WriteIolog {
                path: self.paths[w].clone(),
                source: e,
            });
        }
        for (i, (w, origin)) in std::mem::take(&mut col.iologs).into_iter().enumerate() {
            let at_us = end.0.saturating_sub(origin.unwrap_or(Ns::ZERO).0) / 1_000;
            w.finish(at_us).map_err(|source| RunError::WriteIolog {
                path: self.paths[i].clone(),
                source,
            })?;
        }
        if interrupted {
            return Ok(());
        }
        for (tmp, path) in self.tmps.into_iter().zip(&self.paths) {
            // fio creates the file with fopen(): mode 0666 less the umask; a
            // temporary is 0600, so give it the usual 0644.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = tmp
                    .as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644));
            }
            tmp.persist(path).map_err(|e| RunError::WriteIolog {
                path: path.clone(),
                source: e.error,
            })?;
        }
        Ok(())
    }
}

/// Create the run's `write_iolog` files (as temporaries; see [`IologFiles`]).
fn open_iologs(opts: &RunOptions, plan: &Plan) -> Result<IologFiles, RunError> {
    let mut f = IologFiles {
        of: vec![None; plan.clones.len()],
        paths: Vec::new(),
        tmps: Vec::new(),
        writers: Vec::new(),
    };
    if !opts.write_logs {
        return Ok(f);
    }
    for (c, w) in plan.write_iologs.iter().enumerate() {
        let Some((path, name)) = w else {
            continue;
        };
        let idx = match f.paths.iter().position(|p| p == path) {
            Some(i) => i,
            None => {
                let werr = |source| RunError::WriteIolog {
                    path: path.clone(),
                    source,
                };
                let p = std::path::Path::new(path);
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => std::path::Path::new("."),
                };
                let tmp = tempfile::Builder::new()
                    .prefix(".iosched-iolog")
                    .tempfile_in(dir)
                    .map_err(werr)?;
                let file = tmp.as_file().try_clone().map_err(werr)?;
                let writer = crate::trace::fio_iolog::IologWriter::new(file, name).map_err(werr)?;
                f.paths.push(path.clone());
                f.tmps.push(tmp);
                f.writers.push((writer, None));
                f.paths.len() - 1
            }
        };
        f.of[c] = Some(idx);
    }
    Ok(f)
}

/// The report's header lines: the run's settings, the scheduler's tunables,
/// the options ignored (returned, for the JSON too), fio's warnings, an
/// interruption.
fn report_header<'a>(
    report: &mut RunReport,
    input: &'a FioInput,
    opts: &RunOptions,
    plan: &Plan,
    tunables: &[(String, String)],
    interrupted: bool,
    end: Ns,
) -> Vec<&'a str> {
    let tun_text = tunables
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    report.header.push(format!(
        "iosched {}: device={} scheduler={} hz={} seed={} host={} cpus={}{}",
        env!("CARGO_PKG_VERSION"),
        opts.device.name,
        plan.scheduler,
        opts.hz,
        opts.seed,
        opts.host.name,
        opts.nr_cpus,
        if opts.host.is_free() {
            format!(
                " submit_ns={}",
                opts.submit_ns
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "engine-default".into())
            )
        } else {
            String::new()
        }
    ));
    if !tun_text.is_empty() {
        report
            .header
            .push(format!("iosched: {} tunables: {tun_text}", plan.scheduler));
    }
    // `invalidate` acts on buffered jobs only.
    let buffered = input.jobs.iter().any(|j| !j.direct);
    let ignored: Vec<&str> = input
        .ignored
        .iter()
        .map(String::as_str)
        .filter(|o| !(buffered && (*o == "invalidate" || *o == "fadvise_hint")))
        .collect();
    if !ignored.is_empty() {
        report.header.push(format!(
            "iosched: ignored options (no effect on simulated I/O): {}",
            ignored.join(", ")
        ));
    }
    for w in &input.warnings {
        report.header.push(format!("iosched: warning: {w}"));
    }
    report.header.extend(plan.replay_notes.iter().cloned());
    if interrupted {
        report.header.push(format!(
            "iosched: interrupted at {:.3} s of simulated time: the report covers what was simulated until then; no log files were written",
            end.0 as f64 / 1e9
        ));
    }
    ignored
}

/// One report entry per clone, or per reporting group when any job in it
/// asks for group_reporting (fio sums the whole group).
fn job_entries(plan: &Plan, col: &Collector<'_>, opts: &RunOptions) -> Vec<JobResult> {
    let mut out = Vec::new();
    let mut done_groups = Vec::new();
    for r in &plan.jobs {
        let group_reporting = plan
            .jobs
            .iter()
            .any(|o| o.groupid == r.groupid && o.spec.group_reporting);
        let replay_rw = r.replay_rw;
        let fill = |mut jr: JobResult, spec: &JobSpec, end: Ns, clone: Option<usize>| {
            jr.job_options = spec.options.clone();
            jr.rw = replay_rw.unwrap_or(spec.rw.as_str()).to_string();
            let range = |i: usize, bs: u64| match &spec.bs_dist[i] {
                Some(d) => (d.min(), d.max()),
                None => (bs, bs),
            };
            jr.bs = [
                range(0, spec.bs.read),
                range(1, spec.bs.write),
                range(2, spec.bs.trim),
            ];
            jr.ioengine = spec.ioengine.as_str().to_string();
            jr.iodepth = spec.iodepth;
            jr.latency_depth = spec.iodepth;
            let c = &spec.control;
            if c.latency_target_ns > 0 {
                if let Some(d) = clone.and_then(|k| col.latency_depths.get(k)) {
                    jr.latency_depth = *d;
                }
                jr.latency_target_ns = c.latency_target_ns;
                jr.latency_window_us = c.latency_window_us;
                jr.latency_percentile = c.latency_percentile;
            }
            if let Some(p) = &spec.percentile_list {
                jr.percentile_list = p.clone();
            }
            jr.thread = spec.thread;
            jr.apply_report_options(&spec.report);
            jr.job_start_ms = opts.epoch_secs * 1000;
            jr.elapsed_secs = end.0.div_ceil(1_000_000_000);
            jr
        };
        if group_reporting {
            if done_groups.contains(&r.groupid) {
                continue;
            }
            done_groups.push(r.groupid);
            let members: Vec<&Resolved> = plan
                .jobs
                .iter()
                .filter(|o| o.groupid == r.groupid)
                .collect();
            let parts: Vec<&JobStats> = members
                .iter()
                .flat_map(|m| m.clones.clone())
                .filter_map(|c| col.stats[c].as_ref())
                .collect();
            let end = members
                .iter()
                .flat_map(|m| m.clones.clone())
                .map(|c| col.ends[c])
                .max()
                .unwrap_or_default();
            let mut jr = JobResult::new(&r.spec.name, r.groupid, JobStats::merged(parts));
            jr.pid = 1000 + r.clones.start as u32;
            // fio's group report shows the first error of the group's jobs.
            if let Some(e) = members
                .iter()
                .flat_map(|m| m.clones.clone())
                .find_map(|c| col.errors.get(c).cloned().flatten())
            {
                jr.error = e.errno;
            }
            // stat.c sets latency_depth from each job in turn: the last one's.
            let last = members.iter().flat_map(|m| m.clones.clone()).last();
            // The group's steady-state ring is its last clone's.
            jr.steadystate = last.and_then(|k| col.steadystate.get(k).cloned().flatten());
            out.push(fill(jr, &r.spec, end, last));
        } else {
            for c in r.clones.clone() {
                let stats = col.stats[c].clone().unwrap_or_default();
                let mut jr = JobResult::new(&r.spec.name, r.groupid, stats);
                jr.pid = 1000 + c as u32;
                if let Some(e) = col.errors.get(c).cloned().flatten() {
                    jr.error = e.errno;
                }
                jr.steadystate = col.steadystate.get(c).cloned().flatten();
                out.push(fill(jr, &r.spec, col.ends[c], Some(c)));
            }
        }
    }
    out
}

/// Run a planned simulation and build fio's report. `progress` is called now and then
/// with the virtual time and the bytes completed so far.
pub fn run(
    input: &FioInput,
    opts: &RunOptions,
    plan: Plan,
    progress: Option<&mut dyn FnMut(Ns, u64)>,
) -> Result<RunReport, RunError> {
    let device = opts.device.build();
    let n = plan.clones.len();
    let async_engine = plan.clones.iter().map(|c| c.async_engine).collect();
    let mut sim = Simulation::new(&plan.sim, device, plan.clones.clone())?;
    set_reaping(&mut sim, &plan);
    let tunables: Vec<(String, String)> = sim
        .elevator()
        .tunables()
        .iter()
        .map(|t| {
            let v = sim.elevator().get_tunable(t.name).unwrap_or_default();
            (t.name.to_string(), v)
        })
        .collect();
    let (logs, log_paths, log_files) = open_logs(opts, &plan)?;
    let mut iolog_files = open_iologs(opts, &plan)?;
    let mut col = Collector {
        iolog_of: iolog_files.of.clone(),
        iologs: iolog_files.take_writers(),
        iolog_error: None,
        recorders: (0..n).map(|_| None).collect(),
        stats: vec![None; n],
        async_engine,
        ends: vec![Ns::ZERO; n],
        done_bytes: 0,
        progress,
        recording: plan.recording.clone(),
        logs,
        ramps: plan.clones.iter().map(|c| c.ramp_time > 0).collect(),
        finish_order: Vec::new(),
        log_error: None,
        log_paths,
        clocks: plan
            .clones
            .iter()
            .map(|c| {
                let backlog = c.verify.is_some_and(|v| v.backlog > 0);
                c.phase_clock.clone().map(|k| (k, backlog))
            })
            .collect(),
        errors: Vec::new(),
        latency_depths: Vec::new(),
        steadystate: Vec::new(),
    };
    let summary = sim.run(&mut col);
    col.errors = summary.errors.clone();
    col.latency_depths = summary.latency_depths.clone();
    col.steadystate = summary.steadystate.clone();
    let interrupted = stop_requested();
    if interrupted {
        // As fio on Ctrl-C: every job still running ends now, with what it did.
        for j in 0..n {
            if col.recorders[j].is_some() {
                col.job_finished(j, summary.end);
            }
        }
    }
    for (st, z) in col.stats.iter_mut().zip(&summary.zone_resets) {
        if let (Some(st), Some(n)) = (st.as_mut(), z) {
            st.zone_resets = Some(*n);
        }
    }
    if let Some(h) = &summary.host {
        for (st, t) in col.stats.iter_mut().zip(&h.jobs) {
            if let Some(st) = st.as_mut() {
                st.usr_ns = t.usr;
                st.sys_ns = t.sys;
                st.ctx = t.nvcsw + t.nivcsw;
            }
        }
    }
    if let Some(e) = col.log_error.take() {
        return Err(e.into());
    }
    // A trace that failed while running (it was checked before, so only if it
    // changed): nothing is reported, no iolog is left.
    for c in &plan.clones {
        if let Some(e) = c.replay.as_ref().and_then(|r| r.error()) {
            return Err(e.into());
        }
    }
    iolog_files.finish(&mut col, summary.end, interrupted)?;
    // Clones that never started (or never finished) wrote nothing; their logs
    // are closed empty, as fio's would be.
    for l in col.logs.iter_mut().flatten() {
        let _ = l.finish(0);
    }
    col.logs.clear();
    // An interrupted run's logs stop mid-way: none is put in place.
    if let Some(files) = log_files.filter(|_| !interrupted) {
        files.commit(&col.finish_order)?;
    }

    let mut report = RunReport {
        fio_version: crate::report::FIO_VERSION.to_string(),
        timestamp_secs: opts.epoch_secs,
        timestamp_ms: opts.epoch_secs * 1000,
        time_string: ctime(opts.epoch_secs),
        global_options: input.global.clone(),
        ..Default::default()
    };
    let ignored = report_header(
        &mut report,
        input,
        opts,
        &plan,
        &tunables,
        interrupted,
        summary.end,
    );

    // fio logs why a job failed (a minimum rate, a latency target) and its
    // error as it exits.
    for (c, e) in col.errors.iter().enumerate() {
        if let Some(e) = e {
            report.header.push(format!("iosched: {}", e.message));
            report.header.push(format!(
                "iosched: pid={}, err={}, func={}, error={}",
                1000 + c,
                e.errno,
                e.func,
                match e.errno {
                    crate::job::EIO => "Input/output error",
                    _ => "Connection timed out",
                }
            ));
        }
    }
    report.jobs = job_entries(&plan, &col, opts);
    report.compute_groups();

    let d = &summary.disk;
    let ms = |ns: u64| ns / 1_000_000;
    // fio registers the disk for its statistics when a job has disk_util=1.
    let disk_util = input.jobs.iter().any(|j| j.report.disk_util);
    report.disk_util.extend(disk_util.then(|| DiskUtil {
        name: plan.disk_name.clone(),
        read_ios: d.ios[0],
        write_ios: d.ios[1],
        read_sectors: d.sectors[0],
        write_sectors: d.sectors[1],
        read_merges: d.merges[0],
        write_merges: d.merges[1],
        read_ticks: ms(d.ticks_ns[0]),
        write_ticks: ms(d.ticks_ns[1]),
        in_queue: ms(d.in_queue_ns()),
        util: if summary.end.0 == 0 {
            0.0
        } else {
            100.0 * d.io_ticks_ns as f64 / summary.end.0 as f64
        },
    }));
    if d.flush_ios > 0 {
        // fio's disk stats have no flush fields; /proc/diskstats does (since v5.5).
        report.footer.push(format!(
            "Disk flushes (/proc/diskstats): {}: flush_ios={}, flush_ticks={}",
            plan.disk_name,
            d.flush_ios,
            d.flush_ticks_ns / 1_000_000
        ));
    }
    if let Some(z) = &summary.zone {
        report.footer.push(format!(
            "Zone write plugging: {} bios plugged, {} plug works, {} aborted, {} appends emulated; {} I/O errors",
            z.plugged, z.works, z.aborted, z.emulated_appends, summary.io_errors
        ));
    }
    if !summary.sched_stats.is_empty() {
        report.footer.push(format!(
            "Scheduler statistics ({}, as in /sys/kernel/debug/block/{}/sched/):",
            plan.scheduler, plan.disk_name
        ));
        for (k, v) in summary.sched_stats.iter().filter(|(_, v)| !v.is_empty()) {
            report.footer.push(format!("  {k}: {v}"));
        }
    }
    let host_json = summary
        .host
        .as_ref()
        .map(|h| host_footer(&mut report, h, summary.end));
    report.extra = Some(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "device": opts.device.name,
        "scheduler": plan.scheduler,
        "tunables": tunables.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "hz": opts.hz,
        "seed": opts.seed,
        "simulated_ns": summary.end.0,
        "requests": summary.requests,
        "flush_ios": summary.disk.flush_ios,
        "flush_ticks": summary.disk.flush_ticks_ns / 1_000_000,
        "ignored_options": ignored,
        "scheduler_stats": summary.sched_stats.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "host": opts.host.name,
        "cpus": opts.nr_cpus,
        "host_stats": host_json,
    }));
    if let (Some(z), Some(serde_json::Value::Object(m))) = (&summary.zone, &mut report.extra) {
        m.insert("io_errors".into(), json!(summary.io_errors));
        m.insert(
            "zone_write_plugging".into(),
            json!({
                "plugged": z.plugged,
                "works": z.works,
                "aborted": z.aborted,
                "emulated_appends": z.emulated_appends,
            }),
        );
    }
    if interrupted {
        if let Some(serde_json::Value::Object(m)) = &mut report.extra {
            m.insert("interrupted".into(), json!(true));
        }
    }
    Ok(report)
}

/// The host's lines of the report (CPU time by kind, the scheduler's lock) and the
/// same figures for the JSON report.
fn host_footer(
    report: &mut RunReport,
    h: &crate::simulate::HostSummary,
    end: Ns,
) -> serde_json::Value {
    let wall = end.0.max(1) as f64 * h.cpus.len().max(1) as f64;
    let sum = |f: fn(&host::cpu::CpuTime) -> u64| h.cpus.iter().map(f).sum::<u64>();
    let (usr, sys, irq, spin) = (
        sum(|c| c.usr),
        sum(|c| c.sys),
        sum(|c| c.irq),
        sum(|c| c.spin),
    );
    let pct = |x: u64| 100.0 * x as f64 / wall;
    report.footer.push(format!(
        "Host CPUs ({}): usr={:.2}%, sys={:.2}%, irq={:.2}%, idle={:.2}% (of which spinning on locks: {:.2}%)",
        h.cpus.len(),
        pct(usr),
        pct(sys),
        pct(irq),
        (100.0 - pct(usr + sys + irq)).max(0.0),
        pct(spin)
    ));
    let locks: Vec<serde_json::Value> = h
        .locks
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let contention = if l.acquired == 0 {
                0.0
            } else {
                100.0 * l.contended as f64 / l.acquired as f64
            };
            report.footer.push(format!(
                "  scheduler lock {i}: acquired={}, contended={} ({contention:.1}%), wait={} us, held={} us ({:.1}% of the run), most spinning at once={}",
                l.acquired,
                l.contended,
                l.wait_ns / 1000,
                l.held_ns / 1000,
                100.0 * l.held_ns as f64 / end.0.max(1) as f64,
                l.max_waiters
            ));
            json!({
                "acquired": l.acquired,
                "contended": l.contended,
                "contention_pct": contention,
                "wait_ns": l.wait_ns,
                "held_ns": l.held_ns,
                "max_waiters": l.max_waiters,
            })
        })
        .collect();
    json!({
        "usr_ns": usr,
        "sys_ns": sys,
        "irq_ns": irq,
        "spin_ns": spin,
        "cpu_ns": wall as u64,
        "locks": locks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_matches_libc_format() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_783_501_672), "Wed Jul  8 09:07:52 2026");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}
