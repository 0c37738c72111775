//! The thread cache: what a front end with `FrontEnd::CACHE` puts in front of the arenas.
//!
//! Each thread that uses a heap gets one cache in it: per class, a stack of blocks (linked
//! through each block's first word) and its count. The classes are the small ones, whose
//! blocks are regions of runs, and large ones of one to four pages (`CACHE_MAX`, 16 KiB),
//! whose blocks are large allocations: a cache holds both alike, and hands each back to its
//! arena's small or large path when it flushes. `malloc` pops from the stack
//! without any lock or atomic read-modify-write; an empty stack is refilled with half its
//! capacity from an arena under one lock. `free` validates the pointer (page map, page entry,
//! region boundary, bitmap bit, cache mark; with `tcache_check:light` only the page map, the
//! entry, alignment and the mark, see `TcacheCheck`) without a lock and pushes it; a full stack first
//! gives half its capacity back to the regions' arenas (a flush), each arena locked once.
//!
//! - **Bounds.** One thread's cache holds at most `FrontEnd::MAX_BYTES` (or
//!   `Options::tcache_max_bytes`) bytes in one heap. Each class has a capacity, in regions:
//!   it starts at an equal share of a quarter of the bound (at most `BASE_COUNT` regions; a
//!   class whose regions do not fit goes to the arena directly; the large classes share
//!   another quarter among them), and fills and flushes move
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

mod paths;
mod traffic;
mod upkeep;

use crate::back::arena::{Arena, ArenaInner};
use crate::back::invariants::{Violation, ViolationKind};
use crate::front::{Back, Front};
use crate::meta::chunk::{ChunkHeader, PageBits, LARGE, SMALL};
use crate::meta::page_map::Owner;
use crate::meta::region::SmallRegion;
use crate::meta::size_class::{
    cache_class_bytes, cache_index, CHUNK_HEADER_PAGES, NBINS, NCACHE, NLARGE_CACHED, PAGE,
    QUANTUM, SMALL_MAX,
};
use crate::meta::thread;
use crate::platform::error::FreeError;
use crate::platform::lock::RawLock;
use crate::platform::sync::untracked::{AtomicU64, AtomicUsize};
use crate::platform::sync::{
    Ordering::{Acquire, Relaxed, Release},
    UnsafeCell,
};
use crate::policy::{Config, FrontEnd, Options, RemoteFree, TcacheCheck};
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
pub(crate) struct Tcache {
    bins: [CacheBin; NCACHE],
    /// Per class, its `absorbed` count at its last fill: a class that absorbed no free since
    /// then is one this thread only allocates (another thread frees it), whose fills grow.
    /// Apart from `bins`, so that a `CacheBin` stays five words (the fast paths index it).
    absorbed_at_fill: [Cell<u64>; NCACHE],
    /// Sum over the classes of capacity times region size: never above the bound.
    cap_bytes: Cell<usize>,
    /// `thread::thread_key()` of the thread it belongs to.
    owner: Cell<usize>,
    /// The pool's list it is on (live or spare), under the pool lock.
    next: Cell<*mut Tcache>,
}

struct Lists {
    live: *mut Tcache,
    spare: *mut Tcache,
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
    base: [u16; NCACHE],
    /// Regions one fill or flush of each class moves.
    batch: [u16; NCACHE],
    /// Capacity each class may grow to.
    most: [u16; NCACHE],
    max_bytes: usize,
    /// Flushes go to the arenas' mailboxes (`RemoteFree::MAILBOX`, `Options::remote_mailbox`,
    /// and full checks: a mailbox's blocks are handed out again unchecked, so a cache that
    /// took unchecked ones gives them back to their runs, which check them).
    mailbox: bool,
    /// Most blocks of each class one arena's mailbox holds: an eighth of the bound, from the
    /// class's batch to twice `MAX_BATCH` (a fill walks what it takes, and gives the rest back).
    mailbox_limit: [u16; NCACHE],
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
        // A quarter of the bound shared by the small classes, another by the large ones.
        let share = |i| max_bytes / 4 / if i < NBINS { NBINS } else { NLARGE_CACHED };
        let size = cache_class_bytes;
        let base: [u16; NCACHE] =
            core::array::from_fn(|i| (share(i) / size(i)).min(BASE_COUNT).min(MAX_COUNT) as u16);
        let batch: [u16; NCACHE] =
            core::array::from_fn(|i| (base[i] / 2).clamp(base[i].min(1), MAX_BATCH as u16));
        let most = core::array::from_fn(|i| {
            (max_bytes / 2 / size(i)).clamp(base[i] as usize, MAX_COUNT) as u16
        });
        let mailbox_limit = core::array::from_fn(|i| {
            (max_bytes / 8 / size(i)).clamp(batch[i] as usize, 2 * MAX_BATCH) as u16
        });
        // The secret needs to be unguessable by the program, not strong: the kernel's random
        // word, mixed with the pool's address (ASLR) and id in case there is none.
        #[cfg(not(any(loom, shuttle)))]
        let random = crate::platform::os::random_word();
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
            mailbox: F::Remote::MAILBOX
                && options.remote_mailbox
                && options.tcache_check != TcacheCheck::Light,
            mailbox_limit,
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
        (0..NCACHE)
            .map(|i| self.base(i) * cache_class_bytes(i))
            .sum()
    }

    /// The mark a cached region at `addr` carries in its second word.
    #[inline(always)]
    fn mark(&self, addr: usize) -> usize {
        addr ^ self.secret
    }

    /// Whether the block at `addr` carries the cache mark.
    ///
    /// # Safety
    /// `addr` is a region of at least 16 bytes taken from a live run, or the start of a live
    /// large allocation.
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

impl Tcache {
    /// Whether class `idx` has room for one more region.
    #[inline(always)]
    fn has_room(&self, idx: usize) -> bool {
        let b = &self.bins[idx];
        b.count.load(Relaxed) < b.cap.load(Relaxed)
    }

    /// Pushes `addr` (a region taken from its run, not in any cache, that a free or a
    /// realloc gives back) on class `idx`, and counts it as absorbed.
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
        b.absorbed.store(b.absorbed.load(Relaxed) + 1, Relaxed);
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
        let bytes = self.cap_bytes.get() + (new - cap) * cache_class_bytes(idx);
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

impl<C: Config> Front<C> {
    /// The config's remote-free policy hands flushes to the arenas' mailboxes.
    pub(crate) const MAILBOX: bool = <<C::Front as FrontEnd>::Remote as RemoteFree>::MAILBOX;
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

/// The cache's class of the large allocation at `addr`, whose page's entry is `e`: whether
/// the entry heads a large allocation of at most `NLARGE_CACHED` pages that starts at `addr`.
/// (Read without the lock, the entry of a live allocation's head page is fixed while the
/// allocation is; anything else is refused here or sorted out by the locked paths.)
#[inline(always)]
pub(crate) fn large_class(e: PageBits, addr: usize) -> Option<usize> {
    let pages = e.len();
    let ok =
        e.kind() == LARGE && e.head() && addr % PAGE == 0 && pages.wrapping_sub(1) < NLARGE_CACHED;
    ok.then(|| NBINS + pages - 1)
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
    // SAFETY: per the contract: the entry of a live run's page, or of a large allocation's
    // head page.
    unsafe {
        let chunk = ChunkHeader::of(addr);
        let page = ChunkHeader::page_index(addr);
        let e = (*ChunkHeader::entry(chunk, page)).get();
        // A region taken unchecked (`tcache_check:light`) may be one whose run has gone since.
        let done = if e.kind() == SMALL && e.bin() < NBINS && e.run_offset() <= page {
            inner.free_small(chunk, page, e, addr)
        } else if large_class(e, addr).is_some() {
            // The purge policy is asked once for the flush (`flush`).
            inner.free_large_in_batch(chunk, page, e.len());
            Ok(())
        } else {
            Err(FreeError::NotAllocated)
        };
        if let Err(err) = done {
            // With full checks, a bug of the engine; with `tcache_check:light`, most likely
            // the program's invalid or double free, found only now.
            crate::platform::report::fatal(format_args!(
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
/// `owner` is the `B` of a live heap and `value` the exiting thread's cache in it.
pub(crate) unsafe fn cache_exit_trampoline<C: Config, B: Back<C>>(owner: *const (), value: usize) {
    // SAFETY: per the contract.
    let s = unsafe { &*(owner as *const B) };
    let c = value as *mut Tcache;
    // SAFETY: the exiting thread's own cache; it caches no more (`thread_exit` cleared its
    // memo and marked it exiting), so its flush may go to the mailboxes of its heap's pool.
    unsafe { Front::<C>::flush_all(&*c, Some(s.caches())) };
    Front::<C>::retire_cache(s, c);
}
