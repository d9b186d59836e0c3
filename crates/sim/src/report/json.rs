//! fio 3.x JSON output (`--output-format=json`).
//!
//! Key names, nesting, key order and value types follow fio's
//! `show_thread_status_json`/`add_ddir_status_json`/
//! `json_array_add_disk_util`. The byte layout follows fio's own JSON
//! printer too (two-space indent, `"key" : value`, floats as `%f`), so the
//! output diffs cleanly against real fio output.
//!
//! `usr_cpu`, `sys_cpu` and `ctx` come from the host model (0 on the free host).
//! Not simulated, emitted with fio's neutral values: `majf`, `minf` (0), `eta` (0).

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::{bw_agg_percent, percentile_values, JobResult, RunReport};
use crate::stats::{Dir, DirStats, LatHist};

/// Writes `report` as fio JSON.
pub fn write(report: &RunReport, out: &mut impl Write) -> io::Result<()> {
    write_value(&to_value(report), out)
}

/// Prints any JSON value the way fio's JSON printer does, followed by a
/// newline.
pub fn write_value(v: &Value, out: &mut impl Write) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, FioFormatter::default());
    serde::Serialize::serialize(v, &mut ser).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// Renders `report` as fio JSON into a string.
pub fn to_string(report: &RunReport) -> String {
    render(&to_value(report))
}

/// Renders `report` as fio's `json+` into a string: the JSON report with
/// the `bins` of every latency histogram whose percentiles are shown.
pub fn to_string_plus(report: &RunReport) -> String {
    render(&to_value_with(report, true))
}

fn render(v: &Value) -> String {
    let mut buf = Vec::new();
    write_value(v, &mut buf).expect("writing to a Vec cannot fail");
    String::from_utf8(buf).expect("serde_json emits UTF-8")
}

/// Builds the JSON tree (key order preserved).
pub fn to_value(report: &RunReport) -> Value {
    to_value_with(report, false)
}

/// Builds the JSON tree; `plus` adds json+'s histogram bins.
pub fn to_value_with(report: &RunReport, plus: bool) -> Value {
    let mut root = Map::new();
    root.insert("fio version".into(), report.fio_version.clone().into());
    root.insert("timestamp".into(), report.timestamp_secs.into());
    root.insert("timestamp_ms".into(), report.timestamp_ms.into());
    root.insert("time".into(), report.time_string.clone().into());
    if !report.global_options.is_empty() {
        root.insert("global options".into(), options(&report.global_options));
    }
    let jobs: Vec<Value> = report.jobs.iter().map(|j| job(report, j, plus)).collect();
    root.insert("jobs".into(), Value::Array(jobs));
    if !report.disk_util.is_empty() {
        let disks = report
            .disk_util
            .iter()
            .map(|d| {
                let mut o = Map::new();
                o.insert("name".into(), d.name.clone().into());
                o.insert("read_ios".into(), d.read_ios.into());
                o.insert("write_ios".into(), d.write_ios.into());
                o.insert("read_sectors".into(), d.read_sectors.into());
                o.insert("write_sectors".into(), d.write_sectors.into());
                o.insert("read_merges".into(), d.read_merges.into());
                o.insert("write_merges".into(), d.write_merges.into());
                o.insert("read_ticks".into(), d.read_ticks.into());
                o.insert("write_ticks".into(), d.write_ticks.into());
                o.insert("in_queue".into(), d.in_queue.into());
                o.insert("util".into(), float(d.util.min(100.0)));
                Value::Object(o)
            })
            .collect();
        root.insert("disk_util".into(), Value::Array(disks));
    }
    if let Some(extra) = &report.extra {
        root.insert("iosched".into(), extra.clone());
    }
    Value::Object(root)
}

/// JSON number that is always a float, even when integral; non-finite
/// values (which fio never emits) become 0.
fn float(v: f64) -> Value {
    let v = if v.is_finite() { v } else { 0.0 };
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or_else(|| Value::from(0.0))
}

fn options(opts: &[(String, String)]) -> Value {
    let mut o = Map::new();
    for (k, v) in opts {
        o.insert(k.clone(), v.clone().into());
    }
    Value::Object(o)
}

fn job(report: &RunReport, j: &JobResult, plus: bool) -> Value {
    let s = &j.stats;
    let group = report.group(j.groupid);
    let plist = j.sorted_percentiles();
    let mut o = Map::new();
    o.insert("jobname".into(), j.jobname.clone().into());
    o.insert("groupid".into(), j.groupid.into());
    o.insert("job_start".into(), j.job_start_ms.into());
    o.insert("error".into(), j.error.into());
    o.insert("eta".into(), 0u64.into());
    o.insert("elapsed".into(), j.elapsed_secs.into());
    if !j.job_options.is_empty() {
        o.insert("job options".into(), options(&j.job_options));
    }
    for d in Dir::ALL {
        let agg = group.dirs[d.index()].agg_bw;
        o.insert(d.name().into(), dir(j, s.dir(d), agg, &plist, plus));
    }
    // fio's add_ddir_status_json for DDIR_SYNC: percentiles with either
    // latency percentile option.
    let mut sync = Map::new();
    sync.insert("total_ios".into(), s.sync_ios.into());
    let pct = j.clat_percentiles || j.lat_percentiles;
    sync.insert("lat_ns".into(), lat(&s.sync, pct, &plist, plus));
    o.insert("sync".into(), Value::Object(sync));
    o.insert("job_runtime".into(), s.total_run_time_ms.into());
    o.insert("usr_cpu".into(), float(s.usr_cpu()));
    o.insert("sys_cpu".into(), float(s.sys_cpu()));
    o.insert("ctx".into(), s.ctx.into());
    o.insert("majf".into(), 0u64.into());
    o.insert("minf".into(), 0u64.into());

    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.insert("iodepth_level".into(), dist(&level_keys, &s.depth_dist()));
    o.insert("iodepth_submit".into(), dist(&batch_keys, &s.submit_dist()));
    o.insert(
        "iodepth_complete".into(),
        dist(&batch_keys, &s.complete_dist()),
    );
    let lat_keys = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let lat_m_keys = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    o.insert("latency_ns".into(), dist(&lat_keys, &s.lat_n_dist()));
    o.insert("latency_us".into(), dist(&lat_keys, &s.lat_u_dist()));
    o.insert("latency_ms".into(), dist(&lat_m_keys, &s.lat_m_dist()));
    if j.latency_depth != 0 {
        o.insert("latency_depth".into(), j.latency_depth.into());
        o.insert("latency_target".into(), j.latency_target_ns.into());
        o.insert("latency_target_ns".into(), j.latency_target_ns.into());
        o.insert("latency_percentile".into(), float(j.latency_percentile));
        o.insert("latency_window".into(), j.latency_window_us.into());
        o.insert("latency_window_us".into(), j.latency_window_us.into());
    }
    if let Some(ss) = &j.steadystate {
        o.insert("steadystate".into(), steadystate(ss));
    }
    // show_thread_status_json: last, when fio counts them.
    if let Some(n) = j.stats.zone_resets {
        o.insert("zone_resets".into(), n.into());
    }
    Value::Object(o)
}

/// fio's `steadystate` object (stat.c `show_thread_status_json`): the
/// criterion, whether it was met, the last measure, and the ring of
/// samples oldest first.
fn steadystate(ss: &crate::steadystate::SsReport) -> Value {
    use crate::steadystate::Metric;
    let c = &ss.criterion;
    let mut o = Map::new();
    o.insert("ss".into(), c.label().into());
    o.insert("duration".into(), ss.dur_s.into());
    o.insert("attained".into(), u64::from(ss.attained).into());
    o.insert(
        "criterion".into(),
        format!("{:.6}{}", ss.value as f32, if c.pct { "%" } else { "" }).into(),
    );
    o.insert("max_deviation".into(), float(ss.deviation));
    o.insert("slope".into(), float(ss.slope));
    let mut data = Map::new();
    data.insert("bw_mean".into(), ss.bw_mean().into());
    data.insert("iops_mean".into(), ss.iops_mean().into());
    let column = |f: fn(&crate::steadystate::Sample) -> u64| {
        Value::Array(ss.samples.iter().map(|x| f(x).into()).collect())
    };
    if c.metric == Metric::Lat {
        data.insert("lat_mean".into(), ss.lat_mean().into());
        data.insert("lat_ns".into(), column(|x| x.lat));
    }
    data.insert("iops".into(), column(|x| x.iops));
    data.insert("bw".into(), column(|x| x.bw));
    o.insert("data".into(), Value::Object(data));
    Value::Object(o)
}

fn dist(keys: &[&str], vals: &[f64]) -> Value {
    let mut o = Map::new();
    for (k, v) in keys.iter().zip(vals) {
        o.insert((*k).into(), float(*v));
    }
    Value::Object(o)
}

fn lat(h: &LatHist, percentiles: bool, plist: &[f64], plus: bool) -> Value {
    let mut o = Map::new();
    o.insert("min".into(), h.min().into());
    o.insert("max".into(), h.max().into());
    o.insert("mean".into(), float(h.mean()));
    o.insert("stddev".into(), float(h.stddev()));
    o.insert("N".into(), h.count().into());
    if let Some(vals) = percentile_values(h, percentiles, plist) {
        let mut p = Map::new();
        for (pct, v) in vals {
            p.insert(format!("{pct:.6}"), v.into());
        }
        o.insert("percentile".into(), Value::Object(p));
        // stat.c add_ddir_lat_json: json+ adds the bins where percentiles are.
        if plus {
            let bins = h
                .fio_bins()
                .into_iter()
                .map(|(v, n)| (v.to_string(), n.into()))
                .collect();
            o.insert("bins".into(), Value::Object(bins));
        }
    }
    Value::Object(o)
}

fn dir(j: &JobResult, d: &DirStats, group_agg: u64, plist: &[f64], plus: bool) -> Value {
    let bw_bytes = d.bw_bytes();
    let mut o = Map::new();
    o.insert("io_bytes".into(), d.io_bytes.into());
    o.insert("io_kbytes".into(), (d.io_bytes >> 10).into());
    o.insert("bw_bytes".into(), bw_bytes.into());
    o.insert("bw".into(), (bw_bytes / 1024).into());
    o.insert("iops".into(), float(d.iops_f64()));
    o.insert("runtime".into(), d.runtime_ms.into());
    o.insert("total_ios".into(), d.total_ios.into());
    o.insert("short_ios".into(), d.short_ios.into());
    o.insert("drop_ios".into(), d.drop_ios.into());
    o.insert(
        "slat_ns".into(),
        lat(&d.slat, j.slat_percentiles, plist, plus),
    );
    o.insert(
        "clat_ns".into(),
        lat(&d.clat, j.clat_percentiles, plist, plus),
    );
    o.insert("lat_ns".into(), lat(&d.lat, j.lat_percentiles, plist, plus));
    // Per-priority latencies when at least two priorities have samples.
    if d.prios_with_samples().count() >= 2 {
        let key = if j.lat_percentiles {
            "lat_ns"
        } else {
            "clat_ns"
        };
        let prios: Vec<Value> = d
            .prios_with_samples()
            .map(|p| {
                let mut e = Map::new();
                e.insert("prioclass".into(), u64::from(p.value >> 13).into());
                e.insert("prio".into(), u64::from(p.value & 7).into());
                e.insert("priohint".into(), u64::from((p.value >> 3) & 0x3ff).into());
                e.insert(
                    key.into(),
                    lat(&p.lat, j.clat_percentiles || j.lat_percentiles, plist, plus),
                );
                Value::Object(e)
            })
            .collect();
        o.insert("prios".into(), Value::Array(prios));
    }
    let agg = if d.bw.count() > 0 {
        bw_agg_percent(group_agg, d.bw.mean())
    } else {
        0.0
    };
    o.insert("bw_min".into(), d.bw.min().into());
    o.insert("bw_max".into(), d.bw.max().into());
    o.insert("bw_agg".into(), float(agg));
    o.insert("bw_mean".into(), float(d.bw.mean()));
    o.insert("bw_dev".into(), float(d.bw.stddev()));
    o.insert("bw_samples".into(), d.bw.count().into());
    o.insert("iops_min".into(), d.iops.min().into());
    o.insert("iops_max".into(), d.iops.max().into());
    o.insert("iops_mean".into(), float(d.iops.mean()));
    o.insert("iops_stddev".into(), float(d.iops.stddev()));
    o.insert("iops_samples".into(), d.iops.count().into());
    Value::Object(o)
}

/// serde_json formatter reproducing fio's JSON printer: pretty-printed
/// with two-space indent, `" : "` between key and value, and floats in
/// C's `%f` form (six decimals) so integral floats stay floats.
#[derive(Default)]
struct FioFormatter {
    indent: usize,
    has_value: bool,
}

impl FioFormatter {
    fn newline_indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.indent {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for FioFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        write!(w, "{value:.6}")
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        write!(w, "{value:.6}")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent += 1;
        self.has_value = false;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent -= 1;
        if self.has_value {
            self.newline_indent(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline_indent(w)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent += 1;
        self.has_value = false;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent -= 1;
        if self.has_value {
            self.newline_indent(w)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline_indent(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b" : ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::DiskUtil;
    use crate::stats::{JobRecorder, RecorderConfig};

    fn sample() -> RunReport {
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        for i in 0..100u64 {
            let t = i * 10_000_000;
            r.record_submit(Dir::Read, 1);
            r.record_submit_batch(1);
            r.record_io(Dir::Read, 4096, t, t + 2_000, t + 500_000 + i * 1_000);
            r.record_complete_batch(1);
        }
        let stats = r.finish(1_000_000_000);
        let mut rep = RunReport {
            fio_version: "fio-3.36".into(),
            timestamp_secs: 1_700_000_000,
            timestamp_ms: 1_700_000_000_123,
            time_string: "Tue Nov 14 22:13:20 2023".into(),
            global_options: vec![("rw".into(), "randread".into())],
            jobs: vec![JobResult::new("job1", 0, stats)],
            disk_util: vec![DiskUtil {
                name: "sda".into(),
                util: 50.0,
                ..Default::default()
            }],
            ..Default::default()
        };
        rep.compute_groups();
        rep
    }

    #[test]
    fn layout_matches_fio_printer() {
        let s = to_string(&sample());
        assert!(
            s.starts_with("{\n  \"fio version\" : \"fio-3.36\",\n  \"timestamp\" : 1700000000,\n")
        );
        assert!(s.contains("\"iops\" : 100.000000,"), "{s}");
        assert!(s.contains("\"usr_cpu\" : 0.000000,"));
        assert!(s.contains("\"util\" : 50.000000\n"));
        assert!(s.contains("\"percentile\" : {\n            \"1.000000\" : "));
        assert!(s.contains("\"99.990000\" : "));
        assert!(s.ends_with("}\n"));
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 100);
        assert_eq!(v["jobs"][0]["read"]["bw_bytes"], 409_600);
        assert_eq!(v["jobs"][0]["read"]["bw"], 400);
        assert_eq!(v["jobs"][0]["read"]["runtime"], 1000);
        assert_eq!(v["jobs"][0]["read"]["clat_ns"]["min"], 498_000);
        assert_eq!(v["jobs"][0]["read"]["slat_ns"]["N"], 100);
        assert!(v["jobs"][0]["read"]["lat_ns"].get("percentile").is_none());
        assert!(v["jobs"][0]["write"]["clat_ns"].get("percentile").is_none());
        assert_eq!(v["jobs"][0]["iodepth_level"]["1"], 100.0);
        assert_eq!(v["jobs"][0]["iodepth_submit"]["4"], 100.0);
        assert_eq!(v["jobs"][0]["latency_us"]["500"], 2.0);
        assert_eq!(v["jobs"][0]["latency_us"]["750"], 98.0);
        // 2 windows of 50 IOs each -> 100 IOPS, 400 KiB/s each.
        assert_eq!(v["jobs"][0]["read"]["bw_samples"], 2);
        assert_eq!(v["jobs"][0]["read"]["bw_min"], 400);
        assert_eq!(v["jobs"][0]["read"]["iops_mean"], 100.0);
        assert_eq!(v["jobs"][0]["read"]["bw_agg"], 100.0);
    }

    #[test]
    fn deterministic() {
        assert_eq!(to_string(&sample()), to_string(&sample()));
    }
}
