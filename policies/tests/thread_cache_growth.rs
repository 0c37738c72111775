//! The thread cache's capacities, driven through a real heap: a class that overflows grows
//! instead of flushing, within its limit and the cache's byte bound, and flushes once it
//! cannot grow.

use alloclab_core::size_class::{bin, small_index, NBINS};
use alloclab_core::{FrontEnd, Heap};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadCache};

const SIZE: usize = 64;

/// Allocates `n` blocks of `SIZE` bytes, frees them all, and returns the heap's statistics
/// after the frees (the invariants checked on the way).
fn churn<C: alloclab_core::Config>(heap: &Heap<C>, n: usize) -> alloclab_core::Stats {
    let blocks: Vec<usize> = (0..n).map(|_| heap.malloc(SIZE) as usize).collect();
    assert!(blocks.iter().all(|&p| p != 0));
    heap.check_invariants().unwrap();
    for &p in &blocks {
        // SAFETY: live allocations of `heap`, each freed once.
        unsafe { heap.free(p as *mut u8) };
    }
    heap.check_invariants().unwrap();
    heap.stats()
}

/// Starting capacity of the `SIZE` class under a bound of `max_bytes` (the engine's rule: an
/// equal share of a quarter of the bound, at most 256 regions).
fn base(max_bytes: usize) -> usize {
    (max_bytes / 4 / NBINS / bin(small_index(SIZE)).size as usize).min(256)
}

#[test]
fn a_class_that_overflows_grows_instead_of_flushing() {
    // 1 MiB: the 64-byte class may grow to 8192 regions (half the bound).
    let heap = Heap::<Using<Lifo, Single, ThreadCache<{ 1 << 20 }>>>::new();
    let n = 4000;
    assert!(n > 8 * base(1 << 20));
    let st = churn(&heap, n);
    // Every region freed stayed in the cache (with what the last fill left over): none went
    // back to its run.
    assert!(st.cached >= n * SIZE, "{}", st.cached);
    assert_eq!(st.arena.small_allocated, st.cached);
    assert_eq!(st.allocated, 0);
    // And they serve the next round without the arena: it hands out nothing new.
    let again = churn(&heap, n);
    assert_eq!(again.arena.small_allocated, st.arena.small_allocated);
    assert_eq!(again.cached, st.cached);
    assert_eq!(again.bins[small_index(SIZE)].frees, 2 * n as u64);
    heap.flush_thread_cache();
    let st = heap.stats();
    assert_eq!((st.cached, st.arena.small_allocated), (0, 0));
    heap.check_invariants().unwrap();
}

#[test]
fn growth_stops_at_the_class_limit_and_flushes_beyond() {
    // 64 KiB: the 64-byte class starts small and may grow to 32 KiB (512 regions).
    const BOUND: usize = 64 * 1024;
    let heap = Heap::<Using<Lifo, Single, ThreadCache<BOUND>>>::new();
    let st = churn(&heap, 2000);
    assert!(st.cached > base(BOUND) * SIZE, "it grew: {}", st.cached);
    assert!(
        st.cached <= BOUND / 2,
        "within half the bound: {}",
        st.cached
    );
    // The rest went back to the runs (flushed once the class could not grow).
    assert_eq!(st.arena.small_allocated, st.cached);
    assert_eq!(st.allocated, 0);
}

#[test]
fn the_byte_bound_holds_across_classes() {
    // Several classes overflowing in turn share one bound: what they hold never exceeds it.
    const BOUND: usize = 32 * 1024;
    let heap = Heap::<Using<Lifo, Single, ThreadCache<BOUND>>>::new();
    for size in [16, 32, 48, 64, 96, 128, 256, 512] {
        let blocks: Vec<usize> = (0..600).map(|_| heap.malloc(size) as usize).collect();
        for &p in &blocks {
            // SAFETY: live allocations of `heap`, each freed once.
            unsafe { heap.free(p as *mut u8) };
        }
        let st = heap.stats();
        assert!(
            st.cached <= BOUND,
            "{} cached after size {}",
            st.cached,
            size
        );
        assert_eq!(st.allocated, 0);
        heap.check_invariants().unwrap();
    }
}

#[test]
fn the_default_bound_is_a_mebibyte() {
    // The documented default (`ThreadCache` without a parameter).
    assert_eq!(<ThreadCache as FrontEnd>::MAX_BYTES, 1 << 20);
    // And a heap built with it caches as much as one with an explicit 1 MiB bound: 4000
    // regions of 64 bytes (250 KiB, within half the bound) stay in the cache.
    let heap = Heap::<Using<Lifo, Single, ThreadCache>>::new();
    let n = 4000;
    let st = churn(&heap, n);
    assert!(st.cached >= n * SIZE, "{}", st.cached);
    assert_eq!(st.allocated, 0);
    heap.flush_thread_cache();
    assert_eq!(heap.stats().cached, 0);
}
