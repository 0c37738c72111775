//! Loom models of the page source shared by a heap's arenas: arena structures carved from the
//! heap's `Base` (its lock), chunks mapped and published in the page map, huge mappings and
//! their records, all raced by threads working in different arenas.
//!
//! The page map's own atomics are `sync::untracked` (2^14-slot levels are too many loom
//! objects), so loom sees the locks and cells around it, not its publication order; VERIFY.md
//! says what that leaves unchecked.
#![cfg(loom)]

use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, ThreadLocal};
use alloclab_verify::loom::{model, spawn};
use loom::sync::Arc;

#[test]
fn two_arenas_take_chunks_and_metadata_concurrently() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal>>::new());
        let h = heap.clone();
        let t = spawn(move || h.malloc(8192) as usize);
        let q = heap.malloc(8192) as usize;
        let p = t.join().unwrap();
        // Two arenas with a chunk each when the threads overlap; one arena (handed over at the
        // first thread's exit) when they do not: either way both blocks are valid.
        assert!(heap.owns(p as *const u8) && heap.owns(q as *const u8));
        heap.check_live(&mut [(p, 8192), (q, 8192)]).unwrap();
    });
}

#[test]
fn huge_and_large_allocations_race() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal>>::new());
        let h = heap.clone();
        let t = spawn(move || {
            let p = h.malloc(2 << 20);
            // SAFETY: a live allocation of `h`, freed once.
            unsafe { h.free(p) };
            h.malloc(3 << 20) as usize
        });
        let q = heap.malloc(100_000) as usize;
        let p = t.join().unwrap();
        heap.check_live(&mut [(p, 3 << 20), (q, 100_000)]).unwrap();
        assert_eq!(heap.stats().huge_live, 1);
    });
}
