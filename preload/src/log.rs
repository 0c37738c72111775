//! The allocation log (`log:<path>`): each exported C entry point, as `entry.rs` gives it,
//! plus its line. `exports.rs` calls these.
//!
//! Each entry point tests one flag (`log_sink::route`) and, when logging is off, is exactly
//! `entry.rs`'s (one load and one predictable branch more, measured by `benches/dispatch.rs`);
//! the logging path is a separate, out-of-line function per entry point (`logged` below), so
//! that the fast path keeps no argument alive across the call. Lines are logalloc's
//! (`log_line.rs`); entry points logalloc does not have are logged as the call they are:
//!
//! - `malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`, `valloc`, `free`:
//!   themselves, failures included (result `0x0`), `free(0x0)` too, as logalloc does;
//! - `memalign`: itself, with the alignment it serves (one that is not a power of two is
//!   rounded up to one, glibc's rule; a trace holds powers of two only);
//! - `reallocarray(p, n, size)`: `realloc(p,<n * size>)`; nothing if `n * size` overflows
//!   (the heap is not called);
//! - `pvalloc(size)`: `valloc(<size rounded up to whole pages>)`, what it allocates;
//! - `free_sized`, `free_aligned_sized`: `free(p)`;
//! - `malloc_usable_size`: nothing (it changes nothing; logalloc does not log it either);
//! - glibc's `__libc_malloc` family: as the function of the same name.
//!
//! Order (see `log_sink.rs`): an allocation is logged after it returns, a free before it
//! happens, and a `realloc` of a live block holds the log's lock across the call, so that no
//! other thread can log its address being handed out again before this line. Logging keeps
//! `errno` as the call left it.

use crate::entry;
use crate::log_line::Call;
use crate::log_sink::{self, on, route};
use alloclab_core::size_class::PAGE;
use core::ffi::{c_int, c_void};

/// The calling thread's `errno`.
fn errno_location() -> *mut c_int {
    // SAFETY: `__errno_location` has no preconditions.
    unsafe { libc::__errno_location() }
}

/// Logs `call`, which returned `result`, keeping `errno`.
#[cold]
#[inline(never)]
fn record(call: Call, result: *mut c_void) {
    let e = errno_location();
    // SAFETY: `e` is this thread's errno, valid for the thread's life.
    let saved = unsafe { *e };
    let me = log_sink::me();
    let line = call.line(me.prefix(), result as usize);
    log_sink::append(&me, line.as_bytes());
    // SAFETY: as above.
    unsafe { *e = saved };
}

/// A `realloc` of the live block `p` (`call` does it), logged as `realloc(p,size)` with the
/// log's lock held across the call.
#[cold]
#[inline(never)]
fn record_realloc(p: *mut c_void, size: usize, call: impl FnOnce() -> *mut c_void) -> *mut c_void {
    let e = errno_location();
    // SAFETY: `e` is this thread's errno, valid for the thread's life.
    let before = unsafe { *e };
    let me = log_sink::me();
    let mut held = log_sink::Held::take_as(me.tid);
    // Taking a contended lock may set errno: the call must find it as the program left it.
    // SAFETY: as above.
    unsafe { *e = before };
    let q = call();
    // SAFETY: as above.
    let after = unsafe { *e };
    let line = Call::Realloc(p as usize, size).line(me.prefix(), q as usize);
    held.append(line.as_bytes());
    drop(held);
    // SAFETY: as above.
    unsafe { *e = after };
    q
}

/// Forwards to `logged::$name` if calls take the logging path, else to `entry::$name`.
macro_rules! entry_point {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name($($arg: $ty),*) -> $ret {
            if route() {
                return logged::$name($($arg),*);
            }
            entry::$name($($arg),*)
        }
    };
    ($(#[$doc:meta])* unsafe fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("As for [`entry::", stringify!($name), "`].")]
        #[inline(always)]
        pub unsafe fn $name($($arg: $ty),*) -> $ret {
            if route() {
                // SAFETY: forwarded contract.
                return unsafe { logged::$name($($arg),*) };
            }
            // SAFETY: forwarded contract.
            unsafe { entry::$name($($arg),*) }
        }
    };
}

entry_point!(/** `malloc`. */ fn malloc(size: usize) -> *mut c_void);
entry_point!(/** `calloc`. */ fn calloc(n: usize, size: usize) -> *mut c_void);
entry_point!(/** `free`. */ unsafe fn free(p: *mut c_void) -> ());
entry_point!(/** `realloc`. */ unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void);
entry_point!(
    /** `reallocarray`. */
    unsafe fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void
);
entry_point!(
    /** `posix_memalign`. */
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int
);
entry_point!(/** `aligned_alloc`. */ fn aligned_alloc(align: usize, size: usize) -> *mut c_void);
entry_point!(/** `memalign`. */ fn memalign(align: usize, size: usize) -> *mut c_void);
entry_point!(/** `valloc`. */ fn valloc(size: usize) -> *mut c_void);
entry_point!(/** `pvalloc`. */ fn pvalloc(size: usize) -> *mut c_void);
entry_point!(/** `free_sized`. */ unsafe fn free_sized(p: *mut c_void, size: usize) -> ());
entry_point!(
    /** `free_aligned_sized`. */
    unsafe fn free_aligned_sized(p: *mut c_void, align: usize, size: usize) -> ()
);

/// `malloc_usable_size` (not logged).
#[inline(always)]
pub fn malloc_usable_size(p: *mut c_void) -> usize {
    entry::malloc_usable_size(p)
}

/// The entry points with their lines: out of line, reached only while logging is on (or
/// before start-up has decided, when `on()` tells).
mod logged {
    use super::*;

    #[cold]
    #[inline(never)]
    pub fn malloc(size: usize) -> *mut c_void {
        let p = entry::malloc(size);
        if on() {
            record(Call::Malloc(size), p);
        }
        p
    }

    #[cold]
    #[inline(never)]
    pub fn calloc(n: usize, size: usize) -> *mut c_void {
        let p = entry::calloc(n, size);
        if on() {
            record(Call::Calloc(n, size), p);
        }
        p
    }

    /// # Safety
    /// As for [`entry::free`].
    #[cold]
    #[inline(never)]
    pub unsafe fn free(p: *mut c_void) {
        if on() {
            record(Call::Free(p as usize), p);
        }
        // SAFETY: forwarded contract.
        unsafe { entry::free(p) }
    }

    /// # Safety
    /// As for [`entry::realloc`].
    #[cold]
    #[inline(never)]
    pub unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        if on() && !p.is_null() {
            // SAFETY: forwarded contract.
            return record_realloc(p, size, || unsafe { entry::realloc(p, size) });
        }
        // SAFETY: forwarded contract.
        let q = unsafe { entry::realloc(p, size) };
        if on() && p.is_null() {
            record(Call::Realloc(0, size), q);
        }
        q
    }

    /// # Safety
    /// As for [`entry::reallocarray`].
    #[cold]
    #[inline(never)]
    pub unsafe fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
        let total = match n.checked_mul(size) {
            Some(total) if on() => total,
            // SAFETY: forwarded contract (an overflow fails without calling the heap).
            _ => return unsafe { entry::reallocarray(p, n, size) },
        };
        if p.is_null() {
            // SAFETY: forwarded contract.
            let q = unsafe { entry::reallocarray(p, n, size) };
            record(Call::Realloc(0, total), q);
            return q;
        }
        // SAFETY: forwarded contract.
        record_realloc(p, total, || unsafe { entry::reallocarray(p, n, size) })
    }

    /// # Safety
    /// As for [`entry::posix_memalign`].
    #[cold]
    #[inline(never)]
    pub unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        // SAFETY: forwarded contract.
        let r = unsafe { entry::posix_memalign(out, align, size) };
        if on() {
            let p = if r == 0 {
                // SAFETY: on success `entry::posix_memalign` wrote the block to `out`, which
                // the caller made valid for a pointer.
                unsafe { *out }
            } else {
                core::ptr::null_mut()
            };
            record(Call::PosixMemalign(align, size), p);
        }
        r
    }

    #[cold]
    #[inline(never)]
    pub fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        let p = entry::aligned_alloc(align, size);
        if on() {
            record(Call::AlignedAlloc(align, size), p);
        }
        p
    }

    #[cold]
    #[inline(never)]
    pub fn memalign(align: usize, size: usize) -> *mut c_void {
        let p = entry::memalign(align, size);
        if on() {
            let served = if p.is_null() {
                align
            } else {
                align.checked_next_power_of_two().unwrap_or(align)
            };
            record(Call::Memalign(served, size), p);
        }
        p
    }

    #[cold]
    #[inline(never)]
    pub fn valloc(size: usize) -> *mut c_void {
        let p = entry::valloc(size);
        if on() {
            record(Call::Valloc(size), p);
        }
        p
    }

    #[cold]
    #[inline(never)]
    pub fn pvalloc(size: usize) -> *mut c_void {
        let p = entry::pvalloc(size);
        if on() {
            let rounded = size.max(1).checked_next_multiple_of(PAGE).unwrap_or(size);
            record(Call::Valloc(rounded), p);
        }
        p
    }

    /// # Safety
    /// As for [`entry::free_sized`].
    #[cold]
    #[inline(never)]
    pub unsafe fn free_sized(p: *mut c_void, size: usize) {
        if on() {
            record(Call::Free(p as usize), p);
        }
        // SAFETY: forwarded contract.
        unsafe { entry::free_sized(p, size) }
    }

    /// # Safety
    /// As for [`entry::free_aligned_sized`].
    #[cold]
    #[inline(never)]
    pub unsafe fn free_aligned_sized(p: *mut c_void, align: usize, size: usize) {
        if on() {
            record(Call::Free(p as usize), p);
        }
        // SAFETY: forwarded contract.
        unsafe { entry::free_aligned_sized(p, align, size) }
    }
}

/// `_exit` and `_Exit`: the log written out, then the process ends as glibc's `_exit` ends it.
pub fn exit_now(status: c_int) -> ! {
    log_sink::before_exit();
    loop {
        // SAFETY: exit_group ends every thread of the process; it does not return.
        unsafe { libc::syscall(libc::SYS_exit_group, status) };
    }
}
