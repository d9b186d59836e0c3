//! fio-compatible reports: the input model filled by the simulator and the
//! two writers, [`text`] (fio's normal output) and [`json`] (fio 3.x
//! `--output-format=json`).
//!
//! Output depends only on the [`RunReport`] value: the writers never read
//! the clock or the environment, so a seeded simulation reproduces its
//! report byte for byte.
//!
//! fio options that only change presentation are fixed at their defaults:
//! `kb_base=1024`, `unit_base` = bytes, `sig_figs=4`,
//! `unified_rw_reporting=none`.

pub mod json;
pub mod terse;
pub mod text;

use crate::stats::{GroupTotals, JobStats, DEFAULT_PERCENTILES};

/// Run-status totals of one group (see [`GroupTotals::compute`]).
pub type GroupResult = GroupTotals;

/// The `fio version` the report carries: the fio release whose output
/// format the writers follow (key for key, line for line; the JSON schema
/// test compares against this release's own output). fio's tools read this
/// string as `fio-MAJOR.MINOR` to decide which keys to expect, so it names a
/// real fio release rather than iosched; iosched's own version is in the
/// JSON's `"iosched"` object (`version`) and the text report's header.
pub const FIO_VERSION: &str = "fio-3.42";

/// fio's default `sig_figs`.
pub const SIG_FIGS: usize = 4;
/// fio's default `kb_base`.
pub const KB_BASE: u64 = 1024;

/// A whole run, as handed to the writers.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// Version string reported as `fio version`, e.g. `"fio-3.36"`.
    pub fio_version: String,
    /// Report time, seconds since the epoch (JSON `timestamp`).
    pub timestamp_secs: u64,
    /// Report time, ms since the epoch (JSON `timestamp_ms`).
    pub timestamp_ms: u64,
    /// ctime-style time without trailing newline, e.g.
    /// `"Wed Jul  8 09:07:52 2026"` (JSON `time`, text job header).
    pub time_string: String,
    /// Options of the `[global]` section, in job-file order.
    pub global_options: Vec<(String, String)>,
    /// Extra lines printed at the top of the text report only (device,
    /// scheduler, seed, ignored options…). Not part of the JSON.
    pub header: Vec<String>,
    /// One entry per reported job: per clone, or per group with
    /// `group_reporting`.
    pub jobs: Vec<JobResult>,
    /// Run-status totals per group; when a group is missing here the
    /// writers compute it from `jobs`.
    pub groups: Vec<GroupResult>,
    /// Disk statistics of the simulated devices.
    pub disk_util: Vec<DiskUtil>,
    /// Extra lines printed at the end of the text report only (scheduler
    /// statistics as the kernel shows them in debugfs).
    pub footer: Vec<String>,
    /// iosched's own facts about the run (device, scheduler, tunables, seed,
    /// scheduler statistics), emitted as a trailing top-level `"iosched"`
    /// object in JSON. fio tooling ignores keys it does not know.
    pub extra: Option<serde_json::Value>,
}

impl RunReport {
    /// Fills `groups` from `jobs` (one entry per distinct groupid, in
    /// ascending order), replacing what was there.
    pub fn compute_groups(&mut self) {
        self.groups = self.all_computed_groups();
    }

    fn all_computed_groups(&self) -> Vec<GroupResult> {
        let mut ids: Vec<u32> = self.jobs.iter().map(|j| j.groupid).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| self.computed_group(id)).collect()
    }

    fn computed_group(&self, id: u32) -> GroupResult {
        GroupTotals::compute(
            id,
            self.jobs
                .iter()
                .filter(|j| j.groupid == id)
                .map(|j| &j.stats),
        )
    }

    /// Totals of group `id`: the stored entry, or computed from `jobs`.
    pub fn group(&self, id: u32) -> GroupResult {
        self.groups
            .iter()
            .find(|g| g.groupid == id)
            .cloned()
            .unwrap_or_else(|| self.computed_group(id))
    }

    /// Groups to print in the text report: stored ones, or computed for
    /// every groupid present in `jobs`.
    pub fn groups_or_computed(&self) -> Vec<GroupResult> {
        if !self.groups.is_empty() {
            return self.groups.clone();
        }
        self.all_computed_groups()
    }
}

/// One job entry of the report.
#[derive(Debug, Clone)]
pub struct JobResult {
    /// Job name (`[section]` or `name=`).
    pub jobname: String,
    /// Reporting group.
    pub groupid: u32,
    /// errno of the first error, 0 if none.
    pub error: i32,
    /// Text shown as `pid=` in the text report (we use a synthetic id).
    pub pid: u32,
    /// Job start time, ms since the epoch (JSON `job_start`).
    pub job_start_ms: u64,
    /// Seconds since the run started (JSON `elapsed`), ramp included.
    pub elapsed_secs: u64,
    /// The job section's own options, in file order (JSON `job options`).
    pub job_options: Vec<(String, String)>,
    /// Statistics; `stats.members` is the number of clones merged in.
    pub stats: JobStats,
    /// `rw=` value for the start line, e.g. `"randread"`.
    pub rw: String,
    /// (min, max) block size for read, write, trim (start line).
    pub bs: [(u64, u64); 3],
    /// Engine name for the start line, e.g. `"libaio"`.
    pub ioengine: String,
    /// `iodepth=` for the start line.
    pub iodepth: u32,
    /// Percentiles to report (fio `percentile_list`); sorted on output.
    pub percentile_list: Vec<f64>,
    /// Decimals of the percentile labels in text output (default 2).
    pub percentile_precision: u32,
    /// Report clat percentiles (fio default on).
    pub clat_percentiles: bool,
    /// Report total-latency percentiles (fio default off).
    pub lat_percentiles: bool,
    /// Report slat percentiles (fio default off).
    pub slat_percentiles: bool,
    /// Queue depth in use at the end (`latency_depth`; equals iodepth
    /// unless `latency_target` is set). 0 hides the latency fields.
    pub latency_depth: u32,
    /// `latency_target` in ns.
    pub latency_target_ns: u64,
    /// `latency_window` in µs.
    pub latency_window_us: u64,
    /// `latency_percentile` (default 100).
    pub latency_percentile: f64,
    /// The job runs as threads (`thread`): counted as such in the
    /// "Starting N threads" line.
    pub thread: bool,
    /// The steady-state section (`steadystate` with a duration).
    pub steadystate: Option<crate::steadystate::SsReport>,
}

impl JobResult {
    /// An entry with fio's defaults for everything but name, group and
    /// statistics (iodepth 1, psync, 4 KiB blocks).
    pub fn new(jobname: impl Into<String>, groupid: u32, stats: JobStats) -> Self {
        Self {
            jobname: jobname.into(),
            groupid,
            error: 0,
            pid: 0,
            job_start_ms: 0,
            elapsed_secs: 0,
            job_options: Vec::new(),
            stats,
            rw: "read".into(),
            bs: [(4096, 4096); 3],
            ioengine: "psync".into(),
            iodepth: 1,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            latency_depth: 1,
            latency_target_ns: 0,
            latency_window_us: 0,
            latency_percentile: 100.0,
            thread: false,
            steadystate: None,
        }
    }

    /// Applies a job's report switches as fio would have measured: a
    /// disabled latency is never sampled (so its moments, percentiles and,
    /// for clat, the latency distribution lines are empty), disabled
    /// bandwidth measurement leaves no bw/iops samples; percentiles are shown
    /// as the job asks.
    pub fn apply_report_options(&mut self, r: &crate::fio::ReportOptions) {
        self.clat_percentiles = r.clat_percentiles;
        self.lat_percentiles = r.lat_percentiles;
        self.slat_percentiles = r.slat_percentiles;
        let st = &mut self.stats;
        for d in [&mut st.read, &mut st.write, &mut st.trim] {
            if r.disable_clat {
                d.clat = Default::default();
            }
            if r.disable_lat {
                d.lat = Default::default();
            }
            if r.disable_slat {
                d.slat = Default::default();
            }
            if r.disable_bw {
                d.bw = Default::default();
                d.iops = Default::default();
            }
        }
        if r.disable_clat {
            st.lat_n = Default::default();
            st.lat_u = Default::default();
            st.lat_m = Default::default();
        }
    }

    /// Number of clones aggregated into this entry.
    pub fn num_jobs(&self) -> u32 {
        self.stats.members
    }

    /// The percentile list sorted ascending, zero/NaN entries dropped (fio
    /// stops at the first 0 and sorts).
    pub fn sorted_percentiles(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .percentile_list
            .iter()
            .copied()
            .filter(|p| p.is_finite() && *p > 0.0 && *p <= 100.0)
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v
    }
}

/// Disk statistics of one device (`Disk stats (read/write):`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskUtil {
    /// Device name, e.g. `"nvme0n1"`.
    pub name: String,
    /// Completed read requests.
    pub read_ios: u64,
    /// Completed write requests.
    pub write_ios: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Read requests merged.
    pub read_merges: u64,
    /// Write requests merged.
    pub write_merges: u64,
    /// Time reads spent in the device queue, ms.
    pub read_ticks: u64,
    /// Time writes spent in the device queue, ms.
    pub write_ticks: u64,
    /// Weighted time in queue, ms.
    pub in_queue: u64,
    /// Busy percentage, 0..=100.
    pub util: f64,
}

/// Unit suffix for [`num2str`] (fio's `enum n2s_unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// No suffix.
    None,
    /// `/s`.
    PerSec,
    /// `B`.
    Byte,
    /// `bit` (value multiplied by 8).
    Bit,
    /// `B/s`.
    BytePerSec,
    /// `bit/s` (value multiplied by 8).
    BitPerSec,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::PerSec => "/s",
            Unit::Byte => "B",
            Unit::Bit => "bit",
            Unit::BytePerSec => "B/s",
            Unit::BitPerSec => "bit/s",
        }
    }
}

/// fio's `num2str`: shortens `num` to at most `maxlen` digits (the
/// decimal point counts) with an SI (`pow2 == false`, k/M/G) or IEC
/// (`Ki`/`Mi`/`Gi`) prefix. `base` says what one unit of `num` already is
/// (1 for plain numbers, 1024 if `num` is in KiB).
///
/// The rounding quirks are fio's on purpose, so that output compares
/// equal: only the remainder of the last division feeds the decimals, and
/// without room for decimals the value rounds half up.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: Unit) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { &IEC } else { &SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = num;
    let mut post_index = 0usize;
    let mut base = base;
    while base > 1 {
        base /= thousand;
        post_index += 1;
    }
    if matches!(unit, Unit::Bit | Unit::BitPerSec) {
        num = num.wrapping_mul(8);
    }
    let digits = |n: u64| n.to_string().len();
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SI.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    if post_index >= SI.len() {
        post_index = 0;
    }
    let done = |n: u64| format!("{}{}{}", n, prefixes[post_index], unit.suffix());
    let Some(m) = modulo else {
        return done(num);
    };
    let len = digits(num);
    if maxlen as i64 - len as i64 <= 1 {
        if carry {
            num += 1;
        }
        return done(num);
    }
    let prec = maxlen - len - 1;
    let frac = format!("{:.*}", prec, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!(
        "{}.{}{}{}",
        num,
        &frac[2..],
        prefixes[post_index],
        unit.suffix()
    )
}

/// fio's `convert_agg_kbytes_percent`: a job's mean bandwidth sample as a
/// share of its group's aggregate bandwidth. fio passes the mean as an
/// `int`, so it is truncated first.
pub(crate) fn bw_agg_percent(group_agg_bytes: u64, mean_kib: f64) -> f64 {
    if group_agg_bytes > 1024 {
        let mean = mean_kib.trunc();
        let p = mean * 100.0 / (group_agg_bytes as f64 / 1024.0);
        p.min(100.0)
    } else {
        100.0
    }
}

/// Latency percentile values (ns) for the sorted list, or `None` when fio
/// would not print them.
pub(crate) fn percentile_values(
    hist: &crate::stats::LatHist,
    enabled: bool,
    list: &[f64],
) -> Option<Vec<(f64, u64)>> {
    if !enabled || hist.count() == 0 || list.is_empty() {
        return None;
    }
    Some(list.iter().map(|&p| (p, hist.percentile(p))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_fio_samples() {
        // From a real fio 3.42 run: bw_bytes=5096143, io_bytes=50966528.
        assert_eq!(num2str(5096143, 4, 1, true, Unit::BytePerSec), "4977KiB/s");
        assert_eq!(num2str(5096143, 4, 1, false, Unit::BytePerSec), "5096kB/s");
        assert_eq!(num2str(50966528, 4, 1, true, Unit::Byte), "48.6MiB");
        assert_eq!(num2str(50966528, 4, 1, false, Unit::Byte), "51.0MB");
        assert_eq!(num2str(1244, 4, 1, false, Unit::None), "1244");
        assert_eq!(num2str(152_345, 4, 1, false, Unit::None), "152k");
        assert_eq!(
            num2str(78_000_000, 4, 1, true, Unit::BytePerSec),
            "74.4MiB/s"
        );
        assert_eq!(
            num2str(78_000_000, 4, 1, false, Unit::BytePerSec),
            "78.0MB/s"
        );
        assert_eq!(num2str(4096, 4, 1, true, Unit::Byte), "4096B");
        assert_eq!(num2str(131072, 4, 1, true, Unit::Byte), "128KiB");
        assert_eq!(num2str(512, 4, 1, true, Unit::Byte), "512B");
        assert_eq!(num2str(9052, 6, 1, false, Unit::None), "9052");
        assert_eq!(num2str(12_345_678, 6, 1, false, Unit::None), "12346k");
        // Decimal rounding that overflows into the integer part.
        assert_eq!(num2str(1_999_999, 4, 1, false, Unit::None), "2000k");
        assert_eq!(num2str(19_999, 4, 1, false, Unit::None), "20.0k");
    }

    #[test]
    fn agg_percent_truncates_and_caps() {
        assert_eq!(bw_agg_percent(0, 10.0), 100.0);
        assert_eq!(bw_agg_percent(2048 * 1024, 1024.9), 50.0);
        assert_eq!(bw_agg_percent(2048 * 1024, 4096.0), 100.0);
    }
}
