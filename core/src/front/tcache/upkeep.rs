//! The thread caches' upkeep: flushing on demand, their share of the statistics, their
//! invariant checks, and the fork child's reset.

use super::*;

impl<C: Config> Front<C> {
    /// Gives every region in the calling thread's cache in the heap behind `s` back to its
    /// arena (a no-op without a cache).
    pub(crate) fn flush_thread_cache(s: &impl Back<C>) {
        if let Some(v) = thread::bind_cache(s.heap_id(), || 0, |_| {}) {
            // SAFETY: our own cache, alive as long as the heap.
            unsafe { Self::flush_all(&*(v as *const Tcache), None) };
        }
    }

    /// Turns the arenas' counts of blocks leaving and entering runs and pages into the
    /// program's: the blocks held by thread caches move from `live` (and, for the large ones,
    /// from `large_allocated`) to `cached`, frees count those the caches took instead of those
    /// they gave back, and allocations are frees plus live.
    ///
    /// `mailed`: the blocks in the arenas' mailboxes, per class, which count as cached too.
    pub(crate) fn account_caches(
        s: &impl Back<C>,
        st: &mut crate::back::stats::Stats,
        mailed: &[usize; NCACHE],
    ) {
        if !C::Front::CACHE {
            return;
        }
        let mut cached = *mailed;
        let mut absorbed = [0u64; NCACHE];
        let mut flushed = [0u64; NCACHE];
        s.caches().with(|l| {
            for mut c in [l.live, l.spare] {
                while !c.is_null() {
                    // SAFETY: caches listed under the pool lock; counts are atomics.
                    unsafe {
                        for (i, b) in (*c).bins.iter().enumerate() {
                            cached[i] += b.count.load(Relaxed);
                            absorbed[i] += b.absorbed.load(Relaxed);
                            flushed[i] += b.flushed.load(Relaxed);
                        }
                        c = (*c).next.get();
                    }
                }
            }
        });
        let mut bytes = 0;
        for (i, b) in st.bins.iter_mut().enumerate() {
            let n = cached[i];
            b.cached = n;
            b.live = b.live.saturating_sub(n);
            b.frees = (b.frees + absorbed[i]).saturating_sub(flushed[i]);
            b.allocations = b.frees + b.live as u64;
            bytes += n * cache_class_bytes(i);
        }
        // The large classes: the arena counted a block a cache holds as allocated and live.
        let a = &mut st.arena;
        let mut large_bytes = 0;
        for i in NBINS..NCACHE {
            let n = cached[i];
            large_bytes += n * cache_class_bytes(i);
            a.large_frees = (a.large_frees + absorbed[i]).saturating_sub(flushed[i]);
            a.large_allocations = (a.large_allocations + absorbed[i])
                .saturating_sub(flushed[i])
                .saturating_sub(n as u64);
        }
        a.large_allocated = a.large_allocated.saturating_sub(large_bytes);
        bytes += large_bytes;
        st.cached = bytes;
        st.allocated = st.allocated.saturating_sub(bytes);
    }

    /// Every cache's counts within its bounds; every region of the calling thread's cache a
    /// taken region of its class, marked, on one stack once, and its count the stack's length.
    /// (Other threads' stacks are theirs to read; their regions are checked when they flush,
    /// each handed back must be taken from its run, or the process aborts.)
    pub(crate) fn check_caches(s: &impl Back<C>) -> Result<(), Violation> {
        if !C::Front::CACHE {
            return Ok(());
        }
        let bad = |what| Err(Violation::new(ViolationKind::ThreadCache(what)));
        let me = thread::thread_key();
        s.caches().with(|l| {
            let mut c = l.live;
            while !c.is_null() {
                // SAFETY: live caches, listed under the pool lock.
                let cache = unsafe { &*c };
                let (mut bytes, mut cap_bytes) = (0, 0);
                for (i, b) in cache.bins.iter().enumerate() {
                    // The count first (acquire, pairing with `push`), then a capacity at
                    // least as new as the one the count was pushed under.
                    let n = b.count.load(Acquire);
                    let cap = b.cap.load(Relaxed);
                    if n > cap {
                        return bad("a class holds more regions than its capacity");
                    }
                    if cap < s.caches().base(i) || cap > s.caches().most[i] as usize {
                        return bad("a class's capacity is outside its range");
                    }
                    bytes += n * cache_class_bytes(i);
                    cap_bytes += cap * cache_class_bytes(i);
                }
                if bytes > s.caches().max_bytes || cap_bytes > s.caches().max_bytes {
                    return bad("a cache holds, or may hold, more bytes than its bound");
                }
                if cache.owner.get() == me {
                    Self::check_own_cache(s, cache)?;
                }
                c = cache.next.get();
            }
            Ok(())
        })
    }

    pub(crate) fn check_own_cache(s: &impl Back<C>, c: &Tcache) -> Result<(), Violation> {
        let bad = |what, at| Err(Violation::new(ViolationKind::ThreadCache(what)).at(at));
        for (idx, b) in c.bins.iter().enumerate() {
            let mut n = 0;
            let mut p = b.head.get();
            while p != 0 {
                // A region on the stack twice makes it loop (its link is the same both times),
                // so the walk outruns any capacity.
                if n == b.cap.load(Relaxed) {
                    return bad("a stack is longer than the capacity, or loops", p);
                }
                n += 1;
                let Owner::Chunk(chunk) = s.page_map().lookup(p) else {
                    return bad("a cached region is not in a chunk of this heap", p);
                };
                let chunk = chunk as *mut ChunkHeader;
                let page = ChunkHeader::page_index(p);
                // SAFETY: a live chunk of this heap (page map); its arena field is fixed.
                let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                let ok = page >= CHUNK_HEADER_PAGES
                    && arena.with(|_| {
                        // SAFETY: our chunk, under its arena's lock.
                        unsafe {
                            let e = (*ChunkHeader::entry(chunk, page)).get();
                            if idx >= NBINS {
                                return large_class(e, p) == Some(idx);
                            }
                            e.kind() == SMALL
                                && e.bin() == idx
                                && ArenaInner::<C>::small_usable(chunk, page, e, p).is_ok()
                        }
                    });
                if !ok {
                    return bad("a cached block is not a taken block of its class", p);
                }
                // SAFETY: a taken region of this heap.
                if !unsafe { s.caches().marked(p) } {
                    return bad("a cached region lost its mark", p);
                }
                // SAFETY: as above; its first word links the stack.
                p = unsafe { (p as *const usize).read() };
            }
            if n != b.count.load(Relaxed) {
                return bad("a count differs from its stack's length", b.head.get());
            }
        }
        Ok(())
    }

    /// In a forked child: flushes the caches of every thread but the calling one (they do not
    /// exist in the child) and makes them spare.
    pub(crate) fn fork_child(s: &impl Back<C>) {
        if !C::Front::CACHE {
            return;
        }
        let me = thread::thread_key();
        s.caches().with(|l| {
            let mut link: *mut *mut Tcache = &mut l.live;
            // SAFETY: list nodes are caches of this heap, linked under the pool lock; in the
            // child the orphans' threads are gone, so this thread is the only one to touch them.
            unsafe {
                while !(*link).is_null() {
                    let c = *link;
                    if (*c).owner.get() == me {
                        link = (*c).next.as_ptr();
                        continue;
                    }
                    // The orphan's thread may have been anywhere in a push, pop, fill or
                    // flush when the parent forked (those take no pool lock): its stack is
                    // whole up to the head it last stored, but a count may be one off, which
                    // `flush_all` allows for. (A region that was between a stack and its run
                    // or its program stays out of both in the child: a leak, never a region
                    // handed out twice.)
                    Self::flush_all(&*c, None);
                    *link = (*c).next.get();
                    (*c).next.set(l.spare);
                    l.spare = c;
                }
            }
        });
    }
}
