//! The elevator interface (`struct elevator_mq_ops`) and the registry of schedulers.
//!
//! A scheduler is a pure state machine: the block layer calls it with an [`ElvCtx`]
//! that lends it the request arena, the clock and the generic merge state for the
//! duration of one call. It never sees the device, never reads a clock of its own and
//! never sleeps: a scheduler that wants to run later returns the time from
//! [`Elevator::next_timer`] and the driver (simulator, replayer, emulator) calls
//! [`Elevator::timer_fired`] then.
//!
//! | kernel op | method |
//! | --- | --- |
//! | `limit_depth` | [`Elevator::limit_depth`] |
//! | `depth_updated` | [`Elevator::depth_updated`] |
//! | `prepare_request` | [`Elevator::prepare_request`] |
//! | `bio_merge` | [`Elevator::bio_merge`] |
//! | `request_merge` / `request_merged` / `requests_merged` | same names |
//! | `next_request` / `former_request` | same names |
//! | `insert_requests` | [`Elevator::insert_requests`] |
//! | `dispatch_request` | [`Elevator::dispatch_request`] |
//! | `has_work` | [`Elevator::has_work`] |
//! | `completed_request` | [`Elevator::completed_request`] |
//! | `requeue_request` | [`Elevator::requeue_request`] |
//! | `finish_request` | [`Elevator::finish_request`] |
//! | sysfs `iosched/` attributes | [`Elevator::tunables`], [`Elevator::get_tunable`], [`Elevator::set_tunable`] |

pub mod bfq;
pub mod kyber;
pub mod mq_deadline;
pub mod none;

use crate::cgroup::CgroupTable;
use crate::merge::{MergeKind, MergeState};
use crate::request::{Bio, BioArena, BioId, RqArena, RqId};
use crate::types::{Jiffies, Ns, Op, ReqFlags};
use std::fmt;

/// What a scheduler is lent for one call.
pub struct ElvCtx<'a> {
    /// Current time.
    pub now: Ns,
    /// The kernel's jiffies at `now` (derived from `now` and `HZ`, or taken from a trace).
    pub jiffies: Jiffies,
    /// The hardware queue being run or inserted into.
    pub hctx: u16,
    /// All live requests.
    pub rqs: &'a mut RqArena,
    /// Bios chained to live requests.
    pub bios: &'a mut BioArena,
    /// The elevator core's generic merge state (`q->last_merge`, the end-sector hash,
    /// limits) and the list of requests freed by merges.
    pub merge: &'a mut MergeState,
}

/// Static facts about the queue a scheduler is attached to (`elevator_init_mq` time).
#[derive(Clone, Debug)]
pub struct QueueParams {
    /// Scheduler tags (`nr_requests`).
    pub nr_requests: u32,
    /// Driver tags (device queue depth).
    pub queue_depth: u32,
    /// Number of hardware queues.
    pub nr_hw_queues: u16,
    /// Number of CPUs (software queues).
    pub nr_cpus: u32,
    /// The kernel's `HZ`.
    pub hz: u32,
    /// The device is rotational (`QUEUE_FLAG_ROT`).
    pub rotational: bool,
}

impl Default for QueueParams {
    /// The replay environment of the design: one hardware queue, 256 scheduler tags,
    /// queue depth 128, 8 CPUs, HZ 1000, non-rotational.
    fn default() -> Self {
        QueueParams {
            nr_requests: 256,
            queue_depth: 128,
            nr_hw_queues: 1,
            nr_cpus: 8,
            hz: 1000,
            rotational: false,
        }
    }
}

/// One sysfs tunable: what `iosched schedulers` lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunableInfo {
    /// sysfs attribute name.
    pub name: &'static str,
    /// Unit as sysfs shows it (`ms`, `us`, `ns`, `requests`, `bool`, ...).
    pub unit: &'static str,
    /// Default value as sysfs shows it (may depend on the queue, e.g. `nr_requests`).
    pub default: String,
    /// What it does.
    pub help: &'static str,
}

/// A seed-patch variant a scheduler can be switched to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantInfo {
    /// Value of the `variant` setting.
    pub name: &'static str,
    /// What it changes, and where it comes from.
    pub help: &'static str,
}

/// Errors from reading or writing a tunable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunableError {
    /// No such attribute.
    #[error("scheduler '{sched}' has no tunable '{name}' (known: {known})")]
    Unknown {
        /// Scheduler name.
        sched: &'static str,
        /// The name asked for.
        name: String,
        /// Comma-separated list of valid names.
        known: String,
    },
    /// The value was rejected, as the kernel's store function would reject it.
    #[error("invalid value '{value}' for {sched} tunable '{name}': {reason}")]
    Invalid {
        /// Scheduler name.
        sched: &'static str,
        /// Tunable name.
        name: String,
        /// Rejected value.
        value: String,
        /// Why.
        reason: String,
    },
}

/// Work a scheduler did beyond its calls, in units a host model prices: the part of
/// its CPU cost that depends on its state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ElvWork {
    /// Levels walked in sorted structures (rb-tree inserts and lookups, B-WF2Q+
    /// service-tree updates, one per level of the group hierarchy).
    pub tree_steps: u64,
    /// Cache lines of other CPUs' per-CPU data read (v5.14 mq-deadline's `dd_sum`).
    pub percpu_lines: u64,
    /// Passes over every CPU's per-CPU data (each reads [`ElvWork::percpu_lines`]'s
    /// share; the lines other CPUs keep writing cost a transfer each time).
    pub percpu_passes: u64,
}

/// The elevator interface; see the module docs for the mapping to the kernel.
pub trait Elevator {
    /// Scheduler name as the kernel spells it (`mq-deadline`, `kyber`, `bfq`, `none`).
    fn name(&self) -> &'static str;

    /// A copy of the scheduler in its current state, for replays that try a
    /// decision and go back (`kernel-trace compare`); `None` if it cannot be copied.
    fn clone_box(&self) -> Option<Box<dyn Elevator>> {
        None
    }

    /// The work done since the last call ([`ElvWork`]), counting afresh. Default:
    /// none beyond the calls themselves.
    fn take_work(&mut self) -> ElvWork {
        ElvWork::default()
    }

    /// Whether `finish_request` takes the scheduler's queue-wide lock (BFQ's
    /// `bfq_finish_requeue_request` does; mq-deadline's `dd_finish_request` does not).
    fn finish_locks(&self) -> bool {
        false
    }

    /// Whether insertion and bio merging stay off the scheduler's lock and dispatch
    /// is serialized (mq-deadline with the January 2024 scalability series: per-CPU
    /// insertion lists spliced in at dispatch, a CPU finding another dispatching
    /// leaves, merge lookups skipped when the lock is contended).
    fn lock_split(&self) -> bool {
        false
    }

    /// Whether the scheduler's lock is per hardware queue (kyber's `khd->lock`)
    /// rather than one for the whole queue.
    fn lock_per_hctx(&self) -> bool {
        false
    }

    /// `limit_depth`: the shallow depth for an allocation of this kind, or `None` for
    /// the full `nr_requests`.
    fn limit_depth(&self, _op: Op, _flags: ReqFlags) -> Option<u32> {
        None
    }
    /// `limit_depth` with the allocating process known (BFQ limits a process whose
    /// queue or groups hold more than their share of tags); by default
    /// [`Elevator::limit_depth`].
    fn limit_depth_for(&self, op: Op, flags: ReqFlags, _pid: u32) -> Option<u32> {
        self.limit_depth(op, flags)
    }
    /// `depth_updated`: `nr_requests` changed (also called once at init).
    fn depth_updated(&mut self, _nr_requests: u32) {}
    /// `prepare_request`: a request was allocated for this scheduler.
    fn prepare_request(&mut self, _ctx: &mut ElvCtx, _rq: RqId) {}
    /// `exit_icq`: process `pid` exited, and with it its I/O context (BFQ drops the
    /// process's queues, `bfq_exit_icq`). Requests it left behind stay queued or in
    /// flight. Returns whether the scheduler asks for a queue run
    /// (`bfq_schedule_dispatch`).
    fn exit_icq(&mut self, _ctx: &mut ElvCtx, _pid: u32) -> bool {
        false
    }
    /// `bio_merge`: try to merge `bio` (already stored as `bio_id`) into a queued
    /// request. Returns true when merged; the bio then belongs to that request.
    fn bio_merge(&mut self, _ctx: &mut ElvCtx, _bio: &Bio, _bio_id: BioId) -> bool {
        false
    }
    /// `request_merge`: the elevator's own lookup for a merge candidate (mq-deadline:
    /// front merges through the sort tree).
    fn request_merge(&mut self, _ctx: &mut ElvCtx, _bio: &Bio) -> Option<(RqId, MergeKind)> {
        None
    }
    /// `request_merged`: `rq` grew by a bio merge of `kind`.
    fn request_merged(&mut self, _ctx: &mut ElvCtx, _rq: RqId, _kind: MergeKind) {}
    /// `requests_merged`: `next` was absorbed into `rq` and will be freed.
    fn requests_merged(&mut self, _ctx: &mut ElvCtx, _rq: RqId, _next: RqId) {}
    /// `next_request`: the request after `rq` in the elevator's sort order.
    fn next_request(&self, _ctx: &ElvCtx, _rq: RqId) -> Option<RqId> {
        None
    }
    /// `former_request`: the request before `rq` in the elevator's sort order.
    fn former_request(&self, _ctx: &ElvCtx, _rq: RqId) -> Option<RqId> {
        None
    }
    /// `insert_requests`: take ownership of `rqs`, in order.
    fn insert_requests(&mut self, ctx: &mut ElvCtx, rqs: &[RqId], at_head: bool);
    /// `dispatch_request`: the next request for the device, or `None` when nothing may
    /// be dispatched now (even if requests are queued).
    fn dispatch_request(&mut self, ctx: &mut ElvCtx) -> Option<RqId>;
    /// `has_work`.
    fn has_work(&self, ctx: &ElvCtx) -> bool;
    /// `completed_request`: the device finished `rq` (`now` in ns, as the kernel
    /// passes it).
    fn completed_request(&mut self, _ctx: &mut ElvCtx, _rq: RqId, _now: Ns) {}
    /// `requeue_request`: the driver gave `rq` back.
    fn requeue_request(&mut self, _ctx: &mut ElvCtx, _rq: RqId) {}
    /// `finish_request`: `rq` is being freed (after completion, or after being merged
    /// into another request).
    fn finish_request(&mut self, ctx: &mut ElvCtx, rq: RqId);

    /// Replay support (`iosched kernel-trace compare`): take the queued request `rq`
    /// out now as if [`Elevator::dispatch_request`] had chosen it, updating the same
    /// state a real dispatch of it would (batch, direction, position, counters), so a
    /// replay can continue from the kernel's choice after a disagreement. Returns false
    /// (and changes nothing) when the scheduler does not support it.
    fn force_dispatch(&mut self, _ctx: &mut ElvCtx, _rq: RqId) -> bool {
        false
    }

    /// Replay support (`iosched kernel-trace compare`): set the token pool of
    /// `domain` (as debugfs names it, `READ`, `WRITE`, ...) to `depth`, as the
    /// recorded kernel's pool was (kyber's `kyber_adjust` events). Returns false
    /// when the scheduler has no such pool.
    fn force_pool_depth(&mut self, _domain: &str, _depth: u32) -> bool {
        false
    }

    /// When the scheduler wants [`Elevator::timer_fired`] called, if at all.
    fn next_timer(&self) -> Option<Ns> {
        None
    }
    /// A timer requested through [`Elevator::next_timer`] is due.
    fn timer_fired(&mut self, _ctx: &mut ElvCtx) {}
    /// After [`Elevator::timer_fired`]: whether hardware queue `hctx` is to be run
    /// now (the kernel's wake callbacks run the hctxs that waited). Called once per
    /// hctx; the default runs every one.
    fn timer_runs_hctx(&mut self, _hctx: u16) -> bool {
        true
    }

    /// `ELEVATOR_FLAG_SQ_SCHED` → `QUEUE_FLAG_SQ_SCHED`: one scheduler instance for
    /// all hardware queues, whose `dispatch_request` may return a request of any
    /// hctx (mq-deadline, BFQ). Running "all hardware queues" then runs only the
    /// current CPU's hctx and those with a non-empty dispatch list.
    fn single_queue(&self) -> bool {
        false
    }

    /// The sysfs attributes, with units and defaults.
    fn tunables(&self) -> Vec<TunableInfo>;
    /// Read an attribute as sysfs shows it.
    fn get_tunable(&self, name: &str) -> Result<String, TunableError>;
    /// Write an attribute, validated as the kernel's store function validates it.
    /// The pseudo-attribute `variant` selects a seed-patch variant.
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError>;
    /// The run's cgroup table (paths, nesting, `io.bfq.weight`) was built or grew.
    /// Drivers call it before the first request naming a cgroup that is new to the
    /// scheduler; schedulers without group scheduling ignore it.
    fn set_cgroups(&mut self, _table: &CgroupTable) {}
    /// Seed-patch variants this scheduler offers.
    fn variants(&self) -> Vec<VariantInfo> {
        Vec::new()
    }
    /// Counters as the kernel exposes them in debugfs, for reports.
    fn debugfs(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A registered scheduler.
pub struct SchedulerEntry {
    /// Name, as given to `--sched` and fio's `ioscheduler=`.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Constructor.
    pub make: fn(&QueueParams) -> Box<dyn Elevator>,
}

impl fmt::Debug for SchedulerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerEntry")
            .field("name", &self.name)
            .finish()
    }
}

/// Every scheduler iosched has.
pub static SCHEDULERS: &[SchedulerEntry] = &[
    SchedulerEntry {
        name: "none",
        about: "no scheduling: requests go to the device in arrival order",
        make: |p| Box::new(none::NoneSched::new(p)),
    },
    SchedulerEntry {
        name: "mq-deadline",
        about: "deadline: sector-ordered batches, read/write expiry, I/O priority levels (v6.19)",
        make: |p| Box::new(mq_deadline::MqDeadline::new(p)),
    },
    SchedulerEntry {
        name: "bfq",
        about: "budget fair queueing: per-process queues, cgroup groups, hierarchical B-WF2Q+ weights, budgets, idling, weight raising (v6.13)",
        make: |p| {
            // The expiration log is for tests that drive a `Bfq` directly; a
            // scheduler made for a run or a replay must not grow with simulated time.
            let mut b = bfq::Bfq::new(p);
            b.record_expirations = false;
            Box::new(b)
        },
    },
    SchedulerEntry {
        name: "kyber",
        about: "token-based latency control per request type (reads, writes, discards, other)",
        make: |p| Box::new(kyber::Kyber::new(p)),
    },
];

/// Unknown scheduler name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduler '{0}' (known: {known})", known = known_names())]
pub struct UnknownScheduler(pub String);

fn known_names() -> String {
    SCHEDULERS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Build the scheduler called `name` for a queue.
pub fn create(name: &str, params: &QueueParams) -> Result<Box<dyn Elevator>, UnknownScheduler> {
    SCHEDULERS
        .iter()
        .find(|s| s.name == name)
        .map(|s| (s.make)(params))
        .ok_or_else(|| UnknownScheduler(name.to_string()))
}

/// Helper for schedulers: the `Unknown` error listing `tunables`.
pub fn unknown_tunable(sched: &'static str, name: &str, tunables: &[TunableInfo]) -> TunableError {
    TunableError::Unknown {
        sched,
        name: name.to_string(),
        known: tunables
            .iter()
            .map(|t| t.name)
            .chain(std::iter::once("variant"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Helper for schedulers: parse an integer as the kernel's `kstrtoint(.., 0, ..)`
/// does (decimal, `0x` hex, leading `0` octal, optional sign, one trailing newline).
pub fn parse_kernel_int(s: &str) -> Option<i64> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_int_bases() {
        assert_eq!(parse_kernel_int("10"), Some(10));
        assert_eq!(parse_kernel_int("0x10"), Some(16));
        assert_eq!(parse_kernel_int("010"), Some(8));
        assert_eq!(parse_kernel_int("-3\n"), Some(-3));
        assert_eq!(parse_kernel_int("0"), Some(0));
        assert_eq!(parse_kernel_int(""), None);
        assert_eq!(parse_kernel_int("1.5"), None);
        assert_eq!(parse_kernel_int("09"), None);
    }

    #[test]
    fn registry_knows_none() {
        let e = create("none", &QueueParams::default()).unwrap();
        assert_eq!(e.name(), "none");
        let err = create("cfq", &QueueParams::default()).err().unwrap();
        assert!(err.to_string().contains("unknown scheduler 'cfq'"));
    }
}
