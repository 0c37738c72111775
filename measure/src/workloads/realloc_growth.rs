//! Realloc growth: buffers grown step by step as strings and vectors are (by half again, or by
//! a few bytes), sometimes shrunk, each step checking that the kept bytes moved with the block.

use super::block;
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;

/// Buffers grown at full size, over all threads.
const BUFFERS: u64 = 20_000;
/// Buffers each thread keeps growing at once (so growth interleaves).
const LIVE: usize = 8;

/// The realloc-growth workload.
pub struct ReallocGrowth;

fn worker(s: &dyn Subject, buffers: u64, seed: u64) -> Result<u64, String> {
    const WHAT: &str = "realloc-growth";
    let mut r = SplitMix64::new(seed);
    let mut ops = 0;
    let mut id = seed << 24;
    let mut made = 0;
    while made < buffers {
        let batch = (buffers - made).min(LIVE as u64) as usize;
        let mut live = Vec::with_capacity(batch);
        let mut limits = Vec::with_capacity(batch);
        for _ in 0..batch {
            id += 1;
            live.push(block::alloc(s, r.between(1, 64) as usize, id, WHAT)?);
            // Final sizes from 256 B to 1 MiB, log-uniform.
            limits.push(256usize << r.below(13));
            ops += 1;
        }
        made += batch as u64;
        let mut growing = batch;
        while growing > 0 {
            growing = 0;
            for (b, &limit) in live.iter_mut().zip(&limits) {
                if b.size >= limit {
                    continue;
                }
                growing += 1;
                let next = match r.below(10) {
                    0 => b.size - b.size / 4,                    // shrink a little
                    1..=3 => b.size + r.between(1, 32) as usize, // append a few bytes
                    _ => b.size + b.size / 2 + 1,                // grow by half again
                };
                id += 1;
                // SAFETY: `b` is live in `s` and replaced by the result.
                *b = unsafe { block::realloc(s, *b, next.min(limit), id, WHAT)? };
                ops += 1;
            }
        }
        for b in live {
            // SAFETY: live blocks of `s`, each freed once.
            unsafe { b.verify_and_free(s, WHAT)? };
            ops += 1;
        }
    }
    Ok(ops)
}

impl Workload for ReallocGrowth {
    fn name(&self) -> &str {
        "realloc-growth"
    }

    fn describe(&self) -> &str {
        "buffers grown by realloc from a few bytes to 256 B..1 MiB (by half again, by a few \
         bytes, sometimes shrunk), eight at a time per thread, contents checked at every step"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        block::timed_shares(subject, params, BUFFERS, worker)
    }
}
