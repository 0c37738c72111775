//! Where a heap with a thread cache decides to sample (`Config::SAMPLE_PATH`): only on the
//! slow path, on every allocation with a per-thread countdown, or through a shared gate the
//! slow path opens. Sampling alone leaves the cache on (but for a count under `SlowPath`,
//! which needs every allocation to decide), so the three differ in what they cost the
//! cache's fast path and in which allocations they can sample.

use alloclab::policies::{Lifo, ThreadCache, ThreadLocal};
use alloclab::{Config, DebugCaps, Heap, Options, Safety, SamplePath};

macro_rules! cached_sampling {
    ($name:ident, $path:expr) => {
        struct $name;
        impl Config for $name {
            type Reuse = Lifo;
            type Arenas = ThreadLocal;
            type Front = ThreadCache;
            const NAME: &'static str = stringify!($name);
            const DEBUG: DebugCaps = DebugCaps::SAMPLE;
            const SAMPLE_PATH: SamplePath = $path;
        }
    };
}
cached_sampling!(SlowPath, SamplePath::SlowPath);
cached_sampling!(Countdown, SamplePath::Countdown);
cached_sampling!(Gate, SamplePath::Gate);

fn heap_timed<C: Config>(sample_ms: usize) -> Heap<C> {
    Heap::with_options(Options {
        safety: Safety {
            sample_ms,
            ..Safety::OFF
        },
        ..Options::DEFAULT
    })
}

fn heap<C: Config>(sample: usize) -> Heap<C> {
    Heap::with_options(Options {
        safety: Safety {
            sample,
            ..Safety::OFF
        },
        ..Options::DEFAULT
    })
}

/// `malloc(32)` then `free` of it, `n` times: after the first refill every allocation is a
/// cache hit. Returns how many were sampled (sampled allocations are in no arena's chunk).
fn reuse_one_region<C: Config>(h: &Heap<C>, n: usize) -> usize {
    let mut sampled = 0;
    for _ in 0..n {
        let p = h.malloc(32);
        assert!(!p.is_null());
        sampled += usize::from(h.arena_of(p).is_none());
        // SAFETY: live, just allocated.
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
    sampled
}

/// `n` live `malloc(32)`s, so that the cache refills again and again; then all freed.
fn keep_many<C: Config>(h: &Heap<C>, n: usize) -> usize {
    let live: Vec<*mut u8> = (0..n).map(|_| h.malloc(32)).collect();
    let sampled = live.iter().filter(|&&p| h.arena_of(p).is_none()).count();
    for p in live {
        // SAFETY: live.
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
    sampled
}

#[test]
fn a_slow_path_decision_by_time_never_samples_cache_hits() {
    // One per millisecond, with 20 pauses of 2 ms: a heap that decides on every allocation
    // (the cache off) samples about 20 of them; the cache keeps every one but the first off
    // the slow path.
    let timed = |h: &Heap<SlowPath>| {
        let mut sampled = 0;
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            sampled += reuse_one_region(h, 1_000);
        }
        sampled
    };
    let h = heap_timed::<SlowPath>(1);
    let sampled = timed(&h);
    assert!(sampled <= 2, "{sampled} cache hits sampled");
    // The same loop without the cache (a count turns it off): every pause is seen.
    let uncached = Heap::<SlowPath>::with_options(Options {
        safety: Safety {
            sample: 1_000_000_000,
            sample_ms: 1,
            ..Safety::OFF
        },
        ..Options::DEFAULT
    });
    let seen = timed(&uncached);
    assert!(seen >= 10, "{seen} of 20 pauses sampled without the cache");
}

#[test]
fn a_slow_path_count_turns_the_cache_off_and_samples_one_in_n() {
    // `sample: N` means one in N of all allocations: with the decision only on the slow
    // path, the count needs every allocation there.
    let sampled = reuse_one_region(&heap::<SlowPath>(100), 20_000);
    assert!(
        (120..=300).contains(&sampled),
        "{sampled} of 20,000 sampled"
    );
}

#[test]
fn a_countdown_samples_cache_hits_one_in_n() {
    let sampled = reuse_one_region(&heap::<Countdown>(100), 20_000);
    // Expected 200 (delays uniform in 1..=200).
    assert!(
        (120..=300).contains(&sampled),
        "{sampled} of 20,000 sampled"
    );
}

#[test]
fn a_gate_is_opened_by_the_slow_path_and_taken_by_a_later_allocation() {
    // Only refills decide, so a loop of cache hits is sampled at most once (a gate opened by
    // the first refill).
    let hits = reuse_one_region(&heap::<Gate>(1), 20_000);
    assert!(hits <= 1, "{hits} cache hits sampled");
    // With every refill deciding "sample" (`sample: 1`), every refill opens the gate and the
    // allocation after it, a cache hit, is sampled: as many samples as refills, and some.
    let h = heap::<Gate>(1);
    let gated = keep_many(&h, 20_000);
    let slow = keep_many(&heap::<SlowPath>(1), 20_000);
    assert!(gated > 0, "nothing sampled through the gate");
    assert!(slow > 0, "nothing sampled on the slow path");
    // The pool has 256 slots; both stay within it (and lost nothing: invariants checked).
    assert!(gated <= 256 && slow <= 256, "{gated} {slow}");
}

#[test]
fn sampled_allocations_pass_through_the_cache_s_free_and_realloc() {
    let h = heap::<Countdown>(1);
    // The allocation that starts the heap is not counted (the fast path decides, and it runs
    // only in a started heap); after it, every allocation is sampled until the pool's 256
    // slots are taken.
    let first = h.malloc(100);
    let p = h.malloc(100);
    assert!(h.arena_of(p).is_none());
    // SAFETY: `p` is live with 100 bytes.
    unsafe {
        p.write_bytes(7, 100);
        let q = h.realloc_c(p, 200);
        assert!(!q.is_null());
        assert!((0..100).all(|i| *q.add(i) == 7));
        h.free(q);
        h.free(first);
    }
    h.check_invariants().unwrap();
}
