//! Merging, plugging and splitting through the blk-mq core.

mod common;
use blk::merge::MergeLimits;
use blk::mq::{FlushInsert, QueueConfig, Submitted};
use blk::{Ns, Op, ReqFlags};
use common::*;

fn qcfg(limits: MergeLimits) -> QueueConfig {
    QueueConfig {
        limits,
        ..cfg(32, false, false, FlushInsert::Head)
    }
}

/// Submit `bios` under one plug, flush it to the disk, and return what the disk saw.
fn plugged(limits: MergeLimits, bios: &[blk::Bio]) -> (Vec<Cmd>, [u64; 2]) {
    let mut q = none_queue(qcfg(limits));
    let mut d = Disk::ncq(32);
    q.start_plug();
    for b in bios {
        q.submit_bio(Ns(0), *b);
    }
    q.finish_plug(Ns(0), Some(&mut d));
    run_until(&mut q, &mut d, Ns(1_000_000_000), |_, _, _, _| {});
    (d.log.clone(), q.disk_stats(Ns(0)).merges)
}

#[test]
fn adjacent_bios_back_and_front_merge_in_the_plug() {
    let bios: Vec<_> = (0..4).map(|i| write(i * 8, 8, i)).collect();
    let (log, merges) = plugged(MergeLimits::default(), &bios);
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].sector, log[0].nr_sectors), (0, 32));
    assert_eq!(merges, [0, 3]);
    // Descending offsets front-merge into the newest plugged request.
    let bios: Vec<_> = (0..4).rev().map(|i| bio(Op::Read, i * 8, 8, i)).collect();
    let (log, merges) = plugged(MergeLimits::default(), &bios);
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].sector, log[0].nr_sectors), (0, 32));
    assert_eq!(merges, [3, 0]);
}

#[test]
fn max_sectors_and_max_segments_bound_merges() {
    let bios: Vec<_> = (0..4).map(|i| write(i * 8, 8, i)).collect();
    let lim = MergeLimits {
        max_sectors: 16,
        ..Default::default()
    };
    let (log, merges) = plugged(lim, &bios);
    assert_eq!(
        log.iter()
            .map(|c| (c.sector, c.nr_sectors))
            .collect::<Vec<_>>(),
        vec![(0, 16), (16, 16)]
    );
    assert_eq!(merges, [0, 2]);
    let lim = MergeLimits {
        max_segments: 3,
        ..Default::default()
    };
    let (log, _) = plugged(lim, &bios);
    assert_eq!(
        log.iter().map(|c| c.nr_sectors).collect::<Vec<_>>(),
        vec![24, 8]
    );
}

#[test]
fn nomerges_two_disables_merging_one_keeps_plug_merges() {
    let bios: Vec<_> = (0..4).map(|i| write(i * 8, 8, i)).collect();
    let (log, merges) = plugged(
        MergeLimits {
            nomerges: 2,
            ..Default::default()
        },
        &bios,
    );
    assert_eq!((log.len(), merges), (4, [0, 0]));
    let (log, _) = plugged(
        MergeLimits {
            nomerges: 1,
            ..Default::default()
        },
        &bios,
    );
    assert_eq!(log.len(), 1);
}

#[test]
fn reads_and_writes_never_merge_nor_across_fua() {
    let bios = [
        bio(Op::Read, 0, 8, 0),
        write(8, 8, 1),
        bio(Op::Read, 16, 8, 2),
    ];
    let (log, merges) = plugged(MergeLimits::default(), &bios);
    assert_eq!((log.len(), merges), (3, [0, 0]));
    // On a device with a write cache and FUA, a FUA write neither merges nor lets
    // the next write merge into it.
    let mut fua = write(8, 8, 1);
    fua.flags = fua.flags.with(ReqFlags::FUA);
    let bios = [write(0, 8, 0), fua, write(16, 8, 2)];
    let mut q = none_queue(cfg(32, true, true, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    q.start_plug();
    for b in bios {
        q.submit_bio(Ns(0), b);
    }
    q.finish_plug(Ns(0), Some(&mut d));
    assert_eq!((d.log.len(), q.disk_stats(Ns(0)).merges), (3, [0, 0]));
    assert!(d.log[1].fua);
    // Without a write cache FUA means nothing: the flag is stripped at submission
    // (submit_bio_noacct) and the writes merge.
    let (log, merges) = plugged(MergeLimits::default(), &bios);
    assert_eq!((log.len(), merges), (1, [0, 2]));
}

#[test]
fn no_merge_across_a_preflush_write() {
    // On a write-back-cache device the PREFLUSH write goes to the flush machinery
    // and is never a merge target; the next write is adjacent to it only.
    let mut q = none_queue(cfg(32, true, true, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    let mut pf = write(8, 8, 1);
    pf.flags = pf.flags.with(ReqFlags::PREFLUSH);
    q.start_plug();
    q.submit_bio(Ns(0), write(0, 8, 0));
    assert!(matches!(q.submit_bio(Ns(0), pf), Submitted::Flush(_)));
    q.submit_bio(Ns(0), write(16, 8, 2));
    q.finish_plug(Ns(0), Some(&mut d));
    run_until(&mut q, &mut d, Ns(1_000_000_000), |_, _, _, _| {});
    assert_eq!(q.disk_stats(Ns(0)).merges, [0, 0]);
    assert_eq!(d.log.iter().filter(|c| c.op == Op::Write).count(), 3);
}

#[test]
fn plug_auto_flushes_at_32_requests_and_after_a_large_request() {
    let mut q = none_queue(QueueConfig {
        nr_requests: Some(64),
        ..qcfg(MergeLimits::default())
    });
    q.start_plug();
    for i in 0..33 {
        q.submit_bio(Ns(0), write(i * 1000, 8, i));
    }
    // The 33rd found 32 plugged and flushed them first.
    assert_eq!(q.plugged(), 1);
    let mut q = none_queue(qcfg(MergeLimits::default()));
    q.start_plug();
    q.submit_bio(Ns(0), write(0, 256, 0)); // 128 KiB
    q.submit_bio(Ns(0), write(5000, 8, 1));
    assert_eq!(q.plugged(), 1);
}

#[test]
fn software_queue_merge_scans_the_last_eight() {
    // No elevator, no plug, no driver at hand: requests wait in the CPU's software
    // queue, where later bios merge.
    let mut q = none_queue(qcfg(MergeLimits::default()));
    q.submit_bio(Ns(0), write(0, 8, 0));
    assert_eq!(q.submit_bio(Ns(0), write(8, 8, 1)), Submitted::Merged);
    // Another CPU's software queue is not scanned.
    let mut other = write(16, 8, 2);
    other.cpu = 1;
    assert!(matches!(q.submit_bio(Ns(0), other), Submitted::Inserted(_)));
    // Eight newer requests hide the first one.
    for i in 0..8 {
        q.submit_bio(Ns(0), write(10_000 + i * 100, 8, 10 + i));
    }
    assert!(matches!(
        q.submit_bio(Ns(0), write(16, 8, 3)),
        Submitted::Inserted(_)
    ));
    assert_eq!(q.disk_stats(Ns(0)).merges, [0, 1]);
}

#[test]
fn direct_issue_without_elevator_leaves_nothing_to_merge() {
    let mut q = none_queue(qcfg(MergeLimits::default()));
    let mut d = Disk::ncq(32);
    assert!(matches!(
        q.submit_bio_direct(Ns(0), write(0, 8, 0), &mut d),
        Submitted::Issued(_)
    ));
    assert!(matches!(
        q.submit_bio_direct(Ns(0), write(8, 8, 1), &mut d),
        Submitted::Issued(_)
    ));
    assert_eq!(d.log.len(), 2);
    assert_eq!(q.disk_stats(Ns(0)).merges, [0, 0]);
}

#[test]
fn oversized_bio_splits_into_unmergeable_pieces() {
    let lim = MergeLimits {
        max_sectors: 256,
        ..Default::default()
    };
    let mut q = none_queue(qcfg(lim));
    let mut d = Disk::ncq(32);
    q.start_plug();
    assert_eq!(q.submit_bio(Ns(0), write(0, 2048, 7)), Submitted::Split(8));
    q.finish_plug(Ns(0), Some(&mut d));
    let mut owners = vec![];
    run_until(&mut q, &mut d, Ns(1_000_000_000), |_, _, _, o| {
        owners.push(o)
    });
    assert_eq!(d.log.len(), 8);
    assert!(d.log.iter().all(|c| c.nr_sectors == 256));
    assert_eq!(
        owners,
        vec![7],
        "the owner completes once, with the last piece"
    );
    let st = q.disk_stats(Ns(0));
    assert_eq!((st.ios[1], st.sectors[1], st.merges[1]), (8, 2048, 0));
    // max_segments bounds a piece too: 64 pages = 512 sectors.
    let lim = MergeLimits {
        max_segments: 64,
        ..Default::default()
    };
    let mut q = none_queue(qcfg(lim));
    assert_eq!(q.submit_bio(Ns(0), write(0, 2048, 7)), Submitted::Split(4));
}
