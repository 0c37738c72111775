//! Where a heap with a thread cache decides to sample (`Config::SAMPLE_PATH`): only on the
//! slow path, on every allocation with a per-thread countdown, or through a shared gate the
//! slow path opens. Sampling alone leaves the cache on (but for a count under `SlowPath`,
//! which needs every allocation to decide), so the three differ in what they cost the
//! cache's fast path and in which allocations they can sample. Under the static key, the
//! fast path's branch is patched in the code: the tests read its bytes.

use alloclab::policies::{Lifo, ThreadCache, ThreadLocal};
use alloclab::static_key::{self, NOP5};
use alloclab::{Config, DebugCaps, Heap, Options, Safety, SamplePath};
use std::sync::Mutex;

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
cached_sampling!(StaticKey, SamplePath::StaticKey);

/// The key is one per process: its tests take turns (the others never touch it).
static KEY: Mutex<()> = Mutex::new(());

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

/// Every site of the test binary is `expected` (the `nop`, or each its own `jmp`).
fn sites_are(on: bool) -> bool {
    static_key::sites().all(|s| s.bytes() == if on { s.jump().unwrap() } else { NOP5 })
}

#[test]
fn a_static_key_is_patched_in_by_the_slow_path_and_out_by_the_sample() {
    let _turn = KEY.lock().unwrap_or_else(|e| e.into_inner());
    assert!(static_key::patchable(), "this system refused to patch code");
    assert!(
        static_key::sites().count() > 0,
        "no branch site in the binary"
    );
    assert!(!static_key::enabled() && sites_are(false));
    // `sample: 1`: every refill (the slow path) decides "sample", opening the gate and
    // patching the branch in; the next allocation, a cache hit, jumps, takes the gate and
    // patches it out. So an allocation is sampled exactly when the key was on before it.
    let h = heap::<StaticKey>(1);
    let patches = static_key::patches();
    let mut live = Vec::new();
    let mut samples = 0;
    for _ in 0..5_000 {
        let on = static_key::enabled();
        if on {
            assert!(sites_are(true), "the key is on and a site is not a jump");
            assert_eq!(static_key::open_gates(), 1);
        }
        let p = h.malloc(32);
        assert!(!p.is_null());
        let sampled = h.arena_of(p).is_none();
        assert_eq!(sampled, on, "sampled {sampled} with the key on {on}");
        if sampled {
            samples += 1;
            assert!(
                !static_key::enabled() && sites_are(false),
                "not patched out"
            );
            // SAFETY: live, just allocated; the pool's slots are given back at once.
            unsafe { h.free(p) };
        } else {
            live.push(p);
        }
    }
    for p in live {
        // SAFETY: live.
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
    assert!(samples >= 20, "{samples} samples in 5,000 allocations");
    // In and out once per sample, at every site (some refills may open no gate: a free).
    let sites = static_key::sites().count();
    assert!(static_key::patches() - patches >= 2 * samples * sites);
    drop(h);
    assert_eq!(static_key::open_gates(), 0);
    assert!(!static_key::enabled() && sites_are(false));
}

#[test]
fn a_static_key_flips_while_threads_allocate_and_every_gate_is_accounted_for() {
    let _turn = KEY.lock().unwrap_or_else(|e| e.into_inner());
    // Two heaps under one key: the threads of one run the patched jump for the other's
    // samples too, and find their own gate closed. Every refill opens a gate.
    let a = heap::<StaticKey>(1);
    let b = heap::<StaticKey>(1);
    let seen: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let h = if t % 2 == 0 { &a } else { &b };
                scope.spawn(move || {
                    let mut sampled = 0;
                    for round in 0..40 {
                        let live: Vec<*mut u8> =
                            (0..300).map(|i| h.malloc(16 + (i + round) % 200)).collect();
                        for p in live {
                            assert!(!p.is_null());
                            sampled += usize::from(h.arena_of(p).is_none());
                            // SAFETY: live, freed once (sampled ones give their slot back).
                            unsafe {
                                p.write_bytes(0xa5, 16);
                                h.free(p);
                            }
                        }
                    }
                    sampled
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    assert!(seen > 0, "nothing sampled while the key flipped");
    a.check_invariants().unwrap();
    b.check_invariants().unwrap();
    // At most one gate per heap can still be open; one more allocation on each takes it.
    // At most one gate per heap can still be open. This thread's first allocation on each
    // heap refills its cache (opening a gate: `sample: 1`), its second takes the gate.
    assert!(static_key::open_gates() <= 2);
    for h in [&a, &b] {
        for _ in 0..2 {
            let p = h.malloc(32);
            // SAFETY: live, just allocated.
            unsafe { h.free(p) };
        }
    }
    assert_eq!(
        static_key::open_gates(),
        0,
        "a gate was counted but never closed"
    );
    assert!(!static_key::enabled() && sites_are(false));
}
