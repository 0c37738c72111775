//! A first-in, first-out run-reuse policy written on `RunList::push_back` and `back`, as a
//! user would write one, against its model through the kit: every pick predicted, and the
//! list's own check (tail included) after every step. Shows the list's ends stay right under
//! every insert, pick and removal the kit generates.
#![cfg(not(loom))]

use alloclab_core::{Removal, RunReuse};
use alloclab_policies::{ListLinks, ListRun, RunList};
use alloclab_verify::{verify_run_reuse_against, ReuseModel, Runs};
use std::collections::VecDeque;

/// The run that became non-full first serves first.
struct Fifo;

// SAFETY: a run is in the list exactly from `insert` to `remove`; only listed runs are picked
// or have their links touched.
unsafe impl RunReuse for Fifo {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "fifo";

    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_back(run);
    }

    fn pick(bin: &mut RunList) -> Option<ListRun> {
        bin.front()
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

/// Queue order of becoming non-full.
#[derive(Default, Debug)]
struct FifoModel(VecDeque<usize>);

impl ReuseModel for FifoModel {
    fn insert(&mut self, run: usize, _runs: &Runs<'_>) {
        self.0.push_back(run);
    }
    fn pick(&mut self, _runs: &Runs<'_>) -> Option<usize> {
        self.0.front().copied()
    }
    fn remove(&mut self, run: usize) {
        self.0.retain(|&r| r != run);
    }
}

/// The same order served from the back: checks `back` and the tail after removals.
struct Stack;

// SAFETY: as `Fifo`.
unsafe impl RunReuse for Stack {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "back-stack";

    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_back(run);
    }

    fn pick(bin: &mut RunList) -> Option<ListRun> {
        bin.back()
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

/// Last in, served first.
#[derive(Default, Debug)]
struct StackModel(Vec<usize>);

impl ReuseModel for StackModel {
    fn insert(&mut self, run: usize, _runs: &Runs<'_>) {
        self.0.push(run);
    }
    fn pick(&mut self, _runs: &Runs<'_>) -> Option<usize> {
        self.0.last().copied()
    }
    fn remove(&mut self, run: usize) {
        self.0.retain(|&r| r != run);
    }
}

#[test]
fn fifo_on_push_back_conforms() {
    let s = verify_run_reuse_against::<Fifo, FifoModel>();
    assert!(s.model.is_some(), "{s}");
    assert!(s.coverage.gaps().is_empty(), "{s}");
}

#[test]
fn serving_from_the_back_conforms() {
    verify_run_reuse_against::<Stack, StackModel>();
}
