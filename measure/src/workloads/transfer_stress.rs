//! A multi-threaded stress with transfers, shaped after mimalloc-bench's `mstress` and
//! `xmalloc-test`: every thread allocates blocks of mixed sizes (16 B..64 KiB) and hands most
//! of them to the other threads through a shared array of transfer slots: it puts its new
//! block into a random slot and takes out what was there, most likely a block another thread
//! allocated, which it checks and frees. The rest replace blocks of the thread's own table.
//! Most frees are thus of other threads' blocks, across every size class up to 64 KiB, and
//! memory moves between the threads' heaps all the time: the shape where purging dirty pages
//! at once costs the most system calls. With one thread every transfer stays in the thread.

use super::block::{self, on_new_threads, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::sync::Mutex;
use std::time::Instant;

/// Blocks allocated at full size, over all threads.
const BLOCKS: u64 = 1_500_000;
/// Transfer slots shared by the threads.
const SLOTS: usize = 1024;
/// Blocks each thread keeps in its own table.
const TABLE: usize = 512;
/// Of 8 new blocks, how many are handed over (the rest replace one of the thread's own).
const TRANSFERRED: u64 = 7;

/// The transfer-stress workload.
pub struct TransferStress;

const WHAT: &str = "transfer-stress";

/// Mixed sizes: three in four of 16..256 B, one in five of 256 B..4 KiB, one in twenty of
/// 4..64 KiB.
fn size(r: &mut SplitMix64) -> usize {
    (match r.below(20) {
        0 => r.between(4 << 10, 64 << 10),
        1..=4 => r.between(256, 4 << 10),
        _ => r.between(16, 256),
    }) as usize
}

fn worker(
    s: &dyn Subject,
    blocks: u64,
    seed: u64,
    slots: &[Mutex<Option<Block>>],
) -> Result<u64, String> {
    let mut r = SplitMix64::new(seed);
    let mut id = seed << 24;
    let mut ops = 0;
    let mut table: Vec<Option<Block>> = vec![None; TABLE];
    for _ in 0..blocks {
        id += 1;
        let b = block::alloc(s, size(&mut r), id, WHAT)?;
        ops += 1;
        let old = if r.below(8) < TRANSFERRED {
            let slot = &slots[r.below(slots.len() as u64) as usize];
            slot.lock().unwrap_or_else(|e| e.into_inner()).replace(b)
        } else {
            table[r.below(TABLE as u64) as usize].replace(b)
        };
        if let Some(old) = old {
            // SAFETY: a live block of `s`, taken out of its slot: no other thread has it.
            unsafe { old.verify_and_free(s, WHAT)? };
            ops += 1;
        }
    }
    for b in table.into_iter().flatten() {
        // SAFETY: live blocks of `s` only this thread holds, each freed once.
        unsafe { b.verify_and_free(s, WHAT)? };
        ops += 1;
    }
    Ok(ops)
}

impl Workload for TransferStress {
    fn name(&self) -> &str {
        "transfer-stress"
    }

    fn describe(&self) -> &str {
        "mstress/xmalloc-like: threads allocate blocks of 16 B..64 KiB and swap 7 in 8 of \
         them into 1024 shared slots, freeing what they take out (mostly another thread's \
         block); the rest replace blocks of their own table"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let threads = params.threads.max(1);
        let per_thread = scaled(BLOCKS, params.scale).div_ceil(threads as u64);
        let slots: Vec<Mutex<Option<Block>>> = (0..SLOTS).map(|_| Mutex::new(None)).collect();
        let start = Instant::now();
        let worked = on_new_threads(threads, |t| {
            worker(subject, per_thread, thread_seed(params.seed, t), &slots)
        });
        // What is left in the slots is freed whatever happened (a failed run's blocks too,
        // unchecked then: the error is already the result).
        let mut ops = 0;
        let mut first_err = None;
        for slot in slots {
            if let Some(b) = slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                // SAFETY: live blocks of `subject`, no thread runs any more; each freed once.
                if let Err(e) = unsafe { b.verify_and_free(subject, WHAT) } {
                    first_err.get_or_insert(e);
                }
                ops += 1;
            }
        }
        let ops = worked? + ops;
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
