//! Messages to stderr without allocating.
//!
//! `Line`: one line built in a stack buffer and written with a single `write(2)`. Why not
//! `eprintln!`: it may allocate (and we *are* `malloc`), and messages printed from an allocator
//! must come out whole even when threads print at once. Overlong lines are cut and end in
//! `...`: a message is never split into two writes.
//!
//! `FdWriter`: longer text (help, statistics) to a given descriptor, buffered up to
//! `PIPE_BUF` bytes, so that a statistics report (about 3 KiB) is one write and stays whole
//! when several processes of a pipeline print theirs to the same pipe at exit.

use core::fmt;

/// Capacity of one line, newline included.
const CAP: usize = 480;

/// A line being built.
pub struct Line {
    buf: [u8; CAP],
    len: usize,
    cut: bool,
}

impl Line {
    /// A line starting with `alloclab: `, as every message of the library does.
    pub const fn new() -> Line {
        let mut l = Line::bare();
        let prefix = b"alloclab: ";
        let mut i = 0;
        while i < prefix.len() {
            l.buf[i] = prefix[i];
            i += 1;
        }
        l.len = prefix.len();
        l
    }

    /// An empty line without the prefix.
    pub const fn bare() -> Line {
        Line {
            buf: [0; CAP],
            len: 0,
            cut: false,
        }
    }

    /// Appends raw bytes (user input may not be UTF-8; it is written as it is).
    pub fn bytes(&mut self, b: &[u8]) -> &mut Line {
        for &c in b {
            // Keep room for "...\n".
            if self.len + 4 >= CAP {
                self.cut = true;
                break;
            }
            // A control character in user input must not break the line in two.
            self.buf[self.len] = if c < b' ' || c == 0x7f { b'?' } else { c };
            self.len += 1;
        }
        self
    }

    /// Appends text.
    pub fn str(&mut self, s: &str) -> &mut Line {
        self.bytes(s.as_bytes())
    }

    /// Appends a number in decimal.
    pub fn num(&mut self, mut n: usize) -> &mut Line {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.bytes(&digits[i..])
    }

    /// The line so far, without the newline (for tests and titles).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Writes the line and its newline to fd 2.
    pub fn print(&mut self) {
        if self.cut {
            self.buf[self.len..self.len + 3].copy_from_slice(b"...");
            self.len += 3;
            self.cut = false;
        }
        self.buf[self.len] = b'\n';
        alloclab_core::os::write_stderr(&self.buf[..self.len + 1]);
        self.len = 0;
    }
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.str(s);
        Ok(())
    }
}

/// Buffered `fmt::Write` to a file descriptor, `PIPE_BUF` bytes per write.
pub type FdWriter = alloclab_core::report::FdWriter<{ libc::PIPE_BUF }>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_one_prefixed_line_and_cuts_long_input() {
        let mut l = Line::new();
        l.str("entry '").bytes(b"a\nb").str("' #").num(1024);
        assert_eq!(l.as_bytes(), b"alloclab: entry 'a?b' #1024");
        let mut l = Line::new();
        l.bytes(&[b'x'; 1000]);
        assert!(l.cut);
        assert!(l.as_bytes().len() < CAP - 3);
        let mut n = Line::new();
        n.num(0).str(" ").num(usize::MAX);
        assert_eq!(n.as_bytes(), b"alloclab: 0 18446744073709551615");
    }
}
