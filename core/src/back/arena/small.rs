//! An arena's small path: bins of runs, regions taken and put back, through the run-reuse policy.

use super::*;

impl<C: Config> ArenaInner<C> {
    /// Allocates a region of bin `idx`; null if the OS refuses memory.
    #[inline(always)]
    pub fn alloc_small(
        &mut self,
        idx: usize,
        zero: bool,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> *mut u8 {
        let run = match C::Reuse::pick(&mut self.bins[idx].policy) {
            Some(r) => {
                self.bins[idx].stats.picks += 1;
                r
            }
            None => match self.new_run(idx, arena, index, map) {
                Some(r) => r,
                None => return ptr::null_mut(),
            },
        };
        let r = run.run_of::<C::Reuse>();
        // SAFETY: the policy returned a run it knows, a live run of this bin (its contract);
        // the free-count check below turns a broken policy into a clear abort (in verification
        // builds: a violation `check` reports, and a null allocation), not corruption.
        unsafe {
            if r.free() == 0 || r.bin_index() != idx {
                #[cfg(feature = "verification")]
                {
                    self.unusable_pick.get_or_insert((idx, r.base()));
                    return ptr::null_mut();
                }
                #[cfg(not(feature = "verification"))]
                crate::platform::report::fatal(format_args!(
                    "run-reuse policy {} picked the run at {:#x}, which is full or of another bin",
                    C::Reuse::NAME,
                    r.base()
                ));
            }
            let (p, fresh, known_zero) = r.take_region();
            let bin = &mut self.bins[idx];
            if r.free() == 0 {
                C::Reuse::remove(&mut bin.policy, run, Removal::Full);
                bin.stats.nonfull_runs -= 1;
            }
            bin.stats.allocations += 1;
            bin.stats.live += 1;
            let size = BINS[idx].size as usize;
            self.stats.small_allocated += size;
            self.on_alloc_small(p, size, fresh, zero);
            if zero && !known_zero {
                ptr::write_bytes(p as *mut u8, 0, size);
            }
            p as *mut u8
        }
    }

    /// Takes up to `out.len()` regions of bin `idx` into `out` (a thread cache's fill), as that
    /// many `alloc_small` calls would, but asking the policy once per run instead of once per
    /// region; returns how many (fewer only if the OS refuses memory).
    pub fn alloc_small_batch(
        &mut self,
        idx: usize,
        out: &mut [usize],
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> usize {
        let size = BINS[idx].size as usize;
        let mut n = 0;
        while n < out.len() {
            // Whether the run is one the policy chose among the non-full runs, or one just made.
            let (run, picked) = match C::Reuse::pick(&mut self.bins[idx].policy) {
                Some(r) => (r, true),
                None => match self.new_run(idx, arena, index, map) {
                    Some(r) => (r, false),
                    None => break,
                },
            };
            let r = run.run_of::<C::Reuse>();
            // SAFETY: as in `alloc_small`: a run the policy knows, checked before use.
            unsafe {
                if r.free() == 0 || r.bin_index() != idx {
                    crate::platform::report::fatal(format_args!(
                        "run-reuse policy {} picked run {:#x}, which is full or of another bin",
                        C::Reuse::NAME,
                        run.addr()
                    ));
                }
                let first = n;
                n += r.take_regions(&mut out[n..]);
                let bin = &mut self.bins[idx];
                if r.free() == 0 {
                    C::Reuse::remove(&mut bin.policy, run, Removal::Full);
                    bin.stats.nonfull_runs -= 1;
                }
                let taken = (n - first) as u64;
                // Counted as `alloc_small` counts them, so that `picks` means the same with and
                // without a thread cache: every region served from a picked run is a pick; of
                // a new run's regions, all but the one that made the run.
                bin.stats.picks += if picked {
                    taken
                } else {
                    taken.saturating_sub(1)
                };
                bin.stats.allocations += taken;
                bin.stats.live += n - first;
                self.stats.small_allocated += (n - first) * size;
            }
        }
        n
    }

    #[cold]
    pub(super) fn new_run(
        &mut self,
        idx: usize,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> Option<RunRef<Links<C>>> {
        let info = bin(idx);
        let pages = info.run_pages as usize;
        let (chunk, page) = self.take_pages(pages, arena, index, map)?;
        // SAFETY: the pages were just taken for us; the run header lies inside them, and its
        // first page's entry is ours (now `SMALL`, out of the free-run lists).
        let run = unsafe {
            let dirty = self.claim_pages(chunk, page, pages, false, true, |i| {
                PageEntry::small_bits(idx, i)
            });
            let base = ChunkHeader::page_addr(chunk, page);
            let header = RunHeader::init::<Links<C>>(base, idx, dirty == 0, C::Reuse::LINKS);
            RunRef::make::<C::Reuse>(header, chunk, page)
        };
        self.tick_purge();
        let bin = &mut self.bins[idx];
        bin.stats.runs += 1;
        bin.stats.nonfull_runs += 1;
        bin.stats.new_runs += 1;
        C::Reuse::insert(&mut bin.policy, run);
        Some(C::Reuse::pick(&mut bin.policy).unwrap_or(run))
    }

    /// Frees the small region at `addr`, whose page entry holds `e`.
    ///
    /// # Safety
    /// `chunk` is ours and `e` is the `SMALL` entry of `addr`'s page.
    #[inline(always)]
    pub unsafe fn free_small(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        e: PageBits,
        addr: usize,
    ) -> Result<(), FreeError> {
        let r = SmallRegion::at(chunk, page, e, e.bin(), addr)?;
        // SAFETY: `e` says a run of bin `r.idx` starts at `r.head`; we hold the lock.
        unsafe {
            if r.is_free() {
                return Err(Self::why_free(r.run(), r.region));
            }
            if self.checks_on_free() {
                if let Some(done) = self.free_small_checked(addr, bin(r.idx).size as usize) {
                    return done;
                }
            }
            self.put_small(chunk, r.head, r.idx, r.region);
        }
        Ok(())
    }

    /// Why region `region` of `run`, which is free, cannot be freed.
    ///
    /// # Safety
    /// The run is live and the lock held.
    pub(super) unsafe fn why_free(run: Run, region: usize) -> FreeError {
        // SAFETY: per the contract.
        if unsafe { run.never_allocated(region) } {
            FreeError::NeverAllocated
        } else {
            FreeError::Freed
        }
    }

    /// Puts region `region` of the run of bin `idx` that starts at page `head` of `chunk`
    /// (validated as live by `free_small`) back into its run.
    ///
    /// # Safety
    /// `chunk` is ours, a run of bin `idx` starts at `head`, the region is live, and the lock
    /// is held.
    #[inline(always)]
    pub(crate) unsafe fn put_small(
        &mut self,
        chunk: *mut ChunkHeader,
        head: usize,
        idx: usize,
        region: usize,
    ) {
        let base = ChunkHeader::page_addr(chunk, head);
        let info = bin(idx);
        let run = Run(RunHeader::at(base, idx));
        // SAFETY: per the contract; we hold the lock.
        unsafe {
            run.put_region(region);
            let rref = RunRef::new::<C::Reuse>(run.0, chunk, head);
            let free = run.free();
            let cap = info.capacity as usize;
            let bin = &mut self.bins[idx];
            bin.stats.frees += 1;
            bin.stats.live -= 1;
            self.stats.small_allocated -= info.size as usize;
            if free == cap {
                if cap > 1 {
                    C::Reuse::remove(&mut bin.policy, rref, Removal::Empty);
                    bin.stats.nonfull_runs -= 1;
                }
                bin.stats.runs -= 1;
                bin.stats.runs_released += 1;
                self.release_pages(chunk, head, info.run_pages as usize);
            } else if free == 1 {
                C::Reuse::insert(&mut bin.policy, rref);
                bin.stats.nonfull_runs += 1;
            } else {
                C::Reuse::freed(&mut bin.policy, rref);
            }
        }
    }

    /// Checks that `addr` is a live region of the small run that page entry `e` describes;
    /// returns the region size.
    ///
    /// # Safety
    /// As for `free_small`.
    pub unsafe fn small_usable(
        chunk: *mut ChunkHeader,
        page: usize,
        e: PageBits,
        addr: usize,
    ) -> Result<usize, FreeError> {
        let r = SmallRegion::at(chunk, page, e, e.bin(), addr)?;
        // SAFETY: per the contract the run is live and the lock held.
        unsafe {
            if r.is_free() {
                return Err(Self::why_free(r.run(), r.region));
            }
        }
        Ok(bin(r.idx).size as usize)
    }
}
