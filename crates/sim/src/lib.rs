//! sim
pub mod fio;
