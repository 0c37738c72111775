//! Loom models of cross-thread frees: a block freed by a thread other than the one that
//! allocated it, into an arena that its owner is allocating from at the same time; and two
//! threads freeing the same block, of which exactly one must succeed (validation and free are
//! one critical section).
#![cfg(loom)]

use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadLocal};
use alloclab_verify::loom::{cross_thread_model, model, spawn};
use loom::sync::Arc;

#[test]
fn free_races_allocation_in_one_arena() {
    cross_thread_model::<Using<Lifo, Single>>();
}

#[test]
fn free_into_another_threads_arena() {
    cross_thread_model::<Using<Lifo, ThreadLocal>>();
}

#[test]
fn a_double_free_from_two_threads_succeeds_once() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, Single>>::new());
        let keep = heap.malloc(64) as usize;
        let p = heap.malloc(64) as usize;
        let h = heap.clone();
        // SAFETY: `p` is live; the second of the two frees must be refused untouched.
        let t = spawn(move || unsafe { h.try_free(p as *mut u8) }.is_ok());
        // SAFETY: as above.
        let mine = unsafe { heap.try_free(p as *mut u8) }.is_ok();
        let theirs = t.join().unwrap();
        assert!(
            mine ^ theirs,
            "freed {} times",
            usize::from(mine) + usize::from(theirs)
        );
        heap.check_live(&mut [(keep, 64)]).unwrap();
    });
}
