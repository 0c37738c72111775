//! Build-and-teardown bursts: a program builds a structure of many same-size objects (a
//! parse tree, a batch of requests), uses it, and tears it down at once, among objects that
//! live long. Run-reuse policies differ most here: which partly empty run the next burst
//! fills decides how many runs stay half full. Teardown order varies (as built, reversed,
//! shuffled), and a few objects of each burst survive it.

use super::block::{self, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;

/// Objects built at full size, over all threads.
const OBJECTS: u64 = 2_000_000;
/// Long-lived objects each thread keeps (replaced one by one).
const SURVIVORS: usize = 2048;

/// The bursts workload.
pub struct Bursts;

const WHAT: &str = "bursts";

fn worker(s: &dyn Subject, objects: u64, seed: u64) -> Result<u64, String> {
    let mut r = SplitMix64::new(seed);
    let mut id = seed << 20;
    let mut ops = 0;
    let mut survivors: Vec<Block> = Vec::with_capacity(SURVIVORS);
    let mut burst: Vec<Block> = Vec::new();
    let mut built = 0;
    while built < objects {
        let n = (r.between(100, 5000)).min(objects - built) as usize;
        // One size class per burst: a structure's nodes.
        let size = 16 * r.between(1, 32) as usize;
        for _ in 0..n {
            id += 1;
            burst.push(block::alloc(s, size, id, WHAT)?);
        }
        built += n as u64;
        ops += n as u64;
        match r.below(3) {
            0 => {}
            1 => burst.reverse(),
            _ => {
                for i in (1..burst.len()).rev() {
                    burst.swap(i, r.below(i as u64 + 1) as usize);
                }
            }
        }
        for b in burst.drain(..) {
            // One object in 64 outlives its burst, replacing a random older survivor.
            if r.below(64) == 0 {
                if survivors.len() < SURVIVORS {
                    survivors.push(b);
                    continue;
                }
                let i = r.below(SURVIVORS as u64) as usize;
                let old = std::mem::replace(&mut survivors[i], b);
                // SAFETY: a live block of `s`, replaced in the table.
                unsafe { old.verify_and_free(s, WHAT)? };
            } else {
                // SAFETY: a live block of `s`, taken out of the burst.
                unsafe { b.verify_and_free(s, WHAT)? };
            }
            ops += 1;
        }
    }
    for b in survivors {
        // SAFETY: live blocks of `s`, each freed once.
        unsafe { b.verify_and_free(s, WHAT)? };
        ops += 1;
    }
    Ok(ops)
}

impl Workload for Bursts {
    fn name(&self) -> &str {
        "bursts"
    }

    fn describe(&self) -> &str {
        "bursts of 100..5000 same-size objects (16..512 B) built and torn down in order, in \
         reverse or shuffled, one in 64 surviving among 2048 long-lived objects per thread"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        block::timed_shares(subject, params, OBJECTS, worker)
    }
}
