//! Workloads: each a fixed amount of allocation work (never a fixed time) that checks its own
//! results, so that a broken allocator fails loudly instead of looking fast.

mod block;
mod churn;
mod realloc_growth;

pub use churn::Churn;
pub use realloc_growth::ReallocGrowth;

use crate::subject::Subject;
use std::time::Duration;

/// Every workload, in the order reports list them.
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![Box::new(Churn), Box::new(ReallocGrowth)]
}

/// The workload named `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Workload>> {
    all().into_iter().find(|w| w.name() == name)
}

/// How a workload is run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Worker threads (workloads that are single-threaded by nature ignore it).
    pub threads: usize,
    /// Amount of work relative to the full size (`--quick` uses less than 1).
    pub scale: f64,
    /// Seed of the workload's own random choices (the same for every subject).
    pub seed: u64,
}

/// What one run of a workload did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Allocator calls made (malloc, free, realloc, ... each count one).
    pub ops: u64,
    /// Time of the measured part (set-up such as parsing a trace excluded).
    pub elapsed: Duration,
}

/// A workload.
pub trait Workload: Sync {
    /// The name given on the command line (`--workloads`).
    fn name(&self) -> &str;
    /// One sentence: what it does and why it is here.
    fn describe(&self) -> &str;
    /// Whether `Params::threads` changes what it does.
    fn threaded(&self) -> bool;
    /// Runs it once against `subject`. An error names what the self-check found wrong.
    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String>;
}
