//! The policy under loom: every interleaving of a cross-thread free against an allocation in
//! the same bin, with the engine's locks and atomics replaced by loom's.
//!
//! `RUSTFLAGS="--cfg loom" cargo test --release --no-default-features --test loom`
//! (a target directory of its own: the flag rebuilds everything; without the peers' C builds,
//! which loom does not need).
#![cfg(loom)]

use alloclab::configs::Using;
use alloclab::policies::Single;
use policy_template::ChunkLifo;

#[test]
fn cross_thread_free_against_allocation() {
    alloclab_verify::loom::cross_thread_model::<Using<ChunkLifo, Single>>();
}
