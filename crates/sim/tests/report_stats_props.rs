//! Property tests for the statistics accumulators.

use proptest::prelude::*;
use sim::stats::{LatHist, SampleStat};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn merge_equals_single_pass(a in prop::collection::vec(0u64..50_000_000, 0..200),
                                b in prop::collection::vec(0u64..50_000_000, 0..200)) {
        let mut ha = LatHist::new();
        let mut hb = LatHist::new();
        let mut all = LatHist::new();
        for &v in &a { ha.record(v); all.record(v); }
        for &v in &b { hb.record(v); all.record(v); }
        ha.merge(&hb);
        prop_assert_eq!(ha.count(), all.count());
        prop_assert_eq!(ha.min(), all.min());
        prop_assert_eq!(ha.max(), all.max());
        let tol = |x: f64| 1e-6 * x.abs().max(1.0);
        prop_assert!((ha.mean() - all.mean()).abs() <= tol(all.mean()));
        prop_assert!((ha.stddev() - all.stddev()).abs() <= tol(all.stddev()).max(1e-3));
        for p in [1.0, 50.0, 99.0, 99.99] {
            prop_assert_eq!(ha.percentile(p), all.percentile(p));
        }
    }

    #[test]
    fn moments_match_two_pass(v in prop::collection::vec(0u64..1_000_000_000, 2..300)) {
        let mut s = SampleStat::new();
        for &x in &v { s.add(x); }
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        prop_assert!((s.mean() - mean).abs() <= 1e-6 * mean.max(1.0));
        prop_assert!((s.stddev() - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0));
        prop_assert_eq!(s.min(), *v.iter().min().unwrap());
        prop_assert_eq!(s.max(), *v.iter().max().unwrap());
    }
}
