//! `LargeResetsShared`, the thread-arenas seed's bug kept as a policy to measure: after a
//! thread's first request above the threshold, all its requests go to the shared arena; the
//! intended `ThreadLocal<496>` sends only the large ones there.

use alloclab::policies::configs::Using;
use alloclab::policies::{LargeResetsShared, Lifo, ThreadLocal};
use alloclab::{Config, Heap};

/// Arenas of a small, a large, then a small request, made on a fresh thread.
fn arenas_small_large_small<C: Config>() -> [usize; 3] {
    let heap = Heap::<C>::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let sizes = [32, 1000, 32];
            let ptrs = sizes.map(|n| heap.malloc(n));
            let arenas = ptrs.map(|p| heap.arena_of(p).expect("an arena's allocation"));
            for p in ptrs {
                // SAFETY: live allocations of `heap`, each freed once.
                unsafe { heap.free(p) };
            }
            arenas
        })
        .join()
        .unwrap()
    })
}

#[test]
fn a_large_request_moves_the_thread_to_the_shared_arena_for_good() {
    let [small, large, after] = arenas_small_large_small::<Using<Lifo, LargeResetsShared<512>>>();
    assert_ne!(small, 0, "a thread first gets an arena of its own");
    assert_eq!(large, 0);
    assert_eq!(
        after, 0,
        "the bug: small requests follow to the shared arena"
    );
}

#[test]
fn the_fix_keeps_the_thread_arena_for_small_requests() {
    let [small, large, after] = arenas_small_large_small::<Using<Lifo, ThreadLocal<496>>>();
    assert_ne!(small, 0);
    assert_eq!(large, 0, "large requests go to the shared arena on purpose");
    assert_eq!(after, small, "the thread keeps its own arena");
}
