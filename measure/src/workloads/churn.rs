//! Random churn over a realistic size distribution: each thread keeps a table of slots and,
//! at random, frees the block in one or fills an empty one, with sizes drawn mostly small and
//! occasionally large (as allocation-size surveys of C and C++ programs find), and a few
//! `calloc` and `memalign` calls among them.

use super::block::{self, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;

/// Operations at full size, over all threads.
const OPS: u64 = 3_000_000;
/// Slots per thread: live blocks are at most this many.
const SLOTS: usize = 4096;

/// The random-churn workload.
pub struct Churn;

/// A size: 60% 8–64 B, 25% 65–512 B, 12% 513–8192 B, 3% 8 KiB–256 KiB.
fn size(r: &mut SplitMix64) -> usize {
    let (lo, hi) = match r.below(100) {
        0..=59 => (8, 64),
        60..=84 => (65, 512),
        85..=96 => (513, 8192),
        _ => (8193, 256 << 10),
    };
    r.between(lo, hi) as usize
}

fn worker(s: &dyn Subject, ops: u64, seed: u64) -> Result<u64, String> {
    const WHAT: &str = "churn";
    let mut r = SplitMix64::new(seed);
    let mut slots: Vec<Option<Block>> = vec![None; SLOTS];
    let mut next_id = seed << 20;
    let mut done = 0;
    while done < ops {
        let i = r.below(SLOTS as u64) as usize;
        match slots[i].take() {
            // SAFETY: the slot held a live block of `s`; it is now empty.
            Some(b) => unsafe { b.verify_and_free(s, WHAT)? },
            None => {
                next_id += 1;
                let size = size(&mut r);
                let b = match r.below(50) {
                    0 => block::alloc_zeroed(s, size, next_id, WHAT)?,
                    1 => {
                        let align = 16usize << r.below(9);
                        block::alloc_aligned(s, align, size, next_id, WHAT)?
                    }
                    _ => block::alloc(s, size, next_id, WHAT)?,
                };
                slots[i] = Some(b);
            }
        }
        done += 1;
    }
    for b in slots.into_iter().flatten() {
        // SAFETY: live blocks of `s`, each freed once.
        unsafe { b.verify_and_free(s, WHAT)? };
        done += 1;
    }
    Ok(done)
}

impl Workload for Churn {
    fn name(&self) -> &str {
        "churn"
    }

    fn describe(&self) -> &str {
        "random frees and allocations over a realistic size distribution (mostly small, a few \
         large, some calloc and memalign), each thread its own table of 4096 slots"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        block::timed_shares(subject, params, OPS, worker)
    }
}
