//! Every example a user is shown — in each `--help` text and in the README —
//! runs: extracted from the texts themselves, run as written (in a scratch
//! directory that sees the repository's `examples/`, `crates/` and `data/`),
//! and must exit 0. Examples that need the running kernel are named with
//! why; the few that take minutes in a debug build run in the ignored test
//! (`cargo test -p iosched --test examples -- --ignored`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn help(path: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    assert!(o.status.success(), "{path:?} --help");
    String::from_utf8(o.stdout).unwrap()
}

/// The subcommands a help text lists (its `Commands:` section).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The example lines of one help text: after an `Example...:` line, up to
/// the next blank line.
fn help_examples(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut on = false;
    for l in text.lines() {
        if l.starts_with("Example") {
            on = true;
        } else if l.trim().is_empty() {
            on = false;
        } else if on {
            out.push(l.trim().to_string());
        }
    }
    out
}

/// Every example in every help text, recursively through the subcommands.
fn all_help_examples() -> Vec<String> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        out.extend(help_examples(&text));
        for c in subcommands(&text) {
            let mut p = path.clone();
            p.push(c);
            todo.push(p);
        }
    }
    out
}

/// The commands of the README's shell blocks (continuation lines joined,
/// comments dropped) and of its tables.
fn readme_examples() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut in_block = false;
    let mut cur = String::new();
    for l in text.lines() {
        if l.starts_with("```") {
            in_block = l.trim() == "```sh" && !in_block;
            continue;
        }
        if !in_block {
            // Commands in a table's cells (the seeds' experiments).
            if l.starts_with('|') {
                for (i, span) in l.split('`').enumerate() {
                    if i % 2 == 1 && span.starts_with("iosched ") && span.contains(" --") {
                        out.push(span.to_string());
                    }
                }
            }
            continue;
        }
        let l = l.split("  #").next().unwrap().trim();
        if let Some(head) = l.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
            continue;
        }
        cur.push_str(l);
        if !cur.trim().is_empty() {
            out.push(cur.trim().to_string());
        }
        cur.clear();
    }
    out
}

/// Why an example cannot run here, if it cannot.
fn cannot_run(cmd: &str) -> Option<&'static str> {
    if cmd.contains("kernel-trace record") {
        return Some("records the running kernel: needs root, fio, tracefs and a loop device");
    }
    if cmd.contains("cargo test") || cmd.contains("cargo bench") || cmd.contains("run-tests.sh") {
        return Some("runs the test suite or the benchmarks themselves (this test is one of them)");
    }
    if cmd.contains("kernel-trace compare rr.txt") {
        return Some("reads the recording the `record` example writes");
    }
    if cmd.contains("iosched serve") {
        return Some(
            "a server that runs until stopped: tests/serve.rs and tests/serve_clients.rs \
             start it this way and connect fio, qemu-io and nbdcopy to it",
        );
    }
    if cmd.contains("nbd://") || cmd.contains("nbd+unix://") {
        return Some("a client of the `iosched serve` example before it (tests/serve_clients.rs)");
    }
    None
}

/// Examples that take minutes in a debug build (they run in the ignored test).
fn slow(cmd: &str) -> bool {
    const SLOW: &[&str] = &[
        // 16 jobs x 300 s of psync reads on a disk.
        "-numjobs=16 -runtime=300",
        // The whole benchmark suite.
        "cargo run --release -- bench",
        "iosched bench --simulated-ms",
        // The seeds' jobs: long time-based runs (and several of them to
        // compare).
        "examples/seeds/",
        "--vary mq-deadline.variant=mainline,per-cpu-stats",
    ];
    SLOW.iter().any(|s| cmd.contains(s))
}

/// A scratch directory that sees the repository's inputs.
fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-examples-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    for sub in ["examples", "crates", "data"] {
        let link = d.join(sub);
        if !link.exists() {
            std::os::unix::fs::symlink(repo().join(sub), &link).unwrap();
        }
    }
    d
}

/// Run one example as a shell would: `VAR=value` prefixes, `cargo run
/// --release --` as the binary, `> FILE` redirection; arguments as written
/// (no example quotes anything).
fn run(cmd: &str, dir: &Path) -> Result<(), String> {
    let mut words: Vec<&str> = cmd.split_whitespace().collect();
    let mut env = Vec::new();
    while let Some((k, v)) = words.first().and_then(|w| w.split_once('=')) {
        if k.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            env.push((k.to_string(), v.to_string()));
            words.remove(0);
        } else {
            break;
        }
    }
    if words.starts_with(&["cargo", "run", "--release", "--"]) {
        words.drain(..4);
    } else if words.first() == Some(&"iosched") {
        words.remove(0);
    } else {
        return Err(format!("not an iosched command: {cmd}"));
    }
    let mut out_file = None;
    if let Some(i) = words.iter().position(|w| *w == ">") {
        out_file = words.get(i + 1).map(|f| dir.join(f));
        words.truncate(i);
    }
    let words: Vec<String> = words.iter().flat_map(|w| glob(w, dir)).collect();
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(&words)
        .envs(env)
        .current_dir(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "{cmd}: exit {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    if let Some(f) = out_file {
        std::fs::write(f, &o.stdout).unwrap();
    }
    eprintln!("{:6.1} s  {cmd}", t.elapsed().as_secs_f64());
    Ok(())
}

/// A shell's expansion of one `*` in the last path component, sorted.
fn glob(word: &str, dir: &Path) -> Vec<String> {
    let Some((parent, pat)) = word.rsplit_once('/').filter(|(_, p)| p.contains('*')) else {
        return vec![word.to_string()];
    };
    let (pre, post) = pat.split_once('*').unwrap();
    let mut out: Vec<String> = std::fs::read_dir(dir.join(parent))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(pre) && n.ends_with(post))
        .map(|n| format!("{parent}/{n}"))
        .collect();
    out.sort();
    out
}

fn examples() -> Vec<String> {
    let mut all = all_help_examples();
    all.extend(readme_examples());
    // `a && b` is two commands, in that order (sorting keeps them so: the
    // examples that chain name their steps in order).
    let mut all: Vec<String> = all
        .iter()
        .flat_map(|c| c.split(" && ").map(str::to_string).collect::<Vec<_>>())
        .collect();
    all.sort();
    all.dedup();
    all
}

/// Run the examples `pick` selects, in order (earlier ones may write the
/// files later ones read, e.g. an imported profile).
fn run_all(pick: impl Fn(&str) -> bool) {
    let dir = scratch();
    let mut all = examples();
    // Producers first: an import writes what a replay reads; reports last,
    // as they read what the runs and sweeps wrote.
    all.sort_by_key(|c| {
        if c.contains("import-disksim") {
            0
        } else if c.starts_with("iosched report") {
            2
        } else {
            1
        }
    });
    assert!(all.len() > 20, "examples found: {all:?}");
    let mut failures = Vec::new();
    for cmd in all.iter().filter(|c| pick(c)) {
        if let Some(why) = cannot_run(cmd) {
            eprintln!("  skip  {cmd}: {why}");
            continue;
        }
        if let Err(e) = run(cmd, &dir) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_quick_example_runs() {
    run_all(|c| !slow(c) || c.contains("import-disksim"));
}

#[test]
#[ignore = "minutes in a debug build: the long examples"]
fn every_slow_example_runs() {
    run_all(|c| slow(c) || c.contains("import-disksim"));
}
