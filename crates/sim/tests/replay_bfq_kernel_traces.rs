//! Recorded BFQ traces (kernel 6.18, HZ 250, loop device, rotational): the agreement
//! figures each reaches through `kernel-trace compare`, which follows the kernel's
//! choice after a disagreement with `Bfq::force_dispatch_rq`. See docs/validation.md
//! ("BFQ") for how they were recorded and what the remaining disagreements are.

use sim::kernel_trace::{self, CompareOptions, CompareReport, Converted};
use std::path::PathBuf;

fn run(name: &str) -> (Converted, CompareReport) {
    run_with(name, &[])
}

/// [`run`] with extra tunables (applied after the recorded ones).
fn run_with(name: &str, extra: &[(&str, &str)]) -> (Converted, CompareReport) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/kernel")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    let (kt, _fit, mut conv) = kernel_trace::load(&text, "bfq", None);
    for (k, v) in extra {
        conv.header.tunables.push((k.to_string(), v.to_string()));
    }
    assert_eq!(kt.meta.hz, Some(250));
    assert_eq!(kt.meta.sched.as_deref(), Some("bfq"));
    // Loop devices are rotational, which BFQ's idling rules read.
    assert!(conv.header.rotational);
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
/// the replay agrees far less: 964 exact, 977 explained.
#[test]
fn two_close_sequential_readers_are_merged_by_eqm() {
    let (_, r) = run("bfq-eqm2.txt");
    assert_eq!(figures(&r), (1024, 1016, 1024));
    let (_, r) = run_with("bfq-eqm2.txt", &[("queue_merging", "0")]);
    assert_eq!(figures(&r), (1024, 964, 977));
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
/// queue merging off (461 exact, 474 explained), so not a merging rule.
#[test]
fn four_readers_in_one_cgroup_started_together() {
    let (_, r) = run("bfq-stable4cg.txt");
    assert_eq!(figures(&r), (480, 471, 473));
    let (_, r) = run_with("bfq-stable4cg.txt", &[("queue_merging", "0")]);
    assert_eq!(figures(&r), (480, 461, 474));
}
