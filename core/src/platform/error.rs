//! Why a pointer handed to `free`, `realloc` or `usable_size` is not a live allocation.

use core::fmt;

/// What is wrong with a pointer given back to the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The page map says no chunk or huge mapping of this heap contains it.
    NotOurs,
    /// It points inside an allocation, not at its start.
    Interior,
    /// It is the start of a region that was handed out and freed since (a double free), or of
    /// a page freed since it was last in use.
    Freed,
    /// Nothing was ever allocated there: a region of a run above the highest one handed out,
    /// or the chunk's own header.
    NeverAllocated,
    /// It lies in free pages the OS got back (purged or never used): no allocation is there,
    /// and whether one ever was is no longer known.
    NotAllocated,
}

impl FreeError {
    /// A short description.
    pub fn describe(self) -> &'static str {
        match self {
            FreeError::NotOurs => "pointer not allocated by this heap",
            FreeError::Interior => "pointer into the middle of an allocation",
            FreeError::Freed => "pointer already freed (double free)",
            FreeError::NeverAllocated => "pointer never allocated (no allocation was made there)",
            FreeError::NotAllocated => "pointer not allocated (its pages are free)",
        }
    }

    /// The description for a call that uses the allocation rather than freeing it
    /// (`realloc`, `malloc_usable_size`): a freed pointer there is a use after free, not a
    /// double free.
    pub fn in_use(self) -> &'static str {
        match self {
            FreeError::Freed => "pointer was freed",
            e => e.describe(),
        }
    }
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

impl std::error::Error for FreeError {}
