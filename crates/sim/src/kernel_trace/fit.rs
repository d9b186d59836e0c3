//! Fitting the kernel's jiffies to trace timestamps.
//!
//! Block events carry no jiffies, but mq-deadline decides on them. Timer events give
//! samples `(t, J)`; the model is `jiffies(t) = J0 + floor((t − T0) / period)` with
//! `period = 1e9 / HZ` ns. Each sample constrains the tick phase `T0` to a window one
//! period wide; the fit takes the phase that most samples agree with (a few samples
//! read a stale jiffies value, e.g. a timer armed just before the tick was processed).

use super::parse::JiffySample;

/// A fitted jiffies clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JiffiesFit {
    /// jiffies at `t0_ns`.
    pub j0: u64,
    /// A tick instant (ns, trace clock).
    pub t0_ns: u64,
    /// ns per jiffy.
    pub period_ns: u64,
    /// Samples the fit agrees with.
    pub agree: usize,
    /// Samples used.
    pub samples: usize,
}

impl JiffiesFit {
    /// The fitted jiffies at trace time `ts_ns`.
    pub fn jiffies_at(&self, ts_ns: u64) -> u64 {
        let d = ts_ns as i128 - self.t0_ns as i128;
        let k = d.div_euclid(self.period_ns as i128);
        (self.j0 as i128 + k) as u64
    }

    /// A clock without samples: jiffies counted from the first event, phase 0.
    pub fn unanchored(t0_ns: u64, hz: u32) -> JiffiesFit {
        JiffiesFit {
            j0: 0,
            t0_ns,
            period_ns: period_ns(hz) as u64,
            agree: 0,
            samples: 0,
        }
    }
}

/// The largest HZ accepted: a jiffy must last at least one nanosecond of the trace
/// clock, and no kernel runs faster than `CONFIG_HZ=1000` (10000 leaves room).
pub const MAX_HZ: u32 = 10_000;

/// ns per jiffy, never zero: callers validate `hz` against [`MAX_HZ`] and reject 0,
/// but the fit itself must not divide by zero or stall its window on a zero period
/// whatever it is given.
fn period_ns(hz: u32) -> i128 {
    (1_000_000_000i128 / hz.max(1) as i128).max(1)
}

/// Fit jiffies to `samples` for a kernel with `hz`. `None` without samples.
pub fn fit(samples: &[JiffySample], hz: u32) -> Option<JiffiesFit> {
    let first = samples.first()?;
    let period = period_ns(hz);
    let j0 = first.jiffies;
    // Phase of each sample: the latest tick instant at which jiffies could have become
    // j0, given this sample. The true tick lies in (phi - period, phi].
    let mut phi: Vec<i128> = samples
        .iter()
        .map(|s| {
            let dj = s.jiffies.wrapping_sub(j0) as i64 as i128;
            s.ts_ns as i128 - dj * period
        })
        .collect();
    phi.sort_unstable();
    // Largest set of phases within one period (half-open window): two pointers.
    let (mut best, mut best_lo, mut best_hi) = (0usize, 0usize, 0usize);
    let mut lo = 0;
    for hi in 0..phi.len() {
        while phi[hi] - phi[lo] >= period {
            lo += 1;
        }
        if hi + 1 - lo > best {
            best = hi + 1 - lo;
            best_lo = lo;
            best_hi = hi;
        }
    }
    // Any T0 in (phi[best_hi] - period, phi[best_lo]] fits them all; timer expiry
    // samples run just after the tick, so the latest possible tick is the best guess.
    let _ = best_hi;
    let t0 = phi[best_lo];
    Some(JiffiesFit {
        j0,
        t0_ns: t0.max(0) as u64,
        period_ns: period as u64,
        agree: best,
        samples: samples.len(),
    })
    .map(|mut f| {
        if t0 < 0 {
            // Keep t0 non-negative by moving the anchor forward whole periods.
            let k = (-t0 + period - 1) / period;
            f.j0 = (j0 as i128 + k) as u64;
            f.t0_ns = (t0 + k * period) as u64;
        }
        f
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_ticks_and_ignores_stale() {
        // HZ 250 (4 ms); ticks at 1_000_000 + k*4ms, jiffies 100 + k.
        let tick = |k: u64| 1_000_000 + k * 4_000_000;
        let mut s = vec![];
        for k in 0..50 {
            s.push(JiffySample {
                ts_ns: tick(k) + 5_000,
                jiffies: 100 + k,
            });
            s.push(JiffySample {
                ts_ns: tick(k) + 3_000_000,
                jiffies: 100 + k,
            });
        }
        // Stale reads.
        s.push(JiffySample {
            ts_ns: tick(10) + 100_000,
            jiffies: 109,
        });
        let f = fit(&s, 250).unwrap();
        assert_eq!(f.agree, 100);
        assert_eq!(f.jiffies_at(tick(7) + 6_000), 107);
        assert_eq!(f.jiffies_at(tick(7) + 3_990_000), 107);
        assert_eq!(f.jiffies_at(tick(8) + 5_000), 108);
        assert_eq!(f.jiffies_at(tick(0) - 1_000), 99);
    }

    #[test]
    fn extreme_hz_and_jiffies_do_not_panic() {
        let s = [
            JiffySample {
                ts_ns: 5,
                jiffies: u64::MAX,
            },
            JiffySample {
                ts_ns: u64::MAX,
                jiffies: 0,
            },
            JiffySample {
                ts_ns: 0,
                jiffies: 1 << 63,
            },
        ];
        for hz in [0, 1, 250, u32::MAX] {
            let f = fit(&s, hz).unwrap();
            assert!(f.period_ns >= 1);
            f.jiffies_at(0);
            f.jiffies_at(u64::MAX);
            JiffiesFit::unanchored(u64::MAX, hz).jiffies_at(0);
        }
    }
}
