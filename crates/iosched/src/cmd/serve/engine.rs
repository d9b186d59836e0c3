//! The real-time thread: the emulator ([`sim::emulate::Emulator`]) on the real
//! clock. Connections send it requests; it submits each to the block layer at
//! the instant it arrives and hands each completion back to its connection at the
//! completion's modelled instant.
//!
//! One plain thread owns the model (it is not shared, so it needs no lock). It
//! sleeps until the model's next event, less a spin margin it busy-waits through
//! (a timed sleep oversleeps by tens of microseconds; the thread asks the kernel
//! for a 1 µs timer slack), so replies leave close to their modelled instants.
//! An async runtime's timer (millisecond wheel) could not do that.

use blk::{Bio, CgroupId, IoPrio, Ns, Op, ReqFlags, Sector};
use sim::emulate::{Completion, Emulator};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The emulator's clock: nanoseconds since the server started.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }
    /// Now, on the model's time axis.
    pub fn now(&self) -> Ns {
        Ns(self.start.elapsed().as_nanos() as u64)
    }
    /// The real instant of model time `t`.
    pub fn instant(&self, t: Ns) -> Instant {
        self.start + Duration::from_nanos(t.0)
    }
}

/// What the block layer is asked to do for one NBD request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockOp {
    /// Operation.
    pub op: Op,
    /// Flags.
    pub flags: ReqFlags,
    /// First sector.
    pub sector: u64,
    /// Sectors (0 for a flush).
    pub sectors: u32,
}

/// A request on its way to the model, with what its connection needs back.
pub struct Submit<T> {
    /// The submitting connection (its software queue and task).
    pub conn: u32,
    /// What to submit.
    pub op: BlockOp,
    /// Returned with the completion.
    pub token: T,
    /// Where the completion goes.
    pub reply: tokio::sync::mpsc::UnboundedSender<Done<T>>,
}

/// A completed request, as handed back to its connection.
pub struct Done<T> {
    /// The token given at submission.
    pub token: T,
    /// When the model received it.
    pub submitted: Ns,
    /// When the model completed it (the reply is due then).
    pub completed: Ns,
}

/// Messages to the engine.
pub enum Msg<T> {
    /// Submit a request.
    Submit(Submit<T>),
    /// Stop the thread.
    Stop,
}

struct Pending<T> {
    token: T,
    submitted: Ns,
    reply: tokio::sync::mpsc::UnboundedSender<Done<T>>,
}

/// `PR_SET_TIMERSLACK`'s slack for the engine thread, ns: the kernel's default is
/// 50 µs, which a timed sleep would add to every reply.
const TIMER_SLACK_NS: libc::c_ulong = 1_000;

/// What the engine reports when it stops.
#[derive(Clone, Debug)]
pub struct EngineEnd {
    /// Requests the device completed.
    pub requests: u64,
    /// The disk's counters at the end.
    pub disk: blk::mq::DiskStats,
}

fn submit<T>(
    emu: &mut Emulator,
    clock: Clock,
    s: Submit<T>,
    pending: &mut Vec<Option<Pending<T>>>,
    free: &mut Vec<usize>,
    nr_cpus: u32,
) {
    let now = clock.now();
    let slot = free.pop().unwrap_or_else(|| {
        pending.push(None);
        pending.len() - 1
    });
    pending[slot] = Some(Pending {
        token: s.token,
        submitted: now,
        reply: s.reply,
    });
    let bio = Bio {
        op: s.op.op,
        flags: s.op.flags,
        sector: Sector(s.op.sector),
        nr_sectors: s.op.sectors,
        ioprio: IoPrio::default(),
        // One task per connection (BFQ keeps a queue per process), on its own
        // software queue.
        pid: 1000 + s.conn,
        cpu: s.conn % nr_cpus.max(1),
        cgroup: CgroupId(0),
        owner: slot as u64,
    };
    emu.submit(now, bio);
}

/// Run the engine on the model `emu` until [`Msg::Stop`] or until every sender is
/// gone. `nr_cpus` spreads connections over the software queues; `in_flight` is
/// kept at the number of requests inside the model.
pub fn run<T: Send>(
    emu: Emulator,
    clock: Clock,
    rx: Receiver<Msg<T>>,
    nr_cpus: u32,
    spin: Duration,
    in_flight: Arc<AtomicUsize>,
) -> EngineEnd {
    let mut emu = emu;
    serve(&mut emu, clock, rx, nr_cpus, spin, in_flight);
    EngineEnd {
        requests: emu.requests(),
        disk: emu.disk_stats(clock.now()),
    }
}

fn serve<T: Send>(
    emu: &mut Emulator,
    clock: Clock,
    rx: Receiver<Msg<T>>,
    nr_cpus: u32,
    spin: Duration,
    in_flight: Arc<AtomicUsize>,
) {
    // SAFETY: prctl with an integer argument changes only this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0);
    }
    let mut pending: Vec<Option<Pending<T>>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut done: Vec<Completion> = Vec::new();
    loop {
        let now = clock.now();
        emu.advance(now, &mut done);
        for c in done.drain(..) {
            let slot = c.owner as usize;
            if let Some(p) = pending.get_mut(slot).and_then(Option::take) {
                free.push(slot);
                // A connection that went away drops its completions.
                let _ = p.reply.send(Done {
                    token: p.token,
                    submitted: p.submitted,
                    completed: c.at,
                });
            }
        }
        in_flight.store(emu.in_flight(), Ordering::Relaxed);
        // Take what has arrived; then wait for the next event or message.
        let msg = match emu.next_event() {
            Some(t) if t <= clock.now() => match rx.try_recv() {
                Ok(m) => Some(m),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return,
            },
            Some(t) => {
                let wait = Duration::from_nanos(t.0.saturating_sub(clock.now().0));
                if wait > spin {
                    match rx.recv_timeout(wait - spin) {
                        Ok(m) => Some(m),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                } else {
                    let deadline = clock.instant(t);
                    let mut got = None;
                    while Instant::now() < deadline {
                        match rx.try_recv() {
                            Ok(m) => {
                                got = Some(m);
                                break;
                            }
                            Err(TryRecvError::Empty) => std::hint::spin_loop(),
                            Err(TryRecvError::Disconnected) => return,
                        }
                    }
                    got
                }
            }
            None => match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => return,
            },
        };
        let mut next = msg;
        while let Some(m) = next {
            match m {
                Msg::Submit(s) => submit(emu, clock, s, &mut pending, &mut free, nr_cpus),
                Msg::Stop => return,
            }
            next = rx.try_recv().ok();
        }
    }
}
