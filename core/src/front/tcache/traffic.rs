//! The thread cache's traffic with the arenas: fills (from an arena's runs under its lock, or
//! from its mailbox without), flushes (to the runs, or to the mailboxes: the config's
//! `RemoteFree`), and the mailboxes' return to the runs.

use super::*;

impl<C: Config> Front<C> {
    /// Takes a batch of class `idx` from an arena into the (empty) stack under one lock, and
    /// returns one of them, popped (0 if the OS refused memory).
    #[inline(never)]
    pub(crate) fn fill(s: &impl Back<C>, c: &Tcache, idx: usize, size: usize) -> usize {
        let Some(a) = s.arena_for(size) else {
            return 0;
        };
        let n = c.moves(s.caches(), idx);
        if Self::MAILBOX && s.caches().mailbox {
            // SAFETY: our own cache, whose stack of `idx` is empty.
            let p = unsafe { Self::fill_from_mailbox(c, a, idx, n) };
            if p != 0 {
                Self::after_fill(s.caches(), c, idx);
                return p;
            }
        }
        let mut taken = [0usize; MAX_BATCH];
        let taken = &mut taken[..n];
        let got = a.with(|inner| {
            if idx < NBINS {
                inner.alloc_small_batch(idx, taken, a, a.index(), s.page_map())
            } else {
                inner.alloc_large_batch(idx - NBINS + 1, taken, a, a.index(), s.page_map())
            }
        });
        if got == 0 {
            return 0;
        }
        // Lowest address on top: the order the arena handed them out in. The stack is empty,
        // so the chain is built in place and its count set once.
        let b = &c.bins[idx];
        let mut head = 0;
        for &p in taken[1..got].iter().rev() {
            // SAFETY: regions just taken from their run, ours to write (two words at least).
            unsafe {
                (p as *mut usize).write(head);
                (p as *mut usize).add(1).write(s.caches().mark(p));
            }
            head = p;
        }
        b.head.set(head);
        b.count.store(b.count.load(Relaxed) + (got - 1), Relaxed);
        Self::after_fill(s.caches(), c, idx);
        taken[0]
    }

    /// What every fill of class `idx` ends with: the class's growth for a thread that only
    /// allocates it.
    fn after_fill(pool: &CachePool, c: &Tcache, idx: usize) {
        let b = &c.bins[idx];
        // A stack that ran empty with no free of its class since its last fill takes more next
        // time: the class grows as one that overflows does, within the same bounds. So a
        // thread that only allocates a class, fed by another that frees it, fills in batches
        // of up to `MAX_BATCH`, not of its starting one; a thread that frees the class too
        // (its stack refilled by its own frees) keeps its batch.
        let absorbed = b.absorbed.load(Relaxed);
        if c.absorbed_at_fill[idx].replace(absorbed) == absorbed {
            // SAFETY: our own cache.
            unsafe { c.grow(pool, idx) };
        }
    }

    /// Takes arena `a`'s mailbox of class `idx` into the (empty) stack, at most `n` blocks of
    /// it (the rest goes back to the mailbox), and returns one of them, unmarked (0 if the
    /// mailbox was empty). No lock: one swap, one walk, and a push back of what is left.
    ///
    /// # Safety
    /// `c` is the calling thread's cache, whose stack of `idx` is empty.
    unsafe fn fill_from_mailbox(c: &Tcache, a: &Arena<C>, idx: usize, n: usize) -> usize {
        let first = a.mailbox.take(idx);
        if first == 0 {
            return 0;
        }
        // SAFETY: the mailbox's blocks are the taker's now (the swap made them ours), linked
        // through their first words, marked; the links are visible (the swap's acquire).
        unsafe {
            let mut last = first;
            let mut kept = 1;
            let mut rest = (last as *const usize).read();
            while rest != 0 && kept < n {
                last = rest;
                kept += 1;
                rest = (last as *const usize).read();
            }
            (last as *mut usize).write(0);
            let mut taken = kept;
            if rest != 0 {
                let mut end = rest;
                let mut more = 1;
                while (end as *const usize).read() != 0 {
                    end = (end as *const usize).read();
                    more += 1;
                }
                taken += more;
                // No bound: these were in the mailbox a moment ago.
                a.mailbox.push(idx, rest, end, more, usize::MAX);
            }
            a.mailbox.taken(idx, taken);
            // The first is the caller's; the others are the stack, still marked.
            let b = &c.bins[idx];
            b.head.set((first as *const usize).read());
            (first as *mut usize).add(1).write(0);
            b.count.store(b.count.load(Relaxed) + (kept - 1), Relaxed);
        }
        first
    }

    /// Gives every block in arena `a`'s mailboxes back to its run (a test that wants the
    /// arenas to hold nothing, after `flush_thread_cache`).
    pub(crate) fn drain_mailbox(a: &Arena<C>) {
        if !Self::MAILBOX {
            return;
        }
        for idx in 0..NCACHE {
            let mut p = a.mailbox.take(idx);
            let mut walked = 0;
            while p != 0 {
                let mut regions = [0usize; MAX_BATCH];
                let mut k = 0;
                while p != 0 && k < MAX_BATCH {
                    regions[k] = p;
                    k += 1;
                    // SAFETY: taken from the mailbox (ours), linked through first words; each
                    // leaves for its run unmarked.
                    unsafe {
                        p = (p as *const usize).read();
                        (regions[k - 1] as *mut usize).add(1).write(0);
                    }
                }
                walked += k;
                // SAFETY: blocks of `a`'s runs, ours, unmarked.
                unsafe { Self::give_back_all(idx, &mut regions[..k]) };
            }
            a.mailbox.taken(idx, walked);
        }
    }

    /// Gives the top `n` blocks of class `idx` back to their arenas: to their mailboxes if
    /// `pool` says so (`RemoteFree::MAILBOX`; `None`: never), within each mailbox's bound,
    /// else back to their runs, each arena locked once.
    ///
    /// # Safety
    /// The caller is the cache's thread (or the only one touching it).
    #[inline(never)]
    pub(crate) unsafe fn flush(c: &Tcache, pool: Option<&CachePool>, idx: usize, n: usize) {
        let mut regions = [0usize; MAX_BATCH];
        let b = &c.bins[idx];
        let mailbox = pool.filter(|p| Self::MAILBOX && p.mailbox);
        let mut p = b.head.get();
        let mut k = 0;
        while p != 0 && k < n.min(MAX_BATCH) {
            regions[k] = p;
            k += 1;
            // SAFETY: per the contract, the stack's regions are ours; each leaves it for its
            // run unmarked (for a mailbox, marked).
            unsafe {
                if mailbox.is_none() {
                    (p as *mut usize).add(1).write(0);
                }
                p = (p as *const usize).read();
            }
        }
        b.head.set(p);
        // Saturating: in a forked child, a cache whose thread was between moving its stack's
        // head and storing its count holds one region more than its count says (`fork_child`).
        b.count
            .store(b.count.load(Relaxed).saturating_sub(k), Relaxed);
        // alloclab_seeded: the lost flush (the batch's last region never reaches its run).
        #[cfg(alloclab_seeded)]
        if k > 0 && crate::platform::seeded::active(crate::platform::seeded::Bug::LostFlush) {
            k -= 1;
        }
        let mut regions = &mut regions[..k];
        if let Some(pool) = mailbox {
            // SAFETY: the regions are ours, off the stack, marked.
            let left = unsafe { Self::post(pool, idx, regions) };
            regions = &mut regions[..left];
            for &r in regions.iter() {
                // SAFETY: ours (a full mailbox refused them); each goes to its run unmarked.
                unsafe { (r as *mut usize).add(1).write(0) };
            }
        }
        let flushed = &c.bins[idx].flushed;
        flushed.store(flushed.load(Relaxed) + regions.len() as u64, Relaxed);
        // SAFETY: forwarded contract: regions taken off the stack, unmarked.
        unsafe { Self::give_back_all(idx, regions) };
    }

    /// Hands the flushed `regions` of class `idx` (taken off a stack, still marked) to their
    /// arenas' mailboxes, an arena's at a time; moves those a full mailbox refused to the
    /// front of `regions` and returns how many they are.
    ///
    /// # Safety
    /// The regions are the caller's, off any stack, and carry the cache's mark.
    unsafe fn post(pool: &CachePool, idx: usize, regions: &mut [usize]) -> usize {
        let limit = pool.mailbox_limit[idx] as usize;
        let mut refused = [0usize; MAX_BATCH];
        let mut left = 0;
        let mut done = 0;
        while done < regions.len() {
            let arena = arena_of::<C>(regions[done]);
            // Chain this arena's regions, in stack order.
            let (first, mut last, mut n) = (regions[done], regions[done], 1);
            for &r in regions[done + 1..].iter() {
                if r != 0 && arena_of::<C>(r) == arena {
                    // SAFETY: ours (per the contract); its first word links the chain.
                    unsafe { (last as *mut usize).write(r) };
                    last = r;
                    n += 1;
                }
            }
            // SAFETY: the chunk of a cached region is live; its arena field is fixed.
            let a = unsafe { &*arena };
            // SAFETY: per the contract: regions of `a`'s runs, marked, given up here.
            let posted = unsafe { a.mailbox.push(idx, first, last, n, limit) };
            for r in regions[done..].iter_mut() {
                if *r != 0 && arena_of::<C>(*r) == arena {
                    if !posted {
                        refused[left] = *r;
                        left += 1;
                    }
                    *r = 0;
                }
            }
            while done < regions.len() && regions[done] == 0 {
                done += 1;
            }
        }
        regions[..left].copy_from_slice(&refused[..left]);
        left
    }

    /// Gives `regions` of class `idx` (off any stack, unmarked) back to their runs, each arena
    /// locked once.
    ///
    /// # Safety
    /// The regions are taken from their runs (or, `tcache_check:light`, what a free passed the
    /// light checks with, which `give_back` checks again) and the caller's.
    unsafe fn give_back_all(idx: usize, regions: &mut [usize]) {
        let Some(&first) = regions.first() else {
            return;
        };
        let arena = arena_of::<C>(first);
        if regions.iter().all(|&r| arena_of::<C>(r) == arena) {
            // The common case: every region is of one arena.
            // SAFETY: the chunk of a cached region is live; its arena field is fixed.
            let a = unsafe { &*arena };
            a.with(|inner| {
                for &r in regions.iter() {
                    // SAFETY: a region of a live run of this arena, under its lock.
                    unsafe { give_back(inner, r) };
                }
                if idx >= NBINS {
                    inner.large_batch_freed(regions.len() * (idx - NBINS + 1));
                }
            });
            return;
        }
        let mut done = 0;
        while done < regions.len() {
            let arena = arena_of::<C>(regions[done]);
            // SAFETY: the chunk of a cached region is live; its arena field is fixed.
            let a = unsafe { &*arena };
            a.with(|inner| {
                let mut given = 0;
                for r in regions[done..].iter_mut() {
                    if *r != 0 && arena_of::<C>(*r) == arena {
                        // SAFETY: a region of a live run of this arena, under its lock.
                        unsafe { give_back(inner, *r) };
                        *r = 0;
                        given += 1;
                    }
                }
                if idx >= NBINS {
                    inner.large_batch_freed(given * (idx - NBINS + 1));
                }
            });
            while done < regions.len() && regions[done] == 0 {
                done += 1;
            }
        }
    }

    /// Empties cache `c` into the arenas (their mailboxes, if `pool` says so, as `flush`).
    ///
    /// # Safety
    /// As for `flush`.
    pub(crate) unsafe fn flush_all(c: &Tcache, pool: Option<&CachePool>) {
        for (idx, b) in c.bins.iter().enumerate() {
            while b.head.get() != 0 {
                // SAFETY: forwarded contract.
                unsafe { Self::flush(c, pool, idx, MAX_BATCH) };
            }
            // The stack was walked to its end, so its count is 0, whatever it said: in a
            // forked child, an orphan's thread may have been between storing its stack's head
            // and its count (`fork_child`).
            b.count.store(0, Relaxed);
        }
    }
}
