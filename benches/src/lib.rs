//! # alloclab-bench: benchmarks
//!
//! Depends on the `alloclab` facade (engine, policies and the measurement layer's catalogue of
//! subjects). Owns the criterion micro benchmarks in `benches/`; process-level comparisons
//! with statistics are `alloclab compare`'s.
//!
//! Run: `cargo bench -p alloclab-bench --bench alloc_free`.
//!
//! Every benchmark drives allocators through `alloclab::subject::Subject`, the one interface
//! replay and `compare` use too, so the same set is compared the same way everywhere.

pub use alloclab::subject::Subject;

/// Every alloclab named config, then the peers (glibc, jemalloc, mimalloc, snmalloc,
/// rpmalloc), each made fresh.
pub fn subjects() -> Vec<Box<dyn Subject>> {
    alloclab::measure::builtin_subjects()
        .iter()
        .map(|e| (e.make)())
        .collect()
}
