//! The C allocation functions' semantics, one internal function per exported symbol.
//!
//! `exports.rs` only forwards to these, so a wrapper (an allocation log, say) can sit between
//! the symbol and its semantics. Here: `errno`, argument checks, overflow, the glibc-compatible
//! corner cases, and the one-line abort for pointers the heap does not own. The heap itself is
//! reached through `init::ops()`.

use crate::init::{ops, zero_realloc_allocates};
use alloclab_core::report::fatal;
use alloclab_core::size_class::{PAGE, QUANTUM};
use core::ffi::{c_int, c_void};
use core::ptr;

fn set_errno(code: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno, always valid.
    unsafe { *libc::__errno_location() = code };
}

/// `p`, with `errno = ENOMEM` if it is null.
#[inline(always)]
fn enomem_if_null(p: *mut u8) -> *mut c_void {
    if p.is_null() {
        set_errno(libc::ENOMEM);
    }
    p.cast()
}

/// An aligned allocation, with `errno = ENOMEM` on failure.
#[inline(always)]
fn allocate(size: usize, align: usize) -> *mut c_void {
    enomem_if_null((ops().allocate)(size, align, false))
}

/// `malloc`: 16-byte aligned; 0 bytes gives a unique pointer.
#[inline]
pub fn malloc(size: usize) -> *mut c_void {
    // The table's `malloc` sets `ENOMEM` itself, so that this is a tail call.
    (ops().malloc)(size).cast()
}

/// `calloc`: NULL with `ENOMEM` if `n * size` overflows.
#[inline]
pub fn calloc(n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        Some(total) => enomem_if_null((ops().malloc_zeroed)(total)),
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

/// `free`: NULL is ignored; a pointer the heap did not hand out aborts with one line.
/// `errno` is preserved (POSIX.1-2024 requires it; glibc does it since 2.33): a contended lock
/// or a purge may make system calls that set it.
///
/// # Safety
/// `p` is null or a live allocation that nothing uses afterwards.
#[inline]
pub unsafe fn free(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: forwarded contract; the table's `free` keeps `errno`.
        unsafe { (ops().free)(p.cast()) };
    }
}

/// `realloc`: NULL allocates; size 0 frees and returns NULL (glibc), unless
/// `zero_realloc:alloc`; on failure NULL with `ENOMEM` and the block intact. On success
/// `errno` is as it was (a failed in-place `mremap` before a successful move sets it).
///
/// # Safety
/// `p` is null or a live allocation, not used afterwards unless NULL is returned.
#[inline]
pub unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        return malloc(size);
    }
    if size == 0 && !zero_realloc_allocates() {
        // SAFETY: forwarded contract.
        unsafe { free(p) };
        return ptr::null_mut();
    }
    // SAFETY: as in `free`; the table's `realloc` keeps `errno` or sets `ENOMEM` itself.
    unsafe { (ops().realloc)(p.cast(), size).cast() }
}

/// `reallocarray`: `realloc(p, n * size)`, or NULL with `ENOMEM` (block intact) on overflow.
///
/// # Safety
/// As for [`realloc`].
pub unsafe fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: forwarded contract.
        Some(total) => unsafe { realloc(p, total) },
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

/// `posix_memalign`: `EINVAL` unless `align` is a power of two multiple of `sizeof(void *)`;
/// `ENOMEM` if out of memory; `*out` is written only on success.
///
/// # Safety
/// `out` is valid for writing a pointer.
pub unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || align % core::mem::size_of::<*mut c_void>() != 0 {
        return libc::EINVAL;
    }
    let p = (ops().allocate)(size, align.max(QUANTUM), false);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: per the contract.
    unsafe { out.write(p.cast()) };
    0
}

/// `aligned_alloc`: NULL with `EINVAL` unless `align` is a power of two (C17: any size).
pub fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    allocate(size, align.max(QUANTUM))
}

/// `memalign` (glibc's rules): an alignment that is not a power of two is rounded up to one;
/// NULL with `EINVAL` if that overflows.
pub fn memalign(align: usize, size: usize) -> *mut c_void {
    match align.max(QUANTUM).checked_next_power_of_two() {
        Some(a) => allocate(size, a),
        None => {
            set_errno(libc::EINVAL);
            ptr::null_mut()
        }
    }
}

/// `valloc`: page-aligned.
pub fn valloc(size: usize) -> *mut c_void {
    allocate(size, PAGE)
}

/// `pvalloc`: page-aligned, the size rounded up to whole pages (at least one); NULL with
/// `ENOMEM` if rounding overflows.
pub fn pvalloc(size: usize) -> *mut c_void {
    match size.max(1).checked_next_multiple_of(PAGE) {
        Some(rounded) => allocate(rounded, PAGE),
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

/// `malloc_usable_size`: 0 for NULL; aborts with one line on a pointer that is not a live
/// allocation of the heap.
pub fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    match (ops().usable_size)(p.cast()) {
        Ok(n) => n,
        Err(e) => fatal(format_args!(
            "malloc_usable_size({:#x}): {}",
            p as usize,
            e.in_use()
        )),
    }
}

/// C23 `free_sized`: `free`, after checking that `size` fits the allocation (a larger size is
/// the caller's bug: abort with one line rather than free the wrong thing silently).
///
/// # Safety
/// As for [`free`].
pub unsafe fn free_sized(p: *mut c_void, size: usize) {
    if p.is_null() {
        return;
    }
    check_size("free_sized", p, size);
    // SAFETY: forwarded contract.
    unsafe { free(p) }
}

/// C23 `free_aligned_sized`: `free_sized`, also checking that `p` has the alignment.
///
/// # Safety
/// As for [`free`].
pub unsafe fn free_aligned_sized(p: *mut c_void, align: usize, size: usize) {
    if p.is_null() {
        return;
    }
    if !align.is_power_of_two() || (p as usize) % align != 0 {
        fatal(format_args!(
            "free_aligned_sized({:#x}, {}, {}): not an allocation with that alignment",
            p as usize, align, size
        ));
    }
    check_size("free_aligned_sized", p, size);
    // SAFETY: forwarded contract.
    unsafe { free(p) }
}

fn check_size(func: &str, p: *mut c_void, size: usize) {
    match (ops().usable_size)(p.cast()) {
        Ok(usable) if size <= usable => {}
        Ok(usable) => fatal(format_args!(
            "{}({:#x}, {}): the allocation holds only {} bytes",
            func, p as usize, size, usable
        )),
        Err(e) => fatal(format_args!("{}({:#x}): {}", func, p as usize, e)),
    }
}
