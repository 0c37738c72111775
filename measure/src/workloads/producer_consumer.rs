//! Producer/consumer with cross-thread frees: the threads form a ring; each allocates blocks,
//! passes them in batches to the next thread, and frees (after checking) the blocks the
//! previous thread passed it, so nearly every free happens on a thread other than the one that
//! allocated, the case thread caches and per-thread heaps handle least well. With one thread
//! the ring closes on itself: the same work with no cross-thread frees, for comparison.

use super::block::{self, on_new_threads, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Instant;

/// Blocks passed at full size, over all threads.
const BLOCKS: u64 = 1_500_000;
/// Blocks per batch.
const BATCH: usize = 256;

/// Blocks passed from one thread to the next.
type Batch = Vec<Block>;
/// A thread's ends of the ring: where it sends, where it receives.
type Ends = (Sender<Batch>, Receiver<Batch>);

/// The producer/consumer workload.
pub struct ProducerConsumer;

const WHAT: &str = "producer-consumer";

/// Checks and frees a batch; returns the calls made.
fn consume(s: &dyn Subject, batch: Vec<Block>) -> Result<u64, String> {
    let n = batch.len() as u64;
    for b in batch {
        // SAFETY: the blocks were allocated from `s` by the producer and passed only here.
        unsafe { b.verify_and_free(s, WHAT)? };
    }
    Ok(n)
}

fn worker(
    s: &dyn Subject,
    blocks: u64,
    seed: u64,
    to_next: Sender<Batch>,
    from_prev: Receiver<Batch>,
) -> Result<u64, String> {
    let mut r = SplitMix64::new(seed);
    let mut id = seed << 20;
    let mut ops = 0;
    let (mut made, mut freed) = (0u64, 0u64);
    while made < blocks {
        let n = (blocks - made).min(BATCH as u64);
        let mut batch = Vec::with_capacity(n as usize);
        for _ in 0..n {
            id += 1;
            // Messages: mostly small, sometimes a page or more.
            let size = if r.below(16) == 0 {
                r.between(1024, 16384)
            } else {
                r.between(16, 256)
            } as usize;
            batch.push(block::alloc(s, size, id, WHAT)?);
        }
        made += n;
        ops += n;
        // A closed channel means the consumer failed; its error is reported by it.
        let _ = to_next.send(batch);
        while let Ok(b) = from_prev.try_recv() {
            freed += b.len() as u64;
            ops += consume(s, b)?;
        }
    }
    drop(to_next);
    // The previous thread sends as many blocks as this one did.
    while freed < blocks {
        let Ok(b) = from_prev.recv() else {
            return Err(format!(
                "{WHAT}: the previous thread stopped after passing {freed} of {blocks} blocks"
            ));
        };
        freed += b.len() as u64;
        ops += consume(s, b)?;
    }
    Ok(ops)
}

impl Workload for ProducerConsumer {
    fn name(&self) -> &str {
        "producer-consumer"
    }

    fn describe(&self) -> &str {
        "a ring of threads, each allocating blocks (16..256 B, one in 16 of 1..16 KiB) and \
         passing them in batches of 256 to the next, which checks and frees them"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let threads = params.threads.max(1);
        let per_thread = scaled(BLOCKS, params.scale).div_ceil(threads as u64);
        // Thread t sends on channel t and receives on channel t - 1 (mod threads).
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads).map(|_| channel()).unzip();
        let ends: Vec<Mutex<Option<Ends>>> = {
            let mut receivers: Vec<Option<Receiver<Batch>>> =
                receivers.into_iter().map(Some).collect();
            senders
                .into_iter()
                .enumerate()
                .map(|(t, tx)| {
                    let rx = receivers[(t + threads - 1) % threads].take();
                    Mutex::new(rx.map(|rx| (tx, rx)))
                })
                .collect()
        };
        let start = Instant::now();
        let ops = on_new_threads(threads, |t| {
            let ends = ends[t].lock().unwrap_or_else(|e| e.into_inner()).take();
            let (tx, rx) = ends.ok_or_else(|| format!("{WHAT}: thread {t} has no channel"))?;
            worker(subject, per_thread, thread_seed(params.seed, t), tx, rx)
        })?;
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
