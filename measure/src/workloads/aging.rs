//! Workloads that age a heap, for fragmentation over time: each counts the bytes it holds live
//! (`live`), touches every byte it allocates (so that live bytes are resident in every
//! allocator, and the resident size above them is what the allocator holds besides), and runs
//! on one thread.
//!
//! - `aging-phases`: a server. Long-lived state is replaced slowly while requests come in
//!   bursts; each request's objects live until 64 later requests have arrived. The size mix
//!   of both shifts between phases (small objects, then medium, then small with large
//!   buffers), so memory freed in one phase is asked for in other sizes in the next.
//! - `aging-robson`: an adversary in the style of Robson's bound. Rounds fill a fixed live
//!   budget with blocks of one size, then free all but one block per page, so every page
//!   stays pinned by one small block; the next round asks for twice the size, which none of
//!   the holes serve; three cycles over 16 B to 4 KiB, so later cycles can reuse the holes
//!   of earlier ones. Above full size the cycles grow, not the budget.
//! - `aging-trace`: the python3 trace (recorded from the program) replayed again and again,
//!   each replay freeing what it left live before the next starts: whether memory stays
//!   where the first replay left it.

use super::block::{scaled, Block};
use super::{Outcome, Params, Workload};
use crate::live;
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use alloclab_traces::trace::{bundled, Func, NO_SLOT};
use std::time::Instant;

/// Every byte of a block is written with this before its pattern.
const FILL: u8 = 0x5A;

/// `malloc(size)`, every byte written, counted live.
fn alloc(s: &dyn Subject, size: usize, id: u64, what: &str) -> Result<Block, String> {
    let p = s.malloc(size);
    if p.is_null() {
        return Err(format!("{what}: malloc({size}) returned null (block {id})"));
    }
    // SAFETY: a fresh allocation of `size` bytes, then its pattern over the written bytes.
    let b = unsafe {
        p.write_bytes(FILL, size);
        Block::fill(p, size, id)
    };
    live::add(size);
    Ok(b)
}

/// Checks `b`'s pattern, frees it, counts it dead.
///
/// # Safety
/// `b` is a live block of `s`, not used afterwards.
unsafe fn free(s: &dyn Subject, b: Block, what: &str) -> Result<(), String> {
    // SAFETY: the caller's contract.
    unsafe { b.verify_and_free(s, what)? };
    live::sub(b.size);
    Ok(())
}

/// A table of `n` empty slots, every page of it written (`None` is a tag written in each
/// slot), and its size in bytes.
fn table(n: usize) -> (Vec<Option<Block>>, u64) {
    let v = vec![None; n];
    let bytes = (n * std::mem::size_of::<Option<Block>>()) as u64;
    (v, bytes)
}

/// An empty vector with room for `n` blocks, its pages written (so that they are resident
/// before the run starts counting), and its size in bytes.
fn room(n: usize) -> (Vec<Block>, u64) {
    let mut v: Vec<Block> = Vec::with_capacity(n);
    let bytes = n * std::mem::size_of::<Block>();
    // SAFETY: the vector's spare capacity (`n` blocks), written as bytes, never read as blocks.
    unsafe { v.as_mut_ptr().cast::<u8>().write_bytes(0, bytes) };
    (v, bytes as u64)
}

// ---- aging-phases ---------------------------------------------------------------------------

/// Requests at full size.
const REQUESTS: u64 = 120_000;
/// Long-lived objects.
const STATE: usize = 16_384;
/// Requests in flight: a request's objects are freed when this many later ones have come.
const IN_FLIGHT: usize = 64;
/// Objects a request makes, at most.
const PER_REQUEST: usize = 48;
/// Phases in a run (cycling over the three size mixes).
const PHASES: u64 = 6;

/// A size from phase `phase`'s mix.
fn phase_size(r: &mut SplitMix64, phase: u64) -> usize {
    match phase % 3 {
        // Small objects: 16..256 B, most under 64.
        0 => {
            let top = if r.below(4) == 0 { 16 } else { 4 };
            16 * r.between(1, top) as usize
        }
        // Medium: 256 B..4 KiB.
        1 => 256 * r.between(1, 16) as usize,
        // Small, with one in 32 a buffer of 8..64 KiB.
        _ => {
            if r.below(32) == 0 {
                8192 * r.between(1, 8) as usize
            } else {
                16 * r.between(1, 8) as usize
            }
        }
    }
}

/// The phases workload.
pub struct Phases;

impl Workload for Phases {
    fn name(&self) -> &str {
        "aging-phases"
    }

    fn describe(&self) -> &str {
        "a server aging its heap: 16,384 long-lived objects replaced slowly, request bursts of \
         1..48 objects each living for 64 requests, the size mix of both shifting between six \
         phases (small, medium, small with 8..64 KiB buffers); one thread, every byte written"
    }

    fn threaded(&self) -> bool {
        false
    }

    fn run(&self, s: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        const WHAT: &str = "aging-phases";
        let requests = scaled(REQUESTS, params.scale);
        let per_phase = requests.div_ceil(PHASES);
        let (mut state, own_state) = table(STATE);
        let (mut flight, own_flight) = table(IN_FLIGHT * PER_REQUEST);
        live::track(own_state + own_flight);
        let mut r = SplitMix64::new(params.seed);
        let mut id = 0u64;
        let mut ops = 0u64;
        let start = Instant::now();
        for slot in state.iter_mut() {
            id += 1;
            *slot = Some(alloc(s, phase_size(&mut r, 0), id, WHAT)?);
            ops += 1;
        }
        for q in 0..requests {
            let phase = q / per_phase;
            // The request that arrived IN_FLIGHT requests ago is done.
            let base = (q as usize % IN_FLIGHT) * PER_REQUEST;
            for slot in &mut flight[base..base + PER_REQUEST] {
                if let Some(b) = slot.take() {
                    // SAFETY: a live block of `s`, taken out of its slot.
                    unsafe { free(s, b, WHAT)? };
                    ops += 1;
                }
            }
            let n = r.between(1, PER_REQUEST as u64) as usize;
            for slot in &mut flight[base..base + n] {
                id += 1;
                *slot = Some(alloc(s, phase_size(&mut r, phase), id, WHAT)?);
                ops += 1;
            }
            // One request in four replaces a long-lived object with one of this phase.
            if r.below(4) == 0 {
                let i = r.below(STATE as u64) as usize;
                id += 1;
                let new = alloc(s, phase_size(&mut r, phase), id, WHAT)?;
                if let Some(old) = state[i].replace(new) {
                    // SAFETY: the live block the slot held.
                    unsafe { free(s, old, WHAT)? };
                }
                ops += 2;
            }
        }
        let elapsed = start.elapsed();
        for b in state.into_iter().chain(flight).flatten() {
            // SAFETY: every block still live, each freed once.
            unsafe { free(s, b, WHAT)? };
            ops += 1;
        }
        Ok(Outcome { ops, elapsed })
    }
}

// ---- aging-robson ---------------------------------------------------------------------------

/// Live bytes each round fills up to, at full size (less below it, never more above it).
const BUDGET: u64 = 32 << 20;
/// Cycles over the sizes at full size (more above it: a longer aging of the same heap).
const CYCLES: u64 = 3;
/// The sizes of a cycle's rounds.
const ROBSON_SIZES: [usize; 9] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
const PAGE: usize = 4096;

/// The Robson-style workload.
pub struct Robson;

impl Workload for Robson {
    fn name(&self) -> &str {
        "aging-robson"
    }

    fn describe(&self) -> &str {
        "an adversary after Robson: each round fills 32 MiB live with blocks of one size, then \
         frees all but one block per 4 KiB page; the next round doubles the size (16 B..4 KiB, \
         three cycles at full size, more above it); one thread, every byte written"
    }

    fn threaded(&self) -> bool {
        false
    }

    fn run(&self, s: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        const WHAT: &str = "aging-robson";
        let budget = scaled(BUDGET, params.scale.min(1.0)).max(1 << 20);
        let cycles = scaled(CYCLES, params.scale.max(1.0)) as usize;
        // The most blocks live at once: a round's fill at the smallest size, plus what earlier
        // rounds pinned (at most one per page they filled).
        let pinned_max = cycles * ROBSON_SIZES.len() * (budget as usize / PAGE + 1);
        let round_max = budget as usize / ROBSON_SIZES[0] + 1;
        let (mut round, own_round) = room(round_max);
        let (mut kept, own_kept) = room(pinned_max);
        live::track(own_round + own_kept);
        let mut id = 0u64;
        let mut ops = 0u64;
        let mut held: u64 = 0;
        let start = Instant::now();
        for _ in 0..cycles {
            for &size in &ROBSON_SIZES {
                while held + (size as u64) <= budget && round.len() < round_max {
                    id += 1;
                    round.push(alloc(s, size, id, WHAT)?);
                    held += size as u64;
                    ops += 1;
                }
                // Keep the lowest-addressed block of each page, free the others.
                round.sort_unstable_by_key(|b| b.addr);
                let mut last_page = usize::MAX;
                for b in round.drain(..) {
                    let page = b.addr / PAGE;
                    if page != last_page && kept.len() < pinned_max {
                        last_page = page;
                        kept.push(b);
                    } else {
                        held -= b.size as u64;
                        // SAFETY: a live block of `s`, taken out of the round.
                        unsafe { free(s, b, WHAT)? };
                        ops += 1;
                    }
                }
            }
        }
        let elapsed = start.elapsed();
        for b in kept {
            // SAFETY: every pinned block, each freed once.
            unsafe { free(s, b, WHAT)? };
            ops += 1;
        }
        Ok(Outcome { ops, elapsed })
    }
}

// ---- aging-trace ----------------------------------------------------------------------------

/// Replays at full size.
const TRACE_REPLAYS: u64 = 30;

/// The trace-aging workload.
pub struct TraceAging;

impl Workload for TraceAging {
    fn name(&self) -> &str {
        "aging-trace"
    }

    fn describe(&self) -> &str {
        "the python3 trace (recorded from the program) replayed 30 times in a row, each replay \
         freeing what it left live before the next; one thread, every byte written"
    }

    fn threaded(&self) -> bool {
        false
    }

    fn prepare(&self) -> Result<(), String> {
        super::trace_replay::parsed(&bundled::PYTHON3_STDLIB).map(drop)
    }

    fn run(&self, s: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        const WHAT: &str = "aging-trace";
        let trace = super::trace_replay::parsed(&bundled::PYTHON3_STDLIB)?;
        let replays = scaled(TRACE_REPLAYS, params.scale);
        let (mut slots, own) = table(trace.slots as usize);
        live::track(own);
        let mut id = 0u64;
        let mut ops = 0u64;
        let start = Instant::now();
        for _ in 0..replays {
            for op in trace.ops() {
                if op.func == Func::JemallocStats {
                    continue;
                }
                // Every allocating call (aligned ones too) as a malloc; a realloc as a move:
                // the new block first, then the old freed (every byte of the new one written,
                // which a realloc in place would skip).
                let new = if op.func == Func::Free {
                    None
                } else {
                    id += 1;
                    let size = usize::try_from(op.request()).unwrap_or(usize::MAX);
                    Some(alloc(s, size.max(1), id, WHAT)?)
                };
                // The slot this call ends: `free`'s own, `realloc`'s old one (others: none).
                let dead = if op.func == Func::Free {
                    op.slot
                } else {
                    op.old
                };
                if dead != NO_SLOT {
                    if let Some(b) = slots[dead as usize].take() {
                        // SAFETY: the slot's live block.
                        unsafe { free(s, b, WHAT)? };
                    }
                }
                if let Some(new) = new {
                    if let Some(b) = slots[op.slot as usize].replace(new) {
                        // SAFETY: a block the trace overwrote without freeing.
                        unsafe { free(s, b, WHAT)? };
                    }
                }
                ops += 1;
            }
            for b in slots.iter_mut().filter_map(Option::take) {
                // SAFETY: what the replay left live, each freed once.
                unsafe { free(s, b, WHAT)? };
                ops += 1;
            }
        }
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
