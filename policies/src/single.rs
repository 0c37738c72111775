//! `Single`: every request goes to arena 0.

use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// One arena for all threads.
pub struct Single;

impl ArenaChoice for Single {
    type State = ();
    const NAME: &'static str = "single";

    fn init(_: &Options) {}

    #[inline(always)]
    fn choose(_: &ArenaCtx<'_>, _: &(), _: usize) -> usize {
        0
    }
}
