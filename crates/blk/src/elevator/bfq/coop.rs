//! Queue merging: processes doing interleaved I/O close to each other share one
//! queue, so that their requests are served as one sequential stream.
//!
//! - **Early queue merge (EQM)** (`Bfq::setup_cooperator`), on rotational or
//!   non-queueing devices only: when a sync request (at insertion) or bio (at a
//!   bio-merge attempt) lands within `BFQQ_CLOSE_THR` sectors of the in-service
//!   queue's last dispatched position, or of another queue's head request (found
//!   through the per-group position tree, `bfq_find_close_cooperator`, a red-black
//!   tree shaped as the kernel's, [`super::rbtree`]), and both
//!   queues are sync, not seeky, of the same class and recently started
//!   (`bfq_may_be_close_cooperator`, `bfq_too_late_for_merging`), the merge is set
//!   up (`bfq_setup_merge`: `new_bfqq`) and done at once (`bfq_merge_bfqqs`): the
//!   process's requests go to the other queue from now on, which becomes shared
//!   (`coop`). Requests already queued stay where they are.
//! - **Stable merge** (`Bfq::do_or_sched_stable_merge`): a sync queue created
//!   within `bfq_burst_interval` of the previous one created in the same group,
//!   with the same class and level, is merged with it at once on non-rotational
//!   queueing devices; elsewhere the merge is scheduled and done at the process's
//!   first request at least 600 ms after creation (`bfq_setup_stable_merge`),
//!   unless idling already boosts that queue's throughput.
//! - **Splitting** (`Bfq::split_if_needed`): a shared queue found seeky at an
//!   expiration (`split_coop`) is split at the next request of each of its
//!   processes (`bfq_split_bfqq`, `__bfq_get_bfqq_handle_split`); the process gets
//!   a fresh queue with the state saved at the merge (`bfq_bfqq_save_state`,
//!   `bfq_bfqq_resume_state`). Stably merged processes are never split.
//!
//! Merged queues are kept out of weight raising unless stably merged
//! (`bfq_bfqq_handle_idle_busy_switch`).
//!
//! Queues are never freed here: a queue whose processes all left keeps its id,
//! with `process_refs` 0 (no idling for it, `bfq_better_to_idle`).

use super::queue::QueueId;
use super::wf2q::CLASS_IDLE;
use super::Bfq;

/// `BFQQ_CLOSE_THR` (sectors).
pub const BFQQ_CLOSE_THR: u64 = 8 * 1024;
/// `bfq_activation_stable_merging` (ms).
pub const BFQ_ACTIVATION_STABLE_MERGING_MS: u64 = 600;
/// `bfq_late_stable_merging` (ms).
pub const BFQ_LATE_STABLE_MERGING_MS: u64 = 600;

impl Bfq {
    /// `bfq_too_late_for_merging`: the queue has been served and its first service
    /// of this backlogged period is more than `HZ / 10` old.
    pub(super) fn too_late_for_merging(&self, q: QueueId) -> bool {
        let bq = &self.queues[q];
        bq.service_from_backlogged > 0
            && self.before_jiffies(bq.first_io_time.wrapping_add(self.hz as u64 / 10))
    }

    /// Take `q` out of its position tree, if it is in one.
    pub(super) fn pos_tree_remove(&mut self, q: QueueId) {
        if let Some((g, _)) = self.queues[q].pos.take() {
            self.bfqg[g].rq_pos_tree.erase(&mut self.pos_nodes, q);
        }
    }

    /// `bfq_pos_tree_add_move`: (re)file `q` under its head request's sector in
    /// its group's position tree, unless it is too late to merge it, it is of the
    /// idle class, it is empty, or another queue holds that sector already.
    pub(super) fn pos_tree_add_move(&mut self, q: QueueId) {
        self.pos_tree_remove(q);
        if self.too_late_for_merging(q) || self.wf.ents[q].class == CLASS_IDLE {
            return;
        }
        let Some(next) = self.queues[q].next_rq else {
            return;
        };
        let key = self.rqd(next).sector;
        let g = self.wf.group_of(q);
        if self.bfqg[g].rq_pos_tree.insert(&mut self.pos_nodes, q, key) {
            self.queues[q].pos = Some((g, key));
        }
    }

    /// The position tree keeps queues by their head requests, which [`Bfq`] keeps
    /// current on every change of a queue's head when EQM is on.
    fn eqm_active(&self) -> bool {
        !self.nonrot_with_queueing
    }

    /// Re-file `q` after its head request changed (EQM devices only).
    pub(super) fn pos_tree_update(&mut self, q: QueueId) {
        if self.eqm_active() {
            self.pos_tree_add_move(q);
        }
    }

    /// `bfqq_find_close` / `bfq_find_close_cooperator`: a queue of `q`'s group whose
    /// head request starts exactly at `sector`; else the node where the search for
    /// `sector` ended (the parent of the empty leaf it would take) if within
    /// `BFQQ_CLOSE_THR`, else that node's in-order neighbour on `sector`'s side if
    /// close; `None` if the queue found is `q` itself.
    fn find_close_cooperator(&self, q: QueueId, sector: u64) -> Option<QueueId> {
        let tree = &self.bfqg[self.wf.group_of(q)].rq_pos_tree;
        let n = &self.pos_nodes[..];
        let close = |x: usize| n[x].key.abs_diff(sector) <= BFQQ_CLOSE_THR;
        let found = match tree.lookup(n, sector) {
            Ok(x) => Some(x),
            Err(None) => None,
            Err(Some(p)) if close(p) => Some(p),
            Err(Some(p)) => {
                let other = if n[p].key < sector {
                    super::rbtree::RbRoot::next(n, p)
                } else {
                    super::rbtree::RbRoot::prev(n, p)
                };
                other.filter(|&x| close(x))
            }
        };
        found.filter(|&x| x != q)
    }

    /// `bfq_may_be_close_cooperator`.
    fn may_be_close_cooperator(&self, q: QueueId, new: QueueId) -> bool {
        let (cq, cn) = (self.wf.ents[q].class, self.wf.ents[new].class);
        !self.too_late_for_merging(new)
            && cq != CLASS_IDLE
            && cn != CLASS_IDLE
            && cq == cn
            && !self.queues[q].seeky()
            && !self.queues[new].seeky()
            && self.queues[q].sync
            && self.queues[new].sync
    }

    /// `bfq_setup_merge`: schedule the merge of `q` into the end of `new`'s merge
    /// chain. Returns that queue, or `None` if the chain leads back to `q`, a side
    /// has no process left, or the two are in different groups.
    fn setup_merge(&mut self, q: QueueId, new: QueueId) -> Option<QueueId> {
        if self.queues[new].process_refs == 0 {
            return None;
        }
        let mut new = new;
        while let Some(n) = self.queues[new].new_bfqq {
            if n == q {
                return None;
            }
            new = n;
        }
        let refs = self.queues[q].process_refs;
        if refs == 0 || self.queues[new].process_refs == 0 {
            return None;
        }
        if self.wf.group_of(new) != self.wf.group_of(q) {
            return None;
        }
        self.queues[q].new_bfqq = Some(new);
        self.queues[new].process_refs += refs;
        Some(new)
    }

    /// `bfq_setup_stable_merge`: the delayed stable merge of `pid`'s queue `q` with
    /// `stable`, unless idling boosts `q`'s throughput or a side lost its processes.
    fn setup_stable_merge(&mut self, q: QueueId, stable: QueueId, pid: u32) -> Option<QueueId> {
        let refs = self.queues[q]
            .process_refs
            .min(self.queues[stable].process_refs);
        self.bic_mut(pid).stable_merge_bfqq = None;
        if self.idling_boosts_thr_without_issues(q) || refs == 0 {
            return None;
        }
        let new = self.setup_merge(q, stable)?;
        self.bic_mut(pid).stably_merged = true;
        if let Some(owner) = self.queues[new].bic {
            self.bic_mut(owner).stably_merged = true;
        }
        Some(new)
    }

    fn bic_mut(&mut self, pid: u32) -> &mut super::queue::Bic {
        self.bics.entry(pid).or_default()
    }

    /// `bfq_setup_cooperator`: the queue `pid`'s I/O at `pos` (queued for `q`)
    /// should go to instead, merging being set up on the way; `None` to stay.
    pub(super) fn setup_cooperator(&mut self, q: QueueId, pos: u64, pid: u32) -> Option<QueueId> {
        if !self.queue_merging {
            return None;
        }
        if let Some(mut n) = self.queues[q].new_bfqq {
            while let Some(m) = self.queues[n].new_bfqq {
                n = m;
            }
            return Some(n);
        }
        if self.eqm_active() {
            let late = self.msecs_to_jiffies(BFQ_LATE_STABLE_MERGING_MS);
            let stable = self.bics.get(&pid).and_then(|b| b.stable_merge_bfqq);
            let bq = &self.queues[q];
            if let Some(stable) = stable {
                if bq.sync
                    && !bq.just_created
                    && self.before_jiffies(bq.split_time.wrapping_add(late))
                    && self.before_jiffies(bq.creation_time.wrapping_add(late))
                {
                    return self.setup_stable_merge(q, stable, pid);
                }
            }
        }
        if !self.eqm_active() || self.too_late_for_merging(q) || self.tot_busy_queues() == 1 {
            return None;
        }
        if let Some(s) = self.in_service_queue {
            if s != q
                && pos.abs_diff(self.in_serv_last_pos) <= BFQQ_CLOSE_THR
                && self.wf.group_of(q) == self.wf.group_of(s)
                && self.may_be_close_cooperator(q, s)
            {
                if let Some(n) = self.setup_merge(q, s) {
                    return Some(n);
                }
            }
        }
        let n = self.find_close_cooperator(q, pos)?;
        if self.may_be_close_cooperator(q, n) {
            self.setup_merge(q, n)
        } else {
            None
        }
    }

    /// `bfq_bfqq_save_state`: keep in `q`'s owner's context what a split must give
    /// back. A queue merged right after its creation saves the interactive raising
    /// it would have got.
    fn save_state(&mut self, q: QueueId) {
        let Some(pid) = self.queues[q].bic else {
            return;
        };
        let wr_duration = self.wr_duration();
        let (jiffies, smallest) = (self.jiffies, self.smallest_from_now());
        let low_latency = self.low_latency;
        let e = &self.wf.ents[q];
        let (orig_weight, wr_coeff) = (e.orig_weight, e.wr_coeff);
        let bq = &self.queues[q];
        let mut saved = self
            .bics
            .get(&pid)
            .map(|b| b.saved.clone())
            .unwrap_or_default();
        saved.last_serv_time_ns = bq.last_serv_time_ns;
        saved.inject_limit = bq.inject_limit;
        saved.decrease_time_jif = bq.decrease_time_jif;
        saved.weight = orig_weight;
        saved.ttime = bq.ttime.clone();
        saved.has_short_ttime = bq.has_short_ttime;
        saved.io_bound = bq.io_bound;
        saved.io_start_time = bq.io_start_time;
        saved.tot_idle_time = bq.tot_idle_time;
        saved.in_large_burst = bq.in_large_burst;
        saved.was_in_burst_list = bq.in_burst_list;
        if bq.just_created && !bq.in_large_burst && low_latency {
            saved.wr_coeff = super::wr::BFQ_WR_COEFF;
            saved.wr_start_at_switch_to_srt = smallest;
            saved.wr_cur_max_time = wr_duration;
            saved.last_wr_start_finish = jiffies;
        } else {
            saved.wr_coeff = wr_coeff;
            saved.wr_start_at_switch_to_srt = bq.wr_start_at_switch_to_srt;
            saved.service_from_wr = bq.service_from_wr;
            saved.last_wr_start_finish = bq.last_wr_start_finish;
            saved.wr_cur_max_time = bq.wr_cur_max_time;
        }
        self.bic_mut(pid).saved = saved;
    }

    /// `bfq_bfqq_resume_state`: give `q` the state `pid` saved at its merge.
    fn resume_state(&mut self, q: QueueId, pid: u32, already_existing: bool) {
        let saved = self
            .bics
            .get(&pid)
            .map(|b| b.saved.clone())
            .unwrap_or_default();
        let busy = already_existing && self.queues[q].busy;
        let bq = &mut self.queues[q];
        bq.has_short_ttime = saved.has_short_ttime;
        bq.io_bound = saved.io_bound;
        bq.last_serv_time_ns = saved.last_serv_time_ns;
        bq.inject_limit = saved.inject_limit;
        bq.decrease_time_jif = saved.decrease_time_jif;
        bq.ttime = saved.ttime.clone();
        bq.io_start_time = saved.io_start_time;
        bq.tot_idle_time = saved.tot_idle_time;
        bq.service_from_wr = saved.service_from_wr;
        bq.wr_start_at_switch_to_srt = saved.wr_start_at_switch_to_srt;
        bq.last_wr_start_finish = saved.last_wr_start_finish;
        bq.wr_cur_max_time = saved.wr_cur_max_time;
        self.wf.ents[q].new_weight = saved.weight;
        let mut old_wr_coeff = 1;
        if self.low_latency {
            old_wr_coeff = self.wf.ents[q].wr_coeff;
            self.wf.ents[q].wr_coeff = saved.wr_coeff;
        }
        let bq = &self.queues[q];
        if self.wf.ents[q].wr_coeff > 1
            && (bq.in_large_burst
                || self.before_jiffies(bq.last_wr_start_finish.wrapping_add(bq.wr_cur_max_time)))
        {
            let srt_still_interactive = !self.before_jiffies(
                bq.wr_start_at_switch_to_srt
                    .wrapping_add(self.wr_duration()),
            );
            if bq.wr_cur_max_time == self.wr_rt_max_time()
                && !bq.in_large_burst
                && srt_still_interactive
            {
                self.switch_back_to_interactive_wr(q);
            } else {
                self.wf.ents[q].wr_coeff = 1;
            }
        }
        self.wf.ents[q].prio_changed = true;
        if busy {
            let now = self.wf.ents[q].wr_coeff;
            if old_wr_coeff == 1 && now > 1 {
                self.wr_busy_queues += 1;
            } else if old_wr_coeff > 1 && now == 1 {
                self.wr_busy_queues -= 1;
            }
        }
    }

    /// `bfq_reassign_last_bfqq`.
    fn reassign_last_bfqq(&mut self, cur: QueueId, new: Option<QueueId>) {
        let g = self.wf.group_of(cur);
        if self.bfqg[g].last_bfqq_created == Some(cur) {
            self.bfqg[g].last_bfqq_created = new;
        }
    }

    /// `bfq_release_process_ref`: a process stops using `q`; an empty busy queue
    /// not in service stops being busy.
    pub(super) fn release_process_ref(&mut self, q: QueueId) {
        if self.queues[q].busy && self.queues[q].sort.is_empty() && self.in_service_queue != Some(q)
        {
            self.del_bfqq_busy(q, false);
        }
        self.reassign_last_bfqq(q, None);
        self.queues[q].process_refs -= 1;
    }

    /// `bic_set_bfqq` for the sync queue of `pid`.
    pub(super) fn bic_set_sync(&mut self, pid: u32, q: Option<QueueId>) {
        let bic = self.bic_mut(pid);
        let old = std::mem::replace(&mut bic.sync_q, q);
        if q.is_some() && bic.stable_merge_bfqq == q {
            bic.stable_merge_bfqq = None;
        }
        if let Some(old) = old {
            if self.queues[old].bic == Some(pid) {
                self.queues[old].bic = None;
            }
        }
    }

    /// `bfq_merge_bfqqs`: redirect process `pid` from `q` to `q`'s `new_bfqq`, which
    /// becomes shared; returns it.
    pub(super) fn merge_bfqqs(&mut self, pid: u32, q: QueueId) -> QueueId {
        let new = self.queues[q].new_bfqq.expect("merge set up");
        self.save_state(q);
        self.save_state(new);
        if self.queues[q].io_bound {
            self.queues[new].io_bound = true;
        }
        self.queues[q].io_bound = false;
        if let Some(w) = self.queues[q].waker_bfqq {
            if self.queues[new].waker_bfqq.is_none() && w != new {
                self.queues[new].waker_bfqq = Some(w);
                self.queues[new].tentative_waker_bfqq = None;
                self.queues[w].woken_list.push_front(new);
                self.queues[new].woken_of = Some(w);
            }
        }
        // A raised queue hands its raising over.
        let q_wr = self.wf.ents[q].wr_coeff;
        if self.wf.ents[new].wr_coeff == 1 && q_wr > 1 {
            self.wf.ents[new].wr_coeff = q_wr;
            let (cur, last, srt) = {
                let b = &self.queues[q];
                (
                    b.wr_cur_max_time,
                    b.last_wr_start_finish,
                    b.wr_start_at_switch_to_srt,
                )
            };
            let bn = &mut self.queues[new];
            bn.wr_cur_max_time = cur;
            bn.last_wr_start_finish = last;
            bn.wr_start_at_switch_to_srt = srt;
            if bn.busy {
                self.wr_busy_queues += 1;
            }
            self.wf.ents[new].prio_changed = true;
        }
        if q_wr > 1 {
            self.wf.ents[q].wr_coeff = 1;
            self.wf.ents[q].prio_changed = true;
            if self.queues[q].busy {
                self.wr_busy_queues -= 1;
            }
        }
        self.bic_set_sync(pid, Some(new));
        self.queues[new].coop = true;
        self.queues[new].bic = None;
        self.queues[q].bic = None;
        self.reassign_last_bfqq(q, Some(new));
        self.release_process_ref(q);
        new
    }

    /// `bfq_do_or_sched_stable_merge`, for a sync queue `q` just created for `pid`:
    /// returns the queue `pid` uses from now on.
    pub(super) fn do_or_sched_stable_merge(&mut self, q: QueueId, pid: u32) -> QueueId {
        if !self.queue_merging {
            return q;
        }
        let g = self.wf.group_of(q);
        let last = self.bfqg[g].last_bfqq_created;
        let activation = self.msecs_to_jiffies(BFQ_ACTIVATION_STABLE_MERGING_MS);
        let burst_interval = self.msecs_to_jiffies(180);
        let created = self.queues[q].creation_time;
        let fresh = |l: QueueId| -> bool {
            let lq = &self.queues[l];
            // time_before(last + 600 ms, created) is false
            (created.wrapping_sub(lq.creation_time.wrapping_add(activation)) as i64) <= 0
                && self.wf.group_of(l) == g
                && lq.ioprio == self.queues[q].ioprio
                && self.wf.ents[l].class == self.wf.ents[q].class
        };
        let Some(last) = last.filter(|&l| fresh(l)) else {
            self.bfqg[g].last_bfqq_created = Some(q);
            return q;
        };
        let last_created = self.queues[last].creation_time;
        // time_after_eq(last + burst_interval, created)
        if (last_created
            .wrapping_add(burst_interval)
            .wrapping_sub(created) as i64)
            < 0
        {
            return q;
        }
        if self.nonrot_with_queueing {
            // bfq_do_early_stable_merge
            let Some(new) = self.setup_merge(q, last) else {
                return q;
            };
            if let Some(owner) = self.queues[new].bic {
                self.bic_mut(owner).stably_merged = true;
            }
            self.bic_mut(pid).stably_merged = true;
            self.queues[q].bic = Some(pid);
            self.merge_bfqqs(pid, q)
        } else {
            self.bic_mut(pid).stable_merge_bfqq = Some(last);
            q
        }
    }

    /// `bfq_waker_bfqq`: the waker a queue split off `q` may keep.
    fn waker_for_split(&self, q: QueueId) -> Option<QueueId> {
        let w = self.queues[q].waker_bfqq?;
        let mut n = self.queues[q].new_bfqq;
        while let Some(x) = n {
            if x == w {
                return (self.queues[w].process_refs != 1).then_some(w);
            }
            n = self.queues[x].new_bfqq;
        }
        (self.queues[w].process_refs != 0).then_some(w)
    }

    /// The split part of `bfq_get_bfqq_handle_split`: if `pid`'s sync queue `q` is
    /// a shared queue marked for splitting (and `pid` was not stably merged),
    /// `pid` leaves it (`bfq_split_bfqq`) and gets back its own queue, either `q`
    /// itself if it is the last process there, or a new one (created by `create`)
    /// with the state saved at the merge. Returns the queue `pid` uses now.
    pub(super) fn split_if_needed(
        &mut self,
        q: QueueId,
        pid: u32,
        create: impl FnOnce(&mut Bfq) -> QueueId,
    ) -> QueueId {
        let stably = self.bics.get(&pid).is_some_and(|b| b.stably_merged);
        if !self.queues[q].coop || !self.queues[q].split_coop || stably {
            return q;
        }
        let waker = self.waker_for_split(q);
        if self.queues[q].in_large_burst {
            self.bic_mut(pid).saved.in_large_burst = true;
        }
        if self.queues[q].process_refs == 1 && self.queues[q].new_bfqq.is_none() {
            let bq = &mut self.queues[q];
            bq.pid = pid;
            bq.coop = false;
            bq.split_coop = false;
            self.resume_state(q, pid, true);
            return q;
        }
        self.bic_set_sync(pid, None);
        // bfq_put_cooperator
        let mut n = self.queues[q].new_bfqq;
        while let Some(x) = n {
            self.queues[x].process_refs -= 1;
            n = self.queues[x].new_bfqq;
        }
        self.release_process_ref(q);
        let nq = create(self);
        self.bic_set_sync(pid, Some(nq));
        let saved = self
            .bics
            .get(&pid)
            .map(|b| b.saved.clone())
            .unwrap_or_default();
        if (saved.was_in_burst_list && self.large_burst) || saved.in_large_burst {
            self.queues[nq].in_large_burst = true;
        } else {
            self.queues[nq].in_large_burst = false;
            if saved.was_in_burst_list {
                self.burst_list.push(nq);
                self.queues[nq].in_burst_list = true;
            }
        }
        self.queues[nq].split_time = self.jiffies;
        self.resume_state(nq, pid, false);
        self.queues[nq].waker_bfqq = waker;
        self.queues[nq].tentative_waker_bfqq = None;
        if let Some(w) = waker {
            self.queues[w].woken_list.push_front(nq);
            self.queues[nq].woken_of = Some(w);
        }
        nq
    }

    /// Whether requests of `pid` may raise the weight of queue `q`: `q` is not
    /// shared, or `pid` was stably merged into it.
    pub(super) fn non_merged_or_stably_merged(&self, q: QueueId, pid: u32) -> bool {
        self.queues[q].bic.is_some() || self.bics.get(&pid).is_some_and(|b| b.stably_merged)
    }
}
