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
//!
//! `Checked<R, A, F>` is any combination (LIFO, thread-local arenas and no cache unless told)
//! with every debug check compiled in, each chosen at run time, as liballoclab.so builds its
//! heaps; tests, studies and benchmarks of the checks use it.

use crate::{CurrentRun, NoCache, ThreadCache, ThreadLocal};
use alloclab_core::{ArenaChoice, Config, DebugCaps, FrontEnd, RunReuse};
use core::marker::PhantomData;

/// Address-ordered non-full runs with a current run kept lowest; thread-local arenas.
pub struct AddrOrdered;
impl Config for AddrOrdered {
    type Reuse = CurrentRun<crate::AddrOrdered>;
    type Arenas = ThreadLocal;
    type Front = NoCache;
    const NAME: &'static str = "addr-ordered";
}

/// LIFO non-full runs; thread-local arenas.
pub struct Lifo;
impl Config for Lifo {
    type Reuse = crate::Lifo;
    type Arenas = ThreadLocal;
    type Front = NoCache;
    const NAME: &'static str = "lifo";
}

/// Strict most-recently-freed non-full runs; thread-local arenas.
pub struct Mrf;
impl Config for Mrf {
    type Reuse = crate::Mrf;
    type Arenas = ThreadLocal;
    type Front = NoCache;
    const NAME: &'static str = "mrf";
}

/// Most-recently-freed non-full runs with a current run; thread-local arenas.
pub struct MrfCurrent;
impl Config for MrfCurrent {
    type Reuse = CurrentRun<crate::Mrf>;
    type Arenas = ThreadLocal;
    type Front = NoCache;
    const NAME: &'static str = "mrf-current";
}

/// LIFO non-full runs; thread-local arenas; a thread cache in front.
pub struct LifoTcache;
impl Config for LifoTcache {
    type Reuse = crate::Lifo;
    type Arenas = ThreadLocal;
    type Front = ThreadCache;
    const NAME: &'static str = "lifo-tcache";
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

/// The names of the named configurations, in report order.
pub const NAMES: [&str; 5] = ["addr-ordered", "lifo", "mrf", "mrf-current", "lifo-tcache"];

/// Calls `$f::<Config>($args...)` for each named configuration, in `NAMES` order; the results
/// form an array.
///
/// ```
/// fn name<C: alloclab_core::Config>() -> &'static str { C::NAME }
/// assert_eq!(alloclab_policies::for_each_config!(name()), alloclab_policies::configs::NAMES);
/// ```
#[macro_export]
macro_rules! for_each_config {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        [
            $f::<$crate::configs::AddrOrdered>($($arg),*),
            $f::<$crate::configs::Lifo>($($arg),*),
            $f::<$crate::configs::Mrf>($($arg),*),
            $f::<$crate::configs::MrfCurrent>($($arg),*),
            $f::<$crate::configs::LifoTcache>($($arg),*),
        ]
    };
}
