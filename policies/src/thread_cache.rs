//! `ThreadCache<MAX_BYTES>`: a per-thread cache of small regions in front of the arenas, as
//! jemalloc's tcache and tcmalloc's thread caches: each thread allocates from and frees to its
//! own stacks, one per small class, without locks; stacks are filled from and flushed to the
//! arenas in batches, and flushed when the thread exits. `MAX_BYTES` bounds what one thread's
//! cache holds in one heap (256 KiB by default; `Options::tcache_max_bytes` overrides it).
//!
//! The cache itself is engine machinery (`alloclab-core`, `heap/tcache.rs`); this type selects
//! it.

use alloclab_core::FrontEnd;

/// A per-thread cache holding at most `MAX_BYTES` bytes of small regions per thread and heap.
pub struct ThreadCache<const MAX_BYTES: usize = { 256 * 1024 }>;

impl<const MAX_BYTES: usize> FrontEnd for ThreadCache<MAX_BYTES> {
    const NAME: &'static str = "thread-cache";
    const CACHE: bool = true;
    const MAX_BYTES: usize = MAX_BYTES;
}
