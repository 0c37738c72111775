//! Multi-threaded stress under every named config and every arena strategy: mixed sizes from
//! 1 byte to several MiB, alignments up to 1 MiB, cross-thread frees, realloc chains and
//! content verification, with `check_invariants()` during and after.

mod common;

use alloclab::configs::{self, Using};
use alloclab::policies::{
    AddrOrdered, CurrentRun, Hashed, Lifo, Mrf, PerCpu, RoundRobin, Single, ThreadCache,
    ThreadLocal,
};
use alloclab::{Config, Heap, Options};
use common::{fill, verify, Rng};
use std::sync::{Arc, Mutex};

const THREADS: usize = 4;
const OPS: usize = 12_000;

struct Block {
    p: usize,
    size: usize,
    align: usize,
    tag: u64,
}

fn allocate<C: Config>(heap: &Heap<C>, rng: &mut Rng, tag: u64) -> Block {
    let size = rng.size();
    let align = rng.align();
    let zero = rng.chance(10);
    let p = heap.allocate(size, align, zero);
    assert!(
        !p.is_null(),
        "allocation of {size} bytes aligned to {align} failed"
    );
    assert_eq!(
        p as usize % align,
        0,
        "{size} bytes at {p:?} not aligned to {align}"
    );
    let usable = heap.usable_size(p).unwrap();
    assert!(usable >= size, "usable size {usable} below request {size}");
    if zero {
        for off in common::sample_offsets(size) {
            // SAFETY: `p` has `size` bytes.
            let byte = unsafe { *p.add(off) };
            assert_eq!(byte, 0, "zeroed allocation of {size} not zero at {off}");
        }
    }
    // SAFETY: `p` has `size` writable bytes.
    unsafe { fill(p, size, tag) };
    Block {
        p: p as usize,
        size,
        align,
        tag,
    }
}

fn release<C: Config>(heap: &Heap<C>, b: Block) {
    // SAFETY: `b` is live, ours, and `size` bytes long.
    unsafe {
        verify(b.p as *const u8, b.size, b.tag);
        heap.free(b.p as *mut u8);
    }
}

fn stress_with<C: Config>(heap: Heap<C>, seed: u64) {
    let heap = Arc::new(heap);
    let exchange = Arc::new(Mutex::new(Vec::<Block>::new()));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (heap, exchange) = (heap.clone(), exchange.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed * 1000 + t as u64);
                let mut mine: Vec<Block> = Vec::new();
                for i in 0..OPS {
                    let tag = (t * OPS + i) as u64;
                    match rng.below(100) {
                        0..=49 => mine.push(allocate(&heap, &mut rng, tag)),
                        50..=77 if !mine.is_empty() => {
                            let k = rng.below(mine.len());
                            release(&heap, mine.swap_remove(k));
                        }
                        78..=89 if !mine.is_empty() => {
                            // A realloc chain step: contents survive across class boundaries.
                            let k = rng.below(mine.len());
                            let b = &mut mine[k];
                            let new_size = if rng.chance(50) {
                                rng.size()
                            } else {
                                b.size * 2 + 1
                            };
                            // SAFETY: `b` is live and ours.
                            let q = unsafe {
                                heap.reallocate(b.p as *mut u8, new_size, b.align, b.size)
                            };
                            assert!(!q.is_null());
                            assert_eq!(q as usize % b.align, 0);
                            // SAFETY: `q` has at least `min(size, new_size)` bytes of the old content.
                            unsafe {
                                common::verify_prefix(q, b.size, new_size, b.tag);
                                fill(q, new_size, tag);
                            }
                            *b = Block {
                                p: q as usize,
                                size: new_size,
                                align: b.align,
                                tag,
                            };
                        }
                        90..=94 if !mine.is_empty() => {
                            let k = rng.below(mine.len());
                            exchange.lock().unwrap().push(mine.swap_remove(k));
                        }
                        95..=99 => {
                            // Free something another thread allocated.
                            let b = exchange.lock().unwrap().pop();
                            if let Some(b) = b {
                                release(&heap, b);
                            }
                        }
                        _ => mine.push(allocate(&heap, &mut rng, tag)),
                    }
                    if t == 0 && i % 4000 == 0 {
                        heap.check_invariants()
                            .unwrap_or_else(|v| panic!("{}: {v}", C::NAME));
                    }
                }
                // Check the survivors, then keep half alive for the final check.
                let keep = mine.split_off(mine.len() / 2);
                for b in mine {
                    release(&heap, b);
                }
                keep
            })
        })
        .collect();
    let mut survivors: Vec<Block> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let mut live: Vec<(usize, usize)> = survivors.iter().map(|b| (b.p, b.size)).collect();
    live.extend(exchange.lock().unwrap().iter().map(|b| (b.p, b.size)));
    heap.check_live(&mut live)
        .unwrap_or_else(|v| panic!("{}: {v}", heap.describe()));
    survivors.append(&mut exchange.lock().unwrap());
    for b in survivors {
        release(&heap, b);
    }
    heap.check_invariants()
        .unwrap_or_else(|v| panic!("{}: {v}", heap.describe()));
    // The threads exited (their caches were flushed); this thread's cache goes back too, so
    // that the arenas must hold nothing (a no-op without a thread cache).
    assert_eq!(heap.stats().allocated, 0);
    heap.flush_thread_cache();
    heap.check_invariants()
        .unwrap_or_else(|v| panic!("{}: {v}", heap.describe()));
    let st = heap.stats();
    assert_eq!(
        st.allocated,
        0,
        "{}: bytes still allocated after freeing everything",
        heap.describe()
    );
    assert_eq!(st.active, 0);
    assert!(st
        .bins
        .iter()
        .all(|b| b.live == 0 && b.runs == 0 && b.allocations == b.frees));
    assert!(st.allocations() > (THREADS * OPS / 2) as u64);
}

fn stress<C: Config>(seed: u64) {
    stress_with(Heap::<C>::new(), seed)
}

#[test]
fn named_addr_ordered() {
    stress::<configs::AddrOrdered>(1);
}

#[test]
fn named_lifo() {
    stress::<configs::Lifo>(2);
}

#[test]
fn named_mrf() {
    stress::<configs::Mrf>(3);
}

#[test]
fn named_mrf_current() {
    stress::<configs::MrfCurrent>(4);
}

#[test]
fn named_lifo_tcache() {
    stress::<configs::LifoTcache>(12);
}

#[test]
fn thread_cache_over_shared_arenas() {
    stress::<Using<Mrf, RoundRobin, ThreadCache<{ 16 * 1024 }>>>(13);
}

#[test]
fn arenas_single() {
    stress::<Using<Lifo, Single>>(5);
}

#[test]
fn arenas_round_robin() {
    stress::<Using<Mrf, RoundRobin>>(6);
    stress_with(
        Heap::<Using<Lifo, RoundRobin>>::with_options(Options {
            narenas: 3,
            ..Options::DEFAULT
        }),
        7,
    );
}

#[test]
fn arenas_per_cpu() {
    stress::<Using<CurrentRun<Lifo>, PerCpu>>(8);
}

#[test]
fn arenas_hashed() {
    stress::<Using<CurrentRun<AddrOrdered>, Hashed>>(9);
}

#[test]
fn arenas_thread_local_small_only() {
    stress::<Using<AddrOrdered, ThreadLocal<496>>>(10);
}

#[test]
fn purging_everything_keeps_invariants() {
    // A zero dirty threshold purges on every release: the purge path runs constantly.
    stress_with(
        Heap::<configs::Lifo>::with_options(Options {
            dirty_max_pages: 0,
            ..Options::DEFAULT
        }),
        11,
    );
}
