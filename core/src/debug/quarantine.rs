//! An arena's quarantine: freed small regions and large allocations held back, oldest out
//! first, before their memory can serve again. Bounded by bytes (the `quarantine` option) and
//! by `SLOTS` entries; the ring is mapped on first use, so an arena without a quarantine pays
//! one null pointer.
//!
//! A second free of a held allocation is found by a scan of the ring (at most `SLOTS`
//! entries): the allocation still looks live to the rest of the engine until it leaves.
//! Read only under the arena's lock.

use crate::meta::size_class::{round_up, PAGE};
use crate::platform::os;
use core::ptr;

/// Entries the ring holds at most.
pub const SLOTS: usize = 256;

/// One held allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// Its address (a region's or a large allocation's first page).
    pub addr: usize,
    /// Its bytes (counted against the bound).
    pub bytes: usize,
}

/// The FIFO of held allocations.
pub(crate) struct Quarantine {
    ring: *mut Held,
    head: usize,
    len: usize,
    bytes: usize,
}

const RING_BYTES: usize = match round_up(SLOTS * core::mem::size_of::<Held>(), PAGE) {
    Some(b) => b,
    None => PAGE,
};

impl Quarantine {
    pub const fn new() -> Quarantine {
        Quarantine {
            ring: ptr::null_mut(),
            head: 0,
            len: 0,
            bytes: 0,
        }
    }

    /// Whether `addr` is held.
    pub fn contains(&self, addr: usize) -> bool {
        (0..self.len).any(|i| self.at(i).addr == addr)
    }

    fn at(&self, i: usize) -> Held {
        // SAFETY: `i < len <= SLOTS`: a written slot of the mapped ring.
        unsafe { *self.ring.add((self.head + i) % SLOTS) }
    }

    /// Holds `h`; false if the ring could not be mapped (the caller then frees at once).
    pub fn push(&mut self, h: Held) -> bool {
        if self.ring.is_null() {
            match os::map(RING_BYTES) {
                Some(m) => self.ring = m.as_ptr().cast(),
                None => return false,
            }
        }
        debug_assert!(self.len < SLOTS, "pop_over leaves room");
        // SAFETY: a slot of the mapped ring.
        unsafe { self.ring.add((self.head + self.len) % SLOTS).write(h) };
        self.len += 1;
        self.bytes += h.bytes;
        true
    }

    /// The oldest held allocation, if more than `limit` bytes or a full ring are held.
    pub fn pop_over(&mut self, limit: usize) -> Option<Held> {
        if self.len == 0 || (self.bytes <= limit && self.len < SLOTS) {
            return None;
        }
        let h = self.at(0);
        self.head = (self.head + 1) % SLOTS;
        self.len -= 1;
        self.bytes -= h.bytes;
        Some(h)
    }

    /// Held entries and bytes.
    #[cfg(all(test, not(loom)))]
    pub fn held(&self) -> (usize, usize) {
        (self.len, self.bytes)
    }
}

impl Drop for Quarantine {
    fn drop(&mut self) {
        if !self.ring.is_null() {
            // SAFETY: mapped by `push`, no longer used.
            unsafe { os::unmap(self.ring.cast(), RING_BYTES) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_within_the_bounds() {
        let mut q = Quarantine::new();
        assert_eq!(q.pop_over(0), None);
        for a in 1..=3 {
            assert!(q.push(Held {
                addr: a,
                bytes: 100
            }));
        }
        assert!(q.contains(2) && !q.contains(4));
        assert_eq!(q.pop_over(300), None);
        assert_eq!(
            q.pop_over(150),
            Some(Held {
                addr: 1,
                bytes: 100
            })
        );
        assert_eq!(
            q.pop_over(150),
            Some(Held {
                addr: 2,
                bytes: 100
            })
        );
        assert_eq!(q.pop_over(150), None);
        assert_eq!(q.held(), (1, 100));
        // The ring bounds the count whatever the bytes.
        for a in 10..10 + SLOTS {
            assert!(q.push(Held { addr: a, bytes: 1 }));
            while q.pop_over(usize::MAX).is_some() {}
        }
        assert_eq!(q.held().0, SLOTS - 1);
        assert!(q.contains(10 + SLOTS - 1) && !q.contains(3));
    }
}
