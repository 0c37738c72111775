//! `CurrentRun<P>`: any run-reuse policy plus a cached current run (mozjemalloc's
//! `mCurrentRun`).
//!
//! The bin allocates from its current run until it is full, and only then asks `P` for the
//! next one, which leaves `P` and becomes current. A run that becomes non-full goes to `P`,
//! unless `P::prefer`s it to the current run (they swap), or there is no current run and `P`
//! holds nothing it prefers (it becomes current). With `AddrOrdered` this keeps the current run
//! the lowest non-full one, the old mozjemalloc rule; `Lifo` and `Mrf` prefer nothing.

use alloclab_core::{LinkPlace, Removal, RunRef, RunReuse};
use core::marker::PhantomData;

/// `P` with a cached current run.
pub struct CurrentRun<P>(PhantomData<P>);

/// A bin's state under `CurrentRun<P>`.
pub struct CurrentBin<L, B> {
    current: Option<RunRef<L>>,
    inner: B,
}

impl<L, B: Default> Default for CurrentBin<L, B> {
    fn default() -> Self {
        CurrentBin {
            current: None,
            inner: B::default(),
        }
    }
}

// SAFETY: a run is known from `insert` to `remove`, either as the current run or inside `P`
// (which keeps its own contract); a run leaves `P` (with `Removal::Taken`) before becoming
// current, and the current run is returned to `P` before being replaced.
unsafe impl<P: RunReuse> RunReuse for CurrentRun<P> {
    type Links = P::Links;
    type Bin = CurrentBin<P::Links, P::Bin>;
    const NAME: &'static str = "current-run";
    // The runs are `P`'s, so their links stay where `P` keeps them.
    const LINKS: LinkPlace = P::LINKS;

    fn write_name(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        P::write_name(w)?;
        w.write_str("+current-run")
    }

    fn insert(bin: &mut Self::Bin, run: RunRef<P::Links>) {
        match bin.current {
            // No current run (the last one filled up or emptied): `run` becomes current unless
            // `P` holds a run it prefers, which the next `pick` then takes. Without this check a
            // high run could become current above lower ones waiting in `P` (found by the
            // `heap_ops` fuzz target; `verify/tests/regressions.rs`).
            None => match P::pick(&mut bin.inner) {
                Some(best) if P::prefer(best, run) => P::insert(&mut bin.inner, run),
                _ => bin.current = Some(run),
            },
            Some(cur) if P::prefer(run, cur) => {
                P::insert(&mut bin.inner, cur);
                bin.current = Some(run);
            }
            Some(_) => P::insert(&mut bin.inner, run),
        }
    }

    fn freed(bin: &mut Self::Bin, run: RunRef<P::Links>) {
        if bin.current != Some(run) {
            P::freed(&mut bin.inner, run);
        }
    }

    fn pick(bin: &mut Self::Bin) -> Option<RunRef<P::Links>> {
        if bin.current.is_none() {
            let next = P::pick(&mut bin.inner)?;
            P::remove(&mut bin.inner, next, Removal::Taken);
            bin.current = Some(next);
        }
        bin.current
    }

    fn remove(bin: &mut Self::Bin, run: RunRef<P::Links>, why: Removal) {
        if bin.current == Some(run) {
            bin.current = None;
        } else {
            P::remove(&mut bin.inner, run, why);
        }
    }

    fn for_each(bin: &Self::Bin, f: &mut dyn FnMut(RunRef<P::Links>)) {
        if let Some(c) = bin.current {
            f(c);
        }
        P::for_each(&bin.inner, f);
    }

    fn check(bin: &Self::Bin) -> Result<(), &'static str> {
        P::check(&bin.inner)?;
        if let Some(cur) = bin.current {
            let mut preferred = false;
            P::for_each(&bin.inner, &mut |r| preferred |= P::prefer(r, cur));
            if preferred {
                return Err("a run the policy prefers to the current run is not current");
            }
        }
        Ok(())
    }

    fn prefer(candidate: RunRef<P::Links>, current: RunRef<P::Links>) -> bool {
        P::prefer(candidate, current)
    }
}
