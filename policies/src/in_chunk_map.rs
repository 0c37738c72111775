//! `MrfChunkMap`: `Mrf` with its list links kept in the chunk map, the last variant the seed
//! study measured (bug 1924444, comment 5: "moving the list linkage back to the chunk map
//! header").
//!
//! The order is `Mrf`'s; only where the links live differs. In the run header, relinking a
//! run on `free` writes the headers of its list neighbours, each at the far end of its own run;
//! in the chunk map (the entry of each run's first page, as mozjemalloc's `arena_chunk_map_t`)
//! it writes the chunk headers' dense page entries, which the engine reads anyway to find the
//! run. The seed measured it slightly faster than MRF with a current run and kept the idea.

use crate::list::{ListLinks, ListRun, RunList};
use alloclab_core::{LinkPlace, Removal, RunReuse};

/// Most-recently-freed-first reuse, its links in the chunk map.
pub struct MrfChunkMap;

// SAFETY: as for `Mrf`: a run is listed exactly from `insert` to `remove`. The links are 16
// bytes, what the chunk map holds per run (checked at compile time).
unsafe impl RunReuse for MrfChunkMap {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "mrf-chunkmap";
    const LINKS: LinkPlace = LinkPlace::ChunkMap;

    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_front(run);
    }

    fn freed(bin: &mut RunList, run: ListRun) {
        bin.move_to_front(run);
    }

    fn pick(bin: &mut RunList) -> Option<ListRun> {
        bin.front()
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
