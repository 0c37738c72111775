//! # alloclab-core: the allocator engine
//!
//! A real allocator in the shape of mozjemalloc, whose contested decisions are traits. Memory
//! comes from the OS (`mmap`, `madvise`, `munmap`); the engine never allocates through
//! another allocator, nor through itself.
//!
//! ## Layers
//!
//! Each layer depends only on the ones above it. One concern per file.
//!
//! | layer | file | owns |
//! |---|---|---|
//! | shim | `sync.rs` | atomics, cells, thread-locals, globals (std, loom or shuttle) |
//! | platform | `os.rs` | mmap/munmap/madvise/mremap, futex, monotonic clock, stderr, CPU count |
//! | | `report.rs` | messages and fatal errors without allocating |
//! | | `safety.rs` | the debug options: compiled-in capabilities, run-time choices, profiles |
//! | | `checks.rs` | fills, fill checks and canaries over memory, and their reports |
//! | | `lock.rs` | `RawLock`, a futex lock with explicit lock/unlock (fork-friendly); `CountedLock`, one that counts acquisitions, contention and wait (the arenas') |
//! | geometry | `size_class.rs` | size classes, run geometry, `classify` |
//! | metadata | `page_map.rs` | address → chunk or huge record, O(1), without touching memory |
//! | | `base.rs` | the heap's own metadata allocator |
//! | | `chunk.rs` | 1 MiB chunks and their per-page entries |
//! | | `run.rs` | run headers, bitmaps, `RunRef` (what policies see) |
//! | policy interface | `policy.rs` | `RunReuse`, `ArenaChoice`, `Config`, `Options` |
//! | | `purge.rs` | `PurgePolicy` (when dirty pages and cached huge mappings go back), `Purge` |
//! | | `thread.rs` | thread bindings, thread exit, arena pool (`ArenaCtx`) |
//! | | `fork.rs` | `fork()` safety for every heap in the process (`pthread_atfork`) |
//! | engine | `arena.rs` | bins, free page runs, purging, small and large paths |
//! | | `quarantine.rs` | an arena's FIFO of freed allocations held back |
//! | | `guard.rs` | guard pages after large allocations; where a large allocation starts |
//! | | `hardening.rs` | the debug options' hooks in the arena's paths |
//! | | `zero_size.rs` | `malloc(0)` into an inaccessible region |
//! | | `sampled.rs` | sampled guarded allocations and their fault reports |
//! | | `static_key.rs` | the sampling decision's static key: a branch patched in the code (`SamplePath::StaticKey`) |
//! | | `slot_ring.rs` | the sampled pool's free slots (a locked FIFO, checked by loom) |
//! | | `huge.rs` | huge mappings and the cache of freed ones |
//! | | `heap.rs` | `Heap<C>`: init, dispatch, free, realloc, stats, invariants |
//! | | `heap/tcache.rs` | the per-thread cache in front of the arenas (`FrontEnd::CACHE`) |
//! | results | `stats.rs`, `invariants.rs`, `error.rs` | what the heap reports |
//!
//! This crate knows no concrete policy: those live in `alloclab-policies`.
//!
//! ## Rules the code keeps
//!
//! - Nothing allocates on any path: metadata comes from `Base` (mmap), messages go to fd 2.
//! - Fresh pages are known to be zero and are never touched to prove it.
//! - Every `unsafe` block says why it is sound; `unsafe_op_in_unsafe_fn` is denied.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod sync;

pub mod lock;
pub mod os;
pub mod report;
pub mod safety;

mod checks;
pub mod size_class;

mod base;
mod chunk;
mod page_map;
pub mod run;

pub mod fork;
pub mod policy;
pub mod purge;
mod thread;

mod arena;
mod fault;
mod guard;
mod hardening;
mod heap;
mod huge;
mod quarantine;
mod sampled;
pub mod slot_ring;
pub mod static_key;
mod zero_size;

mod error;
pub mod invariants;
pub mod stats;

#[cfg(alloclab_seeded)]
pub mod seeded;

#[cfg(feature = "verification")]
pub use arena::set_purge_hook;
pub use arena::Arena;
pub use error::FreeError;
pub use heap::Heap;
pub use invariants::{Violation, ViolationKind};
pub use lock::LockStats;
pub use os::Syscalls;
pub use policy::{
    ArenaChoice, ArenaCtx, Config, FrontEnd, Options, Removal, RunReuse, TcacheCheck,
};
pub use purge::{Decay, Purge, PurgePolicy, Threshold};
pub use run::{LinkPlace, RunRef};
pub use safety::{DebugCaps, Poison, Safety, SamplePath, ZeroCheck};
pub use stats::{ArenaStats, BinStats, Stats};
#[cfg(loom)]
pub use thread::loom_thread_exit;
pub use thread::MAX_ARENAS;
