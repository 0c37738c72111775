//! The allocator under test: one interface (the C allocation calls plus the allocator's own
//! figures) that alloclab's heaps implement here and that the peers (glibc, jemalloc,
//! mimalloc, snmalloc, rpmalloc; `measure::peers`) implement too. Replay, `compare`'s
//! workloads, the criterion benchmarks and the papers all drive allocators through it.

use alloclab_core::size_class::NBINS;
use alloclab_core::{BinStats, Config, Heap, Options};

/// An allocator under test: replayed, benchmarked and compared through these calls.
///
/// Callers hand back to `free` and `realloc` only pointers this allocator returned and
/// has not freed, each at most once; it never calls through a null pointer it got back.
pub trait Subject: Sync {
    /// A short name for reports.
    fn name(&self) -> String;
    /// What it is, in more detail (policies, options, version).
    fn describe(&self) -> String;
    /// `malloc(size)`.
    fn malloc(&self, size: usize) -> *mut u8;
    /// `calloc(count, size)`: zeroed, null if the product overflows.
    fn calloc(&self, count: usize, size: usize) -> *mut u8;
    /// `size` bytes aligned to `align` (a power of two): posix_memalign, aligned_alloc,
    /// memalign and valloc all come here.
    fn memalign(&self, align: usize, size: usize) -> *mut u8;
    /// C's `realloc`.
    ///
    /// # Safety
    /// `ptr` is null or a live allocation of this allocator, not used afterwards unless the
    /// call returns null with a non-zero `size`.
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8;
    /// C's `free`.
    ///
    /// # Safety
    /// `ptr` is null or a live allocation of this allocator, not used afterwards.
    unsafe fn free(&self, ptr: *mut u8);
    /// What the allocator knows of itself now; `None` for figures it does not report.
    fn stats(&self) -> HeapStats;
    /// Checks the allocator's own consistency after a replay (if it can).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// An allocator's own figures, as far as it reports them (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeapStats {
    /// Usable bytes of live allocations.
    pub allocated: Option<usize>,
    /// Bytes of pages backing live allocations.
    pub active: Option<usize>,
    /// Bytes mapped from the OS.
    pub mapped: Option<usize>,
    /// Free pages not yet returned to the OS.
    pub dirty: Option<usize>,
    /// The allocator's own structures.
    pub metadata: Option<usize>,
    /// The allocator's estimate of its resident bytes.
    pub resident_estimate: Option<usize>,
    /// alloclab's per-bin counters, indexed like `size_class::class_size`.
    pub bins: Option<[BinStats; NBINS]>,
    /// Policy counters since the allocator started (alloclab heaps; see [`PolicyCounters`]).
    pub policy: Option<PolicyCounters>,
    /// Arena lock counters since the allocator started (alloclab heaps; see [`LockCounters`]).
    pub locks: Option<LockCounters>,
}

/// What the arenas' locks saw since the heap started: totals over arenas, and the most of one
/// arena (`alloclab_core::ArenaStats::lock_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockCounters {
    /// Acquisitions of arena locks.
    pub lock_acquisitions: u64,
    /// Of those, acquisitions that found the lock held and waited.
    pub lock_contended: u64,
    /// Nanoseconds spent waiting in contended acquisitions.
    pub lock_wait_ns: u64,
    /// The most contended acquisitions of one arena's lock.
    pub lock_contended_max_arena: u64,
    /// The most nanoseconds waited for one arena's lock.
    pub lock_wait_ns_max_arena: u64,
}

/// What the run-reuse and purge policies did since the heap started (exact counts, kept
/// under the arena lock the engine holds anyway).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyCounters {
    /// Small allocations served from a run the run-reuse policy picked.
    pub picks: u64,
    /// Runs made because the policy had no non-full run to offer.
    pub new_runs: u64,
    /// Runs that became empty and went back to the arena.
    pub runs_released: u64,
    /// Purge passes (an arena holding too many dirty pages).
    pub purge_passes: u64,
    /// Calls returning pages to the OS (one per contiguous dirty span).
    pub purges: u64,
    /// Bytes returned to the OS by purging.
    pub purged_bytes: u64,
}

impl HeapStats {
    /// `1 - allocated / active`: the share of active pages not holding live data.
    pub fn fragmentation(&self) -> Option<f64> {
        match (self.allocated, self.active) {
            (Some(_), Some(0)) => Some(0.0),
            (Some(a), Some(b)) => Some(1.0 - a as f64 / b as f64),
            _ => None,
        }
    }
}

// The calls are kept out of line: a program calls `malloc` through a function call, and so
// does the replay of a peer through its C entry points, so every allocator pays the same call
// cost; and profilers then see the allocator's cost apart from the replayer's
// (`callgrind_annotate --inclusive=yes`: the `Subject` methods against `run_single`).
impl<C: Config> Subject for Heap<C> {
    fn name(&self) -> String {
        C::NAME.to_string()
    }

    fn describe(&self) -> String {
        let mut s = Heap::describe(self);
        let changed = options_changed(&self.options());
        if !changed.is_empty() {
            s.push_str(" with ");
            s.push_str(&changed.join(","));
        }
        s
    }

    #[inline(never)]
    fn malloc(&self, size: usize) -> *mut u8 {
        Heap::malloc(self, size)
    }

    #[inline(never)]
    fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        Heap::calloc(self, count, size)
    }

    #[inline(never)]
    fn memalign(&self, align: usize, size: usize) -> *mut u8 {
        self.allocate(size, align, false)
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.realloc_c(ptr, size) }
    }

    #[inline(never)]
    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { Heap::free(self, ptr) }
    }

    fn stats(&self) -> HeapStats {
        let s = Heap::stats(self);
        HeapStats {
            allocated: Some(s.allocated),
            active: Some(s.active),
            mapped: Some(s.mapped),
            dirty: Some(s.dirty),
            metadata: Some(s.metadata),
            resident_estimate: Some(s.resident),
            bins: Some(s.bins),
            policy: Some(PolicyCounters {
                picks: s.bins.iter().map(|b| b.picks).sum(),
                new_runs: s.bins.iter().map(|b| b.new_runs).sum(),
                runs_released: s.bins.iter().map(|b| b.runs_released).sum(),
                purge_passes: s.arena.purges,
                purges: s.arena.purge_calls,
                purged_bytes: s.arena.purged_pages * alloclab_core::size_class::PAGE as u64,
            }),
            locks: Some(LockCounters {
                lock_acquisitions: s.arena.lock_acquisitions,
                lock_contended: s.arena.lock_contended,
                lock_wait_ns: s.arena.lock_wait_ns,
                lock_contended_max_arena: s.lock_contended_max_arena,
                lock_wait_ns_max_arena: s.lock_wait_ns_max_arena,
            }),
        }
    }

    fn check(&self) -> Result<(), String> {
        self.check_invariants().map_err(|v| v.to_string())
    }
}

/// The `--heap-conf` options that differ from the defaults, in `ALLOCLAB_CONF`'s `key:value`
/// form, so that a report tells such a heap from its config's default. (The debug options of
/// the hardening studies' variants are named by the variants themselves.)
fn options_changed(o: &Options) -> Vec<String> {
    let d = Options::DEFAULT;
    let mut v = Vec::new();
    if o.tcache_check != d.tcache_check {
        v.push(format!(
            "tcache_check:{}",
            format!("{:?}", o.tcache_check).to_lowercase()
        ));
    }
    if o.tcache_max_bytes != d.tcache_max_bytes {
        v.push(format!("tcache_max:{}", o.tcache_max_bytes));
    }
    if o.narenas != d.narenas {
        v.push(format!("narenas:{}", o.narenas));
    }
    if o.dirty_max_pages != d.dirty_max_pages {
        v.push(format!("dirty_max:{}", o.dirty_max_pages));
    }
    if let Some(p) = o.purge {
        v.push(format!("purge:{p}"));
    }
    if o.huge_cache_bytes != d.huge_cache_bytes {
        v.push(format!("huge_cache:{}", o.huge_cache_bytes));
    }
    v
}
