//! The conformance kit on the policy, against its reference model: every pick predicted, the
//! heap's invariants checked after every step, multi-threaded smoke with cross-thread frees.
//! (`tests/loom.rs` is the loom model.)
//!
//! `cargo test --release --test kit` (add `-- --nocapture` to see the coverage summary).
#![cfg(not(any(loom, shuttle)))]

use alloclab_verify::{ReuseModel, Runs};
use policy_template::{chunk_of, ChunkLifo};
use std::collections::BTreeMap;

/// The rule as plainly as it reads: the lowest chunk, then the most recently inserted run.
#[derive(Default, Debug)]
pub struct ChunkLifoModel {
    /// run -> the order it became known in.
    runs: BTreeMap<usize, u64>,
    next: u64,
}

impl ReuseModel for ChunkLifoModel {
    fn insert(&mut self, run: usize, _: &Runs<'_>) {
        self.next += 1;
        self.runs.insert(run, self.next);
    }
    fn pick(&mut self, _: &Runs<'_>) -> Option<usize> {
        self.runs
            .iter()
            .min_by_key(|&(&run, &order)| (chunk_of(run), std::cmp::Reverse(order)))
            .map(|(&run, _)| run)
    }
    fn remove(&mut self, run: usize) {
        self.runs.remove(&run);
    }
}

#[test]
fn chunk_lifo_conforms() {
    let summary = alloclab_verify::verify_run_reuse_against::<ChunkLifo, ChunkLifoModel>();
    println!("{summary}");
}
