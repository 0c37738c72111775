//! Seeded engine bugs caught by the model-based suite (build with `--cfg alloclab_seeded`;
//! `scripts/test.sh` does, in a target directory of its own).
//!
//! | seeded bug (`alloclab_core::seeded::Bug`) | caught by |
//! |---|---|
//! | `BitmapOffByOne`: a fresh run's bitmap marks a region past the capacity free | `check_invariants`: `BitmapCount` |
//! | `LostFlush`: a thread cache's flush drops a region instead of returning it to its run | the statistics check: the heap's allocated bytes exceed the model's |
//!
//! The concurrency bugs (`UnlockedFree`, `LostHeapId`) are caught by loom: `loom_seeded.rs`.
#![cfg(all(alloclab_seeded, not(loom)))]

use alloclab_core::seeded::{self, Bug};
use alloclab_core::size_class::NBINS;
use alloclab_core::ViolationKind;
use alloclab_policies::configs::{self, Using};
use alloclab_policies::{Lifo, Single, ThreadCache};
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
