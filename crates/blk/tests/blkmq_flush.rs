//! The flush machinery: decomposition, flush merging, insertion position (seed 2),
//! and durability across a power cut.

mod common;
use blk::mq::{FlushInsert, Submitted};
use blk::{Ns, Op, ReqFlags};
use common::*;

fn fua_write(sector: u64, owner: u64) -> blk::Bio {
    let mut b = write(sector, 8, owner);
    b.flags = b.flags.with(ReqFlags::FUA);
    b
}

fn preflush_write(sector: u64, fua: bool, owner: u64) -> blk::Bio {
    let mut b = write(sector, 8, owner);
    b.flags = b.flags.with(ReqFlags::PREFLUSH);
    if fua {
        b.flags = b.flags.with(ReqFlags::FUA);
    }
    b
}

/// Run one bio alone and return the device's command sequence as (op, fua).
fn sequence(write_cache: bool, fua: bool, b: blk::Bio) -> Vec<(Op, bool)> {
    let mut q = none_queue(cfg(32, write_cache, fua, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    d.write_cache = write_cache;
    q.submit_bio_direct(Ns(0), b, &mut d);
    let mut done = vec![];
    run_until(&mut q, &mut d, Ns(1_000_000_000), |_, _, _, o| done.push(o));
    assert_eq!(done, vec![b.owner], "the bio completes exactly once");
    assert_eq!(q.live_requests(), 0);
    d.log.iter().map(|c| (c.op, c.fua)).collect()
}

#[test]
fn decomposition_follows_write_cache_and_fua() {
    use Op::{Flush as F, Write as W};
    // No volatile cache: flags stripped, no flush ever.
    assert_eq!(sequence(false, false, fsync(1)), vec![]);
    assert_eq!(sequence(false, false, fua_write(0, 1)), vec![(W, false)]);
    assert_eq!(
        sequence(false, false, preflush_write(0, true, 1)),
        vec![(W, false)]
    );
    // Write cache with native FUA.
    assert_eq!(sequence(true, true, fsync(1)), vec![(F, false)]);
    assert_eq!(sequence(true, true, fua_write(0, 1)), vec![(W, true)]);
    assert_eq!(
        sequence(true, true, preflush_write(0, true, 1)),
        vec![(F, false), (W, true)]
    );
    // Write cache, FUA emulated by a post-flush.
    assert_eq!(
        sequence(true, false, fua_write(0, 1)),
        vec![(W, false), (F, false)]
    );
    assert_eq!(
        sequence(true, false, preflush_write(0, false, 1)),
        vec![(F, false), (W, false)]
    );
    assert_eq!(
        sequence(true, false, preflush_write(0, true, 1)),
        vec![(F, false), (W, false), (F, false)]
    );
}

#[test]
fn empty_flush_on_a_device_without_cache_completes_at_once() {
    let mut q = none_queue(cfg(32, false, false, FlushInsert::Head));
    assert_eq!(q.submit_bio(Ns(5), fsync(9)), Submitted::Completed);
    let mut out = vec![];
    q.take_completed(&mut out);
    assert_eq!(out, vec![9]);
}

#[test]
fn pending_flushes_merge_into_one_in_flight_flush() {
    let mut q = none_queue(cfg(32, true, true, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    for i in 0..10 {
        assert!(matches!(
            q.submit_bio_direct(Ns(0), fsync(i), &mut d),
            Submitted::Flush(_)
        ));
    }
    // The first fsync's flush is issued at once (blk_kick_flush toggles the lists
    // immediately); the nine arriving with it share the second flush.
    let mut n = 0;
    let mut later = false;
    run_until(&mut q, &mut d, Ns(1_000_000_000), |q, d, now, _| {
        n += 1;
        // Requests arriving while a flush runs need the next one: two more arrive
        // when the first fsync completes (the second flush is already running).
        if !later {
            later = true;
            q.submit_bio_direct(now, fsync(100), d);
            q.submit_bio_direct(now, fsync(101), d);
        }
    });
    assert_eq!(n, 12);
    assert_eq!(d.flushes(), 3);
    let st = q.disk_stats(Ns(0));
    assert_eq!(st.flush_ios, 3);
    // Each empty PREFLUSH write is accounted as a write with no sectors.
    assert_eq!((st.ios[1], st.sectors[1]), (12, 0));
}

#[test]
fn one_flush_in_flight_while_more_arrive() {
    let mut q = none_queue(cfg(32, true, true, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    q.submit_bio_direct(Ns(0), fsync(0), &mut d);
    q.run(Ns(0), &mut d);
    assert_eq!(d.flushes(), 1);
    // While the flush runs, new fsyncs wait on the other list.
    for i in 1..5 {
        q.submit_bio_direct(Ns(10), fsync(i), &mut d);
        q.run(Ns(10), &mut d);
    }
    assert_eq!(d.flushes(), 1);
    run_until(&mut q, &mut d, Ns(1_000_000_000), |_, _, _, _| {});
    assert_eq!(d.flushes(), 2);
}

#[test]
fn flush_request_goes_to_the_head_of_dispatch() {
    // A busy NCQ disk refuses the flush: it waits at the head of hctx->dispatch and
    // no other request is pulled past it until in-flight commands complete.
    for (pos, expect_flush_before_writes) in [(FlushInsert::Head, true), (FlushInsert::Tail, false)]
    {
        let mut q = none_queue(cfg(32, true, true, FlushInsert::Head));
        let mut q_pos = none_queue(cfg(32, true, true, pos));
        std::mem::swap(&mut q, &mut q_pos);
        let mut d = Disk::ncq(32);
        d.depth = 1;
        q.submit_bio_direct(Ns(0), write(0, 8, 0), &mut d);
        q.submit_bio_direct(Ns(0), write(1000, 8, 1), &mut d);
        q.submit_bio_direct(Ns(0), fsync(2), &mut d);
        run_until(&mut q, &mut d, Ns(1_000_000_000), |_, _, _, _| {});
        let ops: Vec<Op> = d.log.iter().map(|c| c.op).collect();
        let flush_at = ops.iter().position(|o| *o == Op::Flush).unwrap();
        assert_eq!(
            flush_at == 1,
            expect_flush_before_writes,
            "{pos:?}: {ops:?}"
        );
    }
}

/// blktests block/004 on a fake NCQ disk: `numjobs` psync writers, each doing
/// `ios` random 4 KiB writes each followed by an fsync (an empty PREFLUSH), as
/// fio `--direct=1 --fsync=1` does. Returns (runtime, device flushes).
fn block004(insert: FlushInsert, numjobs: u64, ios: u64) -> (Ns, usize) {
    let mut q = none_queue(cfg(32, true, true, insert));
    let mut d = Disk::ncq(32);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next_sector = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % (1 << 24)) * 8
    };
    // Owner: job << 32 | 2 * io (+1 for its fsync).
    for j in 0..numjobs {
        let s = next_sector();
        q.submit_bio_direct(Ns(0), write(s, 8, j << 32), &mut d);
    }
    let end = run_until(&mut q, &mut d, Ns(3_600_000_000_000), |q, d, now, o| {
        let (j, step) = (o >> 32, o & 0xFFFF_FFFF);
        let next = step + 1;
        if next == 2 * ios {
            return;
        }
        if next % 2 == 1 {
            q.submit_bio_direct(now, fsync((j << 32) | next), d);
        } else {
            let s = next_sector();
            q.submit_bio_direct(now, write(s, 8, (j << 32) | next), d);
        }
    });
    assert_eq!(q.live_requests(), 0);
    (end, d.flushes())
}

#[test]
fn seed2_head_insertion_merges_more_flushes_on_ncq() {
    let (t_head, f_head) = block004(FlushInsert::Head, 64, 256);
    let (t_tail, f_tail) = block004(FlushInsert::Tail, 64, 256);
    println!("| flush_insert | runtime (ms) | device flushes | writes per flush |");
    println!("| --- | --- | --- | --- |");
    for (name, t, f) in [("head", t_head, f_head), ("tail", t_tail, f_tail)] {
        println!(
            "| {name} | {:.1} | {f} | {:.2} |",
            t.0 as f64 / 1e6,
            (64 * 256) as f64 / f as f64
        );
    }
    assert!(f_head <= f_tail, "head {f_head} flushes, tail {f_tail}");
    assert!(t_head <= t_tail, "head {t_head}, tail {t_tail}");
}
