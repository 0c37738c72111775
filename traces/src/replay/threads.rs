//! The threaded replay: each recorded thread on a thread of its own, ordered only where the
//! trace orders them.
//!
//! Every call that touches a slot (allocates into it, frees or reallocates it) gets the slot's
//! version it must wait for: the number of earlier calls on that slot, in trace order. A slot's
//! version counts the calls done on it; a call waits until its slots reach its versions, runs,
//! and bumps them. Each call waits only for calls earlier in the trace, so the earliest call not
//! yet done can always run: no deadlock. Since the parser recycles a slot only on the thread
//! that freed it, the only waits are the trace's own cross-thread orders (a free after its
//! allocation on another thread). Waiting spins briefly, then sleeps on a futex.

use super::{
    call, snapshot, start_measuring, stop_measuring, Outcome, ReplayError, Run, Slots, Snapshot,
    Subject,
};
use crate::trace::mapped::MappedVec;
use crate::trace::{Op, Trace, NO_SLOT};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::Instant;

/// Set in a version word by a thread about to sleep on it.
const WAITING: u32 = 1 << 31;

/// The slots a call touches, each at most once.
fn touched(op: &Op) -> [u32; 2] {
    let second = if op.slot == op.old { NO_SLOT } else { op.slot };
    [op.old, second]
}

fn wake_all(word: &AtomicU32) {
    alloclab_core::os::futex_wake_all(word);
}

fn sleep_while(word: &AtomicU32, value: u32) {
    alloclab_core::os::futex_wait(word, value);
}

/// Waits until `word` counts `version` calls done.
fn wait_for(word: &AtomicU32, version: u32) {
    let mut spins = 0u32;
    loop {
        let v = word.load(Ordering::Acquire);
        if v & !WAITING == version {
            return;
        }
        if spins < 100 {
            spins += 1;
            std::hint::spin_loop();
            continue;
        }
        if v & WAITING == 0
            && word
                .compare_exchange(v, v | WAITING, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            continue;
        }
        sleep_while(word, v | WAITING);
    }
}

/// Marks `version` calls done on `word`, waking sleepers.
fn publish(word: &AtomicU32, version: u32) {
    if word.swap(version, Ordering::Release) & WAITING != 0 {
        wake_all(word);
    }
}

/// Each thread's calls (indices into the trace), and each call's versions.
struct Schedule {
    per_thread: Vec<MappedVec<u32>>,
    /// Per call: the versions of `touched(op)`, packed `first << 32 | second`.
    versions: MappedVec<u64>,
}

fn schedule(trace: &Trace) -> Result<Schedule, ReplayError> {
    let mut per_thread: Vec<MappedVec<u32>> =
        (0..trace.threads.len()).map(|_| MappedVec::new()).collect();
    let mut done: MappedVec<u32> = MappedVec::zeroed(trace.slots as usize, false);
    let mut versions: MappedVec<u64> = MappedVec::zeroed(trace.ops().len(), true);
    for (i, op) in trace.ops().iter().enumerate() {
        per_thread[op.thread as usize].push(i as u32);
        let mut packed = [0u32; 2];
        for (k, s) in touched(op).into_iter().enumerate() {
            if s != NO_SLOT {
                let d = &mut done[s as usize];
                packed[k] = *d;
                *d += 1;
                if *d >= WAITING {
                    return Err(ReplayError::TooManyCallsOnOneSlot);
                }
            }
        }
        versions[i] = u64::from(packed[0]) << 32 | u64::from(packed[1]);
    }
    Ok(Schedule {
        per_thread,
        versions,
    })
}

struct Worker {
    failed: u64,
    snapshots: Vec<Snapshot>,
}

/// Replays `trace` with one thread per recorded thread.
pub(crate) fn run<A: Subject + ?Sized>(
    a: &A,
    trace: &Trace,
    slots: &Slots,
    touch: bool,
    stats_lines: usize,
) -> Result<Run, ReplayError> {
    if trace.ops().len() > u32::MAX as usize {
        return Err(ReplayError::TooManyCalls);
    }
    let sched = schedule(trace)?;
    let words: MappedVec<AtomicU32> = MappedVec::zeroed(trace.slots as usize, true);
    let ops = trace.ops();
    let nthreads = sched.per_thread.len();
    // `ready`: every worker has written its tables; `go`: the baseline is read.
    let ready = Barrier::new(nthreads + 1);
    let go = Barrier::new(nthreads + 1);
    let mut measured = None;
    let workers: Vec<Worker> = std::thread::scope(|s| {
        let handles: Vec<_> = sched
            .per_thread
            .iter()
            .map(|mine| {
                let (ready, go, sched, words) = (&ready, &go, &sched, &words);
                // Per-thread share of the snapshots, written before the replay starts.
                let my_stats = mine
                    .iter()
                    .filter(|&&i| ops[i as usize].func == crate::trace::Func::JemallocStats)
                    .count();
                s.spawn(move || {
                    let mut w = Worker {
                        failed: 0,
                        snapshots: vec![Snapshot::default(); my_stats],
                    };
                    let mut taken = 0;
                    ready.wait();
                    go.wait();
                    for &i in mine.iter() {
                        let op = &ops[i as usize];
                        let packed = sched.versions[i as usize];
                        let need = [(packed >> 32) as u32, packed as u32];
                        let slots_touched = touched(op);
                        for (k, s) in slots_touched.into_iter().enumerate() {
                            if s != NO_SLOT {
                                wait_for(&words[s as usize], need[k]);
                            }
                        }
                        match call(a, op, slots, touch) {
                            Outcome::Done => {}
                            Outcome::Failed => w.failed += 1,
                            Outcome::Stats => {
                                w.snapshots[taken] = snapshot(a, u64::from(i));
                                taken += 1;
                            }
                        }
                        for (k, s) in slots_touched.into_iter().enumerate() {
                            if s != NO_SLOT {
                                publish(&words[s as usize], need[k] + 1);
                            }
                        }
                    }
                    w
                })
            })
            .collect();
        ready.wait();
        let (baseline, reset) = start_measuring();
        let start = Instant::now();
        go.wait();
        let workers: Vec<Worker> = handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect();
        let elapsed = start.elapsed();
        measured = Some((elapsed, stop_measuring(baseline, reset), reset));
        workers
    });
    let (elapsed, rss, peak_reset) = measured.expect("measured in the scope");
    let mut snapshots: Vec<Snapshot> = Vec::with_capacity(stats_lines);
    let mut failed = 0;
    for w in workers {
        failed += w.failed;
        snapshots.extend(w.snapshots);
    }
    snapshots.sort_by_key(|s| s.op);
    Ok(Run {
        threads: nthreads,
        failed,
        elapsed,
        rss,
        peak_reset,
        snapshots,
    })
}
