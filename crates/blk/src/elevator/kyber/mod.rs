//! Kyber (`block/kyber-iosched.c`), following **mainline v6.19**.
//!
//! Kyber does not sort. It splits requests into four scheduling domains by operation
//! and limits how many requests of each domain the device holds at once with a
//! device-wide pool of **tokens** per domain. A timer-driven controller measures
//! completion latencies against per-domain targets and resizes the pools: when the
//! device looks congested it throttles domains that meet their target, and it relaxes
//! domains that miss theirs. Requests waiting for a token sit in per-CPU, per-domain
//! lists (`kyber_ctx_queue`) where new bios can still merge into them.
//!
//! | domain | ops | pool (max = initial) | batch | target | sysfs |
//! | --- | --- | --- | --- | --- | --- |
//! | READ | `REQ_OP_READ` | 256 | 16 | 2 ms | `read_lat_nsec` |
//! | WRITE | `REQ_OP_WRITE` (sync and async) | 128 | 8 | 10 ms | `write_lat_nsec` |
//! | DISCARD | `REQ_OP_DISCARD` | 64 | 1 | 5 s (fixed) | — |
//! | OTHER | anything else | 16, never resized | 1 | not measured | — |
//!
//! # Tunables (`/sys/block/<dev>/queue/iosched/`)
//!
//! | name | unit | default | write semantics |
//! | --- | --- | --- | --- |
//! | `read_lat_nsec` | ns | 2000000 | decimal u64 (`kstrtoull(.., 10, ..)`), stored as is |
//! | `write_lat_nsec` | ns | 10000000 | same |
//!
//! Pseudo-attribute `variant` (not in the kernel): `mainline` (default) or `pre-4.18`,
//! see below. The async depth (`limit_depth`) is `nr_requests × 75 / 100` scheduler tags
//! for requests that are not synchronous (`op_is_sync`), the v6.17–v6.19 rule.
//!
//! # Mapping to the kernel
//!
//! | kernel | here |
//! | --- | --- |
//! | `kyber_queue_data_alloc`, `kyber_init_hctx` | [`Kyber::new`] |
//! | `kyber_sched_domain` | [`Domain::of_op`] |
//! | `kyber_limit_depth`, `kyber_depth_updated` | `limit_depth`, `depth_updated` |
//! | `kyber_prepare_request` | `prepare_request` (token := none) |
//! | `kyber_bio_merge` + `blk_bio_list_merge` | `bio_merge`, [`Kyber::bio_list_merge`] |
//! | `kyber_insert_requests` | `insert_requests` |
//! | `kyber_dispatch_request`, `kyber_dispatch_cur_domain` | `dispatch_request`, [`Kyber::dispatch_cur_domain`] |
//! | `kyber_get_domain_token`, `kyber_domain_wake` | [`Kyber::get_domain_token`], [`Kyber::domain_wake`] |
//! | `kyber_flush_busy_kcqs` | [`Kyber::flush_busy_kcqs`] |
//! | `kyber_has_work` | `has_work` |
//! | `kyber_completed_request`, `add_latency_sample` | `completed_request` |
//! | `kyber_finish_request` (also `requeue_request`), `rq_clear_domain_token` | `finish_request`, `requeue_request` |
//! | `kyber_timer_fn`, `calculate_percentile`, `kyber_resize_domain` | `timer_fired`, [`Kyber::calculate_percentile`], [`Kyber::resize_domain`] |
//! | `domain_tokens[]` (`struct sbitmap_queue`) | [`sbitmap::SbitmapQueue`] |
//!
//! # Modelling notes
//!
//! - **Token allocation order** follows sbitmap exactly (see [`sbitmap`]); hints start
//!   at 0 instead of the kernel's random values. Dispatch allocates on the CPU the
//!   hardware queue runs on (its first CPU in blk-mq's CPU → hctx map: CPU 0 for the
//!   replay environment's single hctx); a token is released on the request's
//!   submitting CPU (`rq->mq_ctx->cpu`), which moves that CPU's hint.
//! - **Several hardware queues**: as in the kernel, the token pools, latency
//!   histograms and timer are per queue (`kyber_queue_data`), while the kcqs, the
//!   flushed per-domain lists, `cur_domain`, `batching` and the token wait state are
//!   per hctx (`kyber_hctx_data`): `insert_requests`, `bio_merge`, `has_work` and
//!   `dispatch_request` act on `ctx.hctx`. A token wake-up runs only the hctxs that
//!   waited ([`Elevator::timer_runs_hctx`]); with one hctx every timer runs it, as
//!   before.
//! - **Latency histograms** are per CPU in the kernel; the timer sums them all before
//!   use, so one set (`cpu_latency`) gives identical percentiles.
//! - **Timer**: `timer_reduce(jiffies + HZ/10)` on every measured completion; the wake-up
//!   time is the ns at which jiffies reaches the expiry (exact when jiffies derive from
//!   the clock, `now + Δjiffies × 10⁹/HZ` when the caller supplies its own jiffies).
//! - **Token wake-ups**: when a hardware queue found a domain out of tokens it registers
//!   on the pool; the pool wakes all registered queues every `wake_batch` releases
//!   (`clamp(depth/8, 1, 8)`), as sbitmap does. The kernel's wake callback runs the
//!   hardware queue asynchronously; here it is requested as an immediate timer
//!   ([`Elevator::next_timer`] returns the release time), whose delivery makes the block
//!   layer run the queue.
//! - A released token is forgotten (`token = None`) so that a request freed twice
//!   (requeue, then finish) cannot release twice; the kernel relies on the next
//!   `prepare_request`/dispatch to overwrite it.
//!
//! # Variant `pre-4.18` (seed: "kyber: make kyber more friendly with merging")
//!
//! Before v4.18 Kyber had neither `insert_requests` nor `bio_merge`. Requests went to
//! blk-mq's per-CPU software queues (one list per CPU, all operations mixed), bio merges
//! scanned the submitting CPU's list (last 8 requests, `blk_mq_attempt_merge`), and
//! `kyber_dispatch_cur_domain`, whenever the current domain's hctx list was empty, first
//! moved **every** request of **every** busy software queue into Kyber's per-domain
//! hctx lists (`kyber_flush_busy_ctxs`, at most once per dispatch call), whether or not a
//! token was available. Since blk-mq runs the queue right after each insert, the
//! software queues are emptied by the very next dispatch call and new bios find nothing
//! to merge with: requests waiting for tokens sit in the hctx lists, which no merge path
//! looks at. This variant models exactly that structure with today's heuristics
//! (four domains, histograms, same tokens); `has_work` also reports non-empty software
//! queues, as blk-mq's pending check did. The pre-v4.20 latency heuristic
//! (mean latency, three domains) is **not** modelled: the variant isolates the merge
//! structure, which is what the seed experiment measures.

pub mod sbitmap;

use super::{
    unknown_tunable, Elevator, ElvCtx, QueueParams, TunableError, TunableInfo, VariantInfo,
};
use crate::merge::{
    bio_attempt_back_merge, bio_attempt_front_merge, bio_merge_ok, bio_mergeable, try_merge,
    MergeKind,
};
use crate::request::{Bio, BioId, RqId};
use crate::types::{Jiffies, Ns, Op, ReqFlags};
use sbitmap::SbitmapQueue;
use std::collections::VecDeque;

/// A scheduling domain (`KYBER_READ` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// `KYBER_READ`.
    Read = 0,
    /// `KYBER_WRITE`.
    Write = 1,
    /// `KYBER_DISCARD`.
    Discard = 2,
    /// `KYBER_OTHER`.
    Other = 3,
}

impl Domain {
    /// All domains in dispatch round-robin order.
    pub const ALL: [Domain; 4] = [Domain::Read, Domain::Write, Domain::Discard, Domain::Other];

    /// `kyber_sched_domain`: the domain of an operation.
    pub const fn of_op(op: Op) -> Domain {
        match op {
            Op::Read => Domain::Read,
            Op::Write => Domain::Write,
            Op::Discard => Domain::Discard,
            _ => Domain::Other,
        }
    }

    /// Index for per-domain arrays.
    pub const fn idx(self) -> usize {
        self as usize
    }

    /// The kernel's name (`kyber_domain_names`).
    pub const fn name(self) -> &'static str {
        KYBER_DOMAIN_NAMES[self as usize]
    }
}

/// `KYBER_NUM_DOMAINS`.
const NUM_DOMAINS: usize = 4;
/// Domains whose latency is measured (all but OTHER).
const MEASURED: usize = 3;
const KYBER_DOMAIN_NAMES: [&str; NUM_DOMAINS] = ["READ", "WRITE", "DISCARD", "OTHER"];
/// `kyber_depth`: maximum (and initial) device-wide depth per domain.
pub const KYBER_DEPTH: [u32; NUM_DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size`: requests dispatched in a row per domain.
pub const KYBER_BATCH_SIZE: [u32; NUM_DOMAINS] = [16, 8, 1, 1];
/// `kyber_latency_targets`: default targets in ns.
pub const KYBER_LATENCY_TARGETS: [u64; MEASURED] = [2_000_000, 10_000_000, 5_000_000_000];
/// `KYBER_ASYNC_PERCENT`.
const KYBER_ASYNC_PERCENT: u32 = 75;
/// `KYBER_LATENCY_SHIFT`: bucket width = target >> 2.
const KYBER_LATENCY_SHIFT: u32 = 2;
/// `KYBER_GOOD_BUCKETS`: buckets 0..4 are "≤ target".
const KYBER_GOOD_BUCKETS: u8 = 1 << KYBER_LATENCY_SHIFT;
/// `KYBER_LATENCY_BUCKETS`.
const KYBER_LATENCY_BUCKETS: usize = 2 << KYBER_LATENCY_SHIFT;
/// `KYBER_TOTAL_LATENCY`.
const TOTAL: usize = 0;
/// `KYBER_IO_LATENCY`.
const IO: usize = 1;
/// `blk_bio_list_merge` looks at this many requests from the tail.
const BIO_LIST_MERGE_CHECKED: usize = 8;

/// Which merge structure Kyber uses (the seed-patch switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// v4.18+: per-CPU per-domain `kyber_ctx_queue` lists, flushed only with a token.
    Mainline,
    /// v4.12–v4.17: blk-mq software queues, all flushed whenever a domain is empty.
    Pre418,
}

impl Variant {
    const fn name(self) -> &'static str {
        match self {
            Variant::Mainline => "mainline",
            Variant::Pre418 => "pre-4.18",
        }
    }
}

/// Latency histograms: `[domain][total, I/O][bucket]`.
type Buckets = [[[u32; KYBER_LATENCY_BUCKETS]; 2]; MEASURED];

/// Kyber's per-request data (`rq->elv.priv[0]`, plus the domain computed at insert).
#[derive(Clone, Copy, Debug)]
struct RqPriv {
    /// Held token; `None` is the kernel's `-1`.
    token: Option<u32>,
    domain: u8,
}

/// A set of software contexts (`kcq_map[domain]`, `hctx->ctx_map`), iterated in
/// ascending index order as `sbitmap_for_each_set` does.
#[derive(Clone, Debug, Default)]
struct CtxMask {
    words: Vec<u64>,
}

impl CtxMask {
    fn set(&mut self, i: usize) {
        let w = i / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (i % 64);
    }
    fn any(&self) -> bool {
        self.words.iter().any(|&w| w != 0)
    }
    /// Take all set bits, lowest first, clearing them.
    fn drain(&mut self, mut f: impl FnMut(usize)) {
        for (wi, w) in self.words.iter_mut().enumerate() {
            let mut bits = std::mem::take(w);
            while bits != 0 {
                f(wi * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
    }
}

/// `struct kyber_ctx_queue`: one software context's per-domain lists.
#[derive(Clone, Debug, Default)]
struct Kcq {
    rq_list: [VecDeque<RqId>; NUM_DOMAINS],
}

/// `struct kyber_hctx_data`, plus the pre-4.18 software queues of this hctx.
#[derive(Clone, Debug, Default)]
struct Khd {
    /// Requests flushed out of the kcqs, waiting for a token; no longer mergeable.
    rqs: [VecDeque<RqId>; NUM_DOMAINS],
    cur_domain: usize,
    batching: u32,
    /// Indexed by CPU (the kernel indexes by `index_hw`, which is ascending in CPU).
    kcqs: Vec<Kcq>,
    kcq_map: [CtxMask; NUM_DOMAINS],
    /// `domain_wait[d]` registered on the pool.
    waiting: [bool; NUM_DOMAINS],
    /// A token wake-up asked for a run of this hctx (`kyber_domain_wake`).
    woken: bool,
    /// pre-4.18: blk-mq's software queues (`ctx->rq_list`), all operations mixed.
    ctx_lists: Vec<VecDeque<RqId>>,
    ctx_map: CtxMask,
}

/// The stats timer (`kqd->timer`).
#[derive(Clone, Copy, Debug)]
struct Timer {
    expires: Jiffies,
    due: Ns,
}

/// The Kyber scheduler; see the module docs.
#[derive(Clone, Debug)]
pub struct Kyber {
    variant: Variant,
    hz: u32,
    nr_cpus: u32,
    nr_requests: u32,
    /// `kqd->async_depth`.
    async_depth: u32,
    /// `kqd->domain_tokens`.
    domain_tokens: [SbitmapQueue; NUM_DOMAINS],
    /// Tokens held per domain (what `sbitmap_weight` would count, beyond the depth too).
    inflight: [u32; NUM_DOMAINS],
    /// `kqd->cpu_latency` (summed over CPUs; see the module docs).
    cpu_latency: Buckets,
    /// `kqd->latency_buckets`.
    latency_buckets: Buckets,
    /// `kqd->latency_timeout` (0 = unset, as in the kernel).
    latency_timeout: [Jiffies; MEASURED],
    /// `kqd->domain_p99`.
    domain_p99: [Option<u8>; MEASURED],
    /// `kqd->latency_targets`, ns.
    latency_targets: [u64; MEASURED],
    timer: Option<Timer>,
    /// A token wake-up asked for a queue run at this time.
    wake_run: Option<Ns>,
    /// `kyber_hctx_data`, one per hardware queue.
    khd: Vec<Khd>,
    /// The first CPU of each hardware queue (where its dispatch allocates tokens).
    hctx_cpu: Vec<u32>,
    rq_priv: Vec<RqPriv>,
    /// Requests inside the scheduler (inserted, not yet dispatched).
    queued: usize,
    /// `kyber_adjust` events (depth changes), for debugfs.
    adjustments: u64,
    /// `kyber_throttled` events, per domain.
    throttled: [u64; NUM_DOMAINS],
    /// Forced dispatches that found no free token (replay support).
    forced_without_token: u64,
    /// Flushes of the kcqs (or, pre-4.18, the software queues) into the flushed
    /// lists, for debugfs: the kernel-trace comparison finds the dispatches that
    /// flushed by it.
    flushes: u64,
}

impl Kyber {
    /// `kyber_init_sched` + `kyber_init_hctx` for a queue described by `params`.
    pub fn new(params: &QueueParams) -> Kyber {
        let nr_cpus = params.nr_cpus.max(1);
        let khd = Khd {
            kcqs: vec![Kcq::default(); nr_cpus as usize],
            ctx_lists: vec![VecDeque::new(); nr_cpus as usize],
            ..Default::default()
        };
        Kyber {
            variant: Variant::Mainline,
            hz: params.hz.max(1),
            nr_cpus,
            nr_requests: params.nr_requests,
            async_depth: params.nr_requests * KYBER_ASYNC_PERCENT / 100,
            domain_tokens: KYBER_DEPTH.map(|d| SbitmapQueue::new(d, nr_cpus)),
            inflight: [0; NUM_DOMAINS],
            cpu_latency: Default::default(),
            latency_buckets: Default::default(),
            latency_timeout: [Jiffies(0); MEASURED],
            domain_p99: [None; MEASURED],
            latency_targets: KYBER_LATENCY_TARGETS,
            timer: None,
            wake_run: None,
            khd: vec![khd; params.nr_hw_queues.max(1) as usize],
            hctx_cpu: {
                let map = crate::mq::cpumap::map_queues(nr_cpus, params.nr_hw_queues);
                (0..params.nr_hw_queues.max(1))
                    .map(|h| crate::mq::cpumap::first_cpu_of(&map, h))
                    .collect()
            },
            rq_priv: Vec::new(),
            queued: 0,
            adjustments: 0,
            throttled: [0; NUM_DOMAINS],
            forced_without_token: 0,
            flushes: 0,
        }
    }

    /// The variant in use.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Current token-pool depth of `d` (`domain_tokens[d].sb.depth`).
    pub fn domain_depth(&self, d: Domain) -> u32 {
        self.domain_tokens[d.idx()].sb.depth()
    }

    /// Tokens of `d` currently held by dispatched requests.
    pub fn tokens_in_use(&self, d: Domain) -> u32 {
        self.inflight[d.idx()]
    }

    /// The token `rq` holds, if any.
    pub fn token_of(&self, rq: RqId) -> Option<u32> {
        self.rq_priv.get(rq.index()).and_then(|p| p.token)
    }

    /// The async depth handed to scheduler-tag allocation.
    pub fn async_depth(&self) -> u32 {
        self.async_depth
    }

    /// The remembered p99 bucket of `d` (`domain_p99`), for READ/WRITE/DISCARD.
    pub fn domain_p99(&self, d: Domain) -> Option<u8> {
        self.domain_p99.get(d.idx()).copied().flatten()
    }

    /// Requests held by the scheduler (inserted, not dispatched).
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Switch the merge structure; only while nothing is queued.
    pub fn set_variant(&mut self, v: Variant) -> Result<(), String> {
        if self.queued != 0 && v != self.variant {
            return Err("cannot switch variant while requests are queued".into());
        }
        self.variant = v;
        Ok(())
    }

    fn khd_mut(&mut self, hctx: u16) -> &mut Khd {
        let h = hctx as usize;
        if h >= self.khd.len() {
            let proto = Khd {
                kcqs: vec![Kcq::default(); self.nr_cpus as usize],
                ctx_lists: vec![VecDeque::new(); self.nr_cpus as usize],
                ..Default::default()
            };
            self.khd.resize(h + 1, proto);
        }
        &mut self.khd[h]
    }

    fn priv_mut(&mut self, rq: RqId) -> &mut RqPriv {
        let i = rq.index();
        if i >= self.rq_priv.len() {
            self.rq_priv.resize(
                i + 1,
                RqPriv {
                    token: None,
                    domain: 0,
                },
            );
        }
        &mut self.rq_priv[i]
    }

    /// The CPU a hardware queue's dispatch runs on: its first CPU in the CPU → hctx
    /// map (CPU 0 for hctx 0).
    fn dispatch_cpu(&self, hctx: usize) -> u32 {
        self.hctx_cpu
            .get(hctx)
            .copied()
            .unwrap_or(hctx as u32 % self.nr_cpus)
    }

    // ---- Tokens -------------------------------------------------------------------

    /// `kyber_get_domain_token`: a token of the hctx's current domain. On failure the
    /// hctx registers on the pool (once) and retries, in case a token was freed in
    /// between; on success it unregisters.
    pub fn get_domain_token(&mut self, hctx: usize) -> Option<u32> {
        let d = self.khd[hctx].cur_domain;
        let cpu = self.dispatch_cpu(hctx);
        let pool = &mut self.domain_tokens[d];
        let mut nr = pool.get(cpu);
        let khd = &mut self.khd[hctx];
        if nr.is_none() && !khd.waiting[d] {
            khd.waiting[d] = true;
            pool.add_wait();
            nr = pool.get(cpu);
        }
        if nr.is_some() {
            if khd.waiting[d] {
                khd.waiting[d] = false;
                pool.del_wait();
            }
            self.inflight[d] += 1;
        }
        nr
    }

    /// `kyber_domain_wake` for every hctx waiting on domain `d`: unregister and ask for
    /// an asynchronous queue run at `now`.
    pub fn domain_wake(&mut self, d: usize, now: Ns) {
        for khd in &mut self.khd {
            if khd.waiting[d] {
                khd.waiting[d] = false;
                khd.woken = true;
                self.domain_tokens[d].del_wait();
                self.wake_run = Some(self.wake_run.map_or(now, |t| t.min(now)));
            }
        }
    }

    /// `rq_clear_domain_token`: release `rq`'s token on its submitting CPU.
    fn clear_domain_token(&mut self, ctx: &ElvCtx, rq: RqId) {
        let Some(p) = self.rq_priv.get_mut(rq.index()) else {
            return;
        };
        let Some(nr) = p.token.take() else {
            return;
        };
        let d = p.domain as usize;
        let cpu = ctx.rqs.get(rq).cpu;
        self.inflight[d] -= 1;
        if self.domain_tokens[d].clear(nr, cpu) {
            self.domain_wake(d, ctx.now);
        }
    }

    // ---- Dispatch -----------------------------------------------------------------

    /// `kyber_flush_busy_kcqs`: append every busy kcq's list for `d` (ascending CPU) to
    /// the hctx list.
    pub fn flush_busy_kcqs(&mut self, hctx: usize, d: usize) {
        self.flushes += 1;
        let khd = &mut self.khd[hctx];
        let Khd {
            rqs, kcqs, kcq_map, ..
        } = khd;
        kcq_map[d].drain(|cpu| rqs[d].extend(kcqs[cpu].rq_list[d].drain(..)));
    }

    /// pre-4.18 `kyber_flush_busy_ctxs`: move all requests of all busy software queues
    /// (ascending CPU, each in order) to the hctx list of their domain.
    fn flush_busy_ctxs(&mut self, hctx: usize) {
        self.flushes += 1;
        let Khd {
            rqs,
            ctx_lists,
            ctx_map,
            ..
        } = &mut self.khd[hctx];
        let rq_priv = &self.rq_priv;
        ctx_map.drain(|cpu| {
            for rq in ctx_lists[cpu].drain(..) {
                rqs[rq_priv[rq.index()].domain as usize].push_back(rq);
            }
        });
    }

    /// Take the first flushed request of the current domain with token `nr`.
    fn take_first(&mut self, hctx: usize, nr: u32) -> RqId {
        let khd = &mut self.khd[hctx];
        let d = khd.cur_domain;
        khd.batching += 1;
        let rq = khd.rqs[d].pop_front().expect("flushed list is non-empty");
        self.rq_priv[rq.index()].token = Some(nr);
        self.queued -= 1;
        rq
    }

    /// `kyber_dispatch_cur_domain`: a request of the current domain, if one is queued
    /// and a token is available. The kcqs are flushed only once a token was obtained,
    /// so that a throttled domain's backlog stays mergeable. `flushed` is the pre-4.18
    /// "software queues already flushed in this call" flag.
    pub fn dispatch_cur_domain(&mut self, hctx: usize, flushed: &mut bool) -> Option<RqId> {
        let d = self.khd[hctx].cur_domain;
        if self.variant == Variant::Pre418 {
            if self.khd[hctx].rqs[d].is_empty() && !*flushed {
                self.flush_busy_ctxs(hctx);
                *flushed = true;
            }
            if self.khd[hctx].rqs[d].is_empty() {
                return None;
            }
            return match self.get_domain_token(hctx) {
                Some(nr) => Some(self.take_first(hctx, nr)),
                None => {
                    self.throttled[d] += 1;
                    None
                }
            };
        }
        if !self.khd[hctx].rqs[d].is_empty() {
            match self.get_domain_token(hctx) {
                Some(nr) => Some(self.take_first(hctx, nr)),
                None => {
                    self.throttled[d] += 1;
                    None
                }
            }
        } else if self.khd[hctx].kcq_map[d].any() {
            match self.get_domain_token(hctx) {
                Some(nr) => {
                    self.flush_busy_kcqs(hctx, d);
                    Some(self.take_first(hctx, nr))
                }
                None => {
                    self.throttled[d] += 1;
                    None
                }
            }
        } else {
            None
        }
    }

    // ---- Forced dispatch (replay) ---------------------------------------------------

    /// Replay support ([`Elevator::force_dispatch`]): take `rq` out as the kernel's
    /// dispatch of it did. The kernel dispatches only from the flushed list `rqs[d]`
    /// and only with a token, so:
    ///
    /// - **already flushed** (`rqs[d]`): removed from there (normally its head);
    /// - **still on a kcq list, `rqs[d]` empty**: the kernel's own path: a token first,
    ///   then every busy kcq of `d` flushed (ascending CPU), then `rq` taken;
    /// - **still on a kcq list, `rqs[d]` not empty**: the kernel must have flushed it
    ///   earlier than we did (its flush happens only when its `rqs[d]` is empty). The
    ///   least it flushed is what the kcqs held when `rq` was inserted: the requests of
    ///   `d` inserted no later than `rq` (each kcq's prefix, ascending CPU) are
    ///   appended to `rqs[d]`; later ones stay mergeable on their kcqs.
    ///
    /// The token is allocated from the domain's pool on the dispatch CPU, as
    /// `kyber_get_domain_token` does. If our pool has none free (our depth or held
    /// tokens differ from the kernel's at that instant), the request leaves without
    /// one, holds nothing and releases nothing; [`Kyber::forced_without_token`] counts
    /// these. `cur_domain` becomes `d` and `batching` continues the batch when `d` was
    /// the current domain with room left, else starts a new one (`batching = 1`): the
    /// state both of the kernel's paths to a request of `d` leave.
    fn force_dispatch_rq(&mut self, ctx: &ElvCtx, rq: RqId) -> bool {
        let hctx = ctx.hctx as usize;
        if hctx >= self.khd.len() {
            return false;
        }
        let Some(p) = self.rq_priv.get(rq.index()).copied() else {
            return false;
        };
        let d = p.domain as usize;
        let khd = &self.khd[hctx];
        let in_rqs = khd.rqs[d].contains(&rq);
        let kcq_cpu = match self.variant {
            Variant::Mainline => khd.kcqs.iter().position(|k| k.rq_list[d].contains(&rq)),
            Variant::Pre418 => khd.ctx_lists.iter().position(|l| l.contains(&rq)),
        };
        if !in_rqs && kcq_cpu.is_none() {
            return false;
        }
        if !in_rqs {
            match self.variant {
                Variant::Pre418 => self.flush_busy_ctxs(hctx),
                Variant::Mainline if self.khd[hctx].rqs[d].is_empty() => {
                    self.flush_busy_kcqs(hctx, d)
                }
                Variant::Mainline => {
                    let cutoff = ctx.rqs.get(rq).alloc_ns;
                    let rqs_arena = &*ctx.rqs;
                    let Khd {
                        rqs, kcqs, kcq_map, ..
                    } = &mut self.khd[hctx];
                    let mut map = CtxMask::default();
                    for (cpu, k) in kcqs.iter_mut().enumerate() {
                        let list = &mut k.rq_list[d];
                        let mut n = list
                            .iter()
                            .take_while(|&&r| rqs_arena.get(r).alloc_ns <= cutoff)
                            .count();
                        if let Some(i) = list.iter().position(|&r| r == rq) {
                            n = n.max(i + 1);
                        }
                        rqs[d].extend(list.drain(..n));
                        if !list.is_empty() {
                            map.set(cpu);
                        }
                    }
                    kcq_map[d] = map;
                }
            }
        }
        let khd = &mut self.khd[hctx];
        let Some(pos) = khd.rqs[d].iter().position(|&r| r == rq) else {
            return false;
        };
        khd.rqs[d].remove(pos);
        if khd.cur_domain == d && khd.batching < KYBER_BATCH_SIZE[d] {
            khd.batching += 1;
        } else {
            khd.cur_domain = d;
            khd.batching = 1;
        }
        let cpu = self.dispatch_cpu(hctx);
        let token = self.domain_tokens[d].get(cpu);
        let khd = &mut self.khd[hctx];
        if token.is_some() {
            self.inflight[d] += 1;
            if khd.waiting[d] {
                khd.waiting[d] = false;
                self.domain_tokens[d].del_wait();
            }
        } else {
            self.forced_without_token += 1;
        }
        self.rq_priv[rq.index()].token = token;
        self.queued -= 1;
        true
    }

    /// Forced dispatches ([`Elevator::force_dispatch`]) that found no free token in
    /// our pool, i.e. where our token state differed from the kernel's.
    pub fn forced_without_token(&self) -> u64 {
        self.forced_without_token
    }

    // ---- Merging ------------------------------------------------------------------

    /// `blk_bio_list_merge` over one list: from the newest request, look at up to 8;
    /// skip incompatible or non-adjacent ones; the first adjacent compatible request
    /// decides (merged, or a failed attempt that ends the search).
    pub fn bio_list_merge(
        ctx: &mut ElvCtx,
        list: &VecDeque<RqId>,
        bio: &Bio,
        bio_id: BioId,
    ) -> bool {
        for &rq in list.iter().rev().take(BIO_LIST_MERGE_CHECKED) {
            let r = ctx.rqs.get(rq);
            if !bio_merge_ok(r, bio) {
                continue;
            }
            return match try_merge(r, bio) {
                Some(MergeKind::Back) => bio_attempt_back_merge(ctx, rq, bio, bio_id),
                Some(MergeKind::Front) => bio_attempt_front_merge(ctx, rq, bio, bio_id),
                // Multi-range discard merging is not modelled by the block core.
                Some(MergeKind::Discard) | None => continue,
            };
        }
        false
    }

    // ---- Latency ------------------------------------------------------------------

    /// `add_latency_sample`.
    fn add_latency_sample(&mut self, d: usize, ty: usize, target: u64, latency: u64) {
        let bucket = if latency > 0 {
            let divisor = (target >> KYBER_LATENCY_SHIFT).max(1);
            ((latency - 1) / divisor).min(KYBER_LATENCY_BUCKETS as u64 - 1) as usize
        } else {
            0
        };
        self.cpu_latency[d][ty][bucket] += 1;
    }

    /// `calculate_percentile`: the bucket holding the `percentile`-th sample of
    /// (`d`, `ty`), or `None` while fewer than 500 samples are in and less than a second
    /// passed since the first percentile attempt. The timeout slot is shared by both
    /// latency types, as in the kernel.
    pub fn calculate_percentile(
        &mut self,
        d: usize,
        ty: usize,
        percentile: u32,
        jiffies: Jiffies,
    ) -> Option<u8> {
        let buckets = &mut self.latency_buckets[d][ty];
        let samples: u64 = buckets.iter().map(|&b| b as u64).sum();
        if samples == 0 {
            return None;
        }
        if self.latency_timeout[d].0 == 0 {
            self.latency_timeout[d] = Jiffies(jiffies.plus(self.hz as u64).0.max(1));
        }
        if samples < 500 && self.latency_timeout[d].after(jiffies) {
            return None;
        }
        self.latency_timeout[d] = Jiffies(0);
        let mut need = (samples * percentile as u64).div_ceil(100);
        let mut bucket = 0;
        while bucket < KYBER_LATENCY_BUCKETS - 1 {
            if buckets[bucket] as u64 >= need {
                break;
            }
            need -= buckets[bucket] as u64;
            bucket += 1;
        }
        *buckets = [0; KYBER_LATENCY_BUCKETS];
        Some(bucket as u8)
    }

    /// `kyber_resize_domain`: clamp to `[1, max]` and resize if it changed.
    pub fn resize_domain(&mut self, d: usize, depth: u32) {
        let depth = depth.clamp(1, KYBER_DEPTH[d]);
        if depth != self.domain_tokens[d].sb.depth() {
            self.domain_tokens[d].resize(depth);
            self.adjustments += 1;
        }
    }

    /// `kyber_timer_fn`.
    fn timer_fn(&mut self, jiffies: Jiffies) {
        for d in 0..MEASURED {
            for ty in [TOTAL, IO] {
                for b in 0..KYBER_LATENCY_BUCKETS {
                    self.latency_buckets[d][ty][b] +=
                        std::mem::take(&mut self.cpu_latency[d][ty][b]);
                }
            }
        }
        // Congestion: any domain's I/O-latency p90 above its target.
        let mut bad = false;
        for d in 0..MEASURED {
            if self
                .calculate_percentile(d, IO, 90, jiffies)
                .is_some_and(|p| p >= KYBER_GOOD_BUCKETS)
            {
                bad = true;
            }
        }
        for d in 0..MEASURED {
            let mut p99 = self.calculate_percentile(d, TOTAL, 99, jiffies);
            // A remembered p99 is used at most once under congestion, so the controller
            // does not throttle again before new data arrive.
            if bad {
                if p99.is_none() {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = None;
            } else if p99.is_some() {
                self.domain_p99[d] = p99;
            }
            let Some(p99) = p99 else { continue };
            if bad || p99 >= KYBER_GOOD_BUCKETS {
                let orig = self.domain_tokens[d].sb.depth();
                let depth = (orig * (p99 as u32 + 1)) >> KYBER_LATENCY_SHIFT;
                self.resize_domain(d, depth);
            }
        }
    }

    /// ns at which jiffies reaches `target`, seen from (`now`, `jiffies`).
    fn jiffies_due(&self, now: Ns, jiffies: Jiffies, target: Jiffies) -> Ns {
        let hz = self.hz as u128;
        if Jiffies::from_ns(now, self.hz) == jiffies {
            Ns((target.0 as u128 * 1_000_000_000).div_ceil(hz) as u64)
        } else {
            let delta = target.0.wrapping_sub(jiffies.0) as u128;
            now.add((delta * 1_000_000_000 / hz) as u64)
        }
    }

    /// `timer_reduce(&kqd->timer, jiffies + HZ / 10)`.
    fn timer_reduce(&mut self, now: Ns, jiffies: Jiffies) {
        let expires = jiffies.plus(self.hz as u64 / 10);
        if self.timer.is_some_and(|t| !expires.before(t.expires)) {
            return;
        }
        self.timer = Some(Timer {
            expires,
            due: self.jiffies_due(now, jiffies, expires),
        });
    }

    fn latency_target_name(d: usize) -> &'static str {
        ["read_lat_nsec", "write_lat_nsec"][d]
    }
}

/// `kstrtoull(s, 10, ..)`: optional `+`, decimal digits, one trailing newline.
fn parse_kstrtoull10(s: &str) -> Option<u64> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `op_is_sync`.
fn op_is_sync(op: Op, flags: ReqFlags) -> bool {
    op == Op::Read
        || flags.any(ReqFlags(
            ReqFlags::SYNC.0 | ReqFlags::FUA.0 | ReqFlags::PREFLUSH.0,
        ))
}

impl Elevator for Kyber {
    fn clone_box(&self) -> Option<Box<dyn Elevator>> {
        Some(Box::new(self.clone()))
    }
    fn lock_per_hctx(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "kyber"
    }

    /// `kyber_limit_depth`: asynchronous requests get at most `async_depth` scheduler
    /// tags.
    fn limit_depth(&self, op: Op, flags: ReqFlags) -> Option<u32> {
        (!op_is_sync(op, flags)).then_some(self.async_depth)
    }

    /// `kyber_depth_updated`.
    fn depth_updated(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests;
        self.async_depth = nr_requests * KYBER_ASYNC_PERCENT / 100;
    }

    /// `kyber_prepare_request`: no token yet.
    fn prepare_request(&mut self, _ctx: &mut ElvCtx, rq: RqId) {
        self.priv_mut(rq).token = None;
    }

    /// `kyber_bio_merge` (mainline) or blk-mq's software-queue merge (pre-4.18).
    fn bio_merge(&mut self, ctx: &mut ElvCtx, bio: &Bio, bio_id: BioId) -> bool {
        // blk_mq_attempt_bio_merge: no elevator merge with `nomerges` = 2 or an
        // unmergeable bio.
        if ctx.merge.limits.nomerges == 2 || !bio_mergeable(bio) {
            return false;
        }
        let hctx = ctx.hctx as usize;
        let Some(khd) = self.khd.get(hctx) else {
            return false;
        };
        let cpu = bio.cpu as usize;
        let list = match self.variant {
            Variant::Mainline => khd
                .kcqs
                .get(cpu)
                .map(|k| &k.rq_list[Domain::of_op(bio.op).idx()]),
            Variant::Pre418 => khd.ctx_lists.get(cpu),
        };
        match list {
            Some(list) if !list.is_empty() => Kyber::bio_list_merge(ctx, list, bio, bio_id),
            _ => false,
        }
    }

    /// `kyber_insert_requests`: each request to its CPU's list for its domain (front
    /// when `at_head`), marking the kcq busy for that domain.
    fn insert_requests(&mut self, ctx: &mut ElvCtx, rqs: &[RqId], at_head: bool) {
        let hctx = ctx.hctx;
        for &rq in rqs {
            let r = ctx.rqs.get(rq);
            let d = Domain::of_op(r.op).idx();
            let cpu = r.cpu as usize;
            self.priv_mut(rq).domain = d as u8;
            if cpu as u32 >= self.nr_cpus {
                self.nr_cpus = cpu as u32 + 1;
                for k in &mut self.khd {
                    k.kcqs.resize(cpu + 1, Kcq::default());
                    k.ctx_lists.resize(cpu + 1, VecDeque::new());
                }
            }
            let variant = self.variant;
            let khd = self.khd_mut(hctx);
            let list = match variant {
                Variant::Mainline => {
                    khd.kcq_map[d].set(cpu);
                    &mut khd.kcqs[cpu].rq_list[d]
                }
                Variant::Pre418 => {
                    khd.ctx_map.set(cpu);
                    &mut khd.ctx_lists[cpu]
                }
            };
            if at_head {
                list.push_front(rq);
            } else {
                list.push_back(rq);
            }
            self.queued += 1;
        }
    }

    /// `kyber_dispatch_request`: continue the current batch if allowed, else start a
    /// new batch with the next domain that yields a request (READ → WRITE → DISCARD →
    /// OTHER → READ), at most one full round.
    fn dispatch_request(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        let hctx = ctx.hctx as usize;
        self.khd_mut(ctx.hctx);
        let mut flushed = false;
        let cur = self.khd[hctx].cur_domain;
        if self.khd[hctx].batching < KYBER_BATCH_SIZE[cur] {
            if let Some(rq) = self.dispatch_cur_domain(hctx, &mut flushed) {
                return Some(rq);
            }
        }
        self.khd[hctx].batching = 0;
        for _ in 0..NUM_DOMAINS {
            let khd = &mut self.khd[hctx];
            khd.cur_domain = (khd.cur_domain + 1) % NUM_DOMAINS;
            if let Some(rq) = self.dispatch_cur_domain(hctx, &mut flushed) {
                return Some(rq);
            }
        }
        None
    }

    /// Replay support: see `Kyber::force_dispatch_rq` for what is sound when the
    /// request is still on a kcq list vs already flushed.
    fn force_dispatch(&mut self, ctx: &mut ElvCtx, rq: RqId) -> bool {
        self.force_dispatch_rq(ctx, rq)
    }

    /// Replay support: `kyber_resize_domain` to the recorded kernel's depth.
    fn force_pool_depth(&mut self, domain: &str, depth: u32) -> bool {
        let Some(d) = Domain::ALL
            .iter()
            .find(|d| d.name().eq_ignore_ascii_case(domain))
        else {
            return false;
        };
        self.resize_domain(d.idx(), depth);
        true
    }

    /// `kyber_has_work`: flushed requests, or busy kcqs (pre-4.18: busy software
    /// queues).
    fn has_work(&self, ctx: &ElvCtx) -> bool {
        let Some(khd) = self.khd.get(ctx.hctx as usize) else {
            return false;
        };
        khd.rqs.iter().any(|l| !l.is_empty())
            || match self.variant {
                Variant::Mainline => khd.kcq_map.iter().any(CtxMask::any),
                Variant::Pre418 => khd.ctx_map.any(),
            }
    }

    /// `kyber_completed_request`: record total latency (`now − start_time_ns`, i.e.
    /// allocation) and I/O latency (`now − io_start_time_ns`, i.e. `issue_ns`) for
    /// READ/WRITE/DISCARD, and pull the stats timer in to `jiffies + HZ/10`.
    fn completed_request(&mut self, ctx: &mut ElvCtx, rq: RqId, now: Ns) {
        let r = ctx.rqs.get(rq);
        let d = Domain::of_op(r.op).idx();
        if d == Domain::Other.idx() {
            return;
        }
        let target = self.latency_targets[d];
        // u64 arithmetic as in the kernel: a start after `now` wraps to the top bucket.
        let total = now.0.wrapping_sub(r.alloc_ns.0);
        let io = now.0.wrapping_sub(r.issue_ns.0);
        self.add_latency_sample(d, TOTAL, target, total);
        self.add_latency_sample(d, IO, target, io);
        self.timer_reduce(ctx.now, ctx.jiffies);
    }

    /// `kyber_finish_request`: release the token.
    fn requeue_request(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        self.clear_domain_token(ctx, rq);
    }

    /// `kyber_finish_request`: release the token.
    fn finish_request(&mut self, ctx: &mut ElvCtx, rq: RqId) {
        self.clear_domain_token(ctx, rq);
    }

    fn next_timer(&self) -> Option<Ns> {
        match (self.timer.map(|t| t.due), self.wake_run) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The hctxs a token wake-up named; with one hctx, every timer runs it (as the
    /// single-queue model always did).
    fn timer_runs_hctx(&mut self, hctx: u16) -> bool {
        let single = self.khd.len() == 1;
        match self.khd.get_mut(hctx as usize) {
            Some(k) => std::mem::take(&mut k.woken) || single,
            None => single,
        }
    }

    fn timer_fired(&mut self, ctx: &mut ElvCtx) {
        if self.wake_run.is_some_and(|t| t <= ctx.now) {
            // The block layer runs the queue after any elevator timer: that run is the
            // wake callback's `blk_mq_run_hw_queue(hctx, true)`.
            self.wake_run = None;
        }
        if let Some(t) = self.timer {
            if ctx.now >= t.due || ctx.jiffies.after_eq(t.expires) {
                self.timer = None;
                self.timer_fn(ctx.jiffies);
            }
        }
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        vec![
            TunableInfo {
                name: "read_lat_nsec",
                unit: "ns",
                default: KYBER_LATENCY_TARGETS[0].to_string(),
                help: "target latency of reads; reads missing it get more tokens, and under congestion domains meeting theirs get fewer",
            },
            TunableInfo {
                name: "write_lat_nsec",
                unit: "ns",
                default: KYBER_LATENCY_TARGETS[1].to_string(),
                help: "target latency of writes (sync and async)",
            },
        ]
    }

    fn get_tunable(&self, name: &str) -> Result<String, TunableError> {
        match name {
            "read_lat_nsec" => Ok(self.latency_targets[0].to_string()),
            "write_lat_nsec" => Ok(self.latency_targets[1].to_string()),
            "variant" => Ok(self.variant.name().to_string()),
            _ => Err(unknown_tunable("kyber", name, &self.tunables())),
        }
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let invalid = |reason: String| TunableError::Invalid {
            sched: "kyber",
            name: name.to_string(),
            value: value.to_string(),
            reason,
        };
        match name {
            "read_lat_nsec" | "write_lat_nsec" => {
                let d = usize::from(name == "write_lat_nsec");
                debug_assert_eq!(Kyber::latency_target_name(d), name);
                let v = parse_kstrtoull10(value).ok_or_else(|| {
                    invalid("expected a decimal number of nanoseconds (u64)".into())
                })?;
                self.latency_targets[d] = v;
                Ok(())
            }
            "variant" => {
                let v = match value.trim() {
                    "mainline" => Variant::Mainline,
                    "pre-4.18" => Variant::Pre418,
                    _ => return Err(invalid("expected 'mainline' or 'pre-4.18'".into())),
                };
                self.set_variant(v).map_err(invalid)
            }
            _ => Err(unknown_tunable("kyber", name, &self.tunables())),
        }
    }

    fn variants(&self) -> Vec<VariantInfo> {
        vec![
            VariantInfo {
                name: "mainline",
                help: "v4.18+: per-CPU per-domain kyber_ctx_queue lists; bios merge into requests waiting for a token (default)",
            },
            VariantInfo {
                name: "pre-4.18",
                help: "v4.12-v4.17 merge structure: blk-mq software queues flushed into Kyber's lists on every dispatch, so bios almost never merge",
            },
        ]
    }

    fn debugfs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for d in Domain::ALL {
            let pool = &self.domain_tokens[d.idx()];
            let name = d.name().to_ascii_lowercase();
            out.push((
                format!("{name}_tokens"),
                format!(
                    "depth={} busy={} cleared={} wake_batch={} ws_active={}",
                    pool.sb.depth(),
                    pool.sb.weight(),
                    pool.sb.cleared(),
                    pool.wake_batch(),
                    pool.ws_active()
                ),
            ));
        }
        out.push(("async_depth".into(), self.async_depth.to_string()));
        for (h, khd) in self.khd.iter().enumerate() {
            let p = if self.khd.len() > 1 {
                format!("hctx{h}/")
            } else {
                String::new()
            };
            for d in Domain::ALL {
                let name = d.name().to_ascii_lowercase();
                out.push((format!("{p}{name}_rqs"), khd.rqs[d.idx()].len().to_string()));
                out.push((
                    format!("{p}{name}_waiting"),
                    u8::from(khd.waiting[d.idx()]).to_string(),
                ));
            }
            out.push((
                format!("{p}cur_domain"),
                KYBER_DOMAIN_NAMES[khd.cur_domain].into(),
            ));
            out.push((format!("{p}batching"), khd.batching.to_string()));
        }
        out.push(("depth_adjustments".into(), self.adjustments.to_string()));
        out.push(("flushes".into(), self.flushes.to_string()));
        if self.forced_without_token > 0 {
            out.push((
                "forced_without_token".into(),
                self.forced_without_token.to_string(),
            ));
        }
        for d in Domain::ALL {
            out.push((
                format!("{}_throttled", d.name().to_ascii_lowercase()),
                self.throttled[d.idx()].to_string(),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstrtoull_base10() {
        assert_eq!(parse_kstrtoull10("2000000\n"), Some(2_000_000));
        assert_eq!(parse_kstrtoull10("+5"), Some(5));
        assert_eq!(parse_kstrtoull10("0"), Some(0));
        assert_eq!(parse_kstrtoull10("0x10"), None);
        assert_eq!(parse_kstrtoull10("-1"), None);
        assert_eq!(parse_kstrtoull10(""), None);
        assert_eq!(parse_kstrtoull10("18446744073709551616"), None);
    }

    #[test]
    fn bucket_rule() {
        let mut k = Kyber::new(&QueueParams::default());
        let t = 2_000_000;
        for (lat, b) in [
            (0, 0),
            (1, 0),
            (500_000, 0),
            (500_001, 1),
            (2_000_000, 3),
            (2_000_001, 4),
            (3_500_001, 7),
            (u64::MAX, 7),
        ] {
            k.cpu_latency = Default::default();
            k.add_latency_sample(0, TOTAL, t, lat);
            assert_eq!(k.cpu_latency[0][TOTAL][b], 1, "latency {lat}");
        }
    }
}
