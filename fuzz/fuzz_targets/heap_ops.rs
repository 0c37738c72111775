//! Arbitrary operation sequences on every named config (the first byte picks one), through
//! `alloclab_verify::fuzz`, the same body a user's fuzz target calls for its own config: live
//! allocations, runs and the config's reference model of run reuse on every step; statistics
//! and `check_invariants()` every `fuzz::CHECK_EVERY` steps and at the end.
#![no_main]

use alloclab_policies::configs;
use alloclab_verify::fuzz::heap_ops_against;
use alloclab_verify::Modeled;
use libfuzzer_sys::fuzz_target;

/// `heap_ops::<C>` with `C`'s reference model of run reuse.
fn run<C: alloclab_core::Config>(data: &[u8])
where
    C::Reuse: Modeled,
{
    heap_ops_against::<C, <C::Reuse as Modeled>::Model>(data)
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    // Bytes 0..=3 keep naming the configs they named before lifo-tcache existed (the seeds use
    // them); a first byte with the high bit set picks lifo-tcache, whose cache decides which
    // region serves an allocation before run reuse does (its placement is not modeled).
    match (which >= 128, which % 4) {
        (true, _) => alloclab_verify::fuzz::heap_ops::<configs::LifoTcache>(rest),
        (false, 0) => run::<configs::AddrOrdered>(rest),
        (false, 1) => run::<configs::Lifo>(rest),
        (false, 2) => run::<configs::Mrf>(rest),
        (false, _) => run::<configs::MrfCurrent>(rest),
    }
});
