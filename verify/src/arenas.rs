//! Arena-choice properties, for any `ArenaChoice`:
//!
//! - **stable across sizes**: a thread's small requests keep going to the same arena whatever
//!   sizes it requested in between (the thread-arenas seed, mozilla bug 1436541: one
//!   allocation above 512 bytes silently re-pointed a thread at the shared arena for good);
//! - **handed back at thread exit**: after threads come and go, no arena index stays leased;
//! - **bounded under churn**: short-lived threads do not make arenas without bound.
//!
//! The checking thread is pinned to one CPU, so that a per-CPU choice is stable too. Under
//! `--cfg loom` the threads are loom's (`loom::spawn`): call these inside a loom model.

use crate::finding::{Check, Finding};
use alloclab_core::{Config, Heap, MAX_ARENAS};
use std::sync::Arc;

#[cfg(loom)]
use crate::loom::spawn;
#[cfg(not(loom))]
use std::thread::spawn;

/// Request sizes around every class boundary the seed bug could trip on.
pub const BOUNDARY_SIZES: [usize; 12] = [
    64, 496, 497, 512, 513, 1024, 3840, 3841, 8192, 100_000, 1_000_000, 2_000_000,
];

fn pin_to_one_cpu() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_getcpu have no other
    // preconditions; pid 0 is the calling thread.
    unsafe {
        let cpu = libc::sched_getcpu().max(0) as usize;
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// In a fresh thread: the arena of a 32-byte request, then of another after each size in
/// [`BOUNDARY_SIZES`]; all must agree.
pub fn stable_across_sizes<C: Config>() -> Result<(), Finding> {
    let heap = Arc::new(Heap::<C>::new());
    let h = heap.clone();
    spawn(move || {
        pin_to_one_cpu();
        let first = h.malloc(32);
        let own = h.arena_of(first);
        let mut held = vec![first];
        for (i, size) in BOUNDARY_SIZES.into_iter().enumerate() {
            let p = h.malloc(size);
            let after = h.malloc(32);
            held.extend([p, after]);
            let now = h.arena_of(after);
            if now != own {
                return Err(Finding::new(
                    Check::ArenaChoice,
                    i + 1,
                    format!(
                        "{}: a {size}-byte request moved the thread's small requests from arena \
                         {own:?} to arena {now:?}",
                        C::NAME
                    ),
                ));
            }
        }
        for p in held {
            // SAFETY: live allocations of `h`, each freed once.
            unsafe { h.free(p) };
        }
        Ok(())
    })
    .join()
    .expect("arena check thread panicked")?;
    heap.check_invariants()
        .map_err(|v| Finding::new(Check::Invariants(v.kind), 0, v.to_string()))
}

/// `rounds` rounds of `width` threads that allocate, free and exit; afterwards no arena index
/// is leased, and arenas did not grow with the number of threads.
pub fn thread_churn<C: Config>(rounds: usize, width: usize) -> Result<(), Finding> {
    let heap = Arc::new(Heap::<C>::new());
    let mut peak = 0;
    for _ in 0..rounds {
        let ts: Vec<_> = (0..width)
            .map(|_| {
                let h = heap.clone();
                spawn(move || {
                    let ps: Vec<_> = [24, 700, 5000].iter().map(|&s| h.malloc(s)).collect();
                    for p in ps {
                        // SAFETY: live allocations of `h`, each freed once.
                        unsafe { h.free(p) };
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().expect("churn thread panicked");
        }
        peak = peak.max(heap.arenas_created());
    }
    if heap.arenas_leased() != 0 {
        return Err(Finding::new(
            Check::ArenaChoice,
            0,
            format!(
                "{}: {} arena indices still leased after every thread exited",
                C::NAME,
                heap.arenas_leased()
            ),
        ));
    }
    // A strategy may use an arena per concurrent thread, the shared one, and a fixed set of up
    // to 4 per CPU (round-robin's and hashed's default); what it must not do is make a new
    // arena for every thread ever started.
    let bound = width + 4 * alloclab_core::os::ncpus() + 1;
    if peak > bound.min(MAX_ARENAS) {
        return Err(Finding::new(
            Check::ArenaChoice,
            0,
            format!(
                "{}: {} threads, {width} at a time, made {peak} arenas (bound {bound})",
                C::NAME,
                rounds * width
            ),
        ));
    }
    heap.check_invariants()
        .map_err(|v| Finding::new(Check::Invariants(v.kind), 0, v.to_string()))
}
