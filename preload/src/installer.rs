//! The heap installers that [`export!`](crate::export) links into a library: the one call
//! through which start-up (`init.rs`) builds the heap, and the only place that knows whether
//! the policies come from `ALLOCLAB_CONF` or from a config fixed when the library was built.

use crate::line::Line;
use crate::options::Conf;
use crate::select::{self, Ops};
use alloclab_core::Config;

/// Builds the heap `ALLOCLAB_CONF` selects (liballoclab.so).
///
/// # Safety
/// Call at most once per process, before any use of the table it returns, and publish the
/// table to other threads only with release ordering (or a lock).
pub unsafe fn install_selected(conf: &Conf) -> &'static Ops {
    // SAFETY: forwarded contract.
    unsafe { select::install(&conf.selection()) }
}

/// Builds a `Heap<C>` (a library built with `export!(C)`), with every engine option
/// `ALLOCLAB_CONF` gives; the policy keys cannot change `C` and are reported as ignored.
///
/// # Safety
/// As for [`install_selected`].
pub unsafe fn install_config<C: Config>(conf: &Conf) -> &'static Ops {
    if conf.chooses_policies() {
        let mut l = Line::new();
        l.str("ALLOCLAB_CONF: config, reuse, current_run and arenas are fixed to ")
            .str(C::NAME)
            .str(" in this library; ignored");
        l.print();
    }
    // SAFETY: forwarded contract.
    unsafe { select::install_config::<C>(conf.selection().options) }
}
