//! Real fio replays iosched's `write_iolog`: Debian's fio, given our iolog with
//! `--read_iolog` and `--replay_redirect` to a scratch file, issues the same
//! I/Os in the same order (read from its own completion-latency log with
//! `log_offset=1`: direction, size and offset of every I/O) and the same number
//! of fsyncs.
//!
//! Needs `fio` on PATH. Without it the test says so and passes, unless
//! `IOSCHED_REQUIRE_FIO` is set (CI sets it and installs fio).

use sim::fio::parse_job_file;
use sim::runner::{self, RunOptions};
use std::path::Path;
use std::process::Command;

fn fio_available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether fio is there to compare with; without it the test says so and is
/// skipped, unless CI asked for fio (`IOSCHED_REQUIRE_FIO`).
fn fio_or_skip(test: &str) -> bool {
    if fio_available() {
        return true;
    }
    assert!(
        std::env::var_os("IOSCHED_REQUIRE_FIO").is_none(),
        "IOSCHED_REQUIRE_FIO is set but fio is not on PATH"
    );
    eprintln!("fio not on PATH: skipping {test}");
    false
}

#[test]
fn real_fio_replays_our_iolog() {
    if !fio_or_skip("the real-fio replay test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.iolog");
    for engine in ["psync", "libaio"] {
        let job = format!(
            "[w]\nrw=randrw\nbsrange=4k-16k\nsize=8m\ndirect=1\nioengine={engine}\niodepth=8\nnumber_ios=200\nfsync=5\nwrite_iolog={}\n",
            ours.display()
        );
        let input = parse_job_file("w.fio", &job).unwrap();
        let o = RunOptions::new(devices::profile("ssd-sata").unwrap());
        let plan = runner::plan(&input, &o).unwrap();
        runner::run(&input, &o, plan, None).unwrap();
        let text = std::fs::read_to_string(&ours).unwrap();
        // (direction 0/1, bytes, offset) of each read and write, and the fsyncs.
        let mut want = Vec::new();
        let mut syncs = 0;
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split(' ').collect();
            match f.get(2) {
                Some(&"read") => want.push((
                    0u64,
                    f[4].parse::<u64>().unwrap(),
                    f[3].parse::<u64>().unwrap(),
                )),
                Some(&"write") => want.push((1, f[4].parse().unwrap(), f[3].parse().unwrap())),
                Some(&"sync") => syncs += 1,
                _ => {}
            }
        }
        assert_eq!(want.len(), 200);
        assert!(syncs > 0);
        let data = dir.path().join("data.bin");
        std::fs::File::create(&data)
            .unwrap()
            .set_len(8 << 20)
            .unwrap();
        let prefix = dir.path().join("fio");
        // psync in fio: one I/O at a time, so its log is in issue order.
        let out = Command::new("fio")
            .args([
                "--name=replay",
                &format!("--read_iolog={}", ours.display()),
                &format!("--replay_redirect={}", data.display()),
                "--ioengine=psync",
                "--replay_no_stall=1",
                &format!("--write_lat_log={}", prefix.display()),
                "--log_offset=1",
                "--output-format=json",
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "fio failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = std::fs::read_to_string(Path::new(&format!("{}_clat.1.log", prefix.display())))
            .unwrap();
        let got: Vec<(u64, u64, u64)> = log
            .lines()
            .map(|l| {
                let f: Vec<u64> = l.split(", ").map(|x| x.trim().parse().unwrap()).collect();
                (f[2], f[3], f[4])
            })
            .collect();
        assert_eq!(
            got, want,
            "{engine}: fio issued other I/O than our iolog says"
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["jobs"][0]["sync"]["total_ios"], syncs, "{engine}");
    }
}

/// fio's report of the syncs a job issues (`fsync=`, `fdatasync=`,
/// `end_fsync`), against Debian's fio on a scratch file: how many there are
/// (fio takes no further turn, and so issues no fsync, once a job has issued
/// all it may), the JSON `sync` object's count and samples, the fourth
/// `issued rwts` figure (fsyncs only: fdatasyncs are another direction), and
/// the `fsync/fdatasync/sync_file_range` lines.
#[test]
fn sync_reporting_matches_real_fio() {
    if !fio_or_skip("the real-fio sync test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::write(&scratch, vec![0u8; 1 << 20]).unwrap();
    let cases = [
        ("psync", "fsync=4"),
        ("psync", "fdatasync=1"),
        ("psync", "fsync=3\nnumber_ios=10"),
        ("libaio", "fsync=4"),
        ("psync", "end_fsync=1"),
        ("psync", "fsync=5\nend_fsync=1"),
    ];
    for (engine, opt) in cases {
        let job = format!(
            "[w]\nrw=write\nbs=4k\nsize=64k\ndirect=1\nioengine={engine}\niodepth=4\n{opt}\n"
        );
        let input = parse_job_file("w.fio", &job).unwrap();
        let o = RunOptions::new(devices::profile("ssd-sata").unwrap());
        let plan = runner::plan(&input, &o).unwrap();
        let report = runner::run(&input, &o, plan, None).unwrap();
        let ours = sim::report::json::to_value(&report);
        let text = sim::report::text::to_string(&report);
        let jf = dir.path().join("w.fio");
        std::fs::write(&jf, format!("{job}filename={}\n", scratch.display())).unwrap();
        let out = Command::new("fio")
            .arg("--output-format=json")
            .arg(&jf)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // fio may print notes before the JSON.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let json = &stdout[stdout.find('{').expect("fio printed JSON")..];
        let theirs: serde_json::Value = serde_json::from_str(json).unwrap();
        let (a, b) = (&ours["jobs"][0], &theirs["jobs"][0]);
        let case = format!("{engine} {opt:?}");
        assert_eq!(a["write"]["total_ios"], b["write"]["total_ios"], "{case}");
        assert_eq!(a["sync"]["total_ios"], b["sync"]["total_ios"], "{case}");
        assert_eq!(a["sync"]["lat_ns"]["N"], b["sync"]["lat_ns"]["N"], "{case}");
        if engine == "psync" {
            // Every I/O and sync at depth 1, syncs counted in the depth map but
            // not in the I/Os it is a share of (fio's over-100 % `IO depths`).
            assert_eq!(a["iodepth_level"]["1"], b["iodepth_level"]["1"], "{case}");
        }
        let syncs = b["sync"]["lat_ns"]["N"].as_u64().unwrap();
        assert_eq!(
            text.contains("  fsync/fdatasync/sync_file_range:\n    sync ("),
            syncs > 0,
            "{case}:\n{text}"
        );
        let fsyncs = b["sync"]["total_ios"].as_u64().unwrap();
        let issued = format!("     issued rwts: total=0,16,0,{fsyncs} ");
        let writes = b["write"]["total_ios"].as_u64().unwrap();
        if writes == 16 {
            assert!(text.contains(&issued), "{case}: no {issued:?} in\n{text}");
        }
    }
}
