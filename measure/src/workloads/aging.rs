//! Workloads that age a heap, for fragmentation over time: each counts the bytes it holds live
//! and the allocator calls it makes (`live`), touches every byte it allocates (so that live
//! bytes are resident in every allocator, and the resident size above them is what the
//! allocator holds besides), and runs on one thread. Each has a `-notouch` twin that writes
//! only the blocks' patterns (head, middle and tail): where every block spans at most two
//! pages, as in `aging-robson`, those writes reach every page the block covers, so the resident
//! size reads the same while the run does a fraction of the memory traffic, which is not the
//! question here. At full size (scale 1) each makes at least 100 million allocator calls
//! (`Workload::calls`): an aged heap, as a long-running server's is after hours.
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

/// `malloc(size)`, every byte written if `touch` (else only its pattern), counted live.
fn alloc(s: &dyn Subject, size: usize, id: u64, what: &str, touch: bool) -> Result<Block, String> {
    let p = s.malloc(size);
    if p.is_null() {
        return Err(format!("{what}: malloc({size}) returned null (block {id})"));
    }
    // SAFETY: a fresh allocation of `size` bytes, then its pattern over the written bytes.
    let b = unsafe {
        if touch {
            p.write_bytes(FILL, size);
        }
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

/// A workload's name, with `-notouch` when it writes only the patterns.
fn named(base: &'static str, touch: bool) -> &'static str {
    match (base, touch) {
        (b, true) => b,
        ("aging-phases", false) => "aging-phases-notouch",
        ("aging-robson", false) => "aging-robson-notouch",
        ("aging-trace", false) => "aging-trace-notouch",
        _ => unreachable!("an aging workload"),
    }
}

// ---- aging-phases ---------------------------------------------------------------------------

/// Requests at full size: about 49.5 calls each (`Phases::calls`), 104 million in all.
const REQUESTS: u64 = 2_100_000;
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
pub struct Phases {
    /// Every byte of every block written (else its pattern only).
    pub touch: bool,
}

impl Workload for Phases {
    fn name(&self) -> &str {
        named("aging-phases", self.touch)
    }

    fn describe(&self) -> &str {
        if self.touch {
            "a server aging its heap: 16,384 long-lived objects replaced slowly, request bursts \
             of 1..48 objects each living for 64 requests, the size mix of both shifting between \
             six phases (small, medium, small with 8..64 KiB buffers), 104 million calls at full \
             size; one thread, every byte written"
        } else {
            "aging-phases writing only each block's pattern (head, middle, tail)"
        }
    }

    fn threaded(&self) -> bool {
        false
    }

    /// Expected calls: every block is freed, so twice the allocations: the long-lived state,
    /// then per request 24.5 objects on average (1..48) and a replacement one time in four.
    /// The run's own count differs by its draws (about 0.05% at full size).
    fn calls(&self, params: &Params) -> Option<u64> {
        let requests = scaled(REQUESTS, params.scale) as f64;
        let per_request = (1 + PER_REQUEST) as f64 / 2.0 + 0.25;
        Some((2.0 * (STATE as f64 + requests * per_request)).round() as u64)
    }

    fn run(&self, s: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let what = self.name();
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
            *slot = Some(alloc(s, phase_size(&mut r, 0), id, what, self.touch)?);
            ops += 1;
        }
        for q in 0..requests {
            let phase = q / per_phase;
            // The request that arrived IN_FLIGHT requests ago is done.
            let base = (q as usize % IN_FLIGHT) * PER_REQUEST;
            for slot in &mut flight[base..base + PER_REQUEST] {
                if let Some(b) = slot.take() {
                    // SAFETY: a live block of `s`, taken out of its slot.
                    unsafe { free(s, b, what)? };
                    ops += 1;
                }
            }
            let n = r.between(1, PER_REQUEST as u64) as usize;
            for slot in &mut flight[base..base + n] {
                id += 1;
                *slot = Some(alloc(s, phase_size(&mut r, phase), id, what, self.touch)?);
                ops += 1;
            }
            // One request in four replaces a long-lived object with one of this phase.
            if r.below(4) == 0 {
                let i = r.below(STATE as u64) as usize;
                id += 1;
                let new = alloc(s, phase_size(&mut r, phase), id, what, self.touch)?;
                if let Some(old) = state[i].replace(new) {
                    // SAFETY: the live block the slot held.
                    unsafe { free(s, old, what)? };
                }
                ops += 2;
            }
        }
        let elapsed = start.elapsed();
        for b in state.into_iter().chain(flight).flatten() {
            // SAFETY: every block still live, each freed once.
            unsafe { free(s, b, what)? };
            ops += 1;
        }
        Ok(Outcome { ops, elapsed })
    }
}

// ---- aging-robson ---------------------------------------------------------------------------

/// Live bytes each round fills up to, at full size.
const BUDGET: u64 = 32 << 20;
/// Cycles over the sizes at full size: at least 4.2 million calls each (`robson_min_calls`).
const CYCLES: u64 = 25;
/// The sizes of a cycle's rounds.
const ROBSON_SIZES: [usize; 9] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
const PAGE: usize = 4096;

/// The budget and cycles at `scale`: the cycles scale; the budget stays 32 MiB down to an
/// eighth of full size (a heap of the same size aged for fewer calls), then shrinks (tests).
fn robson_shape(scale: f64) -> (u64, u64) {
    let budget = scaled(BUDGET, (scale * 8.0).min(1.0)).max(1 << 20);
    (budget, scaled(CYCLES, scale))
}

/// The fewest calls a run at `scale` makes: at a round's start the pinned blocks hold at most
/// half the budget, so the round allocates at least half the budget's worth of its size, and
/// every block is freed (two calls each).
fn robson_min_calls(scale: f64) -> u64 {
    let (budget, cycles) = robson_shape(scale);
    let per_cycle: u64 = ROBSON_SIZES
        .iter()
        .map(|&size| 2 * (budget / 2 / size as u64))
        .sum();
    cycles * per_cycle
}

/// The Robson-style workload.
pub struct Robson {
    /// Every byte of every block written (else its pattern only, which reaches every page).
    pub touch: bool,
}

impl Workload for Robson {
    fn name(&self) -> &str {
        named("aging-robson", self.touch)
    }

    fn describe(&self) -> &str {
        if self.touch {
            "an adversary after Robson: each round fills 32 MiB live with blocks of one size, \
             then frees all but one block per 4 KiB page (the pinned blocks held to half the \
             budget, oldest freed first); the next round doubles the size (16 B..4 KiB, 25 cycles \
             at full size: 100 million calls at least); one thread, every byte written"
        } else {
            "aging-robson writing only each block's pattern (head, middle, tail), which reaches \
             every page a block of at most 4 KiB covers"
        }
    }

    fn threaded(&self) -> bool {
        false
    }

    /// A lower bound (the run's count depends on which blocks share a page).
    fn calls(&self, params: &Params) -> Option<u64> {
        Some(robson_min_calls(params.scale))
    }

    fn run(&self, s: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let (budget, cycles) = robson_shape(params.scale);
        self.run_shaped(s, budget, cycles)
    }
}

impl Robson {
    /// A run of `cycles` cycles filling `budget` bytes per round.
    fn run_shaped(&self, s: &dyn Subject, budget: u64, cycles: u64) -> Result<Outcome, String> {
        let what = self.name();
        let pin_max = budget / 2;
        // The most blocks live at once: a round's fill at the smallest size plus the pinned,
        // at most one per page of the budget.
        let pinned_max = budget as usize / PAGE + 1;
        let round_max = budget as usize / ROBSON_SIZES[0] + 1;
        let (mut round, own_round) = room(round_max);
        let (kept_room, own_kept) = room(pinned_max);
        let mut kept = std::collections::VecDeque::from(kept_room);
        live::track(own_round + own_kept);
        let mut id = 0u64;
        let mut ops = 0u64;
        let mut held: u64 = 0;
        let mut pinned: u64 = 0;
        let start = Instant::now();
        for _ in 0..cycles {
            for &size in &ROBSON_SIZES {
                while held + (size as u64) <= budget && round.len() < round_max {
                    id += 1;
                    round.push(alloc(s, size, id, what, self.touch)?);
                    held += size as u64;
                    ops += 1;
                }
                // Keep the lowest-addressed block of each page, free the others; the oldest
                // pinned blocks go first when the pinned would pass half the budget.
                round.sort_unstable_by_key(|b| b.addr);
                let mut last_page = usize::MAX;
                for b in round.drain(..) {
                    let page = b.addr / PAGE;
                    if page != last_page {
                        last_page = page;
                        while pinned + size as u64 > pin_max || kept.len() == pinned_max {
                            let old = kept.pop_front().expect("pinned bytes are in blocks");
                            pinned -= old.size as u64;
                            held -= old.size as u64;
                            // SAFETY: a live pinned block of `s`, taken out of the queue.
                            unsafe { free(s, old, what)? };
                            ops += 1;
                        }
                        pinned += size as u64;
                        kept.push_back(b);
                    } else {
                        held -= b.size as u64;
                        // SAFETY: a live block of `s`, taken out of the round.
                        unsafe { free(s, b, what)? };
                        ops += 1;
                    }
                }
            }
        }
        let elapsed = start.elapsed();
        for b in kept {
            // SAFETY: every pinned block, each freed once.
            unsafe { free(s, b, what)? };
            ops += 1;
        }
        Ok(Outcome { ops, elapsed })
    }
}

// ---- aging-trace ----------------------------------------------------------------------------

/// Replays at full size: 1.36 million calls each (`TraceAging::calls`).
const TRACE_REPLAYS: u64 = 75;

/// The trace-aging workload.
pub struct TraceAging {
    /// Every byte of every block written (else its pattern only).
    pub touch: bool,
}

impl Workload for TraceAging {
    fn name(&self) -> &str {
        named("aging-trace", self.touch)
    }

    fn describe(&self) -> &str {
        if self.touch {
            "the python3 trace (recorded from the program) replayed 75 times in a row, each \
             replay freeing what it left live before the next (100 million calls at full size); \
             one thread, every byte written"
        } else {
            "aging-trace writing only each block's pattern (head, middle, tail)"
        }
    }

    fn threaded(&self) -> bool {
        false
    }

    /// Exact: each allocating call of the trace is one `malloc` here, and every block is freed
    /// once in its replay (by the trace, by being overwritten, or at the replay's end).
    fn calls(&self, params: &Params) -> Option<u64> {
        let trace = super::trace_replay::parsed(&bundled::PYTHON3_STDLIB).ok()?;
        let allocs = trace
            .ops()
            .iter()
            .filter(|op| op.func != Func::Free && op.func != Func::JemallocStats)
            .count() as u64;
        Some(scaled(TRACE_REPLAYS, params.scale) * 2 * allocs)
    }

    fn prepare(&self) -> Result<(), String> {
        super::trace_replay::parsed(&bundled::PYTHON3_STDLIB).map(drop)
    }

    fn run(&self, s: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let what = self.name();
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
                    ops += 1;
                    Some(alloc(s, size.max(1), id, what, self.touch)?)
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
                        unsafe { free(s, b, what)? };
                        ops += 1;
                    }
                }
                if let Some(new) = new {
                    if let Some(b) = slots[op.slot as usize].replace(new) {
                        // SAFETY: a block the trace overwrote without freeing.
                        unsafe { free(s, b, what)? };
                        ops += 1;
                    }
                }
            }
            for b in slots.iter_mut().filter_map(Option::take) {
                // SAFETY: what the replay left live, each freed once.
                unsafe { free(s, b, what)? };
                ops += 1;
            }
        }
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloclab_core::Heap;
    use alloclab_policies::configs::Lifo as LifoConfig;

    fn params(scale: f64) -> Params {
        Params {
            threads: 1,
            scale,
            seed: 7,
        }
    }

    #[test]
    fn a_trace_run_makes_exactly_the_calls_it_says() {
        let w = TraceAging { touch: false };
        let p = params(1.0 / TRACE_REPLAYS as f64);
        let heap = Heap::<LifoConfig>::new();
        let out = w.run(&heap, &p).unwrap();
        assert_eq!(Some(out.ops), w.calls(&p));
    }

    #[test]
    fn a_phases_run_makes_about_the_calls_it_expects() {
        let w = Phases { touch: false };
        let p = params(0.005);
        let heap = Heap::<LifoConfig>::new();
        let out = w.run(&heap, &p).unwrap();
        let expected = w.calls(&p).unwrap() as f64;
        assert!(
            (out.ops as f64 / expected - 1.0).abs() < 0.02,
            "{} against {expected}",
            out.ops
        );
    }

    #[test]
    fn robson_makes_at_least_its_lower_bound_and_every_cycle_allocates() {
        let w = Robson { touch: false };
        let heap = Heap::<LifoConfig>::new();
        let one = w.run_shaped(&heap, 1 << 20, 1).unwrap().ops;
        let three = w.run_shaped(&heap, 1 << 20, 3).unwrap().ops;
        // Later cycles fill at least half the budget per round (the first, the whole of it
        // in its early rounds): no cycle runs empty, as they did when the first pinned it all.
        assert!(three as f64 > 1.8 * one as f64, "{one} then {three}");
        let p = params(0.001);
        let (budget, cycles) = robson_shape(p.scale);
        assert_eq!((budget, cycles), (1 << 20, 1));
        let out = w.run(&heap, &p).unwrap();
        assert!(out.ops >= w.calls(&p).unwrap(), "{}", out.ops);
    }

    #[test]
    fn every_aging_workload_reaches_a_hundred_million_calls_at_full_size() {
        let p = params(1.0);
        for touch in [true, false] {
            let ws: [Box<dyn Workload>; 3] = [
                Box::new(Phases { touch }),
                Box::new(Robson { touch }),
                Box::new(TraceAging { touch }),
            ];
            for w in ws {
                let calls = w.calls(&p).unwrap();
                assert!(calls >= 100_000_000, "{}: {calls}", w.name());
            }
        }
    }
}
