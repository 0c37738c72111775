//! The debug wing's side of the heap: the paths a debug option takes instead of the plain
//! ones. Sampled allocations (the sampling decision, slow and fast, and the guarded slot),
//! the checked allocation path (`malloc(0)` into the inaccessible region, canaries after
//! small allocations, guard pages after large ones, junk), and the checked reallocation path
//! (the canary's in-place resize, no in-place growth into a guard page, the new request
//! recorded). The plain paths (`alloc.rs`, `free.rs`, `realloc.rs`) call here only where a
//! switch (`policy/switches.rs`) and the config's compiled-in capabilities say so, so a
//! config without a capability compiles these calls away.

use super::*;

impl<C: Config> Heap<C> {
    /// Whether the slow path samples this allocation, as `Config::SAMPLE_PATH` says.
    /// (`cacheable`: what the thread cache's fast path serves, and so decides for.)
    #[inline(always)]
    pub(super) fn sample_slow(&self, s: &Shared<C>, size: usize, align: usize) -> bool {
        match C::SAMPLE_PATH {
            SamplePath::SlowPath => s.sampler.should_sample(size, align),
            // The cache's fast path already counted what it could serve.
            SamplePath::Countdown => {
                !(C::Front::CACHE && cacheable(size, align)) && s.sampler.should_sample(size, align)
            }
            // A gate opened earlier is taken first: the decision below opens it (and under the
            // static key, patches the fast path's branch in) for the next allocation, not this
            // one, unless the key cannot be turned on here.
            SamplePath::Gate | SamplePath::StaticKey => {
                if s.sampler.take_gate(size, align) {
                    return true;
                }
                s.sampler.should_sample(size, align) && s.sampler.open_gate()
            }
        }
    }

    /// The sampling decision on the thread cache's fast path (`SamplePath::Countdown`, `Gate`
    /// and `StaticKey`): a sampled allocation, or `None` to go on.
    #[inline(always)]
    pub(super) fn sample_fast(
        s: &Shared<C>,
        size: usize,
        align: usize,
        zero: bool,
    ) -> Option<*mut u8> {
        let take = match C::SAMPLE_PATH {
            SamplePath::SlowPath => false,
            SamplePath::Countdown => s.sampler.on() && s.sampler.should_sample(size, align),
            SamplePath::Gate => s.sampler.take_gate(size, align),
            // The branch is a `nop` until some heap's gate opens; only then the gate is read.
            SamplePath::StaticKey if crate::debug::static_key::PATCHED => {
                crate::debug::static_key::branch() && Self::take_keyed(s, size, align)
            }
            SamplePath::StaticKey => s.sampler.take_gate(size, align),
        };
        if !take {
            return None;
        }
        let p = Self::allocate_sampled(s, size, align, zero);
        (!p.is_null()).then_some(p)
    }

    /// `SamplePath::StaticKey`, behind the patched branch: out of the fast path's line.
    #[inline(never)]
    pub(super) fn take_keyed(s: &Shared<C>, size: usize, align: usize) -> bool {
        s.sampler.take_gate(size, align)
    }

    /// A sampled allocation (`sampled.rs`), or null if the pool is full.
    #[inline(never)]
    pub(super) fn allocate_sampled(
        s: &Shared<C>,
        size: usize,
        align: usize,
        zero: bool,
    ) -> *mut u8 {
        let p = s.sampler.alloc(size, align);
        if C::DEBUG.contains(DebugCaps::JUNK) && s.safety.junk && !zero && !p.is_null() {
            // SAFETY: a fresh sampled allocation of `size` bytes.
            unsafe { crate::debug::checks::fill(p as usize, size, JUNK_BYTE) };
        }
        p
    }

    /// `allocate` with the debug options that act on the allocation itself: `malloc(0)` into
    /// the inaccessible region, canaries after small allocations, guard pages after large
    /// ones, junk.
    #[inline(never)]
    pub(super) fn allocate_checked(
        &self,
        s: &Shared<C>,
        size: usize,
        align: usize,
        zero: bool,
    ) -> *mut u8 {
        let safety = &s.safety;
        if C::DEBUG.contains(DebugCaps::ZERO_SIZE) && safety.zero_size && size == 0 {
            let p = s.zero_size.alloc();
            if !p.is_null() && (p as usize) % align == 0 {
                return p;
            }
            if !p.is_null() {
                // Over-aligned zero-size requests are ordinary allocations.
                let _ = s.zero_size.check(p as usize, true);
            }
        }
        let canary = C::DEBUG.contains(DebugCaps::CANARY) && safety.canary;
        let request = if canary {
            size.saturating_add(CANARY_BYTES)
        } else {
            size
        };
        match classify(request, align) {
            Some(SizeClass::Small(idx)) => {
                let Some(a) = Self::choose_arena(s, size) else {
                    return ptr::null_mut();
                };
                let p = a.with(|inner| inner.alloc_small(idx, zero, a, a.index(), &s.map));
                if canary && !p.is_null() {
                    // SAFETY: a fresh region of `BINS[idx].size >= size + CANARY_BYTES` bytes.
                    unsafe {
                        crate::debug::checks::write_canary(
                            p as usize,
                            size,
                            BINS[idx].size as usize,
                        )
                    };
                }
                p
            }
            Some(SizeClass::Large(pages)) => {
                let Some(a) = Self::choose_arena(s, size) else {
                    return ptr::null_mut();
                };
                // The pages of the request itself: a canary has no place in a large one.
                let pages = match classify(size, align) {
                    Some(SizeClass::Large(p)) => p,
                    _ => pages,
                };
                let extra = if align > PAGE { align / PAGE - 1 } else { 0 };
                let guarded = C::DEBUG.contains(DebugCaps::GUARD)
                    && safety.guard
                    && pages + 1 + extra <= CHUNK_USABLE_PAGES;
                let pages = pages + usize::from(guarded);
                let p = a.with(|inner| {
                    let p = inner.alloc_large(pages, align, zero, a, a.index(), &s.map);
                    if p.is_null() {
                        return p;
                    }
                    let chunk = ChunkHeader::of(p as usize);
                    let page = ChunkHeader::page_index(p as usize);
                    let mut start = p as usize;
                    if guarded {
                        // SAFETY: a large allocation of `pages >= 2` pages just made, under
                        // the lock.
                        start = unsafe { guard::arm(chunk, page, pages, size, align) };
                    }
                    let end = p as usize + (pages - usize::from(guarded)) * PAGE;
                    // SAFETY: as above; `size` fits between `start` and `end`.
                    unsafe { guard::record_request(chunk, page, start, end, size) };
                    start as *mut u8
                });
                if C::DEBUG.contains(DebugCaps::JUNK) && safety.junk && !zero && !p.is_null() {
                    // SAFETY: a fresh allocation of at least `size` bytes.
                    unsafe { crate::debug::checks::fill(p as usize, size, JUNK_BYTE) };
                }
                p
            }
            Some(SizeClass::Huge(bytes)) => s.huge.alloc(bytes, align, zero, &s.base, &s.map),
            None => ptr::null_mut(),
        }
    }

    /// `reallocate` past its lookup, with the debug options that act on the allocation itself
    /// on (the wing of `reallocate_slow`, as `allocate_checked` is of `allocate_slow`): a
    /// small region with a canary is resized in place by `resize_with_canary`; a large
    /// allocation is resized in place only when guard pages are off, and records its new
    /// request; anything else as the plain path does, then moved.
    ///
    /// # Safety
    /// As for `Heap::reallocate`; `live` is what `ptr` is, `new_class` the class of
    /// `new_size` at `align`.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn reallocate_checked(
        &self,
        s: &Shared<C>,
        ptr: *mut u8,
        live: Live,
        new_class: SizeClass,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        let usable = match live {
            Live::Small { usable } if C::DEBUG.contains(DebugCaps::CANARY) && s.safety.canary => {
                // SAFETY: a live small region of `usable` bytes with a canary, the caller's.
                if unsafe { Self::resize_with_canary(s, ptr as usize, usable, new_size, align) } {
                    return ptr;
                }
                self.small_usable(ptr as usize, usable)
            }
            Live::Small { usable } => {
                if Self::same_small_class(new_class, usable) {
                    return ptr;
                }
                usable
            }
            Live::ZeroSize => 0,
            Live::Sampled { size } => size,
            Live::Large { chunk, page, at }
                if !(C::DEBUG.contains(DebugCaps::GUARD) && s.safety.guard) =>
            {
                let record = |chunk, page| {
                    if let SizeClass::Large(new_pages) = new_class {
                        let end = ptr as usize + new_pages * PAGE;
                        // SAFETY: the allocation was just resized to `new_pages` pages from
                        // `ptr`, under its arena's lock; `new_size` fits in them.
                        unsafe { guard::record_request(chunk, page, ptr as usize, end, new_size) };
                    }
                };
                // SAFETY: `live` validated the allocation, which has no guard page.
                if unsafe {
                    Self::resize_large_in_place(ptr, chunk, page, at, new_class, align, record)
                } {
                    return ptr;
                }
                at.usable
            }
            Live::Large { at, .. } => at.usable,
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

    /// `reallocate` of a small region that carries a canary, in place: true if `new_size`
    /// (with its canary) asks for the region's own class, and then the canary has moved to
    /// the new end. The old canary is checked first, as a free would, so an overflow made
    /// before the resize is still reported; bytes a growth adds are junk when junk is on.
    ///
    /// # Safety
    /// `addr` is a live small region of this heap of `usable` bytes, with a canary, that
    /// belongs to the caller.
    pub(super) unsafe fn resize_with_canary(
        s: &Shared<C>,
        addr: usize,
        usable: usize,
        new_size: usize,
        align: usize,
    ) -> bool {
        let fits = new_size
            .checked_add(CANARY_BYTES)
            .and_then(|n| classify(n, align));
        if !(matches!(fits, Some(SizeClass::Small(_)))
            && fits.map(crate::meta::size_class::usable) == Some(usable)
            && addr % align == 0)
        {
            return false;
        }
        // SAFETY: per the contract, the region is ours and has a canary.
        unsafe {
            crate::debug::checks::check_canary(addr, usable, "reallocated");
            let old = crate::debug::checks::canary_size(addr, usable).unwrap_or(usable);
            crate::debug::checks::write_canary(addr, new_size, usable);
            if C::DEBUG.contains(DebugCaps::JUNK) && s.safety.junk && new_size > old {
                crate::debug::checks::fill(addr + old, new_size - old, JUNK_BYTE);
            }
        }
        true
    }
}
