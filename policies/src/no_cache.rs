//! `NoCache`: no front end; every allocation and free goes to an arena under its lock, as in
//! mozjemalloc.

use alloclab_core::FrontEnd;

/// Every small request goes straight to an arena.
pub struct NoCache;

impl FrontEnd for NoCache {
    const NAME: &'static str = "none";
    const CACHE: bool = false;
    const MAX_BYTES: usize = 0;
    type Remote = crate::FlushToRuns;
}
