//! Zoned device models: the errors a device returns for writes it cannot take,
//! and what it accepts.

use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Op, ReqFlags, Request, RqId};
use devices::zoned::ZoneError;
use devices::Device;

mod common;

fn rq(op: Op, sector: u64, n: u32) -> Request {
    common::request(op, ReqFlags::NONE, sector, n)
}

/// Submit, run to completion; the request's error, if any.
fn run(d: &mut dyn Device, id: u32, r: &Request) -> Option<ZoneError> {
    assert_eq!(d.queue_rq(Ns(0), RqId(id), r, true), QueueRqStatus::Ok);
    let mut done = Vec::new();
    while done.is_empty() {
        let t = d.next_event().expect("pending");
        d.advance(t, &mut done);
    }
    assert_eq!(done, [RqId(id)]);
    d.take_error(RqId(id))
}

const ZONE: u64 = 256 * 2048;

#[test]
fn smr_refuses_writes_off_the_write_pointer_and_across_zones() {
    let mut d = devices::profile("mg04-smr-hm").unwrap().build();
    let first_seq = 149 * ZONE;
    // Conventional zones take anything, sequential ones only at the pointer.
    assert_eq!(run(d.as_mut(), 1, &rq(Op::Write, 4096, 8)), None);
    assert_eq!(run(d.as_mut(), 2, &rq(Op::Write, first_seq, 8)), None);
    let e = run(d.as_mut(), 3, &rq(Op::Write, first_seq + 64, 8)).expect("unaligned");
    assert_eq!(
        e,
        ZoneError::UnalignedWrite {
            zone: 149,
            sector: first_seq + 64,
            wp: first_seq + 8
        }
    );
    assert_eq!(e.codes().zbc_sense, (0x5, 0x21, 0x04));
    assert_eq!(e.codes().errno, -5);
    assert_eq!(run(d.as_mut(), 4, &rq(Op::Write, first_seq + 8, 8)), None);
    // A write reaching into the next zone.
    let e = run(d.as_mut(), 5, &rq(Op::Write, 151 * ZONE - 8, 16));
    assert!(matches!(e, Some(ZoneError::UnalignedWrite { .. })), "{e:?}");
    let e = run(d.as_mut(), 6, &rq(Op::Write, first_seq + 16, ZONE as u32));
    assert!(
        matches!(e, Some(ZoneError::Boundary { zone: 149, .. })),
        "{e:?}"
    );
    // A reset of a conventional zone.
    let e = run(d.as_mut(), 7, &rq(Op::ZoneReset, 0, 0));
    assert_eq!(e, Some(ZoneError::Conventional { zone: 0 }));
    // A reset rewinds the zone: writing at its start works again.
    assert_eq!(run(d.as_mut(), 8, &rq(Op::ZoneReset, first_seq, 0)), None);
    assert_eq!(run(d.as_mut(), 9, &rq(Op::Write, first_seq, 8)), None);
    let rep = d.report_zones();
    assert_eq!(rep.len(), 14_905);
    assert_eq!(rep[149].wp, first_seq + 8);
}

#[test]
fn zns_active_limit_and_append() {
    let mut d = devices::profile("zns-zn540").unwrap().build();
    let zs = 2048 * 2048;
    // 14 zones written: 14 active (the open limit evicted implicitly open
    // ones to closed, which stay active).
    for z in 0..14u64 {
        assert_eq!(
            run(d.as_mut(), z as u32, &rq(Op::Write, z * zs, 8)),
            None,
            "zone {z}"
        );
    }
    let e = run(d.as_mut(), 100, &rq(Op::Write, 14 * zs, 8)).expect("active limit");
    assert_eq!(
        e,
        ZoneError::TooManyActive {
            zone: 14,
            limit: 14
        }
    );
    let c = e.codes();
    assert_eq!(
        (c.nvme_status, c.blk_status, c.errno),
        (0x1bd, "BLK_STS_ZONE_ACTIVE_RESOURCE", -75)
    );
    // A finish frees one: the new zone can be written.
    assert_eq!(run(d.as_mut(), 101, &rq(Op::ZoneFinish, 0, 0)), None);
    assert_eq!(run(d.as_mut(), 102, &rq(Op::Write, 14 * zs, 8)), None);
    // An append lands at the write pointer.
    assert_eq!(run(d.as_mut(), 103, &rq(Op::ZoneAppend, zs, 8)), None);
    assert_eq!(d.report_zones()[1].wp, zs + 16);
    // Beyond the zone capacity (1077 MiB of 2 GiB).
    let e = run(d.as_mut(), 104, &rq(Op::Write, 2 * zs + 8, 1077 * 2048));
    assert!(
        matches!(e, Some(ZoneError::Boundary { zone: 2, .. })),
        "{e:?}"
    );
}

/// A write the media refuses (its queue is full) leaves the zone table as it
/// was: the zone stays empty and is not counted open.
#[test]
fn refused_commands_leave_the_zone_table_unchanged() {
    let p = devices::profile("mg04-smr-hm").unwrap();
    let mut d = devices::zoned::ZonedDevice::new(
        devices::profile("mg04aca400n").unwrap().build(),
        p.zoned.unwrap(),
    );
    for z in 0..32u64 {
        let r = rq(Op::Write, (149 + z) * ZONE, 8);
        assert_eq!(
            d.queue_rq(Ns(0), RqId(z as u32), &r, true),
            QueueRqStatus::Ok
        );
    }
    assert_eq!(d.table().nr_open(), 32);
    let r = rq(Op::Write, (149 + 32) * ZONE, 8);
    assert_eq!(
        d.queue_rq(Ns(0), RqId(32), &r, true),
        QueueRqStatus::DevResource
    );
    assert_eq!(d.table().nr_open(), 32);
    let z = d.table().zone(149 + 32);
    assert_eq!((z.cond, z.wp), (devices::zoned::ZoneCond::Empty, z.start));
    d.table().check_invariants().unwrap();
}
