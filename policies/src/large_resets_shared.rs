//! `LargeResetsShared`: the arena choice of the thread-arenas seed (mozilla bug 1436541), kept
//! as a named variant so that studies can measure it. A thread gets an arena of its own as
//! `ThreadLocal` gives it, but a request above `SMALL_MAX` bytes re-points the thread at the
//! shared arena 0 *for good*: from then on every request of that thread, small ones included,
//! contends on the shared arena. In the seed, one allocation above 512 bytes silently turned
//! Stylo's worker threads into users of the default arena.
//!
//! Not a policy to use: `ThreadLocal<SHARED_ABOVE>` is the intended behaviour (large requests
//! go to arena 0, the thread keeps its own arena for the rest).

use crate::thread_local::bind;
use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// An arena per thread until the thread's first request above `SMALL_MAX` bytes, the shared
/// arena 0 after it.
pub struct LargeResetsShared<const SMALL_MAX: usize = 512>;

impl<const SMALL_MAX: usize> ArenaChoice for LargeResetsShared<SMALL_MAX> {
    type State = ();
    const NAME: &'static str = "thread-reset-by-large";

    fn init(_: &Options) {}

    #[inline(always)]
    fn choose(ctx: &ArenaCtx<'_>, _: &(), size: usize) -> usize {
        match ctx.thread_binding() {
            Some(arena) if size <= SMALL_MAX || arena == 0 => arena,
            Some(_) => reset_to_shared(ctx),
            None if size > SMALL_MAX => reset_to_shared(ctx),
            None => bind(ctx),
        }
    }

    fn thread_exit(ctx: &ArenaCtx<'_>, _: &(), arena: usize) {
        // Called once per binding the thread made: its own arena goes back to the pool (the
        // shared arena's binding releases nothing: `release(0)` is a no-op).
        ctx.release(arena);
    }
}

/// The bug: the newest binding (arena 0) shadows the thread's own arena from now on. The
/// thread's own arena stays leased, unused, until the thread exits.
#[cold]
fn reset_to_shared(ctx: &ArenaCtx<'_>) -> usize {
    // If the binding cannot be recorded (thread exiting, no memory), this request still goes
    // to the shared arena; the next large one tries again.
    ctx.bind_thread(0);
    0
}
