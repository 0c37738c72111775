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
//! Under `--cfg loom` the same calls run the loom model of cross-thread frees instead (the
//! other checks need real threads and many steps, which loom cannot explore).

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
            // Under loom no state machine runs: there is nothing to count.
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

/// The state machine for config `C`: a proptest search from each regression seed, then from
/// a random one, whose minimized counterexample, if any, becomes the finding's detail (with
/// the `#[test]` that replays it).
#[cfg(not(loom))]
fn state_machine<C: alloclab_core::Config, M: ReuseModel>(
    s: &mut Summary,
    what: &str,
) -> Result<(), Finding> {
    use crate::machine::{
        as_test, cases, search, steps, DEFAULT_CASES, DEFAULT_STEPS, REGRESSION_SEEDS,
    };
    let (n, len) = (cases(DEFAULT_CASES), steps(DEFAULT_STEPS));
    let seeds = REGRESSION_SEEDS.map(Some).into_iter().chain([None]);
    let runs = REGRESSION_SEEDS.len() + 1;
    for seed in seeds {
        let found = search::<C, M>(n, len, seed);
        s.coverage.add(&found.coverage);
        if let Some((ops, mut f)) = found.counterexample {
            f.detail = format!(
                "{} [{what}; minimized to {} operations]\nreplay it with:\n{}",
                f.detail,
                ops.len(),
                as_test::<C, M>(&ops, &f)
            );
            return Err(f);
        }
    }
    s.passed.push(format!(
        "state machine, {what}: {runs} x {n} cases of up to {len} operations"
    ));
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
    #[cfg(not(loom))]
    {
        state_machine::<Using<R, Single>, M>(&mut s, "one arena")?;
        state_machine::<Using<R, SpreadArenas>, M>(&mut s, "three arenas (by request size)")?;
        require_coverage(&s)?;
        s.passed.push("coverage: every dimension exercised".into());
        state_machine::<Using<R, ThreadLocal, ThreadCache>, M>(
            &mut s,
            "thread arenas, thread cache",
        )?;
        crate::threads::smoke::<Using<R, Single>>(4, 4000, 0x5eed)?;
        s.passed
            .push("4 threads, one shared arena, cross-thread frees".into());
        crate::threads::smoke::<Using<R, ThreadLocal>>(4, 4000, 0x5eed)?;
        s.passed
            .push("4 threads, thread arenas, cross-thread frees".into());
        crate::threads::smoke::<Using<R, ThreadLocal, ThreadCache>>(4, 4000, 0x5eed)?;
        s.passed
            .push("4 threads, thread arenas, thread cache, cross-thread frees".into());
    }
    #[cfg(loom)]
    {
        let _ = core::marker::PhantomData::<(M, ThreadLocal, SpreadArenas)>;
        let _ = require_coverage;
        crate::loom::cross_thread_model::<Using<R, Single>>();
        s.passed
            .push("loom: cross-thread free against allocation, one arena".into());
        crate::loom::cross_thread_model::<Using<R, Single, ThreadCache>>();
        s.passed
            .push("loom: cross-thread free into a thread cache, one arena".into());
    }
    Ok(s)
}

/// The kit on `A`, returning the first finding instead of panicking.
pub fn check_arena_choice<A: ArenaChoice>() -> Result<Summary, Finding> {
    let mut s = Summary {
        model: Some(crate::machine::short_type_name(core::any::type_name::<
            LifoModel,
        >())),
        ..Summary::default()
    };
    #[cfg(not(loom))]
    {
        state_machine::<Using<Lifo, A>, LifoModel>(&mut s, "LIFO run reuse")?;
        crate::threads::smoke::<Using<Lifo, A>>(4, 4000, 0x5eed)?;
        s.passed.push("4 threads, cross-thread frees".into());
        crate::threads::smoke::<Using<Lifo, A, ThreadCache>>(4, 4000, 0x5eed)?;
        s.passed
            .push("4 threads, thread cache, cross-thread frees".into());
        crate::arenas::stable_across_sizes::<Using<Lifo, A>>()?;
        s.passed
            .push("a thread's arena is stable across request sizes".into());
        crate::arenas::thread_churn::<Using<Lifo, A>>(20, 4)?;
        s.passed
            .push("80 short-lived threads: arenas handed back and bounded".into());
    }
    #[cfg(loom)]
    {
        let _ = core::marker::PhantomData::<LifoModel>;
        crate::loom::cross_thread_model::<Using<Lifo, A>>();
        s.passed
            .push("loom: cross-thread free against allocation".into());
    }
    Ok(s)
}
