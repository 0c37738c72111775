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
        let usable = match live {
            Live::Small { usable } if C::DEBUG.contains(DebugCaps::CANARY) && s.safety.canary => {
                // SAFETY: a live small region of `usable` bytes with a canary, the caller's.
                if unsafe { Self::resize_with_canary(s, ptr as usize, usable, new_size, align) } {
                    return ptr;
                }
                self.small_usable(ptr as usize, usable)
            }
            Live::Small { usable } => {
                if crate::meta::size_class::usable(new_class) == usable
                    && matches!(new_class, SizeClass::Small(_))
                {
                    return ptr;
                }
                usable
            }
            Live::ZeroSize => 0,
            Live::Sampled { size } => size,
            Live::Large {
                chunk,
                page,
                at: LargeAt { pages, .. },
            } if !(C::DEBUG.contains(DebugCaps::GUARD) && s.safety.guard) => {
                if let SizeClass::Large(new_pages) = new_class {
                    if align <= PAGE || (ptr as usize) % align == 0 {
                        // SAFETY: `live` validated the allocation; its arena is the chunk's.
                        let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                        // SAFETY: a live large allocation of that arena, under its lock.
                        if arena.with(|inner| unsafe {
                            let done = inner.resize_large(chunk, page, pages, new_pages);
                            if done && s.switches.alloc_hooks {
                                let end = ptr as usize + new_pages * PAGE;
                                guard::record_request(chunk, page, ptr as usize, end, new_size);
                            }
                            done
                        }) {
                            return ptr;
                        }
                    }
                }
                pages * PAGE
            }
            Live::Large { at, .. } => at.usable,
            Live::Huge { rec, usable } => {
                if let SizeClass::Huge(bytes) = new_class {
                    if (ptr as usize) % align.max(CHUNK) == 0 {
                        // SAFETY: `live` validated the record and start.
                        let p = unsafe { s.huge.resize(rec, bytes, &s.map) };
                        if !p.is_null() {
                            return p;
                        }
                    }
                }
                usable
            }
        };
        // SAFETY: per the contract; `usable` is the allocation's usable size.
        unsafe { self.move_to(ptr, usable, new_size, align, copy_limit) }
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
    /// arena lock as the thread cache's free does (page map, page entry, region boundary,
    /// bitmap bit, cache mark); `None` for anything else, which the locked path then decides
    /// (and reports).
    ///
    /// # Safety
    /// `s` is this heap's state, with no debug option on (`plain`: the region is exactly its
    /// class's size and nothing else holds pointers).
    #[inline(always)]
    pub(super) unsafe fn taken_small(s: &Shared<C>, addr: usize) -> Option<usize> {
        let Owner::Chunk(c) = s.map.lookup(addr) else {
            return None;
        };
        let chunk = c as *mut ChunkHeader;
        let page = ChunkHeader::page_index(addr);
        if page < CHUNK_HEADER_PAGES {
            return None;
        }
        // SAFETY: a live chunk of ours (page map), past its header pages. The entry of a page
        // of a live run does not change while one of its regions is taken, which is what a
        // valid `addr` is; anything else is refused below or by the locked path.
        let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
        let r = SmallRegion::locate(chunk, page, e, addr)?.ok()?;
        // SAFETY: the entry names a live run holding `addr`'s page; the mark is read from a
        // region taken from its run (bit clear).
        let taken = unsafe { !(r.is_free() || (C::Front::CACHE && s.caches.marked(addr))) };
        taken.then_some(r.idx)
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
