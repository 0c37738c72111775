//! The conformance kit under loom: each built-in run-reuse and arena-choice policy in the
//! cross-thread free model (`alloclab_verify::loom::cross_thread_model`).
#![cfg(loom)]

use alloclab_policies::{
    AddrOrdered, CurrentRun, Hashed, Lifo, Mrf, PerCpu, RoundRobin, Single, ThreadLocal,
};
use alloclab_verify::{verify_arena_choice, verify_run_reuse};

#[test]
fn run_reuse_policies() {
    verify_run_reuse::<Lifo>();
    verify_run_reuse::<Mrf>();
    verify_run_reuse::<AddrOrdered>();
    verify_run_reuse::<CurrentRun<Mrf>>();
}

#[test]
fn arena_choices() {
    verify_arena_choice::<Single>();
    verify_arena_choice::<ThreadLocal>();
    verify_arena_choice::<RoundRobin>();
    verify_arena_choice::<PerCpu>();
    verify_arena_choice::<Hashed>();
}
