//! CLI tests of `iosched replay --format F FILE` for the block-trace formats.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iosched"));
    c.env("SOURCE_DATE_EPOCH", "0");
    c
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sim/tests/data")
        .join(name)
}

#[test]
fn replay_blkparse_prints_fio_report_and_replay_figures() {
    let run = || {
        bin()
            .args([
                "replay", "--format", "blkparse", "--device", "ssd-sata", "--sched", "bfq",
            ])
            .arg(data("traces/sample.blkparse"))
            .output()
            .unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(out.contains("replay: (groupid=0"), "{out}");
    assert!(
        out.contains("(blkparse): 6 requests (3 reads, 1 writes, 1 trims, 1 syncs), open loop"),
        "{out}"
    );
    assert!(out.contains("skipped trace entries: 'Q N': 1"), "{out}");
    assert!(
        out.contains("lateness (issued after its timestamp, us): p1="),
        "{out}"
    );
    assert!(
        out.contains("recorded in the trace (issue to complete (D to C))"),
        "{out}"
    );
    // Deterministic: the same bytes again.
    assert_eq!(run().stdout, o.stdout);
}

#[test]
fn replay_closed_loop_json() {
    let o = bin()
        .args([
            "replay",
            "--format",
            "mqsim",
            "--iodepth",
            "4",
            "--output-format=json",
        ])
        .arg(data("traces/sample.mqsim"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["iosched"]["replay"];
    assert_eq!(r["mode"], "closed");
    assert_eq!(r["iodepth"], 4);
    assert_eq!(r["requests"], 8);
    assert!(r.get("lateness_ns").is_none());
    let j = &v["jobs"][0];
    assert_eq!(
        j["read"]["total_ios"].as_u64().unwrap() + j["write"]["total_ios"].as_u64().unwrap(),
        8
    );
}

#[test]
fn replay_bad_trace_exits_2_naming_the_line() {
    let p = std::env::temp_dir().join(format!("iosched-cli-traces-{}.csv", std::process::id()));
    std::fs::write(&p, "1,h,0,Read,0,4096,10\n2,h,0,Read,0,4096\n").unwrap();
    let o = bin()
        .args(["replay", "--format", "msr"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}:2: 6 fields", p.display())),
        "{err}"
    );
    let o = bin()
        .args(["replay", "--format", "bogus", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("fio, blktrace, blkparse, tracefs"));
}
