//! Allocation: dispatch by size class to the thread cache, an arena, a huge mapping or the debug wing's paths; which arena serves a thread.

use super::*;

impl<C: Config> Heap<C> {
    #[inline(always)]
    pub(super) fn choose_arena(s: &Shared<C>, size: usize) -> Option<&Arena<C>> {
        let ctx = ArenaCtx::new(&s.pool);
        let i = C::Arenas::choose(&ctx, &s.choice, size) % MAX_ARENAS;
        Self::arena(s, i)
    }

    #[inline(always)]
    pub(super) fn arena(s: &Shared<C>, i: usize) -> Option<&Arena<C>> {
        let a = s.arenas[i].load(Ordering::Acquire);
        if !a.is_null() {
            // SAFETY: published arenas live until the heap is dropped.
            return Some(unsafe { &*a });
        }
        Self::create_arena(s, i)
    }

    #[cold]
    pub(super) fn create_arena(s: &Shared<C>, i: usize) -> Option<&Arena<C>> {
        let _g = s.arena_lock.guard();
        let a = s.arenas[i].load(Ordering::Acquire);
        if a.is_null() {
            let mem = s.base.alloc(
                core::mem::size_of::<Arena<C>>(),
                core::mem::align_of::<Arena<C>>(),
            )?;
            let a = mem.as_ptr().cast::<Arena<C>>();
            // SAFETY: fresh metadata of the right size and alignment.
            unsafe { a.write(Arena::new(i, s.dirty_max, s.purge, s.safety)) };
            s.arenas[i].store(a, Ordering::Release);
            // SAFETY: just published.
            return Some(unsafe { &*a });
        }
        // SAFETY: as in `arena`.
        Some(unsafe { &*a })
    }

    pub(super) fn for_each_arena(&self, f: impl FnMut(&Arena<C>)) {
        if let Some(s) = self.shared_if_init() {
            Self::each_arena(s, f);
        }
    }

    pub(super) fn each_arena(s: &Shared<C>, mut f: impl FnMut(&Arena<C>)) {
        for slot in s.arenas.iter() {
            let a = slot.load(Ordering::Acquire);
            if !a.is_null() {
                // SAFETY: published arenas live until the heap is dropped.
                f(unsafe { &*a });
            }
        }
    }

    /// Allocates `size` bytes aligned to `align` (a power of two); null if the request cannot
    /// be satisfied (overflowing sizes, or the OS refused memory). `size` 0 is served as 1.
    #[inline(always)]
    pub fn allocate(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        if C::Front::CACHE {
            if let Some(p) = self.alloc_from_cache(size, align, zero) {
                return p;
            }
        }
        self.allocate_slow(size, align, zero)
    }

    /// `allocate` past the thread cache's fast path: everything.
    #[inline(never)]
    pub(crate) fn allocate_slow(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        let Some(s) = self.shared() else {
            return ptr::null_mut();
        };
        if C::DEBUG.contains(DebugCaps::SAMPLE)
            && s.sampler.on()
            && self.sample_slow(s, size, align)
        {
            let p = Self::allocate_sampled(s, size, align, zero);
            if !p.is_null() {
                return p;
            }
        }
        if C::DEBUG.intersects(ALLOC_HOOKS) && s.switches.alloc_hooks {
            return self.allocate_checked(s, size, align, zero);
        }
        match classify(size, align) {
            Some(SizeClass::Small(idx)) => {
                if C::Front::CACHE && s.switches.cache_on {
                    if let Some(p) = Front::<C>::alloc_cached(s, idx, size, zero) {
                        return p;
                    }
                }
                match Self::choose_arena(s, size) {
                    Some(a) => a.with(|inner| inner.alloc_small(idx, zero, a, a.index(), &s.map)),
                    None => ptr::null_mut(),
                }
            }
            Some(SizeClass::Large(pages)) => {
                // Page-level activity: cached huge mappings past the purge policy's delay go
                // back even if no huge block is allocated or freed again.
                s.huge.tick();
                match Self::choose_arena(s, size) {
                    Some(a) => {
                        a.with(|inner| inner.alloc_large(pages, align, zero, a, a.index(), &s.map))
                    }
                    None => ptr::null_mut(),
                }
            }
            Some(SizeClass::Huge(bytes)) => s.huge.alloc(bytes, align, zero, &s.base, &s.map),
            None => ptr::null_mut(),
        }
    }

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

    /// `malloc`: `size` bytes aligned to 16.
    #[inline]
    pub fn malloc(&self, size: usize) -> *mut u8 {
        self.allocate(size, crate::meta::size_class::QUANTUM, false)
    }

    /// `calloc`: `n * size` zeroed bytes; null if the product overflows.
    pub fn calloc(&self, n: usize, size: usize) -> *mut u8 {
        match n.checked_mul(size) {
            Some(total) => self.allocate(total, crate::meta::size_class::QUANTUM, true),
            None => ptr::null_mut(),
        }
    }
}
