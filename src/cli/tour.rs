//! `alloclab tour`: a built-in allocation workload run under each named config, with time and
//! heap statistics side by side.
//!
//! The workload is the premise of the run-reuse study: on each thread, bursts of same-size
//! objects are built up and torn down together, while a few objects from each burst live on
//! (replacing older long-lived ones at random), so that runs are left partly used.

use alloclab_measure::subjects::{SubjectEntry, SubjectKind};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::{HeapStats, Subject};
use std::time::{Duration, Instant};

/// Options of the tour.
#[derive(clap::Args, Debug, Clone)]
pub struct TourArgs {
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Bursts per thread.
    #[arg(long, default_value_t = 400)]
    pub rounds: usize,
    /// Long-lived objects each thread keeps.
    #[arg(long, default_value_t = 4000)]
    pub keep: usize,
    /// Seed of the workload's random choices (the same seed gives the same workload).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

const BURST_SIZES: [usize; 12] = [16, 24, 32, 48, 64, 96, 128, 200, 256, 512, 1024, 3000];

fn worker(heap: &dyn Subject, args: &TourArgs, thread: usize) -> Vec<(usize, usize)> {
    let mut rng = SplitMix64::new(args.seed.wrapping_mul(1000).wrapping_add(thread as u64));
    let mut keep: Vec<(usize, usize)> = Vec::with_capacity(args.keep);
    let mut burst: Vec<(usize, usize)> = Vec::with_capacity(4096);
    for _ in 0..args.rounds {
        let size = if rng.below(50) as usize == 0 {
            4096 + rng.below(200_000) as usize
        } else {
            BURST_SIZES[rng.below(BURST_SIZES.len() as u64) as usize]
        };
        let n = if size > 4096 {
            1 + rng.below(8) as usize
        } else {
            50 + rng.below(2000) as usize
        };
        for _ in 0..n {
            let p = heap.malloc(size);
            assert!(!p.is_null(), "out of memory");
            // Touch the object as a program would initialize it.
            // SAFETY: `p` holds `size` bytes.
            unsafe { p.write_bytes(0x5a, size.min(64)) };
            burst.push((p as usize, size));
        }
        // One object in 25 outlives its burst, replacing an older long-lived one.
        for i in (0..burst.len()).rev() {
            if rng.below(25) as usize == 0 {
                let obj = burst.swap_remove(i);
                if keep.len() < args.keep {
                    keep.push(obj);
                } else {
                    let j = rng.below(keep.len() as u64) as usize;
                    let old = std::mem::replace(&mut keep[j], obj);
                    // SAFETY: a live allocation of `heap`, freed once.
                    unsafe { heap.free(old.0 as *mut u8) };
                }
            }
        }
        // Tear the burst down, in allocation order.
        for (p, _) in burst.drain(..) {
            // SAFETY: as above.
            unsafe { heap.free(p as *mut u8) };
        }
    }
    keep
}

/// Runs the workload on a fresh heap; returns the time and the statistics with the long-lived
/// objects still live.
pub fn run(entry: &SubjectEntry, args: &TourArgs) -> (Duration, HeapStats) {
    let boxed = (entry.make)();
    let heap: &dyn Subject = &*boxed;
    let start = Instant::now();
    let kept: Vec<Vec<(usize, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads)
            .map(|t| s.spawn(move || worker(heap, args, t)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let elapsed = start.elapsed();
    let stats = heap.stats();
    if let Err(v) = heap.check() {
        panic!("{}: invariant broken after the tour: {v}", heap.describe());
    }
    for (p, _) in kept.into_iter().flatten() {
        // SAFETY: live allocations of `heap`.
        unsafe { heap.free(p as *mut u8) };
    }
    (elapsed, stats)
}

fn mib(b: Option<usize>) -> String {
    b.map_or("-".to_string(), |b| {
        format!("{:.2}", b as f64 / (1024.0 * 1024.0))
    })
}

/// The `tour` command: every alloclab config of `entries` (built-in and registered).
pub fn main(entries: &[SubjectEntry], args: &TourArgs) {
    println!(
        "alloclab tour: {} threads x {} bursts, {} long-lived objects per thread, seed {}",
        args.threads, args.rounds, args.keep, args.seed
    );
    println!(
        "(statistics taken at the end, with the long-lived objects still live; sizes in MiB;\n \
         frag % = 1 - allocated / active; docs/ARCHITECTURE.md, \"Statistics\", defines each \
         column)\n"
    );
    println!(
        "{:<14} {:>9} {:>11} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8}",
        "config",
        "time ms",
        "small allocs",
        "allocated",
        "active",
        "mapped",
        "resident",
        "dirty",
        "frag %",
        "runs",
        "nonfull"
    );
    let configs = entries.iter().filter(|e| e.kind == SubjectKind::Alloclab);
    for entry in configs {
        let (t, st) = run(entry, args);
        let bins = st.bins.as_ref();
        let sum = |f: fn(&crate::BinStats) -> u64| {
            bins.map_or("-".to_string(), |b| {
                b.iter().map(f).sum::<u64>().to_string()
            })
        };
        println!(
            "{:<14} {:>9.1} {:>11} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8}",
            entry.name,
            t.as_secs_f64() * 1e3,
            sum(|b| b.allocations),
            mib(st.allocated),
            mib(st.active),
            mib(st.mapped),
            mib(st.resident_estimate),
            mib(st.dirty),
            st.fragmentation()
                .map_or("-".to_string(), |f| format!("{:.1}", f * 100.0)),
            sum(|b| b.runs as u64),
            sum(|b| b.nonfull_runs as u64)
        );
    }
    for entry in entries.iter().filter(|e| e.kind == SubjectKind::Alloclab) {
        println!("  {}: {}", entry.name, (entry.make)().describe());
    }
    println!("\nTimes are one run each on a shared machine: for comparisons with confidence intervals use `alloclab compare`.");
}
