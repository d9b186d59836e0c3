//! Traces end to end: fio's `read_iolog` / `write_iolog` with fio's timing rules,
//! and `iosched replay`'s formats through the whole block path.

use sim::fio::{parse_command_line, parse_job_file};
use sim::report::RunReport;
use sim::runner::{self, RunError, RunOptions};
use sim::trace::blktrace::{
    act, Record, MAGIC, TA_COMPLETE, TA_ISSUE, TA_QUEUE, TC_READ, TC_WRITE, VERSION,
};
use sim::trace::replay::{OpenLoop, Placement, ReplaySource, ReplayStream};
use sim::trace::{self, CheckRules, Format, TraceOp};
use std::path::{Path, PathBuf};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-traces-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn opts(device: &str, submit_ns: Option<u64>) -> RunOptions {
    RunOptions {
        seed: 7,
        nr_cpus: 4,
        submit_ns,
        ..RunOptions::new(devices::profile(device).unwrap())
    }
}

/// Run job file text (`@` is the test's directory) on the ideal device.
fn run_job(dir: &Path, job: &str, submit_ns: Option<u64>) -> Result<RunReport, RunError> {
    let text = job.replace('@', &dir.to_string_lossy());
    let input = parse_job_file("t.fio", &text).unwrap();
    let o = opts("ideal", submit_ns);
    let plan = runner::plan(&input, &o)?;
    runner::run(&input, &o, plan, None)
}

/// An iolog's I/O lines as (µs, action, offset, length).
fn iolog_ios(path: &Path) -> Vec<(u64, String, u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 3 iolog"));
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() == 5).then(|| {
                (
                    f[0].parse().unwrap(),
                    f[2].to_string(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                )
            })
        })
        .collect()
}

fn ops(v: &[(u64, String, u64, u64)]) -> Vec<(String, u64, u64)> {
    v.iter().map(|(_, a, o, l)| (a.clone(), *o, *l)).collect()
}

fn times(v: &[(u64, String, u64, u64)]) -> Vec<u64> {
    v.iter().map(|x| x.0).collect()
}

#[test]
fn write_iolog_then_read_iolog_reproduces_the_io() {
    for engine in ["psync", "libaio"] {
        let dir = tmpdir(&format!("roundtrip-{engine}"));
        let job = format!(
            "[w]\nrw=randrw\nbs=4k\nbsrange=4k-16k\nsize=8m\ndirect=1\nioengine={engine}\niodepth=4\nnumber_ios=300\nfsync=7\nwrite_iolog=@/a.iolog\n"
        );
        run_job(&dir, &job, None).unwrap();
        let a = iolog_ios(&dir.join("a.iolog"));
        let syncs = a.iter().filter(|x| x.1 == "sync").count();
        let writes = a.iter().filter(|x| x.1 == "write").count();
        // number_ios counts reads and writes; an fsync after every 7 writes.
        assert_eq!(a.len() - syncs, 300);
        assert_eq!(syncs, writes / 7);
        assert!(syncs > 0 && a.iter().any(|x| x.1 == "read"));
        let job = format!(
            "[r]\ndirect=1\nioengine={engine}\niodepth=4\nread_iolog=@/a.iolog\nwrite_iolog=@/b.iolog\n"
        );
        let report = run_job(&dir, &job, None).unwrap();
        let b = iolog_ios(&dir.join("b.iolog"));
        // The same I/O in the same order.
        assert_eq!(ops(&a), ops(&b), "{engine}");
        let st = &report.jobs[0].stats;
        let bytes: u64 = a.iter().filter(|x| x.1 != "sync").map(|x| x.3).sum();
        assert_eq!(
            st.dir(sim::stats::Dir::Read).io_bytes + st.dir(sim::stats::Dir::Write).io_bytes,
            bytes
        );
        // Never earlier than recorded (each entry waits for its delay after the
        // previous issue); a synchronous engine replays its own log exactly
        // until its first fsync.
        let (ta, tb) = (times(&a), times(&b));
        for (x, y) in ta.iter().zip(&tb) {
            assert!(y >= x, "{engine}: replayed at {y} before recorded {x}");
        }
        if engine == "psync" {
            let first_sync = a.iter().position(|x| x.1 == "sync").unwrap();
            assert_eq!(ta[..first_sync], tb[..first_sync]);
        }
    }
}

/// A hand-written iolog v3 and where fio's rules put each I/O: no delay for
/// the first timed entry (fio's `delay_since_ttime` skips it, the previous
/// timestamp being 0), then each delay after the previous issue, scaled by
/// `replay_time_scale`; a synchronous engine waits for each I/O to finish.
#[test]
fn iolog_v3_timing_rules() {
    let dir = tmpdir("timing");
    std::fs::write(
        dir.join("t.iolog"),
        "fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n1000 /dev/x read 0 4096\n3000 /dev/x read 4096 4096\n3000 /dev/x read 8192 4096\n10000 /dev/x write 0 4096\n10000 /dev/x close\n",
    )
    .unwrap();
    let run = |extra: &str| {
        let job = format!(
            "[r]\ndirect=1\nioengine=psync\nread_iolog=@/t.iolog\nwrite_iolog=@/o.iolog\n{extra}\n"
        );
        run_job(&dir, &job, Some(0)).unwrap();
        times(&iolog_ios(&dir.join("o.iolog")))
    };
    let t = run("replay_no_stall=1");
    let s = t[1];
    assert!(s > 0);
    assert_eq!(t, vec![0, s, 2 * s, 3 * s], "no stall: back to back");
    assert!(2 * s < 2000);
    assert_eq!(run(""), vec![0, 2000, 2000 + s, 2000 + s + 7000]);
    assert_eq!(
        run("replay_time_scale=200"),
        vec![0, 1000, 1000 + s, 1000 + s + 3500]
    );
    assert_eq!(
        run("replay_time_scale=50"),
        vec![0, 4000, 4000 + s, 4000 + s + 14000]
    );
}

/// A replayed sync is stamped as fio's `log_io_u` stamps any I/O, when its
/// submission begins (before the system call), so it keeps the trace's spacing
/// like the writes around it, whatever the submission costs.
#[test]
fn a_replayed_sync_keeps_the_traces_timing() {
    let dir = tmpdir("sync-timing");
    std::fs::write(
        dir.join("t.iolog"),
        "fio version 3 iolog\n1 /dev/x add\n1 /dev/x open\n1 /dev/x write 0 4096\n1001 /dev/x write 8192 4096\n2001 /dev/x sync 0 0\n3001 /dev/x write 16384 4096\n4001 /dev/x close\n",
    )
    .unwrap();
    for submit_ns in [0, 1_000, 7_000] {
        let job = "[r]\ndirect=1\nioengine=psync\nread_iolog=@/t.iolog\nwrite_iolog=@/o.iolog\n";
        run_job(&dir, job, Some(submit_ns)).unwrap();
        let log = iolog_ios(&dir.join("o.iolog"));
        let acts: Vec<&str> = log.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(acts, ["write", "write", "sync", "write"]);
        assert_eq!(
            times(&log),
            vec![0, 1000, 2000, 3000],
            "submit_ns={submit_ns}"
        );
    }
}

#[test]
fn iolog_v2_wait_and_placement_options() {
    let dir = tmpdir("v2");
    std::fs::write(
        dir.join("t.iolog"),
        "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x read 1048576 4096\n/dev/x wait 3 0\n/dev/x write 1050000 8192\n/dev/x bogus 0 0\n/dev/x trim 2097152 65536\n/dev/x close\n",
    )
    .unwrap();
    let run = |extra: &str| {
        let job = format!(
            "[r]\ndirect=1\nioengine=psync\nread_iolog=@/t.iolog\nwrite_iolog=@/o.iolog\n{extra}\n"
        );
        let rep = run_job(&dir, &job, Some(0)).unwrap();
        (iolog_ios(&dir.join("o.iolog")), rep)
    };
    let (v, rep) = run("");
    // `wait 3`: until 3 ms after the start (fio compares it with
    // mtime_since_genesis).
    assert_eq!(
        v,
        vec![
            (0, "read".into(), 1048576, 4096),
            (3000, "write".into(), 1050000, 8192),
            (v[2].0, "trim".into(), 2097152, 65536),
        ]
    );
    // fio's rw for the log's directions (`ddir_str` of the td_ddir it sets).
    assert_eq!(rep.jobs[0].rw, "rw");
    // Each direction in its own statistics, trims in fio's third one.
    let st = &rep.jobs[0].stats;
    assert_eq!(
        (st.read.total_ios, st.write.total_ios, st.trim.total_ios),
        (1, 1, 1)
    );
    assert_eq!(
        (st.read.io_bytes, st.write.io_bytes, st.trim.io_bytes),
        (4096, 8192, 65536)
    );
    // The unknown action is skipped and named once in the report.
    assert!(
        rep.header
            .iter()
            .any(|h| h.contains("skipped entries: 'bogus': 1")),
        "{:?}",
        rep.header
    );
    let (v, rep) =
        run("replay_scale=2\nreplay_align=4096\nreplay_skip=trim,read\nreplay_no_stall=1");
    assert_eq!(rep.jobs[0].rw, "write");
    // 1050000 / 2 = 525000, aligned down to 4 KiB = 524288.
    assert_eq!(v, vec![(0, "write".into(), 524288, 8192)]);
}

#[test]
fn iodepth_caps_what_a_replay_has_in_flight() {
    let dir = tmpdir("depth");
    let mut log = String::from("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n");
    for i in 0..16 {
        log.push_str(&format!("0 /dev/x read {} 4096\n", i * 4096));
    }
    std::fs::write(dir.join("t.iolog"), log).unwrap();
    let run = |depth: u32| {
        let job = format!(
            "[r]\ndirect=1\nioengine=libaio\niodepth={depth}\nread_iolog=@/t.iolog\nwrite_iolog=@/o.iolog\n"
        );
        run_job(&dir, &job, Some(0)).unwrap();
        times(&iolog_ios(&dir.join("o.iolog")))
    };
    let t1 = run(1);
    let s = t1[1];
    assert!(s > 0);
    for depth in [1u32, 2, 4] {
        let t = run(depth);
        // All are due at once: `depth` go at 0, then one per completion.
        let at0 = t.iter().filter(|&&x| x == 0).count();
        assert_eq!(at0, depth as usize, "depth {depth}: {t:?}");
        for w in t.windows(depth as usize + 1) {
            assert!(w[depth as usize] >= w[0] + s, "depth {depth}: {t:?}");
        }
    }
}

/// A blktrace capture written record by record per include/uapi/linux/blktrace_api.h
/// (blktrace itself cannot run here), in both byte orders.
fn write_capture(path: &Path, big: bool) {
    let mut out = Vec::new();
    let mut seq = 0;
    let mut rec = |time: u64, code: u32, cats: u32, sector: u64, bytes: u32| {
        seq += 1;
        let r = Record {
            magic: MAGIC | VERSION,
            sequence: seq,
            time,
            sector,
            bytes,
            action: code | act(cats),
            pid: 4242,
            device: (8 << 20) | 16,
            cpu: 1,
            error: 0,
            pdu_len: if code == TA_ISSUE { 3 } else { 0 },
        };
        out.extend_from_slice(&r.encode(big));
        if code == TA_ISSUE {
            out.extend_from_slice(b"pdu");
        }
    };
    // Two reads queued together (depth 2), then a write 5 ms later.
    rec(1_000_000, TA_QUEUE, TC_READ, 2048, 4096);
    rec(1_000_000, TA_QUEUE, TC_READ, 4096, 4096);
    rec(1_010_000, TA_ISSUE, TC_READ, 2048, 4096);
    rec(1_020_000, TA_ISSUE, TC_READ, 4096, 4096);
    rec(1_100_000, TA_COMPLETE, TC_READ, 2048, 4096);
    rec(1_150_000, TA_COMPLETE, TC_READ, 4096, 4096);
    rec(6_000_000, TA_QUEUE, TC_WRITE, 8192, 8192);
    std::fs::write(path, out).unwrap();
}

#[test]
fn read_iolog_of_a_blktrace_capture() {
    for big in [false, true] {
        let dir = tmpdir(&format!("blktrace-{big}"));
        write_capture(&dir.join("cap.bin"), big);
        let job = "[r]\ndirect=1\nioengine=libaio\nread_iolog=@/cap.bin\nwrite_iolog=@/o.iolog\n";
        let rep = run_job(&dir, job, Some(0)).unwrap();
        let v = iolog_ios(&dir.join("o.iolog"));
        // The queue events; the write 5 ms (blktrace ns / 1000: µs) after the
        // second read's issue.
        assert_eq!(
            v,
            vec![
                (0, "read".into(), 2048 * 512, 4096),
                (0, "read".into(), 4096 * 512, 4096),
                (5000, "write".into(), 8192 * 512, 8192),
            ]
        );
        // iodepth is not set: fio's probe of the capture (2 reads queued).
        assert_eq!(rep.jobs[0].stats.dir(sim::stats::Dir::Read).total_ios, 2);
    }
}

/// Replay `path` as `format` on the ideal device the way `iosched replay` does,
/// recording what it issued with write_iolog.
fn replay(
    format: Format,
    path: &Path,
    dir: &Path,
    speed: Option<f64>,
    depth: u32,
) -> Vec<(u64, String, u64, u64)> {
    let o = opts("nvme-gen4", Some(0));
    let cap = o.device.build().info().capacity_sectors * 512;
    let rules = CheckRules {
        capacity: cap,
        ..Default::default()
    };
    let s = trace::check(format, path, &rules).unwrap();
    let out = dir.join("replayed.iolog");
    let input = parse_command_line(&[
        "--name=replay".into(),
        "--ioengine=libaio".into(),
        "--direct=1".into(),
        format!("--iodepth={depth}"),
        format!("--write_iolog={}", out.display()),
    ])
    .unwrap();
    let p = path.to_path_buf();
    let origin = s.first_ns.unwrap_or(0);
    let place = Placement {
        capacity: cap,
        wrap: false,
        nr_cpus: 4,
    };
    let src = ReplaySource::new(move |shared| {
        let r = trace::open(format, &p)?;
        Ok(Box::new(OpenLoop::new(r, origin, speed, place, shared)) as Box<dyn ReplayStream>)
    });
    let mut plan = runner::plan(&input, &o).unwrap();
    for c in &mut plan.clones {
        c.replay = Some(src.clone());
        c.io_limit = u64::MAX;
    }
    runner::run(&input, &o, plan, None).unwrap();
    assert!(src.error().is_none());
    iolog_ios(&out)
}

fn read_all(format: Format, path: &Path) -> Vec<trace::TraceIo> {
    let mut r = trace::open(format, path).unwrap();
    let mut v = Vec::new();
    while let Some(io) = r.next_io().unwrap() {
        v.push(io);
    }
    v
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A `kernel-trace record` recording replays its own request sequence (its
/// `block_getrq` events, with their pids and CPUs).
#[test]
fn tracefs_recording_replays_its_request_sequence() {
    let path = data("kernel/kyber-lowlat-getrq.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let kt = sim::kernel_trace::parse::parse(&text);
    let ios = read_all(Format::Tracefs, &path);
    assert_eq!(ios.len(), kt.getrqs.len());
    for (io, g) in ios.iter().zip(&kt.getrqs) {
        assert_eq!(io.offset, g.sector * 512);
        assert_eq!(io.bytes, g.nr_sectors as u64 * 512);
        assert_eq!(
            (io.pid, io.cpu, io.t_ns),
            (Some(g.pid), Some(g.cpu), Some(g.ts_ns))
        );
    }
    let dir = tmpdir("tracefs");
    let v = replay(Format::Tracefs, &path, &dir, None, 1);
    let want: Vec<_> = ios
        .iter()
        .map(|i| {
            (
                if i.op == TraceOp::Read {
                    "read"
                } else {
                    "write"
                }
                .to_string(),
                i.offset,
                i.bytes,
            )
        })
        .collect();
    assert_eq!(ops(&v), want);
    // A recording without block_getrq: its elevator inserts.
    let ins = read_all(Format::Tracefs, &data("kernel/bfq-be2.txt"));
    let text = std::fs::read_to_string(data("kernel/bfq-be2.txt")).unwrap();
    let kt = sim::kernel_trace::parse::parse(&text);
    let inserts: Vec<u64> = kt
        .events
        .iter()
        .filter(|e| e.kind == sim::kernel_trace::parse::BlockKind::Insert)
        .map(|e| e.sector)
        .collect();
    assert_eq!(
        ins.iter().map(|i| i.offset / 512).collect::<Vec<_>>(),
        inserts
    );
}

#[test]
fn committed_samples_replay_open_loop_at_their_timestamps() {
    let dir = tmpdir("samples");
    for (format, name, n) in [
        (Format::Blkparse, "traces/sample.blkparse", 6),
        (Format::Msr, "traces/sample.msr.csv", 6),
        (Format::Mqsim, "traces/sample.mqsim", 8),
        (Format::DisksimAscii, "traces/sample.disksim", 6),
        (Format::FioIolog, "traces/fio-psync.iolog", 48),
    ] {
        let path = data(name);
        let ios = read_all(format, &path);
        let reqs: Vec<_> = ios.iter().filter(|i| i.op != TraceOp::File).collect();
        assert_eq!(reqs.len(), n, "{name}");
        let v = replay(format, &path, &dir, Some(1.0), 64);
        assert_eq!(v.len(), n, "{name}");
        // Open loop on an idle, fast device: each goes at its own timestamp
        // (rounded down to the µs the iolog keeps).
        let t0 = ios[0].t_ns.unwrap();
        for (got, want) in v.iter().zip(&reqs) {
            let due_us = (want.t_ns.unwrap() - t0) / 1000;
            assert!(
                got.0 >= due_us && got.0 <= due_us + 1,
                "{name}: {got:?} vs {want:?}"
            );
            assert_eq!((got.2, got.3), (want.offset, want.bytes), "{name}");
        }
    }
}

#[test]
fn blktrace_per_cpu_files_by_name() {
    let dir = tmpdir("percpu");
    write_capture(&dir.join("sdb.blktrace.0"), false);
    write_capture(&dir.join("sdb.blktrace.1"), true);
    let ios = read_all(Format::Blktrace, &dir.join("sdb"));
    assert_eq!(ios.len(), 6);
    let t: Vec<u64> = ios.iter().map(|i| i.t_ns.unwrap()).collect();
    assert_eq!(
        t,
        vec![1_000_000, 1_000_000, 1_000_000, 1_000_000, 6_000_000, 6_000_000]
    );
    assert_eq!(ios[0].pid, Some(4242));
    let s = trace::check(Format::Blktrace, &dir.join("sdb"), &CheckRules::default()).unwrap();
    // Issue to complete: 90 µs and 130 µs, twice (HDR histogram precision).
    let h = s.service_ns.unwrap();
    assert_eq!(h.len(), 4);
    assert!(h.equivalent(h.min(), 90_000), "{}", h.min());
    assert!(h.equivalent(h.max(), 130_000), "{}", h.max());
}

#[test]
fn bad_traces_are_refused_with_file_and_line() {
    let dir = tmpdir("bad");
    let cases: &[(Format, &str, &str)] = &[
        (Format::Blkparse, "  8,0 1 1 0.000001000 5 Q R 8 + 8 [a]\n  8,0 1 2 0.00000x 5 Q R 8 + 8 [a]\n", ":2: bad timestamp"),
        (Format::Msr, "1,h,0,Read,0,4096,1\n2,h,0,Read,zero,4096,1\n", ":2: bad offset"),
        (Format::Mqsim, "1000 0 8 8 1\n2000 0 8 1\n", ":2: 4 fields"),
        (Format::DisksimAscii, "1.5 0 8 8 1\n-2 0 8 8 1\n", ":2: bad arrival time"),
        (Format::FioIolog, "fio version 3 iolog\n0 /f add\n5 /f read 0\n", ":3: 4 fields"),
        (Format::Tracefs, "# iosched: format=kernel-trace 1\n fio-1 [000] ..... 1.000001: block_getrq: 7,0 R 8 + x [fio]\n", ":2: bad sector count"),
        (Format::Blktrace, "not a capture, but long enough to be read as one record....", ":1: not a blktrace file"),
    ];
    for (format, text, want) in cases {
        let p = dir.join(format!("bad.{}", format.name()));
        std::fs::write(&p, text).unwrap();
        let e = trace::check(*format, &p, &CheckRules::default()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&p.display().to_string()) && msg.contains(want),
            "{}: {msg}",
            format.name()
        );
    }
    // Unsorted: an error naming both lines, unless sorted.
    let p = dir.join("unsorted.mqsim");
    std::fs::write(&p, "3000 0 8 8 1\n1000 0 16 8 1\n").unwrap();
    let e = trace::check(Format::Mqsim, &p, &CheckRules::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains(":2: timestamp 0.000001000s is earlier than line 1's"),
        "{e}"
    );
    let rules = CheckRules {
        allow_unsorted: true,
        ..Default::default()
    };
    assert_eq!(
        trace::check(Format::Mqsim, &p, &rules).unwrap().first_ns,
        Some(1000)
    );
    // Beyond the device: an error naming the line, unless wrapped.
    let p = dir.join("far.mqsim");
    std::fs::write(&p, "0 0 8 8 1\n1000 0 100000 8 1\n").unwrap();
    let rules = CheckRules {
        capacity: 1 << 20,
        ..Default::default()
    };
    let e = trace::check(Format::Mqsim, &p, &rules).unwrap_err();
    assert!(
        e.to_string()
            .contains(":2: read of 4096 bytes at offset 51200000 ends beyond the device"),
        "{e}"
    );
    let rules = CheckRules {
        wrap: true,
        ..rules
    };
    assert!(trace::check(Format::Mqsim, &p, &rules).is_ok());
    let place = Placement {
        capacity: 1 << 20,
        wrap: true,
        nr_cpus: 1,
    };
    assert_eq!(place.place(51_200_000, 4096), 51_200_000 % (1 << 20));
    assert_eq!(place.place((1 << 20) - 512, 4096), (1 << 20) - 4096);
    // Seconds read as ns: 2000 requests within 2 µs.
    let p = dir.join("units.mqsim");
    let text: String = (0..2000)
        .map(|i| format!("{} 0 8 8 1\n", i / 1000))
        .collect();
    std::fs::write(&p, text).unwrap();
    let rules = CheckRules {
        check_units: true,
        ..Default::default()
    };
    let e = trace::check(Format::Mqsim, &p, &rules).unwrap_err();
    assert!(
        e.to_string()
            .contains("unit looks wrong (seconds or ms read as ns?)"),
        "{e}"
    );
    // ms read as ns: 1000 requests 1 ms apart become 1 ns apart.
    let text: String = (0..1000).map(|i| format!("{i} 0 8 8 1\n")).collect();
    std::fs::write(&p, text).unwrap();
    assert!(trace::check(Format::Mqsim, &p, &rules).is_err());
    // The same 100 ns apart (10 M requests/s): plausible, accepted.
    let text: String = (0..1000)
        .map(|i| format!("{} 0 8 8 1\n", i * 100))
        .collect();
    std::fs::write(&p, text).unwrap();
    assert!(trace::check(Format::Mqsim, &p, &rules).is_ok());
    // read_iolog: a bad line fails the run before it starts, naming the line.
    std::fs::write(
        dir.join("bad.iolog"),
        "fio version 3 iolog\n0 /f add\n1 /f read 0 4096\nzz\n",
    )
    .unwrap();
    let e = run_job(&dir, "[r]\ndirect=1\nread_iolog=@/bad.iolog\n", None).unwrap_err();
    assert!(e.to_string().contains("bad.iolog:4: "), "{e}");
    std::fs::write(
        dir.join("far.iolog"),
        "fio version 3 iolog\n1 /f read 999999999999999 4096\n",
    )
    .unwrap();
    let e = run_job(&dir, "[r]\ndirect=1\nread_iolog=@/far.iolog\n", None).unwrap_err();
    assert!(
        e.to_string().contains(
            "far.iolog:2: read of 4096 bytes at offset 999999999999999 ends beyond the device"
        ),
        "{e}"
    );
}

/// fio's `merge_blktrace_file`: captures merged by time, each scaled by its
/// `merge_blktrace_scalars` percentage and repeated `merge_blktrace_iters`
/// times (each pass shifted by the scaled trace's length; the pass's last
/// event written once more at its end, as fio's cursor does).
#[test]
fn merge_blktrace_captures() {
    let dir = tmpdir("merge");
    let cap = |path: &Path, big: bool, recs: &[(u64, u32, u64)]| {
        let mut out = Vec::new();
        for &(time, cats, sector) in recs {
            let r = Record {
                magic: MAGIC | VERSION,
                time,
                sector,
                bytes: 4096,
                action: TA_QUEUE | act(cats),
                ..Default::default()
            };
            out.extend_from_slice(&r.encode(big));
            // Events merging leaves out.
            let c = Record {
                action: TA_COMPLETE | act(cats),
                ..r
            };
            out.extend_from_slice(&c.encode(big));
        }
        std::fs::write(path, out).unwrap();
    };
    let (a, b, m) = (dir.join("a.bin"), dir.join("b.bin"), dir.join("m.bin"));
    cap(
        &a,
        false,
        &[(1_000_000, TC_READ, 8), (2_000_000, TC_READ, 16)],
    );
    cap(&b, true, &[(1_500_000, TC_WRITE, 24)]);
    let n = sim::trace::blktrace::merge(&[a.clone(), b.clone()], &[50.0, 100.0], &[2.0, 1.0], &m)
        .unwrap();
    assert_eq!(n, 6);
    let got: Vec<(u64, u64)> = read_all(Format::Blktrace, &m)
        .iter()
        .map(|i| (i.t_ns.unwrap(), i.offset / 512))
        .collect();
    assert_eq!(
        got,
        vec![
            (500_000, 8),
            (1_000_000, 16),
            (1_000_000, 16),
            (1_000_000, 8),
            (1_500_000, 16),
            (1_500_000, 24)
        ]
    );
    // Lists of the wrong length are refused, as fio does.
    assert!(sim::trace::blktrace::merge(&[a.clone(), b.clone()], &[50.0], &[], &m).is_err());
    // Through a job: the merged file is written and replayed.
    std::fs::remove_file(&m).unwrap();
    let job = format!(
        "[r]\ndirect=1\nioengine=libaio\nread_iolog={}:{}\nmerge_blktrace_file=@/m.bin\nmerge_blktrace_scalars=50:100\nmerge_blktrace_iters=2:1\nwrite_iolog=@/o.iolog\n",
        a.display(),
        b.display()
    );
    run_job(&dir, &job, Some(0)).unwrap();
    assert!(m.exists());
    assert_eq!(iolog_ios(&dir.join("o.iolog")).len(), 6);
}
