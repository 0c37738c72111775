//! `Heap<C>`: the allocator. Usable as a `#[global_allocator]` (`Heap::new()` is `const`) and
//! as an ordinary value: many heaps can live in one process, each with its own page map,
//! arenas, huge allocations and metadata, all returned to the OS when it is dropped.
//!
//! A heap initializes on first use, mapping its shared state with `mmap`; nothing on any path
//! allocates through the heap itself. Requests go:
//! small (up to 3840 B) and large (up to a chunk) to the arena that `C::Arenas` chooses,
//! huge to a mapping of their own. Frees find their chunk through the page map and their
//! arena through the chunk header, so a region may be freed from any thread.

use crate::arena::{Arena, ArenaInner};
use crate::base::Base;
use crate::chunk::{ChunkHeader, DIRTY, FREE, LARGE, SMALL};
use crate::error::FreeError;
use crate::guard::{self, LargeAt};
use crate::huge::Huge;
use crate::invariants::{Violation, ViolationKind};
use crate::lock::{LockStats, RawLock};
use crate::os;
use crate::page_map::{Owner, PageMap};
use crate::policy::{ArenaChoice, Config, FrontEnd, Options, TcacheCheck};
use crate::report::fatal;
use crate::safety::{DebugCaps, Safety, SamplePath, CANARY_BYTES, JUNK_BYTE};
use crate::sampled::Sampler;
use crate::size_class::{
    classify, round_up, SizeClass, BINS, CHUNK, CHUNK_HEADER_PAGES, CHUNK_USABLE_PAGES, PAGE,
};
use crate::stats::{ArenaStats, Stats};
use crate::sync::{loom_const_fn, AtomicPtr, Ordering};
use crate::thread::{ArenaCtx, ArenaPool, Step, MAX_ARENAS};
use crate::zero_size::ZeroSize;
use core::alloc::{GlobalAlloc, Layout};
use core::marker::PhantomData;
use core::ptr;

mod tcache;
use tcache::CachePool;

/// The state a heap maps on first use: its fields, then the arena slots (8 KiB, two pages of
/// the three). `repr(C)` keeps the slots last, and `init` leaves them as the fresh mapping's
/// zero bytes (null pointers) instead of writing them, so that start-up touches one page of
/// the mapping rather than three (issue 11: each page a process touches is a page fault).
#[repr(C)]
struct Shared<C: Config> {
    fields: SharedFields<C>,
    arenas: [AtomicPtr<Arena<C>>; MAX_ARENAS],
}

impl<C: Config> core::ops::Deref for Shared<C> {
    type Target = SharedFields<C>;

    #[inline(always)]
    fn deref(&self) -> &SharedFields<C> {
        &self.fields
    }
}

/// Everything in `Shared` but the arena slots.
struct SharedFields<C: Config> {
    map: PageMap,
    base: Base,
    huge: Huge,
    pool: ArenaPool,
    caches: CachePool,
    choice: <C::Arenas as ArenaChoice>::State,
    arena_lock: RawLock,
    dirty_max: usize,
    purge: crate::purge::Purge,
    safety: Safety,
    /// Whether `allocate` takes `allocate_checked`.
    alloc_hooks: bool,
    /// Whether small blocks go through the thread cache: never while a debug option on regions
    /// is on, since a cached free would skip its checks (poison, canary, quarantine) until a
    /// flush.
    cache_on: bool,
    /// Whether pointers may lie outside the page map's chunks (`malloc(0)` slots, samples).
    special_ptrs: bool,
    /// Whether no debug option on regions is on (`zero_check` reads pages as arenas take them,
    /// nothing else): a small region is then exactly its class's size, and nothing but the
    /// arenas (and thread caches) holds pointers.
    plain: bool,
    zero_size: ZeroSize,
    sampler: Sampler,
}

/// Where a live pointer lives.
enum Live {
    Small {
        usable: usize,
    },
    Large {
        chunk: *mut ChunkHeader,
        page: usize,
        at: LargeAt,
    },
    Huge {
        rec: usize,
        usable: usize,
    },
    /// A `malloc(0)` slot (`zero_size.rs`).
    ZeroSize,
    /// A sampled allocation (`sampled.rs`) of this many bytes.
    Sampled {
        size: usize,
    },
}

/// Debug capabilities with a hook on the allocation path in `Heap` itself.
const ALLOC_HOOKS: DebugCaps = DebugCaps::CANARY
    .union(DebugCaps::GUARD)
    .union(DebugCaps::ZERO_SIZE)
    .union(DebugCaps::JUNK);

/// Why a page entry of kind `FREE` (or `META`) holds no allocation.
fn why_free_page(bits: usize) -> FreeError {
    if bits & crate::chunk::KIND_MASK == FREE && bits & DIRTY != 0 {
        FreeError::Freed
    } else {
        FreeError::NotAllocated
    }
}

/// A memory allocator with run-reuse and arena-choice policies fixed by `C`.
pub struct Heap<C: Config> {
    shared: AtomicPtr<Shared<C>>,
    options: Options,
    _config: PhantomData<fn() -> C>,
}

/// Whether the thread cache's fast path takes a request of `size` bytes aligned to `align`.
#[inline(always)]
fn cacheable(size: usize, align: usize) -> bool {
    align <= crate::size_class::QUANTUM && size <= crate::size_class::SMALL_MAX
}

impl<C: Config> Heap<C> {
    loom_const_fn! {
        /// A heap with default options. Maps nothing until first used.
        pub fn new() -> Heap<C> {
            Heap::with_options(Options::DEFAULT)
        }
    }

    loom_const_fn! {
        /// A heap with the given options.
        pub fn with_options(options: Options) -> Heap<C> {
            Heap { shared: AtomicPtr::new(ptr::null_mut()), options, _config: PhantomData }
        }
    }

    /// The configuration's name.
    pub fn name(&self) -> &'static str {
        C::NAME
    }

    /// The configuration and its policies, for reports.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = C::describe(&mut s);
        s
    }

    /// Arena indices currently leased to live threads (thread-bound arena strategies).
    pub fn arenas_leased(&self) -> usize {
        self.shared_if_init().map_or(0, |s| s.pool.leased())
    }

    /// The options this heap was made with.
    pub fn options(&self) -> Options {
        self.options
    }

    // ---- initialization ---------------------------------------------------------------------

    #[inline(always)]
    fn shared(&self) -> Option<&Shared<C>> {
        let p = self.shared.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: once published, the shared state lives until the heap is dropped.
            return Some(unsafe { &*p });
        }
        self.init()
    }

    /// The shared state if the heap has initialized (frees of foreign pointers into a heap that
    /// never allocated must not initialize it).
    #[inline(always)]
    fn shared_if_init(&self) -> Option<&Shared<C>> {
        let p = self.shared.load(Ordering::Acquire);
        // SAFETY: as in `shared`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Builds and publishes the shared state, under the process-wide thread registry's lock:
    /// one heap initializes at a time (rare: once per heap), and a fork in the middle finds
    /// no half-built heap (see `fork.rs`).
    #[cold]
    fn init(&self) -> Option<&Shared<C>> {
        // Drawn before taking the lock: the atomic counter alone keeps ids unique (the
        // `LostHeapId` seeded bug breaks exactly that, and loom must be able to see it).
        let heap_id = crate::thread::next_heap_id();
        let shared = crate::thread::under_registry(|reg| {
            let p = self.shared.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: as in `shared`.
                return Some(unsafe { &*p });
            }
            if os::kernel_page_size() != PAGE {
                fatal(format_args!(
                    "the kernel's page size is {}, alloclab is built for {}",
                    os::kernel_page_size(),
                    PAGE
                ));
            }
            let bytes = round_up(core::mem::size_of::<Shared<C>>(), PAGE)?;
            let mem = os::map(bytes)?.cast::<Shared<C>>();
            let Some(map) = PageMap::create() else {
                // SAFETY: never published.
                unsafe { os::unmap(mem.as_ptr().cast(), bytes) };
                return None;
            };
            let safety = self.options.safety;
            Self::check_safety(&safety);
            let dirty_max = if self.options.dirty_max_pages == usize::MAX {
                C::DIRTY_MAX_PAGES
            } else {
                self.options.dirty_max_pages
            };
            let shared = mem.as_ptr();
            // SAFETY: `mem` is a fresh mapping large enough for `Shared<C>`; the slots stay
            // its zero bytes, which are null pointers: `AtomicPtr<T>` has the in-memory
            // representation of `*mut T` (loom's and shuttle's atomics do not, so model builds
            // write them).
            unsafe {
                #[cfg(any(loom, shuttle))]
                ptr::addr_of_mut!((*shared).arenas)
                    .write(core::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())));
                ptr::addr_of_mut!((*shared).fields).write(SharedFields {
                    map,
                    base: Base::new(),
                    huge: Huge::new(
                        self.options.purge_policy(),
                        self.options.huge_cache_bytes,
                        C::DEBUG.contains(DebugCaps::ZERO_CHECK) && safety.checks_zero(true),
                    ),
                    pool: ArenaPool::new(&self.options, heap_id),
                    caches: CachePool::new::<C::Front>(&self.options, heap_id),
                    choice: C::Arenas::init(&self.options),
                    arena_lock: RawLock::new(),
                    dirty_max,
                    purge: self.options.purge_policy(),
                    safety,
                    alloc_hooks: safety.needs().intersects(ALLOC_HOOKS),
                    // Sampling by time leaves the cache on: sampled allocations never enter
                    // it (their slots are not in any chunk, so the cache's free path passes
                    // them on). A count (`sample: N`, one in N allocations) needs every
                    // allocation to reach a decision, which `SlowPath` makes only past the
                    // cache: there the count turns the cache off, as it always did.
                    // `zero_check` acts where arenas take pages, behind the cache: it leaves
                    // the cache on.
                    cache_on: C::Front::CACHE
                        && safety
                            .needs()
                            .without(DebugCaps::SAMPLE.union(DebugCaps::ZERO_CHECK))
                            .is_none()
                        && !(C::DEBUG.contains(DebugCaps::SAMPLE)
                            && C::SAMPLE_PATH == SamplePath::SlowPath
                            && safety.sample > 0),
                    plain: safety.needs().without(DebugCaps::ZERO_CHECK) == DebugCaps::NONE,
                    special_ptrs: safety
                        .needs()
                        .intersects(DebugCaps::ZERO_SIZE.union(DebugCaps::SAMPLE)),
                    sampler: if C::DEBUG.contains(DebugCaps::SAMPLE) {
                        Sampler::new(
                            safety.sample,
                            safety.sample_ms,
                            C::SAMPLE_PATH == SamplePath::StaticKey && crate::static_key::PATCHED,
                        )
                    } else {
                        Sampler::off()
                    },
                    zero_size: if C::DEBUG.contains(DebugCaps::ZERO_SIZE) && safety.zero_size {
                        ZeroSize::new()
                    } else {
                        ZeroSize::off()
                    },
                });
            }
            // SAFETY: just written; it does not move until the heap drops (which unregisters).
            let shared = unsafe { &*mem.as_ptr() };
            shared.sampler.register();
            if Self::faults_to_explain(&shared.safety) {
                crate::fault::register(mem.as_ptr() as *const (), Self::explain_fault);
            }
            shared.pool.register(
                reg,
                mem.as_ptr() as *const (),
                thread_exit_trampoline::<C>,
                tcache::cache_exit_trampoline::<C>,
                fork_trampoline::<C>,
            );
            self.shared.store(mem.as_ptr(), Ordering::Release);
            Some(shared)
        });
        // Outside every lock: glibc may allocate to record the handlers.
        #[cfg(not(any(loom, shuttle)))]
        if shared.is_some() && self.options.fork_handlers {
            crate::fork::install();
        }
        shared
    }

    /// Whether options `safety` make memory inaccessible that the fault handler should explain
    /// for this heap (guard pages, quarantined large allocations, `malloc(0)` slots; the
    /// sampler registers its pool itself).
    fn faults_to_explain(safety: &Safety) -> bool {
        (C::DEBUG.contains(DebugCaps::GUARD) && safety.guard)
            || (C::DEBUG.contains(DebugCaps::QUARANTINE) && safety.quarantine > 0)
            || (C::DEBUG.contains(DebugCaps::ZERO_SIZE) && safety.zero_size)
    }

    /// The fault handler's question (`fault.rs`): a fault on one of this heap's guard pages,
    /// in a large allocation held inaccessible in its quarantine, or in its `malloc(0)` region?
    /// Prints what the page entries say of the allocation: no stacks are recorded outside the
    /// sampled allocations.
    ///
    /// # Safety
    /// As for `fault::Explain`: `owner` is this heap's registered `Shared<C>`.
    unsafe fn explain_fault(owner: *const (), addr: usize) -> bool {
        use core::fmt::Write;
        // SAFETY: registered until the heap drops, which unregisters it first.
        let s = unsafe { &*(owner as *const Shared<C>) };
        let mut w = crate::report::StderrWriter::stderr();
        if s.zero_size.contains(addr) {
            let _ = writeln!(
                w,
                "alloclab: malloc(0) access at {addr:#x}: an allocation of 0 bytes has no bytes to read or write"
            );
            w.flush();
            return true;
        }
        let Owner::Chunk(c) = s.map.lookup(addr) else {
            return false;
        };
        let chunk = c as *mut ChunkHeader;
        let page = ChunkHeader::page_index(addr);
        // Back from the faulting page to the head of its large allocation. Entries are read
        // without the arena lock (see `fault.rs`): a report, not a decision.
        let mut head = page;
        loop {
            if head < CHUNK_HEADER_PAGES {
                return false;
            }
            // SAFETY: a live chunk of ours (page map), a page inside it.
            let e = unsafe { (*ChunkHeader::entry(chunk, head)).get() };
            if e.kind() != LARGE {
                return false;
            }
            if e.head() {
                break;
            }
            head -= 1;
        }
        // SAFETY: as above; `head` is a head page.
        let e = unsafe { (*ChunkHeader::entry(chunk, head)).get() };
        // SAFETY: as above.
        let at = unsafe { guard::headed_at(chunk, head, e, C::DEBUG.contains(DebugCaps::GUARD)) };
        if page >= head + at.pages {
            return false;
        }
        let size = at.request.unwrap_or(at.usable);
        if at.guarded && page == head + at.pages - 1 {
            let _ = writeln!(
                w,
                "alloclab: heap overflow at {addr:#x}: {} bytes past the end of the allocation of {size} bytes at {:#x} (its guard page)",
                addr - at.start - size,
                at.start
            );
        } else if addr < at.start {
            let _ = writeln!(
                w,
                "alloclab: use after free at {addr:#x}: {} bytes before the freed allocation of {size} bytes at {:#x} (held inaccessible in the quarantine)",
                at.start - addr,
                at.start
            );
        } else {
            let _ = writeln!(
                w,
                "alloclab: use after free at {addr:#x}: offset {} in the freed allocation of {size} bytes at {:#x} (held inaccessible in the quarantine)",
                addr - at.start,
                at.start
            );
        }
        w.flush();
        true
    }

    /// Refuses options that ask for a check the config does not compile in, or that are
    /// inconsistent: a heap silently without the checks asked for would mislead.
    #[cold]
    fn check_safety(safety: &Safety) {
        if let Err(why) = safety.validate() {
            fatal(format_args!("bad debug options: {why}"));
        }
        let needs = safety.needs();
        if !C::DEBUG.contains(needs) {
            struct Missing(DebugCaps);
            impl core::fmt::Display for Missing {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    self.0.write_names(f)
                }
            }
            fatal(format_args!(
                "config {} does not compile in the debug checks asked for ({}); set Config::DEBUG",
                C::NAME,
                Missing(needs)
            ));
        }
    }

    // ---- arenas -----------------------------------------------------------------------------

    #[inline(always)]
    fn choose_arena<'s>(&self, s: &'s Shared<C>, size: usize) -> Option<&'s Arena<C>> {
        let ctx = ArenaCtx::new(&s.pool);
        let i = C::Arenas::choose(&ctx, &s.choice, size) % MAX_ARENAS;
        Self::arena(s, i)
    }

    #[inline(always)]
    fn arena(s: &Shared<C>, i: usize) -> Option<&Arena<C>> {
        let a = s.arenas[i].load(Ordering::Acquire);
        if !a.is_null() {
            // SAFETY: published arenas live until the heap is dropped.
            return Some(unsafe { &*a });
        }
        Self::create_arena(s, i)
    }

    #[cold]
    fn create_arena(s: &Shared<C>, i: usize) -> Option<&Arena<C>> {
        let _g = s.arena_lock.guard();
        let a = s.arenas[i].load(Ordering::Acquire);
        if a.is_null() {
            let mem = s.base.alloc(
                core::mem::size_of::<Arena<C>>(),
                core::mem::align_of::<Arena<C>>(),
            )?;
            let a = mem.as_ptr().cast::<Arena<C>>();
            // SAFETY: fresh metadata of the right size and alignment.
            unsafe { a.write(Arena::new(i, s.dirty_max, s.purge, s.safety)) };
            s.arenas[i].store(a, Ordering::Release);
            // SAFETY: just published.
            return Some(unsafe { &*a });
        }
        // SAFETY: as in `arena`.
        Some(unsafe { &*a })
    }

    fn for_each_arena(&self, f: impl FnMut(&Arena<C>)) {
        if let Some(s) = self.shared_if_init() {
            Self::each_arena(s, f);
        }
    }

    fn each_arena(s: &Shared<C>, mut f: impl FnMut(&Arena<C>)) {
        for slot in s.arenas.iter() {
            let a = slot.load(Ordering::Acquire);
            if !a.is_null() {
                // SAFETY: published arenas live until the heap is dropped.
                f(unsafe { &*a });
            }
        }
    }

    // ---- allocation -------------------------------------------------------------------------

    /// Allocates `size` bytes aligned to `align` (a power of two); null if the request cannot
    /// be satisfied (overflowing sizes, or the OS refused memory). `size` 0 is served as 1.
    #[inline(always)]
    pub fn allocate(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        if C::Front::CACHE {
            if let Some(p) = self.alloc_from_cache(size, align, zero) {
                return p;
            }
        }
        self.allocate_slow(size, align, zero)
    }

    /// The thread cache's fast path of `malloc(size)`: a region popped from the calling
    /// thread's cache, or `None` when [`Heap::allocate_slow`] must serve it.
    #[inline(always)]
    pub fn allocate_fast(&self, size: usize) -> Option<*mut u8> {
        if !C::Front::CACHE {
            return None;
        }
        self.alloc_from_cache(size, crate::size_class::QUANTUM, false)
    }

    /// `allocate` past the thread cache's fast path: everything.
    #[inline(never)]
    pub fn allocate_slow(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        let Some(s) = self.shared() else {
            return ptr::null_mut();
        };
        if C::DEBUG.contains(DebugCaps::SAMPLE)
            && s.sampler.on()
            && self.sample_slow(s, size, align)
        {
            let p = Self::allocate_sampled(s, size, align, zero);
            if !p.is_null() {
                return p;
            }
        }
        if C::DEBUG.intersects(ALLOC_HOOKS) && s.alloc_hooks {
            return self.allocate_checked(s, size, align, zero);
        }
        match classify(size, align) {
            Some(SizeClass::Small(idx)) => {
                if C::Front::CACHE && s.cache_on {
                    if let Some(p) = self.alloc_cached(s, idx, size, zero) {
                        return p;
                    }
                }
                match self.choose_arena(s, size) {
                    Some(a) => a.with(|inner| inner.alloc_small(idx, zero, a, a.index(), &s.map)),
                    None => ptr::null_mut(),
                }
            }
            Some(SizeClass::Large(pages)) => {
                // Page-level activity: cached huge mappings past the purge policy's delay go
                // back even if no huge block is allocated or freed again.
                s.huge.tick();
                match self.choose_arena(s, size) {
                    Some(a) => {
                        a.with(|inner| inner.alloc_large(pages, align, zero, a, a.index(), &s.map))
                    }
                    None => ptr::null_mut(),
                }
            }
            Some(SizeClass::Huge(bytes)) => s.huge.alloc(bytes, align, zero, &s.base, &s.map),
            None => ptr::null_mut(),
        }
    }

    /// Whether the slow path samples this allocation, as `Config::SAMPLE_PATH` says.
    /// (`cacheable`: what the thread cache's fast path serves, and so decides for.)
    #[inline(always)]
    fn sample_slow(&self, s: &Shared<C>, size: usize, align: usize) -> bool {
        match C::SAMPLE_PATH {
            SamplePath::SlowPath => s.sampler.should_sample(size, align),
            // The cache's fast path already counted what it could serve.
            SamplePath::Countdown => {
                !(C::Front::CACHE && cacheable(size, align)) && s.sampler.should_sample(size, align)
            }
            // A gate opened earlier is taken first: the decision below opens it (and under the
            // static key, patches the fast path's branch in) for the next allocation, not this
            // one, unless the key cannot be turned on here.
            SamplePath::Gate | SamplePath::StaticKey => {
                if s.sampler.take_gate(size, align) {
                    return true;
                }
                s.sampler.should_sample(size, align) && s.sampler.open_gate()
            }
        }
    }

    /// The sampling decision on the thread cache's fast path (`SamplePath::Countdown`, `Gate`
    /// and `StaticKey`): a sampled allocation, or `None` to go on.
    #[inline(always)]
    fn sample_fast(s: &Shared<C>, size: usize, align: usize, zero: bool) -> Option<*mut u8> {
        let take = match C::SAMPLE_PATH {
            SamplePath::SlowPath => false,
            SamplePath::Countdown => s.sampler.on() && s.sampler.should_sample(size, align),
            SamplePath::Gate => s.sampler.take_gate(size, align),
            // The branch is a `nop` until some heap's gate opens; only then the gate is read.
            SamplePath::StaticKey if crate::static_key::PATCHED => {
                crate::static_key::branch() && Self::take_keyed(s, size, align)
            }
            SamplePath::StaticKey => s.sampler.take_gate(size, align),
        };
        if !take {
            return None;
        }
        let p = Self::allocate_sampled(s, size, align, zero);
        (!p.is_null()).then_some(p)
    }

    /// `SamplePath::StaticKey`, behind the patched branch: out of the fast path's line.
    #[cold]
    #[inline(never)]
    fn take_keyed(s: &Shared<C>, size: usize, align: usize) -> bool {
        s.sampler.take_gate(size, align)
    }

    /// A sampled allocation (`sampled.rs`), or null if the pool is full.
    #[cold]
    #[inline(never)]
    fn allocate_sampled(s: &Shared<C>, size: usize, align: usize, zero: bool) -> *mut u8 {
        let p = s.sampler.alloc(size, align);
        if C::DEBUG.contains(DebugCaps::JUNK) && s.safety.junk && !zero && !p.is_null() {
            // SAFETY: a fresh sampled allocation of `size` bytes.
            unsafe { crate::checks::fill(p as usize, size, JUNK_BYTE) };
        }
        p
    }

    /// `allocate` with the debug options that act on the allocation itself: `malloc(0)` into
    /// the inaccessible region, canaries after small allocations, guard pages after large
    /// ones, junk.
    #[inline(never)]
    fn allocate_checked(&self, s: &Shared<C>, size: usize, align: usize, zero: bool) -> *mut u8 {
        let safety = &s.safety;
        if C::DEBUG.contains(DebugCaps::ZERO_SIZE) && safety.zero_size && size == 0 {
            let p = s.zero_size.alloc();
            if !p.is_null() && (p as usize) % align == 0 {
                return p;
            }
            if !p.is_null() {
                // Over-aligned zero-size requests are ordinary allocations.
                let _ = s.zero_size.check(p as usize, true);
            }
        }
        let canary = C::DEBUG.contains(DebugCaps::CANARY) && safety.canary;
        let request = if canary {
            size.saturating_add(CANARY_BYTES)
        } else {
            size
        };
        match classify(request, align) {
            Some(SizeClass::Small(idx)) => {
                let Some(a) = self.choose_arena(s, size) else {
                    return ptr::null_mut();
                };
                let p = a.with(|inner| inner.alloc_small(idx, zero, a, a.index(), &s.map));
                if canary && !p.is_null() {
                    // SAFETY: a fresh region of `BINS[idx].size >= size + CANARY_BYTES` bytes.
                    unsafe {
                        crate::checks::write_canary(p as usize, size, BINS[idx].size as usize)
                    };
                }
                p
            }
            Some(SizeClass::Large(pages)) => {
                let Some(a) = self.choose_arena(s, size) else {
                    return ptr::null_mut();
                };
                // The pages of the request itself: a canary has no place in a large one.
                let pages = match classify(size, align) {
                    Some(SizeClass::Large(p)) => p,
                    _ => pages,
                };
                let extra = if align > PAGE { align / PAGE - 1 } else { 0 };
                let guarded = C::DEBUG.contains(DebugCaps::GUARD)
                    && safety.guard
                    && pages + 1 + extra <= CHUNK_USABLE_PAGES;
                let pages = pages + usize::from(guarded);
                let p = a.with(|inner| {
                    let p = inner.alloc_large(pages, align, zero, a, a.index(), &s.map);
                    if p.is_null() {
                        return p;
                    }
                    let chunk = ChunkHeader::of(p as usize);
                    let page = ChunkHeader::page_index(p as usize);
                    let mut start = p as usize;
                    if guarded {
                        // SAFETY: a large allocation of `pages >= 2` pages just made, under
                        // the lock.
                        start = unsafe { guard::arm(chunk, page, pages, size, align) };
                    }
                    let end = p as usize + (pages - usize::from(guarded)) * PAGE;
                    // SAFETY: as above; `size` fits between `start` and `end`.
                    unsafe { guard::record_request(chunk, page, start, end, size) };
                    start as *mut u8
                });
                if C::DEBUG.contains(DebugCaps::JUNK) && safety.junk && !zero && !p.is_null() {
                    // SAFETY: a fresh allocation of at least `size` bytes.
                    unsafe { crate::checks::fill(p as usize, size, JUNK_BYTE) };
                }
                p
            }
            Some(SizeClass::Huge(bytes)) => s.huge.alloc(bytes, align, zero, &s.base, &s.map),
            None => ptr::null_mut(),
        }
    }

    /// `malloc`: `size` bytes aligned to 16.
    #[inline]
    pub fn malloc(&self, size: usize) -> *mut u8 {
        self.allocate(size, crate::size_class::QUANTUM, false)
    }

    /// `calloc`: `n * size` zeroed bytes; null if the product overflows.
    pub fn calloc(&self, n: usize, size: usize) -> *mut u8 {
        match n.checked_mul(size) {
            Some(total) => self.allocate(total, crate::size_class::QUANTUM, true),
            None => ptr::null_mut(),
        }
    }

    // ---- lookup and free --------------------------------------------------------------------

    /// Validates `addr` as a live allocation of this heap.
    fn live(&self, addr: usize) -> Result<Live, FreeError> {
        let s = self.shared_if_init().ok_or(FreeError::NotOurs)?;
        if Self::SPECIAL && s.special_ptrs {
            if s.zero_size.contains(addr) {
                return s.zero_size.check(addr, false).map(|()| Live::ZeroSize);
            }
            if s.sampler.contains(addr) {
                return s.sampler.live(addr).map(|size| Live::Sampled { size });
            }
        }
        match s.map.lookup(addr) {
            Owner::None => Err(FreeError::NotOurs),
            Owner::Chunk(c) => {
                let chunk = c as *mut ChunkHeader;
                let page = ChunkHeader::page_index(addr);
                if page < CHUNK_HEADER_PAGES {
                    return Err(FreeError::NeverAllocated);
                }
                // SAFETY: the page map says `chunk` is one of our live chunks; its arena field
                // is fixed for the chunk's life.
                let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                arena.with(|inner| {
                    // SAFETY: our chunk, under its arena's lock.
                    let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
                    // Taken from its run but freed all the same: in a thread's cache (its
                    // mark) or held in the quarantine.
                    let freed = |held: bool| if held { Err(FreeError::Freed) } else { Ok(()) };
                    match e.kind() {
                        // SAFETY: a SMALL entry of our chunk, under the lock.
                        SMALL => unsafe { ArenaInner::<C>::small_usable(chunk, page, e, addr) }
                            .and_then(|usable| {
                                // SAFETY: a region taken from its run (just validated).
                                freed(C::Front::CACHE && unsafe { s.caches.marked(addr) })?;
                                freed(inner.held_small(addr, usable))?;
                                Ok(Live::Small { usable })
                            }),
                        // SAFETY: a LARGE entry of our chunk, under the lock.
                        LARGE => unsafe { Self::large_at(chunk, page, e, addr) }.and_then(|at| {
                            freed(inner.held_large(ChunkHeader::page_addr(chunk, page)))?;
                            Ok(Live::Large { chunk, page, at })
                        }),
                        _ => Err(why_free_page(e.0)),
                    }
                })
            }
            Owner::Huge(rec) => {
                // SAFETY: the record came from our page map.
                let usable = unsafe { Huge::usable(rec, addr)? };
                Ok(Live::Huge { rec, usable })
            }
        }
    }

    /// Whether pointers outside the page map can be ours (compiled in).
    const SPECIAL: bool = C::DEBUG.intersects(DebugCaps::ZERO_SIZE.union(DebugCaps::SAMPLE));

    /// The large allocation at `addr`, whose head page entry is `e`.
    ///
    /// # Safety
    /// As for `guard::large_at`.
    #[inline(always)]
    unsafe fn large_at(
        chunk: *mut ChunkHeader,
        page: usize,
        e: crate::chunk::PageBits,
        addr: usize,
    ) -> Result<LargeAt, FreeError> {
        // SAFETY: forwarded contract.
        unsafe { guard::large_at(chunk, page, e, addr, C::DEBUG.contains(DebugCaps::GUARD)) }
    }

    /// Usable size of the live allocation at `ptr`, or why it is not one. With canaries on,
    /// a small allocation's usable size is the size requested (the canary follows it).
    pub fn usable_size(&self, ptr: *const u8) -> Result<usize, FreeError> {
        self.live(ptr as usize).map(|l| match l {
            Live::Small { usable } => self.small_usable(ptr as usize, usable),
            Live::Huge { usable, .. } => usable,
            Live::Large { at, .. } => at.usable,
            Live::ZeroSize => 0,
            Live::Sampled { size } => size,
        })
    }

    /// Whether the live allocation at `ptr` could have been requested as `size` bytes aligned
    /// to `align`: a request of that size would have been given the same usable size (with
    /// canaries on, a small one records its exact size). For sized deallocation checks (C++
    /// sized `delete`). Errors as for `usable_size`.
    pub fn size_fits(&self, ptr: *const u8, size: usize, align: usize) -> Result<bool, FreeError> {
        let live = self.live(ptr as usize)?;
        let canary = C::DEBUG.contains(DebugCaps::CANARY) && self.options.safety.canary;
        let request = if canary {
            size.saturating_add(CANARY_BYTES)
        } else {
            size
        };
        let same_class = |usable: usize| {
            classify(request, align.max(crate::size_class::QUANTUM))
                .is_some_and(|c| crate::size_class::usable(c) == usable)
        };
        Ok(match live {
            Live::ZeroSize => size == 0,
            Live::Sampled { size: s } => size == s,
            Live::Small { usable } if canary => self.small_usable(ptr as usize, usable) == size,
            Live::Small { usable } | Live::Huge { usable, .. } => same_class(usable),
            Live::Large {
                at: LargeAt {
                    request: Some(r), ..
                },
                ..
            } => size == r,
            Live::Large { at, .. } if at.guarded => {
                // The start sits as close to the guard as the alignment allowed.
                let slack = if at.start % PAGE == 0 {
                    PAGE
                } else {
                    align.max(crate::size_class::QUANTUM)
                };
                size <= at.usable && at.usable - size < slack
            }
            Live::Large { at, .. } => same_class(at.usable),
        })
    }

    /// The bytes the program may use of the live small region at `addr` of `usable` bytes.
    #[inline(always)]
    fn small_usable(&self, addr: usize, usable: usize) -> usize {
        if C::DEBUG.contains(DebugCaps::CANARY) && self.options.safety.canary {
            // SAFETY: `addr` was just validated as a live region of `usable` bytes, which
            // has a canary since canaries are on. A corrupted size field reads as the region.
            return unsafe { crate::checks::canary_size(addr, usable) }.unwrap_or(usable);
        }
        usable
    }

    /// Whether `ptr` lies in memory this heap manages (a chunk or huge mapping); looks only at
    /// the page map, never at the memory.
    pub fn owns(&self, ptr: *const u8) -> bool {
        self.shared_if_init()
            .is_some_and(|s| s.map.lookup(ptr as usize) != Owner::None)
    }

    /// The index of the arena that owns the small or large allocation at `ptr`.
    pub fn arena_of(&self, ptr: *const u8) -> Option<usize> {
        match self.shared_if_init()?.map.lookup(ptr as usize) {
            // SAFETY: the page map says `c` is our live chunk; its header is immutable.
            Owner::Chunk(c) => Some(unsafe { (*(c as *const ChunkHeader)).arena_index }),
            _ => None,
        }
    }

    /// Frees `ptr`, or says why it cannot: the pointer is then left alone.
    ///
    /// # Safety
    /// If `ptr` is a live allocation of this heap, nothing may use it afterwards. Any other
    /// value is rejected without touching the memory it points to.
    pub unsafe fn try_free(&self, ptr: *mut u8) -> Result<(), FreeError> {
        let addr = ptr as usize;
        let s = self.shared_if_init().ok_or(FreeError::NotOurs)?;
        if Self::SPECIAL && s.special_ptrs {
            if s.zero_size.contains(addr) {
                return s.zero_size.check(addr, true);
            }
            if s.sampler.contains(addr) {
                return s.sampler.free(addr);
            }
        }
        match s.map.lookup(addr) {
            Owner::None => Err(FreeError::NotOurs),
            Owner::Chunk(c) => {
                let chunk = c as *mut ChunkHeader;
                let page = ChunkHeader::page_index(addr);
                if page < CHUNK_HEADER_PAGES {
                    return Err(FreeError::NeverAllocated);
                }
                if C::Front::CACHE && s.cache_on {
                    // SAFETY: a chunk of ours from the page map, past its header pages.
                    if let Some(r) = unsafe { self.free_cached(s, chunk, page, addr) } {
                        return r;
                    }
                }
                // SAFETY: as in `live`.
                let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                arena.with_on_free(|inner| {
                    // SAFETY: our chunk, under its arena's lock; the entry is re-read here so
                    // that validation and free are one critical section.
                    unsafe {
                        let e = (*ChunkHeader::entry(chunk, page)).get();
                        match e.kind() {
                            SMALL => inner.free_small(chunk, page, e, addr),
                            LARGE => {
                                let at = Self::large_at(chunk, page, e, addr)?;
                                if inner.checks_on_free() {
                                    return inner.free_large_checked(chunk, page, at);
                                }
                                inner.free_large(chunk, page, at.pages);
                                Ok(())
                            }
                            _ => Err(why_free_page(e.0)),
                        }
                    }
                })
            }
            Owner::Huge(rec) => {
                // SAFETY: the record came from our page map; `usable` validated the start.
                unsafe {
                    Huge::usable(rec, addr)?;
                    s.huge.free(rec, &s.map);
                }
                Ok(())
            }
        }
    }

    /// `free`: frees `ptr` (null is ignored). A pointer this heap did not hand out, an interior
    /// pointer or a double free aborts the process with a one-line message naming the pointer.
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded contract.
        if unsafe { self.free_fast(ptr) } {
            return;
        }
        // SAFETY: forwarded contract.
        unsafe { self.free_slow(ptr) }
    }

    /// The first half of [`Heap::free`]: frees `ptr` and returns true if the thread cache's
    /// fast path takes it (no lock, no system call, no error possible); returns false having
    /// done nothing otherwise. Then [`Heap::free_slow`] does the rest.
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free_fast(&self, ptr: *mut u8) -> bool {
        // SAFETY: forwarded contract.
        C::Front::CACHE && unsafe { self.free_to_cache(ptr as usize, None) }
    }

    /// [`Heap::free_fast`] for a caller that knows the heap's `Options::tcache_check` (a
    /// dispatch table chosen when the heap was built, as liballoclab.so's): the check is a
    /// constant instead of a flag read on every call. `check` must be the heap's setting or
    /// `Full` (checking more is always allowed).
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(always)]
    pub unsafe fn free_fast_as(&self, ptr: *mut u8, check: TcacheCheck) -> bool {
        // SAFETY: forwarded contract.
        C::Front::CACHE && unsafe { self.free_to_cache(ptr as usize, Some(check)) }
    }

    /// The second half of [`Heap::free`]: everything but the thread cache's fast path (null,
    /// fills and flushes, arenas, errors).
    ///
    /// # Safety
    /// As for [`Heap::try_free`].
    #[inline(never)]
    pub unsafe fn free_slow(&self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: forwarded contract.
        if let Err(e) = unsafe { self.try_free(ptr) } {
            if C::DEBUG.contains(DebugCaps::SAMPLE) {
                if let Some(s) = self.shared_if_init() {
                    if s.sampler.contains(ptr as usize) {
                        s.sampler.report_bad_free(ptr as usize, e);
                    }
                }
            }
            fatal(format_args!("free({:#x}): {}", ptr as usize, e));
        }
    }

    // ---- realloc ----------------------------------------------------------------------------

    /// Resizes the allocation at `ptr` to `new_size` bytes with alignment `align`, in place when
    /// the size class allows, moving it otherwise. Copies `min(copy_limit, usable, new_size)`
    /// bytes when moving. Returns null (leaving the allocation intact) if the request cannot be
    /// satisfied; aborts if `ptr` is not a live allocation of this heap.
    ///
    /// # Safety
    /// `ptr` is a live allocation of this heap (or null: then this allocates), not used
    /// afterwards unless null is returned.
    #[inline]
    pub unsafe fn reallocate(
        &self,
        ptr: *mut u8,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        if ptr.is_null() {
            return self.allocate(new_size, align, false);
        }
        if C::Front::CACHE {
            // SAFETY: forwarded contract.
            let fast =
                unsafe { self.realloc_in_cache(ptr as usize, new_size, align, copy_limit, None) };
            if let Some(p) = fast {
                return p;
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.reallocate_slow(ptr, new_size, align, copy_limit) }
    }

    /// The thread cache's fast path of C's `realloc` (alignment 16, no copy limit) for a
    /// non-null `ptr`: `Some` when it resized or moved a small region without a lock, `None`
    /// when [`Heap::reallocate_slow`] must do it (which never makes a system call otherwise,
    /// so a caller that keeps `errno` need only save it for that one).
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    pub unsafe fn realloc_fast(&self, ptr: *mut u8, new_size: usize) -> Option<*mut u8> {
        // SAFETY: forwarded contract.
        unsafe { self.realloc_fast_with(ptr, new_size, None) }
    }

    /// [`Heap::realloc_fast`] with the cache's checks given by the caller, as for
    /// [`Heap::free_fast_as`].
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    pub unsafe fn realloc_fast_as(
        &self,
        ptr: *mut u8,
        new_size: usize,
        check: TcacheCheck,
    ) -> Option<*mut u8> {
        // SAFETY: forwarded contract.
        unsafe { self.realloc_fast_with(ptr, new_size, Some(check)) }
    }

    /// Both of the above (`None`: the heap's setting, read from it).
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(always)]
    unsafe fn realloc_fast_with(
        &self,
        ptr: *mut u8,
        new_size: usize,
        check: Option<TcacheCheck>,
    ) -> Option<*mut u8> {
        if !C::Front::CACHE {
            return None;
        }
        // SAFETY: forwarded contract.
        unsafe {
            self.realloc_in_cache(
                ptr as usize,
                new_size,
                crate::size_class::QUANTUM,
                usize::MAX,
                check,
            )
        }
    }

    /// `reallocate` past the thread cache's fast path: everything.
    ///
    /// # Safety
    /// As for [`Heap::reallocate`], with `ptr` not null.
    #[inline(never)]
    pub unsafe fn reallocate_slow(
        &self,
        ptr: *mut u8,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        // A small region, found without the lock: kept if the class stays, else moved.
        if let Some(s) = self.shared_if_init().filter(|s| s.plain) {
            // SAFETY: `s` is this heap's state, without debug options.
            if let Some(old) = unsafe { Self::taken_small(s, ptr as usize) } {
                let Some(new_class) = classify(new_size, align) else {
                    return ptr::null_mut();
                };
                if new_class == SizeClass::Small(old) {
                    return ptr;
                }
                let new = self.allocate(new_size, align, false);
                if !new.is_null() {
                    let n = (BINS[old].size as usize).min(new_size).min(copy_limit);
                    // SAFETY: both allocations are live, distinct and at least `n` bytes long;
                    // the old one is a taken region of class `old` (just checked), which per
                    // the contract nothing uses any more.
                    unsafe {
                        ptr::copy_nonoverlapping(ptr, new, n);
                        if !(C::Front::CACHE && self.push_taken(s, ptr as usize, old)) {
                            self.free(ptr);
                        }
                    }
                }
                return new;
            }
        }
        let live = match self.live(ptr as usize) {
            Ok(l) => l,
            Err(e) => fatal(format_args!("realloc({:#x}): {}", ptr as usize, e.in_use())),
        };
        let Some(new_class) = classify(new_size, align) else {
            return ptr::null_mut();
        };
        let Some(s) = self.shared_if_init() else {
            return ptr::null_mut();
        };
        let usable = match live {
            Live::Small { usable } if C::DEBUG.contains(DebugCaps::CANARY) && s.safety.canary => {
                // SAFETY: a live small region of `usable` bytes with a canary, the caller's.
                if unsafe { Self::resize_with_canary(s, ptr as usize, usable, new_size, align) } {
                    return ptr;
                }
                self.small_usable(ptr as usize, usable)
            }
            Live::Small { usable } => {
                if crate::size_class::usable(new_class) == usable
                    && matches!(new_class, SizeClass::Small(_))
                {
                    return ptr;
                }
                usable
            }
            Live::ZeroSize => 0,
            Live::Sampled { size } => size,
            Live::Large {
                chunk,
                page,
                at: LargeAt { pages, .. },
            } if !(C::DEBUG.contains(DebugCaps::GUARD) && s.safety.guard) => {
                if let SizeClass::Large(new_pages) = new_class {
                    if align <= PAGE || (ptr as usize) % align == 0 {
                        // SAFETY: `live` validated the allocation; its arena is the chunk's.
                        let arena = unsafe { &*((*chunk).arena as *const Arena<C>) };
                        // SAFETY: a live large allocation of that arena, under its lock.
                        if arena.with(|inner| unsafe {
                            let done = inner.resize_large(chunk, page, pages, new_pages);
                            if done && s.alloc_hooks {
                                let end = ptr as usize + new_pages * PAGE;
                                guard::record_request(chunk, page, ptr as usize, end, new_size);
                            }
                            done
                        }) {
                            return ptr;
                        }
                    }
                }
                pages * PAGE
            }
            Live::Large { at, .. } => at.usable,
            Live::Huge { rec, usable } => {
                if let SizeClass::Huge(bytes) = new_class {
                    if (ptr as usize) % align.max(CHUNK) == 0 {
                        // SAFETY: `live` validated the record and start.
                        let p = unsafe { s.huge.resize(rec, bytes, &s.map) };
                        if !p.is_null() {
                            return p;
                        }
                    }
                }
                usable
            }
        };
        // SAFETY: per the contract; `usable` is the allocation's usable size.
        unsafe { self.move_to(ptr, usable, new_size, align, copy_limit) }
    }

    /// `reallocate` of a small region that carries a canary, in place: true if `new_size`
    /// (with its canary) asks for the region's own class, and then the canary has moved to
    /// the new end. The old canary is checked first, as a free would, so an overflow made
    /// before the resize is still reported; bytes a growth adds are junk when junk is on.
    ///
    /// # Safety
    /// `addr` is a live small region of this heap of `usable` bytes, with a canary, that
    /// belongs to the caller.
    unsafe fn resize_with_canary(
        s: &Shared<C>,
        addr: usize,
        usable: usize,
        new_size: usize,
        align: usize,
    ) -> bool {
        let fits = new_size
            .checked_add(CANARY_BYTES)
            .and_then(|n| classify(n, align));
        if !(matches!(fits, Some(SizeClass::Small(_)))
            && fits.map(crate::size_class::usable) == Some(usable)
            && addr % align == 0)
        {
            return false;
        }
        // SAFETY: per the contract, the region is ours and has a canary.
        unsafe {
            crate::checks::check_canary(addr, usable, "reallocated");
            let old = crate::checks::canary_size(addr, usable).unwrap_or(usable);
            crate::checks::write_canary(addr, new_size, usable);
            if C::DEBUG.contains(DebugCaps::JUNK) && s.safety.junk && new_size > old {
                crate::checks::fill(addr + old, new_size - old, JUNK_BYTE);
            }
        }
        true
    }

    /// The moving part of `reallocate`: a new allocation, the bytes copied, the old one freed.
    ///
    /// # Safety
    /// `ptr` is a live allocation of this heap with `usable` usable bytes, not used afterwards
    /// unless null is returned.
    #[inline(always)]
    unsafe fn move_to(
        &self,
        ptr: *mut u8,
        usable: usize,
        new_size: usize,
        align: usize,
        copy_limit: usize,
    ) -> *mut u8 {
        let new = self.allocate(new_size, align, false);
        if !new.is_null() {
            let n = usable.min(new_size).min(copy_limit);
            // SAFETY: both allocations are live, distinct and at least `n` bytes long.
            unsafe {
                ptr::copy_nonoverlapping(ptr, new, n);
                self.free(ptr);
            }
        }
        new
    }

    /// The small class of `addr` if it is a taken region of a small run, checked without the
    /// arena lock as the thread cache's free does (page map, page entry, region boundary,
    /// bitmap bit, cache mark); `None` for anything else, which the locked path then decides
    /// (and reports).
    ///
    /// # Safety
    /// `s` is this heap's state, with no debug option on (`plain`: the region is exactly its
    /// class's size and nothing else holds pointers).
    #[inline(always)]
    unsafe fn taken_small(s: &Shared<C>, addr: usize) -> Option<usize> {
        let Owner::Chunk(c) = s.map.lookup(addr) else {
            return None;
        };
        let chunk = c as *mut ChunkHeader;
        let page = ChunkHeader::page_index(addr);
        if page < CHUNK_HEADER_PAGES {
            return None;
        }
        // SAFETY: a live chunk of ours (page map), past its header pages. The entry of a page
        // of a live run does not change while one of its regions is taken, which is what a
        // valid `addr` is; anything else is refused below or by the locked path.
        let e = unsafe { (*ChunkHeader::entry(chunk, page)).get() };
        let idx = e.bin();
        if e.kind() != SMALL || idx >= BINS.len() || e.run_offset() > page {
            return None;
        }
        let base = ChunkHeader::page_addr(chunk, page - e.run_offset());
        let region = BINS[idx].region_index(addr - base)?;
        // SAFETY: the entry names a run of bin `idx` at `base`; its bitmap words are read
        // atomically; the mark is read from a region taken from its run (bit clear).
        let taken = unsafe {
            !(crate::run::Run(crate::run::RunHeader::at(base, idx)).is_free_unlocked(region)
                || (C::Front::CACHE && s.caches.marked(addr)))
        };
        taken.then_some(idx)
    }

    /// C's `realloc`: alignment 16; `new_size` 0 frees nothing and returns a minimal allocation.
    ///
    /// # Safety
    /// As for [`Heap::reallocate`].
    pub unsafe fn realloc_c(&self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.reallocate(ptr, new_size, crate::size_class::QUANTUM, usize::MAX) }
    }

    // ---- statistics, invariants, maintenance ------------------------------------------------

    /// Arenas created so far.
    pub fn arenas_created(&self) -> usize {
        let mut n = 0;
        self.for_each_arena(|_| n += 1);
        n
    }

    /// Statistics of one arena, if it exists.
    pub fn arena_stats(
        &self,
        index: usize,
    ) -> Option<(
        ArenaStats,
        [crate::stats::BinStats; crate::size_class::NBINS],
    )> {
        let s = self.shared_if_init()?;
        let a = s.arenas.get(index)?.load(Ordering::Acquire);
        if a.is_null() {
            return None;
        }
        // SAFETY: published arenas live until the heap is dropped.
        let a = unsafe { &*a };
        Some(a.with(|inner| {
            let mut bins = [crate::stats::BinStats::default(); crate::size_class::NBINS];
            for (b, bin) in bins.iter_mut().zip(inner.bins.iter()) {
                *b = bin.stats;
            }
            (a.stats_with_lock(&inner.stats), bins)
        }))
    }

    /// Calls `f(index, counts)` for each arena's lock, in index order: acquisitions, contended
    /// acquisitions and time waited since the arena was made. Takes no lock (each count is some
    /// recent value) and allocates nothing.
    pub fn arena_lock_stats(&self, mut f: impl FnMut(usize, LockStats)) {
        self.for_each_arena(|a| f(a.index(), a.lock_stats()));
    }

    /// Test hook (verification builds): takes arena `index`'s lock, runs `f` with a probe
    /// telling whether another thread sleeps waiting for that lock, and releases it; `None` if
    /// the arena does not exist. `f` must not use this heap's arena `index` (it would deadlock).
    #[cfg(feature = "verification")]
    pub fn hold_arena_lock<R>(
        &self,
        index: usize,
        f: impl FnOnce(&dyn Fn() -> bool) -> R,
    ) -> Option<R> {
        let s = self.shared_if_init()?;
        let a = s.arenas.get(index)?.load(Ordering::Acquire);
        if a.is_null() {
            return None;
        }
        // SAFETY: published arenas live until the heap is dropped.
        let a = unsafe { &*a };
        a.lock();
        let r = f(&|| a.lock_has_sleepers());
        a.unlock();
        Some(r)
    }

    /// A snapshot of the heap's statistics (each arena is read under its own lock, in turn).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        let Some(s) = self.shared_if_init() else {
            return st;
        };
        self.for_each_arena(|a| {
            st.arenas += 1;
            a.with(|inner| {
                let mut allocations = inner.stats.large_allocations;
                for (b, bin) in st.bins.iter_mut().zip(inner.bins.iter()) {
                    b.add(&bin.stats);
                    allocations += bin.stats.allocations;
                }
                if allocations > 0 {
                    st.arenas_used += 1;
                }
                let own = a.stats_with_lock(&inner.stats);
                st.lock_contended_max_arena = st.lock_contended_max_arena.max(own.lock_contended);
                st.lock_wait_ns_max_arena = st.lock_wait_ns_max_arena.max(own.lock_wait_ns);
                st.arena.add(&own);
            })
        });
        let h = s.huge.stats();
        st.huge_live = h.live;
        st.huge_allocated = h.allocated;
        st.huge_allocations = h.allocations;
        st.huge_frees = h.frees;
        st.huge_cached = h.cached;
        st.huge_cached_bytes = h.cached_bytes;
        st.huge_cache_hits = h.cache_hits;
        st.huge_maps = h.maps;
        st.huge_unmaps = h.unmaps;
        st.huge_remaps = h.remaps;
        st.syscalls = os::syscalls();
        st.allocated = st.arena.small_allocated + st.arena.large_allocated + h.allocated;
        st.active = st.arena.active_pages * PAGE + h.allocated;
        // Huge slack (a reused mapping larger than its allocation) and cached mappings are
        // mapped, and resident as far as they were touched: counted with the dirty pages.
        let huge_idle = h.mapped - h.allocated + h.cached_bytes;
        st.mapped = st.arena.chunks * CHUNK + h.mapped + h.cached_bytes;
        st.dirty = st.arena.dirty_pages * PAGE;
        Self::account_caches(s, &mut st);
        st.metadata = s.map.metadata_bytes()
            + s.base.mapped()
            + st.arena.chunks * CHUNK_HEADER_PAGES * PAGE
            + round_up(core::mem::size_of::<Shared<C>>(), PAGE).unwrap_or(0);
        st.resident = st.active + st.dirty + huge_idle + st.metadata;
        st
    }

    /// Walks every arena, bin, run, free page run and huge record, and returns the first broken
    /// invariant: policy knowledge of non-full runs (each exactly once, no full or empty run),
    /// bitmap counts, page-map consistency, free-run coalescing and lists, and statistics.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        let Some(s) = self.shared_if_init() else {
            return Ok(());
        };
        let mut result = Ok(());
        self.for_each_arena(|a| {
            if result.is_ok() {
                result = a.with(|inner| inner.check(a, a.index(), &s.map));
            }
        });
        result?;
        self.check_caches(s)?;
        s.huge.check(&s.map)
    }

    /// `check_invariants`, plus: each `(pointer, requested size)` in `live` is a live
    /// allocation with usable size at least the request, and no two overlap. Sorts `live`.
    pub fn check_live(&self, live: &mut [(usize, usize)]) -> Result<(), Violation> {
        self.check_invariants()?;
        live.sort_unstable();
        let mut prev_end = 0usize;
        let mut prev = 0usize;
        for &(p, size) in live.iter() {
            let usable = self
                .usable_size(p as *const u8)
                .map_err(|e| Violation::new(ViolationKind::NotLive(e)).at(p))?;
            if usable < size {
                return Err(Violation::new(ViolationKind::Stats {
                    what: "usable size",
                    expected: size,
                    actual: usable,
                })
                .at(p));
            }
            if p < prev_end {
                return Err(Violation::new(ViolationKind::Overlap { other: prev }).at(p));
            }
            prev_end = p + usable;
            prev = p;
        }
        Ok(())
    }

    /// Returns every dirty page of every arena, and every cached huge mapping, to the OS.
    pub fn purge(&self) {
        self.for_each_arena(|a| a.with(|inner| inner.purge(0)));
        if let Some(s) = self.shared_if_init() {
            s.huge.purge_cache(true);
        }
    }

    // ---- fork -------------------------------------------------------------------------------

    /// Takes, releases or resets every lock of this heap (see `fork.rs` for the order).
    fn fork_step(s: &Shared<C>, step: Step) {
        match step {
            Step::Lock => {
                s.arena_lock.lock();
                s.pool.lock();
                s.caches.lock();
                s.base.lock();
                s.huge.lock();
                s.sampler.lock();
                Self::each_arena(s, |a| a.lock());
            }
            Step::Unlock => {
                Self::each_arena(s, |a| a.unlock());
                s.sampler.unlock();
                s.huge.unlock();
                s.base.unlock();
                s.caches.unlock();
                s.pool.unlock();
                s.arena_lock.unlock();
            }
            Step::Reset => {
                Self::each_arena(s, |a| a.reset_lock());
                s.sampler.reset_lock();
                s.huge.reset_lock();
                s.base.reset_lock();
                s.caches.reset_lock();
                s.pool.reset_lock();
                s.arena_lock.reset();
                Self::fork_child(s);
            }
        }
    }
}

/// Delivers a fork step to the heap at `owner`.
///
/// # Safety
/// `owner` is the `Shared<C>` of a live heap (the registry only calls live heaps).
unsafe fn fork_trampoline<C: Config>(owner: *const (), step: Step) {
    // SAFETY: per the contract.
    Heap::<C>::fork_step(unsafe { &*(owner as *const Shared<C>) }, step);
}

/// Delivers a thread exit to the arena-choice policy of the heap at `owner`.
///
/// # Safety
/// `owner` is the `Shared<C>` of a live heap (the registry only calls live heaps).
unsafe fn thread_exit_trampoline<C: Config>(owner: *const (), value: usize) {
    // SAFETY: per the contract.
    let s = unsafe { &*(owner as *const Shared<C>) };
    C::Arenas::thread_exit(&ArenaCtx::new(&s.pool), &s.choice, value);
}

impl<C: Config> Default for Heap<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Config> Drop for Heap<C> {
    fn drop(&mut self) {
        let p = self.shared.load(Ordering::Acquire);
        if p.is_null() {
            return;
        }
        // SAFETY: `&mut self`: no allocation of this heap is used anymore and no other thread
        // is inside it. Thread exits are cut off first (unregister waits for running ones).
        unsafe {
            let s = &*p;
            s.pool.unregister();
            crate::fault::unregister(p as *const ());
            for slot in s.arenas.iter() {
                let a = slot.load(Ordering::Acquire);
                if !a.is_null() {
                    (*a).release_all(&s.map);
                    ptr::drop_in_place(a);
                }
            }
            s.huge.release_all(&s.map);
            ptr::drop_in_place(p);
            os::unmap(
                p.cast(),
                round_up(core::mem::size_of::<Shared<C>>(), PAGE).unwrap_or(PAGE),
            );
        }
    }
}

// SAFETY: every method is thread-safe (locks and atomics), returns memory that no one else
// holds, and `dealloc`/`realloc` accept exactly what `alloc` handed out.
unsafe impl<C: Config> GlobalAlloc for Heap<C> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocate(layout.size(), layout.align(), false)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.allocate(layout.size(), layout.align(), true)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: GlobalAlloc's contract: `ptr` came from this allocator.
        unsafe { self.free(ptr) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract: `ptr` is live with `layout`.
        unsafe { self.reallocate(ptr, new_size, layout.align(), layout.size()) }
    }
}
