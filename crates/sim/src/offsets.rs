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

    #[test]
    fn different_seeds_differ() {
        let mut a = BlockPicker::random(1 << 20, 1, true);
        let mut b = BlockPicker::random(1 << 20, 2, true);
        let va: Vec<u64> = (0..8).map(|_| a.next_block()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_block()).collect();
        assert_ne!(va, vb);
    }
}
