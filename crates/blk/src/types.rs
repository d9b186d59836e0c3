//! Units and the attributes every request carries.
//!
//! Time is virtual nanoseconds ([`Ns`]); positions are 512-byte [`Sector`]s, as in
//! the kernel (`sector_t`) whatever the device's logical block size. Where the kernel
//! decides on jiffies, schedulers use [`Jiffies`] derived from the clock with a
//! configurable `HZ`, so boundary cases come out as the kernel's.

use std::fmt;

/// A point in (virtual) time, or a duration, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ns(pub u64);

impl Ns {
    /// Zero time.
    pub const ZERO: Ns = Ns(0);
    /// One millisecond.
    pub const MS: u64 = 1_000_000;
    /// Nanoseconds from milliseconds.
    pub const fn from_ms(ms: u64) -> Ns {
        Ns(ms * 1_000_000)
    }
    /// Nanoseconds from microseconds.
    pub const fn from_us(us: u64) -> Ns {
        Ns(us * 1_000)
    }
    /// Saturating addition of a duration.
    pub const fn add(self, d: u64) -> Ns {
        Ns(self.0.saturating_add(d))
    }
    /// `self - earlier`, or 0 if `earlier` is later.
    pub const fn since(self, earlier: Ns) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Ns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

/// `floor(a * b / c)` of the exact product, truncated to 64 bits as a cast of
/// the 128-bit quotient would be; `c` must not be 0. The product usually fits in
/// 64 bits, and then no 128-bit division (a slow library call) is needed.
#[inline]
pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => ((a as u128 * b as u128) / c as u128) as u64,
    }
}

/// `ceil(a * b / c)`, as [`mul_div`].
#[inline]
pub fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p.div_ceil(c),
        None => ((a as u128 * b as u128).div_ceil(c as u128)) as u64,
    }
}

/// A 512-byte sector number or count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sector(pub u64);

impl Sector {
    /// Bytes per sector (`SECTOR_SIZE`).
    pub const SIZE: u64 = 512;
    /// The sector containing byte offset `bytes`.
    pub const fn from_bytes(bytes: u64) -> Sector {
        Sector(bytes / Self::SIZE)
    }
    /// Byte offset of this sector.
    pub const fn bytes(self) -> u64 {
        self.0 * Self::SIZE
    }
}

/// The kernel's jiffies counter, with the kernel's wrap-safe comparisons.
///
/// Values recorded from a real kernel are large and may wrap; comparisons therefore
/// use the signed difference, as `time_after()` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Jiffies(pub u64);

impl Jiffies {
    /// Jiffies elapsed at virtual time `t` for a kernel built with `hz`:
    /// `floor(t * hz / 1e9)`.
    pub fn from_ns(t: Ns, hz: u32) -> Jiffies {
        // Split so that the division is by a constant and in 64 bits: exact, and
        // the same wrap to 64 bits as the 128-bit product's quotient.
        let (secs, rem) = (t.0 / 1_000_000_000, t.0 % 1_000_000_000);
        let hz = u64::from(hz);
        Jiffies(secs.wrapping_mul(hz).wrapping_add(rem * hz / 1_000_000_000))
    }
    /// `time_after(self, other)`: strictly later, wrap-safe.
    pub fn after(self, other: Jiffies) -> bool {
        (other.0.wrapping_sub(self.0) as i64) < 0
    }
    /// `time_after_eq(self, other)`.
    pub fn after_eq(self, other: Jiffies) -> bool {
        (self.0.wrapping_sub(other.0) as i64) >= 0
    }
    /// `time_before(self, other)`.
    pub fn before(self, other: Jiffies) -> bool {
        other.after(self)
    }
    /// Wrapping addition (kernel `unsigned long` arithmetic).
    pub fn plus(self, j: u64) -> Jiffies {
        Jiffies(self.0.wrapping_add(j))
    }
    /// Wrapping subtraction.
    pub fn minus(self, j: u64) -> Jiffies {
        Jiffies(self.0.wrapping_sub(j))
    }
}

/// `msecs_to_jiffies()`: milliseconds to jiffies, rounding up.
pub fn msecs_to_jiffies(ms: u64, hz: u32) -> u64 {
    (ms * hz as u64).div_ceil(1000)
}

/// `jiffies_to_msecs()`.
pub fn jiffies_to_msecs(j: u64, hz: u32) -> u64 {
    j * 1000 / hz as u64
}

/// The data direction of a request (`rq_data_dir`): what the schedulers' per-direction
/// structures are indexed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// Device to memory.
    Read = 0,
    /// Memory to device.
    Write = 1,
}

impl Dir {
    /// Index for per-direction arrays.
    pub const fn idx(self) -> usize {
        self as usize
    }
    /// Lower-case name as used in traces (`read`, `write`).
    pub const fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

/// The request operation (`REQ_OP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `REQ_OP_READ`.
    Read,
    /// `REQ_OP_WRITE`.
    Write,
    /// `REQ_OP_FLUSH`: a cache flush with no data.
    Flush,
    /// `REQ_OP_DISCARD`.
    Discard,
    /// `REQ_OP_ZONE_APPEND`: write at the zone's write pointer, the device
    /// telling where.
    ZoneAppend,
    /// `REQ_OP_ZONE_OPEN`: explicitly open a zone.
    ZoneOpen,
    /// `REQ_OP_ZONE_CLOSE`.
    ZoneClose,
    /// `REQ_OP_ZONE_FINISH`: make a zone full.
    ZoneFinish,
    /// `REQ_OP_ZONE_RESET`: rewind a zone's write pointer.
    ZoneReset,
    /// `REQ_OP_ZONE_RESET_ALL`.
    ZoneResetAll,
}

impl Op {
    /// The kernel's operation number (`enum req_op`, numbering since the 2025
    /// change that made zone finish, reset and reset-all odd, i.e. writes).
    pub const fn number(self) -> u8 {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Flush => 2,
            Op::Discard => 3,
            Op::ZoneAppend => 7,
            Op::ZoneOpen => 10,
            Op::ZoneClose => 11,
            Op::ZoneFinish => 13,
            Op::ZoneReset => 15,
            Op::ZoneResetAll => 17,
        }
    }
    /// The data direction (`op_is_write`: odd op numbers are writes). Writes,
    /// discards and every zone operation but open count as writes; a zone open
    /// (10) as a read. A flush keeps the write direction this crate has always
    /// given it (the flush machinery's request is never scheduled), though
    /// `REQ_OP_FLUSH` is even.
    pub const fn dir(self) -> Dir {
        match self {
            Op::Read | Op::ZoneOpen => Dir::Read,
            _ => Dir::Write,
        }
    }
    /// A zone management operation (`op_is_zone_mgmt`): reset, reset all,
    /// open, close, finish.
    pub const fn is_zone_mgmt(self) -> bool {
        matches!(
            self,
            Op::ZoneOpen | Op::ZoneClose | Op::ZoneFinish | Op::ZoneReset | Op::ZoneResetAll
        )
    }
    /// The operation carries data.
    pub const fn has_data(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::ZoneAppend)
    }
}

/// Request/bio flags the schedulers and the block core look at (`REQ_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReqFlags(pub u32);

impl ReqFlags {
    /// `REQ_SYNC`.
    pub const SYNC: ReqFlags = ReqFlags(1 << 0);
    /// `REQ_FUA`: forced unit access.
    pub const FUA: ReqFlags = ReqFlags(1 << 1);
    /// `REQ_PREFLUSH`: flush the volatile cache before this request.
    pub const PREFLUSH: ReqFlags = ReqFlags(1 << 2);
    /// `REQ_META`.
    pub const META: ReqFlags = ReqFlags(1 << 3);
    /// `REQ_NOMERGE`: never merge into or with this request.
    pub const NOMERGE: ReqFlags = ReqFlags(1 << 4);
    /// `REQ_IDLE`.
    pub const IDLE: ReqFlags = ReqFlags(1 << 5);
    /// `BIO_ZONE_WRITE_PLUGGING` (a `bi_flags` bit in the kernel): the bio went
    /// through zone write plugging and is accounted in its zone's plug.
    pub const ZONE_WRITE_PLUGGING: ReqFlags = ReqFlags(1 << 6);
    /// `BIO_EMULATES_ZONE_APPEND` (a `bi_flags` bit): a zone append turned into
    /// a write at the write pointer; restored to an append on completion.
    pub const EMULATES_ZONE_APPEND: ReqFlags = ReqFlags(1 << 7);
    /// No flags.
    pub const NONE: ReqFlags = ReqFlags(0);

    /// All of `other`'s bits are set.
    pub const fn has(self, other: ReqFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Any of `other`'s bits are set.
    pub const fn any(self, other: ReqFlags) -> bool {
        self.0 & other.0 != 0
    }
    /// Union.
    pub const fn with(self, other: ReqFlags) -> ReqFlags {
        ReqFlags(self.0 | other.0)
    }
    /// Difference.
    pub const fn without(self, other: ReqFlags) -> ReqFlags {
        ReqFlags(self.0 & !other.0)
    }
    /// Names of the set flags, as used by the conformance trace.
    pub fn names(self) -> Vec<&'static str> {
        let all = [
            (Self::SYNC, "sync"),
            (Self::FUA, "fua"),
            (Self::PREFLUSH, "preflush"),
            (Self::META, "meta"),
            (Self::NOMERGE, "nomerge"),
            (Self::IDLE, "idle"),
        ];
        all.iter()
            .filter(|(f, _)| self.has(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

impl std::ops::BitOr for ReqFlags {
    type Output = ReqFlags;
    fn bitor(self, rhs: ReqFlags) -> ReqFlags {
        self.with(rhs)
    }
}

/// I/O priority class (`IOPRIO_CLASS_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoClass {
    /// `IOPRIO_CLASS_NONE`: no explicit priority (treated as best effort).
    #[default]
    None = 0,
    /// `IOPRIO_CLASS_RT`: real time.
    Rt = 1,
    /// `IOPRIO_CLASS_BE`: best effort.
    Be = 2,
    /// `IOPRIO_CLASS_IDLE`.
    Idle = 3,
}

impl IoClass {
    /// Parse a trace name: `rt`, `be`, `idle`, `none`.
    pub fn from_name(s: &str) -> Option<IoClass> {
        match s {
            "none" => Some(IoClass::None),
            "rt" => Some(IoClass::Rt),
            "be" => Some(IoClass::Be),
            "idle" => Some(IoClass::Idle),
            _ => None,
        }
    }
    /// From fio's `prioclass` number (0 none, 1 rt, 2 be, 3 idle).
    pub fn from_number(n: u8) -> Option<IoClass> {
        match n {
            0 => Some(IoClass::None),
            1 => Some(IoClass::Rt),
            2 => Some(IoClass::Be),
            3 => Some(IoClass::Idle),
            _ => None,
        }
    }
    /// Trace name.
    pub const fn name(self) -> &'static str {
        match self {
            IoClass::None => "none",
            IoClass::Rt => "rt",
            IoClass::Be => "be",
            IoClass::Idle => "idle",
        }
    }
}

/// An I/O priority: class and level (0 = highest, 7 = lowest; default 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoPrio {
    /// Priority class.
    pub class: IoClass,
    /// Level within the class, 0–7.
    pub level: u8,
}

impl Default for IoPrio {
    fn default() -> Self {
        IoPrio {
            class: IoClass::None,
            level: 4,
        }
    }
}

/// A cgroup, named by index into the run's cgroup table (index 0 is the root, `/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CgroupId(pub u32);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The 64-bit paths give exactly what the 128-bit arithmetic gives,
        /// wrap to 64 bits included.
        #[test]
        fn fast_arithmetic_matches_128_bit(a in any::<u64>(), b in any::<u64>(), c in 1..u64::MAX, hz in 1..u32::MAX) {
            prop_assert_eq!(mul_div(a, b, c), ((a as u128 * b as u128) / c as u128) as u64);
            prop_assert_eq!(mul_div_ceil(a, b, c), (a as u128 * b as u128).div_ceil(c as u128) as u64);
            let small = a >> 20;
            prop_assert_eq!(mul_div(small, 1_000_000, c), ((small as u128 * 1_000_000) / c as u128) as u64);
            for t in [a, small, a % 4_000_000_000] {
                let want = ((t as u128 * hz as u128) / 1_000_000_000) as u64;
                prop_assert_eq!(Jiffies::from_ns(Ns(t), hz).0, want);
            }
        }
    }

    #[test]
    fn jiffies_compare_across_wrap() {
        let a = Jiffies(u64::MAX - 2);
        let b = a.plus(5);
        assert!(b.after(a));
        assert!(!a.after(b));
        assert!(a.before(b));
        assert!(b.after_eq(b));
        assert!(!a.after_eq(b));
    }

    #[test]
    fn jiffies_from_ns_floors() {
        assert_eq!(Jiffies::from_ns(Ns(3_999_999), 250), Jiffies(0));
        assert_eq!(Jiffies::from_ns(Ns(4_000_000), 250), Jiffies(1));
        assert_eq!(msecs_to_jiffies(500, 250), 125);
        assert_eq!(msecs_to_jiffies(1, 250), 1);
        assert_eq!(jiffies_to_msecs(125, 250), 500);
    }
}
