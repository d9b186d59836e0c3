//! Hand-worked mq-deadline scenarios (HZ = 250: read_expire 125 jiffies, write_expire
//! 1250, prio_aging_expire 2500). Each expected order is derived step by step from
//! `__dd_dispatch_request` / `dd_dispatch_request` of v6.19 in the comments.

mod mq_deadline_harness;

use blk::elevator::Elevator;
use blk::types::{Dir, IoClass, Jiffies};
use mq_deadline_harness::H;

#[test]
fn first_dispatch_continues_the_initial_write_direction_then_batches_end_at_fifo_batch() {
    let mut h = H::new();
    h.set("fifo_batch", "2");
    h.set("writes_starved", "1");
    for s in [100, 200, 300, 400, 500] {
        h.r(s);
    }
    for s in [1000, 1100, 1200] {
        h.w(s);
    }
    // last_dir starts as WRITE with batching 0, so W1000 and W1100 continue a "batch".
    // Then batching == fifo_batch: reads chosen (starved 0 -> 1, 0 < 1), R100, R200.
    // Next batch: starved 1 >= 1 -> WRITE (starved reset), next at/above 1100 is W1200.
    // W cursor has nothing above 1200: new batch, only reads left -> R300 R400, R500.
    assert_eq!(h.run(8), vec![1000, 1100, 100, 200, 1200, 300, 400, 500]);
    assert!(!h.has_work());
}

#[test]
fn writes_starved_two_read_batches_then_a_write_batch() {
    let mut h = H::new();
    h.set("fifo_batch", "1");
    for s in [100, 200, 300, 400, 500, 600] {
        h.r(s);
    }
    for s in [1000, 1100, 1200] {
        h.w(s);
    }
    let mut got = Vec::new();
    let mut starved = Vec::new();
    for _ in 0..9 {
        got.extend(h.run(1));
        starved.push(h.dbg("starved"));
    }
    // d1 continues the initial write direction (batching 0 < 1). Afterwards every
    // dispatch is a new batch: READ (starved 0->1), READ (1->2), WRITE (2>=2, reset),
    // READ, READ, WRITE; once writes are gone starved no longer moves.
    assert_eq!(got, vec![1000, 100, 200, 1100, 300, 400, 1200, 500, 600]);
    assert_eq!(starved, ["0", "1", "2", "0", "1", "2", "0", "0", "0"]);
}

#[test]
fn negative_writes_starved_is_compared_unsigned() {
    // `dd->starved++ >= dd->writes_starved` compares an unsigned int with an int: -1
    // becomes UINT_MAX, so writes wait until no read is queued.
    let mut h = H::new();
    h.set("fifo_batch", "1");
    h.set("writes_starved", "-1");
    h.w(0); // dispatched first by the initial write direction
    for s in [100, 200, 300] {
        h.r(s);
    }
    h.w(1000);
    assert_eq!(h.drain(), vec![0, 100, 200, 300, 1000]);
}

fn expiry_setup(h: &mut H) {
    h.set("fifo_batch", "2");
    h.at(0).r(5000);
    h.at(10);
    for s in [100, 200, 300, 400] {
        h.r(s);
    }
    // Batch of two in sector order: R5000's deadline (125) has not passed.
    assert_eq!(h.run(2), vec![100, 200]);
}

#[test]
fn expired_read_overtakes_sector_order_at_the_deadline_tick() {
    let mut h = H::new();
    expiry_setup(&mut h);
    // j = 125 >= fifo_time 125 (non-strict): the new batch starts at the FIFO head.
    // After R5000 nothing lies at/above 5000: new batch from the FIFO head R300.
    h.at(125);
    assert_eq!(h.run(3), vec![5000, 300, 400]);
}

#[test]
fn read_not_yet_expired_one_tick_before() {
    let mut h = H::new();
    expiry_setup(&mut h);
    h.at(124);
    assert_eq!(h.run(3), vec![300, 400, 5000]);
}

fn wrap_setup(h: &mut H) {
    h.r(500);
    assert_eq!(h.run(1), vec![500]); // latest_pos[BE][READ] = 500
    h.r(300);
    h.r(100);
}

#[test]
fn mainline_wraps_to_the_fifo_head() {
    let mut h = H::new();
    wrap_setup(&mut h);
    assert_eq!(h.dd.get_tunable("variant").unwrap(), "mainline");
    assert_eq!(h.drain(), vec![300, 100]);
}

#[test]
fn head_request_variant_wraps_to_the_lowest_sector() {
    let mut h = H::new();
    h.set("variant", "head-request");
    wrap_setup(&mut h);
    assert_eq!(h.drain(), vec![100, 300]);
}

#[test]
fn head_request_variant_still_honours_an_expired_fifo_head() {
    let mut h = H::new();
    h.set("variant", "head-request");
    wrap_setup(&mut h);
    h.at(125); // both expired: FIFO head R300 first
    assert_eq!(h.drain(), vec![300, 100]);
}

#[test]
fn at_head_inserts_go_first_most_recent_first_and_move_the_cursor() {
    let mut h = H::new();
    h.r(200);
    h.r(100);
    h.ins_head(900, Dir::Read, IoClass::Be);
    h.ins_head(800, Dir::Read, IoClass::Be);
    // Head list: 800 then 900. dd_start_request moves latest_pos[BE][READ] to 800,
    // then 900; nothing lies at/above 900, so the FIFO head R200 starts the batch, then
    // nothing lies at/above 200: FIFO head R100.
    assert_eq!(h.drain(), vec![800, 900, 200, 100]);
    assert_eq!(h.dbg("dispatched"), "0 4 0");
}

#[test]
fn at_head_ignores_priority() {
    let mut h = H::new();
    h.ins(300, 8, Dir::Read, IoClass::Rt);
    h.ins_head(900, Dir::Write, IoClass::Idle);
    let first = h.dispatch().unwrap();
    assert_eq!(h.sector(first), 900);
    assert_eq!(h.dbg("dispatch"), "");
}

#[test]
fn rt_before_be_before_idle() {
    let mut h = H::new();
    h.ins(100, 8, Dir::Read, IoClass::Idle);
    h.ins(200, 8, Dir::Read, IoClass::Be);
    h.ins(300, 8, Dir::Read, IoClass::Rt);
    h.ins(400, 8, Dir::Read, IoClass::None); // class NONE is BE
    assert_eq!(h.dbg("queued"), "1 2 1");
    assert_eq!(h.drain(), vec![300, 200, 400, 100]);
}

#[test]
fn rt_in_flight_holds_back_be_until_completed() {
    let mut h = H::new();
    h.ins(300, 8, Dir::Read, IoClass::Rt);
    h.ins(200, 8, Dir::Read, IoClass::Be);
    let rt = h.dispatch().unwrap();
    assert_eq!(h.sector(rt), 300);
    // RT queued = inserted - completed = 1 (in the driver): BE is not consulted.
    assert!(h.has_work());
    assert_eq!(h.dispatch(), None);
    assert_eq!(h.dbg("owned_by_driver"), "1 0 0");
    h.at(100);
    assert_eq!(h.dispatch(), None);
    h.complete(rt);
    assert_eq!(h.run(1), vec![200]);
}

#[test]
fn aging_lets_an_old_be_request_out_despite_rt() {
    let mut h = H::new();
    h.at(0).r(200);
    h.at(2500);
    h.ins(300, 8, Dir::Read, IoClass::Rt);
    h.ins(310, 8, Dir::Read, IoClass::Rt);
    // Two levels busy; BE's candidate arrived at 0, not after now - 2500 = 0.
    assert_eq!(h.run(3), vec![200, 300, 310]);
}

#[test]
fn one_tick_too_young_for_aging() {
    let mut h = H::new();
    h.at(0).r(200);
    h.at(2499);
    h.ins(300, 8, Dir::Read, IoClass::Rt);
    h.ins(310, 8, Dir::Read, IoClass::Rt);
    let a = h.dispatch().unwrap();
    let b = h.dispatch().unwrap();
    assert_eq!((h.sector(a), h.sector(b)), (300, 310));
    // BE is held back while the RT requests are in flight...
    assert_eq!(h.dispatch(), None);
    // ...and one tick later the aged pass lets it out anyway.
    h.at(2500);
    assert_eq!(h.run(1), vec![200]);
    h.complete(a);
    h.complete(b);
}

#[test]
fn aged_pass_side_effects_reset_the_batch() {
    // With RT and BE busy, every dispatch first runs __dd_dispatch_request on BE
    // with the aged threshold. From the second dispatch on, BE's last_dir batch cannot
    // continue, so it starts a new one (setting last_dir = WRITE and batching = 0)
    // before started_after refuses the candidate. RT therefore never continues a
    // batch: each RT dispatch starts a new one (batching == 1).
    let mut h = H::new();
    h.set("fifo_batch", "2");
    h.at(0).w(50); // BE write
    for s in [100, 200, 300] {
        h.ins(s, 8, Dir::Read, IoClass::Rt);
    }
    let mut got = Vec::new();
    for _ in 0..3 {
        let id = h.dispatch().unwrap();
        got.push(h.sector(id));
        assert_eq!(h.dbg("batching"), "1");
        h.complete(id);
    }
    assert_eq!(got, vec![100, 200, 300]);
    assert_eq!(h.drain(), vec![50]);
}

#[test]
fn started_after_holds_back_requests_after_read_expire_is_lowered() {
    let mut h = H::new();
    h.at(0).r(100); // fifo_time = 125
    h.set("read_expire", "100"); // 25 jiffies: reconstructed arrival = 100
    assert!(h.has_work());
    assert_eq!(h.dispatch(), None);
    h.at(99);
    assert_eq!(h.dispatch(), None);
    h.at(100);
    assert_eq!(h.run(1), vec![100]);
}

#[test]
fn insert_merge_through_the_one_hit_cache_stops_after_one_merge() {
    let mut h = H::new();
    let b = h.at(0).r(8); // 8..16, becomes last_merge
    let x = h.at(1).r(1000);
    let a = h.at(2).r(0); // 0..8: nothing ends at 0, no merge
    assert_eq!(h.dbg("read1_fifo_list"), format!("{} {} {}", b.0, x.0, a.0));
    // C = 16..24: last_merge B ends at 16 -> appended to B, and the one-hit cache
    // path stops there (no chain walk).
    let c = h.at(3).r(16);
    assert_eq!(h.merged_away, vec![c]);
    assert_eq!(h.rqs.get(b).nr_sectors, 16);
    // A and B stay apart: insert merges only append the new request.
    assert_eq!(h.dbg("read1_fifo_list"), format!("{} {} {}", b.0, x.0, a.0));
    assert_eq!(h.dbg("merged"), "0 1 0");
    assert_eq!(h.dbg("queued"), "0 3 0");
}

#[test]
fn insert_merge_chain_walk_through_the_hash() {
    let mut h = H::new();
    let x = h.at(0).r(1000); // last_merge
    let b = h.at(1).r(8); // 8..16
    let a = h.at(2).r(0); // 0..8
                          // C = 16..24: last_merge X does not fit; hash: B ends at 16 -> B absorbs C; then
                          // A ends at B's start -> A absorbs B. B's deadline (126) is earlier than A's (127),
                          // so A takes B's FIFO slot and deadline.
    let c = h.at(3).r(16);
    assert_eq!(h.merged_away, vec![b, c]);
    assert_eq!(h.rqs.get(a).nr_sectors, 24);
    assert_eq!(h.dbg("read1_fifo_list"), format!("{} {}", x.0, a.0));
    assert_eq!(
        h.dd.fifo_head(IoClass::Be, Dir::Read),
        Some((x, Jiffies(125)))
    );
    assert_eq!(h.dbg("inserted"), "0 4 0");
    assert_eq!(h.dbg("merged"), "0 2 0");
    assert_eq!(h.dbg("completed"), "0 2 0");
    assert_eq!(h.dbg("queued"), "0 2 0");
    assert_eq!(h.dd.stats(IoClass::Be).nr_queued, 2);
    h.at(126);
    // X (deadline 125) expired: FIFO head; then A continues the batch? No: A (0) is
    // below the cursor 1000, so a new batch starts at the FIFO head A.
    assert_eq!(h.drain(), vec![1000, 0]);
    assert_eq!(h.dbg("queued"), "0 0 0");
    assert_eq!(h.dbg("completed"), "0 4 0");
}

#[test]
fn bio_back_merge_then_merge_with_the_next_request() {
    let mut h = H::new();
    let a = h.r(0); // 0..8, last_merge
    let b = h.r(16); // 16..24
    assert!(h.bio_merge(8, 8, Dir::Read, IoClass::Be));
    // Back merge into A via the one-hit cache, then A's successor B is adjacent.
    assert_eq!(h.merged_away, vec![b]);
    assert_eq!(h.rqs.get(a).nr_sectors, 24);
    assert_eq!(h.dbg("merged"), "0 1 0");
    assert_eq!(h.dbg("completed"), "0 1 0");
    assert_eq!(h.dbg("queued"), "0 1 0");
    assert_eq!(h.merge.last_merge, Some(a));
    let id = h.dispatch().unwrap();
    assert_eq!(id, a);
    assert_eq!(h.rqs.get(id).nr_sectors, 24);
    h.complete(id);
    assert!(!h.has_work());
}

#[test]
fn front_merge_through_the_sort_tree_and_its_switch() {
    for front_merges in ["1", "0", "5", "-2"] {
        let mut h = H::new();
        h.set("front_merges", front_merges);
        h.r(1000); // last_merge: not adjacent to anything below
        let a = h.r(16); // 16..24
        let merged = h.bio_merge(8, 8, Dir::Read, IoClass::Be);
        let on = matches!(front_merges, "1" | "5");
        assert_eq!(merged, on, "front_merges={front_merges}");
        if on {
            assert_eq!(h.sector(a), 8);
            // Re-sorted under the new start sector.
            assert_eq!(h.dbg("read1_next_rq"), a.0.to_string());
            assert_eq!(h.drain(), vec![8, 1000]);
        }
    }
}

#[test]
fn front_merge_lookup_is_per_priority_level() {
    let mut h = H::new();
    h.r(1000);
    h.ins(16, 8, Dir::Read, IoClass::Rt);
    // A BE bio ending at 16 searches only BE's tree (and ioprio must match anyway).
    assert!(!h.bio_merge(8, 8, Dir::Read, IoClass::Be));
    assert!(h.bio_merge(8, 8, Dir::Read, IoClass::Rt));
}

#[test]
fn front_merge_via_last_merge_works_even_with_front_merges_off() {
    let mut h = H::new();
    h.set("front_merges", "0");
    let a = h.r(16); // last_merge
    assert!(h.bio_merge(8, 8, Dir::Read, IoClass::Be));
    assert_eq!(h.sector(a), 8);
}

#[test]
fn merged_request_inherits_the_earlier_deadline_and_fifo_slot() {
    let mut h = H::new();
    let b = h.at(0).r(116); // 116..124, deadline 125, last_merge
    let x = h.at(1).r(50); // deadline 126
    let a = h.at(50).r(100); // 100..108, deadline 175
                             // The bio 108..116 front-merges into B (one-hit cache); B's predecessor A is now
                             // adjacent, so A absorbs B and takes its deadline and FIFO slot.
    assert!(h.bio_merge(108, 8, Dir::Read, IoClass::Be));
    assert_eq!(h.merged_away, vec![b]);
    assert_eq!(h.rqs.get(a).nr_sectors, 24);
    assert_eq!(h.dbg("read1_fifo_list"), format!("{} {}", a.0, x.0));
    assert_eq!(
        h.dd.fifo_head(IoClass::Be, Dir::Read),
        Some((a, Jiffies(125)))
    );
    // At 125 the head (A) has expired and starts the batch ahead of X at sector 50.
    h.at(125);
    assert_eq!(h.drain(), vec![100, 50]);
}

#[test]
fn without_expiry_sector_order_wins_over_the_inherited_deadline() {
    let mut h = H::new();
    h.at(0).r(116);
    h.at(1).r(50);
    h.at(50).r(100);
    assert!(h.bio_merge(108, 8, Dir::Read, IoClass::Be));
    h.at(124);
    assert_eq!(h.drain(), vec![50, 100]);
}

#[test]
fn requests_that_never_went_through_insert_are_ignored_at_finish() {
    let mut h = H::new();
    let id = h.alloc(0, 8, Dir::Read, IoClass::Rt);
    h.complete(id);
    assert_eq!(h.dbg("completed"), "0 0 0");
    assert_eq!(h.dbg("queued"), "0 0 0");
}

#[test]
fn queued_counter_while_a_merged_away_request_awaits_its_free() {
    let mut h = H::new();
    h.r(0);
    let c = h.alloc(8, 8, Dir::Read, IoClass::Be);
    h.insert_no_free(&[c], false);
    // inserted 2, completed 0, one absorbed at insert not yet freed:
    // nr_queued = 2 - 0 - 1.
    assert_eq!(h.dd.stats(IoClass::Be).queued(), 2);
    assert_eq!(h.dd.stats(IoClass::Be).nr_queued, 1);
    h.free_merged();
    assert_eq!(h.dd.stats(IoClass::Be).queued(), 1);
    assert_eq!(h.dd.stats(IoClass::Be).nr_queued, 1);
}

#[test]
fn requeue_at_head_is_not_counted_twice() {
    let mut h = H::new();
    let a = h.r(100);
    let got = h.dispatch().unwrap();
    assert_eq!(got, a);
    // The driver gives it back; blk-mq re-inserts it at head.
    h.rqs.get_mut(a).started = false;
    h.insert_no_free(&[a], true);
    assert_eq!(h.dbg("inserted"), "0 1 0");
    assert_eq!(h.dispatch(), Some(a));
    assert_eq!(h.dbg("dispatched"), "0 2 0");
    h.complete(a);
    assert_eq!(h.dbg("queued"), "0 0 0");
    assert_eq!(h.dd.stats(IoClass::Be).nr_queued, 0);
}

#[test]
fn limit_depth_spares_only_sync_reads() {
    use blk::types::{Op, ReqFlags};
    let mut h = H::new();
    assert_eq!(h.dd.limit_depth(Op::Read, ReqFlags::NONE), None);
    assert_eq!(h.dd.limit_depth(Op::Write, ReqFlags::NONE), Some(256));
    assert_eq!(h.dd.limit_depth(Op::Write, ReqFlags::SYNC), Some(256));
    assert_eq!(h.dd.limit_depth(Op::Write, ReqFlags::FUA), Some(256));
    assert_eq!(h.dd.limit_depth(Op::Discard, ReqFlags::NONE), Some(256));
    h.set("async_depth", "10");
    assert_eq!(h.dd.limit_depth(Op::Write, ReqFlags::NONE), Some(10));
    assert_eq!(h.dd.limit_depth(Op::Read, ReqFlags::NONE), None);
    assert_eq!(h.dbg("async_depth"), "10");
    h.dd.depth_updated(64);
    assert_eq!(h.dd.get_tunable("async_depth").unwrap(), "64");
}
