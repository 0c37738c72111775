//! The policy under shuttle: 8 threads take random walks over one heap with it (allocate,
//! fill, hand blocks to other threads, free and reallocate them there), every live block and
//! the heap's invariants checked after every step, under shuttle's random and PCT schedulers.
//!
//! `RUSTFLAGS="--cfg shuttle" cargo test --release --no-default-features --test shuttle`
//! (a target directory of its own, as for loom). A failure prints how to replay it: the
//! scheduler seed, and the file holding the failing schedule (alloclab's VERIFY.md, "Shuttle").
#![cfg(shuttle)]

use alloclab::configs::Using;
use alloclab::policies::{Single, ThreadCache, ThreadLocal};
use policy_template::ChunkLifo;

/// Every thread in one arena: cross-thread frees into the runs other threads allocate from.
#[test]
fn random_walk_one_arena() {
    alloclab_verify::shuttle::random_walk::<Using<ChunkLifo, Single>>();
}

/// An arena per thread, with thread caches in front.
#[test]
fn random_walk_thread_arenas_with_caches() {
    alloclab_verify::shuttle::random_walk::<Using<ChunkLifo, ThreadLocal, ThreadCache>>();
}
