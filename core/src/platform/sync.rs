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
/// live in mmap'd memory in numbers loom cannot follow (VERIFY.md). So is the platform
/// layer's mapping hint (`os.rs`), which only steers where the kernel puts memory. The
/// debug wing's process-wide switches (the static key's patch state, the `malloc(0)` region,
/// the sampler's clock) and the fork handlers' nesting count are outside every model too:
/// nothing that loom or shuttle explores reaches them.
pub mod untracked {
    pub use core::sync::atomic::{
        AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
    };
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

/// A thread-local whose initial value is all zero bytes and that has no destructor, reached
/// without `__tls_get_addr`.
///
/// A `thread_local!` in a shared library (liballoclab.so) uses the general-dynamic TLS model:
/// every access calls `__tls_get_addr`, about a dozen instructions. On x86-64 Linux (outside
/// loom) the value is instead a 64-byte `.tbss` slot defined in assembly under the given
/// symbol name (hidden, so each library has its own), and its address is the initial-exec
/// sequence: the slot's offset from the thread pointer, read from the GOT, plus the thread
/// pointer (`%fs:0`). Each thread has its own slot, zeroed by the C library when the thread
/// starts (the value `$init` must therefore be all zero bytes, which a test of the user
/// checks). A library with initial-exec TLS can still be preloaded, and dlopened while the C
/// library's static TLS reserve lasts (glibc keeps some for this, as for jemalloc's).
/// Elsewhere it is `thread_local_const!`.
macro_rules! thread_local_zeroed {
    ($vis:vis static $name:ident: $t:ty = $init:expr; symbol = $sym:literal; slot = $slot:ident;) => {
        #[cfg(not(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux")))]
        $crate::platform::sync::thread_local_const! { $vis static $name: $t = $init; }

        #[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
        ::core::arch::global_asm!(
            concat!(".pushsection .tbss.", $sym, ",\"awT\",@nobits"),
            concat!(".globl ", $sym),
            concat!(".hidden ", $sym),
            concat!(".type ", $sym, ",@object"),
            ".p2align 6",
            concat!($sym, ":"),
            ".zero 64",
            concat!(".size ", $sym, ", 64"),
            ".popsection",
        );

        #[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
        $vis struct $slot;

        #[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
        impl $crate::platform::sync::TlsSlot for $slot {
                #[inline(always)]
                fn addr() -> *mut u8 {
                    let p: *mut u8;
                    // SAFETY: the initial-exec access sequence to a `.tbss` symbol defined
                    // above: reads the GOT entry the linker fills with its offset from the
                    // thread pointer, and the thread pointer's self-pointer at `%fs:0`.
                    unsafe {
                        ::core::arch::asm!(
                            concat!("movq ", $sym, "@gottpoff(%rip), {p}"),
                            "addq %fs:0, {p}",
                            p = out(reg) p,
                            options(att_syntax, pure, readonly, nostack),
                        );
                    }
                    p
                }
        }

        #[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
        $vis static $name: $crate::platform::sync::ZeroedTls<$t, $slot> = $crate::platform::sync::ZeroedTls::new();

        // The initial value the slot's zero bytes stand for (checked by the user's test).
        #[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
        const _: () = {
            let _initial: $t = $init;
        };
    };
}
pub(crate) use thread_local_zeroed;

/// Where a `thread_local_zeroed!` slot is, for the calling thread.
#[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
pub trait TlsSlot {
    /// The calling thread's slot: 64 bytes, 64-aligned, zero when the thread started.
    fn addr() -> *mut u8;
}

/// A `thread_local_zeroed!` value (x86-64 Linux): `with` as `LocalKey::with`.
#[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
pub struct ZeroedTls<T: 'static, S: TlsSlot> {
    _t: core::marker::PhantomData<(fn() -> T, S)>,
}

#[cfg(all(not(loom), not(shuttle), target_arch = "x86_64", target_os = "linux"))]
impl<T: 'static, S: TlsSlot> ZeroedTls<T, S> {
    const FITS: () = assert!(core::mem::size_of::<T>() <= 64 && core::mem::align_of::<T>() <= 64);

    /// The value in slot `S`.
    #[allow(clippy::new_without_default)] // made in `static` initializers, where only `const fn`s run
    pub const fn new() -> Self {
        ZeroedTls {
            _t: core::marker::PhantomData,
        }
    }

    /// Runs `f` with the calling thread's value.
    #[inline(always)]
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        // SAFETY: the slot is the calling thread's own, large and aligned enough for `T`
        // (checked by `FITS`), and zero bytes are a valid `T` (the declaration's contract); it
        // lives as long as the thread, and only shared references to it are made.
        f(unsafe { &*(S::addr() as *const T) })
    }
}

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
