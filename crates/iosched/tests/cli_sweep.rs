//! CLI tests of `iosched sweep` and `iosched sweep merge`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(args)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run iosched")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const GRID: &str = "fio = \"--name=r --rw=randread --bs=4k --ioengine=libaio --iodepth=8 --direct=1 --size=64m --runtime=20ms --time_based\"\n\
device = \"hdd-7200\"\n\
sched = [\"none\", \"mq-deadline\"]\n\
seed = [1, 2, 3]\n";

#[test]
fn a_sweep_is_one_table_resumable_and_the_same_however_it_is_split() {
    let d = tmp("grid");
    let grid = d.join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let full = d.join("full");
    let o = iosched(&["sweep", s(&grid), "--out", s(&full), "--jobs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = std::fs::read_to_string(full.join("results.csv")).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7, "{table}");
    assert!(
        lines[0].starts_with("run,status,error,device,sched,seed,job,dir,iops"),
        "{table}"
    );
    // The last axis varies fastest.
    assert!(
        lines[2].starts_with("1,ok,,hdd-7200,none,2,r,read,"),
        "{table}"
    );
    assert!(
        lines[6].starts_with("5,ok,,hdd-7200,mq-deadline,3,r,read,"),
        "{table}"
    );
    // Seeds change the random offsets, hence the figures.
    assert_ne!(
        lines[1].split(',').skip(8).collect::<Vec<_>>(),
        lines[2].split(',').skip(8).collect::<Vec<_>>()
    );

    // The same table as Parquet.
    let pq = std::fs::File::open(full.join("results.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(pq)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 6);
    let b = &batches[0];
    let iops = b
        .column_by_name("iops")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::Float64Array>()
        .unwrap();
    let csv_iops: f64 = lines[3].split(',').nth(8).unwrap().parse().unwrap();
    assert_eq!(iops.value(2), csv_iops);
    let sched = b
        .column_by_name("sched")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap();
    assert_eq!(sched.value(5), "mq-deadline");

    // Three seeds per setting: a summary with their spread.
    let summary = std::fs::read_to_string(full.join("summary.csv")).unwrap();
    let sl: Vec<&str> = summary.lines().collect();
    assert_eq!(sl.len(), 3, "{summary}");
    assert!(
        sl[0].starts_with("device,sched,job,dir,seeds,iops_mean,iops_sd,iops_ci95,"),
        "{summary}"
    );
    assert!(sl[1].starts_with("hdd-7200,none,r,read,3,"), "{summary}");
    let iops: Vec<f64> = lines[1..4]
        .iter()
        .map(|l| l.split(',').nth(8).unwrap().parse().unwrap())
        .collect();
    let mean: f64 = sl[1].split(',').nth(5).unwrap().parse().unwrap();
    assert!(
        (mean - iops.iter().sum::<f64>() / 3.0).abs() < 0.01,
        "{summary}"
    );

    // A re-run skips what is done.
    let again = iosched(&["sweep", s(&grid), "--out", s(&full)]);
    assert!(
        stderr(&again).contains("(0 run now, 6 already done"),
        "{}",
        stderr(&again)
    );

    // A sweep killed while writing a run's record leaves a torn record: the
    // re-run does not count it, runs that run again and gives the same table.
    let log = full.join("runs").join("shard-0-of-1.log");
    let whole = std::fs::read(&log).unwrap();
    let last = whole
        .windows(5)
        .rposition(|w| w == b"#run ")
        .expect("a record");
    std::fs::write(&log, &whole[..last + (whole.len() - last) / 2]).unwrap();
    let again = iosched(&["sweep", s(&grid), "--out", s(&full), "--jobs", "1"]);
    assert!(
        stderr(&again).contains("(1 run now, 5 already done"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        std::fs::read_to_string(full.join("results.csv")).unwrap(),
        table
    );
    assert_eq!(std::fs::read(&log).unwrap().len(), whole.len());

    // Two shards, one thread each, merged: byte for byte the same table.
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = iosched(&[
            "sweep",
            s(&grid),
            "--out",
            s(&d.join(format!("s{i}"))),
            "--shard",
            &shard,
            "--jobs",
            "1",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let merged = d.join("merged.csv");
    let o = iosched(&[
        "sweep",
        "merge",
        "--out",
        s(&merged),
        s(&d.join("s1")),
        s(&d.join("s0")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), table);
    assert_eq!(
        std::fs::read(d.join("merged.parquet")).unwrap(),
        std::fs::read(full.join("results.parquet")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(d.join("merged.summary.csv")).unwrap(),
        summary
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_grids_are_refused_before_anything_runs() {
    let d = tmp("bad");
    let check = |text: &str, extra: &[&str], needle: &str| {
        let g = d.join("g.toml");
        std::fs::write(&g, text).unwrap();
        let mut args = vec!["sweep", s(&g), "--out"];
        let out = d.join("out");
        args.push(s(&out));
        args.extend_from_slice(extra);
        let o = iosched(&args);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(stderr(&o).contains(needle), "{text}: {}", stderr(&o));
        assert!(!out.join("results.csv").exists(), "{text}");
    };
    let fio = "fio = \"--name=r --rw=read --size=1m\"\n";
    check(
        &format!("{fio}colour = 1\n"),
        &[],
        "g.toml:2: unknown grid key `colour`",
    );
    check(
        &format!("{fio}device = []\n"),
        &[],
        "g.toml:2: `device` is an empty list",
    );
    check(&format!("{fio}seed = [1, -2]\n"), &[], "g.toml:2");
    check(
        &format!("{fio}sched = [\"none\", \"cfq\"]\n"),
        &[],
        "g.toml:2: run 1 (sched=cfq): unknown scheduler 'cfq'",
    );
    check(
        &format!("{fio}[set]\n\"mq-deadline.nope\" = 1\n"),
        &[],
        "g.toml:3: run 0 (set.mq-deadline.nope=1)",
    );
    check("device = \"ideal\"\n", &[], "no `job");
    check(
        &format!("{fio}device = \"ideal\"\n"),
        &["--shard", "2/2"],
        "--shard 2/2",
    );
    check("fio = [1\n", &[], "g.toml:");
    std::fs::remove_dir_all(&d).ok();
}
