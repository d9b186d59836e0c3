//! fio's terse (`--output-format=terse`, `--minimal`) output, versions 3, 4
//! and 5: one semicolon-separated line per job entry, as stat.c's
//! `show_thread_status_terse_all` and `show_ddir_status_terse` print it
//! (field for field; the layout is in fio's HOWTO, "Terse output").
//!
//! Terse output has no header: iosched's own lines (device, scheduler,
//! ignored options) are left out, as fio leaves out its start lines.

use std::fmt::Write as _;

use super::{percentile_values, JobResult, RunReport};
use crate::stats::{Dir, DirStats, LatHist, SampleStat};

/// fio's `FIO_IO_U_LIST_MAX_LEN`: percentile fields per direction.
const PERCENTILE_FIELDS: usize = 20;

/// The terse versions fio writes with the per-direction layout used here.
pub const VERSIONS: [u32; 3] = [3, 4, 5];

/// Renders the terse report, version `ver` (3, 4 or 5).
///
/// # Panics
///
/// If `ver` is not one of [`VERSIONS`] (the option parser refuses others).
pub fn to_string(report: &RunReport, ver: u32) -> String {
    assert!(VERSIONS.contains(&ver), "terse version {ver}");
    let mut s = String::new();
    for j in &report.jobs {
        job_line(report, j, ver, &mut s);
    }
    s
}

fn job_line(report: &RunReport, j: &JobResult, ver: u32, s: &mut String) {
    let st = &j.stats;
    let _ = write!(
        s,
        "{ver};{};{};{};{}",
        report.fio_version, j.jobname, j.groupid, j.error
    );
    let group = report.group(j.groupid);
    let dirs: &[Dir] = if ver >= 4 {
        &[Dir::Read, Dir::Write, Dir::Trim]
    } else {
        &[Dir::Read, Dir::Write]
    };
    for &d in dirs {
        let agg = group.dirs[d.index()].agg_bw;
        ddir(j, st.dir(d), agg, ver, s);
    }
    let _ = write!(
        s,
        ";{:.6}%;{:.6}%;{};0;0",
        st.usr_cpu(),
        st.sys_cpu(),
        st.ctx
    );
    for v in st.depth_dist() {
        let _ = write!(s, ";{v:.1}%");
    }
    // stat_calc_lat_nu: the nanosecond buckets go into the first
    // microsecond one, "to keep the terse format unaltered".
    let mut lat_u = st.lat_u_dist();
    let total = st.total_ios();
    if total > 0 {
        lat_u[0] += 100.0 * st.lat_n.iter().sum::<u64>() as f64 / total as f64;
    }
    for v in lat_u.iter().chain(st.lat_m_dist().iter()) {
        let _ = write!(s, ";{v:.2}%");
    }
    for d in &report.disk_util {
        let _ = write!(
            s,
            ";{};{};{};{};{};{};{};{};{:.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util.clamp(0.0, 100.0)
        );
    }
    let description = j
        .job_options
        .iter()
        .chain(&report.global_options)
        .find(|(k, _)| k == "description")
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty());
    if let Some(d) = description {
        let _ = write!(s, ";{d}");
    }
    s.push('\n');
}

/// `min;max;mean;dev` of a latency in µs, as fio divides its ns values.
fn lat_fields(h: &LatHist, s: &mut String) {
    if h.count() == 0 {
        s.push_str(";0;0;0.000000;0.000000");
    } else {
        let _ = write!(
            s,
            ";{};{};{:.6};{:.6}",
            h.min() / 1000,
            h.max() / 1000,
            h.mean() / 1000.0,
            h.stddev() / 1000.0
        );
    }
}

fn ddir(j: &JobResult, d: &DirStats, group_agg_bytes: u64, ver: u32, s: &mut String) {
    let (bw, iops) = if d.runtime_ms > 0 {
        (
            (1000 * u128::from(d.io_bytes) / u128::from(d.runtime_ms)) / 1024,
            1000 * u128::from(d.total_ios) / u128::from(d.runtime_ms),
        )
    } else {
        (0, 0)
    };
    let _ = write!(s, ";{};{bw};{iops};{}", d.io_bytes >> 10, d.runtime_ms);
    lat_fields(&d.slat, s);
    lat_fields(&d.clat, s);
    // Total latency's percentiles when asked for, else completion latency's.
    let plist = j.sorted_percentiles();
    let vals = if j.lat_percentiles {
        percentile_values(&d.lat, true, &plist)
    } else {
        percentile_values(&d.clat, j.clat_percentiles, &plist)
    }
    .unwrap_or_default();
    for i in 0..PERCENTILE_FIELDS {
        match vals.get(i) {
            Some((p, v)) => {
                let _ = write!(s, ";{p:.6}%={}", v / 1000);
            }
            None => s.push_str(";0%=0"),
        }
    }
    lat_fields(&d.lat, s);
    let bw_stat: &SampleStat = &d.bw;
    if bw_stat.count() > 0 {
        let mean = bw_stat.mean();
        let p_of_agg = if group_agg_bytes > 0 {
            (mean * 100.0 / (group_agg_bytes / 1024) as f64).min(100.0)
        } else {
            100.0
        };
        let _ = write!(
            s,
            ";{};{};{p_of_agg:.6}%;{mean:.6};{:.6}",
            bw_stat.min(),
            bw_stat.max(),
            bw_stat.stddev()
        );
    } else {
        s.push_str(";0;0;0.000000%;0.000000;0.000000");
    }
    if ver == 5 {
        let _ = write!(s, ";{}", bw_stat.count());
        let io = &d.iops;
        if io.count() > 0 {
            let _ = write!(
                s,
                ";{};{};{:.6};{:.6};{}",
                io.min(),
                io.max(),
                io.mean(),
                io.stddev(),
                io.count()
            );
        } else {
            s.push_str(";0;0;0.000000;0.000000;0");
        }
    }
}
