//! The thread cache: what a front end with `FrontEnd::CACHE` puts in front of the arenas.
//!
//! Each thread that uses a heap gets one cache in it: per small class, a stack of regions
//! (linked through each region's first word) and its count. `malloc` pops from the stack
//! without any lock or atomic read-modify-write; an empty stack is refilled with half its
//! capacity from an arena under one lock. `free` validates the pointer (page map, page entry,
//! region boundary, bitmap bit, cache mark; with `tcache_check:light` only the page map, the
//! entry, alignment and the mark, see `TcacheCheck`) without a lock and pushes it; a full stack first
//! gives half its capacity back to the regions' arenas (a flush), each arena locked once.
//!
//! - **Bounds.** One thread's cache holds at most `FrontEnd::MAX_BYTES` (or
//!   `Options::tcache_max_bytes`) bytes in one heap. Each class has a capacity, in regions:
//!   it starts at an equal share of a quarter of the bound (at most `BASE_COUNT` regions; a
//!   class whose regions do not fit goes to the arena directly), and fills and flushes move
//!   half of the class's capacity at the time (at least its starting batch, half the starting
//!   capacity; at most `MAX_BATCH`). A class whose stack overflows doubles its capacity
//!   instead of flushing, up to `MAX_COUNT` regions and half the bound, as long as the
//!   capacities of all classes, in bytes, stay within the bound (tcmalloc's free lists grow
//!   the same way); so does a class whose stack runs empty with no free of it since its last
//!   fill (a thread that allocates what another frees), so that its fills grow too. So a program that frees thousands of regions of one class and then
//!   allocates them again (a tree built and dropped, again and again) stops passing them
//!   through the arena, while a cache of many classes stays within its share. Capacities
//!   only grow while a thread lives; a spare cache starts again from the starting ones.
//! - **Cross-thread frees.** A region freed by another thread goes into *that* thread's cache
//!   and back to its own arena when flushed: a cache may hold regions of any arena, and a flush
//!   finds each region's arena through its chunk header.
//! - **Double frees.** A cached region carries a mark in its second word (its address mixed
//!   with a per-heap secret drawn from the kernel), cleared when it leaves the cache: a free of a
//!   region that sits in any thread's cache finds the mark and is refused. A region back in its
//!   run is refused by its bitmap bit, read atomically without the lock.
//! - **Thread exit.** The cache is bound to the thread like an arena (`thread::bind_cache`);
//!   the thread's `pthread_key_create` destructor flushes it and hands it to the heap's pool of
//!   spare caches. A thread that exits never caches again (its later calls go to an arena).
//! - **Fork.** The child keeps the forking thread's cache and flushes the others, whose threads
//!   do not exist in it (`fork_child`).
//! - **Statistics.** Regions in caches are taken from their runs, so arenas count them as
//!   live; `Heap::stats` moves them to `cached` (each cache's counts are atomics that only its
//!   thread writes, with a load and a store), and `check_invariants` checks the calling
//!   thread's cache region by region and every cache's counts against the arenas.
//!
//! Nothing here allocates: caches come from the heap's `Base`, and are reused.

use super::{Heap, Shared};
use crate::arena::{Arena, ArenaInner};
use crate::chunk::{ChunkHeader, SMALL};
use crate::error::FreeError;
use crate::invariants::{Violation, ViolationKind};
use crate::lock::RawLock;
use crate::page_map::Owner;
use crate::policy::{Config, FrontEnd, Options, TcacheCheck};
use crate::run::{Run, RunHeader};
use crate::safety::{DebugCaps, SamplePath};
use crate::size_class::{bin, small_index, CHUNK_HEADER_PAGES, NBINS, QUANTUM, SMALL_MAX};
use crate::sync::untracked::{AtomicU64, AtomicUsize};
use crate::sync::{
    Ordering::{Acquire, Relaxed, Release},
    UnsafeCell,
};
use crate::thread;
use core::cell::Cell;
use core::ptr;

/// Most regions one class of one cache starts with.
pub(crate) const BASE_COUNT: usize = 256;
/// Most regions one fill or flush moves (half of `BASE_COUNT`). Under loom, 32: fills and
/// flushes keep arrays of this many addresses on the stack, and loom's coroutine stacks are
/// small (the models use a few regions anyway).
pub(crate) const MAX_BATCH: usize = if cfg!(loom) { 32 } else { BASE_COUNT / 2 };
/// Most regions one class of one cache holds once grown. Under loom, 8: the models stay
/// small, and a class still grows once and then flushes.
pub(crate) const MAX_COUNT: usize = if cfg!(loom) { 8 } else { 8192 };

/// One class's stack.
struct CacheBin {
    /// The top region (0: empty); each region's first word holds the next one.
    head: Cell<usize>,
    /// Regions on the stack. Written only by the cache's thread (a load and a store), read by
    /// `stats` from any thread, as are the two counters below.
    count: AtomicUsize,
    /// Frees of the program that the stack took (the arena never saw them), since the cache
    /// was made (it keeps counting when a new thread reuses it).
    absorbed: AtomicU64,
    /// Regions the stack gave back to their runs (the arena counted each as a free).
    flushed: AtomicU64,
    /// Regions the stack may hold now (see the module's "Bounds"); written by the cache's
    /// thread only.
    cap: AtomicUsize,
}

/// One thread's cache in one heap.
pub(crate) struct ThreadCache {
    bins: [CacheBin; NBINS],
    /// Per class, its `absorbed` count at its last fill: a class that absorbed no free since
    /// then is one this thread only allocates (another thread frees it), whose fills grow.
    /// Apart from `bins`, so that a `CacheBin` stays five words (the fast paths index it).
    absorbed_at_fill: [Cell<u64>; NBINS],
    /// Sum over the classes of capacity times region size: never above the bound.
    cap_bytes: Cell<usize>,
    /// `thread::thread_key()` of the thread it belongs to.
    owner: Cell<usize>,
    /// The pool's list it is on (live or spare), under the pool lock.
    next: Cell<*mut ThreadCache>,
}

struct Lists {
    live: *mut ThreadCache,
    spare: *mut ThreadCache,
}

/// A heap's caches: the live ones (for statistics, invariants and fork), the spare ones (left
/// by exited threads), and the bounds and mark secret they share.
pub(crate) struct CachePool {
    lock: RawLock,
    lists: UnsafeCell<Lists>,
    secret: usize,
    /// `Options::tcache_check` is `Light`: the fast paths skip the boundary and bitmap checks.
    light: bool,
    /// Starting capacity of each class, in regions (0: not cached).
    base: [u16; NBINS],
    /// Regions one fill or flush of each class moves.
    batch: [u16; NBINS],
    /// Capacity each class may grow to.
    most: [u16; NBINS],
    max_bytes: usize,
}

// SAFETY: `lists` (and the `next` links of the caches on them) are reached only with `lock`
// held; a cache's stacks only by its own thread (or, at its exit and in a forked child, by the
// one thread that flushes it); its counts are atomics.
unsafe impl Sync for CachePool {}
// SAFETY: as above.
unsafe impl Send for CachePool {}

impl CachePool {
    /// A pool for a heap whose front end is `F`, known as `heap_id`.
    pub(crate) fn new<F: FrontEnd>(options: &Options, heap_id: u64) -> CachePool {
        let max_bytes = match options.tcache_max_bytes {
            _ if !F::CACHE => 0,
            usize::MAX => F::MAX_BYTES,
            n => n,
        };
        let share = max_bytes / 4 / NBINS;
        let size = |i| bin(i).size as usize;
        let base: [u16; NBINS] =
            core::array::from_fn(|i| (share / size(i)).min(BASE_COUNT).min(MAX_COUNT) as u16);
        let batch = core::array::from_fn(|i| (base[i] / 2).clamp(base[i].min(1), MAX_BATCH as u16));
        let most = core::array::from_fn(|i| {
            (max_bytes / 2 / size(i)).clamp(base[i] as usize, MAX_COUNT) as u16
        });
        // The secret needs to be unguessable by the program, not strong: the kernel's random
        // word, mixed with the pool's address (ASLR) and id in case there is none.
        #[cfg(not(any(loom, shuttle)))]
        let random = crate::os::random_word();
        #[cfg(any(loom, shuttle))]
        let random = 0x5eed;
        let secret = splitmix(random ^ heap_id as usize ^ (&max_bytes as *const usize as usize));
        CachePool {
            lock: RawLock::new(),
            lists: UnsafeCell::new(Lists {
                live: ptr::null_mut(),
                spare: ptr::null_mut(),
            }),
            secret: secret | 1,
            light: options.tcache_check == TcacheCheck::Light,
            base,
            batch,
            most,
            max_bytes,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Lists) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held for the whole closure.
        self.lists.with_mut(|p| f(unsafe { &mut *p }))
    }

    /// Starting capacity of class `idx` in regions (0: the class is not cached).
    #[inline(always)]
    pub(crate) fn base(&self, idx: usize) -> usize {
        self.base[idx] as usize
    }

    /// Regions one fill or flush of class `idx` moves.
    #[inline(always)]
    fn batch(&self, idx: usize) -> usize {
        self.batch[idx] as usize
    }

    /// Sum of the starting capacities in bytes.
    fn base_bytes(&self) -> usize {
        (0..NBINS)
            .map(|i| self.base(i) * bin(i).size as usize)
            .sum()
    }

    /// The mark a cached region at `addr` carries in its second word.
    #[inline(always)]
    fn mark(&self, addr: usize) -> usize {
        addr ^ self.secret
    }

    /// Whether the region at `addr` carries the cache mark.
    ///
    /// # Safety
    /// `addr` is a region of at least 16 bytes taken from a live run.
    #[inline(always)]
    pub(crate) unsafe fn marked(&self, addr: usize) -> bool {
        // SAFETY: per the contract the region is mapped and at least two words long.
        unsafe { (addr as *const usize).add(1).read() == self.mark(addr) }
    }

    pub(crate) fn lock(&self) {
        self.lock.lock();
    }
    pub(crate) fn unlock(&self) {
        self.lock.unlock();
    }
    pub(crate) fn reset_lock(&self) {
        self.lock.reset();
    }
}

fn splitmix(mut x: usize) -> usize {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl ThreadCache {
    /// Pushes `addr` (a region taken from its run, not in any cache) on class `idx`.
    ///
    /// # Safety
    /// The caller is the cache's thread (or the only one touching it); `addr` is such a region
    /// and the class has room.
    #[inline(always)]
    unsafe fn push(&self, pool: &CachePool, idx: usize, addr: usize) {
        let b = &self.bins[idx];
        // Before the writes, which the compiler cannot tell apart from the pool's secret.
        let mark = pool.mark(addr);
        // SAFETY: per the contract the region is ours to write (two words at least).
        unsafe {
            (addr as *mut usize).write(b.head.get());
            (addr as *mut usize).add(1).write(mark);
        }
        b.head.set(addr);
        // Release: a thread that reads this count (`check_caches`) sees the capacity that
        // allowed it.
        b.count.store(b.count.load(Relaxed) + 1, Release);
    }

    /// Pops the top region of class `idx` (0 if empty), its mark cleared.
    ///
    /// # Safety
    /// The caller is the cache's thread (or the only one touching it).
    #[inline(always)]
    unsafe fn pop(&self, idx: usize) -> usize {
        let b = &self.bins[idx];
        let addr = b.head.get();
        if addr != 0 {
            // SAFETY: regions on the stack are ours, linked through their first word.
            unsafe {
                b.head.set((addr as *const usize).read());
                (addr as *mut usize).add(1).write(0);
            }
            b.count.store(b.count.load(Relaxed) - 1, Relaxed);
        }
        addr
    }

    /// Doubles class `idx`'s capacity if the class and the bound allow it; whether it did.
    ///
    /// # Safety
    /// The caller is the cache's thread (or the only one touching it).
    #[cold]
    #[inline(never)]
    unsafe fn grow(&self, pool: &CachePool, idx: usize) -> bool {
        let b = &self.bins[idx];
        let cap = b.cap.load(Relaxed);
        let most = pool.most[idx] as usize;
        if cap >= most {
            return false;
        }
        let new = (cap * 2).min(most);
        let bytes = self.cap_bytes.get() + (new - cap) * bin(idx).size as usize;
        if bytes > pool.max_bytes {
            return false;
        }
        self.cap_bytes.set(bytes);
        b.cap.store(new, Relaxed);
        true
    }

    /// Regions the next fill or flush of class `idx` moves: half the class's capacity now,
    /// from its starting batch up to `MAX_BATCH`. A class that grew (its thread frees more of
    /// it than it allocates, or the other way round) moves more at a time, under one lock.
    fn moves(&self, pool: &CachePool, idx: usize) -> usize {
        (self.bins[idx].cap.load(Relaxed) / 2).clamp(pool.batch(idx), MAX_BATCH)
    }

    /// Every class back to its starting capacity (the cache is empty).
    fn reset_caps(&self, pool: &CachePool) {
        for (i, b) in self.bins.iter().enumerate() {
            b.cap.store(pool.base(i), Relaxed);
        }
        self.cap_bytes.set(pool.base_bytes());
    }
}

impl<C: Config> Heap<C> {
    /// The calling thread's cache in this heap, made on first use; `None` while the thread
    /// exits or if the OS refused memory.
    #[inline(always)]
    fn thread_cache(s: &Shared<C>) -> Option<&ThreadCache> {
        let v = match thread::front_cache(s.pool.heap_id()) {
            Some(v) => v,
            None => thread::bind_cache(
                s.pool.heap_id(),
                || Self::new_cache(s),
                |v| Self::retire_cache(s, v as *mut ThreadCache),
            )?,
        };
        // SAFETY: bound caches live (in the heap's base) until the heap is dropped.
        Some(unsafe { &*(v as *const ThreadCache) })
    }

    /// A cache for the calling thread: a spare one, or a new one from the base; 0 if none.
    #[cold]
    fn new_cache(s: &Shared<C>) -> usize {
        let owner = thread::thread_key();
        let mut c = s.caches.with(|l| {
            let c = l.spare;
            if !c.is_null() {
                // SAFETY: caches on the spare list are ours, under the pool lock.
                l.spare = unsafe { (*c).next.get() };
            }
            c
        });
        if c.is_null() {
            // Outside the pool lock: the base has its own.
            let Some(mem) = s.base.alloc(
                core::mem::size_of::<ThreadCache>(),
                core::mem::align_of::<ThreadCache>(),
            ) else {
                return 0;
            };
            c = mem.as_ptr().cast::<ThreadCache>();
            // SAFETY: fresh metadata of the right size and alignment.
            unsafe {
                c.write(ThreadCache {
                    bins: core::array::from_fn(|_| CacheBin {
                        head: Cell::new(0),
                        count: AtomicUsize::new(0),
                        absorbed: AtomicU64::new(0),
                        flushed: AtomicU64::new(0),
                        cap: AtomicUsize::new(0),
                    }),
                    absorbed_at_fill: core::array::from_fn(|_| Cell::new(0)),
                    cap_bytes: Cell::new(0),
                    owner: Cell::new(0),
                    next: Cell::new(ptr::null_mut()),
                })
            };
        }
        s.caches.with(|l| {
            // SAFETY: `c` is ours (spare, emptied when it was retired, or fresh).
            unsafe {
                (*c).reset_caps(&s.caches);
                (*c).owner.set(owner);
                (*c).next.set(l.live);
            }
            l.live = c;
        });
        c as usize
    }

    /// Takes an empty cache off the live list and makes it spare.
    fn retire_cache(s: &Shared<C>, c: *mut ThreadCache) {
        s.caches.with(|l| {
            // SAFETY: list nodes are caches of this heap, linked under the pool lock.
            unsafe {
                let mut link: *mut *mut ThreadCache = &mut l.live;
                while !(*link).is_null() {
                    if *link == c {
                        *link = (*c).next.get();
                        break;
                    }
                    link = (**link).next.as_ptr();
                }
                (*c).next.set(l.spare);
            }
            l.spare = c;
        });
    }

    /// The fast path of `allocate`: a region popped from the calling thread's cache, or `None`
    /// for anything but a small request of a cached class whose stack holds a region, in a
    /// heap without debug options, from a thread whose cache is in its memo (`allocate_slow`
    /// then does everything, fills included). No lock, no atomic read-modify-write, no call.
    #[inline(always)]
    pub(super) fn alloc_from_cache(
        &self,
        size: usize,
        align: usize,
        zero: bool,
    ) -> Option<*mut u8> {
        let s = self.shared_if_init()?;
        // No `cache_on` test: a thread's memo holds a cache only in a heap whose cache is on
        // (only `alloc_cached` and `free_cached` bind one, and only there).
        if !(align <= QUANTUM && size <= SMALL_MAX) {
            return None;
        }
        if C::DEBUG.contains(DebugCaps::SAMPLE) && C::SAMPLE_PATH != SamplePath::SlowPath {
            if let Some(p) = Self::sample_fast(s, size, align, zero) {
                return Some(p);
            }
        }
        let idx = small_index(size);
        let v = thread::front_cache(s.pool.heap_id())?;
        // SAFETY: the memo holds a live cache of this heap, the calling thread's own.
        let c = unsafe { &*(v as *const ThreadCache) };
        // SAFETY: our own cache. A class that is not cached has an empty stack.
        let p = unsafe { c.pop(idx) };
        if p == 0 {
            return None;
        }
        if zero {
            // SAFETY: a region of class `idx`, now the caller's.
            unsafe { ptr::write_bytes(p as *mut u8, 0, bin(idx).size as usize) };
        }
        Some(p as *mut u8)
    }

    /// The class of `addr` if it is a region of this heap taken from its run and not in any
    /// cache, validated without a lock as `free_cached` does (page map, page entry, region
    /// boundary, bitmap bit, cache mark); `None` for anything else, which the locked paths
    /// then sort out (null, errors, large and huge allocations).
    ///
    /// `check`: the heap's `Options::tcache_check` as the caller knows it, or `None` to read
    /// it from the heap.
    #[inline(always)]
    fn taken_region(s: &Shared<C>, addr: usize, check: Option<TcacheCheck>) -> Option<usize> {
        let Owner::Chunk(chunk) = s.map.lookup(addr) else {
            return None;
        };
        let chunk = chunk as *mut ChunkHeader;
        let page = ChunkHeader::page_index(addr);
        // SAFETY: a live chunk of ours; as in `free_cached`, the entry of a page of a live
        // run does not change while one of its regions is taken. (Header pages have entries
        // too, of kind `META`, which the kind check refuses.)
        let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
        // Unmasked: `idx < NBINS` below refuses a bin field with bits set above it as well.
        let idx = e.bin_unmasked();
        let light = match check {
            Some(c) => {
                debug_assert!(c == TcacheCheck::Full || s.caches.light);
                c == TcacheCheck::Light
            }
            None => s.caches.light,
        };
        if light {
            // `tcache_check:light`: no boundary, no bitmap. Aligned, so that the mark's word
            // is inside the page (and most interior pointers still go to the locked path).
            // SAFETY: a 16-aligned address in a page of a live small run: two words mapped.
            let taken = e.kind() == SMALL
                && idx < NBINS
                && addr % QUANTUM == 0
                && !unsafe { s.caches.marked(addr) };
            return taken.then_some(idx);
        }
        if e.kind() != SMALL || idx >= NBINS || e.run_offset() > page {
            return None;
        }
        let base = ChunkHeader::page_addr(chunk, page - e.run_offset());
        let region = bin(idx).region_index(addr - base)?;
        // SAFETY: as in `free_cached`: the entry names a run of bin `idx` at `base`, whose
        // bitmap words are read atomically; the mark is read from a taken region.
        let free = unsafe {
            Run(RunHeader::at(base, idx)).is_free_unlocked(region) || s.caches.marked(addr)
        };
        (!free).then_some(idx)
    }

    /// The calling thread's cache if it is in the thread's memo (the fast paths' way in).
    #[inline(always)]
    fn memo_cache(s: &Shared<C>) -> Option<&ThreadCache> {
        let v = thread::front_cache(s.pool.heap_id())?;
        // SAFETY: the memo holds a live cache of this heap, the calling thread's own.
        Some(unsafe { &*(v as *const ThreadCache) })
    }

    /// The fast path of `free`: whether `addr` was pushed on the calling thread's cache. False
    /// for anything but a taken region of a cached class (`taken_region`) whose stack has
    /// room, in a heap without debug options, from a thread whose cache is in its memo:
    /// `free_slow` then does everything (flushes, errors, null).
    ///
    /// # Safety
    /// As for `Heap::try_free`.
    #[inline(always)]
    pub(super) unsafe fn free_to_cache(&self, addr: usize, check: Option<TcacheCheck>) -> bool {
        // No `cache_on` test: as in `alloc_from_cache`, the memo check below covers it.
        let Some(s) = self.shared_if_init() else {
            return false;
        };
        let Some(idx) = Self::taken_region(s, addr, check) else {
            return false;
        };
        let Some(c) = Self::memo_cache(s) else {
            return false;
        };
        let b = &c.bins[idx];
        if b.count.load(Relaxed) >= b.cap.load(Relaxed) {
            return false;
        }
        // SAFETY: a taken region, not in any cache, that per the contract nothing uses; our
        // own cache, whose class has room.
        unsafe { c.push(&s.caches, idx, addr) };
        b.absorbed.store(b.absorbed.load(Relaxed) + 1, Relaxed);
        true
    }

    /// The fast path of `reallocate`: a small region resized within its class (the same
    /// pointer) or moved to another small class through the calling thread's cache (a region
    /// popped, the bytes copied, the old region pushed: no lock). `None` for anything else,
    /// including an empty or full stack and every heap with a debug option (no cache): the
    /// slow path then does everything.
    ///
    /// # Safety
    /// As for `Heap::reallocate`, with `addr` not null.
    #[inline(always)]
    pub(super) unsafe fn realloc_in_cache(
        &self,
        addr: usize,
        size: usize,
        align: usize,
        copy_limit: usize,
        check: Option<TcacheCheck>,
    ) -> Option<*mut u8> {
        // No `cache_on` test: as in `alloc_from_cache`, the memo check below covers it.
        let s = self.shared_if_init()?;
        if !(align <= QUANTUM && size <= SMALL_MAX) {
            return None;
        }
        let old = Self::taken_region(s, addr, check)?;
        // Before the same-class answer: a heap with a debug option never caches (so no memo
        // holds a cache), and its regions carry what this path does not move (a canary after
        // the requested bytes): the slow path resizes them.
        let c = Self::memo_cache(s)?;
        let new = small_index(size);
        if new == old {
            return Some(addr as *mut u8);
        }
        let b = &c.bins[old];
        if b.count.load(Relaxed) >= b.cap.load(Relaxed) {
            return None;
        }
        // SAFETY: our own cache. A class that is not cached has an empty stack.
        let p = unsafe { c.pop(new) };
        if p == 0 {
            return None;
        }
        let n = (bin(old).size as usize).min(size).min(copy_limit);
        if n > SHORT_COPY {
            // Out of line and last: the call to `memcpy` (and the registers it makes this
            // path save) stays off the moves of short blocks, the common ones.
            // SAFETY: as below.
            return Some(unsafe { Self::move_long(&s.caches, c, old, addr, p, n) });
        }
        // SAFETY: two distinct regions of at least `n` bytes, the new one ours, the old one
        // taken (checked above) and per the contract no longer used; it is pushed after the
        // copy, on a class with room.
        unsafe {
            copy_short(addr, p, n);
            c.push(&s.caches, old, addr);
        }
        b.absorbed.store(b.absorbed.load(Relaxed) + 1, Relaxed);
        Some(p as *mut u8)
    }

    /// The end of `realloc_in_cache` for a block of more than `SHORT_COPY` bytes: copies `n`
    /// bytes from `addr` to `p` and pushes `addr` on class `old`; returns `p`.
    ///
    /// # Safety
    /// As at its call: `p` and `addr` are distinct small regions of at least `n` bytes, `p`
    /// popped from the calling thread's cache `c`, `addr` taken, of class `old`, no longer
    /// used, and the class has room.
    #[inline(never)]
    unsafe fn move_long(
        pool: &CachePool,
        c: &ThreadCache,
        old: usize,
        addr: usize,
        p: usize,
        n: usize,
    ) -> *mut u8 {
        // SAFETY: per the contract.
        unsafe {
            ptr::copy_nonoverlapping(addr as *const u8, p as *mut u8, n);
            c.push(pool, old, addr);
        }
        let b = &c.bins[old];
        b.absorbed.store(b.absorbed.load(Relaxed) + 1, Relaxed);
        p as *mut u8
    }

    /// Pushes `addr`, a taken region of class `idx` that its caller just validated (and
    /// frees), on the calling thread's cache; false (nothing done) when `free_to_cache` would
    /// not take it for other reasons than validation.
    ///
    /// # Safety
    /// `addr` is a taken region of class `idx` of this heap, not in any cache, that nothing
    /// uses any more.
    #[inline(always)]
    pub(super) unsafe fn push_taken(&self, s: &Shared<C>, addr: usize, idx: usize) -> bool {
        if !s.cache_on {
            return false;
        }
        let Some(v) = thread::front_cache(s.pool.heap_id()) else {
            return false;
        };
        // SAFETY: the memo holds a live cache of this heap, the calling thread's own.
        let c = unsafe { &*(v as *const ThreadCache) };
        let b = &c.bins[idx];
        if b.count.load(Relaxed) >= b.cap.load(Relaxed) {
            return false;
        }
        // SAFETY: per the contract the region is ours to push; the class has room.
        unsafe { c.push(&s.caches, idx, addr) };
        b.absorbed.store(b.absorbed.load(Relaxed) + 1, Relaxed);
        true
    }

    /// `malloc` of small class `idx` through the calling thread's cache; `None` when the class
    /// is not cached or the thread has no cache (the caller then asks an arena).
    #[inline(always)]
    pub(super) fn alloc_cached(
        &self,
        s: &Shared<C>,
        idx: usize,
        size: usize,
        zero: bool,
    ) -> Option<*mut u8> {
        if s.caches.base(idx) == 0 {
            return None;
        }
        let c = Self::thread_cache(s)?;
        // SAFETY: our own cache.
        let mut p = unsafe { c.pop(idx) };
        if p == 0 {
            p = self.fill(s, c, idx, size);
            if p == 0 {
                return Some(ptr::null_mut());
            }
        }
        if zero {
            // SAFETY: a region of class `idx`, now the caller's.
            unsafe { ptr::write_bytes(p as *mut u8, 0, bin(idx).size as usize) };
        }
        Some(p as *mut u8)
    }

    /// Takes a batch of class `idx` from an arena into the (empty) stack under one lock, and
    /// returns one of them, popped (0 if the OS refused memory).
    #[cold]
    #[inline(never)]
    fn fill(&self, s: &Shared<C>, c: &ThreadCache, idx: usize, size: usize) -> usize {
        let Some(a) = self.choose_arena(s, size) else {
            return 0;
        };
        let n = c.moves(&s.caches, idx);
        let mut taken = [0usize; MAX_BATCH];
        let taken = &mut taken[..n];
        let got = a.with(|inner| inner.alloc_small_batch(idx, taken, a, a.index(), &s.map));
        if got == 0 {
            return 0;
        }
        // Lowest address on top: the order the arena handed them out in. The stack is empty,
        // so the chain is built in place and its count set once.
        let b = &c.bins[idx];
        let mut head = 0;
        for &p in taken[1..got].iter().rev() {
            // SAFETY: regions just taken from their run, ours to write (two words at least).
            unsafe {
                (p as *mut usize).write(head);
                (p as *mut usize).add(1).write(s.caches.mark(p));
            }
            head = p;
        }
        b.head.set(head);
        b.count.store(b.count.load(Relaxed) + (got - 1), Relaxed);
        // A stack that ran empty with no free of its class since its last fill takes more next
        // time: the class grows as one that overflows does, within the same bounds. So a
        // thread that only allocates a class, fed by another that frees it, fills in batches
        // of up to `MAX_BATCH`, not of its starting one; a thread that frees the class too
        // (its stack refilled by its own frees) keeps its batch.
        let absorbed = b.absorbed.load(Relaxed);
        if c.absorbed_at_fill[idx].replace(absorbed) == absorbed {
            // SAFETY: our own cache.
            unsafe { c.grow(&s.caches, idx) };
        }
        taken[0]
    }

    /// `free` of `addr` in chunk `chunk`, page `page`, through the calling thread's cache;
    /// `None` when it is not a cached class's region or the thread has no cache (the caller
    /// then frees it under the arena lock, which also validates it).
    ///
    /// # Safety
    /// `chunk` is a live chunk of this heap (from the page map), `page` the page of `addr` in
    /// it and not a header page.
    #[inline(always)]
    pub(super) unsafe fn free_cached(
        &self,
        s: &Shared<C>,
        chunk: *mut ChunkHeader,
        page: usize,
        addr: usize,
    ) -> Option<Result<(), FreeError>> {
        // Without the lock: the entry of a page of a live run does not change while one of its
        // regions is taken, which is what a valid `addr` is; anything else is refused below or
        // by the locked path.
        // SAFETY: per the contract.
        let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
        if e.kind() != SMALL {
            return None;
        }
        let idx = e.bin();
        if idx >= NBINS || e.run_offset() > page || s.caches.base(idx) == 0 {
            return None;
        }
        let c = Self::thread_cache(s)?;
        let base = ChunkHeader::page_addr(chunk, page - e.run_offset());
        let Some(region) = bin(idx).region_index(addr - base) else {
            return Some(Err(FreeError::Interior));
        };
        // SAFETY: the entry names a run of bin `idx` at `base`; its words are read atomically;
        // the mark is read from a region taken from its run (bit clear).
        unsafe {
            if Run(RunHeader::at(base, idx)).is_free_unlocked(region) {
                // Back in its run: the locked path says whether it was freed or never
                // allocated.
                return None;
            }
            if s.caches.marked(addr) {
                // In a cache: freed already.
                return Some(Err(FreeError::Freed));
            }
            let b = &c.bins[idx];
            if b.count.load(Relaxed) >= b.cap.load(Relaxed) && !c.grow(&s.caches, idx) {
                Self::flush(c, idx, c.moves(&s.caches, idx));
            }
            c.push(&s.caches, idx, addr);
            let absorbed = &c.bins[idx].absorbed;
            absorbed.store(absorbed.load(Relaxed) + 1, Relaxed);
        }
        Some(Ok(()))
    }

    /// Gives the top `n` regions of class `idx` back to their arenas, each arena locked once.
    ///
    /// # Safety
    /// The caller is the cache's thread (or the only one touching it).
    #[cold]
    #[inline(never)]
    unsafe fn flush(c: &ThreadCache, idx: usize, n: usize) {
        let mut regions = [0usize; MAX_BATCH];
        let b = &c.bins[idx];
        let mut p = b.head.get();
        let mut k = 0;
        while p != 0 && k < n.min(MAX_BATCH) {
            regions[k] = p;
            k += 1;
            // SAFETY: per the contract, the stack's regions are ours; each leaves it unmarked.
            unsafe {
                (p as *mut usize).add(1).write(0);
                p = (p as *const usize).read();
            }
        }
        b.head.set(p);
        // Saturating: in a forked child, a cache whose thread was between moving its stack's
        // head and storing its count holds one region more than its count says (`fork_child`).
        b.count
            .store(b.count.load(Relaxed).saturating_sub(k), Relaxed);
        // alloclab_seeded: the lost flush (the batch's last region never reaches its run).
        #[cfg(alloclab_seeded)]
        if k > 0 && crate::seeded::active(crate::seeded::Bug::LostFlush) {
            k -= 1;
        }
        let flushed = &c.bins[idx].flushed;
        flushed.store(flushed.load(Relaxed) + k as u64, Relaxed);
        let regions = &mut regions[..k];
        let Some(&first) = regions.first() else {
            return;
        };
        let arena = arena_of::<C>(first);
        if regions.iter().all(|&r| arena_of::<C>(r) == arena) {
            // The common case: every region is of one arena.
            // SAFETY: the chunk of a cached region is live; its arena field is fixed.
            let a = unsafe { &*arena };
            a.with(|inner| {
                for &r in regions.iter() {
                    // SAFETY: a region of a live run of this arena, under its lock.
                    unsafe { give_back(inner, r) };
                }
            });
            return;
        }
        let mut done = 0;
        while done < regions.len() {
            let arena = arena_of::<C>(regions[done]);
            // SAFETY: the chunk of a cached region is live; its arena field is fixed.
            let a = unsafe { &*arena };
            a.with(|inner| {
                for r in regions[done..].iter_mut() {
                    if *r != 0 && arena_of::<C>(*r) == arena {
                        // SAFETY: a region of a live run of this arena, under its lock.
                        unsafe { give_back(inner, *r) };
                        *r = 0;
                    }
                }
            });
            while done < regions.len() && regions[done] == 0 {
                done += 1;
            }
        }
    }

    /// Empties cache `c` into the arenas.
    ///
    /// # Safety
    /// As for `flush`.
    unsafe fn flush_all(c: &ThreadCache) {
        for (idx, b) in c.bins.iter().enumerate() {
            while b.head.get() != 0 {
                // SAFETY: forwarded contract.
                unsafe { Self::flush(c, idx, MAX_BATCH) };
            }
            // The stack was walked to its end, so its count is 0, whatever it said: in a
            // forked child, an orphan's thread may have been between storing its stack's head
            // and its count (`fork_child`).
            b.count.store(0, Relaxed);
        }
    }

    /// Gives every region in the calling thread's cache in this heap back to its arena (a
    /// no-op without a cache). Statistics and invariants do not need it; a test that wants
    /// the arenas to hold nothing does.
    pub fn flush_thread_cache(&self) {
        if !C::Front::CACHE {
            return;
        }
        let Some(s) = self.shared_if_init() else {
            return;
        };
        if let Some(v) = thread::bind_cache(s.pool.heap_id(), || 0, |_| {}) {
            // SAFETY: our own cache, alive as long as the heap.
            unsafe { Self::flush_all(&*(v as *const ThreadCache)) };
        }
    }

    /// Turns the arenas' counts of regions leaving and entering runs into the program's: the
    /// regions held by thread caches move from `live` to `cached`, frees count those the
    /// caches took instead of those they gave back, and allocations are frees plus live.
    pub(super) fn account_caches(s: &Shared<C>, st: &mut crate::stats::Stats) {
        if !C::Front::CACHE {
            return;
        }
        let mut cached = [0usize; NBINS];
        let mut absorbed = [0u64; NBINS];
        let mut flushed = [0u64; NBINS];
        s.caches.with(|l| {
            for mut c in [l.live, l.spare] {
                while !c.is_null() {
                    // SAFETY: caches listed under the pool lock; counts are atomics.
                    unsafe {
                        for (i, b) in (*c).bins.iter().enumerate() {
                            cached[i] += b.count.load(Relaxed);
                            absorbed[i] += b.absorbed.load(Relaxed);
                            flushed[i] += b.flushed.load(Relaxed);
                        }
                        c = (*c).next.get();
                    }
                }
            }
        });
        let mut bytes = 0;
        for (i, b) in st.bins.iter_mut().enumerate() {
            let n = cached[i];
            b.cached = n;
            b.live = b.live.saturating_sub(n);
            b.frees = (b.frees + absorbed[i]).saturating_sub(flushed[i]);
            b.allocations = b.frees + b.live as u64;
            bytes += n * bin(i).size as usize;
        }
        st.cached = bytes;
        st.allocated = st.allocated.saturating_sub(bytes);
    }

    /// Every cache's counts within its bounds; every region of the calling thread's cache a
    /// taken region of its class, marked, on one stack once, and its count the stack's length.
    /// (Other threads' stacks are theirs to read; their regions are checked when they flush,
    /// each handed back must be taken from its run, or the process aborts.)
    pub(super) fn check_caches(&self, s: &Shared<C>) -> Result<(), Violation> {
        if !C::Front::CACHE {
            return Ok(());
        }
        let bad = |what| Err(Violation::new(ViolationKind::ThreadCache(what)));
        let me = thread::thread_key();
        s.caches.with(|l| {
            let mut c = l.live;
            while !c.is_null() {
                // SAFETY: live caches, listed under the pool lock.
                let cache = unsafe { &*c };
                let (mut bytes, mut cap_bytes) = (0, 0);
                for (i, b) in cache.bins.iter().enumerate() {
                    // The count first (acquire, pairing with `push`), then a capacity at
                    // least as new as the one the count was pushed under.
                    let n = b.count.load(Acquire);
                    let cap = b.cap.load(Relaxed);
                    if n > cap {
                        return bad("a class holds more regions than its capacity");
                    }
                    if cap < s.caches.base(i) || cap > s.caches.most[i] as usize {
                        return bad("a class's capacity is outside its range");
                    }
                    bytes += n * bin(i).size as usize;
                    cap_bytes += cap * bin(i).size as usize;
                }
                if bytes > s.caches.max_bytes || cap_bytes > s.caches.max_bytes {
                    return bad("a cache holds, or may hold, more bytes than its bound");
                }
                if cache.owner.get() == me {
                    self.check_own_cache(s, cache)?;
                }
                c = cache.next.get();
            }
            Ok(())
        })
    }

    fn check_own_cache(&self, s: &Shared<C>, c: &ThreadCache) -> Result<(), Violation> {
        let bad = |what, at| Err(Violation::new(ViolationKind::ThreadCache(what)).at(at));
        for (idx, b) in c.bins.iter().enumerate() {
            let mut n = 0;
            let mut p = b.head.get();
            while p != 0 {
                // A region on the stack twice makes it loop (its link is the same both times),
                // so the walk outruns any capacity.
                if n == b.cap.load(Relaxed) {
                    return bad("a stack is longer than the capacity, or loops", p);
                }
                n += 1;
                let Owner::Chunk(chunk) = s.map.lookup(p) else {
                    return bad("a cached region is not in a chunk of this heap", p);
                };
                let chunk = chunk as *mut ChunkHeader;
                let page = ChunkHeader::page_index(p);
                // SAFETY: a live chunk of this heap (page map); its arena field is fixed.
                let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                let ok = page >= CHUNK_HEADER_PAGES
                    && arena.with(|_| {
                        // SAFETY: our chunk, under its arena's lock.
                        unsafe {
                            let e = (*ChunkHeader::entry(chunk, page)).get();
                            e.kind() == SMALL
                                && e.bin() == idx
                                && ArenaInner::<C>::small_usable(chunk, page, e, p).is_ok()
                        }
                    });
                if !ok {
                    return bad("a cached region is not a taken region of its class", p);
                }
                // SAFETY: a taken region of this heap.
                if !unsafe { s.caches.marked(p) } {
                    return bad("a cached region lost its mark", p);
                }
                // SAFETY: as above; its first word links the stack.
                p = unsafe { (p as *const usize).read() };
            }
            if n != b.count.load(Relaxed) {
                return bad("a count differs from its stack's length", b.head.get());
            }
        }
        Ok(())
    }

    /// In a forked child: flushes the caches of every thread but the calling one (they do not
    /// exist in the child) and makes them spare.
    pub(super) fn fork_child(s: &Shared<C>) {
        if !C::Front::CACHE {
            return;
        }
        let me = thread::thread_key();
        s.caches.with(|l| {
            let mut link: *mut *mut ThreadCache = &mut l.live;
            // SAFETY: list nodes are caches of this heap, linked under the pool lock; in the
            // child the orphans' threads are gone, so this thread is the only one to touch them.
            unsafe {
                while !(*link).is_null() {
                    let c = *link;
                    if (*c).owner.get() == me {
                        link = (*c).next.as_ptr();
                        continue;
                    }
                    // The orphan's thread may have been anywhere in a push, pop, fill or
                    // flush when the parent forked (those take no pool lock): its stack is
                    // whole up to the head it last stored, but a count may be one off, which
                    // `flush_all` allows for. (A region that was between a stack and its run
                    // or its program stays out of both in the child: a leak, never a region
                    // handed out twice.)
                    Self::flush_all(&*c);
                    *link = (*c).next.get();
                    (*c).next.set(l.spare);
                    l.spare = c;
                }
            }
        });
    }
}

/// Most bytes `copy_short` copies: two 16-byte units.
const SHORT_COPY: usize = 32;

/// Copies the first `n` bytes (at most `SHORT_COPY`) of the small region at `from` to the
/// small region at `to`, inline, in whole 16-byte units (most moves between small classes are
/// short; a call to `memcpy` costs more than the copy).
///
/// # Safety
/// Two distinct small regions, each at least `n` bytes long. Small classes are multiples of
/// 16 bytes, so both hold `n` rounded up to 16 (the bytes past `n` may be uninitialized: they
/// are copied as `MaybeUninit`).
#[inline(always)]
unsafe fn copy_short(from: usize, to: usize, n: usize) {
    debug_assert!(n <= SHORT_COPY);
    type Unit = core::mem::MaybeUninit<[u64; 2]>;
    let (src, dst) = (from as *const Unit, to as *mut Unit);
    // SAFETY: per the contract, both regions hold every unit copied.
    unsafe {
        if n > 0 {
            dst.write(src.read());
        }
        if n > 16 {
            dst.add(1).write(src.add(1).read());
        }
    }
}

/// The arena of the chunk that holds `addr`.
fn arena_of<C: Config>(addr: usize) -> *const Arena<C> {
    // SAFETY: callers pass regions of live chunks, whose headers are fixed.
    unsafe { (*ChunkHeader::of(addr)).arena as *const Arena<C> }
}

/// Returns a region taken off a cache's stack (its mark cleared) to its run.
///
/// # Safety
/// `addr` is in a page of a live chunk of the arena whose state `inner` is (locked): a region
/// taken from its run, or (`tcache_check:light`) what a program's `free` passed the light
/// checks with, which this checks again.
#[inline(always)]
unsafe fn give_back<C: Config>(inner: &mut ArenaInner<C>, addr: usize) {
    // SAFETY: per the contract: the entry of a live run's page.
    unsafe {
        let chunk = ChunkHeader::of(addr);
        let page = ChunkHeader::page_index(addr);
        let e = (*ChunkHeader::entry(chunk, page)).get();
        // A region taken unchecked (`tcache_check:light`) may be one whose run has gone since.
        let done = if e.kind() == SMALL && e.bin() < NBINS && e.run_offset() <= page {
            inner.free_small(chunk, page, e, addr)
        } else {
            Err(FreeError::NotAllocated)
        };
        if let Err(err) = done {
            // With full checks, a bug of the engine; with `tcache_check:light`, most likely
            // the program's invalid or double free, found only now.
            crate::report::fatal(format_args!(
                "thread cache: region {addr:#x} was not taken from its run ({err}; with \
                 tcache_check:light, an invalid or double free the cache took unchecked)"
            ));
        }
    }
}

/// Delivers a thread exit to the heap at `owner`: flushes the thread's cache there and makes
/// it spare.
///
/// # Safety
/// `owner` is the `Shared<C>` of a live heap and `value` the exiting thread's cache in it.
pub(super) unsafe fn cache_exit_trampoline<C: Config>(owner: *const (), value: usize) {
    // SAFETY: per the contract.
    let s = unsafe { &*(owner as *const Shared<C>) };
    let c = value as *mut ThreadCache;
    // SAFETY: the exiting thread's own cache; it caches no more (`thread_exit` cleared its
    // memo and marked it exiting).
    unsafe { Heap::<C>::flush_all(&*c) };
    Heap::<C>::retire_cache(s, c);
}
