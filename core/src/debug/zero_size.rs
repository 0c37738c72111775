//! `malloc(0)` in the hardened profiles: a unique pointer into an inaccessible region, so that
//! any read or write through it faults.
//!
//! The region is `SLOTS` 16-byte slots of reserved address space (no memory behind it, no
//! page map entry); a bitmap says which slots are handed out. When every slot is taken, the
//! heap serves zero-size requests as ordinary minimal allocations.

use crate::meta::size_class::{round_up, PAGE, QUANTUM};
use crate::platform::error::FreeError;
use crate::platform::os;
// Real atomics even under loom: the bitmap lives in mapped memory, which loom cannot track
// (the same reason the page map's atomics are untracked).
use crate::platform::sync::untracked::{AtomicU64, AtomicUsize, Ordering};

/// Slots in the region.
pub const SLOTS: usize = 1 << 16;
const REGION_BYTES: usize = SLOTS * QUANTUM;
const WORDS: usize = SLOTS / 64;
const BITS_BYTES: usize = match round_up(WORDS * 8, PAGE) {
    Some(b) => b,
    None => PAGE,
};

/// The region and its bitmap; `base` 0 when off.
pub(crate) struct ZeroSize {
    base: usize,
    bits: *const AtomicU64,
    hint: AtomicUsize,
}

// SAFETY: the bitmap is only reached through atomics; the region is never touched.
unsafe impl Sync for ZeroSize {}
// SAFETY: as above.
unsafe impl Send for ZeroSize {}

impl ZeroSize {
    /// Off.
    pub fn off() -> ZeroSize {
        ZeroSize {
            base: 0,
            bits: core::ptr::null(),
            hint: AtomicUsize::new(0),
        }
    }

    /// Reserves the region and maps the bitmap; off if the OS refuses.
    pub fn new() -> ZeroSize {
        let Some(region) = os::reserve(REGION_BYTES) else {
            return ZeroSize::off();
        };
        let Some(bits) = os::map(BITS_BYTES) else {
            // SAFETY: reserved just above, never handed out.
            unsafe { os::unmap(region.as_ptr(), REGION_BYTES) };
            return ZeroSize::off();
        };
        ZeroSize {
            base: region.as_ptr() as usize,
            bits: bits.as_ptr().cast(),
            hint: AtomicUsize::new(0),
        }
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: `i < WORDS`; the bitmap is mapped (fresh zero memory is a valid array of
        // atomics) for the life of `self`.
        unsafe { &*self.bits.add(i) }
    }

    /// A free slot, or null if the region is off or full.
    pub fn alloc(&self) -> *mut u8 {
        if self.base == 0 {
            return core::ptr::null_mut();
        }
        let start = self.hint.load(Ordering::Relaxed);
        for k in 0..WORDS {
            let i = (start + k) % WORDS;
            let w = self.word(i);
            let mut v = w.load(Ordering::Relaxed);
            while v != u64::MAX {
                let bit = (!v).trailing_zeros() as usize;
                match w.compare_exchange_weak(v, v | 1 << bit, Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => {
                        self.hint.store(i, Ordering::Relaxed);
                        return (self.base + (i * 64 + bit) * QUANTUM) as *mut u8;
                    }
                    Err(now) => v = now,
                }
            }
        }
        core::ptr::null_mut()
    }

    /// Whether `addr` lies in the region.
    #[inline(always)]
    pub fn contains(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base) < REGION_BYTES && self.base != 0
    }

    /// Checks that `addr` (in the region) is a slot handed out; with `release`, gives it back.
    pub fn check(&self, addr: usize, release: bool) -> Result<(), FreeError> {
        let off = addr - self.base;
        if off % QUANTUM != 0 {
            return Err(FreeError::Interior);
        }
        let slot = off / QUANTUM;
        let (w, bit) = (self.word(slot / 64), 1u64 << (slot % 64));
        if release {
            let before = w.fetch_and(!bit, Ordering::AcqRel);
            if before & bit == 0 {
                return Err(FreeError::Freed);
            }
        } else if w.load(Ordering::Acquire) & bit == 0 {
            return Err(FreeError::Freed);
        }
        Ok(())
    }
}

impl Drop for ZeroSize {
    fn drop(&mut self) {
        if self.base != 0 {
            // SAFETY: mapped by `new`; the heap is being dropped, so no slot is used anymore.
            unsafe {
                os::unmap(self.base as *mut u8, REGION_BYTES);
                os::unmap(self.bits as *mut u8, BITS_BYTES);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Kills cargo-mutants' `replace << with >> in ZeroSize::alloc`, `replace + with * in
    /// ZeroSize::alloc` and `replace * with + in ZeroSize::alloc` (`core/src/debug/zero_size.rs`,
    /// survivors of the campaign): slots are handed out in order from the region's start, each
    /// once, and each is marked taken in the bitmap.
    #[test]
    fn slots_are_handed_out_in_order_each_once() {
        let z = ZeroSize::new();
        assert!(z.base != 0, "the OS refused the region");
        let taken: Vec<usize> = (0..130).map(|_| z.alloc() as usize).collect();
        for (k, &p) in taken.iter().enumerate() {
            assert_eq!(p, z.base + k * QUANTUM, "slot {k}");
            assert!(z.contains(p));
            assert_eq!(z.check(p, false), Ok(()), "slot {k} not marked taken");
        }
    }

    /// Kills cargo-mutants' `replace ZeroSize::check -> Result<(), FreeError> with Ok(())`
    /// (`core/src/debug/zero_size.rs`, survivor of the campaign): a double free, a free of a slot
    /// never handed out and a free inside a slot must each be refused.
    #[test]
    fn check_refuses_double_never_allocated_and_interior_frees() {
        let z = ZeroSize::new();
        assert!(z.base != 0, "the OS refused the region");
        let p = z.alloc() as usize;
        assert_eq!(z.check(p + 1, false), Err(FreeError::Interior));
        assert_eq!(z.check(p + QUANTUM, false), Err(FreeError::Freed));
        assert_eq!(z.check(p + QUANTUM, true), Err(FreeError::Freed));
        assert_eq!(z.check(p, true), Ok(()));
        assert_eq!(z.check(p, false), Err(FreeError::Freed));
        assert_eq!(z.check(p, true), Err(FreeError::Freed));
        // Given back, the slot is handed out again.
        assert_eq!(z.alloc() as usize, p);
    }
}
