//! What the engine's paths switch on, derived in one place.
//!
//! A heap's paths test a few flags (does `allocate` take the checked path, does a small
//! request go through the thread cache, may a pointer lie outside the chunks...). Each is a
//! function of the config's compiled-in capabilities (`Config::DEBUG`, `FrontEnd::CACHE`,
//! `Config::SAMPLE_PATH`) and the heap's run-time debug options (`Safety`): [`Switches::of`]
//! derives them all, once, when a heap or an arena is made, and the structs that test them
//! hold a copy. A rule changed here changes every path that tests it.

use crate::policy::safety::{DebugCaps, Safety, SamplePath};
use crate::policy::{Config, FrontEnd};

/// The capabilities that fill freed memory.
pub(crate) const FILLS: DebugCaps = DebugCaps::POISON.union(DebugCaps::ZERO);

/// The capabilities with a hook on the arena's free path.
pub(crate) const ON_FREE: DebugCaps = FILLS
    .union(DebugCaps::CANARY)
    .union(DebugCaps::QUARANTINE)
    .union(DebugCaps::GUARD);

/// The capabilities with a hook on the arena's small allocation path.
pub(crate) const ON_ALLOC: DebugCaps = FILLS.union(DebugCaps::JUNK);

/// The capabilities with a hook on the allocation path in `Heap` itself.
pub(crate) const ALLOC_HOOKS: DebugCaps = DebugCaps::CANARY
    .union(DebugCaps::GUARD)
    .union(DebugCaps::ZERO_SIZE)
    .union(DebugCaps::JUNK);

/// The flags a heap's and an arena's paths test (each also tested against the capabilities
/// compiled in, so that a config without them compiles the test away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Switches {
    /// `allocate` takes `allocate_checked` (a hook of `ALLOC_HOOKS` is on).
    pub(crate) alloc_hooks: bool,
    /// Small requests go through the thread cache: never while a debug option on regions is
    /// on, since a cached free would skip its checks (poison, canary, quarantine) until a
    /// flush.
    pub(crate) cache_on: bool,
    /// Pointers may lie outside the page map's chunks (`malloc(0)` slots, samples).
    pub(crate) special_ptrs: bool,
    /// No debug option on regions is on (`zero_check` reads pages as arenas take them,
    /// nothing else): a small region is then exactly its class's size, and nothing but the
    /// arenas (and thread caches) holds pointers.
    pub(crate) plain: bool,
    /// The arena's free path takes its debug path (a hook of `ON_FREE` is on).
    pub(crate) debug_free: bool,
    /// The arena's small allocation path has a hook (`ON_ALLOC`).
    pub(crate) debug_alloc: bool,
}

impl Switches {
    /// The switches of a heap of config `C` whose debug options are `safety`.
    pub(crate) fn of<C: Config>(safety: &Safety) -> Switches {
        let needs = safety.needs();
        Switches {
            alloc_hooks: needs.intersects(ALLOC_HOOKS),
            // Sampling by time leaves the cache on: sampled allocations never enter it (their
            // slots are not in any chunk, so the cache's free path passes them on). A count
            // (`sample: N`, one in N allocations) needs every allocation to reach a decision,
            // which `SlowPath` makes only past the cache: there the count turns the cache
            // off, as it always did. `zero_check` acts where arenas take pages, behind the
            // cache: it leaves the cache on.
            cache_on: C::Front::CACHE
                && needs
                    .without(DebugCaps::SAMPLE.union(DebugCaps::ZERO_CHECK))
                    .is_none()
                && !(C::DEBUG.contains(DebugCaps::SAMPLE)
                    && C::SAMPLE_PATH == SamplePath::SlowPath
                    && safety.sample > 0),
            special_ptrs: needs.intersects(DebugCaps::ZERO_SIZE.union(DebugCaps::SAMPLE)),
            plain: needs.without(DebugCaps::ZERO_CHECK) == DebugCaps::NONE,
            debug_free: needs.intersects(ON_FREE),
            debug_alloc: needs.intersects(ON_ALLOC),
        }
    }
}
