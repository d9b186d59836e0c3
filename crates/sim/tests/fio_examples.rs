//! fio's own example job files (copied into `tests/data/fio-examples/`, see
//! its README): each one runs, or is refused for a stated reason, and
//! docs/fio.md says which. Also checks docs/fio.md's table of every fio
//! option against the parser's own table.

use sim::fio::{option_table, parse_job_file_with_env, OptionClass};
use sim::runner::{self, RunOptions};
use std::path::PathBuf;

/// What iosched does with an example.
#[derive(Debug, Clone, Copy)]
enum Class {
    /// Parses, plans and simulates, completing I/O.
    Runs,
    /// Refused; the message contains this text (it names the option).
    Refused(&'static str),
    /// Runs and, as fio would on the device as simulated, completes no I/O
    /// (the reason).
    RunsEmpty(&'static str),
}
use Class::{Refused, Runs, RunsEmpty};

/// Every example and its class: keep in step with docs/fio.md.
const EXAMPLES: &[(&str, Class)] = &[
    ("1mbs_clients.fio", Runs),
    ("aio-read.fio", Runs),
    (
        "atomic-verify.fio",
        Refused("option 'atomic': atomic writes (RWF_ATOMIC, REQ_ATOMIC) need a device with atomic write limits"),
    ),
    ("backwards-read.fio", Runs),
    ("basic-verify.fio", Runs),
    (
        "butterfly.fio",
        Refused("/tmp/testfile: the file does not exist on the simulated file system"),
    ),
    ("cmdprio-bssplit.fio", Runs),
    ("cmdprio-percentage.fio", Runs),
    ("cross-stripe-verify.fio", Runs),
    ("dedupe-global.fio", Runs),
    (
        "disk-zone-profile.fio",
        Refused("option 'zonemode': zonemode=strided is not modeled yet"),
    ),
    (
        "enospc-pressure.fio",
        Refused("rw=randtrim on a file is fallocate(FALLOC_FL_PUNCH_HOLE) through the file system"),
    ),
    ("example_latency_steadystate.fio", Runs),
    ("exitwhat.fio", Runs),
    ("fio-rand-RW.fio", Runs),
    ("fio-rand-read.fio", Runs),
    ("fio-rand-write.fio", Runs),
    ("fio-seq-RW.fio", Runs),
    ("fio-seq-read.fio", Runs),
    ("fio-seq-write.fio", Runs),
    ("fixed-rate-submission.fio", Runs),
    ("flow.fio", Runs),
    ("fsx.fio", Runs),
    ("iometer-file-access-server.fio", Runs),
    ("jesd219.fio", Runs),
    ("latency-profile.fio", Runs),
    ("null.fio", Runs),
    ("numa.fio", Runs),
    ("poisson-rate-submission.fio", Runs),
    ("rand-zones.fio", Runs),
    ("sequence-distribution.fio", Runs),
    (
        "sprandom.fio",
        Refused("option 'sprandom': fio's SSD preconditioning order"),
    ),
    ("ssd-steadystate.fio", Runs),
    ("ssd-test.fio", Runs),
    (
        "steadystate.fio",
        Refused("filename=/dev/null is a character device"),
    ),
    ("surface-scan.fio", Runs),
    ("tiobench-example.fio", Runs),
    ("waitfor.fio", Runs),
    ("xnvme-compare.fio", Runs),
    ("xnvme-fdp.fio", Refused("option 'fdp': NVMe flexible data placement")),
    ("xnvme-pi.fio", Refused("unknown option 'md_per_io_size': it is an option of the io_uring_cmd and xnvme engines")),
    (
        "xnvme-zoned.fio",
        Refused("zonemode=zbd: device 'hdd-7200' is not a zoned block device"),
    ),
    ("zbd-rand-write-trim-gc.fio", Runs),
    ("zbd-rand-write-zone-reset-gc.fio", Runs),
    ("zbd-rand-write.fio", Runs),
    (
        "zbd-seq-read.fio",
        RunsEmpty("read_beyond_wp=0 on a fresh disk: every zone is empty, zbd_find_zone finds none"),
    ),
    ("zipf.fio", Runs),
];

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-examples")
}

fn docs() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/fio.md");
    std::fs::read_to_string(p).unwrap()
}

/// The variables the examples document (`FIO_BS=4k fio sprandom.fio`, the
/// xnvme examples' `FIO_RW`, ...), set as a user running them would.
fn env(name: &str) -> Option<String> {
    match name {
        "FIO_BS" => Some("4k".into()),
        "FIO_RW" => Some("randread".into()),
        "FIO_IODEPTH" => Some("16".into()),
        _ => None,
    }
}

/// The device an example runs on: a 7200 rpm disk, except where the
/// example needs more room (cross-stripe-verify's 30 clones start 124 GiB
/// apart: 3.6 TB).
fn device_for(name: &str) -> &'static str {
    match name {
        "cross-stripe-verify.fio" => "mg04aca400n",
        // fio's zbd examples are written for a host-managed SMR disk.
        n if n.starts_with("zbd-") => "mg04-smr-hm",
        _ => "hdd-7200",
    }
}

/// Parse and plan (and, for `run`, simulate) one example; the error text if
/// it is refused anywhere on the way.
fn try_example(name: &str, text: &str) -> Result<u64, String> {
    let mut input = parse_job_file_with_env(name, text, env).map_err(|e| {
        // Every refusal while reading the file names its line.
        assert_eq!(e.file(), Some(name), "{e}");
        assert!(e.line().is_some(), "{e}");
        e.to_string()
    })?;
    // Keep the test quick: 20 ms of simulated time per job (the examples
    // ask for up to hours), no ramp or start delay. The class does not
    // depend on how long a job runs.
    for j in &mut input.jobs {
        j.runtime_ns = Some(j.runtime_ns.unwrap_or(u64::MAX).min(20_000_000));
        j.ramp_time_ns = j.ramp_time_ns.min(2_000_000);
        j.start_delay_ns = 0;
    }
    // Some examples write logs (ssd-steadystate.fio's bw logs): not here, the
    // test must leave nothing behind.
    let o = RunOptions {
        seed: 1,
        write_logs: false,
        ..RunOptions::new(devices::profile(device_for(name)).unwrap())
    };
    let plan = runner::plan(&input, &o).map_err(|e| e.to_string())?;
    let rep = runner::run(&input, &o, plan, None).map_err(|e| e.to_string())?;
    Ok(rep.jobs.iter().map(|j| j.stats.total_ios()).sum())
}

#[test]
fn every_example_has_its_class() {
    let mut files: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    let listed: Vec<&str> = EXAMPLES.iter().map(|e| e.0).collect();
    assert_eq!(
        files, listed,
        "every copied example is classified, and only those"
    );
    let mut failures = Vec::new();
    for (name, class) in EXAMPLES {
        let text = std::fs::read_to_string(data_dir().join(name)).unwrap();
        match (class, try_example(name, &text)) {
            (Runs, Ok(ios)) if ios > 0 => {}
            (Runs, Ok(_)) => failures.push(format!("{name}: ran but completed no I/O")),
            (Runs, Err(e)) => failures.push(format!("{name}: expected to run, got: {e}")),
            (RunsEmpty(_), Ok(0)) => {}
            (RunsEmpty(why), r) => {
                failures.push(format!("{name}: expected no I/O ({why}), got {r:?}"))
            }
            (Refused(want), Err(e)) if e.contains(want) => {}
            (Refused(want), r) => failures.push(format!("{name}: expected '{want}', got {r:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn docs_list_every_example_with_its_class() {
    let doc = docs();
    for (name, class) in EXAMPLES {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("docs/fio.md has no row for {name}"));
        let word = match class {
            Runs | RunsEmpty(_) => "runs",
            Refused(_) => "refused",
        };
        assert!(row.contains(&format!("| {word} |")), "{row}");
    }
}

#[test]
fn docs_table_matches_the_option_table() {
    let doc = docs();
    let rows: Vec<&str> = doc
        .lines()
        .skip_while(|l| !l.starts_with("## Every fio option"))
        .filter(|l| l.starts_with("| `"))
        .collect();
    let table = option_table();
    assert_eq!(rows.len(), table.len(), "one row per option");
    for (row, opt) in rows.iter().zip(&table) {
        assert!(
            row.starts_with(&format!("| `{}` |", opt.name)),
            "{row} vs {}",
            opt.name
        );
        let class = match &opt.class {
            OptionClass::Modeled => "modeled",
            OptionClass::NoEffect => "no effect",
            OptionClass::Refused(_) => "refused",
        };
        assert!(row.contains(&format!("| {class} |")), "{row}: want {class}");
        for a in &opt.aliases {
            assert!(row.contains(&format!("`{a}`")), "{row}: alias {a}");
        }
    }
}
