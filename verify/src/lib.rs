//! # alloclab-verify: the verification suite
//!
//! What "verified" means for alloclab (VERIFY.md at the repository root), as code a policy
//! author can call (docs/WRITING_A_POLICY.md walks through it). One concern per file:
//!
//! | file | owns |
//! |---|---|
//! | `coverage.rs` | `Coverage`: which protocol situations the generated operations reached |
//! | `finding.rs` | `Finding`, `Check`: what a check found and which check found it |
//! | `ops.rs` | heap operations as data, and their proptest strategies |
//! | `reuse_model.rs` | executable reference models of the run-reuse policies |
//! | `harness.rs` | `Harness<C, M>`: a real heap next to a model of live allocations and runs |
//! | `fuzz.rs` | the body of a fuzz target for any config: `fuzz::heap_ops::<C>(data)` |
//! | `machine.rs` | the proptest state machine and counterexample search |
//! | `spread.rs` | `SpreadArenas`: several arenas from one thread, for the state machine |
//! | `rng.rs` | the walks' per-thread generator (a seed replays every thread's choices) |
//! | `threads.rs` | multi-threaded smoke with cross-thread frees |
//! | `arenas.rs` | arena-choice properties: stability across sizes, thread churn |
//! | `loom.rs` | loom helpers and the kit's loom model (`--cfg loom` only) |
//! | `shuttle.rs` | whole-heap random walks of 8+ threads under shuttle's schedulers (`--cfg shuttle` only) |
//! | `conformance.rs` | the one-call kit: `verify_run_reuse`, `verify_arena_choice` |
//!
//! The tests in `tests/` use these: `model_based.rs` (every named config), `quickcheck_*.rs`
//! (size classes, run bitmap, page map), `conformance.rs` (the kit on every built-in policy),
//! `seeded_*.rs` (seeded bugs and the check that catches each), `regressions.rs` (bugs the
//! suite found, replayed), `loom_*.rs` (loom models, grouped by the structure they model), `shuttle_*.rs` (shuttle
//! random walks). VERIFY.md at the repository root says what each layer checks, what it
//! cannot, and how to run a longer campaign.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod coverage;
pub mod finding;
pub mod ops;
pub mod reuse_model;
mod rng;

pub mod fuzz;
pub mod harness;
pub mod machine;

pub mod arenas;
pub mod spread;
pub mod threads;

#[cfg(loom)]
pub mod loom;

#[cfg(shuttle)]
pub mod shuttle;

pub mod conformance;

pub use conformance::{
    check_arena_choice, check_run_reuse, verify_arena_choice, verify_run_reuse,
    verify_run_reuse_against, Summary,
};
pub use coverage::Coverage;
pub use finding::{Check, Finding};
pub use harness::Harness;
pub use ops::Op;
pub use reuse_model::{
    AddrOrderedModel, CurrentRunModel, LifoModel, Modeled, MrfModel, RecencyModel, ReuseModel,
    Runs, Unmodeled,
};
pub use spread::SpreadArenas;

/// alloclab's built-in policies and configs, as the kit's printed reproductions name them
/// (`alloclab_verify::policies::configs::Using`, `alloclab_verify::policies::Single`): a crate
/// that runs the kit depends on this one, so they compile there whatever else it depends on.
pub use alloclab_policies as policies;
