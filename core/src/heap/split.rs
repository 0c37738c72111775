//! The heap's entry points split for a C allocator library (liballoclab.so, `export!`).
//!
//! A library that exports `malloc`, `free` and `realloc` wants each as a leaf function on the
//! common path: the thread cache's fast half inlined into the exported function, with no call
//! and no saved register, and everything else in a slow half out of line that the exported
//! function tail-calls (and around which it keeps `errno`, since only the slow half makes
//! system calls). [`Heap::split`] gives those halves; the heap's own paths stay private.

use super::*;

/// A heap's entry points as fast and slow halves (see the module doc). Each fast half does
/// nothing and returns `None` or false when it cannot finish; the matching slow half then does
/// everything.
pub struct Split<'h, C: Config>(&'h Heap<C>);

impl<C: Config> Heap<C> {
    /// This heap's entry points split into fast and slow halves, for a C library.
    #[inline(always)]
    pub fn split(&self) -> Split<'_, C> {
        Split(self)
    }
}

impl<C: Config> Split<'_, C> {
    /// The thread cache's fast path of `malloc(size)`: a region popped from the calling
    /// thread's cache, or `None` when [`Split::malloc_slow`] must serve it.
    #[inline(always)]
    pub fn malloc_fast(&self, size: usize) -> Option<*mut u8> {
        if !C::Front::CACHE {
            return None;
        }
        self.0
            .alloc_from_cache(size, crate::meta::size_class::QUANTUM, false)
    }

    /// `allocate` past the thread cache's fast path: everything (out of line).
    #[inline(always)]
    pub fn malloc_slow(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        self.0.allocate_slow(size, align, zero)
    }

    /// The first half of [`Heap::free`]: frees `ptr` and returns true if the thread cache's
    /// fast path takes it (no lock, no system call, no error possible); returns false having
    /// done nothing otherwise. Then [`Split::free_slow`] does the rest.
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free_fast(&self, ptr: *mut u8) -> bool {
        // SAFETY: forwarded contract.
        C::Front::CACHE && unsafe { self.0.free_to_cache(ptr as usize, None) }
    }

    /// [`Split::free_fast`] for a caller that knows the heap's `Options::tcache_check` (a
    /// dispatch table chosen when the heap was built, as liballoclab.so's): the check is a
    /// constant instead of a flag read on every call. `check` must be the heap's setting or
    /// `Full` (checking more is always allowed).
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free_fast_as(&self, ptr: *mut u8, check: TcacheCheck) -> bool {
        // SAFETY: forwarded contract.
        C::Front::CACHE && unsafe { self.0.free_to_cache(ptr as usize, Some(check)) }
    }

    /// The second half of [`Heap::free`]: everything but the thread cache's fast path (null,
    /// fills and flushes, arenas, errors; out of line).
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free_slow(&self, ptr: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { self.0.free_slow(ptr) }
    }

    /// The thread cache's fast path of C's `realloc` (alignment 16, no copy limit) for a
    /// non-null `ptr`: `Some` when it resized or moved a small region without a lock, `None`
    /// when [`Split::realloc_slow`] must do it (which never makes a system call otherwise, so
    /// a caller that keeps `errno` need only save it for that one).
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    pub unsafe fn realloc_fast(&self, ptr: *mut u8, new_size: usize) -> Option<*mut u8> {
        // SAFETY: forwarded contract.
        unsafe { self.0.realloc_fast_with(ptr, new_size, None) }
    }

    /// [`Split::realloc_fast`] with the cache's checks given by the caller, as for
    /// [`Split::free_fast_as`].
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    pub unsafe fn realloc_fast_as(
        &self,
        ptr: *mut u8,
        new_size: usize,
        check: TcacheCheck,
    ) -> Option<*mut u8> {
        // SAFETY: forwarded contract.
        unsafe { self.0.realloc_fast_with(ptr, new_size, Some(check)) }
    }

    /// `reallocate` past the thread cache's fast path: everything (out of line).
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    pub unsafe fn realloc_slow(
        &self,
        ptr: *mut u8,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.0.reallocate_slow(ptr, new_size, align, copy_limit) }
    }
}
