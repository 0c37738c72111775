//! Messages to standard error without allocating: `core::fmt` into a stack buffer, then
//! `write(2)`. Used for fatal errors and for statistics printed from inside an allocator.

use core::fmt::{self, Write};

/// A fixed-size buffer that implements `fmt::Write`, flushing to stderr when full.
pub struct StderrWriter {
    buf: [u8; 512],
    len: usize,
}

impl StderrWriter {
    /// An empty writer.
    pub const fn new() -> Self {
        StderrWriter {
            buf: [0; 512],
            len: 0,
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) {
        crate::os::write_stderr(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl Default for StderrWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for StderrWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if self.len == self.buf.len() {
                self.flush();
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

impl Drop for StderrWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Prints `alloclab: <message>` on one line and aborts the process.
#[cold]
pub fn fatal(args: fmt::Arguments<'_>) -> ! {
    {
        let mut w = StderrWriter::new();
        let _ = w.write_str("alloclab: ");
        let _ = w.write_fmt(args);
        let _ = w.write_str("\n");
    }
    crate::os::abort()
}
