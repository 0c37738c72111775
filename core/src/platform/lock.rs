//! `RawLock`: a three-state futex lock with explicit `lock`/`unlock`.
//!
//! Not `std::sync::Mutex`, for two reasons: `pthread_atfork` handlers must take every allocator
//! lock before `fork()` and release (or reset) them afterwards, which needs a lock without a
//! guard; and building it from the `sync` shim's atomics lets loom check the lock itself.
//! States: 0 free, 1 held, 2 held with possible sleepers (the classic futex mutex).
//!
//! `CountedLock` is a `RawLock` that also counts its acquisitions, its contended acquisitions
//! and the time spent waiting in them: the arenas' locks, whose figures the heap reports
//! (`ArenaStats::lock_*`, `Heap::arena_lock_stats`). The other locks stay plain `RawLock`s,
//! whose fast path has nothing to count.

use crate::platform::sync::{loom_const_fn, untracked, AtomicU32, Ordering};

/// A mutual-exclusion lock that never allocates.
#[derive(Debug)]
pub struct RawLock {
    state: AtomicU32,
}

const FREE: u32 = 0;
const HELD: u32 = 1;
const CONTENDED: u32 = 2;

impl RawLock {
    loom_const_fn! {
        /// A free lock.
        pub fn new() -> RawLock {
            RawLock { state: AtomicU32::new(FREE) }
        }
    }

    /// Takes the lock, sleeping while another thread holds it.
    #[inline]
    pub fn lock(&self) {
        if self
            .state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The slow path of `lock`: the fast path's compare-exchange failed. Returns with the lock
    /// held.
    #[cold]
    fn lock_contended(&self) {
        // Short critical sections are the rule here: spin briefly before sleeping. Not under
        // loom, where every spin is a scheduling point and 64 of them per contended acquisition
        // exceed loom's branch limit; the sleeping loop below is the part worth modelling.
        // Nor under shuttle, where it would only add scheduling points.
        #[cfg(not(any(loom, shuttle)))]
        for _ in 0..64 {
            if self.state.load(Ordering::Relaxed) == FREE
                && self
                    .state
                    .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            crate::platform::sync::spin_hint();
        }
        while self.state.swap(CONTENDED, Ordering::Acquire) != FREE {
            #[cfg(not(any(loom, shuttle)))]
            crate::platform::os::futex_wait(&self.state, CONTENDED);
            // A model's threads share one OS thread (shuttle) or none (loom): yield, never
            // sleep in the kernel.
            #[cfg(any(loom, shuttle))]
            crate::platform::sync::spin_hint();
        }
    }

    /// Releases the lock.
    ///
    /// Releasing a lock that this thread does not hold breaks mutual exclusion; callers pair
    /// every `lock` with one `unlock` (the guard below does it for them).
    #[inline]
    pub fn unlock(&self) {
        if self.state.swap(FREE, Ordering::Release) == CONTENDED {
            #[cfg(not(any(loom, shuttle)))]
            crate::platform::os::futex_wake(&self.state);
        }
    }

    /// Forgets every holder: for the child after `fork()`, where the holders no longer exist.
    pub fn reset(&self) {
        self.state.store(FREE, Ordering::Relaxed);
    }

    /// Whether some thread holds the lock (a snapshot, for assertions).
    pub fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) != FREE
    }

    /// Takes the lock and releases it when the guard is dropped.
    #[inline]
    pub fn guard(&self) -> LockGuard<'_> {
        self.lock();
        LockGuard { lock: self }
    }
}

impl Default for RawLock {
    fn default() -> Self {
        Self::new()
    }
}

/// What a [`CountedLock`] counted since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Acquisitions (`lock` calls), contended or not.
    pub acquisitions: u64,
    /// Of those, acquisitions whose fast path failed: the lock was held, so the caller spun or
    /// slept.
    pub contended: u64,
    /// Nanoseconds (`CLOCK_MONOTONIC`) spent waiting in contended acquisitions.
    pub wait_ns: u64,
}

impl LockStats {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &LockStats) {
        self.acquisitions += o.acquisitions;
        self.contended += o.contended;
        self.wait_ns += o.wait_ns;
    }
}

/// A [`RawLock`] that counts acquisitions, contended acquisitions and the time waited in them.
///
/// The counters are written only by the thread holding the lock, right after taking it, so no
/// two writes ever race: each is a `Relaxed` load and a `Relaxed` store (plain moves), not a
/// read-modify-write, and the uncontended path adds one such pair to `RawLock`'s. They are
/// atomics only so that a reader without the lock (`stats`) may look at them: it sees some
/// recent value, never a torn one. The clock is read only on the contended (cold) path.
///
/// The counters are `sync::untracked` atomics, `core`'s even under loom and shuttle: they
/// never steer the code, so the models need not explore them, and tracked ones would add a
/// loom object and scheduling points to every acquisition. Under loom and shuttle the clock is
/// not read (`os::monotonic_ns` is 0 there): `wait_ns` stays 0 in the models.
#[derive(Debug)]
pub struct CountedLock {
    raw: RawLock,
    acquisitions: untracked::AtomicU64,
    contended: untracked::AtomicU64,
    wait_ns: untracked::AtomicU64,
}

/// Adds `n` to a counter only ever written by one thread at a time (the lock's holder).
#[inline(always)]
fn bump(counter: &untracked::AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

impl CountedLock {
    loom_const_fn! {
        /// A free lock with zero counts.
        pub fn new() -> CountedLock {
            CountedLock {
                raw: RawLock::new(),
                acquisitions: untracked::AtomicU64::new(0),
                contended: untracked::AtomicU64::new(0),
                wait_ns: untracked::AtomicU64::new(0),
            }
        }
    }

    /// Takes the lock, sleeping while another thread holds it, and counts the acquisition.
    #[inline]
    pub fn lock(&self) {
        if !self.raw.try_lock() {
            self.lock_contended();
        }
        // The lock is held: no other thread writes the counter now (type comment).
        bump(&self.acquisitions, 1);
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let start = crate::platform::os::monotonic_ns();
        self.raw.lock_contended();
        let waited = crate::platform::os::monotonic_ns().saturating_sub(start);
        // The lock is held: as in `lock`.
        bump(&self.contended, 1);
        bump(&self.wait_ns, waited);
    }

    /// Releases the lock (as [`RawLock::unlock`]).
    #[inline]
    pub fn unlock(&self) {
        self.raw.unlock();
    }

    /// Forgets every holder (as [`RawLock::reset`]); the counts stay.
    pub fn reset(&self) {
        self.raw.reset();
    }

    /// Whether some thread holds the lock (a snapshot, for assertions).
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Whether some thread may be sleeping for the lock (a snapshot, for tests: a thread that
    /// spins for it is not seen).
    pub fn has_sleepers(&self) -> bool {
        self.raw.state.load(Ordering::Relaxed) == CONTENDED
    }

    /// The counts so far. Exact when read with the lock held (or with no thread using the
    /// lock); otherwise each counter is some recent value of its own.
    pub fn stats(&self) -> LockStats {
        LockStats {
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            contended: self.contended.load(Ordering::Relaxed),
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
        }
    }
}

impl Default for CountedLock {
    fn default() -> Self {
        Self::new()
    }
}

/// Releases its lock when dropped.
#[must_use]
pub struct LockGuard<'a> {
    lock: &'a RawLock,
}

impl Drop for LockGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.lock.unlock();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Kills cargo-mutants' `replace += with -= in LockStats::add` (`core/src/platform/lock.rs`,
    /// survivor of the campaign's shard 2): the heap's statistics sum every arena's lock counts
    /// with `add`, and no test read a sum of contended acquisitions.
    #[test]
    fn add_sums_each_count() {
        let mut sum = LockStats {
            acquisitions: 10,
            contended: 3,
            wait_ns: 700,
        };
        sum.add(&LockStats {
            acquisitions: 5,
            contended: 2,
            wait_ns: 300,
        });
        assert_eq!(
            (sum.acquisitions, sum.contended, sum.wait_ns),
            (15, 5, 1000)
        );
    }

    #[test]
    fn excludes_and_wakes_sleepers() {
        struct Shared {
            lock: RawLock,
            counter: core::cell::UnsafeCell<u64>,
        }
        // SAFETY: `counter` is only touched with `lock` held.
        unsafe impl Sync for Shared {}
        let s = Arc::new(Shared {
            lock: RawLock::new(),
            counter: core::cell::UnsafeCell::new(0),
        });
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..50_000 {
                        let _g = s.lock.guard();
                        // SAFETY: the lock is held.
                        unsafe { *s.counter.get() += 1 };
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(!s.lock.is_locked());
        // SAFETY: all threads are joined.
        assert_eq!(unsafe { *s.counter.get() }, 200_000);
    }

    #[test]
    fn counted_lock_counts_uncontended_acquisitions() {
        let l = CountedLock::new();
        for _ in 0..3 {
            l.lock();
            assert!(l.is_locked());
            l.unlock();
        }
        assert_eq!(
            l.stats(),
            LockStats {
                acquisitions: 3,
                contended: 0,
                wait_ns: 0
            }
        );
    }

    #[test]
    fn counted_lock_counts_a_contended_acquisition_and_its_wait() {
        let l = Arc::new(CountedLock::new());
        l.lock();
        let t = {
            let l = l.clone();
            std::thread::spawn(move || {
                l.lock();
                l.unlock();
            })
        };
        // Hold the lock until the other thread sleeps for it (bounded: a broken lock fails
        // here rather than hanging).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !l.has_sleepers() {
            assert!(std::time::Instant::now() < deadline, "no thread waited");
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        l.unlock();
        t.join().unwrap();
        let s = l.stats();
        assert_eq!((s.acquisitions, s.contended), (2, 1), "{s:?}");
        assert!(
            s.wait_ns >= 1_000_000,
            "waited at least the 2 ms sleep: {s:?}"
        );
    }

    #[test]
    fn try_lock_fails_while_held() {
        let l = RawLock::new();
        assert!(l.try_lock());
        assert!(!l.try_lock());
        l.unlock();
        assert!(l.try_lock());
        l.reset();
        assert!(!l.is_locked());
    }
}
