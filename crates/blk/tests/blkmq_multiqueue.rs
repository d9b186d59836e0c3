//! Several hardware queues: CPU → hctx mapping, per-hctx tags, restart, dispatch and
//! the schedulers' per-hctx state.

use blk::elevator::kyber::Kyber;
use blk::elevator::mq_deadline::MqDeadline;
use blk::elevator::none::NoneSched;
use blk::mq::{Driver, Queue, QueueConfig, QueueRqStatus, Submitted};
use blk::{Bio, CgroupId, IoPrio, Ns, Op, ReqFlags, Request, RqId, Sector};

/// Accepts everything, remembering what it got and on which hctx.
#[derive(Default)]
struct Hold {
    inflight: Vec<RqId>,
    hctx_of: Vec<(RqId, u16)>,
}

impl Driver for Hold {
    fn queue_rq(&mut self, _now: Ns, id: RqId, rq: &Request, _last: bool) -> QueueRqStatus {
        self.inflight.push(id);
        self.hctx_of.push((id, rq.hctx));
        QueueRqStatus::Ok
    }
}

fn read(cpu: u32, sector: u64, owner: u64) -> Bio {
    Bio {
        op: Op::Read,
        flags: ReqFlags::SYNC,
        sector: Sector(sector),
        nr_sectors: 8,
        ioprio: IoPrio::default(),
        pid: 100 + cpu,
        cpu,
        cgroup: CgroupId(0),
        owner,
    }
}

fn cfg(nr_cpus: u32, nr_hw: u16, nr_requests: u32, depth: u32) -> QueueConfig {
    QueueConfig {
        nr_requests: Some(nr_requests),
        queue_depth: depth,
        nr_cpus,
        nr_hw_queues: nr_hw,
        hz: 1000,
        ..Default::default()
    }
}

fn none_queue(c: QueueConfig) -> Queue {
    Queue::new(c, |p| Box::new(NoneSched::new(p)))
}

/// Run every due hardware queue until nothing is due at `now`.
fn run_due(q: &mut Queue, d: &mut dyn Driver, now: Ns) {
    while q.next_run().is_some_and(|t| t <= now) {
        q.run(now, d);
    }
}

#[test]
fn cpus_are_grouped_evenly_onto_hardware_queues() {
    let q = none_queue(cfg(8, 4, 4, 4));
    assert_eq!(q.nr_hw_queues(), 4);
    assert_eq!(q.cpu_map(), &[0, 0, 1, 1, 2, 2, 3, 3]);
    let q = none_queue(cfg(8, 8, 4, 4));
    assert_eq!(q.cpu_map(), &[0, 1, 2, 3, 4, 5, 6, 7]);
    // 8 CPUs on 3 queues: the first groups take the remainder (3 + 3 + 2).
    let q = none_queue(cfg(8, 3, 4, 4));
    assert_eq!(q.cpu_map(), &[0, 0, 0, 1, 1, 1, 2, 2]);
    // No more hardware queues than CPUs.
    let q = none_queue(cfg(2, 8, 4, 4));
    assert_eq!(q.nr_hw_queues(), 2);
    assert_eq!(q.cpu_map(), &[0, 1]);
    // The request carries its CPU's hctx.
    let mut q = none_queue(cfg(8, 4, 4, 4));
    let Submitted::Inserted(id) = q.submit_bio(Ns(0), read(5, 0, 0)) else {
        panic!("not inserted")
    };
    assert_eq!(q.request(id).hctx, 2);
}

#[test]
fn scheduler_tags_are_per_hardware_queue() {
    // 4 CPUs on 2 hctxs (CPUs 0,1 → 0; 2,3 → 1), nr_requests 4 each.
    let mut q = Queue::new(cfg(4, 2, 4, 4), |p| Box::new(MqDeadline::new(p)));
    for i in 0..4 {
        assert!(matches!(
            q.submit_bio(Ns(0), read(0, i * 100, i)),
            Submitted::Inserted(_)
        ));
    }
    // CPU 0's hctx is out of tags: its task sleeps...
    assert_eq!(q.submit_bio(Ns(0), read(1, 1000, 9)), Submitted::Sleeping);
    assert_eq!(q.tag_sleepers(0), 1);
    // ...while a CPU on the other hctx still gets all of its own.
    for i in 0..4 {
        assert!(matches!(
            q.submit_bio(Ns(0), read(2, 10_000 + i * 100, 20 + i)),
            Submitted::Inserted(_)
        ));
    }
    assert_eq!(q.sched_tags_in_use(0), 4);
    assert_eq!(q.sched_tags_in_use(1), 4);
    assert_eq!(
        q.submit_bio(Ns(0), read(3, 20_000, 30)),
        Submitted::Sleeping
    );
    assert_eq!(q.tag_sleepers(1), 1);
    assert_eq!(q.live_requests(), 8);

    // A request freed on hctx 1 wakes hctx 1's sleeper only.
    let mut d = Hold::default();
    run_due(&mut q, &mut d, Ns(0));
    assert_eq!(d.inflight.len(), 8);
    let on1 = *d.hctx_of.iter().find(|(_, h)| *h == 1).unwrap();
    q.complete(Ns(10), on1.0);
    assert_eq!(q.tag_sleepers(1), 0);
    assert_eq!(q.tag_sleepers(0), 1);
    assert_eq!(q.sched_tags_in_use(1), 4);
    assert_eq!(q.sched_tags_in_use(0), 4);
}

#[test]
fn a_freed_request_restarts_only_its_own_hctx() {
    // One driver tag per hctx: the second request of each hctx waits on that hctx's
    // dispatch list with SCHED_RESTART set.
    let mut q = none_queue(cfg(2, 2, 8, 1));
    let mut d = Hold::default();
    for (i, cpu) in [0u32, 0, 1, 1].into_iter().enumerate() {
        q.submit_bio(Ns(0), read(cpu, i as u64 * 1000, i as u64));
    }
    run_due(&mut q, &mut d, Ns(0));
    assert_eq!(d.inflight.len(), 2);
    assert_eq!(q.dispatch_list_len(), 2);
    assert_eq!(q.next_run(), None);
    assert_eq!(q.driver_tags_in_use(0), 1);
    assert_eq!(q.driver_tags_in_use(1), 1);
    let on0 = d.hctx_of.iter().find(|(_, h)| *h == 0).unwrap().0;
    q.complete(Ns(5), on0);
    assert_eq!(q.hctx_next_run(0), Some(Ns(5)));
    assert_eq!(q.hctx_next_run(1), None);
    q.run(Ns(5), &mut d);
    assert_eq!(d.inflight.len(), 3);
    assert_eq!(d.hctx_of[2].1, 0);
    assert_eq!(q.dispatch_list_len(), 1);
}

#[test]
fn sq_sched_elevator_dispatches_other_hctxs_requests_on_their_hctx() {
    // mq-deadline is one instance for all hctxs: a run of hctx 0 hands out hctx 1's
    // requests too, each with a driver tag of, and issued on, its own hctx.
    let mut q = Queue::new(cfg(4, 2, 16, 8), |p| Box::new(MqDeadline::new(p)));
    assert!(q.elevator().single_queue());
    let mut d = Hold::default();
    for i in 0..3 {
        q.submit_bio(Ns(0), read(0, i * 64, i));
        q.submit_bio(Ns(0), read(3, 100_000 + i * 512, 10 + i));
    }
    assert!(q.hctx_next_run(0).is_some() && q.hctx_next_run(1).is_some());
    q.run_hw_queue(Ns(0), 0, &mut d);
    assert_eq!(d.inflight.len(), 6);
    assert_eq!(q.driver_tags_in_use(0), 3);
    assert_eq!(q.driver_tags_in_use(1), 3);
    // Sorted by hctx before going to the driver.
    let hs: Vec<u16> = d.hctx_of.iter().map(|&(_, h)| h).collect();
    assert_eq!(hs, vec![0, 0, 0, 1, 1, 1]);
    for &(id, h) in &d.hctx_of {
        assert_eq!(q.request(id).hctx, h);
    }
    // hctx 1's own run finds nothing left.
    q.run_hw_queue(Ns(0), 1, &mut d);
    assert_eq!(d.inflight.len(), 6);
}

#[test]
fn none_serves_only_its_hctxs_software_queues() {
    let mut q = none_queue(cfg(4, 2, 16, 16));
    let mut d = Hold::default();
    q.submit_bio(Ns(0), read(0, 0, 0));
    q.submit_bio(Ns(0), read(1, 1000, 1));
    q.submit_bio(Ns(0), read(2, 2000, 2));
    q.run_hw_queue(Ns(0), 1, &mut d);
    assert_eq!(d.hctx_of.len(), 1);
    assert_eq!(q.request(d.inflight[0]).sector, Sector(2000));
    q.run_hw_queue(Ns(0), 0, &mut d);
    let sectors: Vec<u64> = d.inflight[1..]
        .iter()
        .map(|&id| q.request(id).sector.0)
        .collect();
    assert_eq!(sectors, vec![0, 1000]);
}

#[test]
fn kyber_tokens_are_per_queue_and_a_wake_runs_the_waiting_hctx() {
    // 2 CPUs on 2 hctxs, plenty of scheduler tags: CPU 0 takes all 256 read tokens;
    // CPU 1's reads wait in hctx 1's kcq until a token frees, then the wake-up runs
    // hctx 1 (not hctx 0).
    let mut q = Queue::new(cfg(2, 2, 512, 1023), |p| Box::new(Kyber::new(p)));
    let mut d = Hold::default();
    for i in 0..256 {
        q.submit_bio(Ns(0), read(0, i * 1000, i));
    }
    run_due(&mut q, &mut d, Ns(0));
    assert_eq!(d.inflight.len(), 256);
    for i in 0..20 {
        q.submit_bio(Ns(0), read(1, 10_000_000 + i * 1000, 1000 + i));
    }
    run_due(&mut q, &mut d, Ns(0));
    assert_eq!(d.inflight.len(), 256, "no read token left");
    let kyber = |q: &Queue| {
        q.elevator()
            .debugfs()
            .into_iter()
            .find(|(k, _)| k == "hctx1/read_waiting")
            .map(|(_, v)| v)
    };
    assert_eq!(kyber(&q).as_deref(), Some("1"));
    // Complete enough hctx-0 reads for a wake batch (8).
    let mut now = Ns(1000);
    for id in d.inflight.drain(..8).collect::<Vec<_>>() {
        q.complete(now, id);
    }
    // The frees do not run hctx 1 (it has just its 3 ms poll pending, from the
    // dispatch that found no token); the wake comes as a timer.
    assert_eq!(q.hctx_next_run(1), Some(Ns(3_000_000)));
    let t = q.next_elevator_timer().expect("wake-up");
    assert!(t <= now);
    now = now.max(t);
    q.elevator_timer(now);
    assert_eq!(q.hctx_next_run(1), Some(now));
    run_due(&mut q, &mut d, now);
    assert!(d.hctx_of.iter().any(|&(_, h)| h == 1));
    // The 8 freed tokens went to hctx 1, which waits again for the rest.
    assert_eq!(d.hctx_of.iter().filter(|&&(_, h)| h == 1).count(), 8);
    assert_eq!(kyber(&q).as_deref(), Some("1"));
}

#[test]
fn kyber_has_work_is_per_hctx() {
    let mut q = Queue::new(cfg(2, 2, 64, 64), |p| Box::new(Kyber::new(p)));
    q.submit_bio(Ns(0), read(0, 0, 0));
    assert!(q.hctx_next_run(0).is_some());
    assert_eq!(q.hctx_next_run(1), None);
    let mut d = Hold::default();
    q.run_hw_queue(Ns(0), 0, &mut d);
    assert_eq!(d.hctx_of, vec![(d.inflight[0], 0)]);
}
