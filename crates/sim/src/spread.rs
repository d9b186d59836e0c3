//! Seed-to-seed spread: is a difference between two settings larger than what
//! changing only the run seed gives?
//!
//! A simulated run is deterministic for a seed, but the seed picks the random
//! offsets, so one run per setting can show a difference that another seed would
//! not. With several seeds per setting each figure has a mean, a sample standard
//! deviation and a 95 % confidence interval for the mean (Student's t); two
//! settings are compared with Welch's t interval for the difference of their
//! means (unequal variances, Welch–Satterthwaite degrees of freedom). A difference
//! whose interval excludes zero is "larger than the seed-to-seed spread".

/// Summary of one figure over seeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Number of seeds.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one seed.
    pub stddev: f64,
    /// Half-width of the 95 % confidence interval of the mean; `None` for one seed.
    pub ci95: Option<f64>,
}

impl Spread {
    /// The summary of `xs` (empty: all zero).
    pub fn of(xs: &[f64]) -> Spread {
        let n = xs.len();
        if n == 0 {
            return Spread {
                n,
                mean: 0.0,
                stddev: 0.0,
                ci95: None,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Spread {
                n,
                mean,
                stddev: 0.0,
                ci95: None,
            };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let stddev = var.sqrt();
        Spread {
            n,
            mean,
            stddev,
            ci95: Some(t95(n as f64 - 1.0) * stddev / (n as f64).sqrt()),
        }
    }
}

/// The difference `b − a` of two settings' means, with its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    /// `b.mean − a.mean`.
    pub delta: f64,
    /// Half-width of Welch's 95 % interval of the difference; `None` with fewer
    /// than two seeds on either side.
    pub ci95: Option<f64>,
}

impl Difference {
    /// Welch's interval for `b − a`.
    pub fn between(a: &Spread, b: &Spread) -> Difference {
        let delta = b.mean - a.mean;
        if a.n < 2 || b.n < 2 {
            return Difference { delta, ci95: None };
        }
        let va = a.stddev.powi(2) / a.n as f64;
        let vb = b.stddev.powi(2) / b.n as f64;
        let se = (va + vb).sqrt();
        if se == 0.0 {
            return Difference {
                delta,
                ci95: Some(0.0),
            };
        }
        let df =
            (va + vb).powi(2) / (va.powi(2) / (a.n - 1) as f64 + vb.powi(2) / (b.n - 1) as f64);
        Difference {
            delta,
            ci95: Some(t95(df) * se),
        }
    }

    /// The interval excludes zero: the settings differ by more than the seeds do.
    /// `None` when there is no interval (one seed).
    pub fn beyond_spread(&self) -> Option<bool> {
        self.ci95.map(|h| self.delta.abs() > h)
    }
}

/// Two-sided 95 % critical value of Student's t with `df` degrees of freedom
/// (fractional df rounded down, which is conservative).
pub fn t95(df: f64) -> f64 {
    // Standard table values (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if !df.is_finite() || df < 1.0 {
        return T[0];
    }
    let d = df.floor() as usize;
    match d {
        1..=30 => T[d - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_hand_worked_samples() {
        // mean 5, sample variance ((−2)²+0²+2²)/2 = 4, sd 2; t(2) = 4.303;
        // half-width 4.303 · 2 / √3.
        let s = Spread::of(&[3.0, 5.0, 7.0]);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.stddev, 2.0);
        let h = s.ci95.unwrap();
        assert!((h - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(Spread::of(&[4.0]).ci95, None);
    }

    #[test]
    fn welch_interval_tells_a_shift_from_noise() {
        let a = Spread::of(&[100.0, 102.0, 98.0, 101.0, 99.0]);
        let shifted = Spread::of(&[110.0, 112.0, 108.0, 111.0, 109.0]);
        let noisy = Spread::of(&[90.0, 115.0, 95.0, 112.0, 98.0]);
        let d = Difference::between(&a, &shifted);
        assert_eq!(d.delta, 10.0);
        // Equal variances 2.5, n 5: se = √(2·2.5/5) = 1, df = 8, t = 2.306.
        assert!((d.ci95.unwrap() - 2.306).abs() < 1e-9);
        assert_eq!(d.beyond_spread(), Some(true));
        assert_eq!(Difference::between(&a, &noisy).beyond_spread(), Some(false));
        assert_eq!(
            Difference::between(&Spread::of(&[1.0]), &a).beyond_spread(),
            None
        );
    }

    #[test]
    fn t_table_edges() {
        assert_eq!(t95(0.5), 12.706);
        assert_eq!(t95(8.9), 2.306);
        assert_eq!(t95(1e9), 1.960);
        assert_eq!(t95(f64::NAN), 12.706);
    }
}
