//! `Arena`: a lock, the chunks it owns, their free page runs, one bin per small class, and
//! dirty-page purging.
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

use crate::checks;
use crate::chunk::{
    ChunkHeader, PageBits, PageEntry, DIRTY, FREE, HEAD, KIND_MASK, LARGE, META, PURGED, PURGING,
    SMALL,
};
use crate::error::FreeError;
use crate::invariants::{expect_eq, Violation, ViolationKind};
use crate::lock::{CountedLock, LockStats};
use crate::os;
use crate::page_map::{PageMap, TAG_CHUNK};
use crate::policy::{Config, Removal, RunReuse};
use crate::purge::{DirtyHistory, DirtyView, Purge};
use crate::quarantine::Quarantine;
use crate::run::{LinkPlace, Run, RunHeader, RunRef};
use crate::safety::{DebugCaps, Safety};
use crate::size_class::{
    bin, round_up, BINS, CHUNK, CHUNK_HEADER_PAGES, CHUNK_PAGES, CHUNK_USABLE_PAGES, NBINS, PAGE,
};
use crate::stats::{ArenaStats, BinStats};
use crate::sync::UnsafeCell;
use core::ptr;

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
static PURGE_HOOK: crate::sync::untracked::AtomicUsize =
    crate::sync::untracked::AtomicUsize::new(0);

/// Verification builds: makes every arena of every heap in the process call `hook(addr,
/// bytes)` just before it `madvise`s a span, after releasing its lock (`None`: no hook). A
/// test uses it to show that the lock is free during the system call, by taking it from
/// another thread before the hook returns, and to free a pointer into the span while it is in
/// flight. Process-wide: set it only in a test binary whose tests all expect it.
#[cfg(feature = "verification")]
pub fn set_purge_hook(hook: Option<fn(usize, usize)>) {
    PURGE_HOOK.store(
        hook.map_or(0, |f| f as usize),
        crate::sync::Ordering::Release,
    );
}

#[cfg(feature = "verification")]
fn run_purge_hook(addr: usize, bytes: usize) {
    let h = PURGE_HOOK.load(crate::sync::Ordering::Acquire);
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
    /// Whether freeing takes the debug path.
    pub(crate) debug_free: bool,
    /// Whether small allocations take the debug hook.
    pub(crate) debug_alloc: bool,
    /// Freed allocations held back (`quarantine` option).
    pub(crate) quarantine: Quarantine,
}

/// An arena.
pub struct Arena<C: Config> {
    /// Counts its acquisitions, contention and wait: the heap reports them per arena.
    lock: CountedLock,
    index: usize,
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
                debug_free: safety.debug_free(),
                debug_alloc: safety.debug_alloc(),
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
        if crate::seeded::active(crate::seeded::Bug::UnlockedFree) {
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

impl<C: Config> ArenaInner<C> {
    // ---- pages ------------------------------------------------------------------------------

    /// Maps a new chunk, registers it, and adds its usable pages as one clean free run.
    fn new_chunk(&mut self, arena: *const Arena<C>, index: usize, map: &PageMap) -> bool {
        let Some(mem) = os::map_aligned(CHUNK, CHUNK) else {
            return false;
        };
        let chunk = mem.as_ptr().cast::<ChunkHeader>();
        if C::DEBUG.contains(DebugCaps::ZERO_CHECK) && self.safety.checks_zero(true) {
            // The seed's bug, on purpose (`ZeroCheck::All`): the whole chunk is read, so every
            // page of it is faulted in before any is used.
            // SAFETY: a fresh, exclusively owned, readable chunk mapping.
            unsafe { checks::check_zero(chunk as usize, CHUNK, "fresh chunk") };
        }
        // SAFETY: a fresh, exclusively owned chunk mapping.
        unsafe { ChunkHeader::init(chunk, arena.cast(), index) };
        if !map.set(chunk as usize, CHUNK, chunk as usize | TAG_CHUNK) {
            // SAFETY: never published.
            unsafe { os::unmap(chunk.cast(), CHUNK) };
            return false;
        }
        // SAFETY: the chunk is ours and its header initialized.
        unsafe {
            (*chunk).next = self.chunks;
            self.avail.insert(
                ChunkHeader::entry(chunk, CHUNK_HEADER_PAGES),
                CHUNK_USABLE_PAGES,
            );
        }
        self.chunks = chunk;
        self.stats.chunks += 1;
        true
    }

    /// Takes `n` pages (`1..=CHUNK_USABLE_PAGES`) out of the free runs, mapping a chunk if
    /// needed. The pages keep their `FREE` bits (and dirty flags) for the caller to overwrite.
    fn take_pages(
        &mut self,
        n: usize,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> Option<(*mut ChunkHeader, usize)> {
        let len = match self.avail.best_fit(n) {
            Some(l) => l,
            None => {
                if !self.new_chunk(arena, index, map) {
                    return None;
                }
                CHUNK_USABLE_PAGES
            }
        };
        let e = self.avail.heads[len];
        let (chunk, page) = ChunkHeader::locate(e);
        // SAFETY: `e` heads a free run of `len` pages in one of our chunks.
        unsafe {
            self.avail.remove(e, len);
            if len > n {
                self.list_free_run(chunk, page + n, len - n);
            }
        }
        Some((chunk, page))
    }

    /// Makes `page..page+len` a free run of the lists as it stands (ends written, listed),
    /// without coalescing: its neighbours are not free pages (or were merged into it).
    ///
    /// # Safety
    /// `chunk` is ours and `page..page+len` are free pages inside it, in no list.
    unsafe fn list_free_run(&mut self, chunk: *mut ChunkHeader, page: usize, len: usize) {
        // SAFETY: per the contract.
        unsafe {
            self.set_free_run_ends(chunk, page, len);
            self.avail.insert(ChunkHeader::entry(chunk, page), len);
        }
    }

    /// Writes the length into the first and last entry of a free run, keeping their content
    /// flags.
    ///
    /// # Safety
    /// `chunk` is ours and `page..page+len` are free pages inside it.
    unsafe fn set_free_run_ends(&mut self, chunk: *mut ChunkHeader, page: usize, len: usize) {
        // SAFETY: per the contract.
        unsafe {
            let first = ChunkHeader::entry(chunk, page);
            (*first).bits = PageEntry::free_bits(len, (*first).content());
            let last = ChunkHeader::entry(chunk, page + len - 1);
            (*last).bits = PageEntry::free_bits(len, (*last).content());
        }
    }

    /// Marks `page..page+n` (just taken by `take_pages`) with `bits(i)`; zeroes the dirty ones
    /// if `zero`, and returns how many were dirty. `as_zero`: the caller takes the clean pages
    /// as zero (a run, whose regions then serve `calloc` without a `memset`, or a zeroed large
    /// allocation), so `zero_check` reads them first.
    ///
    /// # Safety
    /// The pages were just returned by `take_pages` for `chunk`.
    unsafe fn claim_pages(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        n: usize,
        zero: bool,
        as_zero: bool,
        bits: impl Fn(usize) -> usize,
    ) -> usize {
        let mut dirty = 0;
        for i in 0..n {
            // SAFETY: per the contract, the entries are ours.
            unsafe {
                let e = ChunkHeader::entry(chunk, page + i);
                if (*e).dirty() {
                    dirty += 1;
                    if zero {
                        ptr::write_bytes(
                            ChunkHeader::page_addr(chunk, page + i) as *mut u8,
                            0,
                            PAGE,
                        );
                    }
                } else if C::DEBUG.contains(DebugCaps::ZERO_CHECK) && as_zero {
                    let fresh = (*e).bits & PURGED == 0;
                    if self.safety.checks_zero(fresh) {
                        let what = if fresh { "fresh page" } else { "purged page" };
                        // SAFETY: a page of our chunk, just taken under the lock; purged pages
                        // and fresh ones stay mapped and readable.
                        checks::check_zero(ChunkHeader::page_addr(chunk, page + i), PAGE, what);
                    }
                }
                (*e).bits = bits(i);
            }
        }
        self.stats.dirty_pages -= dirty;
        self.stats.active_pages += n;
        dirty
    }

    /// After pages were taken: a timed policy (the decay) acts on activity, so it is asked
    /// here too (no clock is read for a policy without history, or without dirty pages).
    #[inline]
    fn tick_purge(&mut self) {
        if self.stats.dirty_pages > 0 && self.slot_ns != 0 {
            self.consult_purge(0);
        }
    }

    /// Gives back `page..page+n`, which were in use: marks them free and dirty, coalesces with
    /// free neighbours, and starts a purge if the arena holds too many dirty pages (its system
    /// calls run once the caller's `Arena::with` has released the lock).
    ///
    /// # Safety
    /// The pages belong to one live small run or large allocation of this arena.
    unsafe fn release_pages(&mut self, chunk: *mut ChunkHeader, page: usize, n: usize) {
        for i in 0..n {
            // SAFETY: per the contract.
            unsafe { (*ChunkHeader::entry(chunk, page + i)).bits = FREE | DIRTY };
        }
        self.stats.dirty_pages += n;
        self.stats.active_pages -= n;
        // SAFETY: the pages are now free pages of our chunk.
        unsafe { self.coalesce_insert(chunk, page, n) };
        self.consult_purge(n);
    }

    /// Asks the purge policy how many dirty pages may stay, `released` pages having just
    /// become dirty (0: pages were taken), and starts a purge down to that if there are more.
    #[inline]
    fn consult_purge(&mut self, released: usize) {
        if self.slot_ns != 0 {
            self.history.advance(os::monotonic_ns(), self.slot_ns);
            self.history.add(released);
        }
        let view = DirtyView {
            dirty: self.stats.dirty_pages,
            dirty_max: self.dirty_max,
            recent: self.history.recent(),
        };
        let keep = self.purge_policy.keep(&view);
        if keep < view.dirty {
            self.purge(keep);
        }
    }

    /// Links free pages `page..page+n` into the lists, merged with free neighbours.
    ///
    /// # Safety
    /// The pages are free (`FREE` bits) pages of our chunk, in no list.
    unsafe fn coalesce_insert(&mut self, chunk: *mut ChunkHeader, page: usize, n: usize) {
        let (mut start, mut len) = (page, n);
        // SAFETY: neighbours are entries of the same chunk; a free neighbour is the end of a
        // maximal free run whose ends carry its length.
        unsafe {
            if start > CHUNK_HEADER_PAGES {
                let prev = ChunkHeader::entry(chunk, start - 1);
                if (*prev).kind() == FREE {
                    let plen = (*prev).len();
                    start -= plen;
                    len += plen;
                    self.avail.remove(ChunkHeader::entry(chunk, start), plen);
                }
            }
            if page + n < CHUNK_PAGES {
                let next = ChunkHeader::entry(chunk, page + n);
                if (*next).kind() == FREE {
                    let nlen = (*next).len();
                    len += nlen;
                    self.avail.remove(next, nlen);
                }
            }
            self.list_free_run(chunk, start, len);
        }
    }

    /// Starts a purge pass: chooses dirty free pages to return to the OS until at most
    /// `target` dirty pages remain (module comment). The system calls happen when the caller's
    /// `Arena::with` releases the lock.
    pub fn purge(&mut self, target: usize) {
        self.stats.purges += 1;
        self.choose_purge(target);
    }

    /// Takes dirty spans out of the free runs, longest runs first, until at most `target`
    /// dirty pages remain or every slot is in use (then `purging.more` remembers `target`).
    fn choose_purge(&mut self, target: usize) {
        let mut len = CHUNK_USABLE_PAGES;
        while len > 0 && self.stats.dirty_pages > target {
            let mut e = self.avail.heads[len];
            while !e.is_null() && self.stats.dirty_pages > target {
                // SAFETY: `e` heads a free run of `len` pages of our chunk, linked in list
                // `len`; `choose_run` puts back only pieces shorter than `len`, so `next` stays
                // linked in this list.
                unsafe {
                    let next = (*e).next;
                    let (chunk, page) = ChunkHeader::locate(e);
                    if (0..len).any(|i| (*ChunkHeader::entry(chunk, page + i)).dirty()) {
                        if self.purging.free_slot().is_none() {
                            self.purging.more = self.purging.more.min(target);
                            return;
                        }
                        self.avail.remove(e, len);
                        if !self.choose_run(chunk, page, len) {
                            self.purging.more = self.purging.more.min(target);
                            return;
                        }
                    }
                    e = next;
                }
            }
            len -= 1;
        }
    }

    /// Splits the free run `page..page+len` (out of the lists, with a dirty page and a free
    /// slot) into its maximal dirty spans, each chosen into a slot, and its clean pieces, put
    /// back as free runs. When the slots run out, the rest of the run goes back as one free run
    /// (dirty pages included) and this returns false.
    ///
    /// # Safety
    /// `chunk` is ours and `page..page+len` a maximal free run in no list.
    unsafe fn choose_run(&mut self, chunk: *mut ChunkHeader, page: usize, len: usize) -> bool {
        let end = page + len;
        // The start of the piece not yet chosen nor put back.
        let mut rest = page;
        let mut i = page;
        // SAFETY: per the contract every entry in `page..end` is a free page of our chunk.
        // Pieces put back are bounded by the run's ends (whose neighbours are not free: the
        // run was maximal) or by chosen spans (`PURGING`), so they need no coalescing.
        unsafe {
            while i < end {
                if !(*ChunkHeader::entry(chunk, i)).dirty() {
                    i += 1;
                    continue;
                }
                let span_start = i;
                while i < end && (*ChunkHeader::entry(chunk, i)).dirty() {
                    i += 1;
                }
                let Some(slot) = self.purging.free_slot() else {
                    self.list_free_run(chunk, rest, end - rest);
                    return false;
                };
                if span_start > rest {
                    self.list_free_run(chunk, rest, span_start - rest);
                }
                let span = i - span_start;
                for p in span_start..i {
                    (*ChunkHeader::entry(chunk, p)).bits = PURGING;
                }
                self.purging.spans[slot] = PurgeSpan {
                    chunk,
                    page: span_start as u32,
                    len: span as u32,
                };
                self.purging.chosen |= 1 << slot;
                self.stats.dirty_pages -= span;
                rest = i;
            }
            if end > rest {
                self.list_free_run(chunk, rest, end - rest);
            }
        }
        true
    }

    /// Hands the chosen spans to the calling thread, which purges them without the lock:
    /// writes their addresses and lengths in bytes to `out`; returns their slots, their count
    /// and the epoch to give back to `finish_purge`.
    fn take_chosen(&mut self, out: &mut [(usize, usize); PURGE_SLOTS]) -> (u32, usize, usize) {
        let mine = self.purging.chosen;
        self.purging.chosen = 0;
        self.purging.in_flight |= mine;
        let mut n = 0;
        for slot in slots(mine) {
            let s = self.purging.spans[slot];
            out[n] = (
                ChunkHeader::page_addr(s.chunk, s.page as usize),
                s.len as usize * PAGE,
            );
            n += 1;
        }
        (mine, n, self.purging.epoch)
    }

    /// Puts back the spans of `mine`, purged, as clean free pages coalesced with their free
    /// neighbours; nothing if a fork came in between and the calling thread is the forking
    /// thread in the child (as a signal handler's fork could make it), whose lock reset took
    /// the spans back already (and the slots may serve others since).
    fn finish_purge(&mut self, mine: u32, epoch: usize) {
        if epoch != self.purging.epoch {
            return;
        }
        // Just purged: they read as zero, and are not fresh (`zero_check: recycled` reads them).
        let (spans, pages) = self.put_back_spans(mine, FREE | PURGED);
        self.stats.purged_pages += pages as u64;
        self.stats.purge_calls += spans as u64;
        self.purging.in_flight &= !mine;
    }

    /// Puts the spans of the slots in `mask` back as free pages with `bits` (`FREE | PURGED`,
    /// or `FREE | DIRTY`), coalesced with their free neighbours; returns how many spans and pages.
    fn put_back_spans(&mut self, mask: u32, bits: usize) -> (usize, usize) {
        let (mut spans, mut pages) = (0, 0);
        for slot in slots(mask) {
            let s = self.purging.spans[slot];
            let (page, len) = (s.page as usize, s.len as usize);
            // SAFETY: the slot records a span of our chunk whose pages are `PURGING` (in no
            // list): they become free pages of that chunk.
            unsafe {
                for p in page..page + len {
                    (*ChunkHeader::entry(s.chunk, p)).bits = bits;
                }
                self.coalesce_insert(s.chunk, page, len);
            }
            spans += 1;
            pages += len;
        }
        (spans, pages)
    }

    /// Chooses again for a purge that stopped because every slot was in use.
    fn purge_more(&mut self) {
        let target = core::mem::replace(&mut self.purging.more, usize::MAX);
        if target != usize::MAX {
            self.choose_purge(target);
        }
    }

    /// Puts every chosen or in-flight span back as dirty free pages (the child after `fork`,
    /// whose purging threads are gone).
    fn reclaim_purging(&mut self) {
        // Whether their `madvise` ran is unknown: the pages may hold anything.
        let all = self.purging.chosen | self.purging.in_flight;
        let (_, pages) = self.put_back_spans(all, FREE | DIRTY);
        self.stats.dirty_pages += pages;
        self.purging.chosen = 0;
        self.purging.in_flight = 0;
        self.purging.more = usize::MAX;
        self.purging.epoch = self.purging.epoch.wrapping_add(1);
    }

    // ---- small ------------------------------------------------------------------------------

    /// Allocates a region of bin `idx`; null if the OS refuses memory.
    #[inline(always)]
    pub fn alloc_small(
        &mut self,
        idx: usize,
        zero: bool,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> *mut u8 {
        let run = match C::Reuse::pick(&mut self.bins[idx].policy) {
            Some(r) => {
                self.bins[idx].stats.picks += 1;
                r
            }
            None => match self.new_run(idx, arena, index, map) {
                Some(r) => r,
                None => return ptr::null_mut(),
            },
        };
        let r = run.run_of::<C::Reuse>();
        // SAFETY: the policy returned a run it knows, a live run of this bin (its contract);
        // the free-count check below turns a broken policy into a clear abort (in verification
        // builds: a violation `check` reports, and a null allocation), not corruption.
        unsafe {
            if r.free() == 0 || r.bin_index() != idx {
                #[cfg(feature = "verification")]
                {
                    self.unusable_pick.get_or_insert((idx, r.base()));
                    return ptr::null_mut();
                }
                #[cfg(not(feature = "verification"))]
                crate::report::fatal(format_args!(
                    "run-reuse policy {} picked the run at {:#x}, which is full or of another bin",
                    C::Reuse::NAME,
                    r.base()
                ));
            }
            let (p, fresh, known_zero) = r.take_region();
            let bin = &mut self.bins[idx];
            if r.free() == 0 {
                C::Reuse::remove(&mut bin.policy, run, Removal::Full);
                bin.stats.nonfull_runs -= 1;
            }
            bin.stats.allocations += 1;
            bin.stats.live += 1;
            let size = BINS[idx].size as usize;
            self.stats.small_allocated += size;
            self.on_alloc_small(p, size, fresh, zero);
            if zero && !known_zero {
                ptr::write_bytes(p as *mut u8, 0, size);
            }
            p as *mut u8
        }
    }

    /// Takes up to `out.len()` regions of bin `idx` into `out` (a thread cache's fill), as that
    /// many `alloc_small` calls would, but asking the policy once per run instead of once per
    /// region; returns how many (fewer only if the OS refuses memory).
    pub fn alloc_small_batch(
        &mut self,
        idx: usize,
        out: &mut [usize],
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> usize {
        let size = BINS[idx].size as usize;
        let mut n = 0;
        while n < out.len() {
            // Whether the run is one the policy chose among the non-full runs, or one just made.
            let (run, picked) = match C::Reuse::pick(&mut self.bins[idx].policy) {
                Some(r) => (r, true),
                None => match self.new_run(idx, arena, index, map) {
                    Some(r) => (r, false),
                    None => break,
                },
            };
            let r = run.run_of::<C::Reuse>();
            // SAFETY: as in `alloc_small`: a run the policy knows, checked before use.
            unsafe {
                if r.free() == 0 || r.bin_index() != idx {
                    crate::report::fatal(format_args!(
                        "run-reuse policy {} picked run {:#x}, which is full or of another bin",
                        C::Reuse::NAME,
                        run.addr()
                    ));
                }
                let first = n;
                n += r.take_regions(&mut out[n..]);
                let bin = &mut self.bins[idx];
                if r.free() == 0 {
                    C::Reuse::remove(&mut bin.policy, run, Removal::Full);
                    bin.stats.nonfull_runs -= 1;
                }
                let taken = (n - first) as u64;
                // Counted as `alloc_small` counts them, so that `picks` means the same with and
                // without a thread cache: every region served from a picked run is a pick; of
                // a new run's regions, all but the one that made the run.
                bin.stats.picks += if picked {
                    taken
                } else {
                    taken.saturating_sub(1)
                };
                bin.stats.allocations += taken;
                bin.stats.live += n - first;
                self.stats.small_allocated += (n - first) * size;
            }
        }
        n
    }

    #[cold]
    fn new_run(
        &mut self,
        idx: usize,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> Option<RunRef<Links<C>>> {
        let info = bin(idx);
        let pages = info.run_pages as usize;
        let (chunk, page) = self.take_pages(pages, arena, index, map)?;
        // SAFETY: the pages were just taken for us; the run header lies inside them, and its
        // first page's entry is ours (now `SMALL`, out of the free-run lists).
        let run = unsafe {
            let dirty = self.claim_pages(chunk, page, pages, false, true, |i| {
                PageEntry::small_bits(idx, i)
            });
            let base = ChunkHeader::page_addr(chunk, page);
            let header = RunHeader::init::<Links<C>>(base, idx, dirty == 0, C::Reuse::LINKS);
            RunRef::make::<C::Reuse>(header, chunk, page)
        };
        self.tick_purge();
        let bin = &mut self.bins[idx];
        bin.stats.runs += 1;
        bin.stats.nonfull_runs += 1;
        bin.stats.new_runs += 1;
        C::Reuse::insert(&mut bin.policy, run);
        Some(C::Reuse::pick(&mut bin.policy).unwrap_or(run))
    }

    /// Frees the small region at `addr`, whose page entry holds `e`.
    ///
    /// # Safety
    /// `chunk` is ours and `e` is the `SMALL` entry of `addr`'s page.
    #[inline(always)]
    pub unsafe fn free_small(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        e: PageBits,
        addr: usize,
    ) -> Result<(), FreeError> {
        let idx = e.bin();
        let head = page - e.run_offset();
        let base = ChunkHeader::page_addr(chunk, head);
        let info = bin(idx);
        let region = info.region_index(addr - base).ok_or(FreeError::Interior)?;
        let run = Run(RunHeader::at(base, idx));
        // SAFETY: `e` says a run of bin `idx` starts at `head`; we hold the lock.
        unsafe {
            if run.is_free(region) {
                return Err(Self::why_free(run, region));
            }
            if self.checks_on_free() {
                if let Some(done) = self.free_small_checked(addr, info.size as usize) {
                    return done;
                }
            }
            self.put_small(chunk, head, idx, region);
        }
        Ok(())
    }

    /// Why region `region` of `run`, which is free, cannot be freed.
    ///
    /// # Safety
    /// The run is live and the lock held.
    unsafe fn why_free(run: Run, region: usize) -> FreeError {
        // SAFETY: per the contract.
        if unsafe { run.never_allocated(region) } {
            FreeError::NeverAllocated
        } else {
            FreeError::Freed
        }
    }

    /// Puts region `region` of the run of bin `idx` that starts at page `head` of `chunk`
    /// (validated as live by `free_small`) back into its run.
    ///
    /// # Safety
    /// `chunk` is ours, a run of bin `idx` starts at `head`, the region is live, and the lock
    /// is held.
    #[inline(always)]
    pub(crate) unsafe fn put_small(
        &mut self,
        chunk: *mut ChunkHeader,
        head: usize,
        idx: usize,
        region: usize,
    ) {
        let base = ChunkHeader::page_addr(chunk, head);
        let info = bin(idx);
        let run = Run(RunHeader::at(base, idx));
        // SAFETY: per the contract; we hold the lock.
        unsafe {
            run.put_region(region);
            let rref = RunRef::new::<C::Reuse>(run.0, chunk, head);
            let free = run.free();
            let cap = info.capacity as usize;
            let bin = &mut self.bins[idx];
            bin.stats.frees += 1;
            bin.stats.live -= 1;
            self.stats.small_allocated -= info.size as usize;
            if free == cap {
                if cap > 1 {
                    C::Reuse::remove(&mut bin.policy, rref, Removal::Empty);
                    bin.stats.nonfull_runs -= 1;
                }
                bin.stats.runs -= 1;
                bin.stats.runs_released += 1;
                self.release_pages(chunk, head, info.run_pages as usize);
            } else if free == 1 {
                C::Reuse::insert(&mut bin.policy, rref);
                bin.stats.nonfull_runs += 1;
            } else {
                C::Reuse::freed(&mut bin.policy, rref);
            }
        }
    }

    /// Checks that `addr` is a live region of the small run that page entry `e` describes;
    /// returns the region size.
    ///
    /// # Safety
    /// As for `free_small`.
    pub unsafe fn small_usable(
        chunk: *mut ChunkHeader,
        page: usize,
        e: PageBits,
        addr: usize,
    ) -> Result<usize, FreeError> {
        let idx = e.bin();
        let base = ChunkHeader::page_addr(chunk, page - e.run_offset());
        let info = bin(idx);
        let region = info.region_index(addr - base).ok_or(FreeError::Interior)?;
        let run = Run(RunHeader::at(base, idx));
        // SAFETY: per the contract the run is live and the lock held.
        unsafe {
            if run.is_free(region) {
                return Err(Self::why_free(run, region));
            }
        }
        Ok(info.size as usize)
    }

    // ---- large ------------------------------------------------------------------------------

    /// Allocates `pages` pages aligned to `align` (the caller checked that the over-allocation
    /// fits in a chunk); null if the OS refuses memory.
    pub fn alloc_large(
        &mut self,
        pages: usize,
        align: usize,
        zero: bool,
        arena: *const Arena<C>,
        index: usize,
        map: &PageMap,
    ) -> *mut u8 {
        let extra = if align > PAGE { align / PAGE - 1 } else { 0 };
        let Some((chunk, first)) = self.take_pages(pages + extra, arena, index, map) else {
            return ptr::null_mut();
        };
        let addr = ChunkHeader::page_addr(chunk, first);
        let lead = match round_up(addr, align.max(PAGE)) {
            Some(a) => (a - addr) / PAGE,
            None => 0,
        };
        let page = first + lead;
        // SAFETY: the pages were just taken for us; lead and trail pages are still free pages
        // of the same chunk, given back after the allocation is marked.
        unsafe {
            self.claim_pages(chunk, page, pages, zero, zero, |i| {
                PageEntry::large_bits(if i == 0 { pages } else { 0 }, i == 0)
            });
            if lead > 0 {
                self.set_free_run_ends(chunk, first, lead);
                self.coalesce_insert(chunk, first, lead);
            }
            let trail = extra - lead;
            if trail > 0 {
                self.set_free_run_ends(chunk, page + pages, trail);
                self.coalesce_insert(chunk, page + pages, trail);
            }
        }
        self.stats.large_allocated += pages * PAGE;
        self.stats.large_allocations += 1;
        self.tick_purge();
        ChunkHeader::page_addr(chunk, page) as *mut u8
    }

    /// Frees the large allocation at `page`.
    ///
    /// # Safety
    /// `chunk` is ours and `page` heads a live large allocation of `pages` pages.
    pub(crate) unsafe fn free_large(&mut self, chunk: *mut ChunkHeader, page: usize, pages: usize) {
        self.stats.large_allocated -= pages * PAGE;
        self.stats.large_frees += 1;
        // SAFETY: per the contract.
        unsafe { self.release_pages(chunk, page, pages) };
    }

    /// Resizes the large allocation at `page` from `old` to `new` pages where it is; false if
    /// the following pages are not free.
    ///
    /// # Safety
    /// `chunk` is ours and `page` heads a live large allocation of `old` pages.
    pub unsafe fn resize_large(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        old: usize,
        new: usize,
    ) -> bool {
        if new == old {
            return true;
        }
        // SAFETY: per the contract; the pages after the allocation are in the same chunk
        // (checked against CHUNK_PAGES) and the entries say whether they are free.
        unsafe {
            if new < old {
                for i in new..old {
                    (*ChunkHeader::entry(chunk, page + i)).bits = FREE | DIRTY;
                }
                (*ChunkHeader::entry(chunk, page)).bits = PageEntry::large_bits(new, true);
                let n = old - new;
                self.stats.dirty_pages += n;
                self.stats.active_pages -= n;
                self.stats.large_allocated -= n * PAGE;
                self.coalesce_insert(chunk, page + new, n);
                self.consult_purge(n);
                return true;
            }
            let need = new - old;
            let next = page + old;
            if next >= CHUNK_PAGES {
                return false;
            }
            let ne = ChunkHeader::entry(chunk, next);
            if (*ne).kind() != FREE || (*ne).len() < need {
                return false;
            }
            let flen = (*ne).len();
            self.avail.remove(ne, flen);
            if flen > need {
                self.list_free_run(chunk, next + need, flen - need);
            }
            self.claim_pages(chunk, next, need, false, false, |_| {
                PageEntry::large_bits(0, false)
            });
            (*ChunkHeader::entry(chunk, page)).bits = PageEntry::large_bits(new, true);
            self.stats.large_allocated += need * PAGE;
        }
        self.tick_purge();
        true
    }

    // ---- invariants -------------------------------------------------------------------------

    /// Walks every chunk, run and list of this arena; returns the first violation.
    pub fn check(
        &self,
        arena: *const Arena<C>,
        arena_index: usize,
        map: &PageMap,
    ) -> Result<(), Violation> {
        let err = |v: Violation| v.in_arena(arena_index);
        #[cfg(feature = "verification")]
        if let Some((idx, addr)) = self.unusable_pick {
            return Err(err(Violation::new(ViolationKind::UnusablePick)
                .in_bin(idx)
                .at(addr)));
        }
        let mut runs = [0usize; NBINS];
        let mut nonfull = [0usize; NBINS];
        let mut live = [0usize; NBINS];
        let mut small_bytes = 0;
        let mut large_bytes = 0;
        let mut active = 0;
        let mut dirty = 0;
        let mut free_runs = 0usize;
        let mut purging = 0;
        let mut chunks = 0;
        let mut c = self.chunks;
        while !c.is_null() {
            chunks += 1;
            if crate::page_map::Owner::Chunk(c as usize) != map.lookup(c as usize) {
                return Err(err(Violation::new(ViolationKind::PageMap(
                    "chunk not registered",
                ))
                .at(c as usize)));
            }
            // SAFETY: chunks on our list are live and we hold the lock (callers use `with`).
            unsafe {
                if (*c).arena != arena.cast() || (*c).arena_index != arena_index {
                    return Err(err(Violation::new(ViolationKind::PageMap(
                        "chunk header names another arena",
                    ))
                    .at(c as usize)));
                }
                for p in 0..CHUNK_HEADER_PAGES {
                    if (*ChunkHeader::entry(c, p)).kind() != META {
                        return Err(err(Violation::new(ViolationKind::PageMap(
                            "header page not META",
                        ))
                        .at(c as usize)));
                    }
                }
                let mut p = CHUNK_HEADER_PAGES;
                let mut prev_free = false;
                while p < CHUNK_PAGES {
                    let e = &*ChunkHeader::entry(c, p);
                    let at = ChunkHeader::page_addr(c, p);
                    match e.bits & KIND_MASK {
                        FREE => {
                            let len = e.len();
                            if prev_free {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "adjacent free runs not coalesced",
                                ))
                                .at(at)));
                            }
                            if len == 0 || p + len > CHUNK_PAGES {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "bad free run length",
                                ))
                                .at(at)));
                            }
                            let last = &*ChunkHeader::entry(c, p + len - 1);
                            if last.kind() != FREE || last.len() != len {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "free run ends disagree",
                                ))
                                .at(at)));
                            }
                            for i in 0..len {
                                let pe = &*ChunkHeader::entry(c, p + i);
                                if pe.kind() != FREE {
                                    return Err(err(Violation::new(ViolationKind::FreeRuns(
                                        "non-free page inside free run",
                                    ))
                                    .at(at)));
                                }
                                dirty += usize::from(pe.dirty());
                            }
                            if !self.in_list(ChunkHeader::entry(c, p), len) {
                                return Err(err(Violation::new(ViolationKind::FreeRuns(
                                    "free run missing from its list",
                                ))
                                .at(at)));
                            }
                            free_runs += 1;
                            prev_free = true;
                            p += len;
                        }
                        SMALL => {
                            prev_free = false;
                            let idx = e.bin();
                            if idx >= NBINS || e.run_offset() != 0 {
                                return Err(err(Violation::new(ViolationKind::PageMap(
                                    "small run does not start at its first page",
                                ))
                                .at(at)));
                            }
                            let info = bin(idx);
                            let pages = info.run_pages as usize;
                            for i in 1..pages {
                                let pe = &*ChunkHeader::entry(c, p + i);
                                if pe.kind() != SMALL || pe.bin() != idx || pe.run_offset() != i {
                                    return Err(err(Violation::new(ViolationKind::PageMap(
                                        "small run page entries inconsistent",
                                    ))
                                    .at(at)
                                    .in_bin(idx)));
                                }
                            }
                            let run = Run(RunHeader::at(at, idx));
                            self.check_run(run, idx, at)
                                .map_err(|v| err(v.in_bin(idx).at(run.0.as_ptr() as usize)))?;
                            let free = run.free();
                            let cap = info.capacity as usize;
                            runs[idx] += 1;
                            if free > 0 {
                                nonfull[idx] += 1;
                            }
                            live[idx] += cap - free;
                            small_bytes += (cap - free) * info.size as usize;
                            active += pages;
                            p += pages;
                        }
                        LARGE => {
                            prev_free = false;
                            if e.bits & HEAD == 0 || e.len() == 0 || p + e.len() > CHUNK_PAGES {
                                return Err(err(Violation::new(ViolationKind::PageMap(
                                    "large allocation without a valid head page",
                                ))
                                .at(at)));
                            }
                            let len = e.len();
                            for i in 1..len {
                                let pe = &*ChunkHeader::entry(c, p + i);
                                if pe.kind() != LARGE || pe.bits & HEAD != 0 {
                                    return Err(err(Violation::new(ViolationKind::PageMap(
                                        "large allocation pages inconsistent",
                                    ))
                                    .at(at)));
                                }
                            }
                            large_bytes += len * PAGE;
                            active += len;
                            p += len;
                        }
                        // A page being purged without the lock: counted against the records
                        // below. It separates free runs like an allocated page.
                        META if e.bits == PURGING => {
                            prev_free = false;
                            purging += 1;
                            p += 1;
                        }
                        _ => {
                            return Err(err(Violation::new(ViolationKind::PageMap(
                                "META page outside the header",
                            ))
                            .at(at)))
                        }
                    }
                }
                c = (*c).next;
            }
        }
        // Every listed run is a free run we walked: compare counts.
        let mut listed = 0;
        for len in 1..=CHUNK_USABLE_PAGES {
            let mut e = self.avail.heads[len];
            let bit = self.avail.nonempty[len / 64] >> (len % 64) & 1 == 1;
            if bit == e.is_null() {
                return Err(err(Violation::new(ViolationKind::FreeRuns(
                    "non-empty bitmap disagrees with list",
                ))));
            }
            while !e.is_null() {
                listed += 1;
                // SAFETY: list entries are live entries of our chunks.
                unsafe {
                    if (*e).kind() != FREE || (*e).len() != len {
                        return Err(err(Violation::new(ViolationKind::FreeRuns(
                            "listed entry is not a free run of that length",
                        ))));
                    }
                    e = (*e).next;
                }
            }
        }
        self.check_purging(purging).map_err(err)?;
        let s = &self.stats;
        let chk = |r: Result<(), Violation>| r.map_err(err);
        chk(expect_eq("free runs listed", free_runs, listed))?;
        chk(expect_eq("chunks", chunks, s.chunks))?;
        chk(expect_eq("dirty pages", dirty, s.dirty_pages))?;
        chk(expect_eq("active pages", active, s.active_pages))?;
        chk(expect_eq(
            "small allocated bytes",
            small_bytes,
            s.small_allocated,
        ))?;
        chk(expect_eq(
            "large allocated bytes",
            large_bytes,
            s.large_allocated,
        ))?;
        for idx in 0..NBINS {
            let b = &self.bins[idx];
            let inb = |r: Result<(), Violation>| r.map_err(|v| err(v.in_bin(idx)));
            inb(expect_eq("bin runs", runs[idx], b.stats.runs))?;
            inb(expect_eq(
                "bin non-full runs",
                nonfull[idx],
                b.stats.nonfull_runs,
            ))?;
            inb(expect_eq("bin live regions", live[idx], b.stats.live))?;
            inb(expect_eq(
                "bin allocations - frees",
                live[idx],
                (b.stats.allocations - b.stats.frees) as usize,
            ))?;
            self.check_policy(idx, nonfull[idx])
                .map_err(|v| err(v.in_bin(idx)))?;
        }
        Ok(())
    }

    /// The purge records against the `purging` pages the walk found: every recorded span lies
    /// in one of our chunks and is all `PURGING` pages, and the spans add up to the number
    /// found (so no two spans overlap and no page is unrecorded).
    fn check_purging(&self, purging: usize) -> Result<(), Violation> {
        let pg = &self.purging;
        if pg.chosen & pg.in_flight != 0 {
            return Err(Violation::new(ViolationKind::FreeRuns(
                "purge slot both chosen and in flight",
            )));
        }
        let mut recorded = 0;
        for slot in slots(pg.chosen | pg.in_flight) {
            let s = pg.spans[slot];
            let (page, len) = (s.page as usize, s.len as usize);
            let mut c = self.chunks;
            while !c.is_null() && c != s.chunk {
                // SAFETY: chunks on our list are live.
                c = unsafe { (*c).next };
            }
            if c.is_null() || len == 0 || page < CHUNK_HEADER_PAGES || page + len > CHUNK_PAGES {
                return Err(Violation::new(ViolationKind::FreeRuns(
                    "purge record outside our chunks",
                )));
            }
            for p in page..page + len {
                // SAFETY: a page of one of our chunks, in range (checked above).
                if unsafe { (*ChunkHeader::entry(c, p)).bits } != PURGING {
                    return Err(Violation::new(ViolationKind::FreeRuns(
                        "page of a purge record not marked as being purged",
                    ))
                    .at(ChunkHeader::page_addr(c, p)));
                }
            }
            recorded += len;
        }
        expect_eq("pages being purged", purging, recorded)
    }

    fn in_list(&self, e: *mut PageEntry, len: usize) -> bool {
        let mut x = self.avail.heads[len];
        while !x.is_null() {
            if x == e {
                return true;
            }
            // SAFETY: list entries are live entries of our chunks.
            x = unsafe { (*x).next };
        }
        false
    }

    /// # Safety
    /// `run` is a live run of bin `idx` of this arena, starting at `base`.
    unsafe fn check_run(&self, run: Run, idx: usize, base: usize) -> Result<(), Violation> {
        // SAFETY: per the contract.
        unsafe {
            if !run.header_ok(base) || run.bin_index() != idx {
                return Err(Violation::new(ViolationKind::RunHeaderCorrupt));
            }
            let cap = bin(idx).capacity as usize;
            let (pop, free) = (run.bitmap_popcount(), run.free());
            if pop != free {
                return Err(Violation::new(ViolationKind::BitmapCount {
                    bitmap: pop,
                    free,
                }));
            }
            if !run.bitmap_shape_ok() {
                return Err(Violation::new(ViolationKind::BitmapShape));
            }
            if free == cap {
                return Err(Violation::new(ViolationKind::EmptyRunKept));
            }
        }
        Ok(())
    }

    /// Every run the policy knows is a non-full run of this bin, known once, and every
    /// non-full run is known.
    fn check_policy(&self, idx: usize, nonfull: usize) -> Result<(), Violation> {
        let policy = &self.bins[idx].policy;
        C::Reuse::check(policy).map_err(|s| Violation::new(ViolationKind::Policy(s)))?;
        // Collect the known runs into scratch memory (never our own heap: we hold its lock).
        let mut count = 0usize;
        C::Reuse::for_each(policy, &mut |_| count += 1);
        if count == 0 {
            return if nonfull == 0 {
                Ok(())
            } else {
                Err(Violation::new(ViolationKind::NonFullRunUnknown))
            };
        }
        // A stack buffer for the common case; mapped scratch for bins with many runs.
        let mut on_stack = [0usize; 128];
        let mapped = if count > on_stack.len() {
            let bytes = round_up(count * 8, PAGE).unwrap_or(PAGE);
            match os::map(bytes) {
                Some(m) => Some((m, bytes)),
                None => return Ok(()),
            }
        } else {
            None
        };
        // The slots the buffer holds, from its real size: a sizing mistake above then lists
        // fewer runs than there are, which the count below reports, instead of overrunning
        // the buffer (VERIFY.md: a mutant that shrank the mapping went unnoticed).
        let (slice, room) = match mapped {
            Some((m, bytes)) => (m.as_ptr().cast::<usize>(), bytes / 8),
            None => (on_stack.as_mut_ptr(), on_stack.len()),
        };
        let mut n = 0;
        let mut bad: Result<(), Violation> = Ok(());
        C::Reuse::for_each(policy, &mut |r| {
            if n < count.min(room) {
                // SAFETY: `n < room` slots fit in the buffer (`room` is the stack buffer's
                // length, or the mapping's bytes over 8, the size of a `usize` here).
                unsafe { slice.add(n).write(r.addr()) };
                n += 1;
            }
            if bad.is_ok() {
                bad = self.known_run_ok(r.addr(), idx);
            }
        });
        // SAFETY: `n` slots were written above.
        let known = unsafe { core::slice::from_raw_parts_mut(slice, n) };
        known.sort_unstable();
        let twice = known.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
        if let Some((m, bytes)) = mapped {
            // SAFETY: mapped above, no longer used.
            unsafe { os::unmap(m.as_ptr(), bytes) };
        }
        bad?;
        if let Some(a) = twice {
            // Named by its start, as every message names a run. Every known run passed
            // `known_run_ok` above, so `known_run` finds it.
            let run = self.known_run(a, idx)?;
            // SAFETY: a live run of this bin, and we hold the lock.
            let start = unsafe { run.base() };
            return Err(Violation::new(ViolationKind::RunKnownTwice).at(start));
        }
        if n != nonfull {
            return Err(Violation::new(ViolationKind::NonFullRunUnknown));
        }
        Ok(())
    }

    /// A run the policy knows must be a live, non-full run of bin `idx` in one of our chunks.
    fn known_run_ok(&self, id: usize, idx: usize) -> Result<(), Violation> {
        let run = self.known_run(id, idx)?;
        // SAFETY: `known_run` found a live run of this arena; we hold the lock.
        unsafe {
            if run.free() == 0 {
                return Err(Violation::new(ViolationKind::FullRunKnown).at(run.base()));
            }
        }
        Ok(())
    }

    /// The live run of bin `idx` in one of our chunks whose identity (`RunRef::addr`, where
    /// the policy's links are) is `id`, checked before anything at `id` is read: a policy
    /// may hand back any address.
    fn known_run(&self, id: usize, idx: usize) -> Result<Run, Violation> {
        let foreign = Err(Violation::new(ViolationKind::ForeignRunKnown).at(id));
        let mut c = self.chunks;
        while !c.is_null() && ChunkHeader::of(id) != c {
            // SAFETY: chunks on our list are live.
            c = unsafe { (*c).next };
        }
        if c.is_null() {
            return foreign;
        }
        let page = match C::Reuse::LINKS {
            LinkPlace::RunHeader => ChunkHeader::page_index(id),
            LinkPlace::ChunkMap => {
                // `id` must be the link words of a page entry: at the right offset in the
                // chunk header's array of entries.
                let first = core::mem::offset_of!(ChunkHeader, pages)
                    + core::mem::offset_of!(PageEntry, prev);
                let size = core::mem::size_of::<PageEntry>();
                let off = (id - c as usize).wrapping_sub(first);
                if off % size != 0 || off / size >= CHUNK_PAGES {
                    return foreign;
                }
                off / size
            }
        };
        // SAFETY: `c` is our chunk and `page` is in range.
        unsafe {
            let e = &*ChunkHeader::entry(c, page);
            if e.kind() != SMALL || e.bin() != idx {
                return foreign;
            }
            let base = ChunkHeader::page_addr(c, page - e.run_offset());
            let header = RunHeader::at(base, idx);
            let expected = match C::Reuse::LINKS {
                LinkPlace::RunHeader => header.as_ptr() as usize,
                LinkPlace::ChunkMap if e.run_offset() == 0 => id,
                // The entry of a run's later page: not where a run's links are.
                LinkPlace::ChunkMap => 0,
            };
            if expected != id {
                return foreign;
            }
            Ok(Run(header))
        }
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
