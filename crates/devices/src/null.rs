//! The `null` device: the kernel's `null_blk` (`drivers/block/null_blk/main.c`),
//! which the kernel community uses to measure the block layer's and the schedulers'
//! own cost, because it does no I/O at all.
//!
//! Every request is accepted while the hardware queue has a free slot
//! (`hw_queue_depth` per queue, `submit_queues` queues) and completes
//!
//! - `irqmode = 0` (`NULL_IRQ_NONE`): inside `queue_rq`, on the submitting CPU;
//! - `irqmode = 1` (`NULL_IRQ_SOFTIRQ`, the module's default): at once, through the
//!   block softirq of the submitting CPU;
//! - `irqmode = 2` (`NULL_IRQ_TIMER`): `completion_nsec` later, from an hrtimer
//!   armed on the submitting CPU.
//!
//! It never interrupts another CPU, so with a host model the completion work runs
//! on the submitting CPU; the timer mode costs an interrupt there. `no_sched = 1`
//! makes the kernel attach no scheduler (`BLK_MQ_F_NO_SCHED_BY_DEFAULT`); otherwise
//! a single-queue null device gets mq-deadline, as any single-queue device.
//! Flushes complete like any request (no volatile cache: `memory_backed` and
//! `cache_size` are not modelled).

use crate::completions::QueueSlots;
use crate::{Device, DeviceInfo, ParamInfo};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Request, RqId};

/// Parameters of a [`Null`] device (null_blk's module parameters).
#[derive(Clone, Debug, PartialEq)]
pub struct NullParams {
    /// `irqmode`: 0 none, 1 softirq, 2 timer.
    pub irqmode: u8,
    /// `completion_nsec`: the timer mode's completion time, ns.
    pub completion_nsec: u64,
    /// `hw_queue_depth`.
    pub hw_queue_depth: u32,
    /// `submit_queues` (capped by the kernel at the number of CPUs).
    pub submit_queues: u16,
    /// `no_sched`.
    pub no_sched: bool,
    /// `gb`: capacity, GiB.
    pub gb: u64,
}

impl NullParams {
    /// Read and validate the parameters from a profile document.
    pub fn from_doc(d: &mut crate::profile::Doc) -> Result<NullParams, crate::ProfileError> {
        Ok(NullParams {
            irqmode: d.int("irqmode", 0, 2)? as u8,
            completion_nsec: d.int("completion_nsec", 0, 1_000_000_000_000)?,
            hw_queue_depth: d.int("hw_queue_depth", 1, 65_535)? as u32,
            submit_queues: d.int("submit_queues", 1, 4096)? as u16,
            no_sched: d.bool("no_sched")?,
            gb: d.int("gb", 1, 1 << 20)?,
        })
    }

    /// Parameters with units and meaning.
    pub fn describe(&self) -> Vec<ParamInfo> {
        let p = |name, unit, value: String, help| ParamInfo {
            name,
            unit,
            value,
            help,
        };
        vec![
            p(
                "irqmode",
                "",
                self.irqmode.to_string(),
                "0 complete in queue_rq, 1 softirq, 2 timer",
            ),
            p(
                "completion_nsec",
                "ns",
                self.completion_nsec.to_string(),
                "completion time with irqmode=2",
            ),
            p(
                "hw_queue_depth",
                "commands",
                self.hw_queue_depth.to_string(),
                "requests per hardware queue",
            ),
            p(
                "submit_queues",
                "queues",
                self.submit_queues.to_string(),
                "hardware queues (at most one per CPU)",
            ),
            p(
                "no_sched",
                "bool",
                self.no_sched.to_string(),
                "attach no scheduler by default",
            ),
            p("gb", "GiB", self.gb.to_string(), "capacity"),
        ]
    }
}

/// The null device; see the module docs.
#[derive(Debug)]
pub struct Null {
    p: NullParams,
    info: DeviceInfo,
    slots: QueueSlots,
}

impl Null {
    /// A fresh device called `name`.
    pub fn new(name: &str, p: NullParams) -> Null {
        let info = DeviceInfo {
            name: name.to_string(),
            capacity_sectors: p.gb << 21,
            queue_depth: p.hw_queue_depth,
            rotational: false,
            write_cache: false,
            fua: false,
            max_hw_sectors: 255,
            max_segments: 128,
            nr_hw_queues: p.submit_queues,
            default_scheduler: if p.no_sched || p.submit_queues > 1 {
                "none"
            } else {
                "mq-deadline"
            },
            completion: crate::CompletionCpu::Submitter {
                irq: p.irqmode == 2,
            },
        };
        Null {
            slots: QueueSlots::new(p.submit_queues, p.hw_queue_depth),
            p,
            info,
        }
    }

    /// Whether a completion costs the submitting CPU an interrupt (the timer).
    pub fn timer_interrupt(&self) -> bool {
        self.p.irqmode == 2
    }
}

impl Driver for Null {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        let Some(q) = self.slots.take(rq.hctx) else {
            return QueueRqStatus::DevResource;
        };
        let done = match self.p.irqmode {
            2 => now.add(self.p.completion_nsec),
            _ => now,
        };
        self.slots.complete_at(done, id, q);
        QueueRqStatus::Ok
    }
}

impl Device for Null {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn next_event(&self) -> Option<Ns> {
        self.slots.next()
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>) {
        self.slots.advance(now, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blk::{Bio, BioId, CgroupId, IoPrio, Op, ReqFlags, Sector};

    fn rq(hctx: u16) -> Request {
        let bio = Bio {
            op: Op::Read,
            flags: ReqFlags::NONE,
            sector: Sector(0),
            nr_sectors: 8,
            ioprio: IoPrio::default(),
            pid: 1,
            cpu: 0,
            cgroup: CgroupId(0),
            owner: 0,
        };
        let mut r = Request::from_bio(&bio, BioId(0), Ns(0));
        r.hctx = hctx;
        r
    }

    fn params(irqmode: u8) -> NullParams {
        NullParams {
            irqmode,
            completion_nsec: 10_000,
            hw_queue_depth: 2,
            submit_queues: 1,
            no_sched: false,
            gb: 250,
        }
    }

    #[test]
    fn completes_at_once_or_after_the_timer_and_refuses_past_the_depth() {
        let mut d = Null::new("n", params(0));
        assert_eq!(d.queue_rq(Ns(5), RqId(0), &rq(0), true), QueueRqStatus::Ok);
        assert_eq!(d.queue_rq(Ns(5), RqId(1), &rq(0), true), QueueRqStatus::Ok);
        assert_eq!(
            d.queue_rq(Ns(5), RqId(2), &rq(0), true),
            QueueRqStatus::DevResource
        );
        assert_eq!(d.next_event(), Some(Ns(5)));
        let mut done = Vec::new();
        d.advance(Ns(5), &mut done);
        assert_eq!(done.len(), 2);
        let mut t = Null::new("n", params(2));
        t.queue_rq(Ns(5), RqId(0), &rq(0), true);
        assert_eq!(t.next_event(), Some(Ns(10_005)));
        assert!(t.timer_interrupt());
        assert_eq!(t.info().default_scheduler, "mq-deadline");
    }
}
