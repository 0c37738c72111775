#![doc = include_str!("../README.md")]
#![deny(unsafe_op_in_unsafe_fn)]

pub use alloclab_core::*;
pub use alloclab_policies as policies;
pub use alloclab_policies::{configs, for_each_config};

/// The measurement engine of `compare` (`alloclab-measure`).
#[cfg(feature = "lab")]
pub use alloclab_measure as measure;
/// The studies of `papers/` (`alloclab-papers`).
#[cfg(feature = "lab")]
pub use alloclab_papers as papers;
#[cfg(feature = "lab")]
pub use alloclab_traces::{generate, replay, rng, subject, trace};

#[cfg(feature = "lab")]
pub mod cli;

/// The examples of the user guide (`docs/USING.md`), compiled and run as doc tests so that the
/// guide cannot fall behind the API.
#[cfg(all(doctest, feature = "lab"))]
#[doc = include_str!("../docs/USING.md")]
pub struct UsingDoctests;
