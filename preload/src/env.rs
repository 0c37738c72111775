//! Finding `ALLOCLAB_CONF` without allocating, however early the first `malloc` comes.
//!
//! `getenv` would do in `main`, but the first allocation can come from the dynamic loader or
//! from another library's constructor, possibly before libc has set `environ`. So: scan
//! `environ` when it is set; otherwise read the initial environment from
//! `/proc/self/environ` in page-sized stack chunks, copying only our variable's value into the
//! caller's buffer.

use core::ffi::c_char;

/// The variable's name with its `=`.
const PREFIX: &[u8] = b"ALLOCLAB_CONF=";

/// What the environment says.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// The variable is not set.
    Absent,
    /// Its value.
    Value(&'a [u8]),
    /// Set, but longer than the buffer (only when read from `/proc`).
    TooLong,
}

extern "C" {
    static environ: *const *const c_char;
}

/// Whether libc has set `environ` (else [`alloclab_conf`] reads `/proc` into its buffer).
pub fn environ_is_set() -> bool {
    // SAFETY: reading the pointer value of libc's `environ` is always allowed.
    !unsafe { environ }.is_null()
}

/// Looks `ALLOCLAB_CONF` up; `scratch` holds the value if it has to be copied.
pub fn alloclab_conf(scratch: &mut [u8]) -> Lookup<'_> {
    // SAFETY: reading the pointer value of libc's `environ` is always allowed; it is either
    // null or a null-terminated array of NUL-terminated strings that live for the process.
    let env = unsafe { environ };
    if env.is_null() {
        return from_proc(scratch);
    }
    // SAFETY: as above; nothing changes the environment while the allocator initializes
    // (the program has not run yet, or holds no reference to the strings it may replace).
    unsafe { from_environ(env) }
}

/// Scans a C environment array.
///
/// # Safety
/// `env` is a null-terminated array of NUL-terminated strings that outlive the result.
pub unsafe fn from_environ<'a>(env: *const *const c_char) -> Lookup<'a> {
    let mut i = 0;
    loop {
        // SAFETY: the caller guarantees the array is null-terminated; we stop at the null.
        let s = unsafe { *env.add(i) };
        if s.is_null() {
            return Lookup::Absent;
        }
        // SAFETY: a NUL-terminated string per the contract.
        let entry = unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes();
        if let Some(value) = entry.strip_prefix(PREFIX) {
            return Lookup::Value(value);
        }
        i += 1;
    }
}

/// Reads `/proc/self/environ` (the environment the process started with).
fn from_proc(scratch: &mut [u8]) -> Lookup<'_> {
    let path = b"/proc/self/environ\0";
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Lookup::Absent;
    }
    let mut scan = Scanner::new(scratch);
    let mut chunk = [0u8; 4096];
    let result = loop {
        // SAFETY: `chunk` is a writable buffer of the given length.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n <= 0 {
            break scan.finish();
        }
        if let Some(done) = scan.feed(&chunk[..n as usize]) {
            break done;
        }
    };
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    match result {
        Found::No => Lookup::Absent,
        Found::TooLong => Lookup::TooLong,
        Found::Yes(len) => Lookup::Value(&scratch[..len]),
    }
}

enum Found {
    No,
    Yes(usize),
    TooLong,
}

/// A streaming matcher over NUL-separated `NAME=value` entries split across reads.
struct Scanner<'a> {
    out: &'a mut [u8],
    /// Bytes of `PREFIX` matched at the start of the current entry, or `None` once the current
    /// entry is known not to be ours.
    matched: Option<usize>,
    /// Length of the value copied so far (in the matching entry).
    copied: usize,
}

impl<'a> Scanner<'a> {
    fn new(out: &'a mut [u8]) -> Self {
        Scanner {
            out,
            matched: Some(0),
            copied: 0,
        }
    }

    /// Consumes bytes; `Some` once the answer is known.
    fn feed(&mut self, bytes: &[u8]) -> Option<Found> {
        for &b in bytes {
            match self.matched {
                Some(m) if m == PREFIX.len() => {
                    if b == 0 {
                        return Some(Found::Yes(self.copied));
                    }
                    if self.copied == self.out.len() {
                        return Some(Found::TooLong);
                    }
                    self.out[self.copied] = b;
                    self.copied += 1;
                }
                Some(m) => {
                    self.matched = if b == PREFIX[m] {
                        Some(m + 1)
                    } else if b == 0 {
                        Some(0)
                    } else {
                        None
                    };
                }
                None => {
                    if b == 0 {
                        self.matched = Some(0);
                    }
                }
            }
        }
        None
    }

    /// End of input: a value still being copied ends here.
    fn finish(&self) -> Found {
        match self.matched {
            Some(m) if m == PREFIX.len() => Found::Yes(self.copied),
            _ => Found::No,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(input: &[u8], cap: usize, chunk: usize) -> Result<Vec<u8>, &'static str> {
        let mut out = vec![0u8; cap];
        let mut s = Scanner::new(&mut out);
        let mut r = None;
        for c in input.chunks(chunk) {
            r = s.feed(c);
            if r.is_some() {
                break;
            }
        }
        match r.unwrap_or_else(|| s.finish()) {
            Found::No => Err("absent"),
            Found::TooLong => Err("too long"),
            Found::Yes(n) => Ok(out[..n].to_vec()),
        }
    }

    #[test]
    fn finds_the_value_across_chunk_boundaries() {
        let env =
            b"PATH=/bin\0XALLOCLAB_CONF=no\0ALLOCLAB_CONFX=no\0ALLOCLAB_CONF=reuse:mrf,x\0HOME=/\0";
        for chunk in 1..env.len() {
            assert_eq!(
                scan(env, 64, chunk),
                Ok(b"reuse:mrf,x".to_vec()),
                "chunk {chunk}"
            );
        }
        assert_eq!(scan(b"A=1\0B=2\0", 64, 3), Err("absent"));
        assert_eq!(scan(b"ALLOCLAB_CONF=abc", 64, 2), Ok(b"abc".to_vec()));
        assert_eq!(scan(b"ALLOCLAB_CONF=\0", 64, 2), Ok(Vec::new()));
        assert_eq!(scan(b"ALLOCLAB_CONF=abcdef\0", 4, 2), Err("too long"));
    }

    #[test]
    fn scans_a_c_environment() {
        let strings = [c"A=1", c"ALLOCLAB_CONF=arenas:single", c"B=2"];
        let mut env: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        env.push(core::ptr::null());
        // SAFETY: a null-terminated array of C strings that outlive the call.
        let got = unsafe { from_environ(env.as_ptr()) };
        assert_eq!(got, Lookup::Value(b"arenas:single"));
        let empty = [core::ptr::null::<c_char>()];
        // SAFETY: as above.
        assert_eq!(unsafe { from_environ(empty.as_ptr()) }, Lookup::Absent);
    }
}
