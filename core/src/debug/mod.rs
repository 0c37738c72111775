//! The debug wing's mechanisms: what the back end and the heap call when a debug option
//! (`policy::safety`) is on. Each file is one check and reports its own findings; none of
//! them decides when it runs, which is the caller's `Safety`.
//!
//! | file | owns |
//! |---|---|
//! | `checks.rs` | fills, fill checks and canaries over memory, and their reports |
//! | `quarantine.rs` | an arena's FIFO of freed allocations held back |
//! | `guard.rs` | guard pages after large allocations; where a large allocation starts |
//! | `zero_size.rs` | `malloc(0)` into an inaccessible region |
//! | `sampled.rs` | sampled guarded allocations and their fault reports |
//! | `static_key.rs` | the sampling decision's static key: a branch patched in the code |
//! | `slot_ring.rs` | the sampled pool's free slots (a locked FIFO, checked by loom) |
//!
//! It may use `platform/`, `meta/` and `policy/`. The arena's hooks into these checks are
//! `back/hardening.rs`; the heap's checked paths wrap the back end in `heap/`.

pub mod checks;
pub mod guard;
pub mod quarantine;
pub mod sampled;
pub mod slot_ring;
pub mod static_key;
pub mod zero_size;
