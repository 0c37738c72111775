//! The heap as a proptest state machine (`proptest-state-machine`): the reference state
//! machine generates operation sequences, [`Harness`] is the system under test, and every
//! transition is checked against the model. Also the plain runners the conformance kit and the
//! seeded-bug tests use: [`search`] (with the coverage it reached), [`minimize`] (delta
//! debugging over the operation list) and [`as_test`] (a counterexample as a `#[test]`).
//!
//! Each case focuses on one of the hot sizes (the reference state picks it), so that one bin
//! gets many runs, spread over several chunks by chunk-sized large requests.

use crate::coverage::Coverage;
use crate::finding::{Check, Finding};
use crate::harness::Harness;
use crate::ops::{focused_op_strategy, Op, HOT_SIZES};
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

/// Fixed seeds every state-machine search runs before its random one, so that what they
/// catch is caught on every run, not by luck (`PROPTEST_RNG_SEED` still fixes the random one).
pub const REGRESSION_SEEDS: [u64; 1] = [0x5eed_a110_c1ab];

/// The reference state machine: how many allocations are live, the case's focus size and how
/// many operations came before (the phase), which is all that generation needs (operations name live allocations by slot, modulo the
/// live count).
pub struct OpsMachine;

impl ReferenceStateMachine for OpsMachine {
    /// (live allocations, focus size, operations so far)
    type State = (usize, u32, usize);
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Self::State> {
        proptest::sample::select(&HOT_SIZES[..])
            .prop_map(|f| (0, f as u32, 0))
            .boxed()
    }

    fn transitions(&(live, focus, step): &Self::State) -> BoxedStrategy<Op> {
        focused_op_strategy(live, focus, step)
    }

    fn apply((live, focus, step): Self::State, op: &Op) -> Self::State {
        let live = match op {
            Op::Alloc { .. } => live + 1,
            Op::Free { .. } => live.saturating_sub(1),
            _ => live,
        };
        (live, focus, step + 1)
    }
}

/// `Harness<C, M>` as the system under test of [`OpsMachine`].
pub struct HeapMachine<C, M>(PhantomData<(C, M)>);

impl<C: Config, M: ReuseModel> StateMachineTest for HeapMachine<C, M> {
    type SystemUnderTest = Harness<C, M>;
    type Reference = OpsMachine;

    fn init_test(_: &(usize, u32, usize)) -> Harness<C, M> {
        Harness::new()
    }

    fn apply(mut h: Harness<C, M>, _: &(usize, u32, usize), op: Op) -> Harness<C, M> {
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

/// Runs the state machine for `C` with reference model `M`: from each of [`REGRESSION_SEEDS`],
/// then from a random seed, [`cases`]`(DEFAULT_CASES)` cases of up to
/// [`steps`]`(DEFAULT_STEPS)` operations. Panics with the minimized counterexample, printed as
/// a `#[test]`.
pub fn run_state_machine<C: Config, M: ReuseModel>() {
    let (n, len) = (cases(DEFAULT_CASES), steps(DEFAULT_STEPS));
    for seed in REGRESSION_SEEDS.map(Some).into_iter().chain([None]) {
        if let Some((ops, f)) = search::<C, M>(n, len, seed).counterexample {
            panic!(
                "{}: state machine failed: {f}\n{}",
                C::NAME,
                as_test::<C, M>(&ops, &f)
            );
        }
    }
}

/// What a [`search`] reached, and the counterexample it found, if any.
#[derive(Debug, Default)]
pub struct Search {
    /// The protocol situations every case reached (failing ones included).
    pub coverage: Coverage,
    /// The minimized failing sequence and its finding.
    pub counterexample: Option<(Vec<Op>, Finding)>,
}

/// Searches for an operation sequence on which `Harness<C, M>` reports a finding: `cases`
/// cases of up to `max_steps` operations, from `seed` (`None`: proptest's own choice, random
/// unless `PROPTEST_RNG_SEED` is set). Returns the minimized sequence and its finding.
pub fn find_counterexample<C: Config, M: ReuseModel>(
    cases: u32,
    max_steps: usize,
    seed: Option<u64>,
) -> Option<(Vec<Op>, Finding)> {
    search::<C, M>(cases, max_steps, seed).counterexample
}

/// As [`find_counterexample`], also returning the coverage the cases reached. A failure is
/// shrunk by proptest (within a budget), then [`minimize`]d.
pub fn search<C: Config, M: ReuseModel>(cases: u32, max_steps: usize, seed: Option<u64>) -> Search {
    let mut cfg = config(cases);
    cfg.max_shrink_iters = 1024;
    if let Some(s) = seed {
        cfg.rng_seed = proptest::test_runner::RngSeed::Fixed(s);
    }
    let coverage = core::cell::RefCell::new(Coverage::default());
    // The finding of the latest failing case: proptest keeps a shrunk sequence only when it
    // fails, so at the end this is the finding of the sequence it reports.
    let last_finding = core::cell::RefCell::new(None);
    let mut runner = TestRunner::new(cfg);
    // Cases of at least half the longest length: with the default 400 operations, every case
    // gets through the first growing phase (`ops::GROW`), most into the shrinking one.
    let strategy = OpsMachine::sequential_strategy((max_steps / 2).max(1)..max_steps.max(2));
    let result = runner.run(&strategy, |(_, ops, seen)| {
        // Tell the shrinker how far the sequence got: it first drops what was never reached.
        Harness::<C, M>::new()
            .run_covered(
                &ops,
                || {
                    if let Some(seen) = &seen {
                        seen.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
                    }
                },
                &mut coverage.borrow_mut(),
            )
            .map_err(|f| {
                let why = TestCaseError::fail(f.to_string());
                *last_finding.borrow_mut() = Some(f);
                why
            })
    });
    let counterexample = match result {
        Ok(()) => None,
        Err(TestError::Fail(why, (_, ops, _))) => {
            // A finding can hang on where the OS put the chunks (a policy that orders them by
            // address), and tests running beside this one in the process move that: replay a
            // few times, and if no replay fails, keep the finding the shrunk sequence had when
            // proptest ran it (minimizing then keeps the sequence as it is).
            let f = (0..16)
                .find_map(|_| Harness::<C, M>::run(&ops).err())
                .or_else(|| last_finding.borrow_mut().take())
                .unwrap_or_else(|| panic!("proptest reported a failure it never saw: {why}"));
            Some(minimize::<C, M>(ops, f))
        }
        Err(e) => panic!("proptest gave up: {e}"),
    };
    Search {
        coverage: coverage.into_inner(),
        counterexample,
    }
}

/// Whether `g` is the same failure as `f`: the same check (for invariants, the same kind).
fn same_failure(f: &Finding, g: &Finding) -> bool {
    match (f.check, g.check) {
        (Check::Invariants(a), Check::Invariants(b)) => {
            core::mem::discriminant(&a) == core::mem::discriminant(&b)
        }
        (a, b) => a == b,
    }
}

/// Most runs [`minimize`] spends (each replays a candidate sequence on a fresh heap).
pub const MINIMIZE_BUDGET: usize = 4000;

/// Delta debugging over the operation list: the shortest sequence found (within
/// [`MINIMIZE_BUDGET`] runs) that fails the same check as `ops` does with `finding`, removing
/// ever smaller blocks of operations until no single operation can go. Slots are taken modulo
/// the live count, so every subsequence is valid.
pub fn minimize<C: Config, M: ReuseModel>(ops: Vec<Op>, finding: Finding) -> (Vec<Op>, Finding) {
    let mut best = (ops, finding);
    let mut runs = 0;
    let mut blocks = 2usize;
    while best.0.len() > 1 && runs < MINIMIZE_BUDGET {
        let len = best.0.len();
        let size = len.div_ceil(blocks);
        let mut reduced = false;
        let mut start = 0;
        while start < best.0.len() && runs < MINIMIZE_BUDGET {
            let end = (start + size).min(best.0.len());
            let candidate: Vec<Op> = best.0[..start]
                .iter()
                .chain(&best.0[end..])
                .cloned()
                .collect();
            runs += 1;
            match Harness::<C, M>::run(&candidate) {
                Err(g) if same_failure(&best.1, &g) => {
                    best = (candidate, g);
                    reduced = true;
                }
                _ => start = end,
            }
        }
        if reduced {
            blocks = blocks.saturating_sub(1).max(2);
        } else if size == 1 {
            break;
        } else {
            blocks = (blocks * 2).min(best.0.len());
        }
    }
    best
}

/// The last path segment of every path in a type name (`a::b::C<d::E>` becomes `C<E>`): how
/// the types read where they are imported.
pub fn short_type_name(full: &str) -> String {
    let mut out = String::new();
    type_paths(full, |path, sep| {
        out.push_str(path.rsplit("::").next().unwrap_or(""));
        out.extend(sep);
    });
    out
}

/// Calls `f` for every path in type name `full`, with the character that follows it.
fn type_paths(full: &str, mut f: impl FnMut(&str, Option<char>)) {
    let mut word = String::new();
    for ch in full.chars() {
        if ch.is_alphanumeric() || ch == '_' || ch == ':' {
            word.push(ch);
        } else {
            f(&word, Some(ch));
            word.clear();
        }
    }
    f(&word, None);
}

/// The `use` items that bring alloclab's own types in `full` into scope, by their public
/// paths (the crates re-export them at the root; `configs` is a public module).
fn alloclab_imports(full: &str, imports: &mut Vec<String>) {
    type_paths(full, |path, _| {
        let mut parts = path.split("::");
        let (Some(krate), Some(last)) = (parts.next(), path.rsplit("::").next()) else {
            return;
        };
        let import = match krate {
            "alloclab_policies" if path.contains("::configs::") => {
                format!("alloclab_policies::configs::{last}")
            }
            "alloclab_policies" | "alloclab_verify" => format!("{krate}::{last}"),
            _ => return,
        };
        if !imports.contains(&import) {
            imports.push(import);
        }
    });
}

/// A counterexample as a `#[test]` to paste next to the policy (its types named as imported
/// there; alloclab's own are in `alloclab_policies` and `alloclab_verify`).
pub fn as_test<C: Config, M: ReuseModel>(ops: &[Op], finding: &Finding) -> String {
    let (config, model) = (core::any::type_name::<C>(), core::any::type_name::<M>());
    let mut imports = vec![
        "alloclab_verify::Harness".to_string(),
        "alloclab_verify::Op".into(),
    ];
    alloclab_imports(config, &mut imports);
    alloclab_imports(model, &mut imports);
    let mut t = String::from("#[test]\nfn counterexample() {\n");
    for i in &imports {
        t.push_str(&format!("    use {i};\n"));
    }
    t.push_str(&format!("    // Fails with: {finding}\n    let ops = [\n"));
    // Runs of one operation are written once with their count, so that a long run of equal
    // allocations stays one line of the test.
    let mut rest = ops;
    while let Some(op) = rest.first() {
        let n = rest.iter().take_while(|o| *o == op).count();
        t.push_str(&format!("        vec![Op::{op:?}; {n}],\n"));
        rest = &rest[n..];
    }
    t.push_str(&format!(
        "    ]\n    .concat();\n    Harness::<{}, {}>::run(&ops).unwrap();\n}}\n",
        short_type_name(config),
        short_type_name(model),
    ));
    t
}
