//! `kernel-trace compare` is linear in the recording whatever the share of
//! disagreements: going back to the kernel's choice after one copies the forced
//! replay instead of replaying the whole prefix. Comparing against a scheduler other
//! than the recorded one (most decisions disagree) used to take minutes here. The
//! time it takes is measured by the `kernel_trace_compare` criterion benchmark
//! (`cargo bench -p sim --bench engine`); this test checks that the comparison
//! completes and finds the disagreements.

#[test]
fn comparing_against_another_scheduler_completes() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/kernel/kyber-lowlat-getrq.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    for sched in ["bfq", "mq-deadline"] {
        let (_, _, conv) =
            sim::kernel_trace::try_load(&text, sched, None, sim::kernel_trace::Malformed::Reject)
                .unwrap();
        let rep = sim::kernel_trace::compare(&conv, &Default::default()).unwrap();
        assert!(rep.decisions > 1000);
        assert!(rep.disagreements.len() > 100, "{sched}: few disagreements");
    }
}
