//! CPU → hardware queue mapping (`blk_mq_map_queues` over `group_cpus_evenly`).
//!
//! The simulator has one NUMA node and no SMT siblings, so `group_cpus_evenly`
//! reduces to cutting the CPUs, in ascending order, into `nr_queues` runs of
//! consecutive CPUs; when the CPUs do not divide evenly, the **first**
//! `nr_cpus mod nr_queues` groups get one CPU more (the kernel's `extra_grps`).
//! Queue `q` then serves the CPUs of group `q`. A device with more hardware queues
//! than CPUs gets only as many as there are CPUs (the NVMe driver asks for at most
//! one I/O queue per possible CPU), see [`effective_nr_hw_queues`].

/// The number of hardware queues a device with `nr_hw_queues` gets on `nr_cpus`
/// CPUs: at least 1, at most one per CPU.
pub fn effective_nr_hw_queues(nr_hw_queues: u16, nr_cpus: u32) -> u16 {
    (nr_hw_queues.max(1) as u32).min(nr_cpus.max(1)) as u16
}

/// `mq_map[cpu]` for `nr_cpus` CPUs over `nr_queues` hardware queues (after
/// [`effective_nr_hw_queues`]).
pub fn map_queues(nr_cpus: u32, nr_queues: u16) -> Vec<u16> {
    let nr_cpus = nr_cpus.max(1);
    let nr_queues = effective_nr_hw_queues(nr_queues, nr_cpus) as u32;
    let per = nr_cpus / nr_queues;
    let mut extra = nr_cpus - per * nr_queues;
    let mut map = Vec::with_capacity(nr_cpus as usize);
    for q in 0..nr_queues {
        let mut n = per;
        if extra > 0 {
            n += 1;
            extra -= 1;
        }
        for _ in 0..n {
            map.push(q as u16);
        }
    }
    debug_assert_eq!(map.len(), nr_cpus as usize);
    map
}

/// The hardware queue of `cpu` in `map` (CPUs beyond the map wrap around, as the
/// simulator's job CPU numbers do).
pub fn hctx_of_cpu(map: &[u16], cpu: u32) -> u16 {
    if map.is_empty() {
        return 0;
    }
    map[cpu as usize % map.len()]
}

/// The first (lowest) CPU mapped to `hctx`: where its run work executes when the
/// model needs one CPU for it.
pub fn first_cpu_of(map: &[u16], hctx: u16) -> u32 {
    map.iter().position(|&h| h == hctx).unwrap_or(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_queue_per_cpu_and_grouped() {
        assert_eq!(map_queues(8, 8), vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(map_queues(8, 4), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(map_queues(8, 1), vec![0; 8]);
        // 8 CPUs on 3 queues: 3 + 3 + 2, the extra CPUs go to the first groups.
        assert_eq!(map_queues(8, 3), vec![0, 0, 0, 1, 1, 1, 2, 2]);
        // More queues than CPUs: one queue per CPU.
        assert_eq!(map_queues(4, 8), vec![0, 1, 2, 3]);
        assert_eq!(effective_nr_hw_queues(8, 4), 4);
        assert_eq!(first_cpu_of(&map_queues(8, 4), 3), 6);
    }
}
