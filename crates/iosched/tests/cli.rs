//! The `iosched` binary as a user meets it: reports, determinism, and a clear error
//! with exit code 2 (and nothing on stdout) for every kind of bad input.

use std::io::Write;
use std::process::{Command, Output};

fn iosched(args: &[&str]) -> Output {
    // Simulating commands name their device, so that these tests do not depend on
    // `devices::DEFAULT_DEVICE` (whose default scheduler may not be built yet).
    let mut args: Vec<&str> = args.to_vec();
    if matches!(args.first(), Some(&"run") | Some(&"fio"))
        && !args
            .iter()
            .any(|a| a.starts_with("--device") || *a == "--help")
    {
        args.splice(1..1, ["--device", "ideal"]);
    }
    Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(&args)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run iosched")
}

fn job_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("iosched-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p.to_string_lossy().into_owned()
}

const SMALL: &str =
    "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=4m\n\n[r]\nrw=randread\niodepth=8\n";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_bad(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    assert!(o.stdout.is_empty(), "stdout must stay empty: {}", stdout(o));
    let e = stderr(o);
    assert!(!e.contains("panicked"), "{e}");
    for n in needles {
        assert!(e.contains(n), "stderr lacks {n:?}: {e}");
    }
}

#[test]
fn text_report_has_fio_sections() {
    let f = job_file("small.fio", SMALL);
    let o = iosched(&["run", &f]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    for needle in [
        "r: (g=0): rw=randread",
        "read: IOPS=",
        "clat percentiles (usec):",
        "Run status group 0 (all jobs):",
        "Disk stats (read/write):",
        "issued rwts: total=1024,0,0,0",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in\n{s}");
    }
}

#[test]
fn json_report_parses_with_fio_keys() {
    let f = job_file("small-json.fio", SMALL);
    let o = iosched(&["run", &f, "--output-format=json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    for k in ["fio version", "timestamp", "time", "jobs", "disk_util"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "r");
    assert_eq!(job["read"]["total_ios"], 1024);
    assert_eq!(job["read"]["io_bytes"], 4 << 20);
    assert!(job["read"]["clat_ns"]["percentile"]["99.000000"].is_number());
    assert_eq!(v["disk_util"][0]["read_ios"], 1024);
    assert_eq!(v["timestamp"], 1700000000u64);
}

#[test]
fn same_seed_same_bytes_other_seed_other_offsets() {
    let f = job_file("det.fio", SMALL);
    let a = iosched(&["run", &f, "--output-format=json", "--seed", "5"]);
    let b = iosched(&["run", &f, "--output-format=json", "--seed", "5"]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    // The ideal device ignores offsets, so compare a mixed job whose read/write split
    // depends on the seed.
    let g = job_file(
        "det2.fio",
        "[j]\nioengine=libaio\ndirect=1\nbs=4k\nsize=4m\nrw=randrw\niodepth=4\n",
    );
    let c = iosched(&["run", &g, "--output-format=json", "--seed", "5"]);
    let d = iosched(&["run", &g, "--output-format=json", "--seed", "6"]);
    let (c, d): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&c.stdout).unwrap(),
        serde_json::from_slice(&d.stdout).unwrap(),
    );
    assert_ne!(
        c["jobs"][0]["read"]["total_ios"],
        d["jobs"][0]["read"]["total_ios"]
    );
}

#[test]
fn fio_command_line_form_runs_seed_zero_command() {
    // Seed 0's command, verbatim except a shorter runtime to keep the test quick.
    let args = "-ioengine=psync -lockmem=1G -buffered=0 -time_based=1 -direct=1 -iodepth=1 -thread -bs=512B -size=110g -numjobs=16 -runtime=1 -group_reporting -name=read -filename=/dev/sdb14 -ioscheduler=none -rw=read";
    let mut v = vec!["fio"];
    v.extend(args.split(' '));
    let o = iosched(&v);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("ignored options (no effect on simulated I/O): lockmem, thread"),
        "{s}"
    );
    assert!(s.contains("read: (groupid=0, jobs=16)"), "{s}");
    assert!(s.contains("sdb14: ios="), "{s}");
}

#[test]
fn fio_double_dash_with_our_options_mixed_in() {
    let o = iosched(&[
        "fio",
        "--name=x",
        "--rw=randread",
        "--bs=4k",
        "--size=1m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=4",
        "--device",
        "ideal",
        "--output-format=json",
        "--seed=3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 256);
    assert_eq!(v["iosched"]["seed"], 3);
}

#[test]
fn output_file_is_written_whole() {
    let f = job_file("out.fio", SMALL);
    let out = std::env::temp_dir().join(format!("iosched-out-{}.json", std::process::id()));
    let o = iosched(&[
        "run",
        &f,
        "--output-format=json",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).expect("complete JSON");
    assert!(v["jobs"].is_array());
    std::fs::remove_file(out).ok();
}

#[test]
fn listings_describe_everything() {
    let o = iosched(&["schedulers"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.contains("none:"));
    // async_depth's default is the queue's nr_requests, shown for 256.
    assert!(s.contains("nr_requests=256"), "{s}");
    let row = s
        .lines()
        .find(|l| l.trim_start().starts_with("async_depth"))
        .unwrap();
    assert!(
        row.contains(" 256 ") && row.contains("default: the queue's nr_requests"),
        "{row}"
    );
    let o = iosched(&["devices"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.contains("ideal:") && s.contains("latency") && s.contains("ns"),
        "{s}"
    );
    for sub in [
        "run",
        "fio",
        "compare",
        "devices",
        "schedulers",
        "hosts",
        "bench",
    ] {
        let o = iosched(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help");
        assert!(
            stdout(&o).contains("Example"),
            "{sub} --help has no example"
        );
    }
}

#[test]
fn malformed_job_file_names_file_and_line() {
    let f = job_file(
        "bad1.fio",
        "[global]\ndirect=1\n\n[j]\nrw=randread\nbs=4q\n",
    );
    assert_bad(&iosched(&["run", &f]), &["bad1.fio:6", "bs"]);
}

#[test]
fn option_before_section() {
    let f = job_file("bad2.fio", "bs=4k\n[j]\nrw=read\n");
    assert_bad(&iosched(&["run", &f]), &["bad2.fio:1"]);
}

#[test]
fn unknown_option() {
    let f = job_file("bad3.fio", "[j]\ndirect=1\nrw=read\nfrobnicate=1\n");
    assert_bad(&iosched(&["run", &f]), &["bad3.fio:4", "frobnicate"]);
}

#[test]
fn impossible_values() {
    for (name, text, needle) in [
        ("bs0.fio", "[j]\ndirect=1\nrw=read\nbs=0\n", "bs"),
        (
            "sizebs.fio",
            "[j]\ndirect=1\nrw=read\nbs=8k\nsize=4k\n",
            "size",
        ),
        (
            "depth0.fio",
            "[j]\ndirect=1\nrw=read\niodepth=0\n",
            "iodepth",
        ),
        ("rw.fio", "[j]\ndirect=1\nrw=sideways\n", "sideways"),
        (
            "bufsync.fio",
            "[j]\nrw=write\nsync=1\n",
            "sync with buffered I/O",
        ),
        (
            "mixeddirect.fio",
            "[global]\nrw=write\nsize=1m\n[a]\ndirect=1\n[b]\n",
            "also has direct I/O (job 'a')",
        ),
        (
            "bufcg.fio",
            "[j]\nrw=write\nsize=1m\ncgroup=x\n",
            "cgroup writeback",
        ),
        (
            "notmodeled.fio",
            "[j]\ndirect=1\nrw=write\nlog_store_compressed=1\n",
            "log_store_compressed",
        ),
        (
            "bs513.fio",
            "[j]\ndirect=1\nrw=read\nbs=1000\nsize=1m\n",
            "multiple of 512",
        ),
        (
            "toobig.fio",
            "[j]\ndirect=1\nrw=read\nsize=100t\n",
            "capacity",
        ),
        (
            "weightnocg.fio",
            "[j]\ndirect=1\nrw=read\ncgroup_weight=200\n",
            "cgroup_weight= needs cgroup=",
        ),
        (
            "weights.fio",
            "[global]\ndirect=1\nrw=read\ncgroup=x\n[a]\ncgroup_weight=200\n[b]\ncgroup_weight=300\n",
            "set by job 'a'",
        ),
        (
            "delayrange.fio",
            "[j]\ndirect=1\nrw=read\nstartdelay=1s-2s\n",
            "startdelay",
        ),
    ] {
        let f = job_file(name, text);
        let o = iosched(&["run", &f]);
        assert_bad(&o, &[needle]);
        assert!(stderr(&o).contains(name), "{name}: {}", stderr(&o));
    }
}

#[test]
fn unknown_scheduler_device_and_bad_set() {
    let f = job_file("ok.fio", SMALL);
    assert_bad(
        &iosched(&["run", &f, "--sched", "cfq"]),
        &["unknown scheduler 'cfq'"],
    );
    assert_bad(
        &iosched(&["run", &f, "--device", "floppy"]),
        &["unknown device 'floppy'"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "nonsense"]),
        &["--set nonsense"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "kyber.read_lat_nsec=1"]),
        &["not 'kyber'"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "none.foo=1"]),
        &["no tunable 'foo'"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "blk.nr_requests=x"]),
        &["nr_requests"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "vm.dirty_ratio=101"]),
        &["vm.dirty_ratio=101", "between 0 and 100"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "vm.swappiness=60"]),
        &["unknown page-cache setting", "dirty_expire_centisecs"],
    );
    assert_bad(
        &iosched(&["run", &f, "--set", "vm.mem_mb=0"]),
        &["at least 1"],
    );
    assert_bad(
        &iosched(&["run", "/nonexistent/job.fio"]),
        &["cannot read job file"],
    );
    let g = job_file(
        "iosched.fio",
        "[j]\ndirect=1\nrw=read\nsize=1m\nioscheduler=bogus\n",
    );
    assert_bad(&iosched(&["run", &g]), &["unknown scheduler 'bogus'"]);
}

#[test]
fn bad_fio_command_line() {
    assert_bad(
        &iosched(&["fio", "--name=x", "--rw=read", "--direct=1", "--bs=0"]),
        &["bs"],
    );
    assert_bad(&iosched(&["fio"]), &["no fio options"]);
    assert_bad(
        &iosched(&["fio", "--name=x", "--seed"]),
        &["--seed needs a value"],
    );
}

#[test]
fn compare_runs_every_combination_and_draws_a_chart() {
    let f = job_file("cmp.fio", SMALL);
    let svg = std::env::temp_dir().join(format!("iosched-cmp-{}.svg", std::process::id()));
    let o = iosched(&[
        "compare",
        &f,
        "--vary",
        "blk.nr_requests=4,32",
        "--vary",
        "device=ideal,ideal-sq",
        "--sched",
        "none",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert_eq!(s.lines().count(), 6, "{s}");
    assert!(s.contains("blk.nr_requests=4 device=ideal-sq"), "{s}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("IOPS"));
    std::fs::remove_file(svg).ok();
    let j = iosched(&[
        "compare",
        &f,
        "--vary",
        "blk.nr_requests=4,32",
        "--sched",
        "none",
        "--output-format=json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert!(v[0]["read"]["iops"].as_f64().unwrap() > 0.0);
}

/// `--seeds N`: a setting with a large effect (how many requests mq-deadline may
/// hold for the disk to reorder) is beyond the seed-to-seed spread; one that
/// cannot matter (`writes_starved` for a job without writes) is within it.
#[test]
fn compare_with_seeds_tells_an_effect_from_seed_noise() {
    let f = job_file(
        "cmp-seeds.fio",
        "[r]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=32\ndirect=1\nsize=1g\nruntime=2\ntime_based\n",
    );
    let run = |vary: &str, fmt: &str| {
        iosched(&[
            "compare",
            &f,
            "--device",
            "hdd-7200",
            "--sched",
            "mq-deadline",
            "--seeds",
            "4",
            "--vary",
            vary,
            "--output-format",
            fmt,
        ])
    };
    let o = run("blk.nr_requests=4,64", "normal");
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.starts_with("4 seeds per variant"), "{s}");
    let line = s
        .lines()
        .find(|l| l.contains("blk.nr_requests=64") && l.contains(" read "))
        .unwrap();
    assert!(line.ends_with("larger than the seed-to-seed spread"), "{s}");
    let j = run("mq-deadline.writes_starved=2,3", "json");
    assert!(j.status.success(), "{}", stderr(&j));
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["seeds"], 4);
    assert!(
        rows[0]["read_iops"]["ci95"].as_f64().unwrap() > 0.0,
        "seeds differ"
    );
    let vs = &rows[1]["vs_first"]["read_iops"];
    assert_eq!(vs["delta"].as_f64(), Some(0.0), "{v}");
    assert_eq!(vs["beyond_spread"], false);
    assert_bad(
        &iosched(&["compare", &f, "--vary", "sched=none,bfq", "--seeds", "0"]),
        &["--seeds 0"],
    );
}

#[test]
fn compare_rejects_bad_variations_before_running() {
    let f = job_file("cmp-bad.fio", SMALL);
    assert_bad(&iosched(&["compare", &f]), &["--vary"]);
    assert_bad(
        &iosched(&["compare", &f, "--vary", "sched=none,cfq"]),
        &["unknown scheduler 'cfq'"],
    );
    assert_bad(
        &iosched(&["compare", &f, "--vary", "nonsense"]),
        &["--vary nonsense"],
    );
}

#[test]
fn device_files_load_and_bad_ones_exit_2() {
    let good = job_file(
        "good.toml",
        "name = \"mine\"\nabout = \"a test disk\"\nmodel = \"ideal\"\nlatency = 50000\nbandwidth = 1000000000\nqueue_depth = 8\ncapacity = 1073741824\nnr_hw_queues = 2\n",
    );
    let f = job_file("small-df.fio", SMALL);
    let o = iosched(&["run", &f, "--device-file", &good]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("read: IOPS="));
    let o = iosched(&["devices", "--device-file", &good]);
    assert!(o.status.success() && stdout(&o).contains("mine: a test disk"));
    let hdd = include_str!("../../devices/profiles/hdd-7200.toml");
    for (what, text, needle) in [
        ("rpm", hdd.replace("rpm = 7200", "rpm = 0"), "field 'rpm'"),
        (
            "seek",
            hdd.replace("average_seek_ms = 8.5", "average_seek_ms = -1"),
            "field 'average_seek_ms'",
        ),
        (
            "geometry",
            hdd.replace("cylinders = 420_000", "cylinders = 4000"),
            "field 'cylinders'",
        ),
        (
            "qd",
            hdd.replace("queue_depth = 32", "queue_depth = 0"),
            "field 'queue_depth'",
        ),
        (
            "syntax",
            hdd.replace("rpm = 7200", "rpm 7200"),
            "syntax error",
        ),
    ] {
        let p = job_file(&format!("bad-{what}.toml"), &text);
        assert_bad(&iosched(&["run", &f, "--device-file", &p]), &[needle, &p]);
        assert_bad(&iosched(&["devices", "--device-file", &p]), &[needle]);
    }
}

#[test]
fn run_draws_latency_cdf() {
    let f = job_file("plot.fio", SMALL);
    let svg = std::env::temp_dir().join(format!("iosched-clat-{}.svg", std::process::id()));
    let o = iosched(&["run", &f, "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("read: IOPS="));
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("clat"));
    std::fs::remove_file(svg).ok();
}

#[test]
fn flushes_are_reported_beside_fio_disk_stats() {
    let f = job_file(
        "fsync.fio",
        "[w]\nioengine=psync\ndirect=1\nrw=randwrite\nbs=4k\nsize=1m\nfsync=1\nnumber_ios=64\n",
    );
    let o = iosched(&["run", &f, "--device", "ssd-sata", "--output-format=json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // One job, one write at a time, an fsync after each but the last (fio takes
    // no further turn once number_ios is reached): nothing to share a flush with.
    assert_eq!(v["iosched"]["flush_ios"], 63);
    assert_eq!(v["jobs"][0]["sync"]["total_ios"], 63);
    let o = iosched(&["run", &f, "--device", "ssd-sata"]);
    assert!(stdout(&o).contains("flush_ios=63"), "{}", stdout(&o));
    // A device without a volatile cache gets no flushes at all.
    let o = iosched(&["run", &f, "--device", "ideal", "--output-format=json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["iosched"]["flush_ios"], 0);
}

/// `iosched ... | head -1`: when the reader goes away the command ends quietly, as Unix
/// filters do, with no panic or error message.
#[test]
fn closed_stdout_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // 40,000 dispatch lines (~1 MB): far more than a pipe holds.
    let mut trace = String::from("{\"sched\":\"none\",\"tunables\":{}}\n");
    for i in 0..40_000u64 {
        trace.push_str(&format!(
            "{{\"t\":{t},\"op\":\"insert\",\"id\":{i},\"sector\":{s},\"sectors\":8,\"dir\":\"read\"}}\n\
             {{\"t\":{t},\"op\":\"dispatch\"}}\n{{\"t\":{t},\"op\":\"complete\",\"id\":{i}}}\n",
            t = i * 10,
            s = i * 8
        ));
    }
    let file = job_file("long.jsonl", &trace);
    let mut child = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(["sched-replay", &file])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run iosched");
    let mut first = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        // Dropping the reader closes the pipe before most of the listing is written.
    }
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("{\"t\":0,\"id\":0}"), "{first}");
    let err = String::from_utf8_lossy(&out.stderr);
    // Nothing at all: no panic, and no "Broken pipe" error either.
    assert!(err.trim().is_empty(), "{err}");
}

/// `startdelay` starts a job late; its runtime counts from its own start.
#[test]
fn startdelay_offsets_a_job() {
    let f = job_file(
        "delay.fio",
        "[global]\ndirect=1\nrw=randread\nbs=4k\nsize=64m\ntime_based\nruntime=50ms\n[a]\n[b]\nstartdelay=100ms\n",
    );
    let o = iosched(&["run", &f, "--output-format=json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ns = v["iosched"]["simulated_ns"].as_u64().unwrap();
    assert!(
        (150_000_000..160_000_000).contains(&ns),
        "simulated {ns} ns"
    );
}

/// fio's `cgroup_weight=` is the BFQ group weight: two backlogged jobs in
/// cgroups of weights 800 and 100 share the device about 8:1.
#[test]
fn cgroup_weight_reaches_bfq_groups() {
    let f = job_file(
        "weights-ok.fio",
        "[global]\ndirect=1\nrw=randread\nbs=4k\nsize=256m\nioengine=libaio\niodepth=8\ntime_based\nruntime=2s\n\
         [hi]\ncgroup=hi\ncgroup_weight=800\n[lo]\ncgroup=lo\ncgroup_weight=100\n",
    );
    let o = iosched(&[
        "run",
        &f,
        "--output-format=json",
        "--device",
        "ssd-sata",
        "--sched",
        "bfq",
        "--set",
        "bfq.low_latency=0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let iops = |i: usize| v["jobs"][i]["read"]["iops"].as_f64().unwrap();
    let ratio = iops(0) / iops(1);
    assert!((6.0..10.0).contains(&ratio), "hi/lo {ratio}");
}

#[test]
fn fio_logs_are_written_beside_the_report() {
    let dir = std::env::temp_dir().join(format!("iosched-cli-logs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("r").to_string_lossy().into_owned();
    let lat = format!("--write_lat_log={prefix}");
    let bw = format!("--write_bw_log={prefix}");
    let o = iosched(&[
        "fio",
        "--name=r",
        "--ioengine=libaio",
        "--iodepth=4",
        "--direct=1",
        "--rw=randread",
        "--bs=4k",
        "--size=256k",
        &lat,
        &bw,
        "--log_offset=1",
        "--output-format=json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = v["jobs"][0]["read"]["clat_ns"]["N"].as_u64().unwrap();
    assert_eq!(n, 64);
    let mean = v["jobs"][0]["read"]["clat_ns"]["mean"].as_f64().unwrap();
    let clat = std::fs::read_to_string(format!("{prefix}_clat.1.log")).unwrap();
    let values: Vec<f64> = clat
        .lines()
        .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(values.len() as u64, n);
    assert!((values.iter().sum::<f64>() / n as f64 - mean).abs() < 1e-6 * mean);
    for kind in ["lat", "slat", "bw"] {
        let t = std::fs::read_to_string(format!("{prefix}_{kind}.1.log")).unwrap();
        assert_eq!(t.lines().count(), 64, "{kind}");
        assert!(t.lines().all(|l| l.split(", ").count() == 6), "{kind}");
    }
    // A log that cannot be created stops the run: exit 2, no report, no file.
    let f = job_file(
        "badlog.fio",
        &format!("{SMALL}write_lat_log={prefix}-ok\nwrite_iops_log={prefix}/no/such\n"),
    );
    let o = iosched(&["run", &f]);
    assert_bad(&o, &["no/such_iops.1.log"]);
    assert!(!std::path::Path::new(&format!("{prefix}-ok_lat.1.log")).exists());
    // Bad log settings name the file and line.
    let f = job_file("badlog2.fio", &format!("{SMALL}log_max_value=median\n"));
    assert_bad(
        &iosched(&["run", &f]),
        &["badlog2.fio:10:", "log_max_value"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fio_command_line_takes_the_new_workload_options() {
    // Rates per direction, a block-size split, thinktime and a skewed
    // distribution together, in fio's command-line form.
    let o = iosched(&[
        "fio",
        "--name=mix",
        "--ioengine=psync",
        "--direct=1",
        "--rw=randrw",
        "--size=64m",
        "--time_based",
        "--runtime=2",
        "--rate_iops=200,100",
        "--bssplit=4k/50:8k/50,16k",
        "--thinktime=10",
        "--random_distribution=zipf:1.2",
        "--output-format=json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["jobs"][0];
    let iops = |d: &str| j[d]["iops"].as_f64().unwrap();
    assert!((iops("write") - 100.0).abs() <= 1.0, "{}", iops("write"));
    // With sizes that vary, fio's rate_iops counts in the smallest size: reads
    // are held to 200 × 4 KiB per second, fewer than 200 I/Os of 6 KiB average.
    let read_bw = j["read"]["bw_bytes"].as_f64().unwrap();
    assert!((read_bw / (200.0 * 4096.0) - 1.0).abs() < 0.01, "{read_bw}");
    assert!(iops("read") < 150.0, "{}", iops("read"));
    // 16 KiB writes, 4 and 8 KiB reads (6 KiB on average).
    let bs = |d: &str| j[d]["io_bytes"].as_f64().unwrap() / j[d]["total_ios"].as_f64().unwrap();
    assert_eq!(bs("write"), 16384.0);
    assert!((bs("read") - 6144.0).abs() < 400.0, "{}", bs("read"));
    // None of them is listed as ignored any more.
    assert_eq!(v["iosched"]["ignored_options"], serde_json::json!([]));
    // Bad values stop with the option named.
    assert_bad(
        &iosched(&[
            "fio",
            "--name=x",
            "--direct=1",
            "--thinktime_blocks_type=often",
        ]),
        &["thinktime_blocks_type", "complete, issue"],
    );
}

#[test]
fn app_like_example_runs() {
    let f = format!("{}/../../examples/app-like.fio", env!("CARGO_MANIFEST_DIR"));
    let o = iosched(&["run", &f, "--device", "ssd-sata", "--output-format=json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The background writer's rate holds: after each 50 ms pause it catches up
    // (fio's default, without rate_ignore_thinktime).
    let bw = v["jobs"][1]["write"]["bw_bytes"].as_f64().unwrap() / (1 << 20) as f64;
    assert!((bw - 20.0).abs() < 0.1, "{bw}");
    assert!(v["jobs"][0]["read"]["iops"].as_f64().unwrap() > 1000.0);
}

/// Buffered writes with fsync (blktests block/004's shape): a deterministic
/// report whose disk stats show every page written back once, and whose header
/// no longer calls `invalidate` ignored (it acts on buffered jobs).
#[test]
fn buffered_writes_with_fsync_run() {
    let f = job_file(
        "buffered-fsync.fio",
        "[global]\nioengine=psync\nbs=4k\nrw=write\nsize=64k\nfsync=4\ninvalidate=1\n\n[w]\nnumjobs=2\n",
    );
    check_buffered(&f);
}

/// `--set vm.*` changes a buffered run: with 1 MiB of memory (limits of 25 and 51
/// pages) 1 MiB of writes without fsync is partly written back by the flusher
/// and the writer is throttled; with the default 8 GiB nothing reaches the disk.
#[test]
fn vm_settings_drive_background_writeback() {
    let f = job_file(
        "buffered-bg.fio",
        "[j]\nioengine=psync\nbs=4k\nrw=write\nsize=1m\n",
    );
    let sectors = |args: &[&str]| {
        let mut a = vec!["run", f.as_str(), "--output-format=json"];
        a.extend_from_slice(args);
        let o = iosched(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["disk_util"][0]["write_sectors"].as_u64().unwrap()
    };
    assert_eq!(sectors(&[]), 0);
    assert!(sectors(&["--set", "vm.mem_mb=1"]) > 0);
}

fn check_buffered(f: &str) {
    let a = iosched(&["run", f, "--output-format=json"]);
    assert!(a.status.success(), "{}", stderr(&a));
    let b = iosched(&["run", f, "--output-format=json"]);
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    // Two clones write the same 16 pages: each page is written back once or
    // twice (once per fsync that finds it dirty), never more.
    let d = &v["disk_util"][0];
    let sectors = d["write_sectors"].as_u64().unwrap();
    assert!((16 * 8..=2 * 16 * 8).contains(&sectors), "{d}");
    assert_eq!(v["jobs"][0]["write"]["total_ios"].as_u64(), Some(16));
    let ignored = v["iosched"]["ignored_options"].to_string();
    assert!(!ignored.contains("invalidate"), "{ignored}");
}

/// fio's default job (buffered sequential reads) runs: `fadvise_hint=1` advises
/// POSIX_FADV_SEQUENTIAL, so with `blk.read_ahead_kb=128` the windows grow to
/// 256 KiB and read past the 1 MiB region (to page 380: 3040 sectors in 9
/// requests); with `fadvise_hint=0` to 128 KiB (316 pages, 12 requests). The
/// report is deterministic.
#[test]
fn buffered_sequential_reads_run_with_readahead() {
    let f = job_file(
        "buffered-read.fio",
        "[j]\nioengine=psync\nbs=4k\nrw=read\nsize=1m\n",
    );
    let disk = |args: &[&str]| {
        let mut a = vec!["run", f.as_str(), "--output-format=json"];
        a.extend_from_slice(args);
        let o = iosched(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(o.stdout, iosched(&a).stdout);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let d = &v["disk_util"][0];
        (
            d["read_ios"].as_u64().unwrap(),
            d["read_sectors"].as_u64().unwrap(),
        )
    };
    assert_eq!(disk(&["--set", "blk.read_ahead_kb=128"]), (9, 380 * 8));
    let g = job_file(
        "buffered-read0.fio",
        "[j]\nioengine=psync\nbs=4k\nrw=read\nsize=1m\nfadvise_hint=0\n",
    );
    let o = iosched(&["run", &g, "--output-format=json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["disk_util"][0]["read_ios"].as_u64(), Some(12));
    assert_eq!(v["disk_util"][0]["read_sectors"].as_u64(), Some(316 * 8));
}

/// `iosched bench`'s scheduler timing options: each bad value is one clear error,
/// exit 2, nothing on stdout (checked before any timing runs).
#[test]
fn bench_option_errors() {
    assert_bad(
        &iosched(&["bench", "--sched", "nope"]),
        &["unknown scheduler 'nope'"],
    );
    assert_bad(
        &iosched(&[
            "bench",
            "--sched",
            "mq-deadline",
            "--set",
            "mq-deadline.variant=bogus",
        ]),
        &["unknown variant", "per-cpu-stats"],
    );
    assert_bad(
        &iosched(&[
            "bench",
            "--sched",
            "mq-deadline",
            "--set",
            "kyber.read_lat_nsec=1",
        ]),
        &["kyber is not benchmarked"],
    );
    assert_bad(
        &iosched(&["bench", "--sched", "kyber", "--vary", "kyber.variant"]),
        &["expected SCHED.NAME=V1,V2"],
    );
    assert_bad(
        &iosched(&[
            "bench",
            "--sched",
            "kyber",
            "--vary",
            "kyber.variant=mainline,",
        ]),
        &["non-empty values"],
    );
    assert_bad(
        &iosched(&["bench", "--sched", "none", "--cpus", "0"]),
        &["--cpus"],
    );
    assert_bad(
        &iosched(&["bench", "--sched", "none", "--queued", "0"]),
        &["--queued"],
    );
}

#[test]
fn hosts_lists_every_host_with_its_costs() {
    let o = iosched(&["hosts"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    for name in [
        "x86-server (default)",
        "kunpeng920",
        "laptop-4c",
        "ryzen-7950x",
        "free",
    ] {
        assert!(s.contains(name), "{name} missing: {s}");
    }
    assert!(s.contains("dd_dispatch_ns") && s.contains("waiter_ns") && s.contains("lock_lines"));
    let o = iosched(&["hosts", "kunpeng920"]);
    assert!(stdout(&o).contains("possible_cpus") && stdout(&o).contains("128"));
}

#[test]
fn the_host_is_named_in_the_report_and_fills_the_cpu_line() {
    let f = job_file("host.fio", SMALL);
    let o = iosched(&["run", &f, "--host", "laptop-4c"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("host=laptop-4c cpus=8"), "{s}");
    assert!(s.contains("Host CPUs (8)"), "{s}");
    let cpu = s.lines().find(|l| l.contains("cpu          :")).unwrap();
    assert!(!cpu.contains("usr=0.00%, sys=0.00%, ctx=0"), "{cpu}");
    let o = iosched(&["run", &f, "--host", "free", "--output-format=json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["ctx"], 0);
    let o = iosched(&["run", &f, "--output-format=json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["jobs"][0]["sys_cpu"].as_f64().unwrap() > 0.0);
    assert!(v["jobs"][0]["ctx"].as_u64().unwrap() > 0);
}

#[test]
fn bad_hosts_are_refused_with_file_and_line() {
    let f = job_file("h.fio", SMALL);
    assert_bad(
        &iosched(&["run", &f, "--host", "cray-1"]),
        &["unknown host 'cray-1'"],
    );
    let good = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../host/profiles/x86-server.toml"
    ))
    .unwrap();
    let line = good.lines().position(|l| l.starts_with("tag_ns")).unwrap() + 1;
    let bad = job_file("bad-host.toml", &good.replace("tag_ns = ", "tag_ns = -"));
    assert_bad(
        &iosched(&["run", &f, "--host-file", &bad]),
        &[&format!("bad-host.toml:{line}"), "tag_ns"],
    );
    assert_bad(&iosched(&["hosts", "--host-file", &bad]), &["tag_ns"]);
    let missing = job_file("missing.toml", &good.replace("irq_ns", "#irq_ns"));
    assert_bad(
        &iosched(&["run", &f, "--host-file", &missing]),
        &["irq_ns", "missing"],
    );
    assert_bad(
        &iosched(&["run", &f, "--host", "x86-server", "--submit-ns", "100"]),
        &["--submit-ns applies to --host free"],
    );
    assert_bad(&iosched(&["run", &f, "--cpus", "0"]), &["--cpus 0"]);
}

#[test]
fn fio_coverage_options_bad_input_exit_2() {
    for (line, needle) in [
        ("loops=0", ":4: option 'loops'"),
        ("io_size=5%", ":4: option 'io_size'"),
        (
            "blockalign=100",
            ".fio:1: job 'j': read blockalign 100 is not a multiple of 512",
        ),
        ("rw=randread:x", ":4: option 'rw'"),
        ("lat_percentiles=maybe", ":4: option 'lat_percentiles'"),
        ("gtod_reduce=2", ":4: option 'gtod_reduce'"),
        ("disk_util=on", ":4: option 'disk_util'"),
        ("random_generator=xorshift", ":4: option 'random_generator'"),
        ("threads=many", ":4: option 'threads'"),
        (
            "zonemode=zbd",
            "zonemode=zbd: device 'ideal' is not a zoned block device",
        ),
        ("zonemode=strided", "zonemode=strided is not modeled yet"),
        ("ioengine=libzbc", "ioengine=libzbc is not modeled"),
        (
            "bs=${IOSCHED_UNSET_VAR}",
            "environment variable 'IOSCHED_UNSET_VAR'",
        ),
    ] {
        let f = job_file("cov-bad.fio", &format!("[j]\ndirect=1\nsize=1m\n{line}\n"));
        assert_bad(&iosched(&["run", &f]), &[needle]);
    }
    assert_bad(
        &iosched(&[
            "run",
            &job_file("cov-fmt.fio", SMALL),
            "--output-format=csv,xml",
        ]),
        &["invalid output format 'xml'"],
    );
    for (arg, needle) in [
        ("--status-interval=1", "periodic status output"),
        ("--debug=io", "debug logging"),
        ("--section=x", "--section"),
        ("--profile=tiobench", "profiles"),
        ("--terse-version=2", "terse version 2"),
        ("--trigger-file=/tmp/x", "triggers"),
        ("--aux-path=/tmp", "--aux-path"),
        ("--output-format=xml", "invalid output format 'xml'"),
    ] {
        assert_bad(
            &iosched(&["fio", arg, "--name=a", "--direct=1", "--size=1m"]),
            &[needle],
        );
    }
}

#[test]
fn output_format_lists_print_json_then_normal() {
    let f = job_file("cov-both.fio", SMALL);
    let o = iosched(&["run", &f, "--output-format=normal,json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("{\n  \"fio version\" : \"fio-"), "{out}");
    let end = out.find("\n}\n").expect("the JSON report ends") + 3;
    let json: serde_json::Value = serde_json::from_str(&out[..end]).unwrap();
    assert!(json["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
    assert!(
        out[end..].contains("Run status group 0 (all jobs):"),
        "{out}"
    );
    let o = iosched(&[
        "fio",
        "--output-format=json+",
        "--name=a",
        "--direct=1",
        "--size=1m",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["jobs"][0]["read"]["clat_ns"]["bins"].is_object());
}

#[test]
fn terse_output_through_the_binary() {
    let f = job_file("cov-terse.fio", SMALL);
    let o = iosched(&["run", &f, "--output-format=terse", "--terse-version=4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("4;fio-3.42;r;0;0;"), "{out}");
    assert_eq!(out.trim_end().split(';').count(), 171, "{out}");
    assert_bad(
        &iosched(&["run", &f, "--output-format=terse", "--terse-version=7"]),
        &["invalid terse version '7'"],
    );
    let o = iosched(&["fio", "--minimal", "--name=a", "--direct=1", "--size=1m"]);
    assert!(
        stdout(&o).starts_with("3;fio-3.42;a;0;0;"),
        "{}",
        stdout(&o)
    );
}
