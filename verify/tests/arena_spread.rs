//! Which arena each built-in arena choice hands a thread, against the choice's specification
//! (docs/ARCHITECTURE.md). The kit (`verify_arena_choice`) checks properties every choice must
//! have (a thread's arena is stable, leases come back, arenas stay bounded); none of those
//! notices a choice that sends every thread to the same arena, or spreads threads over the
//! wrong number of arenas. Mutation testing found exactly such bugs surviving (VERIFY.md,
//! "Mutation testing"), so each choice is checked here for where it puts threads:
//!
//! - `Single`: arena 0, always;
//! - `RoundRobin`: the k-th thread to allocate gets arena `k % n` (`n` the `narenas` option, or
//!   4 per CPU), and keeps it;
//! - `Hashed`: every thread lands in `0..n`, and enough threads reach every one of the `n`;
//! - `PerCpu`: the arena of the CPU the thread runs on *now* (`cpu % n`, `n` one per CPU);
//! - `ThreadLocal`: concurrent threads get distinct arenas, never the shared arena 0, and
//!   exited threads' arenas go to the next threads (past `MAX_ARENAS - 1` live threads a
//!   thread shares a held arena, and its exit frees nothing); `ThreadLocal<496>` sends only
//!   requests above 496 bytes to arena 0;
//! - `LargeResetsShared<512>` (the thread-arenas seed's bug, kept for studies, so it must stay
//!   exactly that bug): a thread's own arena until its first request above 512 bytes (a first
//!   request of exactly 512 bytes included), arena 0 for everything after it; both bindings
//!   handed back at exit.
//!
//! Nothing here depends on timing. `Hashed` depends on thread addresses: with 32 threads per
//! arena, a correct hash leaves an arena empty with probability below 1e-6 per run (each
//! thread misses a given arena with probability (n-1)/n).
#![cfg(not(loom))]

use alloclab_core::{ArenaChoice, ArenaCtx, Heap, Options, MAX_ARENAS};
use alloclab_policies::configs::Using;
use alloclab_policies::{Hashed, LargeResetsShared, Lifo, PerCpu, RoundRobin, Single, ThreadLocal};
use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};

type H<A> = Heap<Using<Lifo, A>>;

fn heap<A: ArenaChoice>(narenas: usize) -> Arc<H<A>> {
    Arc::new(Heap::with_options(Options {
        narenas,
        ..Options::DEFAULT
    }))
}

/// The arena of a `size`-byte allocation made now by the calling thread (freed again).
fn arena_now<A: ArenaChoice>(h: &H<A>, size: usize) -> usize {
    let p = h.malloc(size);
    assert!(!p.is_null());
    let a = h
        .arena_of(p)
        .expect("a small or large allocation has an arena");
    // SAFETY: a live allocation of `h`, freed once.
    unsafe { h.free(p) };
    a
}

/// Spawns `n` threads that are all alive at once (so thread identities differ), each reporting
/// the arena of one small request; in spawn order.
fn concurrent_arenas<A: ArenaChoice>(h: &Arc<H<A>>, n: usize, size: usize) -> Vec<usize> {
    let barrier = Arc::new(Barrier::new(n));
    let ts: Vec<_> = (0..n)
        .map(|_| {
            let (h, b) = (h.clone(), barrier.clone());
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let a = arena_now(&h, size);
                    // Keep every thread alive until all have chosen.
                    b.wait();
                    a
                })
                .unwrap()
        })
        .collect();
    ts.into_iter().map(|t| t.join().unwrap()).collect()
}

/// The `narenas_or(default)` rule of `ArenaCtx`.
fn count(narenas: usize, default: usize) -> usize {
    (if narenas == 0 { default } else { narenas }).clamp(1, MAX_ARENAS)
}

/// Online CPUs as the kernel lists them (`0-3`, `0,2-5`): what the default arena counts
/// scale with. Not the engine's `os::ncpus()`, which a wrong count would agree with.
fn ncpus() -> usize {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .expect("read the kernel's list of online CPUs");
    online
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() + 1 - a.parse::<usize>().unwrap(),
            None => 1,
        })
        .sum()
}

#[test]
fn the_engine_counts_the_online_cpus() {
    assert_eq!(alloclab_core::os::ncpus(), ncpus());
}

#[test]
fn single_sends_every_thread_and_size_to_arena_0() {
    let h = heap::<Single>(0);
    for size in [16, 496, 4000, 100_000] {
        assert_eq!(concurrent_arenas(&h, 4, size), vec![0; 4], "size {size}");
    }
    h.check_invariants().unwrap();
}

#[test]
fn round_robin_assigns_threads_in_turn_and_keeps_them() {
    for narenas in [0, 3, 5] {
        let h = heap::<RoundRobin>(narenas);
        let n = count(narenas, 4 * ncpus());
        // One thread after the other: the k-th to allocate is the k-th in turn.
        let got: Vec<usize> = (0..2 * n + 1)
            .map(|_| {
                let h = h.clone();
                std::thread::spawn(move || {
                    let first = arena_now(&h, 32);
                    // The assignment is kept, whatever the thread allocates next.
                    for size in [5000, 48, 200_000, 32] {
                        assert_eq!(arena_now(&h, size), first, "size {size}");
                    }
                    first
                })
                .join()
                .unwrap()
            })
            .collect();
        let want: Vec<usize> = (0..2 * n + 1).map(|k| k % n).collect();
        assert_eq!(got, want, "narenas option {narenas} ({n} arenas)");
        h.check_invariants().unwrap();
    }
}

#[test]
fn hashed_spreads_threads_over_exactly_its_arenas() {
    let mut cases = vec![1, 2, 5];
    // The default, 4 per CPU, when it is small enough for 32 threads per arena.
    if 4 * ncpus() <= 16 {
        cases.push(0);
    }
    for narenas in cases {
        let h = heap::<Hashed>(narenas);
        let n = count(narenas, 4 * ncpus());
        let got = concurrent_arenas(&h, 32 * n, 32);
        let seen: BTreeSet<usize> = got.iter().copied().collect();
        let want: BTreeSet<usize> = (0..n).collect();
        assert_eq!(seen, want, "narenas option {narenas} ({n} arenas)");
        h.check_invariants().unwrap();
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it for pid 0
    // (the calling thread); CPU_ISSET reads it.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        if libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to `cpu`; true if it now runs there.
fn pin(cpu: usize) -> bool {
    // SAFETY: as in `allowed_cpus`; pid 0 is the calling thread, which sched_setaffinity
    // migrates before it returns.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) == 0
            && libc::sched_getcpu() == cpu as i32
    }
}

#[test]
fn per_cpu_follows_the_thread_from_cpu_to_cpu() {
    let cpus = allowed_cpus();
    // 1 arena: every CPU's requests in arena 0 (fewer arenas than CPUs, so that a choice that
    // ignores the option is seen even on a two-CPU machine).
    for narenas in [0, 1, 3] {
        let h = heap::<PerCpu>(narenas);
        let n = count(narenas, ncpus());
        let (h2, cpus) = (h.clone(), cpus.clone());
        let checked = std::thread::spawn(move || {
            let mut checked = 0;
            // Every allowed CPU, then back to the first: the choice is made on every request.
            for &cpu in cpus.iter().chain(cpus.first()) {
                if !pin(cpu) {
                    continue;
                }
                assert_eq!(arena_now(&h2, 64), cpu % n, "cpu {cpu}, {n} arenas");
                checked += 1;
            }
            checked
        })
        .join()
        .unwrap();
        assert!(checked > 0, "could not pin a thread to any CPU");
        h.check_invariants().unwrap();
    }
}

#[test]
fn thread_local_gives_concurrent_threads_their_own_arenas() {
    let h = heap::<ThreadLocal>(0);
    let first = concurrent_arenas(&h, 6, 64);
    let distinct: BTreeSet<usize> = first.iter().copied().collect();
    assert_eq!(distinct.len(), 6, "threads share arenas: {first:?}");
    assert!(
        !distinct.contains(&0),
        "a thread got the shared arena: {first:?}"
    );
    // The next threads reuse the arenas the exited ones handed back.
    let second: BTreeSet<usize> = concurrent_arenas(&h, 6, 64).into_iter().collect();
    assert_eq!(second, distinct);
    assert_eq!(h.arenas_leased(), 0);
    h.check_invariants().unwrap();
}

#[test]
fn thread_local_small_sends_only_larger_requests_to_arena_0() {
    let h = heap::<ThreadLocal<496>>(0);
    let h2 = h.clone();
    std::thread::spawn(move || {
        let own = arena_now(&h2, 496);
        assert_ne!(
            own, 0,
            "requests up to 496 bytes go to the thread's own arena"
        );
        for size in [497, 512, 4000, 100_000] {
            assert_eq!(arena_now(&h2, size), 0, "size {size}");
            assert_eq!(arena_now(&h2, 16), own, "after size {size}");
        }
    })
    .join()
    .unwrap();
    // Two threads at once own two arenas.
    let both: BTreeSet<usize> = concurrent_arenas(&h, 2, 100).into_iter().collect();
    assert_eq!(both.len(), 2);
    assert!(!both.contains(&0));
    h.check_invariants().unwrap();
}

#[test]
fn large_resets_shared_is_the_seed_bug_exactly() {
    let h = heap::<LargeResetsShared<512>>(0);
    let h2 = h.clone();
    std::thread::spawn(move || {
        let own = arena_now(&h2, 32);
        assert_ne!(own, 0);
        assert_eq!(
            arena_now(&h2, 512),
            own,
            "512 bytes is not above the threshold"
        );
        assert_eq!(arena_now(&h2, 32), own);
        assert_eq!(arena_now(&h2, 513), 0);
        // For good: small requests follow the thread to arena 0.
        assert_eq!(arena_now(&h2, 32), 0);
        assert_eq!(arena_now(&h2, 100_000), 0);
    })
    .join()
    .unwrap();
    // A thread whose first request is exactly 512 bytes (not above the threshold) gets an
    // arena of its own, and keeps it for its 512-byte and smaller requests.
    let h2 = h.clone();
    std::thread::spawn(move || {
        let own = arena_now(&h2, 512);
        assert_ne!(own, 0, "a first request of 512 bytes is small");
        for size in [512, 32, 512] {
            assert_eq!(arena_now(&h2, size), own, "size {size}");
        }
    })
    .join()
    .unwrap();
    // A thread whose first request is large never gets an arena of its own.
    let h2 = h.clone();
    std::thread::spawn(move || {
        assert_eq!(arena_now(&h2, 600), 0);
        assert_eq!(arena_now(&h2, 32), 0);
    })
    .join()
    .unwrap();
    assert_eq!(
        h.arenas_leased(),
        0,
        "exited threads hand back their arenas"
    );
    h.check_invariants().unwrap();
}

/// Past `MAX_ARENAS - 1` live threads (index 0 is never leased), a new thread shares a held
/// arena. Its exit hands back nothing: the arena is still held by the thread that leased it,
/// so the pool must neither count it free nor hand it out again.
#[test]
fn thread_local_sharers_hand_back_no_arena_that_is_still_held() {
    let h = heap::<ThreadLocal>(0);
    let holders = MAX_ARENAS - 1;
    let bound = Arc::new(Barrier::new(holders + 1));
    let exit = Arc::new(Barrier::new(holders + 1));
    let ts: Vec<_> = (0..holders)
        .map(|_| {
            let (h, bound, exit) = (h.clone(), bound.clone(), exit.clone());
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let a = arena_now(&h, 64);
                    bound.wait();
                    exit.wait();
                    a
                })
                .unwrap()
        })
        .collect();
    bound.wait();
    assert_eq!(h.arenas_leased(), holders);
    // Sharers, one after the other: each gets an arena some holder has, and exits.
    for _ in 0..8 {
        let h2 = h.clone();
        let a = std::thread::spawn(move || arena_now(&h2, 64))
            .join()
            .unwrap();
        assert_ne!(a, 0);
        assert_eq!(
            h.arenas_leased(),
            holders,
            "a sharer's exit freed arena {a}"
        );
    }
    exit.wait();
    let held: BTreeSet<usize> = ts.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(held.len(), holders);
    assert_eq!(h.arenas_leased(), 0);
    // Every arena came back once: as many concurrent threads again get distinct ones.
    let again: BTreeSet<usize> = concurrent_arenas(&h, holders, 64).into_iter().collect();
    assert_eq!(again, held);
    h.check_invariants().unwrap();
}

/// `ThreadLocal` with a careless exit: it releases its arena twice, then an index past the
/// last one and the shared arena 0, none of which it holds any more.
struct CarelessExit;

impl ArenaChoice for CarelessExit {
    type State = ();
    const NAME: &'static str = "careless-exit";

    fn init(_: &Options) {}

    fn choose(ctx: &ArenaCtx<'_>, state: &(), size: usize) -> usize {
        <ThreadLocal as ArenaChoice>::choose(ctx, state, size)
    }

    fn thread_exit(ctx: &ArenaCtx<'_>, _: &(), arena: usize) {
        for index in [arena, arena, MAX_ARENAS + 1, 0] {
            ctx.release(index);
        }
    }
}

/// A policy's release of an index nobody holds changes nothing: each arena is back once, and
/// as many threads again get the same arenas, each its own.
#[test]
fn the_pool_ignores_releases_of_arenas_nobody_holds() {
    let h = heap::<CarelessExit>(0);
    let first: BTreeSet<usize> = concurrent_arenas(&h, 4, 64).into_iter().collect();
    assert_eq!(first.len(), 4);
    assert_eq!(h.arenas_leased(), 0);
    let second: BTreeSet<usize> = concurrent_arenas(&h, 4, 64).into_iter().collect();
    assert_eq!(second, first);
    assert_eq!(h.arenas_leased(), 0);
    h.check_invariants().unwrap();
}
