//! B-WF2Q+ (`block/bfq-wf2q.c`): entities, service trees, virtual time.
//!
//! This file models one scheduling level (`struct bfq_sched_data`) with its three
//! per-class service trees (RT, BE, IDLE). In this first version the hierarchy has
//! only the **root group** (which, as in the kernel, has no entity of its own), so the
//! `for_each_entity` walks of the kernel run exactly one iteration; the functions keep
//! the kernel's shape (`bfq_activate_requeue_entity` reports "parent may change",
//! `bfq_update_next_in_service` calls `bfq_update_parent_budget`, ...) so that group
//! entities can be added without restructuring.
//!
//! Entities are named by [`EntityId`] (the index of their `bfq_queue`). Trees are
//! ordered sets keyed by `(finish, insertion sequence)`: equal finish times go to the
//! right, as `bfq_insert` does, so an in-order walk visits entities in the same order
//! as the kernel's rb-tree. `min_start` (the augmented-tree field) is computed on
//! demand; `bfq_first_active_entity` returns the leftmost eligible entity, which is
//! what the kernel's augmented descent returns.
//!
//! The queue-weights tree (`bfqd->queue_weights_tree`, `bfq_weights_tree_add/remove`)
//! lives here as well, because `__bfq_entity_update_weight_prio` updates it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `WFQ_SERVICE_SHIFT`.
pub const WFQ_SERVICE_SHIFT: u32 = 22;
/// `BFQ_IOPRIO_CLASSES` (RT, BE, IDLE).
pub const BFQ_IOPRIO_CLASSES: usize = 3;
/// Class index of RT (`IOPRIO_CLASS_RT - 1`).
pub const CLASS_RT: usize = 0;
/// Class index of BE.
pub const CLASS_BE: usize = 1;
/// Class index of IDLE.
pub const CLASS_IDLE: usize = 2;
/// `BFQ_MIN_WEIGHT`.
pub const BFQ_MIN_WEIGHT: u32 = 1;
/// `BFQ_MAX_WEIGHT`.
pub const BFQ_MAX_WEIGHT: u32 = 1000;

/// Index of an entity (= index of its queue).
pub type EntityId = usize;

/// `bfq_gt(a, b)`: wrap-safe "a is later than b" on virtual timestamps.
#[inline]
pub fn bfq_gt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// `bfq_delta`: service mapped to virtual time for a weight.
#[inline]
pub fn bfq_delta(service: u64, weight: u64) -> u64 {
    (service << WFQ_SERVICE_SHIFT) / weight.max(1)
}

/// Which tree of its service tree an entity is on (`entity->tree`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeKind {
    /// `&st->active`.
    Active,
    /// `&st->idle`.
    Idle,
}

/// `struct bfq_entity`, plus the queue fields B-WF2Q+ reads (`wr_coeff`, class).
#[derive(Clone, Debug)]
pub struct Entity {
    /// Virtual start time.
    pub start: u64,
    /// Virtual finish time.
    pub finish: u64,
    /// Budget (sectors).
    pub budget: i64,
    /// Service received in the current slot (sectors).
    pub service: i64,
    /// Effective weight (`orig_weight × wr_coeff`).
    pub weight: u32,
    /// Weight before raising.
    pub orig_weight: u32,
    /// Pending weight (`new_weight`), applied at the next (re)insertion.
    pub new_weight: u32,
    /// `prio_changed`.
    pub prio_changed: bool,
    /// Current class index (`bfqq->ioprio_class - 1`).
    pub class: usize,
    /// Pending class index (`new_ioprio_class - 1`).
    pub new_class: usize,
    /// `bfqq->wr_coeff` (always 1 until weight raising is modelled).
    pub wr_coeff: u32,
    /// `on_st_or_in_serv`.
    pub on_st_or_in_serv: bool,
    /// Tree membership.
    pub tree: Option<TreeKind>,
    /// Key under which the entity sits in its tree.
    key: (u64, u64),
    /// `bfqq->weight_counter`: the weight it is counted under in the weights tree.
    pub weight_counter: Option<u32>,
}

impl Entity {
    /// `bfq_init_entity` for a queue whose first ioprio data is `weight`/`class`
    /// (`prio_changed` stays set, as `bfq_set_next_ioprio_data` leaves it).
    pub fn new(weight: u32, class: usize) -> Entity {
        Entity {
            start: 0,
            finish: 0,
            budget: 0,
            service: 0,
            weight,
            orig_weight: weight,
            new_weight: weight,
            prio_changed: true,
            class,
            new_class: class,
            wr_coeff: 1,
            on_st_or_in_serv: false,
            tree: None,
            key: (0, 0),
            weight_counter: None,
        }
    }
}

/// `struct bfq_service_tree`.
#[derive(Clone, Debug, Default)]
pub struct ServiceTree {
    active: BTreeSet<(u64, u64, EntityId)>,
    idle: BTreeSet<(u64, u64, EntityId)>,
    /// `first_idle`.
    pub first_idle: Option<EntityId>,
    /// `last_idle`.
    pub last_idle: Option<EntityId>,
    /// System virtual time of this tree.
    pub vtime: u64,
    /// Sum of the weights of entities on the trees or in service.
    pub wsum: u64,
}

impl ServiceTree {
    /// Number of entities on the active tree.
    pub fn active_len(&self) -> usize {
        self.active.len()
    }
    /// Number of entities on the idle tree.
    pub fn idle_len(&self) -> usize {
        self.idle.len()
    }
    /// Active entities in tree order (by finish time).
    pub fn active_ids(&self) -> impl Iterator<Item = EntityId> + '_ {
        self.active.iter().map(|k| k.2)
    }
}

/// One scheduling level (`struct bfq_sched_data`) and the entities it schedules.
#[derive(Clone, Debug)]
pub struct Wf2q {
    /// Entities, indexed by queue id.
    pub ents: Vec<Entity>,
    /// RT, BE, IDLE service trees.
    pub st: [ServiceTree; BFQ_IOPRIO_CLASSES],
    /// `in_service_entity`.
    pub in_service_entity: Option<EntityId>,
    /// `next_in_service`.
    pub next_in_service: Option<EntityId>,
    /// `bfq_class_idle_last_service` (jiffies).
    pub class_idle_last_service: u64,
    /// `BFQ_CL_IDLE_TIMEOUT` in jiffies (`HZ / 5`).
    pub cl_idle_timeout: u64,
    /// `queue_weights_tree`: weight → `num_active`.
    pub weights: BTreeMap<u32, u32>,
    /// `bfqd->active_list`: queues on an active tree, most recently inserted first
    /// (the scan order of `bfq_choose_bfqq_for_injection`).
    pub active_list: VecDeque<EntityId>,
    seq: u64,
    /// Diagnostics: times `bfq_forget_idle` lowered a tree's `vtime` (the kernel
    /// quirk, the only way `vtime` goes back).
    pub vtime_lowered: u64,
    /// Diagnostics: entities set in service while not eligible
    /// (`start > max(vtime, min_start)`); B-WF2Q+ must keep this at 0.
    pub ineligible_selections: u64,
}

impl Wf2q {
    /// An empty root level; `jiffies` is the init time (`bfq_init_root_group`).
    pub fn new(hz: u32, jiffies: u64) -> Wf2q {
        Wf2q {
            ents: Vec::new(),
            st: Default::default(),
            in_service_entity: None,
            next_in_service: None,
            class_idle_last_service: jiffies,
            cl_idle_timeout: (hz / 5) as u64,
            weights: BTreeMap::new(),
            active_list: VecDeque::new(),
            seq: 0,
            vtime_lowered: 0,
            ineligible_selections: 0,
        }
    }

    /// `bfq_entity_service_tree`: the class index of the tree an entity belongs to.
    fn st_of(&self, id: EntityId) -> usize {
        self.ents[id].class
    }

    /// `bfq_calc_finish`.
    fn calc_finish(&mut self, id: EntityId, service: i64) {
        let e = &mut self.ents[id];
        e.finish = e
            .start
            .wrapping_add(bfq_delta(service.max(0) as u64, e.weight as u64));
    }

    fn next_key(&mut self, id: EntityId) -> (u64, u64) {
        self.seq += 1;
        let k = (self.ents[id].finish, self.seq);
        self.ents[id].key = k;
        k
    }

    /// `bfq_active_insert`.
    fn active_insert(&mut self, c: usize, id: EntityId) {
        let k = self.next_key(id);
        self.st[c].active.insert((k.0, k.1, id));
        self.ents[id].tree = Some(TreeKind::Active);
        // list_add(&bfqq->bfqq_list, &bfqd->active_list)
        self.active_list.push_front(id);
    }

    /// `bfq_active_extract`.
    fn active_extract(&mut self, c: usize, id: EntityId) {
        let k = self.ents[id].key;
        let removed = self.st[c].active.remove(&(k.0, k.1, id));
        debug_assert!(removed, "active_extract of an entity not on the tree");
        self.ents[id].tree = None;
        if let Some(pos) = self.active_list.iter().position(|&x| x == id) {
            self.active_list.remove(pos);
        }
    }

    /// `bfq_idle_insert`.
    fn idle_insert(&mut self, c: usize, id: EntityId) {
        let k = self.next_key(id);
        let finish = self.ents[id].finish;
        let st = &self.st[c];
        let new_first = st
            .first_idle
            .is_none_or(|f| bfq_gt(self.ents[f].finish, finish));
        let new_last = st
            .last_idle
            .is_none_or(|l| bfq_gt(finish, self.ents[l].finish));
        let st = &mut self.st[c];
        if new_first {
            st.first_idle = Some(id);
        }
        if new_last {
            st.last_idle = Some(id);
        }
        st.idle.insert((k.0, k.1, id));
        self.ents[id].tree = Some(TreeKind::Idle);
    }

    /// `bfq_idle_extract`: `first_idle` moves to the in-order successor and
    /// `last_idle` to the predecessor, as `rb_next`/`rb_prev` do.
    fn idle_extract(&mut self, c: usize, id: EntityId) {
        let k = self.ents[id].key;
        let key = (k.0, k.1, id);
        let st = &mut self.st[c];
        if st.first_idle == Some(id) {
            st.first_idle = st
                .idle
                .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
                .next()
                .map(|k| k.2);
        }
        if st.last_idle == Some(id) {
            st.last_idle = st.idle.range(..key).next_back().map(|k| k.2);
        }
        st.idle.remove(&key);
        self.ents[id].tree = None;
    }

    /// `bfq_forget_entity`.
    fn forget_entity(&mut self, c: usize, id: EntityId) {
        self.ents[id].on_st_or_in_serv = false;
        self.st[c].wsum -= self.ents[id].weight as u64;
    }

    /// `bfq_put_idle_entity`.
    fn put_idle_entity(&mut self, c: usize, id: EntityId) {
        self.idle_extract(c, id);
        self.forget_entity(c, id);
    }

    /// `bfq_forget_idle`. Quirk kept: the "jump" to `last_idle.finish` can only lower
    /// or keep `vtime`.
    fn forget_idle(&mut self, c: usize) {
        let (first, last) = (self.st[c].first_idle, self.st[c].last_idle);
        if self.st[c].active.is_empty() {
            if let Some(l) = last {
                let lf = self.ents[l].finish;
                if !bfq_gt(lf, self.st[c].vtime) {
                    if lf != self.st[c].vtime {
                        self.vtime_lowered += 1;
                    }
                    self.st[c].vtime = lf;
                }
            }
        }
        if let Some(f) = first {
            if !bfq_gt(self.ents[f].finish, self.st[c].vtime) {
                self.put_idle_entity(c, f);
            }
        }
    }

    /// Smallest `start` on the active tree (the root's `min_start`).
    pub fn min_start(&self, c: usize) -> Option<u64> {
        self.st[c]
            .active
            .iter()
            .map(|k| self.ents[k.2].start)
            .reduce(|a, b| if bfq_gt(a, b) { b } else { a })
    }

    /// `bfq_calc_vtime_jump`.
    fn calc_vtime_jump(&self, c: usize) -> u64 {
        let v = self.st[c].vtime;
        match self.min_start(c) {
            Some(m) if bfq_gt(m, v) => m,
            _ => v,
        }
    }

    /// `bfq_update_vtime`.
    fn update_vtime(&mut self, c: usize, new_value: u64) {
        if bfq_gt(new_value, self.st[c].vtime) {
            self.st[c].vtime = new_value;
            self.forget_idle(c);
        }
    }

    /// `bfq_first_active_entity`: the leftmost (smallest finish) entity with
    /// `start <= vtime`.
    pub fn first_active_entity(&self, c: usize, vtime: u64) -> Option<EntityId> {
        self.st[c]
            .active
            .iter()
            .map(|k| k.2)
            .find(|&id| !bfq_gt(self.ents[id].start, vtime))
    }

    /// `__bfq_lookup_next_entity`.
    fn lookup_next_entity_in(&mut self, c: usize, in_service: bool) -> Option<EntityId> {
        if self.st[c].active.is_empty() {
            return None;
        }
        let new_vtime = self.calc_vtime_jump(c);
        if !in_service {
            self.update_vtime(c, new_vtime);
        }
        self.first_active_entity(c, new_vtime)
    }

    /// `bfq_lookup_next_entity`: class precedence plus the idle-class
    /// anti-starvation turn every `BFQ_CL_IDLE_TIMEOUT`.
    fn lookup_next_entity(&mut self, expiration: bool, jiffies: u64) -> Option<EntityId> {
        let mut class_idx = 0;
        // time_is_before_jiffies(last + timeout)
        if ((jiffies.wrapping_sub(self.class_idle_last_service + self.cl_idle_timeout)) as i64) > 0
        {
            if !self.st[CLASS_IDLE].active.is_empty() {
                class_idx = CLASS_IDLE;
            }
            self.class_idle_last_service = jiffies;
        }
        let in_service = self.in_service_entity.is_some() && !expiration;
        (class_idx..BFQ_IOPRIO_CLASSES).find_map(|c| self.lookup_next_entity_in(c, in_service))
    }

    /// `bfq_update_parent_budget`: a no-op at the root level (the root group has no
    /// entity). Returns whether the parent's budget decreased.
    fn update_parent_budget(&mut self, _next: EntityId) -> bool {
        false
    }

    /// `bfq_update_next_in_service`. Returns "the parent's schedule may change".
    pub fn update_next_in_service(
        &mut self,
        new_entity: Option<EntityId>,
        expiration: bool,
        jiffies: u64,
    ) -> bool {
        let mut next = self.next_in_service;
        let mut change_without_lookup = false;
        if let Some(ne) = new_entity {
            if Some(ne) != self.next_in_service {
                change_without_lookup = true;
                if let Some(cur) = next {
                    let c = self.ents[ne].class;
                    change_without_lookup = c == self.ents[cur].class
                        && !bfq_gt(self.ents[ne].start, self.st[c].vtime)
                        && bfq_gt(self.ents[cur].finish, self.ents[ne].finish);
                }
                if change_without_lookup {
                    next = Some(ne);
                }
            }
        }
        if !change_without_lookup {
            next = self.lookup_next_entity(expiration, jiffies);
        }
        let mut parent_may_change = false;
        if let Some(n) = next {
            let budget_change = self.update_parent_budget(n);
            parent_may_change = self.next_in_service.is_none() || budget_change;
        }
        self.next_in_service = next;
        parent_may_change
    }

    /// `bfq_weights_tree_add`.
    pub fn weights_tree_add(&mut self, id: EntityId) {
        if self.ents[id].weight_counter.is_some() {
            return;
        }
        let w = self.ents[id].weight;
        *self.weights.entry(w).or_insert(0) += 1;
        self.ents[id].weight_counter = Some(w);
    }

    /// `bfq_weights_tree_remove` (the `__` variant of older kernels).
    pub fn weights_tree_remove(&mut self, id: EntityId) {
        let Some(w) = self.ents[id].weight_counter.take() else {
            return;
        };
        let n = self
            .weights
            .get_mut(&w)
            .expect("weight counter without node");
        *n -= 1;
        if *n == 0 {
            self.weights.remove(&w);
        }
    }

    /// `__bfq_entity_update_weight_prio`: apply a pending weight/class change,
    /// moving `wsum` and the weights-tree membership. Returns the new tree's class.
    pub fn update_weight_prio(&mut self, id: EntityId, update_class_too: bool) -> usize {
        let old = self.ents[id].class;
        if !self.ents[id].prio_changed {
            return old;
        }
        self.st[old].wsum -= self.ents[id].weight as u64;
        {
            let e = &mut self.ents[id];
            if e.new_weight != e.orig_weight {
                e.new_weight = e.new_weight.clamp(BFQ_MIN_WEIGHT, BFQ_MAX_WEIGHT);
                e.orig_weight = e.new_weight;
            }
            if update_class_too {
                e.class = e.new_class;
            }
            if e.class == e.new_class {
                e.prio_changed = false;
            }
        }
        let new = self.ents[id].class;
        let prev_weight = self.ents[id].weight;
        let new_weight = self.ents[id].orig_weight * self.ents[id].wr_coeff;
        if prev_weight != new_weight {
            self.weights_tree_remove(id);
        }
        self.ents[id].weight = new_weight;
        if prev_weight != new_weight && self.ents[id].wr_coeff == 1 {
            self.weights_tree_add(id);
        }
        self.st[new].wsum += new_weight as u64;
        if new != old {
            self.ents[id].start = self.st[new].vtime;
        }
        new
    }

    /// `bfq_update_fin_time_enqueue`.
    fn update_fin_time_enqueue(&mut self, id: EntityId, backshifted: bool) {
        let c = self.update_weight_prio(id, true);
        let budget = self.ents[id].budget;
        self.calc_finish(id, budget);
        let vt = self.st[c].vtime;
        if backshifted && bfq_gt(vt, self.ents[id].finish) {
            let e = &mut self.ents[id];
            let delta = vt.wrapping_sub(e.finish) / e.wr_coeff.max(1) as u64;
            e.start = e.start.wrapping_add(delta);
            e.finish = e.finish.wrapping_add(delta);
        }
        self.active_insert(c, id);
    }

    /// `__bfq_activate_entity`.
    fn activate_entity(&mut self, id: EntityId, non_blocking_wait_rq: bool) {
        let c = self.st_of(id);
        let vt = self.st[c].vtime;
        let mut backshifted = false;
        let min_vstart = if non_blocking_wait_rq && bfq_gt(vt, self.ents[id].finish) {
            backshifted = true;
            self.ents[id].finish
        } else {
            vt
        };
        if self.ents[id].tree == Some(TreeKind::Idle) {
            self.idle_extract(c, id);
            let f = self.ents[id].finish;
            self.ents[id].start = if bfq_gt(min_vstart, f) { min_vstart } else { f };
        } else {
            self.ents[id].start = min_vstart;
            self.st[c].wsum += self.ents[id].weight as u64;
            self.ents[id].on_st_or_in_serv = true;
        }
        self.update_fin_time_enqueue(id, backshifted);
    }

    /// `__bfq_requeue_entity`.
    fn requeue_entity(&mut self, id: EntityId) {
        let c = self.st_of(id);
        if self.in_service_entity == Some(id) {
            let s = self.ents[id].service;
            self.calc_finish(id, s);
            self.ents[id].start = self.ents[id].finish;
            if self.ents[id].tree == Some(TreeKind::Active) {
                self.active_extract(c, id);
            }
        } else if self.ents[id].tree == Some(TreeKind::Active) {
            self.active_extract(c, id);
        }
        self.update_fin_time_enqueue(id, false);
    }

    /// `bfq_activate_requeue_entity` (one level).
    pub fn activate_requeue_entity(
        &mut self,
        id: EntityId,
        non_blocking_wait_rq: bool,
        _requeue: bool,
        expiration: bool,
        jiffies: u64,
    ) {
        // __bfq_activate_requeue_entity
        if self.in_service_entity == Some(id) || self.ents[id].tree == Some(TreeKind::Active) {
            self.requeue_entity(id);
        } else {
            self.activate_entity(id, non_blocking_wait_rq);
        }
        // At the root there is no parent to propagate to.
        let _ = self.update_next_in_service(Some(id), expiration, jiffies);
    }

    /// `__bfq_deactivate_entity`. Returns false if the entity was not on a tree.
    fn deactivate_entity_inner(&mut self, id: EntityId, ins_into_idle_tree: bool) -> bool {
        if !self.ents[id].on_st_or_in_serv {
            return false;
        }
        let c = self.st_of(id);
        let is_in_service = self.in_service_entity == Some(id);
        let s = self.ents[id].service;
        self.calc_finish(id, s);
        if is_in_service {
            self.in_service_entity = None;
        } else {
            self.ents[id].service = 0;
        }
        match self.ents[id].tree {
            Some(TreeKind::Active) => self.active_extract(c, id),
            Some(TreeKind::Idle) if !is_in_service => self.idle_extract(c, id),
            _ => {}
        }
        if !ins_into_idle_tree || !bfq_gt(self.ents[id].finish, self.st[c].vtime) {
            self.forget_entity(c, id);
        } else {
            self.idle_insert(c, id);
        }
        true
    }

    /// `bfq_deactivate_entity` (one level).
    pub fn deactivate_entity(
        &mut self,
        id: EntityId,
        ins_into_idle_tree: bool,
        expiration: bool,
        jiffies: u64,
    ) {
        if !self.deactivate_entity_inner(id, ins_into_idle_tree) {
            return;
        }
        if self.next_in_service == Some(id) {
            self.update_next_in_service(None, expiration, jiffies);
        }
        // The root level has no parent entity to deactivate or requeue.
    }

    /// `bfq_bfqq_served` (the B-WF2Q+ part): charge `served` sectors.
    pub fn served(&mut self, id: EntityId, served: i64) {
        let c = self.st_of(id);
        self.ents[id].service += served;
        let wsum = self.st[c].wsum;
        self.st[c].vtime = self.st[c]
            .vtime
            .wrapping_add(bfq_delta(served.max(0) as u64, wsum));
        self.forget_idle(c);
    }

    /// `bfq_get_next_queue` (after the caller checked there are busy queues): make
    /// `next_in_service` the in-service entity and look up the next candidate.
    pub fn get_next_entity(&mut self, jiffies: u64) -> Option<EntityId> {
        let id = self.next_in_service?;
        self.in_service_entity = Some(id);
        // bfq_no_longer_next_in_service: always true for a queue.
        let c = self.st_of(id);
        if bfq_gt(self.ents[id].start, self.calc_vtime_jump(c)) {
            self.ineligible_selections += 1;
        }
        if self.ents[id].tree == Some(TreeKind::Active) {
            self.active_extract(c, id);
        }
        self.update_next_in_service(None, false, jiffies);
        Some(id)
    }

    /// `__bfq_bfqd_reset_in_service` (the scheduling part).
    pub fn reset_in_service(&mut self) {
        self.in_service_entity = None;
    }
}
