//! Write-back caches: coalescing a write with the dirty extents it touches.

use std::collections::BTreeMap;

/// Merge the write `[start, end)` with the disjoint dirty extents of `dirty` (keyed
/// by their start; `end_of(start, extent)` gives an extent's end) that it overlaps,
/// or that it merely touches while the merged extent stays within `max_len` sectors.
/// Absorbed extents are removed from `dirty`; `scratch` is working space. Returns the
/// merged extent `(start, end)`, for the caller to insert, and the number of sectors
/// the removed extents held.
pub(crate) fn coalesce<V>(
    dirty: &mut BTreeMap<u64, V>,
    scratch: &mut Vec<(u64, u64)>,
    mut start: u64,
    mut end: u64,
    max_len: u64,
    end_of: impl Fn(u64, &V) -> u64,
) -> (u64, u64, u64) {
    scratch.clear();
    // Walk down from the last extent starting at or before `end`.
    for (&k, e) in dirty.range(..=end).rev() {
        let e_end = end_of(k, e);
        if e_end < start {
            break;
        }
        let overlaps = k < end && e_end > start;
        let (s2, e2) = (start.min(k), end.max(e_end));
        if overlaps || e2 - s2 <= max_len {
            scratch.push((k, e_end));
            start = s2;
            end = e2;
        }
    }
    let mut removed = 0;
    for &(k, e_end) in scratch.iter() {
        dirty.remove(&k);
        removed += e_end - k;
    }
    (start, end, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_always_merges_adjacency_up_to_the_limit() {
        let mut d: BTreeMap<u64, u64> = [(0, 8), (8, 16), (20, 30), (40, 48)].into();
        let mut s = vec![];
        // Overlaps [20, 30) and touches [8, 16) and [40, 48): all within 48 sectors.
        let r = coalesce(&mut d, &mut s, 16, 40, 48, |_, &e| e);
        assert_eq!(r, (0, 48, 8 + 8 + 10 + 8));
        assert!(d.is_empty());
        // With a 24-sector limit only the overlapped extent and what fits join.
        let mut d: BTreeMap<u64, u64> = [(0, 8), (8, 16), (20, 30), (40, 48)].into();
        let r = coalesce(&mut d, &mut s, 16, 40, 24, |_, &e| e);
        assert_eq!(r, (16, 40, 10));
        assert_eq!(d.len(), 3);
    }
}
