//! Bugs the suite found, each replayed as a fixed scenario, and scenarios mutation testing
//! found no test running (VERIFY.md, "Mutation testing").
#![cfg(not(loom))]

use alloclab_core::size_class::{bin, small_index};
use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{AddrOrdered, CurrentRun, Lifo, Single};

/// Found by the `heap_ops` fuzz target (input kept in `fuzz/seeds/heap_ops`): with
/// `CurrentRun<AddrOrdered>`, when the current run emptied and a run *above* another non-full
/// run then became non-full, it became current: the current run was no longer the lowest
/// non-full run (`check_invariants`: `Policy("a run the policy prefers to the current run is
/// not current")`), and allocations went to the higher run.
#[test]
fn current_run_stays_the_lowest_after_the_current_run_empties() {
    const SIZE: usize = 2304;
    let heap = Heap::<Using<CurrentRun<AddrOrdered>, Single>>::new();
    let cap = bin(small_index(SIZE)).capacity as usize;
    let runs: Vec<Vec<*mut u8>> = (0..3)
        .map(|_| (0..cap).map(|_| heap.malloc(SIZE)).collect())
        .collect();
    let (a, b, c) = (&runs[0], &runs[1], &runs[2]);
    assert!(a[0] < b[0] && b[0] < c[0], "runs not in address order");
    let b_span = b[0] as usize..b[cap - 1] as usize + SIZE;
    // SAFETY: each pointer is a live allocation of `heap`, freed once.
    unsafe {
        heap.free(a[0]); // A non-full: current
        heap.free(b[0]); // B non-full, above A: waits in the tree
        for &p in &a[1..] {
            heap.free(p); // A empties and goes back to the arena: no current run
        }
        heap.free(c[0]); // C non-full, above B
    }
    heap.check_invariants().unwrap();
    let next = heap.malloc(SIZE) as usize;
    assert!(
        b_span.contains(&next),
        "served from above the lowest non-full run"
    );
    heap.check_invariants().unwrap();
}

/// The invariant checker collects the runs a bin's policy knows into scratch memory, one word
/// per run: a stack buffer of 128, else a mapping of `count * 8` bytes rounded up to pages.
/// No other test gives one bin more than 512 non-full runs, the point past which the mapping
/// needs a second page, so a mapping sized `count + 8` (cargo-mutants' `*` into `+` in
/// `check_policy`, missed by the suite) went unnoticed: one page, overrun by the walk, with
/// whatever harm that did depending on the neighbouring mapping. The walk now stops at the
/// buffer's real size, so a short buffer lists too few runs and the check reports a non-full
/// run unknown on this healthy heap, every time. Here 600 runs of one class are each left
/// with one free region (4,800 bytes of addresses); the regions still taken carry a pattern
/// that is read back after the checks.
#[test]
fn the_checker_lists_more_non_full_runs_than_a_page_holds() {
    const SIZE: usize = 1024;
    const RUNS: usize = 600;
    let idx = small_index(SIZE);
    let cap = bin(idx).capacity as usize;
    assert!(cap >= 2, "a run of this class must be able to be non-full");
    let heap = Heap::<Using<Lifo, Single>>::new();
    // `Single` has no thread cache and LIFO fills one run before it starts the next, so each
    // `cap` consecutive allocations are one run; the statistics below confirm it.
    let all: Vec<*mut u8> = (0..RUNS * cap).map(|_| heap.malloc(SIZE)).collect();
    let mut kept = Vec::new();
    for (i, &p) in all.iter().enumerate() {
        assert!(!p.is_null());
        if i % cap == 0 {
            // SAFETY: a live allocation of `heap`, freed once.
            unsafe { heap.free(p) };
        } else {
            let tag = i as u8;
            // SAFETY: `p` is a live allocation of `SIZE` bytes.
            unsafe { core::ptr::write_bytes(p, tag, SIZE) };
            kept.push((p, tag));
        }
    }
    let nonfull = heap.arena_stats(0).expect("arena 0 exists").1[idx].nonfull_runs;
    assert_eq!(
        nonfull, RUNS,
        "each run should have exactly one free region"
    );
    heap.check_invariants().unwrap();
    heap.check_invariants().unwrap();
    for &(p, tag) in &kept {
        // SAFETY: `p` is still a live allocation of `SIZE` bytes.
        let bytes = unsafe { core::slice::from_raw_parts(p, SIZE) };
        assert!(
            bytes.iter().all(|&b| b == tag),
            "region {p:?} was overwritten"
        );
    }
    for (p, _) in kept {
        // SAFETY: live, freed once.
        unsafe { heap.free(p) };
    }
    heap.check_invariants().unwrap();
}

/// Found in the run-reuse-tcache study: `heap.picks` was 0 for every thread-cache subject,
/// because a cache's refill (`alloc_small_batch`) took regions from the runs the policy picked
/// without counting them. A refill counts its picks as that many single allocations would: every
/// region served from a run the policy chose, and of a new run's regions all but the first.
#[test]
fn thread_cache_refills_count_their_picks() {
    use alloclab_policies::configs::LifoTcache;
    const SIZE: usize = 64;
    let heap = Heap::<LifoTcache>::new();
    let idx = small_index(SIZE);
    let cap = bin(idx).capacity as usize;
    // The heap's totals: regions out of their runs are the program's (`live`) or a cache's
    // (`cached`).
    let totals = |heap: &Heap<LifoTcache>| {
        let b = heap.stats().bins[idx];
        (b.picks, (b.live + b.cached) as u64, b.new_runs)
    };
    let blocks: Vec<*mut u8> = (0..3 * cap + 5).map(|_| heap.malloc(SIZE)).collect();
    let (picks, taken, new_runs) = totals(&heap);
    assert!(
        new_runs >= 4,
        "{new_runs} runs for {} regions",
        blocks.len()
    );
    assert_eq!(picks, taken - new_runs, "refills count their picks");
    // Free every other block and flush the cache: the runs become non-full, and the next
    // refills are served from runs the policy picks.
    for &p in blocks.iter().step_by(2) {
        // SAFETY: a live allocation of `heap`, freed once.
        unsafe { heap.free(p) };
    }
    heap.flush_thread_cache();
    let again: Vec<*mut u8> = (0..cap).map(|_| heap.malloc(SIZE)).collect();
    let (picks_after, _, new_runs_after) = totals(&heap);
    assert_eq!(new_runs_after, new_runs, "the freed regions sufficed");
    assert!(
        picks_after >= picks + cap as u64,
        "{picks_after} after {picks}"
    );
    heap.check_invariants().unwrap();
    for p in again
        .into_iter()
        .chain(blocks.into_iter().skip(1).step_by(2))
    {
        // SAFETY: live, freed once.
        unsafe { heap.free(p) };
    }
    heap.check_invariants().unwrap();
}

/// `lifo` with every debug check compiled in, so that each is chosen at run time (as in
/// liballoclab.so).
type AllChecks = alloclab_policies::configs::Checked<Lifo, Single>;

fn all_checks(safety: alloclab_core::Safety) -> Heap<AllChecks> {
    Heap::with_options(alloclab_core::Options {
        safety,
        ..alloclab_core::Options::DEFAULT
    })
}

/// Found by the mutation campaign (shard 1, `core/src/heap/mod.rs`: `replace && with || in
/// Heap<C>::allocate_checked`): with canaries compiled in but off, a small allocation wrote
/// a canary past its request all the same. No test ran the debug-capable heap with canaries
/// off and another allocation hook on (with every hook off, allocations skip the checked
/// path). A zeroed 10-byte request in a 16-byte region, guard pages on (they concern large
/// allocations only): the 6 bytes past it (usable, per `usable_size`) stay zero.
#[test]
fn no_canary_is_written_when_canaries_are_off() {
    let heap = all_checks(alloclab_core::Safety {
        guard: true,
        ..alloclab_core::Safety::OFF
    });
    let p = heap.calloc(1, 10);
    assert!(!p.is_null());
    let usable = heap.usable_size(p).unwrap();
    assert_eq!(usable, 16);
    // SAFETY: `usable` bytes of a live allocation may be read.
    let bytes = unsafe { std::slice::from_raw_parts(p, usable) };
    assert_eq!(bytes, &[0u8; 16], "bytes past the request were written");
    // SAFETY: a live allocation of `heap`, freed once.
    unsafe { heap.free(p) };
}

/// Found by the mutation campaign (shard 1, `core/src/heap/mod.rs`: `replace - with + in
/// Heap<C>::allocate_checked`): the end of a guarded large allocation, from which its
/// recorded request is derived, counted the guard page twice; the request then read as
/// unknown, and a sized free of the wrong size (C++ sized `delete`) passed. With guard pages
/// on, the request of a guarded allocation is known to the byte.
#[test]
fn a_guarded_allocation_knows_its_request_to_the_byte() {
    let heap = all_checks(alloclab_core::Safety {
        guard: true,
        ..alloclab_core::Safety::OFF
    });
    for size in [5001, 8192, 20_000] {
        let p = heap.malloc(size);
        assert!(!p.is_null());
        assert_eq!(heap.size_fits(p, size, 16), Ok(true), "{size}");
        assert_eq!(heap.size_fits(p, size + 1, 16), Ok(false), "{size} + 1");
        assert_eq!(heap.size_fits(p, size - 1, 16), Ok(false), "{size} - 1");
        // SAFETY: a live allocation of `heap`, freed once.
        unsafe { heap.free(p) };
    }
    heap.check_invariants().unwrap();
}

/// Found by the mutation campaign (shard 1, `core/src/debug/sampled.rs`: `replace Sampler::contains
/// -> bool with true`): with sampling compiled in but off, every free would have been taken
/// for a sampled allocation's. No test freed through the debug-capable heap with sampling
/// off. Frees of every kind go back to the heap, which ends empty.
#[test]
fn with_sampling_off_no_allocation_is_taken_for_a_sampled_one() {
    let heap = all_checks(alloclab_core::Safety::OFF);
    let ptrs: Vec<*mut u8> = [8, 100, 3000, 5000, 70_000, 2 << 20]
        .iter()
        .map(|&n| heap.malloc(n))
        .collect();
    for &p in &ptrs {
        assert!(!p.is_null());
        assert!(heap.usable_size(p).unwrap() >= 8);
        // SAFETY: a live allocation of `heap`, freed once.
        assert_eq!(unsafe { heap.try_free(p) }, Ok(()));
    }
    heap.check_invariants().unwrap();
    assert_eq!(heap.stats().allocated, 0);
}

/// Frees each of `ptrs`, live allocations of `heap`, each without error, then checks the heap.
fn free_each_and_check<C: alloclab_core::Config>(
    heap: &Heap<C>,
    ptrs: impl IntoIterator<Item = *mut u8>,
) {
    for p in ptrs {
        // SAFETY: the caller's: a live allocation of `heap`, freed once.
        assert_eq!(unsafe { heap.try_free(p) }, Ok(()));
    }
    heap.check_invariants().unwrap();
}

/// Whether the `size` bytes at `p` start a page or end one: where a sampled allocation is put,
/// against one of its slot's guard pages (a small region of the heap is so one time in 32).
fn at_a_page_edge(p: *mut u8, size: usize) -> bool {
    p as usize % 4096 == 0 || (p as usize + size) % 4096 == 0
}

/// Found by the mutation campaign (shard 2, `core/src/debug/sampled.rs`: `replace > with < in
/// Sampler::should_sample`): sampling takes requests of at most a page; no test in the
/// campaign's selection sampled at all. With every allocation sampled (`sample: 1`), each small
/// one is placed against a guard page of its slot, and a request of several pages is served by
/// the heap as usual.
#[test]
fn sampling_takes_requests_up_to_a_page_and_none_larger() {
    let heap = all_checks(alloclab_core::Safety {
        sample: 1,
        ..alloclab_core::Safety::OFF
    });
    let small: Vec<*mut u8> = (0..8).map(|_| heap.malloc(64)).collect();
    for &p in &small {
        assert!(!p.is_null());
        assert!(at_a_page_edge(p, 64), "{p:?} is not against a guard page");
    }
    let big = heap.malloc(3 * 4096);
    assert!(!big.is_null());
    assert!(heap.usable_size(big).unwrap() >= 3 * 4096);
    free_each_and_check(&heap, small.into_iter().chain([big]));
}

/// LIFO runs behind a thread cache, with only sampling compiled in, decided on the cache's
/// fast path (`SamplePath::Countdown`, the sampling study's naive variant).
struct CountdownTcache;
impl alloclab_core::Config for CountdownTcache {
    type Reuse = Lifo;
    type Arenas = Single;
    type Front = alloclab_policies::ThreadCache;
    const NAME: &'static str = "countdown-tcache";
    const DEBUG: alloclab_core::DebugCaps = alloclab_core::DebugCaps::SAMPLE;
    const SAMPLE_PATH: alloclab_core::SamplePath = alloclab_core::SamplePath::Countdown;
}

/// Found by the mutation campaign (shard 19, `core/src/heap.rs`: `replace Heap<C>::sample_fast
/// -> Option<*mut u8> with None`): where sampling is decided on the thread cache's fast path,
/// the slow path leaves the sizes the cache serves to it, so the fast path must take the
/// samples. With every allocation sampled (`sample: 1`), once the heap is up (its first
/// allocation builds it, on the slow path) each small allocation is a sampled one, against a
/// guard page of its slot.
#[test]
fn a_fast_path_sampler_samples_what_the_cache_would_serve() {
    let heap = Heap::<CountdownTcache>::with_options(alloclab_core::Options {
        safety: alloclab_core::Safety {
            sample: 1,
            ..alloclab_core::Safety::OFF
        },
        ..alloclab_core::Options::DEFAULT
    });
    let first = heap.malloc(64);
    assert!(!first.is_null());
    let small: Vec<*mut u8> = (0..16).map(|_| heap.malloc(64)).collect();
    for &p in &small {
        assert!(!p.is_null());
        assert!(at_a_page_edge(p, 64), "{p:?} is not a sampled allocation");
    }
    free_each_and_check(&heap, small.into_iter().chain([first]));
}

/// Found by the mutation campaign (shard 3, `core/src/debug/sampled.rs`: `replace - with + in
/// Sampler::should_sample`): the countdown between samples must count down. One allocation in
/// two sampled: of 256 small ones, about half lie against a guard page (a small region of the
/// heap lies at a page's edge one time in 32); a countdown that grows samples a few at most.
#[test]
fn sampling_one_in_two_samples_about_half() {
    let heap = all_checks(alloclab_core::Safety {
        sample: 2,
        ..alloclab_core::Safety::OFF
    });
    let ptrs: Vec<*mut u8> = (0..256).map(|_| heap.malloc(64)).collect();
    let at_edges = ptrs.iter().filter(|&&p| at_a_page_edge(p, 64)).count();
    assert!((60..=220).contains(&at_edges), "{at_edges} of 256");
    free_each_and_check(&heap, ptrs);
}

/// Found by the mutation campaign (shard 1, `verify/src/harness.rs`: `replace Harness<C,
/// M>::heap -> &Heap<C> with Box::leak(Box::new(Heap::new()))`): the kit and the fuzz
/// targets read the heap under test through `Harness::heap` (statistics, invariants), and no
/// test looked at what it returned. It is the heap the operations ran on.
#[test]
fn the_harness_heap_is_the_one_the_operations_ran_on() {
    use alloclab_verify::{Harness, Op};
    let mut h = Harness::<Using<Lifo, Single>>::new();
    for size in [100, 100_000] {
        h.apply(&Op::Alloc {
            size,
            align_log: 0,
            zero: false,
        })
        .unwrap();
    }
    assert_eq!(h.live(), 2);
    assert!(h.heap().stats().allocated >= 100_100);
    h.finish().unwrap();
}

/// Kills cargo-mutants' `replace > with < in Heap<C>::stats` (`allocations > 0`, now
/// `core/src/heap/stats.rs`; survivor of the campaign): `arenas_used` counts the arenas that
/// served an allocation, and no test of the selection read it. (Its sibling `> with >=` needs an
/// arena that served none: `an_arena_whose_first_chunk_the_os_refused_is_not_counted_as_used`.)
#[test]
fn arenas_used_counts_the_arenas_that_served_an_allocation() {
    use alloclab_policies::ThreadLocal;
    let heap = Heap::<Using<Lifo, ThreadLocal>>::new();
    assert_eq!(heap.stats().arenas_used, 0);
    let here = heap.malloc(64);
    let there = std::thread::scope(|s| s.spawn(|| heap.malloc(64) as usize).join().unwrap());
    assert_ne!(heap.arena_of(here), heap.arena_of(there as *mut u8));
    let st = heap.stats();
    assert_eq!((st.arenas, st.arenas_used), (2, 2), "{st:?}");
    free_each_and_check(&heap, [here, there as *mut u8]);
}

/// Kills cargo-mutants' two `replace + with * in Heap<C>::stats` (`active` and `mapped`, now
/// `core/src/heap/stats.rs`; survivors of the campaign): a live huge allocation is active and
/// mapped on top of the arenas' pages and chunks, and small allocations are active even with no
/// huge one live.
#[test]
fn active_and_mapped_add_huge_allocations_to_the_arenas_pages() {
    use alloclab_core::size_class::CHUNK;
    let heap = Heap::<Using<Lifo, Single>>::new();
    let small = heap.malloc(64);
    let st = heap.stats();
    assert!(
        st.arena.active_pages > 0 && st.huge_allocated == 0,
        "{st:?}"
    );
    assert_eq!(st.active, st.arena.active_pages * 4096, "{st:?}");
    assert_eq!(st.mapped, st.arena.chunks * CHUNK, "{st:?}");
    let huge = heap.malloc(4 * CHUNK);
    let st = heap.stats();
    assert_eq!(st.huge_allocated, 4 * CHUNK, "{st:?}");
    assert_eq!(
        st.active,
        st.arena.active_pages * 4096 + 4 * CHUNK,
        "{st:?}"
    );
    assert!(st.mapped >= st.arena.chunks * CHUNK + 4 * CHUNK, "{st:?}");
    free_each_and_check(&heap, [small, huge]);
}

/// Kills cargo-mutants' `replace + with - in Heap<C>::stats` (the chunk headers in `metadata`,
/// now `core/src/heap/stats.rs`; survivor of the campaign): each chunk an arena takes adds its
/// header pages to the engine's metadata.
#[test]
fn metadata_grows_by_each_new_chunks_header() {
    use alloclab_core::size_class::{CHUNK, CHUNK_HEADER_PAGES};
    let heap = Heap::<Using<Lifo, Single>>::new();
    let first = heap.malloc(64);
    let before = heap.stats();
    // Large allocations of half a chunk: each new chunk holds one.
    let large: Vec<*mut u8> = (0..16).map(|_| heap.malloc(CHUNK / 2)).collect();
    let after = heap.stats();
    let new_chunks = after.arena.chunks - before.arena.chunks;
    assert!(new_chunks >= 8, "{new_chunks} new chunks");
    assert!(
        after.metadata >= before.metadata + new_chunks * CHUNK_HEADER_PAGES * 4096,
        "metadata {} -> {} for {new_chunks} new chunks",
        before.metadata,
        after.metadata
    );
    free_each_and_check(&heap, large.into_iter().chain([first]));
}

/// Kills cargo-mutants' `replace Heap<C>::arenas_leased -> usize with 0` and `... with 1`
/// (now `core/src/heap/mod.rs`; survivors of the campaign): under `ThreadLocal` each live
/// thread that allocated holds an arena, and gives it back when it exits.
#[test]
fn arenas_leased_counts_the_live_threads_arenas() {
    use alloclab_policies::ThreadLocal;
    use std::sync::{Arc, Barrier};
    const THREADS: usize = 3;
    let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal>>::new());
    let bound = Arc::new(Barrier::new(THREADS + 1));
    let exit = Arc::new(Barrier::new(THREADS + 1));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (heap, bound, exit) = (heap.clone(), bound.clone(), exit.clone());
            std::thread::spawn(move || {
                let p = heap.malloc(64);
                assert!(!p.is_null());
                // SAFETY: a live allocation of `heap`, freed once.
                unsafe { heap.free(p) };
                bound.wait();
                exit.wait();
            })
        })
        .collect();
    bound.wait();
    assert_eq!(heap.arenas_leased(), THREADS);
    exit.wait();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(heap.arenas_leased(), 0);
    heap.check_invariants().unwrap();
}

/// Kills cargo-mutants' `replace > with >= in Heap<C>::stats` (`allocations > 0`, now
/// `core/src/heap/stats.rs`; survivor of the campaign): an arena is made for an allocation, so
/// only an allocation the OS refused leaves an arena that served nothing, and `arenas_used`
/// must not count it. The address-space limit that makes the OS refuse is lowered in a child
/// process (`a_thread_arena_refused_its_first_chunk`), not in the test runner.
#[test]
fn an_arena_whose_first_chunk_the_os_refused_is_not_counted_as_used() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["a_thread_arena_refused_its_first_chunk", "--exact"])
        .args(["--include-ignored", "--nocapture", "--test-threads=1"])
        .output()
        .expect("run this test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
}

/// Run by `an_arena_whose_first_chunk_the_os_refused_is_not_counted_as_used`, in a child
/// process: it lowers the process's address-space limit, for good.
#[test]
#[ignore = "run by an_arena_whose_first_chunk_the_os_refused_is_not_counted_as_used"]
fn a_thread_arena_refused_its_first_chunk() {
    use alloclab_policies::ThreadLocal;
    let heap = Heap::<Using<Lifo, ThreadLocal>>::new();
    let first = heap.malloc(64);
    assert!(!first.is_null());
    let (go, ready) = std::sync::mpsc::channel::<()>();
    let (running, started) = std::sync::mpsc::channel::<()>();
    let heap = &heap;
    let refused = std::thread::scope(|s| {
        // Started before the limit is lowered: its stack and its signal stack (which the
        // thread maps itself when it starts running, so only once it has said so) are mapped.
        let second = s.spawn(move || {
            running.send(()).unwrap();
            ready.recv().unwrap();
            heap.malloc(64).is_null()
        });
        started.recv().unwrap();
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let vm_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmSize:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmSize in /proc/self/status");
        // Room for the new arena's record (a base block) but not for its first chunk.
        let limit = libc::rlimit {
            rlim_cur: (vm_kib + 512) * 1024,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: `limit` is a valid `rlimit` for the call to read.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
        go.send(()).unwrap();
        second.join().unwrap()
    });
    assert!(
        refused,
        "the OS gave the second arena a chunk under the limit"
    );
    let st = heap.stats();
    assert_eq!((st.arenas, st.arenas_used), (2, 1), "{st:?}");
}
