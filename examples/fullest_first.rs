//! A run-reuse policy written as a user would, and verified with one call.
//!
//! **Fullest first**: serve the next small allocation from the non-full run with the fewest
//! free regions (the lowest-addressed among equals), so nearly-full runs fill up and
//! nearly-empty ones get a chance to empty and go back to the arena. A known idea for lower
//! fragmentation; `pick` scans the list, O(runs in the bin).
//!
//! `cargo run --release --example fullest_first` runs the conformance kit on it and prints
//! what passed; `cargo test --example fullest_first` runs the same call as a test.

use alloclab_core::{Removal, RunReuse};
use alloclab_policies::{ListLinks, ListRun, RunList};
use alloclab_verify::{ReuseModel, Runs};
use std::collections::BTreeSet;

/// Fullest non-full run first.
pub struct FullestFirst;

// SAFETY: a run is in the list exactly from `insert` to `remove`, and `pick` returns only runs
// in the list; links are touched only for listed runs.
unsafe impl RunReuse for FullestFirst {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "fullest-first";

    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_front(run);
    }

    fn pick(bin: &mut RunList) -> Option<ListRun> {
        let mut best: Option<ListRun> = None;
        bin.for_each(&mut |r| {
            if best.map_or(true, |b| (r.free(), r.addr()) < (b.free(), b.addr())) {
                best = Some(r);
            }
        });
        best
    }

    fn remove(bin: &mut RunList, run: ListRun, _why: Removal) {
        bin.remove(run);
    }

    fn for_each(bin: &RunList, f: &mut dyn FnMut(ListRun)) {
        bin.for_each(f);
    }

    fn check(bin: &RunList) -> Result<(), &'static str> {
        bin.check()
    }
}

/// Its reference model, as plainly as the rule reads: the known run with the fewest free
/// regions, then the lowest address.
#[derive(Default, Debug)]
pub struct FullestFirstModel {
    runs: BTreeSet<usize>,
}

impl ReuseModel for FullestFirstModel {
    fn insert(&mut self, run: usize, _: &Runs<'_>) {
        self.runs.insert(run);
    }
    fn pick(&mut self, runs: &Runs<'_>) -> Option<usize> {
        self.runs.iter().copied().min_by_key(|&r| (runs.free(r), r))
    }
    fn remove(&mut self, run: usize) {
        self.runs.remove(&run);
    }
}

fn main() {
    let summary = alloclab_verify::verify_run_reuse_against::<FullestFirst, FullestFirstModel>();
    print!("{summary}");
}

#[test]
fn fullest_first_conforms() {
    alloclab_verify::verify_run_reuse_against::<FullestFirst, FullestFirstModel>();
}
