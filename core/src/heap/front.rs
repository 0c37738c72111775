//! The heap's side of its front end: the heap's shared state is the [`Back`] the thread
//! cache sees, and the heap's fast paths find that state (initialized or not) before they hand
//! a request to the cache.

use super::*;
use crate::front::{Back, Front};

impl<C: Config> Back<C> for Shared<C> {
    #[inline(always)]
    fn heap_id(&self) -> u64 {
        self.pool.heap_id()
    }
    #[inline(always)]
    fn page_map(&self) -> &PageMap {
        &self.map
    }
    #[inline(always)]
    fn base(&self) -> &Base {
        &self.base
    }
    #[inline(always)]
    fn arena_for(&self, size: usize) -> Option<&Arena<C>> {
        Heap::<C>::choose_arena(self, size)
    }
    #[inline(always)]
    fn caches(&self) -> &CachePool {
        &self.caches
    }
    #[inline(always)]
    fn cache_on(&self) -> bool {
        self.switches.cache_on
    }
}

impl<C: Config> Heap<C> {
    /// The fast path of `allocate`: a region popped from the calling thread's cache, or `None`
    /// for anything but a small request of a cached class whose stack holds a region, in a
    /// heap without debug options, from a thread whose cache is in its memo (`allocate_slow`
    /// then does everything, fills included). A sample, where the sampling decision is on
    /// the fast path, is taken here, before the cache.
    #[inline(always)]
    pub(super) fn alloc_from_cache(
        &self,
        size: usize,
        align: usize,
        zero: bool,
    ) -> Option<*mut u8> {
        let s = self.shared_if_init()?;
        if !cacheable(size, align) {
            return None;
        }
        if C::DEBUG.contains(DebugCaps::SAMPLE) && C::SAMPLE_PATH != SamplePath::SlowPath {
            if let Some(p) = Self::sample_fast(s, size, align, zero) {
                return Some(p);
            }
        }
        Front::<C>::alloc_from_cache(s, size, zero)
    }

    /// The fast path of `free`: whether the calling thread's cache took `addr`
    /// (`Front::free_to_cache`); false before the heap is initialized.
    ///
    /// # Safety
    /// As for `Heap::try_free`.
    #[inline(always)]
    pub(super) unsafe fn free_to_cache(&self, addr: usize, check: Option<TcacheCheck>) -> bool {
        let Some(s) = self.shared_if_init() else {
            return false;
        };
        // SAFETY: forwarded contract.
        unsafe { Front::<C>::free_to_cache(s, addr, check) }
    }

    /// The fast path of `reallocate` (`Front::realloc_in_cache`); `None` before the heap is
    /// initialized.
    ///
    /// # Safety
    /// As for `Heap::reallocate`, with `addr` not null.
    #[inline(always)]
    pub(super) unsafe fn realloc_in_cache(
        &self,
        addr: usize,
        size: usize,
        align: usize,
        copy_limit: usize,
        check: Option<TcacheCheck>,
    ) -> Option<*mut u8> {
        let s = self.shared_if_init()?;
        // SAFETY: forwarded contract.
        unsafe { Front::<C>::realloc_in_cache(s, addr, size, align, copy_limit, check) }
    }

    /// Gives every region in the calling thread's cache in this heap back to its arena, and
    /// every block in the arenas' mailboxes (a no-op without a cache). Statistics and
    /// invariants do not need it; a test that wants the arenas to hold nothing does.
    pub fn flush_thread_cache(&self) {
        if !C::Front::CACHE {
            return;
        }
        if let Some(s) = self.shared_if_init() {
            Front::<C>::flush_thread_cache(s);
            // Blocks in the arenas' mailboxes (`RemoteFree::MAILBOX`) go back to their runs
            // too, so that the arenas hold what the program holds, and the other caches.
            Self::each_arena(s, |a| Front::<C>::drain_mailbox(a));
        }
    }
}
