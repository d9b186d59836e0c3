//! The demerit figure of DiskSim's `rms` tool.
//!
//! DiskSim does not compare raw samples: it bins both service-time samples into its
//! "Physical access time" / "Trace access time" distributions (`statdefs`: 1750
//! buckets, scale 1000, `Start 0 step 1 grow 1` — 1 µs wide up to 100 µs, then each
//! bucket 1% wider than the last), prints each bucket's upper edge (ms) with the
//! cumulative fraction (`%f`, six decimals) and `rms` reads those points up to the
//! first with fraction ≥ 1. The demerit is the root mean square, over
//! p = 0.0001, 0.0002, … ≤ 1.0 (accumulated in floating point, as the tool does), of
//! the horizontal distance between the two CDFs at p, each interpolated linearly
//! between its points. This module reproduces those steps.

const BUCKETS: usize = 1750;

/// Bucket starts (µs), as DiskSim computes them.
fn starts() -> Vec<i64> {
    let mut v = Vec::with_capacity(BUCKETS);
    let mut b: i64 = 0;
    for _ in 0..BUCKETS {
        v.push(b);
        b += 1 + (b.abs() as f64 / 100.0) as i64;
    }
    v
}

/// The CDF points (`x` ms, cumulative fraction) DiskSim would print for `samples_ms`.
pub fn binned_cdf(samples_ms: &[f64]) -> Vec<(f64, f64)> {
    let st = starts();
    let mut counts = vec![0u64; BUCKETS];
    for &v in samples_ms {
        let iv = (v * 1000.0) as i64;
        let i = if iv < 0 {
            0
        } else {
            // Bucket k+1 holds [starts[k], starts[k+1]).
            (st.partition_point(|s| *s <= iv)).min(BUCKETS - 1)
        };
        counts[i] += 1;
    }
    let n = samples_ms.len().max(1) as f64;
    let mut out = Vec::new();
    let mut dist = 0.0;
    for i in 0..BUCKETS {
        dist += counts[i] as f64 / n;
        let y = (dist * 1e6).round() / 1e6;
        out.push((st[i] as f64 / 1000.0, y));
        if y >= 1.0 {
            break;
        }
    }
    out
}

/// `rms` between two printed CDFs.
pub fn rms(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let x_at = |c: &[(f64, f64)], i: &mut usize, p: f64| -> f64 {
        while *i < c.len() - 1 && c[*i].1 < p {
            *i += 1;
        }
        let j = (*i).max(1);
        let (x0, y0) = c[j - 1];
        let (x1, y1) = c[j];
        if y1 == y0 {
            return x1;
        }
        x0 + (p - y0) / (y1 - y0) * (x1 - x0)
    };
    let (mut i1, mut i2) = (0, 0);
    let mut pnt = 0.0001f64;
    let mut sq = 0.0;
    let mut count = 0u32;
    while pnt <= 1.0 {
        let d = x_at(a, &mut i1, pnt) - x_at(b, &mut i2, pnt);
        sq += d * d;
        count += 1;
        pnt += 0.0001;
    }
    (sq / count.max(1) as f64).sqrt()
}

/// The demerit (ms) between simulated and measured service times (ms).
pub fn demerit(sim_ms: &[f64], real_ms: &[f64]) -> f64 {
    rms(&binned_cdf(sim_ms), &binned_cdf(real_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_samples_have_zero_demerit() {
        let v: Vec<f64> = (0..1000).map(|i| 1.0 + i as f64 * 0.01).collect();
        assert!(demerit(&v, &v) < 1e-12);
    }

    #[test]
    fn a_shift_shows_as_its_size() {
        let a: Vec<f64> = (0..10000).map(|i| 5.0 + (i % 100) as f64 * 0.1).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 1.0).collect();
        let d = demerit(&a, &b);
        assert!((d - 1.0).abs() < 0.1, "{d}");
    }

    #[test]
    fn buckets_grow_one_percent_past_100us() {
        let s = starts();
        assert_eq!(&s[..4], &[0, 1, 2, 3]);
        assert_eq!(s[100], 100);
        assert_eq!(s[101], 102);
    }
}
