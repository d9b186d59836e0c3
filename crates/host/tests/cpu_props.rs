//! Invariants of the simulated CPUs over random work: a CPU never runs two things
//! at once, every item ends exactly once and never before it could, and the time
//! accounted is the time the segments cover.

use host::cpu::{Cpus, Item, SchedParams, NO_TOKEN};
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Op {
    /// At +dt, thread t gets an item of (usr, sys), with a token or none.
    Run(u64, usize, u64, u64, bool),
    /// At +dt, interrupt work on CPU c (with a token, or none).
    Irq(u64, u32, u64, bool),
}

fn op(threads: usize, cpus: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0..5_000u64,
            0..threads,
            0..3_000u64,
            0..5_000u64,
            prop::bool::weighted(0.8)
        )
            .prop_map(|(dt, t, u, s, tok)| Op::Run(dt, t, u, s, tok)),
        (0..5_000u64, 0..cpus, 1..2_000u64, any::<bool>())
            .prop_map(|(dt, c, s, tok)| Op::Irq(dt, c, s, tok)),
    ]
}

proptest! {
    #[test]
    fn cpus_never_run_two_things_and_account_every_segment(
        ops in prop::collection::vec(op(6, 3), 1..200),
        slice in 500..5_000u64,
    ) {
        let p = SchedParams { slice_ns: slice, latency_ns: 2 * slice, wakeup_gran_ns: slice / 2 };
        let mut c = Cpus::new(3, p);
        c.set_trace(true);
        let threads: Vec<_> = (0..6).map(|i| c.add_thread(i % 3, &[0, 1, 2])).collect();
        let mut now = 0;
        let mut next_tok = 1u64;
        // token -> (earliest possible end)
        let mut open: HashMap<u64, u64> = HashMap::new();
        let mut out = Vec::new();
        let mut drain = |c: &mut Cpus, until: u64, open: &mut HashMap<u64, u64>| {
            while let Some(t) = c.next_event() {
                if t > until { break; }
                c.advance(t, &mut out);
                for tok in out.drain(..) {
                    let earliest = open.remove(&tok).expect("token ended twice or never given");
                    assert!(t >= earliest, "token {tok} ended at {t} before {earliest}");
                }
                c.settle(t);
            }
        };
        for o in ops {
            let dt = match o { Op::Run(dt, ..) | Op::Irq(dt, ..) => dt };
            drain(&mut c, now + dt, &mut open);
            now += dt;
            match o {
                Op::Run(_, t, u, s, with_token) => {
                    let tok = if with_token { let x = next_tok; next_tok += 1; open.insert(x, now + u + s); x } else { NO_TOKEN };
                    c.run(now, threads[t], Item::new(u, s, tok));
                }
                Op::Irq(_, cpu, s, with_token) => {
                    let tok = if with_token { let t = next_tok; next_tok += 1; open.insert(t, now + s); t } else { NO_TOKEN };
                    c.irq(now, cpu, Item::new(0, s, tok));
                }
            }
        }
        drain(&mut c, u64::MAX, &mut open);
        prop_assert!(open.is_empty(), "items never ended: {:?}", open);
        let end = c.trace().iter().map(|s| s.end).max().unwrap_or(0);
        c.finish(end);
        let mut per_cpu: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 3];
        for s in c.trace() {
            per_cpu[s.cpu as usize].push((s.start, s.end));
        }
        for (cpu, segs) in per_cpu.iter_mut().enumerate() {
            segs.sort_unstable();
            for w in segs.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "CPU {cpu} ran two things: {:?} {:?}", w[0], w[1]);
            }
            let covered: u64 = segs.iter().map(|(a, b)| b - a).sum();
            prop_assert_eq!(covered, c.cpu_time(cpu as u32).busy());
        }
        let threads_time: u64 = threads.iter().map(|&t| { let x = c.thread_time(t); x.usr + x.sys }).sum();
        let irq: u64 = (0..3).map(|i| c.cpu_time(i).irq).sum();
        let busy: u64 = (0..3).map(|i| c.cpu_time(i).busy()).sum();
        prop_assert_eq!(threads_time + irq, busy);
    }
}
