//! The commands of `iosched` as a library: the command-line program (`main.rs`) and
//! the Python package (`python/`) share them, so a run from Python is the run the
//! command line makes, with the same checks and messages.

pub mod cmd;
