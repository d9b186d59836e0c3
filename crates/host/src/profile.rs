//! Host profiles: the CPUs, what each step of an I/O costs them, and the locks.
//!
//! A host profile is a TOML file of top-level `key = value` lines in the same
//! format, and checked the same way, as a device profile: every field is required,
//! an unknown or duplicate field, a wrong type or an out-of-range value is an error
//! naming the file, the line and the field. `model = "free"` is the host that costs
//! nothing (only `name`, `about` and `model`); `model = "cpus"` is the CPU model,
//! with every field of [`FIELDS`].

use crate::cpu::SchedParams;
use crate::lock::LockCosts;
use devices::profile::Doc;
use devices::ProfileError;

/// One documented field of a host profile: what `iosched hosts` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// Key in the profile.
    pub key: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// What it is.
    pub help: &'static str,
}

macro_rules! fields {
    ($( $key:ident : $unit:literal = $help:literal ),* $(,)?) => {
        /// The CPU costs of a host, ns unless the field's unit says otherwise.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Costs {
            $( #[doc = $help] pub $key: u64, )*
        }

        /// Every cost field with its unit and meaning, in profile order.
        pub const FIELDS: &[FieldInfo] = &[
            $( FieldInfo { key: stringify!($key), unit: $unit, help: $help }, )*
        ];

        impl Costs {
            fn from_doc(d: &mut Doc) -> Result<Costs, ProfileError> {
                Ok(Costs {
                    $( $key: d.int(stringify!($key), 0, 1_000_000_000)?, )*
                })
            }

            /// `(key, value)` of every field, in profile order.
            pub fn values(&self) -> Vec<(&'static str, u64)> {
                vec![ $( (stringify!($key), self.$key), )* ]
            }
        }
    };
}

fields! {
    fio_io_ns: "ns" = "fio's own user-space work per I/O (io_u handling, offsets, statistics)",
    syscall_ns: "ns" = "one system call's entry and exit",
    psync_io_ns: "ns" = "pread/pwrite on a block device with O_DIRECT: VFS and direct-I/O setup, per I/O",
    libaio_io_ns: "ns" = "io_submit's work per iocb (aio_read/aio_write and direct-I/O setup)",
    uring_io_ns: "ns" = "io_uring's work per SQE (io_issue_sqe and direct-I/O setup)",
    posixaio_io_ns: "ns" = "POSIX AIO's hand-off to glibc's helper thread and back, per I/O",
    pin_ns: "ns" = "pinning a direct I/O's user pages (bio_iov_iter_get_pages), per I/O; saved by io_uring's fixedbufs (part of the engine costs above)",
    reap_ns: "ns" = "taking one completion (io_getevents event, CQE, or the read's return path)",
    wakeup_ns: "ns" = "waking a sleeping thread and switching to it (try_to_wake_up, context switch)",
    bio_ns: "ns" = "bio allocation, submit_bio and blk_mq_submit_bio, elevator and tags excluded",
    tag_ns: "ns" = "getting and freeing a request's tag (sbitmap)",
    driver_ns: "ns" = "the driver's queue_rq: command set-up and doorbell",
    irq_ns: "ns" = "one completion interrupt: entry, the driver's handler, exit",
    ipi_ns: "ns" = "completing on another CPU: the IPI sent and received (rq_affinity)",
    complete_ns: "ns" = "per request completion: blk_mq_end_request, bio_endio, request free",
    page_copy_ns: "ns" = "copying one 4 KiB page to or from the page cache (buffered I/O)",
    none_insert_ns: "ns" = "none: a request into the software queue (ctx->lock)",
    none_dispatch_ns: "ns" = "none: a request taken from the software queues",
    merge_ns: "ns" = "an elevator's bio_merge lookup (inside its lock)",
    dd_insert_ns: "ns" = "mq-deadline: dd_insert_request per request (inside dd->lock, tree steps apart)",
    dd_dispatch_ns: "ns" = "mq-deadline: one dd_dispatch_request call (inside dd->lock)",
    dd_finish_ns: "ns" = "mq-deadline: dd_finish_request (atomic counters, no lock)",
    kyber_insert_ns: "ns" = "kyber: kyber_insert_requests per request (kcq->lock)",
    kyber_dispatch_ns: "ns" = "kyber: one kyber_dispatch_request call (khd->lock, tokens)",
    kyber_finish_ns: "ns" = "kyber: kyber_finish_request and kyber_completed_request (token free, latency histograms)",
    bfq_insert_ns: "ns" = "BFQ: bfq_insert_request per request (inside bfqd->lock, tree steps apart)",
    bfq_dispatch_ns: "ns" = "BFQ: one bfq_dispatch_request call (inside bfqd->lock)",
    bfq_finish_ns: "ns" = "BFQ: bfq_finish_requeue_request (inside bfqd->lock)",
    tree_step_ns: "ns" = "one level walked in a scheduler's sorted tree (rb-tree, B-WF2Q+ service tree)",
    percpu_line_ns: "ns" = "reading one cache line of another CPU's per-CPU counters from this CPU's cache (a line its CPU wrote since costs line_remote_ns instead)",
    lock_ns: "ns" = "an uncontended spinlock acquire and release",
    line_llc_ns: "ns" = "one cache-line transfer between CPUs sharing a last-level cache",
    line_remote_ns: "ns" = "one cache-line transfer between CPUs in different last-level caches or sockets",
    lock_lines: "lines" = "cache lines a new lock holder pulls over (lock word and the scheduler's hot data)",
    waiter_ns: "ns" = "extra cost of a lock hand-over per CPU spinning beside it",
}

/// The engine families a host prices differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// psync, sync, pvsync, pvsync2: one system call per I/O.
    Sync,
    /// libaio.
    Libaio,
    /// io_uring.
    IoUring,
    /// POSIX AIO (glibc's helper threads).
    Posixaio,
}

/// The system time an engine spends per I/O before the block layer (the call's
/// entry and exit apart); io_uring with registered buffers (`fixedbufs`) does not
/// pin pages.
pub fn engine_io_ns(c: &Costs, e: EngineKind, fixedbufs: bool) -> u64 {
    match e {
        EngineKind::Sync => c.psync_io_ns,
        EngineKind::Libaio => c.libaio_io_ns,
        EngineKind::IoUring if fixedbufs => c.uring_io_ns.saturating_sub(c.pin_ns),
        EngineKind::IoUring => c.uring_io_ns,
        EngineKind::Posixaio => c.posixaio_io_ns,
    }
}

/// A host: CPUs and costs, or the free host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostProfile {
    /// Name (`--host NAME`).
    pub name: String,
    /// One line on what it is.
    pub about: String,
    /// The CPU model, or `None` for the free host.
    pub cpus: Option<CpuHost>,
}

/// The CPU model's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuHost {
    /// CPUs (hardware threads) the host has.
    pub nr_cpus: u32,
    /// CPUs sharing one last-level cache (`cpus_share_cache`).
    pub llc_cpus: u32,
    /// `nr_cpu_ids`: the possible CPUs per-CPU data is summed over.
    pub possible_cpus: u32,
    /// The cost table.
    pub costs: Costs,
}

impl CpuHost {
    /// The lock constants of this host.
    pub fn lock_costs(&self) -> LockCosts {
        let c = &self.costs;
        LockCosts {
            lock_ns: c.lock_ns,
            line_llc_ns: c.line_llc_ns,
            line_remote_ns: c.line_remote_ns,
            lines: c.lock_lines,
            waiter_ns: c.waiter_ns,
            llc_cpus: self.llc_cpus,
        }
    }

    /// The CPU scheduler's parameters for `cpus` CPUs.
    pub fn sched_params(&self, cpus: u32) -> SchedParams {
        SchedParams::for_cpus(cpus)
    }

    /// Do CPUs `a` and `b` share a last-level cache?
    pub fn share_cache(&self, a: u32, b: u32) -> bool {
        self.llc_cpus > 0 && a / self.llc_cpus == b / self.llc_cpus
    }
}

impl HostProfile {
    /// Is this the free host?
    pub fn is_free(&self) -> bool {
        self.cpus.is_none()
    }

    /// The profile's fields as `(key, unit, value, meaning)`, for listings.
    pub fn params(&self) -> Vec<(String, &'static str, String, &'static str)> {
        let Some(h) = &self.cpus else {
            return Vec::new();
        };
        let mut v = vec![
            (
                "cpus".into(),
                "CPUs",
                h.nr_cpus.to_string(),
                "CPUs (hardware threads)",
            ),
            (
                "llc_cpus".into(),
                "CPUs",
                h.llc_cpus.to_string(),
                "CPUs sharing a last-level cache (cpus_share_cache, rq_affinity=1)",
            ),
            (
                "possible_cpus".into(),
                "CPUs",
                h.possible_cpus.to_string(),
                "nr_cpu_ids: CPUs per-CPU data is summed over",
            ),
        ];
        for (f, (_, val)) in FIELDS.iter().zip(h.costs.values()) {
            v.push((f.key.to_string(), f.unit, val.to_string(), f.help));
        }
        v
    }
}

/// Parse and validate a host profile document called `file`.
pub fn parse_host(file: &str, text: &str) -> Result<HostProfile, ProfileError> {
    let mut d = Doc::parse(file, text)?;
    let name = d.str("name")?;
    if name.is_empty() || name.chars().any(|c| c.is_whitespace()) {
        return Err(d.err("name", "must be non-empty without spaces"));
    }
    let about = d.str("about")?;
    let model = d.str("model")?;
    let cpus = match model.as_str() {
        "free" => None,
        "cpus" => {
            let nr_cpus = d.int("cpus", 1, 4096)? as u32;
            let llc_cpus = d.int("llc_cpus", 1, 4096)? as u32;
            let possible_cpus = d.int("possible_cpus", 1, 8192)? as u32;
            if possible_cpus < nr_cpus {
                return Err(d.err(
                    "possible_cpus",
                    format!("{possible_cpus} is below cpus ({nr_cpus}): every CPU is possible"),
                ));
            }
            let costs = Costs::from_doc(&mut d)?;
            if costs.lock_lines > 64 {
                return Err(d.err("lock_lines", "expected at most 64 lines"));
            }
            Some(CpuHost {
                nr_cpus,
                llc_cpus,
                possible_cpus,
                costs,
            })
        }
        other => {
            return Err(d.err(
                "model",
                format!("unknown host model '{other}': expected cpus or free"),
            ))
        }
    };
    d.finish()?;
    Ok(HostProfile { name, about, cpus })
}

const BUILTIN: &[(&str, &str)] = &[
    (
        "x86-server.toml",
        include_str!("../profiles/x86-server.toml"),
    ),
    (
        "ryzen-7950x.toml",
        include_str!("../profiles/ryzen-7950x.toml"),
    ),
    (
        "kunpeng920.toml",
        include_str!("../profiles/kunpeng920.toml"),
    ),
    ("laptop-4c.toml", include_str!("../profiles/laptop-4c.toml")),
    ("free.toml", include_str!("../profiles/free.toml")),
];

/// The host `iosched run` uses when none is named.
pub const DEFAULT_HOST: &str = "x86-server";

/// No host of that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownHost(pub String);

impl std::fmt::Display for UnknownHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = hosts().into_iter().map(|h| h.name).collect();
        write!(
            f,
            "unknown host '{}' (known: {}; or load one with --host-file)",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownHost {}

/// Every built-in host.
pub fn hosts() -> Vec<HostProfile> {
    builtin().to_vec()
}

/// The built-in hosts, parsed once per process: a sweep asks for a host twice per
/// run, and parsing every profile's TOML each time cost a sweep of short runs more
/// than its runs.
fn builtin() -> &'static [HostProfile] {
    static ALL: std::sync::OnceLock<Vec<HostProfile>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(f, t)| {
                parse_host(&format!("<builtin {f}>"), t)
                    .unwrap_or_else(|e| panic!("built-in host profile is invalid: {e}"))
            })
            .collect()
    })
}

/// The built-in host called `name`.
pub fn host(name: &str) -> Result<HostProfile, UnknownHost> {
    builtin()
        .iter()
        .find(|h| h.name == name)
        .cloned()
        .ok_or_else(|| UnknownHost(name.to_string()))
}

/// Load a user's host profile file.
pub fn load_host_file(path: &std::path::Path) -> Result<HostProfile, ProfileError> {
    let (file, text) = devices::profile::read_file(path)?;
    parse_host(&file, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_hosts_parse() {
        let all = hosts();
        assert!(all.iter().any(|h| h.name == DEFAULT_HOST));
        assert!(host("free").unwrap().is_free());
        assert!(!host(DEFAULT_HOST).unwrap().is_free());
    }

    fn server_text() -> String {
        include_str!("../profiles/x86-server.toml").to_string()
    }

    #[test]
    fn a_bad_field_is_named_with_its_line() {
        let t = server_text().replace("irq_ns = ", "irq_ns = -");
        let e = parse_host("h.toml", &t).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("irq_ns"));
        let line = t.lines().position(|l| l.starts_with("irq_ns")).unwrap() + 1;
        assert_eq!(e.line, Some(line));
        let t = server_text().replace("lock_lines = ", "lock_lines = 1.5 #");
        let e = parse_host("h.toml", &t).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("lock_lines"));
        let t = format!("{}\nbogus = 1\n", server_text());
        let e = parse_host("h.toml", &t).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("bogus"));
        let t: String = server_text()
            .lines()
            .filter(|l| !l.starts_with("tag_ns"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = parse_host("h.toml", &t).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tag_ns"));
        let t = server_text().replace("model = \"cpus\"", "model = \"gpu\"");
        let e = parse_host("h.toml", &t).unwrap_err();
        assert!(e.to_string().contains("unknown host model 'gpu'"), "{e}");
        let t = server_text().replace("possible_cpus = 16", "possible_cpus = 2");
        let e = parse_host("h.toml", &t).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("possible_cpus"));
    }
}
