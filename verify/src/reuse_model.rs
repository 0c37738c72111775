//! Executable reference models of the run-reuse policies: which run serves the next small
//! allocation, written as plainly as the specification in docs/ARCHITECTURE.md ("Built-in
//! run-reuse policies"), with ordinary collections instead of intrusive links.
//!
//! A model sees the same protocol as a policy (`insert`, `freed`, `pick`, `remove`), with runs
//! named by their start address. The `Harness` drives it from what it observes of the real
//! heap and compares its prediction with the run that actually served each allocation.

use alloclab_core::RunReuse;
use alloclab_policies::{AddrOrdered, CurrentRun, InChunkMap, Lifo, Mrf};
use std::collections::BTreeMap;

/// What a model may ask about runs: their free region counts (for policies that choose by
/// fullness). Runs are named by their start address.
pub struct Runs<'a> {
    free: &'a BTreeMap<usize, usize>,
}

impl<'a> Runs<'a> {
    pub(crate) fn new(free: &'a BTreeMap<usize, usize>) -> Self {
        Runs { free }
    }

    /// Free regions of `run` now.
    pub fn free(&self, run: usize) -> usize {
        self.free.get(&run).copied().unwrap_or(0)
    }
}

/// A reference model of a run-reuse policy, for one bin.
pub trait ReuseModel: Default + core::fmt::Debug + 'static {
    /// Whether the model predicts picks (`false` for [`Unmodeled`]).
    const PREDICTS: bool = true;

    /// `run` became non-full.
    fn insert(&mut self, run: usize, runs: &Runs<'_>);
    /// A region was freed into `run`, already non-full.
    fn freed(&mut self, _run: usize, _runs: &Runs<'_>) {}
    /// The run the policy serves the next allocation from (`None`: a new run).
    fn pick(&mut self, runs: &Runs<'_>) -> Option<usize>;
    /// `run` became full or empty.
    fn remove(&mut self, run: usize);
    /// `P::prefer`, for models wrapped in [`CurrentRunModel`].
    fn prefer(_candidate: usize, _current: usize) -> bool {
        false
    }
    /// How many runs the modelled policy handed over with `Removal::Taken` so far (wrappers
    /// such as `CurrentRun` take runs from the policy they wrap; the engine never does).
    fn taken(&self) -> u64 {
        0
    }
}

/// Ties a policy to its reference model.
pub trait Modeled: RunReuse {
    /// The model that predicts this policy's picks.
    type Model: ReuseModel;
}

/// No prediction: only the policy-independent checks run.
#[derive(Default, Debug)]
pub struct Unmodeled;

impl ReuseModel for Unmodeled {
    const PREDICTS: bool = false;
    fn insert(&mut self, _: usize, _: &Runs<'_>) {}
    fn pick(&mut self, _: &Runs<'_>) -> Option<usize> {
        None
    }
    fn remove(&mut self, _: usize) {}
}

/// The list models: non-full runs in the order they became non-full (last = most recent);
/// the most recent serves. With `MOVE_ON_FREE`, every free also makes its run the most recent.
#[derive(Default, Debug)]
pub struct RecencyModel<const MOVE_ON_FREE: bool> {
    order: Vec<usize>,
}

/// LIFO: the run that most recently became non-full serves; frees into non-full runs do not
/// reorder.
pub type LifoModel = RecencyModel<false>;

/// MRF: like LIFO, but every free makes its run the most recent.
pub type MrfModel = RecencyModel<true>;

impl<const MOVE_ON_FREE: bool> ReuseModel for RecencyModel<MOVE_ON_FREE> {
    fn insert(&mut self, run: usize, _: &Runs<'_>) {
        self.order.push(run);
    }
    fn freed(&mut self, run: usize, _: &Runs<'_>) {
        if MOVE_ON_FREE {
            self.remove(run);
            self.order.push(run);
        }
    }
    fn pick(&mut self, _: &Runs<'_>) -> Option<usize> {
        self.order.last().copied()
    }
    fn remove(&mut self, run: usize) {
        self.order.retain(|&r| r != run);
    }
}

/// Address order: the lowest non-full run serves.
#[derive(Default, Debug)]
pub struct AddrOrderedModel {
    runs: std::collections::BTreeSet<usize>,
}

impl ReuseModel for AddrOrderedModel {
    fn insert(&mut self, run: usize, _: &Runs<'_>) {
        self.runs.insert(run);
    }
    fn pick(&mut self, _: &Runs<'_>) -> Option<usize> {
        self.runs.first().copied()
    }
    fn remove(&mut self, run: usize) {
        self.runs.remove(&run);
    }
    fn prefer(candidate: usize, current: usize) -> bool {
        candidate < current
    }
}

/// A current run in front of model `M`: the current run serves until full; a run becoming
/// non-full becomes current if there is none (unless `M` holds a run it prefers: then it goes
/// to `M`, whose pick comes next), or swaps with the current one if `M` prefers it.
#[derive(Default, Debug)]
pub struct CurrentRunModel<M> {
    current: Option<usize>,
    inner: M,
    taken: u64,
}

impl<M: ReuseModel> ReuseModel for CurrentRunModel<M> {
    fn insert(&mut self, run: usize, runs: &Runs<'_>) {
        match self.current {
            None => match self.inner.pick(runs) {
                Some(best) if M::prefer(best, run) => self.inner.insert(run, runs),
                _ => self.current = Some(run),
            },
            Some(cur) if M::prefer(run, cur) => {
                self.inner.insert(cur, runs);
                self.current = Some(run);
            }
            Some(_) => self.inner.insert(run, runs),
        }
    }
    fn freed(&mut self, run: usize, runs: &Runs<'_>) {
        if self.current != Some(run) {
            self.inner.freed(run, runs);
        }
    }
    fn pick(&mut self, runs: &Runs<'_>) -> Option<usize> {
        if self.current.is_none() {
            let next = self.inner.pick(runs)?;
            self.inner.remove(next);
            self.taken += 1;
            self.current = Some(next);
        }
        self.current
    }
    fn remove(&mut self, run: usize) {
        if self.current == Some(run) {
            self.current = None;
        } else {
            self.inner.remove(run);
        }
    }
    fn prefer(candidate: usize, current: usize) -> bool {
        M::prefer(candidate, current)
    }
    fn taken(&self) -> u64 {
        self.taken + self.inner.taken()
    }
}

impl Modeled for Lifo {
    type Model = LifoModel;
}
impl Modeled for Mrf {
    type Model = MrfModel;
}
/// The same rule as `P`: where the links live changes no pick.
impl<P: Modeled> Modeled for InChunkMap<P> {
    type Model = P::Model;
}
impl Modeled for AddrOrdered {
    type Model = AddrOrderedModel;
}
impl<P: Modeled> Modeled for CurrentRun<P> {
    type Model = CurrentRunModel<P::Model>;
}
