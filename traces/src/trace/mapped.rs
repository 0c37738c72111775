//! `MappedVec<T>`: a growable array whose memory comes straight from `mmap`, never from an
//! allocator.
//!
//! The replayer's bookkeeping (the decoded operations, the slot table, the per-thread
//! schedules) lives in these arrays, as logalloc-replay keeps its slots in mmap'd arrays, so
//! that neither the allocator under test nor the process's own `malloc` holds it: the memory
//! figures of a replay then belong to the allocator alone, and the bookkeeping's resident pages
//! are a constant that the replay measures before it starts.

use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

const PAGE: usize = 4096;

/// Types a `MappedVec` may hold: no drop glue, valid when all bytes are zero, movable by a
/// byte copy.
///
/// # Safety
/// Implementors must have no `Drop` (elements are never dropped), must be valid with every byte
/// zero (fresh mappings are zero-filled) and must not point into themselves.
pub unsafe trait Plain: Sized {}

// SAFETY: integers and atomics have no drop glue, are valid when zero and hold no pointers
// into themselves.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for usize {}
// SAFETY: as above.
unsafe impl Plain for core::sync::atomic::AtomicU32 {}
// SAFETY: as above.
unsafe impl Plain for core::sync::atomic::AtomicUsize {}

/// A growable array in its own anonymous mapping.
pub struct MappedVec<T: Plain> {
    ptr: NonNull<T>,
    len: usize,
    /// Bytes mapped at `ptr`; 0 when nothing is mapped.
    mapped: usize,
    _owns: PhantomData<T>,
}

// SAFETY: a `MappedVec` owns its mapping exclusively, like a `Vec`; sharing or sending it is
// sound exactly when sharing or sending its elements is.
unsafe impl<T: Plain + Send> Send for MappedVec<T> {}
// SAFETY: as above; `&MappedVec` only gives `&[T]`.
unsafe impl<T: Plain + Sync> Sync for MappedVec<T> {}

impl<T: Plain> MappedVec<T> {
    /// An empty array; maps nothing until the first push.
    pub const fn new() -> Self {
        const { assert!(align_of::<T>() <= PAGE && size_of::<T>() > 0) };
        MappedVec {
            ptr: NonNull::dangling(),
            len: 0,
            mapped: 0,
            _owns: PhantomData,
        }
    }

    /// `len` zero-valued elements. With `prefault`, every page is written once so that the
    /// array is resident from now on (and a later resident-size measurement does not see it
    /// grow); otherwise pages become resident as they are first written.
    ///
    /// # Panics
    /// If the kernel refuses the mapping.
    pub fn zeroed(len: usize, prefault: bool) -> Self {
        let mut v = Self::new();
        v.reserve_exact(len);
        v.len = len;
        if prefault && v.mapped != 0 {
            let base = v.ptr.as_ptr().cast::<u8>();
            for offset in (0..v.mapped).step_by(PAGE) {
                // SAFETY: `offset` lies inside our mapping; writing a zero byte over a zero
                // byte changes no element.
                unsafe { base.add(offset).write_volatile(0) };
            }
        }
        v
    }

    /// Bytes mapped (the most this array can make resident).
    pub fn mapped_bytes(&self) -> usize {
        self.mapped
    }

    fn capacity(&self) -> usize {
        self.mapped / size_of::<T>()
    }

    /// Makes room for at least `total` elements, mapping a new region and copying.
    fn reserve_exact(&mut self, total: usize) {
        if total <= self.capacity() {
            return;
        }
        let bytes = total
            .checked_mul(size_of::<T>())
            .and_then(|b| b.checked_add(PAGE - 1))
            .map(|b| b & !(PAGE - 1))
            .expect("MappedVec: size overflows");
        let new = alloclab_core::os::map(bytes)
            .unwrap_or_else(|| panic!("MappedVec: the kernel refused a mapping of {bytes} bytes"));
        if self.mapped != 0 {
            // SAFETY: both mappings are ours and distinct; the first `len` elements of the old
            // one are initialized and `Plain` values move by a byte copy.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.ptr.as_ptr(),
                    new.as_ptr().cast::<T>(),
                    self.len,
                );
                alloclab_core::os::unmap(self.ptr.as_ptr().cast(), self.mapped);
            }
        }
        self.ptr = new.cast();
        self.mapped = bytes;
    }

    /// Appends `value`, doubling the mapping when full.
    pub fn push(&mut self, value: T) {
        if self.len == self.capacity() {
            let want = (self.len * 2).max(PAGE / size_of::<T>()).max(1);
            self.reserve_exact(want);
        }
        // SAFETY: `len < capacity`, so the slot lies inside our mapping.
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
    }
}

impl<T: Plain> Default for MappedVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Plain> Deref for MappedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` elements are initialized (written or zero, both valid for
        // `Plain`); a dangling, aligned pointer is valid for an empty slice.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> DerefMut for MappedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> Drop for MappedVec<T> {
    fn drop(&mut self) {
        if self.mapped != 0 {
            // SAFETY: the mapping is ours and nothing borrows it anymore (`&mut self`);
            // `Plain` elements need no drop.
            unsafe { alloclab_core::os::unmap(self.ptr.as_ptr().cast(), self.mapped) };
        }
    }
}

impl<T: Plain + core::fmt::Debug> core::fmt::Debug for MappedVec<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
