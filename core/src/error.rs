//! Why a pointer handed to `free`, `realloc` or `usable_size` is not a live allocation.

use core::fmt;

/// What is wrong with a pointer given back to the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The page map says no chunk or huge mapping of this heap contains it.
    NotOurs,
    /// It points inside an allocation, not at its start.
    Interior,
    /// It is the start of a region or page that is not allocated (a double free, or never
    /// handed out).
    NotAllocated,
}

impl FreeError {
    /// A short description.
    pub fn describe(self) -> &'static str {
        match self {
            FreeError::NotOurs => "pointer not allocated by this heap",
            FreeError::Interior => "pointer into the middle of an allocation",
            FreeError::NotAllocated => "pointer not currently allocated (double free?)",
        }
    }
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

impl std::error::Error for FreeError {}
