//! Exact checks of the engine's page-level decisions that the state machine only bounds:
//! when an arena purges dirty pages and how far, resizing a large allocation where it is
//! (growing into a free neighbour, shrinking in place), how many pages an aligned large
//! request takes, and the page map after a huge allocation shrinks, moves or is freed.
//! Mutation testing found wrong versions of each surviving the suite (VERIFY.md, "Mutation
//! testing"): an off-by-one purge threshold, a purge that never happens or goes too far, an
//! in-place growth refused or a shrink that moves, an aligned request asking a page too many,
//! a freed huge mapping still claimed by the page map.
//!
//! Every test uses a fresh heap with one arena (`Single`, no thread cache), so page placement
//! is the engine's alone: a new chunk hands out its pages from the lowest, and best fit takes
//! the shortest free run that is long enough. Nothing depends on timing or on addresses.
#![cfg(not(loom))]

use alloclab_core::size_class::{CHUNK, CHUNK_USABLE_PAGES, LARGE_MAX, PAGE};
use alloclab_core::{ArenaStats, FreeError, Heap, Options};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};

type H = Heap<Using<Lifo, Single>>;

fn heap(dirty_max_pages: usize) -> H {
    Heap::with_options(Options {
        dirty_max_pages,
        ..Options::DEFAULT
    })
}

fn stats(h: &H) -> ArenaStats {
    h.arena_stats(0).expect("arena 0 exists").0
}

fn pages(n: usize) -> usize {
    n * PAGE
}

/// Fills `len` bytes at `p` with a pattern derived from `tag`.
fn fill(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: the caller passes a live allocation of at least `len` bytes.
    unsafe { core::slice::from_raw_parts_mut(p, len) }
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = tag ^ (i / 7) as u8);
}

fn assert_filled(p: *const u8, len: usize, tag: u8) {
    // SAFETY: as for `fill`.
    let s = unsafe { core::slice::from_raw_parts(p, len) };
    if let Some(i) = (0..len).find(|&i| s[i] != tag ^ (i / 7) as u8) {
        panic!("byte {i} of {p:?} lost its contents");
    }
}

/// Frees large allocations of `p` pages each, every one between two live guards so that no
/// freed run coalesces, and checks the arena's dirty pages and purges after each free against
/// the rule: a free that leaves more than `max` dirty pages purges, longest free runs first,
/// whole runs, until at most `max / 2` remain.
fn purge_rule(max: usize, p: usize, n: usize) {
    let h = heap(max);
    let mut blocks = Vec::new();
    let mut guards = vec![h.malloc(PAGE)];
    for _ in 0..n {
        blocks.push(h.malloc(pages(p)));
        guards.push(h.malloc(PAGE));
    }
    let s = stats(&h);
    assert_eq!(
        (s.dirty_pages, s.purges),
        (0, 0),
        "a fresh chunk has no dirty page"
    );
    let (mut dirty, mut purges, mut purged) = (0, 0, 0);
    for (i, b) in blocks.into_iter().enumerate() {
        // SAFETY: a live allocation of `h`, freed once.
        unsafe { h.free(b) };
        dirty += p;
        if dirty > max {
            purges += 1;
            while dirty > max / 2 {
                dirty -= p;
                purged += p as u64;
            }
        }
        let s = stats(&h);
        assert_eq!(
            (s.dirty_pages, s.purges, s.purged_pages),
            (dirty, purges, purged),
            "after free {i} of {p}-page blocks (dirty max {max}): (dirty, purges, purged)"
        );
        h.check_invariants().unwrap();
    }
    for g in guards {
        // SAFETY: as above.
        unsafe { h.free(g) };
    }
    h.purge();
    assert_eq!(
        stats(&h).dirty_pages,
        0,
        "Heap::purge returns every dirty page"
    );
    h.check_invariants().unwrap();
}

#[test]
fn purging_starts_past_the_dirty_limit_and_stops_at_half() {
    // 2, 4, 6, 8 dirty pages (the limit: kept), 10 (past it: purged down to 4), ...
    purge_rule(8, 2, 12);
    // Runs that do not divide the limit: 3, 6, 9 -> 3, 6, 9 -> 3, ...
    purge_rule(8, 3, 9);
    // A limit of 0: every free purges everything.
    purge_rule(0, 1, 4);
    // A larger limit, still within one chunk (a second chunk's leftovers would take guards).
    purge_rule(40, 7, 12);
}

#[test]
fn the_default_dirty_limit_is_the_configs() {
    // `Config::DIRTY_MAX_PAGES` (256) when the option is left at its default: 200 dirty pages
    // are kept, 300 are purged down to at most 128 (under the threshold rule, which a default
    // `dirty_max_pages` does not choose by itself: the default purge is a decay).
    let h: H = Heap::with_options(Options {
        purge: Some(alloclab_core::Purge::Threshold),
        ..Options::DEFAULT
    });
    let a = h.malloc(pages(200));
    let b = h.malloc(pages(100));
    // SAFETY: live allocations of `h`, each freed once.
    unsafe { h.free(a) };
    let s = stats(&h);
    assert_eq!((s.dirty_pages, s.purges), (200, 0));
    // SAFETY: as above.
    unsafe { h.free(b) };
    let s = stats(&h);
    assert_eq!(s.purges, 1);
    assert!(s.dirty_pages <= 128, "{} dirty pages", s.dirty_pages);
    h.check_invariants().unwrap();
}

#[test]
fn shrinking_a_large_allocation_in_place_releases_its_tail() {
    let h = heap(8);
    let a = h.malloc(pages(10));
    let guard = h.malloc(PAGE);
    let b = h.malloc(pages(6));
    let guard2 = h.malloc(PAGE);
    fill(a, pages(10), 1);
    // SAFETY: `a` is live; not used again unless it is returned.
    let a2 = unsafe { h.realloc_c(a, pages(2)) };
    assert_eq!(a2, a, "a large allocation shrinks where it is");
    assert_eq!(h.usable_size(a), Ok(pages(2)));
    assert_filled(a, pages(2), 1);
    let s = stats(&h);
    // 8 dirty pages: at the limit, not past it.
    assert_eq!((s.dirty_pages, s.purges), (8, 0));
    assert_eq!(s.large_allocated, pages(2 + 1 + 6 + 1));
    assert_eq!(s.active_pages, 2 + 1 + 6 + 1);
    h.check_invariants().unwrap();
    // 10 dirty pages: past the limit; the longest free run (a's 8-page tail) goes first, which
    // is enough.
    // SAFETY: as above.
    let b2 = unsafe { h.realloc_c(b, pages(4)) };
    assert_eq!(b2, b);
    let s = stats(&h);
    assert_eq!((s.dirty_pages, s.purges, s.purged_pages), (2, 1, 8));
    h.check_invariants().unwrap();
    // The released tail is a free run of its own: best fit puts an 8-page request there.
    let t = h.malloc(pages(8));
    assert_eq!(t, a.wrapping_add(pages(2)));
    // Shrinking to the same size changes nothing.
    // SAFETY: `t` is live.
    assert_eq!(unsafe { h.realloc_c(t, pages(8)) }, t);
    for p in [a, guard, b, guard2, t] {
        // SAFETY: live allocations of `h`, each freed once.
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
}

#[test]
fn growing_a_large_allocation_takes_the_free_pages_after_it() {
    let h = heap(usize::MAX);
    let a = h.malloc(pages(4));
    let b = h.malloc(pages(4));
    let c = h.malloc(pages(3));
    let guard = h.malloc(PAGE);
    fill(a, pages(4), 2);
    // SAFETY: live allocations of `h`, each freed once (here and below).
    unsafe { h.free(b) };
    // Into part of the free neighbour: the rest stays a free run of 2 pages.
    // SAFETY: `a` is live; not used again unless it is returned.
    let a2 = unsafe { h.realloc_c(a, pages(6)) };
    assert_eq!(a2, a, "4 free pages follow: grown in place");
    assert_eq!(h.usable_size(a), Ok(pages(6)));
    assert_filled(a, pages(4), 2);
    assert_eq!(stats(&h).large_allocated, pages(6 + 3 + 1));
    assert_eq!(stats(&h).active_pages, 6 + 3 + 1);
    h.check_invariants().unwrap();
    // Exactly all of the remaining free neighbour.
    // SAFETY: as above.
    let a3 = unsafe { h.realloc_c(a, pages(8)) };
    assert_eq!(
        a3, a,
        "2 free pages follow: grown in place, taking all of them"
    );
    h.check_invariants().unwrap();
    // The next pages are in use: it moves, contents kept.
    fill(a, pages(8), 3);
    // SAFETY: as above.
    let moved = unsafe { h.realloc_c(a, pages(9)) };
    assert_ne!(moved, a, "the pages after it are taken: it must move");
    assert_filled(moved, pages(8), 3);
    h.check_invariants().unwrap();
    // The guard's page after `c` is free, the moved allocation after it is not: `c` grows by
    // that one page in place, and no further.
    // SAFETY: as above.
    unsafe { h.free(guard) };
    // SAFETY: as above.
    let c2 = unsafe { h.realloc_c(c, pages(4)) };
    assert_eq!(c2, c, "the freed guard page follows `c`");
    h.check_invariants().unwrap();
    // `a`'s old 8 pages, before `c`, are free: an allocation there does not grow over `c`.
    let d = h.malloc(pages(8));
    assert_eq!(
        d.wrapping_add(pages(8)),
        c,
        "best fit reuses the 8 free pages before `c`"
    );
    // SAFETY: as above.
    let d2 = unsafe { h.realloc_c(d, pages(9)) };
    assert_ne!(d2, d);
    for p in [moved, c, d2] {
        // SAFETY: as above.
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
}

#[test]
fn a_large_allocation_at_the_end_of_its_chunk_moves_to_grow() {
    let h = heap(usize::MAX);
    let rest = CHUNK_USABLE_PAGES - 3;
    let a = h.malloc(pages(rest));
    let end = h.malloc(pages(3));
    assert_eq!(end, a.wrapping_add(pages(rest)));
    assert_eq!(end as usize + pages(3), (a as usize & !(CHUNK - 1)) + CHUNK);
    // SAFETY: `end` is live; not used again unless it is returned.
    let moved = unsafe { h.realloc_c(end, pages(4)) };
    assert_ne!(moved, end, "no page follows the chunk's last one");
    h.check_invariants().unwrap();
    // The whole chunk as one allocation, resized to its own size, stays.
    // SAFETY: live allocations of `h`, each freed once.
    unsafe { h.free(moved) };
    // SAFETY: `a` is live.
    let a2 = unsafe { h.realloc_c(a, LARGE_MAX) };
    assert_eq!(a2, a, "the 3 pages after it are free again");
    assert_eq!(h.usable_size(a), Ok(LARGE_MAX));
    // SAFETY: as above.
    unsafe { h.free(a2) };
    h.check_invariants().unwrap();
}

/// Whether the heap claims any part of `addr..addr + len`, probed once per chunk and at the
/// last byte.
fn claims_any(h: &H, addr: usize, len: usize) -> bool {
    (addr..addr + len)
        .step_by(CHUNK)
        .chain([addr + len - 1])
        .any(|a| h.owns(a as *const u8))
}

#[test]
fn the_page_map_forgets_freed_shrunk_and_moved_huge_ranges() {
    let h = heap(usize::MAX);
    // Freed: no chunk of the mapping is claimed any more, and a stale pointer is foreign.
    let len = 3 * CHUNK + 5 * PAGE;
    let p = h.malloc(len);
    assert!(h.arena_of(p).is_none(), "{len} bytes is huge");
    assert!(claims_any(&h, p as usize, len));
    assert!(h.owns((p as usize + len - 1) as *const u8));
    // SAFETY: a live allocation of `h`, freed once.
    unsafe { h.free(p) };
    for off in [0, CHUNK, 2 * CHUNK, 3 * CHUNK, len - 1] {
        let a = (p as usize + off) as *const u8;
        assert!(!h.owns(a), "freed huge mapping still claimed at +{off:#x}");
        assert_eq!(h.usable_size(a), Err(FreeError::NotOurs), "at +{off:#x}");
    }
    // SAFETY: not ours any more: refused without being touched.
    assert_eq!(unsafe { h.try_free(p) }, Err(FreeError::NotOurs));
    h.check_invariants().unwrap();

    // Shrunk in place: the chunks past the new end are forgotten, the rest kept.
    let q = h.malloc(5 * CHUNK);
    // SAFETY: `q` is live; not used again unless returned.
    let q2 = unsafe { h.realloc_c(q, CHUNK + CHUNK / 2) };
    assert_eq!(q2, q, "a huge allocation shrinks in place");
    assert!(h.owns((q as usize + CHUNK + CHUNK / 2 - 1) as *const u8));
    assert!(
        !claims_any(&h, q as usize + 2 * CHUNK, 3 * CHUNK),
        "the unmapped tail is still claimed"
    );
    assert_eq!(h.usable_size(q), Ok(CHUNK + CHUNK / 2));
    h.check_invariants().unwrap();

    // Grown where it cannot grow in place (a page of someone else's right after it): it
    // moves, and the page map forgets the old range and claims the new one.
    let q_end = q as usize + CHUNK + CHUNK / 2;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; it fails instead (then
    // something else already holds the page, which blocks growth just as well).
    let blocker = unsafe {
        libc::mmap(
            q_end as *mut libc::c_void,
            PAGE,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    fill(q, CHUNK + CHUNK / 2, 4);
    // SAFETY: as above.
    let r = unsafe { h.realloc_c(q, 4 * CHUNK) };
    assert!(!r.is_null());
    assert_ne!(r, q, "the page after it is taken: it must move");
    assert_filled(r, CHUNK + CHUNK / 2, 4);
    assert_eq!(h.usable_size(r), Ok(4 * CHUNK));
    assert!(h.owns((r as usize + 4 * CHUNK - 1) as *const u8));
    assert!(
        !claims_any(&h, q as usize, CHUNK + CHUNK / 2),
        "the old range is still claimed"
    );
    assert_eq!(
        h.usable_size(q),
        Err(FreeError::NotOurs),
        "a pointer to the old range is foreign"
    );
    if blocker as usize == q_end {
        // SAFETY: our own one-page mapping, unused.
        unsafe { libc::munmap(blocker, PAGE) };
    }
    h.check_invariants().unwrap();
    // SAFETY: as above.
    unsafe { h.free(r) };
    assert!(!claims_any(&h, r as usize, 4 * CHUNK));
    assert_eq!(h.stats().huge_live, 0);
    h.check_invariants().unwrap();
}

/// An aligned large request takes a free run of its pages plus `align / PAGE - 1`, the most
/// trimming can cost, and no more: asking for one page too many passes over a run that fits,
/// and at the largest aligned size a chunk can serve it runs past the chunk's end.
#[test]
fn an_aligned_large_allocation_fits_in_its_pages_plus_the_alignment_less_a_page() {
    let h = heap(usize::MAX);
    // A fresh chunk's pages from its third (the header takes two): `a` at chunk + 2 pages,
    // `hole` at + 4 pages (both 2-page aligned, as the chunk is), `guard` after it.
    let a = h.malloc(pages(2));
    let hole = h.malloc(pages(7));
    let guard = h.malloc(PAGE);
    assert_eq!(hole as usize % pages(2), 0);
    // SAFETY: a live allocation of `h`, freed once.
    unsafe { h.free(hole) };
    // 6 pages aligned to 2 pages: 7 pages are enough, and the 7 free pages before `guard` are
    // the shortest run that long (the chunk's rest, after `guard`, is longer).
    let p = h.allocate(pages(6), pages(2), false);
    assert_eq!(
        p, hole,
        "best fit takes the 7-page hole for 6 pages aligned to 2"
    );
    assert_eq!(stats(&h).active_pages, 2 + 6 + 1);
    h.check_invariants().unwrap();
    for q in [a, p, guard] {
        // SAFETY: as above.
        unsafe { h.free(q) };
    }
    h.check_invariants().unwrap();

    // The largest request aligned to 2 pages that stays large: all of a fresh chunk's pages
    // but one, from its first usable page (aligned), the last page left free.
    let h = heap(usize::MAX);
    let big = h.allocate(pages(CHUNK_USABLE_PAGES - 1), pages(2), false);
    assert!(h.arena_of(big).is_some(), "one page under a chunk is large");
    assert_eq!(big as usize % CHUNK, pages(2));
    let s = stats(&h);
    assert_eq!((s.chunks, s.active_pages), (1, CHUNK_USABLE_PAGES - 1));
    h.check_invariants().unwrap();
    let last = h.malloc(PAGE);
    assert_eq!(last, big.wrapping_add(pages(CHUNK_USABLE_PAGES - 1)));
    for q in [big, last] {
        // SAFETY: as above.
        unsafe { h.free(q) };
    }
    h.check_invariants().unwrap();
}
