//! Replaying a trace in process against an allocator: alloclab's named configs, and any
//! [`Subject`] (the peers, once they land).
//!
//! As logalloc-replay does, the replayer keeps its bookkeeping out of the allocator under
//! test: the decoded calls, the pointer table and the thread schedules live in mmap'd arrays
//! (`trace::mapped`), written once before the replay so that they are resident before the
//! baseline is read; the replay loop itself allocates nothing. The heap's own statistics are
//! therefore the allocator's alone, and the process's resident size during the replay is the
//! baseline plus what the allocator made resident.
//!
//! Single-threaded by default: every call on the calling thread, in trace order. With
//! `threads`, each recorded thread replays on a thread of its own; a call waits only for the
//! earlier calls on the same slots (the allocation a free frees, the free a reused slot
//! follows), so cross-thread frees happen after their allocations and threads otherwise run
//! freely. The waits are part of the measured time.
//!
//! One allocator per process: resident sizes are per process, so comparing allocators means
//! one `alloclab replay` per allocator.

mod output;
pub mod rss;
mod threads;

pub use crate::subject::{HeapStats, Subject};
pub use output::{json, write_text, Source};
pub use rss::RssFigures;

use crate::trace::mapped::MappedVec;
use crate::trace::{Func, Op, Trace, NO_SLOT};
use alloclab_core::Config;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How to replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Write the requested bytes of every allocation (logalloc-replay's `-c`, "touch").
    pub touch: bool,
    /// Replay each recorded thread on its own thread.
    pub threads: bool,
}

/// The byte "touch" writes (any value would do; logalloc-replay writes 0x55).
pub const TOUCH_BYTE: u8 = 0x55;

/// The statistics at a `jemalloc_stats()` line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Index of the line's operation in [`Trace::ops`].
    pub op: u64,
    /// Process resident bytes then.
    pub rss: Option<usize>,
    /// The allocator's figures then.
    pub heap: HeapStats,
}

/// What a replay measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// The allocator's name.
    pub allocator: String,
    /// The allocator in detail.
    pub describe: String,
    /// How it was replayed.
    pub options: Options,
    /// OS threads that made the calls.
    pub threads: usize,
    /// Allocator calls made (`jemalloc_stats` excluded).
    pub calls: u64,
    /// Allocations that returned null (the replay goes on; the slot stays null).
    pub failed: u64,
    /// Wall-clock time from the first call to the last.
    pub elapsed: Duration,
    /// Resident sizes.
    pub rss: RssFigures,
    /// Whether the peak was restarted at the baseline (else `rss.peak` is `None`).
    pub peak_reset: bool,
    /// The allocator's figures after the last call, the trace's live allocations still live.
    pub heap: HeapStats,
    /// One per `jemalloc_stats()` line, in order (per thread order with `threads`).
    pub snapshots: Vec<Snapshot>,
    /// The allocator's consistency check after the replay.
    pub check: Result<(), String>,
}

impl Report {
    /// Allocator calls per second of replay.
    pub fn calls_per_second(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.calls as f64 / s
        } else {
            0.0
        }
    }
}

/// Why a replay could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// No named config has this name.
    UnknownConfig(String),
    /// The threaded schedule cannot number this many calls on one slot.
    TooManyCallsOnOneSlot,
    /// The threaded schedule cannot number this many calls.
    TooManyCalls,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::UnknownConfig(name) => write!(
                f,
                "unknown config `{name}` (named configs: {})",
                alloclab_policies::configs::NAMES.join(", ")
            ),
            ReplayError::TooManyCallsOnOneSlot => write!(
                f,
                "more than 2^31 calls on one slot: the threaded replay cannot order them"
            ),
            ReplayError::TooManyCalls => write!(
                f,
                "more than 2^32 calls: the threaded replay numbers calls in 32 bits"
            ),
        }
    }
}

impl std::error::Error for ReplayError {}

/// The pointer table: one word per slot, in its own mapping.
pub(crate) type Slots = MappedVec<AtomicUsize>;

/// What one replayed call did.
pub(crate) enum Outcome {
    Done,
    Failed,
    Stats,
}

fn to_usize(v: u64) -> usize {
    // A size beyond the address space cannot be served: `usize::MAX` makes the allocator
    // return null, which the replay counts.
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Replays one call. Slots are read and written with relaxed ordering: the single-threaded
/// replay needs no more, and the threaded one orders calls on a slot through its versions.
#[inline(always)]
pub(crate) fn call<A: Subject + ?Sized>(
    a: &A,
    op: &Op,
    slots: &[AtomicUsize],
    touch: bool,
) -> Outcome {
    let take = |slot: u32| -> *mut u8 {
        if slot == NO_SLOT {
            core::ptr::null_mut()
        } else {
            slots[slot as usize].swap(0, Ordering::Relaxed) as *mut u8
        }
    };
    let size = to_usize(op.size);
    let p = match op.func {
        Func::Free => {
            // SAFETY: a slot holds only pointers `a` returned, and `take` empties it, so each
            // pointer reaches `free` or `realloc` at most once.
            unsafe { a.free(take(op.slot)) };
            return Outcome::Done;
        }
        Func::JemallocStats => return Outcome::Stats,
        Func::Malloc => a.malloc(size),
        Func::Calloc => a.calloc(to_usize(op.arg), size),
        Func::PosixMemalign | Func::AlignedAlloc | Func::Memalign | Func::Valloc => {
            a.memalign(to_usize(op.arg), size)
        }
        Func::Realloc => {
            let old = take(op.old);
            // SAFETY: as for `free`: `old` is null or live in `a`, and its slot is now empty.
            unsafe { a.realloc(old, size) }
        }
    };
    if p.is_null() {
        // `realloc(p, 0)` may legitimately free and return null (glibc).
        return if op.func == Func::Realloc && size == 0 {
            Outcome::Done
        } else {
            Outcome::Failed
        };
    }
    if touch {
        // SAFETY: `p` is a fresh allocation of at least the requested bytes.
        unsafe { p.write_bytes(TOUCH_BYTE, to_usize(op.request())) };
    }
    slots[op.slot as usize].store(p as usize, Ordering::Relaxed);
    Outcome::Done
}

/// Takes a snapshot without allocating.
pub(crate) fn snapshot<A: Subject + ?Sized>(a: &A, op: u64) -> Snapshot {
    Snapshot {
        op,
        rss: rss::current(),
        heap: a.stats(),
    }
}

/// Replays `trace` against `a`. `a` should be fresh: its figures are reported as the trace's.
pub fn replay<A: Subject + ?Sized>(
    a: &A,
    trace: &Trace,
    options: Options,
) -> Result<Report, ReplayError> {
    replay_slots(a, trace, options).map(|(report, _)| report)
}

/// As [`replay`], and also returns what each slot holds at the end (the address of one of the
/// trace's allocations still live, or 0), so that the caller can check those allocations and
/// free them after the measured part.
pub fn replay_keeping_live<A: Subject + ?Sized>(
    a: &A,
    trace: &Trace,
    options: Options,
) -> Result<(Report, Vec<usize>), ReplayError> {
    let (report, slots) = replay_slots(a, trace, options)?;
    let live = slots.iter().map(|s| s.load(Ordering::Relaxed)).collect();
    Ok((report, live))
}

fn replay_slots<A: Subject + ?Sized>(
    a: &A,
    trace: &Trace,
    options: Options,
) -> Result<(Report, Slots), ReplayError> {
    let counts = trace.counts();
    let stats_lines = counts[Func::JemallocStats.index()] as usize;
    let slots: Slots = MappedVec::zeroed(trace.slots as usize, true);
    let run = if options.threads {
        threads::run(a, trace, &slots, options.touch, stats_lines)?
    } else {
        run_single(a, trace, &slots, options.touch, stats_lines)
    };
    let heap = a.stats();
    let check = a.check();
    let report = Report {
        allocator: a.name(),
        describe: a.describe(),
        options,
        threads: run.threads,
        calls: trace.allocator_calls(),
        failed: run.failed,
        elapsed: run.elapsed,
        rss: run.rss,
        peak_reset: run.peak_reset,
        heap,
        snapshots: run.snapshots,
        check,
    };
    Ok((report, slots))
}

/// What a replay loop hands back.
pub(crate) struct Run {
    pub(crate) threads: usize,
    pub(crate) failed: u64,
    pub(crate) elapsed: Duration,
    pub(crate) rss: RssFigures,
    pub(crate) peak_reset: bool,
    pub(crate) snapshots: Vec<Snapshot>,
}

/// Reads the baseline and restarts the peak: the last thing before the first call.
pub(crate) fn start_measuring() -> (Option<usize>, bool) {
    let baseline = rss::current();
    let reset = rss::reset_peak();
    (baseline, reset)
}

/// Reads the end and the peak: the first thing after the last call.
pub(crate) fn stop_measuring(baseline: Option<usize>, reset: bool) -> RssFigures {
    let end = rss::current();
    let peak = if reset { rss::peak() } else { None };
    RssFigures {
        baseline,
        peak,
        end,
    }
}

// Out of line so that profiles show the replay loop as one function.
#[inline(never)]
fn run_single<A: Subject + ?Sized>(
    a: &A,
    trace: &Trace,
    slots: &Slots,
    touch: bool,
    stats_lines: usize,
) -> Run {
    // Written now, so that snapshots during the replay neither allocate nor fault pages in.
    let mut snapshots = vec![Snapshot::default(); stats_lines];
    let mut taken = 0;
    let mut failed = 0u64;
    let (baseline, peak_reset) = start_measuring();
    let start = Instant::now();
    for (i, op) in trace.ops().iter().enumerate() {
        match call(a, op, slots, touch) {
            Outcome::Done => {}
            Outcome::Failed => failed += 1,
            Outcome::Stats => {
                snapshots[taken] = snapshot(a, i as u64);
                taken += 1;
            }
        }
    }
    let elapsed = start.elapsed();
    let rss = stop_measuring(baseline, peak_reset);
    Run {
        threads: 1,
        failed,
        elapsed,
        rss,
        peak_reset,
        snapshots,
    }
}

fn replay_config<C: Config>(
    name: &str,
    trace: &Trace,
    options: Options,
) -> Option<Result<Report, ReplayError>> {
    if C::NAME != name {
        return None;
    }
    let heap = alloclab_core::Heap::<C>::new();
    Some(replay(&heap, trace, options))
}

/// Replays `trace` against a fresh heap of the named config (`configs::NAMES`).
pub fn replay_named(name: &str, trace: &Trace, options: Options) -> Result<Report, ReplayError> {
    alloclab_policies::for_each_config!(replay_config(name, trace, options))
        .into_iter()
        .flatten()
        .next()
        .unwrap_or_else(|| Err(ReplayError::UnknownConfig(name.to_string())))
}
