//! Simulated CPUs: each runs one thing at a time.
//!
//! A CPU runs *work items*: a known amount of user and system time that ends with a
//! token handed back to the caller ([`Cpus::advance`]). Items belong to a context:
//!
//! - a **thread** (a fio job, a kernel worker): threads are scheduled on their CPU
//!   by fair share, the way CFS/EEVDF behave at the level that matters for I/O. Each
//!   thread has a virtual runtime; the runnable thread with the smallest runs; a
//!   thread that has run a whole slice (`base_slice`) while others wait is preempted
//!   (an involuntary context switch); a woken thread is placed at the CPU's minimum
//!   virtual runtime less half a latency period (the sleeper credit of
//!   `place_entity`), so an I/O waiter runs soon, and preempts the running thread
//!   when it is a wake-up granularity behind it (`check_preempt_wakeup_fair`). A
//!   thread whose item ended and that is given no new work in the same instant has
//!   gone to sleep (a voluntary context switch). A woken thread whose CPU is busy
//!   moves to an idle CPU it is allowed on (`select_idle_sibling`), lowest number
//!   first.
//! - **interrupt** work (hard IRQ, the block softirq, IPIs, and kblockd's high
//!   priority kworkers): it runs before any thread, first come first served, and
//!   preempts a running thread item, which resumes where it was afterwards (no
//!   context switch: the thread never left the CPU).
//!
//! A context can **spin** ([`Cpus::spin`]): it keeps its CPU busy, accounted as
//! system time, until the caller ends the spin ([`Cpus::end_spin`]) — a spinlock
//! wait. Spinning and the critical section that follows are not preemptible and
//! take no interrupts (as under `spin_lock_irq`); interrupts wait until the item
//! ends.
//!
//! Everything is deterministic: ties go to the lower CPU or thread number or the
//! earlier request; time is passed in.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A thread's number, as [`Cpus::add_thread`] returned it.
pub type ThreadId = u32;

/// The token of an item nobody waits for: its end is not reported, and when
/// nothing else waits for its CPU it ends without an event of its own (a thread
/// then goes to sleep at its end).
pub const NO_TOKEN: u64 = 0;

/// A piece of CPU work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    /// User time, ns.
    pub usr: u64,
    /// System (kernel) time, ns; for interrupt items, interrupt time.
    pub sys: u64,
    /// Handed back by [`Cpus::advance`] when the item ends.
    pub token: u64,
    /// The item may not be preempted (a spinlock's critical section).
    pub nonpreempt: bool,
}

impl Item {
    /// A preemptible item of `usr` + `sys` ns.
    pub fn new(usr: u64, sys: u64, token: u64) -> Item {
        Item {
            usr,
            sys,
            token,
            nonpreempt: false,
        }
    }

    fn len(&self) -> u64 {
        self.usr + self.sys
    }
}

/// Scheduler parameters (`kernel/sched/fair.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    /// `sysctl_sched_base_slice` as scaled at boot (0.75 ms × (1 + ilog2(min(CPUs, 8))):
    /// 3 ms with 8 or more CPUs), ns.
    pub slice_ns: u64,
    /// `sysctl_sched_latency` as scaled at boot (6 ms × the same factor), ns: a woken
    /// thread's credit is half of it.
    pub latency_ns: u64,
    /// `sysctl_sched_wakeup_granularity` as scaled at boot (1 ms × the same factor), ns.
    pub wakeup_gran_ns: u64,
}

impl SchedParams {
    /// The kernel's defaults for a machine with `cpus` CPUs
    /// (`get_update_sysctl_factor`, `SCHED_TUNABLESCALING_LOG`).
    pub fn for_cpus(cpus: u32) -> SchedParams {
        let factor = 1 + u64::from(cpus.clamp(1, 8).ilog2());
        SchedParams {
            slice_ns: 750_000 * factor,
            latency_ns: 6_000_000 * factor,
            wakeup_gran_ns: 1_000_000 * factor,
        }
    }
}

/// Where a CPU's time went, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Threads' user time.
    pub usr: u64,
    /// Threads' system time (spinning included).
    pub sys: u64,
    /// Interrupt and softirq time.
    pub irq: u64,
    /// Of `sys` and `irq`: time spent spinning on a lock.
    pub spin: u64,
}

impl CpuTime {
    /// Busy time.
    pub fn busy(&self) -> u64 {
        self.usr + self.sys + self.irq
    }
}

/// A thread's accounting (`getrusage(RUSAGE_THREAD)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadTime {
    /// User time, ns.
    pub usr: u64,
    /// System time, ns (spinning included).
    pub sys: u64,
    /// Voluntary context switches (`ru_nvcsw`): the thread went to sleep.
    pub nvcsw: u64,
    /// Involuntary context switches (`ru_nivcsw`): the thread was preempted.
    pub nivcsw: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Thread(ThreadId),
    Irq,
}

/// What a CPU is doing now.
#[derive(Clone, Copy, Debug)]
struct Current {
    ctx: Ctx,
    /// The item and when it started (or resumed); `None`: the item ended at
    /// `since` and the context waits for [`Cpus::settle`].
    item: Option<Item>,
    since: u64,
    /// Spinning since `since` (no end known).
    spinning: bool,
}

#[derive(Debug, Default)]
struct Cpu {
    cur: Option<Current>,
    /// A thread interrupted by interrupt work, with what was left of its item.
    preempted: Option<(ThreadId, Option<Item>)>,
    irqs: VecDeque<Item>,
    /// Runnable threads (not running): ordered by (vruntime, sequence).
    runq: VecDeque<(u64, u64, ThreadId)>,
    min_vruntime: u64,
    /// Bumped whenever the CPU's next event changes (stale heap entries are skipped).
    gen: u64,
    /// The running thread's slice ends here.
    slice_end: u64,
    time: CpuTime,
    needs_settle: bool,
    /// The current item is a [`NO_TOKEN`] interrupt item with no event armed.
    lazy: bool,
    /// A switch to a runnable thread decided before the interrupt item it waits
    /// behind ended ([`Cpus::switch_early`]), with what undoing it needs.
    early: Option<Early>,
}

/// What [`Cpus::switch_early`] changed, to put back if anything reaches the CPU
/// before the interrupt item's end.
#[derive(Clone, Copy, Debug)]
struct Early {
    /// The interrupt item and its start; it ends at the thread's `since`.
    irq: Item,
    irq_since: u64,
    /// The thread's run-queue entry.
    entry: (u64, u64, ThreadId),
    /// The thread's item came from `resume` (else from the front of `pending`).
    from_resume: bool,
    /// The CPU's values before the switch.
    min_vruntime: u64,
    slice_end: u64,
    /// The thread's CPU before the switch.
    thread_cpu: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Blocked,
    Runnable,
    Running,
}

#[derive(Debug)]
struct Thread {
    cpu: u32,
    allowed: Vec<u32>,
    state: State,
    vruntime: u64,
    /// Work given while the thread was busy, to run after its current item.
    pending: VecDeque<Item>,
    /// The item it was preempted in (slice end or wake-up preemption).
    resume: Option<Item>,
    time: ThreadTime,
}

/// A segment of CPU time, for checks ([`Cpus::set_trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The CPU.
    pub cpu: u32,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// The thread, or `None` for interrupt work.
    pub thread: Option<ThreadId>,
}

/// The simulated CPUs; see the module docs.
#[derive(Debug)]
pub struct Cpus {
    cpus: Vec<Cpu>,
    threads: Vec<Thread>,
    p: SchedParams,
    seq: u64,
    /// Events asked for and not yet handed out: (time, cpu, generation).
    arms: Vec<(u64, u32, u64)>,
    /// The events of [`Cpus::next_event`] / [`Cpus::advance`], for callers without
    /// an event queue of their own.
    heap: BinaryHeap<Reverse<(u64, u32, u64)>>,
    unsettled: Vec<u32>,
    trace: Option<Vec<Segment>>,
}

impl Cpus {
    /// `n` idle CPUs.
    pub fn new(n: u32, p: SchedParams) -> Cpus {
        Cpus {
            cpus: (0..n.max(1)).map(|_| Cpu::default()).collect(),
            threads: Vec::new(),
            p,
            seq: 0,
            arms: Vec::new(),
            heap: BinaryHeap::new(),
            unsettled: Vec::new(),
            trace: None,
        }
    }

    /// Number of CPUs.
    #[inline]
    pub fn len(&self) -> u32 {
        self.cpus.len() as u32
    }

    /// Always false: there is at least one CPU.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Record every busy segment (for tests of the invariants).
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// The busy segments recorded since [`Cpus::set_trace`].
    pub fn trace(&self) -> &[Segment] {
        self.trace.as_deref().unwrap_or(&[])
    }

    /// A new sleeping thread whose home is `cpu`, allowed on `allowed` (empty: only
    /// `cpu`).
    pub fn add_thread(&mut self, cpu: u32, allowed: &[u32]) -> ThreadId {
        let n = self.len();
        let cpu = cpu % n;
        let mut allowed: Vec<u32> = allowed.iter().map(|c| c % n).collect();
        allowed.sort_unstable();
        allowed.dedup();
        if allowed.is_empty() {
            allowed.push(cpu);
        }
        self.threads.push(Thread {
            cpu,
            allowed,
            state: State::Blocked,
            vruntime: 0,
            pending: VecDeque::new(),
            resume: None,
            time: ThreadTime::default(),
        });
        (self.threads.len() - 1) as ThreadId
    }

    /// The CPU thread `t` is on (or last ran on).
    #[inline]
    pub fn thread_cpu(&self, t: ThreadId) -> u32 {
        self.threads[t as usize].cpu
    }

    /// Thread `t`'s accounting.
    pub fn thread_time(&self, t: ThreadId) -> ThreadTime {
        self.threads[t as usize].time
    }

    /// CPU `c`'s accounting up to its last event.
    pub fn cpu_time(&self, c: u32) -> CpuTime {
        self.cpus[c as usize].time
    }

    /// Give thread `t` an item: a busy thread runs it after its current item (a
    /// thread between two items, whose last item's token is being handled, at
    /// [`Cpus::settle`]); a sleeping thread wakes up.
    pub fn run(&mut self, now: u64, t: ThreadId, item: Item) {
        if self.threads[t as usize].state == State::Running {
            // A last item nobody waited for may have ended: the thread slept since.
            let c = self.threads[t as usize].cpu;
            self.unlazy(now, c);
        }
        let th = &mut self.threads[t as usize];
        th.pending.push_back(item);
        if th.state == State::Blocked {
            self.wake(now, t);
        }
    }

    /// Interrupt work on CPU `c`.
    pub fn irq(&mut self, now: u64, c: u32, item: Item) {
        self.unlazy(now, c);
        let now = self.not_before(now, c);
        let cpu = &mut self.cpus[c as usize];
        cpu.irqs.push_back(item);
        match cpu.cur {
            None => self.pick(now, c),
            Some(cur) if cur.ctx != Ctx::Irq && !cur.spinning && cur.item.is_some() => {
                let nonpreempt = cur.item.is_some_and(|i| i.nonpreempt);
                if !nonpreempt {
                    if let Ctx::Thread(t) = cur.ctx {
                        let left = self.stop_current(now, c);
                        self.cpus[c as usize].preempted = Some((t, left));
                        self.pick(now, c);
                    }
                }
            }
            _ => {}
        }
    }

    /// The context that just ended an item on CPU `c` (before [`Cpus::settle`])
    /// goes on with `item` at once.
    pub fn continue_on(&mut self, now: u64, c: u32, item: Item) {
        let cur = self.cpus[c as usize]
            .cur
            .expect("continue_on: CPU has no context");
        debug_assert!(cur.item.is_none() && !cur.spinning);
        self.start(now, c, cur.ctx, item);
    }

    /// The context that just ended an item on CPU `c` spins (on a lock) until
    /// [`Cpus::end_spin`].
    pub fn spin(&mut self, now: u64, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        let cur = cpu.cur.as_mut().expect("spin: CPU has no context");
        debug_assert!(cur.item.is_none());
        cur.spinning = true;
        cur.since = now;
        cpu.gen += 1;
    }

    /// The spin on CPU `c` ends now; the context goes on with `item`.
    pub fn end_spin(&mut self, now: u64, c: u32, item: Item) {
        let cpu = &mut self.cpus[c as usize];
        let cur = cpu.cur.expect("end_spin: CPU has no context");
        debug_assert!(cur.spinning);
        let spun = now.saturating_sub(cur.since);
        self.account(c, cur.ctx, cur.since, 0, spun, true);
        self.start(now, c, cur.ctx, item);
    }

    /// Is thread `t` asleep at `now` (not running, not runnable; a last item
    /// nobody waited for has ended)?
    pub fn is_sleeping(&self, now: u64, t: ThreadId) -> bool {
        let th = &self.threads[t as usize];
        match th.state {
            State::Blocked => true,
            State::Runnable => false,
            State::Running => {
                let cpu = &self.cpus[th.cpu as usize];
                cpu.lazy
                    && cpu.cur.is_some_and(|x| x.ctx == Ctx::Thread(t))
                    && self.lazy_end(th.cpu) <= now
            }
        }
    }

    /// Is CPU `c` running nothing, with nothing waiting?
    pub fn is_idle(&self, c: u32) -> bool {
        let cpu = &self.cpus[c as usize];
        cpu.cur.is_none() && cpu.irqs.is_empty() && cpu.runq.is_empty()
    }

    /// `now`, or the instant CPU `c`'s current item starts if that is later (a
    /// thread resumed ahead of time by [`Cpus::resume_early`]).
    fn not_before(&self, now: u64, c: u32) -> u64 {
        match self.cpus[c as usize].cur {
            Some(cur) if cur.since > now => cur.since,
            _ => now,
        }
    }

    /// Is CPU `c` idle at `now`, counting a [`NO_TOKEN`] item that has ended?
    fn idle_at(&self, now: u64, c: u32) -> bool {
        let cpu = &self.cpus[c as usize];
        let ended = cpu.lazy
            && cpu
                .cur
                .and_then(|x| x.item.map(|i| x.since + i.len()))
                .is_some_and(|end| end <= now);
        (cpu.cur.is_none() || ended) && cpu.irqs.is_empty() && cpu.runq.is_empty()
    }

    /// Work arrives at CPU `c`: a [`NO_TOKEN`] item running without an event
    /// either has ended (it is retired now) or gets its event, so that the CPU
    /// takes the new work when it ends.
    #[inline]
    fn unlazy(&mut self, now: u64, c: u32) {
        let cpu = &self.cpus[c as usize];
        if cpu.early.is_some() {
            self.settle_early(now, c);
        }
        if self.cpus[c as usize].lazy {
            self.retire_lazy(now, c);
        }
    }

    fn retire_lazy(&mut self, now: u64, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        cpu.lazy = false;
        let cur = cpu.cur.expect("lazy item");
        let item = cur.item.expect("lazy item");
        let end = cur.since + item.len();
        if end <= now {
            self.account(c, cur.ctx, cur.since, item.usr, item.sys, false);
            let cpu = &mut self.cpus[c as usize];
            cpu.cur = None;
            cpu.gen += 1;
            if let Ctx::Thread(t) = cur.ctx {
                // It went to sleep when the item ended.
                let th = &mut self.threads[t as usize];
                th.state = State::Blocked;
                th.time.nvcsw += 1;
            }
        } else {
            cpu.gen += 1;
            let g = cpu.gen;
            self.arms.push((end, c, g));
        }
    }

    /// The run ends at `now`: retire the [`NO_TOKEN`] items that ended without an
    /// event, so that every CPU's time is accounted.
    pub fn finish(&mut self, now: u64) {
        for c in 0..self.len() {
            if self.cpus[c as usize].lazy {
                self.unlazy(now.max(self.lazy_end(c)), c);
            }
        }
    }

    fn lazy_end(&self, c: u32) -> u64 {
        let cpu = &self.cpus[c as usize];
        cpu.cur
            .and_then(|x| x.item.map(|i| x.since + i.len()))
            .unwrap_or(0)
    }

    /// Hand out the events the CPUs asked for since the last call, as (time, CPU,
    /// generation): the caller delivers each with [`Cpus::fire`] at its time (stale
    /// ones are ignored there). A caller with an event queue of its own uses this
    /// instead of [`Cpus::next_event`] / [`Cpus::advance`].
    #[inline]
    pub fn take_arms(&mut self, out: &mut Vec<(u64, u32, u64)>) {
        if self.arms.is_empty() {
            return;
        }
        out.append(&mut self.arms);
    }

    /// Is `g` CPU `c`'s current generation, i.e. would an event (`c`, `g`) still
    /// act? Arms superseded before they reach an event queue need not enter it.
    #[inline]
    pub fn is_current(&self, c: u32, g: u64) -> bool {
        self.cpus[c as usize].gen == g
    }

    /// When the next item ends (or a slice does), if ever.
    pub fn next_event(&mut self) -> Option<u64> {
        for a in self.arms.drain(..) {
            self.heap.push(Reverse(a));
        }
        while let Some(Reverse((t, c, g))) = self.heap.peek().copied() {
            if self.cpus[c as usize].gen == g {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// End the items due by `now`, pushing their tokens to `out` (in time, then
    /// CPU order). Slices that end are dealt with here too. Call [`Cpus::settle`]
    /// once the tokens have been acted upon.
    pub fn advance(&mut self, now: u64, out: &mut Vec<u64>) {
        for a in self.arms.drain(..) {
            self.heap.push(Reverse(a));
        }
        while let Some(Reverse((t, c, g))) = self.heap.peek().copied() {
            if t > now {
                break;
            }
            self.heap.pop();
            self.fire(t, c, g, out);
        }
    }

    /// CPU `c`'s event of generation `g`, due at `now`: its item (or slice) ends.
    /// The item's token goes to `out`; call [`Cpus::settle`] once it was acted upon.
    pub fn fire(&mut self, now: u64, c: u32, g: u64, out: &mut Vec<u64>) {
        if self.cpus[c as usize].gen != g {
            return;
        }
        if self.cpus[c as usize].early.is_some() {
            self.settle_early(now, c);
        }
        let cur = self.cpus[c as usize].cur.expect("event on an idle CPU");
        let item = cur.item.expect("event without an item");
        let end = cur.since + item.len();
        if end <= now {
            self.account(c, cur.ctx, cur.since, item.usr, item.sys, false);
            let cpu = &mut self.cpus[c as usize];
            cpu.cur = Some(Current {
                ctx: cur.ctx,
                item: None,
                since: end,
                spinning: false,
            });
            cpu.gen += 1;
            self.mark_unsettled(c);
            if item.token != NO_TOKEN {
                out.push(item.token);
            }
        } else {
            // The slice ended with others waiting.
            self.slice_end(now, c);
        }
    }

    /// After the tokens of [`Cpus::advance`] were handled: contexts given no new
    /// work sleep (threads) or end (interrupts), and the CPUs pick what runs next.
    #[inline]
    pub fn settle(&mut self, now: u64) {
        if !self.unsettled.is_empty() {
            self.settle_all(now);
        }
    }

    fn settle_all(&mut self, now: u64) {
        while let Some(c) = self.unsettled.pop() {
            let cpu = &mut self.cpus[c as usize];
            cpu.needs_settle = false;
            let Some(cur) = cpu.cur else {
                self.pick(now, c);
                continue;
            };
            if cur.item.is_some() || cur.spinning {
                continue;
            }
            match cur.ctx {
                Ctx::Thread(t) => {
                    let th = &mut self.threads[t as usize];
                    if let Some(next) = th.pending.pop_front() {
                        self.start(now, c, cur.ctx, next);
                        continue;
                    }
                    th.state = State::Blocked;
                    th.time.nvcsw += 1;
                    self.cpus[c as usize].cur = None;
                    self.pick(now, c);
                }
                Ctx::Irq => {
                    self.cpus[c as usize].cur = None;
                    self.pick(now, c);
                }
            }
        }
    }

    fn mark_unsettled(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if !cpu.needs_settle {
            cpu.needs_settle = true;
            self.unsettled.push(c);
        }
    }

    fn account(&mut self, c: u32, ctx: Ctx, start: u64, usr: u64, sys: u64, spin: bool) {
        let end = start + usr + sys;
        if let Some(tr) = self.trace.as_mut() {
            if end > start {
                tr.push(Segment {
                    cpu: c,
                    start,
                    end,
                    thread: match ctx {
                        Ctx::Thread(t) => Some(t),
                        Ctx::Irq => None,
                    },
                });
            }
        }
        let cpu = &mut self.cpus[c as usize];
        match ctx {
            Ctx::Thread(t) => {
                cpu.time.usr += usr;
                cpu.time.sys += sys;
                let th = &mut self.threads[t as usize];
                th.time.usr += usr;
                th.time.sys += sys;
                th.vruntime += usr + sys;
            }
            Ctx::Irq => cpu.time.irq += usr + sys,
        }
        if spin {
            cpu.time.spin += sys;
        }
    }

    /// Start `item` in context `ctx` on CPU `c` now.
    fn start(&mut self, now: u64, c: u32, ctx: Ctx, item: Item) {
        let cpu = &mut self.cpus[c as usize];
        cpu.cur = Some(Current {
            ctx,
            item: Some(item),
            since: now,
            spinning: false,
        });
        self.arm(now, c);
    }

    /// Push CPU `c`'s next event: its item's end, or its slice's end if others
    /// wait and the item is preemptible.
    fn arm(&mut self, now: u64, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        cpu.gen += 1;
        cpu.lazy = false;
        let Some(cur) = cpu.cur else { return };
        let Some(item) = cur.item else { return };
        // A thread resumed ahead of time (`resume_early`) starts at `since`.
        let now = now.max(cur.since);
        let mut at = cur.since + item.len();
        if matches!(cur.ctx, Ctx::Thread(_)) && !item.nonpreempt && !cpu.runq.is_empty() {
            at = at.min(cpu.slice_end.max(now));
        }
        let alone = match cur.ctx {
            Ctx::Irq => true,
            Ctx::Thread(t) => self.threads[t as usize].pending.is_empty(),
        };
        if alone && item.token == NO_TOKEN && cpu.irqs.is_empty() && cpu.runq.is_empty() {
            match cpu.preempted {
                None => {
                    // Nobody waits for its end: no event unless work arrives meanwhile.
                    cpu.lazy = true;
                    return;
                }
                Some((t, Some(left))) if cur.ctx == Ctx::Irq => {
                    self.resume_early(c, cur.since, item, t, left);
                    return;
                }
                Some(_) => {}
            }
        }
        if cur.ctx == Ctx::Irq
            && item.token == NO_TOKEN
            && cpu.irqs.is_empty()
            && cpu.preempted.is_none()
            && cpu.early.is_none()
            && self.switch_early(c, cur.since, item)
        {
            return;
        }
        self.arms.push((at, c, self.cpus[c as usize].gen));
    }

    /// CPU `c` runs the interrupt item `irq` (since `since`) that nobody waits for,
    /// with threads runnable behind it: switch to the first of them now, as the
    /// pick at the item's end would, so that the end needs no event of its own.
    /// The interrupt's time is accounted at once and the thread is current from
    /// that end on. Anything that reaches the CPU before then
    /// ([`Cpus::settle_early`]) undoes the switch first, so the pick happens as
    /// if it had waited. Returns false (nothing done) when the thread has no item
    /// to run.
    fn switch_early(&mut self, c: u32, since: u64, irq: Item) -> bool {
        let cpu = &self.cpus[c as usize];
        let Some(&entry) = cpu.runq.front() else {
            return false;
        };
        let t = entry.2;
        let th = &self.threads[t as usize];
        let from_resume = th.resume.is_some();
        if !from_resume && th.pending.is_empty() {
            return false;
        }
        let early = Early {
            irq,
            irq_since: since,
            entry,
            from_resume,
            min_vruntime: cpu.min_vruntime,
            slice_end: cpu.slice_end,
            thread_cpu: th.cpu,
        };
        self.account(c, Ctx::Irq, since, irq.usr, irq.sys, false);
        let end = since + irq.len();
        let cpu = &mut self.cpus[c as usize];
        cpu.runq.pop_front();
        cpu.cur = None;
        self.switch_to(end, c, t);
        self.cpus[c as usize].early = Some(early);
        true
    }

    /// Before anything acts on CPU `c` at `now`: a switch made ahead of time
    /// ([`Cpus::switch_early`]) stands if its instant has come, and is undone
    /// otherwise — the interrupt item runs again, unaccounted, with its event, and
    /// the thread is back in the run queue where it was.
    fn settle_early(&mut self, now: u64, c: u32) {
        let Some(e) = self.cpus[c as usize].early.take() else {
            return;
        };
        let end = e.irq_since + e.irq.len();
        if now >= end {
            return;
        }
        let t = e.entry.2;
        let cur = self.cpus[c as usize]
            .cur
            .expect("early switch: thread current");
        debug_assert_eq!(cur.ctx, Ctx::Thread(t));
        let item = cur.item.expect("early switch: thread item");
        let th = &mut self.threads[t as usize];
        if e.from_resume {
            th.resume = Some(item);
        } else {
            th.pending.push_front(item);
        }
        th.state = State::Runnable;
        th.cpu = e.thread_cpu;
        self.unaccount_irq(c, e.irq_since, e.irq.len());
        let cpu = &mut self.cpus[c as usize];
        let at = cpu.runq.partition_point(|x| *x < e.entry);
        cpu.runq.insert(at, e.entry);
        cpu.min_vruntime = e.min_vruntime;
        cpu.slice_end = e.slice_end;
        cpu.cur = Some(Current {
            ctx: Ctx::Irq,
            item: Some(e.irq),
            since: e.irq_since,
            spinning: false,
        });
        cpu.gen += 1;
        let g = cpu.gen;
        self.arms.push((end, c, g));
    }

    /// Take back interrupt time accounted ahead of time on CPU `c`.
    fn unaccount_irq(&mut self, c: u32, start: u64, len: u64) {
        self.cpus[c as usize].time.irq -= len;
        if let Some(tr) = self.trace.as_mut() {
            if let Some(i) = tr
                .iter()
                .rposition(|s| s.cpu == c && s.start == start && s.thread.is_none())
            {
                tr.remove(i);
            }
        }
    }

    /// CPU `c` runs the interrupt item `irq` (since `since`) that nobody waits for,
    /// and then thread `t` resumes `left`, the item the interrupt preempted: with
    /// nothing else queued on the CPU that is settled now, without an event at the
    /// interrupt's end. The interrupt's time is accounted at once and the thread is
    /// made current from that end on (`since` in the future); work that arrives on
    /// the CPU before then starts no earlier ([`Cpus::irq`], [`Cpus::wake`] and
    /// [`Cpus::arm`] take the later of now and `since`), which is what it would
    /// have found with the interrupt still running.
    fn resume_early(&mut self, c: u32, since: u64, irq: Item, t: ThreadId, left: Item) {
        self.account(c, Ctx::Irq, since, irq.usr, irq.sys, false);
        let end = since + irq.len();
        let cpu = &mut self.cpus[c as usize];
        cpu.preempted = None;
        cpu.cur = Some(Current {
            ctx: Ctx::Thread(t),
            item: Some(left),
            since: end,
            spinning: false,
        });
        self.arm(end, c);
    }

    /// Stop the running thread item on CPU `c` at `now`, accounting what ran;
    /// returns what is left of it.
    fn stop_current(&mut self, now: u64, c: u32) -> Option<Item> {
        let cur = self.cpus[c as usize].cur.take()?;
        self.cpus[c as usize].gen += 1;
        let item = cur.item?;
        let ran = now.saturating_sub(cur.since).min(item.len());
        // User time first, then system time.
        let usr = ran.min(item.usr);
        let sys = ran - usr;
        self.account(c, cur.ctx, cur.since, usr, sys, false);
        Some(Item {
            usr: item.usr - usr,
            sys: item.sys - sys,
            ..item
        })
    }

    fn runq_insert(&mut self, c: u32, t: ThreadId) {
        self.seq += 1;
        let vr = self.threads[t as usize].vruntime;
        let q = &mut self.cpus[c as usize].runq;
        let key = (vr, self.seq, t);
        let at = q.partition_point(|e| *e < key);
        q.insert(at, key);
        self.threads[t as usize].state = State::Runnable;
    }

    /// A sleeping thread got work: place it, maybe move it to an idle CPU, maybe
    /// preempt.
    fn wake(&mut self, now: u64, t: ThreadId) {
        let home = self.threads[t as usize].cpu;
        self.unlazy(now, home);
        let mut c = home;
        if !self.is_idle(home) {
            let idle = self.threads[t as usize]
                .allowed
                .iter()
                .copied()
                .find(|&x| self.idle_at(now, x));
            if let Some(x) = idle {
                c = x;
            }
        }
        self.unlazy(now, c);
        let credit = self.p.latency_ns / 2;
        let min_vr = self.cpus[c as usize].min_vruntime;
        let th = &mut self.threads[t as usize];
        th.cpu = c;
        th.vruntime = th.vruntime.max(min_vr.saturating_sub(credit));
        let vr = th.vruntime;
        let cur = self.cpus[c as usize].cur;
        if self.not_before(now, c) > now {
            // The CPU is still in the interrupt work before its thread resumes: no
            // wake-up preemption, but the resumed item's slice now counts.
            self.runq_insert(c, t);
            self.arm(now, c);
            return;
        }
        match cur {
            // An idle CPU runs the woken thread at once (what queueing it and
            // picking would give, without the run-queue round trip).
            None if self.cpus[c as usize].irqs.is_empty()
                && self.cpus[c as usize].preempted.is_none()
                && self.cpus[c as usize].runq.is_empty() =>
            {
                self.switch_to(now, c, t);
            }
            None => {
                self.runq_insert(c, t);
                self.pick(now, c);
            }
            Some(Current {
                ctx: Ctx::Thread(r),
                item: Some(item),
                since,
                spinning: false,
            }) if !item.nonpreempt => {
                let rv = self.threads[r as usize].vruntime + now.saturating_sub(since);
                self.runq_insert(c, t);
                if vr + self.p.wakeup_gran_ns < rv {
                    self.preempt(now, c);
                } else {
                    // The running thread's slice may now end before its item.
                    self.arm(now, c);
                }
            }
            _ => self.runq_insert(c, t),
        }
    }

    /// Preempt the running thread of CPU `c` (slice end or wake-up preemption).
    fn preempt(&mut self, now: u64, c: u32) {
        let Some(Current {
            ctx: Ctx::Thread(r),
            ..
        }) = self.cpus[c as usize].cur
        else {
            return;
        };
        let left = self.stop_current(now, c);
        let th = &mut self.threads[r as usize];
        th.resume = left;
        th.time.nivcsw += 1;
        self.runq_insert(c, r);
        self.pick(now, c);
    }

    fn slice_end(&mut self, now: u64, c: u32) {
        let cur = self.cpus[c as usize].cur.expect("slice on an idle CPU");
        let Ctx::Thread(r) = cur.ctx else { return };
        let rv = self.threads[r as usize].vruntime + now.saturating_sub(cur.since);
        let first = self.cpus[c as usize].runq.front().map(|e| e.0);
        match first {
            Some(v) if v < rv => self.preempt(now, c),
            _ => {
                let cpu = &mut self.cpus[c as usize];
                cpu.slice_end = now + self.p.slice_ns;
                self.arm(now, c);
            }
        }
    }

    /// CPU `c` has nothing running: interrupt work first, then an interrupted
    /// thread, then the runnable thread with the smallest virtual runtime.
    fn pick(&mut self, now: u64, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        debug_assert!(cpu.cur.is_none());
        if let Some(item) = cpu.irqs.pop_front() {
            self.start(now, c, Ctx::Irq, item);
            return;
        }
        if let Some((t, left)) = cpu.preempted.take() {
            match left {
                Some(item) => self.start(now, c, Ctx::Thread(t), item),
                None => self.between_items(now, c, t),
            }
            return;
        }
        if cpu.runq.is_empty() {
            cpu.gen += 1;
            return;
        }
        let (_, _, t) = cpu.runq.pop_front().expect("non-empty run queue");
        self.switch_to(now, c, t);
    }

    /// Thread `t`, no longer queued, runs on CPU `c` from `now`: a new slice, and
    /// its preempted item or its next pending one.
    fn switch_to(&mut self, now: u64, c: u32, t: ThreadId) {
        let vr = self.threads[t as usize].vruntime;
        let cpu = &mut self.cpus[c as usize];
        let min_vr = cpu.runq.front().map_or(vr, |e| e.0.min(vr));
        cpu.min_vruntime = cpu.min_vruntime.max(min_vr);
        cpu.slice_end = now + self.p.slice_ns;
        let th = &mut self.threads[t as usize];
        th.state = State::Running;
        th.cpu = c;
        let item = th.resume.take().or_else(|| th.pending.pop_front());
        match item {
            Some(item) => self.start(now, c, Ctx::Thread(t), item),
            // Woken with nothing to do: it goes back to sleep at the settle.
            None => self.between_items(now, c, t),
        }
    }

    /// Thread `t` is on CPU `c` with no item: at [`Cpus::settle`] it takes its
    /// pending work or sleeps.
    fn between_items(&mut self, now: u64, c: u32, t: ThreadId) {
        self.cpus[c as usize].cur = Some(Current {
            ctx: Ctx::Thread(t),
            item: None,
            since: now,
            spinning: false,
        });
        self.mark_unsettled(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_all(c: &mut Cpus, log: &mut Vec<(u64, u64)>) {
        let mut out = Vec::new();
        while let Some(t) = c.next_event() {
            c.advance(t, &mut out);
            for tok in out.drain(..) {
                log.push((t, tok));
            }
            c.settle(t);
        }
    }

    #[test]
    fn two_threads_on_one_cpu_take_turns_by_fifo_for_short_items() {
        let mut c = Cpus::new(1, SchedParams::for_cpus(1));
        let a = c.add_thread(0, &[]);
        let b = c.add_thread(0, &[]);
        c.run(0, a, Item::new(1000, 500, 1));
        c.run(100, b, Item::new(0, 2000, 2));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        // a runs 0..1500, b 1500..3500 (no preemption: b's credit does not reach
        // the wake-up granularity behind a).
        assert_eq!(log, vec![(1500, 1), (3500, 2)]);
        assert_eq!(c.thread_time(a).usr, 1000);
        assert_eq!(c.thread_time(a).sys, 500);
        assert_eq!(c.thread_time(b).sys, 2000);
        assert_eq!(c.thread_time(a).nvcsw, 1);
        assert_eq!(c.cpu_time(0).busy(), 3500);
    }

    /// From `t0`, CPU 0 takes an interrupt (token 1, 300 ns) whose handler wakes
    /// thread `woken` on the same CPU (a 500 ns item with token `tok`) and goes
    /// on with 200 ns of completion work nobody waits for: the thread runs
    /// after it, from `t0 + 500`.
    fn completion_wakes_a_thread_behind_it(c: &mut Cpus, t0: u64, woken: ThreadId, tok: u64) {
        c.irq(t0, 0, Item::new(0, 300, 1));
        assert_eq!(c.next_event(), Some(t0 + 300));
        let mut out = Vec::new();
        c.advance(t0 + 300, &mut out);
        assert_eq!(out, vec![1]);
        c.run(t0 + 300, woken, Item::new(0, 500, tok));
        c.continue_on(t0 + 300, 0, Item::new(0, 200, NO_TOKEN));
        c.settle(t0 + 300);
    }

    #[test]
    fn a_thread_waiting_behind_completion_work_starts_at_its_end_without_an_event() {
        let mut c = Cpus::new(1, SchedParams::for_cpus(1));
        let a = c.add_thread(0, &[]);
        completion_wakes_a_thread_behind_it(&mut c, 0, a, 3);
        // The switch at 500 was made ahead of time: the next event is the
        // thread's item's end.
        assert_eq!(c.next_event(), Some(1000));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(1000, 3)]);
        assert_eq!(c.cpu_time(0).irq, 500);
        assert_eq!(c.cpu_time(0).sys, 500);
    }

    #[test]
    fn an_interrupt_before_the_completion_work_ends_goes_first() {
        let mut c = Cpus::new(1, SchedParams::for_cpus(1));
        let a = c.add_thread(0, &[]);
        completion_wakes_a_thread_behind_it(&mut c, 0, a, 3);
        // Interrupt work queued at 400 runs when the completion work ends
        // (500..600), before the thread (600..1100).
        c.irq(400, 0, Item::new(0, 100, 4));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(600, 4), (1100, 3)]);
        assert_eq!(c.cpu_time(0).irq, 600);
        assert_eq!(c.cpu_time(0).sys, 500);
        assert_eq!(c.thread_time(a).nivcsw, 0);
    }

    #[test]
    fn a_thread_woken_before_the_completion_work_ends_is_picked_by_vruntime() {
        let p = SchedParams {
            slice_ns: 1_000_000,
            latency_ns: 0,
            wakeup_gran_ns: 1_000_000,
        };
        let mut c = Cpus::new(1, p);
        let a = c.add_thread(0, &[]);
        let b = c.add_thread(0, &[]);
        // `a` has run 1000 ns before (vruntime 1000); `b` never ran.
        c.run(0, a, Item::new(0, 1000, 9));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(1000, 9)]);
        completion_wakes_a_thread_behind_it(&mut c, 1000, a, 3);
        // `b` wakes at 1400 with the smaller vruntime: at 1500 it runs first.
        c.run(1400, b, Item::new(0, 100, 4));
        log.clear();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(1600, 4), (2100, 3)]);
    }

    #[test]
    fn interrupt_preempts_a_thread_which_resumes() {
        let mut c = Cpus::new(1, SchedParams::for_cpus(1));
        let a = c.add_thread(0, &[]);
        c.run(0, a, Item::new(0, 1000, 1));
        c.irq(400, 0, Item::new(0, 300, 2));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(700, 2), (1300, 1)]);
        assert_eq!(c.thread_time(a).nivcsw, 0);
        assert_eq!(c.cpu_time(0).irq, 300);
        assert_eq!(c.cpu_time(0).sys, 1000);
    }

    #[test]
    fn a_long_item_is_preempted_at_its_slice_end_when_others_wait() {
        let p = SchedParams {
            slice_ns: 1000,
            latency_ns: 0,
            wakeup_gran_ns: 1_000_000,
        };
        let mut c = Cpus::new(1, p);
        let spinner = c.add_thread(0, &[]);
        let io = c.add_thread(0, &[]);
        c.run(0, spinner, Item::new(10_000, 0, 1));
        c.run(10, io, Item::new(0, 100, 2));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        // The spinner keeps its CPU until its slice ends at 1000; the woken thread
        // (placed at the minimum vruntime, 0) runs then.
        assert_eq!(log, vec![(1100, 2), (10_100, 1)]);
        assert_eq!(c.thread_time(spinner).nivcsw, 1);
    }

    #[test]
    fn a_woken_thread_moves_to_an_idle_allowed_cpu() {
        let mut c = Cpus::new(2, SchedParams::for_cpus(2));
        let a = c.add_thread(0, &[0, 1]);
        let b = c.add_thread(0, &[0, 1]);
        c.run(0, a, Item::new(0, 1000, 1));
        c.run(0, b, Item::new(0, 1000, 2));
        assert_eq!(c.thread_cpu(b), 1);
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(1000, 1), (1000, 2)]);
    }

    #[test]
    fn an_item_nobody_waits_for_ends_without_an_event_unless_work_arrives() {
        let mut c = Cpus::new(1, SchedParams::for_cpus(1));
        c.irq(0, 0, Item::new(0, 500, NO_TOKEN));
        assert_eq!(c.next_event(), None);
        // Work arriving while it runs waits for its end.
        c.irq(200, 0, Item::new(0, 100, 7));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log, vec![(600, 7)]);
        // Work arriving after it ended starts at once.
        c.irq(1000, 0, Item::new(0, 300, NO_TOKEN));
        let t = c.add_thread(0, &[]);
        c.run(1400, t, Item::new(0, 50, 8));
        run_all(&mut c, &mut log);
        assert_eq!(log[1], (1450, 8));
        c.finish(2000);
        assert_eq!(c.cpu_time(0).irq, 900);
    }

    #[test]
    fn spinning_keeps_the_cpu_busy_and_counts_as_system_time() {
        let mut c = Cpus::new(1, SchedParams::for_cpus(1));
        let a = c.add_thread(0, &[]);
        c.run(0, a, Item::new(100, 0, 1));
        let mut out = Vec::new();
        c.advance(100, &mut out);
        assert_eq!(out, vec![1]);
        c.spin(100, 0);
        c.settle(100);
        // An interrupt waits while the CPU spins.
        c.irq(150, 0, Item::new(0, 50, 3));
        assert_eq!(c.next_event(), None);
        c.end_spin(400, 0, Item::new(0, 200, 2));
        let mut log = Vec::new();
        run_all(&mut c, &mut log);
        assert_eq!(log[0], (600, 2));
        assert_eq!(c.cpu_time(0).spin, 300);
        assert_eq!(c.thread_time(a).sys, 500);
    }
}
