//! Seeded bugs that show only across chunks: a run-reuse policy "lowest-addressed chunk first,
//! LIFO within a chunk", written as a user would, and two ways to get it wrong that the kit's
//! default run must catch (its generation spreads one bin's non-full runs over several chunks,
//! and its coverage check fails if it never did):
//!
//! | seeded bug | caught by |
//! |---|---|
//! | the policy picks the *highest* chunk, checked against the lowest-chunk model | kit: `ReuseModel` |
//! | the correct policy checked against a model that ignores chunks (plain LIFO) | kit: `ReuseModel` |
//!
//! The correct policy against its correct model passes, so the model itself is right. All of
//! this runs in both builds: under `--cfg loom` every state-machine case is a one-thread loom
//! model, so the kit catches both mistakes there too.

use alloclab_core::size_class::CHUNK;
use alloclab_core::{Removal, RunReuse};
use alloclab_policies::configs::Using;
use alloclab_policies::{ListLinks, ListRun, RunList, Single};
use alloclab_verify::machine::{find_counterexample, REGRESSION_SEEDS};
use alloclab_verify::{check_run_reuse, Check, LifoModel, ReuseModel, Runs};

/// Lowest-addressed chunk first, LIFO within a chunk; with `HIGHEST`, the seeded bug: the
/// highest-addressed chunk first.
struct ChunkLifo<const HIGHEST: bool>;

// SAFETY: a run is in the list exactly from `insert` to `remove`, and `pick` returns only runs
// in the list.
unsafe impl<const HIGHEST: bool> RunReuse for ChunkLifo<HIGHEST> {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = if HIGHEST {
        "seeded-highest-chunk-lifo"
    } else {
        "lowest-chunk-lifo"
    };
    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_front(run);
    }
    fn pick(bin: &mut RunList) -> Option<ListRun> {
        // The list runs from the most recent: the first run met in the best chunk wins.
        let mut best: Option<ListRun> = None;
        bin.for_each(&mut |r| {
            let better = match best {
                None => true,
                Some(b) if HIGHEST => r.addr() / CHUNK > b.addr() / CHUNK,
                Some(b) => r.addr() / CHUNK < b.addr() / CHUNK,
            };
            if better {
                best = Some(r);
            }
        });
        best
    }
    fn remove(bin: &mut RunList, run: ListRun, _: Removal) {
        bin.remove(run);
    }
    fn for_each(bin: &RunList, f: &mut dyn FnMut(ListRun)) {
        bin.for_each(f);
    }
    fn check(bin: &RunList) -> Result<(), &'static str> {
        bin.check()
    }
}

/// The reference model: among the runs in the lowest-addressed chunk, the one that most
/// recently became non-full.
#[derive(Default, Debug)]
struct LowestChunkLifoModel {
    order: Vec<usize>,
}

impl ReuseModel for LowestChunkLifoModel {
    fn insert(&mut self, run: usize, _: &Runs<'_>) {
        self.order.push(run);
    }
    fn pick(&mut self, _: &Runs<'_>) -> Option<usize> {
        let lowest = self.order.iter().map(|r| r / CHUNK).min()?;
        self.order
            .iter()
            .rev()
            .find(|&&r| r / CHUNK == lowest)
            .copied()
    }
    fn remove(&mut self, run: usize) {
        self.order.retain(|&r| r != run);
    }
}

#[test]
fn picking_the_highest_chunk_is_caught_by_the_default_kit() {
    let f = check_run_reuse::<ChunkLifo<true>, LowestChunkLifoModel>()
        .expect_err("the kit missed a policy that picks the highest chunk");
    assert_eq!(f.check, Check::ReuseModel, "{f}");
    // The counterexample comes minimized (about 20 operations), as a test to paste.
    assert!(f.detail.contains("#[test]"), "{f}");
    let ops = f.detail.matches("        Op::").count();
    assert!(ops <= 60, "{ops} operations: {f}");
}

#[test]
fn a_model_that_ignores_chunks_is_caught_by_the_default_kit() {
    let f = check_run_reuse::<ChunkLifo<false>, LifoModel>()
        .expect_err("the kit missed a model that ignores chunks");
    assert_eq!(f.check, Check::ReuseModel, "{f}");
}

#[test]
fn the_correct_policy_passes_against_its_model() {
    let found = find_counterexample::<Using<ChunkLifo<false>, Single>, LowestChunkLifoModel>(
        24,
        400,
        Some(REGRESSION_SEEDS[0]),
    );
    if let Some((ops, f)) = found {
        panic!("{f} after {ops:?}");
    }
}
