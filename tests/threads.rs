//! Arena choice across threads: the thread-arenas seed's regression test, thread churn, and
//! what each strategy does with many threads.

mod common;

use alloclab::configs::{self, Using};
use alloclab::policies::{Hashed, Lifo, PerCpu, RoundRobin, Single, ThreadLocal};
use alloclab::size_class::CHUNK;
use alloclab::{Config, Heap, Options};
use common::in_child;
use std::sync::{Arc, Barrier};

/// Mozilla bug 1436541: one allocation above 512 bytes re-pointed a thread at the shared
/// default arena, for good. A thread-local arena must survive requests of every size.
#[test]
fn thread_keeps_its_arena_whatever_size_it_allocates() {
    let heap = Arc::new(Heap::<configs::Lifo>::new());
    let h = heap.clone();
    std::thread::spawn(move || {
        let first = h.malloc(32);
        let own = h.arena_of(first).unwrap();
        assert_ne!(
            own, 0,
            "a thread-local arena must not be the shared default arena"
        );
        // Every size class boundary the seed bug could trip on: small, quantum-wide, large.
        for size in [
            64, 496, 497, 512, 513, 1024, 3840, 3841, 8192, 100_000, 1_000_000,
        ] {
            let p = h.malloc(size);
            assert_eq!(
                h.arena_of(p),
                Some(own),
                "a {size}-byte request left the thread's arena"
            );
            let after = h.malloc(32);
            assert_eq!(
                h.arena_of(after),
                Some(own),
                "a 32-byte request after a {size}-byte one changed arena"
            );
            // SAFETY: both are live allocations of `h`.
            unsafe {
                h.free(p);
                h.free(after);
            }
        }
        // SAFETY: live allocation of `h`.
        unsafe { h.free(first) };
    })
    .join()
    .unwrap();
    heap.check_invariants().unwrap();
}

/// `ThreadLocal<496>` sends big requests to the shared arena on purpose (mozjemalloc's rule)
/// without losing the thread's arena for small ones.
#[test]
fn sharing_large_requests_is_a_parameter_not_an_accident() {
    let heap = Arc::new(Heap::<Using<Lifo, ThreadLocal<496>>>::new());
    let h = heap.clone();
    std::thread::spawn(move || {
        let small = h.malloc(100);
        let own = h.arena_of(small).unwrap();
        assert_ne!(own, 0);
        let big = h.malloc(4000);
        assert_eq!(h.arena_of(big), Some(0));
        let small2 = h.malloc(100);
        assert_eq!(h.arena_of(small2), Some(own));
        // SAFETY: live allocations of `h`.
        unsafe {
            h.free(small);
            h.free(big);
            h.free(small2);
        }
    })
    .join()
    .unwrap();
}

/// Thousands of short-lived threads: arenas are handed back at thread exit and reused, so
/// neither the arena count nor the mapped memory grows with the number of threads.
#[test]
fn thread_churn_reuses_arenas() {
    let heap = Arc::new(Heap::<configs::Mrf>::new());
    let batch = 8;
    let mut mapped_after_first_round = 0;
    for round in 0..250 {
        let threads: Vec<_> = (0..batch)
            .map(|t| {
                let h = heap.clone();
                std::thread::spawn(move || {
                    let mut v = Vec::new();
                    for i in 0..50 {
                        v.push(h.malloc(16 + (i * 37 + t) % 3000));
                    }
                    for p in v {
                        // SAFETY: live allocations of `h`.
                        unsafe { h.free(p) };
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        if round == 0 {
            mapped_after_first_round = heap.stats().mapped;
        }
    }
    // 2000 threads ran, at most `batch` at a time.
    let arenas = heap.arenas_created();
    assert!(
        arenas <= batch + 1,
        "{arenas} arenas for at most {batch} live threads"
    );
    assert_eq!(heap.arenas_leased(), 0, "exited threads still hold arenas");
    let mapped = heap.stats().mapped;
    assert!(
        mapped <= 2 * mapped_after_first_round.max(batch * (1 << 20)),
        "mapped grew from {mapped_after_first_round} to {mapped} over 2000 threads"
    );
    heap.check_invariants().unwrap();
}

fn arenas_used_by<C: Config>(heap: Heap<C>, threads: usize) -> (Heap<C>, Vec<usize>) {
    let heap = Arc::new(heap);
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (h, b) = (heap.clone(), barrier.clone());
            std::thread::spawn(move || {
                // All threads alive at once, so thread keys are distinct.
                b.wait();
                let p = h.malloc(64);
                let a = h.arena_of(p).unwrap();
                b.wait();
                // SAFETY: live allocation of `h`.
                unsafe { h.free(p) };
                a
            })
        })
        .collect();
    let arenas = handles.into_iter().map(|t| t.join().unwrap()).collect();
    (Arc::try_unwrap(heap).ok().unwrap(), arenas)
}

#[test]
fn strategies_spread_threads_as_specified() {
    let (_, a) = arenas_used_by(Heap::<Using<Lifo, Single>>::new(), 6);
    assert!(a.iter().all(|&x| x == 0), "single: {a:?}");

    let (_, mut a) = arenas_used_by(Heap::<configs::Lifo>::new(), 6);
    a.sort();
    a.dedup();
    assert_eq!(
        a.len(),
        6,
        "thread-local: every live thread has its own arena: {a:?}"
    );

    let opts = Options {
        narenas: 3,
        ..Options::DEFAULT
    };
    let (h, a) = arenas_used_by(Heap::<Using<Lifo, RoundRobin>>::with_options(opts), 6);
    let mut counts = [0; 3];
    for x in &a {
        counts[*x] += 1;
    }
    assert_eq!(
        counts,
        [2, 2, 2],
        "round-robin over 3 arenas, threads in turn: {a:?}"
    );
    assert_eq!(h.arenas_created(), 3);

    let (h, a) = arenas_used_by(Heap::<Using<Lifo, Hashed>>::with_options(opts), 6);
    assert!(a.iter().all(|&x| x < 3), "hashed: {a:?}");
    assert!(h.arenas_created() <= 3);

    let (_, a) = arenas_used_by(Heap::<Using<Lifo, PerCpu>>::new(), 4);
    // Online CPUs, not `available_parallelism`: a process limited to CPUs 4 and 5 of 8 runs
    // on arenas 4 and 5.
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    assert!(
        a.iter().all(|&x| x < cpus),
        "per-cpu: {a:?} with {cpus} CPUs online"
    );
}

/// A value heap dropped while a thread that used it is still alive: the thread's later exit
/// must not touch the dead heap, and its binding is pruned when it binds in another heap.
#[test]
fn heap_dropped_before_thread_exit() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let heap = Arc::new(Heap::<configs::Lifo>::new());
    let h = heap.clone();
    let t = std::thread::spawn(move || {
        let p = h.malloc(10);
        // SAFETY: live allocation of `h`.
        unsafe { h.free(p) };
        drop(h);
        done_tx.send(()).unwrap();
        rx.recv().unwrap();
        // The first heap is gone; bind in a second one.
        let h2 = Heap::<configs::Lifo>::new();
        let q = h2.malloc(10);
        assert_ne!(h2.arena_of(q), Some(0));
        // SAFETY: live allocation of `h2`.
        unsafe { h2.free(q) };
        h2.check_invariants().unwrap();
    });
    done_rx.recv().unwrap();
    drop(Arc::try_unwrap(heap).ok().unwrap());
    tx.send(()).unwrap();
    t.join().unwrap();
}

/// The fork handlers a heap installs on first use make `fork()` safe while other threads are
/// inside any heap of the process, or building one: the child can allocate from every heap, and
/// make a new one, even if a thread held an arena lock or the thread registry at that moment.
#[test]
fn fork_while_threads_allocate() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let single = Arc::new(Heap::<Using<Lifo, Single>>::new());
    let per_thread = Arc::new(Heap::<configs::AddrOrdered>::new());
    // First use installs the handlers (`Options::fork_handlers`, on by default).
    // SAFETY: live allocations of their heaps.
    unsafe {
        single.free(single.malloc(1));
        per_thread.free(per_thread.malloc(1));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut busy: Vec<_> = (0..3)
        .map(|t| {
            let (a, b, stop) = (single.clone(), per_thread.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let size = 16 + (n as usize * 7 + t) % 5000;
                    // SAFETY: live allocations of their heaps.
                    unsafe {
                        a.free(a.malloc(size));
                        b.free(b.malloc(size * 3));
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    // Heaps built and dropped all along: initialization runs under the thread registry's lock.
    busy.push({
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let h = Heap::<configs::Mrf>::new();
                // SAFETY: live allocation of `h`.
                unsafe { h.free(h.malloc(100)) };
                n += 1;
            }
            n
        })
    });
    for _ in 0..20 {
        let verdict = in_child(|| {
            for i in 0..1000 {
                let (p, q) = (single.malloc(i % 4000 + 1), per_thread.malloc(i * 13 + 1));
                if p.is_null() || q.is_null() {
                    return Err("allocation failed in the child");
                }
                // SAFETY: live allocations of their heaps.
                unsafe {
                    single.free(p);
                    per_thread.free(q);
                }
            }
            let fresh = Heap::<configs::Lifo>::new();
            if fresh.malloc(64).is_null() {
                return Err("a new heap failed in the child");
            }
            if single.check_invariants().is_err() || per_thread.check_invariants().is_err() {
                return Err("invariants broken in the child");
            }
            Ok(())
        });
        assert_eq!(verdict, Ok(()));
    }
    stop.store(true, Ordering::Relaxed);
    let ops: Vec<u64> = busy.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(ops.iter().all(|&n| n > 0), "{ops:?}");
    single.check_invariants().unwrap();
    per_thread.check_invariants().unwrap();
}

/// A huge allocation shrunk in place or moved gives address space back to the OS, where
/// another thread's new mapping may land at once: the heap must forget that range before the
/// OS can hand it out again, or it erases the newcomer's page-map entries (and then calls the
/// newcomer's pointers foreign). The window is a preemption right after `munmap` returns:
/// the test runs more threads than there are CPUs to make that likely, not certain (with the
/// `clear` after the `munmap`, it failed 6 to 8 runs in 10 on a 2-CPU machine).
#[test]
fn huge_resizes_race_with_new_mappings() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let heap = Arc::new(Heap::<Using<Lifo, Single>>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let threads = 2 * std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let resizers: Vec<_> = (0..threads)
        .map(|_| {
            let (h, stop) = (heap.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: `p` is live until freed; each realloc's result replaces it.
                    unsafe {
                        let mut p = h.malloc(6 * CHUNK);
                        // Shrink: gives back a hole of 4.75 MiB, room for other mappings.
                        p = h.realloc_c(p, CHUNK + CHUNK / 4);
                        // Often lands in the hole, so that the grow below moves.
                        let blocker = h.malloc(CHUNK);
                        p = h.realloc_c(p, 8 * CHUNK);
                        h.free(p);
                        h.free(blocker);
                    }
                }
            })
        })
        .collect();
    // New arena chunks (mapped, 1 MiB each, every second allocation here) land in the holes.
    let mappers: Vec<_> = (0..threads)
        .map(|_| {
            let (h, stop) = (heap.clone(), stop.clone());
            std::thread::spawn(move || {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
                let mut held = Vec::new();
                let mut verdict = Ok(());
                while held.len() < 1000
                    && std::time::Instant::now() < deadline
                    && !stop.load(Ordering::Relaxed)
                {
                    let p = h.malloc(500 << 10);
                    if p.is_null() {
                        break; // out of address space or commit: enough has been mapped
                    }
                    held.push(p);
                }
                for &p in &held {
                    if let Err(e) = h.usable_size(p) {
                        stop.store(true, Ordering::Relaxed);
                        verdict = Err(format!("{p:?}: {e}"));
                        // Nothing freed: the heap would abort on a pointer it no longer knows.
                        return verdict;
                    }
                }
                for p in held {
                    // SAFETY: live allocations of `h`.
                    unsafe { h.free(p) };
                }
                verdict
            })
        })
        .collect();
    let verdicts: Vec<_> = mappers.into_iter().map(|t| t.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    for t in resizers {
        t.join().unwrap();
    }
    for v in verdicts {
        v.unwrap_or_else(|e| panic!("the heap forgot a live mapping: {e}"));
    }
    heap.check_invariants().unwrap();
}

/// A program whose own fork handlers call `alloclab::fork` while the automatic ones are
/// installed too: the calls nest instead of deadlocking on locks the thread already holds.
/// (In a child, so that a deadlock fails the test instead of hanging it.)
#[test]
fn fork_calls_nest() {
    use alloclab::fork::{postfork_child, postfork_parent, prefork};
    let heap = Heap::<configs::Lifo>::new();
    // SAFETY: live allocation of `heap`; its first use installed the automatic handlers.
    unsafe { heap.free(heap.malloc(10)) };
    let verdict = in_child(|| {
        prefork();
        prefork();
        postfork_parent();
        postfork_parent();
        if heap.malloc(10).is_null() {
            return Err("allocation failed after nested calls");
        }
        // As from a handler of the program's: the automatic handlers nest inside.
        prefork();
        let grandchild = in_child(|| {
            postfork_child();
            let fresh = Heap::<configs::Mrf>::new();
            if heap.malloc(10).is_null() || fresh.malloc(10).is_null() {
                return Err("allocation failed in the grandchild");
            }
            Ok(())
        });
        postfork_parent();
        if grandchild.is_err() {
            return Err("the grandchild failed");
        }
        if Heap::<configs::Mrf>::new().malloc(10).is_null() {
            return Err("a new heap failed after the fork");
        }
        Ok(())
    });
    assert_eq!(verdict, Ok(()));
}
