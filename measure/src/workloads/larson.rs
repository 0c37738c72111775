//! A larson-like server loop (Larson and Krishnan's benchmark of a server handing requests to
//! worker threads): each thread owns a table of blocks and repeatedly replaces a random one,
//! freeing the old block and allocating one of a random small size; every round ends its
//! threads and hands each table to a new thread, which then frees blocks another thread
//! allocated, as a server's short-lived worker threads do.

use super::block::{self, on_new_threads, on_threads, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::sync::Mutex;
use std::time::Instant;

/// Replacements at full size, over all threads and rounds.
const OPS: u64 = 3_000_000;
/// Rounds (thread generations).
const ROUNDS: u64 = 10;
/// Blocks per thread's table.
const TABLE: usize = 1000;
/// Block sizes, as in Larson's server configuration.
const MIN_SIZE: u64 = 10;
const MAX_SIZE: u64 = 500;

/// The larson-like workload.
pub struct Larson;

const WHAT: &str = "larson";

fn replace_round(
    s: &dyn Subject,
    table: &mut [Block],
    ops: u64,
    r: &mut SplitMix64,
    next_id: &mut u64,
) -> Result<u64, String> {
    for _ in 0..ops {
        let i = r.below(table.len() as u64) as usize;
        *next_id += 1;
        let size = r.between(MIN_SIZE, MAX_SIZE) as usize;
        // SAFETY: the table holds live blocks of `s`; the slot is refilled at once.
        unsafe { table[i].verify_and_free(s, WHAT)? };
        table[i] = block::alloc(s, size, *next_id, WHAT)?;
    }
    Ok(2 * ops)
}

impl Workload for Larson {
    fn name(&self) -> &str {
        "larson"
    }

    fn describe(&self) -> &str {
        "larson-like server: each thread replaces random blocks of 10..500 B in a table of \
         1000; every round hands each table to a new thread, which frees what the old one \
         allocated"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let threads = params.threads.max(1);
        let per_round = scaled(OPS, params.scale)
            .div_ceil(ROUNDS)
            .div_ceil(threads as u64);
        let start = Instant::now();
        // The tables, filled by the first generation of threads.
        let tables: Vec<Mutex<Vec<Block>>> = (0..threads).map(|_| Mutex::new(Vec::new())).collect();
        let mut ops = on_threads(threads, |t| {
            let mut r = SplitMix64::new(thread_seed(params.seed, t));
            let mut id = (t as u64) << 40;
            let mut table = Vec::with_capacity(TABLE);
            for _ in 0..TABLE {
                id += 1;
                let size = r.between(MIN_SIZE, MAX_SIZE) as usize;
                table.push(block::alloc(subject, size, id, WHAT)?);
            }
            *tables[t].lock().unwrap_or_else(|e| e.into_inner()) = table;
            Ok(TABLE as u64)
        })?;
        for round in 0..ROUNDS {
            ops += on_new_threads(threads, |t| {
                // Thread t of this round takes the table of thread t + 1 of the last one.
                let from = (t + 1 + round as usize) % threads;
                let mut table =
                    std::mem::take(&mut *tables[from].lock().unwrap_or_else(|e| e.into_inner()));
                let seed = thread_seed(params.seed ^ ((round + 1) << 32), t);
                let mut r = SplitMix64::new(seed);
                let mut id = ((t as u64) << 40) | ((round + 1) << 32);
                let n = replace_round(subject, &mut table, per_round, &mut r, &mut id)?;
                *tables[from].lock().unwrap_or_else(|e| e.into_inner()) = table;
                Ok(n)
            })?;
        }
        for table in tables {
            for b in table.into_inner().unwrap_or_else(|e| e.into_inner()) {
                // SAFETY: live blocks of `subject`, each freed once.
                unsafe { b.verify_and_free(subject, WHAT)? };
                ops += 1;
            }
        }
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
