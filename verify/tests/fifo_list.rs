//! A first-in, first-out run-reuse policy written on `RunList::push_back` and `back`, as a
//! user would write one, against its model through the kit: every pick predicted, and the
//! list's own check (tail included) after every step. Shows the list's ends stay right under
//! every insert, pick and removal the kit generates.
#![cfg(not(loom))]

use alloclab_core::{Removal, RunReuse};
use alloclab_policies::{ListLinks, ListRun, RunList};
use alloclab_verify::{verify_run_reuse_against, ReuseModel, Runs};
use std::collections::VecDeque;

/// Runs join the back of the list as they become non-full; `FROM_BACK` says which end serves:
/// the front (first in, first out) or the back (checks `back` and the tail after removals).
struct PushBack<const FROM_BACK: bool>;

type Fifo = PushBack<false>;
type Stack = PushBack<true>;

// SAFETY: a run is in the list exactly from `insert` to `remove`; only listed runs are picked
// or have their links touched.
unsafe impl<const FROM_BACK: bool> RunReuse for PushBack<FROM_BACK> {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = if FROM_BACK { "back-stack" } else { "fifo" };

    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_back(run);
    }

    fn pick(bin: &mut RunList) -> Option<ListRun> {
        if FROM_BACK {
            bin.back()
        } else {
            bin.front()
        }
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

/// The order runs became non-full in, served from the same end as `PushBack<FROM_BACK>`.
#[derive(Default, Debug)]
struct PushBackModel<const FROM_BACK: bool>(VecDeque<usize>);

type FifoModel = PushBackModel<false>;
type StackModel = PushBackModel<true>;

impl<const FROM_BACK: bool> ReuseModel for PushBackModel<FROM_BACK> {
    fn insert(&mut self, run: usize, _runs: &Runs<'_>) {
        self.0.push_back(run);
    }
    fn pick(&mut self, _runs: &Runs<'_>) -> Option<usize> {
        if FROM_BACK {
            self.0.back().copied()
        } else {
            self.0.front().copied()
        }
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
