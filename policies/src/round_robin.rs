//! `RoundRobin`: a fixed set of arenas (by default 4 per CPU, jemalloc's `narenas`), threads
//! assigned to them in turn on first use and kept there.

use alloclab_core::sync::{AtomicUsize, Ordering};
use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// `n` arenas shared by threads assigned in turn.
pub struct RoundRobin;

impl ArenaChoice for RoundRobin {
    type State = AtomicUsize;
    const NAME: &'static str = "round-robin";

    fn init(_: &Options) -> AtomicUsize {
        AtomicUsize::new(0)
    }

    #[inline(always)]
    fn choose(ctx: &ArenaCtx<'_>, next: &AtomicUsize, _: usize) -> usize {
        match ctx.thread_binding() {
            Some(arena) => arena,
            None => assign(ctx, next),
        }
    }
}

#[cold]
fn assign(ctx: &ArenaCtx<'_>, next: &AtomicUsize) -> usize {
    let n = ctx.narenas_or(4 * ctx.ncpus());
    let arena = next.fetch_add(1, Ordering::Relaxed) % n;
    // If the binding cannot be recorded (thread exiting), the next call assigns again: still
    // an arena of the set, only the turn order is disturbed.
    ctx.bind_thread(arena);
    arena
}
