#![doc = include_str!("../README.md")]
#![deny(unsafe_op_in_unsafe_fn)]

pub use alloclab_core::*;
pub use alloclab_policies as policies;
pub use alloclab_policies::{configs, for_each_config};

/// The measurement engine of `compare` (`alloclab-measure`).
pub use alloclab_measure as measure;
/// The studies of `papers/` (`alloclab-papers`).
pub use alloclab_papers as papers;
pub use alloclab_traces::{generate, replay, rng, subject, trace};

pub mod cli;
