//! Start-up, fork and exit: the life of the one heap in the process.
//!
//! - The heap is chosen once, on the first call into the library (often the dynamic loader's,
//!   before any constructor) or from our constructor, whichever comes first. Until then `OPS`
//!   points at `BOOT`, whose functions initialize and forward: the fast path has no
//!   "initialized?" test, only the load of `OPS` and the indirect call.
//! - Initialization never allocates (parse, `write(2)`, and the heap maps its state with
//!   `mmap` on first use). A re-entrant call during it (which would be a bug) aborts with a
//!   message instead of deadlocking.
//! - `pthread_atfork` handlers are registered after `OPS` is published (glibc may `malloc` to
//!   record them): the prepare handler takes every heap lock, so a child forked while another
//!   thread was inside the allocator finds no lock held.
//! - Statistics are printed from `.fini_array`, which runs after the program's `atexit`
//!   handlers and destructors, to a duplicate of the stderr the process started with (made at
//!   start-up only when `stats_print:true`): programs such as coreutils close fd 2 at exit.
//! - The allocation log (`log:`, `log_sink.rs`) is opened before the table is published, its
//!   lock is taken before the heap's around `fork()`, and it is written out at exit after the
//!   statistics (which it marks with a `jemalloc_stats()` line).

use crate::line::{FdWriter, Line};
use crate::log_sink;
use crate::options::{Conf, ZeroRealloc};
use crate::parse;
use crate::select::Ops;
use alloclab_core::lock::RawLock;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

// ---- the published table --------------------------------------------------------------------

static OPS: AtomicPtr<Ops> = AtomicPtr::new(&BOOT as *const Ops as *mut Ops);

/// The operations of the selected heap (initializing it on first use).
#[inline(always)]
pub fn ops() -> &'static Ops {
    // SAFETY: `OPS` always points at a static `Ops`: `BOOT`, or one `install` returned.
    unsafe { &*OPS.load(Ordering::Acquire) }
}

/// Entries that first initialize, then call the real table.
static BOOT: Ops = Ops {
    malloc: |size| (boot().malloc)(size),
    malloc_zeroed: |size| (boot().malloc_zeroed)(size),
    allocate: |size, align, zero| (boot().allocate)(size, align, zero),
    // SAFETY: forwarded contract.
    free: |p| unsafe { (boot().free)(p) },
    // SAFETY: forwarded contract.
    realloc: |p, size| unsafe { (boot().realloc)(p, size) },
    usable_size: |p| (boot().usable_size)(p),
    size_fits: |p, size, align| (boot().size_fits)(p, size, align),
    stats: || (boot().stats)(),
    describe: |w| (boot().describe)(w),
    config_name: None,
};

// ---- the installer ---------------------------------------------------------------------------

// Defined by `export!` in the library that invokes it (`installer.rs` has the two kinds), the
// way `#[global_allocator]` provides `__rust_alloc`: this crate is built once, and each
// library decides which heap it builds.
#[cfg(not(test))]
extern "Rust" {
    fn alloclab_preload_install(conf: &Conf) -> &'static Ops;
}

/// Builds the heap of the library being run.
///
/// # Safety
/// As for `installer::install_selected`.
#[cfg(not(test))]
unsafe fn install(conf: &Conf) -> &'static Ops {
    // SAFETY: forwarded contract; `export!` defines the symbol with this signature.
    unsafe { alloclab_preload_install(conf) }
}

// Also defined by `export!`: the conf the library was built with (`export!(C, "...")`), empty
// unless given, applied before `ALLOCLAB_CONF` (jemalloc's `--with-malloc-conf`).
#[cfg(not(test))]
extern "Rust" {
    fn alloclab_preload_built_in_conf() -> &'static str;
}

/// The library's built-in conf.
#[cfg(not(test))]
fn built_in_conf() -> &'static str {
    // SAFETY: `export!` defines the symbol with this signature; it only returns a literal.
    unsafe { alloclab_preload_built_in_conf() }
}

/// The unit-test binary has no `export!`, so no built-in conf.
#[cfg(test)]
fn built_in_conf() -> &'static str {
    ""
}

/// The unit-test binary has no `export!`: it builds the selected heap directly.
///
/// # Safety
/// As for `installer::install_selected`.
#[cfg(test)]
unsafe fn install(conf: &Conf) -> &'static Ops {
    // SAFETY: forwarded contract.
    unsafe { crate::installer::install_selected(conf) }
}

// ---- run-time flags other files read --------------------------------------------------------

/// Where statistics go at exit; -1: nowhere (`stats_print:false`).
static STATS_FD: AtomicI32 = AtomicI32::new(-1);
static ZERO_REALLOC_ALLOCATES: AtomicBool = AtomicBool::new(false);
static CHECK_SIZED_DELETE: AtomicBool = AtomicBool::new(false);
/// The selection and names, for the statistics title.
static mut CONF: Option<Conf> = None;

/// Whether `realloc(p, 0)` returns a minimal allocation (else it frees `p`, glibc's way).
#[inline]
pub fn zero_realloc_allocates() -> bool {
    ZERO_REALLOC_ALLOCATES.load(Ordering::Relaxed)
}

/// Whether C++ sized `delete` checks its size against the allocation (the hardened and
/// debug profiles).
#[inline]
pub fn check_sized_delete() -> bool {
    CHECK_SIZED_DELETE.load(Ordering::Relaxed)
}

// ---- initialization -------------------------------------------------------------------------

static INIT_LOCK: RawLock = RawLock::new();
/// The thread initializing, to turn a re-entrant call into a message rather than a deadlock.
static INIT_OWNER: AtomicI32 = AtomicI32::new(0);

/// Bytes of `ALLOCLAB_CONF` kept when it must be read from `/proc`.
const CONF_MAX: usize = 4096;

#[cold]
#[inline(never)]
fn boot() -> &'static Ops {
    ensure_init();
    ops()
}

/// Chooses and builds the heap if nobody has yet; then makes sure fork is handled.
#[cold]
pub fn ensure_init() {
    if !core::ptr::eq(ops(), &BOOT) {
        register_atfork();
        return;
    }
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    if INIT_OWNER.load(Ordering::Relaxed) == me {
        let mut l = Line::new();
        l.str("the allocator was called again while it initialized (a bug); aborting");
        l.print();
        alloclab_core::os::abort();
    }
    INIT_LOCK.lock();
    if core::ptr::eq(ops(), &BOOT) {
        INIT_OWNER.store(me, Ordering::Relaxed);
        let conf = read_conf();
        start_log(&conf);
        // SAFETY: under `INIT_LOCK` and while `OPS` is still `BOOT`: this runs once, and the
        // table is published below with release ordering.
        let table = unsafe { install(&conf) };
        // SAFETY: written once here, before `OPS` is published; read only after (release /
        // acquire through `OPS`).
        unsafe { CONF = Some(conf) };
        if conf.stats_print {
            STATS_FD.store(save_stderr(), Ordering::Relaxed);
        }
        ZERO_REALLOC_ALLOCATES.store(conf.zero_realloc == ZeroRealloc::Alloc, Ordering::Relaxed);
        CHECK_SIZED_DELETE.store(conf.profile != 0, Ordering::Relaxed);
        OPS.store(table as *const Ops as *mut Ops, Ordering::Release);
        INIT_OWNER.store(0, Ordering::Relaxed);
    }
    INIT_LOCK.unlock();
    register_atfork();
}

/// Reads and parses `ALLOCLAB_CONF`, reporting bad entries; prints help if asked; aborts if
/// an entry was bad and `abort_conf:true`.
fn read_conf() -> Conf {
    // A buffer for the value only when it has to be read from `/proc` (a first call so early
    // that libc has not set `environ`), mapped for that case alone: a static one would keep
    // a page of `.bss` between the statics that start-up writes.
    let mapped = if crate::env::environ_is_set() {
        None
    } else {
        alloclab_core::os::map(CONF_MAX)
    };
    let scratch: &mut [u8] = match mapped {
        // SAFETY: a fresh private mapping of `CONF_MAX` bytes, used only here and unmapped
        // below, after the last use of what was read into it.
        Some(p) => unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), CONF_MAX) },
        None => &mut [],
    };
    let conf = parse_conf(crate::env::alloclab_conf(scratch));
    if let Some(p) = mapped {
        // SAFETY: mapped above with this size; `conf` holds no reference into it.
        unsafe { alloclab_core::os::unmap(p.as_ptr(), CONF_MAX) };
    }
    conf
}

/// Parses what the environment says, as `read_conf` describes.
fn parse_conf(lookup: crate::env::Lookup<'_>) -> Conf {
    let input: &[u8] = match lookup {
        crate::env::Lookup::Absent => b"",
        crate::env::Lookup::Value(v) => v,
        crate::env::Lookup::TooLong => {
            let mut l = Line::new();
            l.str("ALLOCLAB_CONF is longer than ")
                .num(CONF_MAX)
                .str(" bytes; ignored");
            l.print();
            b""
        }
    };
    let built_in = parse::parse(built_in_conf().as_bytes(), &mut |b| {
        parse::print_bad_from("built-in conf", b)
    });
    let mut parsed = parse::parse_onto(built_in.conf, input, &mut parse::print_bad);
    parsed.bad += built_in.bad;
    parsed.help |= built_in.help;
    if parsed.help {
        let _ = parse::write_help(&mut FdWriter::new(2));
    }
    if parsed.bad > 0 && parsed.conf.abort_conf {
        let mut l = Line::new();
        l.num(parsed.bad)
            .str(" bad ALLOCLAB_CONF entries and abort_conf:true; aborting");
        l.print();
        alloclab_core::os::abort();
    }
    parsed.conf
}

/// Opens the allocation log if `log:` asks for one; a path that cannot be opened is a bad
/// entry (reported by `log_sink`), fatal with `abort_conf:true`.
fn start_log(conf: &Conf) {
    if !log_sink::start(&conf.log) && conf.abort_conf {
        let mut l = Line::new();
        l.str("the log cannot be opened and abort_conf:true; aborting");
        l.print();
        alloclab_core::os::abort();
    }
}

// ---- fork -----------------------------------------------------------------------------------

// The log's lock is taken first and released last: a logged `realloc` holds it while the heap
// takes its locks.
extern "C" fn prefork() {
    log_sink::prefork();
    alloclab_core::fork::prefork();
}
extern "C" fn postfork_parent() {
    alloclab_core::fork::postfork_parent();
    log_sink::postfork_parent();
}
extern "C" fn postfork_child() {
    alloclab_core::fork::postfork_child();
    log_sink::postfork_child();
}

/// Registers the fork handlers once (outside every lock: glibc may allocate to record them).
fn register_atfork() {
    alloclab_core::fork::install_handlers(prefork, postfork_parent, postfork_child);
}

// ---- statistics -----------------------------------------------------------------------------

/// Lowest descriptor number tried for the duplicate of stderr: out of the way of programs
/// that expect `open` to return small numbers.
const SAVED_FD_MIN: i32 = 1000;

/// A close-on-exec duplicate of fd 2 (or fd 2 itself if it cannot be made).
fn save_stderr() -> i32 {
    for min in [SAVED_FD_MIN, 3] {
        // SAFETY: F_DUPFD_CLOEXEC only creates a descriptor; fd 2 may be closed (then -1).
        let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, min) };
        if fd >= 0 {
            return fd;
        }
    }
    2
}

/// Prints the heap's statistics to `fd` (without allocating), titled with the selection.
pub fn print_stats(fd: i32, when: &str) {
    let ops = ops();
    // SAFETY: `CONF` was written before `OPS` was published, and `ops()` acquired it.
    let Some(conf) = (unsafe { *core::ptr::addr_of!(CONF) }) else {
        return;
    };
    let mut title = Line::bare();
    // SAFETY: getpid has no preconditions.
    title
        .str("pid ")
        .num(unsafe { libc::getpid() } as usize)
        .str(" ")
        .str(when)
        .str(", ");
    match (ops.config_name, conf.exact_name()) {
        (Some(name), _) | (None, Some(name)) => title.str("config ").str(name),
        (None, None) => title.str("custom config from ").str(conf.named().name),
    };
    title.str(": ");
    let _ = (ops.describe)(&mut title);
    let sel = conf.selection();
    title.str(", narenas ").num(sel.options.narenas);
    match sel.options.purge_policy() {
        alloclab_core::Purge::Threshold => title.str(", purge threshold"),
        alloclab_core::Purge::Decay(ms) => title.str(", purge decay:").num(ms as usize),
    };
    let stats = (ops.stats)();
    // The title is ASCII we built; user input never reaches it.
    let text = core::str::from_utf8(title.as_bytes()).unwrap_or("alloclab");
    let _ = stats.write_report(&mut FdWriter::new(fd), text);
}

// ---- constructor and destructor -------------------------------------------------------------

/// Runs when the library is loaded: initializes even a program that never allocates (so that
/// `help` and bad entries are reported) and registers the fork handlers early. `export!`
/// puts it in the library's `.init_array`.
pub extern "C" fn on_load() {
    ensure_init();
}

/// Runs at exit after the program's own `atexit` handlers and destructors. `export!` puts it
/// in the library's `.fini_array`.
pub extern "C" fn on_unload() {
    let fd = STATS_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        log_sink::snapshot(|| print_stats(fd, "at exit"));
    }
    log_sink::at_exit();
}
