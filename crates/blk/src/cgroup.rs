//! The run's cgroup table: which cgroups exist, how they nest, and their I/O
//! weights.
//!
//! Requests name their cgroup by [`CgroupId`], an index into this table; index 0 is
//! the root cgroup `/`. Paths are absolute and `/`-separated; interning `/a/b`
//! creates `/a` first, as the cgroup filesystem requires a parent to exist. The
//! weight is what `io.bfq.weight` (cgroup v2) or `blkio.bfq.weight` (v1) holds: the
//! group's default weight, 1..=1000, 100 unless set. The root cgroup has no weight
//! file in the kernel; its entry keeps the default and nothing reads it.
//!
//! Drivers build the table (the simulator from fio's `cgroup=`/`cgroup_weight=`,
//! `sched-replay` from the paths in the trace) and hand it to the scheduler through
//! [`crate::elevator::Elevator::set_cgroups`].

use crate::types::CgroupId;

/// Default cgroup I/O weight (`CGROUP_WEIGHT_DFL`, BFQ's `BFQ_WEIGHT_LEGACY_DFL`).
pub const CGROUP_DEFAULT_WEIGHT: u32 = 100;
/// Smallest `io.bfq.weight`.
pub const CGROUP_MIN_WEIGHT: u32 = 1;
/// Largest `io.bfq.weight`.
pub const CGROUP_MAX_WEIGHT: u32 = 1000;

/// One cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupInfo {
    /// Absolute path, `/` for the root.
    pub path: String,
    /// Parent cgroup (`None` for the root).
    pub parent: Option<CgroupId>,
    /// I/O weight (`io.bfq.weight`), 1..=1000.
    pub weight: u32,
}

/// A weight outside 1..=1000 (the kernel's `ERANGE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cgroup weight {0} for '{1}' is out of range (1..=1000)")]
pub struct WeightOutOfRange(pub u64, pub String);

/// The cgroups of a run, root first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupTable {
    entries: Vec<CgroupInfo>,
}

impl Default for CgroupTable {
    fn default() -> Self {
        CgroupTable::new()
    }
}

impl CgroupTable {
    /// A table with only the root cgroup.
    pub fn new() -> CgroupTable {
        CgroupTable {
            entries: vec![CgroupInfo {
                path: "/".into(),
                parent: None,
                weight: CGROUP_DEFAULT_WEIGHT,
            }],
        }
    }

    /// `path` in canonical form: leading `/`, no trailing or doubled `/`.
    pub fn normalize(path: &str) -> String {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        format!("/{}", parts.join("/"))
    }

    /// The id of `path`, creating it (and any missing ancestor, with the default
    /// weight) if needed.
    pub fn intern(&mut self, path: &str) -> CgroupId {
        let path = Self::normalize(path);
        if let Some(id) = self.lookup(&path) {
            return id;
        }
        let parent = match path.rfind('/') {
            Some(0) => CgroupId(0),
            Some(i) => self.intern(&path[..i]),
            None => CgroupId(0),
        };
        self.entries.push(CgroupInfo {
            path,
            parent: Some(parent),
            weight: CGROUP_DEFAULT_WEIGHT,
        });
        CgroupId(self.entries.len() as u32 - 1)
    }

    /// The id of an existing cgroup.
    pub fn lookup(&self, path: &str) -> Option<CgroupId> {
        let path = Self::normalize(path);
        self.entries
            .iter()
            .position(|e| e.path == path)
            .map(|i| CgroupId(i as u32))
    }

    /// Set a cgroup's weight (writing `io.bfq.weight`). `id` must come from this
    /// table (it indexes it).
    pub fn set_weight(&mut self, id: CgroupId, weight: u64) -> Result<(), WeightOutOfRange> {
        let e = &mut self.entries[id.0 as usize];
        if !(CGROUP_MIN_WEIGHT as u64..=CGROUP_MAX_WEIGHT as u64).contains(&weight) {
            return Err(WeightOutOfRange(weight, e.path.clone()));
        }
        e.weight = weight as u32;
        Ok(())
    }

    /// A cgroup's entry.
    pub fn get(&self, id: CgroupId) -> Option<&CgroupInfo> {
        self.entries.get(id.0 as usize)
    }

    /// Number of cgroups, the root included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Never true: the root always exists.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All cgroups with their ids, root first; a parent always precedes its
    /// children.
    pub fn iter(&self) -> impl Iterator<Item = (CgroupId, &CgroupInfo)> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| (CgroupId(i as u32), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_creates_parents_and_normalizes() {
        let mut t = CgroupTable::new();
        let ab = t.intern("a/b/");
        assert_eq!(t.len(), 3);
        let a = t.lookup("/a").unwrap();
        assert_eq!(t.get(ab).unwrap().parent, Some(a));
        assert_eq!(t.get(a).unwrap().parent, Some(CgroupId(0)));
        assert_eq!(t.intern("//a//b"), ab);
        assert_eq!(t.intern("/"), CgroupId(0));
        assert_eq!(t.get(ab).unwrap().weight, 100);
        t.set_weight(a, 300).unwrap();
        assert_eq!(t.get(a).unwrap().weight, 300);
        assert!(t.set_weight(a, 0).is_err());
        assert!(t.set_weight(a, 1001).is_err());
    }
}
