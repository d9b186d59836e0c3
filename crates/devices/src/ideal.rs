//! The `ideal` device: every request costs a fixed latency, and data moves through
//! one shared pipe of fixed bandwidth; up to `queue_depth` requests are accepted per
//! hardware queue (as an NVMe submission queue: the request's `hctx` says which).
//!
//! A request accepted at `t` completes at `max(t + latency, pipe_free) + bytes / bw`,
//! where `pipe_free` is when the previous transfer ended: latencies overlap (like a
//! device's internal parallelism), transfers do not. Flushes cost the latency only.
//! It has no cache, no geometry, no reordering: a baseline against which real device
//! models show their effects.

use crate::completions::QueueSlots;
use crate::{Device, DeviceInfo, ParamInfo};
use blk::mq::{Driver, QueueRqStatus};
use blk::{Ns, Op, Request, RqId};

/// Parameters of an [`Ideal`] device.
#[derive(Clone, Debug, PartialEq)]
pub struct IdealParams {
    /// Fixed per-request latency, ns.
    pub latency_ns: u64,
    /// Transfer bandwidth, bytes per second.
    pub bandwidth: u64,
    /// Commands accepted at once per hardware queue.
    pub queue_depth: u32,
    /// Capacity, bytes.
    pub capacity: u64,
    /// Hardware queues (1 makes the kernel pick mq-deadline by default).
    pub nr_hw_queues: u16,
    /// Reported rotational flag.
    pub rotational: bool,
}

impl Default for IdealParams {
    fn default() -> Self {
        IdealParams {
            latency_ns: 100_000,
            bandwidth: 2_000_000_000,
            queue_depth: 32,
            capacity: 1 << 40,
            nr_hw_queues: 4,
            rotational: false,
        }
    }
}

impl IdealParams {
    /// Read and validate the parameters from a profile document.
    pub fn from_doc(d: &mut crate::profile::Doc) -> Result<IdealParams, crate::ProfileError> {
        Ok(IdealParams {
            latency_ns: d.int_limited(
                "latency",
                1,
                1_000_000_000_000,
                "1000 s in ns: no command takes longer",
            )?,
            bandwidth: d.int("bandwidth", 1, u64::MAX >> 1)?,
            queue_depth: d.int_limited(
                "queue_depth",
                1,
                blk::mq::BLK_MQ_MAX_DEPTH as u64,
                "BLK_MQ_MAX_DEPTH, the deepest tag set blk-mq allows",
            )? as u32,
            capacity: d.int("capacity", 1 << 20, 1 << 60)?,
            nr_hw_queues: d.int("nr_hw_queues", 1, 1024)? as u16,
            rotational: false,
        })
    }

    /// Parameters with units and meaning.
    pub fn describe(&self) -> Vec<ParamInfo> {
        vec![
            ParamInfo {
                name: "latency",
                unit: "ns",
                value: self.latency_ns.to_string(),
                help: "fixed cost of every request",
            },
            ParamInfo {
                name: "bandwidth",
                unit: "bytes/s",
                value: self.bandwidth.to_string(),
                help: "transfer rate of the shared data pipe",
            },
            ParamInfo {
                name: "queue_depth",
                unit: "commands",
                value: self.queue_depth.to_string(),
                help: "requests accepted at once per hardware queue (driver tags per hctx)",
            },
            ParamInfo {
                name: "capacity",
                unit: "bytes",
                value: self.capacity.to_string(),
                help: "device size",
            },
            ParamInfo {
                name: "nr_hw_queues",
                unit: "queues",
                value: self.nr_hw_queues.to_string(),
                help: "hardware queues; 1 = single-queue device",
            },
        ]
    }
}

/// The ideal device model; see the module docs.
#[derive(Debug)]
pub struct Ideal {
    p: IdealParams,
    info: DeviceInfo,
    pipe_free: Ns,
    slots: QueueSlots,
}

impl Ideal {
    /// A fresh device called `name`.
    pub fn new(name: &str, p: IdealParams) -> Ideal {
        let info = DeviceInfo {
            name: name.to_string(),
            capacity_sectors: p.capacity / 512,
            queue_depth: p.queue_depth,
            rotational: p.rotational,
            write_cache: false,
            fua: false,
            max_hw_sectors: 2560,
            max_segments: 128,
            nr_hw_queues: p.nr_hw_queues,
            default_scheduler: if p.nr_hw_queues == 1 {
                "mq-deadline"
            } else {
                "none"
            },
            completion: crate::CompletionCpu::Vector,
        };
        Ideal {
            slots: QueueSlots::new(p.nr_hw_queues, p.queue_depth),
            p,
            info,
            pipe_free: Ns::ZERO,
        }
    }
}

impl Driver for Ideal {
    fn queue_rq(&mut self, now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        let Some(q) = self.slots.take(rq.hctx) else {
            return QueueRqStatus::DevResource;
        };
        let bytes = rq.nr_sectors as u64 * 512;
        let ready = now.add(self.p.latency_ns);
        let done = if matches!(rq.op, Op::Flush) || bytes == 0 {
            ready
        } else {
            let start = ready.max(self.pipe_free);
            let xfer = blk::types::mul_div(bytes, 1_000_000_000, self.p.bandwidth.max(1));
            let end = start.add(xfer);
            self.pipe_free = end;
            end
        };
        self.slots.complete_at(done, id, q);
        QueueRqStatus::Ok
    }
}

impl Device for Ideal {
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
    use blk::{Bio, BioId, CgroupId, IoPrio, ReqFlags, Sector};

    fn rq(sectors: u32) -> Request {
        let bio = Bio {
            op: Op::Read,
            flags: ReqFlags::NONE,
            sector: Sector(0),
            nr_sectors: sectors,
            ioprio: IoPrio::default(),
            pid: 1,
            cpu: 0,
            cgroup: CgroupId(0),
            owner: 0,
        };
        Request::from_bio(&bio, BioId(0), Ns(0))
    }

    #[test]
    fn latency_overlaps_transfer_does_not() {
        let mut d = Ideal::new(
            "t",
            IdealParams {
                latency_ns: 1000,
                bandwidth: 512_000_000, // 1 sector per us
                queue_depth: 2,
                ..Default::default()
            },
        );
        assert_eq!(d.queue_rq(Ns(0), RqId(0), &rq(8), true), QueueRqStatus::Ok);
        assert_eq!(d.queue_rq(Ns(0), RqId(1), &rq(8), true), QueueRqStatus::Ok);
        assert_eq!(
            d.queue_rq(Ns(0), RqId(2), &rq(8), true),
            QueueRqStatus::DevResource
        );
        assert_eq!(d.next_event(), Some(Ns(9000)));
        let mut done = vec![];
        d.advance(Ns(16_999), &mut done);
        assert_eq!(done, vec![RqId(0)]);
        d.advance(Ns(17_000), &mut done);
        assert_eq!(done, vec![RqId(0), RqId(1)]);
        assert_eq!(d.next_event(), None);
    }
}
