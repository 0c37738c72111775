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
        self.tick_purge();
        ChunkHeader::page_addr(chunk, page) as *mut u8
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
