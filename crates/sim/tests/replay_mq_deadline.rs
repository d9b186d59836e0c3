//! Hand-worked mq-deadline conformance traces (v6.19 semantics, HZ 1000 by default):
//! each expected output is derived step by step in the comments.

use sim::replay::replay_to_string;

fn ins(t: u64, id: u32, sector: u64, dir: &str, class: &str, at_head: bool) -> String {
    format!(
        "{{\"t\":{t},\"op\":\"insert\",\"id\":{id},\"sector\":{sector},\"sectors\":8,\"dir\":\"{dir}\",\"class\":\"{class}\",\"at_head\":{at_head}}}\n"
    )
}

fn disp(t: u64) -> String {
    format!("{{\"t\":{t},\"op\":\"dispatch\"}}\n")
}

fn done(t: u64, id: u32) -> String {
    format!("{{\"t\":{t},\"op\":\"complete\",\"id\":{id}}}\n")
}

/// The dispatched ids, `None` for null.
fn ids(trace: &str) -> Vec<Option<u64>> {
    replay_to_string(trace, "t.jsonl")
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_u64()
        })
        .collect()
}

const MS: u64 = 1_000_000;

#[test]
fn sorted_batch_then_expired_fifo_head() {
    let mut t = String::from("{\"sched\":\"mq-deadline\",\"tunables\":{\"fifo_batch\":2}}\n");
    // t=0 (jiffies 0): three reads; deadlines 0 + 500 jiffies.
    t += &ins(0, 1, 300, "read", "be", false);
    t += &ins(0, 2, 100, "read", "be", false);
    t += &ins(0, 3, 200, "read", "be", false);
    // New batch: READ (no writes); head 1 not expired; lowest sector >= 0 is 2.
    t += &disp(MS);
    // Batch continues (1 < 2): lowest sector >= 100 is 3.
    t += &disp(2 * MS);
    // A read at 250, ahead of the cursor (200); deadline 503.
    t += &ins(3 * MS, 4, 250, "read", "be", false);
    // jiffies 600: batch full (2), new READ batch; FIFO head 1 (deadline 500) expired:
    // 1 wins over the sorted next request 4.
    t += &disp(600 * MS);
    // Cursor 300: nothing at or above it; new batch; head 4 (deadline 503) expired.
    t += &disp(601 * MS);
    // Empty.
    t += &disp(602 * MS);
    assert_eq!(ids(&t), vec![Some(2), Some(3), Some(1), Some(4), None]);
}

#[test]
fn at_head_inserts_leave_first_newest_first() {
    let mut t = String::from("{\"sched\":\"mq-deadline\",\"tunables\":{}}\n");
    t += &ins(0, 1, 100, "read", "be", false);
    t += &ins(0, 2, 500, "write", "be", true);
    t += &ins(0, 3, 50, "read", "idle", true);
    t += &disp(MS);
    t += &disp(MS);
    t += &disp(MS);
    // The single v6.19 dispatch list, each head insert at its front: 3, 2; then 1.
    assert_eq!(ids(&t), vec![Some(3), Some(2), Some(1)]);
}

#[test]
fn rt_before_be_before_idle_and_in_flight_gates_lower_levels() {
    let mut t = String::from("{\"sched\":\"mq-deadline\",\"tunables\":{}}\n");
    t += &ins(0, 1, 100, "read", "be", false);
    t += &ins(0, 2, 900, "read", "rt", false);
    t += &ins(0, 3, 10, "read", "idle", false);
    // Aged pass: nothing is 10 s old. Normal pass: RT first → 2.
    t += &disp(MS);
    // RT has a request in flight (queued = inserted − completed = 1): BE and IDLE wait.
    t += &disp(2 * MS);
    t += &done(3 * MS, 2);
    // RT idle now: BE → 1.
    t += &disp(4 * MS);
    // 1 in flight gates IDLE.
    t += &disp(5 * MS);
    t += &done(6 * MS, 1);
    t += &disp(7 * MS);
    assert_eq!(ids(&t), vec![Some(2), None, Some(1), None, Some(3)]);
}

#[test]
fn writes_starved_counts_read_batches() {
    let mut t = String::from("{\"sched\":\"mq-deadline\",\"tunables\":{\"fifo_batch\":1}}\n");
    t += &ins(0, 1, 100, "read", "be", false);
    t += &ins(0, 2, 200, "read", "be", false);
    t += &ins(0, 3, 300, "read", "be", false);
    t += &ins(0, 4, 1000, "write", "be", false);
    t += &ins(0, 5, 2000, "write", "be", false);
    for _ in 0..5 {
        t += &disp(MS);
    }
    // last_dir starts as WRITE with batching 0: the first call continues that "batch"
    // (4). Then starved 0 → READ (1), starved 1 → READ (2), starved 2 ≥ 2 → WRITE (5),
    // then only reads are left (3).
    assert_eq!(ids(&t), vec![Some(4), Some(1), Some(2), Some(5), Some(3)]);
}

#[test]
fn explicit_jiffies_win_over_t() {
    // Like the expiry case at HZ 250 (read_expire 500 ms = 125 jiffies): t alone
    // would give 150 jiffies at the third dispatch and expire head 1, but the
    // explicit jiffies (near the wrap) say only 100 passed, so the sorted order goes
    // on (4 at 250 is the next at or above 200).
    let j0 = u64::MAX - 100;
    let mut t =
        String::from("{\"sched\":\"mq-deadline\",\"tunables\":{\"fifo_batch\":2},\"hz\":250}\n");
    for (id, s) in [(1, 300), (2, 100), (3, 200)] {
        t += &format!(
            "{{\"t\":0,\"jiffies\":{j0},\"op\":\"insert\",\"id\":{id},\"sector\":{s},\"sectors\":8,\"dir\":\"read\",\"class\":\"be\"}}\n"
        );
    }
    t += &format!("{{\"t\":1,\"jiffies\":{j0},\"op\":\"dispatch\"}}\n");
    t += &format!("{{\"t\":2,\"jiffies\":{j0},\"op\":\"dispatch\"}}\n");
    t += &format!(
        "{{\"t\":3,\"jiffies\":{j0},\"op\":\"insert\",\"id\":4,\"sector\":250,\"sectors\":8,\"dir\":\"read\",\"class\":\"be\"}}\n"
    );
    let j = j0.wrapping_add(100);
    t += &format!("{{\"t\":600000000,\"jiffies\":{j},\"op\":\"dispatch\"}}\n");
    assert_eq!(ids(&t), vec![Some(2), Some(3), Some(4)]);
}

#[test]
fn bad_tunable_value_is_an_error_on_line_1() {
    let e = replay_to_string(
        "{\"sched\":\"mq-deadline\",\"tunables\":{\"fifo_batch\":\"x\"}}\n",
        "t.jsonl",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("t.jsonl:1: invalid value 'x'"), "{e}");
}
