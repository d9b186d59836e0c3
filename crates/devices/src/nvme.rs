//! NVMe SSDs: the [`crate::ssd::Flash`] model with `interface = "nvme"`.
//!
//! What changes from SATA, and why it matters to the block layer:
//!
//! - **Queues**: `nr_hw_queues` submission/completion queue pairs (one per CPU on
//!   real systems), each `queue_depth` deep; the device accepts
//!   `nr_hw_queues × queue_depth` commands. With more than one hardware queue the
//!   kernel attaches no scheduler by default (`none`).
//! - **Flush** is an ordinary queued command (NVMe Flush): it neither waits for the
//!   queue to drain nor blocks later commands; it completes once the write buffer is
//!   programmed. A drive without a volatile write cache (`write_cache = false`, as on
//!   drives with power-loss protection) completes it at once.
//! - **FUA** is a bit in the Write command: the write completes when its page is
//!   programmed, not when it reaches the buffer.
//! - **Link**: PCIe is full duplex, so reads and writes move data concurrently;
//!   per-command overheads are small (no ATA taskfile, no SCSI translation).
//!
//! Everything else (die parallelism, page reads and programs, the write buffer) is
//! shared with SATA SSDs and documented in [`crate::ssd`].

pub use crate::ssd::{Flash as Nvme, FlashParams as NvmeParams, Interface};
