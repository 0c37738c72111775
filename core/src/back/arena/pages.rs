//! An arena's pages: chunks, free page runs (best fit, coalescing), and purging.

use super::*;

impl<C: Config> ArenaInner<C> {
    /// Maps a new chunk, registers it, and adds its usable pages as one clean free run.
    pub(super) fn new_chunk(
        &mut self,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> bool {
        let Some(mem) = os::map_aligned(CHUNK, CHUNK) else {
            return false;
        };
        let chunk = mem.as_ptr().cast::<ChunkHeader>();
        if C::DEBUG.contains(DebugCaps::ZERO_CHECK) && self.safety.checks_zero(true) {
            // The seed's bug, on purpose (`ZeroCheck::All`): the whole chunk is read, so every
            // page of it is faulted in before any is used.
            // SAFETY: a fresh, exclusively owned, readable chunk mapping.
            unsafe { checks::check_zero(chunk as usize, CHUNK, "fresh chunk") };
        }
        // SAFETY: a fresh, exclusively owned chunk mapping.
        unsafe { ChunkHeader::init(chunk, arena.cast(), index) };
        if !map.set(chunk as usize, CHUNK, chunk as usize | TAG_CHUNK) {
            // SAFETY: never published.
            unsafe { os::unmap(chunk.cast(), CHUNK) };
            return false;
        }
        // SAFETY: the chunk is ours and its header initialized.
        unsafe {
            (*chunk).next = self.chunks;
            self.avail.insert(
                ChunkHeader::entry(chunk, CHUNK_HEADER_PAGES),
                CHUNK_USABLE_PAGES,
            );
        }
        self.chunks = chunk;
        self.stats.chunks += 1;
        true
    }

    /// Takes `n` pages (`1..=CHUNK_USABLE_PAGES`) out of the free runs, mapping a chunk if
    /// needed. The pages keep their `FREE` bits (and dirty flags) for the caller to overwrite.
    pub(super) fn take_pages(
        &mut self,
        n: usize,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> Option<(*mut ChunkHeader, usize)> {
        let len = match self.avail.best_fit(n) {
            Some(l) => l,
            None => {
                if !self.new_chunk(arena, index, map) {
                    return None;
                }
                CHUNK_USABLE_PAGES
            }
        };
        Some(self.take_run(n, len))
    }

    /// `take_pages` from the free runs there are: `None` rather than a new chunk.
    pub(super) fn take_free_pages(&mut self, n: usize) -> Option<(*mut ChunkHeader, usize)> {
        let len = self.avail.best_fit(n)?;
        Some(self.take_run(n, len))
    }

    /// Takes the first `n` pages of the first free run of `len` pages (`len >= n`, and the
    /// list of that length is not empty) and lists the rest.
    fn take_run(&mut self, n: usize, len: usize) -> (*mut ChunkHeader, usize) {
        let e = self.avail.heads[len];
        let (chunk, page) = ChunkHeader::locate(e);
        // SAFETY: `e` heads a free run of `len` pages in one of our chunks.
        unsafe {
            self.avail.remove(e, len);
            if len > n {
                self.list_free_run(chunk, page + n, len - n);
            }
        }
        (chunk, page)
    }

    /// Makes `page..page+len` a free run of the lists as it stands (ends written, listed),
    /// without coalescing: its neighbours are not free pages (or were merged into it).
    ///
    /// # Safety
    /// `chunk` is ours and `page..page+len` are free pages inside it, in no list.
    pub(super) unsafe fn list_free_run(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        len: usize,
    ) {
        // SAFETY: per the contract.
        unsafe {
            self.set_free_run_ends(chunk, page, len);
            self.avail.insert(ChunkHeader::entry(chunk, page), len);
        }
    }

    /// Writes the length into the first and last entry of a free run, keeping their content
    /// flags.
    ///
    /// # Safety
    /// `chunk` is ours and `page..page+len` are free pages inside it.
    pub(super) unsafe fn set_free_run_ends(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        len: usize,
    ) {
        // SAFETY: per the contract.
        unsafe {
            let first = ChunkHeader::entry(chunk, page);
            (*first).bits = PageEntry::free_bits(len, (*first).content());
            let last = ChunkHeader::entry(chunk, page + len - 1);
            (*last).bits = PageEntry::free_bits(len, (*last).content());
        }
    }

    /// Marks `page..page+n` (just taken by `take_pages`) with `bits(i)`; zeroes the dirty ones
    /// if `zero`, and returns how many were dirty. `as_zero`: the caller takes the clean pages
    /// as zero (a run, whose regions then serve `calloc` without a `memset`, or a zeroed large
    /// allocation), so `zero_check` reads them first.
    ///
    /// # Safety
    /// The pages were just returned by `take_pages` for `chunk`.
    pub(super) unsafe fn claim_pages(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        n: usize,
        zero: bool,
        as_zero: bool,
        bits: impl Fn(usize) -> usize,
    ) -> usize {
        let mut dirty = 0;
        for i in 0..n {
            // SAFETY: per the contract, the entries are ours.
            unsafe {
                let e = ChunkHeader::entry(chunk, page + i);
                if (*e).dirty() {
                    dirty += 1;
                    if zero {
                        ptr::write_bytes(
                            ChunkHeader::page_addr(chunk, page + i) as *mut u8,
                            0,
                            PAGE,
                        );
                    }
                } else if C::DEBUG.contains(DebugCaps::ZERO_CHECK) && as_zero {
                    let fresh = (*e).bits & PURGED == 0;
                    if self.safety.checks_zero(fresh) {
                        let what = if fresh { "fresh page" } else { "purged page" };
                        // SAFETY: a page of our chunk, just taken under the lock; purged pages
                        // and fresh ones stay mapped and readable.
                        checks::check_zero(ChunkHeader::page_addr(chunk, page + i), PAGE, what);
                    }
                }
                (*e).bits = bits(i);
            }
        }
        self.stats.dirty_pages -= dirty;
        self.stats.active_pages += n;
        dirty
    }

    /// After pages were taken: a timed policy (the decay) acts on activity, so it is asked
    /// here too (no clock is read for a policy without history, or without dirty pages).
    #[inline]
    pub(super) fn tick_purge(&mut self) {
        if self.stats.dirty_pages > 0 && self.slot_ns != 0 {
            self.consult_purge(0);
        }
    }

    /// Gives back `page..page+n`, which were in use: marks them free and dirty, coalesces with
    /// free neighbours, and starts a purge if the arena holds too many dirty pages (its system
    /// calls run once the caller's `Arena::with` has released the lock).
    ///
    /// # Safety
    /// The pages belong to one live small run or large allocation of this arena.
    pub(super) unsafe fn release_pages(&mut self, chunk: *mut ChunkHeader, page: usize, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.release_pages_unconsulted(chunk, page, n) };
        self.consult_purge(n);
    }

    /// `release_pages` without asking the purge policy: for one of a batch, whose caller asks
    /// once for all of its pages (`consult_purge`), so that the policy's clock is read once.
    ///
    /// # Safety
    /// As for `release_pages`.
    pub(super) unsafe fn release_pages_unconsulted(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        n: usize,
    ) {
        for i in 0..n {
            // SAFETY: per the contract.
            unsafe { (*ChunkHeader::entry(chunk, page + i)).bits = FREE | DIRTY };
        }
        self.stats.dirty_pages += n;
        self.stats.active_pages -= n;
        // SAFETY: the pages are now free pages of our chunk.
        unsafe { self.coalesce_insert(chunk, page, n) };
    }

    /// Asks the purge policy how many dirty pages may stay, `released` pages having just
    /// become dirty (0: pages were taken), and starts a purge down to that if there are more.
    #[inline]
    pub(super) fn consult_purge(&mut self, released: usize) {
        if self.slot_ns != 0 {
            self.history.advance(os::monotonic_ns(), self.slot_ns);
            self.history.add(released);
        }
        let view = DirtyView {
            dirty: self.stats.dirty_pages,
            dirty_max: self.dirty_max,
            recent: self.history.recent(),
        };
        let keep = self.purge_policy.keep(&view);
        if keep < view.dirty {
            self.purge(keep);
        }
    }

    /// Links free pages `page..page+n` into the lists, merged with free neighbours.
    ///
    /// # Safety
    /// The pages are free (`FREE` bits) pages of our chunk, in no list.
    pub(super) unsafe fn coalesce_insert(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        n: usize,
    ) {
        let (mut start, mut len) = (page, n);
        // SAFETY: neighbours are entries of the same chunk; a free neighbour is the end of a
        // maximal free run whose ends carry its length.
        unsafe {
            if start > CHUNK_HEADER_PAGES {
                let prev = ChunkHeader::entry(chunk, start - 1);
                if (*prev).kind() == FREE {
                    let plen = (*prev).len();
                    start -= plen;
                    len += plen;
                    self.avail.remove(ChunkHeader::entry(chunk, start), plen);
                }
            }
            if page + n < CHUNK_PAGES {
                let next = ChunkHeader::entry(chunk, page + n);
                if (*next).kind() == FREE {
                    let nlen = (*next).len();
                    len += nlen;
                    self.avail.remove(next, nlen);
                }
            }
            self.list_free_run(chunk, start, len);
        }
    }

    /// Starts a purge pass: chooses dirty free pages to return to the OS until at most
    /// `target` dirty pages remain (module comment). The system calls happen when the caller's
    /// `Arena::with` releases the lock.
    pub fn purge(&mut self, target: usize) {
        self.stats.purges += 1;
        self.choose_purge(target);
    }

    /// Takes dirty spans out of the free runs, longest runs first, until at most `target`
    /// dirty pages remain or every slot is in use (then `purging.more` remembers `target`).
    pub(super) fn choose_purge(&mut self, target: usize) {
        let mut len = CHUNK_USABLE_PAGES;
        while len > 0 && self.stats.dirty_pages > target {
            let mut e = self.avail.heads[len];
            while !e.is_null() && self.stats.dirty_pages > target {
                // SAFETY: `e` heads a free run of `len` pages of our chunk, linked in list
                // `len`; `choose_run` puts back only pieces shorter than `len`, so `next` stays
                // linked in this list.
                unsafe {
                    let next = (*e).next;
                    let (chunk, page) = ChunkHeader::locate(e);
                    if (0..len).any(|i| (*ChunkHeader::entry(chunk, page + i)).dirty()) {
                        if self.purging.free_slot().is_none() {
                            self.purging.more = self.purging.more.min(target);
                            return;
                        }
                        self.avail.remove(e, len);
                        if !self.choose_run(chunk, page, len) {
                            self.purging.more = self.purging.more.min(target);
                            return;
                        }
                    }
                    e = next;
                }
            }
            len -= 1;
        }
    }

    /// Splits the free run `page..page+len` (out of the lists, with a dirty page and a free
    /// slot) into its maximal dirty spans, each chosen into a slot, and its clean pieces, put
    /// back as free runs. When the slots run out, the rest of the run goes back as one free run
    /// (dirty pages included) and this returns false.
    ///
    /// # Safety
    /// `chunk` is ours and `page..page+len` a maximal free run in no list.
    pub(super) unsafe fn choose_run(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        len: usize,
    ) -> bool {
        let end = page + len;
        // The start of the piece not yet chosen nor put back.
        let mut rest = page;
        let mut i = page;
        // SAFETY: per the contract every entry in `page..end` is a free page of our chunk.
        // Pieces put back are bounded by the run's ends (whose neighbours are not free: the
        // run was maximal) or by chosen spans (`PURGING`), so they need no coalescing.
        unsafe {
            while i < end {
                if !(*ChunkHeader::entry(chunk, i)).dirty() {
                    i += 1;
                    continue;
                }
                let span_start = i;
                while i < end && (*ChunkHeader::entry(chunk, i)).dirty() {
                    i += 1;
                }
                let Some(slot) = self.purging.free_slot() else {
                    self.list_free_run(chunk, rest, end - rest);
                    return false;
                };
                if span_start > rest {
                    self.list_free_run(chunk, rest, span_start - rest);
                }
                let span = i - span_start;
                for p in span_start..i {
                    (*ChunkHeader::entry(chunk, p)).bits = PURGING;
                }
                self.purging.spans[slot] = PurgeSpan {
                    chunk,
                    page: span_start as u32,
                    len: span as u32,
                };
                self.purging.chosen |= 1 << slot;
                self.stats.dirty_pages -= span;
                rest = i;
            }
            if end > rest {
                self.list_free_run(chunk, rest, end - rest);
            }
        }
        true
    }

    /// Hands the chosen spans to the calling thread, which purges them without the lock:
    /// writes their addresses and lengths in bytes to `out`; returns their slots, their count
    /// and the epoch to give back to `finish_purge`.
    pub(super) fn take_chosen(
        &mut self,
        out: &mut [(usize, usize); PURGE_SLOTS],
    ) -> (u32, usize, usize) {
        let mine = self.purging.chosen;
        self.purging.chosen = 0;
        self.purging.in_flight |= mine;
        let mut n = 0;
        for slot in slots(mine) {
            let s = self.purging.spans[slot];
            out[n] = (
                ChunkHeader::page_addr(s.chunk, s.page as usize),
                s.len as usize * PAGE,
            );
            n += 1;
        }
        (mine, n, self.purging.epoch)
    }

    /// Puts back the spans of `mine`, purged, as clean free pages coalesced with their free
    /// neighbours; nothing if a fork came in between and the calling thread is the forking
    /// thread in the child (as a signal handler's fork could make it), whose lock reset took
    /// the spans back already (and the slots may serve others since).
    pub(super) fn finish_purge(&mut self, mine: u32, epoch: usize) {
        if epoch != self.purging.epoch {
            return;
        }
        // Just purged: they read as zero, and are not fresh (`zero_check: recycled` reads them).
        let (spans, pages) = self.put_back_spans(mine, FREE | PURGED);
        self.stats.purged_pages += pages as u64;
        self.stats.purge_calls += spans as u64;
        self.purging.in_flight &= !mine;
    }

    /// Puts the spans of the slots in `mask` back as free pages with `bits` (`FREE | PURGED`,
    /// or `FREE | DIRTY`), coalesced with their free neighbours; returns how many spans and pages.
    pub(super) fn put_back_spans(&mut self, mask: u32, bits: usize) -> (usize, usize) {
        let (mut spans, mut pages) = (0, 0);
        for slot in slots(mask) {
            let s = self.purging.spans[slot];
            let (page, len) = (s.page as usize, s.len as usize);
            // SAFETY: the slot records a span of our chunk whose pages are `PURGING` (in no
            // list): they become free pages of that chunk.
            unsafe {
                for p in page..page + len {
                    (*ChunkHeader::entry(s.chunk, p)).bits = bits;
                }
                self.coalesce_insert(s.chunk, page, len);
            }
            spans += 1;
            pages += len;
        }
        (spans, pages)
    }

    /// Chooses again for a purge that stopped because every slot was in use.
    pub(super) fn purge_more(&mut self) {
        let target = core::mem::replace(&mut self.purging.more, usize::MAX);
        if target != usize::MAX {
            self.choose_purge(target);
        }
    }

    /// Puts every chosen or in-flight span back as dirty free pages (the child after `fork`,
    /// whose purging threads are gone).
    pub(super) fn reclaim_purging(&mut self) {
        // Whether their `madvise` ran is unknown: the pages may hold anything.
        let all = self.purging.chosen | self.purging.in_flight;
        let (_, pages) = self.put_back_spans(all, FREE | DIRTY);
        self.stats.dirty_pages += pages;
        self.purging.chosen = 0;
        self.purging.in_flight = 0;
        self.purging.more = usize::MAX;
        self.purging.epoch = self.purging.epoch.wrapping_add(1);
    }
}
