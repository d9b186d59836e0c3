//! `iosched serve` against real NBD clients: fio's nbd engine (with verification),
//! qemu-img and qemu-io, nbdinfo and nbdcopy (libnbd). Each test is skipped with a
//! message when its client is not installed, unless `IOSCHED_REQUIRE_NBD_CLIENTS=1`
//! (CI installs them: Debian's fio, qemu-utils, libnbd-bin), which makes a missing
//! client a failure. Everything talks to 127.0.0.1 and is bounded in time.

use std::io::Read;
use std::process::{Command, Stdio};

#[path = "common/nbd_server.rs"]
mod nbd_server;
use nbd_server::Server;

fn serve(args: &[&str]) -> Server {
    nbd_server::serve_for(300, args)
}

/// Whether `tool` runs; if not, skip (or fail when clients are required).
fn have(tool: &str, probe: &[&str]) -> bool {
    let ok = Command::new(tool)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("IOSCHED_REQUIRE_NBD_CLIENTS").as_deref() == Ok("1") {
            panic!("{tool} is required (IOSCHED_REQUIRE_NBD_CLIENTS=1) but does not run");
        }
        eprintln!("skipped: {tool} is not installed (apt-get install fio qemu-utils libnbd-bin)");
    }
    ok
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().expect("run client");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{cmd:?} failed: {text}");
    text
}

fn fio_has_nbd() -> bool {
    have("fio", &["--version"])
        && Command::new("fio")
            .arg("--enghelp")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("nbd"))
}

#[test]
fn fio_nbd_engine_verifies_at_qd1_and_qd32() {
    if !fio_has_nbd() {
        return;
    }
    let srv = serve(&["--device", "nvme-gen4", "--size", "64m"]);
    let uri = format!("--uri=nbd://127.0.0.1:{}/", srv.port);
    for qd in ["1", "32"] {
        let out = run(Command::new("fio").args([
            "--name=v",
            "--ioengine=nbd",
            &uri,
            "--rw=randwrite",
            "--bs=4k",
            "--size=8m",
            &format!("--iodepth={qd}"),
            "--verify=crc32c",
            "--do_verify=1",
            "--output-format=json",
        ]));
        let json = &out[out.find('{').expect("fio's JSON")..];
        let v: serde_json::Value = serde_json::from_str(json).expect("fio's JSON parses");
        let job = &v["jobs"][0];
        assert_eq!(job["error"], 0, "{out}");
        // 8 MiB written, then read back and verified.
        assert_eq!(job["write"]["io_bytes"], 8 << 20, "{out}");
        assert_eq!(job["read"]["io_bytes"], 8 << 20, "{out}");
    }
}

#[test]
fn qemu_img_and_qemu_io_read_what_they_wrote() {
    if !have("qemu-io", &["--version"]) || !have("qemu-img", &["--version"]) {
        return;
    }
    let srv = serve(&["--device", "hdd-7200", "--sched", "bfq", "--size", "32m"]);
    let url = format!("nbd://127.0.0.1:{}", srv.port);
    let info = run(Command::new("qemu-img").args(["info", "-f", "raw", &url]));
    assert!(info.contains("33554432"), "{info}");
    let out = run(Command::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "write -P 0x5a 1m 256k",
        "-c",
        "aio_write -P 0x33 4m 64k",
        "-c",
        "aio_flush",
        "-c",
        "read -P 0x5a 1m 256k",
        "-c",
        "read -P 0x33 4m 64k",
        "-c",
        "read -P 0 8m 64k",
        "-c",
        "write -z 1m 4k",
        "-c",
        "read -P 0 1m 4k",
        &url,
    ]));
    assert!(!out.contains("Pattern verification failed"), "{out}");
    assert_eq!(out.matches("read ").count(), 4, "{out}");
}

#[test]
fn nbdcopy_round_trip_is_byte_identical() {
    if !have("nbdcopy", &["--version"]) || !have("nbdinfo", &["--version"]) {
        return;
    }
    let srv = serve(&["--device", "ssd-sata", "--size", "8m"]);
    let url = format!("nbd://127.0.0.1:{}/", srv.port);
    let info = run(Command::new("nbdinfo").arg(&url));
    assert!(info.contains("export-size: 8388608"), "{info}");
    let dir = std::env::temp_dir().join(format!("iosched-nbdcopy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("in.bin");
    let back = dir.join("out.bin");
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&src, &data).unwrap();
    run(Command::new("nbdcopy").arg(&src).arg(&url));
    run(Command::new("nbdcopy").arg(&url).arg(&back));
    let mut got = Vec::new();
    std::fs::File::open(&back)
        .unwrap()
        .read_to_end(&mut got)
        .unwrap();
    assert!(got == data, "nbdcopy's round trip differs");
    let _ = std::fs::remove_dir_all(&dir);
}
