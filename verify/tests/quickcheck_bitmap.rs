//! quickcheck property of the run bitmap, through a real heap: a full run hands out its regions
//! in address order; after any set of them is freed, allocation takes them back lowest first,
//! and only then starts a new run; the free count, the bitmap and double-free detection agree
//! with the model at every step (`check_invariants` compares popcount and free count).
#![cfg(not(loom))]

use alloclab_core::size_class::{bin, class_size, NBINS};
use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use quickcheck::{QuickCheck, TestResult};

fn prop(class: u8, freed: Vec<bool>) -> TestResult {
    let idx = class as usize % NBINS;
    let info = bin(idx);
    let (size, cap) = (class_size(idx), info.capacity as usize);
    let heap = Heap::<Using<Lifo, Single>>::new();
    let run: Vec<usize> = (0..cap).map(|_| heap.malloc(size) as usize).collect();
    for (i, &p) in run.iter().enumerate() {
        if p != run[0] + i * size {
            return TestResult::error(format!("region {i} of a fresh run is at {p:#x}"));
        }
    }
    // Free a strict subset (the run must stay), chosen by `freed`.
    let chosen: Vec<usize> = (0..cap)
        .filter(|&i| freed.get(i).copied().unwrap_or(false))
        .take(cap - 1)
        .collect();
    for &i in &chosen {
        // SAFETY: a live region of `heap`, freed once.
        unsafe { heap.free(run[i] as *mut u8) };
        // SAFETY: no longer live: must be refused without being touched.
        if unsafe { heap.try_free(run[i] as *mut u8) }.is_ok() {
            return TestResult::error(format!("double free of region {i} accepted"));
        }
        if let Err(v) = heap.check_invariants() {
            return TestResult::error(format!("after freeing region {i}: {v}"));
        }
    }
    for &i in &chosen {
        let p = heap.malloc(size) as usize;
        if p != run[i] {
            return TestResult::error(format!(
                "expected region {i} ({:#x}) back, got {p:#x}",
                run[i]
            ));
        }
    }
    let next = heap.malloc(size) as usize;
    if (run[0]..run[0] + info.run_size()).contains(&next) {
        return TestResult::error("a full run served another region");
    }
    TestResult::from_bool(heap.check_invariants().is_ok())
}

#[test]
fn regions_come_back_lowest_first() {
    QuickCheck::new()
        .tests(alloclab_verify::machine::cases(200) as u64)
        .quickcheck(prop as fn(u8, Vec<bool>) -> TestResult);
}
