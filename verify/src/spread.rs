//! `SpreadArenas`: an arena choice for single-threaded tests that still reach several arenas,
//! so that the state machine checks a run-reuse policy's per-arena state (each arena has its
//! own bins) without threads, whose interleavings it could not replay.

use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// Request sizes spread over three arenas: arena `(size / 16) % 3`. One size always goes to
/// the same arena, so a bin's runs stay together while different bins live in different
/// arenas.
pub struct SpreadArenas;

impl ArenaChoice for SpreadArenas {
    type State = ();
    const NAME: &'static str = "spread-by-size";

    fn init(_: &Options) {}

    fn choose(_: &ArenaCtx<'_>, _: &(), size: usize) -> usize {
        (size / 16) % 3
    }
}
