//! `bfq_limit_depth` as of Linux 6.17/6.18 (shallow depths count tags of the whole
//! scheduler-tag map), hand-worked.

mod bfq_support;

use bfq_support::{Harness, Io};
use blk::cgroup::CgroupTable;
use blk::elevator::{Elevator, QueueParams};
use blk::types::{Op, ReqFlags};

fn params(nr_requests: u32) -> QueueParams {
    QueueParams {
        nr_requests,
        ..QueueParams::default()
    }
}

fn sync_write(pid: u32, sector: u64) -> Io {
    Io {
        op: Op::Write,
        sync: true,
        ..Io::read(pid, sector, 8)
    }
}

/// 256 tags: async I/O gets 128 (50 %), sync writes 192 (75 %); with a
/// weight-raised busy queue 48 (~18 %) and 96 (~37 %). Sync reads are never
/// limited. After `nr_requests` changes to 64: 32, 48, 12, 24.
#[test]
fn async_and_sync_write_depths_follow_nr_requests() {
    let mut h = Harness::with_wr(params(256));
    assert_eq!(h.b.async_depths(), [[128, 192], [48, 96]]);
    let none = ReqFlags::NONE;
    assert_eq!(h.b.limit_depth_for(Op::Read, none, 1), None);
    assert_eq!(h.b.limit_depth_for(Op::Write, none, 1), Some(128));
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 1), Some(192));
    // A new sync queue is weight-raised (low_latency, interactive): the raised row.
    h.submit(Io::read(7, 0, 8));
    assert_eq!(h.b.limit_depth_for(Op::Write, none, 1), Some(48));
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 1), Some(96));
    assert_eq!(h.b.limit_depth_for(Op::Read, none, 1), None);
    h.b.depth_updated(64);
    assert_eq!(h.b.async_depths(), [[32, 48], [12, 24]]);
    // Tiny queues keep at least one tag of each kind.
    h.b.depth_updated(2);
    assert_eq!(h.b.async_depths(), [[1, 1], [1, 1]]);
}

/// 64 tags, weight raising off: two processes with sync-write queues (weight 40
/// each) share the 48 sync-write tags, 24 each. Process 1 with 23 requests
/// allocated may still take a tag from all 48; at 24 it is over its share and gets
/// a depth of 1; process 2, with one request, is not limited.
#[test]
fn a_queue_over_its_weighted_share_gets_one_tag() {
    let mut h = Harness::with(params(64));
    h.submit(sync_write(2, 1_000_000));
    for i in 0..23 {
        h.submit(sync_write(1, i * 1000));
    }
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 1), Some(48));
    h.submit(sync_write(1, 23_000));
    let q1 = h.b.sync_queue_of(1).unwrap();
    assert_eq!(h.b.queues[q1].allocated, 24);
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 1), Some(1));
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 2), Some(48));
    // The share check runs for reads too, against their full depth (64: a share
    // of 32, not reached).
    assert_eq!(h.b.limit_depth_for(Op::Read, ReqFlags::NONE, 1), None);
    // Freed requests no longer count.
    let d = h.dispatch().unwrap();
    h.complete(d);
    let left = h.b.queues[q1].allocated + h.b.queues[h.b.sync_queue_of(2).unwrap()].allocated;
    assert_eq!(left, 24);
}

/// Groups: two cgroups of weights 100 and 300 (each with one busy sync-write
/// queue), 64 tags. At the root level `/a` gets round(48 × 100 / 400) = 12 tags
/// and `/b` 36; `/a`'s process is limited to one tag once its group holds 12.
#[test]
fn a_group_over_its_weighted_share_limits_its_processes() {
    let mut h = Harness::with(params(64));
    let mut t = CgroupTable::new();
    let a = t.intern("/a");
    let b = t.intern("/b");
    t.set_weight(a, 100).unwrap();
    t.set_weight(b, 300).unwrap();
    h.b.set_cgroups(&t);
    h.submit_in(sync_write(2, 5_000_000), b);
    for i in 0..11 {
        h.submit_in(sync_write(1, i * 1000), a);
    }
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 1), Some(48));
    h.submit_in(sync_write(1, 11_000), a);
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 1), Some(1));
    assert_eq!(h.b.limit_depth_for(Op::Write, ReqFlags::SYNC, 2), Some(48));
}
