//! The conformance kit: one call runs the whole suite on a new policy.
//!
//! ```no_run
//! // A run-reuse policy (optionally with a reference model that predicts its picks):
//! alloclab_verify::verify_run_reuse::<alloclab_policies::Lifo>();
//! alloclab_verify::verify_run_reuse_against::<alloclab_policies::Mrf, alloclab_verify::MrfModel>();
//! // An arena-choice policy:
//! alloclab_verify::verify_arena_choice::<alloclab_policies::RoundRobin>();
//! ```
//!
//! What runs, in an ordinary build (`cargo test`):
//!
//! | check | run-reuse policy `R` | arena choice `A` |
//! |---|---|---|
//! | state machine (proptest), `check_invariants` after every step | `R` with one arena and with three (`SpreadArenas`), against model `M` | `A` with LIFO, against the LIFO model |
//! | coverage: every dimension of the protocol exercised (`Coverage`), else a finding | `R` | |
//! | state machine with a thread cache in front | `R` with thread arenas (placement unmodeled) | |
//! | multi-threaded smoke with cross-thread frees | `R`, one shared arena and thread arenas, and thread arenas with a thread cache | `A`, without and with a thread cache |
//! | stable across sizes (the thread-arenas seed) | | `A` |
//! | arenas handed back at thread exit, bounded under churn | | `A` |
//!
//! Under `--cfg loom` the engine's atomics, locks and thread-locals are loom's, so everything
//! runs inside loom models:
//!
//! - the state machines, against the same model `M`, with each case (and each shrinking and
//!   minimizing run) a loom model of one thread, one execution; 8 cases per search instead of
//!   24 ([`LOOM_CASES`]), whole-heap checks every 25 operations instead of after each
//!   (`machine::LOOM_CHECK_EVERY`; the pick, address and contents checks still run on every
//!   operation); then the same coverage requirement;
//! - instead of the multi-threaded smoke, the cross-thread model (`loom::cross_thread_check`)
//!   for each of the smoke's configs, in every interleaving up to the preemption bound;
//! - for `A`, stable across sizes and handed back at thread exit as loom models. The bound on
//!   arenas under churn needs more threads than loom runs ([`NOT_UNDER_LOOM`]): once everything
//!   else passed, `check_arena_choice` returns a finding that names it and says it needs a
//!   build without `--cfg loom`, and `verify_arena_choice` panics with it.
//!
//! A finding prints as one line (the policy, the step, the check and what it saw), then, for
//! the state machines, the minimized operations as a `#[test]` that names the types as a test of
//! the user's crate can (`machine::as_test`).

use crate::coverage::Coverage;
use crate::finding::{Check, Finding};
use crate::reuse_model::{LifoModel, ReuseModel, Unmodeled};
use crate::spread::SpreadArenas;
use alloclab_core::{ArenaChoice, RunReuse};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadCache, ThreadLocal};

/// What the kit ran, one line per check, and what its state machines exercised.
#[derive(Debug, Default)]
pub struct Summary {
    /// A line per check that passed.
    pub passed: Vec<String>,
    /// What the state machines' generated operations reached, summed over every case.
    pub coverage: Coverage,
    /// The reference model each pick was checked against (`None`: no model, so which run
    /// serves was not checked).
    pub model: Option<String>,
}

impl core::fmt::Display for Summary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for l in &self.passed {
            writeln!(f, "ok: {l}")?;
        }
        match &self.model {
            Some(m) => writeln!(
                f,
                "reference model: {m} (predicts the run of every small allocation)"
            )?,
            None => writeln!(
                f,
                "reference model: none (which run serves each allocation was NOT checked)"
            )?,
        }
        if self.coverage == Coverage::default() {
            // A summary built before any state machine ran (the kit always runs them).
            return writeln!(f, "coverage: no state machine ran");
        }
        writeln!(f, "coverage (state machines, all cases):")?;
        writeln!(f, "{}", self.coverage)
    }
}

/// Runs the kit on run-reuse policy `R` without a reference model (every policy-independent
/// check still runs); panics with the first finding.
pub fn verify_run_reuse<R: RunReuse>() -> Summary {
    verify_run_reuse_against::<R, Unmodeled>()
}

/// Runs the kit on run-reuse policy `R`, checking each pick against reference model `M`;
/// panics with the first finding.
pub fn verify_run_reuse_against<R: RunReuse, M: ReuseModel>() -> Summary {
    check_run_reuse::<R, M>().unwrap_or_else(|f| panic!("{}: {f}", name::<R>()))
}

/// Runs the kit on arena-choice policy `A`; panics with the first finding.
pub fn verify_arena_choice<A: ArenaChoice>() -> Summary {
    check_arena_choice::<A>().unwrap_or_else(|f| panic!("{}: {f}", A::NAME))
}

fn name<R: RunReuse>() -> String {
    let mut s = String::new();
    let _ = R::write_name(&mut s);
    s
}

/// Cases per state-machine search, and their longest length, when `PROPTEST_CASES` and
/// `ALLOCLAB_VERIFY_STEPS` are not set: `machine`'s defaults, or under `--cfg loom`, where every
/// case is a loom model of one thread (one execution), fewer.
#[cfg(not(loom))]
const KIT_RUNS: (u32, usize) = (crate::machine::DEFAULT_CASES, crate::machine::DEFAULT_STEPS);
#[cfg(loom)]
const KIT_RUNS: (u32, usize) = (LOOM_CASES, LOOM_STEPS);

/// Cases per state-machine search under `--cfg loom` (unless `PROPTEST_CASES` is set).
pub const LOOM_CASES: u32 = 8;
/// Longest case under `--cfg loom` (unless `ALLOCLAB_VERIFY_STEPS` is set).
pub const LOOM_STEPS: usize = 400;

/// The state machine for config `C`: a proptest search from each regression seed, then from
/// a random one, whose minimized counterexample, if any, becomes the finding's detail (with
/// the `#[test]` that replays it). Under `--cfg loom` each case runs as a loom model of one
/// thread (`machine::run_case`).
fn state_machine<C: alloclab_core::Config, M: ReuseModel>(
    s: &mut Summary,
    what: &str,
) -> Result<(), Finding> {
    use crate::machine::{as_test, cases, search, steps, REGRESSION_SEEDS};
    let (n, len) = (cases(KIT_RUNS.0), steps(KIT_RUNS.1));
    #[cfg(loom)]
    let len = len.min(crate::machine::LOOM_MAX_STEPS);
    let seeds = REGRESSION_SEEDS.map(Some).into_iter().chain([None]);
    let runs = REGRESSION_SEEDS.len() + 1;
    for seed in seeds {
        let found = search::<C, M>(n, len, seed);
        s.coverage.add(&found.coverage);
        if let Some((ops, mut f)) = found.counterexample {
            // One line first (the panic message starts with it), then the operations.
            f.detail = format!(
                "{} [state machine, {what}; minimized to {} operations]\n\
                 replay it with this test (it compiles in a test file of your crate):\n{}",
                f.detail.replace('\n', "; "),
                ops.len(),
                as_test::<C, M>(&ops, &f)
            );
            return Err(f);
        }
    }
    let under = if cfg!(loom) {
        ", each a one-thread loom model"
    } else {
        ""
    };
    s.passed.push(format!(
        "state machine, {what}: {runs} x {n} cases of up to {len} operations{under}"
    ));
    Ok(())
}

/// Threads freeing each other's blocks on a heap of config `C`: the 4-thread smoke
/// (`threads::smoke`), or under `--cfg loom` the cross-thread model in every interleaving
/// (`loom::cross_thread_check`), which checks the same things on a smaller case.
fn cross_thread<C: alloclab_core::Config>(s: &mut Summary, what: &str) -> Result<(), Finding> {
    #[cfg(not(loom))]
    {
        crate::threads::smoke::<C>(4, 4000, 0x5eed)?;
        s.passed
            .push(format!("4 threads, {what}, cross-thread frees"));
    }
    #[cfg(loom)]
    {
        let executions = crate::loom::cross_thread_check::<C>()?;
        s.passed.push(format!(
            "loom: cross-thread free against allocation, {what} ({executions} executions)"
        ));
    }
    Ok(())
}

/// Fails, naming every gap, if the state machines never exercised a dimension of the
/// protocol.
fn require_coverage(s: &Summary) -> Result<(), Finding> {
    let gaps = s.coverage.gaps();
    if gaps.is_empty() {
        return Ok(());
    }
    Err(Finding::new(
        Check::Coverage,
        0,
        format!(
            "the generated operations never exercised: {}; the kit cannot vouch for those \
             decisions (raise PROPTEST_CASES / ALLOCLAB_VERIFY_STEPS)\n{}",
            gaps.join("; "),
            s.coverage
        ),
    ))
}

/// The kit on `R` with model `M`, returning the first finding instead of panicking.
pub fn check_run_reuse<R: RunReuse, M: ReuseModel>() -> Result<Summary, Finding> {
    let mut s = Summary {
        model: M::PREDICTS.then(|| crate::machine::short_type_name(core::any::type_name::<M>())),
        ..Summary::default()
    };
    state_machine::<Using<R, Single>, M>(&mut s, "one arena")?;
    state_machine::<Using<R, SpreadArenas>, M>(&mut s, "three arenas (by request size)")?;
    require_coverage(&s)?;
    s.passed.push("coverage: every dimension exercised".into());
    state_machine::<Using<R, ThreadLocal, ThreadCache>, M>(&mut s, "thread arenas, thread cache")?;
    cross_thread::<Using<R, Single>>(&mut s, "one shared arena")?;
    cross_thread::<Using<R, ThreadLocal>>(&mut s, "thread arenas")?;
    cross_thread::<Using<R, ThreadLocal, ThreadCache>>(&mut s, "thread arenas, thread cache")?;
    #[cfg(loom)]
    cross_thread::<Using<R, Single, ThreadCache>>(&mut s, "one arena, thread cache")?;
    Ok(s)
}

/// What the kit cannot check under `--cfg loom`, which runs at most 4 threads in an execution.
pub const NOT_UNDER_LOOM: &str = "arenas stay bounded under churn (80 short-lived threads, 4 at a \
                                  time; 4 threads in all cannot tell a choice that makes an arena \
                                  per thread from one that uses a fixed set)";

/// The kit on `A`, returning the first finding instead of panicking.
///
/// Under `--cfg loom` every check runs, as a loom model, except the bound on arenas under
/// thread churn ([`NOT_UNDER_LOOM`]): once the others pass, the result is a finding that names
/// it and says it needs a build without `--cfg loom`.
pub fn check_arena_choice<A: ArenaChoice>() -> Result<Summary, Finding> {
    let mut s = Summary {
        model: Some(crate::machine::short_type_name(core::any::type_name::<
            LifoModel,
        >())),
        ..Summary::default()
    };
    state_machine::<Using<Lifo, A>, LifoModel>(&mut s, "LIFO run reuse")?;
    cross_thread::<Using<Lifo, A>>(&mut s, "LIFO run reuse")?;
    cross_thread::<Using<Lifo, A, ThreadCache>>(&mut s, "LIFO run reuse, thread cache")?;
    #[cfg(not(loom))]
    {
        crate::arenas::stable_across_sizes::<Using<Lifo, A>>()?;
        s.passed
            .push("a thread's arena is stable across request sizes".into());
        crate::arenas::thread_churn::<Using<Lifo, A>>(20, 4)?;
        s.passed
            .push("80 short-lived threads: arenas handed back and bounded".into());
        Ok(s)
    }
    #[cfg(loom)]
    {
        use crate::loom::{check_model, PREEMPTION_BOUND, PREEMPTION_BOUND_3_THREADS};
        let n = check_model(PREEMPTION_BOUND, || {
            crate::arenas::stable_across_sizes::<Using<Lifo, A>>()
        })?;
        s.passed.push(format!(
            "loom: a thread's arena is stable across request sizes ({n} executions)"
        ));
        let n = check_model(PREEMPTION_BOUND_3_THREADS, || {
            crate::arenas::thread_churn::<Using<Lifo, A>>(2, 2)
        })?;
        s.passed.push(format!(
            "loom: 4 short-lived threads, 2 at a time: arenas handed back ({n} executions)"
        ));
        Err(Finding::new(
            Check::ArenaChoice,
            0,
            format!(
                "not checked under --cfg loom: {NOT_UNDER_LOOM}. It needs a build without \
                 --cfg loom: run this test in plain `cargo test` (gate it with \
                 #[cfg(not(loom))] in the loom build). What ran under loom passed:\n{s}"
            ),
        ))
    }
}
