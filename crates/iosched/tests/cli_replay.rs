//! CLI tests of `iosched sched-replay` and `iosched kernel-trace compare`.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iosched"))
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sim/tests/data")
        .join(name)
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("iosched-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn sched_replay_prints_dispatches() {
    let o = bin()
        .arg("sched-replay")
        .arg(data("none-basic.jsonl"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "{\"t\":1000000,\"id\":1}\n{\"t\":1000000,\"id\":2}\n{\"t\":1000000,\"id\":null}\n"
    );
}

#[test]
fn sched_replay_error_exits_2_with_nothing_on_stdout() {
    let p = tmp(
        "bad.jsonl",
        "{\"sched\":\"none\"}\n{\"t\":0,\"op\":\"insert\",\"id\":1,\"sector\":0,\"sectors\":8,\"dir\":\"read\"}\n{\"t\":1,\"op\":\"dispatch\"}\n{\"t\":2,\"op\":\"complete\",\"id\":5}\n",
    );
    let o = bin().arg("sched-replay").arg(&p).output().unwrap();
    std::fs::remove_file(&p).ok();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "partial output on stdout");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(&format!(
            "error: {}:4: complete of unknown id 5",
            p.display()
        )),
        "{err}"
    );
}

#[test]
fn sched_replay_missing_file() {
    let o = bin()
        .args(["sched-replay", "/nonexistent/x.jsonl"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read /nonexistent/x.jsonl"));
}

const KT: &str = "\
# iosched: hz=250
# iosched: dev=7,0
# iosched: sched=none
 swapper-0 [000] ..s..   10.000010: timer_expire_entry: timer=0 function=f now=1000 baseclk=1000
 fio-9  [000] ...1.   10.000100: block_rq_insert: 7,0 R 4096 () 64 + 8 be,0,4 [fio]
 fio-9  [000] ...1.   10.000110: block_rq_insert: 7,0 R 4096 () 8 + 8 be,0,4 [fio]
 fio-9  [000] .....   10.000120: block_rq_issue: 7,0 R 4096 () 64 + 8 be,0,4 [fio]
 fio-9  [000] .....   10.000130: block_rq_issue: 7,0 R 4096 () 8 + 8 be,0,4 [fio]
 ksoftirqd/0-3 [000] ..s..   10.000500: block_rq_complete: 7,0 R () 64 + 8 be,0,4 [0]
 ksoftirqd/0-3 [000] ..s..   10.000600: block_rq_complete: 7,0 R () 8 + 8 be,0,4 [0]
 swapper-0 [000] ..s..   10.004010: timer_expire_entry: timer=0 function=f now=1001 baseclk=1001
";

#[test]
fn kernel_trace_compare_and_emit() {
    let p = tmp("kt.txt", KT);
    let conf = std::env::temp_dir().join(format!("iosched-cli-{}-conf.jsonl", std::process::id()));
    let exp = std::env::temp_dir().join(format!("iosched-cli-{}-exp.jsonl", std::process::id()));
    let o = bin()
        .args(["kernel-trace", "compare", "--sched", "none"])
        .arg(&p)
        .arg("--emit-conformance")
        .arg(&conf)
        .arg("--emit-expected")
        .arg(&exp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("decisions: 2\n"), "{out}");
    assert!(out.contains("exact: 2 (100.00%)"), "{out}");
    // The emitted trace replays to the kernel's answers.
    let r = bin().arg("sched-replay").arg(&conf).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(r.stdout, std::fs::read(&exp).unwrap());
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.starts_with(
            "{\"sched\":\"none\",\"tunables\":{},\"hz\":250,\"follows_kernel\":true}\n"
        ),
        "{text}"
    );
    assert!(text.contains("\"jiffies\":1000,"), "{text}");
    assert!(text.contains("\"op\":\"dispatch\",\"kernel\":"), "{text}");
    for f in [p, conf, exp] {
        std::fs::remove_file(f).ok();
    }
}

#[test]
fn kernel_trace_compare_rejects_non_trace() {
    let p = tmp("empty.txt", "hello\n");
    let o = bin()
        .args(["kernel-trace", "compare"])
        .arg(&p)
        .output()
        .unwrap();
    std::fs::remove_file(&p).ok();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no '# iosched:' header"));
    // A line the recorder cannot have written is named, with what was expected.
    let p = tmp("badline.txt", "# iosched: sched=bfq\nhello\n");
    let o = bin()
        .args(["kernel-trace", "compare"])
        .arg(&p)
        .output()
        .unwrap();
    std::fs::remove_file(&p).ok();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("badline.txt:2: no [CPU] field: expected 'TASK-PID [CPU]"),
        "{err}"
    );
    // A readable header without events.
    let p = tmp("noevents.txt", "# iosched: sched=bfq\n");
    let o = bin()
        .args(["kernel-trace", "compare"])
        .arg(&p)
        .output()
        .unwrap();
    std::fs::remove_file(&p).ok();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no block events found"));
}

/// A recording whose header cannot be read is refused, naming the file and line,
/// instead of being replayed with default tunables and an unknown scheduler.
#[test]
fn kernel_trace_compare_refuses_an_unreadable_header() {
    let body: String = KT.lines().skip(3).map(|l| format!("{l}\n")).collect();
    for (name, header, line, needle) in [
        (
            "badhz",
            "# iosched: hz=250\n# iosched: sched=none\n# iosched: rotational=yes\n",
            3,
            "'yes'",
        ),
        (
            "unknown",
            "# iosched: sched=none\n# iosched: tunabel.x=1\n",
            2,
            "unknown header key 'tunabel.x'",
        ),
        (
            "nosched",
            "# iosched: hz=250\n# iosched: dev=7,0\n",
            1,
            "names no scheduler",
        ),
        ("noheader", "", 1, "no '# iosched:' header"),
    ] {
        let p = tmp(&format!("hdr-{name}.txt"), &format!("{header}{body}"));
        let o = bin()
            .args(["kernel-trace", "compare", "--sched", "none"])
            .arg(&p)
            .output()
            .unwrap();
        std::fs::remove_file(&p).ok();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(o.stdout.is_empty(), "{name}");
        assert!(
            err.contains(&format!("{}:{line}: ", p.display())),
            "{name}: {err}"
        );
        assert!(err.contains(needle), "{name}: {err}");
    }
}

#[test]
fn kernel_trace_merges_compares_and_rejects_bad_files() {
    let out = bin()
        .args(["kernel-trace", "merges"])
        .arg(data("kernel/merges-onebatch-write64-ddl.txt"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("63"), "{text}");
    let bad = tmp("not-a-recording.txt", "garbage\nmore\n");
    let out = bin()
        .args(["kernel-trace", "merges"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("stat_before"));
    let out = bin()
        .args(["kernel-trace", "merges", "/nonexistent/rec.txt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
