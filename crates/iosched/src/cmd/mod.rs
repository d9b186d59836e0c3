//! One module per subcommand.

pub mod bench;
pub mod compare;
pub mod devices;
pub mod fio;
pub mod plot;
pub mod run;
pub mod schedulers;
pub mod sim_opts;
