//! A single-threaded model of the kernel's scalable bitmap (`lib/sbitmap.c`,
//! `include/linux/sbitmap.h`, v6.17+), as far as Kyber's token pools need it.
//!
//! Which token numbers a pool hands out matters: a shrunk pool admits a request only if
//! the allocation finds a free bit below the new depth, and tokens still held above it
//! keep their words busy until they are released. So this model keeps the kernel's
//! allocation order exactly:
//!
//! - the bitmap is split into words of `1 << shift` bits (`sbitmap_calculate_shift`:
//!   64 bits per word, halved until the depth spans at least four words);
//! - an allocation starts at the word holding the allocating CPU's hint and takes the
//!   **first free bit** of that word (`__sbitmap_get`: non-round-robin maps search each
//!   word from bit 0), then moves word by word, wrapping;
//! - a freed bit goes to the word's `cleared` mask (`sbitmap_deferred_clear_bit`) and
//!   only becomes allocatable when an allocation finds the word otherwise exhausted
//!   (`sbitmap_deferred_clear`) or when the map is resized;
//! - hints: after an allocation that landed exactly on the hint, the hint moves to the
//!   next bit (`update_alloc_hint_after_get`); a failed allocation resets it to 0; a
//!   release on CPU `c` sets CPU `c`'s hint to the released bit
//!   (`sbitmap_update_cpu_hint`). Where the kernel draws a random hint (at init, and when
//!   a hint is beyond the depth) this model uses 0, as the replay environment specifies.
//!
//! The wait-queue side of `struct sbitmap_queue` (`sbitmap_queue_wake_up`) is modelled
//! by [`SbitmapQueue`]: releases are counted while someone waits and a wake-up is due
//! every `wake_batch` releases.

/// `BITS_PER_LONG` on the 64-bit kernels we compare against.
const BITS_PER_LONG: u32 = 64;
/// `SBQ_WAIT_QUEUES`.
const SBQ_WAIT_QUEUES: u32 = 8;
/// `SBQ_WAKE_BATCH`.
const SBQ_WAKE_BATCH: u32 = 8;

/// `sbitmap_calculate_shift`: log2 of the bits per word for a map of `depth` bits.
pub fn calculate_shift(depth: u32) -> u32 {
    let mut shift = BITS_PER_LONG.ilog2();
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

/// Mask of the low `bits` bits of a word.
const fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// `find_next_zero_bit(word, depth, hint)`, `None` for "≥ depth".
fn find_next_zero_bit(word: u64, depth: u32, hint: u32) -> Option<u32> {
    if hint >= depth {
        return None;
    }
    let free = !word & low_mask(depth) & !low_mask(hint);
    (free != 0).then(|| free.trailing_zeros())
}

/// `struct sbitmap` (non-round-robin, with per-CPU allocation hints).
#[derive(Clone, Debug)]
pub struct Sbitmap {
    shift: u32,
    depth: u32,
    map_nr: u32,
    /// Allocated bits, one entry per word ever allocated (`map[i].word`).
    word: Vec<u64>,
    /// Freed bits not yet returned to `word` (`map[i].cleared`).
    cleared: Vec<u64>,
    /// Per-CPU allocation hints (`alloc_hint`).
    alloc_hint: Vec<u32>,
}

impl Sbitmap {
    /// `sbitmap_init_node(depth, shift = -1, round_robin = false, alloc_hint = true)`
    /// for `nr_cpus` CPUs, all hints 0.
    pub fn new(depth: u32, nr_cpus: u32) -> Sbitmap {
        let shift = calculate_shift(depth);
        let map_nr = depth.div_ceil(1 << shift);
        Sbitmap {
            shift,
            depth,
            map_nr,
            word: vec![0; map_nr as usize],
            cleared: vec![0; map_nr as usize],
            alloc_hint: vec![0; nr_cpus.max(1) as usize],
        }
    }

    /// Current depth (`sb->depth`).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Bits per word.
    pub fn bits_per_word(&self) -> u32 {
        1 << self.shift
    }

    /// The allocation hint of `cpu`.
    pub fn hint(&self, cpu: u32) -> u32 {
        self.alloc_hint.get(cpu as usize).copied().unwrap_or(0)
    }

    fn hint_slot(&mut self, cpu: u32) -> &mut u32 {
        let i = cpu as usize;
        if i >= self.alloc_hint.len() {
            self.alloc_hint.resize(i + 1, 0);
        }
        &mut self.alloc_hint[i]
    }

    /// `__map_depth`: usable bits of word `index`.
    fn map_depth(&self, index: u32) -> u32 {
        if index + 1 == self.map_nr {
            self.depth - (index << self.shift)
        } else {
            1 << self.shift
        }
    }

    /// `__map_depth_with_shallow` (v6.17+: the shallow depth is a share of the whole
    /// map, spread over the words, the remainder going to the first words).
    fn map_depth_with_shallow(&self, index: u32, shallow_depth: u32) -> u32 {
        let word_depth = self.map_depth(index);
        if shallow_depth >= self.depth {
            return word_depth;
        }
        let prod = word_depth as u64 * shallow_depth as u64;
        let mut d = prod / self.depth as u64;
        if prod % self.depth as u64 >= (index as u64 + 1) * word_depth as u64 {
            d += 1;
        }
        d as u32
    }

    /// `sbitmap_deferred_clear`: move the word's cleared bits back to free. Without
    /// cleared bits, report whether the word still has a free bit in the searched range
    /// (always false single-threaded right after a failed search).
    fn deferred_clear(&mut self, index: usize, depth: u32, alloc_hint: u32, wrap: bool) -> bool {
        if self.cleared[index] == 0 {
            if depth == 0 {
                return false;
            }
            let mut mask = low_mask(depth);
            if !wrap && alloc_hint != 0 {
                mask &= !low_mask(alloc_hint);
            }
            return self.word[index] & mask != mask;
        }
        let m = std::mem::take(&mut self.cleared[index]);
        self.word[index] &= !m;
        true
    }

    /// `__sbitmap_get_word`: claim the first free bit at or after `hint` (wrapping to 0
    /// once if `wrap` and the hint was not 0).
    fn get_word(&mut self, index: usize, depth: u32, hint: u32, wrap: bool) -> Option<u32> {
        let wrap = wrap && hint != 0;
        let nr = find_next_zero_bit(self.word[index], depth, hint).or_else(|| {
            if wrap {
                find_next_zero_bit(self.word[index], depth, 0)
            } else {
                None
            }
        })?;
        self.word[index] |= 1u64 << nr;
        Some(nr)
    }

    /// `sbitmap_find_bit_in_word`.
    fn find_bit_in_word(&mut self, index: usize, depth: u32, hint: u32, wrap: bool) -> Option<u32> {
        loop {
            if let Some(nr) = self.get_word(index, depth, hint, wrap) {
                return Some(nr);
            }
            if !self.deferred_clear(index, depth, hint, wrap) {
                return None;
            }
        }
    }

    /// `sbitmap_find_bit`: word by word from `index`, wrapping around the map once.
    fn find_bit(
        &mut self,
        shallow_depth: u32,
        mut index: u32,
        mut hint: u32,
        wrap: bool,
    ) -> Option<u32> {
        for _ in 0..self.map_nr {
            let depth = self.map_depth_with_shallow(index, shallow_depth);
            if depth != 0 {
                if let Some(nr) = self.find_bit_in_word(index as usize, depth, hint, wrap) {
                    return Some(nr + (index << self.shift));
                }
            }
            hint = 0;
            index += 1;
            if index >= self.map_nr {
                index = 0;
            }
        }
        None
    }

    /// `update_alloc_hint_before_get` (0 instead of a random hint).
    fn hint_before_get(&mut self, cpu: u32) -> u32 {
        let depth = self.depth;
        let h = self.hint_slot(cpu);
        if *h >= depth {
            *h = 0;
        }
        *h
    }

    /// `update_alloc_hint_after_get`.
    fn hint_after_get(&mut self, cpu: u32, depth: u32, hint: u32, nr: Option<u32>) {
        match nr {
            None => *self.hint_slot(cpu) = 0,
            Some(nr) if nr == hint => {
                let mut h = nr + 1;
                if h >= depth.saturating_sub(1) {
                    h = 0;
                }
                *self.hint_slot(cpu) = h;
            }
            Some(_) => {}
        }
    }

    /// `sbitmap_get` on `cpu`: a free bit, or `None` when the map is full.
    pub fn get(&mut self, cpu: u32) -> Option<u32> {
        if self.depth == 0 {
            return None;
        }
        let depth = self.depth;
        let hint = self.hint_before_get(cpu);
        // Non-round-robin: the hint only picks the word; each word is searched from 0.
        let nr = self.find_bit(u32::MAX, hint >> self.shift, 0, true);
        self.hint_after_get(cpu, depth, hint, nr);
        nr
    }

    /// `sbitmap_get_shallow` on `cpu`: like [`Sbitmap::get`] but using at most about
    /// `shallow_depth` bits of the whole map (v6.17+ semantics), searching from the hint
    /// bit within its word.
    pub fn get_shallow(&mut self, cpu: u32, shallow_depth: u32) -> Option<u32> {
        if self.depth == 0 {
            return None;
        }
        let depth = self.depth;
        let hint = self.hint_before_get(cpu);
        let bit = hint & (self.bits_per_word() - 1);
        let nr = self.find_bit(shallow_depth, hint >> self.shift, bit, true);
        self.hint_after_get(cpu, depth, hint, nr);
        nr
    }

    /// `sbitmap_deferred_clear_bit` followed by `sbitmap_update_cpu_hint`: release bit
    /// `nr` on `cpu`.
    pub fn clear(&mut self, nr: u32, cpu: u32) {
        self.cleared_only(nr);
        self.update_cpu_hint(cpu, nr);
    }

    /// `sbitmap_resize`: apply pending clears, then change the depth. Bits held beyond
    /// the new depth stay held until released.
    pub fn resize(&mut self, depth: u32) {
        for i in 0..self.map_nr as usize {
            self.deferred_clear(i, 0, 0, false);
        }
        self.depth = depth;
        self.map_nr = depth.div_ceil(self.bits_per_word());
        if self.word.len() < self.map_nr as usize {
            self.word.resize(self.map_nr as usize, 0);
            self.cleared.resize(self.map_nr as usize, 0);
        }
    }

    /// `sbitmap_weight`: bits in use within the current depth.
    pub fn weight(&self) -> u32 {
        (0..self.map_nr)
            .map(|i| {
                let m = low_mask(self.map_depth(i));
                let i = i as usize;
                (self.word[i] & m).count_ones() - (self.cleared[i] & m).count_ones()
            })
            .sum()
    }

    /// `sbitmap_cleared`: released bits not yet moved back.
    pub fn cleared(&self) -> u32 {
        (0..self.map_nr)
            .map(|i| (self.cleared[i as usize] & low_mask(self.map_depth(i))).count_ones())
            .sum()
    }
}

/// `struct sbitmap_queue`: a [`Sbitmap`] plus the batched wake-up of waiters.
#[derive(Clone, Debug)]
pub struct SbitmapQueue {
    /// The bitmap.
    pub sb: Sbitmap,
    min_shallow_depth: u32,
    wake_batch: u32,
    /// Registered waiters (`ws_active`).
    ws_active: u32,
    completion_cnt: u32,
    wakeup_cnt: u32,
}

impl SbitmapQueue {
    /// `sbitmap_queue_init_node(depth, shift = -1, round_robin = false)`.
    pub fn new(depth: u32, nr_cpus: u32) -> SbitmapQueue {
        let mut q = SbitmapQueue {
            sb: Sbitmap::new(depth, nr_cpus),
            min_shallow_depth: u32::MAX,
            wake_batch: 0,
            ws_active: 0,
            completion_cnt: 0,
            wakeup_cnt: 0,
        };
        q.wake_batch = q.calc_wake_batch(depth);
        q
    }

    /// `sbq_calc_wake_batch`.
    fn calc_wake_batch(&self, depth: u32) -> u32 {
        (depth.min(self.min_shallow_depth) / SBQ_WAIT_QUEUES).clamp(1, SBQ_WAKE_BATCH)
    }

    /// Current wake batch.
    pub fn wake_batch(&self) -> u32 {
        self.wake_batch
    }

    /// Number of registered waiters.
    pub fn ws_active(&self) -> u32 {
        self.ws_active
    }

    /// `sbitmap_queue_resize`.
    pub fn resize(&mut self, depth: u32) {
        self.wake_batch = self.calc_wake_batch(depth);
        self.sb.resize(depth);
    }

    /// `__sbitmap_queue_get` on `cpu`.
    pub fn get(&mut self, cpu: u32) -> Option<u32> {
        self.sb.get(cpu)
    }

    /// `sbitmap_add_wait_queue`.
    pub fn add_wait(&mut self) {
        self.ws_active += 1;
    }

    /// `sbitmap_del_wait_queue`.
    pub fn del_wait(&mut self) {
        self.ws_active = self.ws_active.saturating_sub(1);
    }

    /// `sbitmap_queue_clear`: release `nr` on `cpu`. Returns true when a wake-up is
    /// due: the kernel then wakes every waiter (Kyber's wait entries are
    /// non-exclusive, so `wake_up_nr` wakes them all on each wait queue it visits).
    pub fn clear(&mut self, nr: u32, cpu: u32) -> bool {
        self.sb.cleared_only(nr);
        let wake = self.wake_up(1);
        self.sb.update_cpu_hint(cpu, nr);
        wake
    }

    /// `sbitmap_queue_wake_up(sbq, nr)`: count releases while someone waits; one
    /// batch of `wake_batch` releases triggers a wake-up.
    fn wake_up(&mut self, nr: u32) -> bool {
        if self.ws_active == 0 {
            return false;
        }
        self.completion_cnt = self.completion_cnt.wrapping_add(nr);
        if self.completion_cnt.wrapping_sub(self.wakeup_cnt) < self.wake_batch {
            return false;
        }
        self.wakeup_cnt = self.wakeup_cnt.wrapping_add(self.wake_batch);
        true
    }
}

impl Sbitmap {
    /// `sbitmap_deferred_clear_bit` alone.
    fn cleared_only(&mut self, nr: u32) {
        let index = (nr >> self.shift) as usize;
        let bit = 1u64 << (nr & (self.bits_per_word() - 1));
        debug_assert!(self.word[index] & bit != 0, "releasing a free bit");
        self.cleared[index] |= bit;
    }

    /// `sbitmap_update_cpu_hint`.
    fn update_cpu_hint(&mut self, cpu: u32, nr: u32) {
        if nr < self.depth {
            *self.hint_slot(cpu) = nr;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_spreads_over_four_words() {
        assert_eq!(calculate_shift(256), 6);
        assert_eq!(calculate_shift(128), 5);
        assert_eq!(calculate_shift(64), 4);
        assert_eq!(calculate_shift(16), 2);
        assert_eq!(calculate_shift(3), 6);
        assert_eq!(calculate_shift(1024), 6);
    }

    #[test]
    fn first_free_bit_and_deferred_reuse() {
        // 16 bits, 4 per word.
        let mut sb = Sbitmap::new(16, 2);
        let got: Vec<u32> = (0..5).map(|_| sb.get(0).unwrap()).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        // Freeing bit 1 on CPU 1 points CPU 1's hint at it, but the bit is only
        // reusable once its word is exhausted: word 0 is full except the cleared bit.
        sb.clear(1, 1);
        assert_eq!(sb.hint(1), 1);
        assert_eq!(sb.get(1), Some(1));
        // CPU 0's hint (5, in word 1) finds word 1's first free bit.
        assert_eq!(sb.get(0), Some(5));
        sb.clear(4, 0);
        // Hint 4 (word 1): bit 4 is cleared but word 1 still has free bits 6, 7.
        assert_eq!(sb.get(0), Some(6));
        assert_eq!(sb.weight(), 6);
    }

    #[test]
    fn shrink_keeps_held_bits_busy() {
        let mut sb = Sbitmap::new(16, 1);
        for _ in 0..16 {
            sb.get(0).unwrap();
        }
        assert_eq!(sb.get(0), None);
        sb.resize(4);
        sb.clear(9, 0);
        // Only word 0 is in the map and it is full.
        assert_eq!(sb.get(0), None);
        sb.clear(2, 0);
        assert_eq!(sb.get(0), Some(2));
    }

    #[test]
    fn shallow_depth_spreads_over_words() {
        let mut sb = Sbitmap::new(256, 1);
        let mut n = 0;
        while sb.get_shallow(0, 192).is_some() {
            n += 1;
        }
        assert_eq!(n, 192);
    }

    #[test]
    fn wake_batches() {
        let mut q = SbitmapQueue::new(16, 1);
        assert_eq!(q.wake_batch(), 2);
        let a = q.get(0).unwrap();
        let b = q.get(0).unwrap();
        // No waiter: releases are not counted.
        assert!(!q.clear(a, 0));
        q.add_wait();
        assert!(!q.clear(b, 0));
        let c = q.get(0).unwrap();
        assert!(q.clear(c, 0));
    }
}
