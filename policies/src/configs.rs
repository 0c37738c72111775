//! Named configurations: the policy combinations the run-reuse seed compares, each with
//! thread-local arenas, plus `Using<R, A>` for any other combination.
//!
//! | config | run reuse | arenas |
//! |---|---|---|
//! | `AddrOrdered` | address-ordered + current run (old mozjemalloc) | thread-local |
//! | `Lifo` | LIFO (mozjemalloc today) | thread-local |
//! | `Mrf` | strict most-recently-freed | thread-local |
//! | `MrfCurrent` | MRF + current run | thread-local |

use crate::{CurrentRun, ThreadLocal};
use alloclab_core::{ArenaChoice, Config, RunReuse};
use core::marker::PhantomData;

/// Address-ordered non-full runs with a current run kept lowest; thread-local arenas.
pub struct AddrOrdered;
impl Config for AddrOrdered {
    type Reuse = CurrentRun<crate::AddrOrdered>;
    type Arenas = ThreadLocal;
    const NAME: &'static str = "addr-ordered";
}

/// LIFO non-full runs; thread-local arenas.
pub struct Lifo;
impl Config for Lifo {
    type Reuse = crate::Lifo;
    type Arenas = ThreadLocal;
    const NAME: &'static str = "lifo";
}

/// Strict most-recently-freed non-full runs; thread-local arenas.
pub struct Mrf;
impl Config for Mrf {
    type Reuse = crate::Mrf;
    type Arenas = ThreadLocal;
    const NAME: &'static str = "mrf";
}

/// Most-recently-freed non-full runs with a current run; thread-local arenas.
pub struct MrfCurrent;
impl Config for MrfCurrent {
    type Reuse = CurrentRun<crate::Mrf>;
    type Arenas = ThreadLocal;
    const NAME: &'static str = "mrf-current";
}

/// Any run-reuse policy `R` with any arena choice `A`.
pub struct Using<R, A>(PhantomData<(R, A)>);
impl<R: RunReuse, A: ArenaChoice> Config for Using<R, A> {
    type Reuse = R;
    type Arenas = A;
    const NAME: &'static str = "custom";
}

/// The names of the named configurations, in report order.
pub const NAMES: [&str; 4] = ["addr-ordered", "lifo", "mrf", "mrf-current"];

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
        ]
    };
}
