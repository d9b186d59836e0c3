//! CLI tests of `iosched report`: the page holds every chart its inputs give, the
//! heat map shows the sweep table's means, nothing is fetched from anywhere, bad
//! inputs are refused with their place, and (where Chromium is installed; CI
//! requires it) the page loads in a real browser with its script run and every
//! chart drawn. The browser's screenshot is kept as `target/report-screenshot.png`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iosched(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", "0")
        .output()
        .expect("run iosched")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

const GRID: &str = "fio = \"--name=r --rw=randread --bs=4k --ioengine=libaio --iodepth=32 --direct=1 --size=64m --runtime=20ms --time_based\"\n\
device = \"ssd-sata\"\n\
sched = [\"none\", \"mq-deadline\", \"kyber\"]\n\
seed = [1, 2]\n\
[set]\n\
\"blk.nr_requests\" = [8, 32]\n";

const JOB: &str =
    "[r]\nrw=randrw\nbs=4k\nsize=64m\ndirect=1\nioengine=libaio\niodepth=8\nnumber_ios=3000\n\
write_lat_log=lg\nwrite_iops_log=lg\nlog_offset=1\nlog_issue_time=1\n";

/// A sweep, a run with logs, and the report of all of them.
fn make_report(d: &Path) -> String {
    std::fs::write(d.join("grid.toml"), GRID).unwrap();
    ok(&iosched(
        &["sweep", "grid.toml", "--out", "sw", "--jobs", "2"],
        d,
    ));
    std::fs::write(d.join("job.fio"), JOB).unwrap();
    let o = iosched(
        &[
            "run",
            "job.fio",
            "--device",
            "hdd-7200",
            "--output-format=json",
        ],
        d,
    );
    ok(&o);
    std::fs::write(d.join("run.json"), &o.stdout).unwrap();
    let args = [
        "report",
        "sw/results.parquet",
        "run.json",
        "lg_lat.1.log",
        "lg_clat.1.log",
        "lg_iops.1.log",
        "--figure",
        "iops",
        "--x",
        "sched",
        "--y",
        "set.blk.nr_requests",
        "--out",
        "report.html",
    ];
    ok(&iosched(&args, d));
    std::fs::read_to_string(d.join("report.html")).unwrap()
}

/// The SVG of each `<figure data-chart=...>`, by chart name (repeats numbered).
fn charts(html: &str) -> Vec<(String, String)> {
    html.split("<figure data-chart=\"")
        .skip(1)
        .map(|part| {
            let (name, rest) = part.split_once('"').unwrap();
            let svg = rest.split("</figure>").next().unwrap().to_string();
            (name.to_string(), svg)
        })
        .collect()
}

#[test]
fn a_report_holds_every_chart_and_the_heat_map_is_the_tables_means() {
    let d = tmp("page");
    let html = make_report(&d);
    let names: Vec<String> = charts(&html).into_iter().map(|c| c.0).collect();
    for want in [
        "clat-cdf",
        "sweep-cdf",
        "heat-map",
        "iops-time",
        "bw-time",
        "lba-map",
        "queue-depth",
        "log-samples",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "no {want} chart in {names:?}"
        );
    }
    for (name, svg) in charts(&html) {
        let marks = svg.matches("<polyline").count()
            + svg.matches("<circle").count()
            + svg.matches("<rect").count()
            + svg.matches("<path").count();
        assert!(marks >= 3, "chart {name} draws nothing: {svg:.300}");
    }
    // Self-contained: no attribute loads anything (the only URL is SVG's namespace).
    for bad in ["src=", "href=", "@import", "url("] {
        assert!(
            !html.contains(bad),
            "the page refers to something outside: {bad}"
        );
    }
    let urls = html.matches("http").count();
    assert_eq!(
        urls,
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );

    // The heat map's cells are the means over seeds (and the one job direction) of
    // the sweep's iops column, computed here from the CSV table.
    let table = std::fs::read_to_string(d.join("sw/results.csv")).unwrap();
    let mut lines = table.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (cs, cn, ci) = (col("sched"), col("set.blk.nr_requests"), col("iops"));
    let mut sums: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let e = sums.entry((f[cs].into(), f[cn].into())).or_default();
        e.0 += f[ci].parse::<f64>().unwrap();
        e.1 += 1.0;
    }
    assert_eq!(sums.len(), 6);
    let heat = &charts(&html)
        .into_iter()
        .find(|c| c.0 == "heat-map")
        .unwrap()
        .1;
    for ((sched, nr), (sum, n)) in &sums {
        let mean = sum / n;
        let label = if mean >= 1e4 {
            format!("{:.1}k", mean / 1e3)
        } else {
            format!("{mean:.0}")
        };
        assert!(
            heat.contains(&format!(">{label}</text>")),
            "{sched} {nr}: {label} not in the heat map"
        );
        assert!(
            heat.contains(&format!(">{sched}</text>")) && heat.contains(&format!(">{nr}</text>"))
        );
    }
    // Same inputs, same page.
    let again = std::fs::read_to_string(d.join("report.html")).unwrap();
    let d2 = tmp("page2");
    assert_eq!(make_report(&d2), again);
}

#[test]
fn bad_inputs_are_refused_with_their_place() {
    let d = tmp("bad");
    std::fs::write(
        d.join("x_lat.1.log"),
        "1, 200, 0, 4096, 0\n2, two, 0, 4096, 0\n",
    )
    .unwrap();
    let o = iosched(&["report", "x_lat.1.log", "--out", "r.html"], &d);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("x_lat.1.log:2: field 2 `two`"), "{err}");
    assert!(!d.join("r.html").exists());
    std::fs::write(d.join("notes.txt"), "hello").unwrap();
    let o = iosched(&["report", "notes.txt", "--out", "r.html"], &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("notes.txt: expected a run's JSON report"));
    std::fs::write(d.join("r.json"), "{\"a\": 1}").unwrap();
    let o = iosched(&["report", "r.json", "--out", "r.html"], &d);
    assert!(String::from_utf8_lossy(&o.stderr).contains("r.json:1: not a fio JSON report"));
    std::fs::write(d.join("t.csv"), "run,status\n0,ok,extra\n").unwrap();
    let o = iosched(&["report", "t.csv", "--out", "r.html"], &d);
    assert!(String::from_utf8_lossy(&o.stderr).contains("t.csv:2: 3 fields, expected 2"));
    std::fs::write(d.join("g.toml"), GRID).unwrap();
    ok(&iosched(
        &["sweep", "g.toml", "--out", "sw", "--jobs", "1"],
        &d,
    ));
    let o = iosched(
        &["report", "sw/results.csv", "--x", "nope", "--out", "r.html"],
        &d,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no column `nope`"));
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn the_page_loads_in_a_browser_with_every_chart_drawn() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("IOSCHED_REQUIRE_CHROMIUM").is_none(),
            "IOSCHED_REQUIRE_CHROMIUM is set but no Chromium was found"
        );
        eprintln!("skipped: no Chromium (apt-get install chromium)");
        return;
    };
    let d = tmp("browser");
    let html = make_report(&d);
    let url = format!("file://{}", d.join("report.html").display());
    let headless = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
    ];
    let dom = Command::new(browser)
        .args(headless)
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    // The script ran to its end (a script error would stop it before).
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not finish"
    );
    assert_eq!(dom.matches("<svg").count(), charts(&html).len());
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/report-screenshot.png");
    let o = Command::new(browser)
        .args(headless)
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1200,4000", &url])
        .output()
        .expect("run chromium");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert_eq!(&png[1..4], b"PNG");
    // A blank page compresses to almost nothing; charts and tables do not.
    assert!(
        png.len() > 50_000,
        "screenshot of {} bytes: nothing drawn?",
        png.len()
    );
}
