//! DiskSim drives: the parameter-file parser ([`params`]), the importer to an
//! `hdd-table` profile ([`import`](mod@import)), the table-driven disk model ([`model`]), the
//! validation-trace reader and replay ([`trace`]) and DiskSim's demerit figure
//! ([`demerit`]). See `docs/devices.md`, "DiskSim validation drives".

pub mod demerit;
pub mod import;
pub mod layout;
pub mod model;
pub mod params;
pub mod trace;

pub use import::{import, Imported};
pub use model::{TableDisk, TableParams};
pub use params::DiskSimError;

/// Where DiskSim's validation drives are: `$IOSCHED_DATA/disksim-valid` if set, else
/// the copy in the repository (`data/disksim-valid`, with DiskSim's COPYING notice).
/// `None` (with a line on stderr saying so) when they are absent, so that tests
/// needing them can skip plainly.
pub fn validation_data_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("IOSCHED_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data"));
    let d = base.join("disksim-valid");
    if d.join("atlas_III.parv").exists() {
        Some(d)
    } else {
        eprintln!(
            "SKIP: DiskSim validation data not found at {} (set IOSCHED_DATA)",
            d.display()
        );
        None
    }
}
