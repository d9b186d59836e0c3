//! sim

pub mod kernel_trace;
pub mod replay;
