//! # Measurement: subjects, workloads, statistics, reports
//!
//! The crate above the engine, the policies and the traces (`alloclab-traces`), below the
//! studies (`alloclab-papers`) and the command line (the `alloclab` crate), of which it knows
//! nothing. It owns:
//!
//! - `subjects`: the catalogue of allocators under test (alloclab configs and the peers),
//!   each a [`alloclab_traces::subject::Subject`] made fresh in the measuring process;
//! - `peers`: glibc, jemalloc, mimalloc, snmalloc and rpmalloc through their own prefixed
//!   entry points (never as the global allocator);
//! - `workloads`: fixed amounts of allocation work, each checking its own results;
//! - `schema`: the versioned record of every measurement (`results.json`);
//! - `stats`: medians, bootstrap intervals, rank tests, multiple-comparison correction,
//!   minimum detectable effects, pilot advice;
//! - `analysis`: per workload, thread count and metric, every subject against the baseline;
//! - `grid`: the one grid runner: shuffled rounds, shards, journal, progress and failures,
//!   for both kinds of run below;
//! - `runner`: the built-in workloads' grid, one measuring child process per measurement;
//! - `programs`: installed programs under `LD_PRELOAD` (`compare --programs`) as a grid;
//! - `disturbance`: what other processes took of the machine during each measurement;
//! - `progress`: a bar on a terminal, one line per finished measurement otherwise;
//! - `journal`, `resume`: each measurement on disk as it finishes, and a killed run continued;
//! - `campaign`: what makes runs parts of one grid (plan and build, field by field), and the
//!   seed shards share;
//! - `report`: `report.md`, `results.csv`, SVG charts and LaTeX tables from `results.json`;
//! - `merge`: shards of one grid combined into the unsharded result;
//! - `durable`: files replaced whole by rename, directory entries synced;
//! - `memory`: the resident size sampled over a run (memory over time);
//! - `timed`: the probe in process (time inside the allocator per thread, `alloclab-probe`).

#![deny(unsafe_op_in_unsafe_fn)]

pub mod analysis;
pub mod campaign;
pub mod child;
pub mod disturbance;
pub mod durable;
pub mod env;
pub mod fnv;
pub mod grid;
pub mod journal;
pub mod live;
pub mod memory;
pub mod merge;
pub mod peers;
pub mod pilot;
pub mod programs;
pub mod progress;
pub mod report;
pub mod resume;
pub mod runner;
pub mod sampler;
pub mod schema;
pub mod stats;
pub mod subjects;
#[cfg(test)]
mod test_fixture;
pub mod timed;
pub mod workloads;

/// Every subject this build knows: the alloclab named configs, then the peers. (Here rather
/// than in `subjects`, which `peers` builds on, so that neither file imports the other.)
pub fn builtin_subjects() -> Vec<subjects::SubjectEntry> {
    let mut v = subjects::named_configs();
    v.extend(peers::entries());
    v
}
