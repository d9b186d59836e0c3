//! The conformance trace `kernel-trace compare --emit-conformance` writes is
//! runnable by `sched-replay` for every committed recording, whichever scheduler it
//! is converted for: its dispatch ops name the kernel's choice, which the replay
//! follows after asking ours, and it prints one answer per decision of the expected
//! file.

#[test]
fn every_recording_converts_to_a_runnable_trace() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kernel");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("merges-")
        })
        .collect();
    paths.sort();
    assert!(paths.len() >= 10);
    for p in paths {
        let text = std::fs::read_to_string(&p).unwrap();
        for sched in ["mq-deadline", "bfq"] {
            let (_, _, conv) = sim::kernel_trace::try_load(
                &text,
                sched,
                None,
                sim::kernel_trace::Malformed::Reject,
            )
            .unwrap();
            let out = sim::replay::replay_to_string(&conv.to_trace_text(), "emitted")
                .unwrap_or_else(|e| panic!("{} for {sched}: {e}", p.display()));
            assert_eq!(
                out.lines().count(),
                conv.expected_text().lines().count(),
                "{} for {sched}",
                p.display()
            );
        }
    }
}

#[test]
fn a_recorded_nr_requests_past_the_kernel_limit_is_an_error_not_an_allocation() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/kernel/seqwrite.txt"
    );
    let text = std::fs::read_to_string(path).unwrap().replace(
        "# iosched: nr_requests=256",
        "# iosched: nr_requests=4294967295",
    );
    assert!(text.contains("nr_requests=4294967295"));
    let (_, _, conv) =
        sim::kernel_trace::try_load(&text, "bfq", None, sim::kernel_trace::Malformed::Reject)
            .unwrap();
    let e = sim::kernel_trace::compare(&conv, &Default::default()).unwrap_err();
    assert!(e.contains("nr_requests' must be 1 to 2048"), "{e}");
    let e = sim::replay::replay_str(&conv.to_trace_text(), "t").unwrap_err();
    assert!(e.to_string().contains("t:1: field 'nr_requests'"), "{e}");
}
