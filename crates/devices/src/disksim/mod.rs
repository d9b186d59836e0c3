//! DiskSim drives: the parameter-file parser ([`params`]), the importer to an
//! `hdd-table` profile ([`import`]), the table-driven disk model ([`model`]), the
//! validation-trace reader and replay ([`trace`]) and DiskSim's demerit figure
//! ([`demerit`]). See `docs/devices.md`, "DiskSim validation drives".

pub mod demerit;
pub mod import;
pub mod model;
pub mod params;
pub mod trace;

pub use import::{import, Imported};
pub use model::{TableDisk, TableParams};
pub use params::DiskSimError;
