//! `Base`: the heap's own metadata allocator (arenas, huge records), a bump allocator over
//! mmap'd blocks that are returned to the OS only when the heap is dropped.
//!
//! The engine never allocates its metadata through itself; this is where it comes from.

use crate::meta::size_class::{round_up, PAGE};
use crate::platform::lock::RawLock;
use crate::platform::os;
use crate::platform::sync::{loom_const_fn, UnsafeCell};
use core::ptr::{self, NonNull};

const BLOCK: usize = 64 * 1024;

#[repr(C)]
struct BlockHeader {
    next: *mut BlockHeader,
    size: usize,
}

struct BaseInner {
    blocks: *mut BlockHeader,
    cursor: usize,
    end: usize,
    mapped: usize,
}

/// A bump allocator of metadata.
pub struct Base {
    lock: RawLock,
    inner: UnsafeCell<BaseInner>,
}

// SAFETY: `inner` is reached only with `lock` held.
unsafe impl Sync for Base {}
// SAFETY: as above.
unsafe impl Send for Base {}

impl Base {
    loom_const_fn! {
        /// An empty base.
        pub fn new() -> Base {
            Base {
                lock: RawLock::new(),
                inner: UnsafeCell::new(BaseInner { blocks: ptr::null_mut(), cursor: 0, end: 0, mapped: 0 }),
            }
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut BaseInner) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held for the whole closure.
        self.inner.with_mut(|p| f(unsafe { &mut *p }))
    }

    /// `size` zeroed bytes aligned to `align` (at most a page), or `None` if the OS refuses.
    pub fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        debug_assert!(align.is_power_of_two() && align <= PAGE);
        self.with(|b| {
            let mut at = round_up(b.cursor, align)?;
            if b.cursor == 0 || at.checked_add(size)? > b.end {
                let need = round_up(
                    size.checked_add(core::mem::size_of::<BlockHeader>() + align)?,
                    PAGE,
                )?;
                let bytes = need.max(BLOCK);
                let block = os::map(bytes)?.as_ptr().cast::<BlockHeader>();
                // SAFETY: the fresh block starts with room for its header.
                unsafe {
                    block.write(BlockHeader {
                        next: b.blocks,
                        size: bytes,
                    })
                };
                b.blocks = block;
                b.mapped += bytes;
                b.cursor = block as usize + core::mem::size_of::<BlockHeader>();
                b.end = block as usize + bytes;
                at = round_up(b.cursor, align)?;
            }
            b.cursor = at + size;
            NonNull::new(at as *mut u8)
        })
    }

    /// Bytes mapped for metadata so far.
    pub fn mapped(&self) -> usize {
        self.with(|b| b.mapped)
    }

    pub(crate) fn lock(&self) {
        self.lock.lock();
    }
    pub(crate) fn unlock(&self) {
        self.lock.unlock();
    }
    pub(crate) fn reset_lock(&self) {
        self.lock.reset();
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        let mut b = self.inner.with_mut(|p| {
            // SAFETY: `&mut self`: nobody else can reach the base.
            unsafe { (*p).blocks }
        });
        while !b.is_null() {
            // SAFETY: every block was mapped by `alloc` with the size in its header; nothing
            // allocated from it is used after the heap drops its base (the heap drops it last).
            unsafe {
                let next = (*b).next;
                os::unmap(b.cast(), (*b).size);
                b = next;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bumps_aligned_and_maps_big_requests() {
        let base = Base::new();
        let a = base.alloc(24, 8).unwrap().as_ptr() as usize;
        let b = base.alloc(100, 64).unwrap().as_ptr() as usize;
        assert_eq!(b % 64, 0);
        assert!(b >= a + 24);
        let big = base.alloc(200_000, 4096).unwrap().as_ptr() as usize;
        assert_eq!(big % 4096, 0);
        // SAFETY: the allocation is 200_000 bytes of fresh zeroed memory.
        unsafe { assert_eq!(*((big + 199_999) as *const u8), 0) };
        assert!(base.mapped() >= 200_000 + BLOCK);
    }
}
