//! Statistics collection in the shape fio reports them.
//!
//! Everything here is streaming: a job that runs for hours in virtual time
//! uses the same memory as one that runs for a second. Per-IO data is never
//! stored; latency percentiles come from a bounded HDR histogram and the
//! exact moments (min, max, mean, stddev) from Welford accumulators.
//!
//! The accounting rules follow fio's `stat.c`/`io_u.c`:
//! * `slat = issue − submit`, `clat = complete − issue`,
//!   `lat = complete − submit` (all nanoseconds). Sync engines have no
//!   submission stage, so fio records no slat for them (`record_slat`).
//! * `total_ios` counts IOs at submission, `io_bytes` at completion.
//! * Bandwidth/IOPS samples are taken per job every `bw_avg_time` /
//!   `iops_avg_time` (default 500 ms) of job time: bytes (or IOs) completed in
//!   the window divided by the window length, integer KiB/s (IOs/s). Windows
//!   with nothing completed produce no sample, as in fio.
//! * The latency distribution (`lat (usec) : 2=…`) is keyed on clat, and its
//!   percentages are relative to the number of issued IOs.
//!
//! Percentiles are computed from an HDR histogram (3 significant digits)
//! instead of fio's own log-linear bins, so percentile values can differ
//! from what fio would print for the same samples by up to fio's bin width
//! (~1.6%); the exact moments are unaffected.

use crate::iolog::{IoLog, Sample};
use hdrhistogram::Histogram;

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's default `bw_avg_time`/`iops_avg_time`, in milliseconds.
pub const DEFAULT_AVG_TIME_MS: u64 = 500;

/// Number of IO-depth / submit / complete distribution buckets fio keeps.
pub const DEPTH_BUCKETS: usize = 7;
/// Number of nanosecond latency buckets (`latency_ns`).
pub const LAT_N_BUCKETS: usize = 10;
/// Number of microsecond latency buckets (`latency_us`).
pub const LAT_U_BUCKETS: usize = 10;
/// Number of millisecond latency buckets (`latency_ms`).
pub const LAT_M_BUCKETS: usize = 12;

/// Data direction of an IO, in fio's order (read, write, trim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Trim / discard.
    Trim,
}

impl Dir {
    /// All directions in fio's report order.
    pub const ALL: [Dir; 3] = [Dir::Read, Dir::Write, Dir::Trim];

    /// Index into per-direction arrays (0 = read, 1 = write, 2 = trim).
    pub fn index(self) -> usize {
        match self {
            Dir::Read => 0,
            Dir::Write => 1,
            Dir::Trim => 2,
        }
    }

    /// fio's lower-case name (`io_ddir_name`), used as JSON key and text label.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        }
    }
}

/// Streaming min/max/mean/variance accumulator: fio's `struct io_stat`.
///
/// Mean and the sum of squared deviations are kept with Welford's update
/// (what fio does) because a naive sum-of-squares loses all precision when
/// the variance is small compared to the mean, which is the common case
/// for latencies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleStat {
    samples: u64,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
}

impl SampleStat {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sample.
    pub fn add(&mut self, v: u64) {
        if self.samples == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        let x = v as f64;
        let delta = x - self.mean;
        self.samples += 1;
        self.mean += delta / self.samples as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.samples
    }

    /// Smallest sample, 0 when empty (fio prints 0 for empty stats).
    pub fn min(&self) -> u64 {
        if self.samples == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest sample, 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Arithmetic mean, 0 when empty.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation (n − 1 denominator, as fio's `calc_lat`);
    /// 0 for fewer than two samples.
    pub fn stddev(&self) -> f64 {
        if self.samples > 1 {
            (self.m2 / (self.samples - 1) as f64).max(0.0).sqrt()
        } else {
            0.0
        }
    }

    /// Combines two independent sample sets (Chan et al. parallel update),
    /// which is how fio merges latency stats of jobs in one group.
    pub fn merge(&mut self, other: &SampleStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = other.clone();
            return;
        }
        let n1 = self.samples as f64;
        let n2 = other.samples as f64;
        let delta = other.mean - self.mean;
        self.mean = (self.mean * n1 + other.mean * n2) / (n1 + n2);
        self.m2 += other.m2 + delta * delta * n1 * n2 / (n1 + n2);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.samples += other.samples;
    }

    /// fio's "pure sum" merge used for bandwidth and IOPS under
    /// `group_reporting`: jobs run concurrently, so the group's rate is the
    /// sum of the per-job rates; fio therefore adds min, max, mean, the
    /// deviation accumulator and the sample counts field by field.
    pub fn merge_sum(&mut self, other: &SampleStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = other.clone();
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.samples += other.samples;
        self.mean += other.mean;
        self.m2 += other.m2;
    }
}

/// Latency accumulator in nanoseconds: exact moments plus an HDR histogram
/// (3 significant digits, auto-resizing) for percentiles.
///
/// The histogram is allocated on the first sample so that unused
/// directions (and slat for sync engines) cost nothing.
#[derive(Debug, Clone, Default)]
pub struct LatHist {
    stat: SampleStat,
    hist: Option<Box<Histogram<u64>>>,
}

impl PartialEq for LatHist {
    fn eq(&self, other: &Self) -> bool {
        self.stat == other.stat
            && match (&self.hist, &other.hist) {
                (None, None) => true,
                (Some(a), Some(b)) => **a == **b,
                _ => false,
            }
    }
}

impl LatHist {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    fn hist_mut(&mut self) -> &mut Histogram<u64> {
        self.hist.get_or_insert_with(|| {
            let mut h = Histogram::new(3).expect("3 significant digits is valid");
            h.auto(true);
            Box::new(h)
        })
    }

    /// Records one latency in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.stat.add(ns);
        // Auto-resize makes recording infallible short of u64 overflow of
        // the bucket range, which cannot happen for nanosecond latencies.
        let _ = self.hist_mut().record(ns);
    }

    /// The exact moments.
    pub fn stat(&self) -> &SampleStat {
        &self.stat
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.stat.count()
    }

    /// Smallest latency (exact), 0 when empty.
    pub fn min(&self) -> u64 {
        self.stat.min()
    }

    /// Largest latency (exact), 0 when empty.
    pub fn max(&self) -> u64 {
        self.stat.max()
    }

    /// Mean latency (exact), 0 when empty.
    pub fn mean(&self) -> f64 {
        self.stat.mean()
    }

    /// Sample standard deviation (exact up to f64 rounding).
    pub fn stddev(&self) -> f64 {
        self.stat.stddev()
    }

    /// The `p`-th percentile (`p` in 0..=100) in nanoseconds: the HDR bucket
    /// holding the smallest recorded value with at least `p`% of samples at
    /// or below it, reported as that bucket's midpoint (fio likewise reports
    /// the middle of its bin), clamped to the exact min/max; p=100 is the
    /// exact max. 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        match &self.hist {
            // The extremes are known exactly; no need to approximate them.
            Some(_) if p >= 100.0 => self.stat.max(),
            Some(h) if self.stat.count() > 0 => {
                let q = (p / 100.0).clamp(0.0, 1.0);
                let v = h.median_equivalent(h.value_at_quantile(q));
                v.clamp(self.stat.min(), self.stat.max())
            }
            _ => 0,
        }
    }

    /// The samples in fio's latency bins (stat.h `FIO_IO_U_PLAT_*`: 64 bins
    /// per power of two, 1,856 in all), as `(bin value, count)` for every
    /// non-empty bin in ascending order, the value being fio's
    /// `plat_idx_to_val` (the bin's middle): json+'s `bins`. Exact, not an
    /// approximation: every bucket of the 3-digit HDR histogram is a
    /// power-of-two-wide aligned range at most 1/1024 of its value wide,
    /// so it lies inside one of fio's bins (1/64 wide).
    pub fn fio_bins(&self) -> Vec<(u64, u64)> {
        let Some(h) = &self.hist else {
            return Vec::new();
        };
        let mut bins: Vec<(u64, u64)> = Vec::new();
        for v in h.iter_recorded() {
            let idx = fio_plat_idx(h.lowest_equivalent(v.value_iterated_to()));
            let val = fio_plat_val(idx);
            match bins.last_mut() {
                Some((last, n)) if *last == val => *n += v.count_since_last_iteration(),
                _ => bins.push((val, v.count_since_last_iteration())),
            }
        }
        bins
    }

    /// Adds another histogram's samples into this one.
    pub fn merge(&mut self, other: &LatHist) {
        self.stat.merge(&other.stat);
        if let Some(o) = &other.hist {
            let _ = self.hist_mut().add(&**o);
        }
    }
}

/// fio's `FIO_IO_U_PLAT_BITS` (bins per power of two: 2^6).
const PLAT_BITS: u32 = 6;
/// fio's `FIO_IO_U_PLAT_VAL`.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's `FIO_IO_U_PLAT_NR` (29 groups of 64).
const PLAT_NR: u64 = 29 * PLAT_VAL;

/// fio's `plat_val_to_idx`.
fn fio_plat_idx(val: u64) -> u64 {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the middle of bin `idx` (rounded down, as fio's
/// conversion of `base + (k + 0.5) * 2^error_bits` to an integer does).
fn fio_plat_val(idx: u64) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    base + (((2 * k + 1) << error_bits) >> 1)
}

/// Statistics for one direction of one job (or of a merged group).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirStats {
    /// Bytes completed.
    pub io_bytes: u64,
    /// IOs issued (fio's `total_io_u`, counted at submission).
    pub total_ios: u64,
    /// Short IOs (completed with fewer bytes than requested).
    pub short_ios: u64,
    /// Dropped IOs.
    pub drop_ios: u64,
    /// Run time of this direction in milliseconds (rounded up, as fio).
    pub runtime_ms: u64,
    /// Submission latency; empty for sync engines.
    pub slat: LatHist,
    /// Completion latency.
    pub clat: LatHist,
    /// Total latency.
    pub lat: LatHist,
    /// Bandwidth samples in KiB/s, one per averaging window with IO.
    pub bw: SampleStat,
    /// IOPS samples, one per averaging window with IO.
    pub iops: SampleStat,
    /// Per I/O priority (fio's `clat_prio`, kept with cmdprio): the
    /// completion latencies (total latencies with `lat_percentiles`) of the
    /// I/Os of each priority, the job's own first.
    pub prios: Vec<PrioLat>,
}

/// The latencies of one I/O priority (fio's `struct clat_prio_stat`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrioLat {
    /// The ioprio value (class << 13 | hint << 3 | level).
    pub value: u16,
    /// Its I/Os' latencies.
    pub lat: LatHist,
}

impl DirStats {
    /// Bandwidth over the run in bytes/s (fio: `1000 * io_bytes / runtime`).
    pub fn bw_bytes(&self) -> u64 {
        if self.runtime_ms == 0 {
            0
        } else {
            ((1000u128 * self.io_bytes as u128) / self.runtime_ms as u128) as u64
        }
    }

    /// IOPS over the run as fio's JSON reports it (float).
    pub fn iops_f64(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            1000.0 * self.total_ios as f64 / self.runtime_ms as f64
        }
    }

    /// fio's `sum_thread_stats` for one direction.
    pub fn merge(&mut self, other: &DirStats) {
        self.clat.merge(&other.clat);
        self.slat.merge(&other.slat);
        self.lat.merge(&other.lat);
        self.bw.merge_sum(&other.bw);
        self.iops.merge_sum(&other.iops);
        self.io_bytes += other.io_bytes;
        self.runtime_ms = self.runtime_ms.max(other.runtime_ms);
        self.total_ios += other.total_ios;
        self.short_ios += other.short_ios;
        self.drop_ios += other.drop_ios;
        // sum_clat_prio_stats: the same priority's samples add up.
        for p in &other.prios {
            match self.prios.iter_mut().find(|q| q.value == p.value) {
                Some(q) => q.lat.merge(&p.lat),
                None => self.prios.push(p.clone()),
            }
        }
    }

    /// Priorities with samples (fio shows them when there are two or more).
    pub fn prios_with_samples(&self) -> impl Iterator<Item = &PrioLat> {
        self.prios.iter().filter(|p| p.lat.count() > 0)
    }
}

/// Everything fio reports for one job entry: one clone, or the merge of
/// several clones / jobs under `group_reporting`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobStats {
    /// fio's `nr_zone_resets`, when it counts them (`count_zone_resets`).
    pub zone_resets: Option<u64>,
    /// Read statistics.
    pub read: DirStats,
    /// Write statistics.
    pub write: DirStats,
    /// Trim statistics.
    pub trim: DirStats,
    /// In-flight depth at submission (`IO depths`): buckets 1, 2, 4, 8, 16,
    /// 32, ≥64.
    pub depth_map: [u64; DEPTH_BUCKETS],
    /// IOs per submit call (`submit`): buckets 0, 4, 8, 16, 32, 64, ≥64.
    pub submit_map: [u64; DEPTH_BUCKETS],
    /// IOs per completion reap (`complete`): same buckets as `submit_map`.
    pub complete_map: [u64; DEPTH_BUCKETS],
    /// Number of submit calls recorded.
    pub total_submit: u64,
    /// Number of completion reaps recorded.
    pub total_complete: u64,
    /// clat distribution below 1 µs: <2, <4, <10, <20, <50, <100, <250,
    /// <500, <750, <1000 ns.
    pub lat_n: [u64; LAT_N_BUCKETS],
    /// clat distribution 1 µs..1 ms, same edges in µs.
    pub lat_u: [u64; LAT_U_BUCKETS],
    /// clat distribution ≥ 1 ms: same edges in ms plus <2000 and ≥2000.
    pub lat_m: [u64; LAT_M_BUCKETS],
    /// Job run time in ms (fio's `job_runtime`; summed over members).
    pub total_run_time_ms: u64,
    /// Number of job clones merged into this entry.
    pub members: u32,
    /// The threads' user time, ns (summed over members; 0 on the free host).
    pub usr_ns: u64,
    /// The threads' system time, ns (summed over members).
    pub sys_ns: u64,
    /// The threads' context switches, voluntary and involuntary (summed).
    pub ctx: u64,
    /// fsync/fdatasync latencies, issue to completion (fio's `sync_stat`, the
    /// `fsync/fdatasync/sync_file_range` lines and the JSON `sync` object).
    pub sync: LatHist,
    /// fsyncs issued (fio's `total_io_u[DDIR_SYNC]`, the fourth `issued rwts`
    /// figure; fdatasyncs are `DDIR_DATASYNC` and not counted there).
    pub sync_ios: u64,
}

impl JobStats {
    /// fio's `usr_cpu`: user time over run time, percent (`show_thread_status`).
    pub fn usr_cpu(&self) -> f64 {
        self.cpu_pct(self.usr_ns)
    }

    /// fio's `sys_cpu`: system time over run time, percent.
    pub fn sys_cpu(&self) -> f64 {
        self.cpu_pct(self.sys_ns)
    }

    fn cpu_pct(&self, ns: u64) -> f64 {
        if self.total_run_time_ms == 0 {
            0.0
        } else {
            ns as f64 * 100.0 / (self.total_run_time_ms as f64 * 1e6)
        }
    }
}

impl JobStats {
    /// Statistics of one direction.
    pub fn dir(&self, d: Dir) -> &DirStats {
        match d {
            Dir::Read => &self.read,
            Dir::Write => &self.write,
            Dir::Trim => &self.trim,
        }
    }

    /// Mutable statistics of one direction.
    pub fn dir_mut(&mut self, d: Dir) -> &mut DirStats {
        match d {
            Dir::Read => &mut self.read,
            Dir::Write => &mut self.write,
            Dir::Trim => &mut self.trim,
        }
    }

    /// Total IOs issued over read, write and trim.
    pub fn total_ios(&self) -> u64 {
        self.read.total_ios + self.write.total_ios + self.trim.total_ios
    }

    /// Total bytes over read, write and trim.
    pub fn total_bytes(&self) -> u64 {
        self.read.io_bytes + self.write.io_bytes + self.trim.io_bytes
    }

    /// Adds `other` into `self` the way fio's `sum_thread_stats` builds a
    /// `group_reporting` entry: latencies combine as sample sets, bw/iops
    /// samples add up, counters add, per-direction runtime takes the max,
    /// `job_runtime` adds.
    pub fn merge(&mut self, other: &JobStats) {
        for d in Dir::ALL {
            self.dir_mut(d).merge(other.dir(d));
        }
        for i in 0..DEPTH_BUCKETS {
            self.depth_map[i] += other.depth_map[i];
            self.submit_map[i] += other.submit_map[i];
            self.complete_map[i] += other.complete_map[i];
        }
        for i in 0..LAT_N_BUCKETS {
            self.lat_n[i] += other.lat_n[i];
        }
        for i in 0..LAT_U_BUCKETS {
            self.lat_u[i] += other.lat_u[i];
        }
        for i in 0..LAT_M_BUCKETS {
            self.lat_m[i] += other.lat_m[i];
        }
        self.total_submit += other.total_submit;
        self.total_complete += other.total_complete;
        self.total_run_time_ms += other.total_run_time_ms;
        self.members += other.members;
        self.usr_ns += other.usr_ns;
        self.sys_ns += other.sys_ns;
        self.ctx += other.ctx;
        self.sync.merge(&other.sync);
        self.sync_ios += other.sync_ios;
        if let Some(n) = other.zone_resets {
            self.zone_resets = Some(self.zone_resets.unwrap_or(0) + n);
        }
    }

    /// Merges a set of clones into one entry (starting from empty).
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a JobStats>) -> JobStats {
        let mut out = JobStats::default();
        for p in parts {
            out.merge(p);
        }
        out
    }

    /// Percentage distribution of in-flight depth at submission
    /// (`iodepth_level`), fio's `stat_calc_dist` rounding included.
    pub fn depth_dist(&self) -> [f64; DEPTH_BUCKETS] {
        calc_dist(&self.depth_map, self.total_ios(), 0.1)
    }

    /// Percentage distribution of IOs per submit call (`iodepth_submit`).
    pub fn submit_dist(&self) -> [f64; DEPTH_BUCKETS] {
        calc_dist(&self.submit_map, self.total_submit, 0.1)
    }

    /// Percentage distribution of IOs per reap (`iodepth_complete`).
    pub fn complete_dist(&self) -> [f64; DEPTH_BUCKETS] {
        calc_dist(&self.complete_map, self.total_complete, 0.1)
    }

    /// `latency_ns` percentages.
    pub fn lat_n_dist(&self) -> [f64; LAT_N_BUCKETS] {
        calc_dist(&self.lat_n, self.total_ios(), 0.01)
    }

    /// `latency_us` percentages.
    pub fn lat_u_dist(&self) -> [f64; LAT_U_BUCKETS] {
        calc_dist(&self.lat_u, self.total_ios(), 0.01)
    }

    /// `latency_ms` percentages.
    pub fn lat_m_dist(&self) -> [f64; LAT_M_BUCKETS] {
        calc_dist(&self.lat_m, self.total_ios(), 0.01)
    }
}

/// Percentages of `total` per bucket, with fio's floor: a non-empty bucket shows as
/// at least `floor` so that rare events stay visible (0.1% for the `%3.1f` depth
/// distributions, 0.01% for the `%3.2f` latency distribution).
fn calc_dist<const N: usize>(map: &[u64; N], total: u64, floor: f64) -> [f64; N] {
    let mut out = [0.0; N];
    if total == 0 {
        return out;
    }
    for (o, &m) in out.iter_mut().zip(map) {
        *o = m as f64 / total as f64 * 100.0;
        if *o < floor && m > 0 {
            *o = floor;
        }
    }
    out
}

/// Bucket for the in-flight depth at submission (fio `io_u_mark_depth`).
fn depth_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// Bucket for a submit/complete batch size (fio `__io_u_mark_map`).
fn batch_bucket(nr: u32) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// Bucket for a value below 1000 in fio's 2/4/10/…/1000 scheme.
fn sub_thousand_bucket(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        _ => 9,
    }
}

/// Configuration of a [`JobRecorder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// Record submission latency. fio records slat only for engines with a
    /// separate submission step (libaio, io_uring, …); for sync engines
    /// (psync, sync, pvsync) pass `false`, and slat is reported with N=0.
    pub record_slat: bool,
    /// Bandwidth averaging window (`bw_avg_time`), ms. 0 takes one sample
    /// per completed I/O instead, its own rate (bytes × 10⁶ / clat ns), as fio
    /// does with `write_bw_log` and no `log_avg_msec`.
    pub bw_avg_ms: u64,
    /// IOPS averaging window (`iops_avg_time`), ms. 0 takes one sample of 1
    /// per completed I/O, as fio does with `write_iops_log` and no
    /// `log_avg_msec`.
    pub iops_avg_ms: u64,
    /// Keep per-priority latencies (a cmdprio job).
    pub prios: Option<PrioConfig>,
}

/// Which priorities a cmdprio job's statistics keep apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrioConfig {
    /// Per direction (read, write, trim): the priorities in fio's order
    /// (the job's own, then cmdprio's in the order its options give them).
    pub order: [Vec<u16>; 3],
    /// The job's own priority (I/Os cmdprio leaves alone).
    pub default: u16,
    /// Record total latencies (`lat_percentiles`) instead of completion
    /// latencies.
    pub use_lat: bool,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        Self {
            record_slat: true,
            bw_avg_ms: DEFAULT_AVG_TIME_MS,
            iops_avg_ms: DEFAULT_AVG_TIME_MS,
            prios: None,
        }
    }
}

/// A periodic sampling window (fio's `__add_samples`).
///
/// Windows are half-open on the left, `(start, end]`, so an IO completing
/// exactly on a boundary belongs to the window ending there regardless of
/// whether the simulator delivers the tick or the completion first.
#[derive(Debug, Clone)]
struct Sampler {
    avg_ns: u64,
    next_end: u64,
    pending: [u64; 3],
    /// Divisor turning units/s into the reported unit (1024 for KiB/s).
    divisor: u64,
}

impl Sampler {
    fn new(avg_ms: u64, start_ns: u64, divisor: u64) -> Self {
        let avg_ns = avg_ms.max(1) * 1_000_000;
        Self {
            avg_ns,
            next_end: start_ns + avg_ns,
            pending: [0; 3],
            divisor,
        }
    }

    /// Closes the current window: adds a sample per direction with I/O to
    /// `out` and returns the window's end and those samples.
    fn close_window(&mut self, out: [&mut SampleStat; 3]) -> WindowSamples {
        let spent_ms = self.avg_ns / 1_000_000;
        let mut rates = [None; 3];
        for (i, stat) in out.into_iter().enumerate() {
            let delta = self.pending[i];
            if delta == 0 {
                continue;
            }
            let rate = ((delta as u128 * 1000) / spent_ms as u128 / self.divisor as u128) as u64;
            stat.add(rate);
            rates[i] = Some(rate);
            self.pending[i] = 0;
        }
        let end = self.next_end;
        self.next_end += self.avg_ns;
        (end, rates)
    }

    /// Closes every window ending before `now` (or at `now` when
    /// `inclusive`); returns the samples taken, if a window was closed (only
    /// the first can hold any).
    fn advance(
        &mut self,
        now: u64,
        inclusive: bool,
        out: [&mut SampleStat; 3],
    ) -> Option<WindowSamples> {
        let due = |end: u64| if inclusive { end <= now } else { end < now };
        if !due(self.next_end) {
            return None;
        }
        let closed = self.close_window(out);
        // Nothing is pending any more, so later due windows are all empty
        // and yield no samples: skip them arithmetically instead of looping
        // through long idle periods.
        if due(self.next_end) {
            let gap = now - self.next_end;
            // First window end that is not due: end >= now when exclusive,
            // end > now when inclusive.
            let n = if inclusive {
                gap / self.avg_ns + 1
            } else {
                gap.div_ceil(self.avg_ns)
            };
            self.next_end += n * self.avg_ns;
        }
        Some(closed)
    }
}

/// A closed sampling window: its end (ns) and the sample of each direction.
type WindowSamples = (u64, [Option<u64>; 3]);

/// The logs of one job clone (see [`crate::iolog`]), fed by its
/// [`JobRecorder`] with the very samples its statistics are made of.
#[derive(Debug, Default)]
pub struct JobLogs {
    /// `PREFIX_lat.N.log`.
    pub lat: Option<IoLog>,
    /// `PREFIX_clat.N.log`.
    pub clat: Option<IoLog>,
    /// `PREFIX_slat.N.log`.
    pub slat: Option<IoLog>,
    /// `PREFIX_bw.N.log`.
    pub bw: Option<IoLog>,
    /// `PREFIX_iops.N.log`.
    pub iops: Option<IoLog>,
    /// The ioprio value of the clone's I/Os (class << 13 | level, 0 when the
    /// job sets none), as fio logs it.
    pub prio: u16,
}

impl JobLogs {
    /// Every log, in fio's order.
    pub fn all_mut(&mut self) -> impl Iterator<Item = &mut IoLog> {
        [
            &mut self.bw,
            &mut self.lat,
            &mut self.slat,
            &mut self.clat,
            &mut self.iops,
        ]
        .into_iter()
        .flatten()
    }

    /// Log what the averaging windows still hold at `elapsed_ms` and write
    /// everything out; the first error.
    pub fn finish(&mut self, elapsed_ms: u64) -> std::io::Result<()> {
        let mut first = Ok(());
        for l in self.all_mut() {
            let r = l.finish(elapsed_ms);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// Per-clone statistics recorder driven by the simulator.
///
/// Call order for one job clone:
/// 1. [`JobRecorder::new`] at the clone's start time (virtual ns).
/// 2. If the job has `ramp_time`, call [`JobRecorder::ramp_done`] when it
///    ends; everything recorded before is discarded, like fio does.
/// 3. For each IO: [`JobRecorder::record_submit`] when it is queued (with
///    the in-flight count including it), then [`JobRecorder::record_io`]
///    when it completes. Optionally [`JobRecorder::record_submit_batch`] /
///    [`JobRecorder::record_complete_batch`] per submit / reap call (sync
///    engines: 1 and 1 per IO).
/// 4. Optionally [`JobRecorder::tick`] at any time; windows also close
///    lazily on the next completion, so ticks are only needed to make
///    intermediate snapshots exact.
/// 5. [`JobRecorder::finish`] at the clone's end time → [`JobStats`].
///
/// With [`JobRecorder::attach_logs`], every sample also goes to the clone's
/// fio logs; [`JobRecorder::finish_logged`] hands them back.
#[derive(Debug)]
pub struct JobRecorder {
    cfg: RecorderConfig,
    start_ns: u64,
    stats: JobStats,
    completed: [u64; 3],
    /// `None`: one sample per I/O (`bw_avg_ms` = 0).
    bw: Option<Sampler>,
    /// `None`: one sample per I/O (`iops_avg_ms` = 0).
    iops: Option<Sampler>,
    logs: Option<Box<JobLogs>>,
}

impl JobRecorder {
    /// Starts recording at virtual time `start_ns`.
    pub fn new(cfg: RecorderConfig, start_ns: u64) -> Self {
        let bw = (cfg.bw_avg_ms > 0).then(|| Sampler::new(cfg.bw_avg_ms, start_ns, 1024));
        let iops = (cfg.iops_avg_ms > 0).then(|| Sampler::new(cfg.iops_avg_ms, start_ns, 1));
        Self {
            cfg,
            start_ns,
            stats: JobStats {
                members: 1,
                ..JobStats::default()
            },
            completed: [0; 3],
            bw,
            iops,
            logs: None,
        }
    }

    /// From now on, also log every sample to `logs`.
    pub fn attach_logs(&mut self, logs: JobLogs) {
        self.logs = Some(Box::new(logs));
    }

    fn elapsed_ms(&self, t_ns: u64) -> u64 {
        t_ns.saturating_sub(self.start_ns) / 1_000_000
    }

    /// The configuration this recorder was built with.
    pub fn config(&self) -> &RecorderConfig {
        &self.cfg
    }

    /// Virtual time at which the accounted period started.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Statistics so far (windows not yet closed are not included).
    pub fn stats(&self) -> &JobStats {
        &self.stats
    }

    /// Ends the ramp period at `now_ns`: all statistics are reset and the
    /// run time and sampling windows restart from `now_ns`.
    pub fn ramp_done(&mut self, now_ns: u64) {
        let logs = self.logs.take();
        *self = JobRecorder::new(self.cfg.clone(), now_ns);
        self.logs = logs;
    }

    /// Closes sampling windows that ended before `now_ns`.
    pub fn tick(&mut self, now_ns: u64) {
        self.advance(now_ns, false);
    }

    fn advance(&mut self, now_ns: u64, inclusive: bool) {
        let JobStats {
            read, write, trim, ..
        } = &mut self.stats;
        let bw = self.bw.as_mut().and_then(|s| {
            s.advance(
                now_ns,
                inclusive,
                [&mut read.bw, &mut write.bw, &mut trim.bw],
            )
        });
        let iops = self.iops.as_mut().and_then(|s| {
            s.advance(
                now_ns,
                inclusive,
                [&mut read.iops, &mut write.iops, &mut trim.iops],
            )
        });
        if self.logs.is_none() {
            return;
        }
        let start = self.start_ns;
        let logs = self.logs.as_mut().expect("checked above");
        for (closed, log) in [(bw, &mut logs.bw), (iops, &mut logs.iops)] {
            let (Some((end, rates)), Some(log)) = (closed, log.as_mut()) else {
                continue;
            };
            for (d, rate) in rates.iter().enumerate().take(2) {
                if let Some(rate) = rate {
                    log.add(Sample {
                        time_ms: end.saturating_sub(start) / 1_000_000,
                        value: *rate,
                        ddir: d as u8,
                        ..Sample::default()
                    });
                }
            }
        }
    }

    /// Records that an IO was queued while `depth` IOs (including this one)
    /// were in flight for this job. Counts the IO in `total_ios`.
    pub fn record_submit(&mut self, dir: Dir, depth: u32) {
        self.stats.dir_mut(dir).total_ios += 1;
        self.stats.depth_map[depth_bucket(depth)] += 1;
    }

    /// Records an fsync (or fdatasync: `fsync` false) issued with `depth` I/Os in
    /// flight, itself included. fio counts it in the depth map (`io_u_map`) but
    /// not in the I/Os that map's percentages are of, so with syncs the `IO
    /// depths` line adds up to more than 100 %, as fio's does.
    pub fn record_sync_submit(&mut self, depth: u32, fsync: bool) {
        self.stats.depth_map[depth_bucket(depth)] += 1;
        self.stats.sync_ios += u64::from(fsync);
    }

    /// Records a completed fsync/fdatasync that took `lat_ns` from its issue.
    pub fn record_sync(&mut self, lat_ns: u64) {
        self.stats.sync.record(lat_ns);
    }

    /// Records one submit call that queued `nr` IOs.
    pub fn record_submit_batch(&mut self, nr: u32) {
        self.stats.submit_map[batch_bucket(nr)] += 1;
        self.stats.total_submit += 1;
    }

    /// Records one completion reap that returned `nr` IOs.
    pub fn record_complete_batch(&mut self, nr: u32) {
        self.stats.complete_map[batch_bucket(nr)] += 1;
        self.stats.total_complete += 1;
    }

    /// Records a short IO.
    pub fn record_short(&mut self, dir: Dir) {
        self.stats.dir_mut(dir).short_ios += 1;
    }

    /// Records a dropped IO.
    pub fn record_drop(&mut self, dir: Dir) {
        self.stats.dir_mut(dir).drop_ios += 1;
    }

    /// Records a completed IO of `bytes` bytes. Times are virtual ns:
    /// `submit_ns` when the job generated the IO, `issue_ns` when it was
    /// handed to the block layer, `complete_ns` when it completed.
    pub fn record_io(
        &mut self,
        dir: Dir,
        bytes: u64,
        submit_ns: u64,
        issue_ns: u64,
        complete_ns: u64,
    ) {
        self.record_issue(dir, bytes, 0, submit_ns, issue_ns);
        self.record_completion(dir, bytes, 0, submit_ns, issue_ns, complete_ns, None);
    }

    /// Records the submission latency of an I/O of `bytes` bytes at `offset`
    /// when it is issued (`issue_ns`; the job started on it at `submit_ns`),
    /// as fio does in `io_u_queued`. Nothing for synchronous engines.
    pub fn record_issue(
        &mut self,
        dir: Dir,
        bytes: u64,
        offset: u64,
        submit_ns: u64,
        issue_ns: u64,
    ) {
        if !self.cfg.record_slat {
            return;
        }
        let slat = issue_ns.saturating_sub(submit_ns);
        self.stats.dir_mut(dir).slat.record(slat);
        let time_ms = self.elapsed_ms(issue_ns);
        let issue_rel = issue_ns.saturating_sub(self.start_ns);
        if let Some(logs) = &mut self.logs {
            if let Some(l) = &mut logs.slat {
                l.add(Sample {
                    time_ms,
                    value: slat,
                    ddir: dir.index() as u8,
                    bs: bytes,
                    offset,
                    prio: logs.prio,
                    issue_time_ns: issue_rel,
                    ..Sample::default()
                });
            }
        }
    }

    /// Records the completion of an I/O (as [`JobRecorder::record_io`], without
    /// its submission latency, which [`JobRecorder::record_issue`] took).
    /// `prio`: the ioprio value cmdprio gave it (`None`: the job's own).
    #[allow(clippy::too_many_arguments)]
    pub fn record_completion(
        &mut self,
        dir: Dir,
        bytes: u64,
        offset: u64,
        submit_ns: u64,
        issue_ns: u64,
        complete_ns: u64,
        prio: Option<u16>,
    ) {
        self.advance(complete_ns, false);
        let clat = complete_ns.saturating_sub(issue_ns);
        let lat = complete_ns.saturating_sub(submit_ns);
        let time_ms = self.elapsed_ms(complete_ns);
        let issue_rel = issue_ns.saturating_sub(self.start_ns);
        // fio's add_bw_sample without a sampling window: the I/O's own rate.
        let bw_rate = if clat > 0 {
            blk::types::mul_div(bytes, 1_000_000, clat)
        } else {
            0
        };
        let per_io_bw = self.bw.is_none();
        let per_io_iops = self.iops.is_none();
        let d = self.stats.dir_mut(dir);
        d.io_bytes += bytes;
        d.clat.record(clat);
        d.lat.record(lat);
        if let Some(pc) = &self.cfg.prios {
            if d.prios.is_empty() {
                d.prios = pc.order[dir.index()]
                    .iter()
                    .map(|&value| PrioLat {
                        value,
                        lat: LatHist::new(),
                    })
                    .collect();
            }
            let value = prio.unwrap_or(pc.default);
            let i = match d.prios.iter().position(|p| p.value == value) {
                Some(i) => i,
                None => {
                    d.prios.push(PrioLat {
                        value,
                        lat: LatHist::new(),
                    });
                    d.prios.len() - 1
                }
            };
            d.prios[i].lat.record(if pc.use_lat { lat } else { clat });
        }
        if per_io_bw {
            d.bw.add(bw_rate);
        }
        if per_io_iops {
            d.iops.add(1);
        }
        if let Some(logs) = &mut self.logs {
            let base = Sample {
                time_ms,
                ddir: dir.index() as u8,
                bs: bytes,
                offset,
                prio: prio.unwrap_or(logs.prio),
                ..Sample::default()
            };
            if let Some(l) = &mut logs.lat {
                l.add(Sample { value: lat, ..base });
            }
            if let Some(l) = &mut logs.clat {
                l.add(Sample {
                    value: clat,
                    issue_time_ns: issue_rel,
                    ..base
                });
            }
            if per_io_bw {
                if let Some(l) = &mut logs.bw {
                    l.add(Sample {
                        value: bw_rate,
                        ..base
                    });
                }
            }
            if per_io_iops {
                if let Some(l) = &mut logs.iops {
                    l.add(Sample { value: 1, ..base });
                }
            }
        }
        if clat < 1_000 {
            self.stats.lat_n[sub_thousand_bucket(clat)] += 1;
        } else if clat < 1_000_000 {
            self.stats.lat_u[sub_thousand_bucket(clat / 1_000)] += 1;
        } else {
            let ms = clat / 1_000_000;
            let idx = match ms {
                0..=999 => sub_thousand_bucket(ms),
                1000..=1999 => 10,
                _ => 11,
            };
            self.stats.lat_m[idx] += 1;
        }
        let i = dir.index();
        self.completed[i] += 1;
        if let Some(bw) = &mut self.bw {
            bw.pending[i] += bytes;
        }
        if let Some(iops) = &mut self.iops {
            iops.pending[i] += 1;
        }
    }

    /// Ends the clone at `end_ns` and returns its statistics.
    ///
    /// Sampling windows ending at or before `end_ns` are closed; a trailing
    /// partial window is dropped (fio's helper thread never samples it
    /// either). Per-direction runtime is set for directions that saw IO,
    /// rounded up to whole ms from µs like fio's `update_runtime`;
    /// `job_runtime` is truncated ms. If the simulator never called
    /// [`JobRecorder::record_submit`], `total_ios` falls back to the
    /// completion count so IOPS stay meaningful.
    pub fn finish(self, end_ns: u64) -> JobStats {
        self.finish_logged(end_ns).0
    }

    /// [`JobRecorder::finish`], also handing back the attached logs (their
    /// last windows not yet logged: see [`JobLogs::finish`]).
    pub fn finish_logged(mut self, end_ns: u64) -> (JobStats, Option<JobLogs>) {
        self.advance(end_ns, true);
        let elapsed = end_ns.saturating_sub(self.start_ns);
        let runtime_ms = (elapsed / 1_000).div_ceil(1_000);
        for d in Dir::ALL {
            let done = self.completed[d.index()];
            let ds = self.stats.dir_mut(d);
            if ds.total_ios < done {
                ds.total_ios = done;
            }
            if ds.io_bytes > 0 || ds.total_ios > 0 {
                ds.runtime_ms = runtime_ms;
            }
        }
        self.stats.total_run_time_ms = elapsed / 1_000_000;
        (self.stats, self.logs.map(|l| *l))
    }
}

/// Per-group run-status totals (fio's `group_run_stats`), the
/// `Run status group N (all jobs):` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDirTotals {
    /// Shortest per-entry runtime with IO in this direction, ms.
    pub min_run_ms: u64,
    /// Longest per-entry runtime, ms; 0 means the direction is not shown.
    pub max_run_ms: u64,
    /// Lowest per-entry bandwidth, bytes/s.
    pub min_bw: u64,
    /// Highest per-entry bandwidth, bytes/s.
    pub max_bw: u64,
    /// Bytes moved by the group.
    pub io_bytes: u64,
    /// Aggregate bandwidth: `io_bytes * 1000 / max_run_ms`, bytes/s.
    pub agg_bw: u64,
}

/// Run-status totals for one reporting group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupTotals {
    /// Group id.
    pub groupid: u32,
    /// Read, write, trim totals.
    pub dirs: [GroupDirTotals; 3],
}

impl GroupTotals {
    /// Computes the totals from the report entries of one group, exactly as
    /// `__show_run_stats` does from its (possibly group-merged) thread
    /// stats: with `group_reporting` the group has one entry, so min and max
    /// bandwidth coincide.
    pub fn compute<'a>(groupid: u32, entries: impl IntoIterator<Item = &'a JobStats>) -> Self {
        let mut g = GroupTotals {
            groupid,
            ..Default::default()
        };
        for ts in entries {
            for d in Dir::ALL {
                let s = ts.dir(d);
                if s.runtime_ms == 0 {
                    continue;
                }
                let t = &mut g.dirs[d.index()];
                let bw = s.bw_bytes();
                if t.max_run_ms == 0 {
                    t.min_run_ms = s.runtime_ms;
                    t.min_bw = bw;
                } else {
                    t.min_run_ms = t.min_run_ms.min(s.runtime_ms);
                    t.min_bw = t.min_bw.min(bw);
                }
                t.max_run_ms = t.max_run_ms.max(s.runtime_ms);
                t.max_bw = t.max_bw.max(bw);
                t.io_bytes += s.io_bytes;
            }
        }
        for t in &mut g.dirs {
            if t.max_run_ms > 0 {
                t.agg_bw = ((t.io_bytes as u128 * 1000) / t.max_run_ms as u128) as u64;
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_bins_follow_fios_plat_layout() {
        // Below 128 ns every value is its own bin.
        assert_eq!((fio_plat_idx(5), fio_plat_val(5)), (5, 5));
        assert_eq!(fio_plat_val(fio_plat_idx(127)), 127);
        // 1000 ns: group of 512..1024 in 8 ns bins, bin 1000..1008.
        assert_eq!(fio_plat_idx(1000), 317);
        assert_eq!(fio_plat_val(317), 1004);
        assert_eq!(fio_plat_idx(1007), 317);
        assert_eq!(fio_plat_idx(1008), 318);
        let mut h = LatHist::new();
        let samples = [3, 3, 1000, 1007, 1008, 5_000_000, 5_000_100, 123_456_789];
        for v in samples {
            h.record(v);
        }
        let bins = h.fio_bins();
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), samples.len() as u64);
        let mut want: Vec<(u64, u64)> = Vec::new();
        for v in samples {
            let b = fio_plat_val(fio_plat_idx(v));
            match want.iter_mut().find(|w| w.0 == b) {
                Some(w) => w.1 += 1,
                None => want.push((b, 1)),
            }
        }
        want.sort();
        assert_eq!(bins, want);
        assert!(LatHist::new().fio_bins().is_empty());
    }

    const MS: u64 = 1_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn four_ios_exact_moments() {
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        // clat 100, 200, 300, 400 µs; slat 1 µs each.
        for (i, c) in [100u64, 200, 300, 400].iter().enumerate() {
            let sub = i as u64 * MS;
            r.record_submit(Dir::Read, 1);
            r.record_io(Dir::Read, 4096, sub, sub + 1_000, sub + 1_000 + c * 1_000);
        }
        let s = r.finish(10 * MS);
        let c = &s.read.clat;
        assert_eq!(c.count(), 4);
        assert_eq!(c.min(), 100_000);
        assert_eq!(c.max(), 400_000);
        assert!(close(c.mean(), 250_000.0));
        // sample stddev of 100,200,300,400 µs = sqrt(50000/3·…)
        let expect = (((150f64).powi(2) * 2.0 + (50f64).powi(2) * 2.0) / 3.0).sqrt() * 1000.0;
        assert!(close(c.stddev(), expect), "{} vs {}", c.stddev(), expect);
        assert_eq!(s.read.slat.min(), 1_000);
        assert_eq!(s.read.lat.max(), 401_000);
        assert_eq!(s.read.io_bytes, 4 * 4096);
        assert_eq!(s.read.total_ios, 4);
        assert_eq!(s.read.runtime_ms, 10);
        // 100 and 200 µs fall in fio's 100..249 bucket, 300 and 400 in 250..499.
        assert_eq!(s.lat_u[6], 2);
        assert_eq!(s.lat_u[7], 2);
        assert_eq!(s.lat_u.iter().sum::<u64>(), 4);
    }

    #[test]
    fn sync_engine_has_no_slat() {
        let cfg = RecorderConfig {
            record_slat: false,
            ..Default::default()
        };
        let mut r = JobRecorder::new(cfg, 0);
        r.record_io(Dir::Write, 512, 0, 10, 1_000);
        let s = r.finish(MS);
        assert_eq!(s.write.slat.count(), 0);
        assert_eq!(s.write.clat.count(), 1);
        assert_eq!(s.write.clat.min(), 990);
        // No record_submit: total_ios falls back to completions.
        assert_eq!(s.write.total_ios, 1);
    }

    #[test]
    fn bw_samples_over_windows() {
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        // Window 1 (0, 500ms]: 1 MiB. Window 2: nothing. Window 3: 2 MiB
        // in two IOs, one exactly on its closing boundary (1500 ms).
        r.record_io(Dir::Read, 1 << 20, 0, 0, 100 * MS);
        r.tick(700 * MS);
        r.record_io(Dir::Read, 1 << 20, 0, 0, 1_200 * MS);
        r.tick(1_500 * MS); // not closed yet: boundary is inclusive
        r.record_io(Dir::Read, 1 << 20, 0, 0, 1_500 * MS);
        // Trailing partial window (1500, 1700] is dropped.
        r.record_io(Dir::Read, 1 << 20, 0, 0, 1_600 * MS);
        let s = r.finish(1_700 * MS);
        let bw = &s.read.bw;
        assert_eq!(bw.count(), 2);
        // 1 MiB / 0.5 s = 2048 KiB/s; 2 MiB / 0.5 s = 4096 KiB/s.
        assert_eq!(bw.min(), 2048);
        assert_eq!(bw.max(), 4096);
        assert!(close(bw.mean(), 3072.0));
        assert!(close(bw.stddev(), (2.0f64 * 1024.0 * 1024.0).sqrt()));
        let iops = &s.read.iops;
        assert_eq!(iops.count(), 2);
        assert_eq!(iops.min(), 2);
        assert_eq!(iops.max(), 4);
    }

    #[test]
    fn long_idle_gap_skips_windows() {
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        r.record_io(Dir::Write, 4096, 0, 0, 10 * MS);
        // One hour of silence, then IO in the window (3600.0 s, 3600.5 s].
        r.record_io(Dir::Write, 4096, 0, 0, 3_600_000 * MS + 1);
        let s = r.finish(3_600_500 * MS);
        assert_eq!(s.write.bw.count(), 2);
        assert_eq!(s.write.bw.min(), 8);
    }

    #[test]
    fn ramp_resets_everything() {
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        r.record_submit(Dir::Read, 4);
        r.record_io(Dir::Read, 4096, 0, 10, 5 * MS);
        r.ramp_done(1_000 * MS);
        r.record_submit(Dir::Read, 1);
        r.record_io(Dir::Read, 8192, 1_100 * MS, 1_100 * MS, 1_101 * MS);
        let s = r.finish(2_000 * MS);
        assert_eq!(s.read.io_bytes, 8192);
        assert_eq!(s.read.total_ios, 1);
        assert_eq!(s.read.clat.count(), 1);
        assert_eq!(s.read.runtime_ms, 1_000);
        assert_eq!(s.total_run_time_ms, 1_000);
        assert_eq!(s.depth_map, [1, 0, 0, 0, 0, 0, 0]);
        // Windows restarted at 1000 ms: (1000,1500] and (1500,2000].
        assert_eq!(s.read.bw.count(), 1);
        assert_eq!(s.read.bw.max(), 16);
    }

    #[test]
    fn group_merge_follows_sum_thread_stats() {
        let mk = |lats: &[u64], bytes: u64| {
            let mut r = JobRecorder::new(RecorderConfig::default(), 0);
            for &l in lats {
                r.record_submit(Dir::Read, 1);
                r.record_io(Dir::Read, bytes, 0, 0, l);
            }
            r.finish(1_000 * MS)
        };
        let a = mk(&[1_000, 3_000], 1 << 20);
        let b = mk(&[5_000, 7_000, 9_000], 1 << 20);
        let g = JobStats::merged([&a, &b]);
        assert_eq!(g.members, 2);
        let c = &g.read.clat;
        assert_eq!(c.count(), 5);
        assert_eq!(c.min(), 1_000);
        assert_eq!(c.max(), 9_000);
        assert!(close(c.mean(), 5_000.0));
        // stddev of 1,3,5,7,9 µs (n-1) = sqrt(10) µs
        assert!(close(c.stddev(), 10f64.sqrt() * 1000.0));
        assert!(c.percentile(50.0).abs_diff(5_000) <= 5);
        // bw samples add: each job had one window with 2 or 3 MiB.
        assert_eq!(g.read.bw.count(), 2);
        assert_eq!(g.read.bw.min(), 4096 + 6144);
        assert_eq!(g.read.bw.max(), 4096 + 6144);
        assert!(close(g.read.bw.mean(), 4096.0 + 6144.0));
        assert_eq!(g.read.io_bytes, 5 << 20);
        assert_eq!(g.read.runtime_ms, 1_000);
        assert_eq!(g.total_run_time_ms, 2_000);

        let t = GroupTotals::compute(0, [&a, &b]);
        let r = &t.dirs[0];
        assert_eq!(r.min_run_ms, 1_000);
        assert_eq!(r.max_run_ms, 1_000);
        assert_eq!(r.min_bw, 2 << 20);
        assert_eq!(r.max_bw, 3 << 20);
        assert_eq!(r.agg_bw, 5 << 20);
        assert_eq!(t.dirs[1].max_run_ms, 0);
    }

    #[test]
    fn percentiles_within_hdr_precision() {
        let mut h = LatHist::new();
        for v in 1..=10_000u64 {
            h.record(v * 1_000);
        }
        for p in DEFAULT_PERCENTILES {
            let exact = (p / 100.0 * 10_000.0).ceil() * 1_000.0;
            let got = h.percentile(p) as f64;
            assert!(
                (got - exact).abs() / exact < 0.002,
                "p{p}: {got} vs {exact}"
            );
        }
        assert_eq!(h.percentile(100.0), 10_000_000);
        assert_eq!(LatHist::new().percentile(50.0), 0);
    }

    #[test]
    fn distributions_use_fio_floors() {
        let mut s = JobStats::default();
        s.read.total_ios = 2000;
        s.depth_map = [1999, 1, 0, 0, 0, 0, 0];
        s.lat_u = [0, 0, 0, 0, 0, 0, 0, 1999, 1, 0];
        let d = s.depth_dist();
        assert!(close(d[0], 99.95));
        assert_eq!(d[1], 0.1);
        let l = s.lat_u_dist();
        assert_eq!(l[8], 0.05);
        s.lat_u[8] = 0;
        s.lat_u[9] = 0;
        s.read.total_ios = 1_000_000;
        s.lat_m[0] = 1;
        assert_eq!(s.lat_m_dist()[0], 0.01);
    }

    #[test]
    fn bucket_edges() {
        assert_eq!(depth_bucket(1), 0);
        assert_eq!(depth_bucket(3), 1);
        assert_eq!(depth_bucket(64), 6);
        assert_eq!(batch_bucket(1), 1);
        assert_eq!(batch_bucket(4), 1);
        assert_eq!(batch_bucket(64), 5);
        assert_eq!(batch_bucket(65), 6);
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        r.record_io(Dir::Read, 1, 0, 0, 999);
        r.record_io(Dir::Read, 1, 0, 0, 1_000);
        r.record_io(Dir::Read, 1, 0, 0, 1_500 * MS);
        r.record_io(Dir::Read, 1, 0, 0, 2_500 * MS);
        let s = r.finish(3_000 * MS);
        assert_eq!(s.lat_n[9], 1);
        assert_eq!(s.lat_u[0], 1);
        assert_eq!(s.lat_m[10], 1);
        assert_eq!(s.lat_m[11], 1);
    }
}
