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
/// than `max_segments`. Flushes and discards are not split here.
pub(super) fn max_io_sectors(bio: &Bio, lim: &MergeLimits) -> u32 {
    match bio.op {
        Op::Read | Op::Write => lim
            .max_sectors
            .min(lim.max_segments.saturating_mul(SECTORS_PER_PAGE))
            .max(1),
        Op::Flush | Op::Discard => u32::MAX,
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
        let pieces = bio.nr_sectors.div_ceil(max);
        *self.split_left.entry(bio.owner).or_insert(0) += pieces;
        let mut sector = bio.sector.0;
        let mut left = bio.nr_sectors;
        while left > 0 {
            let n = left.min(max);
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
