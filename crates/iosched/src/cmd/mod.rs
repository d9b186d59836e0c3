//! One module per subcommand.

pub mod kernel_trace;
pub mod sched_replay;
