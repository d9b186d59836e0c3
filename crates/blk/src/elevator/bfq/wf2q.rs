//! B-WF2Q+ (`block/bfq-wf2q.c`): entities, service trees, virtual time, and the
//! group hierarchy they form.
//!
//! Every group (`struct bfq_group`, [`Group`]) owns one scheduling level
//! (`struct bfq_sched_data`, [`SchedData`]) with three per-class service trees (RT,
//! BE, IDLE). A level schedules the entities of its children: queues and sub-groups.
//! A non-root group is itself scheduled, through its own entity, in its parent's
//! level (always in the BE tree); the root group has no entity. A queue in `/a/b` is
//! therefore reached from the root by picking `a`'s entity at the root level, then
//! `b`'s in `a`'s level, then the queue in `b`'s level (`bfq_get_next_queue`).
//!
//! The walks the kernel writes with `for_each_entity` go up the `sched_data` links:
//! an entity's level is the one of the group it belongs to ([`Entity::sched_data`]),
//! and that group's entity is the next one up. With only the root group every walk
//! runs exactly one iteration, which keeps the flat scheduler bit-identical.
//!
//! Entities are named by [`EntityId`] (a queue index or a group index). Trees are
//! ordered sets keyed by `(finish, insertion sequence)`: equal finish times go to the
//! right, as `bfq_insert` does, so an in-order walk visits entities in the same order
//! as the kernel's rb-tree. `min_start` (the augmented-tree field) is computed on
//! demand; `bfq_first_active_entity` returns the leftmost eligible entity, which is
//! what the kernel's augmented descent returns.
//!
//! The queue-weights tree (`bfqd->queue_weights_tree`, `bfq_weights_tree_add/remove`)
//! lives here as well, because `__bfq_entity_update_weight_prio` updates it. Group
//! entities are never in it (v6.13 keeps no group weights tree).

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
/// `BFQ_WEIGHT_LEGACY_DFL`: the default weight of a group.
pub const BFQ_WEIGHT_LEGACY_DFL: u32 = 100;

/// Index of a queue's entity (= index of its queue).
pub type QueueEntity = usize;
/// Index of a group; [`ROOT_GROUP`] is the root.
pub type GroupId = usize;
/// The root group (`bfqd->root_group`).
pub const ROOT_GROUP: GroupId = 0;

/// An entity B-WF2Q+ schedules: a queue's or a non-root group's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityId {
    /// `&bfqq->entity`.
    Queue(QueueEntity),
    /// `&bfqg->entity` (never the root group's).
    Group(GroupId),
}

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
    /// Budget (sectors). For a group: the budget of its `next_in_service` child.
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
    /// Current class index (`bfqq->ioprio_class - 1`; BE for groups).
    pub class: usize,
    /// Pending class index (`new_ioprio_class - 1`).
    pub new_class: usize,
    /// `bfqq->wr_coeff` (1 for groups).
    pub wr_coeff: u32,
    /// `on_st_or_in_serv`.
    pub on_st_or_in_serv: bool,
    /// Tree membership.
    pub tree: Option<TreeKind>,
    /// `entity->sched_data`: the group whose level schedules this entity.
    pub sched_data: GroupId,
    /// Key under which the entity sits in its tree.
    key: (u64, u64),
    /// `bfqq->weight_counter`: the weight it is counted under in the weights tree.
    pub weight_counter: Option<u32>,
}

impl Entity {
    /// `bfq_init_entity` for a queue of the root group whose first ioprio data is
    /// `weight`/`class` (`prio_changed` stays set, as `bfq_set_next_ioprio_data`
    /// leaves it).
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
            sched_data: ROOT_GROUP,
            key: (0, 0),
            weight_counter: None,
        }
    }

    /// The same entity, scheduled in group `g`'s level.
    pub fn in_group(mut self, g: GroupId) -> Entity {
        self.sched_data = g;
        self
    }

    /// A group's entity (`bfq_pd_init`): weight from the cgroup, class BE
    /// (`BFQ_DEFAULT_GRP_CLASS`), no pending change.
    fn group(weight: u32, parent: GroupId) -> Entity {
        Entity {
            prio_changed: false,
            ..Entity::new(weight.clamp(BFQ_MIN_WEIGHT, BFQ_MAX_WEIGHT), CLASS_BE)
        }
        .in_group(parent)
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

/// `struct bfq_sched_data`: one scheduling level.
#[derive(Clone, Debug, Default)]
pub struct SchedData {
    /// RT, BE, IDLE service trees.
    pub st: [ServiceTree; BFQ_IOPRIO_CLASSES],
    /// `in_service_entity`.
    pub in_service_entity: Option<EntityId>,
    /// `next_in_service`.
    pub next_in_service: Option<EntityId>,
    /// `bfq_class_idle_last_service` (jiffies).
    pub class_idle_last_service: u64,
}

/// The scheduling side of `struct bfq_group`.
#[derive(Clone, Debug)]
pub struct Group {
    /// `bfqg->entity`; the root group's is never scheduled (`my_entity == NULL`).
    pub entity: Entity,
    /// `bfqg->sched_data`: the level of its children.
    pub sd: SchedData,
    /// Parent group (`None` for the root).
    pub parent: Option<GroupId>,
    /// `active_entities`: children on an active tree (not counted for the root).
    pub active_entities: u32,
    /// `num_queues_with_pending_reqs` (≥ 6.2 counting).
    pub num_queues_with_pending_reqs: u32,
    /// `entity.in_groups_with_pending_reqs` as ≤ 6.1 used it on group entities.
    pub legacy_pending: bool,
}

/// The B-WF2Q+ hierarchy: every group's level and every entity.
#[derive(Clone, Debug)]
pub struct Wf2q {
    /// Queue entities, indexed by queue id.
    pub ents: Vec<Entity>,
    /// Groups; index 0 is the root group.
    pub groups: Vec<Group>,
    /// `BFQ_CL_IDLE_TIMEOUT` in jiffies (`HZ / 5`).
    pub cl_idle_timeout: u64,
    /// `queue_weights_tree`: weight → `num_active`.
    pub weights: BTreeMap<u32, u32>,
    /// `bfqd->active_list`: queues on an active tree, most recently inserted first
    /// (the scan order of `bfq_choose_bfqq_for_injection`).
    pub active_list: VecDeque<QueueEntity>,
    /// `num_groups_with_pending_reqs` as ≤ 6.1 counted it: non-root group entities
    /// flagged at activation (`__bfq_activate_entity`), cleared by
    /// [`Wf2q::legacy_weights_tree_remove`].
    pub legacy_groups_with_pending_reqs: u32,
    seq: u64,
    /// Diagnostics: times `bfq_forget_idle` lowered a tree's `vtime` (the kernel
    /// quirk, the only way `vtime` goes back).
    pub vtime_lowered: u64,
    /// Diagnostics: entities set in service while not eligible
    /// (`start > max(vtime, min_start)`); B-WF2Q+ must keep this at 0.
    pub ineligible_selections: u64,
}

impl Wf2q {
    /// A hierarchy with only the root group; `jiffies` is the init time
    /// (`bfq_init_root_group`).
    pub fn new(hz: u32, jiffies: u64) -> Wf2q {
        let root = Group {
            entity: Entity::group(BFQ_WEIGHT_LEGACY_DFL, ROOT_GROUP),
            sd: SchedData {
                class_idle_last_service: jiffies,
                ..SchedData::default()
            },
            parent: None,
            active_entities: 0,
            num_queues_with_pending_reqs: 0,
            legacy_pending: false,
        };
        Wf2q {
            ents: Vec::new(),
            groups: vec![root],
            cl_idle_timeout: (hz / 5) as u64,
            weights: BTreeMap::new(),
            active_list: VecDeque::new(),
            legacy_groups_with_pending_reqs: 0,
            seq: 0,
            vtime_lowered: 0,
            ineligible_selections: 0,
        }
    }

    /// The root group's level.
    pub fn root(&self) -> &SchedData {
        &self.groups[ROOT_GROUP].sd
    }

    /// `bfq_create_group_hierarchy`/`bfq_pd_init` + `bfq_group_set_parent`: a new
    /// group of weight `weight` under `parent`.
    pub fn add_group(&mut self, parent: GroupId, weight: u32) -> GroupId {
        self.groups.push(Group {
            entity: Entity::group(weight, parent),
            // kzalloc'ed: bfq_class_idle_last_service starts at 0.
            sd: SchedData::default(),
            parent: Some(parent),
            active_entities: 0,
            num_queues_with_pending_reqs: 0,
            legacy_pending: false,
        });
        self.groups.len() - 1
    }

    /// `bfqq_group`: the group a queue belongs to.
    pub fn group_of(&self, q: QueueEntity) -> GroupId {
        self.ents[q].sched_data
    }

    fn e(&self, id: EntityId) -> &Entity {
        match id {
            EntityId::Queue(q) => &self.ents[q],
            EntityId::Group(g) => &self.groups[g].entity,
        }
    }

    fn e_mut(&mut self, id: EntityId) -> &mut Entity {
        match id {
            EntityId::Queue(q) => &mut self.ents[q],
            EntityId::Group(g) => &mut self.groups[g].entity,
        }
    }

    /// `entity->parent`: the entity of the group the entity belongs to, `None` at
    /// the root level.
    fn parent(&self, id: EntityId) -> Option<EntityId> {
        match self.e(id).sched_data {
            ROOT_GROUP => None,
            g => Some(EntityId::Group(g)),
        }
    }

    /// `entity->sched_data`.
    fn sd(&self, id: EntityId) -> &SchedData {
        &self.groups[self.e(id).sched_data].sd
    }

    fn sd_mut(&mut self, g: GroupId) -> &mut SchedData {
        &mut self.groups[g].sd
    }

    /// `bfq_entity_service_tree`: (group, class index) of an entity's tree.
    fn st_of(&self, id: EntityId) -> (GroupId, usize) {
        let e = self.e(id);
        (e.sched_data, e.class)
    }

    fn st(&self, (g, c): (GroupId, usize)) -> &ServiceTree {
        &self.groups[g].sd.st[c]
    }

    fn st_mut(&mut self, (g, c): (GroupId, usize)) -> &mut ServiceTree {
        &mut self.groups[g].sd.st[c]
    }

    /// `bfq_calc_finish`.
    fn calc_finish(&mut self, id: EntityId, service: i64) {
        let e = self.e_mut(id);
        e.finish = e
            .start
            .wrapping_add(bfq_delta(service.max(0) as u64, e.weight as u64));
    }

    fn next_key(&mut self, id: EntityId) -> (u64, u64) {
        self.seq += 1;
        let seq = self.seq;
        let e = self.e_mut(id);
        e.key = (e.finish, seq);
        e.key
    }

    /// `bfq_active_insert`.
    fn active_insert(&mut self, id: EntityId) {
        let k = self.next_key(id);
        let st = self.st_of(id);
        self.st_mut(st).active.insert((k.0, k.1, id));
        self.e_mut(id).tree = Some(TreeKind::Active);
        if let EntityId::Queue(q) = id {
            // list_add(&bfqq->bfqq_list, &bfqd->active_list)
            self.active_list.push_front(q);
        }
        if st.0 != ROOT_GROUP {
            self.groups[st.0].active_entities += 1;
        }
    }

    /// `bfq_active_extract`.
    fn active_extract(&mut self, id: EntityId) {
        let k = self.e(id).key;
        let st = self.st_of(id);
        let removed = self.st_mut(st).active.remove(&(k.0, k.1, id));
        debug_assert!(removed, "active_extract of an entity not on the tree");
        self.e_mut(id).tree = None;
        if let EntityId::Queue(q) = id {
            if let Some(pos) = self.active_list.iter().position(|&x| x == q) {
                self.active_list.remove(pos);
            }
        }
        if st.0 != ROOT_GROUP {
            self.groups[st.0].active_entities -= 1;
        }
    }

    /// `bfq_idle_insert`.
    fn idle_insert(&mut self, id: EntityId) {
        let k = self.next_key(id);
        let finish = self.e(id).finish;
        let sti = self.st_of(id);
        let st = self.st(sti);
        let new_first = st
            .first_idle
            .is_none_or(|f| bfq_gt(self.e(f).finish, finish));
        let new_last = st
            .last_idle
            .is_none_or(|l| bfq_gt(finish, self.e(l).finish));
        let st = self.st_mut(sti);
        if new_first {
            st.first_idle = Some(id);
        }
        if new_last {
            st.last_idle = Some(id);
        }
        st.idle.insert((k.0, k.1, id));
        self.e_mut(id).tree = Some(TreeKind::Idle);
    }

    /// `bfq_idle_extract`: `first_idle` moves to the in-order successor and
    /// `last_idle` to the predecessor, as `rb_next`/`rb_prev` do.
    fn idle_extract(&mut self, id: EntityId) {
        let k = self.e(id).key;
        let key = (k.0, k.1, id);
        let sti = self.st_of(id);
        let st = self.st_mut(sti);
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
        self.e_mut(id).tree = None;
    }

    /// `bfq_forget_entity`.
    fn forget_entity(&mut self, id: EntityId) {
        self.e_mut(id).on_st_or_in_serv = false;
        let w = self.e(id).weight as u64;
        let st = self.st_of(id);
        self.st_mut(st).wsum -= w;
    }

    /// `bfq_put_idle_entity`.
    fn put_idle_entity(&mut self, id: EntityId) {
        self.idle_extract(id);
        self.forget_entity(id);
    }

    /// `bfq_forget_idle`. Quirk kept: the "jump" to `last_idle.finish` can only lower
    /// or keep `vtime`.
    fn forget_idle(&mut self, sti: (GroupId, usize)) {
        let st = self.st(sti);
        let (first, last, vtime) = (st.first_idle, st.last_idle, st.vtime);
        if st.active.is_empty() {
            if let Some(l) = last {
                let lf = self.e(l).finish;
                if !bfq_gt(lf, vtime) {
                    if lf != vtime {
                        self.vtime_lowered += 1;
                    }
                    self.st_mut(sti).vtime = lf;
                }
            }
        }
        if let Some(f) = first {
            if !bfq_gt(self.e(f).finish, self.st(sti).vtime) {
                self.put_idle_entity(f);
            }
        }
    }

    /// Smallest `start` on an active tree (the tree root's `min_start`).
    pub fn min_start(&self, g: GroupId, c: usize) -> Option<u64> {
        self.groups[g].sd.st[c]
            .active
            .iter()
            .map(|k| self.e(k.2).start)
            .reduce(|a, b| if bfq_gt(a, b) { b } else { a })
    }

    /// `bfq_calc_vtime_jump`.
    fn calc_vtime_jump(&self, sti: (GroupId, usize)) -> u64 {
        let v = self.st(sti).vtime;
        match self.min_start(sti.0, sti.1) {
            Some(m) if bfq_gt(m, v) => m,
            _ => v,
        }
    }

    /// `bfq_update_vtime`.
    fn update_vtime(&mut self, sti: (GroupId, usize), new_value: u64) {
        if bfq_gt(new_value, self.st(sti).vtime) {
            self.st_mut(sti).vtime = new_value;
            self.forget_idle(sti);
        }
    }

    /// `bfq_first_active_entity`: the leftmost (smallest finish) entity of group
    /// `g`'s class-`c` tree with `start <= vtime`.
    pub fn first_active_entity(&self, g: GroupId, c: usize, vtime: u64) -> Option<EntityId> {
        self.groups[g].sd.st[c]
            .active
            .iter()
            .map(|k| k.2)
            .find(|&id| !bfq_gt(self.e(id).start, vtime))
    }

    /// `__bfq_lookup_next_entity`.
    fn lookup_next_entity_in(
        &mut self,
        sti: (GroupId, usize),
        in_service: bool,
    ) -> Option<EntityId> {
        if self.st(sti).active.is_empty() {
            return None;
        }
        let new_vtime = self.calc_vtime_jump(sti);
        if !in_service {
            self.update_vtime(sti, new_vtime);
        }
        self.first_active_entity(sti.0, sti.1, new_vtime)
    }

    /// `bfq_lookup_next_entity`: class precedence plus the idle-class
    /// anti-starvation turn every `BFQ_CL_IDLE_TIMEOUT`.
    fn lookup_next_entity(
        &mut self,
        g: GroupId,
        expiration: bool,
        jiffies: u64,
    ) -> Option<EntityId> {
        let mut class_idx = 0;
        let timeout = self.cl_idle_timeout;
        let sd = self.sd_mut(g);
        // time_is_before_jiffies(last + timeout)
        if ((jiffies.wrapping_sub(sd.class_idle_last_service.wrapping_add(timeout))) as i64) > 0 {
            if !sd.st[CLASS_IDLE].active.is_empty() {
                class_idx = CLASS_IDLE;
            }
            sd.class_idle_last_service = jiffies;
        }
        let in_service = sd.in_service_entity.is_some() && !expiration;
        (class_idx..BFQ_IOPRIO_CLASSES).find_map(|c| self.lookup_next_entity_in((g, c), in_service))
    }

    /// `bfq_update_parent_budget`: a group's budget follows its `next_in_service`
    /// child (the root group has no entity). Returns whether it decreased.
    fn update_parent_budget(&mut self, g: GroupId, next: EntityId) -> bool {
        if g == ROOT_GROUP {
            return false;
        }
        let nb = self.e(next).budget;
        let ge = &mut self.groups[g].entity;
        let decreased = ge.budget > nb;
        ge.budget = nb;
        decreased
    }

    /// `bfq_update_next_in_service` for group `g`'s level. Returns "the parent's
    /// schedule may change".
    pub fn update_next_in_service(
        &mut self,
        g: GroupId,
        new_entity: Option<EntityId>,
        expiration: bool,
        jiffies: u64,
    ) -> bool {
        let cur = self.groups[g].sd.next_in_service;
        let mut next = cur;
        let mut change_without_lookup = false;
        if let Some(ne) = new_entity {
            if Some(ne) != cur {
                change_without_lookup = true;
                if let Some(cur) = cur {
                    let c = self.e(ne).class;
                    change_without_lookup = c == self.e(cur).class
                        && !bfq_gt(self.e(ne).start, self.groups[g].sd.st[c].vtime)
                        && bfq_gt(self.e(cur).finish, self.e(ne).finish);
                }
                if change_without_lookup {
                    next = Some(ne);
                }
            }
        }
        if !change_without_lookup {
            next = self.lookup_next_entity(g, expiration, jiffies);
        }
        let mut parent_may_change = false;
        if let Some(n) = next {
            let budget_change = self.update_parent_budget(g, n);
            parent_may_change = cur.is_none() || budget_change;
        }
        self.groups[g].sd.next_in_service = next;
        parent_may_change
    }

    /// `bfq_weights_tree_add`.
    pub fn weights_tree_add(&mut self, q: QueueEntity) {
        if self.ents[q].weight_counter.is_some() {
            return;
        }
        let w = self.ents[q].weight;
        *self.weights.entry(w).or_insert(0) += 1;
        self.ents[q].weight_counter = Some(w);
    }

    /// `bfq_weights_tree_remove` (the `__` variant of older kernels).
    pub fn weights_tree_remove(&mut self, q: QueueEntity) {
        let Some(w) = self.ents[q].weight_counter.take() else {
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

    /// The group-walking half of ≤ 6.1's `bfq_weights_tree_remove`, called where
    /// queue `q` stops having queued or in-flight requests: from `q`'s group upward,
    /// unflag (and uncount) every group that is no longer active, stopping at the
    /// first one whose level still has a `next_in_service` or an
    /// `in_service_entity`.
    pub fn legacy_weights_tree_remove(&mut self, q: QueueEntity) {
        let mut g = self.ents[q].sched_data;
        while g != ROOT_GROUP {
            let sd = &self.groups[g].sd;
            if sd.next_in_service.is_some() || sd.in_service_entity.is_some() {
                break;
            }
            if std::mem::take(&mut self.groups[g].legacy_pending) {
                self.legacy_groups_with_pending_reqs -= 1;
            }
            g = self.groups[g].parent.unwrap_or(ROOT_GROUP);
        }
    }

    /// `__bfq_entity_update_weight_prio` for a queue (used when raising starts or
    /// ends on a queue that may be on a tree: the class is not touched).
    pub fn update_weight_prio(&mut self, q: QueueEntity, update_class_too: bool) -> usize {
        self.update_weight_prio_of(EntityId::Queue(q), update_class_too)
    }

    /// `__bfq_entity_update_weight_prio`: apply a pending weight/class change,
    /// moving `wsum` and the weights-tree membership. Returns the new tree's class.
    fn update_weight_prio_of(&mut self, id: EntityId, update_class_too: bool) -> usize {
        let (g, old) = self.st_of(id);
        if !self.e(id).prio_changed {
            return old;
        }
        let w = self.e(id).weight as u64;
        self.groups[g].sd.st[old].wsum -= w;
        {
            let e = self.e_mut(id);
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
        let new = self.e(id).class;
        let prev_weight = self.e(id).weight;
        let new_weight = self.e(id).orig_weight * self.e(id).wr_coeff;
        let queue = match id {
            EntityId::Queue(q) => Some(q),
            EntityId::Group(_) => None,
        };
        if let (true, Some(q)) = (prev_weight != new_weight, queue) {
            self.weights_tree_remove(q);
        }
        self.e_mut(id).weight = new_weight;
        if let (true, Some(q)) = (prev_weight != new_weight, queue) {
            if self.ents[q].wr_coeff == 1 {
                self.weights_tree_add(q);
            }
        }
        self.groups[g].sd.st[new].wsum += new_weight as u64;
        if new != old {
            let vt = self.groups[g].sd.st[new].vtime;
            self.e_mut(id).start = vt;
        }
        new
    }

    /// `bfq_update_fin_time_enqueue`.
    fn update_fin_time_enqueue(&mut self, id: EntityId, backshifted: bool) {
        let c = self.update_weight_prio_of(id, true);
        let g = self.e(id).sched_data;
        let budget = self.e(id).budget;
        self.calc_finish(id, budget);
        let vt = self.groups[g].sd.st[c].vtime;
        let e = self.e_mut(id);
        if backshifted && bfq_gt(vt, e.finish) {
            // Only queues carry a raising coefficient (1 for groups).
            let delta = vt.wrapping_sub(e.finish) / e.wr_coeff.max(1) as u64;
            e.start = e.start.wrapping_add(delta);
            e.finish = e.finish.wrapping_add(delta);
        }
        self.active_insert(id);
    }

    /// `__bfq_activate_entity`. For a group entity, ≤ 6.1 also counted the group
    /// as having pending requests here; both countings are kept (the variant
    /// decides which one `bfq_asymmetric_scenario` reads).
    fn activate_entity(&mut self, id: EntityId, non_blocking_wait_rq: bool) {
        let sti = self.st_of(id);
        let vt = self.st(sti).vtime;
        let mut backshifted = false;
        let min_vstart = if non_blocking_wait_rq && bfq_gt(vt, self.e(id).finish) {
            backshifted = true;
            self.e(id).finish
        } else {
            vt
        };
        if self.e(id).tree == Some(TreeKind::Idle) {
            self.idle_extract(id);
            let e = self.e_mut(id);
            e.start = if bfq_gt(min_vstart, e.finish) {
                min_vstart
            } else {
                e.finish
            };
        } else {
            let w = self.e(id).weight as u64;
            self.st_mut(sti).wsum += w;
            let e = self.e_mut(id);
            e.start = min_vstart;
            e.on_st_or_in_serv = true;
        }
        if let EntityId::Group(g) = id {
            if !self.groups[g].legacy_pending {
                self.groups[g].legacy_pending = true;
                self.legacy_groups_with_pending_reqs += 1;
            }
        }
        self.update_fin_time_enqueue(id, backshifted);
    }

    /// `__bfq_requeue_entity`.
    fn requeue_entity(&mut self, id: EntityId) {
        if self.sd(id).in_service_entity == Some(id) {
            let s = self.e(id).service;
            self.calc_finish(id, s);
            let e = self.e_mut(id);
            e.start = e.finish;
            if e.tree == Some(TreeKind::Active) {
                self.active_extract(id);
            }
        } else if self.e(id).tree == Some(TreeKind::Active) {
            self.active_extract(id);
        }
        self.update_fin_time_enqueue(id, false);
    }

    /// `bfq_activate_requeue_entity`: activate or requeue queue `q`, then each
    /// ancestor whose schedule may change (all of them when `requeue`).
    pub fn activate_requeue_entity(
        &mut self,
        q: QueueEntity,
        non_blocking_wait_rq: bool,
        requeue: bool,
        expiration: bool,
        jiffies: u64,
    ) {
        let mut cur = Some(EntityId::Queue(q));
        while let Some(id) = cur {
            // __bfq_activate_requeue_entity
            if self.sd(id).in_service_entity == Some(id)
                || self.e(id).tree == Some(TreeKind::Active)
            {
                self.requeue_entity(id);
            } else {
                self.activate_entity(id, non_blocking_wait_rq);
            }
            let g = self.e(id).sched_data;
            if !self.update_next_in_service(g, Some(id), expiration, jiffies) && !requeue {
                break;
            }
            cur = self.parent(id);
        }
    }

    /// `__bfq_deactivate_entity`. Returns false if the entity was not on a tree.
    fn deactivate_entity_inner(&mut self, id: EntityId, ins_into_idle_tree: bool) -> bool {
        if !self.e(id).on_st_or_in_serv {
            return false;
        }
        let sti = self.st_of(id);
        let is_in_service = self.sd(id).in_service_entity == Some(id);
        let s = self.e(id).service;
        self.calc_finish(id, s);
        if is_in_service {
            self.sd_mut(sti.0).in_service_entity = None;
        } else {
            self.e_mut(id).service = 0;
        }
        match self.e(id).tree {
            Some(TreeKind::Active) => self.active_extract(id),
            Some(TreeKind::Idle) if !is_in_service => self.idle_extract(id),
            _ => {}
        }
        if !ins_into_idle_tree || !bfq_gt(self.e(id).finish, self.st(sti).vtime) {
            self.forget_entity(id);
        } else {
            self.idle_insert(id);
        }
        true
    }

    /// `bfq_deactivate_entity`: deactivate queue `q`, and each ancestor left with
    /// nothing to schedule; then requeue the still-active ancestors, whose budgets
    /// may have changed.
    pub fn deactivate_entity(
        &mut self,
        q: QueueEntity,
        mut ins_into_idle_tree: bool,
        expiration: bool,
        jiffies: u64,
    ) {
        let mut cur = Some(EntityId::Queue(q));
        let mut still_active = None;
        while let Some(id) = cur {
            let g = self.e(id).sched_data;
            if !self.deactivate_entity_inner(id, ins_into_idle_tree) {
                return;
            }
            if self.groups[g].sd.next_in_service == Some(id) {
                self.update_next_in_service(g, None, expiration, jiffies);
            }
            let sd = &self.groups[g].sd;
            if sd.next_in_service.is_some() || sd.in_service_entity.is_some() {
                still_active = self.parent(id);
                break;
            }
            ins_into_idle_tree = true;
            cur = self.parent(id);
        }
        let mut cur = still_active;
        while let Some(id) = cur {
            self.requeue_entity(id);
            let g = self.e(id).sched_data;
            if !self.update_next_in_service(g, Some(id), expiration, jiffies) && !expiration {
                break;
            }
            cur = self.parent(id);
        }
    }

    /// `bfq_bfqq_served` (the B-WF2Q+ part): charge `served` sectors to queue `q`
    /// and every ancestor group, advancing each level's virtual time.
    pub fn served(&mut self, q: QueueEntity, served: i64) {
        let mut cur = Some(EntityId::Queue(q));
        while let Some(id) = cur {
            let sti = self.st_of(id);
            self.e_mut(id).service += served;
            let st = self.st_mut(sti);
            st.vtime = st
                .vtime
                .wrapping_add(bfq_delta(served.max(0) as u64, st.wsum));
            self.forget_idle(sti);
            cur = self.parent(id);
        }
    }

    /// Reset the received service of every ancestor group of `q` (the end of
    /// `bfq_bfqq_expire`: never postponed for parents).
    pub fn reset_parents_service(&mut self, q: QueueEntity) {
        let mut cur = self.parent(EntityId::Queue(q));
        while let Some(id) = cur {
            self.e_mut(id).service = 0;
            cur = self.parent(id);
        }
    }

    /// `bfq_put_idle_entity` for queue `q` if it sits on its idle tree (a queue
    /// leaving its group while not busy).
    pub fn put_idle_queue(&mut self, q: QueueEntity) {
        if self.ents[q].tree == Some(TreeKind::Idle) {
            self.put_idle_entity(EntityId::Queue(q));
        }
    }

    /// `bfq_no_longer_next_in_service`: a queue always; a group only if it has a
    /// single active child.
    fn no_longer_next_in_service(&self, id: EntityId) -> bool {
        match id {
            EntityId::Queue(_) => true,
            EntityId::Group(g) => self.groups[g].active_entities == 1,
        }
    }

    /// `bfq_get_next_queue` (after the caller checked there are busy queues): walk
    /// down from the root making each level's `next_in_service` its in-service
    /// entity, then look up the next candidates from the chosen queue upward.
    pub fn get_next_entity(&mut self, jiffies: u64) -> Option<QueueEntity> {
        let mut g = ROOT_GROUP;
        let q = loop {
            let id = self.groups[g].sd.next_in_service?;
            self.groups[g].sd.in_service_entity = Some(id);
            let sti = self.st_of(id);
            if bfq_gt(self.e(id).start, self.calc_vtime_jump(sti)) {
                self.ineligible_selections += 1;
            }
            if self.no_longer_next_in_service(id) && self.e(id).tree == Some(TreeKind::Active) {
                self.active_extract(id);
            }
            match id {
                EntityId::Queue(q) => break q,
                EntityId::Group(child) => g = child,
            }
        };
        let mut cur = Some(EntityId::Queue(q));
        while let Some(id) = cur {
            let g = self.e(id).sched_data;
            if !self.update_next_in_service(g, None, false, jiffies) {
                break;
            }
            cur = self.parent(id);
        }
        Some(q)
    }

    /// Replay support: make `q` (and its ancestor groups) the `next_in_service` of
    /// every level of its path, so that the next [`Wf2q::get_next_entity`] selects
    /// it, as the kernel's own selection did. `q` must be active (busy).
    pub fn force_next_in_service(&mut self, q: QueueEntity) {
        let mut id = EntityId::Queue(q);
        loop {
            let g = self.e(id).sched_data;
            self.update_parent_budget(g, id);
            self.groups[g].sd.next_in_service = Some(id);
            match self.parent(id) {
                Some(p) => id = p,
                None => break,
            }
        }
    }

    /// `__bfq_bfqd_reset_in_service` (the scheduling part): clear
    /// `in_service_entity` on every level of `q`'s path.
    pub fn reset_in_service(&mut self, q: Option<QueueEntity>) {
        let Some(q) = q else {
            self.groups[ROOT_GROUP].sd.in_service_entity = None;
            return;
        };
        let mut cur = Some(EntityId::Queue(q));
        while let Some(id) = cur {
            let g = self.e(id).sched_data;
            self.groups[g].sd.in_service_entity = None;
            cur = self.parent(id);
        }
    }

    /// Sum of the weights of entities on a tree or in service, per level, against
    /// the levels' `wsum` (for invariant checks). Returns the first mismatch.
    pub fn check_wsum(&self) -> Result<(), String> {
        for (g, grp) in self.groups.iter().enumerate() {
            let want: u64 = self
                .ents
                .iter()
                .filter(|e| e.on_st_or_in_serv && e.sched_data == g)
                .chain(
                    self.groups
                        .iter()
                        .skip(1)
                        .map(|x| &x.entity)
                        .filter(|e| e.on_st_or_in_serv && e.sched_data == g),
                )
                .map(|e| e.weight as u64)
                .sum();
            let have: u64 = grp.sd.st.iter().map(|s| s.wsum).sum();
            if want != have {
                return Err(format!("group {g}: wsum {have} != {want}"));
            }
            let active = grp.sd.st.iter().map(|s| s.active.len()).sum::<usize>() as u32;
            if g != ROOT_GROUP && active != grp.active_entities {
                return Err(format!(
                    "group {g}: active_entities {} != {active}",
                    grp.active_entities
                ));
            }
        }
        Ok(())
    }
}
