//! Several sequential readers on one disk (docs/devices.md, "Several sequential
//! streams"): each psync reader (one request outstanding) reads its own region,
//! 512 MiB from the next, on `hdd-7200`. The drive keeps a segment per stream and
//! finishes a detected sequential stream's minimum prefetch before the head moves
//! to another stream, so each stream is mostly served from its read-ahead; without
//! the minimum prefetch every request is a media access.

use devices::Profile;
use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::runner::{self, RunOptions};

const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "bfq", "kyber"];

fn run(streams: usize, bs: &str, sched: &str, device: Profile) -> RunReport {
    let mut job = format!(
        "[global]\ndirect=1\nioengine=psync\nrw=read\nbs={bs}\nsize=256m\ntime_based\nruntime=1\n"
    );
    for i in 0..streams {
        job.push_str(&format!("[s{i}]\noffset={}m\n", i * 512));
    }
    let input = parse_job_file("t.fio", &job).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed: 1,
        scheduler: Some(sched.to_string()),
        ..RunOptions::new(device)
    };
    let plan = runner::plan(&input, &o).unwrap();
    runner::run(&input, &o, plan, None).unwrap()
}

/// Per-stream read bandwidth, MB/s (10^6 B/s).
fn per_stream(r: &RunReport) -> Vec<f64> {
    r.jobs
        .iter()
        .map(|j| j.stats.read.bw_bytes() as f64 / 1e6)
        .collect()
}

fn hdd() -> Profile {
    devices::profile("hdd-7200").unwrap()
}

/// hdd-7200 with the minimum prefetch switched off.
fn hdd_without_min_prefetch() -> Profile {
    let text = include_str!("../../devices/profiles/hdd-7200.toml")
        .replace("min_prefetch_kib = 1024", "min_prefetch_kib = 0");
    devices::parse_profile("x.toml", &text, &|_| None).unwrap()
}

/// 2, 4 and 8 streams under every scheduler: together they keep at least half the
/// one-stream rate (and never exceed it), and no stream gets less than a quarter of
/// its fair share.
#[test]
fn streams_are_served_from_read_ahead_under_every_scheduler() {
    for bs in ["4k", "64k"] {
        for sched in SCHEDULERS {
            let one: f64 = per_stream(&run(1, bs, sched, hdd())).iter().sum();
            for n in [2, 4, 8] {
                let v = per_stream(&run(n, bs, sched, hdd()));
                let total: f64 = v.iter().sum();
                eprintln!("{bs} {sched} {n}: total {total:.1} MB/s (one stream {one:.1}), per stream {v:.1?}");
                assert!(
                    total >= 0.5 * one,
                    "{bs} {sched} {n}: {total:.1} of {one:.1}"
                );
                assert!(
                    total <= 1.05 * one,
                    "{bs} {sched} {n}: {total:.1} of {one:.1}"
                );
                let fair = total / n as f64;
                for (i, s) in v.iter().enumerate() {
                    assert!(
                        *s >= 0.25 * fair,
                        "{bs} {sched} {n}: stream {i} {s:.1} of {fair:.1}"
                    );
                }
            }
        }
    }
}

/// The mechanism: with no minimum prefetch the head leaves each stream as soon as
/// the other stream's request arrives, the read-ahead is cut off before it is
/// used, and two streams fall to a few percent of one.
#[test]
fn without_minimum_prefetch_two_streams_collapse() {
    for sched in SCHEDULERS {
        let with: f64 = per_stream(&run(2, "4k", sched, hdd())).iter().sum();
        let without: f64 = per_stream(&run(2, "4k", sched, hdd_without_min_prefetch()))
            .iter()
            .sum();
        eprintln!("{sched}: with {with:.1} MB/s, without {without:.1}");
        assert!(without < 0.1 * with, "{sched}: {without:.1} vs {with:.1}");
    }
}
