//! The thread cache's large classes (one to four pages, `size_class::CACHE_MAX`) through a real
//! heap: a freed block is kept and served again without the arena, checked as the locked path
//! checks it, counted in the statistics as the program sees it, and given back at a flush or
//! the thread's exit.

use alloclab_core::size_class::{CACHE_MAX, PAGE, SMALL_MAX};
use alloclab_core::{FreeError, Heap};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadCache};

type Cached = Using<Lifo, Single, ThreadCache>;

#[test]
fn blocks_of_one_to_four_pages_are_kept_and_served_again() {
    let heap = Heap::<Cached>::new();
    for pages in 1..=CACHE_MAX / PAGE {
        for size in [((pages - 1) * PAGE).max(SMALL_MAX) + 1, pages * PAGE] {
            let p = heap.malloc(size);
            assert!(!p.is_null());
            assert_eq!(p as usize % PAGE, 0);
            assert_eq!(heap.usable_size(p), Ok(pages * PAGE));
            // SAFETY: live, freed once; the second free is refused without a write.
            unsafe {
                heap.free(p);
                assert!(!heap.split().free_fast(p), "{size}: a cached double free");
                assert_eq!(heap.try_free(p), Err(FreeError::Freed), "{size}");
            }
            assert_eq!(heap.usable_size(p), Err(FreeError::Freed), "{size}");
            assert!(heap.stats().cached >= pages * PAGE, "{size}");
            assert_eq!(heap.malloc(size), p, "{size}: the cache's top block");
            // SAFETY: live, freed once.
            unsafe { heap.free(p) };
        }
    }
    heap.check_invariants().unwrap();
    heap.flush_thread_cache();
    let st = heap.stats();
    assert_eq!(
        (st.cached, st.allocated, st.arena.large_allocated),
        (0, 0, 0)
    );
    heap.check_invariants().unwrap();
}

#[test]
fn a_block_past_four_pages_goes_to_the_arena() {
    let heap = Heap::<Cached>::new();
    let p = heap.malloc(CACHE_MAX + 1);
    assert!(!p.is_null());
    // SAFETY: live, freed once.
    unsafe { heap.free(p) };
    let st = heap.stats();
    assert_eq!((st.cached, st.arena.large_allocated), (0, 0));
    assert_eq!((st.arena.large_allocations, st.arena.large_frees), (1, 1));
}

#[test]
fn interior_pointers_of_a_cached_class_are_refused() {
    let heap = Heap::<Cached>::new();
    let p = heap.malloc(2 * PAGE);
    for off in [16, PAGE] {
        // SAFETY: not an allocation's start: refused without a write.
        unsafe {
            assert!(!heap.split().free_fast(p.add(off)), "{off}");
            assert_eq!(heap.try_free(p.add(off)), Err(FreeError::Interior), "{off}");
        }
    }
    // SAFETY: live, freed once.
    unsafe { heap.free(p) };
    heap.check_invariants().unwrap();
}

#[test]
fn calloc_of_a_kept_block_is_zeroed_and_alignment_is_kept() {
    let heap = Heap::<Cached>::new();
    let p = heap.malloc(2 * PAGE);
    // SAFETY: a live block of two pages, ours to write.
    unsafe {
        p.write_bytes(0xab, 2 * PAGE);
        heap.free(p);
    }
    let q = heap.calloc(1, 2 * PAGE);
    assert_eq!(q, p, "the kept block");
    // SAFETY: a live block of two pages.
    let bytes = unsafe { core::slice::from_raw_parts(q, 2 * PAGE) };
    assert!(bytes.iter().all(|&b| b == 0));
    // SAFETY: live, freed once.
    unsafe { heap.free(q) };
    for _ in 0..8 {
        let a = heap.allocate(PAGE, 4 * PAGE, false);
        assert_eq!(a as usize % (4 * PAGE), 0);
        // SAFETY: live, freed once.
        unsafe { heap.free(a) };
    }
    heap.check_invariants().unwrap();
}

#[test]
fn a_realloc_to_a_small_class_keeps_the_bytes_and_the_block() {
    let heap = Heap::<Cached>::new();
    let p = heap.malloc(PAGE);
    // SAFETY: live; resized once, then the new block freed once.
    unsafe {
        p.write_bytes(7, 100);
        let q = heap.realloc_c(p, 100);
        assert_ne!(q, p);
        assert!(core::slice::from_raw_parts(q, 100).iter().all(|&b| b == 7));
        assert_eq!(
            heap.try_free(p),
            Err(FreeError::Freed),
            "the old block is kept"
        );
        heap.free(q);
    }
    assert_eq!(heap.malloc(PAGE), p);
    heap.check_invariants().unwrap();
}

#[test]
fn statistics_count_the_programs_calls_and_a_thread_exit_gives_the_blocks_back() {
    let heap = std::sync::Arc::new(Heap::<Cached>::new());
    let h = heap.clone();
    // Joined, not scoped: `join` returns once the thread's exit (its cache's flush) is over.
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for round in 0..50 {
            for _ in 0..round % 7 {
                kept.push(h.malloc(3 * PAGE) as usize);
            }
            while let Some(p) = kept.pop() {
                // SAFETY: live, freed once.
                unsafe { h.free(p as *mut u8) };
            }
        }
        let st = h.stats();
        let calls = (0..50).map(|r: u64| r % 7).sum::<u64>();
        assert_eq!(st.arena.large_allocations, calls);
        assert_eq!(st.arena.large_frees, calls);
        assert_eq!((st.allocated, st.arena.large_allocated), (0, 0));
        assert!(st.cached >= 3 * PAGE);
        h.check_invariants().unwrap();
    })
    .join()
    .unwrap();
    let st = heap.stats();
    assert_eq!(
        (st.cached, st.allocated, st.arena.large_allocated),
        (0, 0, 0)
    );
    heap.check_invariants().unwrap();
}
