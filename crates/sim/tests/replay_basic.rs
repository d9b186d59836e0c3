//! Conformance-trace replay with the `none` scheduler: format, defaults, errors.

use sim::replay::{replay_to_string, ReplayError};

fn run(t: &str) -> Result<String, ReplayError> {
    replay_to_string(t, "t.jsonl")
}

fn err(t: &str) -> String {
    run(t).unwrap_err().to_string()
}

const H: &str = r#"{"sched":"none","tunables":{}}"#;

#[test]
fn none_serves_cpus_round_robin() {
    let t = format!(
        "{H}\n\
{{\"t\":0,\"op\":\"insert\",\"id\":1,\"sector\":2048,\"sectors\":8,\"dir\":\"read\",\"class\":\"be\",\"at_head\":false}}\n\
{{\"t\":10,\"op\":\"insert\",\"id\":2,\"sector\":8,\"sectors\":8,\"dir\":\"write\",\"class\":\"none\",\"at_head\":false}}\n\
{{\"t\":20,\"op\":\"insert\",\"id\":3,\"sector\":100,\"sectors\":8,\"dir\":\"read\",\"class\":\"rt\",\"at_head\":false,\"cpu\":1}}\n\
{{\"t\":1000000,\"op\":\"dispatch\"}}\n\
{{\"t\":1000001,\"op\":\"dispatch\"}}\n\
{{\"t\":1000002,\"op\":\"dispatch\"}}\n\
{{\"t\":1000003,\"op\":\"dispatch\"}}\n\
{{\"t\":5000000,\"op\":\"complete\",\"id\":1}}\n\
{{\"t\":5000000,\"op\":\"insert\",\"id\":1,\"sector\":0,\"sectors\":8,\"dir\":\"read\",\"class\":\"be\",\"at_head\":true}}\n\
{{\"t\":5000001,\"op\":\"dispatch\"}}\n"
    );
    assert_eq!(
        run(&t).unwrap(),
        "{\"t\":1000000,\"id\":1}\n{\"t\":1000001,\"id\":3}\n{\"t\":1000002,\"id\":2}\n\
{\"t\":1000003,\"id\":null}\n{\"t\":5000001,\"id\":1}\n"
    );
}

#[test]
fn blank_lines_and_optional_fields() {
    let t = format!(
        "{H}\n\n{{\"t\":0,\"jiffies\":4294967000,\"op\":\"insert\",\"id\":7,\"sector\":0,\"sectors\":8,\"dir\":\"write\",\"class\":\"idle\",\"level\":7,\"pid\":42,\"cgroup\":\"/a/b\",\"flags\":[\"sync\",\"fua\",\"meta\"]}}\n\
{{\"t\":0,\"op\":\"dispatch\"}}\n{{\"t\":9,\"op\":\"complete\",\"id\":7,\"latency_ns\":3}}\n"
    );
    assert_eq!(run(&t).unwrap(), "{\"t\":0,\"id\":7}\n");
}

#[test]
fn header_errors() {
    assert_eq!(err(""), "t.jsonl:1: empty trace: no header line");
    assert!(err("{\"sched\":\"cfq\"}").starts_with("t.jsonl:1: unknown scheduler 'cfq'"));
    assert!(err("{\"sched\":\"none\",\"bogus\":1}").contains("unknown field 'bogus' in header"));
    assert!(err("{\"sched\":\"none\",\"tunables\":{\"fifo_batch\":1}}")
        .contains("has no tunable 'fifo_batch'"));
    assert!(err("{\"t\":0,\"op\":\"dispatch\"}").contains("first line must be the header"));
    assert!(err("{\"sched\":\"none\",\"hz\":0}").contains("'hz' must be positive"));
}

#[test]
fn op_errors_name_the_line() {
    let ins = |id: u32, t: u32| {
        format!("{{\"t\":{t},\"op\":\"insert\",\"id\":{id},\"sector\":0,\"sectors\":8,\"dir\":\"read\",\"class\":\"be\",\"at_head\":false}}")
    };
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{H}\n{}\n{{\"t\":0,\"op\":\"flush\"}}", ins(1, 0)),
            "t.jsonl:3: unknown op 'flush'",
        ),
        (
            format!("{H}\n{{\"t\":0,\"op\":\"dispatch\",\"x\":1}}"),
            "t.jsonl:2: unknown field 'x' in dispatch op",
        ),
        (
            format!("{H}\n{}\n{}", ins(1, 5), ins(2, 4)),
            "t.jsonl:3: time goes backwards",
        ),
        (
            format!("{H}\n{}\n{}", ins(1, 0), ins(1, 1)),
            "t.jsonl:3: duplicate id 1",
        ),
        (
            format!(
                "{H}\n{}\n{{\"t\":1,\"op\":\"complete\",\"id\":1}}",
                ins(1, 0)
            ),
            "t.jsonl:3: complete of id 1, which was not dispatched",
        ),
        (
            format!("{H}\n{{\"t\":1,\"op\":\"complete\",\"id\":9}}"),
            "t.jsonl:2: complete of unknown id 9",
        ),
        (
            format!("{H}\n{{{{\"t\":1,\"op\":\"dispatch\""),
            "t.jsonl:2: malformed JSON",
        ),
        (
            format!("{H}\n{}", ins(1, 0).replace("\"be\"", "\"gold\"")),
            "t.jsonl:2: unknown class 'gold'",
        ),
        (
            format!("{H}\n{}", ins(1, 0).replace("\"read\"", "\"trim\"")),
            "t.jsonl:2: unknown dir 'trim'",
        ),
        (
            format!("{H}\n{}", ins(1, 0).replace("\"sectors\":8,", "")),
            "t.jsonl:2: insert op is missing field 'sectors'",
        ),
        (
            format!(
                "{H}\n{}",
                ins(1, 0).replace("\"at_head\":false", "\"cpu\":8")
            ),
            "t.jsonl:2: cpu 8 out of range",
        ),
        (
            format!(
                "{H}\n{}",
                ins(1, 0).replace("\"at_head\":false", "\"flags\":[\"nomerge\"]")
            ),
            "t.jsonl:2: unknown flag",
        ),
        (
            format!("{H}\n{{\"op\":\"dispatch\"}}"),
            "t.jsonl:2: dispatch op is missing field 't'",
        ),
        (
            format!("{H}\n{{\"t\":-1,\"op\":\"dispatch\"}}"),
            "t.jsonl:2: field 't' must be a non-negative integer",
        ),
        (format!("{H}\n{H}"), "t.jsonl:2: a second header line"),
    ];
    for (t, want) in cases {
        let e = err(&t);
        assert!(e.starts_with(want), "got '{e}', want '{want}'");
    }
}

#[test]
fn nr_requests_bounds_live_requests() {
    let mut t = String::from("{\"sched\":\"none\",\"nr_requests\":2}\n");
    for id in 1..=3 {
        t.push_str(&format!("{{\"t\":0,\"op\":\"insert\",\"id\":{id},\"sector\":0,\"sectors\":8,\"dir\":\"read\"}}\n"));
    }
    assert!(err(&t).starts_with("t.jsonl:4: insert of id 3 exceeds nr_requests (2"));
}

#[test]
fn ids_are_reusable_after_completion() {
    let t = format!(
        "{H}\n{{\"t\":0,\"op\":\"insert\",\"id\":1,\"sector\":0,\"sectors\":8,\"dir\":\"read\"}}\n\
{{\"t\":1,\"op\":\"dispatch\"}}\n{{\"t\":2,\"op\":\"complete\",\"id\":1}}\n\
{{\"t\":3,\"op\":\"insert\",\"id\":1,\"sector\":8,\"sectors\":8,\"dir\":\"read\"}}\n\
{{\"t\":4,\"op\":\"dispatch\"}}\n{{\"t\":5,\"op\":\"complete\",\"id\":1}}\n{{\"t\":6,\"op\":\"complete\",\"id\":1}}\n"
    );
    assert!(err(&t).starts_with("t.jsonl:8: complete of unknown id 1"));
}

#[test]
fn jiffies_may_wrap_but_not_jump_half_the_clock() {
    let trace = |j1: u64, j2: u64| {
        format!(
            "{{\"sched\":\"mq-deadline\",\"tunables\":{{}}}}\n\
             {{\"t\":0,\"jiffies\":{j1},\"op\":\"insert\",\"id\":1,\"sector\":2048,\"sectors\":8,\"dir\":\"read\",\"class\":\"be\",\"at_head\":false}}\n\
             {{\"t\":4000000,\"jiffies\":{j2},\"op\":\"dispatch\"}}\n"
        )
    };
    // The kernel starts jiffies just below the wrap: a wrap is an ordinary tick.
    let out = sim::replay::replay_str(&trace(u64::MAX, 0), "wrap.jsonl").unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].id, Some(1));
    let e = sim::replay::replay_str(&trace(100, 100 + (1 << 63)), "jump.jsonl").unwrap_err();
    assert!(e.to_string().contains("jump.jsonl:3: jiffies"), "{e}");
}
