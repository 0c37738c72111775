//! An arena's invariant walk: every chunk, run and list checked against the others (`Heap::check`).

use super::*;

impl<C: Config> ArenaInner<C> {
    /// Walks every chunk, run and list of this arena; returns the first violation.
    pub fn check(
        &self,
        arena: *const Arena<C>,
        arena_index: usize,
        map: &PageMap,
    ) -> Result<(), Violation> {
        let err = |v: Violation| v.in_arena(arena_index);
        #[cfg(feature = "verification")]
        if let Some((idx, addr)) = self.unusable_pick {
            return Err(err(Violation::new(ViolationKind::UnusablePick)
                .in_bin(idx)
                .at(addr)));
        }
        let mut runs = [0usize; NBINS];
        let mut nonfull = [0usize; NBINS];
        let mut live = [0usize; NBINS];
        let mut small_bytes = 0;
        let mut large_bytes = 0;
        let mut active = 0;
        let mut dirty = 0;
        let mut free_runs = 0usize;
        let mut purging = 0;
        let mut chunks = 0;
        let mut c = self.chunks;
        while !c.is_null() {
            chunks += 1;
            if crate::meta::page_map::Owner::Chunk(c as usize) != map.lookup(c as usize) {
                return Err(err(Violation::new(ViolationKind::PageMap(
                    "chunk not registered",
                ))
                .at(c as usize)));
            }
            // SAFETY: chunks on our list are live and we hold the lock (callers use `with`).
            unsafe {
                if (*c).arena != arena.cast() || (*c).arena_index != arena_index {
                    return Err(err(Violation::new(ViolationKind::PageMap(
                        "chunk header names another arena",
                    ))
                    .at(c as usize)));
                }
                for p in 0..CHUNK_HEADER_PAGES {
                    if (*ChunkHeader::entry(c, p)).kind() != META {
                        return Err(err(Violation::new(ViolationKind::PageMap(
                            "header page not META",
                        ))
                        .at(c as usize)));
                    }
                }
                let mut p = CHUNK_HEADER_PAGES;
                let mut prev_free = false;
                while p < CHUNK_PAGES {
                    let e = &*ChunkHeader::entry(c, p);
                    let at = ChunkHeader::page_addr(c, p);
                    match e.bits & KIND_MASK {
                        FREE => {
                            let len = e.len();
                            if prev_free {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "adjacent free runs not coalesced",
                                ))
                                .at(at)));
                            }
                            if len == 0 || p + len > CHUNK_PAGES {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "bad free run length",
                                ))
                                .at(at)));
                            }
                            let last = &*ChunkHeader::entry(c, p + len - 1);
                            if last.kind() != FREE || last.len() != len {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "free run ends disagree",
                                ))
                                .at(at)));
                            }
                            for i in 0..len {
                                let pe = &*ChunkHeader::entry(c, p + i);
                                if pe.kind() != FREE {
                                    return Err(err(Violation::new(ViolationKind::FreeRuns(
                                        "non-free page inside free run",
                                    ))
                                    .at(at)));
                                }
                                dirty += usize::from(pe.dirty());
                            }
                            if !self.in_list(ChunkHeader::entry(c, p), len) {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "free run missing from its list",
                                ))
                                .at(at)));
                            }
                            free_runs += 1;
                            prev_free = true;
                            p += len;
                        }
                        SMALL => {
                            prev_free = false;
                            let idx = e.bin();
                            if idx >= NBINS || e.run_offset() != 0 {
                                return Err(err(Violation::new(ViolationKind::PageMap(
                                    "small run does not start at its first page",
                                ))
                                .at(at)));
                            }
                            let info = bin(idx);
                            let pages = info.run_pages as usize;
                            for i in 1..pages {
                                let pe = &*ChunkHeader::entry(c, p + i);
                                if pe.kind() != SMALL || pe.bin() != idx || pe.run_offset() != i {
                                    return Err(err(Violation::new(ViolationKind::PageMap(
                                        "small run page entries inconsistent",
                                    ))
                                    .at(at)
                                    .in_bin(idx)));
                                }
                            }
                            let run = Run(RunHeader::at(at, idx));
                            self.check_run(run, idx, at)
                                .map_err(|v| err(v.in_bin(idx).at(run.0.as_ptr() as usize)))?;
                            let free = run.free();
                            let cap = info.capacity as usize;
                            runs[idx] += 1;
                            if free > 0 {
                                nonfull[idx] += 1;
                            }
                            live[idx] += cap - free;
                            small_bytes += (cap - free) * info.size as usize;
                            active += pages;
                            p += pages;
                        }
                        LARGE => {
                            prev_free = false;
                            if e.bits & HEAD == 0 || e.len() == 0 || p + e.len() > CHUNK_PAGES {
                                return Err(err(Violation::new(ViolationKind::PageMap(
                                    "large allocation without a valid head page",
                                ))
                                .at(at)));
                            }
                            let len = e.len();
                            for i in 1..len {
                                let pe = &*ChunkHeader::entry(c, p + i);
                                if pe.kind() != LARGE || pe.bits & HEAD != 0 {
                                    return Err(err(Violation::new(ViolationKind::PageMap(
                                        "large allocation pages inconsistent",
                                    ))
                                    .at(at)));
                                }
                            }
                            large_bytes += len * PAGE;
                            active += len;
                            p += len;
                        }
                        // A page being purged without the lock: counted against the records
                        // below. It separates free runs like an allocated page.
                        META if e.bits == PURGING => {
                            prev_free = false;
                            purging += 1;
                            p += 1;
                        }
                        _ => {
                            return Err(err(Violation::new(ViolationKind::PageMap(
                                "META page outside the header",
                            ))
                            .at(at)))
                        }
                    }
                }
                c = (*c).next;
            }
        }
        // Every listed run is a free run we walked: compare counts.
        let mut listed = 0;
        for len in 1..=CHUNK_USABLE_PAGES {
            let mut e = self.avail.heads[len];
            let bit = self.avail.nonempty[len / 64] >> (len % 64) & 1 == 1;
            if bit == e.is_null() {
                return Err(err(Violation::new(ViolationKind::FreeRuns(
                    "non-empty bitmap disagrees with list",
                ))));
            }
            while !e.is_null() {
                listed += 1;
                // SAFETY: list entries are live entries of our chunks.
                unsafe {
                    if (*e).kind() != FREE || (*e).len() != len {
                        return Err(err(Violation::new(ViolationKind::FreeRuns(
                            "listed entry is not a free run of that length",
                        ))));
                    }
                    e = (*e).next;
                }
            }
        }
        self.check_purging(purging).map_err(err)?;
        let s = &self.stats;
        let chk = |r: Result<(), Violation>| r.map_err(err);
        chk(expect_eq("free runs listed", free_runs, listed))?;
        chk(expect_eq("chunks", chunks, s.chunks))?;
        chk(expect_eq("dirty pages", dirty, s.dirty_pages))?;
        chk(expect_eq("active pages", active, s.active_pages))?;
        chk(expect_eq(
            "small allocated bytes",
            small_bytes,
            s.small_allocated,
        ))?;
        chk(expect_eq(
            "large allocated bytes",
            large_bytes,
            s.large_allocated,
        ))?;
        for idx in 0..NBINS {
            let b = &self.bins[idx];
            let inb = |r: Result<(), Violation>| r.map_err(|v| err(v.in_bin(idx)));
            inb(expect_eq("bin runs", runs[idx], b.stats.runs))?;
            inb(expect_eq(
                "bin non-full runs",
                nonfull[idx],
                b.stats.nonfull_runs,
            ))?;
            inb(expect_eq("bin live regions", live[idx], b.stats.live))?;
            inb(expect_eq(
                "bin allocations - frees",
                live[idx],
                (b.stats.allocations - b.stats.frees) as usize,
            ))?;
            self.check_policy(idx, nonfull[idx])
                .map_err(|v| err(v.in_bin(idx)))?;
        }
        Ok(())
    }

    /// The purge records against the `purging` pages the walk found: every recorded span lies
    /// in one of our chunks and is all `PURGING` pages, and the spans add up to the number
    /// found (so no two spans overlap and no page is unrecorded).
    pub(super) fn check_purging(&self, purging: usize) -> Result<(), Violation> {
        let pg = &self.purging;
        if pg.chosen & pg.in_flight != 0 {
            return Err(Violation::new(ViolationKind::FreeRuns(
                "purge slot both chosen and in flight",
            )));
        }
        let mut recorded = 0;
        for slot in slots(pg.chosen | pg.in_flight) {
            let s = pg.spans[slot];
            let (page, len) = (s.page as usize, s.len as usize);
            let mut c = self.chunks;
            while !c.is_null() && c != s.chunk {
                // SAFETY: chunks on our list are live.
                c = unsafe { (*c).next };
            }
            if c.is_null() || len == 0 || page < CHUNK_HEADER_PAGES || page + len > CHUNK_PAGES {
                return Err(Violation::new(ViolationKind::FreeRuns(
                    "purge record outside our chunks",
                )));
            }
            for p in page..page + len {
                // SAFETY: a page of one of our chunks, in range (checked above).
                if unsafe { (*ChunkHeader::entry(c, p)).bits } != PURGING {
                    return Err(Violation::new(ViolationKind::FreeRuns(
                        "page of a purge record not marked as being purged",
                    ))
                    .at(ChunkHeader::page_addr(c, p)));
                }
            }
            recorded += len;
        }
        expect_eq("pages being purged", purging, recorded)
    }

    pub(super) fn in_list(&self, e: *mut PageEntry, len: usize) -> bool {
        let mut x = self.avail.heads[len];
        while !x.is_null() {
            if x == e {
                return true;
            }
            // SAFETY: list entries are live entries of our chunks.
            x = unsafe { (*x).next };
        }
        false
    }

    /// # Safety
    /// `run` is a live run of bin `idx` of this arena, starting at `base`.
    pub(super) unsafe fn check_run(
        &self,
        run: Run,
        idx: usize,
        base: usize,
    ) -> Result<(), Violation> {
        // SAFETY: per the contract.
        unsafe {
            if !run.header_ok(base) || run.bin_index() != idx {
                return Err(Violation::new(ViolationKind::RunHeaderCorrupt));
            }
            let cap = bin(idx).capacity as usize;
            let (pop, free) = (run.bitmap_popcount(), run.free());
            if pop != free {
                return Err(Violation::new(ViolationKind::BitmapCount {
                    bitmap: pop,
                    free,
                }));
            }
            if !run.bitmap_shape_ok() {
                return Err(Violation::new(ViolationKind::BitmapShape));
            }
            if free == cap {
                return Err(Violation::new(ViolationKind::EmptyRunKept));
            }
        }
        Ok(())
    }

    /// Every run the policy knows is a non-full run of this bin, known once, and every
    /// non-full run is known.
    pub(super) fn check_policy(&self, idx: usize, nonfull: usize) -> Result<(), Violation> {
        let policy = &self.bins[idx].policy;
        C::Reuse::check(policy).map_err(|s| Violation::new(ViolationKind::Policy(s)))?;
        // Collect the known runs into scratch memory (never our own heap: we hold its lock).
        let mut count = 0usize;
        C::Reuse::for_each(policy, &mut |_| count += 1);
        if count == 0 {
            return if nonfull == 0 {
                Ok(())
            } else {
                Err(Violation::new(ViolationKind::NonFullRunUnknown))
            };
        }
        // A stack buffer for the common case; mapped scratch for bins with many runs.
        let mut on_stack = [0usize; 128];
        let mapped = if count > on_stack.len() {
            let bytes = round_up(count * 8, PAGE).unwrap_or(PAGE);
            match os::map(bytes) {
                Some(m) => Some((m, bytes)),
                None => return Ok(()),
            }
        } else {
            None
        };
        // The slots the buffer holds, from its real size: a sizing mistake above then lists
        // fewer runs than there are, which the count below reports, instead of overrunning
        // the buffer (VERIFY.md: a mutant that shrank the mapping went unnoticed).
        let (slice, room) = match mapped {
            Some((m, bytes)) => (m.as_ptr().cast::<usize>(), bytes / 8),
            None => (on_stack.as_mut_ptr(), on_stack.len()),
        };
        let mut n = 0;
        let mut bad: Result<(), Violation> = Ok(());
        C::Reuse::for_each(policy, &mut |r| {
            if n < count.min(room) {
                // SAFETY: `n < room` slots fit in the buffer (`room` is the stack buffer's
                // length, or the mapping's bytes over 8, the size of a `usize` here).
                unsafe { slice.add(n).write(r.addr()) };
                n += 1;
            }
            if bad.is_ok() {
                bad = self.known_run_ok(r.addr(), idx);
            }
        });
        // SAFETY: `n` slots were written above.
        let known = unsafe { core::slice::from_raw_parts_mut(slice, n) };
        known.sort_unstable();
        let twice = known.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
        if let Some((m, bytes)) = mapped {
            // SAFETY: mapped above, no longer used.
            unsafe { os::unmap(m.as_ptr(), bytes) };
        }
        bad?;
        if let Some(a) = twice {
            // Named by its start, as every message names a run. Every known run passed
            // `known_run_ok` above, so `known_run` finds it.
            let run = self.known_run(a, idx)?;
            // SAFETY: a live run of this bin, and we hold the lock.
            let start = unsafe { run.base() };
            return Err(Violation::new(ViolationKind::RunKnownTwice).at(start));
        }
        if n != nonfull {
            return Err(Violation::new(ViolationKind::NonFullRunUnknown));
        }
        Ok(())
    }

    /// A run the policy knows must be a live, non-full run of bin `idx` in one of our chunks.
    pub(super) fn known_run_ok(&self, id: usize, idx: usize) -> Result<(), Violation> {
        let run = self.known_run(id, idx)?;
        // SAFETY: `known_run` found a live run of this arena; we hold the lock.
        unsafe {
            if run.free() == 0 {
                return Err(Violation::new(ViolationKind::FullRunKnown).at(run.base()));
            }
        }
        Ok(())
    }

    /// The live run of bin `idx` in one of our chunks whose identity (`RunRef::addr`, where
    /// the policy's links are) is `id`, checked before anything at `id` is read: a policy
    /// may hand back any address.
    pub(super) fn known_run(&self, id: usize, idx: usize) -> Result<Run, Violation> {
        let foreign = Err(Violation::new(ViolationKind::ForeignRunKnown).at(id));
        let mut c = self.chunks;
        while !c.is_null() && ChunkHeader::of(id) != c {
            // SAFETY: chunks on our list are live.
            c = unsafe { (*c).next };
        }
        if c.is_null() {
            return foreign;
        }
        let page = match C::Reuse::LINKS {
            LinkPlace::RunHeader => ChunkHeader::page_index(id),
            LinkPlace::ChunkMap => {
                // `id` must be the link words of a page entry: at the right offset in the
                // chunk header's array of entries.
                let first = core::mem::offset_of!(ChunkHeader, pages)
                    + core::mem::offset_of!(PageEntry, prev);
                let size = core::mem::size_of::<PageEntry>();
                let off = (id - c as usize).wrapping_sub(first);
                if off % size != 0 || off / size >= CHUNK_PAGES {
                    return foreign;
                }
                off / size
            }
        };
        // SAFETY: `c` is our chunk and `page` is in range.
        unsafe {
            let e = &*ChunkHeader::entry(c, page);
            if e.kind() != SMALL || e.bin() != idx {
                return foreign;
            }
            let base = ChunkHeader::page_addr(c, page - e.run_offset());
            let header = RunHeader::at(base, idx);
            let expected = match C::Reuse::LINKS {
                LinkPlace::RunHeader => header.as_ptr() as usize,
                LinkPlace::ChunkMap if e.run_offset() == 0 => id,
                // The entry of a run's later page: not where a run's links are.
                LinkPlace::ChunkMap => 0,
            };
            if expected != id {
                return foreign;
            }
            Ok(Run(header))
        }
    }
}
