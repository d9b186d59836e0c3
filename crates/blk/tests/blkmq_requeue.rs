//! Requeue, refusing devices, tags and the elevator's shallow depth.

mod common;
use blk::elevator::none::NoneSched;
use blk::elevator::{Elevator, ElvCtx, TunableError, TunableInfo};
use blk::mq::{FlushInsert, Queue, QueueConfig, QueueRqStatus, Submitted};
use blk::{Ns, Op, ReqFlags, RqId};
use common::*;

#[test]
fn requeued_request_is_reinserted_at_head_and_dispatched_first() {
    let mut q = none_queue(cfg(32, false, false, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    q.submit_bio(Ns(0), write(0, 8, 0));
    q.run(Ns(0), &mut d);
    let first = d.log[0].id;
    q.submit_bio(Ns(1), write(1000, 8, 1));
    // The driver gives the first request back before the queue runs again.
    d.log.clear();
    let mut done = vec![];
    d.advance(Ns(0), &mut done);
    q.requeue_request(Ns(1), first, false);
    assert_eq!(q.next_run(), Some(Ns(1)));
    q.run(Ns(1), &mut d);
    assert_eq!(d.log[0].id, first, "requeued at head");
    assert_eq!(d.log[1].sector, 1000);
    // A prepared request goes to the tail of hctx->dispatch instead.
    q.requeue_request(Ns(2), first, true);
    assert_eq!(q.dispatch_list_len(), 0);
    q.run(Ns(2), &mut d);
    assert_eq!(d.log.last().unwrap().id, first);
}

#[test]
fn refused_requests_wait_on_dispatch_and_restart() {
    let mut q = none_queue(cfg(32, false, false, FlushInsert::Head));
    let mut d = Disk::ncq(32);
    d.refuse_all = Some(QueueRqStatus::Resource);
    q.submit_bio(Ns(1_000_000), write(0, 8, 0));
    q.submit_bio(Ns(1_000_000), write(1000, 8, 1));
    q.run(Ns(1_000_000), &mut d);
    q.run(Ns(1_000_000), &mut d);
    assert_eq!(q.dispatch_list_len(), 2);
    // BLK_STS_RESOURCE: re-run 3 ms later, on a jiffy tick (HZ 250).
    assert_eq!(q.next_run(), Some(Ns(4_000_000)));
    d.refuse_all = None;
    q.run(Ns(4_000_000), &mut d);
    assert_eq!(d.log.len(), 2);
    assert_eq!(q.dispatch_list_len(), 0);
}

/// `none` with a shallow depth for writes, as mq-deadline's async limit.
struct Shallow(NoneSched);
impl Elevator for Shallow {
    fn name(&self) -> &'static str {
        "shallow"
    }
    fn limit_depth(&self, op: Op, flags: ReqFlags) -> Option<u32> {
        (op == Op::Write && !flags.has(ReqFlags::SYNC)).then_some(2)
    }
    fn insert_requests(&mut self, ctx: &mut ElvCtx, rqs: &[RqId], at_head: bool) {
        self.0.insert_requests(ctx, rqs, at_head)
    }
    fn dispatch_request(&mut self, ctx: &mut ElvCtx) -> Option<RqId> {
        self.0.dispatch_request(ctx)
    }
    fn has_work(&self, ctx: &ElvCtx) -> bool {
        self.0.has_work(ctx)
    }
    fn finish_request(&mut self, _ctx: &mut ElvCtx, _rq: RqId) {}
    fn tunables(&self) -> Vec<TunableInfo> {
        vec![]
    }
    fn get_tunable(&self, name: &str) -> Result<String, TunableError> {
        self.0.get_tunable(name)
    }
    fn set_tunable(&mut self, name: &str, v: &str) -> Result<(), TunableError> {
        self.0.set_tunable(name, v)
    }
}

#[test]
fn limit_depth_bounds_async_writes_and_sleepers_wake_on_free() {
    let mut q = Queue::new(
        QueueConfig {
            nr_requests: Some(8),
            queue_depth: 8,
            ..Default::default()
        },
        |p| Box::new(Shallow(NoneSched::new(p))),
    );
    let mut d = Disk::ncq(8);
    let async_write = |s: u64, o: u64| {
        let mut b = write(s, 8, o);
        b.flags = ReqFlags::NONE;
        b
    };
    assert!(matches!(
        q.submit_bio(Ns(0), bio(Op::Read, 0, 8, 0)),
        Submitted::Inserted(_)
    ));
    assert!(matches!(
        q.submit_bio(Ns(0), async_write(1000, 1)),
        Submitted::Inserted(_)
    ));
    // The shallow depth is a bound on the tags in use (the read's included): the
    // second async write finds 2 in use and sleeps.
    assert_eq!(
        q.submit_bio(Ns(0), async_write(2000, 2)),
        Submitted::Sleeping
    );
    // With an elevator, nothing is issued directly: one run dispatches both.
    q.run(Ns(0), &mut d);
    assert_eq!(d.log.len(), 2);
    let mut done = vec![];
    d.advance(Ns(1_000_000), &mut done);
    for id in done {
        q.complete(Ns(1_000_000), id);
    }
    q.run(Ns(1_000_000), &mut d);
    assert_eq!(d.log.len(), 3, "the sleeper got a tag when tags were freed");
}
