//! Bio splitting (`__bio_split_to_limits`, `bio_split_rw_at`, `get_max_io_size`).
//!
//! A bio larger than the queue allows is cut into pieces before a request is
//! allocated. Every piece but the last is marked `REQ_NOMERGE` (`bio_submit_split`),
//! so the pieces stay separate requests; they are submitted front to back, as the
//! kernel resubmits the remainder through `current->bio_list`.

use super::{Driver, Queue, Submitted};
use crate::merge::MergeLimits;
use crate::request::Bio;
use crate::types::{Ns, Op, ReqFlags, Sector};

/// Sectors per page: direct I/O from page-aligned memory has one segment per page.
const SECTORS_PER_PAGE: u32 = 8;

/// The largest piece `bio` may be submitted as: `max_sectors`, and no more pages
/// than `max_segments`, and for reads and writes not across a `chunk_sectors`
/// boundary (a zoned device's zone size: `get_max_io_size`). Flushes, discards,
/// zone appends (never split: `bio_split_rw` is not used for them) and zone
/// management operations (no data) are not split here.
pub(super) fn max_io_sectors(bio: &Bio, lim: &MergeLimits) -> u32 {
    match bio.op {
        Op::Read | Op::Write => {
            let max = lim
                .max_sectors
                .min(lim.max_segments.saturating_mul(SECTORS_PER_PAGE))
                .max(1);
            match lim.chunk_sectors {
                0 => max,
                chunk => {
                    let to_boundary = chunk - bio.sector.0 % chunk;
                    (max as u64).min(to_boundary) as u32
                }
            }
        }
        _ => u32::MAX,
    }
}

impl Queue {
    /// Submit `bio` as pieces of at most `max` sectors.
    pub(super) fn submit_split(
        &mut self,
        now: Ns,
        bio: Bio,
        max: u32,
        mut drv: Option<&mut dyn Driver>,
    ) -> Submitted {
        let lim = self.merge.limits;
        let mut sector = bio.sector.0;
        let mut left = bio.nr_sectors;
        // The pieces: `max` for the first, then each as its own position allows
        // (a chunk boundary moves the cut).
        let mut cuts = Vec::new();
        let mut at = sector;
        let mut rest = left;
        let mut n = max;
        while rest > 0 {
            let take = rest.min(n);
            cuts.push(take);
            rest -= take;
            at += take as u64;
            let mut next = bio;
            next.sector = Sector(at);
            n = max_io_sectors(&next, &lim);
        }
        let pieces = cuts.len() as u32;
        *self.split_left.entry(bio.owner).or_insert(0) += pieces;
        for n in cuts {
            left -= n;
            let mut piece = bio;
            piece.sector = Sector(sector);
            piece.nr_sectors = n;
            if left > 0 {
                piece.flags = piece.flags.with(ReqFlags::NOMERGE);
            }
            sector += n as u64;
            let d = drv.as_mut().map(|d| &mut **d as &mut dyn Driver);
            self.submit_one(now, piece, d);
        }
        Submitted::Split(pieces)
    }
}
