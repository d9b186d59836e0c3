//! Zone write plugging inside the blk-mq submission path: hand-worked orders
//! (block/blk-zoned.c with blk_mq_submit_bio's hooks, post-6.18).

mod common;

use blk::mq::{FlushInsert, Queue, Submitted};
use blk::zoned::{BlkZone, ZoneCond, ZonedLimits};
use blk::{Ns, Op};
use common::{bio, cfg, none_queue, write, Disk};

/// 4 zones of 64 sectors, zone 0 conventional, all empty.
fn zoned_queue(nomerges: u8) -> Queue {
    let mut c = cfg(32, false, false, FlushInsert::Head);
    c.limits.nomerges = nomerges;
    let mut q = none_queue(c);
    let lim = ZonedLimits {
        zone_sectors: 64,
        capacity: 256,
        zone_capacity: 64,
        nr_conv_zones: 1,
        max_open_zones: 0,
        max_active_zones: 0,
        emulate_zone_append: true,
    };
    q.set_zoned(lim, &report(&[0, 64, 128, 192]));
    q
}

/// Zone report with write pointers `wps` (zone 0 conventional).
fn report(wps: &[u64]) -> Vec<BlkZone> {
    wps.iter()
        .enumerate()
        .map(|(i, &wp)| {
            let start = i as u64 * 64;
            BlkZone {
                start,
                len: 64,
                capacity: 64,
                wp: if i == 0 { start + 64 } else { wp },
                conventional: i == 0,
                cond: match (i, wp - start) {
                    (0, _) => ZoneCond::NotWp,
                    (_, 0) => ZoneCond::Empty,
                    (_, 64) => ZoneCond::Full,
                    _ => ZoneCond::ImpOpen,
                },
            }
        })
        .collect()
}

fn log(d: &Disk) -> Vec<(Op, u64, u32)> {
    d.log
        .iter()
        .map(|c| (c.op, c.sector, c.nr_sectors))
        .collect()
}

/// Drive until idle; the device completes everything successfully.
fn drain(q: &mut Queue, d: &mut Disk, from: Ns) -> Ns {
    let mut now = from;
    let mut done = Vec::new();
    loop {
        if q.next_run().is_some_and(|t| t <= now) {
            q.run(now, d);
            continue;
        }
        let next = [q.next_run(), d.next_done()].into_iter().flatten().min();
        let Some(t) = next else { return now };
        now = now.max(t);
        d.advance(now, &mut done);
        for id in done.drain(..) {
            q.complete(now, id);
        }
    }
}

/// Writes queued behind an undispatched request merge into it (the merge is
/// tried before plugging), moving the plug's write pointer.
#[test]
fn sequential_writes_merge_before_dispatch() {
    let mut q = zoned_queue(0);
    let mut d = Disk::ncq(32);
    assert!(matches!(
        q.submit_bio(Ns(0), write(64, 8, 1)),
        Submitted::Inserted(_)
    ));
    assert_eq!(q.submit_bio(Ns(0), write(72, 8, 2)), Submitted::Merged);
    assert_eq!(q.submit_bio(Ns(0), write(80, 8, 3)), Submitted::Merged);
    assert_eq!(
        q.zone_wplugs().unwrap().plug_state(1),
        Some((24, true, 0, false))
    );
    drain(&mut q, &mut d, Ns(0));
    assert_eq!(log(&d), [(Op::Write, 64, 24)]);
    let mut owners = Vec::new();
    q.take_completed(&mut owners);
    assert_eq!(owners, [1, 2, 3]);
    // Idle and partly written: the plug keeps the write pointer.
    assert_eq!(
        q.zone_wplugs().unwrap().plug_state(1),
        Some((24, false, 0, false))
    );
}

/// With the first write at the device, the next ones wait on the plug; its
/// completion releases the first waiting bio, and the one behind it merges
/// into the new request when it is set up. Other zones, and reads, are not held.
#[test]
fn one_write_in_flight_per_zone() {
    let mut q = zoned_queue(0);
    let mut d = Disk::ncq(32);
    assert!(matches!(
        q.submit_bio_direct(Ns(0), write(64, 8, 1), &mut d),
        Submitted::Issued(_)
    ));
    assert_eq!(
        q.submit_bio_direct(Ns(0), write(72, 8, 2), &mut d),
        Submitted::ZonePlugged
    );
    assert_eq!(
        q.submit_bio_direct(Ns(0), write(80, 8, 3), &mut d),
        Submitted::ZonePlugged
    );
    assert!(matches!(
        q.submit_bio_direct(Ns(0), write(128, 8, 4), &mut d),
        Submitted::Issued(_)
    ));
    assert!(matches!(
        q.submit_bio_direct(Ns(0), bio(Op::Read, 64, 8, 5), &mut d),
        Submitted::Issued(_)
    ));
    // Conventional zones are not plugged: two writes at once.
    assert!(matches!(
        q.submit_bio_direct(Ns(0), write(8, 8, 6), &mut d),
        Submitted::Issued(_)
    ));
    assert!(matches!(
        q.submit_bio_direct(Ns(0), write(0, 8, 7), &mut d),
        Submitted::Issued(_)
    ));
    drain(&mut q, &mut d, Ns(0));
    assert_eq!(
        log(&d),
        [
            (Op::Write, 64, 8),
            (Op::Write, 128, 8),
            (Op::Read, 64, 8),
            (Op::Write, 8, 8),
            (Op::Write, 0, 8),
            // At 200 us, when 64+8 completed: 72 released, 80 merged into it.
            (Op::Write, 72, 16),
        ]
    );
    assert_eq!(d.log[5].t, Ns(200_000));
    assert_eq!(q.zone_wplugs().unwrap().stats().works, 1);
}

/// A write the device fails: the bios waiting behind it fail too, and later
/// writes fail at once until a zone report gives the write pointer back.
#[test]
fn device_error_then_recovery_by_zone_report() {
    let mut q = zoned_queue(2);
    let mut d = Disk::ncq(32);
    // Zone 1 is empty but the host writes at 100: there is no plug yet, so the
    // block layer takes the write as at the write pointer; the device refuses it.
    let Submitted::Issued(id) = q.submit_bio_direct(Ns(0), write(100, 4, 1), &mut d) else {
        panic!("issued");
    };
    assert_eq!(
        q.submit_bio_direct(Ns(0), write(104, 4, 2), &mut d),
        Submitted::ZonePlugged
    );
    q.complete_status(Ns(10), id, false);
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    q.take_completed(&mut done);
    q.take_failed(&mut failed);
    assert_eq!(done, [1, 2]);
    assert_eq!(failed, [1, 2]);
    assert_eq!(
        q.zone_wplugs().unwrap().plug_state(1),
        Some((40, false, 0, true))
    );
    assert_eq!(
        q.submit_bio_direct(Ns(20), write(64, 4, 3), &mut d),
        Submitted::Failed
    );
    // The zone report says: empty.
    q.report_zones(&report(&[0, 64, 128, 192]));
    assert_eq!(q.zone_wplugs().unwrap().plug_state(1), None);
    assert!(matches!(
        q.submit_bio_direct(Ns(30), write(64, 4, 4), &mut d),
        Submitted::Issued(_)
    ));
}

/// Zone boundaries: a write across one is split there; a reset of a
/// conventional zone fails before the device; a zone reset completion
/// rewinds the plug and fails what waited.
#[test]
fn boundaries_conventional_reset_and_reset_aborts() {
    let mut q = zoned_queue(2);
    let mut d = Disk::ncq(32);
    assert_eq!(
        q.submit_bio_direct(Ns(0), write(120, 16, 1), &mut d),
        Submitted::Split(2)
    );
    assert_eq!(log(&d), [(Op::Write, 120, 8), (Op::Write, 128, 8)]);
    assert_eq!(
        q.submit_bio_direct(Ns(0), bio(Op::ZoneReset, 8, 0, 2), &mut d),
        Submitted::Failed
    );
    assert_eq!(
        q.submit_bio_direct(Ns(0), write(136, 8, 3), &mut d),
        Submitted::ZonePlugged
    );
    let reset = q.submit_bio_direct(Ns(0), bio(Op::ZoneReset, 128, 0, 4), &mut d);
    assert!(matches!(reset, Submitted::Issued(_)));
    drain(&mut q, &mut d, Ns(0));
    let mut failed = Vec::new();
    q.take_failed(&mut failed);
    // At 200 us the device completes 120+8, 128+8 (whose end schedules the
    // plug work for 136+8) and the reset, whose end rewinds zone 2 and fails
    // 136+8 before the work runs; the work then finds nothing.
    assert_eq!(failed, [2, 3]);
    assert_eq!(
        log(&d),
        [
            (Op::Write, 120, 8),
            (Op::Write, 128, 8),
            (Op::ZoneReset, 128, 0)
        ]
    );
    let z = q.zone_wplugs().unwrap();
    assert_eq!(z.plug_state(2), Some((0, false, 0, false)));
    // Zone 1, written to its end by 120+8, lost its plug and is cached full.
    assert_eq!(z.plug_state(1), None);
    assert_eq!(z.cached_cond(1), ZoneCond::Full);
}
