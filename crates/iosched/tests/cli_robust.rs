//! The command line under stress: outputs to special files and links, a full or
//! closed standard output, limits on input values, and byte-identical output
//! whatever the environment.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iosched"));
    c.env("SOURCE_DATE_EPOCH", "1700000000");
    c
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-robust-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

const JOB: &str =
    "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=4m\n[r]\nrw=randread\niodepth=8\n";

fn job() -> PathBuf {
    let p = scratch("j.fio");
    std::fs::write(&p, JOB).unwrap();
    p
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn same_bytes_across_directories_locales_time_zones_and_threads() {
    let j = job();
    let run = |dir: &std::path::Path, lang: &str, tz: &str, threads: &str| {
        let o = bin()
            .current_dir(dir)
            .env("LANG", lang)
            .env("LC_ALL", lang)
            .env("TZ", tz)
            .env("RAYON_NUM_THREADS", threads)
            .env("RUST_MIN_STACK", "4194304")
            .args(["run", "--device", "ideal", "--output-format=json"])
            .arg(&j)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", err(&o));
        o.stdout
    };
    let other = scratch("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    let a = run(&std::env::temp_dir(), "C", "UTC", "1");
    let b = run(&other, "de_DE.UTF-8", "Pacific/Chatham", "8");
    assert_eq!(a, b);
}

#[test]
fn output_writes_through_special_files_and_links() {
    let j = job();
    // /dev/null stays a device node.
    let o = bin()
        .args(["run", "--device", "ideal", "--output", "/dev/null"])
        .arg(&j)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A symbolic link stays a link, and its target gets the report.
    let target = scratch("report.txt");
    let link = scratch("report-link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = bin()
        .args(["run", "--device", "ideal", "--output"])
        .arg(&link)
        .arg(&j)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&target).unwrap().contains("IOPS="));
    // Nothing else was left in the directory.
    let left: Vec<_> = std::fs::read_dir(target.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("iosched-tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_full_or_closed_stdout_is_an_error_with_exit_2() {
    let j = job();
    let cmds: Vec<Vec<String>> = vec![
        vec!["devices".into()],
        vec!["schedulers".into()],
        vec![
            "run".into(),
            "--device".into(),
            "ideal".into(),
            j.display().to_string(),
        ],
    ];
    for args in &cmds {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = bin().args(args).stdout(full).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).contains("standard output"), "{args:?}: {}", err(&o));
        let o = bin().args(args).stdout(Stdio::null()).output().unwrap();
        assert!(o.status.success(), "{args:?}");
        // Closed (`>&-`): the report must not vanish into the `/dev/null` Rust's
        // start-up code puts on the closed descriptor.
        let o = Command::new("sh")
            .args([
                "-c",
                "exec \"$0\" \"$@\" >&-",
                env!("CARGO_BIN_EXE_iosched"),
            ])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?} >&-: {}", err(&o));
        assert!(err(&o).contains("standard output"), "{args:?}: {}", err(&o));
    }
}

#[test]
fn limits_name_the_option_and_the_largest_value() {
    let j = job();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--sched", "mq-deadline", "--set", "blk.nr_requests=4096"],
            "at most 2048 (MAX_SCHED_RQ",
        ),
        (
            &["--sched", "none", "--set", "blk.nr_requests=64"],
            "queue depth (32) without a scheduler",
        ),
    ];
    for (extra, want) in cases {
        let o = bin()
            .args(["run", "--device", "ideal"])
            .args(*extra)
            .arg(&j)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(err(&o).contains(want), "{extra:?}: {}", err(&o));
    }
    let o = bin()
        .args([
            "fio",
            "--device",
            "ideal",
            "--name=x",
            "--rw=read",
            "--size=1m",
        ])
        .args(["--direct=1", "--ioengine=libaio", "--iodepth=4294967295"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("maximum of 65536"), "{}", err(&o));
    // An escape sequence in the input is shown escaped, not sent to the terminal.
    let p = scratch("esc.fio");
    std::fs::write(&p, "[x]\nrw=\u{1b}[2Jread\n").unwrap();
    let o = bin().args(["run"]).arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!err(&o).contains('\u{1b}'), "{}", err(&o));
    assert!(err(&o).contains("\\u{1b}"), "{}", err(&o));
}

/// Start `iosched ARGS` in `dir`, send `sig` after `after`, and collect its output.
fn killed_after(dir: &std::path::Path, args: &[&str], sig: i32, after: Duration) -> Output {
    let child = bin()
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    // SAFETY: signalling the child this test started, by its pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    child.wait_with_output().unwrap()
}

use std::time::Duration;

const LONG: &str = "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=1g\ntime_based\nruntime=10h\n\
                    [r]\nrw=randread\niodepth=16\nwrite_lat_log=lat\n";

#[test]
fn a_signal_stops_a_run_which_reports_what_it_simulated() {
    let dir = scratch("signals");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("long.fio"), LONG).unwrap();
    // SIGINT: the report so far on stdout, marked, and exit 130.
    let o = killed_after(
        &dir,
        &["run", "--device", "ideal", "long.fio"],
        libc::SIGINT,
        Duration::from_millis(1500),
    );
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("iosched: interrupted at"), "{out}");
    assert!(out.contains("IOPS="), "{out}");
    assert!(err(&o).contains("interrupted by SIGINT"), "{}", err(&o));
    // SIGTERM with --output: the file holds the interrupted report; no log and no
    // temporary is left.
    let o = killed_after(
        &dir,
        &["run", "--device", "ideal", "--output", "r.txt", "long.fio"],
        libc::SIGTERM,
        Duration::from_millis(1500),
    );
    assert_eq!(o.status.code(), Some(143), "{}", err(&o));
    let text = std::fs::read_to_string(dir.join("r.txt")).unwrap();
    assert!(text.contains("iosched: interrupted at"), "{text}");
    // SIGKILL: nothing at all under the final name.
    let o = killed_after(
        &dir,
        &["run", "--device", "ideal", "--output", "k.txt", "long.fio"],
        libc::SIGKILL,
        Duration::from_millis(800),
    );
    assert_eq!(o.status.code(), None);
    assert!(!dir.join("k.txt").exists());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["long.fio", "r.txt"]);
}
