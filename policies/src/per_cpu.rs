//! `PerCpu`: the arena of the CPU the thread runs on now (one per CPU by default), asked of the
//! kernel on every request through `sched_getcpu` (vDSO, a few nanoseconds). A thread that
//! migrates simply moves on to the next CPU's arena; frees go to the owning arena anyway.

use alloclab_core::{ArenaChoice, ArenaCtx, Options};

/// One arena per CPU.
pub struct PerCpu;

impl ArenaChoice for PerCpu {
    type State = ();
    const NAME: &'static str = "per-cpu";

    fn init(_: &Options) {}

    #[inline(always)]
    fn choose(ctx: &ArenaCtx<'_>, _: &(), _: usize) -> usize {
        ctx.current_cpu() % ctx.narenas_or(ctx.ncpus())
    }
}
