//! Seeded engine bugs caught by the model-based suite (build with `--cfg alloclab_seeded`;
//! `scripts/test.sh` does, in a target directory of its own).
//!
//! | seeded bug (`alloclab_core::seeded::Bug`) | caught by |
//! |---|---|
//! | `BitmapOffByOne`: a fresh run's bitmap marks a region past the capacity free | `check_invariants`: `BitmapCount` |
//! | `LostFlush`: a thread cache's flush drops a region instead of returning it to its run | the statistics check: the heap's allocated bytes exceed the model's |
//!
//! The concurrency bugs (`UnlockedFree`, `LostHeapId`) are caught by loom: `loom_seeded.rs`.
//! That `LostHeapId` is a lost update and nothing more (heaps made one after the other still
//! get ids of their own) is checked here, without loom.
#![cfg(all(alloclab_seeded, not(loom)))]

use alloclab_core::seeded::{self, Bug};
use alloclab_core::size_class::NBINS;
use alloclab_core::Heap;
use alloclab_core::ViolationKind;
use alloclab_policies::configs::{self, Using};
use alloclab_policies::{Lifo, Single, ThreadCache, ThreadLocal};
use alloclab_verify::machine::find_counterexample;
use alloclab_verify::{check_run_reuse, Check, LifoModel};
use std::sync::Mutex;

/// The seeded-bug switch is process-wide: one test at a time.
static SWITCH: Mutex<()> = Mutex::new(());

#[test]
fn bitmap_off_by_one_is_caught_as_bitmap_count() {
    let _g = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    // Control: with the bug off, the same search finds nothing.
    seeded::set(None);
    assert_eq!(
        find_counterexample::<configs::Lifo, LifoModel>(8, 200, Some(1)).map(|(_, f)| f),
        None
    );
    seeded::set(Some(Bug::BitmapOffByOne));
    let found = find_counterexample::<configs::Lifo, LifoModel>(8, 200, Some(1));
    let kit = check_run_reuse::<alloclab_policies::Lifo, LifoModel>();
    seeded::set(None);
    let (ops, f) = found.expect("the bitmap off-by-one went unnoticed");
    assert!(
        f.is_violation(ViolationKind::BitmapCount { bitmap: 0, free: 0 }),
        "{f} after {ops:?}"
    );
    let f = kit.expect_err("the kit missed the bitmap off-by-one");
    assert!(
        f.is_violation(ViolationKind::BitmapCount { bitmap: 0, free: 0 }),
        "{f}"
    );
}

#[test]
fn lost_flush_is_caught_by_the_statistics() {
    // Small stacks (the 16-byte class starts with 4 regions, the 64-byte class with 1), so
    // that flushes happen within a few frees, and the end of each case flushes the rest.
    type C = Using<Lifo, Single, ThreadCache<{ 256 * NBINS }>>;
    let _g = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    seeded::set(None);
    assert_eq!(
        find_counterexample::<C, LifoModel>(8, 200, Some(1)).map(|(_, f)| f),
        None
    );
    seeded::set(Some(Bug::LostFlush));
    let found = find_counterexample::<C, LifoModel>(8, 200, Some(1));
    seeded::set(None);
    let (ops, f) = found.expect("the lost flush went unnoticed");
    assert_eq!(f.check, Check::Stats, "{f} after {ops:?}");
    assert!(f.detail.contains("allocated"), "{f}");
}

/// `LostHeapId` splits the counter's increment into a load and a store, so ids collide only
/// when two heaps initialize at once (what loom must find, `loom_seeded.rs`). One after the
/// other, with the bug on, each heap still gets an id of its own, distinct from those drawn
/// before it: a thread's arena binding in one heap is never taken for its binding in another,
/// so each heap leases this thread an arena.
#[test]
fn lost_heap_id_without_a_race_keeps_ids_unique() {
    type Tl = Using<Lifo, ThreadLocal>;
    let _g = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    seeded::set(None);
    let before = Heap::<Tl>::new();
    let mut live = vec![before.malloc(16)];
    seeded::set(Some(Bug::LostHeapId));
    let heaps: Vec<Heap<Tl>> = (0..3).map(|_| Heap::new()).collect();
    for h in &heaps {
        live.push(h.malloc(16));
    }
    seeded::set(None);
    for (i, (h, p)) in [&before].into_iter().chain(&heaps).zip(live).enumerate() {
        assert_eq!(
            h.arenas_leased(),
            1,
            "heap {i} took another heap's binding for its own: their ids are the same"
        );
        // SAFETY: a live allocation of `h`, freed once.
        unsafe { h.free(p) };
        h.check_invariants().unwrap();
    }
}
