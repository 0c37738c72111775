//! # Allocation traces of real programs
//!
//! Below the measurement engine and the command line, above the engine and the policies:
//! - `trace`: reading logalloc logs (plain, gzip, zstd), munged or raw, into a compact
//!   in-memory trace, with the bundled traces of real programs (`traces/*.log.zst`);
//! - `replay`: playing a trace against a heap of any config, one OS thread per traced thread;
//! - `subject`: what replay and the measurements drive (a heap behind an object-safe trait);
//! - `generate`: synthetic traces of a chosen shape;
//! - `rng`: the seeded generator every random choice comes from.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod generate;
pub mod replay;
pub mod rng;
pub mod subject;
pub mod trace;
