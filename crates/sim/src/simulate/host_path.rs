//! The simulation with a host model (`--host` other than `free`): every step of an
//! I/O runs on a simulated CPU and costs it time, and the scheduler's lock is a
//! resource CPUs spin for.
//!
//! The paths, as the kernel takes them:
//!
//! - **Submission.** The job's thread does fio's work and the system call
//!   ([`Costs::fio_io_ns`], [`Costs::syscall_ns`] and the engine's per-I/O cost);
//!   then it takes the scheduler's lock and the block layer acts — merge attempt,
//!   insertion and the queue run that the submission triggers (the plug flush runs
//!   the hardware queue on the submitting CPU) — at the moment it holds the lock.
//!   What the block layer did decides how long the lock is held (the scheduler's
//!   per-call costs, its tree and per-CPU work, one hand-over per lock acquisition
//!   the kernel makes for those calls) and what the thread spends outside it
//!   (bio, tags, the driver's `queue_rq`).
//! - **Completion.** The device's interrupt runs on the CPU its hardware queue's
//!   vector targets (the hctx's first CPU); the completion itself runs there when
//!   that CPU shares a last-level cache with the submitting one (`rq_affinity=1`,
//!   the default) and on the submitting CPU through an IPI otherwise
//!   (`blk_mq_complete_need_ipi`); it takes the scheduler's lock for the elevator's
//!   completion hooks and the restart run, then wakes the waiting thread, which
//!   reaps the completion when it gets its CPU (fio's completion time).
//! - **kblockd.** Queue runs nobody performs inline (delayed re-runs, requeue work,
//!   runs after tag wake-ups) are kblockd's high-priority kworker on the hctx's
//!   first CPU: interrupt-class work here, since a `WQ_HIGHPRI` worker (nice −20)
//!   preempts fio's threads at once.
//!
//! Not charged: the elevator's timers (BFQ's idle timer, kyber's statistics timer)
//! and the writeback flusher's submissions run without CPU cost.

use super::*;
use host::cpu::{Item, ThreadId};
use host::lock::{Acquire, LockCosts, LockStats, SpinLock};
use host::profile::{Costs, CpuHost};

/// Token kinds (top byte of a CPU item's token).
const T_SUBMIT: u64 = 1;
const T_AFTER: u64 = 2;
const T_REAP: u64 = 3;
const T_IRQ: u64 = 4;
const T_IPI: u64 = 5;
const T_KBLOCKD: u64 = 6;
const T_COPY: u64 = 7;

fn token(kind: u64, a: usize, b: u32) -> u64 {
    (kind << 56) | ((a as u64 & 0xFF_FFFF) << 32) | u64::from(b)
}

/// `cpu` as one of `n` CPUs (a request's CPU is always one already; the modulo,
/// a division, is kept off the per-request path).
fn wrap_cpu(cpu: u32, n: u32) -> u32 {
    if cpu < n {
        cpu
    } else {
        cpu % n
    }
}

fn untoken(t: u64) -> (u64, usize, u32) {
    (t >> 56, ((t >> 32) & 0xFF_FFFF) as usize, t as u32)
}

/// What a CPU does once it holds (or needs no) lock.
#[derive(Debug)]
pub(super) enum Action {
    /// Job `j`'s thread submits its next I/O (or batch).
    Submit(usize),
    /// Completions of these requests, on this CPU.
    Complete(Vec<RqId>),
    /// A queue run by kblockd.
    Run,
}

/// Which scheduler's costs apply (the cost table has a row per scheduler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SchedKind {
    None,
    MqDeadline,
    Kyber,
    Bfq,
}

impl SchedKind {
    fn of(name: &str) -> SchedKind {
        match name {
            "mq-deadline" => SchedKind::MqDeadline,
            "kyber" => SchedKind::Kyber,
            "bfq" => SchedKind::Bfq,
            _ => SchedKind::None,
        }
    }
}

/// The host side of a simulation.
pub(super) struct HostState {
    pub cpus: host::cpu::Cpus,
    costs: Costs,
    lockc: LockCosts,
    llc_cpus: u32,
    /// The scheduler's locks: one for the queue, or one per hctx (kyber); none for
    /// `none`.
    locks: Vec<SpinLock>,
    finish_locks: bool,
    /// CPUs that keep writing their per-CPU scheduler counters: one per job thread
    /// and the interrupt CPU (capped by the CPU count).
    hot_cpus: u64,
    /// Insertion off the lock, dispatch serialized ([`blk::elevator::Elevator::lock_split`]).
    lock_split: bool,
    /// Lock-held work done off the lock (insertions into the per-CPU lists), for
    /// the next holder to do (`dd_do_insert` at dispatch).
    deferred_ns: u64,
    sched: SchedKind,
    /// Per job: its thread.
    threads: Vec<ThreadId>,
    /// Actions waiting for a lock, by slot.
    actions: Vec<Option<Action>>,
    free_actions: Vec<usize>,
    /// Per job: completions posted, not reaped yet.
    posted: Vec<Vec<u32>>,
    reap_armed: Vec<bool>,
    /// Per job: the CPU time of the next submission chained into its reap item.
    chained: Vec<u64>,
    /// Requests the device finished, waiting for their interrupt, by slot.
    batches: Vec<Option<Vec<RqId>>>,
    free_batches: Vec<usize>,
    /// Spare request lists.
    lists: Vec<Vec<RqId>>,
    /// (CPU, requests) of one device event, reused.
    by_cpu: Vec<(u32, Vec<RqId>)>,
    arms: Vec<(u64, u32, u64)>,
    pub lock_armed: Vec<Option<Ns>>,
    /// A kblockd run is queued on a CPU.
    pub kblockd_pending: bool,
    /// Where the device signals completions.
    completion: devices::CompletionCpu,
    /// `queue/rq_affinity`.
    rq_affinity: u8,
    /// Per hardware queue: its first CPU, where its interrupt vector points.
    hctx_first_cpu: Vec<u32>,
    tokens: Vec<u64>,
}

impl HostState {
    pub fn new(
        h: &CpuHost,
        cfg: &SimConfig,
        q: &Queue,
        jobs: &[JobConfig],
        completion: devices::CompletionCpu,
    ) -> Self {
        let nr_cpus = cfg.nr_cpus;
        let mut cpus = host::cpu::Cpus::new(nr_cpus, h.sched_params(nr_cpus));
        let threads = jobs
            .iter()
            .map(|j| cpus.add_thread(j.cpu, &j.cpus_allowed))
            .collect();
        let e = q.elevator();
        let nlocks = if !q.has_elevator() {
            0
        } else if e.lock_per_hctx() {
            q.nr_hw_queues() as usize
        } else {
            1
        };
        HostState {
            cpus,
            costs: h.costs,
            lockc: h.lock_costs(),
            llc_cpus: h.llc_cpus,
            locks: (0..nlocks).map(|_| SpinLock::new()).collect(),
            finish_locks: e.finish_locks(),
            hot_cpus: (jobs.len() as u64 + 1).min(u64::from(nr_cpus)),
            lock_split: e.lock_split(),
            deferred_ns: 0,
            sched: SchedKind::of(e.name()),
            threads,
            actions: Vec::new(),
            free_actions: Vec::new(),
            posted: vec![Vec::new(); jobs.len()],
            reap_armed: vec![false; jobs.len()],
            chained: vec![0; jobs.len()],
            batches: Vec::new(),
            free_batches: Vec::new(),
            lists: Vec::new(),
            by_cpu: Vec::new(),
            arms: Vec::new(),
            lock_armed: vec![None; nlocks],
            kblockd_pending: false,
            completion,
            rq_affinity: cfg.rq_affinity,
            hctx_first_cpu: (0..q.nr_hw_queues())
                .map(|h| {
                    q.cpu_map()
                        .iter()
                        .position(|&x| x as usize == h as usize)
                        .unwrap_or(0) as u32
                })
                .collect(),
            tokens: Vec::new(),
        }
    }

    /// Per I/O, before the lock: fio's user time and the engine's system time.
    fn submit_item(&self, cfg: &JobConfig, n: u64, tok: u64) -> Item {
        let c = &self.costs;
        let engine = cfg.engine;
        let per_io = host::profile::engine_io_ns(c, engine.host_kind(), cfg.fixedbufs);
        // Synchronous engines make one system call per I/O; the asynchronous ones
        // one per batch.
        let calls = if engine.is_async() { 1 } else { n };
        Item::new(c.fio_io_ns * n, c.syscall_ns * calls + per_io * n, tok)
    }

    /// The lock-held and unlocked CPU time of block-layer work `w`.
    fn price(&self, w: &blk::mq::Work) -> (u64, u64) {
        let c = &self.costs;
        let (ins, disp, fin) = match self.sched {
            SchedKind::MqDeadline => (c.dd_insert_ns, c.dd_dispatch_ns, c.dd_finish_ns),
            SchedKind::Kyber => (c.kyber_insert_ns, c.kyber_dispatch_ns, c.kyber_finish_ns),
            SchedKind::Bfq => (c.bfq_insert_ns, c.bfq_dispatch_ns, c.bfq_finish_ns),
            SchedKind::None => (c.none_insert_ns, c.none_dispatch_ns, 0),
        };
        // Per-CPU counters: every line is read (cached, unless written since), and
        // the lines of CPUs that keep counting (those running the jobs, and the
        // interrupt CPU) come over from their caches on every pass.
        let elv = w.elv.tree_steps * c.tree_step_ns
            + w.elv.percpu_lines * c.percpu_line_ns
            + w.elv.percpu_passes * self.hot_cpus * c.line_remote_ns;
        let mut locked = 0;
        let mut free = w.bios * c.bio_ns
            + w.tags * c.tag_ns
            + w.queue_rqs * (c.driver_ns + c.tag_ns)
            + w.completions * c.complete_ns;
        let merges = w.merge_calls * c.merge_ns;
        let inserts = w.inserts * ins;
        let dispatches = w.dispatch_calls * disp;
        let finishes = w.finishes * fin;
        match self.sched {
            SchedKind::MqDeadline => {
                locked += merges + inserts + dispatches + elv;
                free += finishes;
            }
            SchedKind::Bfq => locked += merges + inserts + dispatches + finishes + elv,
            // kyber: insertion and bio merging under the per-CPU kcq->lock, dispatch
            // under khd->lock; tokens and histograms are per-CPU or atomic.
            SchedKind::Kyber => {
                locked += dispatches + elv;
                free += merges + inserts + finishes;
            }
            SchedKind::None => free += inserts + dispatches,
        }
        (locked, free)
    }

    /// Lock acquisitions the kernel makes for work `w`.
    fn lock_calls(&self, w: &blk::mq::Work) -> u64 {
        match self.sched {
            SchedKind::Kyber => w.dispatch_calls,
            _ if self.lock_split => w.dispatch_calls + w.merge_calls,
            _ => w.lock_calls(self.finish_locks),
        }
    }

    fn store_action(&mut self, a: Action) -> usize {
        match self.free_actions.pop() {
            Some(i) => {
                self.actions[i] = Some(a);
                i
            }
            None => {
                self.actions.push(Some(a));
                self.actions.len() - 1
            }
        }
    }

    fn take_action(&mut self, i: usize) -> Action {
        self.free_actions.push(i);
        self.actions[i].take().expect("action slot")
    }

    /// An empty request list from the pool (completion batches are recycled, not
    /// allocated per interrupt).
    fn new_list(&mut self) -> Vec<RqId> {
        self.lists.pop().unwrap_or_default()
    }

    fn recycle(&mut self, mut v: Vec<RqId>) {
        v.clear();
        self.lists.push(v);
    }

    fn store_batch(&mut self, b: Vec<RqId>) -> usize {
        match self.free_batches.pop() {
            Some(i) => {
                self.batches[i] = Some(b);
                i
            }
            None => {
                self.batches.push(Some(b));
                self.batches.len() - 1
            }
        }
    }

    fn take_batch(&mut self, i: usize) -> Vec<RqId> {
        self.free_batches.push(i);
        self.batches[i].take().expect("batch slot")
    }

    /// The CPU a job's thread is on.
    pub fn job_cpu(&self, j: usize) -> u32 {
        self.cpus.thread_cpu(self.threads[j])
    }

    /// Per-job thread accounting.
    pub fn job_time(&self, j: usize) -> host::cpu::ThreadTime {
        self.cpus.thread_time(self.threads[j])
    }

    /// The run ends at `end`: account what is still running.
    pub fn finish(&mut self, end: Ns) {
        self.cpus.finish(end.0);
    }

    /// The locks' counters.
    pub fn lock_stats(&self) -> Vec<LockStats> {
        self.locks.iter().map(|l| l.stats()).collect()
    }
}

impl Simulation {
    fn hs(&mut self) -> &mut HostState {
        self.host.as_mut().expect("host model")
    }

    /// The lock an action on `cpu` (for hctx `hctx`) needs, if any.
    fn lock_of(&self, hctx: u16) -> Option<usize> {
        let h = self.host.as_ref()?;
        match h.locks.len() {
            0 => None,
            1 => Some(0),
            n => Some(hctx as usize % n),
        }
    }

    /// Job `j`'s thread starts its next submission's CPU work (host model).
    pub(super) fn host_schedule_submit(&mut self, j: usize, now: Ns, n: usize) {
        let h = self.host.as_mut().expect("host model");
        let item = h.submit_item(&self.jobs[j].cfg, n as u64, token(T_SUBMIT, j, 0));
        let t = h.threads[j];
        h.cpus.run(now.0, t, item);
    }

    /// A buffered copy of `pages` pages by job `j`'s thread (host model).
    pub(super) fn host_copy(&mut self, j: usize, unit: u32, pages: u64, now: Ns) {
        let h = self.hs();
        let item = Item::new(0, pages * h.costs.page_copy_ns, token(T_COPY, j, unit));
        let t = h.threads[j];
        h.cpus.run(now.0, t, item);
    }

    /// The device finished `done` at `now`: their interrupt (host model).
    pub(super) fn host_device_done(&mut self, now: Ns, done: &[RqId]) {
        use devices::CompletionCpu as C;
        let how = self.hs().completion;
        let inline = matches!(how, C::Submitter { .. });
        // One interrupt per vector for what completed at this instant.
        let mut by_cpu = std::mem::take(&mut self.hs().by_cpu);
        for &id in done {
            let rq = self.queue.request(id);
            let cpu = if inline {
                rq.issue_cpu
            } else {
                let first = &self.host.as_ref().expect("host model").hctx_first_cpu;
                first.get(rq.hctx as usize).copied().unwrap_or(0)
            };
            match by_cpu.iter_mut().find(|(c, _)| *c == cpu) {
                Some((_, v)) => v.push(id),
                None => {
                    let mut v = self.hs().new_list();
                    v.push(id);
                    by_cpu.push((cpu, v));
                }
            }
        }
        let h = self.hs();
        let irq_ns = match how {
            C::Submitter { irq: false } => 0,
            _ => h.costs.irq_ns,
        };
        for (cpu, rqs) in by_cpu.drain(..) {
            let cpu = wrap_cpu(cpu, h.cpus.len());
            let b = h.store_batch(rqs);
            h.cpus
                .irq(now.0, cpu, Item::new(0, irq_ns, token(T_IRQ, b, cpu)));
        }
        h.by_cpu = by_cpu;
    }

    /// A queue run is due and nobody performs it inline: kblockd.
    pub(super) fn host_kblockd(&mut self, now: Ns) {
        let Some(h) = self.host.as_mut() else { return };
        if h.kblockd_pending {
            return;
        }
        h.kblockd_pending = true;
        let item = Item::new(0, h.costs.wakeup_ns, token(T_KBLOCKD, 0, 0));
        h.cpus.irq(now.0, 0, item);
    }

    /// CPU `cpu`'s event of generation `gen` is due: act on the item that ended.
    pub(super) fn host_cpu_event(&mut self, now: Ns, cpu: u32, gen: u64, obs: &mut dyn IoObserver) {
        let mut toks = std::mem::take(&mut self.hs().tokens);
        self.hs().cpus.fire(now.0, cpu, gen, &mut toks);
        for &tok in &toks {
            self.host_token(now, tok, obs);
        }
        toks.clear();
        let h = self.hs();
        h.tokens = toks;
        h.cpus.settle(now.0);
    }

    fn host_token(&mut self, now: Ns, tok: u64, obs: &mut dyn IoObserver) {
        let (kind, a, b) = untoken(tok);
        match kind {
            T_SUBMIT => {
                let j = a;
                self.jobs[j].cpu_pending = false;
                let cpu = self.hs().job_cpu(j);
                // The thread may have moved: its software queue is its CPU's.
                self.jobs[j].cfg.cpu = cpu;
                let hctx = self.queue.hctx_of_cpu(cpu);
                self.host_locked(now, cpu, self.lock_of(hctx), Action::Submit(j), obs);
            }
            T_AFTER => {
                let j = a;
                self.schedule_cpu(j, now);
                self.maybe_finish(j, now, obs);
            }
            T_REAP => {
                let j = a;
                // With the next submission's own work chained in (`b`), the reaping
                // ended that much before the item did.
                let pre = if b == 1 {
                    std::mem::take(&mut self.hs().chained[j])
                } else {
                    0
                };
                let reaped_at = Ns(now.0 - pre);
                self.hs().reap_armed[j] = false;
                if b == 1 {
                    // fio's loop checked its runtime when the reaping ended.
                    self.jobs[j].submit_decided = reaped_at;
                }
                let posted = std::mem::take(&mut self.hs().posted[j]);
                for &unit in &posted {
                    if let Some(io) = self.complete_unit(j, unit, reaped_at, obs) {
                        obs.io_completed(j, io, io.issue, reaped_at);
                    }
                }
                let mut posted = posted;
                posted.clear();
                if self.hs().posted[j].is_empty() {
                    self.hs().posted[j] = posted;
                }
                let grace = b == 1 && self.begin_grace(j);
                let submits = b == 1 && self.next_submission(j, now).is_some();
                self.end_grace(j, grace);
                if submits {
                    self.host_token(now, token(T_SUBMIT, j, 0), obs);
                    self.start_stall_if_due(j, now);
                } else {
                    self.fill(j, now, obs);
                }
                self.maybe_finish(j, now, obs);
            }
            T_IRQ | T_IPI => {
                let rqs = self.hs().take_batch(a);
                let cpu = b;
                self.host_route_completions(now, cpu, kind == T_IRQ, rqs, obs);
            }
            T_KBLOCKD => {
                self.hs().kblockd_pending = false;
                let cpu = b;
                self.host_locked(now, cpu, self.lock_of(0), Action::Run, obs);
            }
            T_COPY => self.copy_done(a, b, now, obs),
            _ => unreachable!("unknown CPU token {tok:#x}"),
        }
    }

    /// After the interrupt on `cpu`: complete locally what may be, send the rest to
    /// the submitting CPUs (`rq_affinity=1`).
    fn host_route_completions(
        &mut self,
        now: Ns,
        cpu: u32,
        from_irq: bool,
        rqs: Vec<RqId>,
        obs: &mut dyn IoObserver,
    ) {
        let mut rqs = rqs;
        let mut remote = std::mem::take(&mut self.hs().by_cpu);
        let (ncpus, llc, affinity) = {
            let h = self.hs();
            (h.cpus.len(), h.llc_cpus.max(1), h.rq_affinity)
        };
        // `blk_mq_complete_need_ipi`: with rq_affinity 1 the submitting CPU
        // completes it (by IPI) when it is in another last-level cache, with 2
        // whenever it is another CPU, with 0 never.
        let target = |sub: u32| -> Option<u32> {
            let sub = wrap_cpu(sub, ncpus);
            if !from_irq || sub == cpu {
                return None;
            }
            let remote = match affinity {
                0 => false,
                1 => sub / llc != cpu / llc,
                _ => true,
            };
            remote.then_some(sub)
        };
        for &id in &rqs {
            let Some(sub) = target(self.queue.request(id).cpu) else {
                continue;
            };
            match remote.iter_mut().find(|(c, _)| *c == sub) {
                Some((_, v)) => v.push(id),
                None => {
                    let mut v = self.hs().new_list();
                    v.push(id);
                    remote.push((sub, v));
                }
            }
        }
        let queue = &self.queue;
        rqs.retain(|&id| target(queue.request(id).cpu).is_none());
        let h = self.hs();
        for (target, v) in remote.drain(..) {
            let ipi = h.costs.ipi_ns;
            let slot = h.store_batch(v);
            h.cpus
                .irq(now.0, target, Item::new(0, ipi, token(T_IPI, slot, target)));
        }
        h.by_cpu = remote;
        let local = rqs;
        if local.is_empty() {
            h.recycle(local);
            return;
        }
        let hctx = self.queue.request(local[0]).hctx;
        self.host_locked(now, cpu, self.lock_of(hctx), Action::Complete(local), obs);
    }

    /// The context that just ended an item on `cpu` needs `lock` (if any) for `act`.
    fn host_locked(
        &mut self,
        now: Ns,
        cpu: u32,
        lock: Option<usize>,
        act: Action,
        obs: &mut dyn IoObserver,
    ) {
        let Some(l) = lock else {
            self.host_exec(now, cpu, act, None, false, obs);
            return;
        };
        let h = self.hs();
        if h.lock_split && !matches!(act, Action::Run) && h.locks[l].is_busy(now.0) {
            // Another CPU holds the lock (dispatching): insert into the per-CPU
            // list and leave; the run is left to whoever dispatches next.
            self.host_exec_off_lock(now, cpu, act, obs);
            return;
        }
        let slot = h.store_action(act);
        match h.locks[l].acquire(now.0, cpu, slot as u64) {
            Acquire::Taken { prev } => {
                let act = h.take_action(slot);
                self.host_exec(now, cpu, act, Some((l, prev)), false, obs);
            }
            Acquire::Spin => h.cpus.spin(now.0, cpu),
        }
    }

    /// Lock `l`'s first waiter gets it now.
    pub(super) fn host_lock_grant(&mut self, now: Ns, l: usize, obs: &mut dyn IoObserver) {
        let h = self.hs();
        h.lock_armed[l] = None;
        if h.locks[l].next_grant().is_none_or(|t| t > now.0) {
            return;
        }
        let Some((cpu, slot, prev)) = h.locks[l].grant(now.0) else {
            return;
        };
        let act = h.take_action(slot as usize);
        self.host_exec(now, cpu, act, Some((l, prev)), true, obs);
    }

    /// Perform `act` on `cpu` now, holding `lock` (index and previous holder) if
    /// given; then the context goes on for the lock-held and unlocked time the work
    /// cost.
    fn host_exec(
        &mut self,
        now: Ns,
        cpu: u32,
        act: Action,
        lock: Option<(usize, Option<u32>)>,
        spinning: bool,
        obs: &mut dyn IoObserver,
    ) {
        let _ = self.queue.take_work();
        self.queue.set_cpu(cpu);
        let mut chain = None;
        let next = match act {
            Action::Submit(j) => {
                let n = self.ios_per_call(j);
                let grace = self.begin_grace(j);
                self.fill_now(j, now, n, obs);
                self.end_grace(j, grace);
                self.run_due(now);
                // Back from the system call, the thread goes on: its next
                // submission follows in the same stretch of CPU time; with nothing
                // to submit and I/O in flight it sleeps until a completion.
                match self.next_submission(j, now) {
                    Some(n) => {
                        self.jobs[j].cpu_pending = true;
                        chain = Some((j, n));
                        token(T_SUBMIT, j, 0)
                    }
                    // A replayed entry not due yet: the thread sleeps until it is
                    // (T_AFTER starts that sleep), not until a completion.
                    None if self.jobs[j].inflight > 0 && !self.jobs[j].replay_waiting() => {
                        host::cpu::NO_TOKEN
                    }
                    None => token(T_AFTER, j, 0),
                }
            }
            Action::Complete(rqs) => {
                for &id in &rqs {
                    super::complete_from(&mut self.queue, self.device.as_mut(), now, id);
                }
                self.requests += rqs.len() as u64;
                self.hs().recycle(rqs);
                self.run_due(now);
                self.deliver_completions(now, obs);
                host::cpu::NO_TOKEN
            }
            Action::Run => {
                self.run_due(now);
                host::cpu::NO_TOKEN
            }
        };
        let w = self.queue.take_work();
        let h = self.host.as_mut().expect("host model");
        let (locked, free) = h.price(&w);
        let mut hold = 0;
        if let Some((l, prev)) = lock {
            let waiters = h.locks[l].waiters();
            let deferred = std::mem::take(&mut h.deferred_ns);
            hold = locked
                + deferred
                + h.lockc
                    .acquisitions(h.lock_calls(&w).max(1), prev, cpu, waiters);
            h.locks[l].hold(now.0, hold);
        } else {
            hold += locked;
        }
        let mut item = Item {
            usr: 0,
            sys: hold + free,
            token: next,
            nonpreempt: lock.is_some(),
        };
        if let Some((j, n)) = chain {
            let pre = h.submit_item(&self.jobs[j].cfg, n as u64, next);
            // The next submission's work begins when the block layer's ends.
            self.jobs[j].submit_decided = Ns(now.0 + item.usr + item.sys);
            item.usr += pre.usr;
            item.sys += pre.sys;
        }
        if spinning {
            h.cpus.end_spin(now.0, cpu, item);
        } else {
            h.cpus.continue_on(now.0, cpu, item);
        }
    }

    /// [`Action::Submit`] or [`Action::Complete`] with the lock busy and dispatch
    /// serialized: the state change without the queue run; the lock-held part of
    /// the work is left to the next holder.
    fn host_exec_off_lock(&mut self, now: Ns, cpu: u32, act: Action, obs: &mut dyn IoObserver) {
        let _ = self.queue.take_work();
        self.queue.set_cpu(cpu);
        let next = match act {
            Action::Submit(j) => {
                let n = self.ios_per_call(j);
                let grace = self.begin_grace(j);
                self.fill_now(j, now, n, obs);
                self.end_grace(j, grace);
                token(T_AFTER, j, 0)
            }
            Action::Complete(rqs) => {
                for &id in &rqs {
                    super::complete_from(&mut self.queue, self.device.as_mut(), now, id);
                }
                self.requests += rqs.len() as u64;
                self.hs().recycle(rqs);
                self.deliver_completions(now, obs);
                host::cpu::NO_TOKEN
            }
            Action::Run => unreachable!("kblockd runs take the lock"),
        };
        let w = self.queue.take_work();
        let h = self.hs();
        let (locked, free) = h.price(&w);
        h.deferred_ns += locked;
        // The per-CPU list's own lock, once per insertion call.
        let list_lock = w.insert_calls * h.lockc.lock_ns;
        let item = Item::new(0, free + list_lock, next);
        h.cpus.continue_on(now.0, cpu, item);
    }

    /// Run the hardware queues if a run is due (what the caller's context does
    /// inline).
    fn run_due(&mut self, now: Ns) {
        if self.queue.next_run().is_some_and(|t| t <= now) {
            let dev: &mut dyn blk::mq::Driver = self.device.as_mut();
            self.queue.run(now, dev);
        }
    }

    /// Post a completion to job `j` and wake its thread to reap it.
    pub(super) fn host_post(&mut self, j: usize, unit: u32, now: Ns) {
        let per_call = self.ios_per_call(j) as u64;
        let h = self.host.as_mut().expect("host model");
        h.posted[j].push(unit);
        if h.reap_armed[j] {
            return;
        }
        h.reap_armed[j] = true;
        let t = h.threads[j];
        let wake = if h.cpus.is_sleeping(now.0, t) {
            h.costs.wakeup_ns
        } else {
            0
        };
        let mut item = Item::new(0, wake + h.costs.reap_ns, token(T_REAP, j, 0));
        let job = &self.jobs[j];
        if !job.cfg.buffered && !job.cpu_pending {
            // fio reaps and goes straight on to its next submission: one stretch
            // of CPU time.
            let pre = h.submit_item(&job.cfg, per_call, 0);
            item.usr += pre.usr;
            item.sys += pre.sys;
            item.token = token(T_REAP, j, 1);
            h.chained[j] = pre.usr + pre.sys;
        }
        h.cpus.run(now.0, t, item);
    }

    /// Arm the CPU and lock events the host model wants.
    pub(super) fn host_arm(&mut self, now: Ns) {
        let Some(h) = self.host.as_mut() else { return };
        // Contexts left between items by work given outside a CPU event (a
        // thread woken with nothing to do) settle at the end of the event, too.
        h.cpus.settle(now.0);
        h.cpus.take_arms(&mut h.arms);
        for (t, c, g) in h.arms.drain(..) {
            if h.cpus.is_current(c, g) {
                // A CPU's newer event supersedes its older one.
                self.events.push_slot(Ns(t).max(now), c, Ev::Cpu(c, g));
            }
        }
        for l in 0..h.locks.len() {
            if let Some(t) = h.locks[l].next_grant() {
                let t = Ns(t).max(now);
                if h.lock_armed[l].is_none_or(|a| t < a) {
                    h.lock_armed[l] = Some(t);
                    self.events.push(t, Ev::LockGrant(l));
                }
            }
        }
    }
}
