//! Shuttle random walks (build with `--cfg shuttle`; `scripts/test.sh` does, in a target
//! directory of its own): 8 threads allocate, fill, hand over, free and reallocate blocks on
//! one heap, checking every live block and the heap's invariants after every step, under the
//! random scheduler and PCT, for every named config and for one shared arena.
//!
//! `RUSTFLAGS="--cfg shuttle" cargo test -p alloclab-verify --release --test shuttle_walk`
//! (VERIFY.md, "Shuttle": more executions, another seed, replaying a failure).
#![cfg(shuttle)]

use alloclab_policies::configs::{self, Using};
use alloclab_policies::{Lifo, Mailbox, Mrf, RoundRobin, Single, ThreadCache};
use alloclab_verify::shuttle::random_walk;

/// Every named config, as `for_each_config!` lists them (a config added there is walked too).
#[test]
fn named_configs() {
    let walked = alloclab_policies::for_each_config!(walk());
    assert_eq!(walked, configs::NAMES);
}

fn walk<C: alloclab_core::Config>() -> &'static str {
    random_walk::<C>();
    C::NAME
}

/// Every thread in one arena: the most contention on one lock and one set of bins.
#[test]
fn one_shared_arena() {
    random_walk::<Using<Lifo, Single>>();
}

/// Shared arenas dealt round-robin, with thread caches in front: cross-thread frees of cached
/// regions into arenas other threads allocate from.
#[test]
fn round_robin_with_caches() {
    random_walk::<Using<Mrf, RoundRobin, ThreadCache>>();
}

/// The same with the `Mailbox` remote-free policy: every flush pushes onto, and every fill
/// takes from, mailboxes that several threads' caches share.
#[test]
fn round_robin_with_mailboxes() {
    random_walk::<Using<Mrf, RoundRobin, ThreadCache<{ 1024 * 1024 }, Mailbox>>>();
}
