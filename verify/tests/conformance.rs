//! The conformance kit on every built-in policy: what a new policy's author gets from one call,
//! shown to pass on the policies alloclab ships (each run-reuse policy against its model).
#![cfg(not(loom))]

use alloclab_policies::{
    AddrOrdered, CurrentRun, Hashed, InChunkMap, Lifo, Mrf, MrfChunkMap, PerCpu, RoundRobin,
    Single, ThreadLocal,
};
use alloclab_verify::{
    verify_arena_choice, verify_run_reuse, verify_run_reuse_against, Modeled, Summary,
};

fn modeled<R: Modeled>() -> Summary {
    verify_run_reuse_against::<R, R::Model>()
}

#[test]
fn lifo() {
    let s = modeled::<Lifo>();
    // The summary a policy's author reads (`cargo test --test conformance -- --nocapture`).
    eprintln!("{s}");
    assert_eq!(s.passed.len(), 7, "{s}");
    assert!(s.model.is_some(), "{s}");
    assert!(s.coverage.gaps().is_empty(), "{s}");
}

#[test]
fn mrf() {
    modeled::<Mrf>();
}

/// Its links live in the chunk map: the kit's state machine, invariants and threads run on
/// handles into the page entries instead of the run headers.
#[test]
fn mrf_chunk_map() {
    modeled::<MrfChunkMap>();
    modeled::<CurrentRun<MrfChunkMap>>();
    // The wrapper is generic: another list policy so placed keeps its own order.
    modeled::<InChunkMap<Lifo>>();
}

#[test]
fn addr_ordered() {
    modeled::<AddrOrdered>();
}

#[test]
fn current_run_wrappers() {
    let s = modeled::<CurrentRun<AddrOrdered>>();
    // The wrapper takes runs from the policy it wraps: the model counts each `Taken`.
    assert!(s.coverage.removed_taken > 0, "{s}");
    modeled::<CurrentRun<Mrf>>();
    // Without a model only the policy-independent checks run; they pass as well.
    let s = verify_run_reuse::<CurrentRun<Lifo>>();
    assert!(s.model.is_none(), "{s}");
    assert!(s.to_string().contains("NOT checked"), "{s}");
}

/// `CurrentRun` wrapped in `CurrentRun`: the outer wrapper asks the inner one which run to
/// prefer, so the inner one must answer as the policy it wraps does (mutation testing found
/// `CurrentRun::prefer` answering a constant unnoticed: no built-in config nests wrappers).
/// The state machine against the nested model, which forwards `prefer` the same way.
#[test]
fn nested_current_run_forwards_preference() {
    use alloclab_policies::configs::Using;
    use alloclab_verify::{AddrOrderedModel, CurrentRunModel};
    alloclab_verify::machine::run_state_machine::<
        Using<CurrentRun<CurrentRun<AddrOrdered>>, Single>,
        CurrentRunModel<CurrentRunModel<AddrOrderedModel>>,
    >();
}

/// The thread-arenas seed's bug, kept as a policy for the study, is caught by the kit: a large
/// request must not move a thread's small requests to another arena.
#[test]
fn the_arena_reset_bug_is_a_finding() {
    let finding = alloclab_verify::check_arena_choice::<alloclab_policies::LargeResetsShared>()
        .expect_err("the kit catches the thread-arenas bug");
    assert!(
        finding
            .to_string()
            .contains("moved the thread's small requests"),
        "{finding}"
    );
}

#[test]
fn arena_choices() {
    verify_arena_choice::<Single>();
    verify_arena_choice::<ThreadLocal>();
    verify_arena_choice::<ThreadLocal<496>>();
    verify_arena_choice::<RoundRobin>();
    verify_arena_choice::<PerCpu>();
    let s = verify_arena_choice::<Hashed>();
    assert_eq!(s.passed.len(), 5, "{s}");
    // Its state machine checks every pick against LIFO's model, and the summary says so
    // (mutation testing found the summary could say "none" unseen).
    assert!(s.model.is_some(), "{s}");
    assert!(!s.to_string().contains("NOT checked"), "{s}");
}
