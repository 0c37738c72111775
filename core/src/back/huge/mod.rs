//! Huge allocations: larger than a chunk's usable pages (or aligned beyond what a chunk can
//! offer), each in a mapping of its own, chunk-aligned, sized to whole pages.
//!
//! Each has a record (from the heap's `Base`) that the page map points to for every chunk the
//! mapping covers, so a free or a lookup finds it in O(1) and can tell an interior pointer.
//! Growing tries `mremap` in place, then moves the pages to a fresh aligned reservation with
//! `MREMAP_FIXED` (no copy). Fresh mappings are zero: a zeroed huge allocation is free.
//!
//! The records live in `HUGE_SHARDS` shards, each with its own lock, list and counters: an
//! allocation goes to the shard its thread hashes to and stays there (the record names it), so
//! threads that allocate and free huge blocks at the same time rarely share a lock, and no
//! lock is held across a system call. Statistics and checks visit every shard.
//!
//! ## The cache of freed mappings
//!
//! A freed huge mapping is not unmapped at once: it goes to the heap's cache (up to
//! `HUGE_CACHE_SLOTS` mappings and `Options::huge_cache_bytes` bytes, one lock of its own), and
//! a later huge allocation takes the cached mapping that fits best: the smallest one at least
//! as large (used as it is if at most twice the request, the rest kept as slack in the record's
//! `mapped`; else its tail is unmapped), or else the largest smaller one, grown by `mremap`.
//! Its pages are resident already: no page faults, at most one system call. A reused mapping
//! is not zero: a zeroed allocation clears the bytes it reuses. The heap's purge policy says
//! how long a mapping may wait (`PurgePolicy::huge_ttl_ns`): expired ones, and the oldest
//! beyond the bound, are unmapped by the next huge allocation or free (or large allocation:
//! `tick`), after the cache's lock is released. `Heap::purge` empties the cache. A cached mapping is in no page map entry and
//! no record: a pointer into it is not ours.

use crate::back::invariants::{expect_eq, Violation, ViolationKind};
use crate::meta::base::Base;
use crate::meta::page_map::{Owner, PageMap, TAG_HUGE};
use crate::meta::size_class::{round_up, CHUNK};
use crate::platform::error::FreeError;
use crate::platform::lock::RawLock;
use crate::platform::os;
use crate::platform::sync::untracked::AtomicU64;
use crate::platform::sync::{loom_const_fn, Ordering, UnsafeCell};
use crate::policy::purge::{Purge, HUGE_CACHE_SLOTS};
use core::ptr;

/// Shards of the huge records (a power of two).
mod shard;

const HUGE_SHARDS: usize = 4;

/// One huge allocation.
pub(crate) struct HugeRecord {
    addr: usize,
    size: usize,
    /// Bytes of the mapping: `size`, or more when a larger cached mapping was reused (slack).
    mapped: usize,
    align: usize,
    /// The shard whose list holds the record.
    shard: usize,
    prev: *mut HugeRecord,
    next: *mut HugeRecord,
}

struct HugeInner {
    list: *mut HugeRecord,
    spare: *mut HugeRecord,
    live: usize,
    allocated: usize,
    /// Bytes of the live records' mappings (`allocated` plus slack).
    mapped: usize,
    allocations: u64,
    frees: u64,
}

/// Counters of huge allocations.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HugeStats {
    pub live: usize,
    pub allocated: usize,
    pub mapped: usize,
    pub allocations: u64,
    pub frees: u64,
    pub cached: usize,
    pub cached_bytes: usize,
    pub cache_hits: u64,
    pub maps: u64,
    pub unmaps: u64,
    pub remaps: u64,
}

/// A freed mapping waiting in the cache.
#[derive(Clone, Copy)]
struct Cached {
    addr: usize,
    bytes: usize,
    /// When it was freed (`os::monotonic_ns`; 0 when the policy has no delay).
    freed_ns: u64,
}

const NO_CACHED: Cached = Cached {
    addr: 0,
    bytes: 0,
    freed_ns: 0,
};

/// The cache's state: `entries[..n]`, oldest first.
struct CacheInner {
    entries: [Cached; HUGE_CACHE_SLOTS],
    n: usize,
    bytes: usize,
}

/// Mappings to unmap once the cache's lock is released.
struct Evicted {
    list: [(usize, usize); HUGE_CACHE_SLOTS + 1],
    n: usize,
}

impl Evicted {
    fn new() -> Self {
        Evicted {
            list: [(0, 0); HUGE_CACHE_SLOTS + 1],
            n: 0,
        }
    }
    fn push(&mut self, addr: usize, bytes: usize) {
        self.list[self.n] = (addr, bytes);
        self.n += 1;
    }
}

/// The heap's huge allocations: `HUGE_SHARDS` independent shards, and the cache of freed
/// mappings (module comment).
pub(crate) struct Huge {
    shards: [HugeShard; HUGE_SHARDS],
    cache_lock: RawLock,
    cache: UnsafeCell<CacheInner>,
    /// The heap's purge policy and the cache's byte bound (0: no cache).
    purge: Purge,
    cache_max: usize,
    /// Whether a fresh mapping is read through to check that it is zero (`ZeroCheck::All`,
    /// the seed's bug: it faults in every page of the mapping).
    check_fresh: bool,
    /// Counters (relaxed; statistics only): fresh mappings, mappings or tails unmapped,
    /// `mremap`s, allocations served from the cache.
    maps: AtomicU64,
    unmaps: AtomicU64,
    remaps: AtomicU64,
    hits: AtomicU64,
    /// When the oldest cached mapping expires (`os::monotonic_ns`), `u64::MAX` if none does:
    /// written under the cache's lock, read without it by `tick` (a stale value costs an early
    /// look or a late unmap, nothing else).
    deadline: AtomicU64,
}

// SAFETY: `cache` is reached only with `cache_lock` held; the rest is `Sync` on its own.
unsafe impl Sync for Huge {}
// SAFETY: as above.
unsafe impl Send for Huge {}

/// One shard: a lock over a list of records and its counters.
struct HugeShard {
    lock: RawLock,
    inner: UnsafeCell<HugeInner>,
}

// SAFETY: `inner` and the records on its lists are reached only with `lock` held (a record's
// address and size are also read by the thread that owns the allocation, which no other
// thread may free concurrently).
unsafe impl Sync for HugeShard {}
// SAFETY: as above.
unsafe impl Send for HugeShard {}

impl Huge {
    loom_const_fn! {
        pub fn new(purge: Purge, cache_max: usize, check_fresh: bool) -> Huge {
            Huge {
                shards: [
                    HugeShard::new(),
                    HugeShard::new(),
                    HugeShard::new(),
                    HugeShard::new(),
                ],
                cache_lock: RawLock::new(),
                cache: UnsafeCell::new(CacheInner {
                    entries: [NO_CACHED; HUGE_CACHE_SLOTS],
                    n: 0,
                    bytes: 0,
                }),
                purge,
                cache_max,
                check_fresh,
                maps: AtomicU64::new(0),
                unmaps: AtomicU64::new(0),
                remaps: AtomicU64::new(0),
                hits: AtomicU64::new(0),
                deadline: AtomicU64::new(u64::MAX),
            }
        }
    }

    fn with_cache<R>(&self, f: impl FnOnce(&mut CacheInner) -> R) -> R {
        let _g = self.cache_lock.guard();
        self.cache.with_mut(|p| {
            // SAFETY: the lock is held for the whole closure.
            let c = unsafe { &mut *p };
            let r = f(c);
            let deadline = match self.purge.huge_ttl_ns() {
                Some(ttl) if c.n > 0 => c.entries[0].freed_ns.saturating_add(ttl),
                _ => u64::MAX,
            };
            self.deadline.store(deadline, Ordering::Relaxed);
            r
        })
    }

    /// On page-level activity (a large allocation): unmaps the cached mappings past the purge
    /// policy's delay, if the oldest is (one relaxed load otherwise, and a clock read while a
    /// mapping waits).
    #[inline]
    pub fn tick(&self) {
        let d = self.deadline.load(Ordering::Relaxed);
        if d != u64::MAX && os::monotonic_ns() >= d {
            self.purge_cache(false);
        }
    }

    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The time to stamp and judge cached mappings by (0 when the policy has no delay: no
    /// clock read).
    fn now(&self) -> u64 {
        match self.purge.huge_ttl_ns() {
            Some(t) if t > 0 => os::monotonic_ns(),
            _ => 0,
        }
    }

    /// Under the cache lock: moves the expired mappings to `out`.
    fn expire(&self, c: &mut CacheInner, now: u64, out: &mut Evicted) {
        let Some(ttl) = self.purge.huge_ttl_ns() else {
            return;
        };
        // Oldest first: the expired ones are a prefix.
        let mut k = 0;
        while k < c.n && c.entries[k].freed_ns.saturating_add(ttl) <= now {
            out.push(c.entries[k].addr, c.entries[k].bytes);
            c.bytes -= c.entries[k].bytes;
            k += 1;
        }
        if k > 0 {
            c.entries.copy_within(k..c.n, 0);
            c.n -= k;
        }
    }

    /// Unmaps what the cache let go, without its lock.
    fn unmap_evicted(&self, out: &Evicted) {
        for &(addr, bytes) in &out.list[..out.n] {
            Self::bump(&self.unmaps);
            // SAFETY: an evicted mapping was a huge mapping of this heap, freed, in no record
            // nor page map entry, and out of the cache: nothing refers to it.
            unsafe { os::unmap(addr as *mut u8, bytes) };
        }
    }

    /// Takes the cached mapping that fits `bytes` aligned to `align` best (module comment):
    /// its address and length; `None` if no mapping is cached (or none is aligned).
    fn cache_take(&self, bytes: usize, align: usize) -> Option<(usize, usize)> {
        if self.cache_max == 0 {
            return None;
        }
        let now = self.now();
        let mut out = Evicted::new();
        let got = self.with_cache(|c| {
            self.expire(c, now, &mut out);
            let mut best: Option<usize> = None;
            for i in 0..c.n {
                let e = c.entries[i];
                if e.addr % align != 0 {
                    continue;
                }
                best = match best {
                    None => Some(i),
                    Some(b) => {
                        let cur = c.entries[b].bytes;
                        let better = if e.bytes >= bytes {
                            cur < bytes || e.bytes < cur
                        } else {
                            cur < bytes && e.bytes > cur
                        };
                        Some(if better { i } else { b })
                    }
                };
            }
            let i = best?;
            let e = c.entries[i];
            c.entries.copy_within(i + 1..c.n, i);
            c.n -= 1;
            c.bytes -= e.bytes;
            Some((e.addr, e.bytes))
        });
        self.unmap_evicted(&out);
        got
    }

    /// Puts a freed mapping in the cache, or unmaps it (beyond the bound, or a policy without
    /// a delay); unmaps what expires or no longer fits, oldest first.
    fn cache_put(&self, addr: usize, bytes: usize) {
        let now = self.now();
        let mut out = Evicted::new();
        let keep =
            self.cache_max != 0 && bytes <= self.cache_max && self.purge.huge_ttl_ns() != Some(0);
        self.with_cache(|c| {
            self.expire(c, now, &mut out);
            if !keep {
                out.push(addr, bytes);
                return;
            }
            let mut k = 0;
            while k < c.n && (c.n - k == HUGE_CACHE_SLOTS || c.bytes + bytes > self.cache_max) {
                out.push(c.entries[k].addr, c.entries[k].bytes);
                c.bytes -= c.entries[k].bytes;
                k += 1;
            }
            c.entries.copy_within(k..c.n, 0);
            c.n -= k;
            c.entries[c.n] = Cached {
                addr,
                bytes,
                freed_ns: now,
            };
            c.n += 1;
            c.bytes += bytes;
        });
        self.unmap_evicted(&out);
    }

    /// Unmaps every cached mapping (`Heap::purge`), or only the expired ones (`all` false).
    pub fn purge_cache(&self, all: bool) {
        let now = self.now();
        let mut out = Evicted::new();
        self.with_cache(|c| {
            if all {
                for e in &c.entries[..c.n] {
                    out.push(e.addr, e.bytes);
                }
                c.n = 0;
                c.bytes = 0;
            } else {
                self.expire(c, now, &mut out);
            }
        });
        self.unmap_evicted(&out);
    }

    /// A mapping of `bytes` aligned to `align` for a new allocation: from the cache (adapted
    /// to the size, the bytes it reuses cleared if `zero`) or fresh. Returns it and its length.
    fn obtain(&self, bytes: usize, align: usize, zero: bool) -> Option<(usize, usize)> {
        if let Some((addr, have)) = self.cache_take(bytes, align) {
            if let Some(got) = self.adapt(addr, have, bytes, align, zero) {
                Self::bump(&self.hits);
                return Some(got);
            }
        }
        Self::bump(&self.maps);
        let mem = os::map_aligned(bytes, align)?;
        if self.check_fresh {
            // SAFETY: a fresh, readable mapping of `bytes` bytes that only we know of.
            unsafe {
                crate::debug::checks::check_zero(mem.as_ptr() as usize, bytes, "fresh huge mapping")
            };
        }
        Some((mem.as_ptr() as usize, bytes))
    }

    /// Makes the cached mapping `addr..+have` serve `bytes`: as it is (slack up to `bytes`),
    /// its tail unmapped, or grown (in place, else moved to a fresh aligned reservation).
    /// `None` (the mapping unmapped) if the OS refuses to grow it.
    fn adapt(
        &self,
        addr: usize,
        have: usize,
        bytes: usize,
        align: usize,
        zero: bool,
    ) -> Option<(usize, usize)> {
        let (addr, mapped, used) = if have >= bytes {
            if have - bytes > bytes {
                Self::bump(&self.unmaps);
                // SAFETY: the tail lies inside our cached mapping, which nobody uses.
                unsafe { os::unmap((addr + bytes) as *mut u8, have - bytes) };
                (addr, bytes, bytes)
            } else {
                (addr, have, bytes)
            }
        } else {
            Self::bump(&self.remaps);
            // SAFETY: our cached mapping; without MAYMOVE it only grows into free space.
            if unsafe { os::remap_in_place(addr as *mut u8, have, bytes) } {
                (addr, bytes, have)
            } else {
                let dest = os::map_aligned(bytes, align);
                Self::bump(&self.maps);
                if dest.is_some() {
                    Self::bump(&self.remaps);
                }
                // SAFETY: both ranges are ours; the reservation at `dest` is replaced.
                let moved = dest
                    .filter(|d| unsafe { os::remap_to(addr as *mut u8, have, d.as_ptr(), bytes) });
                match moved {
                    Some(d) => (d.as_ptr() as usize, bytes, have),
                    None => {
                        if let Some(d) = dest {
                            Self::bump(&self.unmaps);
                            // SAFETY: the reservation was never handed out.
                            unsafe { os::unmap(d.as_ptr(), bytes) };
                        }
                        Self::bump(&self.unmaps);
                        // SAFETY: the cached mapping is ours and unused.
                        unsafe { os::unmap(addr as *mut u8, have) };
                        return None;
                    }
                }
            }
        };
        if zero {
            // SAFETY: `addr..+used` lies inside our mapping, which the caller is about to
            // hand out: these bytes were written by an earlier owner (beyond them, the pages
            // are fresh from `mremap`, hence zero).
            unsafe { ptr::write_bytes(addr as *mut u8, 0, used) };
        }
        Some((addr, mapped))
    }

    /// The shard of the calling thread.
    fn mine(&self) -> usize {
        // Thread keys are addresses (or spaced like them): a multiplicative hash's top bits.
        let h = crate::meta::thread::thread_key().wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h >> (usize::BITS - HUGE_SHARDS.trailing_zeros())
    }

    /// The shard that holds `rec`.
    ///
    /// # Safety
    /// `rec` is a live record of this heap (from its page map).
    unsafe fn shard_of(&self, rec: usize) -> &HugeShard {
        // SAFETY: per the contract; the field is fixed while the record is live.
        &self.shards[unsafe { (*(rec as *const HugeRecord)).shard } % HUGE_SHARDS]
    }

    /// A huge allocation of `bytes` (a page multiple) aligned to `align`, zeroed if `zero`:
    /// a cached mapping, or a fresh one; null if the OS refuses.
    pub fn alloc(
        &self,
        bytes: usize,
        align: usize,
        zero: bool,
        base: &Base,
        map: &PageMap,
    ) -> *mut u8 {
        let align = align.max(CHUNK);
        let Some((addr, mapped)) = self.obtain(bytes, align, zero) else {
            return ptr::null_mut();
        };
        let i = self.mine();
        let p = self.shards[i].alloc(i, addr, bytes, mapped, align, base, map);
        if p.is_null() {
            Self::bump(&self.unmaps);
            // SAFETY: never published (the shard refused it: no record, no page map entry).
            unsafe { os::unmap(addr as *mut u8, mapped) };
        }
        p
    }

    /// Unmaps the huge allocation at `addr`.
    ///
    /// # Safety
    /// `rec` came from this heap's page map for `addr` and `usable(rec, addr)` succeeded.
    pub unsafe fn free(&self, rec: usize, map: &PageMap) {
        // SAFETY: forwarded contract.
        let (addr, mapped) = unsafe { self.shard_of(rec).free(rec, map) };
        self.cache_put(addr, mapped);
    }

    /// Resizes the huge allocation at `rec` to `bytes` (page multiple, beyond `LARGE_MAX`),
    /// moving its pages if needed. Returns the new address, or null if the OS refused (the
    /// allocation is then unchanged).
    ///
    /// # Safety
    /// As for `free`.
    pub unsafe fn resize(&self, rec: usize, bytes: usize, map: &PageMap) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.shard_of(rec).resize(rec, bytes, map, self) }
    }

    /// Checks that `addr`, whose page-map record is `rec`, starts a live huge allocation;
    /// returns its usable size.
    ///
    /// # Safety
    /// `rec` came from this heap's page map.
    pub unsafe fn usable(rec: usize, addr: usize) -> Result<usize, FreeError> {
        let rec = rec as *const HugeRecord;
        // SAFETY: records referenced by the page map are live (cleared before reuse).
        let (a, s) = unsafe { ((*rec).addr, (*rec).size) };
        if a != addr {
            return Err(FreeError::Interior);
        }
        Ok(s)
    }

    /// The shards' counters, added up (each shard's are read under its lock).
    pub fn stats(&self) -> HugeStats {
        let mut t = HugeStats::default();
        for sh in &self.shards {
            let s = sh.stats();
            t.live += s.live;
            t.allocated += s.allocated;
            t.mapped += s.mapped;
            t.allocations += s.allocations;
            t.frees += s.frees;
        }
        (t.cached, t.cached_bytes) = self.with_cache(|c| (c.n, c.bytes));
        t.cache_hits = self.hits.load(Ordering::Relaxed);
        t.maps = self.maps.load(Ordering::Relaxed);
        t.unmaps = self.unmaps.load(Ordering::Relaxed);
        t.remaps = self.remaps.load(Ordering::Relaxed);
        t
    }

    /// Every shard's records and counters (see `HugeShard::check`).
    pub fn check(&self, map: &PageMap) -> Result<(), Violation> {
        for (i, sh) in self.shards.iter().enumerate() {
            sh.check(i, map)?;
        }
        self.with_cache(|c| {
            let mut bytes = 0;
            for e in &c.entries[..c.n] {
                if e.addr % CHUNK != 0 || e.bytes == 0 {
                    return Err(Violation::new(ViolationKind::Huge(
                        "cached mapping not chunk-aligned or empty",
                    ))
                    .at(e.addr));
                }
                if map.lookup(e.addr) != Owner::None {
                    return Err(Violation::new(ViolationKind::Huge(
                        "cached mapping still in the page map",
                    ))
                    .at(e.addr));
                }
                bytes += e.bytes;
            }
            if c.n > HUGE_CACHE_SLOTS || (c.n > 0 && bytes > self.cache_max) {
                return Err(Violation::new(ViolationKind::Huge(
                    "cache beyond its bound",
                )));
            }
            expect_eq("huge cached bytes", bytes, c.bytes)
        })
    }

    /// Unmaps every huge allocation (heap drop).
    ///
    /// # Safety
    /// No huge allocation is used afterwards.
    pub unsafe fn release_all(&self, map: &PageMap) {
        for sh in &self.shards {
            // SAFETY: forwarded contract.
            unsafe { sh.release_all(map) };
        }
        self.purge_cache(true);
    }

    /// Takes every shard's lock, in order, then the cache's (fork).
    pub(crate) fn lock(&self) {
        for sh in &self.shards {
            sh.lock.lock();
        }
        self.cache_lock.lock();
    }
    pub(crate) fn unlock(&self) {
        self.cache_lock.unlock();
        for sh in self.shards.iter().rev() {
            sh.lock.unlock();
        }
    }
    pub(crate) fn reset_lock(&self) {
        for sh in &self.shards {
            sh.lock.reset();
        }
        self.cache_lock.reset();
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    /// Kills cargo-mutants' `replace Huge::mine -> usize with 1` (`core/src/back/huge/`, survivor
    /// of the campaign's shard 2): every thread in one shard is still correct, so only the
    /// spread shows it. Sixteen threads all hashed to one of four shards would be a chance of
    /// 4^-15.
    #[test]
    fn threads_spread_over_the_shards() {
        let huge = Huge::new(Purge::DEFAULT, 0, false);
        let shards: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16).map(|_| s.spawn(|| huge.mine())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(shards.iter().all(|&i| i < HUGE_SHARDS), "{shards:?}");
        assert!(shards.iter().any(|&i| i != shards[0]), "{shards:?}");
    }

    /// A huge allocation of `bytes` in `huge`, and its page-map record.
    fn alloc_recorded(huge: &Huge, bytes: usize, base: &Base, map: &PageMap) -> (usize, usize) {
        let p = huge.alloc(bytes, CHUNK, false, base, map) as usize;
        assert_ne!(p, 0, "the OS refused {bytes} bytes");
        let Owner::Huge(rec) = map.lookup(p) else {
            panic!("no huge record for {p:#x}");
        };
        (p, rec)
    }

    /// Kills cargo-mutants' `delete field allocations from struct HugeStats expression in
    /// HugeShard::stats` and `delete field frees from ...` (`core/src/back/huge/shard.rs`,
    /// survivors of the campaign): the heap's `huge_allocations` and `huge_frees` are these
    /// shard counters summed, and no test read them after a huge allocation and its free.
    #[test]
    fn shard_counters_count_allocations_and_frees() {
        let (huge, base) = (Huge::new(Purge::Threshold, 0, false), Base::new());
        let map = PageMap::create().expect("page map");
        let (_, rec) = alloc_recorded(&huge, 2 * CHUNK, &base, &map);
        let s = huge.stats();
        assert_eq!(
            (s.live, s.allocated, s.allocations, s.frees),
            (1, 2 * CHUNK, 1, 0)
        );
        // SAFETY: `rec` is the page map's record of a live allocation of `huge`, freed once.
        unsafe { huge.free(rec, &map) };
        let s = huge.stats();
        assert_eq!((s.live, s.allocated, s.allocations, s.frees), (0, 0, 1, 1));
        huge.check(&map).unwrap();
    }

    /// Kills cargo-mutants' `replace HugeShard::check -> Result<(), Violation> with Ok(())`
    /// (`core/src/back/huge/shard.rs`, survivor of the campaign): a shard whose counters
    /// disagree with its records must be reported, and no test had a shard disagree.
    #[test]
    fn a_shard_whose_live_count_disagrees_with_its_records_fails_the_check() {
        let (huge, base) = (Huge::new(Purge::Threshold, 0, false), Base::new());
        let map = PageMap::create().expect("page map");
        let (_, rec) = alloc_recorded(&huge, 2 * CHUNK, &base, &map);
        huge.check(&map).unwrap();
        // SAFETY: `rec` is a live record of `huge`.
        let shard = unsafe { huge.shard_of(rec) };
        shard.with(|h| h.live += 1);
        let verdict = huge.check(&map);
        shard.with(|h| h.live -= 1);
        let e = verdict.expect_err("a shard counting a record it does not hold passed");
        assert!(format!("{e:?}").contains("huge live"), "{e:?}");
        huge.check(&map).unwrap();
        // SAFETY: as above, freed once.
        unsafe { huge.free(rec, &map) };
    }

    /// Kills cargo-mutants' `replace > with == in Huge::check` (`bytes > self.cache_max`,
    /// `core/src/back/huge/mod.rs`, survivor of the campaign): a cache filled to exactly its
    /// bound is within it, and no test filled it exactly.
    #[test]
    fn a_cache_filled_exactly_to_its_bound_passes_the_check() {
        let bound = 2 * CHUNK;
        let (huge, base) = (Huge::new(Purge::Threshold, bound, false), Base::new());
        let map = PageMap::create().expect("page map");
        let (_, rec) = alloc_recorded(&huge, bound, &base, &map);
        // SAFETY: `rec` is the page map's record of a live allocation of `huge`, freed once.
        unsafe { huge.free(rec, &map) };
        let s = huge.stats();
        assert_eq!((s.cached, s.cached_bytes), (1, bound));
        huge.check(&map).unwrap();
        huge.purge_cache(true);
    }
}
