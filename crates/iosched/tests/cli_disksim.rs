//! CLI tests of `iosched devices import-disksim` and `iosched replay --format
//! disksim-validate` (the data-dependent ones skip with a message without the data).

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iosched"))
}

fn data_dir() -> Option<PathBuf> {
    devices::disksim::validation_data_dir()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-cli-ds-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn malformed_parv_exits_2_with_file_and_line() {
    let p = tmp("bad.parv");
    std::fs::write(
        &p,
        "disksim_disk D {\n  Model = source x.model,\n  Bulk sector transfer time 0.1\n}\n",
    )
    .unwrap();
    let o = bin()
        .args(["devices", "import-disksim"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bad.parv:3: syntax error"), "{e}");
}

#[test]
fn import_then_replay_atlas() {
    let Some(d) = data_dir() else { return };
    let prof = tmp("atlas.toml");
    let o = bin()
        .args(["devices", "import-disksim"])
        .arg(d.join("atlas_III.parv"))
        .arg("--out")
        .arg(&prof)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&prof).unwrap();
    assert!(text.contains("model = \"hdd-table\""));
    assert!(
        text.contains("COPYING"),
        "the notice travels with the derived profile"
    );
    assert!(text.contains("not use"), "unused parameters are listed");
    let o = bin()
        .args(["devices", "--device-file"])
        .arg(&prof)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let prefix = tmp("atlas");
    let svg = tmp("atlas.svg");
    let o = bin()
        .args(["replay", "--format", "disksim-validate"])
        .arg(d.join("atlas_III.trace"))
        .arg("--device-file")
        .arg(&prof)
        .arg(format!("--write_lat_log={}", prefix.display()))
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let dem: f64 = out
        .lines()
        .find(|l| l.starts_with("demerit"))
        .and_then(|l| l.split_whitespace().rev().nth(1))
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(dem <= 0.378, "{out}");
    let log = std::fs::read_to_string(format!("{}_clat.1.log", prefix.display())).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 10_000);
    // fio's format with log_offset=1: time ms, latency ns, direction, bytes,
    // offset bytes, priority; trace order.
    let f: Vec<&str> = lines[0].split(", ").collect();
    assert_eq!(f.len(), 6, "{}", lines[0]);
    assert_eq!(f[5], "0");
    assert_eq!(f[2], "1", "first request is a write");
    assert_eq!(f[3], (12 * 512).to_string());
    assert_eq!(f[4], (11392096u64 * 512).to_string());
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn replay_rejects_unknown_format() {
    let o = bin()
        .args(["replay", "--format", "bogus", "x", "--device-file", "y"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Run `cmd`, killing it (and failing) if it has not finished within `secs`.
fn output_within(mut cmd: Command, secs: u64) -> std::process::Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            // SAFETY: signalling the child this test started, by its pid.
            unsafe { libc::kill(id as i32, libc::SIGKILL) };
            panic!("no answer within {secs} s");
        }
    }
}

#[test]
fn imported_drives_serve_queued_requests() {
    // hdd-table used to livelock as soon as a second request was queued while one
    // was in service (its next event rounded to before the start it waited for).
    let Some(d) = data_dir() else { return };
    let job = tmp("qd.fio");
    std::fs::write(
        &job,
        "[j]\nrw=randrw\nbs=4k\nsize=64m\ndirect=1\nioengine=libaio\niodepth=4\nnumber_ios=200\n",
    )
    .unwrap();
    let mut parvs: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "parv"))
        .collect();
    parvs.sort();
    assert!(!parvs.is_empty());
    for parv in parvs {
        let prof = tmp("qd.toml");
        let o = bin()
            .args(["devices", "import-disksim"])
            .arg(&parv)
            .arg("--out")
            .arg(&prof)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut c = bin();
        c.arg("run").arg(&job).arg("--device-file").arg(&prof);
        let o = output_within(c, 30);
        assert!(
            o.status.success(),
            "{}: {}",
            parv.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn replay_output_is_the_same_bytes_every_time() {
    let Some(d) = data_dir() else { return };
    let prof = tmp("det.toml");
    let o = bin()
        .args(["devices", "import-disksim"])
        .arg(d.join("atlas_III.parv"))
        .arg("--out")
        .arg(&prof)
        .output()
        .unwrap();
    assert!(o.status.success());
    let run = || {
        bin()
            .args(["replay", "--format", "disksim-validate"])
            .arg(d.join("atlas_III.trace"))
            .arg("--device-file")
            .arg(&prof)
            .output()
            .unwrap()
    };
    let (a, b) = (run(), run());
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}
