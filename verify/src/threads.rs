//! Multi-threaded smoke: threads allocate, write, check and free at random, handing part of
//! their allocations to other threads to free (cross-thread frees), then the heap is checked
//! against what is still live.
//!
//! Interleavings are up to the OS: this catches crashes, corruption and lost updates that show
//! up under real contention, not every schedule (the loom models do that on small cases).

use crate::finding::{Check, Finding};
use crate::harness::{check_pattern, fill_pattern};
use crate::rng::Rng;
use alloclab_core::{Config, Heap};
use std::sync::{Arc, Mutex};

/// Mostly small sizes, some large, rarely huge.
fn size(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=59 => crate::ops::HOT_SIZES[rng.below(crate::ops::HOT_SIZES.len())],
        60..=94 => 1 + rng.below(3840),
        95..=98 => 3841 + rng.below(200_000),
        _ => 1_100_000 + rng.below(1_000_000),
    }
}

/// A block of the cross-thread checks (this smoke and the loom model): where, how big, and the
/// tag of its pattern.
#[derive(Clone, Copy)]
pub(crate) struct Block {
    pub(crate) ptr: usize,
    pub(crate) size: usize,
    pub(crate) tag: u64,
}

fn fill(b: Block) {
    // SAFETY: a live allocation of at least `size` bytes.
    unsafe { fill_pattern(b.ptr, b.size, b.tag) };
}

pub(crate) fn intact(b: Block) -> Result<(), Finding> {
    // SAFETY: a live allocation of at least `size` bytes.
    match unsafe { check_pattern(b.ptr, b.size, b.size, b.tag) } {
        None => Ok(()),
        Some(off) => Err(Finding::new(
            Check::Contents,
            0,
            format!("{:#x} ({} B) changed at offset {off}", b.ptr, b.size),
        )),
    }
}

/// Runs `threads` threads of `ops` operations each on one heap of config `C`; about a quarter
/// of the frees are of blocks another thread allocated.
pub fn smoke<C: Config>(threads: usize, ops: usize, seed: u64) -> Result<(), Finding> {
    let heap = Arc::new(Heap::<C>::new());
    let exchange: Arc<Mutex<Vec<Block>>> = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let heap = heap.clone();
            let exchange = exchange.clone();
            std::thread::spawn(move || -> Result<Vec<Block>, Finding> {
                let mut rng = Rng::new(seed, t);
                let mut mine: Vec<Block> = Vec::new();
                for i in 0..ops {
                    match rng.below(10) {
                        0..=4 => {
                            let size = size(&mut rng);
                            let p = heap.malloc(size) as usize;
                            if p == 0 {
                                // A broken policy contract (verification builds) explains
                                // the failure better than the failure itself.
                                heap.check_invariants().map_err(|v| {
                                    Finding::new(Check::Invariants(v.kind), i, v.to_string())
                                })?;
                                return Err(Finding::new(Check::LiveModel, i, "malloc failed"));
                            }
                            let b = Block {
                                ptr: p,
                                size,
                                tag: (t as u64) << 40 | i as u64,
                            };
                            fill(b);
                            if rng.below(4) == 0 {
                                exchange.lock().unwrap().push(b);
                            } else {
                                mine.push(b);
                            }
                        }
                        5..=7 if !mine.is_empty() => {
                            let b = mine.swap_remove(rng.below(mine.len()));
                            intact(b)?;
                            // SAFETY: a live allocation of `heap`, freed once.
                            unsafe { heap.free(b.ptr as *mut u8) };
                        }
                        _ => {
                            let b = exchange.lock().unwrap().pop();
                            if let Some(b) = b {
                                intact(b)?;
                                // SAFETY: a live allocation of `heap`, handed over, freed once.
                                unsafe { heap.free(b.ptr as *mut u8) };
                            }
                        }
                    }
                }
                Ok(mine)
            })
        })
        .collect();
    let mut live = Vec::new();
    for h in handles {
        live.extend(h.join().expect("smoke thread panicked")?);
    }
    live.extend(exchange.lock().unwrap().drain(..));
    let mut ranges: Vec<(usize, usize)> = live.iter().map(|b| (b.ptr, b.size)).collect();
    heap.check_live(&mut ranges)
        .map_err(|v| Finding::new(Check::Invariants(v.kind), 0, v.to_string()))?;
    for &b in &live {
        intact(b)?;
        // SAFETY: every block is live and freed once.
        unsafe { heap.free(b.ptr as *mut u8) };
    }
    heap.check_invariants()
        .map_err(|v| Finding::new(Check::Invariants(v.kind), 0, v.to_string()))?;
    let st = heap.stats();
    if st.allocated != 0 {
        return Err(Finding::new(
            Check::Stats,
            0,
            format!("everything freed but {} bytes allocated", st.allocated),
        ));
    }
    // The threads have exited, so their caches (if the front end has them) were flushed: once
    // this thread's is too, no region may remain cached.
    heap.flush_thread_cache();
    let st = heap.stats();
    if st.cached != 0 {
        return Err(Finding::new(
            Check::Stats,
            0,
            format!("threads exited and flushed, but {} bytes cached", st.cached),
        ));
    }
    Ok(())
}
