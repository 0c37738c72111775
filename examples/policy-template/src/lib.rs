//! A run-reuse policy of your own, as a template: copy this crate, rename the policy, change
//! `pick`, and every tool of alloclab works on it (see README.md here).
//!
//! **Chunk LIFO**: serve the next small allocation from the lowest-addressed chunk that has a
//! non-full run of the bin, and within that chunk from the run that became non-full last.
//! Low chunks fill first, so high chunks get a chance to empty and go back to the OS; within
//! a chunk it keeps LIFO's recency. `pick` scans the bin's list: O(non-full runs).
//!
//! The policy keeps its runs in alloclab's intrusive `RunList`: nothing it does allocates,
//! which matters because the engine calls it with an arena lock held (and, when the heap is a
//! program's allocator, any allocation here would re-enter it).

use alloclab::configs::Using;
use alloclab::policies::{ListLinks, ListRun, NoCache, RunList, ThreadLocal};
use alloclab::size_class::CHUNK;
use alloclab::{Config, Removal, RunReuse};

/// The chunk a run lives in (chunks are `CHUNK`-aligned).
pub fn chunk_of(run_addr: usize) -> usize {
    run_addr & !(CHUNK - 1)
}

/// Lowest chunk first, LIFO within a chunk.
pub struct ChunkLifo;

// SAFETY: a run is in the list exactly from `insert` to `remove`, `pick` returns only runs in
// the list, and links are touched only for listed runs (all through `RunList`).
unsafe impl RunReuse for ChunkLifo {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "chunk-lifo";

    fn insert(bin: &mut RunList, run: ListRun) {
        // The front of the list is the run that became non-full last.
        bin.push_front(run);
    }

    fn pick(bin: &mut RunList) -> Option<ListRun> {
        // The first run met in list order (most recent first) among the lowest chunk's.
        let mut best: Option<ListRun> = None;
        bin.for_each(&mut |r| {
            if best.is_none_or(|b| chunk_of(r.addr()) < chunk_of(b.addr())) {
                best = Some(r);
            }
        });
        best
    }

    fn remove(bin: &mut RunList, run: ListRun, _why: Removal) {
        bin.remove(run);
    }

    fn for_each(bin: &RunList, f: &mut dyn FnMut(ListRun)) {
        bin.for_each(f);
    }

    fn check(bin: &RunList) -> Result<(), &'static str> {
        bin.check()
    }
}

/// The heap configuration the tools select by name: `ChunkLifo` with thread-local arenas and
/// no thread cache in front (`ThreadCache` would put one there).
pub struct ChunkLifoConfig;

impl Config for ChunkLifoConfig {
    type Reuse = ChunkLifo;
    type Arenas = ThreadLocal;
    type Front = NoCache;
    const NAME: &'static str = "chunk-lifo";
}

/// The same policy with any arena choice, for studies that vary it.
pub type ChunkLifoWith<A> = Using<ChunkLifo, A>;
