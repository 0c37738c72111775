//! `Arena`: a lock, the chunks it owns, their free page runs, one bin per small class, and
//! dirty-page purging. This file holds the types and the locked entry (`Arena::with`); the
//! paths are `pages.rs` (chunks, free runs, purging), `small.rs`, `large.rs`, and `check.rs`
//! (the invariant walk); `mailbox.rs` is the lock-free way back in for blocks thread caches
//! hand over (`RemoteFree::MAILBOX`), the one part of an arena reached without its lock.
//!
//! Everything inside `ArenaInner` is reached only with the arena's lock held: the bins and
//! their policy state, the free-run lists, the page entries of the arena's chunks and the
//! headers of its runs. Methods of `ArenaInner` are `unsafe` where they trust a page or run
//! pointer to belong to this arena.
//!
//! Free page runs are kept in one list per length (1..=254 pages) with a bitmap of non-empty
//! lists: best fit is a scan of four words. Freed pages are coalesced with free neighbours.
//! Chunks whose pages all become free are kept (and purged like any free pages), as jemalloc
//! does with `retain`: address space is cheap, mmap/munmap churn is not.
//!
//! ## Purging without the lock
//!
//! `madvise` takes microseconds (more when the kernel must shoot down TLBs on other CPUs), and
//! every thread that uses the arena would wait for it if it ran under the lock. So purging is
//! split in three, as in jemalloc (3.x and 4.x stash the dirty runs under the arena lock and
//! release it around `madvise`):
//!
//! 1. Choose, under the lock (`purge`, called when the heap's purge policy, asked by
//!    `consult_purge` whenever pages become dirty or are taken, keeps fewer dirty pages than
//!    the arena holds (`purge.rs`: the threshold rule, more than `dirty_max`; the decay, pages
//!    dirty for longer than its delay), or by `Heap::purge`): each maximal dirty span of the free
//!    runs visited is taken out of the free lists, its page entries marked `PURGING` (kind
//!    `META`: not free, not allocated, see `chunk.rs`) and recorded in a slot of
//!    `ArenaInner::purging` (`PURGE_SLOTS` of them, in the arena: nothing is allocated). The
//!    clean pieces of the run go back to the lists. `dirty_pages` drops at once; until they
//!    are back, the pages count only in their slots' records.
//! 2. Purge, without the lock: `Arena::with` (every entry to the state) sees chosen spans
//!    after its closure returns (one branch on a word it holds in cache), copies them to the
//!    stack and marks them in flight, releases the lock, and `madvise`s them
//!    (`purge_chosen`). Nobody can allocate these pages meanwhile, a neighbour's coalescing
//!    does not merge with them, `free` of a pointer into them is refused (`NotAllocated`) and
//!    `check` counts them against the records: only their memory is touched without the lock.
//! 3. Put back, under the lock again: the pages become a clean free run, coalesced with free
//!    neighbours; `purged_pages` and `purge_calls` count the spans done. If the choice stopped
//!    because every slot was in use (`purging.more`), the thread chooses again and loops.
//!
//! Several threads may have spans in flight at once, each its own slots. `Heap::purge` takes
//! the same route, so it returns with every dirty page purged unless another thread was
//! purging at the time and holds slots (that thread then finishes the work). In the child of
//! `fork`, whose purging threads are gone, `reset_lock` puts their spans back as dirty free
//! pages (the fork handlers take every arena lock, so no span is chosen-but-not-taken then,
//! only in flight). Under loom the `madvise` is the real system call on the real mapping: loom
//! does not see it, it explores the unlocked window around it, whose ends are the lock's
//! atomics (`tests/loom_purge.rs`). Verification builds call a hook in that window
//! (`set_purge_hook`), which is how a test shows the lock is free during the system call.

use crate::back::invariants::{expect_eq, Violation, ViolationKind};
use crate::back::stats::{ArenaStats, BinStats};
use crate::debug::checks;
use crate::debug::quarantine::Quarantine;
use crate::meta::chunk::{
    ChunkHeader, PageBits, PageEntry, DIRTY, FREE, HEAD, KIND_MASK, LARGE, META, PURGED, PURGING,
    SMALL,
};
use crate::meta::page_map::{PageMap, TAG_CHUNK};
use crate::meta::region::SmallRegion;
use crate::meta::run::{LinkPlace, Run, RunHeader, RunRef};
use crate::meta::size_class::{
    bin, round_up, BINS, CHUNK, CHUNK_HEADER_PAGES, CHUNK_PAGES, CHUNK_USABLE_PAGES, NBINS, PAGE,
};
use crate::platform::error::FreeError;
use crate::platform::lock::{CountedLock, LockStats};
use crate::platform::os;
use crate::platform::sync::UnsafeCell;
use crate::policy::purge::{DirtyHistory, DirtyView, Purge};
use crate::policy::safety::{DebugCaps, Safety};
use crate::policy::switches::Switches;
use crate::policy::{Config, Removal, RunReuse};
use core::ptr;

mod check;
mod hardening;
mod large;
pub(crate) mod mailbox;
mod pages;
mod small;

type Links<C> = <<C as Config>::Reuse as RunReuse>::Links;

/// One small class's bin: the run-reuse policy's state and counters.
pub(crate) struct Bin<R: RunReuse> {
    pub policy: R::Bin,
    pub stats: BinStats,
}

/// Free page runs by length.
struct FreeRuns {
    heads: [*mut PageEntry; CHUNK_USABLE_PAGES + 1],
    nonempty: [u64; (CHUNK_USABLE_PAGES + 64) / 64],
}

impl FreeRuns {
    fn new() -> Self {
        FreeRuns {
            heads: [ptr::null_mut(); CHUNK_USABLE_PAGES + 1],
            nonempty: [0; (CHUNK_USABLE_PAGES + 64) / 64],
        }
    }

    /// # Safety
    /// `e` is the first page entry of a free run of `len` pages not in any list.
    unsafe fn insert(&mut self, e: *mut PageEntry, len: usize) {
        // SAFETY: per the contract, `e` is a live entry we may link.
        unsafe {
            let head = self.heads[len];
            (*e).prev = ptr::null_mut();
            (*e).next = head;
            if !head.is_null() {
                (*head).prev = e;
            }
        }
        self.heads[len] = e;
        self.nonempty[len / 64] |= 1 << (len % 64);
    }

    /// # Safety
    /// `e` is linked in the list for `len`.
    unsafe fn remove(&mut self, e: *mut PageEntry, len: usize) {
        // SAFETY: per the contract, `e` and its neighbours are live linked entries.
        unsafe {
            let (prev, next) = ((*e).prev, (*e).next);
            if prev.is_null() {
                self.heads[len] = next;
            } else {
                (*prev).next = next;
            }
            if !next.is_null() {
                (*next).prev = prev;
            }
            (*e).prev = ptr::null_mut();
            (*e).next = ptr::null_mut();
        }
        if self.heads[len].is_null() {
            self.nonempty[len / 64] &= !(1 << (len % 64));
        }
    }

    /// The shortest non-empty length at least `n`.
    fn best_fit(&self, n: usize) -> Option<usize> {
        let mut w = n / 64;
        let mut mask = !0u64 << (n % 64);
        while w < self.nonempty.len() {
            let bits = self.nonempty[w] & mask;
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            mask = !0;
        }
        None
    }
}

/// Spans an arena can have chosen for purging or in flight at once.
const PURGE_SLOTS: usize = 32;

/// A span of dirty pages taken out of the free runs to be purged (pages `PURGING`).
#[derive(Clone, Copy)]
struct PurgeSpan {
    chunk: *mut ChunkHeader,
    page: u32,
    len: u32,
}

/// The spans being purged (module comment): chosen under the lock, purged without it, put back
/// under it. A slot is free when its bit is in neither mask.
struct Purging {
    spans: [PurgeSpan; PURGE_SLOTS],
    /// Slots chosen in the current critical section, not yet taken by a thread to purge.
    chosen: u32,
    /// Slots some thread is purging now, without the lock.
    in_flight: u32,
    /// The lowest target of a purge that stopped because every slot was in use: the next
    /// thread to put spans back chooses again for it. `usize::MAX` if none.
    more: usize,
    /// Forks survived (`reclaim_purging`, in the child): a thread whose spans were taken
    /// back in between must not put them back again when its purge resumes.
    epoch: usize,
}

impl Purging {
    fn new() -> Self {
        Purging {
            spans: [PurgeSpan {
                chunk: ptr::null_mut(),
                page: 0,
                len: 0,
            }; PURGE_SLOTS],
            chosen: 0,
            in_flight: 0,
            more: usize::MAX,
            epoch: 0,
        }
    }

    /// A slot in neither mask.
    fn free_slot(&self) -> Option<usize> {
        let free = !(self.chosen | self.in_flight);
        (free != 0).then(|| free.trailing_zeros() as usize)
    }
}

/// The slots whose bits are set in `mask`.
fn slots(mut mask: u32) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
}

/// Verification builds: the function `purge_chosen` calls before each `madvise`, without the
/// lock, with the span's address and length in bytes (0: none).
#[cfg(feature = "verification")]
static PURGE_HOOK: crate::platform::sync::untracked::AtomicUsize =
    crate::platform::sync::untracked::AtomicUsize::new(0);

/// Verification builds: makes every arena of every heap in the process call `hook(addr,
/// bytes)` just before it `madvise`s a span, after releasing its lock (`None`: no hook). A
/// test uses it to show that the lock is free during the system call, by taking it from
/// another thread before the hook returns, and to free a pointer into the span while it is in
/// flight. Process-wide: set it only in a test binary whose tests all expect it.
#[cfg(feature = "verification")]
pub fn set_purge_hook(hook: Option<fn(usize, usize)>) {
    PURGE_HOOK.store(
        hook.map_or(0, |f| f as usize),
        crate::platform::sync::Ordering::Release,
    );
}

#[cfg(feature = "verification")]
fn run_purge_hook(addr: usize, bytes: usize) {
    let h = PURGE_HOOK.load(crate::platform::sync::Ordering::Acquire);
    if h != 0 {
        // SAFETY: the only non-zero values stored are `fn(usize, usize)` pointers
        // (`set_purge_hook`), and a function pointer round-trips through `usize`.
        let f = unsafe { core::mem::transmute::<usize, fn(usize, usize)>(h) };
        f(addr, bytes);
    }
}

/// The lock-protected state of an arena.
pub(crate) struct ArenaInner<C: Config> {
    pub bins: [Bin<C::Reuse>; NBINS],
    avail: FreeRuns,
    chunks: *mut ChunkHeader,
    pub stats: ArenaStats,
    dirty_max: usize,
    /// The purge policy (`purge.rs`), its history slot (0: no clock) and the history.
    purge_policy: Purge,
    slot_ns: u64,
    history: DirtyHistory,
    /// Dirty spans chosen for purging or being purged without the lock.
    purging: Purging,
    /// The first unusable run a policy picked (verification builds): reported by `check`.
    #[cfg(feature = "verification")]
    unusable_pick: Option<(usize, usize)>,
    /// The heap's debug options (`hardening.rs`).
    pub(crate) safety: Safety,
    /// What its paths switch on, derived from `safety` (`policy/switches.rs`).
    pub(crate) switches: Switches,
    /// Freed allocations held back (`quarantine` option).
    pub(crate) quarantine: Quarantine,
}

/// An arena.
pub struct Arena<C: Config> {
    /// Counts its acquisitions, contention and wait: the heap reports them per arena.
    lock: CountedLock,
    index: usize,
    /// Blocks thread caches handed back without the lock (`RemoteFree::MAILBOX`).
    pub(crate) mailbox: mailbox::Mailbox,
    inner: UnsafeCell<ArenaInner<C>>,
}

// SAFETY: `inner` (and every chunk, page entry and run it reaches) is touched only with `lock`
// held; the policy state's raw pointers never leave that protection.
unsafe impl<C: Config> Sync for Arena<C> {}
// SAFETY: as above.
unsafe impl<C: Config> Send for Arena<C> {}

impl<C: Config> Arena<C> {
    pub(crate) fn new(index: usize, dirty_max: usize, purge: Purge, safety: Safety) -> Self {
        Arena {
            lock: CountedLock::new(),
            index,
            mailbox: mailbox::Mailbox::new(),
            inner: UnsafeCell::new(ArenaInner {
                bins: core::array::from_fn(|_| Bin {
                    policy: Default::default(),
                    stats: BinStats::default(),
                }),
                avail: FreeRuns::new(),
                chunks: ptr::null_mut(),
                stats: ArenaStats::default(),
                dirty_max,
                purge_policy: purge,
                slot_ns: purge.slot_ns(),
                history: DirtyHistory::new(),
                purging: Purging::new(),
                #[cfg(feature = "verification")]
                unusable_pick: None,
                safety,
                switches: Switches::of::<C>(&safety),
                quarantine: Quarantine::new(),
            }),
        }
    }

    /// This arena's index in its heap.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Runs `f` on the state with the lock held; then, if `f` chose dirty spans to purge,
    /// purges them without the lock (module comment), before returning.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut ArenaInner<C>) -> R) -> R {
        self.lock.lock();
        let (r, chosen) = self.inner.with_mut(|p| {
            // SAFETY: the lock is held until after `f` returns.
            let inner = unsafe { &mut *p };
            let r = f(inner);
            (r, inner.purging.chosen != 0)
        });
        if chosen {
            self.purge_chosen();
        } else {
            self.lock.unlock();
        }
        r
    }

    /// Entered with the lock held and spans chosen; returns with the lock released and the
    /// spans purged and put back (and any further spans a stopped purge wanted).
    #[cold]
    #[inline(never)]
    fn purge_chosen(&self) {
        loop {
            let mut spans = [(0usize, 0usize); PURGE_SLOTS];
            // SAFETY: the lock is held (taken by `with`, or at the end of the last round).
            let (mine, n, epoch) = self
                .inner
                .with_mut(|p| unsafe { (*p).take_chosen(&mut spans) });
            self.lock.unlock();
            for &(addr, bytes) in &spans[..n] {
                #[cfg(feature = "verification")]
                run_purge_hook(addr, bytes);
                // SAFETY: the span's pages are free pages of one of our chunks (their contents
                // are dead), marked `PURGING` and in no free list: nothing hands them out, and
                // their entries stay as they are until `finish_purge` below, under the lock.
                unsafe { os::purge(addr as *mut u8, bytes) };
            }
            self.lock.lock();
            let again = self.inner.with_mut(|p| {
                // SAFETY: the lock is held again.
                let inner = unsafe { &mut *p };
                inner.finish_purge(mine, epoch);
                inner.purge_more();
                inner.purging.chosen != 0
            });
            if !again {
                self.lock.unlock();
                return;
            }
        }
    }

    /// `with`, for the free path. Under `--cfg alloclab_seeded` with `Bug::UnlockedFree` on, it
    /// skips the lock: the seeded missing-lock bug.
    #[inline(always)]
    pub(crate) fn with_on_free<R>(&self, f: impl FnOnce(&mut ArenaInner<C>) -> R) -> R {
        #[cfg(alloclab_seeded)]
        if crate::platform::seeded::active(crate::platform::seeded::Bug::UnlockedFree) {
            // SAFETY: none: this is the seeded bug (state touched without the lock), compiled
            // only for the verification suite, which must catch the race it causes.
            return self.inner.with_mut(|p| f(unsafe { &mut *p }));
        }
        self.with(f)
    }

    pub(crate) fn lock(&self) {
        self.lock.lock();
    }
    /// The arena lock's counts so far (exact if read with the lock held).
    pub(crate) fn lock_stats(&self) -> LockStats {
        self.lock.stats()
    }
    /// The arena's counters with its lock's filled in: `stats` is the state's (read under the
    /// lock, which is still held, so the lock's counts are exact and include this read's own
    /// acquisition).
    pub(crate) fn stats_with_lock(&self, stats: &ArenaStats) -> ArenaStats {
        let l = self.lock.stats();
        ArenaStats {
            lock_acquisitions: l.acquisitions,
            lock_contended: l.contended,
            lock_wait_ns: l.wait_ns,
            ..*stats
        }
    }
    /// Whether a thread sleeps waiting for the lock (a snapshot, for tests).
    #[cfg(feature = "verification")]
    pub(crate) fn lock_has_sleepers(&self) -> bool {
        self.lock.has_sleepers()
    }
    pub(crate) fn unlock(&self) {
        self.lock.unlock();
    }
    /// In the child after `fork()`: forgets the lock's holders, and puts back the spans that
    /// threads which do not exist in the child were purging without the lock (as dirty free
    /// pages: whether their `madvise` ran is unknown), so that no page stays in flight.
    pub(crate) fn reset_lock(&self) {
        self.lock.reset();
        // SAFETY: the child has one thread, this one, and it is not inside the arena.
        self.inner.with_mut(|p| unsafe { (*p).reclaim_purging() });
    }

    /// Unmaps every chunk. Called when the heap is dropped.
    ///
    /// # Safety
    /// No allocation of this arena is used afterwards, and no other thread touches it.
    pub(crate) unsafe fn release_all(&self, map: &PageMap) {
        self.inner.with_mut(|p| {
            // SAFETY: exclusive per the contract.
            let inner = unsafe { &mut *p };
            let mut c = inner.chunks;
            while !c.is_null() {
                // SAFETY: chunks on the list were mapped by `new_chunk` and are no longer used.
                unsafe {
                    let next = (*c).next;
                    map.clear(c as usize, CHUNK);
                    os::unmap(c.cast(), CHUNK);
                    c = next;
                }
            }
            inner.chunks = ptr::null_mut();
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn best_fit_takes_the_shortest_long_enough_list() {
        let mut entries: Vec<PageEntry> = (0..4)
            .map(|_| PageEntry {
                bits: 0,
                prev: ptr::null_mut(),
                next: ptr::null_mut(),
            })
            .collect();
        let e: Vec<*mut PageEntry> = entries.iter_mut().map(|x| x as *mut PageEntry).collect();
        let mut runs = FreeRuns::new();
        assert_eq!(runs.best_fit(1), None);
        // SAFETY: the entries live in `entries` for the whole test and are in no list.
        unsafe {
            runs.insert(e[0], 3);
            runs.insert(e[1], 70);
            runs.insert(e[2], 70);
            runs.insert(e[3], CHUNK_USABLE_PAGES);
        }
        assert_eq!(runs.best_fit(1), Some(3));
        assert_eq!(runs.best_fit(3), Some(3));
        assert_eq!(runs.best_fit(4), Some(70));
        assert_eq!(runs.best_fit(71), Some(CHUNK_USABLE_PAGES));
        assert_eq!(runs.heads[70], e[2], "lists are LIFO");
        // SAFETY: as above; each is in the list named.
        unsafe {
            runs.remove(e[2], 70);
            assert_eq!(runs.heads[70], e[1]);
            runs.remove(e[1], 70);
            runs.remove(e[0], 3);
        }
        assert_eq!(runs.best_fit(1), Some(CHUNK_USABLE_PAGES));
        // SAFETY: as above.
        unsafe { runs.remove(e[3], CHUNK_USABLE_PAGES) };
        assert_eq!(runs.best_fit(1), None);
        assert!(runs.nonempty.iter().all(|&w| w == 0));
    }
}
