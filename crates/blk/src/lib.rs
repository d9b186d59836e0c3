//! blk
