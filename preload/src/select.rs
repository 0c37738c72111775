//! Run-time selection among compile-time heaps.
//!
//! Every combination of run reuse x current run x arena choice x front end that the catalogue
//! (`alloclab_policies::configs`) lists, 60 today, is a monomorphized `Heap<Checked<R, A, F>>`,
//! every debug check compiled in (each off at run time unless `ALLOCLAB_CONF` turns it on): the
//! engine's policies stay statically dispatched and inlined. What the start-up configuration
//! picks (through the catalogue's `Policies::visit`, a static match) is one table of function
//! pointers (`Ops`) into one of those heaps, so a call costs one load and one indirect call
//! more than a compile-time `Heap<C>` (`benches/dispatch.rs` measures how much, with
//! callgrind).
//!
//! Only one heap ever exists in the process: it lives in `SLOT`, a static big enough for any
//! `Heap<C>` (they differ only in a type parameter), written once by `install` before the
//! table that reads it is published.
//!
//! This file depends on nothing else in the crate, so the benchmark compiles it as it is.

use alloclab_core::size_class::QUANTUM;
use alloclab_core::{
    ArenaChoice, Config, FreeError, FrontEnd, Heap, Options, RemoteFree, RunReuse, Stats,
    TcacheCheck,
};
use alloclab_policies::configs::{Policies, Visit};
use core::cell::UnsafeCell;
use core::fmt;
use core::mem::MaybeUninit;

// ---- what can be selected -------------------------------------------------------------------

// The names and the types they stand for are the catalogue's (`alloclab_policies::configs`).
pub use alloclab_policies::configs::{Arenas, Remote, Reuse};

/// One heap configuration, chosen at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Run reuse.
    pub reuse: Reuse,
    /// Whether bins cache a current run in front of `reuse`.
    pub current_run: bool,
    /// Arena choice.
    pub arenas: Arenas,
    /// Whether a per-thread cache sits in front of the arenas.
    pub tcache: bool,
    /// How the cache's flushes reach their arenas.
    pub remote: Remote,
    /// Engine tunables (`narenas`, `dirty_max_pages`).
    pub options: Options,
}

impl Selection {
    /// The policies chosen, without the tunables.
    pub fn policies(&self) -> Policies {
        Policies {
            reuse: self.reuse,
            current_run: self.current_run,
            arenas: self.arenas,
            tcache: self.tcache,
            remote: self.remote,
        }
    }

    /// The policies of the heap `install` builds: with a cache, always the mailbox's type,
    /// which `heap_options` turns off at run time for `Remote::Flush`. One heap type per
    /// cache config, not one per remote-free policy: the library compiles 60 heaps, not 90.
    fn heap_policies(&self) -> Policies {
        Policies {
            remote: if self.tcache {
                Remote::Mailbox
            } else {
                self.remote
            },
            ..self.policies()
        }
    }

    /// The options of the heap `install` builds (see `heap_policies`).
    fn heap_options(&self) -> Options {
        Options {
            remote_mailbox: self.options.remote_mailbox && self.remote == Remote::Mailbox,
            ..self.options
        }
    }
}

pub use alloclab_policies::configs::Checked;

// ---- the table of operations ----------------------------------------------------------------

/// The operations of the selected heap. Each is a thin monomorphized wrapper of a `Heap<C>`
/// method; see `Heap` for their contracts.
pub struct Ops {
    /// `Heap::malloc(size)`: alignment 16, known to the compiler (the common case, kept apart
    /// from `allocate` so that the size-class computation is specialized for it); sets `errno`
    /// to `ENOMEM` when it returns null.
    pub malloc: fn(usize) -> *mut u8,
    /// `Heap::allocate(size, 16, true)`: `calloc` after its overflow check.
    pub malloc_zeroed: fn(usize) -> *mut u8,
    /// `Heap::allocate(size, align, zero)`.
    pub allocate: fn(usize, usize, bool) -> *mut u8,
    /// `Heap::free` (aborts with one line on a pointer that is not a live allocation), keeping
    /// `errno`.
    pub free: unsafe fn(*mut u8),
    /// `Heap::reallocate(ptr, size, 16, usize::MAX)` for a non-null `ptr`, keeping `errno` on
    /// success and setting `ENOMEM` on failure.
    pub realloc: unsafe fn(*mut u8, usize) -> *mut u8,
    /// `Heap::usable_size`.
    pub usable_size: fn(*const u8) -> Result<usize, FreeError>,
    /// `Heap::size_fits(ptr, size, align)`.
    pub size_fits: fn(*const u8, usize, usize) -> Result<bool, FreeError>,
    /// `Heap::stats`.
    pub stats: fn() -> Stats,
    /// Writes the policies of the heap actually running, from its types.
    pub describe: fn(&mut dyn fmt::Write) -> fmt::Result,
    /// The config's own name when the library was built for one config (`export!(C)`);
    /// `None` when `ALLOCLAB_CONF` chose the policies.
    pub config_name: Option<&'static str>,
}

// ---- the heap's storage ---------------------------------------------------------------------

/// Bytes reserved for the heap; every `Heap<C>` is checked to fit at compile time.
const SLOT_BYTES: usize = 128;

#[repr(C, align(64))]
struct Slot(UnsafeCell<MaybeUninit<[u8; SLOT_BYTES]>>);

// SAFETY: the slot is written once by `install`, before any reader can reach it (readers get
// there only through the `Ops` that `install` returns, published with release ordering); after
// that it is only read, and `Heap<C>` is `Sync`.
unsafe impl Sync for Slot {}

static SLOT: Slot = Slot(UnsafeCell::new(MaybeUninit::uninit()));

/// The heap in the slot, seen as a `Heap<C>`.
#[inline(always)]
fn heap<C: Config>() -> &'static Heap<C> {
    const {
        assert!(core::mem::size_of::<Heap<C>>() <= SLOT_BYTES);
        assert!(core::mem::align_of::<Heap<C>>() <= 64);
    }
    // SAFETY: only the functions of `OpsOf<C>` call this, and those are reachable only after
    // `install` wrote a `Heap<C>` into the slot (size and alignment checked above).
    unsafe { &*(SLOT.0.get() as *const Heap<C>) }
}

/// `errno = ENOMEM`, out of the way of the allocation paths.
#[cold]
#[inline(never)]
fn enomem() {
    // SAFETY: `__errno_location` returns the calling thread's errno, always valid.
    unsafe { *libc::__errno_location() = libc::ENOMEM };
}

struct OpsOf<C>(core::marker::PhantomData<C>);

impl<C: Config> OpsOf<C> {
    const OPS: Ops = Ops {
        malloc: Self::malloc,
        malloc_zeroed: Self::malloc_zeroed,
        allocate: Self::allocate,
        free: Self::free::<false>,
        realloc: Self::realloc::<false>,
        usable_size: Self::usable_size,
        size_fits: Self::size_fits,
        stats: Self::stats,
        describe: Self::describe,
        config_name: None,
    };

    /// The table of a heap with `tcache_check:light`: only the fast `free` and `realloc`
    /// differ, their check a constant rather than a flag read on every call.
    const OPS_LIGHT: Ops = Ops {
        free: Self::free::<true>,
        realloc: Self::realloc::<true>,
        ..Self::OPS
    };

    /// The tables of a library built for `C` alone (`export!(C)`).
    const OPS_NAMED: Ops = Ops {
        config_name: Some(C::NAME),
        ..Self::OPS
    };
    const OPS_NAMED_LIGHT: Ops = Ops {
        config_name: Some(C::NAME),
        ..Self::OPS_LIGHT
    };

    fn malloc(size: usize) -> *mut u8 {
        let h = heap::<C>();
        if let Some(p) = h.split().malloc_fast(size) {
            return p;
        }
        Self::malloc_slow(size)
    }

    /// `malloc` past the cache's fast path, out of line so that the fast path is a leaf
    /// function and this a tail call.
    #[inline(never)]
    fn malloc_slow(size: usize) -> *mut u8 {
        let p = heap::<C>().split().malloc_slow(size, QUANTUM, false);
        if p.is_null() {
            enomem();
        }
        p
    }

    fn malloc_zeroed(size: usize) -> *mut u8 {
        heap::<C>().allocate(size, QUANTUM, true)
    }

    fn allocate(size: usize, align: usize, zero: bool) -> *mut u8 {
        heap::<C>().allocate(size, align, zero)
    }

    /// `free`; `LIGHT`: the heap has `tcache_check:light` (`install` chose the table by it).
    ///
    /// # Safety
    /// As for `Heap::free`.
    unsafe fn free<const LIGHT: bool>(p: *mut u8) {
        // SAFETY: forwarded contract; `LIGHT` is the heap's own setting.
        if unsafe { heap::<C>().split().free_fast_as(p, Self::check::<LIGHT>()) } {
            return;
        }
        // SAFETY: forwarded contract.
        unsafe { Self::free_slow(p) }
    }

    /// `free` past the cache's fast path, out of line (a tail call). Only this path may make
    /// system calls (a contended lock, a purge), so only it saves `errno`.
    ///
    /// # Safety
    /// As for `Heap::free`.
    #[inline(never)]
    unsafe fn free_slow(p: *mut u8) {
        // SAFETY: `__errno_location` returns the calling thread's errno, valid for the
        // thread's life; then the forwarded contract.
        unsafe {
            let e = libc::__errno_location();
            let saved = *e;
            heap::<C>().split().free_slow(p);
            *e = saved;
        }
    }

    /// Keeps `errno` on success and sets `ENOMEM` on failure; `LIGHT` as for `free`.
    ///
    /// # Safety
    /// As for `Heap::reallocate`, with `p` not null.
    unsafe fn realloc<const LIGHT: bool>(p: *mut u8, size: usize) -> *mut u8 {
        // SAFETY: forwarded contract (`p` is not null: `entry::realloc` allocates for null);
        // `LIGHT` is the heap's own setting.
        let fast = unsafe {
            heap::<C>()
                .split()
                .realloc_fast_as(p, size, Self::check::<LIGHT>())
        };
        if let Some(q) = fast {
            return q;
        }
        // SAFETY: forwarded contract.
        unsafe { Self::realloc_slow(p, size) }
    }

    /// `realloc` past the cache's fast path, out of line (a tail call). Only this path may
    /// make system calls (a contended lock, a purge, `mremap`): `errno` is as it was on
    /// success, `ENOMEM` on failure.
    ///
    /// # Safety
    /// As for `realloc`.
    #[inline(never)]
    unsafe fn realloc_slow(p: *mut u8, size: usize) -> *mut u8 {
        // SAFETY: `__errno_location` returns the calling thread's errno, valid for the
        // thread's life; then the forwarded contract.
        unsafe {
            let e = libc::__errno_location();
            let saved = *e;
            let q = heap::<C>()
                .split()
                .realloc_slow(p, size, QUANTUM, usize::MAX);
            *e = if q.is_null() { libc::ENOMEM } else { saved };
            q
        }
    }

    fn usable_size(p: *const u8) -> Result<usize, FreeError> {
        heap::<C>().usable_size(p)
    }

    fn size_fits(p: *const u8, size: usize, align: usize) -> Result<bool, FreeError> {
        heap::<C>().size_fits(p, size, align)
    }

    fn stats() -> Stats {
        heap::<C>().stats()
    }

    fn describe(w: &mut dyn fmt::Write) -> fmt::Result {
        Self::describe_as(heap::<C>().options().remote_mailbox, w)
    }

    /// `describe` for a heap built with `Options::remote_mailbox` set to `mailbox` (the
    /// remote-free policy is the type's only if the options keep it).
    fn describe_as(mailbox: bool, w: &mut dyn fmt::Write) -> fmt::Result {
        w.write_str("reuse ")?;
        <C::Reuse as alloclab_core::RunReuse>::write_name(w)?;
        write!(w, ", arenas {}", <C::Arenas as ArenaChoice>::NAME)?;
        if <C::Front as FrontEnd>::CACHE {
            write!(w, ", front {}", <C::Front as FrontEnd>::NAME)?;
            type Remote<C> = <<C as Config>::Front as FrontEnd>::Remote;
            if <Remote<C> as RemoteFree>::MAILBOX && mailbox {
                write!(w, ", remote {}", <Remote<C> as RemoteFree>::NAME)?;
            }
        }
        Ok(())
    }

    /// Puts a fresh `Heap<C>` in the slot and returns its table.
    ///
    /// # Safety
    /// As for [`install`].
    unsafe fn install(options: Options) -> &'static Ops {
        let h = SLOT.0.get() as *mut Heap<C>;
        // SAFETY: the slot fits a `Heap<C>` (checked in `heap`); per the contract nobody reads
        // it yet and no heap was installed before (so nothing is overwritten that is in use).
        unsafe { h.write(Heap::with_options(options)) };
        Self::table(&options, false)
    }

    /// The cache check a table's `free` and `realloc` pass (a constant in each).
    #[inline(always)]
    const fn check<const LIGHT: bool>() -> TcacheCheck {
        if LIGHT {
            TcacheCheck::Light
        } else {
            TcacheCheck::Full
        }
    }

    /// The table of a heap built with `options`; `named`: of a library built for `C` alone.
    fn table(options: &Options, named: bool) -> &'static Ops {
        let light = <C::Front as FrontEnd>::CACHE && options.tcache_check == TcacheCheck::Light;
        match (named, light) {
            (false, false) => &Self::OPS,
            (false, true) => &Self::OPS_LIGHT,
            (true, false) => &Self::OPS_NAMED,
            (true, true) => &Self::OPS_NAMED_LIGHT,
        }
    }

    /// As `install`, for a library built for `C` alone.
    ///
    /// # Safety
    /// As for [`install`].
    unsafe fn install_named(options: Options) -> &'static Ops {
        // SAFETY: forwarded contract.
        unsafe { Self::install(options) };
        Self::table(&options, true)
    }
}

/// Builds the heap that `sel` names in the process's one heap slot and returns its table.
///
/// # Safety
/// Call at most once per process, before any use of a table it returns, and make the table
/// visible to other threads only with release ordering (or a lock) after this returns.
pub unsafe fn install(sel: &Selection) -> &'static Ops {
    let install = sel.heap_policies().visit(Installer);
    // SAFETY: forwarded contract; the options are the selection's, with the remote-free
    // choice that `heap_policies` left to them.
    unsafe { install(sel.heap_options()) }
}

/// The installer of the `Heap<Checked<R, A, F>>` a selection names: a function pointer, so
/// that choosing it stays safe and only calling it carries `install`'s contract.
struct Installer;

impl Visit for Installer {
    type Output = unsafe fn(Options) -> &'static Ops;

    fn visit<R: RunReuse, A: ArenaChoice, F: FrontEnd>(self) -> Self::Output {
        OpsOf::<Checked<R, A, F>>::install
    }
}

/// Builds a `Heap<C>` in the process's one heap slot and returns its table: the heap of a
/// library built for one config (`export!(C)`).
///
/// # Safety
/// As for [`install`].
pub unsafe fn install_config<C: Config>(options: Options) -> &'static Ops {
    // SAFETY: forwarded contract.
    unsafe { OpsOf::<C>::install_named(options) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the heap a selection would install names its policies (without installing it: a
    /// process has one heap slot).
    struct Describe;
    impl Visit for Describe {
        type Output = fn(bool, &mut dyn fmt::Write) -> fmt::Result;
        fn visit<R: RunReuse, A: ArenaChoice, F: FrontEnd>(self) -> Self::Output {
            OpsOf::<Checked<R, A, F>>::describe_as
        }
    }

    /// The type of the heap a selection would install.
    struct TypeName;
    impl Visit for TypeName {
        type Output = &'static str;
        fn visit<R: RunReuse, A: ArenaChoice, F: FrontEnd>(self) -> Self::Output {
            core::any::type_name::<Checked<R, A, F>>()
        }
    }

    #[test]
    fn every_name_in_the_catalogue_selects_a_heap_of_those_policies() {
        // Imported here: the dispatch benchmark compiles this file without its tests.
        use alloclab_policies::configs::{ARENAS, REMOTE, REUSE};
        let mut selections = 0;
        let mut types = std::collections::BTreeSet::new();
        for (reuse_name, reuse) in REUSE {
            for current_run in [false, true] {
                for (arenas_name, arenas) in ARENAS {
                    // No cache, then a cache with each remote-free policy.
                    let fronts = [(false, Remote::Flush)]
                        .into_iter()
                        .chain(REMOTE.iter().map(|&(_, r)| (true, r)));
                    for (tcache, remote) in fronts {
                        let sel = Selection {
                            reuse,
                            current_run,
                            arenas,
                            tcache,
                            remote,
                            options: Options::DEFAULT,
                        };
                        let mut described = String::new();
                        let mailbox = sel.heap_options().remote_mailbox;
                        (sel.heap_policies().visit(Describe))(mailbox, &mut described).unwrap();
                        let expected = format!(
                            "reuse {reuse_name}{}, arenas {arenas_name}{}{}",
                            if current_run { "+current-run" } else { "" },
                            if tcache { ", front thread-cache" } else { "" },
                            if tcache && remote == Remote::Mailbox {
                                ", remote mailbox"
                            } else {
                                ""
                            }
                        );
                        assert_eq!(described, expected, "{sel:?}");
                        selections += 1;
                        types.insert(sel.heap_policies().visit(TypeName));
                    }
                }
            }
        }
        assert_eq!(selections, 90);
        // Each remote-free policy of a cache config is the same heap type (chosen at run time
        // by `Options::remote_mailbox`): 30 configs without a cache, 30 with one.
        assert_eq!(types.len(), 60, "{types:#?}");
    }
}
