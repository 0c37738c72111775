//! Model-based tests: every named config, and every arena choice, driven as a proptest state
//! machine against the model of live allocations and runs, with each run-reuse policy's
//! reference model predicting which run serves every small allocation. Case counts are modest
//! by default: `PROPTEST_CASES` and `ALLOCLAB_VERIFY_STEPS` scale them up (VERIFY.md).
#![cfg(not(loom))]

use alloclab_policies::configs::{self, Using};
use alloclab_policies::{
    AddrOrdered, CurrentRun, Hashed, Lifo, Mrf, MrfChunkMap, PerCpu, RoundRobin, Single,
    ThreadCache, ThreadLocal,
};
use alloclab_verify::machine::run_state_machine;
use alloclab_verify::Modeled;

type M<R> = <R as Modeled>::Model;

#[test]
fn named_config_addr_ordered() {
    run_state_machine::<configs::AddrOrdered, M<CurrentRun<AddrOrdered>>>();
}

#[test]
fn named_config_lifo() {
    run_state_machine::<configs::Lifo, M<Lifo>>();
}

#[test]
fn named_config_mrf() {
    run_state_machine::<configs::Mrf, M<Mrf>>();
}

#[test]
fn named_config_mrf_current() {
    run_state_machine::<configs::MrfCurrent, M<CurrentRun<Mrf>>>();
}

/// The run-reuse-order study's fifth variant (not a named config): MRF with a current run, its
/// links in the chunk map.
#[test]
fn mrf_current_chunk_map() {
    run_state_machine::<Using<CurrentRun<MrfChunkMap>, ThreadLocal>, M<CurrentRun<MrfChunkMap>>>();
    run_state_machine::<Using<MrfChunkMap, RoundRobin, ThreadCache>, M<MrfChunkMap>>();
}

#[test]
fn named_config_lifo_tcache() {
    run_state_machine::<configs::LifoTcache, M<Lifo>>();
}

#[test]
fn thread_cache_over_every_arena_choice() {
    type Small = ThreadCache<{ 4 * 1024 }>;
    run_state_machine::<Using<CurrentRun<Mrf>, Single, Small>, M<CurrentRun<Mrf>>>();
    run_state_machine::<Using<AddrOrdered, RoundRobin, Small>, M<AddrOrdered>>();
}

#[test]
fn addr_ordered_without_current_run() {
    run_state_machine::<Using<AddrOrdered, Single>, M<AddrOrdered>>();
}

#[test]
fn current_run_over_lifo() {
    run_state_machine::<Using<CurrentRun<Lifo>, Single>, M<CurrentRun<Lifo>>>();
}

#[test]
fn every_arena_choice() {
    run_state_machine::<Using<Lifo, Single>, M<Lifo>>();
    run_state_machine::<Using<Lifo, ThreadLocal<496>>, M<Lifo>>();
    run_state_machine::<Using<Mrf, RoundRobin>, M<Mrf>>();
    run_state_machine::<Using<Lifo, PerCpu>, M<Lifo>>();
    run_state_machine::<Using<Mrf, Hashed>, M<Mrf>>();
}

/// The named configs as `for_each_config!` lists them: a config added there without a model
/// here fails to compile (its reuse policy must implement `Modeled`).
#[test]
fn for_each_config_is_covered() {
    fn run<C: alloclab_core::Config>() -> &'static str
    where
        C::Reuse: Modeled,
    {
        if let Some((_, f)) =
            alloclab_verify::machine::find_counterexample::<C, M<C::Reuse>>(2, 50, Some(1))
        {
            panic!("{}: {f}", C::NAME);
        }
        C::NAME
    }
    assert_eq!(alloclab_policies::for_each_config!(run()), configs::NAMES);
}
