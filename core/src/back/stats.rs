//! Statistics: what a heap holds, per arena and per bin, and how to print it without
//! allocating.
//!
//! Definitions (jemalloc's, where jemalloc has one):
//! - `allocated`: usable bytes of live allocations;
//! - `active`: bytes of pages backing live allocations (small runs, large and huge);
//! - `mapped`: bytes of chunks and huge mappings;
//! - `dirty`: bytes of free pages not yet purged;
//! - `metadata`: bytes mapped for the engine's own structures (chunk headers, page map, base);
//! - `resident`: an upper-bound estimate, `active + dirty + metadata`;
//! - `cached`: usable bytes of regions held by thread caches (front ends with a cache): taken
//!   from their runs but not live, so counted in `active` and not in `allocated`.
//!
//! An arena's own counters (`Heap::arena_stats`) see a region in a thread cache as taken from
//! its run (`live`, `allocations` and `frees` count regions leaving and entering runs); the
//! heap's `Stats` count the program's: regions in caches are `cached`, not `live`, and
//! allocations and frees are the program's calls, wherever they were served.

use crate::meta::size_class::{class_size, NBINS};
use crate::platform::os::Syscalls;
use core::fmt::{self, Write};

/// Counters of one bin (one small class), or of the same bin summed over arenas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BinStats {
    /// Runs currently serving this class.
    pub runs: usize,
    /// Of those, runs with both free and allocated regions.
    pub nonfull_runs: usize,
    /// Live regions (in `Stats`: held by the program; in an arena's own counters: taken from
    /// runs, thread caches included).
    pub live: usize,
    /// Regions held by thread caches (in `Stats` only; 0 in an arena's own counters).
    pub cached: usize,
    /// Allocations served since the heap started.
    pub allocations: u64,
    /// Frees since the heap started.
    pub frees: u64,
    /// Allocations served from a run the run-reuse policy picked among the bin's non-full
    /// runs (the policy's choice mattered), since the heap started.
    pub picks: u64,
    /// Runs made because the policy had no non-full run to offer, since the heap started.
    pub new_runs: u64,
    /// Runs that became empty and went back to the arena as free pages, since the heap
    /// started.
    pub runs_released: u64,
}

impl BinStats {
    pub(crate) fn add(&mut self, o: &BinStats) {
        self.runs += o.runs;
        self.nonfull_runs += o.nonfull_runs;
        self.live += o.live;
        self.cached += o.cached;
        self.allocations += o.allocations;
        self.frees += o.frees;
        self.picks += o.picks;
        self.new_runs += o.new_runs;
        self.runs_released += o.runs_released;
    }
}

/// Counters of one arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaStats {
    /// Chunks the arena owns.
    pub chunks: usize,
    /// Pages in small runs and large allocations.
    pub active_pages: usize,
    /// Free pages not purged.
    pub dirty_pages: usize,
    /// Usable bytes of live small allocations.
    pub small_allocated: usize,
    /// Bytes of live large allocations.
    pub large_allocated: usize,
    /// Large allocations since start.
    pub large_allocations: u64,
    /// Large frees since start.
    pub large_frees: u64,
    /// Purge passes (each chose dirty pages to return, whatever the number of spans).
    pub purges: u64,
    /// Pages returned to the OS by purging.
    pub purged_pages: u64,
    /// Calls to the OS that returned pages: `madvise` calls, one per contiguous dirty span
    /// purged.
    pub purge_calls: u64,
    /// Acquisitions of the arena's lock, contended or not (reading these statistics is one).
    pub lock_acquisitions: u64,
    /// Of those, acquisitions that found the lock held and waited (spun or slept).
    pub lock_contended: u64,
    /// Nanoseconds (`CLOCK_MONOTONIC`) spent waiting in contended acquisitions.
    pub lock_wait_ns: u64,
}

impl ArenaStats {
    pub(crate) fn add(&mut self, o: &ArenaStats) {
        self.chunks += o.chunks;
        self.active_pages += o.active_pages;
        self.dirty_pages += o.dirty_pages;
        self.small_allocated += o.small_allocated;
        self.large_allocated += o.large_allocated;
        self.large_allocations += o.large_allocations;
        self.large_frees += o.large_frees;
        self.purges += o.purges;
        self.purged_pages += o.purged_pages;
        self.purge_calls += o.purge_calls;
        self.lock_acquisitions += o.lock_acquisitions;
        self.lock_contended += o.lock_contended;
        self.lock_wait_ns += o.lock_wait_ns;
    }

    /// Small and large allocations served since start.
    pub fn allocations(&self, bins: &[BinStats; NBINS]) -> u64 {
        self.large_allocations + bins.iter().map(|b| b.allocations).sum::<u64>()
    }
}

/// A snapshot of a whole heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Usable bytes of live allocations.
    pub allocated: usize,
    /// Bytes of pages backing live allocations.
    pub active: usize,
    /// Bytes of chunks and huge mappings.
    pub mapped: usize,
    /// Estimated resident bytes: active + dirty + metadata.
    pub resident: usize,
    /// Bytes of the engine's own structures.
    pub metadata: usize,
    /// Bytes of free pages not purged.
    pub dirty: usize,
    /// Usable bytes of regions held by thread caches.
    pub cached: usize,
    /// Arenas created.
    pub arenas: usize,
    /// Arenas that served at least one allocation.
    pub arenas_used: usize,
    /// Arena counters summed over arenas.
    pub arena: ArenaStats,
    /// The most contended acquisitions of one arena's lock (`ArenaStats::lock_contended`).
    pub lock_contended_max_arena: u64,
    /// The most nanoseconds waited for one arena's lock (`ArenaStats::lock_wait_ns`).
    pub lock_wait_ns_max_arena: u64,
    /// Live huge allocations.
    pub huge_live: usize,
    /// Bytes of live huge allocations.
    pub huge_allocated: usize,
    /// Huge allocations since start.
    pub huge_allocations: u64,
    /// Huge frees since start.
    pub huge_frees: u64,
    /// Freed huge mappings waiting in the heap's cache for reuse.
    pub huge_cached: usize,
    /// Their bytes (counted in `mapped` and `resident`).
    pub huge_cached_bytes: usize,
    /// Huge allocations served by a cached mapping (no fresh `mmap`).
    pub huge_cache_hits: u64,
    /// Fresh mappings made for huge allocations and their moves (each one `mmap` or a few:
    /// an aligned mapping may take up to three, see `os::map_aligned`).
    pub huge_maps: u64,
    /// Huge mappings, or tails of them, given back with `munmap` (arena chunks never are).
    pub huge_unmaps: u64,
    /// `mremap` calls for huge blocks (realloc, reuse of a smaller cached mapping).
    pub huge_remaps: u64,
    /// Memory system calls of the whole process through the engine (every heap), when the
    /// snapshot was taken: `mmap` (chunks, huge mappings, metadata), `munmap`, `madvise`,
    /// `mremap`.
    pub syscalls: Syscalls,
    /// Bin counters summed over arenas.
    pub bins: [BinStats; NBINS],
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            allocated: 0,
            active: 0,
            mapped: 0,
            resident: 0,
            metadata: 0,
            dirty: 0,
            cached: 0,
            arenas: 0,
            arenas_used: 0,
            arena: ArenaStats::default(),
            lock_contended_max_arena: 0,
            lock_wait_ns_max_arena: 0,
            huge_live: 0,
            huge_allocated: 0,
            huge_allocations: 0,
            huge_frees: 0,
            huge_cached: 0,
            huge_cached_bytes: 0,
            huge_cache_hits: 0,
            huge_maps: 0,
            huge_unmaps: 0,
            huge_remaps: 0,
            syscalls: Syscalls {
                mmap: 0,
                munmap: 0,
                madvise: 0,
                mremap: 0,
            },
            bins: [BinStats::default(); NBINS],
        }
    }
}

impl Stats {
    /// `1 - allocated / active`: the share of active pages not holding live data (free regions
    /// of small runs, run headers and slack). Printed as "frag %" by `alloclab tour` and as
    /// "fragmentation" by `alloclab replay`; docs/ARCHITECTURE.md ("Statistics") defines it.
    pub fn fragmentation(&self) -> f64 {
        if self.active == 0 {
            0.0
        } else {
            1.0 - self.allocated as f64 / self.active as f64
        }
    }

    /// Allocations served since start (small, large and huge).
    pub fn allocations(&self) -> u64 {
        self.arena.allocations(&self.bins) + self.huge_allocations
    }

    /// Writes a human-readable report. Uses only `core::fmt`, so it can run inside an
    /// allocator (with a writer that does not allocate, such as `report::StderrWriter`).
    pub fn write_report(&self, w: &mut dyn Write, title: &str) -> fmt::Result {
        writeln!(w, "___ alloclab statistics: {title} ___")?;
        writeln!(
            w,
            "allocated: {:>14}   active:   {:>14}   mapped: {:>14}",
            self.allocated, self.active, self.mapped
        )?;
        writeln!(
            w,
            "resident:  {:>14}   metadata: {:>14}   dirty:  {:>14}",
            self.resident, self.metadata, self.dirty
        )?;
        writeln!(
            w,
            "arenas: {} created, {} used; chunks: {}; purges: {} ({} pages, {} madvise calls)",
            self.arenas,
            self.arenas_used,
            self.arena.chunks,
            self.arena.purges,
            self.arena.purged_pages,
            self.arena.purge_calls
        )?;
        writeln!(
            w,
            "large: {} live bytes, {} allocations, {} frees; huge: {} live ({} bytes), {} allocations, {} frees",
            self.arena.large_allocated,
            self.arena.large_allocations,
            self.arena.large_frees,
            self.huge_live,
            self.huge_allocated,
            self.huge_allocations,
            self.huge_frees
        )?;
        writeln!(
            w,
            "huge cache: {} mappings ({} bytes), {} hits; huge mappings made {}, unmapped {}, remapped {}",
            self.huge_cached,
            self.huge_cached_bytes,
            self.huge_cache_hits,
            self.huge_maps,
            self.huge_unmaps,
            self.huge_remaps
        )?;
        writeln!(
            w,
            "system calls (process): mmap {}, munmap {}, madvise {}, mremap {}",
            self.syscalls.mmap, self.syscalls.munmap, self.syscalls.madvise, self.syscalls.mremap
        )?;
        if self.cached > 0 {
            writeln!(
                w,
                "thread caches: {} bytes in {} regions",
                self.cached,
                self.bins.iter().map(|b| b.cached).sum::<usize>()
            )?;
        }
        write_bin_table(&self.bins, w, "")
    }

    /// Prints the report to standard error without allocating.
    pub fn print_stderr(&self, title: &str) {
        let mut w = crate::platform::report::StderrWriter::stderr();
        let _ = self.write_report(&mut w, title);
    }
}

/// Writes one line per bin that served an allocation (size, runs, non-full runs, live regions,
/// allocations, frees) under a header line, each line starting with `indent`.
pub fn write_bin_table(bins: &[BinStats; NBINS], w: &mut dyn Write, indent: &str) -> fmt::Result {
    writeln!(
        w,
        "{indent}{:>6} {:>8} {:>8} {:>10} {:>12} {:>12}",
        "bin", "runs", "nonfull", "live", "allocations", "frees"
    )?;
    for (i, b) in bins.iter().enumerate().filter(|(_, b)| b.allocations > 0) {
        writeln!(
            w,
            "{indent}{:>6} {:>8} {:>8} {:>10} {:>12} {:>12}",
            class_size(i),
            b.runs,
            b.nonfull_runs,
            b.live,
            b.allocations,
            b.frees
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kills the campaign's survivor `replace Stats::fragmentation -> f64 with -1.0`: the
    /// share of active bytes without live data, 0 for an empty heap.
    #[test]
    fn fragmentation_is_the_share_of_active_bytes_not_allocated() {
        let st = Stats {
            allocated: 3 * 4096,
            active: 4 * 4096,
            ..Stats::default()
        };
        assert_eq!(st.fragmentation(), 0.25);
        assert_eq!(Stats::default().fragmentation(), 0.0);
    }

    /// An `ArenaStats` whose counters are all distinct, from `k` up.
    fn distinct(k: u64) -> ArenaStats {
        ArenaStats {
            chunks: k as usize,
            active_pages: k as usize + 1,
            dirty_pages: k as usize + 2,
            small_allocated: k as usize + 3,
            large_allocated: k as usize + 4,
            large_allocations: k + 5,
            large_frees: k + 6,
            purges: k + 7,
            purged_pages: k + 8,
            purge_calls: k + 9,
            lock_acquisitions: k + 10,
            lock_contended: k + 11,
            lock_wait_ns: k + 12,
        }
    }

    /// Kills cargo-mutants' `replace += with *= in ArenaStats::add` (`active_pages`,
    /// `core/src/back/stats.rs`, survivor of the campaign) and its kin on the other counters:
    /// the heap's statistics sum the arenas' with `add`, and no test had two arenas with pages.
    #[test]
    fn arena_stats_add_sums_every_counter() {
        let mut sum = distinct(3);
        sum.add(&distinct(20));
        assert_eq!(
            sum,
            ArenaStats {
                chunks: 23,
                active_pages: 25,
                dirty_pages: 27,
                small_allocated: 29,
                large_allocated: 31,
                large_allocations: 33,
                large_frees: 35,
                purges: 37,
                purged_pages: 39,
                purge_calls: 41,
                lock_acquisitions: 43,
                lock_contended: 45,
                lock_wait_ns: 47,
            }
        );
    }
}
