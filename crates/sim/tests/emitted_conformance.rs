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
