//! Arena lock statistics (`ArenaStats::lock_*`, `Stats::lock_*_max_arena`,
//! `Heap::arena_lock_stats`): acquisitions counted on every path, contention and the time
//! waited only when the lock was held.
//!
//! One arena for every thread (`Single`) and no thread cache, so every small allocation and
//! free takes that arena's lock: the counts can be checked against the calls. Contention is
//! made certain with the verification builds' hook `Heap::hold_arena_lock`, which holds the
//! lock until another thread sleeps for it; the free-running test only bounds its retries.
#![cfg(not(any(loom, shuttle)))]

use alloclab_core::{Heap, LockStats};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadCache};
use std::time::{Duration, Instant};

type C = Using<Lifo, Single>;

/// `n` allocations of small sizes, then their frees.
fn churn<Cfg: alloclab_core::Config>(heap: &Heap<Cfg>, n: usize) {
    let mut ptrs = Vec::with_capacity(64);
    for i in 0..n {
        let p = heap.malloc(16 + 16 * (i % 8));
        assert!(!p.is_null());
        ptrs.push(p);
        if ptrs.len() == 64 {
            for p in ptrs.drain(..) {
                // SAFETY: allocated above, freed once.
                unsafe { heap.free(p) };
            }
        }
    }
    for p in ptrs.drain(..) {
        // SAFETY: allocated above, freed once.
        unsafe { heap.free(p) };
    }
}

fn per_arena<Cfg: alloclab_core::Config>(heap: &Heap<Cfg>) -> Vec<(usize, LockStats)> {
    let mut v = Vec::new();
    heap.arena_lock_stats(|i, s| v.push((i, s)));
    v
}

#[test]
fn one_thread_acquires_every_time_and_never_waits() {
    let heap = Heap::<C>::new();
    let n = 10_000;
    churn(&heap, n);
    let st = heap.stats();
    assert_eq!(st.arenas, 1);
    // Each allocation and each free took the lock once; so did `stats`.
    assert!(st.arena.lock_acquisitions > 2 * n as u64, "{:?}", st.arena);
    assert_eq!((st.arena.lock_contended, st.arena.lock_wait_ns), (0, 0));
    assert_eq!(
        (st.lock_contended_max_arena, st.lock_wait_ns_max_arena),
        (0, 0)
    );
    let own = heap.arena_stats(0).expect("arena 0 exists").0;
    assert!(own.lock_acquisitions > st.arena.lock_acquisitions);
    assert_eq!(own.lock_contended, 0);
    let v = per_arena(&heap);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].0, 0);
    assert!(v[0].1.acquisitions >= own.lock_acquisitions);
    assert_eq!(v[0].1.contended, 0);
    heap.check_invariants().unwrap();
}

#[test]
fn a_thread_cache_takes_the_lock_less_often_than_the_calls() {
    let heap = Heap::<Using<Lifo, Single, ThreadCache>>::new();
    let n = 10_000;
    churn(&heap, n);
    let st = heap.stats();
    assert!(st.arena.lock_acquisitions > 0, "{:?}", st.arena);
    assert!(
        st.arena.lock_acquisitions < 2 * n as u64,
        "refills and flushes take the lock for many regions at once: {:?}",
        st.arena
    );
    assert_eq!(st.arena.lock_contended, 0);
    heap.check_invariants().unwrap();
}

#[test]
fn a_held_arena_lock_is_counted_as_contended_with_its_wait() {
    let heap = Heap::<C>::new();
    churn(&heap, 10); // makes arena 0
    let before = heap.stats();
    assert_eq!(before.arena.lock_contended, 0);
    let calls = 100;
    std::thread::scope(|sc| {
        let h = &heap;
        let t = heap
            .hold_arena_lock(0, |sleepers| {
                let t = sc.spawn(move || churn(h, calls));
                // Keep the lock until the other thread sleeps for it (bounded: a broken lock
                // or hook fails here instead of hanging).
                let deadline = Instant::now() + Duration::from_secs(60);
                while !sleepers() {
                    assert!(Instant::now() < deadline, "no thread waited for the lock");
                    std::thread::yield_now();
                }
                std::thread::sleep(Duration::from_millis(2));
                t
            })
            .expect("arena 0 exists");
        t.join().unwrap();
    });
    let st = heap.stats();
    assert!(st.arena.lock_contended >= 1, "{:?}", st.arena);
    assert!(
        st.arena.lock_wait_ns >= 1_000_000,
        "the helper waited at least the 2 ms sleep: {:?}",
        st.arena
    );
    assert_eq!(st.lock_contended_max_arena, st.arena.lock_contended);
    assert_eq!(st.lock_wait_ns_max_arena, st.arena.lock_wait_ns);
    // The hook's acquisition, the helper's calls and this `stats`, at least.
    assert!(
        st.arena.lock_acquisitions >= before.arena.lock_acquisitions + 2 * calls as u64 + 2,
        "{:?} after {:?}",
        st.arena,
        before.arena
    );
    let v = per_arena(&heap);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].1.contended, st.arena.lock_contended);
    assert_eq!(v[0].1.wait_ns, st.arena.lock_wait_ns);
    heap.check_invariants().unwrap();
}

#[test]
fn two_threads_on_one_arena_contend() {
    let heap = Heap::<C>::new();
    let n = 20_000;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut rounds = 0u64;
    loop {
        rounds += 1;
        std::thread::scope(|sc| {
            for _ in 0..2 {
                sc.spawn(|| churn(&heap, n));
            }
        });
        let st = heap.stats();
        // Every allocation and free of every round took the lock.
        assert!(
            st.arena.lock_acquisitions >= rounds * 2 * 2 * n as u64,
            "{:?} after {rounds} rounds",
            st.arena
        );
        assert!(st.arena.lock_contended <= st.arena.lock_acquisitions);
        if st.arena.lock_contended > 0 {
            assert!(st.arena.lock_wait_ns > 0, "{:?}", st.arena);
            assert_eq!(st.lock_contended_max_arena, st.arena.lock_contended);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "two threads hammering one arena for {rounds} rounds never contended: {:?}",
            st.arena
        );
    }
    heap.check_invariants().unwrap();
}
