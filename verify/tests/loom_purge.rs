//! Loom models of purging without the arena lock (`core/src/back/arena/`, "Purging without the
//! lock"): a free that takes an arena past its dirty limit chooses dirty spans under the lock,
//! `madvise`s them after releasing it, and puts them back under it again. Meanwhile another
//! thread allocates, frees and checks the heap's invariants on the same arena (`Single`: one
//! arena for every thread), so loom runs its critical sections inside the unlocked window,
//! where the chosen pages must be out of reach of allocation and coalescing and counted by
//! `check_invariants` as being purged. At the end the statistics must be exact.
//!
//! loom does not see the system call itself (real `madvise` on the real mapping): it sees the
//! lock's atomics at both ends of the window and the arena's cell, which the purging thread
//! must not touch in between (loom would report a causality violation).
#![cfg(loom)]

use alloclab_core::{Heap, Options};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use alloclab_verify::loom::{model, spawn};
use loom::sync::Arc;

type C = Using<Lifo, Single>;
const PAGE: usize = 4096;

/// One dirty page allowed: every large free of two pages purges them (down to 0).
fn heap() -> Arc<Heap<C>> {
    Arc::new(Heap::<C>::with_options(Options {
        dirty_max_pages: 1,
        ..Options::DEFAULT
    }))
}

#[test]
fn a_free_purges_unlocked_while_another_thread_allocates() {
    model(|| {
        let heap = heap();
        let p = heap.malloc(2 * PAGE) as usize;
        let h = heap.clone();
        // SAFETY: `p` is live, freed only here.
        let t = spawn(move || unsafe { h.free(p as *mut u8) });
        // Possibly inside the other thread's unlocked window: its span is out of the free
        // runs (this allocation cannot get it) and counted as being purged.
        let q = heap.malloc(2 * PAGE) as usize;
        heap.check_live(&mut [(q, 2 * PAGE)]).unwrap();
        // SAFETY: `q` is live, freed once.
        unsafe { heap.free(q as *mut u8) };
        heap.check_invariants().unwrap();
        t.join().unwrap();
        heap.check_invariants().unwrap();
        let st = heap.stats();
        assert_eq!(st.dirty, 0);
        assert_eq!(st.active, 0);
        assert_eq!(st.arena.purges, 2, "{st:?}");
        assert_eq!(st.arena.purge_calls, 2, "{st:?}");
        assert_eq!(st.arena.purged_pages, 4, "{st:?}");
    });
}

#[test]
fn two_frees_purge_unlocked_at_once() {
    model(|| {
        let heap = heap();
        let p = heap.malloc(2 * PAGE) as usize;
        let q = heap.malloc(2 * PAGE) as usize;
        let keep = heap.malloc(64) as usize;
        let h = heap.clone();
        let t = spawn(move || {
            // SAFETY: `p` is live, freed only here.
            unsafe { h.free(p as *mut u8) };
            h.check_invariants().unwrap();
        });
        // SAFETY: `q` is live, freed only here.
        unsafe { heap.free(q as *mut u8) };
        heap.check_live(&mut [(keep, 64)]).unwrap();
        t.join().unwrap();
        heap.check_live(&mut [(keep, 64)]).unwrap();
        let st = heap.stats();
        assert_eq!(st.dirty, 0);
        assert_eq!(st.arena.purge_calls, 2, "{st:?}");
        assert_eq!(st.arena.purged_pages, 4, "{st:?}");
    });
}

#[test]
fn an_explicit_purge_runs_unlocked_against_a_free() {
    model(|| {
        // The default policy, a decay, whose clock stands still under loom (`os::monotonic_ns`
        // is 0): only `purge` returns pages here.
        let heap = Arc::new(Heap::<C>::new());
        let p = heap.malloc(2 * PAGE) as usize;
        let q = heap.malloc(2 * PAGE) as usize;
        // SAFETY: `p` is live, freed once.
        unsafe { heap.free(p as *mut u8) };
        let h = heap.clone();
        let t = spawn(move || h.purge());
        // SAFETY: `q` is live, freed only here.
        unsafe { heap.free(q as *mut u8) };
        heap.check_invariants().unwrap();
        t.join().unwrap();
        heap.purge();
        heap.check_invariants().unwrap();
        let st = heap.stats();
        assert_eq!(st.dirty, 0);
        assert_eq!(st.arena.purged_pages, 4, "{st:?}");
    });
}

/// The cache of freed huge mappings (`core/src/back/huge/`) has a lock of its own: two threads
/// free a huge block each and allocate another, so a free puts a mapping in the cache while
/// the other thread's allocation looks for one. Each allocation is served by a cached mapping
/// or a fresh one, never one still live, and no mapping is lost or counted twice.
#[test]
fn racing_huge_frees_and_allocations_share_the_cache() {
    const HUGE: usize = 2 << 20;
    model(|| {
        let heap = Arc::new(Heap::<C>::new());
        let a = heap.malloc(HUGE) as usize;
        let b = heap.malloc(HUGE) as usize;
        let h = heap.clone();
        let t = spawn(move || {
            // SAFETY: `a` is live, freed only here.
            unsafe { h.free(a as *mut u8) };
            h.malloc(HUGE) as usize
        });
        // SAFETY: `b` is live, freed only here.
        unsafe { heap.free(b as *mut u8) };
        let q = heap.malloc(HUGE) as usize;
        let p = t.join().unwrap();
        assert_ne!(p, q);
        heap.check_live(&mut [(p, HUGE), (q, HUGE)]).unwrap();
        let st = heap.stats();
        assert_eq!(st.huge_live, 2, "{st:?}");
        // Nothing is unmapped (the cache holds 8): every mapping made is live or cached.
        assert_eq!(st.huge_unmaps, 0, "{st:?}");
        assert_eq!(
            st.huge_live + st.huge_cached,
            st.huge_maps as usize,
            "{st:?}"
        );
        assert_eq!(st.huge_cache_hits + st.huge_maps, 4, "{st:?}");
        heap.purge();
        let st = heap.stats();
        assert_eq!(st.huge_cached, 0, "{st:?}");
        heap.check_invariants().unwrap();
    });
}
