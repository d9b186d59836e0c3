//! `iosched report`: one self-contained HTML page of runs and sweeps — the
//! comparison table, latency CDFs, IOPS and bandwidth over time, an LBA-versus-time
//! map, queue depth over time and, for sweeps, a heat map of one figure over two
//! parameters. Every chart is inline SVG and the page loads nothing from anywhere,
//! so it opens from a mail attachment or a CI artefact as it is.

use super::sweep::csv_split;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Command-line arguments of `iosched report`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Inputs, by their names: RUN.json (`iosched run ... --output-format=json`), \
    results.csv or results.parquet (`iosched sweep`), and fio logs written with \
    write_lat_log / write_iops_log / write_bw_log (PREFIX_lat.N.log, _clat, _slat, _iops, \
    _bw; log_offset=1 for the LBA map, log_issue_time=1 for exact queue depths).\n\n\
    Examples:\n  \
    iosched sweep examples/sweep.toml --out sweep-out && iosched report sweep-out/results.parquet --out sweep.html\n  \
    iosched fio --name=r --rw=randread --bs=4k --size=64m --direct=1 --number_ios=2000 --write_lat_log=r --log_offset=1 --output-format=json > run.json && iosched report run.json r_lat.1.log r_clat.1.log --out run.html\n  \
    iosched sweep examples/sweep.toml --out s && iosched report s/results.csv --figure clat_p99_ns --x sched --y seed --out p99.html"
)]
pub struct Args {
    /// Run reports, sweep tables and fio logs (see below)
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// The HTML file to write
    #[arg(long, value_name = "FILE.html")]
    pub out: String,
    /// Page title
    #[arg(long, default_value = "iosched report")]
    pub title: String,
    /// The sweep figure of the heat map (a column of the table)
    #[arg(long, default_value = "iops")]
    pub figure: String,
    /// Heat map columns: this parameter (default: the first that varies, seed last)
    #[arg(long, value_name = "COLUMN")]
    pub x: Option<String>,
    /// Heat map rows: this parameter (default: the next that varies)
    #[arg(long, value_name = "COLUMN")]
    pub y: Option<String>,
}

/// A sweep table: its header and rows, all as text.
struct Table {
    name: String,
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn col(&self, name: &str) -> Option<usize> {
        self.head.iter().position(|h| h == name)
    }

    /// The parameter columns: between `error` and `job`, as `iosched sweep` writes them.
    fn params(&self) -> Vec<usize> {
        let (Some(a), Some(b)) = (self.col("error"), self.col("job")) else {
            return Vec::new();
        };
        (a + 1..b).collect()
    }

    /// Parameters with more than one value, `seed` last.
    fn varying(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .params()
            .into_iter()
            .filter(|&c| {
                let first = self.rows.first().map(|r| &r[c]);
                self.rows.iter().any(|r| Some(&r[c]) != first)
            })
            .map(|c| self.head[c].clone())
            .collect();
        v.sort_by_key(|n| n == "seed");
        v
    }

    fn ok_rows(&self) -> impl Iterator<Item = &Vec<String>> {
        let status = self.col("status");
        self.rows
            .iter()
            .filter(move |r| status.is_none_or(|s| r[s] == "ok"))
    }
}

/// What a fio log holds, from its name.
#[derive(Clone, Copy, PartialEq, Debug)]
enum LogKind {
    Lat,
    Clat,
    Slat,
    Iops,
    Bw,
}

/// One line of a fio log.
#[derive(Clone, Copy, Debug)]
struct Sample {
    t_ms: u64,
    value: u64,
    dir: u8,
    bs: u64,
    offset: Option<u64>,
    issue_ns: Option<u64>,
}

struct Log {
    name: String,
    kind: LogKind,
    samples: Vec<Sample>,
}

/// Run `iosched report`.
pub fn run(args: Args) -> Result<()> {
    let mut runs = Vec::new();
    let mut tables = Vec::new();
    let mut logs = Vec::new();
    for path in &args.inputs {
        if path.ends_with(".json") {
            runs.push((path.clone(), read_run(path)?));
        } else if path.ends_with(".csv") {
            tables.push(read_csv(path)?);
        } else if path.ends_with(".parquet") {
            tables.push(read_parquet(path)?);
        } else if let Some(kind) = log_kind(path) {
            logs.push(read_log(path, kind)?);
        } else {
            bail!(
                "{path}: expected a run's JSON report (.json), a sweep's table (.csv, .parquet) \
                 or a fio log (NAME_lat.N.log, _clat, _slat, _iops, _bw)"
            );
        }
    }
    let page = page(&args, &runs, &tables, &logs)?;
    super::output::write_file(&args.out, page.as_bytes())?;
    eprintln!("wrote {}", args.out);
    Ok(())
}

fn read_text(path: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read '{path}'"))
}

fn read_run(path: &str) -> Result<Value> {
    let v: Value = serde_json::from_str(&read_text(path)?)
        .map_err(|e| anyhow::anyhow!("{path}:{}: not JSON: {e}", e.line()))?;
    if !v.get("jobs").is_some_and(Value::is_array) {
        bail!("{path}:1: not a fio JSON report: no \"jobs\" list (write one with --output-format=json)");
    }
    Ok(v)
}

fn read_csv(path: &str) -> Result<Table> {
    let text = read_text(path)?;
    let mut lines = text.lines();
    let head = csv_split(lines.next().unwrap_or_default());
    if !head.iter().any(|h| h == "run") {
        bail!("{path}:1: not a sweep table: no `run` column (iosched sweep writes results.csv)");
    }
    let mut rows = Vec::new();
    for (i, l) in lines.enumerate() {
        let r = csv_split(l);
        if r.len() != head.len() {
            bail!(
                "{path}:{}: {} fields, expected {} as in the header",
                i + 2,
                r.len(),
                head.len()
            );
        }
        rows.push(r);
    }
    Ok(Table {
        name: path.to_string(),
        head,
        rows,
    })
}

fn read_parquet(path: &str) -> Result<Table> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt64Type};
    use arrow_schema::DataType;
    let file = std::fs::File::open(path).with_context(|| format!("cannot read '{path}'"))?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .with_context(|| format!("{path}: not a Parquet file"))?;
    let mut head = Vec::new();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.with_context(|| format!("{path}: damaged Parquet data"))?;
        head = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let start = rows.len();
        rows.resize(start + batch.num_rows(), Vec::new());
        for col in batch.columns() {
            for (i, row) in rows[start..].iter_mut().enumerate() {
                let cell = if col.is_null(i) {
                    String::new()
                } else {
                    match col.data_type() {
                        DataType::Utf8 => col.as_string::<i32>().value(i).to_string(),
                        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i).to_string(),
                        DataType::Float64 => col.as_primitive::<Float64Type>().value(i).to_string(),
                        t => bail!("{path}: column of type {t}, expected a sweep table"),
                    }
                };
                row.push(cell);
            }
        }
    }
    if !head.iter().any(|h| h == "run") {
        bail!("{path}: not a sweep table: no `run` column");
    }
    Ok(Table {
        name: path.to_string(),
        head,
        rows,
    })
}

fn log_kind(path: &str) -> Option<LogKind> {
    let file = path.rsplit('/').next()?;
    if !file.ends_with(".log") {
        return None;
    }
    [
        ("_lat.", LogKind::Lat),
        ("_clat.", LogKind::Clat),
        ("_slat.", LogKind::Slat),
        ("_iops.", LogKind::Iops),
        ("_bw.", LogKind::Bw),
    ]
    .into_iter()
    .find(|(tag, _)| file.contains(tag))
    .map(|(_, k)| k)
}

/// A fio 3.x log: `time, value, direction, bs[, offset], priority[, issue time]`
/// (5, 6 or 7 fields; docs/fio.md).
fn read_log(path: &str, kind: LogKind) -> Result<Log> {
    let text = read_text(path)?;
    let mut samples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |k: usize| -> Result<u64> {
            f[k].parse().with_context(|| {
                format!(
                    "{path}:{}: field {} `{}`: expected a whole number",
                    i + 1,
                    k + 1,
                    f[k]
                )
            })
        };
        if !(5..=7).contains(&f.len()) {
            bail!(
                "{path}:{}: {} fields, expected fio's log line `time, value, direction, bs[, offset], prio[, issue time]`",
                i + 1,
                f.len()
            );
        }
        samples.push(Sample {
            t_ms: num(0)?,
            value: num(1)?,
            dir: num(2)?.min(2) as u8,
            bs: num(3)?,
            offset: if f.len() >= 6 { Some(num(4)?) } else { None },
            issue_ns: if f.len() == 7 { Some(num(6)?) } else { None },
        });
    }
    Ok(Log {
        name: path.to_string(),
        kind,
        samples,
    })
}

/// Escape text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}\
table{border-collapse:collapse;font-size:13px;margin:1em 0}\
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}\
th{background:#eee;cursor:pointer}td.t,th.t{text-align:left}\
figure{margin:1.5em 0}figcaption{color:#555;font-size:13px}\
.wide{overflow-x:auto}";

/// Sorting of the tables by a click on a column head; it marks the page ready when
/// it has run, which the CI test checks (a script error would leave it unmarked).
const SCRIPT: &str = "document.querySelectorAll('table.sort').forEach(function(t){\
t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){\
var b=t.tBodies[0],rs=Array.from(b.rows),up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';\
rs.sort(function(x,y){var a=x.cells[i].textContent,c=y.cells[i].textContent,\
p=parseFloat(a),q=parseFloat(c);var r=(isNaN(p)||isNaN(q))?a.localeCompare(c):p-q;return up?r:-r;});\
rs.forEach(function(r){b.appendChild(r);});});});});\
document.documentElement.dataset.ready='1';";

fn page(args: &Args, runs: &[(String, Value)], tables: &[Table], logs: &[Log]) -> Result<String> {
    let mut body = String::new();
    let mut charts = 0;
    let mut figure = |body: &mut String, id: &str, caption: &str, svg: String| {
        charts += 1;
        let _ = writeln!(
            body,
            "<figure data-chart=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
            esc(id),
            esc(caption)
        );
    };
    if !runs.is_empty() {
        body.push_str("<h2>Runs</h2>\n");
        body.push_str(&runs_table(runs));
        let series = run_cdfs(runs);
        if !series.is_empty() {
            let svg = super::plot::cdf_svg("Completion latency", "clat, µs", &series)?;
            figure(
                &mut body,
                "clat-cdf",
                "Completion-latency CDF of every job and direction (fio's percentiles).",
                svg,
            );
        }
    }
    for t in tables {
        let _ = writeln!(body, "<h2>Sweep: {}</h2>", esc(&t.name));
        body.push_str(&sweep_table(t));
        let series = sweep_cdfs(t);
        if !series.is_empty() {
            let svg = super::plot::cdf_svg("Completion latency by setting", "clat, µs", &series)?;
            figure(
                &mut body,
                "sweep-cdf",
                "clat at p50, p99, p99.9 and the maximum, per setting (first 12).",
                svg,
            );
        }
        if let Some((svg, caption)) = heat_map(t, args)? {
            figure(&mut body, "heat-map", &caption, svg);
        }
    }
    for l in logs {
        let _ = writeln!(body, "<h2>Log: {}</h2>", esc(&l.name));
        for (id, caption, svg) in log_charts(l)? {
            figure(&mut body, id, &caption, svg);
        }
    }
    if charts == 0 && runs.is_empty() && tables.is_empty() {
        bail!("nothing to report: the inputs hold no samples");
    }
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>{STYLE}</style></head>\n<body><h1>{title}</h1>\n<p>Made by iosched {ver} from {n} input(s): {inputs}.</p>\n\
         {body}<script>{SCRIPT}</script></body></html>\n",
        title = esc(&args.title),
        ver = env!("CARGO_PKG_VERSION"),
        n = args.inputs.len(),
        inputs = esc(&args.inputs.join(", ")),
    ))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// (label, job, direction object) for every direction with I/O of every run.
fn directions(runs: &[(String, Value)]) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for (name, r) in runs {
        for job in r["jobs"].as_array().into_iter().flatten() {
            for dir in ["read", "write", "trim"] {
                let d = &job[dir];
                if num(&d["total_ios"]) > 0.0 {
                    let jn = job["jobname"].as_str().unwrap_or("?");
                    out.push((format!("{name} {jn} {dir}"), d));
                }
            }
        }
    }
    out
}

fn runs_table(runs: &[(String, Value)]) -> String {
    let mut s = String::from(
        "<div class=\"wide\"><table class=\"sort\"><thead><tr><th class=\"t\">run, job, direction</th>\
         <th>IOPS</th><th>MiB/s</th><th>clat mean µs</th><th>p50</th><th>p99</th><th>p99.9</th>\
         <th>max µs</th></tr></thead><tbody>\n",
    );
    for (label, d) in directions(runs) {
        let c = &d["clat_ns"];
        let p = |k: &str| num(&c["percentile"][k]) / 1e3;
        let _ = writeln!(
            s,
            "<tr><td class=\"t\">{}</td><td>{:.0}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>",
            esc(&label),
            num(&d["iops"]),
            num(&d["bw_bytes"]) / 1048576.0,
            num(&c["mean"]) / 1e3,
            p("50.000000"),
            p("99.000000"),
            p("99.900000"),
            num(&c["max"]) / 1e3
        );
    }
    s.push_str("</tbody></table></div>\n");
    s
}

fn run_cdfs(runs: &[(String, Value)]) -> Vec<(String, Vec<(f64, f64)>)> {
    directions(runs)
        .into_iter()
        .filter_map(|(label, d)| {
            let pct = d["clat_ns"]["percentile"].as_object()?;
            let mut pts: Vec<(f64, f64)> = pct
                .iter()
                .filter_map(|(k, v)| Some((num(v) / 1e3, k.parse::<f64>().ok()? / 100.0)))
                .collect();
            pts.sort_by(|a, b| a.1.total_cmp(&b.1));
            (!pts.is_empty()).then_some((label, pts))
        })
        .collect()
}

/// Rows per page table: enough for any grid one reads, bounded for huge ones.
const MAX_ROWS: usize = 2000;

fn sweep_table(t: &Table) -> String {
    let mut s = String::from("<div class=\"wide\"><table class=\"sort\"><thead><tr>");
    for h in &t.head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>\n");
    for r in t.rows.iter().take(MAX_ROWS) {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
    if t.rows.len() > MAX_ROWS {
        let _ = writeln!(s, "<p>First {MAX_ROWS} of {} rows.</p>", t.rows.len());
    }
    s
}

/// A row's label: its varying parameters, job and direction.
fn setting_label(t: &Table, r: &[String], varying: &[String]) -> String {
    let mut parts: Vec<String> = varying
        .iter()
        .filter_map(|v| t.col(v).map(|c| format!("{v}={}", r[c])))
        .collect();
    for k in ["job", "dir"] {
        if let Some(c) = t.col(k) {
            parts.push(r[c].clone());
        }
    }
    parts.join(" ")
}

fn sweep_cdfs(t: &Table) -> Vec<(String, Vec<(f64, f64)>)> {
    let cols: Vec<(Option<usize>, f64)> = [
        ("clat_p50_ns", 0.5),
        ("clat_p99_ns", 0.99),
        ("clat_p99.9_ns", 0.999),
        ("clat_max_ns", 1.0),
    ]
    .iter()
    .map(|(n, q)| (t.col(n), *q))
    .collect();
    if cols.iter().any(|c| c.0.is_none()) {
        return Vec::new();
    }
    let varying = t.varying();
    t.ok_rows()
        .take(12)
        .filter_map(|r| {
            let pts: Option<Vec<(f64, f64)>> = cols
                .iter()
                .map(|(c, q)| Some((r[c.unwrap()].parse::<f64>().ok()? / 1e3, *q)))
                .collect();
            Some((setting_label(t, r, &varying), pts?))
        })
        .collect()
}

/// The heat map of `args.figure` over two varying parameters, averaged over the
/// rest (seeds, jobs, directions); `None` when fewer than two vary.
fn heat_map(t: &Table, args: &Args) -> Result<Option<(String, String)>> {
    let varying = t.varying();
    let mut pick = varying.iter().filter(|v| *v != "seed").cloned();
    let x = match &args.x {
        Some(x) => x.clone(),
        None => match pick.next() {
            Some(x) => x,
            None => return Ok(None),
        },
    };
    let y = match &args.y {
        Some(y) => y.clone(),
        None => match pick.find(|v| *v != x) {
            Some(y) => y,
            None => return Ok(None),
        },
    };
    let col = |n: &str| {
        t.col(n).with_context(|| {
            format!(
                "{}: no column `{n}` (columns: {})",
                t.name,
                t.head.join(", ")
            )
        })
    };
    let (cx, cy, cf) = (col(&x)?, col(&y)?, col(&args.figure)?);
    let mut cells: BTreeMap<(String, String), (f64, u32)> = BTreeMap::new();
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for r in t.ok_rows() {
        let Ok(v) = r[cf].parse::<f64>() else {
            continue;
        };
        let e = cells
            .entry((r[cx].clone(), r[cy].clone()))
            .or_insert((0.0, 0));
        e.0 += v;
        e.1 += 1;
        for (list, val) in [(&mut xs, &r[cx]), (&mut ys, &r[cy])] {
            if !list.contains(val) {
                list.push(val.clone());
            }
        }
    }
    if cells.is_empty() {
        return Ok(None);
    }
    let mean: BTreeMap<(String, String), f64> = cells
        .into_iter()
        .map(|(k, (s, n))| (k, s / f64::from(n)))
        .collect();
    let svg = heat_svg(&args.figure, &x, &y, &xs, &ys, &mean);
    let caption = format!(
        "{} by {x} (columns) and {y} (rows): the mean over every other column (seeds, jobs, directions).",
        args.figure
    );
    Ok(Some((svg, caption)))
}

/// A colour from pale yellow (low) to dark blue (high), `f` in 0..=1.
fn ramp(f: f64) -> String {
    let stops = [
        (255.0, 255.0, 204.0),
        (65.0, 182.0, 196.0),
        (8.0, 29.0, 88.0),
    ];
    let f = f.clamp(0.0, 1.0) * 2.0;
    let i = (f.floor() as usize).min(1);
    let u = f - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * u).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

fn heat_svg(
    figure: &str,
    x: &str,
    y: &str,
    xs: &[String],
    ys: &[String],
    cells: &BTreeMap<(String, String), f64>,
) -> String {
    let (cw, ch) = (110.0, 34.0);
    let left = 24.0 + 7.5 * ys.iter().map(|s| s.len()).max().unwrap_or(4).max(y.len()) as f64;
    let top = 60.0;
    let w = left + cw * xs.len() as f64 + 20.0;
    let h = top + ch * ys.len() as f64 + 20.0;
    let lo = cells.values().copied().fold(f64::INFINITY, f64::min);
    let hi = cells.values().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" font-family=\"sans-serif\" font-size=\"12\">\
         <text x=\"{left}\" y=\"18\" font-size=\"15\">{} — columns: {}, rows: {}</text>",
        esc(figure),
        esc(x),
        esc(y)
    );
    for (i, xv) in xs.iter().enumerate() {
        let cx = left + cw * (i as f64 + 0.5);
        let _ = write!(
            s,
            "<text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            top - 8.0,
            esc(xv)
        );
    }
    for (j, yv) in ys.iter().enumerate() {
        let ty = top + ch * (j as f64 + 0.62);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{ty}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            esc(yv)
        );
        for (i, xv) in xs.iter().enumerate() {
            let (rx, ry) = (left + cw * i as f64, top + ch * j as f64);
            match cells.get(&(xv.clone(), yv.clone())) {
                Some(&v) => {
                    let f = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                    let ink = if f > 0.55 { "#fff" } else { "#000" };
                    let _ = write!(
                        s,
                        "<rect x=\"{rx}\" y=\"{ry}\" width=\"{cw}\" height=\"{ch}\" fill=\"{}\" stroke=\"#fff\"/>\
                         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{}</text>",
                        ramp(f),
                        rx + cw / 2.0,
                        ry + ch * 0.62,
                        short(v)
                    );
                }
                None => {
                    let _ = write!(s, "<rect x=\"{rx}\" y=\"{ry}\" width=\"{cw}\" height=\"{ch}\" fill=\"#eee\" stroke=\"#fff\"/>");
                }
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// A figure in at most about six characters (1234567 → 1.23M).
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Bins of time series: fine enough to see a stall, few enough to draw quickly.
const BINS: u64 = 200;

/// The charts a log gives: per-I/O latency logs give IOPS and bandwidth over time
/// (completions counted per bin), the LBA map (with offsets) and the queue depth
/// (issue to completion); IOPS and bandwidth logs are drawn as their samples.
fn log_charts(l: &Log) -> Result<Vec<(&'static str, String, String)>> {
    let mut out = Vec::new();
    if l.samples.is_empty() {
        return Ok(out);
    }
    let end_ms = l.samples.iter().map(|s| s.t_ms).max().unwrap_or(0) + 1;
    let bin_ms = end_ms.div_ceil(BINS).max(1);
    match l.kind {
        LogKind::Iops | LogKind::Bw => {
            let unit = if l.kind == LogKind::Iops {
                "IOPS"
            } else {
                "KiB/s"
            };
            let pts = binned_mean(&l.samples, bin_ms, |s| s.value as f64);
            let svg = line_svg(&format!("{unit} (log samples)"), "time, s", unit, &pts)?;
            out.push((
                "log-samples",
                format!("The log's {unit} samples, averaged per {bin_ms} ms."),
                svg,
            ));
        }
        LogKind::Lat | LogKind::Clat | LogKind::Slat => {
            let iops = rates(&l.samples, bin_ms, end_ms, |_| 1.0);
            out.push((
                "iops-time",
                format!("IOPS over time: completions per {bin_ms} ms."),
                line_svg("IOPS", "time, s", "IOPS", &iops)?,
            ));
            let bw = rates(&l.samples, bin_ms, end_ms, |s| s.bs as f64 / 1048576.0);
            out.push((
                "bw-time",
                format!("Bandwidth over time, per {bin_ms} ms."),
                line_svg("Bandwidth", "time, s", "MiB/s", &bw)?,
            ));
            if l.samples.iter().all(|s| s.offset.is_some()) {
                out.push((
                    "lba-map",
                    "Offset of every I/O against its completion time (reads blue, writes red)."
                        .into(),
                    lba_svg(&l.samples)?,
                ));
            }
            if l.kind != LogKind::Slat {
                let exact =
                    l.kind == LogKind::Clat && l.samples.iter().all(|s| s.issue_ns.is_some());
                let how = if exact {
                    "from each I/O's issue to the device (log_issue_time) to its completion"
                } else {
                    "from completion minus latency (completion times in whole ms, so approximate)"
                };
                let qd = queue_depth(&l.samples, l.kind);
                out.push((
                    "queue-depth",
                    format!("I/Os in flight over time, {how}."),
                    line_svg("Queue depth", "time, s", "I/Os in flight", &qd)?,
                ));
            }
        }
    }
    Ok(out)
}

fn binned(samples: &[Sample], bin_ms: u64, f: impl Fn(&Sample) -> f64) -> Vec<(f64, f64, u32)> {
    let n = samples.iter().map(|s| s.t_ms / bin_ms).max().unwrap_or(0) as usize + 1;
    let mut bins = vec![(0.0, 0u32); n];
    for s in samples {
        let b = &mut bins[(s.t_ms / bin_ms) as usize];
        b.0 += f(s);
        b.1 += 1;
    }
    bins.into_iter()
        .enumerate()
        .map(|(i, (sum, cnt))| ((i as u64 * bin_ms) as f64 / 1e3, sum, cnt))
        .collect()
}

/// Per second, per bin of `bin_ms`: the sum of `f` over the bin's samples divided
/// by the bin's width (the last bin, cut at `end_ms`, by its own width).
fn rates(
    samples: &[Sample],
    bin_ms: u64,
    end_ms: u64,
    f: impl Fn(&Sample) -> f64,
) -> Vec<(f64, f64)> {
    binned(samples, bin_ms, f)
        .into_iter()
        .map(|(t, s, _)| {
            let start = (t * 1e3).round() as u64;
            let width = bin_ms.min(end_ms.saturating_sub(start)).max(1);
            (t, s * 1000.0 / width as f64)
        })
        .collect()
}

fn binned_mean(samples: &[Sample], bin_ms: u64, f: impl Fn(&Sample) -> f64) -> Vec<(f64, f64)> {
    binned(samples, bin_ms, f)
        .into_iter()
        .filter(|b| b.2 > 0)
        .map(|(t, s, c)| (t, s / f64::from(c)))
        .collect()
}

/// In-flight I/Os sampled at `BINS` instants. A `clat` log with issue times
/// (`log_issue_time`, which fio writes into the `clat` and `slat` logs only) gives
/// each I/O exactly, from its issue to the device to its completion: the device
/// queue's depth. Otherwise an I/O spans its latency before its completion time,
/// which the log has in whole milliseconds only.
fn queue_depth(samples: &[Sample], kind: LogKind) -> Vec<(f64, f64)> {
    let mut edges: Vec<(u64, i64)> = Vec::with_capacity(2 * samples.len());
    for s in samples {
        let (start, done) = match (kind, s.issue_ns) {
            (LogKind::Clat, Some(i)) => (i, i + s.value),
            _ => {
                let done = s.t_ms * 1_000_000;
                (done.saturating_sub(s.value), done)
            }
        };
        edges.push((start, 1));
        edges.push((done, -1));
    }
    edges.sort_unstable();
    let end = edges.last().map_or(0, |e| e.0).max(1);
    let step = end.div_ceil(BINS).max(1);
    let (mut out, mut depth, mut k) = (Vec::new(), 0i64, 0);
    for i in 0..=BINS {
        let t = i * step;
        while k < edges.len() && edges[k].0 <= t {
            depth += edges[k].1;
            k += 1;
        }
        out.push((t as f64 / 1e9, depth.max(0) as f64));
    }
    out
}

fn line_svg(title: &str, x_label: &str, y_label: &str, pts: &[(f64, f64)]) -> Result<String> {
    use plotters::prelude::*;
    let xmax = pts.iter().map(|p| p.0).fold(0.0f64, f64::max).max(1e-6);
    let ymax = pts.iter().map(|p| p.1).fold(0.0f64, f64::max).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 320)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax * 1.01, 0.0..ymax * 1.1)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .y_label_formatter(&|v| short(*v))
            .draw()
            .map_err(|x| e(&x))?;
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), BLUE.stroke_width(2)))
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(svg)
}

/// Points drawn in an LBA map at most: beyond that every k-th I/O, so that the page
/// stays small; the pattern (sequential runs, seeks) survives the thinning.
const MAX_POINTS: usize = 20_000;

fn lba_svg(samples: &[Sample]) -> Result<String> {
    use plotters::prelude::*;
    let stride = samples.len().div_ceil(MAX_POINTS).max(1);
    let xmax = samples.iter().map(|s| s.t_ms).max().unwrap_or(0) as f64 / 1e3;
    let gib = |s: &Sample| s.offset.unwrap_or(0) as f64 / 1073741824.0;
    let ymax = samples.iter().map(gib).fold(0.0f64, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 420)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Offset against time", ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax.max(1e-3) * 1.01, 0.0..ymax.max(1e-6) * 1.02)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("completion time, s")
            .y_desc("offset, GiB")
            .draw()
            .map_err(|x| e(&x))?;
        let dots = samples.iter().step_by(stride).map(|s| {
            let c = if s.dir == 1 { RED } else { BLUE };
            Circle::new((s.t_ms as f64 / 1e3, gib(s)), 1, c.filled())
        });
        chart.draw_series(dots).map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_ms: u64, value: u64, issue: Option<u64>) -> Sample {
        Sample {
            t_ms,
            value,
            dir: 0,
            bs: 4096,
            offset: Some(0),
            issue_ns: issue,
        }
    }

    #[test]
    fn queue_depth_counts_each_io_from_issue_to_completion() {
        // Issued at 0 and 0.5 ms, completed at 2 ms and 3 ms: one in flight, then
        // two from 0.5 ms until the first completes at 2 ms exactly.
        let v = vec![s(2, 2_000_000, Some(0)), s(3, 2_500_000, Some(500_000))];
        let qd = queue_depth(&v, LogKind::Clat);
        let at = |t_ns: f64| qd.iter().rev().find(|p| p.0 * 1e9 <= t_ns + 1.0).unwrap().1;
        assert_eq!(at(0.0), 1.0);
        assert_eq!(at(1_005_000.0), 2.0);
        assert_eq!(at(2_010_000.0), 1.0);
        assert_eq!(qd.last().unwrap().1, 0.0);
        // Without issue times (or in a `lat` log, whose issue column fio leaves 0),
        // issue = completion - latency.
        let v = vec![s(2, 2_000_000, Some(0)), s(3, 2_500_000, Some(0))];
        assert_eq!(queue_depth(&v, LogKind::Lat), qd);
    }

    #[test]
    fn completions_are_counted_per_bin_as_rates() {
        let v: Vec<Sample> = (0..10).map(|i| s(2 * (i / 5), 1, None)).collect();
        // Five completions in each 2 ms bin: 2500 IOPS; the last bin, cut at 3 ms,
        // is 1 ms wide: 5000.
        assert_eq!(
            rates(&v, 2, 3, |_| 1.0),
            vec![(0.0, 2500.0), (0.002, 5000.0)]
        );
    }

    #[test]
    fn colours_run_from_pale_to_dark() {
        assert_eq!(ramp(0.0), "#ffffcc");
        assert_eq!(ramp(0.5), "#41b6c4");
        assert_eq!(ramp(1.0), "#081d58");
    }

    #[test]
    fn figures_are_shortened() {
        assert_eq!(short(1_234_567.0), "1.23M");
        assert_eq!(short(12_345.0), "12.3k");
        assert_eq!(short(621.6), "622");
        assert_eq!(short(0.5), "0.50");
    }
}
