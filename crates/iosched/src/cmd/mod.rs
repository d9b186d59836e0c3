//! One module per subcommand.

pub mod bench;
pub mod devices;
pub mod fio;
pub mod run;
pub mod schedulers;
pub mod sim_opts;
