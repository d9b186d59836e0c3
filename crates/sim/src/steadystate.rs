//! fio's steady-state detection (steadystate.c, fio 3.42) over the simulated
//! samples.
//!
//! Every `steadystate_check_interval` (1 s by default) of virtual time, fio's
//! helper thread takes each running job's completed I/Os, bytes and mean
//! completion latency since its last look, turns them into one sample of
//! IOPS, bandwidth and latency, and pushes the sample into a ring of
//! `steadystate_duration / interval` samples. Once the ring is full, each
//! new sample re-evaluates the criterion over the ring: the largest
//! deviation from the mean (`iops`, `bw`, `lat`) or the least-squares slope
//! (`iops_slope`, `bw_slope`, `lat_slope`), absolute or as a percentage of
//! the mean. When it falls under the limit the job (with
//! `group_reporting`, its whole reporting group) is terminated, and the
//! report's `steadystate` section says so.
//!
//! [`Window`] is the ring and the criterion (fio's `steadystate_slope` /
//! `steadystate_deviation`), [`Sampler`] a job's view of its own counters
//! (`prev_time`, `prev_bytes`, ...). The simulation drives them
//! (`Simulation::steadystate_check`); [`SsReport`] is what the report prints.

use blk::Ns;

/// What the criterion measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean completion latency, ns.
    Lat,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Iops => "iops",
            Metric::Bw => "bw",
            Metric::Lat => "lat",
        }
    }
}

/// fio's `steadystate=` value: `iops`, `iops_slope`, `bw`, `bw_slope`,
/// `lat` or `lat_slope`, a colon, and a limit (`10%`, or an absolute value:
/// IOPS, bytes/s with fio's size suffixes, or a time for `lat`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criterion {
    /// What is measured.
    pub metric: Metric,
    /// The slope of a least-squares line (else the largest deviation from
    /// the mean).
    pub slope: bool,
    /// The limit is a percentage of the mean (fio's `FIO_SS_PCT`).
    pub pct: bool,
    /// The limit (percent, IOPS, bytes/s or ns).
    pub limit: f64,
}

impl Default for Criterion {
    /// fio's default, `iops_slope:0.01%`.
    fn default() -> Self {
        Criterion {
            metric: Metric::Iops,
            slope: true,
            pct: true,
            limit: 0.01,
        }
    }
}

impl Criterion {
    /// As the JSON's `"ss"` shows it: `iops_slope:0.010000%` (fio prints
    /// the limit as a C float with `%f`).
    pub fn label(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            self.metric.name(),
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.pct { "%" } else { "" }
        )
    }
}

/// A job's steady-state settings, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SsSpec {
    /// The criterion and its limit.
    pub criterion: Criterion,
    /// `steadystate_duration`, whole seconds (fio keeps `ss_dur` in s).
    pub dur_s: u64,
    /// `steadystate_ramp_time`, µs: no sample is used before this long
    /// (plus one interval) after the job's clock started.
    pub ramp_us: u64,
    /// `steadystate_check_interval`, ms (one value for the whole run).
    pub interval_ms: u64,
}

impl SsSpec {
    /// Samples in the ring: the duration over the interval in whole seconds,
    /// as fio divides them.
    pub fn intervals(&self) -> usize {
        (self.dur_s / (self.interval_ms / 1000).max(1)) as usize
    }

    /// The interval in ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ms * 1_000_000
    }
}

/// One sample: IOPS, bytes/s and mean completion latency (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// I/Os per second.
    pub iops: u64,
    /// Bytes per second.
    pub bw: u64,
    /// Mean completion latency, ns.
    pub lat: u64,
}

/// The ring of samples and the criterion's state (fio's `struct
/// steadystate_data`, the part the job holding the data keeps).
#[derive(Debug, Clone)]
pub struct Window {
    crit: Criterion,
    n: usize,
    head: usize,
    tail: usize,
    full: bool,
    data: Vec<Sample>,
    sum_y: u64,
    sum_xy: u64,
    oldest_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    slope: f64,
    deviation: f64,
    criterion: f64,
    attained: bool,
}

impl Window {
    /// An empty ring for `spec`.
    pub fn new(spec: &SsSpec) -> Window {
        let n = spec.intervals().max(1);
        let k = n as u64;
        Window {
            crit: spec.criterion,
            n,
            head: 0,
            tail: 0,
            full: false,
            data: vec![Sample::default(); n],
            sum_y: 0,
            sum_xy: 0,
            oldest_y: 0,
            sum_x: k * (k - 1) / 2,
            sum_x_sq: (k - 1) * k * (2 * k - 1) / 6,
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            attained: false,
        }
    }

    fn y(&self, i: usize) -> u64 {
        let s = &self.data[i];
        match self.crit.metric {
            Metric::Iops => s.iops,
            Metric::Bw => s.bw,
            Metric::Lat => s.lat,
        }
    }

    /// Add a sample; true when the criterion is met (the ring was full and
    /// the measure is under the limit).
    pub fn push(&mut self, s: Sample) -> bool {
        self.data[self.tail] = s;
        if self.full || self.tail.wrapping_sub(self.head) == self.n - 1 {
            let met = if self.crit.slope {
                self.eval_slope()
            } else {
                self.eval_deviation()
            };
            if met {
                self.attained = true;
                return true;
            }
        }
        self.tail = (self.tail + 1) % self.n;
        if self.tail <= self.head {
            self.head = (self.head + 1) % self.n;
        }
        false
    }

    /// Keeps `sum_y` (and with `xy`, `sum_xy`) over the ring as fio does:
    /// summed once when the ring first fills, then updated per sample.
    fn update_sums(&mut self, xy: bool) {
        let n = self.n;
        let new = self.y(self.tail);
        if !self.full {
            self.sum_y = (0..n).map(|i| self.y(i)).fold(0, u64::wrapping_add);
            if xy {
                self.sum_xy = (0..n).fold(self.sum_xy, |acc, i| {
                    acc.wrapping_add((i as u64).wrapping_mul(self.y((self.head + i) % n)))
                });
            }
            self.full = true;
        } else {
            self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new);
            if xy {
                self.sum_xy = self
                    .sum_xy
                    .wrapping_sub(self.sum_y)
                    .wrapping_add((n as u64).wrapping_mul(new));
            }
        }
        self.oldest_y = self.y(self.head);
    }

    /// fio's `steadystate_slope`: the least-squares slope over the ring
    /// (x = 0, 1, ... in sample order), as a share of the mean with `%`.
    fn eval_slope(&mut self) -> bool {
        self.update_sums(true);
        let n = self.n as f64;
        let (sx, sxx) = (self.sum_x as f64, self.sum_x_sq as f64);
        self.slope = (self.sum_xy as f64 - sx * self.sum_y as f64 / n) / (sxx - sx * sx / n);
        self.criterion = if self.crit.pct {
            // fio divides the sum by the count in integers here.
            100.0 * self.slope / (self.sum_y / self.n as u64) as f64
        } else {
            self.slope
        };
        self.criterion.abs() < self.crit.limit
    }

    /// fio's `steadystate_deviation`: the largest distance of a sample from
    /// the ring's mean, as a share of the mean with `%`.
    fn eval_deviation(&mut self) -> bool {
        self.update_sums(false);
        let mean = self.sum_y as f64 / self.n as f64;
        self.deviation = (0..self.n)
            .map(|i| (self.y(i) as f64 - mean).abs())
            .fold(0.0, f64::max);
        self.criterion = if self.crit.pct {
            100.0 * self.deviation / mean
        } else {
            self.deviation
        };
        self.criterion < self.crit.limit
    }

    /// What the report shows.
    pub fn report(&self, spec: &SsSpec) -> SsReport {
        // The oldest sample: `head` once attained or while filling; after a
        // sample that did not attain, `head` has moved one past it.
        let first = if self.attained || !self.full {
            self.head
        } else {
            (self.head + self.n - 1) % self.n
        };
        let ordered: Vec<Sample> = (0..self.n)
            .map(|i| self.data[(first + i) % self.n])
            .collect();
        SsReport {
            criterion: self.crit,
            dur_s: spec.dur_s,
            attained: self.attained,
            value: self.criterion,
            deviation: self.deviation,
            slope: self.slope,
            samples: ordered,
        }
    }
}

/// A job's own counters as the steady-state check last saw them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sampler {
    /// fio's `ss->prev_time`: the job's clock start, its ramp's end, or the
    /// last check.
    pub prev_time: Ns,
    prev_iops: u64,
    prev_bytes: u64,
    prev_lat_sum: f64,
    prev_lat_samples: u64,
    /// `FIO_SS_RAMP_OVER`: the job's samples count.
    pub ramp_over: bool,
    /// `FIO_SS_ATTAINED`: the job was terminated at steady state.
    pub attained: bool,
}

/// A job's totals at one check: I/Os and bytes completed, and the sum and
/// count of their completion latencies (all since its clock or ramp start).
#[derive(Debug, Clone, Copy, Default)]
pub struct Totals {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes completed.
    pub bytes: u64,
    /// Sum of their completion latencies, ns.
    pub clat_sum: f64,
    /// Completion latencies summed.
    pub clat_samples: u64,
}

/// A group's sums over one check (fio's `group_bw`, `group_iops`, ...).
#[derive(Debug, Clone, Copy, Default)]
pub struct GroupSums {
    iops: u64,
    bw: u64,
    lat_sum: f64,
    lat_samples: u64,
    /// Jobs whose samples counted (`group_ramp_time_over`).
    pub counted: u32,
}

impl GroupSums {
    /// The group's sample: IOPS and bandwidth added, latency averaged over
    /// every completion.
    pub fn sample(&self) -> Sample {
        Sample {
            iops: self.iops,
            bw: self.bw,
            lat: if self.lat_samples > 0 {
                (self.lat_sum / self.lat_samples as f64) as u64
            } else {
                0
            },
        }
    }
}

impl Sampler {
    /// The job's clock (re)started at `now` (its start, its ramp's end):
    /// fio copies `epoch` into `ss->prev_time`.
    pub fn restart(&mut self, now: Ns) {
        self.prev_time = now;
    }

    /// One check at `now` for a job whose clock started at `epoch`: adds its
    /// rates since the last check to `sums` once its steady-state ramp is
    /// over, and remembers its totals.
    pub fn check(&mut self, spec: &SsSpec, now: Ns, epoch: Ns, t: Totals, sums: &mut GroupSums) {
        // Without a ramp, fio counts from the first check.
        if !self.ramp_over {
            let since_us = now.0.saturating_sub(epoch.0) / 1_000;
            if spec.ramp_us == 0 || since_us >= spec.ramp_us + spec.interval_ms * 1_000 {
                self.ramp_over = true;
            }
        }
        let rate_ms = now.0.saturating_sub(self.prev_time.0) / 1_000_000;
        self.prev_time = now;
        if self.ramp_over {
            // fio scales by the time since the last check over the interval
            // squared (steadystate.c since fio 3.35). Counters reset at a
            // ramp's end come out below the last totals: iosched takes no
            // I/O for that sample where fio's unsigned difference wraps.
            let per = (spec.interval_ms * spec.interval_ms / 1000).max(1);
            sums.bw += rate_ms * t.bytes.saturating_sub(self.prev_bytes) / per;
            sums.iops += rate_ms * t.ios.saturating_sub(self.prev_iops) / per;
            sums.lat_sum += t.clat_sum - self.prev_lat_sum;
            sums.lat_samples += t.clat_samples.saturating_sub(self.prev_lat_samples);
            sums.counted += 1;
        }
        self.prev_iops = t.ios;
        self.prev_bytes = t.bytes;
        self.prev_lat_sum = t.clat_sum;
        self.prev_lat_samples = t.clat_samples;
    }
}

/// The report's `steadystate` section (fio's `thread_stat` `ss_*` fields).
#[derive(Debug, Clone, PartialEq)]
pub struct SsReport {
    /// The criterion and limit.
    pub criterion: Criterion,
    /// `steadystate_duration`, s.
    pub dur_s: u64,
    /// The criterion was met.
    pub attained: bool,
    /// The measure last computed (percent with a `%` limit).
    pub value: f64,
    /// The largest deviation last computed (deviation criteria).
    pub deviation: f64,
    /// The slope last computed (slope criteria).
    pub slope: f64,
    /// The ring, oldest sample first.
    pub samples: Vec<Sample>,
}

impl SsReport {
    fn mean(&self, f: impl Fn(&Sample) -> u64) -> u64 {
        let n = self.samples.len() as u64;
        if n == 0 {
            return 0;
        }
        self.samples.iter().map(f).sum::<u64>() / n
    }

    /// Mean bandwidth of the ring, bytes/s (`steadystate_bw_mean`).
    pub fn bw_mean(&self) -> u64 {
        self.mean(|s| s.bw)
    }

    /// Mean IOPS of the ring (`steadystate_iops_mean`).
    pub fn iops_mean(&self) -> u64 {
        self.mean(|s| s.iops)
    }

    /// Mean latency of the ring, ns (`steadystate_lat_mean`).
    pub fn lat_mean(&self) -> u64 {
        self.mean(|s| s.lat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(metric: Metric, slope: bool, pct: bool, limit: f64, dur_s: u64) -> SsSpec {
        SsSpec {
            criterion: Criterion {
                metric,
                slope,
                pct,
                limit,
            },
            dur_s,
            ramp_us: 0,
            interval_ms: 1000,
        }
    }

    fn iops(v: u64) -> Sample {
        Sample {
            iops: v,
            bw: v * 4096,
            lat: 1000,
        }
    }

    #[test]
    fn deviation_needs_a_full_ring_then_compares_max_distance() {
        // Ring of 4; samples 100, 100, 100, 110: mean 102.5, max deviation
        // 7.5 = 7.317 % of the mean.
        let s = spec(Metric::Iops, false, true, 7.0, 4);
        let mut w = Window::new(&s);
        for v in [100, 100, 100] {
            assert!(!w.push(iops(v)), "not full yet");
        }
        assert!(!w.push(iops(110)));
        let r = w.report(&s);
        assert!((r.value - 7.5 / 102.5 * 100.0).abs() < 1e-9, "{}", r.value);
        assert_eq!(r.deviation, 7.5);
        // Next, 104 replaces the oldest 100: 100, 100, 110, 104, mean 103.5,
        // max deviation 6.5 = 6.28 % < 7 %.
        assert!(w.push(iops(104)));
        let r = w.report(&s);
        assert!(r.attained);
        let got: Vec<u64> = r.samples.iter().map(|s| s.iops).collect();
        assert_eq!(got, vec![100, 100, 110, 104]);
        assert_eq!(r.iops_mean(), 103);
    }

    #[test]
    fn slope_is_least_squares_and_rolls_with_the_ring() {
        // y = 10, 20, 30: slope 10, mean 20: 50 %.
        let s = spec(Metric::Iops, true, true, 1.0, 3);
        let mut w = Window::new(&s);
        w.push(iops(10));
        w.push(iops(20));
        assert!(!w.push(iops(30)));
        assert!((w.report(&s).slope - 10.0).abs() < 1e-9);
        assert!((w.report(&s).value - 50.0).abs() < 1e-9);
        // Unattained: the report starts at the oldest sample.
        let got: Vec<u64> = w.report(&s).samples.iter().map(|s| s.iops).collect();
        assert_eq!(got, vec![10, 20, 30]);
        // 20, 30, 30: the incremental sums give slope 5 (from scratch:
        // sum_xy = 0*20 + 1*30 + 2*30 = 90, sum_y 80, (90 - 3*80/3)/(5 - 3) = 5).
        w.push(iops(30));
        assert!((w.report(&s).slope - 5.0).abs() < 1e-9);
        let got: Vec<u64> = w.report(&s).samples.iter().map(|s| s.iops).collect();
        assert_eq!(got, vec![20, 30, 30]);
        // 30, 30, 30: slope 0 < 1 %.
        assert!(w.push(iops(30)));
        assert_eq!(w.report(&s).slope, 0.0);
    }

    #[test]
    fn absolute_limits_and_latency() {
        let s = spec(Metric::Lat, false, false, 50.0, 2);
        let mut w = Window::new(&s);
        let lat = |l| Sample {
            iops: 1,
            bw: 1,
            lat: l,
        };
        w.push(lat(1000));
        // 1000, 1100: deviation 50, not under 50.
        assert!(!w.push(lat(1100)));
        // 1100, 1180: deviation 40.
        assert!(w.push(lat(1180)));
        assert_eq!(w.report(&s).lat_mean(), 1140);
    }

    #[test]
    fn sampler_waits_for_ramp_plus_one_interval_and_scales_rates() {
        let mut sp = spec(Metric::Bw, false, true, 1.0, 2);
        sp.ramp_us = 2_000_000;
        let mut s = Sampler::default();
        s.restart(Ns(0));
        let mut sums = GroupSums::default();
        let t = |ios, bytes| Totals {
            ios,
            bytes,
            clat_sum: ios as f64 * 500.0,
            clat_samples: ios,
        };
        s.check(&sp, Ns(2_000_000_000), Ns(0), t(10, 40960), &mut sums);
        assert_eq!(sums.counted, 0, "ramp 2 s + 1 s not over at 2 s");
        s.check(&sp, Ns(3_000_000_000), Ns(0), t(30, 122880), &mut sums);
        assert_eq!(sums.counted, 1);
        // 20 I/Os and 81920 bytes over 1000 ms.
        let x = sums.sample();
        assert_eq!((x.iops, x.bw, x.lat), (20, 81920, 500));
        // Half an interval: fio's formula scales by rate_time / interval².
        let mut sums = GroupSums::default();
        s.check(&sp, Ns(3_500_000_000), Ns(0), t(40, 163840), &mut sums);
        assert_eq!(sums.sample().iops, 500 * 10 / 1000);
    }

    #[test]
    fn labels_as_fio_prints_them() {
        assert_eq!(Criterion::default().label(), "iops_slope:0.010000%");
        let c = Criterion {
            metric: Metric::Bw,
            slope: false,
            pct: false,
            limit: 1048576.0,
        };
        assert_eq!(c.label(), "bw:1048576.000000");
    }
}
