//! The policy traits: the decisions the seed studies argue about, as types.
//!
//! - [`RunReuse`]: which non-full run of a bin serves the next small allocation.
//! - [`ArenaChoice`]: which arena serves a request from the current thread.
//! - [`FrontEnd`]: what sits in front of the arenas for small requests (nothing, or a
//!   per-thread cache).
//! - [`Config`]: one policy per dimension plus tunables; `Heap<C>` is generic over it, so every
//!   decision is dispatched statically.
//!
//! Concrete policies live in `alloclab-policies`; this crate knows none of them.
//!
//! The layer above metadata: the contract a `Config` fills in. Besides the traits it owns
//! `purge.rs` (when dirty pages and cached huge mappings go back to the OS) and `safety.rs`
//! (the debug options: compiled-in capabilities, run-time choices, profiles), and
//! `switches.rs` (the flags every path tests, derived from a config and its options in one
//! place). It may use `platform/` and `meta/` (a policy sees runs as `RunRef`s and threads
//! through `ArenaCtx`).

pub mod purge;
pub mod safety;
pub(crate) mod switches;

use crate::meta::run::{LinkPlace, RunLinks, RunRef};
pub use crate::meta::thread::ArenaCtx;
use crate::policy::purge::Purge;
use crate::policy::safety::{DebugCaps, Safety, SamplePath};

/// Why a run leaves a policy's set of non-full runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// Its last free region was just allocated.
    Full,
    /// Its last allocated region was just freed; the run goes back to the arena.
    Empty,
    /// A wrapping policy took it over (for instance to make it the current run).
    Taken,
}

/// A run-reuse policy: owns a bin's set of non-full runs and picks which one serves the next
/// allocation.
///
/// The engine calls these methods with the arena lock held, in this protocol:
///
/// - `insert(run)`: the run just gained its first free region (a new run, or a full run that
///   had a region freed). It was unknown to the policy and is known from now on.
/// - `freed(run)`: a region was freed into a run already known.
/// - `pick()`: the run to allocate from next, among the known ones (`None` if there are none;
///   the engine then makes a new run and `insert`s it). `pick` does not remove it.
/// - `remove(run, why)`: the run became full (right after an allocation from the picked run),
///   or entirely free. It is unknown from now on.
/// - `for_each(f)`: calls `f` once for each known run (used by `check_invariants`).
///
/// # Safety
///
/// Implementors must hold a `RunRef` only while its run is known (between `insert` and
/// `remove`), must return from `pick` only runs that are known, and must not call `links()`
/// on any other run. The engine relies on this: a forgotten run's memory is reused.
pub unsafe trait RunReuse: 'static {
    /// Links stored for every run, in its header (at most 32 bytes, alignment at most 8) or
    /// where `LINKS` says. Use `Cell`s: they are reached through shared references.
    type Links: Default;
    /// The per-bin state.
    type Bin: Default;
    /// Short name used in reports.
    const NAME: &'static str;
    /// Where `Links` live: in the run header (the default), or in the chunk map's entry of the
    /// run's first page (`LinkPlace::ChunkMap`: at most 16 bytes). The handles the policy gets
    /// reach them there, so its code is the same either way. A wrapper that hands its runs to
    /// another policy states that policy's place.
    const LINKS: LinkPlace = LinkPlace::RunHeader;

    /// Writes the policy's name (wrappers include the wrapped policy's).
    fn write_name(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        w.write_str(Self::NAME)
    }

    /// A run became non-full and is now known.
    fn insert(bin: &mut Self::Bin, run: RunRef<Self::Links>);
    /// A region was freed into a known run.
    fn freed(_bin: &mut Self::Bin, _run: RunRef<Self::Links>) {}
    /// The run to serve the next allocation.
    fn pick(bin: &mut Self::Bin) -> Option<RunRef<Self::Links>>;
    /// A known run became full or empty and is forgotten.
    fn remove(bin: &mut Self::Bin, run: RunRef<Self::Links>, why: Removal);
    /// Visits every known run once.
    fn for_each(bin: &Self::Bin, f: &mut dyn FnMut(RunRef<Self::Links>));
    /// Checks the policy's own structure (ordering, links); a static description on failure.
    fn check(_bin: &Self::Bin) -> Result<(), &'static str> {
        Ok(())
    }
    /// Whether `candidate` should serve before `current` when it becomes non-full (used by a
    /// cached current run to stay, for instance, the lowest-addressed run). Default: never.
    fn prefer(_candidate: RunRef<Self::Links>, _current: RunRef<Self::Links>) -> bool {
        false
    }
}

/// An arena-choice policy.
pub trait ArenaChoice: 'static {
    /// Per-heap state, made when the heap initializes.
    type State: Send + Sync;
    /// Short name used in reports.
    const NAME: &'static str;

    /// Makes the per-heap state.
    fn init(options: &Options) -> Self::State;

    /// Index of the arena that serves a request of `size` bytes from the current thread.
    /// Indices are taken modulo `MAX_ARENAS`; arenas are created on first use.
    fn choose(ctx: &ArenaCtx<'_>, state: &Self::State, size: usize) -> usize;

    /// Called once when a thread that called `ctx.bind_thread(value)` exits.
    fn thread_exit(_ctx: &ArenaCtx<'_>, _state: &Self::State, _value: usize) {}
}

/// A front-end policy: whether small allocations and frees go through a per-thread cache
/// before reaching an arena, and how large that cache may grow.
///
/// The cache itself is engine machinery (per thread and heap, one stack of regions per small
/// class, filled and flushed in batches under one arena lock, flushed when the thread exits);
/// a front end chooses it and its default bound. `CACHE` is a constant, so a heap without a
/// cache compiles to exactly the arena paths.
pub trait FrontEnd: 'static {
    /// Short name used in reports.
    const NAME: &'static str;
    /// Whether small requests go through a per-thread cache.
    const CACHE: bool;
    /// Bytes of regions one thread's cache may hold in one heap (`Options::tcache_max_bytes`
    /// overrides it). Each small class starts with an equal share of a quarter of it, as a
    /// count of regions (at most 256; a class whose regions do not fit its share is not
    /// cached), and a class whose stack overflows doubles its count, up to 8192 regions or
    /// half the bound, while all the counts, in bytes, stay within the bound.
    const MAX_BYTES: usize;
    /// How the blocks a cache gives back (a flush: its stack overflowed, or its thread
    /// exited) reach their arena again, which is how a block freed by another thread returns
    /// to the threads that allocate from its arena.
    type Remote: RemoteFree;
}

/// A remote-free policy: how a block that a thread cache gives back returns to its arena, and
/// so how a block freed by a thread other than its allocator's goes home (the freeing thread's
/// cache takes it, and flushes it).
///
/// `FlushToRuns` (jemalloc's tcache) gives each block back to its run under the arena's lock;
/// `Mailbox` (as mimalloc's and snmalloc's remote frees) pushes the batch onto the arena's
/// lock-free list of its class, which the next fill of that class from the arena takes before
/// its runs, so a block crosses no lock and no bitmap on its way from one thread to another.
/// `MAILBOX` is a constant: a config that does not use the mailbox compiles to the runs' path.
pub trait RemoteFree: 'static {
    /// Short name used in reports.
    const NAME: &'static str;
    /// Whether a flush hands its blocks to their arenas' mailboxes (within a bound per class,
    /// past which they go back to their runs), and a fill takes from the mailbox first.
    const MAILBOX: bool;
}

/// Run-time tunables of a heap. `Options::DEFAULT` takes its values from the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Number of arenas for strategies with a fixed count; 0 means the strategy's default.
    pub narenas: usize,
    /// Dirty pages an arena keeps before purging; `usize::MAX` means the config's default.
    /// The threshold of `Purge::Threshold` (the decay ignores it).
    pub dirty_max_pages: usize,
    /// When dirty pages and cached huge mappings go back to the OS (`purge.rs`). `None`, the
    /// default: `Purge::Threshold` if `dirty_max_pages` is set (a threshold is what it sets,
    /// so options written before purging was a choice keep their meaning), else
    /// `Purge::DEFAULT`, a decay of `purge::DEFAULT_DECAY_MS`. See [`Options::purge_policy`].
    pub purge: Option<Purge>,
    /// Bytes of freed huge mappings the heap keeps for reuse (at most
    /// `purge::HUGE_CACHE_SLOTS` mappings); 0: none, every freed huge block is unmapped.
    pub huge_cache_bytes: usize,
    /// Whether the heap's first use installs the process-wide `pthread_atfork` handlers of
    /// `alloclab::fork` (once per process). Off only for a program that installs its own.
    pub fork_handlers: bool,
    /// Debug and hardening checks (`safety.rs`); each must be compiled into the config
    /// (`Config::DEBUG`), or the heap refuses to start with a message saying which is missing.
    pub safety: Safety,
    /// Bytes one thread's cache may hold (front ends with a cache); `usize::MAX` means the
    /// front end's default, 0 turns the cache off.
    pub tcache_max_bytes: usize,
    /// How much the thread cache's lock-free `free` checks before it takes a region (front
    /// ends with a cache).
    pub tcache_check: TcacheCheck,
    /// Whether a front end whose `RemoteFree` posts to the arenas' mailboxes does so (the
    /// default); `false` gives its flushes back to their runs, as `FlushToRuns` does. How a
    /// library that builds one heap per cache config (liballoclab.so) chooses the remote-free
    /// policy at run time: the mailbox's code is in every cache heap, and used or not.
    pub remote_mailbox: bool,
}

/// What the thread cache's fast `free` (and `realloc`) checks about a pointer before it
/// pushes it on the calling thread's stack. Pointers it refuses go to the locked path, which
/// checks everything and aborts on a bad one; what it takes without a check is found, if at
/// all, only when the region goes back to its run (a flush), or never.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TcacheCheck {
    /// Everything, on the spot: the page map, the page's entry (a small run's page), the
    /// region boundary, the run's bitmap bit (not back in its run) and the cache mark (not in
    /// any cache). Every invalid pointer and every double free is refused at the `free` that
    /// commits it.
    #[default]
    Full,
    /// What finding the size class needs anyway, plus two cheap tests: the page map, the
    /// page's entry, 16-byte alignment and the cache mark. A double free of a region still
    /// in a cache (the common `free(p); free(p)`) is still refused at once; an interior
    /// pointer at a 16-byte boundary, or a second free of a region already back in its run,
    /// is taken, and reported when a flush gives it back, unless it was handed out again
    /// first (then two owners share it, as in jemalloc's and mimalloc's default builds). A
    /// measured trade: about 30 instructions fewer per `free` (docs/PERFORMANCE.md).
    Light,
}

impl Options {
    /// Every option at its default.
    pub const DEFAULT: Options = Options {
        narenas: 0,
        dirty_max_pages: usize::MAX,
        purge: None,
        huge_cache_bytes: crate::policy::purge::DEFAULT_HUGE_CACHE_BYTES,
        fork_handlers: true,
        safety: Safety::OFF,
        tcache_max_bytes: usize::MAX,
        tcache_check: TcacheCheck::Full,
        remote_mailbox: true,
    };
}

impl Options {
    /// The purge policy these options choose (`purge`, or its default).
    pub const fn purge_policy(&self) -> Purge {
        match self.purge {
            Some(p) => p,
            None if self.dirty_max_pages != usize::MAX => Purge::Threshold,
            None => Purge::DEFAULT,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::DEFAULT
    }
}

/// A heap configuration: one policy per dimension, plus compile-time tunables.
pub trait Config: 'static {
    /// Run-reuse policy.
    type Reuse: RunReuse;
    /// Arena-choice policy.
    type Arenas: ArenaChoice;
    /// Front end: a per-thread cache or none.
    type Front: FrontEnd;
    /// Name used in reports.
    const NAME: &'static str;
    /// Dirty pages an arena keeps before it purges (mozjemalloc's default: 256 pages, 1 MiB).
    const DIRTY_MAX_PAGES: usize = 256;
    /// The debug checks compiled in, which `Options::safety` may turn on at run time. The
    /// default, none, compiles every check away; `DebugCaps::ALL` makes each one a run-time
    /// choice (one test of a flag when off).
    const DEBUG: DebugCaps = DebugCaps::NONE;
    /// With `DebugCaps::SAMPLE` compiled in and a thread cache in front: where the sampling
    /// decision is made ([`SamplePath`]; the default keeps the cache's fast path free of it).
    const SAMPLE_PATH: SamplePath = SamplePath::SlowPath;

    /// Writes a full description: the name, then the policies (the front end if it caches,
    /// and its remote-free policy if it is not the runs').
    fn describe(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        write!(w, "{} (reuse: ", Self::NAME)?;
        Self::Reuse::write_name(w)?;
        write!(w, ", arenas: {}", Self::Arenas::NAME)?;
        if Self::Front::CACHE {
            write!(w, ", front: {}", Self::Front::NAME)?;
            if <Self::Front as FrontEnd>::Remote::MAILBOX {
                write!(w, ", remote: {}", <Self::Front as FrontEnd>::Remote::NAME)?;
            }
        }
        w.write_str(")")
    }
}

impl<P: RunReuse> RunLinks for P {
    type Links = P::Links;
    const LINKS: LinkPlace = P::LINKS;
}
