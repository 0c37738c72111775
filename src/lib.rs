#![doc = include_str!("../README.md")]
#![deny(unsafe_op_in_unsafe_fn)]

pub use alloclab_core::*;
pub use alloclab_policies as policies;
pub use alloclab_policies::{configs, for_each_config};

pub mod cli;
pub mod generate;
pub mod measure;
pub mod papers;
pub mod replay;
pub mod rng;
pub mod subject;
pub mod trace;
