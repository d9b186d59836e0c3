//! fio's normal (human-readable) output.
//!
//! Layout and number formatting follow fio's `show_thread_status_normal`,
//! `show_ddir_status`, `show_clat_percentiles`, `show_latencies`,
//! `show_group_stats` and `print_disk_util`, including the unit
//! auto-scaling (nsec/usec/msec) and `num2str` rounding, so existing
//! parsers of fio's text output keep working.
//!
//! Differences from real fio: our header lines come first; there is no
//! ETA line; the `cpu` line is the host model's (zeros on the free host).

use std::fmt::Write as _;
use std::io::{self, Write};

use super::{bw_agg_percent, num2str, percentile_values, JobResult, RunReport, Unit, SIG_FIGS};
use crate::stats::{Dir, DirStats, LatHist};

/// Writes the text report for `report`.
pub fn write(report: &RunReport, out: &mut impl Write) -> io::Result<()> {
    out.write_all(to_string(report).as_bytes())
}

/// Renders the text report into a string.
pub fn to_string(report: &RunReport) -> String {
    let mut s = String::new();
    for h in &report.header {
        s.push_str(h);
        s.push('\n');
    }
    start_lines(report, &mut s);
    s.push('\n');
    for j in &report.jobs {
        job_block(report, j, &mut s);
    }
    for g in report.groups_or_computed() {
        group_block(&g, &mut s);
    }
    if !report.disk_util.is_empty() {
        s.push_str("\nDisk stats (read/write):\n");
        for d in &report.disk_util {
            let _ = writeln!(
                s,
                "  {}: ios={}/{}, sectors={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_sectors,
                d.write_sectors,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util.clamp(0.0, 100.0)
            );
        }
    }
    if !report.footer.is_empty() {
        s.push('\n');
        for f in &report.footer {
            s.push_str(f);
            s.push('\n');
        }
    }
    s
}

fn bytes(v: u64) -> String {
    num2str(v, SIG_FIGS, 1, true, Unit::Byte)
}

/// The lines fio prints while parsing the job file: one per job section,
/// `...` when it has clones, then the version and process count.
fn start_lines(report: &RunReport, s: &mut String) {
    let (mut procs, mut threads) = (0u64, 0u64);
    let mut i = 0;
    while i < report.jobs.len() {
        let j = &report.jobs[i];
        let mut run = 1;
        while i + run < report.jobs.len()
            && report.jobs[i + run].jobname == j.jobname
            && report.jobs[i + run].groupid == j.groupid
        {
            run += 1;
        }
        let clones: u64 = report.jobs[i..i + run]
            .iter()
            .map(|e| u64::from(e.num_jobs().max(1)))
            .sum();
        if j.thread {
            threads += clones;
        } else {
            procs += clones;
        }
        let _ = writeln!(
            s,
            "{}: (g={}): rw={}, bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ioengine={}, iodepth={}",
            j.jobname,
            j.groupid,
            j.rw,
            bytes(j.bs[0].0),
            bytes(j.bs[0].1),
            bytes(j.bs[1].0),
            bytes(j.bs[1].1),
            bytes(j.bs[2].0),
            bytes(j.bs[2].1),
            j.ioengine,
            j.iodepth
        );
        if clones > 1 {
            s.push_str("...\n");
        }
        i += run;
    }
    let _ = writeln!(s, "{}", report.fio_version);
    // backend.c: threads first, then processes; "0 processes" when empty.
    s.push_str("Starting ");
    if threads > 0 {
        let _ = write!(s, "{threads} thread{}", if threads > 1 { "s" } else { "" });
    }
    if procs > 0 || threads == 0 {
        if threads > 0 {
            s.push_str(" and ");
        }
        let _ = write!(s, "{procs} process{}", if procs > 1 { "es" } else { "" });
    }
    s.push('\n');
}

fn job_block(report: &RunReport, j: &JobResult, s: &mut String) {
    let st = &j.stats;
    if st.total_bytes() == 0 && st.total_ios() == 0 {
        return;
    }
    if j.error == 0 {
        let _ = writeln!(
            s,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
            j.jobname,
            j.groupid,
            j.num_jobs(),
            j.error,
            j.pid,
            report.time_string
        );
    } else {
        let _ = writeln!(
            s,
            "{}: (groupid={}, jobs={}): err={:2} (errno {}): pid={}: {}",
            j.jobname,
            j.groupid,
            j.num_jobs(),
            j.error,
            j.error,
            j.pid,
            report.time_string
        );
    }
    let group = report.group(j.groupid);
    let plist = j.sorted_percentiles();
    for d in Dir::ALL {
        let ds = st.dir(d);
        if ds.io_bytes > 0 {
            ddir_status(j, d, ds, group.dirs[d.index()].agg_bw, &plist, s);
        }
    }
    show_lat(&st.lat_n_dist(), "nsec", s);
    show_lat(&st.lat_u_dist(), "usec", s);
    show_lat(&st.lat_m_dist(), "msec", s);
    if st.sync.count() > 0 {
        // fio's show_ddir_status for DDIR_SYNC.
        s.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat("sync", &st.sync, s);
        let precision = j.percentile_precision.min(10) as usize;
        if let Some(vals) = percentile_values(&st.sync, true, &plist) {
            percentiles_block("sync", &vals, precision, s);
        }
    }
    let _ = writeln!(
        s,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        st.usr_cpu(),
        st.sys_cpu(),
        st.ctx,
        0,
        0
    );
    let d = st.depth_dist();
    let _ = writeln!(
        s,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    for (label, d) in [
        ("     submit    ", st.submit_dist()),
        ("     complete  ", st.complete_dist()),
    ] {
        let _ = writeln!(
            s,
            "{label}: 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        );
    }
    let _ = writeln!(
        s,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        st.read.total_ios,
        st.write.total_ios,
        st.trim.total_ios,
        st.sync_ios,
        st.read.short_ios,
        st.write.short_ios,
        st.trim.short_ios,
        st.read.drop_ios,
        st.write.drop_ios,
        st.trim.drop_ios
    );
    if j.latency_depth != 0 {
        let (t, tu) = scale_down_ns(j.latency_target_ns);
        let (w, wu) = scale_down_ns(j.latency_window_us.saturating_mul(1000));
        let _ = writeln!(
            s,
            "     latency   : target={t:.2}{tu}, window={w:.2}{wu}, percentile={:.2}%, depth={}",
            j.latency_percentile, j.latency_depth
        );
    }
    if let Some(ss) = &j.steadystate {
        steadystate_line(ss, s);
    }
}

/// fio's `show_ss_normal`: whether steady state was attained, the ring's
/// mean bandwidth, IOPS (and latency for a latency criterion), and the
/// last measure.
fn steadystate_line(ss: &crate::steadystate::SsReport, s: &mut String) {
    use crate::steadystate::Metric;
    let bw = ss.bw_mean();
    let c = &ss.criterion;
    let lat = if c.metric == Metric::Lat {
        let mean = ss.lat_mean();
        // nsec_to_msec / nsec_to_usec with the mean as both min and mean.
        let (v, unit) = if mean > 2_000_000 {
            (mean as f64 / 1e6, "msec")
        } else if mean > 2_000 {
            (mean as f64 / 1e3, "usec")
        } else {
            (mean as f64, "nsec")
        };
        format!(
            ", lat={}{unit}",
            num2str(v as u64, SIG_FIGS, 1, false, Unit::None)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "  steadystate  : attained={}, bw={} ({}), iops={}{lat}, {}{}={:.3}{}",
        if ss.attained { "yes" } else { "no" },
        num2str(bw / 1024, SIG_FIGS, 1024, true, Unit::BytePerSec),
        num2str(bw / 1024, SIG_FIGS, 1024, false, Unit::BytePerSec),
        num2str(ss.iops_mean(), SIG_FIGS, 1, false, Unit::None),
        match c.metric {
            Metric::Iops => "iops",
            Metric::Bw => "bw",
            Metric::Lat => "lat",
        },
        if c.slope { " slope" } else { " mean dev" },
        ss.value,
        if c.pct { "%" } else { "" }
    );
}

fn scale_down_ns(v: u64) -> (f64, &'static str) {
    if v >= 2_000_000_000 {
        (v as f64 / 1e9, "s")
    } else if v >= 2_000_000 {
        (v as f64 / 1e6, "ms")
    } else if v >= 2_000 {
        (v as f64 / 1e3, "us")
    } else {
        (v as f64, "ns")
    }
}

fn ddir_status(
    j: &JobResult,
    d: Dir,
    ds: &DirStats,
    group_agg: u64,
    plist: &[f64],
    s: &mut String,
) {
    let runt = ds.runtime_ms;
    if runt == 0 {
        return;
    }
    let bw = ds.bw_bytes();
    let iops = ((1000u128 * ds.total_ios as u128) / runt as u128) as u64;
    // stat.c show_ddir_status: a zbd job that writes or trims ends every
    // direction's line with its zone resets (`zbd_write_status`).
    let post = match j.stats.zone_resets {
        Some(n) => format!("; {n} zone resets"),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){post}",
        d.name(),
        num2str(iops, SIG_FIGS, 1, false, Unit::None),
        num2str(bw, SIG_FIGS, 1, true, Unit::BytePerSec),
        num2str(bw, SIG_FIGS, 1, false, Unit::BytePerSec),
        bytes(ds.io_bytes),
        runt
    );
    for (name, h) in [("slat", &ds.slat), ("clat", &ds.clat), (" lat", &ds.lat)] {
        display_lat(name, h, s);
    }
    // Per-priority lines (cmdprio) when at least two priorities have samples.
    let by_prio = ds.prios_with_samples().count() >= 2;
    let clat_type = if j.lat_percentiles { "lat" } else { "clat" };
    let prio_name = |v: u16| {
        format!(
            "{clat_type} prio {}/{}/{}",
            v >> 13,
            v & 7,
            (v >> 3) & 0x3ff
        )
    };
    if by_prio {
        for p in ds.prios_with_samples() {
            display_lat(&prio_name(p.value), &p.lat, s);
        }
    }
    let precision = j.percentile_precision.min(10) as usize;
    for (name, h, on) in [
        ("slat", &ds.slat, j.slat_percentiles),
        ("clat", &ds.clat, j.clat_percentiles),
        ("lat", &ds.lat, j.lat_percentiles),
    ] {
        if let Some(vals) = percentile_values(h, on, plist) {
            percentiles_block(name, &vals, precision, s);
        }
    }
    if by_prio && (j.clat_percentiles || j.lat_percentiles) {
        let all = if j.lat_percentiles {
            ds.lat.count()
        } else {
            ds.clat.count()
        };
        for p in ds.prios_with_samples() {
            if let Some(vals) = percentile_values(&p.lat, true, plist) {
                let share = 100.0 * p.lat.count() as f64 / all.max(1) as f64;
                let name = format!("{} ({share:.2}% of IOs)", prio_name(p.value));
                percentiles_block(&name, &vals, precision, s);
            }
        }
    }
    if ds.bw.count() > 0 {
        let per = bw_agg_percent(group_agg, ds.bw.mean());
        let (mut min, mut max) = (ds.bw.min(), ds.bw.max());
        let (mut mean, mut dev) = (ds.bw.mean(), ds.bw.stddev());
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min = (min as f64 / 1024.0) as u64;
            max = (max as f64 / 1024.0) as u64;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            s,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            ds.bw.count()
        );
    }
    if ds.iops.count() > 0 {
        let _ = writeln!(
            s,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            ds.iops.min(),
            ds.iops.max(),
            ds.iops.mean(),
            ds.iops.stddev(),
            ds.iops.count()
        );
    }
}

/// One `slat`/`clat`/`lat` line with fio's unit choice: µs only when the
/// smallest value is above 2 µs, the largest above ~100 µs and the spread
/// above 1 µs (ms likewise, ×1000).
fn display_lat(name: &str, h: &LatHist, s: &mut String) {
    if h.count() == 0 {
        return;
    }
    let (mut min, mut max, mut mean, mut dev) = (h.min(), h.max(), h.mean(), h.stddev());
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1e6;
        dev /= 1e6;
        "(msec)"
    } else if min > 2_000 && max > 99_999 && dev > 1_000.0 {
        min /= 1_000;
        max /= 1_000;
        mean /= 1e3;
        dev /= 1e3;
        "(usec)"
    } else {
        "(nsec)"
    };
    let _ = writeln!(
        s,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, 1, false, Unit::None),
        num2str(max, 6, 1, false, Unit::None)
    );
}

/// fio's percentile table: unit chosen from the range of the reported
/// values, values rounded up when scaled, as many columns as fit in 80
/// characters.
fn percentiles_block(name: &str, vals: &[(f64, u64)], precision: usize, s: &mut String) {
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2_000 && maxv > 99_999 {
        (1, 1_000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(s, "    {name} percentiles ({unit}):\n     |");
    let q = maxv / divisor;
    let time_width = if q == 0 {
        5
    } else {
        (q.to_string().len()).max(5)
    };
    let per_line = ((80 - 7) / (precision + 10 + time_width)).max(1);
    let len = vals.len();
    for (j, &(p, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            s.push_str("     |");
        }
        let is_last = j == len - 1;
        let mut v = v;
        for _ in 0..scale_down {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            s,
            " {:>w$.prec$}th=[{:>tw$}]{}",
            p,
            v,
            if is_last { '\n' } else { ',' },
            w = precision + 3,
            prec = precision,
            tw = time_width
        );
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            s.push('\n');
        }
    }
}

/// One latency-distribution family (`lat (usec)   : 250=…%, 500=…%`),
/// five entries per line, empty buckets omitted.
fn show_lat(dist: &[f64], msg: &str, s: &mut String) {
    const LABELS: [&str; 12] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    let mut new_line = true;
    let mut shown = false;
    let mut line = 0;
    for (i, &v) in dist.iter().enumerate() {
        if v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line != 0 {
                s.push('\n');
            }
            let _ = write!(s, "  lat ({msg})   : ");
            new_line = false;
            line = 0;
        }
        if line != 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{}{:3.2}%", LABELS[i], v);
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        s.push('\n');
    }
}

fn group_block(g: &super::GroupResult, s: &mut String) {
    let _ = write!(s, "\nRun status group {} (all jobs):\n", g.groupid);
    for (i, label) in ["   READ", "  WRITE", "   TRIM"].iter().enumerate() {
        let t = &g.dirs[i];
        if t.max_run_ms == 0 {
            continue;
        }
        let rate = |v: u64, pow2: bool| num2str(v, SIG_FIGS, 1, pow2, Unit::BytePerSec);
        let _ = writeln!(
            s,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            rate(t.agg_bw, true),
            rate(t.agg_bw, false),
            rate(t.min_bw, true),
            rate(t.max_bw, true),
            rate(t.min_bw, false),
            rate(t.max_bw, false),
            bytes(t.io_bytes),
            num2str(t.io_bytes, SIG_FIGS, 1, false, Unit::Byte),
            t.min_run_ms,
            t.max_run_ms
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_lat_wraps_after_five() {
        let mut s = String::new();
        show_lat(
            &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.004, 0.0, 0.0],
            "usec",
            &mut s,
        );
        assert_eq!(
            s,
            "  lat (usec)   : 2=1.00%, 4=1.00%, 10=1.00%, 20=1.00%, 50=1.00%\n  lat (usec)   : 100=1.00%, 500=0.00%\n"
        );
    }

    #[test]
    fn percentile_table_layout() {
        // Values of the real fio sample (ns), expected output verbatim.
        let vals: Vec<(f64, u64)> = crate::stats::DEFAULT_PERCENTILES
            .iter()
            .copied()
            .zip([
                561152, 602112, 626688, 659456, 684032, 716800, 749568, 782336, 831488, 888832,
                987136, 1089536, 1695744, 1843200, 2768896, 4177920, 5537792,
            ])
            .collect();
        let mut s = String::new();
        percentiles_block("clat", &vals, 2, &mut s);
        let expect = "    clat percentiles (usec):
     |  1.00th=[  562],  5.00th=[  603], 10.00th=[  627], 20.00th=[  660],
     | 30.00th=[  685], 40.00th=[  717], 50.00th=[  750], 60.00th=[  783],
     | 70.00th=[  832], 80.00th=[  889], 90.00th=[  988], 95.00th=[ 1090],
     | 99.00th=[ 1696], 99.50th=[ 1844], 99.90th=[ 2769], 99.95th=[ 4178],
     | 99.99th=[ 5538]
";
        assert_eq!(s, expect);
    }
}
