//! Sequences of C allocation calls through liballoclab.so's entry points (`preload/src`,
//! compiled here from its source; the module list follows `preload/src/lib.rs`, without
//! `exports.rs`, `log.rs` and `cxx.rs`, so this process's own `malloc` stays the system's, and
//! with the installer `export!()` would define): results aligned and sized as C requires,
//! contents kept through `realloc`, `errno` and `EINVAL`/`ENOMEM` cases as documented,
//! everything freed at the end.
#![no_main]
#![allow(dead_code)]

#[path = "../../preload/src/entry.rs"]
mod entry;
#[path = "../../preload/src/env.rs"]
mod env;
#[path = "../../preload/src/init.rs"]
mod init;
#[path = "../../preload/src/installer.rs"]
mod installer;
#[path = "../../preload/src/line.rs"]
mod line;
#[path = "../../preload/src/log_line.rs"]
mod log_line;
#[path = "../../preload/src/log_sink.rs"]
mod log_sink;
#[path = "../../preload/src/options.rs"]
mod options;
#[path = "../../preload/src/parse.rs"]
mod parse;
#[path = "../../preload/src/select.rs"]
mod select;

/// The heap installer `export!()` defines in liballoclab.so: the selected heap.
#[no_mangle]
fn alloclab_preload_install(conf: &options::Conf) -> &'static select::Ops {
    // SAFETY: `init.rs` calls it once per process, under its lock, and publishes the table
    // with release ordering.
    unsafe { installer::install_selected(conf) }
}

/// The built-in conf `export!(C, "...")` defines; liballoclab.so's is empty, as this is.
#[no_mangle]
fn alloclab_preload_built_in_conf() -> &'static str {
    ""
}

use arbitrary::{Arbitrary, Unstructured};
use core::ffi::c_void;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Call {
    Malloc(u16),
    Calloc(u8, u16),
    Realloc(u8, u32),
    ReallocArray(u8, u8, u16),
    /// `reallocarray` and `calloc` whose product overflows: NULL, `ENOMEM`, block intact.
    Overflow(u8),
    PosixMemalign(u8, u16),
    AlignedAlloc(u8, u16),
    Memalign(u8, u16),
    Valloc(u16),
    Pvalloc(u16),
    Free(u8),
    FreeSized(u8),
    UsableSize(u8),
}

struct Block {
    p: *mut c_void,
    size: usize,
    tag: u8,
}

/// Offsets written and checked: every byte of the first 4 KiB, then one per page, and the last.
fn offsets(size: usize) -> impl Iterator<Item = usize> {
    (0..size.min(4096))
        .chain((4096..size).step_by(4096))
        .chain(size.checked_sub(1).filter(|&l| l >= 4096))
}

fn fill(b: &Block) {
    for off in offsets(b.size) {
        // SAFETY: `off < size` bytes of a live block.
        unsafe { *b.p.cast::<u8>().add(off) = b.tag ^ off as u8 };
    }
}

fn check(b: &Block, len: usize) {
    for off in offsets(b.size).filter(|&o| o < len) {
        // SAFETY: `off < len <= size` bytes of a live block.
        let got = unsafe { *b.p.cast::<u8>().add(off) };
        assert_eq!(got, b.tag ^ off as u8, "block {:?} changed at {off}", b.p);
    }
}

fn admit(live: &mut Vec<Block>, p: *mut c_void, size: usize, align: usize, tag: u8) {
    assert!(!p.is_null(), "allocation of {size} bytes failed");
    assert_eq!(
        p as usize % align.max(16),
        0,
        "{p:?} not aligned to {align}"
    );
    assert!(entry::malloc_usable_size(p) >= size);
    let b = Block { p, size, tag };
    fill(&b);
    live.push(b);
}

fn errno() -> i32 {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() }
}

fn take(live: &mut Vec<Block>, i: u8) -> Option<Block> {
    (!live.is_empty()).then(|| live.swap_remove(i as usize % live.len()))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut live: Vec<Block> = Vec::new();
    for n in 0..256u32 {
        let Ok(call) = Call::arbitrary(&mut u) else {
            break;
        };
        let tag = n as u8 | 1;
        match call {
            Call::Malloc(s) => admit(&mut live, entry::malloc(s as usize), s as usize, 16, tag),
            Call::Calloc(k, s) => {
                let size = k as usize * s as usize;
                let p = entry::calloc(k as usize, s as usize);
                for off in offsets(size) {
                    // SAFETY: `off < size` bytes of a fresh allocation.
                    assert_eq!(
                        unsafe { *p.cast::<u8>().add(off) },
                        0,
                        "calloc memory not zero"
                    );
                }
                admit(&mut live, p, size, 16, tag);
            }
            Call::Realloc(i, s) => {
                let size = s as usize % (3 << 20);
                if let Some(b) = take(&mut live, i) {
                    // SAFETY: a live block, not used again unless null is returned.
                    let q = unsafe { entry::realloc(b.p, size) };
                    if q.is_null() && size == 0 {
                        continue; // `zero_realloc:free` (glibc's behaviour): the block is gone
                    }
                    let moved = Block { p: q, ..b };
                    check(&moved, b.size.min(size));
                    admit(&mut live, q, size, 16, tag);
                }
            }
            Call::Overflow(i) => {
                assert!(entry::calloc(usize::MAX / 2, 3).is_null() && errno() == libc::ENOMEM);
                if let Some(b) = live.get(i as usize % live.len().max(1)) {
                    // SAFETY: a live block; on failure it stays live and unchanged.
                    let q = unsafe { entry::reallocarray(b.p, usize::MAX / 2, 3) };
                    assert!(q.is_null() && errno() == libc::ENOMEM);
                    check(b, b.size);
                }
            }
            Call::ReallocArray(i, k, s) => {
                if let Some(b) = take(&mut live, i) {
                    let size = k as usize * s as usize;
                    // SAFETY: as for realloc.
                    let q = unsafe { entry::reallocarray(b.p, k as usize, s as usize) };
                    if q.is_null() && size == 0 {
                        continue; // as for `realloc`
                    }
                    let moved = Block { p: q, ..b };
                    check(&moved, b.size.min(size));
                    admit(&mut live, q, size, 16, tag);
                }
            }
            Call::PosixMemalign(a, s) => {
                let align = 1usize << (a % 21);
                let mut out = core::ptr::null_mut();
                // SAFETY: `out` is a valid out-pointer.
                let r = unsafe { entry::posix_memalign(&mut out, align, s as usize) };
                if align < core::mem::size_of::<usize>() {
                    assert_eq!(r, libc::EINVAL);
                    assert!(out.is_null(), "*out written on failure");
                } else {
                    assert_eq!(r, 0);
                    admit(&mut live, out, s as usize, align, tag);
                }
            }
            Call::AlignedAlloc(a, s) => {
                let align = (a as usize % 65).max(1);
                let p = entry::aligned_alloc(align, s as usize);
                if align.is_power_of_two() {
                    admit(&mut live, p, s as usize, align, tag);
                } else {
                    assert!(p.is_null() && errno() == libc::EINVAL);
                }
            }
            Call::Memalign(a, s) => {
                let align = 1usize << (a % 21);
                admit(
                    &mut live,
                    entry::memalign(align, s as usize),
                    s as usize,
                    align,
                    tag,
                )
            }
            Call::Valloc(s) => admit(&mut live, entry::valloc(s as usize), s as usize, 4096, tag),
            Call::Pvalloc(s) => {
                let p = entry::pvalloc(s as usize);
                assert!(entry::malloc_usable_size(p) >= (s as usize).div_ceil(4096) * 4096);
                admit(&mut live, p, s as usize, 4096, tag)
            }
            Call::Free(i) => {
                if let Some(b) = take(&mut live, i) {
                    check(&b, b.size);
                    // SAFETY: a live block, freed once.
                    unsafe { entry::free(b.p) };
                }
            }
            Call::FreeSized(i) => {
                if let Some(b) = take(&mut live, i) {
                    check(&b, b.size);
                    // SAFETY: a live block of `size` bytes, freed once.
                    unsafe { entry::free_sized(b.p, b.size) };
                }
            }
            Call::UsableSize(i) => {
                if let Some(b) = live.get(i as usize % live.len().max(1)) {
                    assert!(entry::malloc_usable_size(b.p) >= b.size);
                }
            }
        }
    }
    for b in live {
        check(&b, b.size);
        // SAFETY: every remaining block is live and freed once.
        unsafe { entry::free(b.p) };
    }
});
