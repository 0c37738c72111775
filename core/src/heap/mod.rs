//! `Heap<C>`: the allocator. Usable as a `#[global_allocator]` (`Heap::new()` is `const`) and
//! as an ordinary value: many heaps can live in one process, each with its own page map,
//! arenas, huge allocations and metadata, all returned to the OS when it is dropped.
//!
//! A heap initializes on first use, mapping its shared state with `mmap`; nothing on any path
//! allocates through the heap itself. Requests go:
//! small (up to 3840 B) and large (up to a chunk) to the arena that `C::Arenas` chooses,
//! huge to a mapping of their own. Frees find their chunk through the page map and their
//! arena through the chunk header, so a region may be freed from any thread.
//!
//! The top layer: it puts the thread cache (`tcache/`) in front of the back end (`back/`),
//! calls the debug wing (`debug/`) where an option is on, and keeps `fork()` safe for every
//! heap (`fork.rs`). It may use every layer below. Its paths are one file each: `init.rs`,
//! `alloc.rs`, `free.rs`, `realloc.rs`, `stats.rs`; the debug wing's paths in the heap are
//! `checked.rs`.

use crate::back::arena::{Arena, ArenaInner};
use crate::back::huge::Huge;
use crate::back::invariants::{Violation, ViolationKind};
use crate::back::stats::{ArenaStats, Stats};
use crate::debug::guard::{self, LargeAt};
use crate::debug::sampled::Sampler;
use crate::debug::zero_size::ZeroSize;
use crate::meta::base::Base;
use crate::meta::chunk::{ChunkHeader, DIRTY, FREE, LARGE, SMALL};
use crate::meta::page_map::{Owner, PageMap};
use crate::meta::size_class::{
    classify, round_up, SizeClass, BINS, CHUNK, CHUNK_HEADER_PAGES, CHUNK_USABLE_PAGES, NBINS,
    NCACHE, NLARGE_CACHED, PAGE,
};
use crate::meta::thread::{ArenaCtx, ArenaPool, Step, MAX_ARENAS};
use crate::platform::error::FreeError;
use crate::platform::lock::{LockStats, RawLock};
use crate::platform::os;
use crate::platform::report::fatal;
use crate::platform::sync::{loom_const_fn, AtomicPtr, Ordering};
use crate::policy::safety::{DebugCaps, Safety, SamplePath, CANARY_BYTES, JUNK_BYTE};
use crate::policy::switches::{Switches, ALLOC_HOOKS};
use crate::policy::{ArenaChoice, Config, FrontEnd, Options, TcacheCheck};
use core::alloc::{GlobalAlloc, Layout};
use core::marker::PhantomData;
use core::ptr;

mod alloc;
mod checked;
mod free;
mod front;
mod init;
mod realloc;
mod split;
mod stats;
use crate::front::tcache::{self, CachePool};
use crate::front::Front;

pub mod fork;
pub use split::Split;

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
    purge: crate::policy::purge::Purge,
    safety: Safety,
    /// What the heap's paths switch on, derived from `safety` (`policy/switches.rs`).
    switches: Switches,
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

/// Why a page entry of kind `FREE` (or `META`) holds no allocation.
fn why_free_page(bits: usize) -> FreeError {
    if bits & crate::meta::chunk::KIND_MASK == FREE && bits & DIRTY != 0 {
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
    align <= crate::meta::size_class::QUANTUM && size <= crate::meta::size_class::CACHE_MAX
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
            crate::platform::fault::unregister(p as *const ());
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
