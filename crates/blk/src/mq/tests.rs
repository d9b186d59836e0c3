use super::*;
use crate::elevator::none::NoneSched;
use crate::types::{CgroupId, IoPrio, Op, ReqFlags, Sector};

/// A driver that accepts up to `cap` requests and refuses the rest.
struct Fake {
    cap: usize,
    inflight: Vec<RqId>,
    refuse_with: QueueRqStatus,
    order: Vec<RqId>,
}

impl Driver for Fake {
    fn queue_rq(&mut self, _now: Ns, id: RqId, _rq: &Request, _last: bool) -> QueueRqStatus {
        if self.inflight.len() >= self.cap {
            return self.refuse_with;
        }
        self.inflight.push(id);
        self.order.push(id);
        QueueRqStatus::Ok
    }
}

fn bio(sector: u64, owner: u64) -> Bio {
    Bio {
        op: Op::Read,
        flags: ReqFlags::SYNC,
        sector: Sector(sector),
        nr_sectors: 8,
        ioprio: IoPrio::default(),
        pid: 1,
        cpu: 0,
        cgroup: CgroupId(0),
        owner,
    }
}

fn queue(nr_requests: u32, depth: u32) -> Queue {
    Queue::new(
        QueueConfig {
            nr_requests: Some(nr_requests),
            queue_depth: depth,
            ..Default::default()
        },
        |p| Box::new(NoneSched::new(p)),
    )
}

#[test]
fn default_nr_requests_is_twice_depth_capped() {
    let c = QueueConfig {
        queue_depth: 32,
        ..Default::default()
    };
    assert_eq!(c.effective_nr_requests(), 64);
    let c = QueueConfig {
        queue_depth: 1023,
        ..Default::default()
    };
    assert_eq!(c.effective_nr_requests(), 256);
}

#[test]
fn insert_requests_async_run_then_dispatch() {
    let mut q = queue(8, 4);
    let mut d = Fake {
        cap: 4,
        inflight: vec![],
        refuse_with: QueueRqStatus::DevResource,
        order: vec![],
    };
    for i in 0..3 {
        assert!(matches!(
            q.submit_bio(Ns(10), bio(i * 100, i)),
            Submitted::Inserted(_)
        ));
    }
    assert_eq!(q.next_run(), Some(Ns(10)));
    q.run(Ns(10), &mut d);
    assert_eq!(d.order.len(), 3);
    assert_eq!(q.next_run(), None);
    let first = d.order[0];
    q.complete(Ns(20), first);
    let mut done = vec![];
    q.take_completed(&mut done);
    assert_eq!(done, vec![0]);
    let st = q.disk_stats(Ns(20));
    assert_eq!(st.ios, [1, 0]);
    assert_eq!(st.ticks_ns, [10, 0]);
}

#[test]
fn refused_request_waits_on_dispatch_list_until_restart() {
    let mut q = queue(8, 8);
    let mut d = Fake {
        cap: 1,
        inflight: vec![],
        refuse_with: QueueRqStatus::DevResource,
        order: vec![],
    };
    q.submit_bio(Ns(0), bio(0, 0));
    q.submit_bio(Ns(0), bio(100, 1));
    q.run(Ns(0), &mut d);
    assert_eq!(d.order.len(), 1);
    // The refused request went to hctx->dispatch; the first refusal after an elevator
    // pull re-runs at once (SCHED_RESTART not set yet)...
    assert_eq!(q.next_run(), Some(Ns(0)));
    q.run(Ns(0), &mut d);
    // ...and the retry from the dispatch list sets SCHED_RESTART: DEV_RESOURCE waits for
    // a completion, no timed re-run.
    assert_eq!(q.next_run(), None);
    let first = d.order[0];
    d.inflight.clear();
    q.complete(Ns(5), first);
    assert_eq!(q.next_run(), Some(Ns(5)));
    q.run(Ns(5), &mut d);
    assert_eq!(d.order.len(), 2);
}

#[test]
fn resource_status_rearms_after_three_ms_on_jiffy_tick() {
    let mut q = queue(8, 8);
    let mut d = Fake {
        cap: 0,
        inflight: vec![],
        refuse_with: QueueRqStatus::Resource,
        order: vec![],
    };
    q.submit_bio(Ns(1_000_000), bio(0, 0));
    q.run(Ns(1_000_000), &mut d);
    q.run(Ns(1_000_000), &mut d);
    // HZ 250: jiffies(1 ms) = 0; msecs_to_jiffies(3) = 1 → fires at jiffy 1 = 4 ms.
    assert_eq!(q.next_run(), Some(Ns(4_000_000)));
}

#[test]
fn submitters_sleep_on_sched_tags_and_are_woken_in_order() {
    let mut q = queue(4, 4);
    let mut d = Fake {
        cap: 8,
        inflight: vec![],
        refuse_with: QueueRqStatus::DevResource,
        order: vec![],
    };
    for i in 0..6 {
        let r = q.submit_bio(Ns(0), bio(i * 100, i));
        assert_eq!(matches!(r, Submitted::Sleeping), i >= 4, "bio {i}");
    }
    q.run(Ns(0), &mut d);
    assert_eq!(d.order.len(), 4);
    q.complete(Ns(1), d.order[0]);
    assert_eq!(q.live_requests(), 4);
    q.run(Ns(1), &mut d);
    assert_eq!(d.order.len(), 5);
    assert_eq!(q.request(d.order[4]).sector, Sector(400));
}

/// A task's exit reaches the elevator (`exit_io_context` → `exit_icq`): BFQ idling
/// for an RT process's queue after its last read ends at the exit, and the queue is
/// run, so the BE read that waited is dispatched.
#[test]
fn task_exit_ends_bfq_idling_and_runs_the_queue() {
    let mut q = Queue::new(
        QueueConfig {
            nr_requests: Some(64),
            queue_depth: 4,
            rotational: true,
            ..Default::default()
        },
        |p| {
            let mut b = crate::elevator::bfq::Bfq::new(p);
            b.set_tunable("low_latency", "0").unwrap();
            Box::new(b)
        },
    );
    let mut d = Fake {
        cap: 4,
        inflight: vec![],
        refuse_with: QueueRqStatus::DevResource,
        order: vec![],
    };
    let rt = Bio {
        ioprio: IoPrio {
            class: crate::types::IoClass::Rt,
            level: 0,
        },
        ..bio(0, 1)
    };
    let be = Bio {
        pid: 2,
        ..bio(500_000, 2)
    };
    q.submit_bio(Ns(10), rt);
    q.run(Ns(10), &mut d);
    assert_eq!(d.order.len(), 1);
    q.submit_bio(Ns(20), be);
    q.run(Ns(20), &mut d);
    assert_eq!(d.order.len(), 1, "the RT queue is in service");
    q.complete(Ns(1_000), d.order[0]);
    q.run(Ns(1_000), &mut d);
    assert_eq!(d.order.len(), 1, "idling for the RT queue");
    q.exit_task(Ns(2_000), 1);
    assert_eq!(q.next_run(), Some(Ns(2_000)));
    q.run(Ns(2_000), &mut d);
    assert_eq!(d.order.len(), 2, "the BE read is dispatched at the exit");
    // An exit of a task the scheduler never saw changes nothing.
    q.exit_task(Ns(3_000), 99);
    assert_eq!(q.next_run(), None);
}
