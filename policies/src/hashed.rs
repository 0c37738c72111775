//! `Hashed`: a fixed set of arenas (4 per CPU by default), a thread's arena chosen by hashing
//! its identity. No per-thread state at all; two threads may collide.

use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// `n` arenas indexed by a hash of the thread.
pub struct Hashed;

impl ArenaChoice for Hashed {
    type State = ();
    const NAME: &'static str = "hashed";

    fn init(_: &Options) {}

    #[inline(always)]
    fn choose(ctx: &ArenaCtx<'_>, _: &(), _: usize) -> usize {
        // Fibonacci hashing of the thread key (an address: low bits carry no information).
        let h = (ctx.thread_key() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        h as usize % ctx.narenas_or(4 * ctx.ncpus())
    }
}
