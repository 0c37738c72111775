//! Live bytes as a workload counts them, for fragmentation over time.
//!
//! A peer allocator cannot say how many bytes are live in it, and the resident size alone does
//! not tell a heap that holds much from one that wastes much. The aging workloads
//! (`workloads::aging`) know what they hold: they count the bytes they asked for and the bytes
//! of their own tables here, and the memory sampler (`memory::recorded`) reads both beside the
//! resident size at every sample. Fragmentation at a sample is then Johnstone and Wilson's
//! measure over the whole process: the resident bytes the run added (above the sample taken
//! before it, less the workload's own tables) over the live bytes, minus one.
//!
//! They count their allocator calls here too, so that every sample also says how far into the
//! run it was taken in calls, and fragmentation can be charted over calls (an aged heap is one
//! that has served many calls, whatever the time they took on one machine).
//!
//! Only single-threaded workloads count here (one relaxed store per call, no contended line),
//! and a run that never calls [`track`] has no fragmentation curve.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static TRACKED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicU64 = AtomicU64::new(0);
static OWN: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);

/// What the workload holds at one instant (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Live {
    /// Bytes asked for by the blocks live now.
    pub live: u64,
    /// Bytes of the workload's own tables (resident, not the allocator's under test).
    pub own: u64,
    /// Allocator calls made since [`track`] (each [`add`] and [`sub`] is one).
    pub calls: u64,
}

/// Starts counting for this run: nothing live, `own` bytes of tables (already touched).
pub fn track(own: u64) {
    LIVE.store(0, Ordering::Relaxed);
    OWN.store(own, Ordering::Relaxed);
    CALLS.store(0, Ordering::Relaxed);
    TRACKED.store(true, Ordering::Release);
}

/// Stops counting (the next run starts untracked).
pub fn untrack() {
    TRACKED.store(false, Ordering::Release);
}

/// A block of `bytes` became live (one allocator call). Single writer: the tracking
/// workload's one thread.
#[inline]
pub fn add(bytes: usize) {
    LIVE.store(
        LIVE.load(Ordering::Relaxed) + bytes as u64,
        Ordering::Relaxed,
    );
    CALLS.store(CALLS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// A block of `bytes` was freed (one allocator call).
#[inline]
pub fn sub(bytes: usize) {
    LIVE.store(
        LIVE.load(Ordering::Relaxed).saturating_sub(bytes as u64),
        Ordering::Relaxed,
    );
    CALLS.store(CALLS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// What is live now, if the running workload counts it.
pub fn current() -> Option<Live> {
    TRACKED.load(Ordering::Acquire).then(|| Live {
        live: LIVE.load(Ordering::Relaxed),
        own: OWN.load(Ordering::Relaxed),
        calls: CALLS.load(Ordering::Relaxed),
    })
}
