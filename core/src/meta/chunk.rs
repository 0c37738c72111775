//! Chunks: 1 MiB, 1 MiB-aligned pieces of address space owned by one arena, with a header
//! holding one entry per page.
//!
//! The header occupies the first `CHUNK_HEADER_PAGES` pages. A page entry says what the page
//! is part of and keeps the links of the arena's free-page-run lists, so that free pages are
//! never written to (purged pages stay purged, fresh pages stay untouched):
//!
//! - `FREE`: part of a free page run. The first and last page of the run carry its length;
//!   the first page's entry is linked into the arena's list for that length.
//! - `SMALL`: part of a small run; carries the bin index and the distance to the run's first
//!   page, where the run starts (its header is at the end of the run). The first page's link
//!   words, which the free-run lists use only while the page is free, hold the run-reuse
//!   policy's links when it keeps them in the chunk map (`LinkPlace::ChunkMap`), as
//!   mozjemalloc's `arena_chunk_map_t` link served both the free-run tree and a bin's runs.
//! - `LARGE`: part of a large allocation; the first page carries the length and `HEAD`.
//! - `META`: header pages.
//! - `META | PURGING` (exactly `PURGING`): a dirty free page taken out of the free runs to be
//!   purged without the arena lock (`arena.rs`). Its kind is `META` so that every path that
//!   looks for free pages (coalescing, growing a large allocation in place) or for an
//!   allocation (`free`, `usable_size`) passes it by: a pointer into it is refused as not
//!   allocated. The arena's purge records say which spans these are.
//!
//! `DIRTY` is kept per page: set when a page that was in use becomes free, cleared when it is
//! purged. A free page without `DIRTY` reads as zero (fresh from mmap, or after MADV_DONTNEED);
//! `PURGED` tells the second from the first, for `zero_check: recycled`, which must read only
//! memory that could have been written since the heap last knew it zero (`safety.rs`).
//! All page entries are read and written only under the owning arena's lock (a page being
//! purged has its memory, never its entry, touched without it).

use crate::meta::size_class::{CHUNK, CHUNK_HEADER_PAGES, CHUNK_PAGES, PAGE, PAGE_SHIFT};
use core::ptr;

/// Kind bits of a page entry.
pub const KIND_MASK: usize = 3;
/// Header pages.
pub const META: usize = 0;
/// Part of a free page run.
pub const FREE: usize = 1;
/// Part of a small run.
pub const SMALL: usize = 2;
/// Part of a large allocation.
pub const LARGE: usize = 3;
/// The page was used since it was last known to be zero.
pub const DIRTY: usize = 1 << 2;
/// First page of a large allocation.
pub const HEAD: usize = 1 << 3;
/// With kind `META` outside the header: a page being purged without the arena lock.
pub const PURGING: usize = 1 << 4;
/// On a free page without `DIRTY`: it was in use and has been purged since (not fresh).
pub const PURGED: usize = 1 << 5;
/// The flags that say what a free page holds: what a free run's ends keep when rewritten.
pub const CONTENT: usize = DIRTY | PURGED;
const FIELD_A_SHIFT: u32 = 16;
const FIELD_B_SHIFT: u32 = 32;
const FIELD_MASK: usize = 0xffff;

/// One page's entry: a packed word and the links of the free-run lists.
#[repr(C)]
pub struct PageEntry {
    /// Kind, flags, and two 16-bit fields (see the accessors).
    pub bits: usize,
    /// Previous free run of the same length (on a free run's first page). With `next`, a
    /// small run's links on its first page when its policy keeps them here (`run_links`).
    pub prev: *mut PageEntry,
    /// Next free run of the same length (on a free run's first page).
    pub next: *mut PageEntry,
}

/// Bytes of a page entry's link words (`prev` and `next`), which a run-reuse policy may use on
/// a small run's first page.
pub const RUN_LINK_BYTES: usize = 2 * core::mem::size_of::<*mut PageEntry>();

const _: () = assert!(
    core::mem::offset_of!(PageEntry, next)
        == core::mem::offset_of!(PageEntry, prev) + core::mem::size_of::<*mut PageEntry>()
);

/// A copy of a page entry's packed word, with the same accessors as `PageEntry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageBits(pub usize);

impl PageBits {
    /// The kind bits.
    #[inline(always)]
    pub fn kind(self) -> usize {
        self.0 & KIND_MASK
    }
    /// Whether this is the first page of a large allocation.
    #[inline(always)]
    pub fn head(self) -> bool {
        self.0 & HEAD != 0
    }
    /// See [`PageEntry::len`].
    #[inline(always)]
    pub fn len(self) -> usize {
        (self.0 >> FIELD_A_SHIFT) & FIELD_MASK
    }
    /// See [`PageEntry::run_offset`].
    #[inline(always)]
    pub fn run_offset(self) -> usize {
        (self.0 >> FIELD_A_SHIFT) & FIELD_MASK
    }
    /// On the head page of a large allocation made with a debug option on: the bytes it holds
    /// past the request (`None`: not recorded). For sized-deallocation checks.
    #[inline(always)]
    pub fn slack(self) -> Option<usize> {
        ((self.0 >> FIELD_B_SHIFT) & FIELD_MASK).checked_sub(1)
    }
    /// See [`PageEntry::bin`].
    #[inline(always)]
    pub fn bin(self) -> usize {
        (self.0 >> FIELD_B_SHIFT) & FIELD_MASK
    }
    /// The bin field with every bit above it: the bin when the bits above are clear, as
    /// the engine writes them, and a value above any bin index otherwise. One shift where
    /// `bin` takes a shift and a mask: a caller that refuses values of `NBINS` and above (a
    /// bounds check it needs anyway) refuses a corrupt entry too.
    #[inline(always)]
    pub fn bin_unmasked(self) -> usize {
        self.0 >> FIELD_B_SHIFT
    }
}

impl PageEntry {
    /// A copy of the packed word.
    #[inline(always)]
    pub fn get(&self) -> PageBits {
        PageBits(self.bits)
    }
    /// The kind bits.
    #[inline(always)]
    pub fn kind(&self) -> usize {
        self.bits & KIND_MASK
    }
    /// Whether `DIRTY` is set.
    #[inline(always)]
    pub fn dirty(&self) -> bool {
        self.bits & DIRTY != 0
    }
    /// Run length in pages (on the first and last page of a free run, the first of a large one).
    #[inline(always)]
    pub fn len(&self) -> usize {
        (self.bits >> FIELD_A_SHIFT) & FIELD_MASK
    }
    /// Pages back to the first page of the small run.
    #[inline(always)]
    pub fn run_offset(&self) -> usize {
        (self.bits >> FIELD_A_SHIFT) & FIELD_MASK
    }
    /// Bin index of the small run.
    #[inline(always)]
    pub fn bin(&self) -> usize {
        (self.bits >> FIELD_B_SHIFT) & FIELD_MASK
    }

    /// The link words (`prev`, then `next`) of the entry at `e`, 8-aligned: a small run's
    /// run-reuse links on its first page (the free-run lists write them anew when the page is
    /// free again, and read them only on free pages).
    #[inline(always)]
    pub fn run_links(e: *mut PageEntry) -> *mut u8 {
        e.wrapping_byte_add(core::mem::offset_of!(PageEntry, prev))
            .cast()
    }

    /// Bits of a page in a free run (length only matters at the run's ends) whose content
    /// flags are `content` (`DIRTY`, `PURGED` or neither: fresh).
    #[inline(always)]
    pub fn free_bits(len: usize, content: usize) -> usize {
        FREE | (len << FIELD_A_SHIFT) | (content & CONTENT)
    }
    /// The content flags of a free page (`CONTENT`).
    #[inline(always)]
    pub fn content(&self) -> usize {
        self.bits & CONTENT
    }
    /// Bits of a page in a small run.
    #[inline(always)]
    pub fn small_bits(bin: usize, offset: usize) -> usize {
        SMALL | (offset << FIELD_A_SHIFT) | (bin << FIELD_B_SHIFT)
    }
    /// Bits of a page in a large allocation.
    #[inline(always)]
    pub fn large_bits(len: usize, head: bool) -> usize {
        LARGE | (len << FIELD_A_SHIFT) | if head { HEAD } else { 0 }
    }
    /// Records `slack` (see [`PageBits::slack`]) on a large allocation's head page; a slack
    /// too large for the field is left unrecorded.
    #[inline(always)]
    pub fn record_slack(&mut self, slack: usize) {
        let field = if slack < FIELD_MASK { slack + 1 } else { 0 };
        self.bits = (self.bits & !(FIELD_MASK << FIELD_B_SHIFT)) | (field << FIELD_B_SHIFT);
    }
}

/// The chunk header, at the chunk's first byte.
#[repr(C)]
pub struct ChunkHeader {
    /// The owning arena (type-erased `*const Arena<C>`); fixed for the chunk's life.
    pub arena: *const (),
    /// Index of the owning arena.
    pub arena_index: usize,
    /// Next chunk of the same arena.
    pub next: *mut ChunkHeader,
    /// One entry per page of the chunk.
    pub pages: [PageEntry; CHUNK_PAGES],
}

const _: () = assert!(core::mem::size_of::<ChunkHeader>() <= CHUNK_HEADER_PAGES * PAGE);

impl ChunkHeader {
    /// The chunk containing `addr`.
    #[inline(always)]
    pub fn of(addr: usize) -> *mut ChunkHeader {
        (addr & !(CHUNK - 1)) as *mut ChunkHeader
    }

    /// Page index of `addr` within its chunk.
    #[inline(always)]
    pub fn page_index(addr: usize) -> usize {
        (addr & (CHUNK - 1)) >> PAGE_SHIFT
    }

    /// Address of page `page` of the chunk at `chunk`.
    #[inline(always)]
    pub fn page_addr(chunk: *mut ChunkHeader, page: usize) -> usize {
        chunk as usize + (page << PAGE_SHIFT)
    }

    /// The entry of page `page`.
    ///
    /// # Safety
    /// `chunk` is a live chunk header and `page < CHUNK_PAGES`.
    #[inline(always)]
    pub unsafe fn entry(chunk: *mut ChunkHeader, page: usize) -> *mut PageEntry {
        debug_assert!(page < CHUNK_PAGES);
        // SAFETY: the caller guarantees the header is live and the index in bounds.
        unsafe {
            ptr::addr_of_mut!((*chunk).pages)
                .cast::<PageEntry>()
                .add(page)
        }
    }

    /// The chunk and page index of a page entry.
    #[inline(always)]
    pub fn locate(entry: *mut PageEntry) -> (*mut ChunkHeader, usize) {
        let chunk = Self::of(entry as usize);
        let first = core::mem::offset_of!(ChunkHeader, pages);
        let page = (entry as usize - chunk as usize - first) / core::mem::size_of::<PageEntry>();
        (chunk, page)
    }

    /// Writes a fresh header into a freshly mapped (zeroed) chunk: header pages `META`, the
    /// rest one clean free run (the caller links it into its lists).
    ///
    /// # Safety
    /// `chunk` is the start of a fresh, writable, exclusively owned chunk mapping.
    pub unsafe fn init(chunk: *mut ChunkHeader, arena: *const (), arena_index: usize) {
        // SAFETY: the caller owns the mapping; the header fits in it (asserted above).
        unsafe {
            (*chunk).arena = arena;
            (*chunk).arena_index = arena_index;
            (*chunk).next = ptr::null_mut();
            for p in 0..CHUNK_HEADER_PAGES {
                (*Self::entry(chunk, p)).bits = META;
            }
            let len = CHUNK_PAGES - CHUNK_HEADER_PAGES;
            (*Self::entry(chunk, CHUNK_HEADER_PAGES)).bits = PageEntry::free_bits(len, 0);
            (*Self::entry(chunk, CHUNK_PAGES - 1)).bits = PageEntry::free_bits(len, 0);
            // Interior free pages need only their kind; fresh memory is zero (META), so mark them.
            for p in CHUNK_HEADER_PAGES + 1..CHUNK_PAGES - 1 {
                (*Self::entry(chunk, p)).bits = FREE;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn entry_fields_round_trip() {
        let e = PageEntry {
            bits: PageEntry::small_bits(44, 15),
            prev: ptr::null_mut(),
            next: ptr::null_mut(),
        };
        assert_eq!(
            (e.kind(), e.bin(), e.run_offset(), e.dirty()),
            (SMALL, 44, 15, false)
        );
        let e = PageEntry {
            bits: PageEntry::free_bits(254, DIRTY),
            ..e
        };
        assert_eq!((e.kind(), e.len(), e.dirty()), (FREE, 254, true));
        let e = PageEntry {
            bits: PageEntry::large_bits(7, true),
            ..e
        };
        assert_eq!((e.kind(), e.len(), e.bits & HEAD != 0), (LARGE, 7, true));
    }

    /// Kills cargo-mutants' `replace < with > in PageEntry::record_slack`, `replace >> with
    /// << in PageBits::slack` and `replace & with ^ in PageBits::slack`
    /// (`core/src/meta/chunk.rs`, survivors of the campaign): sized-deallocation checks read
    /// the slack back, and no test of the selection recorded one and read it.
    #[test]
    fn recorded_slack_reads_back_and_an_oversized_one_is_unrecorded() {
        let mut e = PageEntry {
            bits: PageEntry::large_bits(7, true),
            prev: ptr::null_mut(),
            next: ptr::null_mut(),
        };
        assert_eq!(e.get().slack(), None, "no slack recorded yet");
        for slack in [0, 1, 100, FIELD_MASK - 1] {
            e.record_slack(slack);
            assert_eq!(e.get().slack(), Some(slack), "slack {slack}");
            // The slack shares the word with the kind and the length: both survive it.
            assert_eq!((e.kind(), e.len(), e.get().head()), (LARGE, 7, true));
        }
        for too_large in [FIELD_MASK, FIELD_MASK + 1, usize::MAX - 1] {
            e.record_slack(too_large);
            assert_eq!(e.get().slack(), None, "slack {too_large}");
            assert_eq!((e.kind(), e.len(), e.get().head()), (LARGE, 7, true));
        }
    }

    #[test]
    fn locate_inverts_entry() {
        let m = crate::platform::os::map_aligned(CHUNK, CHUNK)
            .unwrap()
            .as_ptr()
            .cast::<ChunkHeader>();
        // SAFETY: fresh chunk mapping owned by this test.
        unsafe {
            ChunkHeader::init(m, ptr::null(), 3);
            for p in [0, 1, 2, 100, CHUNK_PAGES - 1] {
                assert_eq!(ChunkHeader::locate(ChunkHeader::entry(m, p)), (m, p));
            }
            assert_eq!(ChunkHeader::page_index(m as usize + 5 * PAGE + 17), 5);
            assert_eq!(
                (*ChunkHeader::entry(m, 2)).len(),
                CHUNK_PAGES - CHUNK_HEADER_PAGES
            );
            crate::platform::os::unmap(m.cast(), CHUNK);
        }
    }
}
