//! Workloads: each a fixed amount of allocation work (never a fixed time) that checks its own
//! results, so that a broken allocator fails loudly instead of looking fast.

mod aging;
mod block;
mod bursts;
mod churn;
mod idle_bursts;
mod large_loop;
mod larson;
mod producer_consumer;
mod realloc_growth;
mod requests;
mod thread_arena;
mod trace_replay;
mod transfer_stress;
mod xthread_free;

pub use aging::{Phases, Robson, TraceAging};
pub use bursts::Bursts;
pub use churn::Churn;
pub use idle_bursts::IdleBursts;
pub use large_loop::LargeLoop;
pub use larson::Larson;
pub use producer_consumer::ProducerConsumer;
pub use realloc_growth::ReallocGrowth;
pub use requests::Requests;
pub use thread_arena::ThreadArena;
pub use trace_replay::{trace_name, TraceReplay};
pub use transfer_stress::TransferStress;
pub use xthread_free::XthreadFree;

use alloclab_traces::subject::Subject;
use alloclab_traces::trace::bundled;
use std::time::Duration;

/// Whole replays of each bundled trace at full size (`Params::scale` 1): a replay takes a few
/// milliseconds (sqlite3's) to a few tens (python3's) with the fastest allocators in a release
/// build, so each workload repeats its trace to about half a second, where one measurement's
/// noise is small against its time; the other synthetic workloads are sized alike.
fn replays_at_full_size(b: &bundled::Bundled) -> u32 {
    match trace_name(b) {
        "python3-stdlib" => 25,
        "lua5.4" => 50,
        "sqlite3" => 100,
        "gcc-cc1" => 80,
        _ => 75,
    }
}

/// The replays of every bundled trace, touching and not, in `bundled::ALL` order.
pub fn traces() -> Vec<Box<dyn Workload>> {
    let mut v: Vec<Box<dyn Workload>> = Vec::new();
    for b in bundled::ALL {
        for touch in [true, false] {
            v.push(Box::new(TraceReplay::new(
                b,
                touch,
                replays_at_full_size(b),
            )));
        }
    }
    v
}

/// Every workload, in the order reports list them: the synthetic ones, then the replays.
pub fn all() -> Vec<Box<dyn Workload>> {
    let mut v: Vec<Box<dyn Workload>> = vec![
        Box::new(Larson),
        Box::new(ProducerConsumer),
        Box::new(ThreadArena),
        Box::new(Bursts),
        Box::new(Churn),
        Box::new(ReallocGrowth),
        Box::new(Phases { touch: true }),
        Box::new(Robson { touch: true }),
        Box::new(TraceAging { touch: true }),
        Box::new(Phases { touch: false }),
        Box::new(Robson { touch: false }),
        Box::new(TraceAging { touch: false }),
        // The four shapes of issue 42, after mimalloc-bench's programs.
        Box::new(IdleBursts),
        Box::new(TransferStress),
        Box::new(LargeLoop),
        Box::new(XthreadFree),
        // The KFENCE seed's throughput shape (the sampling study): requests per second.
        Box::new(Requests),
    ];
    v.extend(traces());
    v
}

/// The workload named `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Workload>> {
    all().into_iter().find(|w| w.name() == name)
}

/// What a workload name ends with to be measured with the probe in front of every subject
/// (`larson+probe`): a workload of its own in the results, so that the probe's cost, which
/// its wall time and RSS include, is never mixed into the unprobed workload's figures.
pub const PROBED: &str = "+probe";

/// The workload a name stands for and whether it asks for the probe (`larson+probe` is
/// `("larson", true)`).
pub fn probed(name: &str) -> (&str, bool) {
    match name.strip_suffix(PROBED) {
        Some(base) => (base, true),
        None => (name, false),
    }
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
    /// What it needs before it is measured (parsing a trace), done once per process before
    /// the first run: kept out of the run's time and out of its memory's starting point.
    fn prepare(&self) -> Result<(), String> {
        Ok(())
    }
    /// Runs it once against `subject`. An error names what the self-check found wrong.
    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String>;
    /// The allocator calls a run with `params` makes, computed from the parameters without
    /// running it (exact, expected or a lower bound, as the workload says), for sizing a grid;
    /// `None` if the workload does not say.
    fn calls(&self, _params: &Params) -> Option<u64> {
        None
    }
}
