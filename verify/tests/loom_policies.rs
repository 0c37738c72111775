//! The conformance kit under loom, on the built-in policies: each run-reuse policy against its
//! reference model (every state-machine case a one-thread loom model, the coverage requirement,
//! then the cross-thread models), and each arena choice, whose kit runs every check it can
//! under loom and then refuses, naming the one that needs a build without `--cfg loom`.
#![cfg(loom)]

use alloclab_policies::{
    AddrOrdered, CurrentRun, Hashed, LargeResetsShared, Lifo, Mrf, MrfChunkMap, PerCpu, RoundRobin,
    Single, ThreadLocal,
};
use alloclab_verify::conformance::NOT_UNDER_LOOM;
use alloclab_verify::{check_arena_choice, verify_run_reuse_against, Modeled, Summary};

fn modeled<R: Modeled>() -> Summary {
    verify_run_reuse_against::<R, R::Model>()
}

#[test]
fn run_reuse_policies() {
    let s = modeled::<Lifo>();
    eprintln!("{s}");
    // Three state machines, the coverage requirement, four cross-thread models.
    assert_eq!(s.passed.len(), 8, "{s}");
    assert!(s.coverage.gaps().is_empty(), "{s}");
    assert!(s.coverage.model_checked_picks > 0, "{s}");
    modeled::<Mrf>();
    modeled::<AddrOrdered>();
    modeled::<CurrentRun<Mrf>>();
    modeled::<CurrentRun<MrfChunkMap>>();
}

#[test]
fn arena_choices_run_under_loom_then_refuse_what_needs_more_threads() {
    fn refused<A: alloclab_core::ArenaChoice>() {
        let f = check_arena_choice::<A>().expect_err("the kit refuses under loom");
        let text = f.to_string();
        assert!(text.contains(NOT_UNDER_LOOM), "{}: {text}", A::NAME);
        assert!(text.contains("needs a build without --cfg loom"), "{text}");
        // Everything else ran, as loom models, and passed.
        for ran in [
            "state machine, LIFO run reuse",
            "stable across request sizes",
            "handed back",
        ] {
            assert!(text.contains(ran), "{}: {ran} missing: {text}", A::NAME);
        }
    }
    refused::<Single>();
    refused::<ThreadLocal>();
    refused::<RoundRobin>();
    refused::<PerCpu>();
    refused::<Hashed>();
}

/// The thread-arenas seed's bug is a finding under loom too, before the refusal.
#[test]
fn the_arena_reset_bug_is_a_finding_under_loom() {
    let f = check_arena_choice::<LargeResetsShared>().expect_err("a finding");
    assert!(
        f.to_string().contains("moved the thread's small requests"),
        "{f}"
    );
}
