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

/// Runs `ops` on a fresh `Harness<C, M>`, then frees everything; adds what the run exercised
/// to `coverage` and returns its first finding. `seen`, if any, counts the operations reached
/// (proptest's state-machine shrinker drops the ones never reached).
///
/// Under `--cfg loom` the engine's atomics, locks and thread-locals are loom's, which work only
/// inside a loom model: the run is then a loom model of one thread (one execution), so the
/// same harness, reference model and checks apply as without loom.
pub fn run_case<C: Config, M: ReuseModel>(
    ops: &[Op],
    seen: Option<&std::sync::Arc<core::sync::atomic::AtomicUsize>>,
    coverage: &mut Coverage,
) -> Result<(), Finding> {
    // The operation the run had reached, for a panic's finding.
    let reached = std::sync::Arc::new(core::sync::atomic::AtomicUsize::new(0));
    let outcome = quietly(std::panic::AssertUnwindSafe(|| {
        run_case_unguarded::<C, M>(ops, seen, &reached, coverage)
    }));
    outcome.unwrap_or_else(|message| {
        let step = reached.load(core::sync::atomic::Ordering::SeqCst).max(1) - 1;
        Err(Finding::new(
            Check::Panic,
            step,
            format!("panicked: {}", message.replace('\n', "; ")),
        ))
    })
}

fn run_case_unguarded<C: Config, M: ReuseModel>(
    ops: &[Op],
    seen: Option<&std::sync::Arc<core::sync::atomic::AtomicUsize>>,
    reached: &std::sync::Arc<core::sync::atomic::AtomicUsize>,
    coverage: &mut Coverage,
) -> Result<(), Finding> {
    #[cfg(not(loom))]
    {
        Harness::<C, M>::new().run_covered(ops, || count_op(reached, seen), coverage)
    }
    #[cfg(loom)]
    {
        let ops: std::sync::Arc<[Op]> = ops.into();
        let seen = seen.cloned();
        let reached = reached.clone();
        let (result, covered) = crate::loom::sequential(move || {
            let mut covered = Coverage::default();
            let r = Harness::<C, M>::new()
                .check_every(LOOM_CHECK_EVERY)
                .run_covered(&ops, || count_op(&reached, seen.as_ref()), &mut covered);
            (r, covered)
        });
        coverage.add(&covered);
        result
    }
}

/// One operation reached: counted for the panic's finding (`reached`) and, if asked, for the
/// shrinker (`seen`).
fn count_op(
    reached: &std::sync::Arc<core::sync::atomic::AtomicUsize>,
    seen: Option<&std::sync::Arc<core::sync::atomic::AtomicUsize>>,
) {
    reached.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
    if let Some(seen) = seen {
        seen.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
    }
}

std::thread_local! {
    /// Set while [`quietly`] runs on this thread: the panic hook prints nothing then.
    static QUIET: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Runs `f`, catching a panic and returning its message. While it runs, a panic on this thread
/// prints nothing (no message, no backtrace even with `RUST_BACKTRACE` set): the search and the
/// minimizing replay a failing case hundreds of times, and the one line of the finding must not
/// drown under as many panic reports. Panics on other threads, and outside `quietly`, are
/// reported by the hook that was installed before (the default one, or the program's own).
pub(crate) fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let outcome = std::panic::catch_unwind(f);
    QUIET.with(|q| q.set(was));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(a panic without a message)".to_string())
    })
}

/// Under `--cfg loom`: the whole-heap checks (`check_live` over every live allocation, the
/// statistics) run every this many operations and at the end, instead of after every one. loom
/// counts each thread's operations in 16 bits, and past 65,535 in one execution it reports
/// false causality violations: with those checks after every step, a case of 400 operations
/// gets there (they cost one arena lock per live allocation). The per-operation checks
/// (addresses, regions, the reference model's pick, contents) still run on every operation.
pub const LOOM_CHECK_EVERY: usize = 25;

/// Under `--cfg loom`: the longest case a [`search`] generates, whatever it is asked for. With
/// whole-heap checks every [`LOOM_CHECK_EVERY`] operations, cases of about 1,500 operations
/// reach loom's 16-bit operation counter; 800 keeps a margin.
pub const LOOM_MAX_STEPS: usize = 800;

/// Runs `ops` on a fresh `Harness<C, M>` as [`run_case`] does (under loom, in a one-thread
/// model); its first finding. The kit's printed reproductions call this.
pub fn replay<C: Config, M: ReuseModel>(ops: &[Op]) -> Result<(), Finding> {
    run_case::<C, M>(ops, None, &mut Coverage::default())
}

/// Candidate sequences proptest's shrinker may run after the first failure of a [`search`].
pub const SHRINK_BUDGET: usize = 1024;

/// As [`find_counterexample`], also returning the coverage the cases reached. A failure is
/// shrunk by proptest (within [`SHRINK_BUDGET`] runs), then [`minimize`]d.
///
/// Under `--cfg loom` each case is a one-thread loom model ([`run_case`]), and cases are at most
/// [`LOOM_MAX_STEPS`] long.
pub fn search<C: Config, M: ReuseModel>(cases: u32, max_steps: usize, seed: Option<u64>) -> Search {
    #[cfg(loom)]
    let max_steps = max_steps.min(LOOM_MAX_STEPS);
    let mut cfg = config(cases);
    // proptest prints "Aborting shrinking ..." on stderr, whatever its verbosity, when it stops
    // at its own limit: the budget is kept here instead (see the closure below), and proptest's
    // limit is never reached (`u32::MAX` itself means "4 per case" to proptest).
    cfg.max_shrink_iters = u32::MAX - 1;
    // The same notice follows proptest's time limit (`PROPTEST_MAX_SHRINK_TIME`): none here.
    cfg.max_shrink_time = 0;
    if let Some(s) = seed {
        cfg.rng_seed = proptest::test_runner::RngSeed::Fixed(s);
    }
    let coverage = core::cell::RefCell::new(Coverage::default());
    // The latest failing sequence and its finding: proptest shrinks a failure by trying
    // simpler candidates and keeping each that fails, so at the end this is the sequence it
    // reports (the same operations, and the finding they had when they ran).
    let last_failure = core::cell::RefCell::new(None::<(Vec<Op>, Finding)>);
    let shrink_runs = core::cell::Cell::new(0usize);
    let mut runner = TestRunner::new(cfg);
    // Cases of at least half the longest length: with the default 400 operations, every case
    // gets through the first growing phase (`ops::GROW`), most into the shrinking one.
    let strategy = OpsMachine::sequential_strategy((max_steps / 2).max(1)..max_steps.max(2));
    let result = runner.run(&strategy, |(_, ops, seen)| {
        if last_failure.borrow().is_some() {
            // Shrinking: past the budget every candidate counts as passing, so the shrinker
            // winds back to the last failing one and stops, silently.
            if shrink_runs.get() >= SHRINK_BUDGET {
                return Ok(());
            }
            shrink_runs.set(shrink_runs.get() + 1);
        }
        // Tell the shrinker how far the sequence got: it first drops what was never reached.
        run_case::<C, M>(&ops, seen.as_ref(), &mut coverage.borrow_mut()).map_err(|f| {
            let why = TestCaseError::fail(f.to_string());
            *last_failure.borrow_mut() = Some((ops, f));
            why
        })
    });
    let counterexample = match result {
        Ok(()) => None,
        Err(TestError::Fail(why, _)) => {
            let (ops, f) = last_failure
                .into_inner()
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
            match replay::<C, M>(&candidate) {
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

/// The name of the crate this process's tests belong to, from the test binary's name
/// (`kit-0123456789abcdef` for `tests/kit.rs`, `my_policy-...` for the library's unit tests):
/// a type defined there is `crate::...` in code pasted into it.
fn test_crate() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let stem = exe.file_stem()?.to_str()?;
    let (name, hash) = stem.rsplit_once('-')?;
    hash.chars()
        .all(|c| c.is_ascii_hexdigit())
        .then(|| name.replace('-', "_"))
}

/// Type name `full` (as `core::any::type_name` gives it) written with paths that resolve in a
/// test of the crate being tested: alloclab's own types through `alloclab_verify` (which every
/// crate running the kit depends on; the crates re-export their types at the root, `configs` is
/// a public module of the policies), the test crate's own types through `crate::`, every other
/// path as the compiler names it.
pub fn pastable_type_name(full: &str) -> String {
    pastable_in(full, test_crate().as_deref())
}

fn pastable_in(full: &str, this_crate: Option<&str>) -> String {
    let mut out = String::new();
    type_paths(full, |path, sep| {
        let last = path.rsplit("::").next().unwrap_or("");
        let krate = path.split("::").next().unwrap_or("");
        match krate {
            _ if !path.contains("::") => out.push_str(path),
            "alloclab_policies" if path.contains("::configs::") => {
                out.push_str("alloclab_verify::policies::configs::");
                out.push_str(last);
            }
            "alloclab_policies" => {
                out.push_str("alloclab_verify::policies::");
                out.push_str(last);
            }
            "alloclab_verify" => {
                out.push_str("alloclab_verify::");
                out.push_str(last);
            }
            k if Some(k) == this_crate => {
                out.push_str("crate");
                out.push_str(&path[k.len()..]);
            }
            _ => out.push_str(path),
        }
        out.extend(sep);
    });
    out
}

/// A counterexample as a `#[test]` to paste into a test file of the crate being tested (the
/// one that defines the policy or the model, or any that depends on them): every type is named
/// by [`pastable_type_name`], so the test compiles there as it is, and fails with `finding`.
pub fn as_test<C: Config, M: ReuseModel>(ops: &[Op], finding: &Finding) -> String {
    let (config, model) = (core::any::type_name::<C>(), core::any::type_name::<M>());
    let mut t = String::from("#[test]\nfn counterexample() {\n");
    t.push_str(&format!(
        "    // The config {config}\n    // and the model {model}, as the compiler names them.\n"
    ));
    t.push_str(&format!("    // Fails with: {finding}\n"));
    t.push_str("    use alloclab_verify::Op;\n");
    t.push_str(&format!(
        "    type Config = {};\n    type Model = {};\n    let ops = [\n",
        pastable_type_name(config),
        pastable_type_name(model),
    ));
    // Runs of one operation are written once with their count, so that a long run of equal
    // allocations stays one line of the test.
    let mut rest = ops;
    while let Some(op) = rest.first() {
        let n = rest.iter().take_while(|o| *o == op).count();
        t.push_str(&format!("        vec![Op::{op:?}; {n}],\n"));
        rest = &rest[n..];
    }
    // `replay` runs in a loom model of one thread under `--cfg loom`: the test runs in both.
    t.push_str(
        "    ]\n    .concat();\n    alloclab_verify::machine::replay::<Config, Model>(&ops).unwrap();\n}\n",
    );
    t
}

#[cfg(test)]
mod tests {
    use super::{config, pastable_in};

    /// Kills cargo-mutants' `replace config -> ProptestConfig with Default::default()`
    /// (`verify/src/machine.rs`, survivor of the campaign's shard 1): with proptest's defaults
    /// every search would run 256 cases whatever `PROPTEST_CASES` or the kit asked for (the
    /// suite's time budget), and write regression files from library code.
    #[test]
    fn config_runs_the_cases_asked_for_and_persists_nothing() {
        for cases in [1, 7, 24] {
            let c = config(cases);
            assert_eq!(c.cases, cases);
            assert!(c.failure_persistence.is_none());
        }
    }

    #[test]
    fn pastable_names_reach_alloclab_through_verify_and_the_test_crate_through_crate() {
        let full = "alloclab_policies::configs::Using<kit::inner::Twin<true>, \
                    alloclab_policies::arena::thread_local::ThreadLocal<496>, \
                    alloclab_policies::front::ThreadCache>";
        assert_eq!(
            pastable_in(full, Some("kit")),
            "alloclab_verify::policies::configs::Using<crate::inner::Twin<true>, \
             alloclab_verify::policies::ThreadLocal<496>, alloclab_verify::policies::ThreadCache>"
        );
        assert_eq!(
            pastable_in("alloclab_verify::reuse_model::LifoModel", Some("kit")),
            "alloclab_verify::LifoModel"
        );
        // Another crate's paths stay as the compiler names them.
        assert_eq!(
            pastable_in("my_policy::Fullest<my_policy::Order>", Some("kit")),
            "my_policy::Fullest<my_policy::Order>"
        );
    }
}
