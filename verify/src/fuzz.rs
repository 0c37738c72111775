//! The body of a fuzz target, for any config: a user's `fuzz_targets/heap_ops.rs` is
//!
//! ```ignore
//! #![no_main]
//! libfuzzer_sys::fuzz_target!(|data: &[u8]| {
//!     alloclab_verify::fuzz::heap_ops::<my_crate::MyConfig>(data)
//! });
//! ```
//!
//! The input becomes up to [`MAX_OPS`] operations (`Op`'s `arbitrary` decoding, weighted like
//! the proptest strategies), run by a [`Harness`]: live allocations, runs and contents on every
//! operation, the whole-heap checks every [`CHECK_EVERY`] operations and at the end. A finding
//! panics (the fuzzer's crash) with the operations that led to it.

use crate::harness::Harness;
use crate::ops::Op;
use crate::reuse_model::{ReuseModel, Unmodeled};
use alloclab_core::Config;
use arbitrary::{Arbitrary, Unstructured};

/// Longest sequence one input runs.
pub const MAX_OPS: usize = 256;
/// Whole-heap checks (`check_invariants`, `check_live`, statistics) run every this many
/// operations and at the end: the fuzzer's trade of detection latency for throughput.
pub const CHECK_EVERY: usize = 16;

/// The operations fuzz input `data` stands for (at most [`MAX_OPS`]; decoding stops at the
/// first byte string that is too short for an operation).
pub fn ops_from_bytes(data: &[u8]) -> Vec<Op> {
    let mut u = Unstructured::new(data);
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    ops
}

/// Runs fuzz input `data` on a fresh heap of config `C`, with every policy-independent check;
/// panics with the finding and the operations. Use [`heap_ops_against`] to also check each pick
/// against a reference model.
pub fn heap_ops<C: Config>(data: &[u8]) {
    heap_ops_against::<C, Unmodeled>(data)
}

/// As [`heap_ops`], with reference model `M` predicting which run serves each small allocation.
pub fn heap_ops_against<C: Config, M: ReuseModel>(data: &[u8]) {
    let ops = ops_from_bytes(data);
    let h = Harness::<C, M>::new().check_every(CHECK_EVERY);
    if let Err(f) = h.run_with(&ops, || {}) {
        panic!("{}: {f}\noperations: {ops:?}", C::NAME);
    }
}
