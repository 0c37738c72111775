//! C++ `operator new` and `operator delete`: the semantics behind the mangled symbols that
//! `export!` exports (every variant: plain, array, nothrow, sized, aligned).
//!
//! Without these, libstdc++'s operators would call `malloc` and `free` anyway, but a sized
//! `delete` could not be checked. Allocations are made and logged as the C calls they are
//! (`malloc`, `memalign`, `free`), so an allocation log shows them.
//!
//! Failure, as the C++ standard says: `new` calls the installed new-handler
//! (`std::get_new_handler`, looked up with `dlsym` the first time memory runs out) and tries
//! again, until the handler is null; then it throws `std::bad_alloc`. Rust cannot throw, and
//! a C++ exception must not cross a Rust frame (the release build, which aborts on panic,
//! aborts when one does). So the loop that calls the handler and throws is a few lines of
//! assembly with its own unwind information (`alloclab_new_loop`), which the exported `new`
//! symbols jump to, leaving no Rust frame on the stack; the exception is made and thrown
//! through libstdc++'s own ABI (`__cxa_allocate_exception`, `__cxa_throw`, `std::bad_alloc`'s
//! type information and vtable), found with `dlsym`. If those are missing (no libstdc++ in
//! the process), the process aborts with one line: "out of memory in operator new". x86-64
//! only: elsewhere the C++ symbols are not exported, and libstdc++'s own operators call our
//! `malloc` and `free`.
//!
//! The `nothrow` forms return null when memory runs out, without calling the new-handler (a
//! handler may throw, and that exception could not be caught here to return null instead).
//!
//! In the hardened and debug profiles a sized `delete` checks that the size is one the
//! allocation could have been requested with (`Heap::size_fits`) and aborts with one line if
//! not; in the default profile the size is not looked at, as glibc does.

use crate::init::{check_sized_delete, ops};
use crate::log;
use alloclab_core::report::fatal;
use alloclab_core::size_class::QUANTUM;
use core::ffi::{c_char, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

/// A C++ new-handler.
type NewHandler = extern "C" fn();

/// Looks up `name` (NUL-terminated) in the process, once; 0 if absent.
fn lookup(cache: &AtomicUsize, name: &[u8]) -> usize {
    const UNRESOLVED: usize = 1;
    let v = cache.load(Ordering::Acquire);
    if v != UNRESOLVED {
        return v;
    }
    // SAFETY: `name` is NUL-terminated (the callers' literals); RTLD_DEFAULT searches the
    // global scope. Called only when memory ran out, outside every lock of ours.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr() as *const c_char) } as usize;
    cache.store(p, Ordering::Release);
    p
}

macro_rules! symbol {
    ($name:literal) => {{
        static CACHE: AtomicUsize = AtomicUsize::new(1);
        lookup(&CACHE, concat!($name, "\0").as_bytes())
    }};
}

/// The new-loop's allocation attempt: an allocation, or null.
extern "C" fn loop_try(size: usize, align: usize) -> *mut c_void {
    try_new(size, align)
}

/// The installed new-handler (`std::get_new_handler()`), or null.
extern "C" fn loop_handler() -> Option<NewHandler> {
    let get = symbol!("_ZSt15get_new_handlerv");
    if get == 0 {
        return None;
    }
    // SAFETY: `std::get_new_handler()` has this signature in the Itanium C++ ABI.
    let get: extern "C" fn() -> Option<NewHandler> = unsafe { core::mem::transmute(get) };
    get()
}

/// Makes a `std::bad_alloc` for `new(size)` to throw: writes the exception object, its type
/// information, its destructor and `__cxa_throw` to `out`; aborts with one line if
/// libstdc++'s functions are not in the process.
extern "C" fn loop_bad_alloc(size: usize, out: *mut [usize; 4]) {
    let allocate = symbol!("__cxa_allocate_exception");
    let throw = symbol!("__cxa_throw");
    let type_info = symbol!("_ZTISt9bad_alloc");
    let vtable = symbol!("_ZTVSt9bad_alloc");
    let destructor = symbol!("_ZNSt9bad_allocD1Ev");
    if [allocate, throw, type_info, vtable, destructor].contains(&0) {
        fatal(format_args!(
            "out of memory in operator new({size}), and std::bad_alloc cannot be thrown (no libstdc++ in the process)"
        ));
    }
    // SAFETY: the Itanium C++ ABI: `__cxa_allocate_exception(size)` returns room for the
    // exception object (from an emergency pool if need be); a `std::bad_alloc` is one pointer,
    // its vtable pointer, which points two words into the vtable symbol (past the offset to
    // top and the type information). `out` is the caller's four words.
    unsafe {
        let allocate: extern "C" fn(usize) -> *mut usize = core::mem::transmute(allocate);
        let object = allocate(core::mem::size_of::<usize>());
        object.write(vtable + 2 * core::mem::size_of::<usize>());
        out.write([object as usize, type_info, destructor, throw]);
    }
}

// The throwing `new` (`new_loop(size in rdi, align in rsi)`), in assembly with its own unwind
// information: the new-handler may throw, and `std::bad_alloc` is thrown from here, and a
// C++ exception must not cross a Rust frame (the release build aborts when one does, since
// it aborts on panic). The exported `new` symbols jump here, so that no Rust frame is on the
// stack while the handler or `__cxa_throw` runs; the exception passes through this frame, which
// has no handler, to the program's.
//
//   loop: p = loop_try(size, align); if p: return p
//         h = loop_handler(); if !h: break; h()
//   loop_bad_alloc(size, &words); __cxa_throw(words[0], words[1], words[2])
#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .text.alloclab_new_loop,\"ax\",@progbits",
    ".p2align 4",
    ".globl alloclab_new_loop",
    ".hidden alloclab_new_loop",
    ".type alloclab_new_loop,@function",
    "alloclab_new_loop:",
    ".cfi_startproc",
    "push r12",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_offset r12, -16",
    "push r13",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_offset r13, -24",
    // Four words for `loop_bad_alloc`, and the stack 16-aligned at each call.
    "sub rsp, 40",
    ".cfi_adjust_cfa_offset 40",
    "mov r12, rdi",
    "mov r13, rsi",
    "2:",
    "mov rdi, r12",
    "mov rsi, r13",
    "call {try_}",
    "test rax, rax",
    "jnz 4f",
    "call {handler}",
    "test rax, rax",
    "jz 3f",
    "call rax",
    "jmp 2b",
    "3:",
    "mov rdi, r12",
    "mov rsi, rsp",
    "call {bad_alloc}",
    "mov rdi, [rsp]",
    "mov rsi, [rsp + 8]",
    "mov rdx, [rsp + 16]",
    "call qword ptr [rsp + 24]",
    "ud2",
    "4:",
    "add rsp, 40",
    ".cfi_adjust_cfa_offset -40",
    "pop r13",
    ".cfi_adjust_cfa_offset -8",
    ".cfi_restore r13",
    "pop r12",
    ".cfi_adjust_cfa_offset -8",
    ".cfi_restore r12",
    "ret",
    ".cfi_endproc",
    ".size alloclab_new_loop, . - alloclab_new_loop",
    ".popsection",
    try_ = sym loop_try,
    handler = sym loop_handler,
    bad_alloc = sym loop_bad_alloc,
);

/// Jumps to the throwing `new` loop with `size` and `align` (0: the default alignment). Only
/// for the body of an exported `new`: the jump replaces the caller's frame, so the function
/// that calls this must consist of this call alone (it then has no frame to replace: no
/// locals, no saved registers).
#[doc(hidden)]
#[macro_export]
macro_rules! __alloclab_tail_new {
    ($size:expr, $align:expr) => {
        // SAFETY: `alloclab_new_loop` takes size and alignment in the first two argument
        // registers and returns like a C function to our caller (the return address is the
        // only thing on the stack: see the macro's documentation).
        unsafe {
            core::arch::asm!(
                "jmp alloclab_new_loop",
                in("rdi") $size,
                in("rsi") $align,
                options(noreturn, nostack)
            )
        }
    };
}

/// `new (std::nothrow)`: null when memory runs out.
#[inline]
pub fn try_new(size: usize, align: usize) -> *mut c_void {
    if align <= QUANTUM {
        log::malloc(size)
    } else {
        log::memalign(align, size)
    }
}

/// `delete`.
///
/// # Safety
/// `p` is null or a live allocation of `new`, not used afterwards.
#[inline]
pub unsafe fn delete(p: *mut c_void) {
    // SAFETY: forwarded contract.
    unsafe { log::free(p) }
}

/// Sized `delete`: in the hardened profiles, aborts with one line if `size` (and `align`) is
/// not a size the allocation could have been requested with.
///
/// # Safety
/// As for [`delete`].
#[inline]
pub unsafe fn delete_sized(p: *mut c_void, size: usize, align: usize) {
    if check_sized_delete() && !p.is_null() {
        match (ops().size_fits)(p.cast(), size, align) {
            Ok(true) => {}
            Ok(false) => fatal(format_args!(
                "operator delete({:#x}, {}): the size is not the allocation's (its usable size is {})",
                p as usize,
                size,
                (ops().usable_size)(p.cast()).unwrap_or(0)
            )),
            Err(e) => fatal(format_args!("operator delete({:#x}): {}", p as usize, e)),
        }
    }
    // SAFETY: forwarded contract.
    unsafe { log::free(p) }
}
