//! What `Heap::check_invariants()` reports: one precise violation, never just `false`.
//!
//! The checks themselves live next to the structures they walk (`Arena::check`,
//! `Huge::check`, `Heap::check_invariants`); this file names what can go wrong.

use core::fmt;

/// The first broken invariant found, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Arena index, when the violation is inside an arena.
    pub arena: Option<usize>,
    /// Bin (small class index), when it concerns a bin.
    pub bin: Option<usize>,
    /// The address concerned (a run, page or allocation), 0 if none.
    pub addr: usize,
    /// What is wrong.
    pub kind: ViolationKind,
}

/// The kinds of violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A run header does not name its own run (start address or bin): it was overwritten.
    RunHeaderCorrupt,
    /// The bitmap's set bits differ from the run's free count.
    BitmapCount {
        /// Set bits in the bitmap.
        bitmap: usize,
        /// The run's free count.
        free: usize,
    },
    /// Bits beyond the capacity are set, or free bits lie below the search hint.
    BitmapShape,
    /// A run is entirely free but was kept instead of going back to the arena.
    EmptyRunKept,
    /// A non-full run is unknown to the run-reuse policy.
    NonFullRunUnknown,
    /// The policy knows this run more than once.
    RunKnownTwice,
    /// The policy knows a full run.
    FullRunKnown,
    /// The policy knows a run that is not a live run of this bin.
    ForeignRunKnown,
    /// The policy picked a run the engine cannot allocate from (full, or of another bin): a
    /// broken `RunReuse` contract. Reported only by verification builds (the `verification`
    /// feature); other builds abort at the pick.
    UnusablePick,
    /// The policy's own structure is broken.
    Policy(&'static str),
    /// A page entry is inconsistent with its neighbours (`what` says how).
    PageMap(&'static str),
    /// A free page run is missing from, or wrong in, the arena's free lists.
    FreeRuns(&'static str),
    /// Two counters that must agree do not.
    Stats {
        /// Which counter.
        what: &'static str,
        /// The value the structures imply.
        expected: usize,
        /// The value the counter holds.
        actual: usize,
    },
    /// A thread cache holds a region it must not (free in its run, of another class, twice,
    /// unmarked), or its counts disagree with its contents or its bound.
    ThreadCache(&'static str),
    /// A huge allocation's record and the page map disagree.
    Huge(&'static str),
    /// A pointer said to be live is not an allocation of this heap.
    NotLive(crate::platform::error::FreeError),
    /// Two live allocations overlap.
    Overlap {
        /// The other allocation.
        other: usize,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(a) = self.arena {
            write!(f, "arena {a}: ")?;
        }
        if let Some(b) = self.bin {
            write!(
                f,
                "bin {b} ({} B): ",
                crate::meta::size_class::class_size(b)
            )?;
        }
        if self.addr != 0 {
            write!(f, "{:#x}: ", self.addr)?;
        }
        match self.kind {
            ViolationKind::RunHeaderCorrupt => {
                write!(f, "run header overwritten (wrong start address or bin)")
            }
            ViolationKind::BitmapCount { bitmap, free } => {
                write!(
                    f,
                    "bitmap has {bitmap} free regions but the free count says {free}"
                )
            }
            ViolationKind::BitmapShape => {
                write!(f, "bitmap has bits past the capacity or below the hint")
            }
            ViolationKind::EmptyRunKept => write!(f, "entirely free run kept in the bin"),
            ViolationKind::NonFullRunUnknown => {
                write!(f, "non-full run unknown to the run-reuse policy")
            }
            ViolationKind::RunKnownTwice => {
                write!(f, "run known to the run-reuse policy more than once")
            }
            ViolationKind::FullRunKnown => {
                write!(f, "full run still known to the run-reuse policy")
            }
            ViolationKind::ForeignRunKnown => {
                write!(
                    f,
                    "run-reuse policy knows a run that is not a live run of this bin"
                )
            }
            ViolationKind::UnusablePick => write!(
                f,
                "run-reuse policy picked this run, which is full or of another bin"
            ),
            ViolationKind::Policy(s) => write!(f, "run-reuse policy: {s}"),
            ViolationKind::PageMap(s) => write!(f, "page map: {s}"),
            ViolationKind::FreeRuns(s) => write!(f, "free page runs: {s}"),
            ViolationKind::Stats {
                what,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "statistic {what} is {actual} but the structures say {expected}"
                )
            }
            ViolationKind::ThreadCache(s) => write!(f, "thread cache: {s}"),
            ViolationKind::Huge(s) => write!(f, "huge allocation: {s}"),
            ViolationKind::NotLive(e) => write!(f, "live allocation check failed: {e}"),
            ViolationKind::Overlap { other } => write!(f, "overlaps live allocation {other:#x}"),
        }
    }
}

impl std::error::Error for Violation {}

impl Violation {
    pub(crate) fn new(kind: ViolationKind) -> Self {
        Violation {
            arena: None,
            bin: None,
            addr: 0,
            kind,
        }
    }
    pub(crate) fn at(mut self, addr: usize) -> Self {
        self.addr = addr;
        self
    }
    pub(crate) fn in_bin(mut self, bin: usize) -> Self {
        self.bin = Some(bin);
        self
    }
    pub(crate) fn in_arena(mut self, arena: usize) -> Self {
        self.arena = Some(arena);
        self
    }
}

/// Shorthand for a statistics mismatch.
pub(crate) fn expect_eq(
    what: &'static str,
    expected: usize,
    actual: usize,
) -> Result<(), Violation> {
    if expected == actual {
        Ok(())
    } else {
        Err(Violation::new(ViolationKind::Stats {
            what,
            expected,
            actual,
        }))
    }
}
