//! mq-deadline driven by the blk-mq core (`mq::Queue`): bio merges, sorted dispatch,
//! the priority gate with its 3 ms re-run, and completion bookkeeping end to end.

use blk::elevator;
use blk::mq::{Driver, Queue, QueueConfig, QueueRqStatus, Submitted};
use blk::request::{Bio, Request, RqId};
use blk::types::{CgroupId, IoClass, IoPrio, Ns, Op, ReqFlags, Sector};

#[derive(Default)]
struct Dev {
    order: Vec<(RqId, u64, u32)>,
}

impl Driver for Dev {
    fn queue_rq(&mut self, _now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        self.order.push((id, rq.sector.0, rq.nr_sectors));
        QueueRqStatus::Ok
    }
}

fn bio(sector: u64, class: IoClass) -> Bio {
    Bio {
        op: Op::Read,
        flags: ReqFlags::SYNC,
        sector: Sector(sector),
        nr_sectors: 8,
        ioprio: IoPrio { class, level: 4 },
        pid: 1,
        cpu: 0,
        cgroup: CgroupId(0),
        owner: sector,
    }
}

fn queue() -> Queue {
    Queue::new(QueueConfig::default(), |p| {
        elevator::create("mq-deadline", p).unwrap()
    })
}

#[test]
fn bios_merge_and_requests_leave_in_sector_order() {
    let mut q = queue();
    let mut d = Dev::default();
    for s in [300, 100, 108, 200] {
        q.submit_bio(Ns(0), bio(s, IoClass::Be));
    }
    assert_eq!(
        q.submit_bio(Ns(0), bio(116, IoClass::Be)),
        Submitted::Merged
    );
    q.run(Ns(0), &mut d);
    let got: Vec<_> = d.order.iter().map(|&(_, s, n)| (s, n)).collect();
    // 108 and 116 back-merge into 100 as bios (end-sector hash), never becoming
    // requests.
    assert_eq!(got, vec![(100, 24), (200, 8), (300, 8)]);
    assert_eq!(q.disk_stats(Ns(0)).merges, [2, 0]);
    for (id, _, _) in d.order.clone() {
        q.complete(Ns(1_000_000), id);
    }
    let dbg = q.elevator().debugfs();
    let get = |k: &str| dbg.iter().find(|(n, _)| n == k).unwrap().1.clone();
    assert_eq!(get("queued"), "0 0 0");
    assert_eq!(get("inserted"), "0 3 0");
    assert_eq!(get("completed"), "0 3 0");
    assert_eq!(get("merged"), "0 0 0");
}

#[test]
fn rt_in_flight_makes_blk_mq_poll_every_three_ms() {
    let mut q = queue();
    let mut d = Dev::default();
    q.submit_bio(Ns(0), bio(500, IoClass::Rt));
    q.submit_bio(Ns(0), bio(100, IoClass::Be));
    q.run(Ns(0), &mut d);
    assert_eq!(d.order.len(), 1);
    // has_work but nothing returned: re-run after 3 ms (HZ 250: next tick at 4 ms).
    assert_eq!(q.next_run(), Some(Ns(4_000_000)));
    let rt = d.order[0].0;
    // The completion does not restart the queue (no SCHED_RESTART was set): BE waits
    // for the delayed run.
    q.complete(Ns(2_000_000), rt);
    q.run(Ns(2_000_000), &mut d);
    assert_eq!(d.order.len(), 1);
    q.run(Ns(4_000_000), &mut d);
    assert_eq!(d.order.len(), 2);
    assert_eq!(d.order[1].1, 100);
}
