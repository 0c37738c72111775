//! The thread-arena pattern of the 1436541 seed: worker threads allocate small objects and
//! now and then one request above 512 bytes. In the seed's allocator, such a request sent the
//! thread back to the shared arena for good, so its later small allocations contended with
//! every other thread; malloc time per worker thread is the figure that showed it. Each worker
//! keeps a window of its recent objects live and frees the oldest as it allocates.

use super::block::{self, on_new_threads, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::collections::VecDeque;
use std::time::Instant;

/// Allocations of each worker at full size: every worker does its own fixed work, as each of
/// the seed's style threads did, so that time per worker thread compares across thread counts.
const ALLOCATIONS_PER_THREAD: u64 = 750_000;
/// Objects each worker keeps live.
const WINDOW: usize = 512;
/// One allocation in this many is above 512 bytes.
const LARGE_EVERY: u64 = 200;

/// The thread-arena workload.
pub struct ThreadArena;

const WHAT: &str = "thread-arena";

fn worker(s: &dyn Subject, allocations: u64, seed: u64) -> Result<u64, String> {
    let mut r = SplitMix64::new(seed);
    let mut window: VecDeque<Block> = VecDeque::with_capacity(WINDOW + 1);
    let mut id = seed << 20;
    let mut ops = 0;
    for _ in 0..allocations {
        id += 1;
        let size = if r.below(LARGE_EVERY) == 0 {
            r.between(513, 4096)
        } else {
            r.between(8, 128)
        } as usize;
        window.push_back(block::alloc(s, size, id, WHAT)?);
        ops += 1;
        if window.len() > WINDOW {
            if let Some(old) = window.pop_front() {
                // SAFETY: a live block of `s`, out of the window.
                unsafe { old.verify_and_free(s, WHAT)? };
                ops += 1;
            }
        }
    }
    for b in window {
        // SAFETY: live blocks of `s`, each freed once.
        unsafe { b.verify_and_free(s, WHAT)? };
        ops += 1;
    }
    Ok(ops)
}

impl Workload for ThreadArena {
    fn name(&self) -> &str {
        "thread-arena"
    }

    fn describe(&self) -> &str {
        "the 1436541 seed's workers: each thread allocates small objects (8..128 B) with one \
         in 200 of 513..4096 B, keeping its last 512 live; the same work per thread at any count"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let threads = params.threads.max(1);
        let per_thread = scaled(ALLOCATIONS_PER_THREAD, params.scale);
        let start = Instant::now();
        // Worker threads, never the caller's: the pattern is about threads other than the
        // first, which allocators often treat apart.
        let ops = on_new_threads(threads, |t| {
            worker(subject, per_thread, thread_seed(params.seed, t))
        })?;
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
