//! Seeded bugs: deliberate defects that exist only in builds with `--cfg alloclab_seeded`, each
//! switched on at run time, so that `alloclab-verify` can prove its checks catch them
//! (`verify/tests/seeded_engine.rs`, `verify/tests/loom_seeded.rs`). A normal build compiles
//! none of this, nor any of the hooks that consult it (each is marked `alloclab_seeded`).
//!
//! The switch is an untracked atomic (`sync::untracked`): it is set before a loom model runs,
//! not a subject of the model.

use crate::platform::sync::untracked::AtomicUsize;
use crate::platform::sync::Ordering;

/// The seeded engine bugs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Bug {
    /// A fresh run's bitmap marks one region past the capacity as free (`run.rs`).
    BitmapOffByOne = 1,
    /// `free` touches the arena without taking its lock (`heap.rs`, `arena.rs`): cross-thread
    /// frees race with the owner's allocations.
    UnlockedFree = 2,
    /// Heap ids are taken with a load and a store instead of one `fetch_add` (`thread.rs`):
    /// heaps initialized concurrently can share an id, and with it threads' arena bindings.
    LostHeapId = 3,
    /// A thread cache's flush drops the last region of each batch instead of returning it to
    /// its run (`front/tcache/`): the region stays taken, held by no one.
    LostFlush = 4,
    /// The sampled pool reads its oldest free slot and takes it in two critical sections
    /// (`slot_ring.rs`): two threads sampling at once can be handed the same slot.
    SplitSlotTake = 5,
}

static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Switches `bug` on (`None`: every seeded bug off). One bug at a time.
pub fn set(bug: Option<Bug>) {
    ACTIVE.store(bug.map_or(0, |b| b as usize), Ordering::SeqCst);
}

/// Whether `bug` is on.
#[inline(always)]
pub(crate) fn active(bug: Bug) -> bool {
    ACTIVE.load(Ordering::Relaxed) == bug as usize
}
