//! `Mrf`: strict most-recently-freed run reuse (the first patch of bug 1924444).
//!
//! Like `Lifo`, but every free moves its run to the front of the list, so that allocations
//! refill the run most recently freed into: objects built together land together, and are
//! more likely to be torn down together, freeing whole runs.

use crate::list::{ListLinks, ListRun, RunList};
use alloclab_core::{Removal, RunReuse};

/// Most-recently-freed-first reuse of non-full runs.
pub struct Mrf;

// SAFETY: as for `Lifo`: a run is listed exactly from `insert` to `remove`.
unsafe impl RunReuse for Mrf {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "mrf";

    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_front(run);
    }

    fn freed(bin: &mut RunList, run: ListRun) {
        bin.move_to_front(run);
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
