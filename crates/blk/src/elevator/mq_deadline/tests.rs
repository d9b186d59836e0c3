use super::*;

fn dd(hz: u32) -> MqDeadline {
    MqDeadline::new(&QueueParams {
        hz,
        nr_requests: 64,
        ..QueueParams::default()
    })
}

fn get(d: &MqDeadline, name: &str) -> String {
    d.get_tunable(name).unwrap()
}

#[test]
fn defaults_as_sysfs_shows_them() {
    for hz in [100, 250, 300, 1000] {
        let d = dd(hz);
        assert_eq!(get(&d, "read_expire"), "500", "hz {hz}");
        assert_eq!(get(&d, "write_expire"), "5000");
        assert_eq!(get(&d, "prio_aging_expire"), "10000");
        assert_eq!(get(&d, "writes_starved"), "2");
        assert_eq!(get(&d, "front_merges"), "1");
        assert_eq!(get(&d, "fifo_batch"), "16");
        assert_eq!(get(&d, "async_depth"), "64");
        assert_eq!(get(&d, "variant"), "mainline");
        assert_eq!(get(&d, "insert_lists"), "0");
    }
    let d = dd(250);
    assert_eq!(d.fifo_expire, [125, 1250]);
    assert_eq!(d.prio_aging_expire, 2500);
    let names: Vec<_> = d.tunables().iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "read_expire",
            "write_expire",
            "writes_starved",
            "front_merges",
            "async_depth",
            "fifo_batch",
            "prio_aging_expire",
            "insert_lists"
        ]
    );
    assert_eq!(d.tunables()[4].default, "64");
}

#[test]
fn ms_round_up_to_jiffies_and_show_back_at_hz_250() {
    let mut d = dd(250);
    for (ms, jiffies, shown) in [
        ("1", 1, "4"),
        ("4", 1, "4"),
        ("5", 2, "8"),
        ("5001", 1251, "5004"),
        ("0", 0, "0"),
        ("-1", 0, "0"),
        ("0x10", 4, "16"),
        ("010", 2, "8"),
        ("100\n", 25, "100"),
    ] {
        d.set_tunable("read_expire", ms).unwrap();
        assert_eq!(d.fifo_expire[READ], jiffies, "{ms}");
        assert_eq!(get(&d, "read_expire"), shown, "{ms}");
    }
    d.set_tunable("write_expire", "7").unwrap();
    assert_eq!(
        (d.fifo_expire[WRITE], get(&d, "write_expire").as_str()),
        (2, "8")
    );
    d.set_tunable("prio_aging_expire", "2147483647").unwrap();
    assert_eq!(d.prio_aging_expire, 536_870_912);
}

#[test]
fn show_prints_the_unsigned_ms_as_int() {
    // jiffies_to_msecs() of a huge value wraps the unsigned int; "%d" shows it negative.
    let mut d = dd(100);
    d.set_tunable("read_expire", "2147483647").unwrap();
    assert_eq!(d.fifo_expire[READ], 214_748_365);
    assert_eq!(get(&d, "read_expire"), "-2147483646");
}

#[test]
fn ints_are_clamped_not_rejected() {
    let mut d = dd(250);
    for (name, value, shown) in [
        ("front_merges", "5", "1"),
        ("front_merges", "-3", "0"),
        ("front_merges", "0", "0"),
        ("fifo_batch", "-1", "0"),
        ("fifo_batch", "1000", "1000"),
        ("writes_starved", "-5", "-5"),
        ("writes_starved", "-2147483648", "-2147483648"),
        ("async_depth", "0", "1"),
        ("async_depth", "-7", "1"),
        ("async_depth", "100000", "100000"),
    ] {
        d.set_tunable(name, value).unwrap();
        assert_eq!(get(&d, name), shown, "{name}={value}");
    }
}

#[test]
fn unparsable_or_out_of_int_range_is_rejected() {
    let mut d = dd(250);
    for v in ["abc", "", "1.5", "12 ", "2147483648", "-2147483649", "09"] {
        let e = d.set_tunable("fifo_batch", v).unwrap_err();
        assert!(matches!(e, TunableError::Invalid { .. }), "{v:?}");
    }
    assert_eq!(get(&d, "fifo_batch"), "16");
    assert!(matches!(
        d.set_tunable("quantum", "1"),
        Err(TunableError::Unknown { .. })
    ));
    assert!(matches!(
        d.get_tunable("quantum"),
        Err(TunableError::Unknown { .. })
    ));
}

#[test]
fn variant_switch() {
    let mut d = dd(250);
    let v = d.variants();
    assert_eq!(v.len(), 3);
    assert!(v.iter().any(|i| i.name == "head-request"));
    assert!(v.iter().any(|i| i.name == "per-cpu-stats"));
    d.set_tunable("variant", "head-request").unwrap();
    assert_eq!(d.variant(), Variant::HeadRequest);
    assert_eq!(get(&d, "variant"), "head-request");
    let e = d.set_tunable("variant", "bogus").unwrap_err();
    assert!(
        e.to_string()
            .contains("mainline, head-request, per-cpu-stats"),
        "{e}"
    );
    assert_eq!(d.variant(), Variant::HeadRequest);
    d.set_tunable("variant", "mainline").unwrap();
    assert_eq!(d.variant(), Variant::Mainline);
}

#[test]
fn registry_builds_mq_deadline() {
    let e = crate::elevator::create("mq-deadline", &QueueParams::default()).unwrap();
    assert_eq!(e.name(), "mq-deadline");
    let keys: Vec<_> = e.debugfs().into_iter().map(|(k, _)| k).collect();
    for k in [
        "read0_fifo_list",
        "write2_fifo_list",
        "read1_next_rq",
        "batching",
        "starved",
        "async_depth",
        "dispatch",
        "owned_by_driver",
        "queued",
        "inserted",
        "merged",
        "dispatched",
        "completed",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k}");
    }
}

#[test]
fn insert_lists_is_a_bool_switch_that_changes_locking_only() {
    let mut d = dd(250);
    assert!(!d.lock_split());
    d.set_tunable("insert_lists", "1").unwrap();
    assert!(d.lock_split());
    assert_eq!(get(&d, "insert_lists"), "1");
    assert!(d.set_tunable("insert_lists", "2").is_err());
    assert!(d.set_tunable("insert_lists", "yes").is_err());
    d.set_tunable("insert_lists", "0").unwrap();
    assert!(!d.lock_split());
}
