//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// A small deterministic PRNG (xorshift64*), so tests need no extra crates and replay exactly.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    /// A size from 1 byte to several MiB, weighted like real programs: mostly small.
    pub fn size(&mut self) -> usize {
        match self.below(1000) {
            0..=799 => 1 + self.below(512),
            800..=949 => 513 + self.below(3840 - 512),
            950..=994 => 3841 + self.below(256 * 1024),
            995..=998 => 256 * 1024 + self.below(800 * 1024),
            _ => (1 << 20) + self.below(4 << 20),
        }
    }
    /// An alignment: mostly 8 or 16, sometimes up to 1 MiB.
    pub fn align(&mut self) -> usize {
        match self.below(100) {
            0..=89 => 8 << self.below(2),
            90..=97 => 32 << self.below(8),
            _ => 8192 << self.below(8),
        }
    }
}

/// The byte written at `offset` of an allocation tagged `tag`.
pub fn pattern(tag: u64, offset: usize) -> u8 {
    (tag.wrapping_mul(31).wrapping_add(offset as u64 * 7) >> 3) as u8 ^ (offset as u8)
}

/// Offsets checked in an allocation of `size` bytes: all of a small one, a sample of a big one.
pub fn sample_offsets(size: usize) -> impl Iterator<Item = usize> {
    let step = if size <= 8192 { 1 } else { 509 };
    (0..size).step_by(step).chain(size.saturating_sub(64)..size)
}

/// Fills an allocation with its pattern.
///
/// # Safety
/// `p` points to at least `size` writable bytes.
pub unsafe fn fill(p: *mut u8, size: usize, tag: u64) {
    for off in sample_offsets(size) {
        // SAFETY: `off < size` and the caller guarantees `size` writable bytes.
        unsafe { *p.add(off) = pattern(tag, off) };
    }
}

/// Checks an allocation's pattern, naming the first wrong byte.
///
/// # Safety
/// `p` points to at least `size` readable bytes.
pub unsafe fn verify(p: *const u8, size: usize, tag: u64) {
    // SAFETY: forwarded contract.
    unsafe { verify_prefix(p, size, size, tag) }
}

/// Checks the first `len` bytes of an allocation that was filled as `size` bytes (after a
/// realloc shrank it, or when it was moved).
///
/// # Safety
/// `p` points to at least `len` readable bytes.
pub unsafe fn verify_prefix(p: *const u8, size: usize, len: usize, tag: u64) {
    for off in sample_offsets(size).filter(|&o| o < len) {
        // SAFETY: `off < len` and the caller guarantees `len` readable bytes.
        let got = unsafe { *p.add(off) };
        assert_eq!(
            got,
            pattern(tag, off),
            "allocation {p:?} (size {size}, tag {tag}) corrupted at offset {off}"
        );
    }
}

/// Whether the page holding `addr` is mapped (`None` if not) and resident. `mincore` answers
/// without touching the page and without allocating, so it is safe in a forked child.
pub fn residency(addr: usize) -> Option<bool> {
    let page = addr & !(4096 - 1);
    let mut v = 0u8;
    // SAFETY: mincore only reads the page tables; `v` has room for the one page asked about.
    let r = unsafe { libc::mincore(page as *mut libc::c_void, 1, &mut v) };
    if r == 0 {
        return Some(v & 1 == 1);
    }
    let err = std::io::Error::last_os_error().raw_os_error();
    assert_eq!(
        err,
        Some(libc::ENOMEM),
        "mincore({page:#x}) failed unexpectedly"
    );
    None
}

/// Whether the page holding `addr` is mapped in this process.
pub fn is_mapped(addr: usize) -> bool {
    residency(addr).is_some()
}

/// Exit status of a child whose closure panicked.
const CHILD_PANICKED: i32 = 101;

/// Forks; the child runs `child` with the write end of a pipe (and must `_exit`). Returns the
/// child's wait status and what it wrote, at most 4 KiB (written whole, it fits the pipe's
/// buffer, so the child never blocks on it). A child still running after 20 s (deadlocked on
/// a lock some vanished thread held at the fork) is killed and the test fails.
fn fork_child(child: impl FnOnce(i32)) -> (i32, String) {
    let mut fds = [0; 2];
    // SAFETY: plain syscalls on valid out-pointers and on descriptors made here; the child runs
    // `child`, which ends it.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            libc::close(fds[0]);
            // A panic must not unwind into a copy of the test harness.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(fds[1])));
            libc::_exit(if ran.is_ok() { 0 } else { CHILD_PANICKED });
        }
        libc::close(fds[1]);
        let mut status = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 {
            if std::time::Instant::now() > deadline {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
                panic!("child hung (deadlocked?)");
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut buf = [0u8; 4096];
        let mut len = 0;
        while len < buf.len() {
            let n = libc::read(fds[0], buf[len..].as_mut_ptr().cast(), buf.len() - len);
            if n <= 0 {
                break;
            }
            len += n as usize;
        }
        libc::close(fds[0]);
        (status, String::from_utf8_lossy(&buf[..len]).into_owned())
    }
}

/// Runs `f` in a forked child, which has this one thread only, and returns the message `f`
/// failed with, if any. Fails if the child hangs (a lock held across the fork) or dies.
///
/// Also for checks about the address space: in the test process itself, another test thread
/// may map an address between the moment it is freed and the moment it is checked. `f` must not
/// allocate through an allocator without fork handlers (another thread may hold its locks at the
/// moment of the fork); glibc's and alloclab's have them.
pub fn in_child(f: impl FnOnce() -> Result<(), &'static str>) -> Result<(), String> {
    let (status, text) = fork_child(|fd| {
        if let Err(msg) = f() {
            // SAFETY: writes the message to the pipe and ends the child.
            unsafe {
                libc::write(fd, msg.as_ptr().cast(), msg.len());
                libc::_exit(1);
            }
        }
    });
    assert!(
        libc::WIFEXITED(status),
        "child did not exit normally (status {status:#x})"
    );
    match libc::WEXITSTATUS(status) {
        0 => Ok(()),
        CHILD_PANICKED => Err(format!("the child panicked: {text}")),
        _ => Err(text),
    }
}

/// Runs `f` in a forked child with stderr captured; asserts that the child died of SIGABRT and
/// returns what it wrote to stderr. `f` must not allocate through the system allocator (other
/// test threads may hold its locks at the moment of the fork).
pub fn expect_abort(f: impl FnOnce()) -> String {
    expect_signal(libc::SIGABRT, f)
}

/// As [`expect_abort`], for a child that must die of `signal` (SIGSEGV for a guard page).
pub fn expect_signal(signal: i32, f: impl FnOnce()) -> String {
    let (status, text) = fork_child(|fd| {
        // SAFETY: points the child's stderr at the pipe.
        unsafe { libc::dup2(fd, 2) };
        f();
    });
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == signal,
        "child did not die of signal {signal} (status {status:#x}); stderr: {text:?}"
    );
    text
}
