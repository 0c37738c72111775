//! The memory side of the debug options: filling freed and new memory, checking fills and
//! canaries, and the one-line reports when a check fails (see `safety.rs` for the options).
//!
//! A canary sits after the requested bytes of a small region: canary bytes (`0xca`) up to the
//! region's last two bytes, which hold the requested size (XOR a constant, so that zeros or
//! poison there read as a corrupted size). The heap asks the size class for
//! `size + CANARY_BYTES`, so every region with a canary has at least one canary byte.

use crate::report::fatal;
use crate::safety::{CANARY_BYTE, CANARY_BYTES};
use core::ptr;

/// XORed into the stored size.
const SIZE_KEY: u16 = 0x5a3c;

/// Fills `len` bytes at `addr` with `byte`.
///
/// # Safety
/// The range is writable memory the caller owns.
#[inline]
pub unsafe fn fill(addr: usize, len: usize, byte: u8) {
    // SAFETY: per the contract.
    unsafe { ptr::write_bytes(addr as *mut u8, byte, len) };
}

/// The offset of the first of `len` bytes at `addr` that is not `byte`.
///
/// # Safety
/// The range is readable memory the caller owns.
unsafe fn first_not(addr: usize, len: usize, byte: u8) -> Option<usize> {
    let word = usize::from_ne_bytes([byte; core::mem::size_of::<usize>()]);
    let mut off = 0;
    // Word at a time where aligned: the check runs on every reuse.
    while off < len && (addr + off) % core::mem::size_of::<usize>() != 0 {
        // SAFETY: inside the range.
        if unsafe { *((addr + off) as *const u8) } != byte {
            return Some(off);
        }
        off += 1;
    }
    while off + core::mem::size_of::<usize>() <= len {
        // SAFETY: an aligned word inside the range.
        if unsafe { *((addr + off) as *const usize) } != word {
            break;
        }
        off += core::mem::size_of::<usize>();
    }
    while off < len {
        // SAFETY: inside the range.
        if unsafe { *((addr + off) as *const u8) } != byte {
            return Some(off);
        }
        off += 1;
    }
    None
}

/// Checks that the first `len` bytes of the freed region at `addr` (of size class `class`)
/// still hold `byte`; aborts with "write after free" naming the address written otherwise.
///
/// # Safety
/// The region is readable memory of the heap that nothing else uses.
#[inline]
pub unsafe fn check_fill(addr: usize, class: usize, byte: u8, len: usize) {
    // SAFETY: per the contract.
    if let Some(off) = unsafe { first_not(addr, len, byte) } {
        write_after_free(addr, class, off);
    }
}

#[cold]
fn write_after_free(addr: usize, class: usize, off: usize) -> ! {
    fatal(format_args!(
        "write after free at {:#x}: byte {} of the freed region at {:#x} (size class {}) was changed",
        addr + off,
        off,
        addr,
        class
    ))
}

/// Writes the canary of a region of `usable` bytes at `addr` that holds `size` requested bytes
/// (`size + CANARY_BYTES <= usable`).
///
/// # Safety
/// The region is writable memory the caller owns.
#[inline]
pub unsafe fn write_canary(addr: usize, size: usize, usable: usize) {
    debug_assert!(size + CANARY_BYTES <= usable && usable <= u16::MAX as usize);
    // SAFETY: per the contract, `size..usable` lies in the region.
    unsafe {
        fill(addr + size, usable - 2 - size, CANARY_BYTE);
        ptr::write_unaligned((addr + usable - 2) as *mut u16, size as u16 ^ SIZE_KEY);
    }
}

/// The requested size a region's canary records; `None` if the size field is corrupted.
///
/// # Safety
/// The region (of `usable` bytes, with a canary) is readable memory of the heap.
#[inline]
pub unsafe fn canary_size(addr: usize, usable: usize) -> Option<usize> {
    // SAFETY: per the contract.
    let size =
        (unsafe { ptr::read_unaligned((addr + usable - 2) as *const u16) } ^ SIZE_KEY) as usize;
    (size + CANARY_BYTES <= usable).then_some(size)
}

/// Checks the canary of the region at `addr` (of `usable` bytes), being freed; aborts with
/// "heap overflow" and the offset written otherwise.
///
/// # Safety
/// As for [`canary_size`].
#[inline]
pub unsafe fn check_canary(addr: usize, usable: usize) {
    // SAFETY: per the contract.
    let Some(size) = (unsafe { canary_size(addr, usable) }) else {
        heap_overflow(addr, usable - 2, None);
    };
    // SAFETY: per the contract; `size..usable - 2` lies in the region.
    if let Some(off) = unsafe { first_not(addr + size, usable - 2 - size, CANARY_BYTE) } {
        heap_overflow(addr, size + off, Some(size));
    }
}

#[cold]
fn heap_overflow(addr: usize, off: usize, size: Option<usize>) -> ! {
    match size {
        Some(size) => fatal(format_args!(
            "heap overflow: the allocation of {} bytes at {:#x} was written at offset {} ({} past its end), found when it was freed",
            size,
            addr,
            off,
            off - size + 1
        )),
        None => fatal(format_args!(
            "heap overflow: the allocation at {:#x} was written at offset {} (its canary's size field), found when it was freed",
            addr, off
        )),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn first_not_finds_the_first_difference_at_any_alignment() {
        let mut buf = [7u8; 100];
        for start in 0..9 {
            for bad in start..100 {
                buf[bad] = 8;
                let a = buf.as_ptr() as usize + start;
                // SAFETY: inside `buf`.
                assert_eq!(unsafe { first_not(a, 100 - start, 7) }, Some(bad - start));
                buf[bad] = 7;
            }
            let a = buf.as_ptr() as usize + start;
            // SAFETY: inside `buf`.
            let found = unsafe { first_not(a, 100 - start, 7) };
            assert_eq!(found, None);
        }
    }

    #[test]
    fn canaries_record_the_size() {
        let mut buf = [0u8; 64];
        let a = buf.as_mut_ptr() as usize;
        for size in 0..=61 {
            // SAFETY: inside `buf`.
            unsafe {
                write_canary(a, size, 64);
                assert_eq!(canary_size(a, 64), Some(size));
                assert_eq!(first_not(a + size, 62 - size, CANARY_BYTE), None);
            }
        }
    }
}
