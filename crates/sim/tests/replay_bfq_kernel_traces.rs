//! Recorded BFQ traces (kernel 6.18, HZ 250, loop device, rotational): the agreement
//! figures each reaches through `kernel-trace compare`, which follows the kernel's
//! choice after a disagreement with `Bfq::force_dispatch_rq`. See docs/validation.md
//! ("BFQ") for how they were recorded and what the remaining disagreements are.

use sim::kernel_trace::{self, CompareOptions, CompareReport, Converted};
use std::path::PathBuf;

fn run(name: &str) -> (Converted, CompareReport) {
    run_with(name, &[])
}

/// [`run`] on the recording without the lines containing `drop` (to show what a
/// recorded fact changes).
fn run_without(name: &str, drop: &str) -> (Converted, CompareReport) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/kernel")
        .join(name);
    let text: String = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .filter(|l| !l.contains(drop))
        .map(|l| format!("{l}\n"))
        .collect();
    let (_kt, _fit, conv) = kernel_trace::load_checked(&text, "bfq", None).unwrap();
    let r = kernel_trace::compare(&conv, &CompareOptions::default()).unwrap();
    (conv, r)
}

/// [`run`] with extra tunables (applied after the recorded ones).
fn run_with(name: &str, extra: &[(&str, &str)]) -> (Converted, CompareReport) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/kernel")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    let (kt, _fit, mut conv) = kernel_trace::load_checked(&text, "bfq", None).unwrap();
    for (k, v) in extra {
        conv.header.tunables.push((k.to_string(), v.to_string()));
    }
    assert_eq!(kt.meta.hz, Some(250));
    assert_eq!(kt.meta.sched.as_deref(), Some("bfq"));
    // Loop devices are rotational, which BFQ's idling rules read (`bfq-nonrot.txt`
    // was recorded with `--rotational 0`).
    assert_eq!(conv.header.rotational, !name.contains("nonrot"));
    assert_eq!(conv.stats.unmatched_issues, 0);
    assert_eq!(conv.stats.unmatched_completes, 0);
    let r = kernel_trace::compare(&conv, &CompareOptions::default()).unwrap();
    assert!(r.stopped.is_none(), "{:?}", r.stopped);
    (conv, r)
}

/// (decisions, exact, exact + explained)
fn figures(r: &CompareReport) -> (usize, usize, usize) {
    (r.decisions, r.exact, r.exact + r.explained)
}

#[test]
fn one_queue_random_reads() {
    let (_, r) = run("bfq-randread.txt");
    assert_eq!(figures(&r), (512, 512, 512));
}

#[test]
fn one_queue_mixed_reads_and_writes() {
    let (_, r) = run("bfq-randrw.txt");
    assert_eq!(figures(&r), (512, 512, 512));
}

/// Two libaio readers. Decision 146 (at 1.61 ms) depends on a dispatch run that
/// returned nothing (blk-mq re-armed its one-jiffy re-run timer at 1.611 ms): that
/// refusal put the preempted queue back in service, so the next request it got was
/// dispatched at once. Without the recorded refusals replayed: 510 exact, 511
/// explained.
#[test]
fn two_processes_two_queues() {
    let (c, r) = run("bfq-twojobs.txt");
    assert_eq!(c.refusals.len(), 4);
    assert_eq!((r.refusals, r.refusals_not_reproduced), (4, 0));
    assert_eq!(figures(&r), (512, 512, 512));
}

/// Four psync readers: queues idle, raise their weight (interactive, soft real-time)
/// and hand the device over. Before the soft real-time fallback of
/// `bfq_update_io_seektime` was modelled this stood at 411 exact, 416 explained.
#[test]
fn four_psync_readers_idling_and_weight_raising() {
    let (_, r) = run("bfq-psync4.txt");
    assert_eq!(figures(&r), (512, 507, 512));
}

/// Two jobs in two cgroups (`/ga`, `/gb`): the recording names each task's cgroup,
/// and the group hierarchy decides exactly as the kernel's.
#[test]
fn two_cgroups() {
    let (c, r) = run("bfq-cgroups.txt");
    let cgroups: std::collections::BTreeSet<String> = c
        .ops
        .iter()
        .filter_map(|op| match &op.kind {
            sim::replay::OpKind::Insert(i) => Some(i.cgroup.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(cgroups.into_iter().collect::<Vec<_>>(), ["/ga", "/gb"]);
    assert_eq!(figures(&r), (512, 512, 512));
}

/// Two jobs with I/O priorities 0 and 7 (weights 80 and 10).
#[test]
fn two_io_priorities() {
    let (_, r) = run("bfq-prio.txt");
    assert_eq!(figures(&r), (512, 512, 512));
}

/// Two sequential readers 16 MiB apart. Without the recorded refused dispatch runs
/// replayed (decisions 226 and 310–312 follow refusals): 991 exact, 998 explained.
#[test]
fn two_sequential_readers() {
    let (_, r) = run("bfq-seqread2.txt");
    assert_eq!(figures(&r), (1002, 999, 1002));
}

/// Two sequential readers 1 MiB apart (libaio, iodepth 8): within 8192 sectors of
/// each other, so EQM merges their queues (`bfq_setup_cooperator`) and one shared
/// queue serves both in sector order, as the kernel did. With queue merging off
/// the replay agrees far less: 956 exact, 974 explained.
#[test]
fn two_close_sequential_readers_are_merged_by_eqm() {
    let (_, r) = run("bfq-eqm2.txt");
    // Nine swapped issues of the two dispatchers are replayed in the decided order
    // (`keep_swaps`); in the traced order: 1016 exact.
    assert_eq!(r.swaps_kept, 9);
    assert_eq!(figures(&r), (1024, 1015, 1024));
    let (_, r) = run_with("bfq-eqm2.txt", &[("queue_merging", "0")]);
    assert_eq!(figures(&r), (1024, 956, 974));
}

/// Four psync random readers started together, 100 IOPS each, 1.2 s: their queues
/// are scheduled for a stable merge with the first one (rotational device) and
/// merged at their first request 600 ms after creation. The device serves each
/// read before the next one arrives, so decisions do not depend on the merge.
#[test]
fn four_readers_started_together_stable_merge() {
    let (_, r) = run("bfq-stable4.txt");
    assert_eq!(figures(&r), (480, 480, 480));
}

/// The same in one cgroup (`/sm`). Early requests are close enough for EQM to
/// merge some queues first; which queue is found depends on the shape of the
/// position rb-tree (with the nearer neighbour taken instead: 464 exact). The unexplained decisions are those where the kernel
/// serves a queue that has just become busy while ours keeps idling for the
/// in-service, weight-raised queue of the same group; they are the same with
/// queue merging off (463 exact, 477 explained), so not a merging rule.
#[test]
fn four_readers_in_one_cgroup_started_together() {
    let (_, r) = run("bfq-stable4cg.txt");
    // Two completions traced less than COMPLETION_LAG_NS before the other CPU's
    // insert, replayed after it: before that rule, 472 exact and 474 explained;
    // with its bound at 1 µs and its look-back the explanation window, one (479).
    assert_eq!(r.completions_moved, 2);
    assert_eq!(figures(&r), (480, 478, 480));
    let (_, r) = run_with("bfq-stable4cg.txt", &[("queue_merging", "0")]);
    assert_eq!(figures(&r), (480, 463, 477));
}

// ----------------------------------------------------------------------------
// Recordings made for issue 12 (kernel 6.18.44, HZ 250, loop device, psync or
// libaio, 4 KiB random reads unless said otherwise). See docs/validation.md §5.

/// An RT-class psync reader (64 KiB) beside two BE readers (512 KiB each). The RT
/// job ends first; its process exit (recorded `sched_process_exit`, replayed as
/// `bfq_exit_icq`) ends the RT queue's idling at once and the BE readers are served.
/// Without the exits replayed the RT queue idles on and 8 decisions disagree.
#[test]
fn rt_reader_exits_beside_be_readers() {
    let (c, r) = run("bfq-rtexit.txt");
    let exits = c
        .ops
        .iter()
        .filter(|op| matches!(op.kind, sim::replay::OpKind::Exit { .. }))
        .count();
    assert_eq!(exits, 3, "the three fio job processes");
    assert_eq!(figures(&r), (272, 271, 272));
    let (_, r) = run_without("bfq-rtexit.txt", "sched_process_exit");
    assert_eq!(figures(&r), (272, 264, 270));
}

/// The seed-4 shape: four psync readers, each in its own cgroup (`/c1`..`/c4`),
/// equal weights, with and without `low_latency`.
#[test]
fn one_cgroup_per_process() {
    let (_, r) = run("bfq-cg4.txt");
    assert_eq!(figures(&r), (256, 256, 256));
    let (c, r) = run("bfq-cg4-nolowlat.txt");
    assert!(c
        .header
        .tunables
        .contains(&("low_latency".into(), "0".into())));
    assert_eq!(figures(&r), (256, 256, 256));
}

/// The seed-4 shape at length: four psync readers in `/c1`..`/c4`, 2 MiB each. The
/// groups make the scenario asymmetric, so the in-service queue is plugged while
/// its process prepares its next read, and both the kernel and ours inject other
/// groups' reads into those windows (about 600 of our dispatches here). With our
/// injection switched off (`bfq.injection=0`) the replay disagrees at once and
/// stays at 70.70 %: the kernel does inject in this shape.
#[test]
fn one_cgroup_per_process_with_injection() {
    let (_, r) = run("bfq-cg4-long.txt");
    assert_eq!(figures(&r), (2048, 2048, 2048));
    let (_, r) = run_with("bfq-cg4-long.txt", &[("injection", "0")]);
    assert_eq!(figures(&r), (2048, 1448, 1448));
}

/// Four psync readers sharing one cgroup (`/sh`).
#[test]
fn four_processes_in_one_cgroup() {
    let (_, r) = run("bfq-cgshared4.txt");
    assert_eq!(figures(&r), (256, 256, 256));
}

/// RT (level 3), BE and IDLE-class psync readers together.
#[test]
fn rt_be_and_idle_classes() {
    let (_, r) = run("bfq-classes.txt");
    assert_eq!(figures(&r), (224, 224, 224));
}

/// `queue/rotational` set to 0 on the loop device (two psync readers and a libaio
/// reader at iodepth 8).
#[test]
fn non_rotational() {
    let (c, r) = run("bfq-nonrot.txt");
    assert!(!c.header.rotational);
    assert_eq!(figures(&r), (512, 505, 512));
}

/// Three sequential psync readers with 8 KiB holes, 4 KiB apart: interleaved
/// sectors close to each other (the queue-merging paths).
#[test]
fn interleaved_close_readers() {
    let (_, r) = run("bfq-interleave3.txt");
    assert_eq!(figures(&r), (384, 381, 384));
}

/// Non-default tunables: `low_latency=0 timeout_sync=40 slice_idle_us=3000
/// back_seek_penalty=1 fifo_expire_sync=40`, two libaio randrw jobs.
#[test]
fn non_default_tunables() {
    let (c, r) = run("bfq-tunables.txt");
    for (k, v) in [
        ("low_latency", "0"),
        ("timeout_sync", "40"),
        ("slice_idle_us", "3000"),
        ("back_seek_penalty", "1"),
        ("fifo_expire_sync", "40"),
    ] {
        assert!(c.header.tunables.contains(&(k.into(), v.into())), "{k}");
    }
    assert_eq!(figures(&r), (512, 512, 512));
}

/// Two cgroups with `blkio.bfq.weight` 100 and 500, read back into the recording.
/// Without the weights (both at the default) 7 decisions disagree.
#[test]
fn cgroups_with_different_weights() {
    let (c, r) = run("bfq-weights.txt");
    assert_eq!(
        c.header.cgroup_weights,
        [("/wa".to_string(), 100), ("/wb".to_string(), 500)]
    );
    assert_eq!(figures(&r), (512, 512, 512));
    let (_, r) = run_without("bfq-weights.txt", "cgroup_weight=");
    assert_eq!(figures(&r), (512, 504, 505));
}

/// A per-device weight override (`blkio.bfq.weight_device` `7:0 1000`) on a cgroup
/// whose default weight is 100: the group schedules with 1000 on the recorded
/// device. Without the override line: 3 decisions disagree.
#[test]
fn per_device_weight_override() {
    let (c, r) = run("bfq-devweight.txt");
    assert_eq!(
        c.header.cgroup_weights,
        [("/da".to_string(), 100), ("/db".to_string(), 1000)]
    );
    assert_eq!(figures(&r), (512, 512, 512));
    let (_, r) = run_without("bfq-devweight.txt", "cgroup_weight_device");
    assert_eq!(figures(&r), (512, 509, 509));
}

/// Two libaio readers at BE level 2 (`prioclass=2 prio=2`, weight 60: not raised)
/// with `low_latency=0`.
#[test]
fn explicit_be_priority_not_raised() {
    let (_, r) = run("bfq-be2.txt");
    assert_eq!(figures(&r), (512, 512, 512));
}

/// `max_budget=64` with two sequential libaio readers (iodepth 8) 16 MiB apart.
/// Decision 207 (1.656 ms): reader B's first request (inserted on CPU 1 at 1.640
/// ms) was dispatched by B's own task before A's request was inserted on CPU 0 at
/// 1.653 ms, although its issue event is traced at 1.654 ms: with that order, A's
/// arrival (back in time, budget left) preempts B and A's request is served, as the
/// kernel did; in trace order B is in service and plugged, and ours returns nothing.
/// "Issued late" finds that order and keeps it. What remains (from decision 211)
/// is not understood (docs/validation.md §5): the kernel then keeps B in service
/// as if A were no longer weight-raised. The recording was made on a BFQ instance
/// carried over from an earlier run on the device (before the recorder selected
/// `none` first), whose state it does not carry; recordings made on purpose that
/// way (`record --keep-instance`) and fresh ones agree at 99.2–100 %.
#[test]
fn budget_exhaustion_with_max_budget_set() {
    let (c, r) = run("bfq-maxbudget.txt");
    // A tunable the recorder wrote (not at its default) is replayed.
    assert!(c
        .header
        .tunables
        .iter()
        .any(|(k, v)| k == "max_budget" && v == "64"));
    // The 7 insert merges are replayed as the inserts they were.
    assert_eq!(c.stats.insert_merges, 7);
    let d = r.disagreements.iter().find(|d| d.decision == 207).unwrap();
    assert_eq!(d.kernel, 208);
    assert_eq!(
        d.explanation,
        Some("issued late (decided before the other CPU's events)")
    );
    assert_eq!(r.reordered, 1);
    assert_eq!(figures(&r), (505, 359, 366));
}

/// The same workload re-recorded (fresh BFQ data each time: the recorder selects
/// `bfq` over `none`). Of five new recordings four agree throughout; this one, the
/// first, is kept.
#[test]
fn max_budget_set_rerecorded_agrees() {
    let (_, r) = run("bfq-maxbudget-b.txt");
    assert_eq!(figures(&r), (512, 512, 512));
}

/// Another re-recording of `bfq-maxbudget.txt`'s workload, the one of five that
/// diverges: from decision 132 (0.91 ms) the kernel dispatches a request of the
/// reader it is serving while ours returns nothing (the issue's "iosched keeps
/// idling or plugging where the kernel serves" class); not traced yet.
#[test]
fn max_budget_set_rerecorded_diverging() {
    let (_, r) = run("bfq-maxbudget-c.txt");
    let first = r
        .disagreements
        .iter()
        .find(|d| d.explanation.is_none())
        .unwrap();
    assert_eq!((first.decision, first.ours), (132, None));
    assert_eq!(figures(&r), (488, 475, 478));
}

// ----------------------------------------------------------------------------
// The seed-4 shape (issue 12): psync 4 KiB random readers, each process in its own
// cgroup (`/s1`..), equal weights, started together; recorded with `--bfq-log` on a
// fresh BFQ instance (BFQ's log lines are left out of the committed copies: compare
// ignores them).

/// Four readers, 1 MiB each. One decision of this shape: the kernel injected another
/// group's read in a dispatch run *before* the in-service queue's next request
/// arrived (its issue event came after that insert); replayed at the issue, the
/// forced dispatch would find the in-service queue no longer empty and end its
/// slot, so the decision is kept where it was taken (`decisions_moved`).
#[test]
fn seed4_shape_four_cgroups_short() {
    let (c, r) = run("bfq-seed4-cg4-short.txt");
    // A read-back default tunable is not replayed (max_budget=0 would recompute
    // bfq_max_budget from the initial peak rate).
    assert!(c.header.tunables.iter().all(|(k, _)| k != "max_budget"));
    assert_eq!(r.decisions_moved, 1);
    assert_eq!(figures(&r), (1024, 1020, 1024));
}

/// Four readers, 4 MiB each. From about 95 ms the kernel injects reads of other
/// groups while the in-service queue has a request in flight (an inject limit of
/// at least 2). This used to end the agreement at 80.18 %: the forced replay, which
/// the comparison continues from after a disagreement, did not mark its forced
/// injections as `bfq_choose_bfqq_for_injection` does (`rqs_injected`), so its limit
/// never grew (docs/validation.md §5). Decision 793 itself (ours takes 796, the
/// kernel 797) remains unexplained: this recording has no BFQ log to order its
/// completions by. At decision 2896 (351.4 ms) `/s2`'s reader and `/s4`'s have
/// a read of sector 84424 queued (`/s4`'s since 164 ms): ours dispatches `/s2`'s,
/// the twin of the one the conversion named; counted exact with the names swapped
/// from there on (without the rule: 4029 exact, 4054 explained).
#[test]
fn seed4_shape_four_cgroups_long() {
    let (_, r) = run("bfq-seed4-cg4.txt");
    let first = r
        .disagreements
        .iter()
        .find(|d| d.explanation.is_none())
        .unwrap();
    assert_eq!((first.decision, first.ours), (793, Some(796)));
    assert_eq!(r.twins, 1);
    assert_eq!(figures(&r), (4096, 4056, 4082));
}

/// Eight readers, 1 MiB each.
/// The seed-4 command (four psync readers, 4 MiB each, one cgroup each) recorded
/// on a fresh instance with `--bfq-log`, BFQ's log reduced to the messages the
/// conversion places by (`put_queue`: when BFQ took each completion in;
/// `select_queue: returned this queue`: when it chose), cut after the 1024th
/// issue. With them every decision is exact. Without them 31 are unexplained, from
/// decision 970 (33.5 ms) on, all "bfq chose nothing" where the kernel injects
/// another group's read: the class `bfq-seed4-cg4.txt` (no log) keeps. Another
/// CPU's insert traced between a completion's `block_rq_complete` and its
/// `put_queue` was seen by BFQ first, which changes the inject limit's samples.
/// The choices alone (the "completed with other-CPU inserts" rule placing the
/// completions) give 1022 exact; the completions alone, 993 explained.
#[test]
fn seed4_shape_four_cgroups_with_bfq_log() {
    let (_, r) = run("bfq-seed4-cg4-log.txt");
    assert_eq!(figures(&r), (1024, 1024, 1024));
    let (_, r) = run_without("bfq-seed4-cg4-log.txt", "  m   N ");
    assert_eq!(figures(&r), (1024, 988, 993));
    let unexplained: Vec<_> = r
        .disagreements
        .iter()
        .filter(|d| d.explanation.is_none())
        .collect();
    assert_eq!(unexplained.len(), 31);
    assert_eq!(unexplained[0].decision, 970);
    assert!(unexplained.iter().all(|d| d.ours.is_none()));
    let (_, r) = run_without("bfq-seed4-cg4-log.txt", "select_queue: returned this queue");
    assert_eq!(figures(&r), (1024, 990, 993));
    let (_, r) = run_without("bfq-seed4-cg4-log.txt", "put_queue");
    assert_eq!(figures(&r), (1024, 1022, 1024));
}

#[test]
fn seed4_shape_eight_cgroups() {
    let (_, r) = run("bfq-seed4-cg8.txt");
    assert_eq!(figures(&r), (2048, 2048, 2048));
}

/// Eight readers, 1 MiB each, re-recorded (the first 1200 issues kept). At decision
/// 646 (25.7 ms) two readers have a read of sector 64640 queued: the one of
/// `/s3`'s reader, inserted just before, and an older one of another reader (id
/// 136). BFQ's log shows the kernel serving `/s3`'s queue there, but the issue
/// event cannot say which of the two it was, and the conversion names the one
/// inserted first. Ours dispatches `/s3`'s: the twin rule counts it exact and swaps
/// the two names for the rest of the trace. Without the rule the replay goes on
/// from the other reader's request and stands at 68.42 %.
#[test]
fn seed4_shape_eight_cgroups_twins() {
    let (_, r) = run("bfq-seed4-cg8-twins.txt");
    assert_eq!(r.twins, 1);
    assert_eq!(figures(&r), (1200, 1200, 1200));
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel/bfq-seed4-cg8-twins.txt");
    let text = std::fs::read_to_string(p).unwrap();
    let (_kt, _fit, conv) = kernel_trace::load_checked(&text, "bfq", None).unwrap();
    let o = CompareOptions {
        twins: false,
        ..Default::default()
    };
    let r = kernel_trace::compare(&conv, &o).unwrap();
    let first = r.disagreements.first().unwrap();
    assert_eq!((first.decision, first.kernel), (646, 136));
    assert_eq!(figures(&r), (1200, 821, 821));
}

/// Eight readers, one cgroup each, four of 256 KiB and four of 512 KiB, recorded
/// with fio's `cgroup_attach_task` events (each job moving itself into its
/// cgroup). The recorder also polls `/proc` for each task's cgroup every few
/// milliseconds, which misses a job that starts and ends between two polls (in
/// two of six earlier recordings of this command, 3 and 1 of the 8 jobs: 70.31 %
/// explained for the first). The events give every insert its cgroup without the
/// polled lines; with neither, every job is in the root group and the replay
/// stands at 69.66 %.
#[test]
fn cgroups_from_attach_events() {
    let (c, r) = run("bfq-cg8-attach.txt");
    assert_eq!(figures(&r), (768, 768, 768));
    let groups = |c: &Converted| -> std::collections::BTreeSet<String> {
        c.ops
            .iter()
            .filter_map(|op| match &op.kind {
                sim::replay::OpKind::Insert(i) => Some(i.cgroup.clone()),
                _ => None,
            })
            .collect()
    };
    let all: Vec<String> = (1..=8).map(|i| format!("/s{i}")).collect();
    assert_eq!(groups(&c).into_iter().collect::<Vec<_>>(), all);
    let (c, r) = run_without("bfq-cg8-attach.txt", "task_cgroup=");
    assert_eq!(groups(&c).into_iter().collect::<Vec<_>>(), all);
    assert_eq!(figures(&r), (768, 768, 768));
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel/bfq-cg8-attach.txt");
    let text: String = std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("task_cgroup=") && !l.contains("cgroup_attach_task"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (_kt, _fit, c) = kernel_trace::load_checked(&text, "bfq", None).unwrap();
    assert_eq!(groups(&c).into_iter().collect::<Vec<_>>(), ["/"]);
    let r = kernel_trace::compare(&c, &CompareOptions::default()).unwrap();
    assert_eq!(figures(&r), (768, 513, 535));
}
