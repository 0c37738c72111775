//! # alloclab-core: the allocator engine
//!
//! A real allocator in the shape of mozjemalloc, whose contested decisions are traits. Memory
//! comes from the OS (`mmap`, `madvise`, `munmap`); the engine never allocates through
//! another allocator, nor through itself.
//!
//! ## Layers
//!
//! One folder per layer; a file uses only its own folder and the folders above it in this
//! table (each folder's `mod.rs` says what it owns). One concern per file.
//!
//! | layer | folder | owns |
//! |---|---|---|
//! | platform | `platform/` | every system call, the clock, signals, stderr, locks, the sync shim (std, loom or shuttle) |
//! | metadata | `meta/` | size classes, page map, chunks, run headers, the metadata allocator, thread bindings |
//! | policy contract | `policy/` | `RunReuse`, `ArenaChoice`, `FrontEnd`, `Config`, `Options`, `PurgePolicy`, the debug options |
//! | debug wing | `debug/` | fills and canaries, quarantine, guard pages, sampled allocations, the static key |
//! | back end | `back/` | arenas (bins, runs, large), huge mappings, stats, invariants |
//! | front end | `front/` | the per-thread cache in front of the arenas (`FrontEnd::CACHE`), which sees the heap through `Back` |
//! | heap | `heap/` | `Heap<C>`: init, dispatch, free, realloc, stats, invariants; the `Back` its front end sees; `fork()` safety |
//!
//! docs/ARCHITECTURE.md draws the same layers.
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

mod back;
mod debug;
mod front;
mod heap;
mod meta;
mod platform;
pub mod policy;

// The module paths of earlier releases stay public: policy crates and the tools name them.
pub use back::{invariants, stats};
pub use debug::{slot_ring, static_key};
pub use heap::fork;
pub use meta::{run, size_class};
#[cfg(alloclab_seeded)]
pub use platform::seeded;
pub use platform::{lock, os, report, sync};
pub use policy::{purge, safety};

#[cfg(feature = "verification")]
pub use back::arena::set_purge_hook;
pub use back::arena::Arena;
pub use heap::{Heap, Split};
pub use invariants::{Violation, ViolationKind};
pub use lock::LockStats;
#[cfg(loom)]
pub use meta::thread::loom_thread_exit;
pub use meta::thread::MAX_ARENAS;
pub use os::Syscalls;
pub use platform::error::FreeError;
pub use policy::{
    ArenaChoice, ArenaCtx, Config, FrontEnd, Options, RemoteFree, Removal, RunReuse, TcacheCheck,
};
pub use purge::{Decay, Purge, PurgePolicy, Threshold};
pub use run::{LinkPlace, RunRef};
pub use safety::{DebugCaps, Poison, Safety, SamplePath, ZeroCheck};
pub use stats::{ArenaStats, BinStats, Stats};
