//! The thread cache's paths: allocation, free and realloc through the calling thread's
//! cache (its fills and flushes are `traffic.rs`).

use super::*;

impl<C: Config> Front<C> {
    /// The calling thread's cache in this heap, made on first use; `None` while the thread
    /// exits or if the OS refused memory.
    #[inline(always)]
    pub(crate) fn thread_cache(s: &impl Back<C>) -> Option<&Tcache> {
        let v = match thread::front_cache(s.heap_id()) {
            Some(v) => v,
            None => thread::bind_cache(
                s.heap_id(),
                || Self::new_cache(s),
                |v| Self::retire_cache(s, v as *mut Tcache),
            )?,
        };
        // SAFETY: bound caches live (in the heap's base) until the heap is dropped.
        Some(unsafe { &*(v as *const Tcache) })
    }

    /// A cache for the calling thread: a spare one, or a new one from the base; 0 if none.
    #[cold]
    pub(crate) fn new_cache(s: &impl Back<C>) -> usize {
        let owner = thread::thread_key();
        let mut c = s.caches().with(|l| {
            let c = l.spare;
            if !c.is_null() {
                // SAFETY: caches on the spare list are ours, under the pool lock.
                l.spare = unsafe { (*c).next.get() };
            }
            c
        });
        if c.is_null() {
            // Outside the pool lock: the base has its own.
            let Some(mem) = s.base().alloc(
                core::mem::size_of::<Tcache>(),
                core::mem::align_of::<Tcache>(),
            ) else {
                return 0;
            };
            c = mem.as_ptr().cast::<Tcache>();
            // SAFETY: fresh metadata of the right size and alignment.
            unsafe {
                c.write(Tcache {
                    bins: core::array::from_fn(|_| CacheBin {
                        head: Cell::new(0),
                        count: AtomicUsize::new(0),
                        absorbed: AtomicU64::new(0),
                        flushed: AtomicU64::new(0),
                        cap: AtomicUsize::new(0),
                    }),
                    absorbed_at_fill: core::array::from_fn(|_| Cell::new(0)),
                    cap_bytes: Cell::new(0),
                    owner: Cell::new(0),
                    next: Cell::new(ptr::null_mut()),
                })
            };
        }
        s.caches().with(|l| {
            // SAFETY: `c` is ours (spare, emptied when it was retired, or fresh).
            unsafe {
                (*c).reset_caps(s.caches());
                (*c).owner.set(owner);
                (*c).next.set(l.live);
            }
            l.live = c;
        });
        c as usize
    }

    /// Takes an empty cache off the live list and makes it spare.
    pub(crate) fn retire_cache(s: &impl Back<C>, c: *mut Tcache) {
        s.caches().with(|l| {
            // SAFETY: list nodes are caches of this heap, linked under the pool lock.
            unsafe {
                let mut link: *mut *mut Tcache = &mut l.live;
                while !(*link).is_null() {
                    if *link == c {
                        *link = (*c).next.get();
                        break;
                    }
                    link = (**link).next.as_ptr();
                }
                (*c).next.set(l.spare);
            }
            l.spare = c;
        });
    }

    /// The fast path of `allocate` once the heap has checked that a request of `size` bytes
    /// is one a cache serves (`cacheable`) and the debug wing did not take it (a sample): a
    /// region popped from the calling thread's cache, or `None` for a class whose stack is
    /// empty, or a thread whose cache is not in its memo (`allocate_slow` then does
    /// everything, fills included). No lock, no atomic read-modify-write, no call.
    #[inline(always)]
    pub(crate) fn alloc_from_cache(s: &impl Back<C>, size: usize, zero: bool) -> Option<*mut u8> {
        // No `cache_on` test: a thread's memo holds a cache only in a heap whose cache is on
        // (only `alloc_cached` and `free_cached` bind one, and only there).
        let idx = cache_index(size);
        let v = thread::front_cache(s.heap_id())?;
        // SAFETY: the memo holds a live cache of this heap, the calling thread's own.
        let c = unsafe { &*(v as *const Tcache) };
        // SAFETY: our own cache. A class that is not cached has an empty stack.
        let p = unsafe { c.pop(idx) };
        if p == 0 {
            return None;
        }
        if zero {
            // SAFETY: a block of class `idx`, now the caller's.
            unsafe { ptr::write_bytes(p as *mut u8, 0, cache_class_bytes(idx)) };
        }
        Some(p as *mut u8)
    }

    /// The class of `addr` if it is a region of this heap taken from its run, or a large
    /// allocation of a cached class, and not in any cache, validated without a lock as
    /// `free_cached` does (page map, page entry, region boundary, bitmap bit, cache mark; for
    /// a large one, the head entry and its start); `None` for anything else, which the locked
    /// paths then sort out (null, errors, other large and huge allocations).
    ///
    /// `check`: the heap's `Options::tcache_check` as the caller knows it, or `None` to read
    /// it from the heap.
    #[inline(always)]
    pub(crate) fn taken_region(
        s: &impl Back<C>,
        addr: usize,
        check: Option<TcacheCheck>,
    ) -> Option<usize> {
        let idx = Self::taken_class(s, addr, check)?;
        // SAFETY: `taken_class` returns a small class (`idx < NBINS` checked) or a large one
        // (`large_class`: at most `NBINS + NLARGE_CACHED - 1`). Said here because the two
        // paths' ranges are lost where they join, and the fast path indexes the cache by it.
        unsafe { core::hint::assert_unchecked(idx < NCACHE) };
        Some(idx)
    }

    /// `taken_region`'s checks.
    #[inline(always)]
    fn taken_class(s: &impl Back<C>, addr: usize, check: Option<TcacheCheck>) -> Option<usize> {
        let Owner::Chunk(chunk) = s.page_map().lookup(addr) else {
            return None;
        };
        let chunk = chunk as *mut ChunkHeader;
        let page = ChunkHeader::page_index(addr);
        // SAFETY: a live chunk of ours; as in `free_cached`, the entry of a page of a live
        // run does not change while one of its regions is taken. (Header pages have entries
        // too, of kind `META`, which the kind check refuses.)
        let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
        // Unmasked: `idx < NBINS` below refuses a bin field with bits set above it as well.
        let idx = e.bin_unmasked();
        let light = match check {
            Some(c) => {
                debug_assert!(c == TcacheCheck::Full || s.caches().light);
                c == TcacheCheck::Light
            }
            None => s.caches().light,
        };
        if light {
            // `tcache_check:light`: no boundary, no bitmap. Aligned, so that the mark's word
            // is inside the page (and most interior pointers still go to the locked path).
            // SAFETY: a 16-aligned address in a page of a live small run: two words mapped.
            if !(e.kind() == SMALL && idx < NBINS) {
                return Self::taken_large(s, e, addr);
            }
            // SAFETY: a 16-aligned address in a page of a live small run: two words mapped.
            let taken = addr % QUANTUM == 0 && !unsafe { s.caches().marked(addr) };
            return taken.then_some(idx);
        }
        let Some(r) = SmallRegion::locate(chunk, page, e, addr) else {
            return Self::taken_large(s, e, addr);
        };
        let r = r.ok()?;
        // SAFETY: as in `free_cached`: the entry names a live run holding `addr`'s page; the
        // mark is read from a taken region.
        let free = unsafe { r.is_free() || s.caches().marked(addr) };
        (!free).then_some(r.idx)
    }

    /// `taken_region` for a pointer whose page's entry `e` names no small run: its class if
    /// it starts a large allocation of a cached class (`large_class`) that is in no cache.
    #[inline(always)]
    fn taken_large(s: &impl Back<C>, e: PageBits, addr: usize) -> Option<usize> {
        let idx = large_class(e, addr)?;
        // Only where a cache is on (a memo holds one): in a heap with debug options, a large
        // allocation held in the quarantine is inaccessible, and its mark is not read.
        Self::memo_cache(s)?;
        // SAFETY: the start of a large allocation (its head entry says so), in a heap whose
        // cache is on, so one that nothing made inaccessible: a page mapped and readable.
        let free = unsafe { s.caches().marked(addr) };
        (!free).then_some(idx)
    }

    /// The calling thread's cache if it is in the thread's memo (the fast paths' way in).
    #[inline(always)]
    pub(crate) fn memo_cache(s: &impl Back<C>) -> Option<&Tcache> {
        let v = thread::front_cache(s.heap_id())?;
        // SAFETY: the memo holds a live cache of this heap, the calling thread's own.
        Some(unsafe { &*(v as *const Tcache) })
    }

    /// The fast path of `free`: whether `addr` was pushed on the calling thread's cache. False
    /// for anything but a taken region of a cached class (`taken_region`) whose stack has
    /// room, in a heap without debug options, from a thread whose cache is in its memo:
    /// `free_slow` then does everything (flushes, errors, null).
    ///
    /// # Safety
    /// As for `Heap::try_free`.
    #[inline(always)]
    pub(crate) unsafe fn free_to_cache(
        s: &impl Back<C>,
        addr: usize,
        check: Option<TcacheCheck>,
    ) -> bool {
        // No `cache_on` test: as in `alloc_from_cache`, the memo check below covers it.
        let Some(idx) = Self::taken_region(s, addr, check) else {
            return false;
        };
        let Some(c) = Self::memo_cache(s) else {
            return false;
        };
        if !c.has_room(idx) {
            return false;
        }
        // SAFETY: a taken region, not in any cache, that per the contract nothing uses; our
        // own cache, whose class has room.
        unsafe { c.push(s.caches(), idx, addr) };
        true
    }

    /// The fast path of `reallocate`: a small region resized within its class (the same
    /// pointer) or moved to another small class through the calling thread's cache (a region
    /// popped, the bytes copied, the old region pushed: no lock). `None` for anything else,
    /// including an empty or full stack and every heap with a debug option (no cache): the
    /// slow path then does everything.
    ///
    /// # Safety
    /// As for `Heap::reallocate`, with `addr` not null.
    #[inline(always)]
    pub(crate) unsafe fn realloc_in_cache(
        s: &impl Back<C>,
        addr: usize,
        size: usize,
        align: usize,
        copy_limit: usize,
        check: Option<TcacheCheck>,
    ) -> Option<*mut u8> {
        // No `cache_on` test: as in `alloc_from_cache`, the memo check below covers it.
        if !(align <= QUANTUM && size <= SMALL_MAX) {
            return None;
        }
        let old = Self::taken_region(s, addr, check)?;
        // Before the same-class answer: a heap with a debug option never caches (so no memo
        // holds a cache), and its regions carry what this path does not move (a canary after
        // the requested bytes): the slow path resizes them.
        let c = Self::memo_cache(s)?;
        let new = cache_index(size);
        if new == old {
            return Some(addr as *mut u8);
        }
        if !c.has_room(old) {
            return None;
        }
        // SAFETY: our own cache. A class that is not cached has an empty stack.
        let p = unsafe { c.pop(new) };
        if p == 0 {
            return None;
        }
        let n = cache_class_bytes(old).min(size).min(copy_limit);
        if n > SHORT_COPY {
            // Out of line and last: the call to `memcpy` (and the registers it makes this
            // path save) stays off the moves of short blocks, the common ones.
            // SAFETY: as below.
            return Some(unsafe { Self::move_long(s.caches(), c, old, addr, p, n) });
        }
        // SAFETY: two distinct regions of at least `n` bytes, the new one ours, the old one
        // taken (checked above) and per the contract no longer used; it is pushed after the
        // copy, on a class with room.
        unsafe {
            copy_short(addr, p, n);
            c.push(s.caches(), old, addr);
        }
        Some(p as *mut u8)
    }

    /// The end of `realloc_in_cache` for a block of more than `SHORT_COPY` bytes: copies `n`
    /// bytes from `addr` to `p` and pushes `addr` on class `old`; returns `p`.
    ///
    /// # Safety
    /// As at its call: `p` and `addr` are distinct small regions of at least `n` bytes, `p`
    /// popped from the calling thread's cache `c`, `addr` taken, of class `old`, no longer
    /// used, and the class has room.
    #[inline(never)]
    pub(crate) unsafe fn move_long(
        pool: &CachePool,
        c: &Tcache,
        old: usize,
        addr: usize,
        p: usize,
        n: usize,
    ) -> *mut u8 {
        // SAFETY: per the contract.
        unsafe {
            ptr::copy_nonoverlapping(addr as *const u8, p as *mut u8, n);
            c.push(pool, old, addr);
        }
        p as *mut u8
    }

    /// Pushes `addr`, a taken region of class `idx` that its caller just validated (and
    /// frees), on the calling thread's cache; false (nothing done) when `free_to_cache` would
    /// not take it for other reasons than validation.
    ///
    /// # Safety
    /// `addr` is a taken region of class `idx` of this heap, not in any cache, that nothing
    /// uses any more.
    #[inline(always)]
    pub(crate) unsafe fn push_taken(s: &impl Back<C>, addr: usize, idx: usize) -> bool {
        if !s.cache_on() {
            return false;
        }
        let Some(v) = thread::front_cache(s.heap_id()) else {
            return false;
        };
        // SAFETY: the memo holds a live cache of this heap, the calling thread's own.
        let c = unsafe { &*(v as *const Tcache) };
        if !c.has_room(idx) {
            return false;
        }
        // SAFETY: per the contract the region is ours to push; the class has room.
        unsafe { c.push(s.caches(), idx, addr) };
        true
    }

    /// `malloc` of small class `idx` through the calling thread's cache; `None` when the class
    /// is not cached or the thread has no cache (the caller then asks an arena).
    #[inline(always)]
    pub(crate) fn alloc_cached(
        s: &impl Back<C>,
        idx: usize,
        size: usize,
        zero: bool,
    ) -> Option<*mut u8> {
        if s.caches().base(idx) == 0 {
            return None;
        }
        let c = Self::thread_cache(s)?;
        // SAFETY: our own cache.
        let mut p = unsafe { c.pop(idx) };
        if p == 0 {
            p = Self::fill(s, c, idx, size);
            if p == 0 {
                return Some(ptr::null_mut());
            }
        }
        if zero {
            // SAFETY: a block of class `idx`, now the caller's.
            unsafe { ptr::write_bytes(p as *mut u8, 0, cache_class_bytes(idx)) };
        }
        Some(p as *mut u8)
    }

    /// `free` of `addr` in chunk `chunk`, page `page`, through the calling thread's cache;
    /// `None` when it is not a cached class's region or large allocation, or the thread has no
    /// cache (the caller then frees it under the arena lock, which also validates it).
    ///
    /// # Safety
    /// `chunk` is a live chunk of this heap (from the page map), `page` the page of `addr` in
    /// it and not a header page.
    #[inline(always)]
    pub(crate) unsafe fn free_cached(
        s: &impl Back<C>,
        chunk: *mut ChunkHeader,
        page: usize,
        addr: usize,
    ) -> Option<Result<(), FreeError>> {
        // Without the lock: the entry of a page of a live run does not change while one of its
        // regions is taken, nor a large allocation's head entry while it is live, which is
        // what a valid `addr` is; anything else is refused below or by the locked path.
        // SAFETY: per the contract.
        let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
        let idx = if SmallRegion::names_a_run(e, page) {
            e.bin_unmasked()
        } else {
            large_class(e, addr)?
        };
        if s.caches().base(idx) == 0 {
            return None;
        }
        let c = Self::thread_cache(s)?;
        if idx < NBINS {
            let r = match SmallRegion::at(chunk, page, e, idx, addr) {
                Ok(r) => r,
                Err(err) => return Some(Err(err)),
            };
            // SAFETY: the entry names a live run holding `addr`'s page.
            if unsafe { r.is_free() } {
                // Back in its run: the locked path says whether it was freed or never
                // allocated.
                return None;
            }
        }
        // SAFETY: the mark is read from a region taken from its run (bit clear) or from the
        // start of a large allocation; the block is ours to push once it is known not to be
        // in a cache.
        unsafe {
            if s.caches().marked(addr) {
                // In a cache: freed already.
                return Some(Err(FreeError::Freed));
            }
            if !c.has_room(idx) && !c.grow(s.caches(), idx) {
                Self::flush(c, Some(s.caches()), idx, c.moves(s.caches(), idx));
            }
            c.push(s.caches(), idx, addr);
        }
        Some(Ok(()))
    }
}
