//! liballoclab_probe.so: preloaded in front of any allocator, it times every call into it.
//!
//! ```text
//! ALLOCLAB_PROBE_DIR=/tmp/p LD_PRELOAD="liballoclab_probe.so libmimalloc.so" program
//! ```
//!
//! Every entry point below is forwarded to the next definition in the process
//! (`dlsym(RTLD_NEXT)`: the allocator preloaded after the probe, or glibc), inside
//! `alloclab_probe::timed`, which counts the call and its time in the calling thread's record.
//! A thread's figures are appended to `$ALLOCLAB_PROBE_DIR/probe-<pid>.txt` when it exits and
//! the rest when the process exits (`alloclab_probe::dump` has the format); without
//! `ALLOCLAB_PROBE_DIR` nothing is written. `ALLOCLAB_PROBE_EVERY=N` times one call in N per
//! thread (all are counted).
//!
//! Limits: a process that ends with `_exit` or a signal writes only its exited threads; a
//! forked child starts from zero and writes its own file. The C++ operators are forwarded
//! too, so that a subject's own `operator new` is timed (libstdc++'s calls `malloc`, which is
//! then not counted twice); one that throws `std::bad_alloc` aborts the process instead when
//! the probe is built with `panic = "abort"` (the release profile).
//!
//! Nothing here allocates through the allocator it measures. While `dlsym` looks up a next
//! definition, the allocations it makes itself come from a small static arena, whose blocks
//! `free` ignores; other threads wait for the lookup.

use alloclab_probe::fatal::fatal;
use alloclab_probe::record::{self, ThreadRecord};
use alloclab_probe::{clock, dump, timed, Kind};
use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

// ---- the next allocator -----------------------------------------------------------------------

/// The thread running `dlsym` (0: none): allocations it makes meanwhile come from the
/// start-up arena; other threads wait for it.
static RESOLVER: AtomicI32 = AtomicI32::new(0);

fn this_thread() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Looks up `name` (NUL-terminated) after this library, caching the answer in `cache` (0: not
/// looked up, 1: absent); 0 when this thread is already inside `dlsym` (its own allocations).
fn resolve(cache: &AtomicUsize, name: &[u8]) -> usize {
    let me = this_thread();
    loop {
        match RESOLVER.compare_exchange(0, me, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => break,
            Err(holder) if holder == me => return 0,
            // Another thread resolves: wait, then see whether it resolved this one too.
            Err(_) => {
                core::hint::spin_loop();
                let v = cache.load(Ordering::Acquire);
                if v != 0 {
                    return v;
                }
            }
        }
    }
    let mut v = cache.load(Ordering::Acquire);
    if v == 0 {
        // SAFETY: `name` is NUL-terminated (the callers' literals).
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const c_char) } as usize;
        v = if p == 0 { 1 } else { p };
        cache.store(v, Ordering::Release);
    }
    RESOLVER.store(0, Ordering::Release);
    v
}

/// The next definition of a symbol, as a function pointer of type `$ty`, or `None` (absent,
/// or not yet resolvable because `dlsym` is running).
macro_rules! next {
    ($sym:ident as $ty:ty) => {
        next!(@ concat!(stringify!($sym), "\0"), as $ty)
    };
    ($name:literal as $ty:ty) => {
        next!(@ concat!($name, "\0"), as $ty)
    };
    (@ $name:expr, as $ty:ty) => {{
        static CACHE: AtomicUsize = AtomicUsize::new(0);
        let mut p = CACHE.load(Ordering::Acquire);
        if p == 0 {
            p = resolve(&CACHE, $name.as_bytes());
        }
        if p > 1 {
            // SAFETY: `p` is the address `dlsym` gave for this symbol, whose C type is `$ty`.
            Some(unsafe { core::mem::transmute::<usize, $ty>(p) })
        } else {
            None
        }
    }};
}

type Malloc = unsafe extern "C" fn(usize) -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void);
type Calloc = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type Realloc = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type ReallocArray = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;
type PosixMemalign = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;
type Aligned = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type UsableSize = unsafe extern "C" fn(*mut c_void) -> usize;
type FreeSized = unsafe extern "C" fn(*mut c_void, usize);
type FreeAlignedSized = unsafe extern "C" fn(*mut c_void, usize, usize);

fn next_malloc() -> Option<Malloc> {
    next!("malloc" as Malloc)
}
fn next_free() -> Option<Free> {
    next!("free" as Free)
}
fn next_realloc() -> Option<Realloc> {
    next!("realloc" as Realloc)
}

// ---- the start-up arena -----------------------------------------------------------------------

const BOOT_SIZE: usize = 64 * 1024;
/// Each block: a 16-byte header holding its size, then the block.
#[repr(C, align(16))]
struct BootArena([u8; BOOT_SIZE]);
static mut BOOT: BootArena = BootArena([0; BOOT_SIZE]);
static BOOT_USED: AtomicUsize = AtomicUsize::new(0);

fn boot_base() -> usize {
    // Only the address: the bytes are reached through `boot_alloc`'s disjoint blocks.
    core::ptr::addr_of_mut!(BOOT) as usize
}

/// A zeroed block of the start-up arena (never reused, so never dirty), or null.
fn boot_alloc(size: usize) -> *mut c_void {
    let Some(need) = size.checked_add(16 + 15).map(|n| n & !15) else {
        return core::ptr::null_mut();
    };
    let at = BOOT_USED.fetch_add(need, Ordering::Relaxed);
    if at + need > BOOT_SIZE {
        return core::ptr::null_mut();
    }
    let block = boot_base() + at;
    // SAFETY: `block..block + need` lies inside BOOT and no other block overlaps it (the
    // offsets come from one atomic counter); its first 8 bytes hold the size.
    unsafe { (block as *mut usize).write(size) };
    (block + 16) as *mut c_void
}

fn is_boot(p: *mut c_void) -> bool {
    let p = p as usize;
    p >= boot_base() && p < boot_base() + BOOT_SIZE
}

/// The size a start-up block was asked with.
fn boot_size(p: *mut c_void) -> usize {
    // SAFETY: `p` is a block of `boot_alloc`, whose header sits 16 bytes before it.
    unsafe { ((p as usize - 16) as *const usize).read() }
}

// ---- set-up, thread exit, fork, process exit ---------------------------------------------------

static OVERHEAD: AtomicU64 = AtomicU64::new(0);
/// The timer's resolution in ticks, measured once at set-up.
static RESOLUTION: AtomicU64 = AtomicU64::new(0);
static KEY: AtomicU32 = AtomicU32::new(u32::MAX);
/// The open dump file and the process it belongs to (a forked child opens its own).
static FD: AtomicI32 = AtomicI32::new(-1);
static FD_PID: AtomicI32 = AtomicI32::new(0);
/// `ALLOCLAB_PROBE_DIR`, NUL-terminated, copied at start-up (empty: write nothing).
static mut DIR: [u8; 1024] = [0; 1024];

fn getenv(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: `name` is NUL-terminated; getenv returns null or a NUL-terminated string that
    // stays valid while nothing changes the environment (read once, at start-up).
    let p = unsafe { libc::getenv(name.as_ptr() as *const c_char) };
    if p.is_null() {
        return None;
    }
    // SAFETY: as above.
    Some(unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |v, &d| v * 10 + (d - b'0') as u64))
}

fn set_up() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    record::untimed(|| {
        // Resolve the common entry points now, while the process is single-threaded.
        let _ = (next_malloc(), next_free(), next_realloc());
        clock::init();
        OVERHEAD.store(clock::overhead_ticks(), Ordering::Relaxed);
        RESOLUTION.store(clock::resolution_ticks(), Ordering::Relaxed);
        if let Some(n) = getenv(b"ALLOCLAB_PROBE_EVERY\0") {
            match parse_u64(n) {
                Some(n) if n >= 1 => record::set_every(n),
                _ => fatal(
                    b"alloclab-probe: ALLOCLAB_PROBE_EVERY must be a whole number of at least 1\n",
                ),
            }
        }
        if let Some(dir) = getenv(b"ALLOCLAB_PROBE_DIR\0") {
            if dir.len() + 1 > 1024 - 40 {
                fatal(b"alloclab-probe: ALLOCLAB_PROBE_DIR is longer than 980 bytes\n");
            }
            // SAFETY: set-up runs once, before any reader of DIR (the dumps) can run.
            unsafe {
                let d = &mut *core::ptr::addr_of_mut!(DIR);
                d[..dir.len()].copy_from_slice(dir);
                d[dir.len()] = 0;
            }
        }
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is writable; the destructor has the C signature pthread expects.
        if unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) } == 0 {
            KEY.store(key, Ordering::Release);
            record::on_new_record(register_thread);
        }
        // SAFETY: a handler with the C signature; none before or in the parent.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
}

/// Has the thread's record written and given back when the thread exits.
fn register_thread(r: &'static ThreadRecord) {
    let key = KEY.load(Ordering::Acquire);
    if key != u32::MAX && !r.is_shared() {
        // SAFETY: `key` was made by pthread_key_create; the value is only read back by
        // `on_thread_exit`.
        unsafe { libc::pthread_setspecific(key, r as *const ThreadRecord as *const c_void) };
    }
}

/// The dump file of this process, opened (with its first line written) on first use; -1 if
/// there is none. Called only inside `dump::exclusively`.
fn out_fd() -> c_int {
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    if FD_PID.load(Ordering::Relaxed) == pid {
        return FD.load(Ordering::Relaxed);
    }
    // SAFETY: written once at set-up, read only here.
    let dir = unsafe { &*core::ptr::addr_of!(DIR) };
    let len = dir.iter().position(|&b| b == 0).unwrap_or(0);
    let mut fd = -1;
    if len > 0 {
        let mut path = [0u8; 1024];
        let mut n = 0;
        let mut put = |s: &[u8]| {
            path[n..n + s.len()].copy_from_slice(s);
            n += s.len();
        };
        put(&dir[..len]);
        put(b"/probe-");
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        let mut v = pid as u32;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        put(&digits[i..]);
        put(b".txt\0");
        // SAFETY: `path` is NUL-terminated.
        fd = unsafe {
            libc::open(
                path.as_ptr() as *const c_char,
                libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                0o644,
            )
        };
        if fd < 0 {
            fatal(b"alloclab-probe: cannot create the file in ALLOCLAB_PROBE_DIR\n");
        }
        let mut w = dump::Writer::new(fd);
        dump::header(
            &mut w,
            pid as u64,
            OVERHEAD.load(Ordering::Relaxed),
            RESOLUTION.load(Ordering::Relaxed),
        );
        w.flush();
    }
    FD.store(fd, Ordering::Relaxed);
    FD_PID.store(pid, Ordering::Relaxed);
    fd
}

/// Writes the blocks of `records` to the dump file.
fn write_records<'a>(records: impl Iterator<Item = &'a ThreadRecord>) {
    record::untimed(|| {
        dump::exclusively(|| {
            let fd = out_fd();
            if fd < 0 {
                return;
            }
            let mut w = dump::Writer::new(fd);
            for r in records {
                dump::block(&mut w, r);
            }
            w.flush();
        })
    });
}

extern "C" fn on_thread_exit(r: *mut c_void) {
    // SAFETY: the value `register_thread` set: a record, which lives for the whole process.
    let r: &'static ThreadRecord = unsafe { &*(r as *const ThreadRecord) };
    // Later calls of this thread (other destructors) go to the shared record, so that the
    // record can be given to a new thread once written.
    record::set_current(record::shared());
    write_records(core::iter::once(r));
    record::release(r);
}

extern "C" fn after_fork_in_child() {
    dump::reset_after_fork();
    record::clear_all();
    let fd = FD.swap(-1, Ordering::Relaxed);
    FD_PID.store(0, Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: the parent's descriptor, inherited; the child writes a file of its own.
        unsafe { libc::close(fd) };
    }
}

extern "C" fn on_load() {
    set_up();
}

extern "C" fn on_exit() {
    write_records(record::records());
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;

// ---- the C entry points -----------------------------------------------------------------------

/// C `malloc`.
#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    match next_malloc() {
        // SAFETY: the next allocator's malloc, with the caller's argument.
        Some(f) => timed(Kind::Malloc, || unsafe { f(size) }),
        None => boot_alloc(size),
    }
}

/// C `calloc`.
#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    match next!("calloc" as Calloc) {
        // SAFETY: the next allocator's calloc, with the caller's arguments.
        Some(f) => timed(Kind::Calloc, || unsafe { f(n, size) }),
        None => n
            .checked_mul(size)
            .map_or(core::ptr::null_mut(), boot_alloc),
    }
}

/// C `free`.
///
/// # Safety
/// C's contract: `p` is null or a live allocation that nothing uses afterwards.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if is_boot(p) {
        return;
    }
    if let Some(f) = next_free() {
        // SAFETY: the caller's contract, forwarded.
        timed(Kind::Free, || unsafe { f(p) })
    }
}

/// C `realloc`.
///
/// # Safety
/// C's contract: `p` is null or a live allocation.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if is_boot(p) {
        // A start-up block moves to the real heap (and stays allocated in the arena).
        let q = malloc(size);
        if !q.is_null() {
            // SAFETY: `p` holds `boot_size(p)` bytes, `q` at least `size`; distinct blocks.
            unsafe {
                core::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, boot_size(p).min(size))
            };
        }
        return q;
    }
    match next_realloc() {
        // SAFETY: the caller's contract, forwarded.
        Some(f) => timed(Kind::Realloc, || unsafe { f(p, size) }),
        None => core::ptr::null_mut(),
    }
}

/// `reallocarray` (glibc, BSD).
///
/// # Safety
/// As `realloc`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match next!("reallocarray" as ReallocArray) {
        // SAFETY: the caller's contract, forwarded.
        Some(f) if !is_boot(p) => timed(Kind::Realloc, || unsafe { f(p, n, size) }),
        _ => match n.checked_mul(size) {
            // SAFETY: the caller's contract, forwarded.
            Some(total) => unsafe { realloc(p, total) },
            None => {
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = libc::ENOMEM };
                core::ptr::null_mut()
            }
        },
    }
}

/// POSIX `posix_memalign`.
///
/// # Safety
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    match next!("posix_memalign" as PosixMemalign) {
        // SAFETY: the caller's contract, forwarded.
        Some(f) => timed(Kind::Aligned, || unsafe { f(out, align, size) }),
        None => libc::ENOMEM,
    }
}

macro_rules! aligned_entry {
    ($(#[$doc:meta])* $name:ident, $sym:literal) => {
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name(align: usize, size: usize) -> *mut c_void {
            match next!($sym as Aligned) {
                // SAFETY: the next allocator's function, with the caller's arguments.
                Some(f) => timed(Kind::Aligned, || unsafe { f(align, size) }),
                None => core::ptr::null_mut(),
            }
        }
    };
}
aligned_entry!(
    /// C11 `aligned_alloc`.
    aligned_alloc,
    "aligned_alloc"
);
aligned_entry!(
    /// `memalign`.
    memalign,
    "memalign"
);

macro_rules! page_entry {
    ($(#[$doc:meta])* $name:ident, $sym:literal) => {
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name(size: usize) -> *mut c_void {
            match next!($sym as Malloc) {
                // SAFETY: the next allocator's function, with the caller's argument.
                Some(f) => timed(Kind::Aligned, || unsafe { f(size) }),
                None => core::ptr::null_mut(),
            }
        }
    };
}
page_entry!(
    /// `valloc`.
    valloc,
    "valloc"
);
page_entry!(
    /// `pvalloc`.
    pvalloc,
    "pvalloc"
);

/// `malloc_usable_size`.
///
/// # Safety
/// `p` is null or a live allocation.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if is_boot(p) {
        return boot_size(p);
    }
    match next!("malloc_usable_size" as UsableSize) {
        // SAFETY: the caller's contract, forwarded.
        Some(f) => timed(Kind::UsableSize, || unsafe { f(p) }),
        None => 0,
    }
}

/// C23 `free_sized`: the next one's, or `free` where it has none.
///
/// # Safety
/// As `free`, and `size` is the size `p` was requested with.
#[no_mangle]
pub unsafe extern "C" fn free_sized(p: *mut c_void, size: usize) {
    match next!("free_sized" as FreeSized) {
        // SAFETY: the caller's contract, forwarded.
        Some(f) if !is_boot(p) => timed(Kind::Free, || unsafe { f(p, size) }),
        // SAFETY: as above.
        _ => unsafe { free(p) },
    }
}

/// C23 `free_aligned_sized`: the next one's, or `free` where it has none.
///
/// # Safety
/// As `free_sized`, and `align` is the alignment `p` was requested with.
#[no_mangle]
pub unsafe extern "C" fn free_aligned_sized(p: *mut c_void, align: usize, size: usize) {
    match next!("free_aligned_sized" as FreeAlignedSized) {
        // SAFETY: the caller's contract, forwarded.
        Some(f) if !is_boot(p) => timed(Kind::Free, || unsafe { f(p, align, size) }),
        // SAFETY: as above.
        _ => unsafe { free(p) },
    }
}

// ---- C++ operators ----------------------------------------------------------------------------
// Forwarded to the next definition (a subject's own, or libstdc++'s, whose inner `malloc` is
// then not counted again). "C-unwind": `new` throws `std::bad_alloc` through this frame.

macro_rules! cxx_new {
    ($($sym:ident = $kind:ident ($($arg:ident: $t:ty),*);)*) => {$(
        /// A C++ `operator new` (mangled name), forwarded.
        ///
        /// # Safety
        /// C++'s contract: a `nothrow` argument points at `std::nothrow`.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $sym($($arg: $t),*) -> *mut c_void {
            type F = unsafe extern "C-unwind" fn($($t),*) -> *mut c_void;
            match next!($sym as F) {
                // SAFETY: the next definition of this operator, with the caller's arguments.
                Some(f) => timed(Kind::$kind, || unsafe { f($($arg),*) }),
                // No C++ runtime after the probe: no C++ caller either; plain malloc.
                None => malloc(cxx_size!($($arg),*)),
            }
        }
    )*};
}
macro_rules! cxx_size {
    ($size:ident $(, $rest:ident)*) => {
        $size
    };
}
cxx_new! {
    _Znwm = Malloc(size: usize);
    _Znam = Malloc(size: usize);
    _ZnwmRKSt9nothrow_t = Malloc(size: usize, nt: *const c_void);
    _ZnamRKSt9nothrow_t = Malloc(size: usize, nt: *const c_void);
    _ZnwmSt11align_val_t = Aligned(size: usize, align: usize);
    _ZnamSt11align_val_t = Aligned(size: usize, align: usize);
    _ZnwmSt11align_val_tRKSt9nothrow_t = Aligned(size: usize, align: usize, nt: *const c_void);
    _ZnamSt11align_val_tRKSt9nothrow_t = Aligned(size: usize, align: usize, nt: *const c_void);
}

macro_rules! cxx_delete {
    ($($sym:ident ($($arg:ident: $t:ty),*);)*) => {$(
        /// A C++ `operator delete` (mangled name), forwarded.
        ///
        /// # Safety
        /// C++'s contract: the pointer is null or came from the matching `new`.
        #[no_mangle]
        pub unsafe extern "C" fn $sym(p: *mut c_void $(, $arg: $t)*) {
            type F = unsafe extern "C" fn(*mut c_void $(, $t)*);
            match next!($sym as F) {
                // SAFETY: the caller's contract, forwarded.
                Some(f) if !is_boot(p) => timed(Kind::Free, || unsafe { f(p $(, $arg)*) }),
                // SAFETY: as above.
                _ => unsafe { free(p) },
            }
        }
    )*};
}
cxx_delete! {
    _ZdlPv();
    _ZdaPv();
    _ZdlPvm(size: usize);
    _ZdaPvm(size: usize);
    _ZdlPvRKSt9nothrow_t(nt: *const c_void);
    _ZdaPvRKSt9nothrow_t(nt: *const c_void);
    _ZdlPvSt11align_val_t(align: usize);
    _ZdaPvSt11align_val_t(align: usize);
    _ZdlPvmSt11align_val_t(size: usize, align: usize);
    _ZdaPvmSt11align_val_t(size: usize, align: usize);
    _ZdlPvSt11align_val_tRKSt9nothrow_t(align: usize, nt: *const c_void);
    _ZdaPvSt11align_val_tRKSt9nothrow_t(align: usize, nt: *const c_void);
}
