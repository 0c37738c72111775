//! The process's `SIGSEGV` handler: a fault in memory a heap made inaccessible on purpose is
//! reported before the process dies, in one place for every kind of such memory (sampled
//! slots and their guards, guard pages after large allocations, large allocations held in the
//! quarantine, `malloc(0)` slots).
//!
//! Owners of such memory register themselves with a function that recognizes an address and
//! prints the report. The handler asks each in turn, then puts the handler that was there
//! before back and returns, so that the faulting access repeats and the process ends as it
//! would have without us (killed by `SIGSEGV`, or handled by the program's own handler, which
//! is also called at once for a fault none of the owners recognizes). It is installed only
//! when the first owner registers: a heap without guard pages leaves the program's signals
//! alone. Everything the handler reaches is async-signal-safe: atomic loads, reads of the
//! heap's page entries and records (without their locks: the faulting thread is stopped here,
//! others may still run, so a report may read a record being changed; it decides nothing), and
//! `write(2)`.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Recognizes `addr` as a fault in `owner`'s memory and prints its report (true), or says
/// it is not (false).
///
/// # Safety
/// Called only from the fault handler, with the `owner` it was registered with, while that
/// owner is registered.
pub(crate) type Explain = unsafe fn(owner: *const (), addr: usize) -> bool;

/// Owners registered at once, at most.
const OWNERS: usize = 16;

static OWNER: [AtomicPtr<()>; OWNERS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; OWNERS];
static EXPLAIN: [AtomicUsize; OWNERS] = [const { AtomicUsize::new(0) }; OWNERS];

/// Registers `owner` (installing the handler on first use); false if every place is taken
/// (its faults then go unexplained, and still kill the process).
pub(crate) fn register(owner: *const (), explain: Explain) -> bool {
    for (o, e) in OWNER.iter().zip(EXPLAIN.iter()) {
        let claimed = o
            .compare_exchange(
                core::ptr::null_mut(),
                owner as *mut (),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if claimed {
            e.store(explain as usize, Ordering::Release);
            install();
            return true;
        }
    }
    false
}

/// Forgets `owner` (before its memory goes away).
pub(crate) fn unregister(owner: *const ()) {
    for (o, e) in OWNER.iter().zip(EXPLAIN.iter()) {
        if core::ptr::eq(o.load(Ordering::Acquire), owner) {
            e.store(0, Ordering::Release);
            o.store(core::ptr::null_mut(), Ordering::Release);
        }
    }
}

/// The handler that was installed before ours.
static mut PREVIOUS: core::mem::MaybeUninit<libc::sigaction> = core::mem::MaybeUninit::zeroed();

fn install() {
    static ONCE: AtomicBool = AtomicBool::new(false);
    if ONCE.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: a zeroed `sigaction` is valid; `PREVIOUS` is written here once, before the
    // handler can run (it is installed by this same call).
    unsafe {
        let mut sa: libc::sigaction = core::mem::zeroed();
        sa.sa_sigaction =
            on_fault as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGSEGV, &sa, core::ptr::addr_of_mut!(PREVIOUS).cast());
    }
}

extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for SIGSEGV.
    let addr = unsafe { (*info).si_addr() } as usize;
    for (o, e) in OWNER.iter().zip(EXPLAIN.iter()) {
        let owner = o.load(Ordering::Acquire);
        let explain = e.load(Ordering::Acquire);
        if owner.is_null() || explain == 0 || o.load(Ordering::Acquire) != owner {
            continue;
        }
        // SAFETY: `explain` was stored from an `Explain` for this owner, which is still
        // registered (its place holds it, and registration writes the function after it).
        let explain: Explain = unsafe { core::mem::transmute::<usize, Explain>(explain) };
        // SAFETY: from the fault handler, with its own owner.
        if unsafe { explain(owner, addr) } {
            break;
        }
    }
    // Give the fault to the previous handler: back in place, the faulting access repeats.
    // SAFETY: `PREVIOUS` was written before this handler was installed.
    unsafe {
        let prev = &*core::ptr::addr_of!(PREVIOUS).cast::<libc::sigaction>();
        if prev.sa_flags & libc::SA_SIGINFO != 0 && prev.sa_sigaction > 1 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                core::mem::transmute(prev.sa_sigaction);
            f(sig, info, ctx);
        } else {
            libc::sigaction(libc::SIGSEGV, prev, core::ptr::null_mut());
        }
    }
}
