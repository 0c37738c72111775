//! The intrusive run list (`list.rs`) that `Lifo` and `Mrf` share, driven through a real heap:
//! its accessors (`len`, `is_empty`, `front`) must agree with a walk of the list (`for_each`)
//! at every step. No built-in policy calls `len` or `is_empty` (they are there for policy
//! authors), so mutation testing found both could return a constant unnoticed (VERIFY.md,
//! "Mutation testing").
//!
//! `Walked<R>` is `R` whose `check` also compares the accessors with a walk; the heap's
//! invariant check calls it on every bin, empty or not.

use alloclab_core::size_class::{bin, small_index};
use alloclab_core::{Heap, Removal, RunReuse};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, ListLinks, ListRun, Mrf, RunList, Single};
use core::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bins the check found empty, and holding two runs or more (so the test knows it saw both).
static EMPTY: AtomicUsize = AtomicUsize::new(0);
static SEVERAL: AtomicUsize = AtomicUsize::new(0);

/// `R`, with a `check` that also holds the list's accessors against a walk of it.
struct Walked<R>(PhantomData<R>);

// SAFETY: every call but `check` is `R`'s, which keeps the contract; `check` only reads.
unsafe impl<R: RunReuse<Links = ListLinks, Bin = RunList>> RunReuse for Walked<R> {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "walked";
    fn insert(bin: &mut RunList, run: ListRun) {
        R::insert(bin, run);
    }
    fn freed(bin: &mut RunList, run: ListRun) {
        R::freed(bin, run);
    }
    fn pick(bin: &mut RunList) -> Option<ListRun> {
        R::pick(bin)
    }
    fn remove(bin: &mut RunList, run: ListRun, why: Removal) {
        R::remove(bin, run, why);
    }
    fn for_each(bin: &RunList, f: &mut dyn FnMut(ListRun)) {
        R::for_each(bin, f);
    }
    fn check(bin: &RunList) -> Result<(), &'static str> {
        // The list's own check first: past it the walk ends, and has `len` runs' worth of links.
        R::check(bin)?;
        let (mut n, mut first) = (0usize, None);
        bin.for_each(&mut |r| {
            if n == 0 {
                first = Some(r);
            }
            n += 1;
        });
        if bin.len() != n {
            return Err("len() is not the number of runs a walk visits");
        }
        if bin.is_empty() != (n == 0) {
            return Err("is_empty() disagrees with a walk");
        }
        if bin.front() != first {
            return Err("front() is not the first run of a walk");
        }
        match n {
            0 => EMPTY.fetch_add(1, Relaxed),
            1 => 0,
            _ => SEVERAL.fetch_add(1, Relaxed),
        };
        Ok(())
    }
}

/// Fills four runs of one bin, frees one region in each (four listed runs), frees into them
/// in another order, then frees everything (runs leave the list as they empty); the heap's
/// invariants, `Walked`'s check among them, after every step.
fn drive<R: RunReuse<Links = ListLinks, Bin = RunList>>() {
    const SIZE: usize = 64;
    let heap = Heap::<Using<Walked<R>, Single>>::new();
    let cap = bin(small_index(SIZE)).capacity as usize;
    let runs: Vec<Vec<*mut u8>> = (0..4)
        .map(|_| (0..cap).map(|_| heap.malloc(SIZE)).collect())
        .collect();
    heap.check_invariants().unwrap();
    // Free region `i` of every run, in the run order `order`, checking after each free.
    let free_round = |i: usize, order: [usize; 4]| {
        for r in order {
            // SAFETY: a live allocation of `heap`, freed once (each (run, region) pair once).
            unsafe { heap.free(runs[r][i]) };
            heap.check_invariants().unwrap();
        }
    };
    free_round(0, [1, 3, 0, 2]);
    free_round(1, [2, 0, 3, 1]);
    // Refill: the policy picks runs until they are full again (they leave the list).
    let refill: Vec<*mut u8> = (0..8).map(|_| heap.malloc(SIZE)).collect();
    heap.check_invariants().unwrap();
    for p in refill {
        // SAFETY: live allocations of `heap`, each freed once.
        unsafe { heap.free(p) };
        heap.check_invariants().unwrap();
    }
    // Everything else: runs empty one after the other and leave the list.
    for i in 2..cap {
        free_round(i, [3, 1, 2, 0]);
    }
    // Regions 0 and 1 were handed out again by the refill and freed there; all is free now.
    assert_eq!(heap.stats().allocated, 0);
    heap.check_invariants().unwrap();
}

#[test]
fn the_lists_accessors_agree_with_a_walk_of_it() {
    let (empty, several) = (EMPTY.load(Relaxed), SEVERAL.load(Relaxed));
    drive::<Lifo>();
    drive::<Mrf>();
    assert!(EMPTY.load(Relaxed) > empty, "never checked an empty list");
    assert!(
        SEVERAL.load(Relaxed) > several + 4,
        "never checked a list of several runs"
    );
}
