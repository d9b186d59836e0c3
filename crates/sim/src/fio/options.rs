//! The option table and the per-job option state.
//!
//! The table lists, for every fio option we know about, its canonical name
//! and aliases (from fio's options.c), how it takes its argument, and which
//! of the three classes it is in (see the module docs of `fio`). Job state
//! is built the way fio builds `thread_options`: start from defaults, apply
//! the global options, copy for each job and apply the job's own options.

use super::number::{
    parse_abs_bytes, parse_bool, parse_bytes, parse_int, parse_plain_uint,
    parse_time_seconds_default, parse_time_us_default, ByteValue,
};
use super::{
    BlockSizes, BsDist, ExitWhat, FileSpec, IoEngine, IologOptions, JobControl, JobSpec,
    LogOptions, RandomDist, RateLimit, ReportOptions, RwMode, SizeSpec, SourceLocation, ThinkTime,
    VerifySpec,
};
use crate::iolog::WindowValue;

/// How an option takes its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// A value is required (`bs=4k`); on the command line `--bs 4k` works.
    Required,
    /// fio's `FIO_OPT_STR_SET`: bare means 1; `=N` sets N. On the command
    /// line the value can only be attached with `=`.
    Flag,
    /// The value may be omitted in a job file (fio's `FIO_OPT_STR` options
    /// with callbacks, e.g. `write_bw_log`); required on the command line.
    Optional,
}

/// How an ignored option's value is checked, so we reject what fio rejects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Check {
    Any,
    Bool,
    Int,
    Choice(&'static [&'static str]),
}

/// The three option classes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Class {
    Modeled,
    Ignored(Check),
    /// Values listed are fio's no-op defaults and are accepted (as ignored).
    NotModeled(&'static [&'static str]),
}

/// One row of the option table.
#[derive(Debug)]
pub(crate) struct OptDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub arg: Arg,
    pub class: Class,
    /// fio's parse priority: within a job-file section, higher first.
    pub prio: i8,
}

const fn m(name: &'static str, aliases: &'static [&'static str], arg: Arg) -> OptDef {
    OptDef {
        name,
        aliases,
        arg,
        class: Class::Modeled,
        prio: 0,
    }
}
const fn ig(name: &'static str, aliases: &'static [&'static str], arg: Arg, c: Check) -> OptDef {
    OptDef {
        name,
        aliases,
        arg,
        class: Class::Ignored(c),
        prio: 0,
    }
}
const fn nm(
    name: &'static str,
    aliases: &'static [&'static str],
    arg: Arg,
    neutral: &'static [&'static str],
) -> OptDef {
    OptDef {
        name,
        aliases,
        arg,
        class: Class::NotModeled(neutral),
        prio: 0,
    }
}

use Arg::{Flag, Optional, Required as R};
use Check::{Any, Bool, Int};

const NONE: &[&str] = &[];
const ZERO: &[&str] = &["0"];
const ONE: &[&str] = &["1"];

/// The option table. Names, aliases and argument kinds follow fio's
/// options.c; the class is our decision per option.
static OPTIONS: &[OptDef] = &[
    // ---- Modeled ----
    m("name", NONE, R),
    OptDef {
        prio: -1,
        ..m("filename", NONE, R)
    },
    m("rw", &["readwrite"], R),
    m("rwmixread", NONE, R),
    m("rwmixwrite", NONE, R),
    m("bs", &["blocksize"], R),
    m("bsrange", &["blocksize_range"], R),
    m("bssplit", NONE, R),
    m("size", NONE, R),
    m("offset", &["fileoffset"], R),
    m("io_size", &["io_limit"], R),
    m("loops", NONE, R),
    m("ba", &["blockalign"], R),
    m("numjobs", NONE, R),
    m("iodepth", NONE, R),
    m("ioengine", NONE, R),
    m("direct", NONE, R),
    m("buffered", NONE, R),
    m("runtime", &["timeout"], R),
    m("time_based", NONE, Flag),
    m("ramp_time", NONE, R),
    m("startdelay", NONE, R),
    m("group_reporting", NONE, Flag),
    m("new_group", NONE, Flag),
    m("randseed", NONE, R),
    m("randrepeat", &["allrandrepeat"], R),
    m("norandommap", NONE, Flag),
    m("random_distribution", NONE, R),
    m("random_sequence_stride", NONE, R),
    m("number_ios", NONE, R),
    m("stonewall", &["wait_for_previous"], Flag),
    m("ioscheduler", NONE, R),
    m("cpus_allowed", NONE, R),
    m("cgroup", NONE, R),
    m("cgroup_weight", NONE, R),
    m("prioclass", NONE, R),
    m("prio", NONE, R),
    m("iodepth_batch", &["iodepth_batch_submit"], R),
    m("iodepth_batch_complete_min", &["iodepth_batch_complete"], R),
    m("iodepth_batch_complete_max", NONE, R),
    m("thread", NONE, Flag),
    m("fsync", NONE, R),
    m("fdatasync", NONE, R),
    m("end_fsync", NONE, R),
    m("fsync_on_close", NONE, R),
    // Honoured for buffered jobs (the page cache is dropped at the job's
    // start); listed as ignored for direct ones, where it changes nothing.
    m("invalidate", NONE, R),
    // As `invalidate`: acts on buffered reads, listed as ignored otherwise.
    m("fadvise_hint", NONE, R),
    m("sync", NONE, R),
    OptDef {
        prio: 1,
        ..m("kb_base", NONE, R)
    },
    m("percentile_list", NONE, R),
    m("write_bw_log", NONE, Optional),
    m("write_lat_log", NONE, Optional),
    m("write_iops_log", NONE, Optional),
    m("log_avg_msec", NONE, R),
    m("bwavgtime", NONE, R),
    m("iopsavgtime", NONE, R),
    m("log_window_value", &["log_max_value"], R),
    m("log_offset", NONE, R),
    m("log_prio", NONE, R),
    m("log_issue_time", NONE, R),
    m("per_job_logs", NONE, R),
    // Honoured for the logs (no such log is written), listed as ignored: the
    // report keeps every latency.
    m("disable_lat", NONE, R),
    m("disable_clat", NONE, R),
    m("disable_slat", NONE, R),
    // They change the report (as in fio), not the simulated I/O; listed as
    // ignored too, so the header says the I/O is the same.
    m("disable_bw_measurement", &["disable_bw"], R),
    m("gtod_reduce", NONE, R),
    m("clat_percentiles", NONE, R),
    m("lat_percentiles", NONE, R),
    m("slat_percentiles", NONE, R),
    m("disk_util", NONE, R),
    m("rate", NONE, R),
    m("rate_iops", NONE, R),
    m("rate_process", NONE, R),
    m("rate_ignore_thinktime", NONE, R),
    m("rate_cycle", &["ratecycle"], R),
    m("thinktime", NONE, R),
    m("thinktime_spin", NONE, R),
    m("thinktime_blocks", NONE, R),
    m("thinktime_blocks_type", NONE, R),
    m("thinktime_iotime", NONE, R),
    // ---- Ignored: cannot change the simulated I/O ----
    ig("description", NONE, R, Any),
    ig("lockmem", NONE, R, Int),
    ig("allow_mounted_write", NONE, R, Bool),
    ig("allow_file_create", NONE, R, Bool),
    ig("unique_filename", NONE, R, Bool),
    ig("create_serialize", NONE, R, Bool),
    ig("create_fsync", NONE, R, Bool),
    ig("create_on_open", NONE, R, Bool),
    ig("unlink", NONE, R, Bool),
    ig("unlink_each_loop", NONE, R, Bool),
    ig("nice", NONE, R, Any),
    ig("uid", NONE, R, Int),
    ig("gid", NONE, R, Int),
    ig("comm", NONE, R, Any),
    ig("error_dump", NONE, R, Bool),
    ig(
        "continue_on_error",
        NONE,
        R,
        Check::Choice(&["none", "read", "write", "io", "verify", "all", "0", "1"]),
    ),
    ig(
        "mem",
        &["iomem"],
        R,
        Check::Choice(&[
            "malloc",
            "shm",
            "shmhuge",
            "mmap",
            "mmapshared",
            "mmaphuge",
            "cudamalloc",
        ]),
    ),
    ig("iomem_align", &["mem_align"], R, Int),
    ig("hugepage-size", NONE, R, Int),
    ig("scramble_buffers", NONE, R, Bool),
    ig("zero_buffers", NONE, Flag, Int),
    ig("refill_buffers", NONE, Flag, Int),
    ig("buffer_pattern", NONE, R, Any),
    ig("buffer_compress_percentage", NONE, R, Int),
    ig("buffer_compress_chunk", NONE, R, Int),
    ig("dedupe_percentage", NONE, R, Int),
    ig("dedupe_global", NONE, R, Bool),
    ig(
        "dedupe_mode",
        NONE,
        R,
        Check::Choice(&["repeat", "working_set"]),
    ),
    ig("dedupe_working_set_percentage", NONE, R, Int),
    ig(
        "clocksource",
        NONE,
        R,
        Check::Choice(&["gettimeofday", "clock_gettime", "cpu"]),
    ),
    ig("gtod_cpu", NONE, R, Int),
    ig("job_start_clock_id", NONE, R, Int),
    ig("stats", NONE, R, Bool),
    ig("cgroup_nodelete", NONE, R, Bool),
    ig("write_hist_log", NONE, Optional, Any),
    m("write_iolog", NONE, R),
    ig("log_entries", NONE, R, Int),
    ig("log_hist_msec", NONE, R, Int),
    ig("log_hist_coarseness", NONE, R, Int),
    ig("log_compression", NONE, R, Int),
    ig("log_compression_cpus", NONE, R, Any),
    ig("log_alternate_epoch_clock_id", NONE, R, Int),
    ig("numa_cpu_nodes", NONE, R, Any),
    // The options of fio's built-in profiles (profiles/tiobench.c, act.c):
    // fio registers them at start-up, so any job file may set them, and they
    // only configure a profile that `--profile` would run (refused). tiobench's
    // `size` is shadowed by the job option of that name, as in fio.
    ig("threads", NONE, R, Int),
    ig("block", NONE, R, Int),
    ig("numruns", NONE, R, Int),
    ig("dir", NONE, R, Any),
    ig("device-names", NONE, R, Any),
    ig("load", NONE, R, Int),
    ig("test-duration", NONE, R, Int),
    ig("threads-per-queue", NONE, R, Int),
    ig("read-req-num-512-blocks", NONE, R, Int),
    ig("large-block-op-kbytes", NONE, R, Int),
    ig("prep", NONE, R, Bool),
    // fio's generators differ in their sequences, which iosched does not
    // reproduce anyway (its draws come from the run seed); all three cover
    // the region as the random map does (lfsr by construction), so the
    // offsets' distribution is the same.
    ig(
        "random_generator",
        NONE,
        R,
        Check::Choice(&["tausworthe", "lfsr", "tausworthe64"]),
    ),
    ig("numa_mem_policy", NONE, R, Any),
    // ---- Not modeled yet: would change the I/O (or a log's contents) ----
    nm("log_store_compressed", NONE, R, ZERO),
    nm("log_alternate_epoch", &["log_unix_epoch"], R, ZERO),
    m("wait_for", NONE, R),
    nm("filetype", NONE, R, &["none"]),
    m("directory", NONE, R),
    OptDef {
        prio: -1,
        ..m("filename_format", NONE, R)
    },
    OptDef {
        prio: 1,
        ..nm("lockfile", NONE, R, &["none"])
    },
    nm("opendir", NONE, R, NONE),
    nm("rw_sequencer", NONE, R, &["sequential"]),
    nm("iodepth_low", NONE, R, NONE),
    nm("serialize_overlap", NONE, R, ZERO),
    m("io_submit_mode", NONE, R),
    m("fill_device", &["fill_fs"], R),
    m("filesize", NONE, R),
    nm("file_append", NONE, R, ZERO),
    nm("offset_align", NONE, R, ZERO),
    m("offset_increment", NONE, R),
    nm("num_range", NONE, R, ONE),
    nm("bs_unaligned", &["blocksize_unaligned"], Flag, NONE),
    nm("bs_is_seq_rand", NONE, R, ZERO),
    nm("softrandommap", NONE, R, ZERO),
    nm("sprandom", NONE, R, ZERO),
    nm("spr_num_regions", NONE, R, NONE),
    nm("spr_op", NONE, R, NONE),
    nm("spr_cs", NONE, R, NONE),
    nm("percentage_random", NONE, R, &["100"]),
    nm("percentage_sequential", NONE, R, NONE),
    m("nrfiles", &["nr_files"], R),
    m("openfiles", NONE, R),
    m("file_service_type", NONE, R),
    // fio's own file preparation; "none" (or "0") makes none, as iosched
    // does (its files are laid out whole, see docs/fio.md "Files").
    nm("fallocate", NONE, R, &["none", "0"]),
    nm("write_barrier", NONE, R, ZERO),
    nm("sync_file_range", NONE, R, NONE),
    nm("atomic", NONE, R, ZERO),
    nm("overwrite", NONE, R, NONE),
    m("verify_only", NONE, Flag),
    nm("ramp_size", NONE, R, NONE),
    m("verify", NONE, R),
    m("do_verify", NONE, R),
    ig("verifysort", NONE, R, Bool),
    ig("verifysort_nr", NONE, R, Int),
    ig("verify_interval", NONE, R, Int),
    ig("verify_offset", NONE, R, Int),
    ig("verify_pattern", NONE, R, Any),
    ig("verify_pattern_interval", NONE, R, Int),
    ig("verify_fatal", NONE, R, Bool),
    ig("verify_dump", NONE, R, Bool),
    ig("verify_async", NONE, R, Int),
    m("verify_backlog", NONE, R),
    m("verify_backlog_batch", NONE, R),
    ig("verify_async_cpus", NONE, R, Any),
    nm("experimental_verify", NONE, R, ZERO),
    nm("verify_state_load", NONE, R, ZERO),
    ig("verify_state_save", NONE, R, Bool),
    ig("verify_write_sequence", NONE, R, Bool),
    ig("verify_header_seed", NONE, R, Bool),
    nm("trim_percentage", NONE, R, ZERO),
    nm("trim_verify_zero", NONE, R, NONE),
    nm("trim_backlog", NONE, R, NONE),
    nm("trim_backlog_batch", NONE, R, NONE),
    m("read_iolog", NONE, R),
    m("read_iolog_chunked", NONE, R),
    m("replay_no_stall", NONE, R),
    m("replay_redirect", NONE, R),
    m("replay_scale", NONE, R),
    m("replay_align", NONE, R),
    m("replay_time_scale", NONE, R),
    m("replay_skip", NONE, R),
    m("merge_blktrace_file", NONE, R),
    m("merge_blktrace_scalars", NONE, R),
    m("merge_blktrace_iters", NONE, R),
    nm("exec_prerun", NONE, R, NONE),
    nm("exec_postrun", NONE, R, NONE),
    m("zonemode", NONE, R),
    m("zonesize", NONE, R),
    nm("zonecapacity", NONE, R, NONE),
    nm("zonerange", NONE, R, NONE),
    m("zoneskip", NONE, R),
    m("read_beyond_wp", NONE, R),
    m("max_open_zones", NONE, R),
    m("job_max_open_zones", NONE, R),
    m("ignore_zone_limits", NONE, R),
    m("zone_reset_threshold", NONE, R),
    m("zone_reset_frequency", NONE, R),
    nm("recover_zbd_write_error", NONE, R, NONE),
    nm("write_zone_remainder", NONE, R, NONE),
    nm("fdp", NONE, R, ZERO),
    nm("dataplacement", &["data_placement"], R, &["none"]),
    nm("plid_select", &["fdp_pli_select"], R, NONE),
    nm("plids", &["fdp_pli"], R, NONE),
    nm("dp_scheme", NONE, R, NONE),
    nm("rwmixcycle", NONE, R, NONE),
    nm("priohint", NONE, R, NONE),
    nm("thinkcycles", NONE, R, ZERO),
    m("rate_min", &["ratemin"], R),
    m("rate_iops_min", NONE, R),
    nm("max_latency", NONE, R, NONE),
    m("latency_target", NONE, R),
    m("latency_window", NONE, R),
    m("latency_percentile", NONE, R),
    m("latency_run", NONE, R),
    nm("write_hint", NONE, R, NONE),
    nm("create_only", NONE, R, ZERO),
    nm("pre_read", NONE, R, ZERO),
    nm("cpumask", NONE, R, NONE),
    OptDef {
        prio: 1,
        ..m("cpus_allowed_policy", NONE, R)
    },
    nm("gpu_dev_id", NONE, R, NONE),
    nm("end_syncfs", NONE, R, ZERO),
    m("exitall", NONE, Flag),
    m("exit_what", NONE, R),
    m("exitall_on_error", NONE, Flag),
    nm("block_error_percentiles", NONE, R, ZERO),
    nm("significant_figures", NONE, R, &["4"]),
    nm("unified_rw_reporting", NONE, R, &["none", "0"]),
    // Which I/O errors a job carries on after: the simulated I/O has none.
    ig("ignore_error", NONE, R, Any),
    nm("profile", NONE, R, NONE),
    OptDef {
        prio: 1,
        ..nm("unit_base", NONE, R, &["0", "8"])
    },
    m("flow_id", NONE, R),
    m("flow", NONE, R),
    // FIO_OPT_SOFT_DEPRECATED in fio: accepted, read by nothing.
    ig("flow_watermark", NONE, R, Any),
    m("flow_sleep", NONE, R),
    m("steadystate", &["ss"], R),
    m("steadystate_duration", &["ss_dur"], R),
    m("steadystate_ramp_time", &["ss_ramp"], R),
    m("steadystate_check_interval", &["ss_interval"], R),
    // Common engine-specific options (libaio / io_uring / pvsync2).
    nm("hipri", NONE, Flag, NONE),
    nm("hipri_percentage", NONE, R, NONE),
    m("fixedbufs", NONE, Flag),
    nm("registerfiles", NONE, Flag, NONE),
    nm("sqthread_poll", NONE, Flag, NONE),
    nm("sqthread_poll_cpu", NONE, R, NONE),
    nm("userspace_reap", NONE, Flag, NONE),
    nm("nonvectored", NONE, R, NONE),
    nm("uncached", NONE, R, NONE),
    nm("nowait", NONE, R, NONE),
    nm("force_async", NONE, R, NONE),
    m("cmdprio_percentage", NONE, R),
    m("cmdprio_class", NONE, R),
    m("cmdprio", NONE, R),
    m("cmdprio_hint", NONE, R),
    m("cmdprio_bssplit", NONE, R),
];

/// Every option of the table with its class, for documentation (docs/fio.md
/// keeps a table of them, checked against this list by a test).
pub(crate) fn all() -> &'static [OptDef] {
    OPTIONS
}

/// Looks up an option by its name or an alias (exact, case-sensitive, as
/// fio's `strcmp`).
pub(crate) fn find(name: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// The value of a `FIO_OPT_STR_SET` option: bare is true, `=N` is N != 0.
fn flag_value(v: Option<&str>) -> Result<bool, String> {
    match v {
        None => Ok(true),
        Some(s) => parse_plain_uint(s).map(|n| n != 0),
    }
}

fn required<'a>(def: &OptDef, v: Option<&'a str>) -> Result<&'a str, String> {
    match v {
        Some(s) if !s.trim().is_empty() => Ok(s.trim()),
        _ => Err(format!("option '{}' requires a value", def.name)),
    }
}

/// What applying one option did.
pub(crate) struct Applied {
    /// The option has no effect on the simulation: list it as ignored.
    pub ignored: bool,
}

/// A job's options as they accumulate (fio's `thread_options`).
#[derive(Debug, Clone)]
pub(crate) struct JobState {
    pub name: Option<String>,
    filename: Option<String>,
    rw: RwMode,
    rw_seq_nr: u32,
    rw_seq_add: i64,
    rwmixread: u32,
    /// Smallest and largest block size per direction (fio's `min_bs`,
    /// `max_bs`), and `bssplit`'s table.
    bs: [u64; 3],
    bs_max: [u64; 3],
    bssplit: [Option<Vec<(u64, u32)>>; 3],
    size: Option<SizeSpec>,
    offset: u64,
    io_size: Option<u64>,
    loops: u32,
    blockalign: [u64; 3],
    numjobs: u64,
    iodepth: u32,
    ioengine: IoEngine,
    direct: bool,
    runtime_ns: u64,
    time_based: bool,
    ramp_time_ns: u64,
    start_delay_ns: u64,
    group_reporting: bool,
    new_group: bool,
    randseed: Option<u64>,
    randrepeat: bool,
    norandommap: bool,
    fixedbufs: bool,
    random_distribution: RandomDist,
    number_ios: u64,
    stonewall: bool,
    ioscheduler: Option<String>,
    cpus_allowed: Option<Vec<u32>>,
    cpus_allowed_split: bool,
    cgroup: Option<String>,
    cgroup_weight: Option<u32>,
    prioclass: Option<u8>,
    prio: Option<u8>,
    iodepth_batch: u32,
    iodepth_batch_complete_min: u32,
    iodepth_batch_complete_max: u32,
    thread: bool,
    fsync: u32,
    fdatasync: u32,
    end_fsync: bool,
    fsync_on_close: bool,
    invalidate: bool,
    fadvise_hint: String,
    sync: bool,
    pub kb_base: u32,
    percentile_list: Option<Vec<f64>>,
    logs: LogOptions,
    /// Report switches as set, before fio's fixups (see `ReportOptions`).
    report: ReportOptions,
    /// `thinktime` family, µs / counts as fio keeps them.
    think_us: u64,
    think_spin_us: u64,
    think_blocks: Option<u64>,
    think_by_issue: bool,
    think_iotime_us: u64,
    rate: [u64; 3],
    rate_iops: [u64; 3],
    rate_poisson: bool,
    rate_ignore_thinktime: bool,
    iolog: IologOptions,
    directory: Option<String>,
    /// `filesize`: smallest and largest size of each file.
    filesize: Option<(u64, u64)>,
    fill_device: bool,
    offset_increment: u64,
    /// `zonemode=zbd`.
    zonemode_zbd: bool,
    zones: crate::fio::ZoneOptions,
    /// `verify`'s method; `None`: fio's VERIFY_NONE (`verify=0`).
    verify: Option<String>,
    do_verify: bool,
    verify_backlog: u64,
    verify_backlog_batch: u64,
    verify_only: bool,
    offload: bool,
    random_sequence_stride: bool,
    control: JobControl,
    /// `steadystate` and its settings, µs as fio keeps them.
    /// `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `cmdprio_hint`
    /// per direction (read, write), and `cmdprio_bssplit` as given.
    cmdprio_perc: [u64; 2],
    cmdprio_class: [u64; 2],
    cmdprio_level: [u64; 2],
    cmdprio_hint: [u64; 2],
    cmdprio_bssplit: Option<String>,
    /// `filename=a:b`: the names after the first.
    more_files: Vec<String>,
    nrfiles: u32,
    openfiles: Option<u32>,
    filename_format: Option<String>,
    file_service: super::FileService,
    ss_criterion: crate::steadystate::Criterion,
    ss_dur_us: u64,
    ss_ramp_us: u64,
    ss_interval_us: u64,
}

impl Default for JobState {
    /// fio's defaults (the `.def` fields of options.c).
    fn default() -> Self {
        JobState {
            name: None,
            filename: None,
            rw: RwMode::Read,
            rw_seq_nr: 1,
            rw_seq_add: 0,
            rwmixread: 50,
            bs: [4096; 3],
            bs_max: [4096; 3],
            bssplit: [None, None, None],
            size: None,
            offset: 0,
            io_size: None,
            loops: 1,
            blockalign: [0; 3],
            numjobs: 1,
            iodepth: 1,
            ioengine: IoEngine::Psync,
            direct: false,
            runtime_ns: 0,
            time_based: false,
            ramp_time_ns: 0,
            start_delay_ns: 0,
            group_reporting: false,
            new_group: false,
            randseed: None,
            randrepeat: true,
            norandommap: false,
            fixedbufs: false,
            random_distribution: RandomDist::Random,
            number_ios: 0,
            stonewall: false,
            ioscheduler: None,
            cpus_allowed: None,
            cpus_allowed_split: false,
            cgroup: None,
            cgroup_weight: None,
            prioclass: None,
            prio: None,
            iodepth_batch: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 0,
            thread: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            invalidate: true,
            fadvise_hint: "1".into(),
            sync: false,
            kb_base: 1024,
            percentile_list: None,
            logs: LogOptions::default(),
            report: ReportOptions::default(),
            think_us: 0,
            think_spin_us: 0,
            think_blocks: None,
            think_by_issue: false,
            think_iotime_us: 0,
            rate: [0; 3],
            rate_iops: [0; 3],
            rate_poisson: false,
            rate_ignore_thinktime: false,
            iolog: IologOptions::default(),
            directory: None,
            filesize: None,
            fill_device: false,
            offset_increment: 0,
            zonemode_zbd: false,
            zones: Default::default(),
            verify: None,
            do_verify: true,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            verify_only: false,
            offload: false,
            random_sequence_stride: false,
            control: JobControl {
                rate_cycle_ms: 1000,
                latency_percentile: 100.0,
                ..JobControl::default()
            },
            cmdprio_perc: [0; 2],
            cmdprio_class: [0; 2],
            cmdprio_level: [0; 2],
            cmdprio_hint: [0; 2],
            cmdprio_bssplit: None,
            more_files: Vec::new(),
            nrfiles: 1,
            openfiles: None,
            filename_format: None,
            file_service: super::FileService::default(),
            ss_criterion: crate::steadystate::Criterion::default(),
            ss_dur_us: 0,
            ss_ramp_us: 0,
            ss_interval_us: 1_000_000,
        }
    }
}

const U32_MAX: u64 = u32::MAX as u64;

/// A count of zones (`8z`, fio's `str_val_zone` values), if `v` is one.
fn zone_count(v: &str) -> Option<u64> {
    let d = v.trim().strip_suffix(['z', 'Z'])?;
    if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    d.parse().ok()
}

/// fio's zbd_types.h `ZBD_MAX_WRITE_ZONES`, the most open zones it tracks.
const ZBD_MAX_OPEN_ZONES: u64 = 4096;

impl JobState {
    /// Applies one option (already looked up) with its value.
    pub(crate) fn apply(&mut self, def: &OptDef, value: Option<&str>) -> Result<Applied, String> {
        if def.arg == Arg::Required && !matches!(value, Some(v) if !v.trim().is_empty()) {
            return Err(format!("option '{}' requires a value", def.name));
        }
        match def.class {
            Class::NotModeled(neutral) => {
                let v = value.map(str::trim);
                if let Some(v) = v {
                    if neutral.contains(&v) {
                        return Ok(Applied { ignored: true });
                    }
                }
                let zoned = def.name.contains("zone")
                    || matches!(def.name, "read_beyond_wp" | "recover_zbd_write_error");
                let accepted = || {
                    format!(
                        "only the no-op value{} {} accepted",
                        if neutral.len() > 1 { "s" } else { "" },
                        neutral
                            .iter()
                            .map(|n| format!("'{n}'"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                if zoned {
                    // zonemode=zbd takes zone size and capacity from the
                    // device; emulated (zonecapacity), strided (zonerange)
                    // zones and the write-error options are not modeled.
                    Err(format!(
                        "option '{}' is not modeled yet: zonemode=zbd takes its zones from a \
                         zoned device{}",
                        def.name,
                        if neutral.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", accepted())
                        }
                    ))
                } else if let Some(why) = not_modeled_reason(def.name) {
                    Err(format!("option '{}': {why}", def.name))
                } else if neutral.is_empty() {
                    Err(format!("option '{}' is not modeled yet", def.name))
                } else {
                    Err(format!(
                        "option '{}' is not modeled yet (only the no-op value{} {} accepted)",
                        def.name,
                        if neutral.len() > 1 { "s" } else { "" },
                        neutral
                            .iter()
                            .map(|n| format!("'{n}'"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            }
            Class::Ignored(check) => {
                self.check_ignored(def, check, value)?;
                Ok(Applied { ignored: true })
            }
            Class::Modeled => {
                self.set(def, value)?;
                Ok(Applied {
                    ignored: matches!(
                        def.name,
                        "thread"
                            | "disable_lat"
                            | "disable_clat"
                            | "disable_slat"
                            | "invalidate"
                            | "fadvise_hint"
                            | "disable_bw_measurement"
                            | "gtod_reduce"
                            | "clat_percentiles"
                            | "lat_percentiles"
                            | "slat_percentiles"
                            | "disk_util"
                    ),
                })
            }
        }
    }

    fn check_ignored(&self, def: &OptDef, check: Check, value: Option<&str>) -> Result<(), String> {
        if def.arg == Arg::Flag {
            return flag_value(value).map(|_| ());
        }
        let Some(v) = value.map(str::trim) else {
            return Ok(()); // Arg::Optional without a value
        };
        match check {
            Check::Any => Ok(()),
            Check::Bool => parse_bool(v).map(|_| ()),
            Check::Int => parse_abs_bytes(v, self.kb_base).map(|_| ()),
            Check::Choice(choices) => {
                // fio matches only the part before ':' (e.g. mem=mmap:/file).
                let head = v.split(':').next().unwrap_or("");
                if choices.contains(&head) {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid value '{v}' for {} (valid: {})",
                        def.name,
                        choices.join(", ")
                    ))
                }
            }
        }
    }

    fn set(&mut self, def: &OptDef, value: Option<&str>) -> Result<(), String> {
        let kb = self.kb_base;
        match def.name {
            "time_based" => self.time_based = flag_value(value)?,
            "group_reporting" => self.group_reporting = flag_value(value)?,
            "new_group" => self.new_group = flag_value(value)?,
            "norandommap" => self.norandommap = flag_value(value)?,
            "fixedbufs" => self.fixedbufs = flag_value(value)?,
            "stonewall" => self.stonewall = flag_value(value)?,
            "thread" => self.thread = flag_value(value)?,
            "exitall" => self.control.exitall = flag_value(value)?,
            "exitall_on_error" => self.control.exitall_on_error = flag_value(value)?,
            "verify_only" => self.verify_only = flag_value(value)?,
            // fio's make_log_name: no value (or an empty one) means the job name.
            "write_bw_log" | "write_lat_log" | "write_iops_log" => {
                let prefix = Some(value.unwrap_or("").trim().to_string());
                match def.name {
                    "write_bw_log" => self.logs.bw_prefix = prefix,
                    "write_lat_log" => self.logs.lat_prefix = prefix,
                    _ => self.logs.iops_prefix = prefix,
                }
            }
            _ => {
                let v = required(def, value)?;
                self.set_valued(def.name, v, kb)?;
            }
        }
        Ok(())
    }

    fn set_valued(&mut self, name: &str, v: &str, kb: u32) -> Result<(), String> {
        // Integer options in fio split their value at ',', ':' and '-' and
        // silently use only part of it; a single value is all we accept.
        let int = |min: u64, max: u64| -> Result<u64, String> {
            if v.contains([',', ':', '-']) {
                return Err(format!("expected a single integer for {name}, got '{v}'"));
            }
            parse_int(v, kb, min, max)
        };
        match name {
            "name" => self.name = Some(v.to_string()),
            "filename" => {
                let mut names = parse_filenames(v)?;
                self.filename = Some(names.remove(0));
                self.more_files = names;
            }
            "rw" => {
                let (mode, suffix) = match v.split_once(':') {
                    Some((m, s)) => (m.trim(), Some(s.trim())),
                    None => (v, None),
                };
                self.rw = parse_rw(mode)?;
                (self.rw_seq_nr, self.rw_seq_add) = match suffix {
                    Some(s) => parse_rw_suffix(self.rw, s, kb)?,
                    None => (1, 0),
                };
            }
            "rwmixread" => self.rwmixread = int(0, 100)? as u32,
            "rwmixwrite" => self.rwmixread = 100 - int(0, 100)? as u32,
            "bs" => {
                self.bs = parse_bs(v, kb, self.bs)?;
                for (d, part) in split_dirs(v)?.iter().enumerate() {
                    if part.is_some() {
                        self.bs_max[d] = self.bs[d];
                    }
                }
            }
            "bsrange" => {
                for (d, part) in split_dirs(v)?.iter().enumerate() {
                    if let Some(p) = part {
                        let (lo, hi) = parse_range(p, kb)?;
                        self.bs[d] = lo;
                        self.bs_max[d] = hi;
                    }
                }
            }
            "bssplit" => {
                for (d, part) in bssplit_dirs(v).iter().enumerate() {
                    if let Some(p) = part {
                        if let Some(table) = parse_bssplit_dir(p, kb)? {
                            self.bs[d] = table.iter().map(|e| e.0).min().unwrap_or(1);
                            self.bs_max[d] = table.iter().map(|e| e.0).max().unwrap_or(1);
                            self.bssplit[d] = Some(table);
                        }
                    }
                }
            }
            "size" | "offset" | "io_size" if zone_count(v).is_some() => {
                let n = zone_count(v).unwrap_or(0);
                match name {
                    "size" => self.zones.size_nz = n,
                    "offset" => self.zones.offset_nz = n,
                    _ => self.zones.io_size_nz = n,
                }
            }
            "size" => {
                if v.contains([',', ':', '-']) {
                    return Err(format!("expected a single size, got '{v}'"));
                }
                self.size = match parse_bytes(v, kb)? {
                    ByteValue::Bytes(0) => None,
                    ByteValue::Bytes(n) => Some(SizeSpec::Bytes(n)),
                    ByteValue::Percent(p) if (1..=100).contains(&p) => {
                        Some(SizeSpec::Percent(p as u8))
                    }
                    ByteValue::Percent(p) => {
                        return Err(format!("size percentage must be 1..100, got {p}%"))
                    }
                }
            }
            "offset" => {
                if v.contains([',', ':', '-']) {
                    return Err(format!("expected a single offset, got '{v}'"));
                }
                self.offset = match parse_bytes(v, kb)? {
                    ByteValue::Bytes(n) => n,
                    ByteValue::Percent(_) => {
                        return Err("offset as a percentage is not modeled yet".to_string())
                    }
                }
            }
            "io_size" => {
                if v.contains([',', ':', '-']) {
                    return Err(format!("expected a single size, got '{v}'"));
                }
                self.io_size = match parse_bytes(v, kb)? {
                    ByteValue::Bytes(0) => None,
                    ByteValue::Bytes(n) => Some(n),
                    ByteValue::Percent(_) => {
                        return Err("io_size as a percentage is not modeled yet".to_string())
                    }
                }
            }
            "loops" => self.loops = int(1, U32_MAX)? as u32,
            // Per direction as `bs`; fio's `FIO_OPT_INT` with `.minval = 1`.
            "ba" => {
                for (d, part) in split_dirs(v)?.iter().enumerate() {
                    if let Some(p) = part {
                        self.blockalign[d] = parse_int(p, kb, 1, U32_MAX)?;
                    }
                }
            }
            "numjobs" => {
                self.numjobs = int(0, U32_MAX).and_then(|n| at_most(n, MAX_JOBS, JOBS_WHY))?
            }
            "iodepth" => {
                self.iodepth =
                    int(1, U32_MAX).and_then(|d| at_most(d, MAX_IODEPTH, IODEPTH_WHY))? as u32
            }
            "ioengine" => self.ioengine = parse_engine(v)?,
            "direct" => self.direct = parse_bool(v)?,
            "buffered" => self.direct = !parse_bool(v)?,
            "runtime" => self.runtime_ns = parse_time(v)?,
            "ramp_time" => self.ramp_time_ns = parse_time(v)?,
            "startdelay" => self.start_delay_ns = parse_time(v)?,
            "randseed" => {
                if v.contains([',', ':', '-']) {
                    return Err(format!("expected a single integer for randseed, got '{v}'"));
                }
                self.randseed = Some(parse_abs_bytes(v, kb)?);
            }
            "randrepeat" => self.randrepeat = parse_bool(v)?,
            "number_ios" => {
                if v.contains([',', ':', '-']) {
                    return Err(format!(
                        "expected a single integer for number_ios, got '{v}'"
                    ));
                }
                self.number_ios = parse_abs_bytes(v, kb)?;
            }
            "ioscheduler" => self.ioscheduler = Some(v.to_string()),
            "cpus_allowed" => self.cpus_allowed = Some(parse_cpu_list(v)?),
            "cpus_allowed_policy" => {
                self.cpus_allowed_split = match v {
                    "shared" => false,
                    "split" => true,
                    _ => return Err(format!("expected shared or split, got '{v}'")),
                }
            }
            "cgroup" => self.cgroup = Some(v.to_string()),
            "cgroup_weight" => self.cgroup_weight = Some(int(100, 1000)? as u32),
            "prioclass" => self.prioclass = Some(int(0, 3)? as u8),
            "prio" => self.prio = Some(int(0, 7)? as u8),
            "iodepth_batch" => self.iodepth_batch = int(0, U32_MAX)? as u32,
            "iodepth_batch_complete_min" => {
                self.iodepth_batch_complete_min = int(0, U32_MAX)? as u32
            }
            "iodepth_batch_complete_max" => {
                self.iodepth_batch_complete_max = int(0, U32_MAX)? as u32
            }
            "fsync" => self.fsync = int(0, U32_MAX)? as u32,
            "fdatasync" => self.fdatasync = int(0, U32_MAX)? as u32,
            "end_fsync" => self.end_fsync = parse_bool(v)?,
            "fsync_on_close" => self.fsync_on_close = parse_bool(v)?,
            "invalidate" => self.invalidate = parse_bool(v)?,
            "fadvise_hint" => {
                let valid = ["0", "1", "random", "sequential", "noreuse"];
                if !valid.contains(&v) {
                    return Err(format!(
                        "invalid value '{v}' for fadvise_hint (valid: {})",
                        valid.join(", ")
                    ));
                }
                self.fadvise_hint = v.to_string();
            }
            // fio: none/0 → no flag, sync/1 → O_SYNC, dsync → O_DSYNC. Both make
            // direct writes to a block device FUA writes.
            "sync" => {
                self.sync = match v {
                    "0" | "none" => false,
                    "1" | "sync" | "dsync" => true,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for sync (valid: none, 0, sync, 1, dsync)"
                        ))
                    }
                }
            }
            "kb_base" => {
                self.kb_base = match v {
                    "1024" => 1024,
                    "1000" => 1000,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for kb_base (valid: 1024, 1000)"
                        ))
                    }
                }
            }
            "percentile_list" => self.percentile_list = Some(parse_percentiles(v)?),
            // fio keeps these in an unsigned int of µs.
            "thinktime" => self.think_us = parse_us(v, parse_time_us_default)?,
            "thinktime_spin" => self.think_spin_us = parse_us(v, parse_time_us_default)?,
            "thinktime_iotime" => self.think_iotime_us = parse_us(v, parse_time_seconds_default)?,
            "thinktime_blocks" => self.think_blocks = Some(int(0, U32_MAX)?),
            "thinktime_blocks_type" => {
                self.think_by_issue = match v {
                    "complete" => false,
                    "issue" => true,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for thinktime_blocks_type (valid: complete, issue)"
                        ))
                    }
                }
            }
            "rate" => self.rate = parse_per_dir(v, kb, self.rate, "rate")?,
            "rate_min" => {
                let r = parse_per_dir(v, kb, [0; 3], "rate_min")?;
                self.control.rate_min = [r[0], r[1]];
            }
            "rate_iops_min" => {
                let r = parse_per_dir(v, kb, [0; 3], "rate_iops_min")?;
                if r.iter().any(|&n| n > U32_MAX) {
                    return Err(format!("rate_iops_min value '{v}' is too large"));
                }
                self.control.rate_iops_min = [r[0], r[1]];
            }
            "rate_cycle" => self.control.rate_cycle_ms = int(0, U32_MAX)?,
            "wait_for" => self.control.wait_for = Some(v.to_string()),
            // FIO_OPT_STR_VAL_TIME: µs unless a unit is given; fio's
            // fixup_options makes the target ns.
            "latency_target" => {
                self.control.latency_target_ns = parse_us(v, parse_time_us_default)? * 1_000
            }
            "latency_window" => {
                self.control.latency_window_us = parse_us(v, parse_time_us_default)?
            }
            "latency_percentile" => {
                self.control.latency_percentile = match v.parse::<f64>() {
                    Ok(p) if (0.0..=100.0).contains(&p) => p,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for latency_percentile (a percentage, 0 to 100)"
                        ))
                    }
                }
            }
            "latency_run" => self.control.latency_run = parse_bool(v)?,
            "exit_what" => {
                self.control.exit_what = match v {
                    "group" => ExitWhat::Group,
                    "stonewall" => ExitWhat::Stonewall,
                    "all" => ExitWhat::All,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for exit_what (valid: group, stonewall, all)"
                        ))
                    }
                }
            }
            "steadystate" => self.ss_criterion = parse_steadystate(v, kb)?,
            // FIO_OPT_STR_VAL_TIME with is_seconds: bare numbers are seconds.
            "steadystate_duration" => self.ss_dur_us = parse_time(v)? / 1_000,
            "steadystate_ramp_time" => self.ss_ramp_us = parse_time(v)? / 1_000,
            "steadystate_check_interval" => self.ss_interval_us = parse_time(v)? / 1_000,
            "flow_id" => self.control.flow_id = int(0, U32_MAX)? as u32,
            "flow" => self.control.flow = int(0, 1000)? as u32,
            "flow_sleep" => self.control.flow_sleep_us = int(0, U32_MAX)?,
            "rate_iops" => self.rate_iops = parse_per_dir(v, kb, self.rate_iops, "rate_iops")?,
            "rate_process" => {
                self.rate_poisson = match v {
                    "linear" => false,
                    "poisson" => true,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for rate_process (valid: linear, poisson)"
                        ))
                    }
                }
            }
            "rate_ignore_thinktime" => self.rate_ignore_thinktime = parse_bool(v)?,
            "read_iolog" => self.iolog.read = Some(parse_file_list(v)?),
            "write_iolog" => self.iolog.write = Some(v.to_string()),
            "read_iolog_chunked" => self.iolog.chunked = parse_bool(v)?,
            "replay_no_stall" => self.iolog.replay.no_stall = parse_bool(v)?,
            "replay_redirect" => self.iolog.redirect = Some(v.to_string()),
            // fio: replay_time_scale has minval 1 (a percentage).
            "replay_time_scale" => self.iolog.replay.time_scale = int(1, U32_MAX)? as u32,
            "replay_scale" => self.iolog.replay.scale = int(0, U32_MAX)?,
            "replay_align" => {
                let a = int(0, U32_MAX)?;
                if a != 0 && !a.is_power_of_two() {
                    return Err(format!("replay_align={a} is not a power of 2"));
                }
                self.iolog.replay.align = a;
            }
            "replay_skip" => self.iolog.replay.skip = parse_replay_skip(v)?,
            "merge_blktrace_file" => self.iolog.merge_file = Some(v.to_string()),
            "merge_blktrace_scalars" => self.iolog.merge_scalars = parse_float_list(v)?,
            "merge_blktrace_iters" => self.iolog.merge_iters = parse_float_list(v)?,
            "random_distribution" => self.random_distribution = parse_random_dist(v, kb)?,
            "log_avg_msec" => self.logs.avg_msec = int(0, U32_MAX)?,
            "bwavgtime" => self.logs.bw_avg_msec = Some(int(1, U32_MAX)?),
            "iopsavgtime" => self.logs.iops_avg_msec = Some(int(1, U32_MAX)?),
            "log_window_value" => {
                self.logs.window_value = match v {
                    "avg" | "0" => WindowValue::Avg,
                    "max" | "1" => WindowValue::Max,
                    "both" => WindowValue::Both,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for log_max_value (valid: avg, max, both, 0, 1)"
                        ))
                    }
                }
            }
            "log_offset" => self.logs.offset = parse_bool(v)?,
            "log_prio" => self.logs.prio = parse_bool(v)?,
            "log_issue_time" => self.logs.issue_time = parse_bool(v)?,
            "per_job_logs" => self.logs.per_job = parse_bool(v)?,
            "disable_lat" => {
                self.logs.disable_lat = parse_bool(v)?;
                self.report.disable_lat = self.logs.disable_lat;
            }
            "disable_clat" => {
                self.logs.disable_clat = parse_bool(v)?;
                self.report.disable_clat = self.logs.disable_clat;
            }
            "disable_slat" => {
                self.logs.disable_slat = parse_bool(v)?;
                self.report.disable_slat = self.logs.disable_slat;
            }
            "disable_bw_measurement" => self.report.disable_bw = parse_bool(v)?,
            // fio's str_gtod_reduce_cb: only a true value changes anything.
            "gtod_reduce" => {
                if parse_bool(v)? {
                    let r = &mut self.report;
                    (r.disable_lat, r.disable_clat, r.disable_slat, r.disable_bw) =
                        (true, true, true, true);
                    (r.clat_percentiles, r.lat_percentiles, r.slat_percentiles) =
                        (false, false, false);
                    let l = &mut self.logs;
                    (l.disable_lat, l.disable_clat, l.disable_slat) = (true, true, true);
                }
            }
            "clat_percentiles" => self.report.clat_percentiles = parse_bool(v)?,
            "lat_percentiles" => self.report.lat_percentiles = parse_bool(v)?,
            "slat_percentiles" => self.report.slat_percentiles = parse_bool(v)?,
            "disk_util" => self.report.disk_util = parse_bool(v)?,
            "directory" => {
                if v.contains(':') {
                    return Err(format!(
                        "several directories in directory ('{v}') are not modeled yet"
                    ));
                }
                self.directory = Some(v.to_string());
            }
            "filesize" => {
                self.filesize = Some(if v.contains(['-', ':']) {
                    parse_range(v, kb)?
                } else {
                    let n = parse_abs_bytes(v, kb)?;
                    (n, n)
                })
            }
            "fill_device" => self.fill_device = parse_bool(v)?,
            "cmdprio_percentage" => self.cmdprio_perc = cmdprio_dirs(v, kb, 0, 100, name)?,
            "cmdprio_class" => self.cmdprio_class = cmdprio_dirs(v, kb, 1, 3, name)?,
            "cmdprio" => self.cmdprio_level = cmdprio_dirs(v, kb, 0, 7, name)?,
            "cmdprio_hint" => self.cmdprio_hint = cmdprio_dirs(v, kb, 0, 1023, name)?,
            "cmdprio_bssplit" => self.cmdprio_bssplit = Some(v.to_string()),
            "nrfiles" => self.nrfiles = int(1, U32_MAX)? as u32,
            "openfiles" => self.openfiles = Some(int(1, U32_MAX)? as u32),
            "filename_format" => self.filename_format = Some(v.to_string()),
            "file_service_type" => self.file_service = parse_file_service(v)?,
            "random_sequence_stride" => self.random_sequence_stride = parse_bool(v)?,
            "io_submit_mode" => {
                self.offload = match v {
                    "inline" => false,
                    "offload" => true,
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for io_submit_mode (valid: inline, offload)"
                        ))
                    }
                }
            }
            "offset_increment" => {
                self.offset_increment = match parse_bytes(v, kb)? {
                    ByteValue::Bytes(n) => n,
                    ByteValue::Percent(_) => {
                        return Err(
                            "offset_increment as a percentage is not modeled yet".to_string()
                        )
                    }
                }
            }
            "zonemode" => {
                self.zonemode_zbd = match v {
                    "none" => false,
                    "zbd" => true,
                    "strided" => {
                        return Err(
                            "zonemode=strided is not modeled yet (only none and zbd are)"
                                .to_string(),
                        )
                    }
                    _ => {
                        return Err(format!(
                            "invalid value '{v}' for zonemode (valid: none, strided, zbd)"
                        ))
                    }
                }
            }
            "zonesize" | "zoneskip" => {
                let n = match parse_bytes(v, kb)? {
                    ByteValue::Bytes(n) => n,
                    ByteValue::Percent(_) => {
                        return Err(format!("{} as a percentage is not valid", name))
                    }
                };
                if name == "zonesize" {
                    self.zones.zone_size = n;
                } else {
                    self.zones.zone_skip = n;
                }
            }
            "read_beyond_wp" => self.zones.read_beyond_wp = parse_bool(v)?,
            "ignore_zone_limits" => self.zones.ignore_zone_limits = parse_bool(v)?,
            // options.c: maxval ZBD_MAX_WRITE_ZONES.
            "max_open_zones" => self.zones.max_open_zones = int(0, ZBD_MAX_OPEN_ZONES)? as u32,
            "job_max_open_zones" => {
                self.zones.job_max_open_zones = int(0, ZBD_MAX_OPEN_ZONES)? as u32
            }
            "zone_reset_threshold" | "zone_reset_frequency" => {
                let f = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| (0.0..=1.0).contains(f))
                    .ok_or_else(|| {
                        format!("invalid value '{v}' for {} (a fraction from 0 to 1)", name)
                    })?;
                if name == "zone_reset_threshold" {
                    self.zones.reset_threshold = f;
                } else {
                    self.zones.reset_frequency = f;
                }
            }
            "verify" => self.verify = parse_verify(v)?,
            "do_verify" => self.do_verify = parse_bool(v)?,
            "verify_backlog" => self.verify_backlog = int(0, u64::MAX)?,
            "verify_backlog_batch" => self.verify_backlog_batch = int(0, U32_MAX)?,
            other => return Err(format!("internal error: unhandled option '{other}'")),
        }
        Ok(())
    }

    /// Turns the accumulated state into a validated job (fio's
    /// `fixup_options` plus our "not modeled" checks). Warnings fio would
    /// print are pushed to `warnings`.
    pub(crate) fn finish(
        &self,
        default_name: &str,
        source: SourceLocation,
        options: Vec<(String, String)>,
        warnings: &mut Vec<String>,
    ) -> Result<JobSpec, String> {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string());
        self.trim_checks(&name)?;
        if !self.direct && self.ioengine != IoEngine::Null {
            // Buffered I/O through the block device's page cache
            // (crate::pagecache).
            if self.sync {
                return Err(format!(
                    "job '{name}': sync with buffered I/O (O_SYNC page-cache writes) is not \
                     modeled yet; use direct=1 or fsync=1"
                ));
            }
            if self.fadvise_hint == "noreuse" {
                return Err(format!(
                    "job '{name}': fadvise_hint=noreuse (POSIX_FADV_NOREUSE's LRU aging) is \
                     not modeled with buffered I/O; use 0, 1, random or sequential"
                ));
            }
            let page = crate::pagecache::PAGE_SIZE;
            let sizes = match &self.bssplit[1] {
                Some(t) => t.iter().map(|e| e.0).collect(),
                None => vec![self.bs[1], self.bs_max[1]],
            };
            let writes = self.rw.writes();
            if writes
                && (sizes.iter().any(|b| !b.is_multiple_of(page))
                    || !self.offset.is_multiple_of(page)
                    || !self.blockalign[1].is_multiple_of(page))
            {
                return Err(format!(
                    "job '{name}': buffered writes of part of a page (bs or offset not a \
                     multiple of {page}) read the page first, which is not modeled yet; \
                     use page-multiple sizes or direct=1"
                ));
            }
        }
        if self.numjobs == 0 {
            return Err(format!("job '{name}': numjobs must be at least 1"));
        }
        // Offsets go to the device in 512-byte sectors, as for the block sizes.
        for (d, ba) in ["read", "write", "trim"].iter().zip(self.blockalign) {
            if !ba.is_multiple_of(512) {
                return Err(format!(
                    "job '{name}': {d} blockalign {ba} is not a multiple of 512 bytes"
                ));
            }
        }
        let bs = BlockSizes {
            read: self.bs[0],
            write: self.bs[1],
            trim: self.bs[2],
        };
        // fio's get_next_buflen: equal bounds mean one size; else bssplit's
        // table if there is one, else the range.
        let bs_dist = [0, 1, 2].map(|d| {
            if self.bs[d] == self.bs_max[d] {
                None
            } else if let Some(t) = &self.bssplit[d] {
                Some(BsDist::Split(t.clone()))
            } else {
                Some(BsDist::Range {
                    min: self.bs[d],
                    max: self.bs_max[d],
                })
            }
        });
        if let Some(SizeSpec::Bytes(size)) = self.size {
            if size < bs.min() {
                return Err(format!(
                    "job '{name}': size too small, must not be less than minimum block size: {size} < {}",
                    bs.min()
                ));
            }
        }
        let mut time_based = self.time_based;
        if time_based && self.runtime_ns == 0 {
            warnings.push(format!(
                "job '{name}': time_based requires a runtime/timeout setting; time_based ignored"
            ));
            time_based = false;
        }
        let iodepth_batch_submit = if self.iodepth_batch == 0 || self.iodepth_batch > self.iodepth {
            self.iodepth
        } else {
            self.iodepth_batch
        };
        let complete_max = self
            .iodepth_batch_complete_max
            .max(self.iodepth_batch_complete_min);
        let thinktime = (self.think_us > 0).then(|| ThinkTime {
            think_us: self.think_us,
            // fio's fixup: thinktime_spin must not exceed thinktime.
            spin_us: self.think_spin_us.min(self.think_us),
            blocks: self.think_blocks.unwrap_or(1),
            blocks_set: self.think_blocks.is_some(),
            by_issue: self.think_by_issue,
            iotime_us: self.think_iotime_us,
        });
        // fio's setup_rate: a direction's `rate` wins over its `rate_iops`.
        let rate_bps = [0, 1].map(|d| {
            if self.rate[d] > 0 {
                self.rate[d]
            } else {
                self.rate_iops[d].saturating_mul(self.bs[d])
            }
        });
        let rate = (rate_bps.iter().any(|b| *b > 0)).then_some(RateLimit {
            bps: rate_bps,
            poisson: self.rate_poisson,
            ignore_thinktime: self.rate_ignore_thinktime,
        });
        let mut logs = self.logs.clone();
        if logs.issue_time && (logs.lat_prefix.is_none() || !logs.offset) {
            return Err(format!(
                "job '{name}': log_issue_time requires write_lat_log and log_offset"
            ));
        }
        // fio's make_log_name: an empty prefix is the job name.
        for p in [
            &mut logs.lat_prefix,
            &mut logs.bw_prefix,
            &mut logs.iops_prefix,
        ]
        .into_iter()
        .flatten()
        {
            if p.is_empty() {
                *p = name.clone();
            }
        }
        let verify = self.verify_spec(&name)?;
        let mut control = self.control.clone();
        control.steadystate = self.steadystate_spec(&name)?;
        control.ss_check_interval_us = self.ss_interval_us;
        let cmdprio = self.cmdprio_spec(&name)?;
        Ok(JobSpec {
            name,
            source,
            filename: self.filename.clone(),
            rw: self.rw,
            rw_seq_nr: self.rw_seq_nr,
            rw_seq_add: self.rw_seq_add,
            rwmixread: self.rwmixread,
            bs,
            bs_dist,
            size: self.size,
            offset: self.offset,
            io_size: self.io_size,
            loops: self.loops,
            blockalign: self.blockalign,
            numjobs: self.numjobs as u32,
            iodepth: self.iodepth,
            ioengine: self.ioengine,
            direct: self.direct,
            runtime_ns: (self.runtime_ns != 0).then_some(self.runtime_ns),
            time_based,
            ramp_time_ns: self.ramp_time_ns,
            start_delay_ns: self.start_delay_ns,
            group_reporting: self.group_reporting,
            new_group: self.new_group,
            randseed: self.randseed,
            // fio: "If randseed is set, that overrides randrepeat".
            randrepeat: self.randrepeat && self.randseed.is_none(),
            norandommap: self.norandommap,
            fixedbufs: self.fixedbufs,
            random_distribution: match &self.random_distribution {
                RandomDist::Sequence { blocks, .. } => RandomDist::Sequence {
                    blocks: blocks.clone(),
                    stride: self.random_sequence_stride,
                },
                d => d.clone(),
            },
            number_ios: (self.number_ios != 0).then_some(self.number_ios),
            stonewall: self.stonewall,
            ioscheduler: self.ioscheduler.clone(),
            cpus_allowed: self.cpus_allowed.clone(),
            cpus_allowed_split: self.cpus_allowed_split,
            cgroup: self.cgroup.clone(),
            cgroup_weight: self.cgroup_weight,
            prioclass: self.prioclass,
            prio: self.prio,
            iodepth_batch_submit,
            iodepth_batch_complete_min: self.iodepth_batch_complete_min,
            iodepth_batch_complete_max: complete_max,
            thread: self.thread,
            fsync_blocks: self.fsync,
            fdatasync_blocks: self.fdatasync,
            end_fsync: self.end_fsync,
            fsync_on_close: self.fsync_on_close,
            invalidate: self.invalidate,
            fadvise_hint: self.fadvise_hint.clone(),
            sync: self.sync,
            kb_base: self.kb_base,
            percentile_list: self.percentile_list.clone(),
            logs,
            report: {
                // fio's fixup_options: a disabled latency has no percentiles.
                let mut r = self.report;
                // The null engine is FIO_DISKLESSIO: fio shows no disk.
                r.disk_util &= self.ioengine != IoEngine::Null;
                r.lat_percentiles &= !r.disable_lat;
                r.clat_percentiles &= !r.disable_clat;
                r.slat_percentiles &= !r.disable_slat;
                r
            },
            thinktime,
            rate,
            iolog: self.iolog.clone(),
            files: FileSpec {
                more_names: self.more_files.clone(),
                nrfiles: self.nrfiles,
                filename_format: self.filename_format.clone(),
                service: self.file_service,
                openfiles: self.openfiles,
                directory: self.directory.clone(),
                filesize: self.filesize,
                fill_device: self.fill_device,
                offset_increment: self.offset_increment,
            },
            zonemode_zbd: self.zonemode_zbd,
            zones: self.zones.clone(),
            verify,
            offload: self.offload,
            control,
            cmdprio,
            options,
        })
    }

    /// fio's `fio_cmdprio_init`: the per-I/O priorities of a libaio or
    /// io_uring job (`None` when it sets no percentage).
    fn cmdprio_spec(&self, name: &str) -> Result<Option<super::CmdPrio>, String> {
        let bssplit = self
            .cmdprio_bssplit
            .as_deref()
            .filter(|s| !s.trim().is_empty());
        let perc = self.cmdprio_perc.iter().any(|&p| p > 0);
        if !perc && bssplit.is_none() {
            return Ok(None);
        }
        if perc && bssplit.is_some() {
            return Err(format!(
                "job '{name}': cmdprio_percentage and cmdprio_bssplit options are mutually exclusive"
            ));
        }
        if !matches!(self.ioengine, IoEngine::Libaio | IoEngine::IoUring) {
            return Err(format!(
                "job '{name}': cmdprio options are options of the libaio and io_uring engines \
                 (fio's cmdprio.c), not of ioengine={}",
                self.ioengine.as_str()
            ));
        }
        // An unset class is RT (IOPRIO_CLASS_RT).
        let class = |d: usize| {
            if self.cmdprio_class[d] == 0 {
                1
            } else {
                self.cmdprio_class[d] as u8
            }
        };
        let implicit = |d: usize| {
            (
                class(d),
                self.cmdprio_level[d] as u8,
                self.cmdprio_hint[d] as u16,
            )
        };
        let dirs = match bssplit {
            None => [0, 1].map(|d| {
                let (class, level, hint) = implicit(d);
                (self.cmdprio_perc[d] > 0)
                    .then(|| super::CmdPrioEntry {
                        bs: None,
                        perc: self.cmdprio_perc[d] as u32,
                        class,
                        level,
                        hint,
                    })
                    .into_iter()
                    .collect()
            }),
            Some(b) => {
                let parts: Vec<&str> = b.split(',').collect();
                if parts.len() > 3 {
                    return Err(format!(
                        "job '{name}': too many directions in cmdprio_bssplit '{b}' (at most read,write,trim)"
                    ));
                }
                let read = parse_cmdprio_bssplit_dir(parts[0], self.kb_base, implicit(0))
                    .map_err(|e| format!("job '{name}': {e}"))?;
                let write = match parts.get(1) {
                    Some(w) => parse_cmdprio_bssplit_dir(w, self.kb_base, implicit(1))
                        .map_err(|e| format!("job '{name}': {e}"))?,
                    None => parse_cmdprio_bssplit_dir(parts[0], self.kb_base, implicit(1))
                        .map_err(|e| format!("job '{name}': {e}"))?,
                };
                [read, write]
            }
        };
        Ok(Some(super::CmdPrio { dirs }))
    }

    /// fio's `fixup_options` checks of the steady-state settings, and the
    /// settings resolved (`None` when `steadystate_duration` is 0).
    fn steadystate_spec(&self, name: &str) -> Result<Option<crate::steadystate::SsSpec>, String> {
        let (dur, interval) = (self.ss_dur_us, self.ss_interval_us);
        if dur == 0 {
            return Ok(None);
        }
        if interval / 1000 < 1000 {
            return Err(format!(
                "job '{name}': steadystate_check_interval must be at least 1s"
            ));
        }
        if !dur.is_multiple_of(interval) || dur <= interval {
            return Err(format!(
                "job '{name}': steadystate_duration {dur}us must be a multiple of, and longer \
                 than, steadystate_check_interval {interval}us"
            ));
        }
        Ok(Some(crate::steadystate::SsSpec {
            criterion: self.ss_criterion,
            dur_s: dur / 1_000_000,
            ramp_us: self.ss_ramp_us,
            interval_ms: interval / 1000,
        }))
    }
}

/// fio's `FIO_OPT_FLOAT_LIST` with ':' between values (at most
/// `FIO_IO_U_LIST_MAX_LEN`, 20), each finite and not negative.
fn parse_float_list(v: &str) -> Result<Vec<f64>, String> {
    let vals = v
        .split(':')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| format!("'{x}' is not a number >= 0"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if vals.len() > 20 {
        return Err(format!("{} values: at most 20", vals.len()));
    }
    Ok(vals)
}

/// `replay_skip`: a comma-separated list of read, write, trim, sync (fio's
/// `str_replay_skip_cb`).
fn parse_replay_skip(v: &str) -> Result<[bool; 4], String> {
    let mut skip = [false; 4];
    for w in v.split(',') {
        let i = match w.trim() {
            "read" => 0,
            "write" => 1,
            "trim" => 2,
            "sync" => 3,
            other => {
                return Err(format!(
                    "replay_skip: unknown I/O type '{other}' (valid: read, write, trim, sync)"
                ))
            }
        };
        skip[i] = true;
    }
    Ok(skip)
}

/// A ':'-separated list of files ('\:' escapes a colon), as `read_iolog` takes
/// one per job clone.
fn parse_file_list(v: &str) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                out.last_mut().expect("one").push(':');
                chars.next();
            }
            ':' => out.push(String::new()),
            _ => out.last_mut().expect("one").push(c),
        }
    }
    if out.iter().any(String::is_empty) {
        return Err(format!("empty file name in '{v}'"));
    }
    if out.iter().any(|f| f == "-") {
        return Err("read_iolog=- (stdin) is not supported: iosched reads a trace twice (to check it, then to run it)".into());
    }
    Ok(out)
}

impl JobState {
    /// What trims (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`) do not
    /// combine with yet. Trims are discards of the device (`BLKDISCARD`, or
    /// io_uring's `BLOCK_URING_CMD_DISCARD`).
    fn trim_checks(&self, name: &str) -> Result<(), String> {
        if !self.rw.trims() {
            return Ok(());
        }
        let refuse = |what: &str| Err(format!("job '{name}': rw={} {what}", self.rw.as_str()));
        let sized = self.size.is_some() || self.filesize.is_some() || self.fill_device;
        if !super::targets_device(self.filename.as_deref(), sized) {
            // fio trims a regular file with fallocate(PUNCH_HOLE): the file system
            // frees the blocks, and discards them only if mounted to.
            return refuse(
                "on a file is fallocate(FALLOC_FL_PUNCH_HOLE) through the file system, \
                 which is not modeled; trim the device itself (filename=/dev/NAME)",
            );
        }
        if !self.direct && self.ioengine != IoEngine::Null {
            return refuse(
                "with direct=0: a discard also drops the range's cached pages                  (truncate_bdev_range), which the page-cache model does not do yet; use direct=1",
            );
        }
        if self.rate.iter().chain(&self.rate_iops).any(|&r| r > 0) {
            return refuse("with rate or rate_iops is not modeled yet (rates of trims)");
        }
        if self.cmdprio_perc.iter().any(|&p| p > 0) || self.cmdprio_bssplit.is_some() {
            return refuse("with cmdprio options is not modeled yet (trims carry no priority)");
        }
        if self.verify.is_some() && self.do_verify && self.rw.writes() {
            return refuse(
                "with verify is not modeled yet (verifying trimmed and rewritten blocks)",
            );
        }
        Ok(())
    }

    /// The job's verification, as fio's `thread_main` runs it: only a job that
    /// writes, with `verify` set and `do_verify` on (fio logs no written block
    /// otherwise, so `verify_backlog` has nothing to read either). A read job
    /// with `verify` verifies what it reads: its I/O is the same.
    fn verify_spec(&self, name: &str) -> Result<Option<VerifySpec>, String> {
        let writes = self.rw.writes();
        let Some(method) = self.verify.clone() else {
            return Ok(None);
        };
        if !writes || !self.do_verify {
            return Ok(None);
        }
        if !self.direct {
            return Err(format!(
                "job '{name}': verify with buffered I/O (the verification reads after the \
                 page cache is synced and dropped) is not modeled yet; use direct=1"
            ));
        }
        if self.verify_only && self.time_based {
            // fio: "does not support workloads with the time_based option set".
            return Err(format!(
                "job '{name}': verify_only does not support time_based (as in fio)"
            ));
        }
        Ok(Some(VerifySpec {
            method,
            backlog: self.verify_backlog,
            backlog_batch: self.verify_backlog_batch,
            only: self.verify_only,
        }))
    }
}

/// fio's `verify` values (options.c); `0` is VERIFY_NONE.
fn parse_verify(v: &str) -> Result<Option<String>, String> {
    const METHODS: &[&str] = &[
        "0",
        "md5",
        "crc64",
        "crc32",
        "crc32c-intel",
        "crc32c",
        "crc16",
        "crc7",
        "sha1",
        "sha256",
        "sha512",
        "sha3-224",
        "sha3-256",
        "sha3-384",
        "sha3-512",
        "xxhash",
        "meta",
        "pattern",
        "pattern_hdr",
        "null",
    ];
    if !METHODS.contains(&v) {
        return Err(format!(
            "invalid value '{v}' for verify (valid: {})",
            METHODS.join(", ")
        ));
    }
    Ok((v != "0").then(|| v.to_string()))
}

/// fio's `str_steadystate_cb`: `iops`, `iops_slope`, `bw`, `bw_slope`,
/// `lat` or `lat_slope`, then `:` and a limit: a percentage of the mean
/// (`10%`), else IOPS (a number), bytes/s (fio's size suffixes) or, for
/// `lat`, a time, which fio reads in µs (bare numbers and suffixes alike)
/// and compares with latencies in ns.
fn parse_steadystate(v: &str, kb: u32) -> Result<crate::steadystate::Criterion, String> {
    use crate::steadystate::{Criterion, Metric};
    const KINDS: &str = "iops, iops_slope, bw, bw_slope, lat, lat_slope";
    let (kind, limit) = match v.split_once(':') {
        Some((k, l)) => (k.trim(), Some(l.trim())),
        None => (v.trim(), None),
    };
    let (metric, slope) = match kind {
        "iops" => (Metric::Iops, false),
        "iops_slope" => (Metric::Iops, true),
        "bw" => (Metric::Bw, false),
        "bw_slope" => (Metric::Bw, true),
        "lat" => (Metric::Lat, false),
        "lat_slope" => (Metric::Lat, true),
        _ => {
            return Err(format!(
                "invalid value '{v}' for steadystate (valid: {KINDS}, then ':' and a limit)"
            ))
        }
    };
    let limit = match limit {
        Some(l) if !l.is_empty() => l,
        _ => {
            return Err(format!(
                "steadystate threshold must be specified in addition to criterion ('{kind}:LIMIT', e.g. '{kind}:1%')"
            ))
        }
    };
    let bad = |what: &str, e: String| format!("steadystate {what} threshold '{limit}': {e}");
    let (pct, limit) = if let Some(p) = limit.strip_suffix('%') {
        let val = p
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| bad("percentage", "not a non-negative number".into()))?;
        (true, val)
    } else {
        let val = match metric {
            Metric::Iops => limit
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| bad("IOPS", "not a non-negative number".into()))?,
            Metric::Bw => parse_abs_bytes(limit, kb).map_err(|e| bad("BW", e))? as f64,
            Metric::Lat => {
                (parse_time_us_default(limit).map_err(|e| bad("latency", e))? / 1_000) as f64
            }
        };
        (false, val)
    };
    Ok(Criterion {
        metric,
        slope,
        pct,
        limit,
    })
}

/// A time option fio keeps as an unsigned int of µs; `parse` gives ns.
fn parse_us(v: &str, parse: fn(&str) -> Result<u64, String>) -> Result<u64, String> {
    if v.contains([',', ':', '-']) {
        return Err(format!("expected a single time value, got '{v}'"));
    }
    let us = parse(v)? / 1_000;
    if us > U32_MAX {
        return Err(format!("time '{v}' is too large (at most {U32_MAX} us)"));
    }
    Ok(us)
}

fn parse_time(v: &str) -> Result<u64, String> {
    if v.contains([',', ':', '-']) {
        return Err(format!("expected a single time value, got '{v}'"));
    }
    parse_time_seconds_default(v)
}

/// `rw`'s `:N` suffix (fio's `str_rw_cb`): for a random mode, how many I/Os
/// share one random offset (`ddir_seq_nr`); for a sequential one, bytes added
/// to each next offset (`ddir_seq_add`, negative to go backwards).
fn parse_rw_suffix(mode: RwMode, suffix: &str, kb: u32) -> Result<(u32, i64), String> {
    if mode.is_random() {
        // fio uses atoi(), which reads "8k" as 8 and "x" as 0; we refuse both.
        return match suffix.parse::<u32>() {
            Ok(n) if n >= 1 => Ok((n, 0)),
            _ => Err(format!(
                "rw suffix '{suffix}': a random mode takes a count of I/Os per random offset (at least 1)"
            )),
        };
    }
    let (neg, body) = match suffix.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, suffix),
    };
    let n = parse_abs_bytes(body, kb).map_err(|e| format!("rw suffix '{suffix}': {e}"))?;
    let n = i64::try_from(n).map_err(|_| format!("rw suffix '{suffix}' is too large"))?;
    Ok((1, if neg { -n } else { n }))
}

fn parse_rw(v: &str) -> Result<RwMode, String> {
    Ok(match v {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" => RwMode::Trim,
        "randtrim" => RwMode::RandTrim,
        "trimwrite" => RwMode::TrimWrite,
        "randtrimwrite" => RwMode::RandTrimWrite,
        _ => {
            return Err(format!(
                "invalid value '{v}' for rw (valid: read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim, trimwrite, randtrimwrite)"
            ))
        }
    })
}

fn parse_engine(v: &str) -> Result<IoEngine, String> {
    // fio compares only the part before ':' ("external:/path.so").
    let head = v.split(':').next().unwrap_or("");
    Ok(match head {
        "psync" => IoEngine::Psync,
        "sync" => IoEngine::Sync,
        "pvsync" => IoEngine::Pvsync,
        "pvsync2" => IoEngine::Pvsync2,
        "libaio" => IoEngine::Libaio,
        "io_uring" => IoEngine::IoUring,
        "posixaio" => IoEngine::Posixaio,
        "null" => IoEngine::Null,
        _ => {
            if let Some(why) = unmodelled_engine(head) {
                return Err(format!("ioengine={v} is not modeled: {why}"));
            }
            return Err(format!(
                "invalid ioengine '{v}' (fio has no such engine; modeled: psync, sync, \
                 pvsync, pvsync2, libaio, io_uring, posixaio, null)"
            ));
        }
    })
}

/// Why some options that would change the I/O are refused, where a bare
/// "not modeled yet" would not tell the user what stands in the way.
fn not_modeled_reason(name: &str) -> Option<&'static str> {
    Some(match name {
        "atomic" => {
            "atomic writes (RWF_ATOMIC, REQ_ATOMIC) need a device with atomic write limits; \
             iosched's device models have none (queue/atomic_write_unit_max_bytes 0), and the \
             kernel fails every RWF_ATOMIC write to such a device with EOPNOTSUPP before it \
             reaches a scheduler (use atomic=0)"
        }
        "fdp" | "dataplacement" | "plids" | "plid_select" | "dp_scheme" => {
            "NVMe flexible data placement puts placement identifiers in the write commands \
             (through NVMe passthrough: io_uring_cmd, xnvme); iosched's device models have \
             no placement handles or reclaim units"
        }
        "sprandom" | "spr_num_regions" | "spr_op" | "spr_cs" => {
            "fio's SSD preconditioning order (sprandom.c: regions written in a random \
             order that leaves a set share of each invalid) is not modeled yet; precondition \
             with rw=randwrite"
        }
        _ => return None,
    })
}

/// The message for an option the table does not have: for the options of
/// fio's engines that are not modelled (fio registers them with the engine,
/// so with a modelled engine fio rejects them too), which engine has it and
/// why that engine is not modelled.
pub(crate) fn unknown_option(name: &str) -> String {
    let engine = match name {
        "md_per_io_size" | "pi_act" | "pi_chk" | "apptag" | "apptag_mask" | "cmd_type"
        | "xnvme_be" | "xnvme_async" | "xnvme_sync" | "xnvme_admin" | "xnvme_dev_nsid"
        | "xnvme_dev_subnqn" | "xnvme_mem" | "xnvme_iovec" => Some((
            "the io_uring_cmd and xnvme engines (NVMe passthrough: metadata, protection \
             information)",
            "xnvme",
        )),
        "sg_write_mode" | "stream_id" => Some(("the sg engine (SCSI passthrough)", "sg")),
        "libblkio_driver"
        | "libblkio_path"
        | "libblkio_pre_connect_props"
        | "libblkio_num_entries"
        | "libblkio_queue_size"
        | "libblkio_pre_start_props"
        | "libblkio_vectored"
        | "libblkio_write_zeroes_on_trim"
        | "libblkio_wait_mode"
        | "libblkio_force_enable_completion_eventfd" => Some(("the libblkio engine", "libblkio")),
        "hostname" | "port" | "protocol" | "proto" | "listen" | "pingpong" | "interface"
        | "ttl" | "window_size" | "mss" | "netsplice" => Some(("the net engine", "net")),
        "clientname" | "rbdname" | "pool" | "clustername" | "busy_poll" => {
            Some(("the rbd and rados engines", "rbd"))
        }
        "uri" => Some(("the nbd engine", "nbd")),
        "http_host" | "http_user" | "http_pass" | "http_s3_key" | "http_s3_keyid"
        | "http_s3_region" | "http_mode" | "http_verbose" | "https" => {
            Some(("the http engine", "http"))
        }
        "gpu_dev_ids" | "cuda_io" => Some(("the libcufile engine", "libcufile")),
        _ => None,
    };
    match engine {
        Some((which, e)) => format!(
            "unknown option '{name}': it is an option of {which}, which iosched does not \
             model ({})",
            unmodelled_engine(e).unwrap_or("not modeled")
        ),
        None => format!("unknown option '{name}'"),
    }
}

/// fio's real engines (every `.name` of its engines/ directory, plus
/// `external`) that the simulator does not model, with why: they are fio
/// engines, so "invalid" would be wrong, and the reason tells the user
/// whether any option could help.
fn unmodelled_engine(name: &str) -> Option<&'static str> {
    Some(match name {
        "mmap" | "vsync" | "splice" => {
            "memory-mapped / vmsplice I/O through the page cache is not modeled"
        }
        "sg" | "io_uring_cmd" | "xnvme" | "libzbc" | "libblkio" | "libiscsi" | "nbd" | "mtd"
        | "dev-dax" | "libpmem" | "spdk" => {
            "it bypasses the block layer's schedulers (passthrough or its own driver stack)"
        }
        "net" | "netsplice" | "rdma" | "http" | "nfs" | "dfs" | "rbd" | "rados" | "gfapi"
        | "gfapi_async" | "libhdfs" | "ime_psync" | "ime_psyncv" | "ime_aio" => {
            "it needs a network or a distributed file system"
        }
        "libcufile" | "libhipfile" => "it needs a GPU",
        "filecreate" | "filestat" | "filedelete" | "dircreate" | "dirstat" | "dirdelete"
        | "falloc" | "ftruncate" | "e4defrag" => "it needs a file system",
        "cpuio" | "exec" | "page_fault" => "it does no block I/O",
        "cpp_null" | "external" | "skeleton_external" => "external engines are not modeled",
        "solarisaio" | "windowsaio" => "it is not a Linux engine",
        _ => return None,
    })
}

/// fio separates several files with ':' (escaped as '\:'); one file only.
fn parse_filenames(v: &str) -> Result<Vec<String>, String> {
    // fio's get_next_str: ':' separates names, '\\:' is a colon in a name,
    // empty names are skipped.
    let mut names = Vec::new();
    let mut out = String::with_capacity(v.len());
    let mut chars = v.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                out.push(':');
                chars.next();
            }
            ':' => {
                if !out.is_empty() {
                    names.push(std::mem::take(&mut out));
                }
            }
            _ => out.push(c),
        }
    }
    if !out.is_empty() {
        names.push(out);
    }
    if names.is_empty() {
        return Err(format!("no file name in filename ('{v}')"));
    }
    if names.len() > 1 && names.iter().any(|n| n.starts_with("/dev/")) {
        return Err(format!(
            "several files in filename ('{v}') with a device among them: iosched simulates one \
             device (name one device, or files on its file system)"
        ));
    }
    Ok(names)
}

/// A cmdprio option's `R[,W]` (fio's `FIO_OPT_INT` with two offsets): one
/// value for both directions, or one each, within `min..=max`.
fn cmdprio_dirs(v: &str, kb: u32, min: u64, max: u64, name: &str) -> Result<[u64; 2], String> {
    let r = parse_per_dir(v, kb, [0; 3], name)?;
    for x in [r[0], r[1]] {
        if x < min || x > max {
            return Err(format!("{name} value {x} is out of range ({min} to {max})"));
        }
    }
    Ok([r[0], r[1]])
}

/// fio's `split_parse_prio_ddir` for one direction of `cmdprio_bssplit`:
/// `bs/perc[/class[/level[/hint]]]` entries separated by `:`; a missing
/// class and level are the `cmdprio_class` / `cmdprio` ones.
fn parse_cmdprio_bssplit_dir(
    p: &str,
    kb: u32,
    implicit: (u8, u8, u16),
) -> Result<Vec<super::CmdPrioEntry>, String> {
    let mut out: Vec<super::CmdPrioEntry> = Vec::new();
    for e in p.trim().split(':').map(str::trim).filter(|e| !e.is_empty()) {
        let f: Vec<&str> = e.split('/').map(str::trim).collect();
        if f.len() < 2 || f.len() > 5 {
            return Err(format!(
                "cmdprio_bssplit entry '{e}': expected bs/percentage[/class[/level[/hint]]]"
            ));
        }
        let bs = parse_abs_bytes(f[0], kb)?;
        let num = |i: usize, max: u64, what: &str| -> Result<u64, String> {
            match parse_plain_uint(f[i]) {
                Ok(n) if n <= max => Ok(n),
                _ => Err(format!(
                    "cmdprio_bssplit entry '{e}': {what} '{}' is not an integer from 0 to {max}",
                    f[i]
                )),
            }
        };
        let perc = num(1, 100, "percentage")? as u32;
        let class = if f.len() > 2 {
            num(2, 3, "class")? as u8
        } else {
            implicit.0
        };
        let level = if f.len() > 3 {
            num(3, 7, "level")? as u8
        } else {
            implicit.1
        };
        let hint = if f.len() > 4 {
            num(4, 1023, "hint")? as u16
        } else {
            implicit.2
        };
        out.push(super::CmdPrioEntry {
            bs: Some(bs),
            perc,
            class,
            level,
            hint,
        });
    }
    // fio sorts the entries by block size and caps each size's total at 100.
    out.sort_by_key(|e| e.bs);
    let mut i = 0;
    while i < out.len() {
        let bs = out[i].bs;
        let total: u32 = out.iter().filter(|e| e.bs == bs).map(|e| e.perc).sum();
        if total > 100 {
            return Err(format!(
                "cmdprio_bssplit total percentage for bs: {} exceeds 100",
                bs.unwrap_or(0)
            ));
        }
        i += out.iter().filter(|e| e.bs == bs).count();
    }
    Ok(out)
}

/// fio's `str_fst_cb`: `roundrobin` and `random` with an optional `:N` (I/Os
/// before the next file, default 1), or `sequential`.
fn parse_file_service(v: &str) -> Result<super::FileService, String> {
    use super::{FileService, FileServiceKind};
    let (kind, nr) = match v.split_once(':') {
        Some((k, n)) => (k.trim(), Some(n.trim())),
        None => (v.trim(), None),
    };
    let kind = match kind {
        "roundrobin" => FileServiceKind::RoundRobin,
        "random" => FileServiceKind::Random,
        "sequential" => FileServiceKind::Sequential,
        "zipf" | "pareto" | "normal" | "gauss" => {
            return Err(format!(
                "file_service_type={kind} (a skewed choice of file) is not modeled yet; use \
                 roundrobin, random or sequential"
            ))
        }
        _ => {
            return Err(format!(
                "invalid value '{v}' for file_service_type (valid: roundrobin, random, \
                 sequential, zipf, pareto, normal, gauss)"
            ))
        }
    };
    let nr = match nr {
        None => 1,
        Some(n) => match parse_plain_uint(n) {
            Ok(n) if (1..=U32_MAX).contains(&n) => n as u32,
            _ => {
                return Err(format!(
                    "invalid file_service_type count in '{v}' (an integer of at least 1)"
                ))
            }
        },
    };
    Ok(FileService { kind, nr })
}

/// The per-direction parts of `R[,W[,T]]` (fio's rule for `bs`, `bsrange`,
/// `rate`, ...): with one part all three directions take it; with several,
/// each non-empty part sets its direction and the last one also the
/// directions after it; an empty part leaves its direction unchanged.
fn split_dirs(v: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "too many values in '{v}' (at most read,write,trim)"
        ));
    }
    let mut out = [None; 3];
    let last = parts.len() - 1;
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() {
            continue;
        }
        out[i] = Some(*p);
        if i == last {
            for slot in out.iter_mut().skip(i + 1) {
                *slot = Some(*p);
            }
        }
    }
    if out.iter().all(Option::is_none) {
        return Err(format!("expected a value, got '{v}'"));
    }
    Ok(out)
}

/// `bsrange`'s `MIN-MAX` (or `MIN:MAX`), swapped when reversed as fio does.
fn parse_range(p: &str, kb: u32) -> Result<(u64, u64), String> {
    let (a, b) = p
        .split_once(['-', ':'])
        .ok_or_else(|| format!("expected a block size range MIN-MAX, got '{p}'"))?;
    let lo = parse_abs_bytes(a.trim(), kb)?;
    let hi = parse_abs_bytes(b.trim(), kb)?;
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    if lo == 0 {
        return Err("block size must be at least 1".to_string());
    }
    if hi > U32_MAX {
        return Err(format!("block size {hi} is too large"));
    }
    Ok((lo, hi))
}

/// fio's `str_split_parse` for `bssplit`: `R,W[,T]` (without a third part,
/// trims take the writes'), or one table for all three directions.
fn bssplit_dirs(v: &str) -> [Option<&str>; 3] {
    match v.split_once(',') {
        None => [Some(v); 3],
        Some((r, rest)) => match rest.split_once(',') {
            Some((w, t)) => [Some(r), Some(w), Some(t)],
            None => [Some(r), Some(rest), Some(rest)],
        },
    }
}

/// `random_distribution`: `random`, `zipf[:theta[:center]]`,
/// `pareto[:h[:center]]`, `normal[:dev[:center]]`, `zoned:...`,
/// `zoned_abs:...`, with fio's defaults and range checks.
fn parse_random_dist(v: &str, kb: u32) -> Result<RandomDist, String> {
    let (name, rest) = match v.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (v.trim(), None),
    };
    let floats = |default: f64| -> Result<(f64, Option<f64>), String> {
        let Some(r) = rest else {
            return Ok((default, None));
        };
        let mut it = r.split(':');
        let num = |s: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| format!("malformed number '{s}' in random_distribution={v}"))
        };
        let val = num(it.next().unwrap_or(""))?;
        let center = it.next().map(num).transpose()?;
        if it.next().is_some() {
            return Err(format!("too many values in random_distribution={v}"));
        }
        if let Some(c) = center {
            if !(0.0..=1.0).contains(&c) {
                return Err(format!(
                    "distribution center {c} out of range (0 <= center <= 1.0)"
                ));
            }
        }
        Ok((val, center))
    };
    Ok(match name {
        "random" => RandomDist::Random,
        "sequence" => {
            let body = rest.ok_or_else(|| {
                "random_distribution=sequence needs block indices, e.g. sequence:2,0,1".to_string()
            })?;
            let blocks = body
                .split(',')
                .map(|b| {
                    b.trim()
                        .parse::<u32>()
                        .map(u64::from)
                        .map_err(|_| format!("malformed block index '{b}' in random_distribution={v}"))
                })
                .collect::<Result<Vec<u64>, String>>()?;
            if blocks.len() > 64 {
                return Err(format!(
                    "random_distribution=sequence takes at most 64 blocks, got {}",
                    blocks.len()
                ));
            }
            RandomDist::Sequence {
                blocks,
                stride: false,
            }
        }
        "zipf" => {
            let (theta, center) = floats(1.1)?;
            if theta == 1.0 {
                return Err("zipf theta must be different from 1.0".to_string());
            }
            if theta <= 0.0 {
                return Err(format!("zipf theta must be positive, got {theta}"));
            }
            RandomDist::Zipf { theta, center }
        }
        "pareto" => {
            let (h, center) = floats(0.2)?;
            if h <= 0.0 || h >= 1.0 {
                return Err(format!("pareto input {h} out of range (0 < input < 1.0)"));
            }
            RandomDist::Pareto { h, center }
        }
        "normal" => {
            let (dev, center) = floats(0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return Err(format!(
                    "normal deviation {dev} out of range (0 <= input < 100.0)"
                ));
            }
            RandomDist::Normal { dev, center }
        }
        "zoned" | "zoned_abs" => {
            let body = rest.ok_or_else(|| format!("random_distribution={name} needs zones, e.g. {name}:60/10:40/90"))?;
            let mut rel: [Vec<(u8, u8)>; 3] = Default::default();
            let mut abs: [Vec<(u8, u64)>; 3] = Default::default();
            for (d, part) in bssplit_dirs(body).iter().enumerate() {
                let Some(p) = part else { continue };
                if name == "zoned" {
                    rel[d] = parse_zones(p, false, kb)?
                        .into_iter()
                        .map(|(a, s)| (a, s as u8))
                        .collect();
                } else {
                    abs[d] = parse_zones(p, true, kb)?;
                }
            }
            if name == "zoned" {
                RandomDist::Zoned(rel)
            } else {
                RandomDist::ZonedAbs(abs)
            }
        }
        _ => {
            return Err(format!(
                "invalid value '{v}' for random_distribution (valid: random, zipf, pareto, normal, zoned, zoned_abs)"
            ))
        }
    })
}

/// Most zones fio keeps per direction (`ZONESPLIT_MAX`).
const ZONESPLIT_MAX: usize = 256;

/// One direction's zones, `ACCESS/SIZE:...` (fio's `zone_split_ddir`): access
/// shares must add up to exactly 100; `zoned` sizes are percentages (above
/// 100 counts as 100; blank or 0 share what the others leave equally; more
/// than 100 in all is an error), `zoned_abs` sizes bytes (required). Parsing
/// stops at an empty entry; an empty list leaves the direction uniform.
fn parse_zones(p: &str, absolute: bool, kb: u32) -> Result<Vec<(u8, u64)>, String> {
    const BLANK: u64 = u64::MAX;
    let mut zones: Vec<(u8, u64)> = Vec::new();
    for e in p.trim().split(':') {
        let e = e.trim();
        if e.is_empty() {
            break;
        }
        if zones.len() == ZONESPLIT_MAX {
            return Err(format!("more than {ZONESPLIT_MAX} zones in one direction"));
        }
        let (a, size) = match e.split_once('/') {
            Some((a, s)) => (a.trim(), Some(s.trim())),
            None => (e, None),
        };
        let access = parse_plain_uint(a)
            .ok()
            .filter(|n| *n <= 100)
            .ok_or_else(|| format!("zone access share '{a}' is not a percentage (0..100)"))?;
        let size = if absolute {
            let s =
                size.ok_or_else(|| format!("zoned_abs zone '{e}' needs a size (ACCESS/SIZE)"))?;
            let b = parse_abs_bytes(s, kb)?;
            if b == 0 {
                return Err(format!("zoned_abs zone '{e}' has size 0"));
            }
            b
        } else {
            match size.map(atoi) {
                Some(n) if n > 100 => 100,
                Some(n) if n > 0 => n as u64,
                _ => BLANK,
            }
        };
        zones.push((access as u8, size));
    }
    if zones.is_empty() {
        return Ok(zones);
    }
    let access: u64 = zones.iter().map(|z| z.0 as u64).sum();
    if access != 100 {
        return Err(format!("zone access shares add up to {access}, not 100"));
    }
    if !absolute {
        let given: u64 = zones.iter().filter(|z| z.1 != BLANK).map(|z| z.1).sum();
        let blanks = zones.iter().filter(|z| z.1 == BLANK).count() as u64;
        if given > 100 {
            return Err("zone sizes add to more than 100%".to_string());
        }
        if blanks > 0 {
            let total = if blanks == 1 && zones.len() == 1 {
                100
            } else {
                given
            };
            let share = (100 - total) / blanks;
            for z in zones.iter_mut().filter(|z| z.1 == BLANK) {
                z.1 = share;
            }
        }
    }
    Ok(zones)
}

/// Most entries fio keeps in one direction's `bssplit` (`BSSPLIT_MAX`).
const BSSPLIT_MAX: usize = 64;

/// One direction's `bssplit` table, `SIZE[/PERCENT]:...`, resolved as fio's
/// `bssplit_ddir` does: parsing stops at an empty entry; a percentage above
/// 100 counts as 100, a missing, zero or non-numeric one as blank; blank
/// entries share what the others leave of 100 equally (fio's unsigned
/// arithmetic included, so given percentages above 100 leave a huge share);
/// more than 100 with two or more blanks is an error. Sorted in fio's lookup
/// order. `None` for an empty table (the direction is left unchanged).
fn parse_bssplit_dir(p: &str, kb: u32) -> Result<Option<Vec<(u64, u32)>>, String> {
    const BLANK: u32 = u32::MAX;
    let mut entries: Vec<(u64, u32)> = Vec::new();
    for e in p.trim().split(':') {
        let e = e.trim();
        if e.is_empty() {
            break;
        }
        if entries.len() == BSSPLIT_MAX {
            return Err(format!(
                "bssplit has more than {BSSPLIT_MAX} entries in one direction"
            ));
        }
        let (size, perc) = match e.split_once('/') {
            Some((s, pc)) => (s.trim(), Some(atoi(pc.trim()))),
            None => (e, None),
        };
        let bs = parse_abs_bytes(size, kb)?;
        if bs == 0 {
            return Err("block size must be at least 1".to_string());
        }
        if bs > U32_MAX {
            return Err(format!("block size {bs} is too large"));
        }
        let perc = match perc {
            Some(n) if n > 100 => 100,
            Some(n) if n > 0 => n as u32,
            _ => BLANK,
        };
        entries.push((bs, perc));
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let given: u32 = entries.iter().filter(|e| e.1 != BLANK).map(|e| e.1).sum();
    let blanks = entries.iter().filter(|e| e.1 == BLANK).count() as u32;
    if given > 100 && blanks > 1 {
        return Err("bssplit percentages add to more than 100%".to_string());
    }
    if blanks > 0 {
        let total = if blanks == 1 && entries.len() == 1 {
            100
        } else {
            given
        };
        let share = 100u32.wrapping_sub(total) / blanks;
        for e in entries.iter_mut().filter(|e| e.1 == BLANK) {
            e.1 = share;
        }
    }
    // Largest percentage first; a stable sort keeps equal ones in order.
    entries.sort_by_key(|e| std::cmp::Reverse(e.1));
    Ok(Some(entries))
}

/// C's `atoi`: leading digits (after an optional sign), 0 when there are none.
fn atoi(s: &str) -> i64 {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut n: i64 = 0;
    for c in digits.chars() {
        match c.to_digit(10) {
            Some(d) => n = n.saturating_mul(10).saturating_add(d as i64),
            None => break,
        }
    }
    if neg {
        -n
    } else {
        n
    }
}

/// `bs=R[,W[,T]]`: with one value all three directions take it; with
/// several, each given value sets its direction and the last one also fills
/// the directions after it; an empty part leaves its direction unchanged
/// (`bs=,8k` sets only writes and trims, `bs=4k,` only reads).
fn parse_bs(v: &str, kb: u32, current: [u64; 3]) -> Result<[u64; 3], String> {
    if v.contains([':', '-']) {
        return Err(format!(
            "block size ranges ('{v}') are given with bsrange=MIN-MAX"
        ));
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!(
            "too many block sizes in '{v}' (at most read,write,trim)"
        ));
    }
    let mut bs = current;
    let last = parts.len() - 1;
    for (i, p) in parts.iter().enumerate() {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let n = parse_abs_bytes(p, kb)?;
        if n == 0 {
            return Err("block size must be at least 1".to_string());
        }
        if n > U32_MAX {
            return Err(format!("block size {n} is too large"));
        }
        bs[i] = n;
        if i == last {
            for slot in bs.iter_mut().skip(i + 1) {
                *slot = n;
            }
        }
    }
    if parts.iter().all(|p| p.trim().is_empty()) {
        return Err(format!("option 'bs' requires a value, got '{v}'"));
    }
    Ok(bs)
}

/// fio's per-direction values (`rate=R[,W[,T]]`): as `bs`, one value sets all
/// three directions, the last of several fills those after it, and an empty
/// part leaves its direction unchanged (`rate=,500k` limits writes only,
/// `rate=500k,` reads only).
fn parse_per_dir(v: &str, kb: u32, current: [u64; 3], name: &str) -> Result<[u64; 3], String> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!(
            "too many values in '{v}' for {name} (at most read,write,trim)"
        ));
    }
    let mut out = current;
    let last = parts.len() - 1;
    for (i, p) in parts.iter().enumerate() {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        if p.contains([':', '-']) {
            return Err(format!("expected a number for {name}, got '{p}'"));
        }
        let n = parse_abs_bytes(p, kb)?;
        out[i] = n;
        if i == last {
            for slot in out.iter_mut().skip(i + 1) {
                *slot = n;
            }
        }
    }
    Ok(out)
}

/// fio's CPU list syntax: comma-separated CPUs or inclusive ranges, e.g.
/// "0-3,5".
/// The deepest `iodepth` accepted: each I/O in flight is simulated state allocated
/// up front, and 65536 is already past any device queue and the kernel's default
/// `fs.aio-max-nr` (io_uring rings stop at 32768 entries).
pub const MAX_IODEPTH: u64 = 65_536;
const IODEPTH_WHY: &str =
    "the kernel's default fs.aio-max-nr; every I/O in flight is allocated up front";

/// The most jobs (clones, over all sections) a run may have: fio's `REAL_MAX_JOBS`.
pub const MAX_JOBS: u64 = 4096;
const JOBS_WHY: &str = "fio's REAL_MAX_JOBS, the most jobs fio runs at once";

/// `v`, or an error naming the largest value accepted and why.
fn at_most(v: u64, max: u64, why: &str) -> Result<u64, String> {
    if v > max {
        return Err(format!("value {v} is above the maximum of {max} ({why})"));
    }
    Ok(v)
}

fn parse_cpu_list(v: &str) -> Result<Vec<u32>, String> {
    // fio's FIO_MAX_CPUS bound.
    const MAX_CPUS: u64 = 4096;
    let mut cpus = Vec::new();
    for part in v.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("malformed CPU list '{v}'"));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo = parse_plain_uint(lo).map_err(|_| format!("malformed CPU list '{v}'"))?;
        let hi = parse_plain_uint(hi).map_err(|_| format!("malformed CPU list '{v}'"))?;
        if lo > hi {
            return Err(format!("reversed CPU range '{part}' in '{v}'"));
        }
        if hi >= MAX_CPUS {
            return Err(format!("CPU {hi} is too large (max {})", MAX_CPUS - 1));
        }
        cpus.extend(lo as u32..=hi as u32);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// `percentile_list`: up to 20 values in 0..=100 separated by ':'.
fn parse_percentiles(v: &str) -> Result<Vec<f64>, String> {
    const MAX_LEN: usize = 20; // fio's FIO_IO_U_LIST_MAX_LEN
    let mut out = Vec::new();
    for part in v.split(':') {
        let part = part.trim();
        let f: f64 = part
            .parse()
            .ok()
            .filter(|f: &f64| f.is_finite())
            .ok_or_else(|| format!("not a floating point value: '{part}'"))?;
        if !(0.0..=100.0).contains(&f) {
            return Err(format!("percentile {f} out of range 0..100"));
        }
        out.push(f);
    }
    if out.len() > MAX_LEN {
        return Err(format!("percentile_list has more than {MAX_LEN} entries"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_no_duplicate_names() {
        let mut seen = std::collections::HashSet::new();
        for o in OPTIONS {
            for n in std::iter::once(&o.name).chain(o.aliases.iter()) {
                assert!(seen.insert(*n), "duplicate option name {n}");
            }
        }
    }

    #[test]
    fn bs_variants() {
        let d = [4096; 3];
        assert_eq!(parse_bs("8k", 1024, d).unwrap(), [8192; 3]);
        assert_eq!(parse_bs("4k,8k", 1024, d).unwrap(), [4096, 8192, 8192]);
        assert_eq!(parse_bs("1k,2k,3k", 1024, d).unwrap(), [1024, 2048, 3072]);
        assert_eq!(parse_bs(",8k", 1024, d).unwrap(), [4096, 8192, 8192]);
        assert_eq!(parse_bs("8k,", 1024, d).unwrap(), [8192, 4096, 4096]);
        assert!(parse_bs("4k-8k", 1024, d).is_err());
        assert!(parse_bs("4k:8k", 1024, d).is_err());
        assert!(parse_bs("0", 1024, d).is_err());
        assert!(parse_bs("1,2,3,4", 1024, d).is_err());
        assert!(parse_bs(",", 1024, d).is_err());
    }

    #[test]
    fn bssplit_tables_follow_fio() {
        let t = |s: &str| parse_bssplit_dir(s, 1024).unwrap().unwrap();
        assert_eq!(
            t("4k/50:64k/40:1m/10"),
            vec![(4096, 50), (65536, 40), (1 << 20, 10)]
        );
        // Sorted by percentage, largest first; equal ones keep their order.
        assert_eq!(
            t("4k/10:8k/80:16k/10"),
            vec![(8192, 80), (4096, 10), (16384, 10)]
        );
        // Blanks share the rest equally (integer division).
        assert_eq!(t("4k/50:8k:16k"), vec![(4096, 50), (8192, 25), (16384, 25)]);
        assert_eq!(t("4k:8k:16k"), vec![(4096, 33), (8192, 33), (16384, 33)]);
        // 0 and junk are blank; above 100 is 100.
        assert_eq!(t("4k/0:8k/x"), vec![(4096, 50), (8192, 50)]);
        assert_eq!(t("4k/150"), vec![(4096, 100)]);
        // Over 100 with one blank: fio's unsigned arithmetic.
        assert_eq!(
            t("4k/90:8k/20:16k"),
            vec![(16384, u32::MAX - 9), (4096, 90), (8192, 20)]
        );
        // Parsing stops at an empty entry.
        assert_eq!(t("4k/50::8k/50"), vec![(4096, 50)]);
        assert_eq!(parse_bssplit_dir("", 1024).unwrap(), None);
        assert!(parse_bssplit_dir("4k/90:8k:16k:32k/20", 1024).is_err());
        assert!(parse_bssplit_dir("0/50:4k/50", 1024).is_err());
        assert!(parse_bssplit_dir("4q/50", 1024).is_err());
        let many = vec!["4k"; 65].join(":");
        assert!(parse_bssplit_dir(&many, 1024).is_err());
        assert_eq!(bssplit_dirs("a,b"), [Some("a"), Some("b"), Some("b")]);
        assert_eq!(bssplit_dirs("a,b,c"), [Some("a"), Some("b"), Some("c")]);
        assert_eq!(bssplit_dirs(",b"), [Some(""), Some("b"), Some("b")]);
        assert_eq!(bssplit_dirs("a"), [Some("a"); 3]);
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("4k-16k", 1024).unwrap(), (4096, 16384));
        assert_eq!(parse_range("16k:4k", 1024).unwrap(), (4096, 16384));
        assert!(parse_range("4k", 1024).is_err());
        assert!(parse_range("0-4k", 1024).is_err());
        assert_eq!(
            split_dirs("1k-4k,,8k-16k").unwrap(),
            [Some("1k-4k"), None, Some("8k-16k")]
        );
        assert!(split_dirs(",,").is_err());
    }

    #[test]
    fn per_direction_rates() {
        let z = [0; 3];
        assert_eq!(parse_per_dir("1m", 1024, z, "rate").unwrap(), [1 << 20; 3]);
        assert_eq!(
            parse_per_dir("500k,100k", 1024, z, "rate").unwrap(),
            [512_000, 102_400, 102_400]
        );
        assert_eq!(
            parse_per_dir(",500k", 1024, z, "rate").unwrap(),
            [0, 512_000, 512_000]
        );
        assert_eq!(
            parse_per_dir("500k,", 1024, z, "rate").unwrap(),
            [512_000, 0, 0]
        );
        assert!(parse_per_dir("1,2,3,4", 1024, z, "rate").is_err());
        assert!(parse_per_dir("1k-2k", 1024, z, "rate").is_err());
        assert!(parse_per_dir("fast", 1024, z, "rate").is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list("7").unwrap(), vec![7]);
        assert_eq!(parse_cpu_list("3,1,1").unwrap(), vec![1, 3]);
        for bad in ["", "a", "3-1", "1,,2", "1-", "99999"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn percentiles() {
        assert_eq!(parse_percentiles("50:99.9").unwrap(), vec![50.0, 99.9]);
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("1:").is_err());
        assert!(parse_percentiles("nan").is_err());
    }

    #[test]
    fn filenames() {
        assert_eq!(parse_filenames("/dev/sdb").unwrap(), vec!["/dev/sdb"]);
        assert_eq!(parse_filenames("a\\:b").unwrap(), vec!["a:b"]);
        // fio's get_next_str: ':' separates, empty names are skipped.
        assert_eq!(parse_filenames("a::b:").unwrap(), vec!["a", "b"]);
        assert!(parse_filenames(":").is_err());
        assert!(parse_filenames("/dev/a:/dev/b").is_err());
    }
}
