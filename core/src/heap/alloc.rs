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
                if C::Front::CACHE && s.switches.cache_on && pages <= NLARGE_CACHED && align <= PAGE
                {
                    let idx = NBINS + pages - 1;
                    if let Some(p) = Front::<C>::alloc_cached(s, idx, size, zero) {
                        return p;
                    }
                }
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
