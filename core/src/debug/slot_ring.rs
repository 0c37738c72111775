//! The slot bookkeeping of the sampled pool (`sampled.rs`): which of its `N` slots are free,
//! oldest free first, behind one lock. Kept apart from the pool's pages and `mprotect` calls
//! so that loom can check it (`verify/tests/loom_sampled.rs`): a slot is handed to one taker
//! only, freed slots come back in the order they were freed, and an empty ring says so.
//!
//! Every read and write of the ring goes through [`SlotRing::take_with`] or
//! [`SlotRing::locked`], which hold the lock for the closure's duration, so whatever the
//! closure does with a slot's other records is serialized with the ring's own changes.

use crate::platform::lock::RawLock;
use crate::platform::sync::UnsafeCell;

/// The free slots (indices below `N`, at most 2^16), a ring in freeing order.
pub struct Ring<const N: usize> {
    fifo: [u16; N],
    head: usize,
    len: usize,
}

impl<const N: usize> Ring<N> {
    /// Free slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no slot is free.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The oldest free slot, without taking it.
    pub fn peek(&self) -> Option<usize> {
        (self.len > 0).then(|| self.fifo[self.head] as usize)
    }

    /// Takes the oldest free slot.
    pub fn take(&mut self) -> Option<usize> {
        let i = self.peek()?;
        self.head = (self.head + 1) % N;
        self.len -= 1;
        Some(i)
    }

    /// Puts slot `i` (taken before) at the back.
    ///
    /// # Panics
    /// If every slot is already free or `i` is not a slot: the caller gave back a slot it did
    /// not hold.
    pub fn put(&mut self, i: usize) {
        assert!(self.len < N && i < N, "slot {i} given back to a full ring");
        self.fifo[(self.head + self.len) % N] = i as u16;
        self.len += 1;
    }
}

/// [`Ring`] behind a lock.
pub struct SlotRing<const N: usize> {
    lock: RawLock,
    ring: UnsafeCell<Ring<N>>,
}

// SAFETY: `ring` is reached only with `lock` held (`locked`, `take_with`).
unsafe impl<const N: usize> Sync for SlotRing<N> {}
// SAFETY: as above; the ring holds plain integers.
unsafe impl<const N: usize> Send for SlotRing<N> {}

impl<const N: usize> SlotRing<N> {
    /// Every slot free, in index order.
    pub fn new() -> SlotRing<N> {
        const { assert!(N > 0 && N <= 1 << 16) };
        let mut fifo = [0u16; N];
        for (i, f) in fifo.iter_mut().enumerate() {
            *f = i as u16;
        }
        SlotRing {
            lock: RawLock::new(),
            ring: UnsafeCell::new(Ring {
                fifo,
                head: 0,
                len: N,
            }),
        }
    }

    /// Runs `f` on the ring with the lock held.
    pub fn locked<R>(&self, f: impl FnOnce(&mut Ring<N>) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held: no other reference to the ring exists meanwhile.
        self.ring.with_mut(|r| f(unsafe { &mut *r }))
    }

    /// Takes the oldest free slot and runs `f` on it with the lock still held; `None` (and `f`
    /// not run) if no slot is free.
    pub fn take_with<R>(&self, f: impl FnOnce(usize) -> R) -> Option<R> {
        #[cfg(alloclab_seeded)]
        if crate::platform::seeded::active(crate::platform::seeded::Bug::SplitSlotTake) {
            // The seeded bug: the slot is read in one critical section and taken in another.
            let i = self.locked(|r| r.peek())?;
            return self.locked(|r| {
                r.take();
                Some(f(i))
            });
        }
        self.locked(|r| r.take().map(f))
    }

    /// Gives slot `i` back (it joins the back of the ring).
    pub fn put(&self, i: usize) {
        self.locked(|r| r.put(i));
    }

    /// Free slots (a snapshot).
    pub fn free_slots(&self) -> usize {
        self.locked(|r| r.len())
    }

    /// Takes the lock without a guard (`fork`).
    pub fn lock(&self) {
        self.lock.lock();
    }

    /// Releases the lock taken by [`SlotRing::lock`].
    pub fn unlock(&self) {
        self.lock.unlock();
    }

    /// Resets the lock in a forked child.
    pub fn reset_lock(&self) {
        self.lock.reset();
    }
}

impl<const N: usize> Default for SlotRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SlotRing;

    #[test]
    fn takes_in_order_then_reuses_oldest_free_first() {
        let r = SlotRing::<4>::new();
        let taken: Vec<_> = (0..4).map(|_| r.take_with(|i| i).unwrap()).collect();
        assert_eq!(taken, [0, 1, 2, 3]);
        assert_eq!(r.take_with(|i| i), None);
        r.put(2);
        r.put(0);
        r.put(3);
        assert_eq!(r.free_slots(), 3);
        let again: Vec<_> = (0..3).map(|_| r.take_with(|i| i).unwrap()).collect();
        assert_eq!(again, [2, 0, 3]);
        assert_eq!(r.free_slots(), 0);
    }

    /// Kills cargo-mutants' `replace SlotRing<N>::lock with ()` (`core/src/debug/slot_ring.rs`,
    /// survivor of the campaign): the fork handlers take the ring's lock with `lock` so that no
    /// slot is half-taken across `fork`; a `lock` that takes nothing leaves the ring open.
    #[test]
    fn lock_holds_the_ring_until_unlock() {
        let r = SlotRing::<4>::new();
        r.lock();
        assert!(r.lock.is_locked(), "lock took no lock");
        assert!(!r.lock.try_lock(), "the ring's lock is free while held");
        r.unlock();
        assert!(!r.lock.is_locked());
        assert_eq!(r.take_with(|i| i), Some(0));
    }

    #[test]
    #[should_panic(expected = "full ring")]
    fn giving_back_to_a_full_ring_panics() {
        SlotRing::<2>::new().put(1);
    }
}
