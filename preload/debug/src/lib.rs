//! liballoclab_debug.so: a debug build. The `lifo` config's heap with every debug check
//! compiled in and the debug profile built into the library, so that a program run on it
//! without any `ALLOCLAB_CONF` gets poisoning, junk, canaries, guard pages and the rest, as a
//! malloc built without `MALLOC_PRODUCTION` checks by default. `ALLOCLAB_CONF` still applies
//! after the built-in entries (`profile:default` turns them off again).

use alloclab_core::{Config, DebugCaps};
use alloclab_policies::{Lifo, NoCache, ThreadLocal};

/// `lifo` with every debug check compiled in.
pub struct LifoDebug;
impl Config for LifoDebug {
    type Reuse = Lifo;
    type Arenas = ThreadLocal;
    type Front = NoCache;
    const NAME: &'static str = "lifo-debug";
    const DEBUG: DebugCaps = DebugCaps::ALL;
}

alloclab_preload::export!(LifoDebug, "profile:debug");
