//! Parser for fio job files and fio's command-line syntax.
//!
//! The simulator accepts the same input a user would give to `fio`, either a
//! job file ([`parse_job_file`]) or fio's command-line options
//! ([`parse_command_line`]), and turns it into typed, validated
//! [`JobSpec`]s. The parser follows fio's own behaviour (parse.c, init.c and
//! the option table in options.c) wherever that behaviour is well defined,
//! and refuses input where fio would silently guess.
//!
//! # What is parsed
//!
//! * Job files: `[section]` headers, `[global]` sections (any section whose
//!   name starts with `global`, as in fio; may appear several times and
//!   applies to the jobs that follow it), `key=value` and `key = value`
//!   lines, bare flags (`thread`, `time_based`, ...), blank lines, and
//!   comments. As in fio, `;` and `#` start a comment anywhere on a line, so
//!   values cannot contain them. `${VAR}` is replaced with the environment
//!   variable's value, like fio does; an unset variable is refused by name
//!   (fio would substitute an empty string); fio's `$pagesize`,
//!   `$mb_memory` and `$ncpus` keywords are rejected because they depend on
//!   the host. `include` lines are rejected.
//! * The command line: `-opt=val`, `--opt=val` and `--opt val` (the last only
//!   for options that take a value, as with getopt). Options before the
//!   first `--name` are global; each `--name=x` starts a new job (and
//!   `--name=global...` returns to the global section). Program options
//!   `--output`, `--output-format` (normal, json, json+ or a list of them),
//!   `--readonly`, `--warnings-fatal` are honoured; `--eta`, `--eta-newline`,
//!   `--eta-interval`, `--max-jobs`, `--alloc-size` and `--bandwidth-log` are
//!   accepted and ignored; other fio program options are rejected, each for
//!   its reason. A bare
//!   job-file argument is rejected with a hint to use `iosched run FILE`.
//!   Option names must be spelled out in full (getopt's unique-prefix
//!   abbreviations are not accepted).
//!
//! Numbers follow fio's rules: `k`/`m`/`g`/`t`/`p` suffixes (optionally with
//! a `b`) and IEC `kib`/`mib`/... suffixes, interpreted according to
//! `kb_base` (default 1024: SI-looking suffixes are powers of two and IEC
//! ones powers of ten, fio's "compatibility mode"), `0x` hex literals, and
//! time suffixes `us`, `ms`, `s`, `m`, `h`, `d` (default seconds for
//! `runtime` and `ramp_time`). Spellings that fio would misread (`4q`,
//! `1.5g`, `10sec`) are errors.
//!
//! # The three option classes
//!
//! Every option name is looked up in one explicit table taken from fio's
//! options.c:
//!
//! 1. **Modeled** options are parsed and validated into [`JobSpec`] fields.
//! 2. **Ignored** options are accepted because they cannot change the
//!    simulated I/O (e.g. `lockmem`, `thread`, `description`,
//!    latency-statistics switches). Their names are collected, deduplicated
//!    in first-seen order, in [`FioInput::ignored`]. The latency, bandwidth
//!    and IOPS logs (`write_lat_log`, `write_bw_log`, `write_iops_log` and
//!    their `log_*` settings) are modeled and written (see [`crate::iolog`]);
//!    `write_hist_log` is accepted and ignored. `read_iolog`, `write_iolog`
//!    and the `replay_*` options are modeled (see [`crate::trace`]).
//! 3. **Not modeled yet** options would change the I/O (`steadystate`,
//!    `cmdprio_percentage`, ...) and are rejected with
//!    `option 'steadystate' is not modeled yet`, except when given the value
//!    that is fio's no-op default (e.g. `nrfiles=1`, `atomic=0`), which is
//!    accepted and listed as ignored.
//!
//! [`option_table`] lists every option with its class; docs/fio.md keeps
//! the same table for users.
//!
//! Anything not in the table is rejected as `unknown option` (fio rejects
//! options it does not know too).
//!
//! # Example
//!
//! ```
//! use sim::fio::{parse_job_file, RwMode};
//!
//! let text = "\
//! [global]
//! ioengine=libaio
//! direct=1
//! bs=4k
//! thread            ; accepted, cannot change the I/O
//!
//! [randread]
//! rw=randread
//! iodepth=32
//! size=1g
//! ";
//! let input = parse_job_file("example.fio", text).unwrap();
//! let job = &input.jobs[0];
//! assert_eq!(job.name, "randread");
//! assert_eq!(job.rw, RwMode::RandRead);
//! assert_eq!(job.bs.read, 4096);
//! assert_eq!(job.ioengine.max_in_flight(job.iodepth), 32);
//! assert_eq!(input.ignored, vec!["thread".to_string()]);
//! ```

mod builder;
mod cmdline;
mod error;
mod jobfile;
mod number;
mod options;

pub use cmdline::{parse_command_line, parse_output_format, parse_terse_version};
pub use error::FioError;
pub use jobfile::{parse_job_file, parse_job_file_with_env};
pub use options::{MAX_IODEPTH, MAX_JOBS};

/// How iosched treats one fio job option (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionClass {
    /// Parsed and simulated (or, for report switches, reported) as fio does.
    Modeled,
    /// Accepted and listed as ignored: it cannot change the simulated I/O.
    NoEffect,
    /// Refused with a message naming it, except for the values listed (fio's
    /// no-op defaults), which are accepted as ignored.
    Refused(Vec<&'static str>),
}

/// One fio job option known to iosched: its name, fio's aliases and class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionInfo {
    /// fio's name of the option.
    pub name: &'static str,
    /// fio's other names for it.
    pub aliases: Vec<&'static str>,
    /// What iosched does with it.
    pub class: OptionClass,
}

/// Every fio job option iosched knows, in the order of its table. Options
/// not listed are refused as unknown.
pub fn option_table() -> Vec<OptionInfo> {
    options::all()
        .iter()
        .map(|o| OptionInfo {
            name: o.name,
            aliases: o.aliases.to_vec(),
            class: match o.class {
                options::Class::Modeled => OptionClass::Modeled,
                options::Class::Ignored(_) => OptionClass::NoEffect,
                options::Class::NotModeled(v) => OptionClass::Refused(v.to_vec()),
            },
        })
        .collect()
}

/// Everything read from one fio invocation: global options, jobs and output
/// settings.
#[derive(Debug, Clone, PartialEq)]
pub struct FioInput {
    /// Options given in global sections (or before the first `--name` on
    /// the command line), in order, as `(canonical name, value)`. Bare
    /// flags have an empty value. Mirrors fio's JSON "global options".
    pub global: Vec<(String, String)>,
    /// The jobs, in definition order; `numjobs` is not expanded.
    pub jobs: Vec<JobSpec>,
    /// Names of accepted options that have no effect on the simulation,
    /// deduplicated, in first-seen order.
    pub ignored: Vec<String>,
    /// Where and how to report results.
    pub output: OutputOptions,
    /// Non-fatal problems fio would also only warn about (e.g. `time_based`
    /// without `runtime`). With `--warnings-fatal` these are errors instead.
    pub warnings: Vec<String>,
}

/// Output settings from fio's program options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputOptions {
    /// The report formats (`--output-format`, a list as in fio), each at
    /// most once, in the order fio prints them; never empty.
    pub formats: Vec<OutputFormat>,
    /// `--terse-version` (3, the default, 4 or 5).
    pub terse_version: u32,
    /// Write the report to this file instead of stdout (`--output`).
    pub output_file: Option<String>,
}

impl Default for OutputOptions {
    /// fio's default: the normal report on stdout.
    fn default() -> Self {
        OutputOptions {
            formats: vec![OutputFormat::Normal],
            terse_version: 3,
            output_file: None,
        }
    }
}

/// The report formats. Declared in the order fio 3.x prints them when
/// several are asked for: terse lines first (printed per job as the jobs'
/// statistics are shown), then the JSON report, then the normal one (its
/// `__show_run_stats` flushes the JSON root before the normal group and disk
/// lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OutputFormat {
    /// fio's terse (`--minimal`) lines, version `OutputOptions::terse_version`.
    Terse,
    /// fio's JSON report.
    Json,
    /// fio's `json+`: the JSON report with each latency histogram's `bins`.
    JsonPlus,
    /// fio's human-readable report.
    Normal,
}

/// Where a job was defined, for later error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceLocation {
    /// A job-file section; `line` is the 1-based line of its header.
    File {
        /// The file name as given to the parser.
        path: String,
        /// 1-based line of the `[section]` header.
        line: usize,
    },
    /// A `--name` on the command line.
    CommandLine,
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceLocation::File { path, line } => write!(f, "{path}:{line}"),
            SourceLocation::CommandLine => f.write_str("command line"),
        }
    }
}

/// The I/O pattern of a job (fio's `rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    /// Sequential reads (`read`).
    Read,
    /// Sequential writes (`write`).
    Write,
    /// Random reads (`randread`).
    RandRead,
    /// Random writes (`randwrite`).
    RandWrite,
    /// Sequential mixed reads and writes (`rw` or `readwrite`).
    ReadWrite,
    /// Random mixed reads and writes (`randrw`).
    RandRw,
    /// Sequential trims (`trim`): discards of the device.
    Trim,
    /// Random trims (`randtrim`).
    RandTrim,
    /// Sequential trims, each followed by a write of the trimmed range
    /// (`trimwrite`).
    TrimWrite,
    /// Random trims, each followed by a write of the same range (`randtrimwrite`).
    RandTrimWrite,
}

impl RwMode {
    /// fio's spelling of the mode (as fio prints it).
    pub fn as_str(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }

    /// Whether offsets are chosen at random.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }

    /// Whether the job issues reads.
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw
        )
    }

    /// Whether the job issues writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RwMode::Write
                | RwMode::RandWrite
                | RwMode::ReadWrite
                | RwMode::RandRw
                | RwMode::TrimWrite
                | RwMode::RandTrimWrite
        )
    }

    /// Whether the job issues trims (fio's `td_trim`).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }

    /// Trims each followed by a write of the same place (fio's `td_trimwrite`).
    pub fn trim_then_write(self) -> bool {
        matches!(self, RwMode::TrimWrite | RwMode::RandTrimWrite)
    }
}

/// Whether a job works on the simulated device itself rather than on a file of
/// the file system on it: a `filename` under `/dev/`, or no file and no size
/// (`size`, `filesize`, `fill_device`) at all.
pub fn targets_device(filename: Option<&str>, sized: bool) -> bool {
    match filename {
        Some(f) => f.starts_with("/dev/"),
        None => !sized,
    }
}

/// The I/O engines the simulator can model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngine {
    /// `psync`: pread/pwrite (fio's default on Linux).
    Psync,
    /// `sync`: read/write.
    Sync,
    /// `pvsync`: preadv/pwritev.
    Pvsync,
    /// `pvsync2`: preadv2/pwritev2.
    Pvsync2,
    /// `libaio`: Linux native AIO.
    Libaio,
    /// `io_uring`.
    IoUring,
    /// `posixaio`: POSIX AIO.
    Posixaio,
    /// `null`: fio's null engine (engines/null.c): no system call, no block
    /// layer, no device; an I/O completes when it is committed, so only fio's
    /// own per-I/O work costs time.
    Null,
}

impl IoEngine {
    /// The engine as a host model prices it.
    pub fn host_kind(self) -> host::profile::EngineKind {
        use host::profile::EngineKind as K;
        match self {
            IoEngine::IoUring => K::IoUring,
            IoEngine::Libaio => K::Libaio,
            IoEngine::Posixaio => K::Posixaio,
            // The null engine never reaches a host model's submission path
            // (a run of null jobs is simulated on the free host).
            IoEngine::Psync
            | IoEngine::Sync
            | IoEngine::Pvsync
            | IoEngine::Pvsync2
            | IoEngine::Null => K::Sync,
        }
    }
}

impl IoEngine {
    /// fio's name of the engine.
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Psync => "psync",
            IoEngine::Sync => "sync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Null => "null",
        }
    }

    /// Whether the engine can have more than one I/O in flight per job.
    pub fn is_async(self) -> bool {
        matches!(
            self,
            IoEngine::Libaio | IoEngine::IoUring | IoEngine::Posixaio | IoEngine::Null
        )
    }

    /// How many I/Os one job can have in flight: synchronous engines block
    /// in each call, so `iodepth` has no effect on them.
    pub fn max_in_flight(self, iodepth: u32) -> u32 {
        if self.is_async() {
            iodepth.max(1)
        } else {
            1
        }
    }
}

/// Block sizes per data direction, as set by `bs=R[,W[,T]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSizes {
    /// Block size of reads, in bytes.
    pub read: u64,
    /// Block size of writes, in bytes.
    pub write: u64,
    /// Block size of trims, in bytes (kept for fio's report; trims are not
    /// modeled).
    pub trim: u64,
}

impl BlockSizes {
    /// The smallest of the three sizes (fio's `td_min_bs`).
    pub fn min(&self) -> u64 {
        self.read.min(self.write).min(self.trim)
    }
}

/// How a direction's block size varies from I/O to I/O (`bsrange`, `bssplit`),
/// as fio's `get_next_buflen` draws it. A direction whose smallest and largest
/// sizes are equal has none: every I/O has its `bs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BsDist {
    /// `bsrange=MIN-MAX`: MIN + MAX × U (U uniform in [0, 1)), rounded down
    /// to a multiple of MIN and capped at MAX: each multiple of MIN below MAX
    /// about equally likely, MAX taking the rest.
    Range {
        /// Smallest size, bytes.
        min: u64,
        /// Largest size, bytes.
        max: u64,
    },
    /// `bssplit`: `(size, percentage)` in the order fio looks them up (by
    /// percentage, largest first; equal ones in the order given), percentages
    /// as fio resolved them (blank ones share what is left of 100). A draw `v`
    /// uniform in 1..=100 takes the first size whose running percentage total
    /// reaches `v`, else the last size (with a nonzero percentage); as for a
    /// range, the size is then rounded down to a multiple of the smallest.
    Split(Vec<(u64, u32)>),
}

impl BsDist {
    /// The smallest size, bytes.
    pub fn min(&self) -> u64 {
        match self {
            BsDist::Range { min, .. } => *min,
            BsDist::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(0),
        }
    }

    /// The largest size, bytes.
    pub fn max(&self) -> u64 {
        match self {
            BsDist::Range { max, .. } => *max,
            BsDist::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(0),
        }
    }
}

/// fio's `random_distribution` for random jobs.
#[derive(Debug, Clone, PartialEq)]
pub enum RandomDist {
    /// Uniform (`random`, the default), with the random map unless
    /// `norandommap`.
    Random,
    /// `zipf[:theta[:center]]` (theta ≠ 1, default 1.1).
    Zipf {
        /// Zipf's exponent.
        theta: f64,
        /// Where the most popular block sits, 0..=1 (default: random).
        center: Option<f64>,
    },
    /// `pareto[:h[:center]]` (0 < h < 1, default 0.2).
    Pareto {
        /// Pareto's parameter.
        h: f64,
        /// As for Zipf.
        center: Option<f64>,
    },
    /// `normal[:dev[:center]]` (0 ≤ dev < 100, default 0).
    Normal {
        /// Extra spread, percent of the range.
        dev: f64,
        /// Where the peak sits, 0..=1 (default 0.5).
        center: Option<f64>,
    },
    /// `zoned:ACCESS/SIZE%:...` per direction (read, write, trim): access
    /// shares (adding up to 100) and zone sizes in percent of the region, in
    /// order from its start. An empty list leaves the direction uniform.
    Zoned([Vec<(u8, u8)>; 3]),
    /// `zoned_abs:ACCESS/SIZE:...`: as `Zoned`, sizes in bytes.
    ZonedAbs([Vec<(u8, u64)>; 3]),
    /// `sequence:B1,B2,...` (up to 64 block indices), fio's
    /// `__get_next_rand_offset_sequence`: the *n*-th I/O of a direction goes
    /// to block `B[n % len]`, plus `len × (n / len)` with
    /// `random_sequence_stride`; a block past the region ends the job.
    Sequence {
        /// The block indices, in the order accessed.
        blocks: Vec<u64>,
        /// `random_sequence_stride`: each cycle moves on by the length.
        stride: bool,
    },
}

/// The options that change what fio reports for a job without changing its
/// I/O, after fio's fixups (`gtod_reduce` sets every `disable_*`; a disabled
/// latency has no percentiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// `clat_percentiles` (default on).
    pub clat_percentiles: bool,
    /// `lat_percentiles` (default off).
    pub lat_percentiles: bool,
    /// `slat_percentiles` (default off).
    pub slat_percentiles: bool,
    /// `disable_clat` (or `gtod_reduce`): no completion latencies, no latency
    /// distribution lines.
    pub disable_clat: bool,
    /// `disable_lat` (or `gtod_reduce`): no total latencies.
    pub disable_lat: bool,
    /// `disable_slat` (or `gtod_reduce`): no submission latencies.
    pub disable_slat: bool,
    /// `disable_bw_measurement` / `disable_bw` (or `gtod_reduce`): no
    /// bandwidth or IOPS samples.
    pub disable_bw: bool,
    /// `disk_util` (default on): report the disk's statistics.
    pub disk_util: bool,
}

impl Default for ReportOptions {
    /// fio's defaults.
    fn default() -> Self {
        ReportOptions {
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            disable_clat: false,
            disable_lat: false,
            disable_slat: false,
            disable_bw: false,
            disk_util: true,
        }
    }
}

/// A job's `size`: absolute or a percentage of the file/device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSpec {
    /// An absolute size in bytes.
    Bytes(u64),
    /// A percentage (1..=100) of the file or device size.
    Percent(u8),
}

/// One job as defined by a job section or a `--name` (not expanded by
/// `numjobs`), with fio's defaults filled in and values validated.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job name: `name=` if given, else the section name.
    pub name: String,
    /// Where the job was defined.
    pub source: SourceLocation,
    /// `filename` (a single file; `a:b` lists are rejected).
    pub filename: Option<String>,
    /// `rw` / `readwrite` (default `read`).
    pub rw: RwMode,
    /// `rw=randread:N`'s N (default 1): a random offset is drawn every N
    /// I/Os, those in between follow the previous one sequentially.
    pub rw_seq_nr: u32,
    /// `rw=read:N`'s N, bytes (default 0): added to each sequential offset
    /// after the previous I/O's end (holes; negative: backwards).
    pub rw_seq_add: i64,
    /// Percentage of reads in mixed workloads (`rwmixread`, or
    /// 100 - `rwmixwrite`; default 50).
    pub rwmixread: u32,
    /// `bs` / `blocksize` per direction (default 4096); with `bsrange` or
    /// `bssplit`, the smallest size (fio's `min_bs`).
    pub bs: BlockSizes,
    /// Read, write and trim sizes that vary (`bsrange`, `bssplit`); `None` for
    /// a direction whose I/Os all have its `bs`.
    pub bs_dist: [Option<BsDist>; 3],
    /// `size`; `None` when unset or 0 (fio then uses the file/device size).
    pub size: Option<SizeSpec>,
    /// `offset` / `fileoffset` in bytes (default 0).
    pub offset: u64,
    /// `io_size` / `io_limit`: bytes to transfer per loop, wrapping over the
    /// region when larger than it; `None`: the region's size.
    pub io_size: Option<u64>,
    /// `loops` (default 1): the job's I/O is done this many times over
    /// (sequential offsets wrap, the random map starts a new pass); ignored by
    /// a `time_based` job, as in fio.
    pub loops: u32,
    /// `ba` / `blockalign` per direction (read, write, trim), bytes; 0 (the
    /// default): the direction's smallest block size. Only random offsets are
    /// aligned, as in fio.
    pub blockalign: [u64; 3],
    /// `numjobs` (at least 1).
    pub numjobs: u32,
    /// `iodepth` (at least 1, default 1).
    pub iodepth: u32,
    /// `ioengine` (default psync).
    pub ioengine: IoEngine,
    /// O_DIRECT (`direct=1`, or `buffered=0`); false (fio's default) means
    /// buffered I/O through the device's page cache (`crate::pagecache`).
    pub direct: bool,
    /// `runtime` / `timeout` in nanoseconds; `None` when unset or 0.
    pub runtime_ns: Option<u64>,
    /// `time_based` (cleared, with a warning, when no runtime is set, as fio
    /// does).
    pub time_based: bool,
    /// `ramp_time` in nanoseconds (default 0).
    pub ramp_time_ns: u64,
    /// `startdelay` in nanoseconds (default 0; a single value, not a range):
    /// the job starts this long after its group, and its ramp time and runtime
    /// count from there.
    pub start_delay_ns: u64,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `randseed`, when given.
    pub randseed: Option<u64>,
    /// `randrepeat` / `allrandrepeat` (default true). As in fio's
    /// `fixup_options`, giving `randseed` clears it; the seed to use is then
    /// `randseed`.
    pub randrepeat: bool,
    /// `norandommap`.
    pub norandommap: bool,
    /// io_uring `fixedbufs`: registered buffers, so a direct I/O does not pin its
    /// user pages (`bio_iov_iter_get_pages`) each time (a host-model saving).
    pub fixedbufs: bool,
    /// `random_distribution` (skewed ones draw without fio's random map, as
    /// fio does for zipf, pareto and normal).
    pub random_distribution: RandomDist,
    /// `number_ios`; `None` when unset or 0.
    pub number_ios: Option<u64>,
    /// `stonewall` / `wait_for_previous`.
    pub stonewall: bool,
    /// `ioscheduler`.
    pub ioscheduler: Option<String>,
    /// `cpus_allowed`, expanded and sorted (e.g. "0-3,5" → 0,1,2,3,5).
    pub cpus_allowed: Option<Vec<u32>>,
    /// `cpus_allowed_policy=split`: each clone gets one CPU of the set (clone *k*
    /// the *k*-th, wrapping); `shared` (the default): every clone may run on all.
    pub cpus_allowed_split: bool,
    /// `cgroup`.
    pub cgroup: Option<String>,
    /// `cgroup_weight` (100..=1000, as in fio's option table).
    pub cgroup_weight: Option<u32>,
    /// `prioclass` (0..=3).
    pub prioclass: Option<u8>,
    /// `prio` (0..=7).
    pub prio: Option<u8>,
    /// `iodepth_batch` / `iodepth_batch_submit` after fio's fixup (default
    /// 1; 0 or more than `iodepth` becomes `iodepth`).
    pub iodepth_batch_submit: u32,
    /// `iodepth_batch_complete_min` / `iodepth_batch_complete` (default 1).
    pub iodepth_batch_complete_min: u32,
    /// `iodepth_batch_complete_max` after fio's fixup (raised to the
    /// minimum when smaller; default therefore equals the minimum).
    pub iodepth_batch_complete_max: u32,
    /// `thread` (also listed as ignored: it cannot change the I/O).
    pub thread: bool,
    /// `fsync=N`: an fsync after every N writes (0 = never). On a block device
    /// fsync is an empty PREFLUSH bio.
    pub fsync_blocks: u32,
    /// `fdatasync=N`: as `fsync` (a block device's fsync ignores "datasync").
    pub fdatasync_blocks: u32,
    /// `end_fsync`: one fsync when the job's I/O is done.
    pub end_fsync: bool,
    /// `fsync_on_close`: as `end_fsync` for a job with one file (fio's `do_io`
    /// fsyncs once at the end when either is set).
    pub fsync_on_close: bool,
    /// `invalidate` (default true): drop the file's page cache when the job
    /// opens it (for a block device, `BLKFLSBUF`: write back, then drop).
    pub invalidate: bool,
    /// `fadvise_hint` (default "1": `POSIX_FADV_RANDOM` for random jobs,
    /// `POSIX_FADV_SEQUENTIAL` otherwise; "0", "random", "sequential").
    pub fadvise_hint: String,
    /// `sync=1|sync|dsync`: the file is opened O_SYNC/O_DSYNC, making direct
    /// writes FUA writes.
    pub sync: bool,
    /// `kb_base` (1024 or 1000), also needed to print sizes like fio.
    pub kb_base: u32,
    /// `percentile_list`, when given (values in 0..=100).
    pub percentile_list: Option<Vec<f64>>,
    /// The latency, bandwidth and IOPS logs the job writes.
    pub logs: LogOptions,
    /// What the job's report shows (options that cannot change the I/O but
    /// change fio's report).
    pub report: ReportOptions,
    /// `thinktime` and its settings; `None` when `thinktime` is 0 (fio then
    /// ignores the others).
    pub thinktime: Option<ThinkTime>,
    /// `rate` / `rate_iops` and their settings; `None` when no direction is
    /// limited.
    pub rate: Option<RateLimit>,
    /// `read_iolog`, `write_iolog` and the `replay_*` options.
    pub iolog: IologOptions,
    /// Where the job's file lives and how large it is (`directory`,
    /// `filesize`, `fill_device`, `offset_increment`).
    pub files: FileSpec,
    /// `zonemode=zbd`: the device must be zoned, and the job's region is cut
    /// to whole zones (fio's `zbd_verify_sizes`).
    pub zonemode_zbd: bool,
    /// fio's other zoned-device options (`zonesize`, `max_open_zones`, ...).
    pub zones: ZoneOptions,
    /// The write-then-verify pattern (`verify` and its settings); `None` when
    /// the job verifies nothing or only reads.
    pub verify: Option<VerifySpec>,
    /// `io_submit_mode=offload`: I/Os are handed to `iodepth` worker threads,
    /// each submitting and reaping its own (rate-submit.c).
    pub offload: bool,
    /// How the job's run depends on other jobs' and on its own measured rate
    /// (`wait_for`, `exitall`, `flow`, `rate_min`, ...).
    pub control: JobControl,
    /// fio's per-I/O priorities (`cmdprio_percentage` / `cmdprio_bssplit`
    /// with `cmdprio_class`, `cmdprio`, `cmdprio_hint`).
    pub cmdprio: Option<CmdPrio>,
    /// The job's own options as `(canonical name, value)`, in the order fio
    /// applies them (fio's JSON "job options"). Bare flags have an empty
    /// value.
    pub options: Vec<(String, String)>,
}

/// `exit_what`: which jobs a job's exit terminates when `exitall` is set
/// (fio's `TERMINATE_GROUP`, `TERMINATE_STONEWALL`, `TERMINATE_ALL`, as
/// libfio.c `fio_terminate_threads` selects them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// `group` (the default): the jobs of its reporting group.
    #[default]
    Group,
    /// `stonewall`: every job running, whatever its group; jobs not started
    /// yet still run.
    Stonewall,
    /// `all`: every job, including those not started yet (they never run).
    All,
}

/// The options tying a job's run to other jobs and to its own measured rate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobControl {
    /// `wait_for=NAME`: the job starts only once every job named NAME has
    /// exited (backend.c `waitee_running`).
    pub wait_for: Option<String>,
    /// `exitall`: in fio a process-wide switch (options.c `str_exitall_cb`):
    /// set in any job, every job's exit terminates others, as its own
    /// `exit_what` says.
    pub exitall: bool,
    /// `exit_what` (default `group`).
    pub exit_what: ExitWhat,
    /// `exitall_on_error`: a job that exits with an error terminates others
    /// (as `exit_what` says) even without `exitall`.
    pub exitall_on_error: bool,
    /// `flow_id` (default 0): the flow the job's `flow` weight counts in.
    pub flow_id: u32,
    /// `flow` (0..=1000, 0: the job is in no flow): its share of the flow's
    /// I/O, against the other jobs' weights (flow.c).
    pub flow: u32,
    /// `flow_sleep`, µs: a job ahead of its share first waits for its I/O
    /// to complete, then sleeps this long; 0 (the default): it spins.
    pub flow_sleep_us: u64,
    /// `rate_min` per direction (read, write), bytes/s; 0: none.
    pub rate_min: [u64; 2],
    /// `rate_iops_min` per direction, I/Os per second; 0: none.
    pub rate_iops_min: [u64; 2],
    /// `rate_cycle`, ms (default 1000): the window the minimum rate is
    /// averaged over.
    pub rate_cycle_ms: u64,
    /// `latency_target`, ns (0: none): the job looks for the deepest queue
    /// whose latencies stay under it (io_u.c `lat_target_check`).
    pub latency_target_ns: u64,
    /// `latency_window`, µs: how long each queue depth is tried.
    pub latency_window_us: u64,
    /// `latency_percentile` (default 100): the share of I/Os, percent, that
    /// must be under the target.
    pub latency_percentile: f64,
    /// `latency_run`: keep adjusting the depth until the job ends, instead of
    /// stopping after one window at the depth found.
    pub latency_run: bool,
    /// `steadystate` with a `steadystate_duration`: the job ends once its
    /// samples are steady (see [`crate::steadystate`]); `None` without a
    /// duration (fio's default 0 turns detection off).
    pub steadystate: Option<crate::steadystate::SsSpec>,
    /// `steadystate_check_interval`, µs, as set (fio wants one value in
    /// every job of the run).
    pub ss_check_interval_us: u64,
}

/// A job's iolog options: what it replays (`read_iolog`) and records
/// (`write_iolog`), and how a replay is timed and placed (`replay_*`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IologOptions {
    /// `read_iolog`: one file per clone, in turn (fio's `get_name_by_idx`).
    pub read: Option<Vec<String>>,
    /// `write_iolog`.
    pub write: Option<String>,
    /// `read_iolog_chunked` (accepted: iosched always streams the log).
    pub chunked: bool,
    /// `replay_redirect` (accepted: one device is simulated, every file of the
    /// log goes to it).
    pub redirect: Option<String>,
    /// `replay_no_stall`, `replay_time_scale`, `replay_align`, `replay_scale`,
    /// `replay_skip`.
    pub replay: crate::trace::replay::FioReplayOptions,
    /// `merge_blktrace_file`: merge the `read_iolog` captures into this file
    /// first, and replay it.
    pub merge_file: Option<String>,
    /// `merge_blktrace_scalars`, percent per capture.
    pub merge_scalars: Vec<f64>,
    /// `merge_blktrace_iters`, passes per capture.
    pub merge_iters: Vec<f64>,
}

/// The file options of a job (see docs/fio.md, "Files").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileSpec {
    /// `directory`: where the job's files are (a name prefix on the
    /// simulated file system).
    pub directory: Option<String>,
    /// `filesize=MIN[-MAX]`: each file's size, drawn in the range as fio's
    /// `get_rand_file_size` draws it.
    pub filesize: Option<(u64, u64)>,
    /// `fill_device` / `fill_fs`: write until the device is full (the
    /// region runs to its end).
    pub fill_device: bool,
    /// `offset_increment`: clone *n* of the job starts this many bytes × *n*
    /// further (fio's `subjob_number`).
    pub offset_increment: u64,
    /// `filename=a:b:...`: the names after the first (`JobSpec::filename`).
    pub more_names: Vec<String>,
    /// `nrfiles` (default 1): files per clone for a job without `filename`.
    pub nrfiles: u32,
    /// `filename_format` (default `$jobname.$jobnum.$filenum`).
    pub filename_format: Option<String>,
    /// `file_service_type`: which file each I/O goes to.
    pub service: FileService,
    /// `openfiles` (default: all the job's files).
    pub openfiles: Option<u32>,
}

/// fio's cmdprio.c: which I/Os of a libaio or io_uring job carry their own
/// priority instead of the job's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdPrio {
    /// Per direction (read, write): the entries. A `cmdprio_percentage`
    /// job has one without a block size; a `cmdprio_bssplit` one has
    /// entries per block size, sorted by it.
    pub dirs: [Vec<CmdPrioEntry>; 2],
}

/// One priority a share of the I/Os (of one block size) gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdPrioEntry {
    /// The I/O size it applies to (`None`: every size).
    pub bs: Option<u64>,
    /// Percent of those I/Os.
    pub perc: u32,
    /// Priority class (1 RT, 2 BE, 3 IDLE; 0 none).
    pub class: u8,
    /// Level within the class, 0-7.
    pub level: u8,
    /// Priority hint (command duration limits); no effect on the I/O here.
    pub hint: u16,
}

impl CmdPrioEntry {
    /// fio's `ioprio_value(class, level, hint)`.
    pub fn value(&self) -> u16 {
        (u16::from(self.class) << 13) | ((self.hint & 0x3ff) << 3) | u16::from(self.level)
    }
}

/// fio's `file_service_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileService {
    /// How the next file is chosen.
    pub kind: FileServiceKind,
    /// I/Os to a file before the next choice (`roundrobin:N`, `random:N`).
    pub nr: u32,
}

impl Default for FileService {
    /// fio's default, `roundrobin` switching after every I/O.
    fn default() -> Self {
        FileService {
            kind: FileServiceKind::RoundRobin,
            nr: 1,
        }
    }
}

/// How a job with several files chooses the next one (io_u.c
/// `__get_next_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileServiceKind {
    /// `roundrobin` (the default): the files in turn.
    #[default]
    RoundRobin,
    /// `random`: a file drawn uniformly.
    Random,
    /// `sequential`: each file until its I/O is done.
    Sequential,
}

/// fio's write-then-verify pattern for a job that writes (backend.c
/// `do_verify`, io_u.c `check_get_verify`, iolog.c `log_io_piece`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifySpec {
    /// `verify`'s method (`crc32c`, `md5`, ...): which checksum fio would
    /// compute; it does not change the I/O.
    pub method: String,
    /// `verify_backlog`: verify after every this many blocks written (0: only
    /// after the write phase).
    pub backlog: u64,
    /// `verify_backlog_batch` (0: `verify_backlog`).
    pub backlog_batch: u64,
    /// `verify_only`: the writes are not issued, only their verification.
    pub only: bool,
}

/// fio's `thinktime` family (backend.c `handle_thinktime`): after every
/// `thinktime_blocks` I/Os (or `thinktime_iotime` of I/O), the job waits for
/// all its I/O to complete, then stalls for `thinktime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkTime {
    /// `thinktime`, µs (more than 0).
    pub think_us: u64,
    /// `thinktime_spin`, µs: the part of the stall spent busy on the CPU (at
    /// most `thinktime`, as fio's fixup makes it).
    pub spin_us: u64,
    /// `thinktime_blocks` (default 1).
    pub blocks: u64,
    /// `thinktime_blocks` was given (with `thinktime_iotime` alone, fio counts
    /// no blocks).
    pub blocks_set: bool,
    /// `thinktime_blocks_type=issue`: count issued I/Os; else (`complete`, the
    /// default) completed ones.
    pub by_issue: bool,
    /// `thinktime_iotime`, µs (0: unset): stall after this much time of I/O.
    pub iotime_us: u64,
}

/// fio's rate limiting (`rate`, `rate_iops`, `rate_process`,
/// `rate_ignore_thinktime`), per direction as fio's `setup_rate` resolves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Bytes per second allowed for reads and writes (0: unlimited): `rate`,
    /// else `rate_iops` × the block size.
    pub bps: [u64; 2],
    /// `rate_process=poisson`: exponentially distributed gaps between I/Os
    /// (else `linear`: each I/O is due when the bytes issued so far allow).
    pub poisson: bool,
    /// `rate_ignore_thinktime`: after a thinktime stall, do not catch up the
    /// I/O the stall missed.
    pub ignore_thinktime: bool,
}

/// The logs a job asks for (`write_lat_log`, `write_bw_log`, `write_iops_log`)
/// and how they are kept; see [`crate::iolog`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    /// File-name prefix of the `lat`, `clat` and `slat` logs (`write_lat_log`;
    /// the job name when given without a value).
    pub lat_prefix: Option<String>,
    /// Prefix of the `bw` log (`write_bw_log`).
    pub bw_prefix: Option<String>,
    /// Prefix of the `iops` log (`write_iops_log`).
    pub iops_prefix: Option<String>,
    /// `log_avg_msec` (0: one sample per I/O).
    pub avg_msec: u64,
    /// `bwavgtime`, when given (fio's bandwidth sampling window, default 500
    /// ms).
    pub bw_avg_msec: Option<u64>,
    /// `iopsavgtime`, when given (the IOPS sampling window, default 500 ms).
    pub iops_avg_msec: Option<u64>,
    /// `log_max_value` / `log_window_value`.
    pub window_value: crate::iolog::WindowValue,
    /// `log_offset`.
    pub offset: bool,
    /// `log_prio`.
    pub prio: bool,
    /// `log_issue_time` (requires `write_lat_log` and `log_offset`).
    pub issue_time: bool,
    /// `per_job_logs` (default true): one file per clone, numbered.
    pub per_job: bool,
    /// `disable_lat`: no `lat` log.
    pub disable_lat: bool,
    /// `disable_clat`: no `clat` log.
    pub disable_clat: bool,
    /// `disable_slat`: no `slat` log.
    pub disable_slat: bool,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            lat_prefix: None,
            bw_prefix: None,
            iops_prefix: None,
            avg_msec: 0,
            bw_avg_msec: None,
            iops_avg_msec: None,
            window_value: crate::iolog::WindowValue::Avg,
            offset: false,
            prio: false,
            issue_time: false,
            per_job: true,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
        }
    }
}

impl LogOptions {
    /// Whether the job writes any log.
    pub fn any(&self) -> bool {
        self.lat_prefix.is_some() || self.bw_prefix.is_some() || self.iops_prefix.is_some()
    }

    /// fio's sampling windows for the bandwidth (`bw`) or IOPS statistics and
    /// the averaging window of that log, ms, as fio's `add_job` resolves them:
    /// without the log, `bwavgtime` / `iopsavgtime` (default 500); with it,
    /// `log_avg_msec` for both, unless `bwavgtime` / `iopsavgtime` was given,
    /// which then stays the sampling window while the log averages over the
    /// smaller of the two. A log window of 0 samples every I/O (and so do the
    /// statistics).
    pub fn windows(&self, bw: bool) -> (u64, u64) {
        let (prefix, given) = if bw {
            (&self.bw_prefix, self.bw_avg_msec)
        } else {
            (&self.iops_prefix, self.iops_avg_msec)
        };
        let default = crate::stats::DEFAULT_AVG_TIME_MS;
        match (prefix, given) {
            (None, g) => (g.unwrap_or(default), self.avg_msec),
            (Some(_), None) => (self.avg_msec, self.avg_msec),
            (Some(_), Some(g)) => {
                let log = self.avg_msec.min(g);
                (if log == 0 { 0 } else { g }, log)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_in_flight() {
        assert_eq!(IoEngine::Psync.max_in_flight(32), 1);
        assert_eq!(IoEngine::Sync.max_in_flight(32), 1);
        assert_eq!(IoEngine::Pvsync2.max_in_flight(8), 1);
        assert_eq!(IoEngine::Libaio.max_in_flight(32), 32);
        assert_eq!(IoEngine::IoUring.max_in_flight(4), 4);
        assert_eq!(IoEngine::Posixaio.max_in_flight(2), 2);
    }

    #[test]
    fn rw_helpers() {
        assert!(RwMode::RandRw.is_random() && RwMode::RandRw.reads() && RwMode::RandRw.writes());
        assert!(!RwMode::Read.writes());
        assert_eq!(RwMode::ReadWrite.as_str(), "rw");
    }
}

/// fio's zoned-device options (options.c, fio commit 000ecb5f) that
/// `zonemode=zbd` uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZoneOptions {
    /// `zonesize`: 0 = the device's; otherwise it must match it.
    pub zone_size: u64,
    /// `zoneskip` (bytes).
    pub zone_skip: u64,
    /// `read_beyond_wp`.
    pub read_beyond_wp: bool,
    /// `max_open_zones`; 0 = the device's limit.
    pub max_open_zones: u32,
    /// `job_max_open_zones`; 0 = none.
    pub job_max_open_zones: u32,
    /// `ignore_zone_limits`.
    pub ignore_zone_limits: bool,
    /// `size`, `offset` and `io_size` given in zones (`8z`: fio's
    /// `size_nz`, `start_offset_nz`, `io_size_nz`), resolved against the
    /// zone size when the job is planned.
    pub size_nz: u64,
    pub offset_nz: u64,
    pub io_size_nz: u64,
    /// `zone_reset_threshold` and `zone_reset_frequency` (fractions, 0..=1).
    pub reset_threshold: f64,
    pub reset_frequency: f64,
}
