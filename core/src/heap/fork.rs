//! `fork()` while other threads allocate: every heap in the process, made safe at once.
//!
//! A child process has only the thread that called `fork`. A lock some other thread held at
//! that moment stays held in the child forever, so the handlers below take every allocator
//! lock before the fork and release (parent) or reset (child) them after, as mozjemalloc's
//! and jemalloc's `pthread_atfork` handlers do.
//!
//! The handlers are process-wide, not per heap: the thread registry is shared by all heaps, and
//! heaps initialize under its lock, so taking the registry first and then each registered
//! heap's locks covers every heap, including one that another thread is building at that moment.
//! Lock order (the order the engine nests them everywhere): thread registry, then per heap:
//! arena creation, arena pool, thread caches' pool, base, huge, the arenas by index. In the
//! child, the thread caches of threads that did not survive the fork are flushed once every
//! lock is reset (`front/tcache/`), and the pages that such threads were purging without
//! their arena's lock are put back as dirty free pages when that lock is reset (`arena.rs`):
//! the child is never left with pages in flight.
//!
//! A heap installs the handlers on first use unless `Options::fork_handlers` is false. A program
//! with handlers of its own (such as `liballoclab.so`, which also takes its log's lock) calls
//! [`prefork`], [`postfork_parent`] and [`postfork_child`] from them; the calls nest, so the
//! automatic handlers may stay installed as well.

use crate::meta::thread::{self, Step};

// Calls nest: a program whose own handlers call these while the automatic ones are installed
// too must not deadlock on its own locks. Only the thread holding the locks touches `DEPTH`;
// `HOLDER` is that thread (its id in the parent; the child has a new one, and is alone).
// Plain atomics even under loom: nothing here is modelled.
static HOLDER: crate::platform::sync::untracked::AtomicI32 =
    crate::platform::sync::untracked::AtomicI32::new(0);
static DEPTH: crate::platform::sync::untracked::AtomicUsize =
    crate::platform::sync::untracked::AtomicUsize::new(0);
use crate::platform::sync::untracked::Ordering::Relaxed;

fn tid() -> i32 {
    crate::platform::os::thread_id()
}

/// Takes every lock of every heap in the process, so that `fork()` finds none held
/// mid-operation. Pair with [`postfork_parent`] or [`postfork_child`]; nested calls (by the
/// same thread) are counted, and only the outermost pair takes and releases.
pub fn prefork() {
    let me = tid();
    if HOLDER.load(Relaxed) == me {
        DEPTH.fetch_add(1, Relaxed);
        return;
    }
    thread::registry_lock();
    // SAFETY: the registry lock is held.
    unsafe { thread::each_live_heap(Step::Lock) };
    // Last: a heap may hold its locks while it patches the sampling key, never the reverse.
    crate::debug::static_key::prefork();
    HOLDER.store(me, Relaxed);
    DEPTH.store(1, Relaxed);
}

/// Whether this is the outermost of nested `postfork_*` calls (then nobody holds them anymore).
fn outermost() -> bool {
    if DEPTH.fetch_sub(1, Relaxed) > 1 {
        return false;
    }
    HOLDER.store(0, Relaxed);
    true
}

/// Releases what [`prefork`] took, in the parent.
pub fn postfork_parent() {
    if !outermost() {
        return;
    }
    crate::debug::static_key::postfork_parent();
    // SAFETY: the registry lock is held since `prefork`.
    unsafe { thread::each_live_heap(Step::Unlock) };
    thread::registry_unlock();
}

/// Resets what [`prefork`] took, in the child.
pub fn postfork_child() {
    if !outermost() {
        return;
    }
    crate::debug::static_key::postfork_child();
    // SAFETY: the registry lock is held since `prefork` (by this thread, the child's only one).
    unsafe { thread::each_live_heap(Step::Reset) };
    thread::registry_reset();
}

#[cfg(not(any(loom, shuttle)))]
mod handlers {
    use crate::platform::report::StderrWriter;
    use crate::platform::sync::{AtomicBool, Ordering};
    use core::fmt::Write;

    static INSTALLED: AtomicBool = AtomicBool::new(false);

    extern "C" fn prefork() {
        super::prefork();
    }
    extern "C" fn postfork_parent() {
        super::postfork_parent();
    }
    extern "C" fn postfork_child() {
        super::postfork_child();
    }

    /// Registers [`super::prefork`], [`super::postfork_parent`] and [`super::postfork_child`]
    /// with `pthread_atfork`, once per process. See [`install_handlers`].
    pub fn install() -> bool {
        install_handlers(prefork, postfork_parent, postfork_child)
    }

    /// Registers fork handlers with `pthread_atfork`, once per process (later calls, with
    /// these or other handlers, do nothing): for a program whose handlers wrap [`super::prefork`]
    /// and the two others with locks of its own. Call it outside every allocator lock: glibc may
    /// allocate to record handlers. Returns false (after saying so on stderr) if glibc refused.
    pub fn install_handlers(
        prepare: extern "C" fn(),
        parent: extern "C" fn(),
        child: extern "C" fn(),
    ) -> bool {
        if INSTALLED.load(Ordering::Acquire) || INSTALLED.swap(true, Ordering::AcqRel) {
            return true;
        }
        let installed = crate::platform::os::atfork(prepare, parent, child);
        if !installed {
            let _ = writeln!(
                StderrWriter::stderr(),
                "alloclab: pthread_atfork failed: a fork while another thread \
                 allocates may deadlock the child"
            );
        }
        installed
    }
}

#[cfg(not(any(loom, shuttle)))]
pub use handlers::{install, install_handlers};

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;

    /// Kills the campaign's survivor `replace outermost -> bool with true` (shard 19): nested
    /// calls release only at the outermost `postfork_parent`, so the inner one leaves every
    /// lock held by this thread (a release there, and another at the outer call, would unlock
    /// the registry twice).
    #[test]
    fn nested_handlers_release_only_at_the_outermost_call() {
        prefork();
        prefork();
        assert_eq!(DEPTH.load(Relaxed), 2);
        postfork_parent();
        assert_eq!(
            HOLDER.load(Relaxed),
            tid(),
            "the inner call released the locks"
        );
        assert_eq!(DEPTH.load(Relaxed), 1);
        postfork_parent();
        assert_eq!(HOLDER.load(Relaxed), 0, "the outer call kept the locks");
    }
}
