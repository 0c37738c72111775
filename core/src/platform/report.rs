//! Messages to standard error (or any descriptor) without allocating: `core::fmt` into a
//! buffer, then `write(2)`. Used for fatal errors, and for statistics and help printed from
//! inside an allocator. The lowest layer: it calls only libc (`write`, `abort`), so that every
//! other one, the platform layer `os.rs` included, can report through it.

use core::fmt::{self, Write};

/// A buffered `fmt::Write` to a file descriptor, flushed when full and when dropped. `N` bytes
/// are written at once: with `N` up to `PIPE_BUF`, a report that fits stays whole on a pipe
/// shared with other processes.
pub struct FdWriter<const N: usize = 512> {
    fd: i32,
    buf: [u8; N],
    len: usize,
}

/// A writer to standard error.
pub type StderrWriter = FdWriter<512>;

impl<const N: usize> FdWriter<N> {
    /// An empty writer to `fd`.
    pub const fn new(fd: i32) -> Self {
        FdWriter {
            fd,
            buf: [0; N],
            len: 0,
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) {
        write_all(self.fd, &self.buf[..self.len]);
        self.len = 0;
    }
}

impl StderrWriter {
    /// An empty writer to standard error.
    pub const fn stderr() -> Self {
        FdWriter::new(2)
    }
}

impl<const N: usize> Write for FdWriter<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if self.len == N {
                self.flush();
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

impl<const N: usize> Drop for FdWriter<N> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Prints `alloclab: <message>` on one line and aborts the process.
#[cold]
pub fn fatal(args: fmt::Arguments<'_>) -> ! {
    {
        let mut w = StderrWriter::stderr();
        let _ = w.write_str("alloclab: ");
        let _ = w.write_fmt(args);
        let _ = w.write_str("\n");
    }
    abort()
}

/// Writes all of `bytes` to `fd`, ignoring failures (there is nobody to tell).
pub fn write_all(fd: i32, bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: the pointer and length describe the live slice `rest`.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// Writes all of `bytes` to standard error.
pub fn write_stderr(bytes: &[u8]) {
    write_all(2, bytes);
}

/// Ends the process with SIGABRT, without unwinding and without running anything that could
/// allocate.
pub fn abort() -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}
