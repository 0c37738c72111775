//! Named configurations: the policy combinations the run-reuse seed compares, each with
//! thread-local arenas, plus `Using<R, A, F>` for any other combination.
//!
//! | config | run reuse | arenas | front end |
//! |---|---|---|---|
//! | `AddrOrdered` | address-ordered + current run (old mozjemalloc) | thread-local | none |
//! | `Lifo` | LIFO (mozjemalloc today) | thread-local | none |
//! | `Mrf` | strict most-recently-freed | thread-local | none |
//! | `MrfCurrent` | MRF + current run | thread-local | none |
//! | `LifoTcache` | LIFO | thread-local | thread cache |
//! | `LifoTcacheMailbox` | LIFO | thread-local | thread cache, flushes to mailboxes |
//!
//! `Checked<R, A, F>` is any combination (LIFO, thread-local arenas and no cache unless told)
//! with every debug check compiled in, each chosen at run time, as liballoclab.so builds its
//! heaps; tests, studies and benchmarks of the checks use it.
//!
//! The same declaration that makes the named configs lists what can be chosen by name at run
//! time (`Reuse`, `Arenas`, with their names) and generates `Policies::visit`, which turns
//! such a choice into its types: liballoclab.so parses, lists and builds from it alone.

use crate::{NoCache, ThreadLocal};
use alloclab_core::{ArenaChoice, Config, DebugCaps, FrontEnd, RunReuse};
use core::marker::PhantomData;

// The one list of what can be chosen by name (`catalogue.rs` says what it expands to). A
// name added here is accepted by `ALLOCLAB_CONF`, listed by its help and built by
// liballoclab.so, with nothing else to edit.
catalogue! {
    reuse {
        /// Lowest address first.
        AddrOrdered = "addr-ordered" => crate::AddrOrdered,
        /// Last non-full run first.
        Lifo = "lifo" => crate::Lifo,
        /// Most recently freed-into run first.
        Mrf = "mrf" => crate::Mrf,
    }
    arenas {
        /// One arena for every thread.
        Single = "single" => crate::Single,
        /// An arena per thread, returned to a pool when the thread exits.
        Thread = "thread" => crate::ThreadLocal,
        /// `narenas` arenas, threads assigned in turn.
        RoundRobin = "round-robin" => crate::RoundRobin,
        /// The arena of the current CPU.
        PerCpu = "per-cpu" => crate::PerCpu,
        /// `narenas` arenas, by a hash of the thread.
        Hashed = "hashed" => crate::Hashed,
    }
    remote {
        /// A thread cache's flushes go back to their runs under the arena lock.
        Flush = "flush" => crate::FlushToRuns,
        /// A thread cache's flushes go to their arenas' lock-free mailboxes.
        Mailbox = "mailbox" => crate::Mailbox,
    }
    configs {
        /// Address-ordered non-full runs with a current run kept lowest; thread-local arenas.
        AddrOrdered = "addr-ordered":
            reuse AddrOrdered, current_run true, arenas Thread, tcache false, remote Flush;
        /// LIFO non-full runs; thread-local arenas.
        Lifo = "lifo": reuse Lifo, current_run false, arenas Thread, tcache false, remote Flush;
        /// Strict most-recently-freed non-full runs; thread-local arenas.
        Mrf = "mrf": reuse Mrf, current_run false, arenas Thread, tcache false, remote Flush;
        /// Most-recently-freed non-full runs with a current run; thread-local arenas.
        MrfCurrent = "mrf-current":
            reuse Mrf, current_run true, arenas Thread, tcache false, remote Flush;
        /// LIFO non-full runs; thread-local arenas; a thread cache in front.
        LifoTcache = "lifo-tcache":
            reuse Lifo, current_run false, arenas Thread, tcache true, remote Flush;
        /// LIFO non-full runs; thread-local arenas; a thread cache in front whose flushes go
        /// to the arenas' mailboxes (`Mailbox`: cross-thread frees without a lock).
        LifoTcacheMailbox = "lifo-tcache-mailbox":
            reuse Lifo, current_run false, arenas Thread, tcache true, remote Mailbox;
    }
}

/// A combination of policies as values: what a named config is made of, and what a run-time
/// choice (`ALLOCLAB_CONF`) picks. `visit` reaches its types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policies {
    /// Run reuse.
    pub reuse: Reuse,
    /// Whether bins cache a current run in front of `reuse` (`CurrentRun`).
    pub current_run: bool,
    /// Arena choice.
    pub arenas: Arenas,
    /// Whether a per-thread cache sits in front of the arenas (`ThreadCache`).
    pub tcache: bool,
    /// How the cache's flushes reach their arenas (with `tcache` only).
    pub remote: Remote,
}

/// A named configuration as a value (an element of `NAMED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    /// Its name, as its type's `Config::NAME`.
    pub name: &'static str,
    /// Its policies.
    pub policies: Policies,
}

/// What to build from the types a `Policies` names: `Policies::visit` calls `visit` with them.
pub trait Visit {
    /// What `visit` returns.
    type Output;
    /// Called with run reuse `R`, arena choice `A` and front end `F`.
    fn visit<R: RunReuse, A: ArenaChoice, F: FrontEnd>(self) -> Self::Output;
}

/// Any run-reuse policy `R` with any arena choice `A` and front end `F` (none by default).
pub struct Using<R, A, F = NoCache>(PhantomData<(R, A, F)>);
impl<R: RunReuse, A: ArenaChoice, F: FrontEnd> Config for Using<R, A, F> {
    type Reuse = R;
    type Arenas = A;
    type Front = F;
    const NAME: &'static str = "custom";
}

/// Run reuse `R`, arena choice `A` and front end `F` with every debug check compiled in: the
/// options (`Safety`, `ALLOCLAB_CONF`'s `profile:`, `poison:` ...) choose them at run time;
/// off, each costs a test of a flag.
pub struct Checked<R = crate::Lifo, A = ThreadLocal, F = NoCache>(PhantomData<(R, A, F)>);
impl<R: RunReuse, A: ArenaChoice, F: FrontEnd> Config for Checked<R, A, F> {
    type Reuse = R;
    type Arenas = A;
    type Front = F;
    const NAME: &'static str = "checked";
    const DEBUG: DebugCaps = DebugCaps::ALL;
}
