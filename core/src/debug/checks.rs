//! The memory side of the debug options: filling freed and new memory, checking fills and
//! canaries, and the one-line reports when a check fails (see `safety.rs` for the options).
//!
//! A canary sits after the requested bytes of a small region: one zero byte (so that a
//! string function reading past the end of a full buffer stops there instead of running into
//! the canary and leaking or miscounting it), canary bytes (`0xca`) up to the region's last
//! four bytes, and those four: the requested size twice, as two 16-bit fields under two keys
//! mixed with the region's address. The two fields must agree, so any change to the record,
//! down to one bit of either field, is caught; and since only one of the two decoded sizes
//! also fits the zero byte and canary bytes in front of it, the check names the byte that was
//! written. The heap asks the size class for `size + CANARY_BYTES`. A zero written just past
//! the end (a string's terminator, one byte too far) matches the zero byte and is not caught:
//! the price of the string stop.

use crate::platform::report::fatal;
use crate::policy::safety::{CANARY_BYTE, CANARY_BYTES};
use core::ptr;

/// The keys of the size record's two fields (mixed with the region's address).
const SIZE_KEY: u16 = 0x5a3c;
const CHECK_KEY: u16 = 0xc3a5;
/// Bytes of the size record at the region's end.
const RECORD: usize = 4;

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

/// Checks that the `len` bytes at `addr`, which the heap takes believing them zero, are
/// (`zero_check`); aborts with the first byte that is not, saying where the memory came from
/// (`what`: "purged page", "fresh chunk", ...) otherwise. Reading a page that was never touched
/// faults it in: the cost `zero_check: all` exists to show.
///
/// # Safety
/// The range is readable memory of the heap that nothing else uses.
#[inline]
pub unsafe fn check_zero(addr: usize, len: usize, what: &str) {
    // SAFETY: per the contract.
    if let Some(off) = unsafe { first_not(addr, len, 0) } {
        // SAFETY: `off` is inside the range.
        let byte = unsafe { *((addr + off) as *const u8) };
        not_zero(addr, len, off, byte, what);
    }
}

#[cold]
fn not_zero(addr: usize, len: usize, off: usize, byte: u8, what: &str) -> ! {
    fatal(format_args!(
        "memory that should be zero is not at {:#x}: byte {} of the {} of {} bytes at {:#x} is {:#04x} (written after it was freed, or the heap is corrupted)",
        addr + off,
        off,
        what,
        len,
        addr,
        byte
    ))
}

/// The size record for `size` in the region at `addr`: its four bytes as they are stored.
fn record(addr: usize, size: usize) -> [u8; RECORD] {
    let k = (addr >> 4) as u16;
    let [a0, a1] = (size as u16 ^ SIZE_KEY ^ k).to_ne_bytes();
    let [b0, b1] = (size as u16 ^ CHECK_KEY ^ k).to_ne_bytes();
    [a0, a1, b0, b1]
}

/// The two sizes the record of the region at `addr` (of `usable` bytes) decodes to.
///
/// # Safety
/// The region is readable memory of the heap.
unsafe fn decoded(addr: usize, usable: usize) -> (usize, usize) {
    let k = (addr >> 4) as u16;
    // SAFETY: per the contract, the record is the region's last four bytes.
    let [a0, a1, b0, b1] =
        unsafe { ptr::read_unaligned((addr + usable - RECORD) as *const [u8; RECORD]) };
    (
        (u16::from_ne_bytes([a0, a1]) ^ SIZE_KEY ^ k) as usize,
        (u16::from_ne_bytes([b0, b1]) ^ CHECK_KEY ^ k) as usize,
    )
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
        *((addr + size) as *mut u8) = 0;
        fill(addr + size + 1, usable - RECORD - size - 1, CANARY_BYTE);
        ptr::write_unaligned(
            (addr + usable - RECORD) as *mut [u8; RECORD],
            record(addr, size),
        );
    }
}

/// The requested size a region's canary records; `None` if the record is corrupted (its two
/// fields disagree, or name a size that does not fit).
///
/// # Safety
/// The region (of `usable` bytes, with a canary) is readable memory of the heap.
#[inline]
pub unsafe fn canary_size(addr: usize, usable: usize) -> Option<usize> {
    // SAFETY: per the contract.
    let (a, b) = unsafe { decoded(addr, usable) };
    (a == b && a + CANARY_BYTES <= usable).then_some(a)
}

/// The first byte from `size` on that is not the canary of a `size`-byte allocation in front
/// of its record (the zero byte, then canary bytes), as an offset in the region.
///
/// # Safety
/// As for [`canary_size`], with `size + CANARY_BYTES <= usable`.
unsafe fn first_written(addr: usize, usable: usize, size: usize) -> Option<usize> {
    // SAFETY: per the contract, `size..usable - RECORD` lies in the region.
    unsafe {
        if *((addr + size) as *const u8) != 0 {
            return Some(size);
        }
        first_not(addr + size + 1, usable - RECORD - size - 1, CANARY_BYTE).map(|o| size + 1 + o)
    }
}

/// Checks the canary of the region at `addr` (of `usable` bytes), being freed or reallocated
/// (`when`); aborts with "heap overflow" and the offset written otherwise.
///
/// # Safety
/// As for [`canary_size`].
#[inline]
pub unsafe fn check_canary(addr: usize, usable: usize, when: &str) {
    // SAFETY: per the contract.
    if let Some((off, size)) = unsafe { canary_damage(addr, usable) } {
        heap_overflow(addr, off, size, when);
    }
}

/// Where the canary of the region at `addr` (of `usable` bytes) was written: the offset of the
/// first changed byte, and the requested size when the record still tells it; `None` if the
/// canary is intact. When the record's fields disagree and one of them decodes to a size whose
/// zero byte and canary bytes are intact, that is the size, and the written byte is the first
/// of the record that differs from its encoding.
///
/// # Safety
/// As for [`canary_size`].
#[inline]
unsafe fn canary_damage(addr: usize, usable: usize) -> Option<(usize, Option<usize>)> {
    // SAFETY: per the contract.
    if let Some(size) = unsafe { canary_size(addr, usable) } {
        // SAFETY: `size + CANARY_BYTES <= usable` (checked by `canary_size`).
        return unsafe { first_written(addr, usable, size) }.map(|off| (off, Some(size)));
    }
    // SAFETY: per the contract.
    let (a, b) = unsafe { decoded(addr, usable) };
    for size in [a, b] {
        // SAFETY: per the contract; the size fits in front of the record.
        if size + CANARY_BYTES <= usable && unsafe { first_written(addr, usable, size) }.is_none() {
            // SAFETY: as in `decoded`.
            let stored =
                unsafe { ptr::read_unaligned((addr + usable - RECORD) as *const [u8; RECORD]) };
            let want = record(addr, size);
            let i = (0..RECORD).find(|&i| stored[i] != want[i]).unwrap_or(0);
            return Some((usable - RECORD + i, Some(size)));
        }
    }
    Some((usable - RECORD, None))
}

#[cold]
fn heap_overflow(addr: usize, off: usize, size: Option<usize>, when: &str) -> ! {
    match size {
        Some(size) => fatal(format_args!(
            "heap overflow: the allocation of {} bytes at {:#x} was written at offset {} ({} past its end), found when it was {}",
            size,
            addr,
            off,
            off - size + 1,
            when
        )),
        None => fatal(format_args!(
            "heap overflow: the allocation at {:#x} was written at offset {} (its canary's size record), found when it was {}",
            addr, off, when
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
    fn canaries_record_the_size_and_start_with_a_zero_byte() {
        let mut buf = [0u8; 64];
        let a = buf.as_mut_ptr() as usize;
        for size in 0..=64 - CANARY_BYTES {
            // SAFETY: inside `buf`.
            unsafe {
                write_canary(a, size, 64);
                assert_eq!(canary_size(a, 64), Some(size));
                assert_eq!(first_written(a, 64, size), None);
            }
            // SAFETY: inside `buf`.
            let first = unsafe { *(a as *const u8).add(size) };
            assert_eq!(first, 0, "the canary's first byte ends a string");
        }
    }

    #[test]
    fn every_changed_bit_of_a_canary_is_caught_at_its_offset() {
        let mut buf = [0u8; 64];
        let a = buf.as_mut_ptr() as usize;
        for size in [0, 1, 8, 30, 59] {
            // SAFETY: inside `buf`.
            unsafe { write_canary(a, size, 64) };
            // SAFETY: inside `buf`.
            assert_eq!(unsafe { canary_damage(a, 64) }, None);
            for byte in size..64 {
                for bit in 0..8 {
                    // SAFETY: inside `buf`.
                    unsafe {
                        write_canary(a, size, 64);
                        *(a as *mut u8).add(byte) ^= 1 << bit;
                    }
                    // SAFETY: inside `buf`.
                    let found = unsafe { canary_damage(a, 64) };
                    assert_eq!(
                        found,
                        Some((byte, Some(size))),
                        "size {size}, byte {byte}, bit {bit}"
                    );
                    if byte >= 64 - RECORD {
                        // SAFETY: inside `buf`.
                        assert_eq!(unsafe { canary_size(a, 64) }, None);
                    }
                }
            }
        }
    }

    #[test]
    fn a_record_overwritten_whole_is_caught_without_a_size() {
        let mut buf = [0u8; 32];
        let a = buf.as_mut_ptr() as usize;
        for fill in [0u8, 0x41, 0xe5, 0xff] {
            // SAFETY: inside `buf`.
            unsafe { write_canary(a, 24, 32) };
            buf[24..32].fill(fill);
            // SAFETY: inside `buf`.
            let found = unsafe { canary_damage(a, 32) };
            assert!(matches!(found, Some((24..=31, _))), "{fill:#x}: {found:?}");
        }
    }
}
