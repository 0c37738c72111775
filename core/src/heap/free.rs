//! Lookup and free: where a pointer lives (page map, chunk entry, huge record, the debug wing's regions) and its return there.

use super::*;

impl<C: Config> Heap<C> {
    /// Validates `addr` as a live allocation of this heap.
    pub(super) fn live(&self, addr: usize) -> Result<Live, FreeError> {
        let s = self.shared_if_init().ok_or(FreeError::NotOurs)?;
        if Self::SPECIAL && s.switches.special_ptrs {
            if s.zero_size.contains(addr) {
                return s.zero_size.check(addr, false).map(|()| Live::ZeroSize);
            }
            if s.sampler.contains(addr) {
                return s.sampler.live(addr).map(|size| Live::Sampled { size });
            }
        }
        match s.map.lookup(addr) {
            Owner::None => Err(FreeError::NotOurs),
            Owner::Chunk(c) => {
                let chunk = c as *mut ChunkHeader;
                let page = ChunkHeader::page_index(addr);
                if page < CHUNK_HEADER_PAGES {
                    return Err(FreeError::NeverAllocated);
                }
                // SAFETY: the page map says `chunk` is one of our live chunks; its arena field
                // is fixed for the chunk's life.
                let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                arena.with(|inner| {
                    // SAFETY: our chunk, under its arena's lock.
                    let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
                    // Taken from its run but freed all the same: in a thread's cache (its
                    // mark) or held in the quarantine.
                    let freed = |held: bool| if held { Err(FreeError::Freed) } else { Ok(()) };
                    match e.kind() {
                        // SAFETY: a SMALL entry of our chunk, under the lock.
                        SMALL => unsafe { ArenaInner::<C>::small_usable(chunk, page, e, addr) }
                            .and_then(|usable| {
                                // SAFETY: a region taken from its run (just validated).
                                freed(C::Front::CACHE && unsafe { s.caches.marked(addr) })?;
                                freed(inner.held_small(addr, usable))?;
                                Ok(Live::Small { usable })
                            }),
                        // SAFETY: a LARGE entry of our chunk, under the lock.
                        LARGE => unsafe { Self::large_at(chunk, page, e, addr) }.and_then(|at| {
                            let cache_on = C::Front::CACHE && s.switches.cache_on;
                            // SAFETY: the start of a large allocation (just validated).
                            freed(cache_on && unsafe { s.caches.marked(addr) })?;
                            freed(inner.held_large(ChunkHeader::page_addr(chunk, page)))?;
                            Ok(Live::Large { chunk, page, at })
                        }),
                        _ => Err(why_free_page(e.0)),
                    }
                })
            }
            Owner::Huge(rec) => {
                // SAFETY: the record came from our page map.
                let usable = unsafe { Huge::usable(rec, addr)? };
                Ok(Live::Huge { rec, usable })
            }
        }
    }

    /// Whether pointers outside the page map can be ours (compiled in).
    const SPECIAL: bool = C::DEBUG.intersects(DebugCaps::ZERO_SIZE.union(DebugCaps::SAMPLE));

    /// The large allocation at `addr`, whose head page entry is `e`.
    ///
    /// # Safety
    /// As for `guard::large_at`.
    #[inline(always)]
    pub(super) unsafe fn large_at(
        chunk: *mut ChunkHeader,
        page: usize,
        e: crate::meta::chunk::PageBits,
        addr: usize,
    ) -> Result<LargeAt, FreeError> {
        // SAFETY: forwarded contract.
        unsafe { guard::large_at(chunk, page, e, addr, C::DEBUG.contains(DebugCaps::GUARD)) }
    }

    /// Usable size of the live allocation at `ptr`, or why it is not one. With canaries on,
    /// a small allocation's usable size is the size requested (the canary follows it).
    pub fn usable_size(&self, ptr: *const u8) -> Result<usize, FreeError> {
        self.live(ptr as usize).map(|l| match l {
            Live::Small { usable } => self.small_usable(ptr as usize, usable),
            Live::Huge { usable, .. } => usable,
            Live::Large { at, .. } => at.usable,
            Live::ZeroSize => 0,
            Live::Sampled { size } => size,
        })
    }

    /// Whether the live allocation at `ptr` could have been requested as `size` bytes aligned
    /// to `align`: a request of that size would have been given the same usable size (with
    /// canaries on, a small one records its exact size). For sized deallocation checks (C++
    /// sized `delete`). Errors as for `usable_size`.
    pub fn size_fits(&self, ptr: *const u8, size: usize, align: usize) -> Result<bool, FreeError> {
        let live = self.live(ptr as usize)?;
        let canary = C::DEBUG.contains(DebugCaps::CANARY) && self.options.safety.canary;
        let request = if canary {
            size.saturating_add(CANARY_BYTES)
        } else {
            size
        };
        let same_class = |usable: usize| {
            classify(request, align.max(crate::meta::size_class::QUANTUM))
                .is_some_and(|c| crate::meta::size_class::usable(c) == usable)
        };
        Ok(match live {
            Live::ZeroSize => size == 0,
            Live::Sampled { size: s } => size == s,
            Live::Small { usable } if canary => self.small_usable(ptr as usize, usable) == size,
            Live::Small { usable } | Live::Huge { usable, .. } => same_class(usable),
            Live::Large {
                at: LargeAt {
                    request: Some(r), ..
                },
                ..
            } => size == r,
            Live::Large { at, .. } if at.guarded => {
                // The start sits as close to the guard as the alignment allowed.
                let slack = if at.start % PAGE == 0 {
                    PAGE
                } else {
                    align.max(crate::meta::size_class::QUANTUM)
                };
                size <= at.usable && at.usable - size < slack
            }
            Live::Large { at, .. } => same_class(at.usable),
        })
    }

    /// The bytes the program may use of the live small region at `addr` of `usable` bytes.
    #[inline(always)]
    pub(super) fn small_usable(&self, addr: usize, usable: usize) -> usize {
        if C::DEBUG.contains(DebugCaps::CANARY) && self.options.safety.canary {
            // SAFETY: `addr` was just validated as a live region of `usable` bytes, which
            // has a canary since canaries are on. A corrupted size field reads as the region.
            return unsafe { crate::debug::checks::canary_size(addr, usable) }.unwrap_or(usable);
        }
        usable
    }

    /// Whether `ptr` lies in memory this heap manages (a chunk or huge mapping); looks only at
    /// the page map, never at the memory.
    pub fn owns(&self, ptr: *const u8) -> bool {
        self.shared_if_init()
            .is_some_and(|s| s.map.lookup(ptr as usize) != Owner::None)
    }

    /// The index of the arena that owns the small or large allocation at `ptr`.
    pub fn arena_of(&self, ptr: *const u8) -> Option<usize> {
        match self.shared_if_init()?.map.lookup(ptr as usize) {
            // SAFETY: the page map says `c` is our live chunk; its header is immutable.
            Owner::Chunk(c) => Some(unsafe { (*(c as *const ChunkHeader)).arena_index }),
            _ => None,
        }
    }

    /// Frees `ptr`, or says why it cannot: the pointer is then left alone.
    ///
    /// # Safety
    /// If `ptr` is a live allocation of this heap, nothing may use it afterwards. Any other
    /// value is rejected without touching the memory it points to.
    pub unsafe fn try_free(&self, ptr: *mut u8) -> Result<(), FreeError> {
        let addr = ptr as usize;
        let s = self.shared_if_init().ok_or(FreeError::NotOurs)?;
        if Self::SPECIAL && s.switches.special_ptrs {
            if s.zero_size.contains(addr) {
                return s.zero_size.check(addr, true);
            }
            if s.sampler.contains(addr) {
                return s.sampler.free(addr);
            }
        }
        match s.map.lookup(addr) {
            Owner::None => Err(FreeError::NotOurs),
            Owner::Chunk(c) => {
                let chunk = c as *mut ChunkHeader;
                let page = ChunkHeader::page_index(addr);
                if page < CHUNK_HEADER_PAGES {
                    return Err(FreeError::NeverAllocated);
                }
                if C::Front::CACHE && s.switches.cache_on {
                    // SAFETY: a chunk of ours from the page map, past its header pages.
                    if let Some(r) = unsafe { Front::<C>::free_cached(s, chunk, page, addr) } {
                        return r;
                    }
                }
                // SAFETY: as in `live`.
                let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                arena.with_on_free(|inner| {
                    // SAFETY: our chunk, under its arena's lock; the entry is re-read here so
                    // that validation and free are one critical section.
                    unsafe {
                        let e = (*ChunkHeader::entry(chunk, page)).get();
                        match e.kind() {
                            SMALL => inner.free_small(chunk, page, e, addr),
                            LARGE => {
                                let at = Self::large_at(chunk, page, e, addr)?;
                                // In a thread's cache (which a thread without one, or one
                                // exiting, frees past): freed already.
                                if C::Front::CACHE && s.switches.cache_on && s.caches.marked(addr) {
                                    return Err(FreeError::Freed);
                                }
                                if inner.checks_on_free() {
                                    return inner.free_large_checked(chunk, page, at);
                                }
                                inner.free_large(chunk, page, at.pages);
                                Ok(())
                            }
                            _ => Err(why_free_page(e.0)),
                        }
                    }
                })
            }
            Owner::Huge(rec) => {
                // SAFETY: the record came from our page map; `usable` validated the start.
                unsafe {
                    Huge::usable(rec, addr)?;
                    s.huge.free(rec, &s.map);
                }
                Ok(())
            }
        }
    }

    /// `free`: frees `ptr` (null is ignored). A pointer this heap did not hand out, an interior
    /// pointer or a double free aborts the process with a one-line message naming the pointer.
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded contract.
        if unsafe { self.split().free_fast(ptr) } {
            return;
        }
        // SAFETY: forwarded contract.
        unsafe { self.free_slow(ptr) }
    }

    /// The second half of [`Heap::free`]: everything but the thread cache's fast path (null,
    /// fills and flushes, arenas, errors).
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(never)]
    pub(crate) unsafe fn free_slow(&self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: forwarded contract.
        if let Err(e) = unsafe { self.try_free(ptr) } {
            if C::DEBUG.contains(DebugCaps::SAMPLE) {
                if let Some(s) = self.shared_if_init() {
                    if s.sampler.contains(ptr as usize) {
                        s.sampler.report_bad_free(ptr as usize, e);
                    }
                }
            }
            fatal(format_args!("free({:#x}): {}", ptr as usize, e));
        }
    }
}
