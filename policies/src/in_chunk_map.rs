//! `InChunkMap<P>`: any run-reuse policy with its links kept in the chunk map rather than in
//! the run header; `MrfChunkMap = InChunkMap<Mrf>` is the last variant the seed study measured
//! (bug 1924444, comment 5: "moving the list linkage back to the chunk map header").
//!
//! The order is `P`'s; only where the links live differs. In the run header, relinking a run
//! on `free` writes the headers of its list neighbours, each at the far end of its own run; in
//! the chunk map (the entry of each run's first page, as mozjemalloc's `arena_chunk_map_t`) it
//! writes the chunk headers' dense page entries, which the engine reads anyway to find the
//! run. The seed measured it slightly faster than MRF with a current run and kept the idea.
//! `P`'s links must fit in 16 bytes (checked at compile time): the list policies' do, the
//! address-ordered treap's do not.

use crate::Mrf;
use alloclab_core::{LinkPlace, Removal, RunRef, RunReuse};
use core::marker::PhantomData;

/// `P`, its links in the chunk map.
pub struct InChunkMap<P>(PhantomData<P>);

/// Most-recently-freed-first reuse, its links in the chunk map.
pub type MrfChunkMap = InChunkMap<Mrf>;

// SAFETY: every call is `P`'s, so `P`'s contract (a run is known from `insert` to `remove`)
// carries over; the handles reach the links wherever `LINKS` puts them.
unsafe impl<P: RunReuse> RunReuse for InChunkMap<P> {
    type Links = P::Links;
    type Bin = P::Bin;
    const NAME: &'static str = "chunk-map";
    const LINKS: LinkPlace = LinkPlace::ChunkMap;

    fn write_name(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        P::write_name(w)?;
        w.write_str("+chunk-map")
    }

    fn insert(bin: &mut P::Bin, run: RunRef<P::Links>) {
        P::insert(bin, run);
    }

    fn freed(bin: &mut P::Bin, run: RunRef<P::Links>) {
        P::freed(bin, run);
    }

    fn pick(bin: &mut P::Bin) -> Option<RunRef<P::Links>> {
        P::pick(bin)
    }

    fn remove(bin: &mut P::Bin, run: RunRef<P::Links>, why: Removal) {
        P::remove(bin, run, why);
    }

    fn for_each(bin: &P::Bin, f: &mut dyn FnMut(RunRef<P::Links>)) {
        P::for_each(bin, f);
    }

    fn check(bin: &P::Bin) -> Result<(), &'static str> {
        P::check(bin)
    }

    fn prefer(candidate: RunRef<P::Links>, current: RunRef<P::Links>) -> bool {
        P::prefer(candidate, current)
    }
}
