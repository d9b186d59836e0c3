//! Where a job's next I/O goes: sequential streams and random offsets, as fio picks
//! them (`get_next_offset`), without per-block memory.
//!
//! fio's random map (on unless `norandommap`) visits every block once per pass. fio
//! keeps a bitmap for that; we walk a keyed pseudo-random permutation of the block
//! indices instead (a Feistel network with cycle walking), which has the same
//! once-per-pass property in constant memory, so 110 GiB regions cost nothing.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// A keyed bijection on `0..n`.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        Permutation {
            n: n.max(1),
            half_bits,
            keys: [rng.gen(), rng.gen(), rng.gen(), rng.gen()],
        }
    }

    fn round(x: u64, key: u64, mask: u64) -> u64 {
        let mut h = x.wrapping_add(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 29;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 32;
        h & mask
    }

    fn encrypt(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let nl = r;
            r = l ^ Self::round(r, k, mask);
            l = nl;
        }
        (l << self.half_bits) | r
    }

    /// The image of `i` (`i < n`).
    pub fn apply(&self, i: u64) -> u64 {
        let mut x = i;
        loop {
            x = self.encrypt(x);
            if x < self.n {
                return x;
            }
        }
    }
}

/// fio's skewed random distributions (`random_distribution`), drawing block
/// indices in `0..n` with replacement (fio uses no random map with them).
///
/// Zipf, Pareto and normal draw a *rank* as fio's lib/zipf.c and lib/gauss.c
/// do, and scatter ranks over the blocks as fio does with its hash, here with
/// a keyed bijection (so each block's probability is exactly its rank's),
/// rotated by fio's offset (`center`). Zoned picks a zone by its access share,
/// then a uniform block in it.
#[derive(Clone, Debug)]
pub struct Skewed {
    kind: SkewKind,
    n: u64,
    rng: Pcg64Mcg,
    scatter: Permutation,
    /// fio's `rand_off`: ranks are rotated by this many blocks.
    off: u64,
}

#[derive(Clone, Debug)]
enum SkewKind {
    Zipf {
        theta: f64,
        zetan: f64,
        zeta2: f64,
    },
    Pareto {
        pow: f64,
    },
    Normal {
        /// Width of the uniform spread added to the 12-sample mean, blocks.
        spread: u64,
    },
    /// `(first block, blocks)` per zone, and for each draw 1..=100 its zone.
    Zoned {
        zones: Vec<(u64, u64)>,
        by_draw: Vec<u16>,
    },
}

/// ζ(n, θ) = Σ_{i=1..n} i^-θ: summed term by term up to a million, then by
/// the Euler–Maclaurin formula (fio sums every term, and caches the result on
/// disk; the difference is far below what a draw can resolve).
pub fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1_000_000;
    let f = |x: f64| x.powf(-theta);
    if n <= EXACT {
        return (1..=n).map(|i| f(i as f64)).sum();
    }
    let k = EXACT as f64;
    let nf = n as f64;
    let head: f64 = (1..EXACT).map(|i| f(i as f64)).sum();
    let integral = (nf.powf(1.0 - theta) - k.powf(1.0 - theta)) / (1.0 - theta);
    let df = |x: f64| -theta * x.powf(-theta - 1.0);
    head + integral + (f(k) + f(nf)) / 2.0 + (df(nf) - df(k)) / 12.0
}

/// A zone of fio's `zoned` / `zoned_abs` distributions, resolved to blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneBlocks {
    /// Share of accesses, percent.
    pub access: u8,
    /// First block.
    pub start: u64,
    /// Blocks in the zone.
    pub len: u64,
}

impl Skewed {
    fn new(kind: SkewKind, n: u64, seed: u64, center: Option<f64>, gauss: bool) -> Skewed {
        let n = n.max(1);
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let scatter = Permutation::new(n, rng.gen());
        // fio: zipf and pareto start at a random offset unless centered; normal
        // at 0, or shifted by (center - 0.5) of the range.
        let off = match (center, gauss) {
            (None, false) => rng.gen_range(0..n),
            (None, true) => 0,
            (Some(c), false) => ((n as f64 * c) as u64) % n,
            (Some(c), true) => {
                let shift = (n as f64 * (c - 0.5)) as i64;
                shift.rem_euclid(n as i64) as u64
            }
        };
        Skewed {
            kind,
            n,
            rng,
            scatter,
            off,
        }
    }

    /// Zipf with exponent `theta` (≠ 1) over `n` blocks (fio's `zipf_next`).
    pub fn zipf(n: u64, theta: f64, center: Option<f64>, seed: u64) -> Skewed {
        let kind = SkewKind::Zipf {
            theta,
            zetan: zeta(n.max(1), theta),
            zeta2: 1.0 + 0.5f64.powf(theta),
        };
        Skewed::new(kind, n, seed, center, false)
    }

    /// Pareto with parameter `h` in (0, 1) over `n` blocks (`pareto_next`).
    pub fn pareto(n: u64, h: f64, center: Option<f64>, seed: u64) -> Skewed {
        let kind = SkewKind::Pareto {
            pow: h.ln() / (1.0 - h).ln(),
        };
        Skewed::new(kind, n, seed, center, false)
    }

    /// fio's "normal" over `n` blocks (`gauss_next`): the mean of 12 uniform
    /// draws over 0..=n, plus a uniform spread of `dev` percent of `n`.
    pub fn normal(n: u64, dev: f64, center: Option<f64>, seed: u64) -> Skewed {
        let n1 = n.max(1);
        let spread = if dev != 0.0 {
            ((n1 as f64 * dev) / 100.0).ceil() as u64
        } else {
            0
        }
        .min(n1 / 2);
        Skewed::new(SkewKind::Normal { spread }, n, seed, center, true)
    }

    /// fio's zoned distributions over `n` blocks: `zones` cover the draws
    /// 1..=100 in order of their access shares (which add up to 100).
    pub fn zoned(n: u64, zones: &[ZoneBlocks], seed: u64) -> Skewed {
        let mut by_draw = Vec::with_capacity(100);
        for (i, z) in zones.iter().enumerate() {
            for _ in 0..z.access {
                by_draw.push(i as u16);
            }
        }
        let kind = SkewKind::Zoned {
            zones: zones.iter().map(|z| (z.start, z.len)).collect(),
            by_draw,
        };
        let mut s = Skewed::new(kind, n, seed, Some(0.0), false);
        s.off = 0;
        s
    }

    /// The next block index.
    pub fn next_block(&mut self) -> u64 {
        let n = self.n;
        match self.kind {
            SkewKind::Zoned { .. } => self.next_rank(),
            _ => {
                let rank = self.next_rank();
                (self.scatter.apply(rank) + self.off) % n
            }
        }
    }

    /// The next rank (0 = most popular), before ranks are scattered over the
    /// blocks; for zoned, the block itself.
    fn next_rank(&mut self) -> u64 {
        let n = self.n;
        let rank = match &self.kind {
            SkewKind::Zipf {
                theta,
                zetan,
                zeta2,
            } => {
                let nf = n as f64;
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let u: f64 = self.rng.gen();
                let z = u * zetan;
                let val = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (nf * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                val - 1
            }
            SkewKind::Pareto { pow } => {
                let u: f64 = self.rng.gen();
                ((n - 1) as f64 * u.powf(*pow)) as u64
            }
            SkewKind::Normal { spread } => {
                let mut sum = 0u64;
                for _ in 0..12 {
                    sum += self.rng.gen_range(0..=n);
                }
                let sum = sum.div_ceil(12);
                let mut dev = if *spread > 0 {
                    let vr = (*spread as f64 * self.rng.gen::<f64>()) as i64;
                    vr - (*spread / 2) as i64
                } else {
                    0
                };
                while !(0..n as i64).contains(&(sum as i64 + dev)) && dev != 0 {
                    dev /= 2;
                }
                (sum as i64 + dev).max(0) as u64
            }
            SkewKind::Zoned { zones, by_draw } => {
                let v = self.rng.gen_range(0..by_draw.len().max(1));
                let (start, len) = zones[by_draw[v] as usize];
                let b = if len > 0 {
                    self.rng.gen_range(0..len)
                } else {
                    0
                };
                return (start + b).min(n - 1);
            }
        };
        rank.min(n - 1)
    }
}

/// Generates block indices in `0..nblocks` for one job and direction.
#[derive(Clone, Debug)]
pub enum BlockPicker {
    /// Sequential, wrapping at the end of the region.
    Sequential {
        /// Next block.
        next: u64,
        /// Blocks in the region.
        nblocks: u64,
    },
    /// Uniform random, each block once per pass.
    RandomMap {
        /// Position within the current pass.
        pos: u64,
        /// Pass number (re-keys the permutation).
        pass: u64,
        /// Seed of the permutations.
        seed: u64,
        /// Current permutation.
        perm: Permutation,
        /// Blocks in the region.
        nblocks: u64,
    },
    /// Uniform random with replacement (`norandommap`).
    Random {
        /// Generator.
        rng: Pcg64Mcg,
        /// Blocks in the region.
        nblocks: u64,
    },
    /// A skewed distribution (`random_distribution`).
    Skewed(Box<Skewed>),
}

impl BlockPicker {
    /// A sequential picker.
    pub fn sequential(nblocks: u64) -> Self {
        BlockPicker::Sequential {
            next: 0,
            nblocks: nblocks.max(1),
        }
    }

    /// A random picker; `map` = fio's random map (no repeats within a pass).
    pub fn random(nblocks: u64, seed: u64, map: bool) -> Self {
        let nblocks = nblocks.max(1);
        if map {
            BlockPicker::RandomMap {
                pos: 0,
                pass: 0,
                seed,
                perm: Permutation::new(nblocks, seed),
                nblocks,
            }
        } else {
            BlockPicker::Random {
                rng: Pcg64Mcg::seed_from_u64(seed),
                nblocks,
            }
        }
    }

    /// The next block index.
    pub fn next_block(&mut self) -> u64 {
        match self {
            BlockPicker::Sequential { next, nblocks } => {
                let b = *next;
                *next = (b + 1) % *nblocks;
                b
            }
            BlockPicker::RandomMap {
                pos,
                pass,
                seed,
                perm,
                nblocks,
            } => {
                if *pos == *nblocks {
                    *pos = 0;
                    *pass += 1;
                    *perm = Permutation::new(*nblocks, seed.wrapping_add(*pass));
                }
                let b = perm.apply(*pos);
                *pos += 1;
                b
            }
            BlockPicker::Random { rng, nblocks } => rng.gen_range(0..*nblocks),
            BlockPicker::Skewed(s) => s.next_block(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.apply(i);
                assert!(x < n);
                assert!(!seen[x as usize], "n={n} repeats {x}");
                seen[x as usize] = true;
            }
        }
    }

    #[test]
    fn random_map_visits_each_block_once_per_pass() {
        let mut p = BlockPicker::random(50, 7, true);
        let mut a: Vec<u64> = (0..50).map(|_| p.next_block()).collect();
        a.sort();
        assert_eq!(a, (0..50).collect::<Vec<_>>());
        let mut b: Vec<u64> = (0..50).map(|_| p.next_block()).collect();
        b.sort();
        assert_eq!(b, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn sequential_wraps() {
        let mut p = BlockPicker::sequential(3);
        let v: Vec<u64> = (0..5).map(|_| p.next_block()).collect();
        assert_eq!(v, vec![0, 1, 2, 0, 1]);
    }

    fn histogram(s: &mut Skewed, draws: usize, rank: bool) -> Vec<u64> {
        let mut h = vec![0u64; s.n as usize];
        for _ in 0..draws {
            let b = if rank { s.next_rank() } else { s.next_block() };
            h[b as usize] += 1;
        }
        h
    }

    /// Share of the draws that went to the `k` most drawn blocks.
    fn top_share(h: &[u64], k: usize) -> f64 {
        let mut v = h.to_vec();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v[..k].iter().sum::<u64>() as f64 / h.iter().sum::<u64>() as f64
    }

    #[test]
    fn zeta_beyond_a_million_terms() {
        let n = 3_000_000u64;
        for theta in [0.8, 1.2] {
            let exact: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
            let approx = zeta(n, theta);
            assert!(
                (approx / exact - 1.0).abs() < 1e-9,
                "{theta}: {approx} {exact}"
            );
        }
    }

    #[test]
    fn zipf_follows_fio_quick_zipf() {
        let n = 10_000u64;
        let theta = 1.2;
        let mut z = Skewed::zipf(n, theta, None, 5);
        let draws = 1_000_000;
        let h = histogram(&mut z, draws, true);
        let zn = zeta(n, theta);
        // fio draws rank 1 with probability 1/ζ(n) and rank 2 with 2^-θ/ζ(n).
        let p1 = h[0] as f64 / draws as f64;
        let p2 = h[1] as f64 / draws as f64;
        assert!((p1 / (1.0 / zn) - 1.0).abs() < 0.02, "{p1}");
        assert!((p2 / (0.5f64.powf(theta) / zn) - 1.0).abs() < 0.03, "{p2}");
        // The top 10% of ranks take about ζ(n/10)/ζ(n) of the draws.
        let want = zeta(n / 10, theta) / zn;
        let got = h[..1000].iter().sum::<u64>() as f64 / draws as f64;
        assert!((got - want).abs() < 0.02, "{got} vs {want}");
        // Scattered over the blocks, the popularity is the same.
        let mut z = Skewed::zipf(n, theta, None, 5);
        let hb = histogram(&mut z, draws, false);
        assert!((top_share(&hb, 1000) - got).abs() < 0.005);
        assert!(hb[0] < h[0] / 10, "rank 1 is scattered away from block 0");
    }

    #[test]
    fn pareto_is_80_20() {
        // h = 0.2: the most popular 20% of the blocks take 80% of the draws.
        let mut p = Skewed::pareto(10_000, 0.2, None, 1);
        let h = histogram(&mut p, 500_000, false);
        let s = top_share(&h, 2_000);
        assert!((s - 0.8).abs() < 0.01, "{s}");
    }

    #[test]
    fn normal_is_fios_mean_of_twelve() {
        let n = 10_000u64;
        let moments = |s: &mut Skewed| {
            let v: Vec<f64> = (0..200_000).map(|_| s.next_rank() as f64).collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
            (m, var.sqrt())
        };
        // The mean of 12 uniform draws: centred, standard deviation n/12.
        let (m, sd) = moments(&mut Skewed::normal(n, 0.0, None, 2));
        assert!((m / n as f64 - 0.5).abs() < 0.005, "{m}");
        assert!((sd / (n as f64 / 12.0) - 1.0).abs() < 0.02, "{sd}");
        // dev=30 adds a uniform spread of 30% of n.
        let (_, sd) = moments(&mut Skewed::normal(n, 30.0, None, 2));
        let want = ((n as f64 / 12.0).powi(2) + (0.3 * n as f64).powi(2) / 12.0).sqrt();
        assert!((sd / want - 1.0).abs() < 0.02, "{sd} vs {want}");
        // center=0.5 shifts by nothing; center=1 by half the range.
        let mut a = Skewed::normal(n, 0.0, Some(0.5), 2);
        let mut b = Skewed::normal(n, 0.0, None, 2);
        assert_eq!(a.next_block(), b.next_block());
        let c = Skewed::normal(n, 0.0, Some(1.0), 2);
        assert_eq!(c.off, n / 2);
    }

    #[test]
    fn zoned_shares() {
        // fio's example: 60% of accesses to the first 10%, 30% to the next 20%,
        // 8% to the next 30%, 2% to the last 40%.
        let n = 1_000u64;
        let zones = [(60, 0, 100), (30, 100, 200), (8, 300, 300), (2, 600, 400)];
        let zb: Vec<ZoneBlocks> = zones
            .iter()
            .map(|&(access, start, len)| ZoneBlocks { access, start, len })
            .collect();
        let mut z = Skewed::zoned(n, &zb, 3);
        let draws = 400_000;
        let h = histogram(&mut z, draws, false);
        for (access, start, len) in zones {
            let got: u64 = h[start as usize..(start + len) as usize].iter().sum();
            let got = got as f64 / draws as f64;
            assert!(
                (got - access as f64 / 100.0).abs() < 0.005,
                "{start}: {got}"
            );
        }
        // Uniform within a zone.
        let first = &h[..100];
        let mean = first.iter().sum::<u64>() as f64 / 100.0;
        assert!(first.iter().all(|c| (*c as f64 - mean).abs() < 0.2 * mean));
    }

    #[test]
    fn skewed_draws_follow_the_seed() {
        let seq = |seed| {
            let mut z = Skewed::zipf(1 << 20, 0.9, None, seed);
            (0..16).map(|_| z.next_block()).collect::<Vec<_>>()
        };
        assert_eq!(seq(1), seq(1));
        assert_ne!(seq(1), seq(2));
    }

    #[test]
    fn different_seeds_differ() {
        let mut a = BlockPicker::random(1 << 20, 1, true);
        let mut b = BlockPicker::random(1 << 20, 2, true);
        let va: Vec<u64> = (0..8).map(|_| a.next_block()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_block()).collect();
        assert_ne!(va, vb);
    }
}
