//! The purge policies (`alloclab_core::purge`) and the cache of freed huge mappings (issue 42):
//! a decay purges nothing before its delay and purges after it; the threshold rule is the old
//! one; a freed huge mapping is reused at the same address, the cache keeps to its bounds and
//! gives mappings back after the decay's delay; memory a zeroed allocation gets from the cache
//! reads zero; a huge `realloc` keeps its contents.
//!
//! Timing: a "before the delay" check uses a delay of a minute, an "after" check sleeps three
//! times a 50 ms delay, so neither depends on how fast the machine is.
#![cfg(not(loom))]

use alloclab_core::size_class::{CHUNK, PAGE};
use alloclab_core::{ArenaStats, Heap, Options, Purge};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use std::time::Duration;

type H = Heap<Using<Lifo, Single>>;

const MIB: usize = 1 << 20;

fn heap(purge: Purge) -> H {
    Heap::with_options(Options {
        purge: Some(purge),
        ..Options::DEFAULT
    })
}

fn arena(h: &H) -> ArenaStats {
    h.arena_stats(0).expect("arena 0 exists").0
}

/// `n` large blocks of `pages` pages, each between live guards so that frees do not coalesce.
fn blocks(h: &H, n: usize, pages: usize) -> Vec<*mut u8> {
    let mut v = Vec::new();
    h.malloc(PAGE);
    for _ in 0..n {
        let p = h.malloc(pages * PAGE);
        // SAFETY: a live allocation of `pages` pages: touch it so that freeing makes it dirty.
        unsafe { p.write_bytes(0x5a, pages * PAGE) };
        v.push(p);
        h.malloc(PAGE);
    }
    v
}

fn free_all(h: &H, v: Vec<*mut u8>) {
    for p in v {
        // SAFETY: live allocations of `h`, each freed once.
        unsafe { h.free(p) };
    }
}

#[test]
fn the_default_is_a_decay_unless_a_threshold_is_set() {
    assert_eq!(Options::DEFAULT.purge_policy(), Purge::DEFAULT);
    assert!(matches!(Purge::DEFAULT, Purge::Decay(ms) if ms > 0));
    let o = Options {
        dirty_max_pages: 16,
        ..Options::DEFAULT
    };
    assert_eq!(o.purge_policy(), Purge::Threshold);
    let o = Options {
        dirty_max_pages: 16,
        purge: Some(Purge::Decay(5)),
        ..Options::DEFAULT
    };
    assert_eq!(o.purge_policy(), Purge::Decay(5));
}

#[test]
fn a_decay_purges_nothing_before_its_delay() {
    let h = heap(Purge::Decay(60_000));
    // 40 blocks of 16 pages: 640 dirty pages, far beyond the threshold's 256.
    let v = blocks(&h, 40, 16);
    free_all(&h, v);
    let again = blocks(&h, 10, 16);
    free_all(&h, again);
    let s = arena(&h);
    assert_eq!((s.purges, s.purged_pages), (0, 0), "{s:?}");
    // (The second round reused dirty pages for its guards: a few less than 640.)
    assert!(s.dirty_pages > 600, "{s:?}");
    h.check_invariants().unwrap();
}

#[test]
fn a_decay_purges_old_dirty_pages_after_its_delay_on_later_activity() {
    let h = heap(Purge::Decay(50));
    let v = blocks(&h, 20, 16);
    free_all(&h, v);
    assert_eq!(arena(&h).purges, 0);
    assert_eq!(arena(&h).dirty_pages, 320);
    std::thread::sleep(Duration::from_millis(150));
    // Activity: a large free makes 8 new dirty pages; the 320 old ones go.
    let young = h.malloc(8 * PAGE);
    // SAFETY: live, freed once.
    unsafe { h.free(young) };
    let s = arena(&h);
    assert!(s.purges >= 1, "{s:?}");
    assert!(s.purged_pages >= 320 - 8, "{s:?}");
    assert!(s.dirty_pages <= 8, "{s:?}");
    assert!(s.purge_calls >= 1, "{s:?}");
    h.check_invariants().unwrap();
    // A heap-wide counter of the process's madvise calls moved too.
    assert!(h.stats().syscalls.madvise >= s.purge_calls);
}

#[test]
fn a_decay_of_zero_purges_at_once() {
    let h = heap(Purge::Decay(0));
    let v = blocks(&h, 3, 4);
    free_all(&h, v);
    let s = arena(&h);
    assert_eq!((s.dirty_pages, s.purged_pages), (0, 12), "{s:?}");
}

#[test]
fn the_threshold_purges_to_half_beyond_its_limit_as_before() {
    // The default limit, 256 pages: 16 blocks of 16 pages are at it, the 17th goes past.
    let h = heap(Purge::Threshold);
    let v = blocks(&h, 17, 16);
    let mut it = v.into_iter();
    for p in it.by_ref().take(16) {
        // SAFETY: live, freed once.
        unsafe { h.free(p) };
    }
    let s = arena(&h);
    assert_eq!((s.dirty_pages, s.purges), (256, 0), "{s:?}");
    free_all(&h, it.collect());
    let s = arena(&h);
    assert_eq!(s.purges, 1, "{s:?}");
    assert_eq!(s.dirty_pages, 128, "{s:?}");
    assert_eq!(s.purged_pages, 272 - 128, "{s:?}");
    h.check_invariants().unwrap();
}

#[test]
fn a_freed_huge_block_is_reused_at_the_same_address() {
    let h = heap(Purge::Threshold);
    let a = h.malloc(4 * MIB);
    assert!(!a.is_null());
    // SAFETY: live, freed once.
    unsafe { h.free(a) };
    let st = h.stats();
    assert_eq!(
        (st.huge_cached, st.huge_cached_bytes),
        (1, 4 * MIB),
        "{st:?}"
    );
    h.check_invariants().unwrap();
    let b = h.malloc(4 * MIB);
    assert_eq!(a, b, "the cached mapping serves the same size");
    let st = h.stats();
    assert_eq!((st.huge_cached, st.huge_cache_hits), (0, 1), "{st:?}");
    assert_eq!(st.huge_maps, 1, "one fresh mapping in all: {st:?}");
    // A smaller request takes it too, as it is (at most twice the request).
    // SAFETY: live, freed once.
    unsafe { h.free(b) };
    let c = h.malloc(3 * MIB);
    assert_eq!(c, a);
    assert_eq!(h.usable_size(c).unwrap(), 3 * MIB);
    let st = h.stats();
    assert_eq!((st.huge_allocated, st.huge_unmaps), (3 * MIB, 0), "{st:?}");
    h.check_invariants().unwrap();
    // SAFETY: live, freed once.
    unsafe { h.free(c) };
    // The slack comes back with it: the whole 4 MiB mapping is cached again.
    assert_eq!(h.stats().huge_cached_bytes, 4 * MIB);
    h.purge();
    let st = h.stats();
    assert_eq!((st.huge_cached, st.huge_cached_bytes), (0, 0), "{st:?}");
    assert_eq!(st.huge_unmaps, 1, "{st:?}");
    h.check_invariants().unwrap();
}

#[test]
fn a_much_larger_cached_mapping_is_trimmed_and_a_smaller_one_grown() {
    let h = heap(Purge::Threshold);
    let a = h.malloc(16 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(a) };
    let b = h.malloc(4 * MIB);
    assert_eq!(a, b, "the cached mapping serves, its tail unmapped");
    let st = h.stats();
    assert_eq!((st.huge_unmaps, st.huge_cache_hits), (1, 1), "{st:?}");
    assert_eq!(st.mapped - st.arena.chunks * CHUNK, 4 * MIB, "{st:?}");
    // SAFETY: live, freed once.
    unsafe { h.free(b) };
    let c = h.malloc(8 * MIB);
    assert!(!c.is_null());
    let st = h.stats();
    // Grown where it is, or moved (one more mapping and `mremap`) if the space after it is
    // taken: either way without a copy.
    assert_eq!(st.huge_cache_hits, 2, "{st:?}");
    assert!((1..=2).contains(&st.huge_remaps), "{st:?}");
    // SAFETY: 8 MiB are ours.
    unsafe { c.write_bytes(1, 8 * MIB) };
    h.check_invariants().unwrap();
    // SAFETY: live, freed once.
    unsafe { h.free(c) };
}

#[test]
fn the_huge_cache_keeps_to_its_bounds() {
    // Bytes: 8 MiB hold two 4 MiB blocks; a third pushes out the oldest; a 16 MiB block is
    // unmapped at once.
    let h: H = Heap::with_options(Options {
        purge: Some(Purge::Threshold),
        huge_cache_bytes: 8 * MIB,
        ..Options::DEFAULT
    });
    let v: Vec<_> = (0..3).map(|_| h.malloc(4 * MIB)).collect();
    let big = h.malloc(16 * MIB);
    free_all(&h, v);
    let st = h.stats();
    assert_eq!(
        (st.huge_cached, st.huge_cached_bytes),
        (2, 8 * MIB),
        "{st:?}"
    );
    assert_eq!(st.huge_unmaps, 1, "{st:?}");
    // SAFETY: live, freed once.
    unsafe { h.free(big) };
    let st = h.stats();
    assert_eq!((st.huge_cached, st.huge_unmaps), (2, 2), "{st:?}");
    h.check_invariants().unwrap();

    // Count: at most `HUGE_CACHE_SLOTS` mappings, whatever their bytes.
    let h = heap(Purge::Threshold);
    let v: Vec<_> = (0..12).map(|_| h.malloc(2 * MIB)).collect();
    free_all(&h, v);
    let st = h.stats();
    assert_eq!(
        st.huge_cached,
        alloclab_core::purge::HUGE_CACHE_SLOTS,
        "{st:?}"
    );
    assert_eq!(st.huge_unmaps, 4, "{st:?}");
    h.check_invariants().unwrap();

    // No cache: every free unmaps, as before issue 42.
    let h: H = Heap::with_options(Options {
        huge_cache_bytes: 0,
        ..Options::DEFAULT
    });
    let a = h.malloc(4 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(a) };
    let st = h.stats();
    assert_eq!((st.huge_cached, st.huge_unmaps), (0, 1), "{st:?}");
}

#[test]
fn a_decay_gives_cached_huge_mappings_back_after_its_delay() {
    let h = heap(Purge::Decay(50));
    let a = h.malloc(4 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(a) };
    assert_eq!(h.stats().huge_cached, 1);
    std::thread::sleep(Duration::from_millis(150));
    // The next huge activity finds it expired: unmapped, not reused, its bytes no longer
    // counted (kills the campaign's survivors `replace Huge::expire with ()` and `replace -=
    // with /= in Huge::expire`).
    let b = h.malloc(2 * MIB);
    let st = h.stats();
    assert_eq!(
        (
            st.huge_cached,
            st.huge_cached_bytes,
            st.huge_cache_hits,
            st.huge_unmaps
        ),
        (0, 0, 0, 1),
        "{st:?}"
    );
    // SAFETY: live, freed once.
    unsafe { h.free(b) };
    // Within the delay it is reused.
    let c = h.malloc(2 * MIB);
    assert_eq!(c, b);
    assert_eq!(h.stats().huge_cache_hits, 1);
    h.check_invariants().unwrap();
}

#[test]
fn a_large_allocation_also_gives_expired_huge_mappings_back() {
    let h = heap(Purge::Decay(50));
    let a = h.malloc(4 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(a) };
    let small = h.malloc(64 << 10);
    assert_eq!(h.stats().huge_cached, 1, "not before the delay");
    std::thread::sleep(Duration::from_millis(150));
    let large = h.malloc(64 << 10);
    let st = h.stats();
    assert_eq!((st.huge_cached, st.huge_unmaps), (0, 1), "{st:?}");
    free_all(&h, vec![small, large]);
    h.check_invariants().unwrap();
}

#[test]
fn calloc_from_a_reused_huge_block_reads_zero() {
    for (first, second) in [(4 * MIB, 4 * MIB), (4 * MIB, 3 * MIB), (2 * MIB, 6 * MIB)] {
        let h = heap(Purge::Threshold);
        let a = h.malloc(first);
        // SAFETY: `first` bytes are ours.
        unsafe { a.write_bytes(0xab, first) };
        // SAFETY: live, freed once.
        unsafe { h.free(a) };
        let b = h.calloc(1, second);
        assert!(!b.is_null());
        assert_eq!(h.stats().huge_cache_hits, 1, "{first} then {second}");
        // SAFETY: `second` bytes are ours.
        let s = unsafe { core::slice::from_raw_parts(b, second) };
        if let Some(i) = s.iter().position(|&x| x != 0) {
            panic!(
                "byte {i} of a calloc({second}) after a free({first}) is {:#x}",
                s[i]
            );
        }
        // SAFETY: live, freed once.
        unsafe { h.free(b) };
    }
}

#[test]
fn a_huge_realloc_keeps_its_contents() {
    let h = heap(Purge::Threshold);
    let a = h.malloc(4 * MIB);
    let fill = |p: *mut u8, n: usize| {
        // SAFETY: the caller passes `n` live bytes.
        let s = unsafe { core::slice::from_raw_parts_mut(p, n) };
        s.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i / 4093) as u8);
    };
    let check = |p: *const u8, n: usize| {
        // SAFETY: as above.
        let s = unsafe { core::slice::from_raw_parts(p, n) };
        if let Some(i) = (0..n).find(|&i| s[i] != (i / 4093) as u8) {
            panic!("byte {i} lost after a realloc");
        }
    };
    fill(a, 4 * MIB);
    let before = h.stats().syscalls;
    // SAFETY: `a` is live; realloc takes it over.
    let b = unsafe { h.realloc_c(a, 24 * MIB) };
    assert!(!b.is_null());
    let after = h.stats().syscalls;
    check(b, 4 * MIB);
    assert!(
        after.mremap > before.mremap,
        "grown with mremap: {before:?} {after:?}"
    );
    fill(b, 24 * MIB);
    // SAFETY: `b` is live.
    let c = unsafe { h.realloc_c(b, 2 * MIB) };
    assert_eq!(c, b, "a shrink stays where it is");
    check(c, 2 * MIB);
    h.check_invariants().unwrap();
    // SAFETY: `c` is live.
    let d = unsafe { h.realloc_c(c, 5 * MIB) };
    check(d, 2 * MIB);
    h.check_invariants().unwrap();
    // SAFETY: live, freed once.
    unsafe { h.free(d) };
    h.check_invariants().unwrap();
}
