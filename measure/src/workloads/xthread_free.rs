//! Cross-thread frees in rounds, shaped after the cross-thread pattern of mimalloc-bench's
//! `rptest` and `larson`: one thread allocates every block (small, 16..512 B), the others
//! check and free them, in rounds: in each the allocating thread makes the round's blocks and
//! deals them in batches to the freeing threads, which free them as they come, and the next
//! round starts when every block of this one is freed. Every free is remote, so the
//! allocating thread's heap gets all its memory back through the cross-thread path. With one
//! thread, the thread frees its own blocks after each round.

use super::block::{self, on_new_threads, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Instant;

/// Blocks allocated at full size.
const BLOCKS: u64 = 2_000_000;
/// Blocks per round.
const ROUND: u64 = 20_000;
/// Blocks per batch dealt to a freeing thread.
const BATCH: usize = 256;

/// What the allocating thread sends a freeing thread.
enum Message {
    /// Blocks to check and free.
    Blocks(Vec<Block>),
    /// The round is over: answer with the blocks freed in it.
    EndOfRound,
}

/// A freeing thread's ends: where its blocks come from, where it answers at a round's end.
type FreerEnds = (Receiver<Message>, Sender<u64>);

/// The xthread-free workload.
pub struct XthreadFree;

const WHAT: &str = "xthread-free";

/// Checks and frees `batch`; returns the calls made.
fn free_all(s: &dyn Subject, batch: Vec<Block>) -> Result<u64, String> {
    let n = batch.len() as u64;
    for b in batch {
        // SAFETY: allocated from `s` by the allocating thread and passed only here.
        unsafe { b.verify_and_free(s, WHAT)? };
    }
    Ok(n)
}

/// What a freeing thread answers at the end of a round when it has failed (its error is its
/// result), so that the allocating thread stops instead of waiting for its answer.
const FAILED: u64 = u64::MAX;

/// A freeing thread: frees what comes until the allocating thread hangs up.
fn freer(s: &dyn Subject, from: Receiver<Message>, done: Sender<u64>) -> Result<u64, String> {
    let r = freeing(s, from, &done);
    if r.is_err() {
        let _ = done.send(FAILED);
    }
    r
}

fn freeing(s: &dyn Subject, from: Receiver<Message>, done: &Sender<u64>) -> Result<u64, String> {
    let mut ops = 0;
    let mut in_round = 0;
    for m in from {
        match m {
            Message::Blocks(batch) => {
                let n = free_all(s, batch)?;
                ops += n;
                in_round += n;
            }
            Message::EndOfRound => {
                if done.send(in_round).is_err() {
                    break;
                }
                in_round = 0;
            }
        }
    }
    Ok(ops)
}

/// The allocating thread.
fn allocator(
    s: &dyn Subject,
    blocks: u64,
    seed: u64,
    to: Vec<Sender<Message>>,
    done: Receiver<u64>,
) -> Result<u64, String> {
    let mut r = SplitMix64::new(seed);
    let mut id = 0u64;
    let mut ops = 0;
    let mut made = 0;
    let mut next = 0;
    while made < blocks {
        let round = (blocks - made).min(ROUND);
        let mut batch = Vec::with_capacity(BATCH);
        let mut own = Vec::new();
        for _ in 0..round {
            id += 1;
            batch.push(block::alloc(s, r.between(16, 512) as usize, id, WHAT)?);
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                if to.is_empty() {
                    own.push(full);
                } else {
                    // Dealt round robin.
                    to[next % to.len()]
                        .send(Message::Blocks(full))
                        .map_err(|_| format!("{WHAT}: a freeing thread stopped"))?;
                    next += 1;
                }
            }
        }
        made += round;
        ops += round;
        if !batch.is_empty() {
            if to.is_empty() {
                own.push(batch);
            } else {
                to[next % to.len()]
                    .send(Message::Blocks(batch))
                    .map_err(|_| format!("{WHAT}: a freeing thread stopped"))?;
                next += 1;
            }
        }
        for b in own {
            ops += free_all(s, b)?;
        }
        // The round ends when every freeing thread has freed what it was dealt.
        let mut freed = 0;
        for t in &to {
            t.send(Message::EndOfRound)
                .map_err(|_| format!("{WHAT}: a freeing thread stopped"))?;
        }
        for _ in &to {
            match done.recv() {
                Ok(FAILED) | Err(_) => {
                    return Err(format!("{WHAT}: a freeing thread stopped"));
                }
                Ok(n) => freed += n,
            }
        }
        if !to.is_empty() && freed != round {
            return Err(format!(
                "{WHAT}: {freed} blocks freed in a round of {round}"
            ));
        }
    }
    Ok(ops)
}

impl Workload for XthreadFree {
    fn name(&self) -> &str {
        "xthread-free"
    }

    fn describe(&self) -> &str {
        "rptest/larson-like cross-thread frees: one thread allocates blocks of 16..512 B in \
         rounds of 20000 and deals them in batches to the other threads, which check and free \
         them"
    }

    fn threaded(&self) -> bool {
        true
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let threads = params.threads.max(1);
        let blocks = scaled(BLOCKS, params.scale);
        let (to, from): (Vec<_>, Vec<_>) = (1..threads).map(|_| channel::<Message>()).unzip();
        let (done_tx, done_rx) = channel::<u64>();
        // Thread 0 allocates; thread t > 0 frees what comes on `from[t - 1]`.
        let allocating = Mutex::new(Some((to, done_rx)));
        let freeing: Vec<Mutex<Option<FreerEnds>>> = from
            .into_iter()
            .map(|rx| Mutex::new(Some((rx, done_tx.clone()))))
            .collect();
        drop(done_tx);
        let start = Instant::now();
        let ops = on_new_threads(threads, |t| {
            if t == 0 {
                let ends = allocating.lock().unwrap_or_else(|e| e.into_inner()).take();
                let (to, done) = ends.ok_or_else(|| format!("{WHAT}: no channels"))?;
                // Returning drops the senders: the freeing threads end.
                allocator(subject, blocks, thread_seed(params.seed, 0), to, done)
            } else {
                let ends = freeing[t - 1]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let (from, done) =
                    ends.ok_or_else(|| format!("{WHAT}: thread {t} has no channel"))?;
                freer(subject, from, done)
            }
        })?;
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
