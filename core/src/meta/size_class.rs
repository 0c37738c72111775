//! Size classes and run geometry (mozjemalloc's layout).
//!
//! - small, quantum-spaced: 16, 32, ... 496 (step 16);
//! - small, quantum-wide: 512, 768, ... 3840 (step 256);
//! - large: whole pages, up to a chunk minus its header (`LARGE_MAX`);
//! - huge: a mapping of its own, chunk-aligned.
//!
//! A small class is served from runs: contiguous pages cut into equal regions. The run header
//! (free count, bitmap, policy links) sits at the *end* of the run, in the slack that the
//! regions leave, so region `i` starts at `i * size` from the page-aligned run start and every
//! region is aligned to the largest power of two dividing its size. Run length grows a page at
//! a time until the bytes not given to regions (header plus slack) are at most 1/64 (1.56%) of
//! the run, within `MAX_RUN_PAGES`; past that, the least wasteful length is taken.

pub use crate::platform::os::PAGE;

/// log2 of [`PAGE`].
pub const PAGE_SHIFT: u32 = PAGE.trailing_zeros();
/// Chunk size: the unit in which arenas take memory from the OS, and its alignment.
pub const CHUNK: usize = 1 << 20;
/// Pages in a chunk.
pub const CHUNK_PAGES: usize = CHUNK / PAGE;
/// Pages at the start of every chunk holding its header and page map.
pub const CHUNK_HEADER_PAGES: usize = 2;
/// Pages of a chunk available to runs and large allocations.
pub const CHUNK_USABLE_PAGES: usize = CHUNK_PAGES - CHUNK_HEADER_PAGES;
/// Minimum alignment and spacing of the first small classes.
pub const QUANTUM: usize = 16;
/// Largest quantum-spaced class.
pub const QUANTUM_MAX: usize = 496;
/// Spacing of the quantum-wide classes.
pub const WIDE_STEP: usize = 256;
/// Largest small class.
pub const SMALL_MAX: usize = 3840;
/// Largest large allocation: every usable page of one chunk.
pub const LARGE_MAX: usize = CHUNK_USABLE_PAGES * PAGE;
/// Number of small classes, hence bins per arena.
pub const NBINS: usize = QUANTUM_MAX / QUANTUM + (SMALL_MAX - 2 * WIDE_STEP) / WIDE_STEP + 1;
/// Largest request a thread cache serves: four pages (jemalloc's serves up to 32 KiB). Past
/// the small classes come large ones of whole pages, which a cache holds as it holds regions,
/// so that a page-sized block does not take the arena lock at every call.
pub const CACHE_MAX: usize = 4 * PAGE;
/// Large classes a thread cache holds: 1 to `CACHE_MAX / PAGE` pages.
pub const NLARGE_CACHED: usize = CACHE_MAX / PAGE;
/// A thread cache's classes: the small ones (`0..NBINS`), then the large ones
/// (`NBINS + pages - 1`).
pub const NCACHE: usize = NBINS + NLARGE_CACHED;
/// Longest small run.
pub const MAX_RUN_PAGES: usize = 16;
/// Bytes of the fixed part of a run header (policy links and counters), before the bitmap.
pub const RUN_HEADER_FIXED: usize = 48;
/// Target bound on a run's unused bytes: 1/64 of the run.
pub const RUN_OVERHEAD_DIVISOR: usize = 64;

/// Where a request is served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeClass {
    /// A region of bin `index`.
    Small(usize),
    /// Whole pages of an arena chunk.
    Large(usize),
    /// A mapping of its own, of this many bytes (page multiple).
    Huge(usize),
}

/// Geometry of one small class's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinInfo {
    /// Region size in bytes.
    pub size: u32,
    /// Pages per run.
    pub run_pages: u32,
    /// Regions per run.
    pub capacity: u32,
    /// Offset of the run header from the run start.
    pub header_offset: u32,
    /// 64-bit words in the run's free-region bitmap.
    pub bitmap_words: u32,
    /// `ceil(2^64 / size)`: turns a region offset into its index, and tells a region start,
    /// with one multiplication (`region_index`).
    pub reciprocal: u64,
}

impl BinInfo {
    /// Bytes in one run.
    pub const fn run_size(&self) -> usize {
        self.run_pages as usize * PAGE
    }

    /// Natural alignment of this class's regions.
    pub const fn region_align(&self) -> usize {
        let a = 1usize << (self.size as usize).trailing_zeros();
        if a > PAGE {
            PAGE
        } else {
            a
        }
    }

    /// Bytes of a run that no region uses (header plus slack).
    pub const fn overhead(&self) -> usize {
        self.run_size() - self.capacity as usize * self.size as usize
    }

    /// Index of the region at `offset` from the run start, if `offset` is a region start.
    ///
    /// One 64 x 64 -> 128-bit multiplication by `reciprocal` answers both questions (Lemire,
    /// Kaser and Kurz, "Faster remainder by direct computation", 2019): its high half is
    /// `offset / size` and its low half is below `reciprocal` exactly when `size` divides
    /// `offset`, for every offset below 2^32 (run offsets are below a chunk).
    #[inline(always)]
    pub fn region_index(&self, offset: usize) -> Option<usize> {
        debug_assert!(offset < 1 << 32);
        let m = offset as u128 * self.reciprocal as u128;
        let idx = (m >> 64) as usize;
        if (m as u64) < self.reciprocal && idx < self.capacity as usize {
            Some(idx)
        } else {
            None
        }
    }
}

/// Size of small class `index`.
pub const fn class_size(index: usize) -> usize {
    let quantum_classes = QUANTUM_MAX / QUANTUM;
    if index < quantum_classes {
        (index + 1) * QUANTUM
    } else {
        (index - quantum_classes + 2) * WIDE_STEP
    }
}

/// Small class index for a request of `size` bytes (`1..=SMALL_MAX`; 0 is treated as 1): one
/// load from a table indexed by the size in quanta, rounded up (`SIZE_TO_CLASS`), instead of
/// two spacings told apart by a branch.
#[inline(always)]
pub const fn small_index(size: usize) -> usize {
    debug_assert!(size <= SMALL_MAX);
    cache_index(size)
}

/// The thread cache's class for a request of `size` bytes (`0..=CACHE_MAX`): the small class
/// up to `SMALL_MAX`, then `NBINS + pages - 1`; the same one load as `small_index`. Sizes past
/// `CACHE_MAX` are out of the table (a panic).
#[inline(always)]
pub const fn cache_index(size: usize) -> usize {
    // No overflow: callers pass at most `CACHE_MAX`. Not `div_ceil`, which compiles to a
    // shift, a test and an add where this is an add and a shift.
    #[allow(clippy::manual_div_ceil)]
    let quanta = (size + (QUANTUM - 1)) / QUANTUM;
    let class = SIZE_TO_CLASS[quanta] as usize;
    // SAFETY: every entry of the table is below `NCACHE` (asserted where it is built, at
    // compile time). Said here so that indexing a cache's classes with it needs no bounds
    // check on the fast paths.
    unsafe { core::hint::assert_unchecked(class < NCACHE) };
    class
}

/// Bytes of thread-cache class `idx` (`0..NCACHE`): a small class's region size, or a large
/// class's pages.
#[inline(always)]
pub const fn cache_class_bytes(idx: usize) -> usize {
    if idx < NBINS {
        class_size(idx)
    } else {
        (idx - NBINS + 1) * PAGE
    }
}

/// `small_index` by arithmetic: what `SIZE_TO_CLASS` is built from (and tested against).
pub const fn small_index_by_steps(size: usize) -> usize {
    // `(size - 1) / step` counts whole steps below the size: the class's rank within its
    // spacing, without a division (the steps are powers of two) or a branch for 0.
    if size <= QUANTUM_MAX {
        size.saturating_sub(1) / QUANTUM
    } else {
        QUANTUM_MAX / QUANTUM - 1 + (size - 1) / WIDE_STEP
    }
}

/// The thread cache's class of every size in quanta, rounded up (entry `q` serves sizes
/// `16 * (q - 1) + 1 ..= 16 * q`, entry 0 size 0): the small classes' part is 241 bytes, four
/// cache lines; the large classes' part follows it.
const SIZE_TO_CLASS: [u8; CACHE_MAX / QUANTUM + 1] = {
    let mut t = [0u8; CACHE_MAX / QUANTUM + 1];
    let mut q = 0;
    while q < t.len() {
        // Every size of the quantum has the class of its largest: the wide classes and pages
        // are multiples of the quantum.
        let size = q * QUANTUM;
        let class = if size <= SMALL_MAX {
            small_index_by_steps(size)
        } else {
            NBINS + size.div_ceil(PAGE) - 1
        };
        // `cache_index` relies on it.
        assert!(class < NCACHE && NCACHE <= u8::MAX as usize);
        t[q] = class as u8;
        q += 1;
    }
    t
};

const fn header_bytes(capacity: usize) -> usize {
    RUN_HEADER_FIXED + 8 * capacity.div_ceil(64)
}

const fn bin_info(index: usize) -> BinInfo {
    let size = class_size(index);
    let mut best_pages = 0;
    let mut best_cap = 0;
    let mut best_waste = usize::MAX;
    let mut pages = 1;
    while pages <= MAX_RUN_PAGES {
        let run = pages * PAGE;
        let mut cap = run / size;
        while cap > 0 && cap * size + header_bytes(cap) > run {
            cap -= 1;
        }
        let waste = run - cap * size;
        // Compare waste as a fraction of the run: waste/run < best_waste/best_run.
        if cap > 0 && (best_pages == 0 || waste * (best_pages * PAGE) < best_waste * run) {
            best_pages = pages;
            best_cap = cap;
            best_waste = waste;
        }
        if cap > 0 && waste * RUN_OVERHEAD_DIVISOR <= run {
            break;
        }
        pages += 1;
    }
    let run = best_pages * PAGE;
    let header = header_bytes(best_cap);
    BinInfo {
        size: size as u32,
        run_pages: best_pages as u32,
        capacity: best_cap as u32,
        header_offset: ((run - header) & !7) as u32,
        bitmap_words: best_cap.div_ceil(64) as u32,
        reciprocal: u64::MAX / size as u64 + 1,
    }
}

const fn bin_table() -> [BinInfo; NBINS] {
    let mut t = [BinInfo {
        size: 0,
        run_pages: 0,
        capacity: 0,
        header_offset: 0,
        bitmap_words: 0,
        reciprocal: 0,
    }; NBINS];
    let mut i = 0;
    while i < NBINS {
        t[i] = bin_info(i);
        i += 1;
    }
    t
}

/// Geometry of every small class, computed at compile time.
pub static BINS: [BinInfo; NBINS] = bin_table();

/// The bin geometry for `index` (`index < NBINS`).
#[inline(always)]
pub fn bin(index: usize) -> &'static BinInfo {
    &BINS[index]
}

/// Largest alignment served (1 TiB): beyond it no mapping could be placed anyway.
pub const MAX_ALIGN: usize = 1 << 40;

/// Rounds `n` up to a multiple of `to` (a power of two); `None` on overflow.
#[inline(always)]
pub const fn round_up(n: usize, to: usize) -> Option<usize> {
    match n.checked_add(to - 1) {
        Some(v) => Some(v & !(to - 1)),
        None => None,
    }
}

/// Where a request for `size` bytes aligned to `align` (a power of two) is served from, or
/// `None` if no allocation can satisfy it (the sizes overflow the address space).
#[inline]
pub fn classify(size: usize, align: usize) -> Option<SizeClass> {
    if align <= QUANTUM {
        if size <= SMALL_MAX {
            return Some(SizeClass::Small(small_index(size)));
        }
    } else if align <= PAGE && size <= SMALL_MAX {
        // The first class at least `size` whose regions are naturally aligned to `align`.
        // By steps: `size.max(align)` may be past the table (4096 gives `NBINS`, no class).
        let mut i = small_index_by_steps(size.max(align));
        while i < NBINS {
            if BINS[i].region_align() >= align {
                return Some(SizeClass::Small(i));
            }
            i += 1;
        }
    }
    if size > isize::MAX as usize || align > MAX_ALIGN {
        return None;
    }
    let size = size.max(1);
    let pages = round_up(size, PAGE)? >> PAGE_SHIFT;
    if align <= PAGE {
        if pages <= CHUNK_USABLE_PAGES {
            return Some(SizeClass::Large(pages));
        }
    } else if align < CHUNK && pages + (align >> PAGE_SHIFT) - 1 <= CHUNK_USABLE_PAGES {
        // Over-allocate within a chunk and trim to alignment.
        return Some(SizeClass::Large(pages));
    }
    let bytes = round_up(size, PAGE)?;
    if bytes > isize::MAX as usize - align {
        return None;
    }
    Some(SizeClass::Huge(bytes))
}

/// Usable size of an allocation of class `c`.
pub fn usable(c: SizeClass) -> usize {
    match c {
        SizeClass::Small(i) => BINS[i].size as usize,
        SizeClass::Large(p) => p * PAGE,
        SizeClass::Huge(b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_mozjemalloc() {
        assert_eq!(NBINS, 45);
        assert_eq!(class_size(0), 16);
        assert_eq!(class_size(30), 496);
        assert_eq!(class_size(31), 512);
        assert_eq!(class_size(32), 768);
        assert_eq!(class_size(NBINS - 1), SMALL_MAX);
        for i in 0..NBINS {
            assert_eq!(small_index(class_size(i)), i, "class {i}");
            assert_eq!(small_index(class_size(i) - 1 + usize::from(i == 0)), i);
        }
        assert_eq!(small_index(0), 0);
        assert_eq!(small_index(497), 31);
    }

    #[test]
    fn runs_fit_and_waste_little() {
        for (i, b) in BINS.iter().enumerate() {
            let end = b.capacity as usize * b.size as usize;
            assert!(b.capacity >= 1, "class {i}");
            assert!(
                b.header_offset as usize >= end,
                "header overlaps regions in class {i}"
            );
            assert_eq!(b.header_offset % 8, 0);
            let hdr = RUN_HEADER_FIXED + 8 * b.bitmap_words as usize;
            assert!(
                b.header_offset as usize + hdr <= b.run_size(),
                "header past run in class {i}"
            );
            assert!(b.bitmap_words as usize * 64 >= b.capacity as usize);
            assert!(b.run_pages as usize <= MAX_RUN_PAGES);
            // Every class but the power-of-two ones reaches the 1/64 target; those are
            // bounded by the run length limit, and stay within 2/64.
            assert!(
                b.overhead() * 32 <= b.run_size(),
                "class {} wastes {} of {}",
                b.size,
                b.overhead(),
                b.run_size()
            );
        }
    }

    #[test]
    fn size_table_matches_the_steps() {
        for size in 0..=SMALL_MAX {
            assert_eq!(small_index(size), small_index_by_steps(size), "size {size}");
            let i = small_index(size);
            assert!(
                bin(i).size as usize >= size.max(1),
                "size {size} in class {i}"
            );
            assert!(
                i == 0 || (bin(i - 1).size as usize) < size,
                "size {size} in class {i}"
            );
        }
        assert_eq!(small_index(SMALL_MAX), NBINS - 1);
    }

    #[test]
    fn cache_classes_are_the_small_ones_then_whole_pages() {
        for size in 0..=CACHE_MAX {
            let i = cache_index(size);
            if size <= SMALL_MAX {
                assert_eq!(i, small_index(size), "size {size}");
                assert_eq!(cache_class_bytes(i), bin(i).size as usize);
                continue;
            }
            // The class `classify` gives the request, as the cache's large classes hold it.
            assert_eq!(
                classify(size, QUANTUM),
                Some(SizeClass::Large(i - NBINS + 1)),
                "size {size}"
            );
            assert_eq!(
                cache_class_bytes(i),
                size.div_ceil(PAGE) * PAGE,
                "size {size}"
            );
        }
        assert_eq!(cache_index(SMALL_MAX + 1), NBINS);
        assert_eq!(cache_index(CACHE_MAX), NCACHE - 1);
    }

    #[test]
    fn region_index_is_exact() {
        for b in BINS.iter() {
            for r in 0..b.capacity as usize {
                let off = r * b.size as usize;
                assert_eq!(b.region_index(off), Some(r));
                if b.size > 16 {
                    assert_eq!(b.region_index(off + 8), None);
                }
            }
            assert_eq!(b.region_index(b.capacity as usize * b.size as usize), None);
            // Every offset of the run, and past it: a region start exactly at multiples of
            // the size below the capacity.
            for off in 0..b.run_size() + PAGE {
                let size = b.size as usize;
                let want =
                    (off % size == 0 && off / size < b.capacity as usize).then(|| off / size);
                assert_eq!(b.region_index(off), want, "class {size}, offset {off}");
            }
            for off in [(1usize << 32) - 1, (1 << 32) - b.size as usize] {
                assert_eq!(b.region_index(off), None);
            }
        }
    }

    #[test]
    fn classify_respects_alignment() {
        assert_eq!(classify(0, 1), Some(SizeClass::Small(0)));
        assert_eq!(classify(100, 64), Some(SizeClass::Small(small_index(128))));
        assert_eq!(classify(1, 2048), Some(SizeClass::Small(small_index(2048))));
        assert_eq!(classify(100, 4096), Some(SizeClass::Large(1)));
        assert_eq!(classify(SMALL_MAX + 1, 8), Some(SizeClass::Large(1)));
        assert_eq!(
            classify(LARGE_MAX, 8),
            Some(SizeClass::Large(CHUNK_USABLE_PAGES))
        );
        assert_eq!(
            classify(LARGE_MAX + 1, 8),
            Some(SizeClass::Huge(LARGE_MAX + PAGE))
        );
        assert_eq!(classify(10, CHUNK), Some(SizeClass::Huge(PAGE)));
        assert_eq!(classify(usize::MAX, 8), None);
        assert_eq!(classify(isize::MAX as usize, 4096), None);
        assert_eq!(classify(16, 1 << 62), None);
        for size in [1usize, 17, 100, 1000, 3000] {
            for shift in 4..12 {
                let align = 1 << shift;
                if let Some(SizeClass::Small(i)) = classify(size, align) {
                    assert!(BINS[i].size as usize >= size && BINS[i].region_align() >= align);
                }
            }
        }
    }

    /// Kills cargo-mutants' `replace BinInfo::overhead -> usize with 1`
    /// (`core/src/meta/size_class.rs`, survivor of the campaign): a run's bytes are its
    /// regions plus its overhead (header and slack), and no test summed them.
    #[test]
    fn regions_and_overhead_fill_each_run() {
        for i in 0..NBINS {
            let b = bin(i);
            assert_eq!(
                b.capacity as usize * b.size as usize + b.overhead(),
                b.run_size(),
                "class {i}"
            );
        }
        // The smallest class's run holds a header: its overhead is at least a region.
        assert!(bin(0).overhead() >= bin(0).size as usize);
    }
}
