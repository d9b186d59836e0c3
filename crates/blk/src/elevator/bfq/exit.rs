//! Process exit: `bfq_exit_icq`, `bfq_exit_icq_bfqq`, `bfq_exit_bfqq`,
//! `bfq_put_cooperator` (Linux 6.18; unchanged since 6.13).
//!
//! When a process's I/O context goes away the kernel detaches the process from its
//! sync and async queues (sync first). A detached queue in service ends its slot at
//! once with `__bfq_bfqq_expire(.., BFQQE_BUDGET_TIMEOUT)` (no budget feedback, no
//! time charge) and a dispatch is scheduled; then the process references it held on
//! the queue's merge chain (`new_bfqq`, ...) and on the queue itself are dropped
//! (`bfq_release_process_ref`: an empty busy queue not in service stops being busy).
//! A queue with no process reference left is never idled for
//! (`bfq_better_to_idle`), which is what lets the device move on when the last
//! process of a queue exits while the queue is waiting for its next request.
//!
//! What freeing the queue would change later is not modelled because nothing can
//! observe it: the queue is no process's any more (its `bic` was cleared before
//! the last reference went, so `bfq_put_queue` leaves `burst_size` alone), and its
//! entity leaves the scheduler the way every empty queue does.

use super::queue::QueueId;
use super::{Bfq, Expiration};
use crate::elevator::ElvCtx;

impl Bfq {
    /// `bfq_exit_icq`: process `pid` exited. Unknown processes are ignored (the
    /// kernel only has an icq for processes that did I/O on this device). Returns
    /// whether a dispatch was scheduled (`bfq_schedule_dispatch` after ending the
    /// slot of a queue in service, when requests are queued).
    pub fn exit_icq(&mut self, ctx: &mut ElvCtx, pid: u32) -> bool {
        self.set_clock(ctx);
        let Some(bic) = self.bics.get(&pid).cloned() else {
            return false;
        };
        let mut run = false;
        // bfq_put_stable_ref: only a reference count; the scheduled stable merge
        // dies with the process.
        if let Some(q) = bic.sync_q {
            self.bic_set_sync(pid, None);
            run |= self.exit_bfqq(q);
        }
        if let Some(q) = bic.async_q {
            if let Some(b) = self.bics.get_mut(&pid) {
                b.async_q = None;
            }
            if self.queues[q].bic == Some(pid) {
                self.queues[q].bic = None;
            }
            run |= self.exit_bfqq(q);
        }
        // The io_context is gone: a later process with the same pid starts afresh.
        self.bics.remove(&pid);
        run
    }

    /// `bfq_exit_bfqq`; returns whether it scheduled a dispatch.
    fn exit_bfqq(&mut self, q: QueueId) -> bool {
        let mut run = false;
        if self.in_service_queue == Some(q) {
            self.__bfqq_expire(q, Expiration::BudgetTimeout);
            run = self.queued > 0;
        }
        self.put_cooperator(q);
        self.release_process_ref(q);
        run
    }

    /// `bfq_put_cooperator`: drop the reference `q` holds on every queue of its
    /// merge chain (`bfq_setup_merge` moved the process's reference there).
    fn put_cooperator(&mut self, q: QueueId) {
        let mut next = self.queues[q].new_bfqq;
        while let Some(x) = next {
            self.queues[x].process_refs -= 1;
            next = self.queues[x].new_bfqq;
        }
    }
}
