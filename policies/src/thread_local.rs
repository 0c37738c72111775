//! `ThreadLocal`: each thread lazily gets an arena of its own and keeps it, whatever size it
//! allocates; when the thread exits its arena goes back to a pool for the next new thread.
//!
//! The binding is made once and never rewritten on the allocation path, so no request can
//! re-point the thread at the shared arena: that is the bug of the thread-arenas seed
//! (mozilla bug 1436541), where one allocation above 512 bytes silently replaced a Stylo
//! thread's arena with the default one for good. Sending some sizes to the shared arena is a
//! parameter instead: `ThreadLocal<496>` sends requests above 496 bytes to arena 0 (what
//! mozjemalloc does on purpose) and still keeps the thread's own arena for the rest.

use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// An arena per thread; requests above `SHARED_ABOVE` bytes go to the shared arena 0.
pub struct ThreadLocal<const SHARED_ABOVE: usize = { usize::MAX }>;

impl<const SHARED_ABOVE: usize> ArenaChoice for ThreadLocal<SHARED_ABOVE> {
    type State = ();
    const NAME: &'static str = if SHARED_ABOVE == usize::MAX {
        "thread"
    } else {
        "thread-small"
    };

    fn init(_: &Options) {}

    #[inline(always)]
    fn choose(ctx: &ArenaCtx<'_>, _: &(), size: usize) -> usize {
        if size > SHARED_ABOVE {
            return 0;
        }
        match ctx.thread_binding() {
            Some(arena) => arena,
            None => bind(ctx),
        }
    }

    fn thread_exit(ctx: &ArenaCtx<'_>, _: &(), arena: usize) {
        ctx.release(arena);
    }
}

/// Leases an arena and binds the calling thread to it (the shared arena if the thread is exiting
/// or the binding cannot be recorded). `LargeResetsShared` binds the same way.
#[cold]
pub(crate) fn bind(ctx: &ArenaCtx<'_>) -> usize {
    if ctx.thread_exiting() {
        // Past the exit hook (another thread-exit destructor allocating): use the shared arena
        // rather than bind again and leak the binding.
        return 0;
    }
    let arena = ctx.lease();
    if ctx.bind_thread(arena) {
        arena
    } else {
        ctx.release(arena);
        0
    }
}
