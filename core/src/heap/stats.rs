//! Statistics, invariant checks, purging on demand, and the steps the fork handlers take.

use super::*;

impl<C: Config> Heap<C> {
    /// Arenas created so far.
    pub fn arenas_created(&self) -> usize {
        let mut n = 0;
        self.for_each_arena(|_| n += 1);
        n
    }

    /// Statistics of one arena, if it exists.
    pub fn arena_stats(
        &self,
        index: usize,
    ) -> Option<(
        ArenaStats,
        [crate::back::stats::BinStats; crate::meta::size_class::NBINS],
    )> {
        let s = self.shared_if_init()?;
        let a = s.arenas.get(index)?.load(Ordering::Acquire);
        if a.is_null() {
            return None;
        }
        // SAFETY: published arenas live until the heap is dropped.
        let a = unsafe { &*a };
        Some(a.with(|inner| {
            let mut bins =
                [crate::back::stats::BinStats::default(); crate::meta::size_class::NBINS];
            for (b, bin) in bins.iter_mut().zip(inner.bins.iter()) {
                *b = bin.stats;
            }
            (a.stats_with_lock(&inner.stats), bins)
        }))
    }

    /// Calls `f(index, counts)` for each arena's lock, in index order: acquisitions, contended
    /// acquisitions and time waited since the arena was made. Takes no lock (each count is some
    /// recent value) and allocates nothing.
    pub fn arena_lock_stats(&self, mut f: impl FnMut(usize, LockStats)) {
        self.for_each_arena(|a| f(a.index(), a.lock_stats()));
    }

    /// Test hook (verification builds): takes arena `index`'s lock, runs `f` with a probe
    /// telling whether another thread sleeps waiting for that lock, and releases it; `None` if
    /// the arena does not exist. `f` must not use this heap's arena `index` (it would deadlock).
    #[cfg(feature = "verification")]
    pub fn hold_arena_lock<R>(
        &self,
        index: usize,
        f: impl FnOnce(&dyn Fn() -> bool) -> R,
    ) -> Option<R> {
        let s = self.shared_if_init()?;
        let a = s.arenas.get(index)?.load(Ordering::Acquire);
        if a.is_null() {
            return None;
        }
        // SAFETY: published arenas live until the heap is dropped.
        let a = unsafe { &*a };
        a.lock();
        let r = f(&|| a.lock_has_sleepers());
        a.unlock();
        Some(r)
    }

    /// A snapshot of the heap's statistics (each arena is read under its own lock, in turn).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        let Some(s) = self.shared_if_init() else {
            return st;
        };
        // Blocks in the arenas' mailboxes: taken from their runs, held by no program.
        let mut mailed = [0usize; NCACHE];
        self.for_each_arena(|a| {
            if Front::<C>::MAILBOX {
                for (i, m) in mailed.iter_mut().enumerate() {
                    *m += a.mailbox.held(i);
                }
            }
            st.arenas += 1;
            a.with(|inner| {
                let mut allocations = inner.stats.large_allocations;
                for (b, bin) in st.bins.iter_mut().zip(inner.bins.iter()) {
                    b.add(&bin.stats);
                    allocations += bin.stats.allocations;
                }
                if allocations > 0 {
                    st.arenas_used += 1;
                }
                let own = a.stats_with_lock(&inner.stats);
                st.lock_contended_max_arena = st.lock_contended_max_arena.max(own.lock_contended);
                st.lock_wait_ns_max_arena = st.lock_wait_ns_max_arena.max(own.lock_wait_ns);
                st.arena.add(&own);
            })
        });
        let h = s.huge.stats();
        st.huge_live = h.live;
        st.huge_allocated = h.allocated;
        st.huge_allocations = h.allocations;
        st.huge_frees = h.frees;
        st.huge_cached = h.cached;
        st.huge_cached_bytes = h.cached_bytes;
        st.huge_cache_hits = h.cache_hits;
        st.huge_maps = h.maps;
        st.huge_unmaps = h.unmaps;
        st.huge_remaps = h.remaps;
        st.syscalls = os::syscalls();
        st.allocated = st.arena.small_allocated + st.arena.large_allocated + h.allocated;
        st.active = st.arena.active_pages * PAGE + h.allocated;
        // Huge slack (a reused mapping larger than its allocation) and cached mappings are
        // mapped, and resident as far as they were touched: counted with the dirty pages.
        let huge_idle = h.mapped - h.allocated + h.cached_bytes;
        st.mapped = st.arena.chunks * CHUNK + h.mapped + h.cached_bytes;
        st.dirty = st.arena.dirty_pages * PAGE;
        Front::<C>::account_caches(s, &mut st, &mailed);
        st.metadata = s.map.metadata_bytes()
            + s.base.mapped()
            + st.arena.chunks * CHUNK_HEADER_PAGES * PAGE
            + round_up(core::mem::size_of::<Shared<C>>(), PAGE).unwrap_or(0);
        st.resident = st.active + st.dirty + huge_idle + st.metadata;
        st
    }

    /// Walks every arena, bin, run, free page run and huge record, and returns the first broken
    /// invariant: policy knowledge of non-full runs (each exactly once, no full or empty run),
    /// bitmap counts, page-map consistency, free-run coalescing and lists, and statistics.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        let Some(s) = self.shared_if_init() else {
            return Ok(());
        };
        let mut result = Ok(());
        self.for_each_arena(|a| {
            if result.is_ok() {
                result = a.with(|inner| inner.check(a, a.index(), &s.map));
            }
        });
        result?;
        Front::<C>::check_caches(s)?;
        s.huge.check(&s.map)
    }

    /// `check_invariants`, plus: each `(pointer, requested size)` in `live` is a live
    /// allocation with usable size at least the request, and no two overlap. Sorts `live`.
    pub fn check_live(&self, live: &mut [(usize, usize)]) -> Result<(), Violation> {
        self.check_invariants()?;
        live.sort_unstable();
        let mut prev_end = 0usize;
        let mut prev = 0usize;
        for &(p, size) in live.iter() {
            let usable = self
                .usable_size(p as *const u8)
                .map_err(|e| Violation::new(ViolationKind::NotLive(e)).at(p))?;
            if usable < size {
                return Err(Violation::new(ViolationKind::Stats {
                    what: "usable size",
                    expected: size,
                    actual: usable,
                })
                .at(p));
            }
            if p < prev_end {
                return Err(Violation::new(ViolationKind::Overlap { other: prev }).at(p));
            }
            prev_end = p + usable;
            prev = p;
        }
        Ok(())
    }

    /// Returns every dirty page of every arena, and every cached huge mapping, to the OS.
    pub fn purge(&self) {
        self.for_each_arena(|a| a.with(|inner| inner.purge(0)));
        if let Some(s) = self.shared_if_init() {
            s.huge.purge_cache(true);
        }
    }

    /// Takes, releases or resets every lock of this heap (see `fork.rs` for the order).
    pub(super) fn fork_step(s: &Shared<C>, step: Step) {
        match step {
            Step::Lock => {
                s.arena_lock.lock();
                s.pool.lock();
                s.caches.lock();
                s.base.lock();
                s.huge.lock();
                s.sampler.lock();
                Self::each_arena(s, |a| a.lock());
            }
            Step::Unlock => {
                Self::each_arena(s, |a| a.unlock());
                s.sampler.unlock();
                s.huge.unlock();
                s.base.unlock();
                s.caches.unlock();
                s.pool.unlock();
                s.arena_lock.unlock();
            }
            Step::Reset => {
                Self::each_arena(s, |a| a.reset_lock());
                s.sampler.reset_lock();
                s.huge.reset_lock();
                s.base.reset_lock();
                s.caches.reset_lock();
                s.pool.reset_lock();
                s.arena_lock.reset();
                Front::<C>::fork_child(s);
            }
        }
    }
}
