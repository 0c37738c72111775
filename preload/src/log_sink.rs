//! Where the allocation log's lines go (`log:<path>`): one buffer for the process, its file,
//! and what fork, exit and a program's own use of descriptors do to them.
//!
//! - **One buffer, one lock.** Not a buffer per thread: the file's order must be an order in
//!   which the calls can have happened (a block freed before its address is handed out again,
//!   whichever threads did it), and buffers flushed at different times would break it. With
//!   one lock, a line's place in the file is the moment it was appended; `log.rs` appends an
//!   allocation after it returns, a free before it happens, and holds the lock across a
//!   `realloc` of a live block (which frees inside), so the order holds. A thread that exits
//!   leaves nothing behind: its lines are in the shared buffer.
//! - **Whole lines, `O_APPEND`.** The buffer holds whole lines and is written whole (to a pipe
//!   or FIFO in pieces of at most `PIPE_BUF` bytes ending at a newline), so the processes of a
//!   forking program share one file without splitting each other's lines.
//! - **Flushed** when the buffer is full; before `fork` (the prepare handler, holding the lock
//!   across the fork: the child inherits an empty buffer, so no line is written twice, and the
//!   parent's lines come before the child's); at exit (from `.fini_array`, after the program's
//!   `atexit` handlers and destructors; calls after that are written through, one write each);
//!   and in `_exit` (`exports.rs`), which forked children often end with.
//! - **The child of a fork** takes its own pid (and its thread's tid) for its lines. With
//!   `%p` in the path each process writes its own file, created (or emptied) when it starts or
//!   is forked: a program that `exec`s keeps its pid, and its new image starts the file again.
//!   Without `%p` every process appends to the one file; lines still buffered when a process
//!   `exec`s or is killed are lost (a suffix of its lines: the log stays valid).
//! - **The program's descriptors.** The log's descriptor is close-on-exec and numbered from
//!   1000, out of the way of programs that expect small numbers; before each write `fstat`
//!   checks that it is still the log file (device and inode), so a program that closed it, or
//!   reused its number, gets the file reopened (never its own file written).
//! - Nothing here allocates: the buffer and paths are static, messages go through `Line`,
//!   error names come from a table here (`strerror` may load translations with `malloc`).

use crate::line::Line;
use crate::log_line::{decimal, Call};
use crate::options::{LogPath, LOG_PATH_MAX};
use alloclab_core::lock::RawLock;
use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Bytes buffered before a write.
const BUF_BYTES: usize = 1 << 16;
/// Bytes of a path: a working directory (`PATH_MAX`), the template, room for expanded pids.
const PATH_BYTES: usize = libc::PATH_MAX as usize + 2 * LOG_PATH_MAX;
/// Lowest descriptor number tried for the log.
const FD_MIN: i32 = 1000;

// ---- the switch, and who is calling -----------------------------------------------------------

/// Whether calls take `log.rs`'s logging path: the one test on the entry points' fast path.
/// True until start-up has decided (so that the call that starts the heap is logged if
/// logging is on), then whether logging is on.
static ROUTE: AtomicBool = AtomicBool::new(true);
/// Whether calls are being logged.
static ON: AtomicBool = AtomicBool::new(false);
/// Serializes appends, flushes and the lines' order.
static LOCK: RawLock = RawLock::new();
/// The thread holding `LOCK` (its tid), or 0.
static OWNER: AtomicU32 = AtomicU32::new(0);
/// This process's pid (updated in the child of a fork).
static PID: AtomicU32 = AtomicU32::new(0);

/// Whether calls must take the logging path (see `ROUTE`).
#[inline(always)]
pub fn route() -> bool {
    ROUTE.load(Ordering::Relaxed)
}

/// Whether calls are being logged.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns logging on or off (`ROUTE` follows).
fn set_on(on: bool) {
    ON.store(on, Ordering::Relaxed);
    ROUTE.store(on, Ordering::Relaxed);
}

/// The process's pid, as the lines give it.
#[inline]
fn pid() -> u32 {
    PID.load(Ordering::Relaxed)
}

/// Bytes of a line's `<pid> <tid> ` prefix.
const PREFIX_MAX: usize = 22;

/// The calling thread as its lines name it: its tid, and the `<pid> <tid> ` that starts them
/// (formatted once per thread, not per line).
#[derive(Clone, Copy)]
pub struct Me {
    /// The thread's tid (`gettid`).
    pub tid: u32,
    len: u8,
    prefix: [u8; PREFIX_MAX],
}

impl Me {
    const UNKNOWN: Me = Me {
        tid: 0,
        len: 0,
        prefix: [0; PREFIX_MAX],
    };

    fn new(pid: u32, tid: u32) -> Me {
        let mut me = Me { tid, ..Me::UNKNOWN };
        let mut at = decimal(pid as usize, &mut me.prefix);
        me.prefix[at] = b' ';
        at += 1;
        at += decimal(tid as usize, &mut me.prefix[at..]);
        me.prefix[at] = b' ';
        me.len = at as u8 + 1;
        me
    }

    /// `<pid> <tid> `.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix[..self.len as usize]
    }
}

std::thread_local! {
    /// The calling thread, once asked (const, no destructor: see lib.rs).
    static ME: Cell<Me> = const { Cell::new(Me::UNKNOWN) };
}

/// The calling thread (its tid asked of the kernel once per thread).
#[inline]
pub fn me() -> Me {
    ME.with(|m| {
        let v = m.get();
        if v.tid != 0 {
            return v;
        }
        // SAFETY: gettid has no preconditions.
        let v = Me::new(pid(), unsafe { libc::gettid() } as u32);
        m.set(v);
        v
    })
}

// ---- the file -----------------------------------------------------------------------------------

struct File {
    buf: [u8; BUF_BYTES],
    /// Bytes of whole lines in `buf`.
    len: usize,
    fd: i32,
    /// Identity of the file `fd` was opened on.
    dev: u64,
    ino: u64,
    /// Whether it is a regular file (else writes are cut at `PIPE_BUF`).
    regular: bool,
    /// After the exit flush: write every line as it comes.
    write_through: bool,
    /// The path has `%p`: a file per process, emptied when opened.
    per_process: bool,
    /// The path as configured (made absolute at start-up), `%p` not expanded.
    template: [u8; PATH_BYTES],
    template_len: usize,
    /// The path of this process's file, NUL-terminated.
    path: [u8; PATH_BYTES + 1],
    path_len: usize,
}

struct Shared(UnsafeCell<File>);

// SAFETY: the `File` is reached only through `Held`, which holds `LOCK` (the child's fork
// handler holds it too: it was taken before the fork, and the child has one thread).
unsafe impl Sync for Shared {}

static FILE: Shared = Shared(UnsafeCell::new(File::closed()));

/// The lock, held; gives the file.
pub struct Held(());

impl Held {
    /// Takes the lock, for the calling thread.
    pub fn take() -> Held {
        Held::take_as(me().tid)
    }

    /// Takes the lock for the calling thread, whose tid is `tid`.
    pub fn take_as(tid: u32) -> Held {
        LOCK.lock();
        OWNER.store(tid, Ordering::Relaxed);
        Held(())
    }

    fn file(&mut self) -> &mut File {
        // SAFETY: `LOCK` is held for as long as `self` lives, and the borrow of `self` keeps
        // this the only reference.
        unsafe { &mut *FILE.0.get() }
    }

    /// Appends one whole line (flushing first if it does not fit).
    pub fn append(&mut self, line: &[u8]) {
        if !on() {
            return;
        }
        let f = self.file();
        if f.len + line.len() > BUF_BYTES {
            f.flush();
            if !on() {
                return; // the write failed: logging stopped
            }
        }
        f.buf[f.len..f.len + line.len()].copy_from_slice(line);
        f.len += line.len();
        if f.write_through {
            f.flush();
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        OWNER.store(0, Ordering::Relaxed);
        LOCK.unlock();
    }
}

/// Appends one whole line of thread `me`, the caller.
pub fn append(me: &Me, line: &[u8]) {
    Held::take_as(me.tid).append(line);
}

impl File {
    /// No log open: the state before `log:` is configured.
    const fn closed() -> File {
        File {
            buf: [0; BUF_BYTES],
            len: 0,
            fd: -1,
            dev: 0,
            ino: 0,
            regular: true,
            write_through: false,
            per_process: false,
            template: [0; PATH_BYTES],
            template_len: 0,
            path: [0; PATH_BYTES + 1],
            path_len: 0,
        }
    }

    /// `path` from `template` for process `pid`; false if it does not fit.
    fn expand(&mut self, pid: u32) -> bool {
        let mut digits = [0u8; 10];
        let nd = decimal(pid as usize, &mut digits);
        let pid_text = &digits[..nd];
        let mut out = 0;
        let mut i = 0;
        while i < self.template_len {
            let b = self.template[i];
            let piece: &[u8] = match (b, self.template.get(i + 1)) {
                (b'%', Some(b'p')) => pid_text,
                (b'%', Some(b'%')) => b"%",
                _ => core::slice::from_ref(&self.template[i]),
            };
            i += if b == b'%' { 2 } else { 1 };
            if out + piece.len() > PATH_BYTES {
                return false;
            }
            self.path[out..out + piece.len()].copy_from_slice(piece);
            out += piece.len();
        }
        self.path[out] = 0;
        self.path_len = out;
        true
    }

    /// Opens `path` for appending (emptied first if `truncate`), on a high descriptor.
    fn open(&mut self, truncate: bool) -> Result<(), i32> {
        let mut flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC;
        if truncate {
            flags |= libc::O_TRUNC;
        }
        // SAFETY: `path` is NUL-terminated (`expand`); `open` only reads it.
        let mut fd = unsafe { libc::open(self.path.as_ptr().cast(), flags, 0o644) };
        if fd < 0 {
            return Err(errno());
        }
        // SAFETY: F_DUPFD_CLOEXEC only creates a descriptor.
        let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, FD_MIN) };
        if high >= 0 {
            // SAFETY: `fd` was opened above and is ours to close.
            unsafe { libc::close(fd) };
            fd = high;
        }
        // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: `st` is a valid, writable `stat`.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            let e = errno();
            // SAFETY: ours, opened above.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        self.fd = fd;
        self.dev = st.st_dev;
        self.ino = st.st_ino;
        self.regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
        Ok(())
    }

    /// Whether `fd` is still the log file; reopens it (never emptying it) if not.
    fn check(&mut self) -> bool {
        // SAFETY: as in `open`.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: `st` is valid and writable; a closed `fd` gives EBADF.
        let same = unsafe { libc::fstat(self.fd, &mut st) } == 0
            && st.st_dev == self.dev
            && st.st_ino == self.ino;
        if same {
            return true;
        }
        // Closed by the program, or its number reused for another file: never write there,
        // never close it (it may be the program's now).
        match self.open(false) {
            Ok(()) => true,
            Err(e) => {
                self.fail("cannot reopen", e);
                false
            }
        }
    }

    /// Writes the buffered lines.
    fn flush(&mut self) {
        if self.len == 0 {
            return;
        }
        if !self.check() {
            self.len = 0;
            return;
        }
        let mut done = 0;
        while done < self.len {
            let mut end = self.len;
            if !self.regular && end - done > libc::PIPE_BUF {
                // A pipe keeps only writes of up to PIPE_BUF bytes whole: end at a newline.
                let window = &self.buf[done..done + libc::PIPE_BUF];
                end = done
                    + window
                        .iter()
                        .rposition(|&b| b == b'\n')
                        .map_or(window.len(), |i| i + 1);
            }
            // SAFETY: the pointer and length describe `buf[done..end]`.
            let n = unsafe { libc::write(self.fd, self.buf[done..].as_ptr().cast(), end - done) };
            if n > 0 {
                done += n as usize;
                continue;
            }
            let e = if n < 0 { errno() } else { libc::EIO };
            if e == libc::EINTR {
                continue;
            }
            self.fail("cannot write", e);
            break;
        }
        self.len = 0;
    }

    /// Reports a failure on one line and stops logging.
    fn fail(&mut self, what: &str, e: i32) {
        set_on(false);
        let mut l = Line::new();
        l.str("log ")
            .bytes(&self.path[..self.path_len])
            .str(": ")
            .str(what)
            .str(": ");
        describe(&mut l, e);
        l.str("; logging stops");
        l.print();
    }
}

// ---- start-up, fork, exit -------------------------------------------------------------------

/// At start-up: starts logging to `path` (from `log:`) unless it is off. On failure prints
/// one line naming the entry and why, and returns false (not logging).
pub fn start(path: &LogPath) -> bool {
    if path.is_off() {
        set_on(false);
        return true;
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    // Before anything asks `me()`, which formats the pid into the thread's prefix.
    PID.store(pid, Ordering::Relaxed);
    let mut h = Held::take();
    let f = h.file();
    let written = path.as_bytes();
    // A relative path is taken from the working directory now, so that forked children that
    // change directory still write the same file (a program started by `exec` reads
    // `ALLOCLAB_CONF` afresh, from its own working directory).
    let mut at = 0;
    if written.first() != Some(&b'/') {
        // SAFETY: `template` is writable for its whole length; getcwd NUL-terminates.
        let cwd = unsafe { libc::getcwd(f.template.as_mut_ptr().cast(), libc::PATH_MAX as usize) };
        if !cwd.is_null() {
            at = f.template.iter().position(|&b| b == 0).unwrap_or(0);
            if at > 0 && f.template[at - 1] != b'/' {
                f.template[at] = b'/';
                at += 1;
            }
        }
    }
    f.template[at..at + written.len()].copy_from_slice(written);
    f.template_len = at + written.len();
    f.per_process = path.per_process();
    let opened = if f.expand(pid) {
        f.open(f.per_process)
    } else {
        Err(libc::ENAMETOOLONG)
    };
    match opened {
        Ok(()) => {
            set_on(true);
            true
        }
        Err(e) => {
            set_on(false);
            let mut l = Line::new();
            l.str("ALLOCLAB_CONF entry 'log:")
                .bytes(written)
                .str("': cannot open ")
                .bytes(&f.path[..f.path_len])
                .str(": ");
            describe(&mut l, e);
            l.str("; not logging");
            l.print();
            false
        }
    }
}

/// Fork, before: takes the lock (kept across the fork) and writes the buffer out.
pub fn prefork() {
    let mut h = Held::take();
    if on() {
        h.file().flush();
    }
    core::mem::forget(h);
}

/// Fork, in the parent: releases the lock.
pub fn postfork_parent() {
    drop(Held(()));
}

/// Fork, in the child: its own pid and tid; with `%p`, its own file. Releases the lock.
pub fn postfork_child() {
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid() as u32, libc::gettid() as u32) };
    PID.store(pid, Ordering::Relaxed);
    ME.with(|m| m.set(Me::new(pid, tid)));
    let mut h = Held(());
    let f = h.file();
    // Written out before the fork; anything left failed to be written, and is the parent's.
    f.len = 0;
    if on() && f.per_process {
        // The child writes its own file only.
        // SAFETY: the inherited descriptor is this process's copy of the parent's log;
        // closing it does not affect the parent.
        unsafe { libc::close(f.fd) };
        let opened = if f.expand(pid) {
            f.open(true)
        } else {
            Err(libc::ENAMETOOLONG)
        };
        if let Err(e) = opened {
            f.fail("cannot open", e);
        }
    }
    OWNER.store(0, Ordering::Relaxed);
    LOCK.reset();
    core::mem::forget(h);
}

/// Runs `snapshot` (the exit statistics) with a `jemalloc_stats()` line at that point of the
/// log, so that the log says where the snapshot was taken.
pub fn snapshot(snapshot: impl FnOnce()) {
    if !on() {
        snapshot();
        return;
    }
    let me = me();
    let mut h = Held::take_as(me.tid);
    let line = Call::JemallocStats.line(me.prefix(), 0);
    h.append(line.as_bytes());
    snapshot();
}

/// Process exit (after the program's `atexit` handlers and destructors): writes the buffer
/// out; later calls (other libraries' destructors, threads still running) are written as
/// they come.
pub fn at_exit() {
    if !on() {
        return;
    }
    let mut h = Held::take();
    let f = h.file();
    f.flush();
    f.write_through = true;
}

/// `_exit`: writes the buffer out, unless this thread is inside the log already (`_exit`
/// from a signal handler that interrupted a logged call): then the buffer is left, rather
/// than deadlock or write a half-appended line.
pub fn before_exit() {
    if !on() || OWNER.load(Ordering::Relaxed) == me().tid {
        return;
    }
    Held::take().file().flush();
}

// ---- errors ---------------------------------------------------------------------------------

fn errno() -> i32 {
    // SAFETY: `__errno_location` returns the calling thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

/// Appends what error `e` means: its name and meaning for the errors opening and writing
/// a file give, else its number.
fn describe(l: &mut Line, e: i32) {
    let known: &[(i32, &str)] = &[
        (libc::ENOENT, "ENOENT, no such file or directory"),
        (libc::EACCES, "EACCES, permission denied"),
        (libc::EPERM, "EPERM, operation not permitted"),
        (libc::EISDIR, "EISDIR, is a directory"),
        (
            libc::ENOTDIR,
            "ENOTDIR, a component of the path is not a directory",
        ),
        (libc::EROFS, "EROFS, read-only file system"),
        (libc::ENOSPC, "ENOSPC, no space left on device"),
        (libc::EDQUOT, "EDQUOT, disk quota exceeded"),
        (libc::EFBIG, "EFBIG, file too large"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG, file name too long"),
        (libc::ELOOP, "ELOOP, too many symbolic links"),
        (libc::EMFILE, "EMFILE, too many open files"),
        (libc::ENFILE, "ENFILE, too many open files in system"),
        (libc::ETXTBSY, "ETXTBSY, text file busy"),
        (libc::ENXIO, "ENXIO, no such device or address"),
        (libc::EIO, "EIO, input/output error"),
        (libc::EPIPE, "EPIPE, broken pipe"),
        (libc::EBADF, "EBADF, bad file descriptor"),
    ];
    match known.iter().find(|(n, _)| *n == e) {
        Some((_, text)) => l.str(text),
        None => l.str("error ").num(e.max(0) as usize),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_named_without_allocating() {
        let mut a = Line::bare();
        let mut b = Line::bare();
        let n = crate::alloc_count::during(|| {
            describe(&mut a, libc::ENOENT);
            describe(&mut b, 4321);
        });
        assert_eq!(n, 0);
        assert_eq!(a.as_bytes(), b"ENOENT, no such file or directory");
        assert_eq!(b.as_bytes(), b"error 4321");
    }

    #[test]
    fn paths_expand_the_pid() {
        let mut f = File {
            per_process: true,
            ..File::closed()
        };
        let t = b"/tmp/%p/x.%%p.%p";
        f.template[..t.len()].copy_from_slice(t);
        f.template_len = t.len();
        assert!(f.expand(4021));
        assert_eq!(&f.path[..f.path_len + 1], b"/tmp/4021/x.%p.4021\0");
        assert!(f.expand(0));
        assert_eq!(&f.path[..f.path_len], b"/tmp/0/x.%p.0");
        // As many %p as a template can hold still fits.
        let many = [b'%', b'p'].repeat(LOG_PATH_MAX / 2);
        f.template[..many.len()].copy_from_slice(&many);
        f.template_len = many.len();
        assert!(f.expand(u32::MAX));
        assert_eq!(f.path_len, LOG_PATH_MAX / 2 * 10);
    }
}
