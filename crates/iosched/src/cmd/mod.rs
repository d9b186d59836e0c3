//! One module per subcommand.

pub mod bench;
pub mod compare;
pub mod devices;
pub mod fio;
pub mod hosts;
pub mod kernel_trace;
pub mod output;
pub mod plot;
pub mod replay;
pub mod report;
pub mod run;
pub mod sched_replay;
pub mod schedulers;
pub mod serve;
pub mod signals;
pub mod sim_opts;
pub mod sweep;
mod sweep_log;
