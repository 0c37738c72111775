//! `RawLock`: a three-state futex lock with explicit `lock`/`unlock`.
//!
//! Not `std::sync::Mutex`, for two reasons: `pthread_atfork` handlers must take every allocator
//! lock before `fork()` and release (or reset) them afterwards, which needs a lock without a
//! guard; and building it from the `sync` shim's atomics lets loom check the lock itself.
//! States: 0 free, 1 held, 2 held with possible sleepers (the classic futex mutex).

use crate::sync::{loom_const_fn, AtomicU32, Ordering};

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
            crate::sync::spin_hint();
        }
        while self.state.swap(CONTENDED, Ordering::Acquire) != FREE {
            #[cfg(not(any(loom, shuttle)))]
            crate::os::futex_wait(&self.state, CONTENDED);
            // A model's threads share one OS thread (shuttle) or none (loom): yield, never
            // sleep in the kernel.
            #[cfg(any(loom, shuttle))]
            crate::sync::spin_hint();
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
            crate::os::futex_wake(&self.state);
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
