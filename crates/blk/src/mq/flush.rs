//! The flush state machine (`block/blk-flush.c`).
//!
//! A request carrying `REQ_PREFLUSH` and/or `REQ_FUA` is decomposed, from the
//! device's write-cache and FUA flags, into up to three steps: PREFLUSH, DATA,
//! POSTFLUSH (`blk_insert_flush`). Requests waiting for a flush step sit on the
//! *pending* list; one flush request is issued for all of them (`blk_kick_flush`),
//! and while it runs the lists swap roles (double buffering), so that requests
//! arriving meanwhile wait for the *next* flush: at most one flush is in flight per
//! queue, and every request that joins a window shares one flush ("flush merging").
//! A flush is also held back while flush-sequence data is in flight, unless the
//! pending list has waited `FLUSH_PENDING_TIMEOUT` (5 s).
//!
//! The flush request is one preallocated request (`fq->flush_rq`) that borrows the
//! first pending request's tag; it is inserted at the head of `hctx->dispatch` (or
//! the tail, to reproduce the v5.6-rc regression of seed 2). Data steps go through
//! the requeue list and are inserted at the head through the elevator.

use super::Queue;
use crate::request::{Request, RqId};
use crate::types::{Jiffies, Ns, Op, ReqFlags};
use std::collections::VecDeque;

/// Where the flush request is inserted into `hctx->dispatch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlushInsert {
    /// At the head: mainline since v5.6 ("blk-mq: insert flush request to the front
    /// of dispatch queue").
    #[default]
    Head,
    /// At the tail: the v5.6-rc behaviour after commit 01e99aeca397.
    Tail,
}

impl FlushInsert {
    /// Parse `head` / `tail`.
    pub fn from_name(s: &str) -> Option<FlushInsert> {
        match s {
            "head" => Some(FlushInsert::Head),
            "tail" => Some(FlushInsert::Tail),
            _ => None,
        }
    }
    /// The setting's value name.
    pub fn name(self) -> &'static str {
        match self {
            FlushInsert::Head => "head",
            FlushInsert::Tail => "tail",
        }
    }
}

/// `REQ_FSEQ_*`: steps of a flush sequence, as bits of the completed-steps set.
const FSEQ_PREFLUSH: u8 = 1 << 0;
const FSEQ_DATA: u8 = 1 << 1;
const FSEQ_POSTFLUSH: u8 = 1 << 2;
const FSEQ_DONE: u8 = 1 << 3;
const FSEQ_ACTIONS: u8 = FSEQ_PREFLUSH | FSEQ_DATA | FSEQ_POSTFLUSH;
/// `FLUSH_PENDING_TIMEOUT`, in seconds (`5 * HZ` jiffies).
const FLUSH_PENDING_TIMEOUT_SECS: u64 = 5;

/// `struct blk_flush_queue`.
#[derive(Debug, Default)]
pub(super) struct FlushQueue {
    /// `flush_queue[2]`: the pending and the running list.
    lists: [VecDeque<RqId>; 2],
    pending_idx: usize,
    running_idx: usize,
    /// When the pending list last became non-empty.
    pending_since: Jiffies,
    /// Flush-sequence data requests in flight (C2).
    data_in_flight: u32,
    /// The preallocated flush request, once first used.
    pub flush_rq: Option<RqId>,
    /// Completed steps per request slot (`rq->flush.seq`).
    seq: Vec<u8>,
}

impl FlushQueue {
    fn seq_mut(&mut self, id: RqId) -> &mut u8 {
        if id.index() >= self.seq.len() {
            self.seq.resize(id.index() + 1, 0);
        }
        &mut self.seq[id.index()]
    }
}

impl Queue {
    /// `blk_insert_flush`: decompose a PREFLUSH/FUA request. Returns true when the
    /// flush machinery took the request; false when it continues on the normal path
    /// (plain or FUA data, or data followed by a post-flush).
    pub(super) fn insert_flush(&mut self, now: Ns, id: RqId) -> bool {
        let (wc, fua) = (self.cfg.write_cache, self.cfg.fua);
        let rq = self.rqs.get_mut(id);
        let fq = &mut self.fqs[rq.hctx as usize];
        let mut policy = 0;
        if rq.nr_sectors > 0 {
            policy |= FSEQ_DATA;
        }
        if wc {
            if rq.flags.has(ReqFlags::PREFLUSH) {
                policy |= FSEQ_PREFLUSH;
            }
            if rq.flags.has(ReqFlags::FUA) && !fua {
                policy |= FSEQ_POSTFLUSH;
            }
        }
        // What the driver sees: no PREFLUSH, FUA only if the device has it; REQ_SYNC
        // keeps the accounting of a formerly synchronous request.
        rq.flags = rq.flags.without(ReqFlags::PREFLUSH).with(ReqFlags::SYNC);
        if !fua {
            rq.flags = rq.flags.without(ReqFlags::FUA);
        }
        match policy {
            0 => {
                self.end_request(now, id);
                true
            }
            FSEQ_DATA => false,
            p if p == FSEQ_DATA | FSEQ_POSTFLUSH => {
                rq.flush_seq = true;
                *fq.seq_mut(id) = FSEQ_PREFLUSH;
                fq.data_in_flight += 1;
                false
            }
            p => {
                rq.flush_seq = true;
                *fq.seq_mut(id) = 0;
                self.flush_complete_seq(now, id, FSEQ_ACTIONS & !p);
                true
            }
        }
    }

    /// `blk_flush_complete_seq`: mark `done` steps complete and move the request to
    /// its next step, then see whether a flush can be issued.
    fn flush_complete_seq(&mut self, now: Ns, id: RqId, done: u8) {
        let hctx = self.hctx_of(id);
        let h = hctx as usize;
        let seq = {
            let s = self.fqs[h].seq_mut(id);
            debug_assert_eq!(*s & done, 0, "flush step completed twice");
            *s |= done;
            // blk_flush_cur_seq: the lowest step not done yet.
            1u8 << s.trailing_ones()
        };
        match seq {
            FSEQ_PREFLUSH | FSEQ_POSTFLUSH => {
                let jiffies = self.jiffies(now);
                let fq = &mut self.fqs[h];
                let p = fq.pending_idx;
                if fq.lists[p].is_empty() {
                    fq.pending_since = jiffies;
                }
                fq.lists[p].push_back(id);
            }
            FSEQ_DATA => {
                self.fqs[h].data_in_flight += 1;
                self.requeue_list.push_front((id, false));
                self.kick_requeue(now);
            }
            _ => {
                debug_assert_eq!(seq, FSEQ_DONE);
                // blk_flush_restore_request, then blk_mq_end_request: only now is the
                // submitter's bio ended and the I/O accounted.
                self.fqs[h].seq[id.index()] = 0;
                self.rqs.get_mut(id).flush_seq = false;
                self.end_request(now, id);
            }
        }
        self.kick_flush(now, hctx);
    }

    /// `blk_kick_flush`: issue a flush for the pending list if none is in flight (C1)
    /// and no flush data is in flight or the pending list timed out (C2/C3).
    fn kick_flush(&mut self, now: Ns, hctx: u16) {
        let h = hctx as usize;
        let fq = &self.fqs[h];
        let pending = &fq.lists[fq.pending_idx];
        let Some(&first) = pending.front() else {
            return;
        };
        if fq.pending_idx != fq.running_idx {
            return;
        }
        let timeout = fq
            .pending_since
            .plus(FLUSH_PENDING_TIMEOUT_SECS * self.cfg.hz as u64);
        if fq.data_in_flight > 0 && self.jiffies(now).before(timeout) {
            return;
        }
        self.fqs[h].pending_idx ^= 1;
        // The flush request takes the first pending request's context and borrows
        // its tag (so it holds no scheduler tag of its own).
        let (cpu, hctx, pid) = {
            let f = self.rqs.get(first);
            (f.cpu, f.hctx, f.pid)
        };
        let id = match self.fqs[h].flush_rq {
            Some(id) => id,
            None => {
                let mut rq = Request::from_bio(&self.flush_bio_template(), dummy_bio(), now);
                rq.bio_head = None;
                rq.bio_tail = None;
                let id = self.rqs.alloc(rq);
                self.fqs[h].flush_rq = Some(id);
                id
            }
        };
        let rq = self.rqs.get_mut(id);
        rq.op = Op::Flush;
        rq.flags = ReqFlags::PREFLUSH;
        rq.nr_sectors = 0;
        rq.nr_segments = 0;
        rq.cpu = cpu;
        rq.hctx = hctx;
        rq.pid = pid;
        rq.alloc_ns = now;
        rq.started = false;
        rq.flush_seq = true;
        rq.uses_sched = false;
        rq.sched_tag = None;
        rq.driver_tag = None;
        self.flush_list.push(id);
        self.kick_requeue(now);
    }

    fn flush_bio_template(&self) -> crate::request::Bio {
        crate::request::Bio {
            op: Op::Flush,
            flags: ReqFlags::PREFLUSH,
            sector: crate::types::Sector(0),
            nr_sectors: 0,
            ioprio: Default::default(),
            pid: 0,
            cpu: 0,
            cgroup: Default::default(),
            owner: u64::MAX,
        }
    }

    /// `flush_end_io`: the device finished the flush; every request on the running
    /// list advances one step.
    pub(super) fn flush_end_io(&mut self, now: Ns, hctx: u16) {
        let h = hctx as usize;
        let id = self.fqs[h]
            .flush_rq
            .expect("flush completion without a flush request");
        self.put_driver_tag(id);
        self.rqs.get_mut(id).started = false;
        self.stats.flush_ios += 1;
        self.stats.flush_ticks_ns += now.since(self.rqs.get(id).alloc_ns);
        let r = self.fqs[h].running_idx;
        debug_assert_ne!(self.fqs[h].pending_idx, r, "flush completed while none ran");
        self.fqs[h].running_idx ^= 1;
        let mut running = std::mem::take(&mut self.fqs[h].lists[r]);
        while let Some(rq) = running.pop_front() {
            let seq = 1u8 << self.fqs[h].seq[rq.index()].trailing_ones();
            debug_assert!(seq == FSEQ_PREFLUSH || seq == FSEQ_POSTFLUSH);
            self.flush_complete_seq(now, rq, seq);
        }
        // Keep the allocation (nothing can have been added to the old running list:
        // it is the pending list only after the next flush is issued, which swaps
        // pending_idx away from it... unless that happened above).
        if self.fqs[h].lists[r].is_empty() {
            self.fqs[h].lists[r] = running;
        }
    }

    /// `mq_flush_data_end_io`: the data step of a flush sequence finished. The
    /// elevator is done with it (`finish_request`); its driver tag is returned, and
    /// the sequence advances.
    pub(super) fn flush_data_end_io(&mut self, now: Ns, id: RqId) {
        let hctx = self.hctx_of(id);
        if self.rqs.get(id).uses_sched {
            let (mut ctx, e) = self.ctx(now, hctx);
            e.completed_request(&mut ctx, id, now);
            ctx.merge.forget(id);
            e.finish_request(&mut ctx, id);
            self.rqs.get_mut(id).uses_sched = false;
        }
        self.put_driver_tag(id);
        self.rqs.get_mut(id).started = false;
        self.fqs[hctx as usize].data_in_flight -= 1;
        self.flush_complete_seq(now, id, FSEQ_DATA);
        self.sched_restart(now, hctx);
    }
}

fn dummy_bio() -> crate::request::BioId {
    crate::request::BioId(u32::MAX)
}
