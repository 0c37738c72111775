//! Loom model of the statistics counters: arena and bin counters change under the arena lock,
//! and a snapshot taken while other threads allocate and free is consistent (per bin,
//! allocations minus frees equals live regions) and, at the end, exact.
#![cfg(loom)]

use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use alloclab_verify::loom::{model, spawn};
use loom::sync::Arc;

#[test]
fn snapshots_are_consistent_and_final_counts_exact() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, Single>>::new());
        let h = heap.clone();
        let t = spawn(move || {
            let p = h.malloc(100);
            // SAFETY: a live allocation of `h`, freed once.
            unsafe { h.free(p) };
            h.malloc(100) as usize
        });
        let q = heap.malloc(100) as usize;
        let snap = heap.stats();
        for b in snap.bins.iter() {
            assert_eq!(b.allocations - b.frees, b.live as u64);
        }
        let p = t.join().unwrap();
        let st = heap.stats();
        let bin = &st.bins[alloclab_core::size_class::small_index(100)];
        assert_eq!((bin.allocations, bin.frees, bin.live), (3, 1, 2));
        assert_eq!(st.allocated, 2 * 112);
        heap.check_live(&mut [(p, 100), (q, 100)]).unwrap();
    });
}
