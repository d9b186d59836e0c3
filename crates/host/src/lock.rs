//! A spinlock as a simulated resource.
//!
//! The kernel's spinlocks are queued (`qspinlock`, MCS-based): waiters get the lock
//! in the order they asked for it, each spinning on its CPU meanwhile. The model
//! keeps that order. A holder's critical section is known only once it has run (it
//! is what the scheduler did), so the caller reports it ([`SpinLock::hold`]) after
//! acting at the moment of acquisition.
//!
//! What a hand-over costs. Taking a lock last held on another CPU moves the lock's
//! cache line and the protected data's lines (`lines`) to the new holder: one
//! cache-line transfer each, cheaper inside a last-level cache than across. Under
//! contention every waiter keeps pulling the lock word and the data it reads
//! without the lock (`has_work`'s list checks), so each transfer the holder needs is
//! slowed by every CPU spinning beside it. The cost of one acquisition is
//!
//! ```text
//! lock_ns                                          (always)
//! + lines × transfer(previous holder, new holder)  (holder changed CPU)
//! + waiters × waiter_ns                            (CPUs spinning at the hand-over)
//! ```
//!
//! and the caller multiplies it by how many separate acquisitions the kernel makes
//! in the work the model does at once ([`LockCosts::acquisitions`]). The constants
//! and their sources are in the host profile (`iosched hosts`).

use std::collections::VecDeque;

/// The cost constants of a lock hand-over, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LockCosts {
    /// An uncontended acquire + release on the same CPU.
    pub lock_ns: u64,
    /// One cache-line transfer between CPUs sharing a last-level cache.
    pub line_llc_ns: u64,
    /// One cache-line transfer between CPUs in different last-level caches.
    pub line_remote_ns: u64,
    /// Lines moved to a new holder (the lock word and the scheduler's hot data).
    pub lines: u64,
    /// Extra per CPU spinning at a hand-over.
    pub waiter_ns: u64,
    /// CPUs per last-level cache.
    pub llc_cpus: u32,
}

impl LockCosts {
    /// One cache-line transfer from CPU `a` to CPU `b`.
    pub fn transfer(&self, a: u32, b: u32) -> u64 {
        if a == b {
            0
        } else if self.llc_cpus > 0 && a / self.llc_cpus == b / self.llc_cpus {
            self.line_llc_ns
        } else {
            self.line_remote_ns
        }
    }

    /// The cost of `acquisitions` acquisitions by CPU `cpu` after `prev` held the
    /// lock, with `waiters` CPUs spinning.
    pub fn acquisitions(
        &self,
        acquisitions: u64,
        prev: Option<u32>,
        cpu: u32,
        waiters: u64,
    ) -> u64 {
        if acquisitions == 0 {
            return 0;
        }
        let moved = prev.map_or(0, |p| self.lines * self.transfer(p, cpu));
        // The first acquisition pulls the lines from the previous holder; under
        // contention each later one loses them again to the spinners.
        let again = if waiters > 0 {
            (acquisitions - 1) * self.lines * self.line_llc_ns
        } else {
            0
        };
        acquisitions * (self.lock_ns + waiters * self.waiter_ns) + moved + again
    }
}

/// Counters of one lock (shown with the scheduler statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Times the lock was taken by a locked action.
    pub acquired: u64,
    /// Of those, times it was held by someone else when asked for.
    pub contended: u64,
    /// Total time CPUs spent spinning for it, ns.
    pub wait_ns: u64,
    /// Total time it was held, ns.
    pub held_ns: u64,
    /// Most CPUs spinning at once.
    pub max_waiters: u64,
}

/// One spinlock; see the module docs.
#[derive(Debug, Default)]
pub struct SpinLock {
    /// Held until then (free when `<= now` and nobody waits).
    held_until: u64,
    /// The CPU that holds it (or held it last).
    holder: Option<u32>,
    /// Spinning CPUs with their tokens and since when, in order.
    waiters: VecDeque<(u32, u64, u64)>,
    stats: LockStats,
}

/// The result of [`SpinLock::acquire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// Taken: act now. `prev` held it last, `waiters` CPUs spin for it.
    Taken {
        /// The previous holder's CPU.
        prev: Option<u32>,
    },
    /// Held: the CPU spins until [`SpinLock::grant`] hands it over.
    Spin,
}

impl SpinLock {
    /// A free lock.
    pub fn new() -> SpinLock {
        SpinLock::default()
    }

    /// Is it held (or promised) at `now`?
    pub fn is_busy(&self, now: u64) -> bool {
        self.held_until > now || !self.waiters.is_empty()
    }

    /// CPUs spinning for it.
    pub fn waiters(&self) -> u64 {
        self.waiters.len() as u64
    }

    /// CPU `cpu` asks for the lock at `now` to act for `token`.
    pub fn acquire(&mut self, now: u64, cpu: u32, token: u64) -> Acquire {
        if !self.is_busy(now) {
            self.stats.acquired += 1;
            let prev = self.holder.replace(cpu);
            self.held_until = now;
            return Acquire::Taken { prev };
        }
        self.stats.contended += 1;
        self.waiters.push_back((cpu, token, now));
        self.stats.max_waiters = self.stats.max_waiters.max(self.waiters.len() as u64);
        Acquire::Spin
    }

    /// The holder that acquired at `now` holds it for `ns`.
    pub fn hold(&mut self, now: u64, ns: u64) {
        self.held_until = now + ns;
        self.stats.held_ns += ns;
    }

    /// When the first waiter gets the lock, if anyone waits.
    pub fn next_grant(&self) -> Option<u64> {
        self.waiters.front().map(|w| self.held_until.max(w.2))
    }

    /// Hand the lock to the first waiter at `now` (its [`SpinLock::next_grant`]):
    /// returns its CPU, its token and the previous holder.
    pub fn grant(&mut self, now: u64) -> Option<(u32, u64, Option<u32>)> {
        let (cpu, token, since) = self.waiters.pop_front()?;
        self.stats.acquired += 1;
        self.stats.wait_ns += now.saturating_sub(since);
        let prev = self.holder.replace(cpu);
        self.held_until = now;
        Some((cpu, token, prev))
    }

    /// Its counters.
    pub fn stats(&self) -> LockStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_by_one_cpu_while_three_spin_is_handed_over_in_order() {
        let mut l = SpinLock::new();
        assert_eq!(l.acquire(0, 0, 10), Acquire::Taken { prev: None });
        l.hold(0, 1000);
        assert_eq!(l.acquire(100, 1, 11), Acquire::Spin);
        assert_eq!(l.acquire(200, 2, 12), Acquire::Spin);
        assert_eq!(l.acquire(300, 3, 13), Acquire::Spin);
        assert_eq!(l.waiters(), 3);
        assert_eq!(l.next_grant(), Some(1000));
        assert_eq!(l.grant(1000), Some((1, 11, Some(0))));
        l.hold(1000, 500);
        assert_eq!(l.next_grant(), Some(1500));
        assert_eq!(l.grant(1500), Some((2, 12, Some(1))));
        l.hold(1500, 500);
        assert_eq!(l.grant(2000), Some((3, 13, Some(2))));
        l.hold(2000, 500);
        assert_eq!(l.next_grant(), None);
        let s = l.stats();
        assert_eq!(s.acquired, 4);
        assert_eq!(s.contended, 3);
        // Waits: 900 + 1300 + 1700.
        assert_eq!(s.wait_ns, 3900);
        assert_eq!(s.max_waiters, 3);
        assert!(!l.is_busy(2500));
    }

    #[test]
    fn hand_over_cost_grows_with_distance_and_waiters() {
        let c = LockCosts {
            lock_ns: 20,
            line_llc_ns: 40,
            line_remote_ns: 120,
            lines: 3,
            waiter_ns: 10,
            llc_cpus: 8,
        };
        assert_eq!(c.acquisitions(1, Some(0), 0, 0), 20);
        assert_eq!(c.acquisitions(1, Some(0), 1, 0), 20 + 3 * 40);
        assert_eq!(c.acquisitions(1, Some(0), 9, 0), 20 + 3 * 120);
        // Two acquisitions with four CPUs spinning: each pays the waiters, the
        // second loses the lines again.
        assert_eq!(
            c.acquisitions(2, Some(0), 1, 4),
            2 * (20 + 4 * 10) + 3 * 40 + 3 * 40
        );
        assert_eq!(c.acquisitions(0, Some(0), 1, 4), 0);
    }
}
