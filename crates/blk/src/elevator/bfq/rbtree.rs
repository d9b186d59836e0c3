//! A red-black tree of queues keyed by sector, shaped exactly as the kernel's
//! `lib/rbtree.c` shapes it (`rb_insert_color`, `rb_erase`), for the EQM position
//! trees (`bfqg->rq_pos_tree`).
//!
//! The shape matters because `bfqq_find_close` looks first at the node that would
//! be the parent of a new leaf for the searched sector, then at its in-order
//! neighbour on the other side: with two close candidates, which one is found
//! depends on the tree. Nodes live in one arena indexed by queue id (a queue is in at
//! most one tree); each tree is just its root.

/// Index into [`RbNode::child`]: the rebalancing code is symmetric in the two sides
/// and takes the side as a value instead of being written twice.
const LEFT: usize = 0;
const RIGHT: usize = 1;

/// One queue's links (`bfqq->pos_node`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RbNode {
    /// The sector the queue is filed under.
    pub key: u64,
    /// Left and right child.
    child: [Option<usize>; 2],
    parent: Option<usize>,
    red: bool,
}

/// A tree: its root (`struct rb_root`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RbRoot {
    root: Option<usize>,
}

/// Where a key is or would go: the node holding it, or the parent of the empty leaf
/// it would take and on which side.
enum Slot {
    Found(usize),
    Leaf(Option<usize>, usize),
}

impl RbRoot {
    /// No node.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    fn walk(&self, n: &[RbNode], key: u64) -> Slot {
        let (mut cur, mut parent, mut side) = (self.root, None, LEFT);
        while let Some(c) = cur {
            parent = Some(c);
            side = match key.cmp(&n[c].key) {
                std::cmp::Ordering::Greater => RIGHT,
                std::cmp::Ordering::Less => LEFT,
                std::cmp::Ordering::Equal => return Slot::Found(c),
            };
            cur = n[c].child[side];
        }
        Slot::Leaf(parent, side)
    }

    /// `bfq_rq_pos_tree_lookup`: `Ok(node)` holding `key`, else `Err(parent)` of
    /// the empty leaf where `key` would go (`None` in an empty tree).
    pub fn lookup(&self, n: &[RbNode], key: u64) -> Result<usize, Option<usize>> {
        match self.walk(n, key) {
            Slot::Found(x) => Ok(x),
            Slot::Leaf(p, _) => Err(p),
        }
    }

    /// Link `x` under `key` unless a node already holds that key (then `false`,
    /// nothing changed): `rb_link_node` + `rb_insert_color`.
    pub fn insert(&mut self, n: &mut [RbNode], x: usize, key: u64) -> bool {
        let Slot::Leaf(parent, side) = self.walk(n, key) else {
            return false;
        };
        n[x] = RbNode {
            key,
            child: [None, None],
            parent,
            red: true,
        };
        match parent {
            None => self.root = Some(x),
            Some(p) => n[p].child[side] = Some(x),
        }
        self.insert_fixup(n, x);
        true
    }

    fn is_red(n: &[RbNode], x: Option<usize>) -> bool {
        x.is_some_and(|x| n[x].red)
    }

    /// Which child of `p` `x` is.
    fn side_of(n: &[RbNode], p: usize, x: Option<usize>) -> usize {
        if n[p].child[LEFT] == x {
            LEFT
        } else {
            RIGHT
        }
    }

    /// Replace `old` by `new` as the child of `old`'s parent (`__rb_change_child`).
    fn change_child(
        &mut self,
        n: &mut [RbNode],
        old: usize,
        new: Option<usize>,
        parent: Option<usize>,
    ) {
        match parent {
            None => self.root = new,
            Some(p) => {
                let side = Self::side_of(n, p, Some(old));
                n[p].child[side] = new;
            }
        }
    }

    /// Rotate `x` down towards `dir`: its child on the other side takes its place
    /// (`dir` = [`LEFT`] is a left rotation).
    fn rotate(&mut self, n: &mut [RbNode], x: usize, dir: usize) {
        let other = 1 - dir;
        let y = n[x].child[other].expect("rotation partner");
        n[x].child[other] = n[y].child[dir];
        if let Some(b) = n[y].child[dir] {
            n[b].parent = Some(x);
        }
        let p = n[x].parent;
        n[y].parent = p;
        self.change_child(n, x, Some(y), p);
        n[y].child[dir] = Some(x);
        n[x].parent = Some(y);
    }

    /// `__rb_insert`: recolour up while the uncle is red, then one or two rotations.
    fn insert_fixup(&mut self, n: &mut [RbNode], mut x: usize) {
        loop {
            let Some(p) = n[x].parent else {
                n[x].red = false;
                return;
            };
            if !n[p].red {
                return;
            }
            let g = n[p].parent.expect("a red node has a parent");
            // `side`: where the parent hangs under the grandparent; the uncle is on
            // the other side.
            let side = Self::side_of(n, g, Some(p));
            let other = 1 - side;
            let uncle = n[g].child[other];
            if Self::is_red(n, uncle) {
                n[uncle.unwrap()].red = false;
                n[p].red = false;
                n[g].red = true;
                x = g;
                continue;
            }
            let mut p = p;
            if n[p].child[other] == Some(x) {
                self.rotate(n, p, side);
                p = x;
            }
            n[p].red = false;
            n[g].red = true;
            self.rotate(n, g, other);
            return;
        }
    }

    /// `rb_erase`: unlink `z` (which must be in this tree). A node with two children
    /// is replaced by its in-order successor.
    pub fn erase(&mut self, n: &mut [RbNode], z: usize) {
        let ([zl, zr], zp) = (n[z].child, n[z].parent);
        // (child taking the removed position, its parent, whether a black node left)
        let (x, xp, removed_black);
        match (zl, zr) {
            (Some(zl), Some(zr)) => {
                let mut y = zr;
                while let Some(l) = n[y].child[LEFT] {
                    y = l;
                }
                removed_black = !n[y].red;
                let y_right = n[y].child[RIGHT];
                if n[y].parent == Some(z) {
                    xp = Some(y);
                } else {
                    let yp = n[y].parent.expect("below z");
                    xp = Some(yp);
                    n[yp].child[LEFT] = y_right;
                    if let Some(c) = y_right {
                        n[c].parent = Some(yp);
                    }
                    n[y].child[RIGHT] = Some(zr);
                    n[zr].parent = Some(y);
                }
                x = y_right;
                n[y].child[LEFT] = Some(zl);
                n[zl].parent = Some(y);
                self.change_child(n, z, Some(y), zp);
                n[y].parent = zp;
                n[y].red = n[z].red;
            }
            (l, r) => {
                let child = l.or(r);
                self.change_child(n, z, child, zp);
                if let Some(c) = child {
                    n[c].parent = zp;
                }
                x = child;
                xp = zp;
                removed_black = !n[z].red;
            }
        }
        n[z] = RbNode::default();
        if removed_black {
            self.erase_fixup(n, x, xp);
        }
    }

    /// `____rb_erase_color`: restore the black heights after removing a black node
    /// from under `parent` (`x` took its place).
    fn erase_fixup(&mut self, n: &mut [RbNode], mut x: Option<usize>, mut parent: Option<usize>) {
        while x != self.root && !Self::is_red(n, x) {
            let Some(p) = parent else {
                break;
            };
            // `x` is short of one black on `side`; `w` is its sibling.
            let side = Self::side_of(n, p, x);
            let other = 1 - side;
            let mut w = n[p].child[other].expect("sibling of a black-short path");
            if n[w].red {
                n[w].red = false;
                n[p].red = true;
                self.rotate(n, p, side);
                w = n[p].child[other].expect("sibling");
            }
            if !Self::is_red(n, n[w].child[LEFT]) && !Self::is_red(n, n[w].child[RIGHT]) {
                n[w].red = true;
                x = Some(p);
                parent = n[p].parent;
            } else {
                if !Self::is_red(n, n[w].child[other]) {
                    n[n[w].child[side].unwrap()].red = false;
                    n[w].red = true;
                    self.rotate(n, w, other);
                    w = n[p].child[other].expect("sibling");
                }
                n[w].red = n[p].red;
                n[p].red = false;
                if let Some(c) = n[w].child[other] {
                    n[c].red = false;
                }
                self.rotate(n, p, side);
                x = self.root;
                parent = None;
            }
        }
        if let Some(x) = x {
            n[x].red = false;
        }
    }

    /// The in-order neighbour of `x` on `dir`'s side (`rb_next` for [`RIGHT`],
    /// `rb_prev` for [`LEFT`]).
    fn step(n: &[RbNode], x: usize, dir: usize) -> Option<usize> {
        let back = 1 - dir;
        if let Some(mut c) = n[x].child[dir] {
            while let Some(d) = n[c].child[back] {
                c = d;
            }
            return Some(c);
        }
        let mut c = x;
        while let Some(p) = n[c].parent {
            if n[p].child[back] == Some(c) {
                return Some(p);
            }
            c = p;
        }
        None
    }

    /// `rb_next`.
    pub fn next(n: &[RbNode], x: usize) -> Option<usize> {
        Self::step(n, x, RIGHT)
    }

    /// `rb_prev`.
    pub fn prev(n: &[RbNode], x: usize) -> Option<usize> {
        Self::step(n, x, LEFT)
    }

    /// The nodes in key order (for tests and checks).
    pub fn in_order(&self, n: &[RbNode]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut x = self.root;
        while let Some(l) = x.and_then(|x| n[x].child[LEFT]) {
            x = Some(l);
        }
        while let Some(c) = x {
            out.push(c);
            x = Self::next(n, c);
        }
        out
    }

    /// Red-black and search-tree invariants (for tests): `Err` names the first
    /// violation.
    pub fn check(&self, n: &[RbNode]) -> Result<(), String> {
        fn black_height(
            n: &[RbNode],
            x: Option<usize>,
            parent: Option<usize>,
        ) -> Result<u32, String> {
            let Some(x) = x else {
                return Ok(1);
            };
            if n[x].parent != parent {
                return Err(format!("node {x}: wrong parent link"));
            }
            let [left, right] = n[x].child;
            if n[x].red && (RbRoot::is_red(n, left) || RbRoot::is_red(n, right)) {
                return Err(format!("red node {x} has a red child"));
            }
            let l = black_height(n, left, Some(x))?;
            let r = black_height(n, right, Some(x))?;
            if l != r {
                return Err(format!("node {x}: black heights {l} != {r}"));
            }
            Ok(l + u32::from(!n[x].red))
        }
        if Self::is_red(n, self.root) {
            return Err("red root".into());
        }
        black_height(n, self.root, None)?;
        let keys: Vec<u64> = self.in_order(n).iter().map(|&x| n[x].key).collect();
        if keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("keys out of order: {keys:?}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random inserts and erases: the tree stays a valid red-black search tree
    /// holding the same keys as a `BTreeMap`, and `lookup` finds a neighbour of a
    /// missing key.
    #[test]
    fn random_operations_keep_the_invariants() {
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        const N: usize = 48;
        for _ in 0..200 {
            let mut nodes = vec![RbNode::default(); N];
            let mut in_tree = [false; N];
            let mut t = RbRoot::default();
            let mut model = std::collections::BTreeMap::new();
            for _ in 0..400 {
                let r = next();
                let x = (r % N as u64) as usize;
                let key = (r >> 20) % 64;
                if in_tree[x] {
                    model.remove(&nodes[x].key);
                    t.erase(&mut nodes, x);
                    in_tree[x] = false;
                } else if t.insert(&mut nodes, x, key) {
                    in_tree[x] = true;
                    model.insert(key, x);
                } else {
                    assert!(model.contains_key(&key));
                }
                t.check(&nodes).unwrap();
                let got: Vec<(u64, usize)> = t
                    .in_order(&nodes)
                    .iter()
                    .map(|&x| (nodes[x].key, x))
                    .collect();
                let want: Vec<(u64, usize)> = model.iter().map(|(&k, &v)| (k, v)).collect();
                assert_eq!(got, want);
                let probe = (next() >> 7) % 66;
                match t.lookup(&nodes, probe) {
                    Ok(x) => assert_eq!(nodes[x].key, probe),
                    Err(None) => assert!(model.is_empty()),
                    Err(Some(p)) => {
                        let pred = model.range(..probe).next_back().map(|(_, &v)| v);
                        let succ = model.range(probe..).next().map(|(_, &v)| v);
                        assert!(Some(p) == pred || Some(p) == succ);
                    }
                }
            }
        }
    }

    /// Two nodes: a key between them ends at the second one (the root's child).
    #[test]
    fn lookup_parent_is_the_deeper_neighbour() {
        let mut n = vec![RbNode::default(); 3];
        let mut t = RbRoot::default();
        assert!(t.insert(&mut n, 0, 100));
        assert!(t.insert(&mut n, 1, 5000));
        assert_eq!(t.lookup(&n, 200), Err(Some(1)));
        let mut t = RbRoot::default();
        let mut n = vec![RbNode::default(); 3];
        assert!(t.insert(&mut n, 1, 5000));
        assert!(t.insert(&mut n, 0, 100));
        assert_eq!(t.lookup(&n, 200), Err(Some(0)));
    }
}
