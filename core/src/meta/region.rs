//! One validator for a pointer that claims to be a small region.
//!
//! Every path that takes such a pointer (a free with or without a thread cache, the usable
//! size, the thread cache's test that a region is taken) walks the same chain: the page's
//! entry names a small run, the run's first page and bin, the offset a region's start, and the
//! bitmap its state. The chain is written here once, so that a check added to it (or taken off
//! the fast path) changes every caller alike.

use crate::meta::chunk::{ChunkHeader, PageBits, SMALL};
use crate::meta::run::{Run, RunHeader};
use crate::meta::size_class::{bin, NBINS};
use crate::platform::error::FreeError;

/// A small region located from its address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SmallRegion {
    /// Its size class (bin index).
    pub(crate) idx: usize,
    /// The run's first page in its chunk.
    pub(crate) head: usize,
    /// Its index in the run.
    pub(crate) region: usize,
    /// The run's first byte.
    base: usize,
}

impl SmallRegion {
    /// Whether `e`, the entry of page `page`, can name a small run holding that page: read
    /// without the arena lock, an entry is whatever the pointer's page holds, so the bin and
    /// the run offset are bounded before they are used. Unmasked: a bin field with bits set
    /// above it is refused by the same comparison.
    #[inline(always)]
    pub(crate) fn names_a_run(e: PageBits, page: usize) -> bool {
        e.kind() == SMALL && e.bin_unmasked() < NBINS && e.run_offset() <= page
    }

    /// Where `addr`, on page `page` of `chunk`, lies in the run of bin `idx` that the page's
    /// entry `e` names (the caller holds the arena lock, or checked `names_a_run`).
    /// `Interior` if `addr` is not a region's start.
    #[inline(always)]
    pub(crate) fn at(
        chunk: *mut ChunkHeader,
        page: usize,
        e: PageBits,
        idx: usize,
        addr: usize,
    ) -> Result<SmallRegion, FreeError> {
        let head = page - e.run_offset();
        let base = ChunkHeader::page_addr(chunk, head);
        let region = bin(idx)
            .region_index(addr - base)
            .ok_or(FreeError::Interior)?;
        Ok(SmallRegion {
            idx,
            head,
            region,
            base,
        })
    }

    /// `names_a_run`, then `at`: `None` if the entry names no small run.
    #[inline(always)]
    pub(crate) fn locate(
        chunk: *mut ChunkHeader,
        page: usize,
        e: PageBits,
        addr: usize,
    ) -> Option<Result<SmallRegion, FreeError>> {
        if !Self::names_a_run(e, page) {
            return None;
        }
        Some(Self::at(chunk, page, e, e.bin_unmasked(), addr))
    }

    /// Its run.
    #[inline(always)]
    pub(crate) fn run(&self) -> Run {
        Run(RunHeader::at(self.base, self.idx))
    }

    /// Whether its bit says free. The word is read atomically, so without the lock too: the
    /// bit of a region that is taken cannot change under a caller that holds or validates it.
    ///
    /// # Safety
    /// The run is live: the entry it was located from names it (under the lock, or for a
    /// pointer that claims to be one of its regions).
    #[inline(always)]
    pub(crate) unsafe fn is_free(&self) -> bool {
        // SAFETY: per the contract; `region < capacity` (from `region_index`).
        unsafe { self.run().is_free_unlocked(self.region) }
    }
}
