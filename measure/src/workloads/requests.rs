//! A request-serving loop, the shape of the KFENCE seed's throughput benchmark (sysbench's
//! file test: 8 threads serving random reads and writes, reported in requests per second):
//! each thread serves requests one after another, and a request is a fixed batch of
//! allocations made, used and freed before the next (a header, a few small objects, a
//! medium one, and one 16 KiB I/O buffer, sysbench's block size). The batch is fixed, so
//! requests per second is `ops_per_sec / CALLS_PER_REQUEST`; the ratio of two subjects'
//! throughputs is the same in either unit.

use super::block::{self, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;

/// Requests at full size, over all threads.
const REQUESTS: u64 = 100_000;
/// Allocations in one request (each freed within it).
pub const ALLOCS_PER_REQUEST: usize = 16;
/// Allocator calls in one request: its allocations and their frees.
pub const CALLS_PER_REQUEST: u64 = 2 * ALLOCS_PER_REQUEST as u64;
/// sysbench's file-test block size: the request's I/O buffer.
const IO_BLOCK: usize = 16 << 10;

/// The request workload.
pub struct Requests;

/// The size of a request's allocation `i`: 12 small (8..256 B), 3 medium (257..2048 B), then
/// the I/O buffer.
fn size(i: usize, r: &mut SplitMix64) -> usize {
    match i {
        0..=11 => r.between(8, 256) as usize,
        12..=14 => r.between(257, 2048) as usize,
        _ => IO_BLOCK,
    }
}

fn worker(s: &dyn Subject, requests: u64, seed: u64) -> Result<u64, String> {
    const WHAT: &str = "requests";
    let mut r = SplitMix64::new(seed);
    let mut next_id = seed << 20;
    let mut batch = [Block {
        addr: 0,
        size: 0,
        id: 0,
    }; ALLOCS_PER_REQUEST];
    for _ in 0..requests {
        for (i, b) in batch.iter_mut().enumerate() {
            next_id += 1;
            *b = block::alloc(s, size(i, &mut r), next_id, WHAT)?;
        }
        // Freed in an order of the request's own: the buffer first, the rest from a random
        // start, as objects of a request die in no fixed order.
        let from = r.below(ALLOCS_PER_REQUEST as u64 - 1) as usize;
        let order = core::iter::once(ALLOCS_PER_REQUEST - 1)
            .chain((0..ALLOCS_PER_REQUEST - 1).map(|k| (from + k) % (ALLOCS_PER_REQUEST - 1)));
        for i in order {
            // SAFETY: each block of the batch is live and freed once, here.
            unsafe { batch[i].verify_and_free(s, WHAT)? };
        }
    }
    Ok(requests * CALLS_PER_REQUEST)
}

impl Workload for Requests {
    fn name(&self) -> &str {
        "requests"
    }

    fn describe(&self) -> &str {
        "a server's requests (the KFENCE seed's throughput shape): each thread serves requests \
         one after another, each a fixed batch of 16 allocations (12 small, 3 medium, a 16 KiB \
         I/O buffer) made and freed within it; requests/s is ops_per_sec / 32"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        block::timed_shares(subject, params, REQUESTS, worker)
    }
}
