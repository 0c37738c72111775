//! The peers: other allocators measured beside alloclab's configs, each called through its own
//! entry points and never installed as the process's allocator, so that one process can hold
//! any of them while Rust's own allocations (the runner's bookkeeping) stay on glibc.
//!
//! - `system`: glibc's `malloc` family.
//! - `jemalloc`: jemalloc 5 built by `tikv-jemalloc-sys` with its `_rjem_` prefix.
//! - `mimalloc`: mimalloc built by `libmimalloc-sys` (`mi_` prefix).
//! - `snmalloc`: snmalloc built by `snmalloc-sys` with the C compiler (no cmake), through the
//!   `sn_rust_*` entry points, which take sizes; `free` asks snmalloc for the block's usable
//!   size, which names the same size class as the request did.
//! - `rpmalloc`: rpmalloc built by `rpmalloc-sys`; every thread that calls it must have called
//!   `rpmalloc_thread_initialize`, which a thread-local guard does on a thread's first call (and
//!   `rpmalloc_thread_finalize` at its exit). rpmalloc cannot align to its span size (64 KiB)
//!   or more: such `memalign` calls return null, as they do in rpmalloc itself.
//!
//! All but `system` need the cargo feature `peers` (on by default), which builds them from C
//! sources.

use super::subjects::{SubjectEntry, SubjectKind};
use alloclab_traces::subject::{HeapStats, Subject};
use std::ffi::CStr;

fn peer(name: &str, make: fn() -> Box<dyn Subject>) -> SubjectEntry {
    SubjectEntry {
        name: name.to_string(),
        kind: SubjectKind::Peer,
        make: std::sync::Arc::new(make),
        with_options: None,
    }
}

/// The peers the `peers` feature builds from C sources (whether or not this build has them).
pub const C_PEERS: [&str; 4] = ["jemalloc", "mimalloc", "snmalloc", "rpmalloc"];

/// Every peer this build has, `system` first.
pub fn entries() -> Vec<SubjectEntry> {
    #[allow(unused_mut)]
    let mut v = vec![peer("system", || Box::new(System))];
    #[cfg(feature = "peers")]
    v.extend([
        peer("jemalloc", || Box::new(c_peers::Jemalloc)),
        peer("mimalloc", || Box::new(c_peers::Mimalloc)),
        peer("snmalloc", || Box::new(c_peers::Snmalloc)),
        peer("rpmalloc", c_peers::Rpmalloc::make),
    ]);
    v
}

/// Each peer's name and library version, as the library reports it (or, where it reports
/// none, the version of the crate that builds it).
pub fn versions() -> Vec<(String, String)> {
    #[allow(unused_mut)]
    let mut v = vec![("system".to_string(), System::version())];
    #[cfg(feature = "peers")]
    v.extend([
        ("jemalloc".to_string(), c_peers::Jemalloc::version()),
        ("mimalloc".to_string(), c_peers::Mimalloc::version()),
        ("snmalloc".to_string(), c_peers::Snmalloc::version()),
        ("rpmalloc".to_string(), c_peers::Rpmalloc::version()),
    ]);
    v
}

/// `count * size`, or `None` when it overflows (calloc's contract: null then).
#[cfg(feature = "peers")]
fn checked_total(count: usize, size: usize) -> Option<usize> {
    count.checked_mul(size)
}

/// glibc's allocator through its C entry points.
pub struct System;

impl System {
    fn version() -> String {
        // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(libc::gnu_get_libc_version()) };
        format!("glibc {}", v.to_string_lossy())
    }
}

impl Subject for System {
    fn name(&self) -> String {
        "system".to_string()
    }

    fn describe(&self) -> String {
        format!("{} malloc (the C library's allocator)", System::version())
    }

    #[inline(never)]
    fn malloc(&self, size: usize) -> *mut u8 {
        // SAFETY: malloc has no preconditions.
        unsafe { libc::malloc(size) as *mut u8 }
    }

    #[inline(never)]
    fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        // SAFETY: calloc has no preconditions (it checks the product itself).
        unsafe { libc::calloc(count, size) as *mut u8 }
    }

    #[inline(never)]
    fn memalign(&self, align: usize, size: usize) -> *mut u8 {
        let mut p = std::ptr::null_mut();
        // posix_memalign wants a multiple of the pointer size; smaller powers of two are
        // met by any malloc'd block.
        let align = align.max(std::mem::size_of::<usize>());
        // SAFETY: `p` is a valid out-pointer; a bad alignment is reported, not undefined.
        match unsafe { libc::posix_memalign(&mut p, align, size) } {
            0 => p as *mut u8,
            _ => std::ptr::null_mut(),
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        // SAFETY: forwarded contract: `ptr` is null or a live glibc block.
        unsafe { libc::realloc(ptr as *mut libc::c_void, size) as *mut u8 }
    }

    #[inline(never)]
    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { libc::free(ptr as *mut libc::c_void) }
    }

    fn stats(&self) -> HeapStats {
        // SAFETY: mallinfo2 has no preconditions; it walks glibc's arenas under their locks.
        let m = unsafe { libc::mallinfo2() };
        HeapStats {
            allocated: Some(m.uordblks + m.hblkhd),
            mapped: Some(m.arena + m.hblkhd),
            ..HeapStats::default()
        }
    }
}

#[cfg(feature = "peers")]
mod c_peers {
    use super::checked_total;
    use alloclab_traces::subject::{HeapStats, Subject};
    use std::ffi::{c_char, c_int, c_void, CStr};

    /// jemalloc 5 (prefixed `_rjem_`).
    pub struct Jemalloc;

    impl Jemalloc {
        /// Reads one `size_t` statistic; `None` if jemalloc does not know the name.
        fn read_usize(name: &CStr) -> Option<usize> {
            let mut v: usize = 0;
            let mut len = std::mem::size_of::<usize>();
            // SAFETY: `name` is NUL-terminated, `v` and `len` describe a buffer of the size
            // the statistic has (size_t); nothing is written.
            let r = unsafe {
                tikv_jemalloc_sys::mallctl(
                    name.as_ptr(),
                    &mut v as *mut usize as *mut c_void,
                    &mut len,
                    std::ptr::null_mut(),
                    0,
                )
            };
            (r == 0).then_some(v)
        }

        pub fn version() -> String {
            let mut v: *const c_char = std::ptr::null();
            let mut len = std::mem::size_of::<*const c_char>();
            // SAFETY: "version" is a `const char *` statistic; `v` and `len` describe a
            // buffer for one pointer.
            let r = unsafe {
                tikv_jemalloc_sys::mallctl(
                    c"version".as_ptr(),
                    &mut v as *mut *const c_char as *mut c_void,
                    &mut len,
                    std::ptr::null_mut(),
                    0,
                )
            };
            if r != 0 || v.is_null() {
                return "jemalloc (version unknown)".to_string();
            }
            // SAFETY: jemalloc's version is a static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(v) };
            format!("jemalloc {}", s.to_string_lossy())
        }
    }

    impl Subject for Jemalloc {
        fn name(&self) -> String {
            "jemalloc".to_string()
        }

        fn describe(&self) -> String {
            format!(
                "{} (tikv-jemalloc-sys, `_rjem_` prefix)",
                Jemalloc::version()
            )
        }

        #[inline(never)]
        fn malloc(&self, size: usize) -> *mut u8 {
            // SAFETY: malloc has no preconditions.
            unsafe { tikv_jemalloc_sys::malloc(size) as *mut u8 }
        }

        #[inline(never)]
        fn calloc(&self, count: usize, size: usize) -> *mut u8 {
            // SAFETY: calloc checks the product itself.
            unsafe { tikv_jemalloc_sys::calloc(count, size) as *mut u8 }
        }

        #[inline(never)]
        fn memalign(&self, align: usize, size: usize) -> *mut u8 {
            let mut p = std::ptr::null_mut();
            let align = align.max(std::mem::size_of::<usize>());
            // SAFETY: `p` is a valid out-pointer; a bad alignment is reported.
            match unsafe { tikv_jemalloc_sys::posix_memalign(&mut p, align, size) } {
                0 => p as *mut u8,
                _ => std::ptr::null_mut(),
            }
        }

        #[inline(never)]
        unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
            // SAFETY: forwarded contract: `ptr` is null or a live jemalloc block.
            unsafe { tikv_jemalloc_sys::realloc(ptr as *mut c_void, size) as *mut u8 }
        }

        #[inline(never)]
        unsafe fn free(&self, ptr: *mut u8) {
            // SAFETY: forwarded contract.
            unsafe { tikv_jemalloc_sys::free(ptr as *mut c_void) }
        }

        fn stats(&self) -> HeapStats {
            // jemalloc's statistics are a snapshot taken when the epoch advances.
            let mut epoch: u64 = 1;
            let mut len = std::mem::size_of::<u64>();
            // SAFETY: "epoch" reads and writes a uint64_t; both buffers have that size.
            let advanced = unsafe {
                tikv_jemalloc_sys::mallctl(
                    c"epoch".as_ptr(),
                    &mut epoch as *mut u64 as *mut c_void,
                    &mut len,
                    &mut epoch as *mut u64 as *mut c_void,
                    std::mem::size_of::<u64>(),
                )
            } == 0;
            if !advanced {
                return HeapStats::default();
            }
            HeapStats {
                allocated: Jemalloc::read_usize(c"stats.allocated"),
                active: Jemalloc::read_usize(c"stats.active"),
                mapped: Jemalloc::read_usize(c"stats.mapped"),
                metadata: Jemalloc::read_usize(c"stats.metadata"),
                resident_estimate: Jemalloc::read_usize(c"stats.resident"),
                // Dirty pages of all arenas together (4096 is MALLCTL_ARENAS_ALL).
                dirty: Jemalloc::read_usize(c"stats.arenas.4096.pdirty")
                    .zip(Jemalloc::read_usize(c"arenas.page"))
                    .map(|(pages, page)| pages * page),
                ..HeapStats::default()
            }
        }
    }

    /// mimalloc (`mi_` prefix).
    pub struct Mimalloc;

    impl Mimalloc {
        pub fn version() -> String {
            // SAFETY: mi_version has no preconditions.
            let v = unsafe { libmimalloc_sys::mi_version() };
            // mimalloc encodes 1.6.3 as 163.
            format!("mimalloc {}.{}.{}", v / 100, v / 10 % 10, v % 10)
        }
    }

    impl Subject for Mimalloc {
        fn name(&self) -> String {
            "mimalloc".to_string()
        }

        fn describe(&self) -> String {
            format!("{} (libmimalloc-sys, `mi_` prefix)", Mimalloc::version())
        }

        #[inline(never)]
        fn malloc(&self, size: usize) -> *mut u8 {
            // SAFETY: mi_malloc has no preconditions.
            unsafe { libmimalloc_sys::mi_malloc(size) as *mut u8 }
        }

        #[inline(never)]
        fn calloc(&self, count: usize, size: usize) -> *mut u8 {
            // SAFETY: mi_calloc checks the product itself.
            unsafe { libmimalloc_sys::mi_calloc(count, size) as *mut u8 }
        }

        #[inline(never)]
        fn memalign(&self, align: usize, size: usize) -> *mut u8 {
            // SAFETY: mi_malloc_aligned returns null for an alignment it cannot serve.
            unsafe { libmimalloc_sys::mi_malloc_aligned(size, align) as *mut u8 }
        }

        #[inline(never)]
        unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
            // SAFETY: forwarded contract: `ptr` is null or a live mimalloc block.
            unsafe { libmimalloc_sys::mi_realloc(ptr as *mut c_void, size) as *mut u8 }
        }

        #[inline(never)]
        unsafe fn free(&self, ptr: *mut u8) {
            // SAFETY: forwarded contract.
            unsafe { libmimalloc_sys::mi_free(ptr as *mut c_void) }
        }

        fn stats(&self) -> HeapStats {
            let mut f = [0usize; 8];
            let [elapsed, user, system, rss, peak_rss, commit, peak_commit, faults] = &mut f;
            // SAFETY: every argument points to a usize of ours.
            unsafe {
                libmimalloc_sys::mi_process_info(
                    elapsed,
                    user,
                    system,
                    rss,
                    peak_rss,
                    commit,
                    peak_commit,
                    faults,
                )
            };
            HeapStats {
                // mimalloc counts the memory it has committed from the OS.
                mapped: (f[5] > 0).then_some(f[5]),
                ..HeapStats::default()
            }
        }
    }

    extern "C" {
        // snmalloc's usage figures (declared here: snmalloc-sys does not bind it).
        fn sn_rust_statistics(current_memory_usage: *mut usize, peak_memory_usage: *mut usize);
    }

    /// snmalloc through its size-taking `sn_rust_*` entry points.
    pub struct Snmalloc;

    impl Snmalloc {
        pub fn version() -> String {
            format!(
                "snmalloc (snmalloc-sys {})",
                option_env!("ALLOCLAB_SNMALLOC_SYS_VERSION").unwrap_or("version unknown")
            )
        }
    }

    impl Subject for Snmalloc {
        fn name(&self) -> String {
            "snmalloc".to_string()
        }

        fn describe(&self) -> String {
            format!("{}, `sn_rust_` entry points", Snmalloc::version())
        }

        #[inline(never)]
        fn malloc(&self, size: usize) -> *mut u8 {
            // SAFETY: sn_rust_alloc takes any size with alignment 1.
            unsafe { snmalloc_sys::sn_rust_alloc(1, size) as *mut u8 }
        }

        #[inline(never)]
        fn calloc(&self, count: usize, size: usize) -> *mut u8 {
            match checked_total(count, size) {
                // SAFETY: as for malloc.
                Some(n) => unsafe { snmalloc_sys::sn_rust_alloc_zeroed(1, n) as *mut u8 },
                None => std::ptr::null_mut(),
            }
        }

        #[inline(never)]
        fn memalign(&self, align: usize, size: usize) -> *mut u8 {
            if !align.is_power_of_two() {
                return std::ptr::null_mut();
            }
            // snmalloc rounds a request up to a size class aligned like the request; a size
            // of 0 would round to 0 and lose the alignment, so it asks for one byte.
            // SAFETY: `align` is a power of two.
            unsafe { snmalloc_sys::sn_rust_alloc(align, size.max(1)) as *mut u8 }
        }

        #[inline(never)]
        unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
            if ptr.is_null() {
                return self.malloc(size);
            }
            // SAFETY: `ptr` is a live snmalloc block (the contract); its usable size names
            // its size class, which is what sn_rust_realloc needs as the old size (it copies
            // at most the smaller size, all of it the block's own).
            unsafe {
                let old = snmalloc_sys::sn_rust_usable_size(ptr as *const c_void);
                snmalloc_sys::sn_rust_realloc(ptr as *mut c_void, 1, old, size) as *mut u8
            }
        }

        #[inline(never)]
        unsafe fn free(&self, ptr: *mut u8) {
            if ptr.is_null() {
                return;
            }
            // SAFETY: `ptr` is a live snmalloc block; its usable size maps to its own size
            // class, whatever alignment it was asked with.
            unsafe {
                let size = snmalloc_sys::sn_rust_usable_size(ptr as *const c_void);
                snmalloc_sys::sn_rust_dealloc(ptr as *mut c_void, 1, size);
            }
        }

        fn stats(&self) -> HeapStats {
            let (mut current, mut peak) = (0usize, 0usize);
            // SAFETY: both arguments point to usizes of ours.
            unsafe { sn_rust_statistics(&mut current, &mut peak) };
            HeapStats {
                // The memory snmalloc's back end holds from the OS.
                mapped: Some(current),
                ..HeapStats::default()
            }
        }
    }

    extern "C" {
        // Declared here with rpmalloc's C signature (the int argument says whether to release
        // the thread's caches), which rpmalloc-sys binds without the argument.
        fn rpmalloc_thread_finalize(release_caches: c_int);
    }

    /// Ends rpmalloc's per-thread state when its thread exits.
    struct RpThread;

    impl Drop for RpThread {
        fn drop(&mut self) {
            // SAFETY: this thread initialized rpmalloc (the guard exists only then); its
            // blocks still live are freed later from any thread, which rpmalloc allows.
            unsafe { rpmalloc_thread_finalize(1) };
        }
    }

    thread_local! {
        static RP_THREAD: RpThread = {
            // SAFETY: rpmalloc_initialize ran when the subject was made (`Rpmalloc::make`).
            unsafe { rpmalloc_sys::rpmalloc_thread_initialize() };
            RpThread
        };
    }

    /// Makes sure this thread has called `rpmalloc_thread_initialize`.
    #[inline(always)]
    fn rp_thread() {
        // During the thread's own exit, after the guard is gone, rpmalloc's thread state has
        // been finalized; its calls then take the global path.
        let _ = RP_THREAD.try_with(|_| ());
    }

    /// rpmalloc; every thread calling it is initialized on its first call.
    pub struct Rpmalloc;

    impl Rpmalloc {
        pub fn make() -> Box<dyn Subject> {
            static INIT: std::sync::Once = std::sync::Once::new();
            // SAFETY: rpmalloc_initialize is called once per process, before any other call.
            INIT.call_once(|| unsafe {
                rpmalloc_sys::rpmalloc_initialize();
            });
            Box::new(Rpmalloc)
        }

        pub fn version() -> String {
            format!(
                "rpmalloc (rpmalloc-sys {})",
                option_env!("ALLOCLAB_RPMALLOC_SYS_VERSION").unwrap_or("version unknown")
            )
        }
    }

    impl Subject for Rpmalloc {
        fn name(&self) -> String {
            "rpmalloc".to_string()
        }

        fn describe(&self) -> String {
            format!("{}, `rp` entry points", Rpmalloc::version())
        }

        #[inline(never)]
        fn malloc(&self, size: usize) -> *mut u8 {
            rp_thread();
            // SAFETY: this thread is initialized.
            unsafe { rpmalloc_sys::rpmalloc(size) as *mut u8 }
        }

        #[inline(never)]
        fn calloc(&self, count: usize, size: usize) -> *mut u8 {
            if checked_total(count, size).is_none() {
                return std::ptr::null_mut();
            }
            rp_thread();
            // SAFETY: this thread is initialized; the product does not overflow.
            unsafe { rpmalloc_sys::rpcalloc(count, size) as *mut u8 }
        }

        #[inline(never)]
        fn memalign(&self, align: usize, size: usize) -> *mut u8 {
            if !align.is_power_of_two() {
                return std::ptr::null_mut();
            }
            rp_thread();
            // SAFETY: this thread is initialized; `align` is a power of two.
            unsafe { rpmalloc_sys::rpaligned_alloc(align, size) as *mut u8 }
        }

        #[inline(never)]
        unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
            rp_thread();
            // SAFETY: forwarded contract; this thread is initialized.
            unsafe { rpmalloc_sys::rprealloc(ptr as *mut c_void, size) as *mut u8 }
        }

        #[inline(never)]
        unsafe fn free(&self, ptr: *mut u8) {
            rp_thread();
            // SAFETY: forwarded contract; this thread is initialized.
            unsafe { rpmalloc_sys::rpfree(ptr as *mut c_void) }
        }

        fn stats(&self) -> HeapStats {
            // rpmalloc counts only when built with ENABLE_STATISTICS, which slows it down.
            HeapStats::default()
        }
    }
}
