//! The Linux block layer's request path, as pure state machines.
//!
//! This crate holds what the kernel's `block/` directory holds: the request and bio
//! types ([`request`]), the elevator interface and the schedulers ([`elevator`]), the
//! elevator core's generic merging ([`merge`]) and the blk-mq core that moves requests
//! from submitters through the scheduler to a driver ([`mq`]). Nothing here reads a
//! clock or performs I/O: time is passed in, devices are reached through the
//! [`mq::Driver`] trait, and timers are returned as "call me at t". The same code
//! therefore runs in the simulator, in the trace replayer and in the emulator.
//!
//! ```
//! use blk::elevator::{self, QueueParams};
//! let sched = elevator::create("none", &QueueParams::default()).unwrap();
//! assert_eq!(sched.name(), "none");
//! ```

pub mod bench;
pub mod cgroup;
pub mod elevator;
pub mod merge;
pub mod mq;
pub mod request;
pub mod timeline;
pub mod types;
pub mod zoned;

pub use cgroup::{CgroupInfo, CgroupTable};
pub use request::{Bio, BioId, Request, RqArena, RqId};
pub use types::{CgroupId, Dir, IoClass, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};
