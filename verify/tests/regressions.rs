//! Bugs the suite found, each replayed as a fixed scenario.
#![cfg(not(loom))]

use alloclab_core::size_class::{bin, small_index};
use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{AddrOrdered, CurrentRun, Single};

/// Found by the `heap_ops` fuzz target (input kept in `fuzz/seeds/heap_ops`): with
/// `CurrentRun<AddrOrdered>`, when the current run emptied and a run *above* another non-full
/// run then became non-full, it became current: the current run was no longer the lowest
/// non-full run (`check_invariants`: `Policy("a run the policy prefers to the current run is
/// not current")`), and allocations went to the higher run.
#[test]
fn current_run_stays_the_lowest_after_the_current_run_empties() {
    const SIZE: usize = 2304;
    let heap = Heap::<Using<CurrentRun<AddrOrdered>, Single>>::new();
    let cap = bin(small_index(SIZE)).capacity as usize;
    let runs: Vec<Vec<*mut u8>> = (0..3)
        .map(|_| (0..cap).map(|_| heap.malloc(SIZE)).collect())
        .collect();
    let (a, b, c) = (&runs[0], &runs[1], &runs[2]);
    assert!(a[0] < b[0] && b[0] < c[0], "runs not in address order");
    let b_span = b[0] as usize..b[cap - 1] as usize + SIZE;
    // SAFETY: each pointer is a live allocation of `heap`, freed once.
    unsafe {
        heap.free(a[0]); // A non-full: current
        heap.free(b[0]); // B non-full, above A: waits in the tree
        for &p in &a[1..] {
            heap.free(p); // A empties and goes back to the arena: no current run
        }
        heap.free(c[0]); // C non-full, above B
    }
    heap.check_invariants().unwrap();
    let next = heap.malloc(SIZE) as usize;
    assert!(
        b_span.contains(&next),
        "served from above the lowest non-full run"
    );
    heap.check_invariants().unwrap();
}
