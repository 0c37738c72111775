//! The back end: arenas (bins of runs for small sizes, runs of pages for large ones), huge
//! mappings, and what they report. It serves a request of a size class, or takes back a
//! region, under its own locks; it knows no thread cache.
//!
//! | file | owns |
//! |---|---|
//! | `arena/` | an arena: its types and lock (`mod.rs`), pages and purging (`pages.rs`), the small and large paths, the debug options' hooks in them (`hardening.rs`), its invariant walk (`check.rs`) |
//! | `huge.rs` | huge mappings and the cache of freed ones |
//! | `stats.rs` | the counters a heap reports |
//! | `invariants.rs` | the structural checks and their `Violation`s |
//!
//! It may use `platform/`, `meta/`, `policy/` and `debug/`.

pub mod arena;
pub mod huge;
pub mod invariants;
pub mod stats;
