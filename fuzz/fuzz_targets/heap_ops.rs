//! Arbitrary operation sequences on every named config (the first byte picks one), each
//! operation checked by `alloclab_verify::Harness`: live allocations, runs and the config's
//! reference model of run reuse on every step; statistics and `check_invariants()` every
//! `CHECK_EVERY` steps and at the end.
#![no_main]

use alloclab_policies::configs;
use alloclab_verify::{Harness, Modeled, Op};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

/// Longest sequence one input runs.
const MAX_OPS: usize = 256;
/// Whole-heap checks (`check_invariants`, `check_live`, statistics) run every this many
/// operations and at the end; everything else is checked on every operation.
const CHECK_EVERY: usize = 16;

fn run<C: alloclab_core::Config>(ops: &[Op])
where
    C::Reuse: Modeled,
{
    let h = Harness::<C, <C::Reuse as Modeled>::Model>::new().check_every(CHECK_EVERY);
    if let Err(f) = h.run_with(ops, || {}) {
        panic!("{}: {f}\noperations: {ops:?}", C::NAME);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    // Bytes 0..=3 keep naming the configs they named before lifo-tcache existed (the seeds use
    // them); a first byte with the high bit set picks lifo-tcache.
    match (which >= 128, which % 4) {
        (true, _) => run::<configs::LifoTcache>(&ops),
        (false, 0) => run::<configs::AddrOrdered>(&ops),
        (false, 1) => run::<configs::Lifo>(&ops),
        (false, 2) => run::<configs::Mrf>(&ops),
        (false, _) => run::<configs::MrfCurrent>(&ops),
    }
});
