//! The simulator: a deterministic discrete-event engine that runs fio jobs against the
//! block layer ([`blk`]) and a device model ([`devices`]) in virtual time, and reports
//! what fio would report.
//!
//! - [`fio`] parses fio job files and fio's command line;
//! - [`job`] and [`offsets`] model what one job clone submits, [`verify`] what a
//!   verifying job reads back;
//! - [`pagecache`] is the device's page cache for buffered I/O (writes, fsync);
//! - [`engine`] is the event queue, [`simulate`] wires jobs, queue and device together;
//!   [`emulate`] drives the same queue and device from a caller's clock (`iosched serve`);
//! - [`stats`] collects fio's statistics, [`report`] prints them as fio does, [`iolog`]
//!   writes fio's latency, bandwidth and IOPS logs;
//! - [`bench`](mod@bench) holds the built-in throughput benchmarks.

pub mod bench;
pub mod emulate;
pub mod engine;
pub mod fio;
pub mod iolog;
pub mod job;
pub mod offsets;
pub mod output;
pub mod pagecache;
pub mod report;
pub mod runner;
pub mod simulate;
pub mod spread;
pub mod stats;
pub mod steadystate;
pub mod trace;
pub mod verify;
pub mod zbd;

pub mod kernel_trace;
pub mod replay;
