//! The one door to atomics, cells, thread-locals, process globals and spinning.
//!
//! Under `--cfg loom` every item here becomes loom's instrumented twin, so the loom models in
//! `alloclab-verify` explore the engine's real code, not a copy of it (the pattern of
//! sharded-slab's `src/sync.rs` and tokio's `src/loom/`). Under `--cfg shuttle` the atomics,
//! thread-locals, process globals and spinning become shuttle's (a randomized scheduler whose
//! threads are coroutines on one OS thread), and `UnsafeCell` checks that no two threads are
//! inside it at once (shuttle has no cell of its own). Nothing else in `core` may name
//! `core::sync::atomic`, `UnsafeCell`, `thread_local!` or a `static` with interior mutability.

#[cfg(all(loom, shuttle))]
compile_error!("`--cfg loom` and `--cfg shuttle` are two backends of this shim: pick one");

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(shuttle)]
pub use shuttle::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(not(any(loom, shuttle)))]
pub use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Atomics that stay `core`'s even under loom: the page map's 2^14-slot root and 2^14-word
/// leaves are far too many objects for loom to track in every explored execution. The page map
/// is the main user (besides the seeded-bug switch of `--cfg alloclab_seeded` builds, set
/// outside any model); its protocol (leaves published by compare-exchange, entries written by
/// the chunk's owner before the chunk is handed out) is documented in `page_map.rs` and
/// VERIFY.md.
/// Run bitmaps' words (read by the thread cache's free path without the arena lock) and the
/// thread caches' per-class counts (read by `stats` from other threads) are untracked too: they
/// live in mmap'd memory in numbers loom cannot follow (VERIFY.md).
pub mod untracked {
    pub use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize};
}

/// A cell whose accesses go through closures, so that loom can see each one.
#[cfg(loom)]
pub use loom::cell::UnsafeCell;

/// A cell whose accesses go through closures, so that loom can see each one.
#[cfg(not(any(loom, shuttle)))]
#[derive(Debug)]
pub struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(any(loom, shuttle)))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Self {
        UnsafeCell(core::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared raw pointer to the contents.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a unique raw pointer to the contents.
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A cell whose accesses go through closures, each checked under shuttle: an access is a
/// scheduling point before it starts and again before it ends, and a thread that enters while
/// another is inside with a unique access (or enters uniquely while others read) panics with
/// "data race". Threads switch only at scheduling points, so without the second one a thread
/// could never be caught inside: a critical section with no atomic in it would be one step.
#[cfg(shuttle)]
#[derive(Debug)]
pub struct UnsafeCell<T> {
    value: core::cell::UnsafeCell<T>,
    /// Threads reading now, or `WRITING`.
    access: AtomicUsize,
}

#[cfg(shuttle)]
const WRITING: usize = usize::MAX;

#[cfg(shuttle)]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Self {
        UnsafeCell {
            value: core::cell::UnsafeCell::new(value),
            access: AtomicUsize::new(0),
        }
    }

    /// Runs `f` with a shared raw pointer to the contents.
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        let before = self.access.fetch_add(1, Ordering::SeqCst);
        assert!(
            before < WRITING / 2,
            "data race: a thread reads a cell at {:p} while another writes it",
            self
        );
        let r = f(self.value.get());
        self.access.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// Runs `f` with a unique raw pointer to the contents.
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        let before = self.access.swap(WRITING, Ordering::SeqCst);
        assert!(
            before == 0,
            "data race: a thread writes a cell at {:p} while another {} it",
            self,
            if before == WRITING { "writes" } else { "reads" }
        );
        let r = f(self.value.get());
        self.access.store(0, Ordering::SeqCst);
        r
    }
}

/// Called in every spin loop: a CPU hint normally, a scheduling point under loom and shuttle
/// (they need spinning threads to yield, or they would run an infinite loop).
#[inline(always)]
pub fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(shuttle)]
    shuttle::thread::yield_now();
    #[cfg(not(any(loom, shuttle)))]
    core::hint::spin_loop();
}

/// `const fn` normally, plain `fn` under loom, whose types cannot be built in constants.
macro_rules! loom_const_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($args:tt)*) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$m])* $vis const fn $name($($args)*) -> $ret $body
        #[cfg(loom)]
        $(#[$m])* $vis fn $name($($args)*) -> $ret $body
    };
}
pub(crate) use loom_const_fn;

/// A thread-local that is const-initialized and has no destructor, so that first use neither
/// allocates nor registers a destructor through `__cxa_thread_atexit_impl` (which may call
/// `calloc`, that is, us).
macro_rules! thread_local_const {
    ($vis:vis static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(any(loom, shuttle)))]
        ::std::thread_local! { $vis static $name: $t = const { $init }; }
        #[cfg(loom)]
        ::loom::thread_local! { $vis static $name: $t = $init; }
        #[cfg(shuttle)]
        ::shuttle::thread_local! { $vis static $name: $t = $init; }
    };
}
pub(crate) use thread_local_const;

/// A process-wide value: a plain `static` normally (its initializer must be const), a
/// `loom::lazy_static!` or `shuttle::lazy_static!` under those (so each explored execution
/// starts from a fresh value).
/// Private statics only: `loom::lazy_static!` cannot take a forwarded visibility fragment.
macro_rules! process_global {
    (static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(any(loom, shuttle)))]
        static $name: $t = $init;
        #[cfg(loom)]
        ::loom::lazy_static! { static ref $name: $t = $init; }
        #[cfg(shuttle)]
        ::shuttle::lazy_static! { static ref $name: $t = $init; }
    };
}
pub(crate) use process_global;
