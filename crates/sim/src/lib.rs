//! sim
pub mod report;
pub mod stats;
