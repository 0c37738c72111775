//! An arena's large path: page runs allocated, freed, grown and shrunk in place.

use super::*;

impl<C: Config> ArenaInner<C> {
    /// Allocates `pages` pages aligned to `align` (the caller checked that the over-allocation
    /// fits in a chunk); null if the OS refuses memory.
    pub fn alloc_large(
        &mut self,
        pages: usize,
        align: usize,
        zero: bool,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> *mut u8 {
        let p = self.alloc_large_unconsulted(pages, align, zero, arena, index, map);
        self.tick_purge();
        p
    }

    /// `alloc_large` without asking the purge policy (for one of a batch, which asks once).
    fn alloc_large_unconsulted(
        &mut self,
        pages: usize,
        align: usize,
        zero: bool,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> *mut u8 {
        let extra = if align > PAGE { align / PAGE - 1 } else { 0 };
        let Some((chunk, first)) = self.take_pages(pages + extra, arena, index, map) else {
            return ptr::null_mut();
        };
        let addr = ChunkHeader::page_addr(chunk, first);
        let lead = match round_up(addr, align.max(PAGE)) {
            Some(a) => (a - addr) / PAGE,
            None => 0,
        };
        let page = first + lead;
        // SAFETY: the pages were just taken for us; lead and trail pages are still free pages
        // of the same chunk, given back after the allocation is marked.
        unsafe {
            self.claim_pages(chunk, page, pages, zero, zero, |i| {
                PageEntry::large_bits(if i == 0 { pages } else { 0 }, i == 0)
            });
            if lead > 0 {
                self.set_free_run_ends(chunk, first, lead);
                self.coalesce_insert(chunk, first, lead);
            }
            let trail = extra - lead;
            if trail > 0 {
                self.set_free_run_ends(chunk, page + pages, trail);
                self.coalesce_insert(chunk, page + pages, trail);
            }
        }
        self.stats.large_allocated += pages * PAGE;
        self.stats.large_allocations += 1;
        ChunkHeader::page_addr(chunk, page) as *mut u8
    }

    /// Takes up to `out.len()` large allocations of `pages` pages each (page-aligned) into
    /// `out` under one lock (a thread cache's fill), the purge policy asked once; how many it
    /// took (fewer if the OS refused memory).
    pub(crate) fn alloc_large_batch(
        &mut self,
        pages: usize,
        out: &mut [usize],
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> usize {
        // One free run for the whole batch if there is one (one search of the free runs, not
        // one per block); never a new chunk for it.
        if out.len() > 1 {
            if let Some((chunk, first)) = self.take_free_pages(out.len() * pages) {
                for (k, slot) in out.iter_mut().enumerate() {
                    let page = first + k * pages;
                    // SAFETY: the pages were just taken for us; each block is marked as a
                    // large allocation of its own.
                    unsafe {
                        self.claim_pages(chunk, page, pages, false, false, |i| {
                            PageEntry::large_bits(if i == 0 { pages } else { 0 }, i == 0)
                        })
                    };
                    *slot = ChunkHeader::page_addr(chunk, page);
                }
                self.stats.large_allocated += out.len() * pages * PAGE;
                self.stats.large_allocations += out.len() as u64;
                self.tick_purge();
                return out.len();
            }
        }
        let mut got = 0;
        for slot in out.iter_mut() {
            let p = self.alloc_large_unconsulted(pages, PAGE, false, arena, index, map);
            if p.is_null() {
                break;
            }
            *slot = p as usize;
            got += 1;
        }
        self.tick_purge();
        got
    }

    /// `free_large` for one of a batch (a thread cache's flush): the purge policy is not
    /// asked; the caller asks it once for the batch (`large_batch_freed`).
    ///
    /// # Safety
    /// As for `free_large`.
    pub(crate) unsafe fn free_large_in_batch(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        pages: usize,
    ) {
        self.stats.large_allocated -= pages * PAGE;
        self.stats.large_frees += 1;
        // SAFETY: per the contract.
        unsafe { self.release_pages_unconsulted(chunk, page, pages) };
    }

    /// Asks the purge policy once for a batch of `free_large_in_batch` that released `pages`
    /// pages.
    pub(crate) fn large_batch_freed(&mut self, pages: usize) {
        self.consult_purge(pages);
    }

    /// Frees the large allocation at `page`.
    ///
    /// # Safety
    /// `chunk` is ours and `page` heads a live large allocation of `pages` pages.
    pub(crate) unsafe fn free_large(&mut self, chunk: *mut ChunkHeader, page: usize, pages: usize) {
        self.stats.large_allocated -= pages * PAGE;
        self.stats.large_frees += 1;
        // SAFETY: per the contract.
        unsafe { self.release_pages(chunk, page, pages) };
    }

    /// Resizes the large allocation at `page` from `old` to `new` pages where it is; false if
    /// the following pages are not free.
    ///
    /// # Safety
    /// `chunk` is ours and `page` heads a live large allocation of `old` pages.
    pub unsafe fn resize_large(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        old: usize,
        new: usize,
    ) -> bool {
        if new == old {
            return true;
        }
        // SAFETY: per the contract; the pages after the allocation are in the same chunk
        // (checked against CHUNK_PAGES) and the entries say whether they are free.
        unsafe {
            if new < old {
                for i in new..old {
                    (*ChunkHeader::entry(chunk, page + i)).bits = FREE | DIRTY;
                }
                (*ChunkHeader::entry(chunk, page)).bits = PageEntry::large_bits(new, true);
                let n = old - new;
                self.stats.dirty_pages += n;
                self.stats.active_pages -= n;
                self.stats.large_allocated -= n * PAGE;
                self.coalesce_insert(chunk, page + new, n);
                self.consult_purge(n);
                return true;
            }
            let need = new - old;
            let next = page + old;
            if next >= CHUNK_PAGES {
                return false;
            }
            let ne = ChunkHeader::entry(chunk, next);
            if (*ne).kind() != FREE || (*ne).len() < need {
                return false;
            }
            let flen = (*ne).len();
            self.avail.remove(ne, flen);
            if flen > need {
                self.list_free_run(chunk, next + need, flen - need);
            }
            self.claim_pages(chunk, next, need, false, false, |_| {
                PageEntry::large_bits(0, false)
            });
            (*ChunkHeader::entry(chunk, page)).bits = PageEntry::large_bits(new, true);
            self.stats.large_allocated += need * PAGE;
        }
        self.tick_purge();
        true
    }
}
