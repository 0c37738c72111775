//! The heap as a proptest state machine (`proptest-state-machine`): the reference state
//! machine generates operation sequences, [`Harness`] is the system under test, and every
//! transition is checked against the model. Also the plain runners the conformance kit and the
//! seeded-bug tests use.

use crate::finding::Finding;
use crate::harness::Harness;
use crate::ops::{op_strategy, Op};
use crate::reuse_model::ReuseModel;
use alloclab_core::Config;
use core::marker::PhantomData;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

/// Test cases per state-machine run when `PROPTEST_CASES` is not set. Kept modest so the
/// whole suite fits CI; set `PROPTEST_CASES` (and `ALLOCLAB_VERIFY_STEPS`) for a campaign.
pub const DEFAULT_CASES: u32 = 24;
/// Longest operation sequence when `ALLOCLAB_VERIFY_STEPS` is not set.
pub const DEFAULT_STEPS: usize = 400;

fn env_or<T: core::str::FromStr>(var: &str, default: T) -> T {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Cases per run: `PROPTEST_CASES`, or `default`.
pub fn cases(default: u32) -> u32 {
    env_or("PROPTEST_CASES", default)
}

/// Longest sequence: `ALLOCLAB_VERIFY_STEPS`, or `default`.
pub fn steps(default: usize) -> usize {
    env_or("ALLOCLAB_VERIFY_STEPS", default)
}

/// A proptest configuration that writes no regression files (the runners here are called from
/// library code, where proptest cannot tell which source file to write next to).
pub fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The reference state machine: how many allocations are live, which is all that generation
/// needs (operations name live allocations by slot, modulo the live count).
pub struct OpsMachine;

impl ReferenceStateMachine for OpsMachine {
    type State = usize;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<usize> {
        Just(0).boxed()
    }

    fn transitions(live: &usize) -> BoxedStrategy<Op> {
        op_strategy(*live)
    }

    fn apply(live: usize, op: &Op) -> usize {
        match op {
            Op::Alloc { .. } => live + 1,
            Op::Free { .. } => live.saturating_sub(1),
            _ => live,
        }
    }
}

/// `Harness<C, M>` as the system under test of [`OpsMachine`].
pub struct HeapMachine<C, M>(PhantomData<(C, M)>);

impl<C: Config, M: ReuseModel> StateMachineTest for HeapMachine<C, M> {
    type SystemUnderTest = Harness<C, M>;
    type Reference = OpsMachine;

    fn init_test(_: &usize) -> Harness<C, M> {
        Harness::new()
    }

    fn apply(mut h: Harness<C, M>, _: &usize, op: Op) -> Harness<C, M> {
        if let Err(f) = h.apply(&op) {
            panic!("{} ({}): {f}", C::NAME, core::any::type_name::<M>());
        }
        h
    }

    fn teardown(h: Harness<C, M>) {
        if let Err(f) = h.finish() {
            panic!("{} at teardown: {f}", C::NAME);
        }
    }
}

/// Runs the state machine for `C` with reference model `M`: [`cases`]`(DEFAULT_CASES)` cases of
/// up to [`steps`]`(DEFAULT_STEPS)` operations. Panics with proptest's shrunk counterexample.
pub fn run_state_machine<C: Config, M: ReuseModel>() {
    let cfg = config(cases(DEFAULT_CASES));
    let mut runner = TestRunner::new(cfg.clone());
    let strategy = OpsMachine::sequential_strategy(1..steps(DEFAULT_STEPS));
    let result = runner.run(&strategy, |(init, transitions, seen)| {
        HeapMachine::<C, M>::test_sequential(cfg.clone(), init, transitions, seen);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{}: state machine failed: {e}", C::NAME);
    }
}

/// Searches for an operation sequence on which `Harness<C, M>` reports a finding: `cases`
/// cases of up to `max_steps` operations, from `seed` (`None`: proptest's own choice, random
/// unless `PROPTEST_RNG_SEED` is set). Returns the shrunk sequence and its finding.
pub fn find_counterexample<C: Config, M: ReuseModel>(
    cases: u32,
    max_steps: usize,
    seed: Option<u64>,
) -> Option<(Vec<Op>, Finding)> {
    let mut cfg = config(cases);
    if let Some(s) = seed {
        cfg.rng_seed = proptest::test_runner::RngSeed::Fixed(s);
    }
    let mut runner = TestRunner::new(cfg);
    let strategy = OpsMachine::sequential_strategy(1..max_steps.max(2));
    let result = runner.run(&strategy, |(_, ops, seen)| {
        // Tell the shrinker how far the sequence got: it first drops what was never reached.
        Harness::<C, M>::run_observed(&ops, || {
            if let Some(seen) = &seen {
                seen.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
            }
        })
        .map_err(|f| TestCaseError::fail(f.to_string()))
    });
    match result {
        Ok(()) => None,
        Err(TestError::Fail(_, (_, ops, _))) => {
            let f = Harness::<C, M>::run(&ops).expect_err("a shrunk failure fails again");
            Some((ops, f))
        }
        Err(e) => panic!("proptest gave up: {e}"),
    }
}
