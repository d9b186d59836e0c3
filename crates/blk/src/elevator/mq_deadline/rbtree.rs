//! Intrusive red-black trees over request ids: the sort trees of mq-deadline
//! (`elv_rb_add`, `elv_rb_del`, `rb_next`, `rb_prev`, `deadline_from_pos`).
//!
//! # Why not `BTreeMap`
//!
//! Each request costs mq-deadline one insert, one lower-bound lookup and one removal
//! in its level's sort tree. With `BTreeMap<(sector, seq), RqId>` those were the
//! largest share of the per-request cost: node allocation, key shuffling inside nodes
//! on insert and removal (`memcpy`), and a separate search for every lookup. A request
//! is in at most one sort tree at a time, so, as in the kernel (`rq->rb_node`), the
//! links can live with the request: one [`Node`] per request slot in a side table
//! indexed by [`RqId::index`](crate::request::RqId::index), and a tree is only its root
//! index. Nothing is allocated once the table has grown to the largest slot index,
//! removal is O(1) to locate (no search), and successor/predecessor walk parent links.
//!
//! # Order
//!
//! Keys are start sectors only. As in `elv_rb_add`, a new node goes to the *right*
//! of every node with an equal sector, so equal sectors stay in insertion order
//! without the explicit sequence number the `BTreeMap` key needed. Rotations never
//! change the in-order sequence, so that order is kept.
//!
//! The nodes are kept apart from the scheduler's other per-request data so that a
//! descent, which touches only `sector` and the child links of about log₂ n nodes,
//! reads as few cache lines as possible.
//!
//! # Alternatives measured
//!
//! On the steady-state benchmark (`blk::bench`), a descent is a chain of dependent
//! loads, so a tree's depth matters more than its instruction count. A treap (random
//! priorities, rotations only) executed a few percent fewer instructions and
//! mispredicted fewer branches, but its longer search paths (about 1.39 log₂ n) made
//! it about 10% slower per request than this red-black tree. A variant with a shared
//! null node and per-tree header nodes (no NIL tests in rotations) was no faster.

/// "No node": an empty subtree, the parent of a root, or an empty tree.
pub(super) const NIL: u32 = u32::MAX;

/// Index into [`Node::child`]. Code that is symmetric in the two sides (rotations,
/// rebalancing) takes the side as a value instead of being written twice, and the
/// descents pick a child by indexing with a comparison result instead of branching
/// on it (random sectors make that branch unpredictable).
const LEFT: usize = 0;
const RIGHT: usize = 1;

/// Links of one request slot. `parent` and `child` are slot indices or [`NIL`].
///
/// Aligned to 32 bytes (21 are used) so that no node straddles two cache lines: a
/// descent then costs one line per level. Measured about 5% faster per insert and
/// removal than the packed 24-byte layout, at 512 and at 8192 nodes.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Node {
    /// Sort key: the request's start sector when it was added.
    sector: u64,
    parent: u32,
    child: [u32; 2],
    red: bool,
}

impl Node {
    const EMPTY: Node = Node {
        sector: 0,
        parent: NIL,
        child: [NIL; 2],
        red: false,
    };
}

/// The node table shared by any number of trees, each named by its root index (a
/// `u32` the caller keeps, [`NIL`] when empty). A slot must be in at most one tree.
#[derive(Clone, Debug, Default)]
pub(super) struct Forest {
    nodes: Vec<Node>,
}

impl Forest {
    /// The key `id` was inserted with. `id` must be in a tree.
    #[inline]
    pub(super) fn sector(&self, id: u32) -> u64 {
        self.nodes[id as usize].sector
    }

    #[inline]
    fn red(&self, id: u32) -> bool {
        // NIL leaves are black.
        id != NIL && self.nodes[id as usize].red
    }

    #[inline]
    fn n(&mut self, id: u32) -> &mut Node {
        &mut self.nodes[id as usize]
    }

    /// Which side of its parent `id` hangs on. For `id == NIL` this is only right
    /// when the parent's other child is not NIL, as in `remove_fixup`.
    #[inline]
    fn side(&self, parent: u32, id: u32) -> usize {
        usize::from(self.nodes[parent as usize].child[LEFT] != id)
    }

    /// Insert `id` with key `sector` into the tree at `root`, to the right of every
    /// node with the same key (`elv_rb_add`).
    pub(super) fn insert(&mut self, root: &mut u32, id: u32, sector: u64) {
        if id as usize >= self.nodes.len() {
            self.nodes.resize(id as usize + 1, Node::EMPTY);
        }
        let mut parent = NIL;
        let mut cur = *root;
        let mut side = LEFT;
        // A descent is a chain of dependent loads, and in a large tree the lower
        // levels miss the L1 cache. Reading both children's keys while this level's
        // comparison is still pending starts the next level's miss one step early
        // (whichever child is taken). `black_box` keeps those loads from being
        // optimised away. Measured 3-6% faster per request at 1,024 and 16,384
        // queued; warming grandchildren as well was slower.
        let mut warm = 0u64;
        while cur != NIL {
            parent = cur;
            let n = &self.nodes[cur as usize];
            for c in n.child {
                warm ^= self.nodes.get(c as usize).map_or(0, |c| c.sector);
            }
            side = usize::from(sector >= n.sector);
            cur = n.child[side];
        }
        std::hint::black_box(warm);
        self.nodes[id as usize] = Node {
            sector,
            parent,
            child: [NIL; 2],
            red: true,
        };
        if parent == NIL {
            *root = id;
        } else {
            self.n(parent).child[side] = id;
        }
        self.insert_fixup(root, id);
    }

    fn insert_fixup(&mut self, root: &mut u32, mut z: u32) {
        loop {
            let mut p = self.nodes[z as usize].parent;
            if !self.red(p) {
                break;
            }
            // A red parent is never the root, so the grandparent exists.
            let g = self.nodes[p as usize].parent;
            let d = self.side(g, p);
            let u = self.nodes[g as usize].child[1 - d];
            if self.red(u) {
                self.n(p).red = false;
                self.n(u).red = false;
                self.n(g).red = true;
                z = g;
                continue;
            }
            if z == self.nodes[p as usize].child[1 - d] {
                self.rotate(root, p, d);
                z = p;
                p = self.nodes[z as usize].parent;
            }
            self.n(p).red = false;
            self.n(g).red = true;
            self.rotate(root, g, 1 - d);
            break;
        }
        let r = *root;
        self.n(r).red = false;
    }

    /// Make `new` take `old`'s place under `old`'s parent (or as the root).
    #[inline]
    fn replace_child(&mut self, root: &mut u32, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            *root = new;
        } else {
            let s = self.side(parent, old);
            self.n(parent).child[s] = new;
        }
    }

    /// Rotate `x` down to side `d`: its child on the other side takes its place
    /// (`d == LEFT` is the classic left rotation).
    #[inline]
    fn rotate(&mut self, root: &mut u32, x: u32, d: usize) {
        let y = self.nodes[x as usize].child[1 - d];
        let inner = self.nodes[y as usize].child[d];
        let xp = self.nodes[x as usize].parent;
        self.n(x).child[1 - d] = inner;
        if inner != NIL {
            self.n(inner).parent = x;
        }
        self.n(y).parent = xp;
        self.replace_child(root, xp, x, y);
        self.n(y).child[d] = x;
        self.n(x).parent = y;
    }

    /// Put subtree `v` (possibly empty) where `u` hangs.
    #[inline]
    fn transplant(&mut self, root: &mut u32, u: u32, v: u32) {
        let up = self.nodes[u as usize].parent;
        self.replace_child(root, up, u, v);
        if v != NIL {
            self.n(v).parent = up;
        }
    }

    /// Remove `z` from the tree at `root` (`elv_rb_del`). `z` must be in it.
    /// Returns the node that followed `z` in order (or [`NIL`]): the two-children
    /// case finds it anyway, and the dispatch cursor wants it.
    pub(super) fn remove(&mut self, root: &mut u32, z: u32) -> u32 {
        let Node {
            child: [zl, zr],
            red: z_red,
            ..
        } = self.nodes[z as usize];
        // `x` is the subtree that moved into the removed black node's place (maybe
        // empty, hence its parent `xp` is tracked separately).
        let (x, xp, removed_red, next);
        if zl == NIL || zr == NIL {
            // A single child of a red-black node is a red leaf, so if it is on the
            // right it is also z's successor; otherwise that is up the tree.
            next = if zr != NIL { zr } else { self.step(z, RIGHT) };
            x = if zl == NIL { zr } else { zl };
            (xp, removed_red) = (self.nodes[z as usize].parent, z_red);
            self.transplant(root, z, x);
        } else {
            // Two children: the in-order successor `y` (leftmost of the right
            // subtree, without a left child) takes z's place and colour.
            let mut y = zr;
            while self.nodes[y as usize].child[LEFT] != NIL {
                y = self.nodes[y as usize].child[LEFT];
            }
            let Node {
                child: [_, yr],
                parent: yp,
                red: y_red,
                ..
            } = self.nodes[y as usize];
            removed_red = y_red;
            next = y;
            x = yr;
            if yp == z {
                xp = y;
            } else {
                xp = yp;
                self.transplant(root, y, yr);
                self.n(y).child[RIGHT] = zr;
                self.n(zr).parent = y;
            }
            self.transplant(root, z, y);
            self.n(y).child[LEFT] = zl;
            self.n(zl).parent = y;
            self.n(y).red = z_red;
        }
        if !removed_red {
            self.remove_fixup(root, x, xp);
        }
        *self.n(z) = Node::EMPTY;
        next
    }

    fn remove_fixup(&mut self, root: &mut u32, mut x: u32, mut xp: u32) {
        while x != *root && !self.red(x) {
            // x carries an extra black, so its sibling w is never NIL (which also
            // makes `side` right when x is NIL).
            let d = self.side(xp, x);
            let mut w = self.nodes[xp as usize].child[1 - d];
            if self.red(w) {
                self.n(w).red = false;
                self.n(xp).red = true;
                self.rotate(root, xp, d);
                w = self.nodes[xp as usize].child[1 - d];
            }
            let [near, far] = {
                let c = self.nodes[w as usize].child;
                [c[d], c[1 - d]]
            };
            if !self.red(near) && !self.red(far) {
                self.n(w).red = true;
                x = xp;
                xp = self.nodes[x as usize].parent;
                continue;
            }
            if !self.red(far) {
                self.n(near).red = false;
                self.n(w).red = true;
                self.rotate(root, w, 1 - d);
                w = self.nodes[xp as usize].child[1 - d];
            }
            self.n(w).red = self.nodes[xp as usize].red;
            self.n(xp).red = false;
            let far = self.nodes[w as usize].child[1 - d];
            self.n(far).red = false;
            self.rotate(root, xp, d);
            x = *root;
        }
        if x != NIL {
            self.n(x).red = false;
        }
    }

    /// The first node in order whose key is at least `sector`, or [`NIL`]
    /// (`deadline_from_pos`, and the front-merge lookup).
    #[inline]
    pub(super) fn lower_bound(&self, root: u32, sector: u64) -> u32 {
        let mut best = NIL;
        let mut cur = root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            // Going left on equality finds the oldest of equal keys.
            let ge = n.sector >= sector;
            best = if ge { cur } else { best };
            cur = n.child[usize::from(!ge)];
        }
        best
    }

    /// The leftmost node of the subtree at `id`, or [`NIL`] (`rb_first`).
    pub(super) fn first(&self, id: u32) -> u32 {
        self.extreme(id, LEFT)
    }

    /// The last node of the subtree at `id` on side `d`.
    fn extreme(&self, mut id: u32, d: usize) -> u32 {
        if id == NIL {
            return NIL;
        }
        while self.nodes[id as usize].child[d] != NIL {
            id = self.nodes[id as usize].child[d];
        }
        id
    }

    /// The neighbour of `id` in order on side `d` (`RIGHT`: `rb_next`, `LEFT`:
    /// `rb_prev`), or [`NIL`]. `id` must be in a tree.
    fn step(&self, id: u32, d: usize) -> u32 {
        let n = &self.nodes[id as usize];
        if n.child[d] != NIL {
            return self.extreme(n.child[d], 1 - d);
        }
        let (mut cur, mut p) = (id, n.parent);
        while p != NIL && self.nodes[p as usize].child[d] == cur {
            (cur, p) = (p, self.nodes[p as usize].parent);
        }
        p
    }

    /// The node after `id` in order, or [`NIL`] (`rb_next`). `id` must be in a tree.
    pub(super) fn next(&self, id: u32) -> u32 {
        self.step(id, RIGHT)
    }

    /// The node before `id` in order, or [`NIL`] (`rb_prev`). `id` must be in a tree.
    pub(super) fn prev(&self, id: u32) -> u32 {
        self.step(id, LEFT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Check the red-black invariants and parent links; returns the black height.
    fn check(f: &Forest, id: u32, parent: u32) -> usize {
        if id == NIL {
            return 1;
        }
        let n = f.nodes[id as usize];
        let [left, right] = n.child;
        assert_eq!(n.parent, parent, "parent link of {id}");
        if n.red {
            assert!(!f.red(left) && !f.red(right), "red {id} has a red child");
        }
        if left != NIL {
            assert!(f.sector(left) <= n.sector);
        }
        if right != NIL {
            assert!(f.sector(right) >= n.sector);
        }
        let (l, r) = (check(f, left, id), check(f, right, id));
        assert_eq!(l, r, "black heights under {id}");
        l + usize::from(!n.red)
    }

    fn in_order(f: &Forest, root: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cur = f.first(root);
        while cur != NIL {
            out.push(cur);
            cur = f.next(cur);
        }
        out
    }

    /// Random inserts and removals against a `BTreeMap<(sector, seq), id>` model, with
    /// few distinct sectors so equal keys are common.
    #[test]
    fn matches_btreemap_model() {
        let mut rng = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for round in 0..20 {
            let mut f = Forest::default();
            let mut root = NIL;
            let mut model: BTreeMap<(u64, u64), u32> = BTreeMap::new();
            let mut key_of: Vec<Option<(u64, u64)>> = vec![None; 300];
            let mut seq = 0;
            let spread = if round % 2 == 0 { 16 } else { 1 << 20 };
            for _ in 0..3000 {
                let id = (next() % 300) as u32;
                if let Some(k) = key_of[id as usize].take() {
                    model.remove(&k);
                    let want = model.range(k..).next().map_or(NIL, |(_, &v)| v);
                    assert_eq!(f.remove(&mut root, id), want, "successor of {id}");
                } else {
                    seq += 1;
                    let s = next() % spread;
                    key_of[id as usize] = Some((s, seq));
                    model.insert((s, seq), id);
                    f.insert(&mut root, id, s);
                }
                check(&f, root, NIL);
                let q = next() % (spread + 2);
                let want = model.range((q, 0)..).next().map_or(NIL, |(_, &v)| v);
                assert_eq!(f.lower_bound(root, q), want);
            }
            let ids: Vec<u32> = model.values().copied().collect();
            assert_eq!(in_order(&f, root), ids);
            for w in ids.windows(2) {
                assert_eq!(f.prev(w[1]), w[0]);
            }
            if let Some(&first) = ids.first() {
                assert_eq!(f.prev(first), NIL);
            }
        }
    }
}
