//! One line of the allocation log, in the format of Firefox's logalloc, formatted in a stack
//! buffer without allocating:
//!
//! ```text
//! <pid> <tid> <function>(<args>)[=<result>]
//! 18545 18545 malloc(32)=0x7f90495120e0
//! 18545 18546 realloc(0x7f90495120e0,64)=0x7f9049536680
//! 18545 18546 free(0x7f9049536680)
//! ```
//!
//! Sizes, counts, alignments, pids and tids in decimal; pointers in hexadecimal with `0x`
//! (null is `0x0`). The functions are logalloc's, which the trace parser of the `alloclab`
//! package reads (`traces/src/trace/mod.rs`); `log.rs` says how each C entry point maps to one.

/// Bytes a line can take: two 10-digit ids, the longest name, two 20-digit numbers or a
/// pointer and a number, a pointer result, punctuation and the newline (under 120).
pub const MAX: usize = 128;

/// A call as logalloc names it. Pointers are addresses (`usize`), null is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `malloc(size)`
    Malloc(usize),
    /// `calloc(count, size)`
    Calloc(usize, usize),
    /// `realloc(ptr, size)`
    Realloc(usize, usize),
    /// `free(ptr)`
    Free(usize),
    /// `posix_memalign(alignment, size)`
    PosixMemalign(usize, usize),
    /// `aligned_alloc(alignment, size)`
    AlignedAlloc(usize, usize),
    /// `memalign(alignment, size)`
    Memalign(usize, usize),
    /// `valloc(size)`
    Valloc(usize),
    /// `jemalloc_stats()`: where a statistics snapshot was taken
    JemallocStats,
}

impl Call {
    /// Whether the line gives a result (`=<pointer>`).
    pub fn returns(self) -> bool {
        !matches!(self, Call::Free(_) | Call::JemallocStats)
    }

    /// The line for this call, after `prefix` (`<pid> <tid> `, at most 22 bytes); `result` is
    /// ignored for the calls that return nothing.
    pub fn line(self, prefix: &[u8], result: usize) -> Record {
        let mut r = Record {
            buf: [0; MAX],
            len: 0,
        };
        r.put(prefix);
        match self {
            Call::Malloc(n) => r.put(b"malloc(").num(n),
            Call::Calloc(c, n) => r.put(b"calloc(").num(c).put(b",").num(n),
            Call::Realloc(p, n) => r.put(b"realloc(").ptr(p).put(b",").num(n),
            Call::Free(p) => r.put(b"free(").ptr(p),
            Call::PosixMemalign(a, n) => r.put(b"posix_memalign(").num(a).put(b",").num(n),
            Call::AlignedAlloc(a, n) => r.put(b"aligned_alloc(").num(a).put(b",").num(n),
            Call::Memalign(a, n) => r.put(b"memalign(").num(a).put(b",").num(n),
            Call::Valloc(n) => r.put(b"valloc(").num(n),
            Call::JemallocStats => r.put(b"jemalloc_stats("),
        };
        if self.returns() {
            r.put(b")=").ptr(result).put(b"\n");
        } else {
            r.put(b")\n");
        }
        r
    }
}

/// Writes `n` in decimal at the start of `out`, returning its length (0 if it does not fit).
pub fn decimal(mut n: usize, out: &mut [u8]) -> usize {
    let digits = n.checked_ilog10().unwrap_or(0) as usize + 1;
    let Some(out) = out.get_mut(..digits) else {
        return 0;
    };
    for d in out.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    digits
}

/// A formatted line, newline included.
pub struct Record {
    buf: [u8; MAX],
    len: usize,
}

impl Record {
    /// The line's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Room for `n` more bytes: `MAX` bounds every line `Call::line` builds, so there always
    /// is; were there not, the bytes would be dropped rather than the allocator panic.
    #[inline(always)]
    fn room(&mut self, n: usize) -> Option<&mut [u8]> {
        let at = self.len;
        let out = self.buf.get_mut(at..at + n)?;
        self.len = at + n;
        Some(out)
    }

    #[inline(always)]
    fn put(&mut self, s: &[u8]) -> &mut Record {
        if let Some(out) = self.room(s.len()) {
            out.copy_from_slice(s);
        }
        self
    }

    /// `n` in decimal.
    #[inline(always)]
    fn num(&mut self, n: usize) -> &mut Record {
        let at = self.len;
        self.len += decimal(n, &mut self.buf[at..]);
        self
    }

    /// `p` in hexadecimal with `0x`.
    #[inline(always)]
    fn ptr(&mut self, mut p: usize) -> &mut Record {
        let digits = ((usize::BITS - (p | 1).leading_zeros()) as usize).div_ceil(4);
        if let Some(out) = self.room(2 + digits) {
            out[0] = b'0';
            out[1] = b'x';
            for d in out[2..].iter_mut().rev() {
                *d = b"0123456789abcdef"[p & 15];
                p >>= 4;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(call: Call, result: usize) -> String {
        String::from_utf8(call.line(b"18545 18546 ", result).as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn lines_are_logallocs() {
        assert_eq!(
            text(Call::Malloc(32), 0x7f90495120e0),
            "18545 18546 malloc(32)=0x7f90495120e0\n"
        );
        assert_eq!(
            text(Call::Realloc(0x7f90495120e0, 64), 0x7f9049536680),
            "18545 18546 realloc(0x7f90495120e0,64)=0x7f9049536680\n"
        );
        assert_eq!(
            text(Call::Free(0x7f9049536680), 1),
            "18545 18546 free(0x7f9049536680)\n"
        );
        assert_eq!(text(Call::Free(0), 0), "18545 18546 free(0x0)\n");
        assert_eq!(
            text(Call::PosixMemalign(256, 240), 0x1000),
            "18545 18546 posix_memalign(256,240)=0x1000\n"
        );
        assert_eq!(text(Call::Calloc(4, 8), 0), "18545 18546 calloc(4,8)=0x0\n");
        assert_eq!(
            text(Call::AlignedAlloc(64, 0), 0x40),
            "18545 18546 aligned_alloc(64,0)=0x40\n"
        );
        assert_eq!(
            text(Call::Memalign(4096, 1), 0xf000),
            "18545 18546 memalign(4096,1)=0xf000\n"
        );
        assert_eq!(
            text(Call::Valloc(5), 0xfffffffffffff000),
            "18545 18546 valloc(5)=0xfffffffffffff000\n"
        );
        assert_eq!(
            text(Call::JemallocStats, 7),
            "18545 18546 jemalloc_stats()\n"
        );
    }

    #[test]
    fn the_longest_line_fits() {
        let r =
            Call::PosixMemalign(usize::MAX, usize::MAX).line(b"4294967295 4294967295 ", usize::MAX);
        let s = core::str::from_utf8(r.as_bytes()).unwrap();
        assert!(s.ends_with("=0xffffffffffffffff\n"), "{s}");
        assert!(s.len() < MAX, "{}", s.len());
        assert!(s.starts_with("4294967295 4294967295 posix_memalign(18446744073709551615,"));
    }

    /// Every line is one the trace parser reads back as the same call.
    #[test]
    fn the_trace_parser_reads_every_kind_of_line() {
        use alloclab_facade::trace::{parse, Func, ParseOptions};
        let mut log = Vec::new();
        let mut next = 0x10000usize;
        let mut alloc = |call: Call, log: &mut Vec<u8>| {
            next += 0x100;
            log.extend_from_slice(call.line(b"7 8 ", next).as_bytes());
            next
        };
        let a = alloc(Call::Malloc(10), &mut log);
        let b = alloc(Call::Calloc(3, 5), &mut log);
        let c = alloc(Call::Realloc(a, 100), &mut log);
        let d = alloc(Call::PosixMemalign(64, 10), &mut log);
        let e = alloc(Call::AlignedAlloc(32, 64), &mut log);
        let f = alloc(Call::Memalign(1, 3), &mut log);
        let g = alloc(Call::Valloc(4097), &mut log);
        alloc(Call::Realloc(0, 1), &mut log);
        for p in [b, c, d, e, f, g, 0] {
            log.extend_from_slice(Call::Free(p).line(b"7 9 ", 0).as_bytes());
        }
        log.extend_from_slice(Call::JemallocStats.line(b"7 8 ", 0).as_bytes());
        let t = parse(&log, &ParseOptions::default()).unwrap();
        assert_eq!(t.pid, 7);
        assert_eq!(t.threads, [8, 9]);
        let names: Vec<&str> = t.ops().iter().map(|op| op.func.name()).collect();
        assert_eq!(
            names,
            [
                "malloc",
                "calloc",
                "realloc",
                "posix_memalign",
                "aligned_alloc",
                "memalign",
                "valloc",
                "realloc",
                "free",
                "free",
                "free",
                "free",
                "free",
                "free",
                "free",
                "jemalloc_stats"
            ]
        );
        let op = t.ops()[1];
        assert_eq!((op.func, op.arg, op.size), (Func::Calloc, 3, 5));
        assert_eq!(t.live_at_end, 1);
    }

    #[test]
    fn formatting_never_allocates() {
        let mut total = 0;
        let n = crate::alloc_count::during(|| {
            for call in [
                Call::Malloc(usize::MAX),
                Call::Realloc(usize::MAX, 0),
                Call::JemallocStats,
            ] {
                total += call.line(b"1 2 ", 3).as_bytes().len();
            }
        });
        assert_eq!(n, 0);
        assert!(total > 60);
    }
}
