//! Producer/consumer bursts with idle phases between them, shaped after the fixed-duration
//! producer/consumer stresses of mimalloc-bench that sleep between bursts (here a fixed
//! number of bursts, never a fixed time): the threads form a ring; in each burst every thread
//! allocates its share of the burst's blocks and passes them in batches to the next thread,
//! then checks and frees the blocks the previous thread passed it, and then the ring sleeps
//! 1..5 ms. Each burst leaves megabytes of freed memory behind just before an idle phase: a
//! purge rule that gives dirty pages back at once pays system calls at every burst, and one
//! that waits (a decay) pays none while the next burst reuses them. With one thread the ring
//! closes on itself: the same bursts without cross-thread frees.

use super::block::{self, on_new_threads, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bursts at full size (`Params::scale` scales them: the amount of work, sleeps included).
const BURSTS: u64 = 100;
/// Blocks allocated per burst, over all threads.
const BURST_BLOCKS: u64 = 6000;
/// Blocks per batch passed along the ring.
const BATCH: usize = 128;
/// The idle phase after a burst: this many milliseconds, chosen per burst.
const IDLE_MS: (u64, u64) = (1, 5);

/// Blocks passed from one thread to the next.
type Batch = Vec<Block>;
/// A thread's ends of the ring: where it sends, where it receives.
type Ends = (Sender<Batch>, Receiver<Batch>);

/// The idle-bursts workload.
pub struct IdleBursts;

const WHAT: &str = "idle-bursts";

/// A message-like size: mostly small, one in eight of 1..16 KiB, one in 64 of 16..64 KiB.
fn size(r: &mut SplitMix64) -> usize {
    (match r.below(64) {
        0 => r.between(16 << 10, 64 << 10),
        1..=8 => r.between(1024, 16 << 10),
        _ => r.between(16, 512),
    }) as usize
}

fn worker(
    s: &dyn Subject,
    bursts: u64,
    per_burst: u64,
    seed: u64,
    idle_seed: u64,
    ends: Ends,
) -> Result<u64, String> {
    let (to_next, from_prev) = ends;
    let mut r = SplitMix64::new(seed);
    // Every thread draws the same idle times: the ring sleeps together.
    let mut idle = SplitMix64::new(idle_seed);
    let mut id = seed << 20;
    let mut ops = 0;
    for burst in 0..bursts {
        let mut made = 0;
        while made < per_burst {
            let n = (per_burst - made).min(BATCH as u64);
            let mut batch = Vec::with_capacity(n as usize);
            for _ in 0..n {
                id += 1;
                batch.push(block::alloc(s, size(&mut r), id, WHAT)?);
            }
            made += n;
            ops += n;
            // A closed channel means the next thread failed; its error is reported by it.
            let _ = to_next.send(batch);
        }
        // The previous thread passes as many blocks as this one did.
        let mut freed = 0;
        while freed < per_burst {
            let Ok(batch) = from_prev.recv() else {
                return Err(format!(
                    "{WHAT}: the previous thread stopped after passing {freed} of {per_burst} \
                     blocks in burst {burst}"
                ));
            };
            for b in batch {
                // SAFETY: allocated from `s` by the previous thread and passed only here.
                unsafe { b.verify_and_free(s, WHAT)? };
                freed += 1;
                ops += 1;
            }
        }
        // The ring stays in step without a barrier (which a failing thread would leave the
        // others waiting at): each thread's frees wait for the previous thread's burst, and
        // every thread sleeps the same times.
        std::thread::sleep(Duration::from_millis(idle.between(IDLE_MS.0, IDLE_MS.1)));
    }
    Ok(ops)
}

impl Workload for IdleBursts {
    fn name(&self) -> &str {
        "idle-bursts"
    }

    fn describe(&self) -> &str {
        "bursts of 6000 blocks (16..512 B, one in 8 of 1..16 KiB, one in 64 of 16..64 KiB) \
         passed along a ring of threads and freed by the next, each burst followed by 1..5 ms \
         of sleep: a purge at every burst costs system calls"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let threads = params.threads.max(1);
        let bursts = scaled(BURSTS, params.scale);
        let per_burst = BURST_BLOCKS.div_ceil(threads as u64);
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
            let ends = ends.ok_or_else(|| format!("{WHAT}: thread {t} has no channel"))?;
            // A failing thread drops its ends: the next one stops at its next receive.
            worker(
                subject,
                bursts,
                per_burst,
                thread_seed(params.seed, t),
                params.seed,
                ends,
            )
        })?;
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
