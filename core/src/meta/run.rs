//! Runs: the pages of one small class, cut into equal regions.
//!
//! The header sits at the end of the run (see `size_class`): 32 bytes of links that belong to
//! the run-reuse policy, then the bin index, whether the run's pages were dirty, the free count,
//! a hint (first bitmap word that may hold a free region), the high-water mark (the index from
//! which regions were never handed out), the run's own start address (a cheap corruption
//! check), and the free-region bitmap (bit set = free).
//!
//! Regions are always taken lowest-first, so in a run made of clean pages every region above
//! the highest one ever handed out is still zero: a zeroed allocation from there needs no
//! memset (and touches no page the program did not ask for). In any run, a region above the
//! mark was never allocated, which lets `free` tell "never allocated" from "already freed".
//! `RunRef` is the handle policies receive; it exposes the links and read-only facts.
//!
//! A policy's links live in the header's 32 bytes, or, for a policy whose `RunReuse::LINKS` is
//! `LinkPlace::ChunkMap`, in the chunk header's entry for the run's first page (16 bytes), as
//! in mozjemalloc before bug 1924444 moved them into the run: list work then writes the dense
//! page map instead of the headers of other runs, each at the far end of its own run.

use crate::meta::chunk::{ChunkHeader, PageEntry, RUN_LINK_BYTES};
use crate::meta::size_class::{bin, BinInfo, CHUNK, CHUNK_HEADER_PAGES, PAGE};
use crate::platform::sync::untracked::AtomicU64;
use crate::platform::sync::Ordering::Relaxed;
use core::cell::Cell;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// Bytes available to a policy's per-run links in the run header.
pub const LINK_BYTES: usize = 32;

/// Bytes available to a policy's per-run links in the chunk map (`LinkPlace::ChunkMap`).
pub const MAP_LINK_BYTES: usize = RUN_LINK_BYTES;

/// Where a run-reuse policy's per-run links live (`RunReuse::LINKS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkPlace {
    /// In the run's header, at the end of the run: up to `LINK_BYTES` (32) bytes.
    RunHeader,
    /// In the chunk header's page entry of the run's first page: up to `MAP_LINK_BYTES` (16)
    /// bytes, alignment at most 8. A list touches only the page map to relink a run's
    /// neighbours (mozjemalloc's `arena_chunk_map_t` link).
    ChunkMap,
}

/// The fixed part of a run header; the bitmap words follow it.
#[repr(C, align(8))]
pub struct RunHeader {
    links: [Cell<usize>; LINK_BYTES / 8],
    bin: u8,
    /// 1 if the run was made of pages that were not all known to be zero.
    dirty: u8,
    free: u16,
    hint: u16,
    zero_from: u16,
    /// Run start address, for policies and invariants.
    base: usize,
}

const _: () =
    assert!(core::mem::size_of::<RunHeader>() == crate::meta::size_class::RUN_HEADER_FIXED);

impl RunHeader {
    /// The header of the run starting at `base` serving bin `bin_index`.
    #[inline(always)]
    pub fn at(base: usize, bin_index: usize) -> NonNull<RunHeader> {
        let h = base + bin(bin_index).header_offset as usize;
        // SAFETY: a run start plus an in-run offset is never null.
        unsafe { NonNull::new_unchecked(h as *mut RunHeader) }
    }

    /// Writes a header for a fresh run (all regions free).
    ///
    /// # Safety
    /// `base` is the start of `run_pages` writable pages owned by the caller (under its arena
    /// lock), and `L` fits in `LINK_BYTES` (checked by `RunRef::links`' caller at compile time).
    /// With `LinkPlace::ChunkMap` the caller writes the links with `RunRef::make`.
    pub unsafe fn init<L: Default>(
        base: usize,
        bin_index: usize,
        clean: bool,
        place: LinkPlace,
    ) -> NonNull<RunHeader> {
        let info = bin(bin_index);
        let h = Self::at(base, bin_index);
        // SAFETY: the header lies inside the run (size_class tests), which the caller owns.
        unsafe {
            h.as_ptr().write(RunHeader {
                links: Default::default(),
                bin: bin_index as u8,
                dirty: u8::from(!clean),
                free: info.capacity as u16,
                hint: 0,
                zero_from: 0,
                base,
            });
            // Links in the chunk map are written there by `RunRef::make` (the header keeps
            // its zeroed link words, which nothing reads).
            if place == LinkPlace::RunHeader {
                h.as_ptr().cast::<L>().write(L::default());
            }
            let words = Self::bitmap_ptr(h);
            let full = info.capacity as usize / 64;
            for w in 0..full {
                words.add(w).write(u64::MAX);
            }
            let rest = info.capacity as usize % 64;
            if rest != 0 {
                let mask = (1u64 << rest) - 1;
                // alloclab_seeded: the bitmap off-by-one (one bit past the capacity).
                #[cfg(alloclab_seeded)]
                let mask = if crate::platform::seeded::active(
                    crate::platform::seeded::Bug::BitmapOffByOne,
                ) {
                    mask | 1 << rest
                } else {
                    mask
                };
                words.add(full).write(mask);
            }
        }
        h
    }

    #[inline(always)]
    fn bitmap_ptr(h: NonNull<RunHeader>) -> *mut u64 {
        // SAFETY: the bitmap directly follows the fixed header inside the run.
        unsafe { h.as_ptr().add(1).cast::<u64>() }
    }
}

/// Bitmap word `w` as an atomic. Words change only under the arena lock (a load and a store,
/// never a read-modify-write), but the thread cache's free path reads them without it
/// (`Run::is_free_unlocked`), so every access of a live run's words is atomic (relaxed: plain
/// moves on x86-64 and aarch64).
///
/// # Safety
/// `words` is the bitmap of a live run and `w < bitmap_words`.
#[inline(always)]
unsafe fn word<'a>(words: *mut u64, w: usize) -> &'a AtomicU64 {
    // SAFETY: per the contract; u64 words are 8-aligned (the header is `align(8)`).
    unsafe { AtomicU64::from_ptr(words.add(w)) }
}

/// Operations on a run through its header. All of them require the arena lock and a live run.
#[derive(Clone, Copy)]
pub(crate) struct Run(pub NonNull<RunHeader>);

impl Run {
    #[inline(always)]
    fn h(&self) -> *mut RunHeader {
        self.0.as_ptr()
    }

    /// # Safety (for all accessors below)
    /// The run is live and the caller holds its arena's lock.
    #[inline(always)]
    pub unsafe fn free(&self) -> usize {
        // SAFETY: see above.
        unsafe { (*self.h()).free as usize }
    }

    #[inline(always)]
    pub unsafe fn bin_index(&self) -> usize {
        // SAFETY: see `free`.
        unsafe { (*self.h()).bin as usize }
    }

    /// The run's start address, as its header records it.
    #[inline(always)]
    pub unsafe fn base(&self) -> usize {
        // SAFETY: see `free`.
        unsafe { (*self.h()).base }
    }

    /// Whether the header names `base` as its run start (else it was overwritten).
    pub unsafe fn header_ok(&self, base: usize) -> bool {
        // SAFETY: see `free`.
        unsafe { (*self.h()).base == base }
    }

    #[inline(always)]
    pub unsafe fn info(&self) -> &'static BinInfo {
        // SAFETY: see `free`.
        bin(unsafe { self.bin_index() })
    }

    /// Takes the lowest `out.len()` free regions (or all there are) into `out`, lowest first,
    /// a bitmap word at a time; returns how many. The same as as many `take_region` calls
    /// (a thread cache's fill, which does not need to know which are zero).
    ///
    /// # Safety
    /// As for `take_region`.
    #[inline(always)]
    pub unsafe fn take_regions(&self, out: &mut [usize]) -> usize {
        // SAFETY: see `free`; the bitmap has `bitmap_words` words, and `free` counts its set
        // bits, so the loop stops at the last word that holds one.
        unsafe {
            let h = self.h();
            let info = self.info();
            let size = info.size as usize;
            let words = RunHeader::bitmap_ptr(self.0);
            let want = out.len().min((*h).free as usize);
            let mut w = (*h).hint as usize;
            let mut n = 0;
            let mut last = 0;
            while n < want {
                debug_assert!(
                    w < info.bitmap_words as usize,
                    "free count above the bitmap's"
                );
                let mut v = word(words, w).load(Relaxed);
                if v != 0 {
                    let start = (*h).base + w * 64 * size;
                    while v != 0 && n < want {
                        let b = v.trailing_zeros() as usize;
                        out[n] = start + b * size;
                        last = w * 64 + b;
                        v &= v - 1;
                        n += 1;
                    }
                    word(words, w).store(v, Relaxed);
                    if v != 0 {
                        break;
                    }
                }
                w += 1;
            }
            if n > 0 {
                // Every word below `w` is now empty; `w` itself may still hold regions.
                (*h).hint = w.min(info.bitmap_words as usize - 1) as u16;
                (*h).free -= n as u16;
                if last >= (*h).zero_from as usize {
                    (*h).zero_from = last as u16 + 1;
                }
            }
            n
        }
    }

    /// Takes the lowest free region. The run must have one. Returns its address, whether it
    /// was never handed out before, and whether it is known to be zero.
    #[inline(always)]
    pub unsafe fn take_region(&self) -> (usize, bool, bool) {
        // SAFETY: see `free`; the bitmap has `bitmap_words` words.
        unsafe {
            let h = self.h();
            let info = self.info();
            let words = RunHeader::bitmap_ptr(self.0);
            let mut w = (*h).hint as usize;
            loop {
                debug_assert!(w < info.bitmap_words as usize, "run without a free region");
                let v = word(words, w).load(Relaxed);
                if v != 0 {
                    let idx = w * 64 + v.trailing_zeros() as usize;
                    word(words, w).store(v & (v - 1), Relaxed);
                    (*h).hint = w as u16;
                    (*h).free -= 1;
                    let above = idx >= (*h).zero_from as usize;
                    if above {
                        (*h).zero_from = idx as u16 + 1;
                    }
                    let zero = above && (*h).dirty == 0;
                    return ((*h).base + idx * info.size as usize, above, zero);
                }
                w += 1;
            }
        }
    }

    /// Whether region `idx` was never handed out since the run was made.
    pub unsafe fn never_allocated(&self, idx: usize) -> bool {
        // SAFETY: see `free`.
        unsafe { idx >= (*self.h()).zero_from as usize }
    }

    /// Whether region `idx` is free.
    #[inline(always)]
    pub unsafe fn is_free(&self, idx: usize) -> bool {
        // SAFETY: see `free`; `idx < capacity`.
        unsafe {
            word(RunHeader::bitmap_ptr(self.0), idx / 64).load(Relaxed) & (1 << (idx % 64)) != 0
        }
    }

    /// Whether region `idx` is free, read without the arena lock (the bit of a region the
    /// caller holds cannot change; other bits of the word may, under the lock).
    ///
    /// # Safety
    /// The run is live (the caller holds one of its regions, or validates a pointer that
    /// claims to be one) and `idx < capacity`.
    #[inline(always)]
    pub unsafe fn is_free_unlocked(&self, idx: usize) -> bool {
        // SAFETY: per the contract; the word is read atomically.
        unsafe { self.is_free(idx) }
    }

    /// Returns region `idx`, which must be in use, to the run.
    #[inline(always)]
    pub unsafe fn put_region(&self, idx: usize) {
        // SAFETY: see `free`; `idx < capacity`.
        unsafe {
            let h = self.h();
            let w = idx / 64;
            let word = word(RunHeader::bitmap_ptr(self.0), w);
            word.store(word.load(Relaxed) | 1 << (idx % 64), Relaxed);
            (*h).free += 1;
            if w < (*h).hint as usize {
                (*h).hint = w as u16;
            }
        }
    }

    /// Set bits in the bitmap (for invariant checks).
    pub unsafe fn bitmap_popcount(&self) -> usize {
        // SAFETY: see `free`.
        unsafe {
            let words = RunHeader::bitmap_ptr(self.0);
            let info = self.info();
            (0..info.bitmap_words as usize)
                .map(|w| (*words.add(w)).count_ones() as usize)
                .sum()
        }
    }

    /// Whether any bit beyond the capacity is set, or a free bit lies below the hint word.
    pub unsafe fn bitmap_shape_ok(&self) -> bool {
        // SAFETY: see `free`.
        unsafe {
            let words = RunHeader::bitmap_ptr(self.0);
            let info = self.info();
            let cap = info.capacity as usize;
            let n = info.bitmap_words as usize;
            if cap % 64 != 0 && *words.add(n - 1) >> (cap % 64) != 0 {
                return false;
            }
            (0..(*self.h()).hint as usize).all(|w| *words.add(w) == 0)
        }
    }
}

/// A run as a policy sees it: its address, its free count, and the policy's own links.
///
/// `L` is the policy's link type, stored in the 32 bytes the header reserves for it, or in the
/// run's first page entry of the chunk map (`LinkPlace::ChunkMap`). The handle points at the
/// links wherever they are, so `links()` and `addr()` cost the same for either place.
pub struct RunRef<L> {
    /// The policy's links: the run header (its links are its first bytes), or the link words
    /// of the run's first page entry.
    at: NonNull<u8>,
    _links: PhantomData<*const L>,
}

impl<L> Clone for RunRef<L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for RunRef<L> {}
impl<L> PartialEq for RunRef<L> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl<L> Eq for RunRef<L> {}
impl<L> PartialOrd for RunRef<L> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
/// Runs order by address.
impl<L> Ord for RunRef<L> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.addr().cmp(&other.addr())
    }
}
impl<L> core::fmt::Debug for RunRef<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Run({:#x})", self.addr())
    }
}

/// The part of a run-reuse policy that run handles need: what its per-run links are and where
/// they live. Every `RunReuse` is one (`policy/`), so this layer names no policy trait.
pub(crate) trait RunLinks {
    /// `RunReuse::Links`.
    type Links;
    /// `RunReuse::LINKS`.
    const LINKS: LinkPlace;
}

/// The compile-time check that a policy's links fit where it keeps them.
struct Fits<P>(PhantomData<P>);

impl<P: RunLinks> Fits<P> {
    const OK: () = match P::LINKS {
        LinkPlace::RunHeader => assert!(
            core::mem::size_of::<P::Links>() <= LINK_BYTES
                && core::mem::align_of::<P::Links>() <= 8,
            "run-reuse policy links must fit in 32 bytes with alignment at most 8"
        ),
        LinkPlace::ChunkMap => assert!(
            core::mem::size_of::<P::Links>() <= MAP_LINK_BYTES
                && core::mem::align_of::<P::Links>() <= 8,
            "run-reuse policy links kept in the chunk map must fit in 16 bytes with alignment \
             at most 8"
        ),
    };
}

impl<L> RunRef<L> {
    /// The handle, for policy `P`, of the run whose header is `header` and whose first page is
    /// page `page` of `chunk`. `P::LINKS` is a constant, so the choice of place compiles away.
    #[inline(always)]
    pub(crate) fn new<P: RunLinks<Links = L>>(
        header: NonNull<RunHeader>,
        chunk: *mut ChunkHeader,
        page: usize,
    ) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Fits::<P>::OK;
        let at = match P::LINKS {
            LinkPlace::RunHeader => header.cast::<u8>(),
            // SAFETY: the caller names a run of its chunk (a live header) and its first page, in
            // range; the entry's link words lie inside the chunk header, never at null.
            LinkPlace::ChunkMap => unsafe {
                NonNull::new_unchecked(PageEntry::run_links(ChunkHeader::entry(chunk, page)))
            },
        };
        RunRef {
            at,
            _links: PhantomData,
        }
    }

    /// `new` for a run just made: also writes `L::default()` where the links live in the chunk
    /// map (`RunHeader::init` wrote them in the header otherwise).
    ///
    /// # Safety
    /// As for `new`, and the run was just made by the caller, who holds its arena's lock.
    #[inline(always)]
    pub(crate) unsafe fn make<P: RunLinks<Links = L>>(
        header: NonNull<RunHeader>,
        chunk: *mut ChunkHeader,
        page: usize,
    ) -> Self
    where
        L: Default,
    {
        let run = Self::new::<P>(header, chunk, page);
        if P::LINKS == LinkPlace::ChunkMap {
            // SAFETY: the entry's link words are 8-aligned and 16 bytes (`Fits`), unused by the
            // free-run lists while the page is `SMALL`, and ours under the lock.
            unsafe { run.at.as_ptr().cast::<L>().write(L::default()) };
        }
        run
    }

    /// The run, for the engine, which knows the policy `P` whose handle this is (no test at
    /// run time).
    #[inline(always)]
    pub(crate) fn run_of<P: RunLinks<Links = L>>(self) -> Run {
        match P::LINKS {
            LinkPlace::RunHeader => Run(self.at.cast()),
            // SAFETY: a handle the engine made for a live run (policies hold only those).
            LinkPlace::ChunkMap => unsafe { Self::header_of_entry(self.at) },
        }
    }

    /// The run, whichever place the handle's links are at: a handle inside a chunk's header
    /// pages is a page entry's (no run header lies there). Only a policy's own calls (`start`,
    /// `free`, `capacity`) pay this test, as a handle does not know its policy; the engine,
    /// which does, uses `run_of`.
    #[inline(always)]
    pub(crate) fn run(self) -> Run {
        if (self.at.as_ptr() as usize) & (CHUNK - 1) < CHUNK_HEADER_PAGES * PAGE {
            // SAFETY: as in `run_of`.
            unsafe { Self::header_of_entry(self.at) }
        } else {
            Run(self.at.cast())
        }
    }

    /// The header of the run whose first page entry holds the link words at `at`: the entry's
    /// bits name the bin, its index the page.
    ///
    /// # Safety
    /// `at` is the link words of the first page entry of a live small run.
    #[inline(always)]
    unsafe fn header_of_entry(at: NonNull<u8>) -> Run {
        let entry =
            (at.as_ptr() as usize - core::mem::offset_of!(PageEntry, prev)) as *mut PageEntry;
        let (chunk, page) = ChunkHeader::locate(entry);
        // SAFETY: per the contract, a live `SMALL` entry of a live chunk.
        let idx = unsafe { (*entry).bin() };
        Run(RunHeader::at(ChunkHeader::page_addr(chunk, page), idx))
    }

    /// The run's identity: the address of its links (its header, or its first page's entry of
    /// the chunk map), ordered like its start address (entries and runs both follow the pages'
    /// order, and a chunk's entries lie in its first pages, below its runs).
    pub fn addr(self) -> usize {
        self.at.as_ptr() as usize
    }

    /// The policy's links stored for this run.
    ///
    /// Valid while the run is known to the policy: from the `insert` that hands it over to the
    /// `remove` that takes it back. The engine calls policies only under the arena lock, so the
    /// links are never shared across threads.
    #[inline(always)]
    pub fn links(&self) -> &L {
        // SAFETY: the links are 8-aligned, large enough for `L` (`Fits`, checked where the
        // handle was made), initialized with `L::default()` when the run was made,
        // and only reached under the arena lock. The returned borrow is tied to this handle,
        // which the policy holds only while the run is known to it (the `RunReuse` contract).
        unsafe { &*self.at.as_ptr().cast::<L>() }
    }

    /// The run's start address (its first region; the header lies further in). Messages name
    /// a run by its start.
    pub fn start(self) -> usize {
        // SAFETY: as for `links`.
        unsafe { self.run().base() }
    }

    /// Free regions in the run now.
    pub fn free(self) -> usize {
        // SAFETY: as for `links`.
        unsafe { self.run().free() }
    }

    /// Regions in the run.
    pub fn capacity(self) -> usize {
        // SAFETY: as for `links`.
        unsafe { self.run().info().capacity as usize }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::meta::size_class::{small_index, BINS};

    /// Runs `f` on a fresh run of bin `bin_index` (and its base address); returns what `f`
    /// returns, so that each test checks its body ran (mutation testing found that an empty
    /// `with_run` passed every test).
    fn with_run<T>(bin_index: usize, clean: bool, f: impl FnOnce(Run, usize) -> T) -> T {
        let info = bin(bin_index);
        let base = crate::platform::os::map(info.run_size()).unwrap().as_ptr() as usize;
        // SAFETY: a fresh mapping of one run, owned by this test.
        let h =
            unsafe { RunHeader::init::<[usize; 4]>(base, bin_index, clean, LinkPlace::RunHeader) };
        let out = f(Run(h), base);
        // SAFETY: mapped above.
        unsafe { crate::platform::os::unmap(base as *mut u8, info.run_size()) };
        out
    }

    #[test]
    fn regions_come_lowest_first_and_return() {
        for idx in [0, small_index(48), small_index(1000), BINS.len() - 1] {
            let reused = with_run(idx, true, |run, base| {
                let info = bin(idx);
                let cap = info.capacity as usize;
                // SAFETY: a live run owned by this test (no lock needed: single thread).
                unsafe {
                    assert_eq!(run.free(), cap);
                    assert_eq!(run.bitmap_popcount(), cap);
                    assert!(run.header_ok(base) && run.bitmap_shape_ok());
                    for i in 0..cap {
                        let (p, fresh, zero) = run.take_region();
                        assert_eq!(p, base + i * info.size as usize);
                        assert!(fresh);
                        assert!(zero, "a clean run's untouched regions are zero");
                    }
                    assert_eq!((run.free(), run.bitmap_popcount()), (0, 0));
                    // Free two regions out of order: the lowest comes back first.
                    run.put_region(cap - 1);
                    run.put_region(cap / 2);
                    assert!(run.is_free(cap / 2) && !run.is_free(0));
                    assert!(run.bitmap_shape_ok());
                    assert!(run.never_allocated(cap) && !run.never_allocated(cap - 1));
                    let (p, fresh, zero) = run.take_region();
                    assert_eq!(p, base + (cap / 2) * info.size as usize);
                    assert!(!fresh);
                    assert!(!zero, "a reused region is not known zero");
                    assert_eq!(run.free(), 1);
                    p - base
                }
            });
            // The body ran to its end: the region it reused was the middle one.
            let info = bin(idx);
            assert_eq!(reused, (info.capacity as usize / 2) * info.size as usize);
        }
    }

    #[test]
    fn dirty_runs_promise_nothing_but_the_high_water_mark() {
        let (fresh, zero) = with_run(small_index(64), false, |run, _| {
            // SAFETY: as above.
            unsafe {
                let (_, fresh, zero) = run.take_region();
                assert!(!run.never_allocated(0) && run.never_allocated(1));
                (fresh, zero)
            }
        });
        assert!(fresh && !zero);
    }
}
