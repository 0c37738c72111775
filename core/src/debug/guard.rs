//! Guard pages after large allocations (the `guard` option), and where a large allocation
//! starts.
//!
//! A guarded large allocation takes one page more than it needs; that last page is made
//! inaccessible, and the allocation is placed so that it ends right at it: its start is moved
//! into the first page by as much as the request's alignment (at least 16) allows, so a write
//! of one byte past the requested size faults when the size is a multiple of the alignment.
//! The guard page's entry (a `LARGE` page that is not the head) records that offset in its
//! length field as `offset / 16 + 1`; an unguarded allocation's other pages hold 0 there. So
//! `free` finds the start from the page entries alone and refuses any other address.

use crate::meta::chunk::{ChunkHeader, PageBits, PageEntry};
use crate::meta::size_class::{round_up, PAGE, QUANTUM};
use crate::platform::error::FreeError;
use crate::platform::os;

/// A live large allocation, as its page entries describe it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LargeAt {
    /// Pages it holds, the guard page included.
    pub pages: usize,
    /// Where the program's bytes start.
    pub start: usize,
    /// Bytes the program may use.
    pub usable: usize,
    /// Whether its last page is a guard page.
    pub guarded: bool,
    /// The size it was requested with, where recorded (`PageBits::slack`).
    pub request: Option<usize>,
}

/// The large allocation whose head page is `page` (entry `e`), if `addr` is its start. With
/// `guards` false (the capability is not compiled in), no allocation has a guard page.
///
/// # Safety
/// `chunk` is ours, `e` is the `LARGE` entry of `addr`'s page, and the arena lock is held.
#[inline(always)]
pub(crate) unsafe fn large_at(
    chunk: *mut ChunkHeader,
    page: usize,
    e: PageBits,
    addr: usize,
    guards: bool,
) -> Result<LargeAt, FreeError> {
    if !e.head() {
        return Err(FreeError::Interior);
    }
    // SAFETY: forwarded contract.
    let at = unsafe { headed_at(chunk, page, e, guards) };
    if addr != at.start {
        return Err(FreeError::Interior);
    }
    Ok(at)
}

/// The large allocation whose head page is `page` (entry `e`, with `HEAD`), as its page
/// entries describe it.
///
/// # Safety
/// `chunk` is ours and `e` is the entry of `page`, a head page; the arena lock is held, or
/// the caller only reports what it reads (the fault handler).
#[inline(always)]
pub(crate) unsafe fn headed_at(
    chunk: *mut ChunkHeader,
    page: usize,
    e: PageBits,
    guards: bool,
) -> LargeAt {
    let pages = e.len();
    let head = ChunkHeader::page_addr(chunk, page);
    if guards && pages >= 2 {
        // SAFETY: the allocation's last page is in the same chunk (per the contract).
        let mark = unsafe { (*ChunkHeader::entry(chunk, page + pages - 1)).len() };
        if mark != 0 {
            let off = (mark - 1) * QUANTUM;
            let usable = (pages - 1) * PAGE - off;
            return LargeAt {
                pages,
                start: head + off,
                usable,
                guarded: true,
                request: e.slack().and_then(|n| usable.checked_sub(n)),
            };
        }
    }
    LargeAt {
        pages,
        start: head,
        usable: pages * PAGE,
        guarded: false,
        request: e.slack().and_then(|n| (pages * PAGE).checked_sub(n)),
    }
}

/// Records that the large allocation headed at `page`, whose program bytes start at `start`
/// and end at `end`, was requested as `size` bytes (`size <= end - start`).
///
/// # Safety
/// `page` heads a live large allocation of our chunk, under the arena lock.
pub(crate) unsafe fn record_request(
    chunk: *mut ChunkHeader,
    page: usize,
    start: usize,
    end: usize,
    size: usize,
) {
    // SAFETY: per the contract.
    unsafe { (*ChunkHeader::entry(chunk, page)).record_slack((end - start).saturating_sub(size)) };
}

/// Turns the last of the `pages` pages just allocated at `page` into a guard page for a
/// request of `size` bytes aligned to `align`; returns where the allocation starts.
///
/// # Safety
/// `page` heads a large allocation of `pages >= 2` pages of our chunk, just made, under the
/// arena lock.
pub(crate) unsafe fn arm(
    chunk: *mut ChunkHeader,
    page: usize,
    pages: usize,
    size: usize,
    align: usize,
) -> usize {
    let a = align.max(QUANTUM);
    let user = (pages - 1) * PAGE;
    let len = round_up(size.max(1), a).unwrap_or(user).min(user);
    // Multiples of `a` below a page keep the start in the head page (and aligned).
    let off = ((user - len) & !(a - 1)).min((PAGE - 1) & !(a - 1));
    let guard = ChunkHeader::page_addr(chunk, page + pages - 1);
    // SAFETY: the last page belongs to the allocation just made (per the contract); nothing
    // uses it but this guard.
    unsafe {
        (*ChunkHeader::entry(chunk, page + pages - 1)).bits =
            PageEntry::large_bits(off / QUANTUM + 1, false);
        os::protect(guard as *mut u8, PAGE, false);
    }
    ChunkHeader::page_addr(chunk, page) + off
}

/// Makes the guard page of a guarded allocation accessible again, before its pages are freed.
///
/// # Safety
/// `at` describes the guarded allocation headed at `page` of our chunk, under the arena lock.
pub(crate) unsafe fn disarm(chunk: *mut ChunkHeader, page: usize, at: LargeAt) {
    let guard = ChunkHeader::page_addr(chunk, page + at.pages - 1);
    // SAFETY: the guard page is ours and accessible to nothing.
    unsafe { os::protect(guard as *mut u8, PAGE, true) };
}
