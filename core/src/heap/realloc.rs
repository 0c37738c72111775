//! `realloc`: in place where the class or the pages allow, moved otherwise.

use super::*;

impl<C: Config> Heap<C> {
    /// Resizes the allocation at `ptr` to `new_size` bytes with alignment `align`, in place when
    /// the size class allows, moving it otherwise. Copies `min(copy_limit, usable, new_size)`
    /// bytes when moving. Returns null (leaving the allocation intact) if the request cannot be
    /// satisfied; aborts if `ptr` is not a live allocation of this heap.
    ///
    /// # Safety
    /// `ptr` is a live allocation of this heap (or null: then this allocates), not used
    /// afterwards unless null is returned.
    #[inline]
    pub unsafe fn reallocate(
        &self,
        ptr: *mut u8,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        if ptr.is_null() {
            return self.allocate(new_size, align, false);
        }
        if C::Front::CACHE {
            // SAFETY: forwarded contract.
            let fast =
                unsafe { self.realloc_in_cache(ptr as usize, new_size, align, copy_limit, None) };
            if let Some(p) = fast {
                return p;
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.reallocate_slow(ptr, new_size, align, copy_limit) }
    }

    /// The thread cache's fast path of `realloc` (alignment 16, no copy limit) for a
    /// non-null `ptr`, its checks `check` (`None`: the heap's setting, read from it).
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    pub(super) unsafe fn realloc_fast_with(
        &self,
        ptr: *mut u8,
        new_size: usize,
        check: Option<TcacheCheck>,
    ) -> Option<*mut u8> {
        if !C::Front::CACHE {
            return None;
        }
        // SAFETY: forwarded contract.
        unsafe {
            self.realloc_in_cache(
                ptr as usize,
                new_size,
                crate::meta::size_class::QUANTUM,
                usize::MAX,
                check,
            )
        }
    }

    /// `reallocate` past the thread cache's fast path: everything.
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(never)]
    pub(crate) unsafe fn reallocate_slow(
        &self,
        ptr: *mut u8,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        // A small region, found without the lock: kept if the class stays, else moved.
        if let Some(s) = self.shared_if_init().filter(|s| s.switches.plain) {
            // SAFETY: `s` is this heap's state, without debug options.
            if let Some(old) = unsafe { Self::taken_small(s, ptr as usize) } {
                let Some(new_class) = classify(new_size, align) else {
                    return ptr::null_mut();
                };
                if new_class == SizeClass::Small(old) {
                    return ptr;
                }
                let new = self.allocate(new_size, align, false);
                if !new.is_null() {
                    let n = (BINS[old].size as usize).min(new_size).min(copy_limit);
                    // SAFETY: both allocations are live, distinct and at least `n` bytes long;
                    // the old one is a taken region of class `old` (just checked), which per
                    // the contract nothing uses any more.
                    unsafe {
                        ptr::copy_nonoverlapping(ptr, new, n);
                        if !(C::Front::CACHE && Front::<C>::push_taken(s, ptr as usize, old)) {
                            self.free(ptr);
                        }
                    }
                }
                return new;
            }
        }
        let live = match self.live(ptr as usize) {
            Ok(l) => l,
            Err(e) => fatal(format_args!("realloc({:#x}): {}", ptr as usize, e.in_use())),
        };
        let Some(new_class) = classify(new_size, align) else {
            return ptr::null_mut();
        };
        let Some(s) = self.shared_if_init() else {
            return ptr::null_mut();
        };
        if C::DEBUG.intersects(ALLOC_HOOKS) && s.switches.alloc_hooks {
            // SAFETY: forwarded contract; `live` is what `ptr` is.
            return unsafe {
                self.reallocate_checked(s, ptr, live, new_class, new_size, align, copy_limit)
            };
        }
        let usable = match live {
            Live::Small { usable } => {
                if Self::same_small_class(new_class, usable) {
                    return ptr;
                }
                usable
            }
            Live::ZeroSize => 0,
            Live::Sampled { size } => size,
            Live::Large { chunk, page, at } => {
                // SAFETY: `live` validated the allocation.
                if unsafe {
                    Self::resize_large_in_place(ptr, chunk, page, at, new_class, align, |_, _| {})
                } {
                    return ptr;
                }
                at.usable
            }
            Live::Huge { rec, usable } => {
                // SAFETY: `live` validated the record and start.
                let resized = unsafe { Self::resize_huge_in_place(s, ptr, rec, new_class, align) };
                if let Some(p) = resized {
                    return p;
                }
                usable
            }
        };
        // SAFETY: per the contract; `usable` is the allocation's usable size.
        unsafe { self.move_to(ptr, usable, new_size, align, copy_limit) }
    }

    /// Whether a small region of `usable` bytes already serves a request of class `new_class`.
    #[inline(always)]
    pub(super) fn same_small_class(new_class: SizeClass, usable: usize) -> bool {
        matches!(new_class, SizeClass::Small(_))
            && crate::meta::size_class::usable(new_class) == usable
    }

    /// Resizes the large allocation `at` (head page `page` of `chunk`, starting at `ptr`) to
    /// `new_class` where it is, if that is a large class and the pages after it allow;
    /// `under_lock(chunk, page)` runs after a resize, under the arena lock. Whether it did.
    ///
    /// # Safety
    /// `at` is a live large allocation of this heap, the caller's, without a guard page.
    pub(super) unsafe fn resize_large_in_place(
        ptr: *mut u8,
        chunk: *mut ChunkHeader,
        page: usize,
        at: LargeAt,
        new_class: SizeClass,
        align: usize,
        under_lock: impl FnOnce(*mut ChunkHeader, usize),
    ) -> bool {
        let SizeClass::Large(new_pages) = new_class else {
            return false;
        };
        if !(align <= PAGE || (ptr as usize) % align == 0) {
            return false;
        }
        // SAFETY: per the contract; its arena is the chunk's.
        let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
        // SAFETY: a live large allocation of that arena, under its lock.
        arena.with(|inner| unsafe {
            let done = inner.resize_large(chunk, page, at.pages, new_pages);
            if done {
                under_lock(chunk, page);
            }
            done
        })
    }

    /// Resizes the huge allocation of record `rec` at `ptr` to `new_class` if that is a huge
    /// class (in place, or by moving the mapping); the new address, or `None`.
    ///
    /// # Safety
    /// `rec` is the live huge record of `ptr`, the caller's.
    pub(super) unsafe fn resize_huge_in_place(
        s: &Shared<C>,
        ptr: *mut u8,
        rec: usize,
        new_class: SizeClass,
        align: usize,
    ) -> Option<*mut u8> {
        let SizeClass::Huge(bytes) = new_class else {
            return None;
        };
        if (ptr as usize) % align.max(CHUNK) != 0 {
            return None;
        }
        // SAFETY: per the contract.
        let p = unsafe { s.huge.resize(rec, bytes, &s.map) };
        (!p.is_null()).then_some(p)
    }

    /// The moving part of `reallocate`: a new allocation, the bytes copied, the old one freed.
    ///
    /// # Safety
    /// `ptr` is a live allocation of this heap with `usable` usable bytes, not used afterwards
    /// unless null is returned.
    #[inline(always)]
    pub(super) unsafe fn move_to(
        &self,
        ptr: *mut u8,
        usable: usize,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        let new = self.allocate(new_size, align, false);
        if !new.is_null() {
            let n = usable.min(new_size).min(copy_limit);
            // SAFETY: both allocations are live, distinct and at least `n` bytes long.
            unsafe {
                ptr::copy_nonoverlapping(ptr, new, n);
                self.free(ptr);
            }
        }
        new
    }

    /// The small class of `addr` if it is a taken region of a small run, checked without the
    /// arena lock by the thread cache's validator (`Front::taken_region` with its full checks:
    /// page map, page entry, region boundary, bitmap bit, cache mark); `None` for anything
    /// else, which the locked path then decides (and reports).
    ///
    /// # Safety
    /// `s` is this heap's state, with no debug option on (`plain`: the region is exactly its
    /// class's size and nothing else holds pointers).
    #[inline(always)]
    pub(super) unsafe fn taken_small(s: &Shared<C>, addr: usize) -> Option<usize> {
        Front::<C>::taken_region(s, addr, Some(TcacheCheck::Full)).filter(|&idx| idx < NBINS)
    }

    /// C's `realloc`: alignment 16; `new_size` 0 frees nothing and returns a minimal allocation.
    ///
    /// # Safety
    /// As for [`Heap::reallocate`].
    pub unsafe fn realloc_c(&self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.reallocate(ptr, new_size, crate::meta::size_class::QUANTUM, usize::MAX) }
    }
}
