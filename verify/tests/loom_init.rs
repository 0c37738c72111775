//! Loom models of one-time initialization: a heap's shared state (mapped on first use under
//! its init lock, published with release/acquire) and an arena (created on first use under the
//! heap's arena lock), both raced by two threads' first requests.
#![cfg(loom)]

use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use alloclab_verify::loom::{model, spawn};
use loom::sync::Arc;

#[test]
fn first_use_from_two_threads_initializes_once() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, Single>>::new());
        let h = heap.clone();
        let t = spawn(move || h.malloc(64) as usize);
        let p = heap.malloc(64) as usize;
        let q = t.join().unwrap();
        assert!(p != 0 && q != 0 && p != q);
        // One shared state and one arena 0: both blocks are in it.
        assert_eq!(heap.arenas_created(), 1);
        assert_eq!(heap.arena_of(p as *const u8), Some(0));
        assert_eq!(heap.arena_of(q as *const u8), Some(0));
        heap.check_live(&mut [(p, 64), (q, 64)]).unwrap();
    });
}

#[test]
fn frees_into_a_heap_that_never_allocated_do_not_initialize_it() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, Single>>::new());
        let h = heap.clone();
        let local = 0u8;
        let foreign = &local as *const u8 as usize;
        let t = spawn(move || {
            // SAFETY: a foreign pointer is rejected without being touched.
            unsafe { h.try_free(foreign as *mut u8) }.is_err()
        });
        let p = heap.malloc(16) as usize;
        assert!(t.join().unwrap());
        heap.check_live(&mut [(p, 16)]).unwrap();
    });
}
