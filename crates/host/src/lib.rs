//! Host models: what the CPUs of the machine running the I/O cost it.
//!
//! The kernel's I/O path runs on CPUs, and on fast devices the CPUs, not the
//! device, set the ceiling: fio's own per-I/O work, the system call, the
//! block layer's submission path, the scheduler's work under its lock, the
//! driver, the completion interrupt and the wake-up of the waiting thread. This
//! crate models that host side, for the simulator to drive:
//!
//! - [`cpu::Cpus`]: simulated CPUs, each running one thing at a time — threads
//!   under a fair-share scheduler with time slices, and interrupt work ahead of
//!   them — with user, system and interrupt time and context switches counted;
//! - [`lock::SpinLock`]: a queued spinlock whose waiters spin on their CPUs, with
//!   hand-over costs that grow with distance and with the number of spinners;
//! - [`profile`]: host profiles (TOML, embedded and loadable) with the CPU count
//!   and topology and the cost table, each constant documented with its source in
//!   `docs/hosts.md`; `free` is the host that costs nothing.
//!
//! Like the schedulers and the device models, everything here is a pure state
//! machine: time is passed in, nothing is read from the system.
//!
//! ```
//! use host::cpu::{Cpus, Item, SchedParams};
//! let mut cpus = Cpus::new(1, SchedParams::for_cpus(1));
//! let a = cpus.add_thread(0, &[]);
//! let b = cpus.add_thread(0, &[]);
//! cpus.run(0, a, Item::new(0, 1_000, 1));
//! cpus.run(0, b, Item::new(0, 1_000, 2));
//! let mut done = Vec::new();
//! while let Some(t) = cpus.next_event() {
//!     cpus.advance(t, &mut done);
//!     cpus.settle(t);
//! }
//! assert_eq!(done, vec![1, 2]); // one CPU: b ran after a
//! assert_eq!(cpus.cpu_time(0).busy(), 2_000);
//! ```

pub mod cpu;
pub mod lock;
pub mod profile;

pub use profile::{
    host, hosts, load_host_file, parse_host, CpuHost, HostProfile, UnknownHost, DEFAULT_HOST,
};
