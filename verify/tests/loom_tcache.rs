//! Loom models of the thread cache: batched fills and flushes racing another thread's on one
//! arena, a thread's exit flushing its cache while another thread reads statistics and checks
//! invariants, and cross-thread frees into the freeing thread's cache (the conformance kit's
//! model, with a cache; and a large block of the cache's page classes).
#![cfg(loom)]

use alloclab_core::size_class::NBINS;
use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Mailbox, Single, ThreadCache, ThreadLocal};
use alloclab_verify::loom::{cross_thread_model, model, model_bounded, spawn};
use loom::sync::Arc;

/// A cache whose 32-byte class starts with 4 regions: fills take 2; a full stack grows to 8
/// (the most any class holds under loom), and a full stack of 8 flushes 2.
type Tiny = ThreadCache<{ 512 * NBINS }>;

/// Allocates nine 32-byte blocks (five fills), frees them (the stack grows, then a flush),
/// checks the heap.
fn churn(heap: &Heap<Using<Lifo, Single, Tiny>>) {
    let mut p = [0usize; 9];
    for q in p.iter_mut() {
        *q = heap.malloc(32) as usize;
        assert_ne!(*q, 0);
    }
    let mut live: Vec<(usize, usize)> = p.iter().map(|&q| (q, 32)).collect();
    heap.check_live(&mut live).unwrap();
    for q in p {
        // SAFETY: live allocations of `heap`, each freed once.
        unsafe { heap.free(q as *mut u8) };
    }
}

/// Two threads each making five fills, a growth and a flush, then exiting (another flush), on
/// one arena:
/// at the default bound of 5 this takes minutes, and the lock-protected steps interleave in
/// every order already at 2.
#[test]
fn fills_and_flushes_race_on_one_arena() {
    model_bounded(2, || {
        let heap = Arc::new(Heap::<Using<Lifo, Single, Tiny>>::new());
        let h = heap.clone();
        let t = spawn(move || churn(&h));
        churn(&heap);
        t.join().unwrap();
        // The other thread exited: its cache was flushed. Ours holds what its last flush left.
        heap.check_invariants().unwrap();
        let st = heap.stats();
        assert_eq!(st.allocated, 0);
        assert!(st.cached >= 6 * 32 && st.cached <= 8 * 32, "{}", st.cached);
        heap.flush_thread_cache();
        let st = heap.stats();
        assert_eq!((st.cached, st.arena.small_allocated), (0, 0));
        heap.check_invariants().unwrap();
    });
}

#[test]
fn thread_exit_flushes_while_another_thread_reads_statistics() {
    // On a thread with a larger stack than loom's main thread (32 KiB), which this model's
    // first allocation (heap, arena and cache made under loom's cells) outgrew when the purge
    // policy and the huge cache joined the heap's state (issue 42).
    model(|| {
        loom::thread::Builder::new()
            .stack_size(alloclab_verify::loom::STACK_SIZE)
            .spawn(|| {
                flush_race();
                alloclab_core::loom_thread_exit();
            })
            .unwrap()
            .join()
            .unwrap();
    });
}

fn flush_race() {
    {
        let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal, Tiny>>::new());
        let keep = heap.malloc(32) as usize;
        let h = heap.clone();
        let t = spawn(move || {
            let p = h.malloc(32) as usize;
            // SAFETY: live, freed once; it stays in this thread's cache until the thread exits.
            unsafe { h.free(p as *mut u8) };
        });
        heap.check_invariants().unwrap();
        // A snapshot taken while the other thread fills its cache sees the batch (2 regions)
        // as allocated until it is on the stack: statistics are exact between operations.
        let st = heap.stats();
        assert!(st.allocated <= 3 * 32, "{}", st.allocated);
        t.join().unwrap();
        let st = heap.stats();
        assert_eq!(st.allocated, 32);
        heap.check_live(&mut [(keep, 32)]).unwrap();
        // SAFETY: live, freed once.
        unsafe { heap.free(keep as *mut u8) };
        heap.flush_thread_cache();
        assert_eq!(heap.stats().arena.small_allocated, 0);
    }
}

#[test]
fn cross_thread_free_into_the_freeing_threads_cache() {
    cross_thread_model::<Using<Lifo, Single, ThreadCache>>();
}

#[test]
fn a_region_freed_by_another_thread_is_reused_there_then_goes_home() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal, Tiny>>::new());
        let a = heap.malloc(32) as usize;
        let b = heap.malloc(32) as usize; // the fill's two regions: our stack is empty again
        let h = heap.clone();
        let t = spawn(move || {
            // SAFETY: `a` is live, handed over; freed once here, into this thread's cache.
            unsafe { h.free(a as *mut u8) };
            let c = h.malloc(32) as usize;
            assert_eq!(c, a, "this thread's cache serves the region it was given");
            // SAFETY: live, freed once; the thread's exit flushes it to its own arena (ours).
            unsafe { h.free(c as *mut u8) };
        });
        // A fill from our arena, racing the other thread's exit flush into it.
        let d = heap.malloc(32) as usize;
        t.join().unwrap();
        let mut live = [(b, 32), (d, 32)];
        heap.check_live(&mut live).unwrap();
        assert_eq!(heap.stats().allocated, 64);
        // SAFETY: live allocations, each freed once.
        unsafe {
            heap.free(b as *mut u8);
            heap.free(d as *mut u8);
        }
        heap.flush_thread_cache();
        assert_eq!(heap.stats().arena.small_allocated, 0);
        heap.check_invariants().unwrap();
    });
}

/// A cache whose one-page class starts with 2 blocks (fills take 1, then 2 once it grew) and
/// whose two-page class with 1: a quarter of the bound shared by the four large classes.
type Paged = ThreadCache<{ 4 * 4 * 2 * 4096 }>;

#[test]
fn a_large_block_freed_by_another_thread_is_reused_there_then_goes_home() {
    // On a thread with a larger stack than loom's main thread, as `flush_race`: a fill of
    // large blocks under loom's cells outgrows 32 KiB.
    model(|| {
        loom::thread::Builder::new()
            .stack_size(alloclab_verify::loom::STACK_SIZE)
            .spawn(|| {
                large_block_goes_home();
                alloclab_core::loom_thread_exit();
            })
            .unwrap()
            .join()
            .unwrap();
    });
}

fn large_block_goes_home() {
    {
        let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal, Paged>>::new());
        let a = heap.malloc(4096) as usize;
        let h = heap.clone();
        let t = spawn(move || {
            // SAFETY: `a` is live, handed over; freed once here, into this thread's cache.
            unsafe { h.free(a as *mut u8) };
            let c = h.malloc(4096) as usize;
            assert_eq!(c, a, "this thread's cache serves the block it was given");
            // SAFETY: live, freed once; the thread's exit flushes it to its own arena (ours).
            unsafe { h.free(c as *mut u8) };
        });
        // A fill from our arena, racing the other thread's exit flush into it.
        let d = heap.malloc(4096) as usize;
        assert_ne!(d, 0);
        t.join().unwrap();
        heap.check_live(&mut [(d, 4096)]).unwrap();
        let st = heap.stats();
        assert_eq!((st.allocated, st.arena.large_allocated), (4096, 4096));
        // SAFETY: live, freed once: into our cache, where a second free is refused.
        unsafe {
            heap.free(d as *mut u8);
            assert!(heap.try_free(d as *mut u8).is_err());
        }
        // `d` and the other block of its fill: the class grew at the first fill (no free of it
        // came before), so the second moved two.
        assert_eq!(heap.stats().cached, 2 * 4096);
        heap.flush_thread_cache();
        let st = heap.stats();
        assert_eq!((st.cached, st.arena.large_allocated), (0, 0));
        heap.check_invariants().unwrap();
    }
}

#[test]
fn cross_thread_free_through_the_mailbox() {
    cross_thread_model::<Using<Lifo, Single, ThreadCache<{ 1024 * 1024 }, Mailbox>>>();
}

/// `Tiny` with the `Mailbox` remote-free policy.
type TinyMailed = ThreadCache<{ 512 * NBINS }, Mailbox>;

/// Another thread's exit hands our arena's region to its mailbox (one compare-exchange)
/// while this thread's fill takes the mailbox (one swap) or the runs: every region is handed
/// out once, and none is lost.
#[test]
fn an_exit_flush_into_the_mailbox_races_a_fill_from_it() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal, TinyMailed>>::new());
        let a = heap.malloc(32) as usize;
        let b = heap.malloc(32) as usize; // the fill's two regions: our stack is empty again
        let h = heap.clone();
        let t = spawn(move || {
            // SAFETY: `a` is live, handed over; freed once here, into this thread's cache,
            // whose exit hands it to our arena's mailbox.
            unsafe { h.free(a as *mut u8) };
        });
        // A fill: from the mailbox if the exit's push came first, else from the runs.
        let d = heap.malloc(32) as usize;
        t.join().unwrap();
        assert_ne!(d, b);
        let mut live = [(b, 32), (d, 32)];
        heap.check_live(&mut live).unwrap();
        assert_eq!(heap.stats().allocated, 64);
        if d != a {
            // In the mailbox (or on our stack, if the fill took it): freed all the same.
            // SAFETY: refused without a write.
            let again = unsafe { heap.try_free(a as *mut u8) };
            assert_eq!(again, Err(alloclab_core::FreeError::Freed));
        }
        // SAFETY: live allocations, each freed once.
        unsafe {
            heap.free(b as *mut u8);
            heap.free(d as *mut u8);
        }
        // Our cache and the mailbox back to the runs: nothing was lost on the way.
        heap.flush_thread_cache();
        assert_eq!(heap.stats().arena.small_allocated, 0);
        heap.check_invariants().unwrap();
    });
}
