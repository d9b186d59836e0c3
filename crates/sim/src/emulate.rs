//! The block layer and a device model without jobs: what the real-time emulator
//! (`iosched serve`) drives.
//!
//! An [`Emulator`] is the same [`Queue`] (scheduler, tags, plug-less submission,
//! dispatch, flush machinery) and [`Device`] pair a [`crate::simulate::Simulation`]
//! runs, driven from outside by a caller with its own clock: the caller submits
//! bios at the times they arrive ([`Emulator::submit`]), asks when the model next
//! needs attention ([`Emulator::next_event`]) and calls [`Emulator::advance`] at
//! (or after) that time, which plays every queue run, device event and scheduler
//! timer due by then, each at its own modelled instant, and returns the bios that
//! completed with the instant each completed. A caller that is late (a real clock
//! that overslept) therefore changes nothing in the model: completions keep their
//! modelled times, and the caller can measure how late it delivered them.
//!
//! Ties at one instant are played as the simulator plays them: device completions
//! first, then the queue run they trigger, then scheduler timers.
//!
//! Like the rest of the crate this is clock-free and deterministic: the same bios at
//! the same times give the same completions at the same times.

use crate::simulate::{build_queue, SimConfig, SimError};
use blk::mq::{DiskStats, Driver, Queue, Submitted};
use blk::{Bio, Ns, RqId};
use devices::{Device, DeviceInfo};

/// A completed bio: its owner token and the modelled instant it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The bio's `owner`.
    pub owner: u64,
    /// When the model completed it.
    pub at: Ns,
}

/// A queue with its scheduler in front of a device model; see the module docs.
pub struct Emulator {
    queue: Queue,
    device: Box<dyn Device>,
    scheduler: String,
    /// Bios completed during submission (an empty flush on a device without a
    /// volatile cache), with the submission's time.
    ready: Vec<Completion>,
    /// The latest instant played (events are never played before it).
    clock: Ns,
    rqs: Vec<RqId>,
    owners: Vec<u64>,
    /// Requests the device completed.
    requests: u64,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("device", &self.device.info().name)
            .field("scheduler", &self.scheduler)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Emulator {
    /// `cfg`'s scheduler and block-layer settings in front of `device` (the host
    /// model and the page cache of `cfg` do not apply).
    pub fn new(cfg: &SimConfig, device: Box<dyn Device>) -> Result<Emulator, SimError> {
        let mut queue = build_queue(cfg, device.info())?;
        crate::simulate::zone_queue(&mut queue, device.as_ref());
        Ok(Emulator {
            queue,
            device,
            scheduler: cfg.scheduler.clone(),
            ready: Vec::new(),
            clock: Ns::ZERO,
            rqs: Vec::new(),
            owners: Vec::new(),
            requests: 0,
        })
    }

    /// The device's static facts.
    pub fn info(&self) -> &DeviceInfo {
        self.device.info()
    }

    /// The scheduler's name.
    pub fn scheduler(&self) -> &str {
        &self.scheduler
    }

    /// The request queue (limits, tunables, debugfs counters).
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Submit `bio` at `now` (`blk_mq_submit_bio`, issued directly where the kernel
    /// would: no plug, as for a submitter that sends one I/O per system call).
    /// Everything due before `now` is played first, so a caller may submit without
    /// calling [`Emulator::advance`]; what that play completes is returned by the
    /// next `advance`. A `now` before the latest instant played counts as that
    /// instant.
    pub fn submit(&mut self, now: Ns, bio: Bio) -> Submitted {
        let now = now.max(self.clock);
        self.play_until(now, false);
        self.clock = now;
        let dev: &mut dyn Driver = self.device.as_mut();
        let s = self.queue.submit_bio_direct(now, bio, dev);
        self.collect(now);
        s
    }

    /// Play everything due at or before `now`; push each completed bio, in
    /// completion order, to `out`.
    pub fn advance(&mut self, now: Ns, out: &mut Vec<Completion>) {
        let now = now.max(self.clock);
        self.play_until(now, true);
        self.clock = now;
        out.append(&mut self.ready);
    }

    /// When the model next needs [`Emulator::advance`]: the earliest queue run,
    /// device event or scheduler timer, or now if completions are waiting.
    pub fn next_event(&self) -> Option<Ns> {
        if !self.ready.is_empty() {
            return Some(self.clock);
        }
        [
            self.device.next_event(),
            self.queue.next_run(),
            self.queue.next_elevator_timer(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Requests allocated and not yet completed (in the scheduler, on a dispatch
    /// list or in the device).
    pub fn in_flight(&self) -> usize {
        self.queue.live_requests()
    }

    /// Requests the device completed so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// `/proc/diskstats` counters at `now`.
    pub fn disk_stats(&self, now: Ns) -> DiskStats {
        self.queue.disk_stats(now.max(self.clock))
    }

    /// Play the events due at or before `until` (strictly before it unless
    /// `inclusive`), each at its own time.
    fn play_until(&mut self, until: Ns, inclusive: bool) {
        loop {
            let dev = self.device.next_event();
            let run = self.queue.next_run();
            let tmr = self.queue.next_elevator_timer();
            let Some(t) = [dev, run, tmr].into_iter().flatten().min() else {
                return;
            };
            if t > until || (t == until && !inclusive) {
                return;
            }
            // An event asked for in the past (a run requested at the last
            // submission) is played at the latest instant already played.
            let t = t.max(self.clock);
            self.clock = t;
            if dev.is_some_and(|d| d <= t) {
                self.device.advance(t, &mut self.rqs);
                for i in 0..self.rqs.len() {
                    crate::simulate::complete_from(
                        &mut self.queue,
                        self.device.as_mut(),
                        t,
                        self.rqs[i],
                    );
                }
                self.requests += self.rqs.len() as u64;
                self.rqs.clear();
                // The queue run a completion triggers goes before anything else
                // at this instant, as in the simulator.
                if self.queue.next_run().is_some_and(|r| r <= t) {
                    let d: &mut dyn Driver = self.device.as_mut();
                    self.queue.run(t, d);
                }
            } else if run.is_some_and(|r| r <= t) {
                let d: &mut dyn Driver = self.device.as_mut();
                self.queue.run(t, d);
            } else {
                self.queue.elevator_timer(t);
            }
            self.collect(t);
        }
    }

    fn collect(&mut self, at: Ns) {
        self.queue.take_completed(&mut self.owners);
        // Failed bios complete like the others here (the NBD client sees the
        // I/O end); the list is only drained.
        let mut failed = Vec::new();
        self.queue.take_failed(&mut failed);
        self.ready
            .extend(self.owners.drain(..).map(|owner| Completion { owner, at }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blk::{CgroupId, IoPrio, Op, ReqFlags, Sector};

    fn bio(op: Op, sector: u64, sectors: u32, owner: u64) -> Bio {
        Bio {
            op,
            flags: ReqFlags::NONE,
            sector: Sector(sector),
            nr_sectors: sectors,
            ioprio: IoPrio::default(),
            pid: 1,
            cpu: 0,
            cgroup: CgroupId(0),
            owner,
        }
    }

    fn emulator(device: &str, sched: &str) -> Emulator {
        let cfg = SimConfig {
            scheduler: sched.into(),
            ..Default::default()
        };
        Emulator::new(&cfg, devices::profile(device).unwrap().build()).unwrap()
    }

    #[test]
    fn ideal_read_completes_after_latency_plus_transfer() {
        // ideal: 100 us, then 4096 bytes through the 2 GB/s pipe = 2048 ns.
        let mut e = emulator("ideal", "none");
        e.submit(Ns(1_000), bio(Op::Read, 0, 8, 7));
        assert_eq!(e.next_event(), Some(Ns(1_000 + 102_048)));
        let mut out = Vec::new();
        e.advance(Ns(50_000), &mut out);
        assert!(out.is_empty());
        // Advancing late keeps the modelled instant.
        e.advance(Ns(500_000), &mut out);
        assert_eq!(
            out,
            vec![Completion {
                owner: 7,
                at: Ns(103_048)
            }]
        );
        assert_eq!(e.next_event(), None);
        assert_eq!(e.in_flight(), 0);
        assert_eq!(e.requests(), 1);
    }

    #[test]
    fn transfers_share_the_pipe_in_order() {
        // Two 1 MiB reads at once: latencies overlap, transfers (524288 ns each)
        // do not.
        let mut e = emulator("ideal", "none");
        e.submit(Ns(0), bio(Op::Read, 0, 2048, 1));
        e.submit(Ns(0), bio(Op::Read, 1 << 20, 2048, 2));
        let mut out = Vec::new();
        e.advance(Ns(10_000_000), &mut out);
        let at: Vec<_> = out.iter().map(|c| (c.owner, c.at.0)).collect();
        assert_eq!(at, vec![(1, 624_288), (2, 1_148_576)]);
    }

    #[test]
    fn empty_flush_without_cache_completes_at_submission() {
        let mut e = emulator("ideal", "none");
        let mut f = bio(Op::Write, 0, 0, 9);
        f.flags = ReqFlags::PREFLUSH;
        assert_eq!(e.submit(Ns(5), f), Submitted::Completed);
        assert_eq!(e.next_event(), Some(Ns(5)));
        let mut out = Vec::new();
        e.advance(Ns(5), &mut out);
        assert_eq!(
            out,
            vec![Completion {
                owner: 9,
                at: Ns(5)
            }]
        );
    }

    #[test]
    fn late_submission_plays_earlier_events_first() {
        // mq-deadline on the single-queue ideal device: a second read submitted
        // after the first completed (without an advance in between) must see the
        // device idle, not queue behind a completion not yet played.
        let mut e = emulator("ideal-sq", "mq-deadline");
        e.submit(Ns(0), bio(Op::Read, 0, 8, 1));
        e.submit(Ns(200_000), bio(Op::Read, 8, 8, 2));
        let mut out = Vec::new();
        e.advance(Ns(1_000_000), &mut out);
        let at: Vec<_> = out.iter().map(|c| (c.owner, c.at.0)).collect();
        assert_eq!(at, vec![(1, 102_048), (2, 302_048)]);
    }

    #[test]
    fn deterministic_for_a_hdd_sequence() {
        // Replaying one fixed arrival sequence twice gives identical completions
        // (the model is deterministic and the emulator adds no state of its own).
        let run = || {
            let mut e = emulator("hdd-7200", "mq-deadline");
            let mut out = Vec::new();
            for i in 0..32u64 {
                let t = Ns(i * 1_000_000);
                e.advance(t, &mut out);
                e.submit(t, bio(Op::Read, (i * 7919 * 4096) % (1 << 30), 8, i));
            }
            e.advance(Ns(10_000_000_000), &mut out);
            out
        };
        let a = run();
        assert_eq!(a.len(), 32);
        assert!(a.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(a, run());
    }
}
