//! `random_distribution` end to end: where a random job's I/Os land, read from
//! its completion-latency log (`log_offset=1`).

use sim::fio::{parse_job_file, RandomDist};
use sim::runner::{self, RunOptions};
use std::collections::HashMap;

/// Offsets (bytes) of the reads of `job` on `ideal`, 4 KiB blocks.
fn offsets(name: &str, job: &str) -> Vec<u64> {
    let dir = std::env::temp_dir().join(format!("iosched-dist-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("x").to_string_lossy().into_owned();
    let text = format!(
        "[j]\ndirect=1\nrw=randread\nbs=4k\nioengine=libaio\niodepth=16\n{job}write_lat_log={prefix}\nlog_offset=1\n"
    );
    let input = parse_job_file("t.fio", &text).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed: 11,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    runner::run(&input, &o, plan, None).unwrap();
    let log = std::fs::read_to_string(format!("{prefix}_clat.1.log")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    log.lines()
        .map(|l| l.split(", ").nth(4).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn zoned_sends_the_shares_to_their_zones() {
    let size = 256u64 << 20;
    let offs = offsets(
        "zoned",
        "size=256m\nnumber_ios=40000\ntime_based\nruntime=60\nrandom_distribution=zoned:60/10:30/20:8/30:2/40\n",
    );
    assert_eq!(offs.len(), 40_000);
    let share = |lo: u64, hi: u64| {
        offs.iter()
            .filter(|o| **o >= lo * size / 100 && **o < hi * size / 100)
            .count() as f64
            / offs.len() as f64
    };
    for (lo, hi, want) in [(0, 10, 0.6), (10, 30, 0.3), (30, 60, 0.08), (60, 100, 0.02)] {
        let got = share(lo, hi);
        assert!((got - want).abs() < 0.01, "{lo}-{hi}%: {got}");
    }
    // Unlike uniform draws with fio's random map, blocks repeat.
    let mut seen = std::collections::HashSet::new();
    assert!(offs.iter().any(|o| !seen.insert(*o)));
}

#[test]
fn zoned_abs_uses_byte_sizes() {
    let offs = offsets(
        "zabs",
        "size=1g\nnumber_ios=20000\ntime_based\nruntime=60\nrandom_distribution=zoned_abs:90/16m:10/512m\n",
    );
    let hot = offs.iter().filter(|o| **o < 16 << 20).count() as f64 / offs.len() as f64;
    assert!((hot - 0.9).abs() < 0.01, "{hot}");
    // Nothing past the zones' 528 MiB.
    assert!(offs.iter().all(|o| *o < 528 << 20));
}

#[test]
fn zipf_and_pareto_concentrate_on_few_blocks() {
    let top_share = |offs: &[u64], frac: f64, nblocks: usize| {
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for o in offs {
            *counts.entry(*o).or_default() += 1;
        }
        let mut v: Vec<usize> = counts.into_values().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let k = (nblocks as f64 * frac) as usize;
        v.iter().take(k).sum::<usize>() as f64 / offs.len() as f64
    };
    // 64 MiB = 16384 blocks; pareto:0.2 puts 80% of the I/O on 20% of them.
    let offs = offsets(
        "pareto",
        "size=64m\nnumber_ios=100000\ntime_based\nruntime=60\nrandom_distribution=pareto:0.2\n",
    );
    let s = top_share(&offs, 0.2, 16384);
    assert!((s - 0.8).abs() < 0.02, "{s}");
    // zipf:1.2: the top 1% of the blocks take ζ(n/100)/ζ(n) of the I/O.
    let offs = offsets(
        "zipf",
        "size=64m\nnumber_ios=100000\ntime_based\nruntime=60\nrandom_distribution=zipf:1.2\n",
    );
    let want = sim::offsets::zeta(163, 1.2) / sim::offsets::zeta(16384, 1.2);
    let s = top_share(&offs, 0.01, 16384);
    assert!((s - want).abs() < 0.02, "{s} vs {want}");
}

#[test]
fn random_distribution_parsing() {
    let dist = |v: &str| {
        parse_job_file(
            "t.fio",
            &format!("[j]\ndirect=1\nrandom_distribution={v}\n"),
        )
        .map(|i| i.jobs[0].random_distribution.clone())
    };
    assert_eq!(
        dist("zipf").unwrap(),
        RandomDist::Zipf {
            theta: 1.1,
            center: None
        }
    );
    assert_eq!(
        dist("pareto:0.3:0.25").unwrap(),
        RandomDist::Pareto {
            h: 0.3,
            center: Some(0.25)
        }
    );
    assert_eq!(
        dist("normal:5").unwrap(),
        RandomDist::Normal {
            dev: 5.0,
            center: None
        }
    );
    // Blank zone sizes share what is left; per direction as bssplit.
    assert_eq!(
        dist("zoned:50/20:30:20,100/100").unwrap(),
        RandomDist::Zoned([
            vec![(50, 20), (30, 40), (20, 40)],
            vec![(100, 100)],
            vec![(100, 100)]
        ])
    );
    for (v, want) in [
        ("zipf:1", "different from 1.0"),
        ("pareto:1.5", "out of range"),
        ("normal:100", "out of range"),
        ("zipf:1.2:2", "center 2 out of range"),
        ("zipf:x", "malformed number"),
        ("zoned:60/10:30/20", "add up to 90, not 100"),
        ("zoned:60/80:40/30", "more than 100%"),
        ("zoned", "needs zones"),
        ("zoned_abs:100", "needs a size"),
        ("gauss:3", "invalid value"),
    ] {
        let e = dist(v).unwrap_err().to_string();
        assert!(e.starts_with("t.fio:3:") && e.contains(want), "{v}: {e}");
    }
    // zoned_abs zones larger than the region are refused when planned.
    let input = parse_job_file(
        "t.fio",
        "[j]\ndirect=1\nrw=randread\nsize=1m\nrandom_distribution=zoned_abs:100/2m\n",
    )
    .unwrap();
    let o = RunOptions {
        seed: 1,
        nr_cpus: 4,
        write_logs: false,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let e = runner::plan(&input, &o).err().unwrap().to_string();
    assert!(
        e.contains("zoned_abs read zones add up to 2097152 bytes"),
        "{e}"
    );
}
