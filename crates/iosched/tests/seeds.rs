//! The seed-patch experiments of `docs/seeds.md`, each run with its one command
//! (`iosched compare ... --vary ...`) on a shortened job, asserting the *direction* of
//! the effect where the simulator reproduces it, and the mechanism where the report
//! does not show it (seed 2's flush count).

use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The seed's job file with `from` replaced by `to` (to shorten it), in a temp file.
fn shortened(file: &str, edits: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(format!("{ROOT}/examples/seeds/{file}")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{file} has no '{from}'");
        text = text.replace(from, to);
    }
    let dir = std::env::temp_dir().join(format!("iosched-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(std::path::Path::new(file).file_name().unwrap());
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// `iosched compare FILE ARGS --output-format json`: its rows.
fn compare_json(file: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .arg("compare")
        .arg(file)
        .args(args)
        .args(["--output-format", "json"])
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run iosched");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().unwrap().clone()
}

/// [`compare_json`] reduced to (variant, read IOPS, write IOPS).
fn compare(file: &str, args: &[&str]) -> Vec<(String, f64, f64)> {
    compare_json(file, args)
        .iter()
        .map(|r| {
            (
                r["variant"].as_str().unwrap().to_string(),
                r["read"]["iops"].as_f64().unwrap(),
                r["write"]["iops"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Seed 0: the command runs for every variant. The seed's direction (head-request
/// faster) is NOT reproduced yet (docs/seeds.md explains why), so nothing is asserted
/// about it here.
#[test]
fn seed0_command_runs() {
    let f = shortened(
        "0-mq-deadline-head-request.fio",
        &[("runtime=300", "runtime=50ms")],
    );
    let rows = compare(
        &f,
        &[
            "--device",
            "raid0-2x-mg04aca400n",
            "--set",
            "mq-deadline.fifo_batch=1",
            "--vary",
            "mq-deadline.variant=mainline,head-request",
        ],
    );
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.1 > 0.0));
}

/// Seed 1, without the patch (kyber pre-4.18, so nothing merges): 4 KiB reads, 8 jobs x
/// QD64, on the 600p. With the LBAs
/// deallocated (the seed's state) sequential and random reads both run at the
/// firmware's command rate, ~151-153k IOPS as the seed measured; with the LBAs written
/// they are flash/controller-bound at Intel's 35k.
#[test]
fn seed1_trimmed_600p_reaches_the_seeds_rate() {
    for file in ["1-kyber-merging.fio", "1-kyber-merging-rand.fio"] {
        let f = shortened(file, &[("size=256m", "size=8m")]);
        let rows = compare(
            &f,
            &[
                "--set",
                "kyber.variant=pre-4.18",
                "--vary",
                "device=nvme-600p-128g,nvme-600p-128g-trimmed",
            ],
        );
        let (written, trimmed) = (rows[0].1, rows[1].1);
        assert!(
            (written - 35_700.0).abs() < 0.15 * 35_700.0,
            "{file}: written {written}"
        );
        // The seed: 151k sequential, 153k random.
        assert!(
            (trimmed - 152_000.0).abs() < 0.15 * 152_000.0,
            "{file}: trimmed {trimmed}"
        );
    }
}

/// Seed 2: the flush request at the head of hctx->dispatch finishes block/004 sooner
/// than at the tail (the seed: ~10 % less runtime; here the effect is larger, see
/// docs/seeds.md), on a SATA SSD and a SATA disk.
#[test]
fn seed2_flush_at_head_is_faster() {
    let f = shortened(
        "2-flush-at-head.fio",
        &[("number_ios=256", "number_ios=32")],
    );
    for dev in ["ssd-sata", "hdd-7200"] {
        let rows = compare(
            &f,
            &["--device", dev, "--vary", "blk.flush_insert=head,tail"],
        );
        let (head, tail) = (rows[0].2, rows[1].2);
        assert!(head > 1.05 * tail, "{dev}: head {head} tail {tail}");
    }
}

/// Seed 2 on blktests block/004 as it really is (buffered I/O), on the free host:
/// every fsync writes back all the device's dirty pages and waits for every page
/// under writeback before its flush, so with CPUs that cost nothing the 64 jobs'
/// fsyncs move together and a flush rarely meets writes queued beside it. The
/// flush's place in `hctx->dispatch` then makes no difference to speak of
/// (docs/seeds.md): head and tail within 2 %, where the direct-I/O job shows head
/// well ahead. Both beat the direct job's head: one device flush serves many fsyncs.
#[test]
fn seed2_buffered_flush_placement_is_masked_by_writeback() {
    let edits = [("number_ios=256", "number_ios=128")];
    let f = shortened("2-flush-at-head-buffered.fio", &edits);
    let direct = shortened("2-flush-at-head.fio", &edits);
    for dev in ["ssd-sata", "mg04aca400n"] {
        let args = [
            "--host",
            "free",
            "--device",
            dev,
            "--vary",
            "blk.flush_insert=head,tail",
        ];
        let rows = compare(&f, &args);
        let (head, tail) = (rows[0].2, rows[1].2);
        assert!(
            (head - tail).abs() <= 0.02 * tail,
            "{dev}: head {head} tail {tail}"
        );
        let direct_head = compare(&direct, &args)[0].2;
        assert!(
            head > direct_head,
            "{dev}: buffered {head} direct {direct_head}"
        );
    }
}

/// Seed 2 on block/004 as it is, on the default host: 64 fio threads share 16
/// CPUs and the scheduler's lock, so the jobs' fsyncs no longer move in lockstep;
/// flushes meet writes queued beside them, and head insertion is faster on the
/// SATA SSD, by about the seed's 10 %.
#[test]
fn seed2_buffered_flush_at_head_is_faster_on_a_real_host() {
    let f = shortened(
        "2-flush-at-head-buffered.fio",
        &[("number_ios=256", "number_ios=128")],
    );
    let rows = compare(
        &f,
        &[
            "--device",
            "ssd-sata",
            "--vary",
            "blk.flush_insert=head,tail",
        ],
    );
    let (head, tail) = (rows[0].2, rows[1].2);
    assert!(
        head > 1.04 * tail && head < 1.3 * tail,
        "head {head} tail {tail}"
    );
}

/// Seed 2's mechanism: at the head, flushes wait for the NCQ queue to drain while
/// more fsyncs join the pending list, so fewer flushes reach the device.
#[test]
fn seed2_flush_at_head_merges_more_flushes() {
    use blk::mq::FlushInsert;

    use sim::job::{JobConfig, RwMode};
    use sim::simulate::{NoObserver, SimConfig, Simulation};
    let job = |i: u32| JobConfig {
        name: "flushes".into(),
        job_index: i,
        rw: RwMode::RandWrite,
        size: 1 << 30,
        io_limit: 1 << 30,
        number_ios: Some(32),
        cpu: i % 8,
        pid: 1000 + i,
        seed: 1 + i as u64,
        norandommap: true,
        fsync_blocks: 1,
        submit_cost_ns: 1500,
        ..JobConfig::default()
    };
    let flushes = |fi: FlushInsert| {
        let cfg = SimConfig {
            scheduler: "mq-deadline".into(),
            flush_insert: fi,
            ..Default::default()
        };
        let dev = devices::profile("ssd-sata").unwrap().build();
        let sim = Simulation::new(&cfg, dev, (0..64).map(job).collect()).unwrap();
        sim.run(&mut NoObserver).disk.flush_ios
    };
    let (head, tail) = (flushes(FlushInsert::Head), flushes(FlushInsert::Tail));
    // 64 x 32 fsyncs: at the tail most get a flush of their own; at the head several share one.
    assert!(tail > 1500, "tail {tail}");
    assert!(2 * head < tail, "head {head} tail {tail}");
}

/// Seed 1, the patch's effect: with kyber's per-CPU lists (mainline) sequential reads
/// waiting for a read token merge, and bandwidth rises; before (pre-4.18) nothing
/// merges. Random reads barely merge either way.
#[test]
fn seed1_kyber_mainline_merges_and_is_faster_on_sequential_reads() {
    let run = |file: &str| {
        let f = shortened(file, &[("size=256m", "size=16m")]);
        compare_json(
            &f,
            &[
                "--device",
                "nvme-600p-128g-trimmed",
                "--vary",
                "kyber.variant=pre-4.18,mainline",
            ],
        )
        .iter()
        .map(|r| {
            (
                r["read"]["bw_bytes"].as_f64().unwrap(),
                r["read_merges"].as_u64().unwrap(),
            )
        })
        .collect::<Vec<_>>()
    };
    let seq = run("1-kyber-merging.fio");
    let (before, after) = (seq[0], seq[1]);
    assert_eq!(before.1, 0, "pre-4.18 must not merge");
    assert!(after.1 > 10_000, "mainline merges: {}", after.1);
    assert!(
        after.0 > 1.5 * before.0,
        "bandwidth {} vs {}",
        after.0,
        before.0
    );
    let rand = run("1-kyber-merging-rand.fio");
    assert!(rand[1].1 < 1_000, "random merges: {}", rand[1].1);
}

/// Seed 3: the per-CPU statistics of v5.14 (`mq-deadline.variant=per-cpu-stats`)
/// change CPU cost only. On the free host (no CPU costs), with three priority
/// classes competing (where `dd_queued` decides which level may dispatch), every
/// figure of the report is identical to mainline's: no decision changes.
#[test]
fn seed3_per_cpu_stats_change_no_decision() {
    let file = shortened(
        "../mq-deadline-mixed-prio.fio",
        &[("runtime=2", "runtime=300ms")],
    );
    let rows = compare_json(
        &file,
        &[
            "--host",
            "free",
            "--device",
            "ideal-sq",
            "--cpus",
            "128",
            "--vary",
            "mq-deadline.variant=mainline,per-cpu-stats",
        ],
    );
    // One row per job (rt-reader, be-writer, idle-reader) per variant.
    assert_eq!(rows.len(), 6);
    let strip = |r: &serde_json::Value| {
        let mut r = r.clone();
        r.as_object_mut().unwrap().remove("variant");
        r
    };
    assert!(rows[0]["read"]["iops"].as_f64().unwrap() > 0.0);
    // The lower classes were served too (so `dd_queued` gated real decisions).
    assert!(rows[1]["write"]["iops"].as_f64().unwrap() > 0.0);
    assert!(rows[2]["read"]["iops"].as_f64().unwrap() > 0.0);
    for i in 0..3 {
        assert_eq!(strip(&rows[i]), strip(&rows[i + 3]));
    }
}

/// Seed 3's effect, with its one command: on the seed's 128-core Kunpeng 920 board
/// the v5.14 per-CPU sums make every dispatch read every CPU's counters inside
/// `dd->lock`, and the job's IOPS drop (seed: 258K with the patch, 183K/172K
/// without, 1.41-1.50x). The simulated ratio must have the seed's direction and be
/// within 2x of its size.
#[test]
fn seed3_per_cpu_sums_cost_iops_on_the_seed_host() {
    let f = shortened(
        "3-mq-deadline-per-cpu-stats.fio",
        &[("runtime=1", "runtime=100ms")],
    );
    let rows = compare(
        &f,
        &[
            "--host",
            "kunpeng920",
            "--device",
            "nvme-gen4",
            "--vary",
            "mq-deadline.variant=mainline,per-cpu-stats",
        ],
    );
    let (mainline, per_cpu) = (rows[0].1, rows[1].1);
    let ratio = mainline / per_cpu;
    assert!(
        (1.2..=2.0).contains(&ratio),
        "mainline {mainline} per-cpu-stats {per_cpu}: ratio {ratio}"
    );
}

/// Seed 3's timing of the scheduler alone: `iosched bench` times mq-deadline with both statistics
/// layouts on 128 CPUs, one row each (the figures are timings, so only their
/// presence is checked here; docs/seeds.md has them).
#[test]
fn seed3_bench_command_prints_both_variants() {
    let out = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args([
            "bench",
            "--sched",
            "mq-deadline",
            "--cpus",
            "128",
            "--vary",
            "mq-deadline.variant=mainline,per-cpu-stats",
            "--queued",
            "64",
            "--steps",
            "2000",
        ])
        .output()
        .expect("run iosched");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mq-deadline variant="))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows[0].contains("variant=mainline") && rows[1].contains("variant=per-cpu-stats"));
    for r in rows {
        let ns: f64 = r.split_whitespace().last().unwrap().parse().unwrap();
        assert!(ns > 0.0, "{r}");
    }
}

/// Seed 4: four QD1 random readers in one non-root cgroup. Legacy counting (≤ 6.1)
/// plugs the device for the in-service queue, so the total is one job's; mainline
/// (one group, equal weights) lets the reads overlap and the total scales. With
/// BFQ's injection as modelled, legacy gains from injected reads but stays behind.
#[test]
fn seed4_one_cgroup_legacy_is_one_job_mainline_scales() {
    let short = [("runtime=10s", "runtime=2s")];
    let f = shortened("4-bfq-idle-judgment.fio", &short);
    let args = |extra: &'static [&'static str]| {
        let mut a = vec![
            "--sched",
            "bfq",
            "--device",
            "nvme-600p-128g",
            "--host",
            "free",
        ];
        a.extend_from_slice(extra);
        a
    };
    let rows = compare(
        &f,
        &args(&[
            "--vary",
            "bfq.variant=legacy,mainline",
            "--vary",
            "bfq.injection=0,1",
        ]),
    );
    let iops = |name: &str| rows.iter().find(|r| r.0 == name).unwrap().1;
    let legacy = iops("bfq.variant=legacy bfq.injection=0");
    let mainline = iops("bfq.variant=mainline bfq.injection=0");
    let legacy_inj = iops("bfq.variant=legacy bfq.injection=1");
    let mainline_inj = iops("bfq.variant=mainline bfq.injection=1");
    // One job alone (jobs 1-3 removed).
    let mut one: Vec<(&str, &str)> = short.to_vec();
    one.extend([
        ("[job1]\ncgroup=test\nstartdelay=1s\nramp_time=6s\n", ""),
        ("[job2]\ncgroup=test\nstartdelay=2s\nramp_time=5s\n", ""),
        ("[job3]\ncgroup=test\nstartdelay=3s\nramp_time=4s\n", ""),
    ]);
    let single = compare(
        &shortened("4-bfq-idle-judgment.fio", &one),
        &args(&["--vary", "bfq.variant=legacy,mainline"]),
    );
    assert_eq!(single[0].1, single[1].1, "one job: the variants agree");
    let single = single[0].1;
    eprintln!("single {single} legacy {legacy} mainline {mainline} with injection: {legacy_inj} {mainline_inj}");
    assert!(
        (legacy - single).abs() < 0.1 * single,
        "legacy {legacy} vs one job {single}"
    );
    assert!(
        mainline > 2.5 * single,
        "mainline {mainline} vs one job {single}"
    );
    assert!(
        legacy_inj < 0.8 * mainline_inj,
        "with injection: legacy {legacy_inj} mainline {mainline_inj}"
    );
}

/// Seed 4, jobs in different cgroups: only the seed's size rule (`seed-v1`) stops
/// the plugging; mainline and patch 1 alone keep legacy's total.
#[test]
fn seed4_different_cgroups_only_the_size_rule_scales() {
    let f = shortened(
        "4-bfq-idle-judgment-cgroups.fio",
        &[("runtime=10s", "runtime=2s")],
    );
    let rows = compare(
        &f,
        &[
            "--sched",
            "bfq",
            "--host",
            "free",
            "--device",
            "nvme-600p-128g",
            "--set",
            "bfq.injection=0",
            "--vary",
            "bfq.variant=legacy,seed-v1-p1,seed-v1,mainline",
        ],
    );
    let (legacy, p1, v1, mainline) = (rows[0].1, rows[1].1, rows[2].1, rows[3].1);
    eprintln!("legacy {legacy} seed-v1-p1 {p1} seed-v1 {v1} mainline {mainline}");
    assert!((p1 - legacy).abs() < 0.05 * legacy);
    assert!((mainline - legacy).abs() < 0.05 * legacy);
    assert!(v1 > 2.5 * legacy, "seed-v1 {v1} vs legacy {legacy}");
}

/// Seed 4's remark that a single fio invocation with `-numjobs` shows no
/// difference with or without the patch: the jobs start together in one cgroup,
/// so BFQ stably merges their queues into one (`bfq_do_or_sched_stable_merge`,
/// immediately on a non-rotational queueing device), and one queue is never
/// plugged against itself. With merging switched off (`bfq.queue_merging=0`) the
/// variants differ as for separate fio instances.
#[test]
fn seed4_numjobs_in_one_cgroup_are_stably_merged() {
    let f = shortened(
        "4-bfq-idle-judgment.fio",
        &[
            ("runtime=10s", "runtime=2s"),
            (
                "[job0]\ncgroup=test\nstartdelay=0\nramp_time=7s\n",
                "[job0]\ncgroup=test\nnumjobs=4\n",
            ),
            ("[job1]\ncgroup=test\nstartdelay=1s\nramp_time=6s\n", ""),
            ("[job2]\ncgroup=test\nstartdelay=2s\nramp_time=5s\n", ""),
            ("[job3]\ncgroup=test\nstartdelay=3s\nramp_time=4s\n", ""),
        ],
    );
    let rows = compare(
        &f,
        &[
            "--sched",
            "bfq",
            "--host",
            "free",
            "--device",
            "nvme-600p-128g",
            "--set",
            "bfq.injection=0",
            "--vary",
            "bfq.variant=legacy,mainline",
            "--vary",
            "bfq.queue_merging=1,0",
        ],
    );
    let iops = |name: &str| rows.iter().find(|r| r.0 == name).unwrap().1;
    let merged_legacy = iops("bfq.variant=legacy bfq.queue_merging=1");
    let merged_mainline = iops("bfq.variant=mainline bfq.queue_merging=1");
    let legacy = iops("bfq.variant=legacy bfq.queue_merging=0");
    let mainline = iops("bfq.variant=mainline bfq.queue_merging=0");
    eprintln!("merged: legacy {merged_legacy} mainline {merged_mainline}; apart: legacy {legacy} mainline {mainline}");
    assert_eq!(merged_legacy, merged_mainline);
    assert!(
        legacy < 0.5 * mainline,
        "apart: legacy {legacy} mainline {mainline}"
    );
}
