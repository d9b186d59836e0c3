//! The simulator: a deterministic discrete-event engine that runs fio jobs against the
//! block layer ([`blk`]) and a device model ([`devices`]) in virtual time, and reports
//! what fio would report.

pub mod engine;
pub mod job;
pub mod offsets;
pub mod simulate;

pub mod kernel_trace;
pub mod replay;
