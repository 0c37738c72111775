//! `ThreadCache<MAX_BYTES>`: a per-thread cache of small regions and large blocks up to 16 KiB
//! in front of the arenas, as jemalloc's tcache and tcmalloc's thread caches: each thread
//! allocates from and frees to its own stacks, one per small class and one per large class of
//! one to four pages, without locks; stacks are filled from and flushed to the
//! arenas in batches, and flushed when the thread exits. `MAX_BYTES` bounds what one thread's
//! cache holds in one heap (1 MiB by default; `Options::tcache_max_bytes` overrides it): each
//! class starts with a share of a quarter of it, and a class that overflows grows into the
//! rest (as tcmalloc's free lists grow), so that a program that frees and reallocates
//! thousands of regions of one class stops passing them through the arenas. A `free` is
//! validated before its push as fully as the locked path would (`Options::tcache_check`
//! trades part of that for speed).
//!
//! The cache itself is engine machinery (`alloclab-core`, `core/src/front/tcache/`); this type selects
//! it.

use crate::FlushToRuns;
use alloclab_core::{FrontEnd, RemoteFree};
use core::marker::PhantomData;

/// A per-thread cache holding at most `MAX_BYTES` bytes of small regions and large blocks (up to
/// 16 KiB) per thread and heap, whose flushes return blocks to their arenas as `R` says
/// (`FlushToRuns`, or `Mailbox`).
pub struct ThreadCache<const MAX_BYTES: usize = { 1024 * 1024 }, R = FlushToRuns>(PhantomData<R>);

impl<const MAX_BYTES: usize, R: RemoteFree> FrontEnd for ThreadCache<MAX_BYTES, R> {
    const NAME: &'static str = "thread-cache";
    const CACHE: bool = true;
    const MAX_BYTES: usize = MAX_BYTES;
    type Remote = R;
}
