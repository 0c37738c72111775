//! Platform layer: the only file that talks to the kernel.
//!
//! Memory comes from anonymous private mappings, which the kernel hands out zero-filled: the
//! engine relies on that and never touches or verifies fresh pages (the start-up seed showed
//! what verifying them costs). Nothing here allocates: errors go to fd 2 through `write(2)`.

use core::ptr::NonNull;
use core::sync::atomic::Ordering::Relaxed;

/// System calls about memory made by this module since the process started, one counter per
/// call (`mmap`, `munmap`, `madvise`, `mremap`): process-wide, for every heap at once (what
/// `strace -c` would count for this allocator). Relaxed counters outside every lock; untracked
/// by loom, since nothing decides on them.
static SYSCALLS: [crate::platform::sync::untracked::AtomicU64; 4] = [
    crate::platform::sync::untracked::AtomicU64::new(0),
    crate::platform::sync::untracked::AtomicU64::new(0),
    crate::platform::sync::untracked::AtomicU64::new(0),
    crate::platform::sync::untracked::AtomicU64::new(0),
];

/// The memory system calls this process made through the engine so far (all heaps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Syscalls {
    /// `mmap` calls (chunks, huge mappings, reservations, metadata), failed ones included.
    pub mmap: u64,
    /// `munmap` calls (trimming an aligned mapping counts too).
    pub munmap: u64,
    /// `madvise` calls (purging).
    pub madvise: u64,
    /// `mremap` calls (huge reallocations).
    pub mremap: u64,
}

/// The counts so far (`Syscalls`).
pub fn syscalls() -> Syscalls {
    Syscalls {
        mmap: SYSCALLS[0].load(Relaxed),
        munmap: SYSCALLS[1].load(Relaxed),
        madvise: SYSCALLS[2].load(Relaxed),
        mremap: SYSCALLS[3].load(Relaxed),
    }
}

fn count(i: usize) {
    SYSCALLS[i].fetch_add(1, Relaxed);
}

/// Bytes in a page. Checked against the kernel's page size once, at heap initialization.
pub const PAGE: usize = 4096;

/// Maps `size` bytes (a multiple of the page size) of fresh zeroed memory.
pub fn map(size: usize) -> Option<NonNull<u8>> {
    map_at(core::ptr::null_mut(), size)
}

/// The lowest address this module has mapped, the hint for the process's first aligned
/// mapping, and 0 once that mapping took it: the kernel hands out ranges top-down (small ones
/// may fill holes higher up), so the aligned range just below the lowest mapping is usually
/// free. Only the first aligned mapping asks for it: the ones after it land right below the
/// previous chunk anyway, and a hint that always pointed below everything would walk the heap
/// down the address space as chunks and huge allocations come and go, instead of letting the
/// kernel reuse the holes. Only a hint: a stale or raced value costs the shortcut, nothing
/// else. (`fetch_min` keeps the 0 once it is there.)
static LOWEST: crate::platform::sync::untracked::AtomicUsize =
    crate::platform::sync::untracked::AtomicUsize::new(usize::MAX);

/// An anonymous private mapping of `size` bytes with protection `prot`, near `hint` if the
/// kernel can; every mapping of this module comes from here.
fn mmap_anon(hint: *mut u8, size: usize, prot: libc::c_int) -> Option<NonNull<u8>> {
    count(0);
    // SAFETY: an anonymous private mapping with no fixed address cannot clobber existing
    // mappings; a hint is only a hint.
    let p = unsafe {
        libc::mmap(
            hint.cast(),
            size,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        LOWEST.fetch_min(p as usize, core::sync::atomic::Ordering::Relaxed);
        NonNull::new(p.cast())
    }
}

fn map_at(hint: *mut u8, size: usize) -> Option<NonNull<u8>> {
    mmap_anon(hint, size, libc::PROT_READ | libc::PROT_WRITE)
}

/// Maps `size` bytes at `hint` if the kernel gives an `align`-aligned answer there; otherwise
/// unmaps what it gave and returns `None`.
fn map_aligned_at(hint: usize, size: usize, align: usize) -> Option<NonNull<u8>> {
    let q = map_at(hint as *mut u8, size)?;
    if (q.as_ptr() as usize) & (align - 1) == 0 {
        return Some(q);
    }
    // SAFETY: `q` is the mapping of `size` bytes made just above.
    unsafe { unmap(q.as_ptr(), size) };
    None
}

/// Hints below this are not worth asking for (the kernel keeps the lowest addresses for the
/// program and refuses mappings under `vm.mmap_min_addr`).
const MIN_HINT: usize = 1 << 32;

/// Maps `size` bytes aligned to `align` (a power of two, at least a page).
pub fn map_aligned(size: usize, align: usize) -> Option<NonNull<u8>> {
    debug_assert!(align.is_power_of_two() && align >= PAGE && size % PAGE == 0);
    // The first time, ask for the aligned range below the lowest mapping (the first chunk of
    // every process comes here after the heap's unaligned metadata: one system call instead
    // of three); then for exactly the size, and only over-map when neither answer is aligned.
    let lowest = LOWEST.swap(0, core::sync::atomic::Ordering::Relaxed);
    let hint = lowest.checked_sub(size).map(|a| a & !(align - 1));
    if let Some(q) = hint
        .filter(|&h| lowest != usize::MAX && h >= MIN_HINT)
        .and_then(|h| map_aligned_at(h, size, align))
    {
        return Some(q);
    }
    let p = map(size)?;
    if (p.as_ptr() as usize) & (align - 1) == 0 {
        return Some(p);
    }
    // SAFETY: `p` is the mapping of `size` bytes made just above.
    unsafe { unmap(p.as_ptr(), size) };
    // The kernel chose the highest free range that fits, so the space just below `p` is
    // usually free too: ask for the aligned address below it (three system calls in all
    // rather than the over-mapping's five).
    if let Some(q) = map_aligned_at((p.as_ptr() as usize) & !(align - 1), size, align) {
        return Some(q);
    }
    let over = size.checked_add(align - PAGE)?;
    let raw = map(over)?.as_ptr() as usize;
    let aligned = (raw + align - 1) & !(align - 1);
    let lead = aligned - raw;
    let trail = over - lead - size;
    // SAFETY: both ranges lie inside the mapping of `over` bytes at `raw` and outside the
    // `size` bytes at `aligned` that we keep.
    unsafe {
        if lead != 0 {
            unmap(raw as *mut u8, lead);
        }
        if trail != 0 {
            unmap((aligned + size) as *mut u8, trail);
        }
    }
    NonNull::new(aligned as *mut u8)
}

/// Unmaps a range this module mapped.
///
/// # Safety
/// `ptr..ptr+size` must be page-aligned memory mapped by this module that nobody uses anymore.
pub unsafe fn unmap(ptr: *mut u8, size: usize) {
    count(1);
    // SAFETY: the caller guarantees the range is ours and unused.
    let r = unsafe { libc::munmap(ptr.cast(), size) };
    if r != 0 {
        crate::platform::report::fatal(format_args!(
            "munmap({:#x}, {}) failed",
            ptr as usize, size
        ));
    }
}

/// Returns the physical pages of a range to the kernel; the range stays mapped and reads as
/// zero afterwards (anonymous private memory).
///
/// # Safety
/// The range must be page-aligned memory mapped by this module whose contents nobody needs.
pub unsafe fn purge(ptr: *mut u8, size: usize) {
    count(2);
    // SAFETY: the caller guarantees the contents are dead; MADV_DONTNEED on anonymous private
    // memory only drops them.
    unsafe { libc::madvise(ptr.cast(), size, libc::MADV_DONTNEED) };
}

/// Makes a range inaccessible (`accessible` false) or readable and writable again. Used by the
/// debug checks for guard pages, quarantined memory and the `malloc(0)` region.
///
/// # Safety
/// The range must be page-aligned memory mapped by this module; while it is inaccessible,
/// nothing of ours may read or write it.
pub unsafe fn protect(ptr: *mut u8, size: usize, accessible: bool) {
    let prot = if accessible {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_NONE
    };
    // SAFETY: the caller guarantees the range is ours; changing protection moves no memory.
    let r = unsafe { libc::mprotect(ptr.cast(), size, prot) };
    if r != 0 {
        crate::platform::report::fatal(format_args!(
            "mprotect({:#x}, {}) failed (too many mappings? see vm.max_map_count)",
            ptr as usize, size
        ));
    }
}

/// Reserves `size` bytes of inaccessible address space (no memory behind it).
pub fn reserve(size: usize) -> Option<NonNull<u8>> {
    mmap_anon(core::ptr::null_mut(), size, libc::PROT_NONE)
}

/// Grows or shrinks a mapping in place (never moves it). Returns false if the kernel could not.
///
/// # Safety
/// `ptr..ptr+old` must be a mapping made by this module.
pub unsafe fn remap_in_place(ptr: *mut u8, old: usize, new: usize) -> bool {
    count(3);
    // SAFETY: without MREMAP_MAYMOVE the mapping either changes size where it is, or not at
    // all; when growing, the kernel only takes free address space.
    let r = unsafe { libc::mremap(ptr.cast(), old, new, 0) };
    r != libc::MAP_FAILED
}

/// Moves the pages of `old_ptr..+old` to `new_ptr` (already mapped, `new` bytes, `new >= old`),
/// replacing what was there, without copying them.
///
/// # Safety
/// Both ranges must be mappings made by this module; `old_ptr`'s mapping is gone afterwards.
pub unsafe fn remap_to(old_ptr: *mut u8, old: usize, new_ptr: *mut u8, new: usize) -> bool {
    count(3);
    // SAFETY: MREMAP_FIXED replaces the destination range, which the caller owns.
    let r = unsafe {
        libc::mremap(
            old_ptr.cast(),
            old,
            new,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            new_ptr as *mut libc::c_void,
        )
    };
    r != libc::MAP_FAILED
}

/// The kernel's page size (from the auxiliary vector, where `sysconf` finds it too, without
/// touching `sysconf`'s page of libc at start-up).
pub fn kernel_page_size() -> usize {
    // SAFETY: getauxval has no preconditions; it returns 0 for an absent entry.
    let n = unsafe { libc::getauxval(libc::AT_PAGESZ) } as usize;
    if n != 0 {
        return n;
    }
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// A word from the kernel's random source (`getrandom`, never blocking), or 0 if it has none.
pub fn random_word() -> usize {
    let mut w: usize = 0;
    // SAFETY: `w` is a valid buffer of the length given; getrandom writes at most that.
    let n = unsafe {
        libc::getrandom(
            (&mut w as *mut usize).cast(),
            core::mem::size_of::<usize>(),
            libc::GRND_NONBLOCK,
        )
    };
    if n == core::mem::size_of::<usize>() as isize {
        w
    } else {
        0
    }
}

/// Online CPUs, at least 1.
pub fn ncpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 {
        1
    } else {
        n as usize
    }
}

/// The CPU this thread runs on now (a hint: it may change right after).
pub fn current_cpu() -> usize {
    // Under shuttle every thread runs on the test's one OS thread; 0 keeps a replay exact.
    #[cfg(any(loom, shuttle))]
    {
        0
    }
    #[cfg(not(any(loom, shuttle)))]
    {
        // SAFETY: sched_getcpu has no preconditions and goes through the vDSO.
        let c = unsafe { libc::sched_getcpu() };
        if c < 0 {
            0
        } else {
            c as usize
        }
    }
}

/// Nanoseconds of `CLOCK_MONOTONIC` (from an unspecified start; through the vDSO, no system
/// call, no allocation). 0 under loom and shuttle, whose threads are not timed.
pub fn monotonic_ns() -> u64 {
    #[cfg(any(loom, shuttle))]
    {
        0
    }
    #[cfg(not(any(loom, shuttle)))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }
}

/// The kernel's id of the calling thread (`gettid`): what fault reports and the fork
/// handlers' nesting name a thread by.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Gives the CPU to another runnable thread (`sched_yield`): for spin loops outside every
/// model, which must not burn a core while the holder is descheduled.
pub fn yield_now() {
    // SAFETY: no preconditions.
    unsafe { libc::sched_yield() };
}

/// Makes the page of code at `page` (page-aligned, `len` bytes, in this object's text)
/// writable as well as executable (`writable`), or executable only again. False if the kernel
/// refuses (a W^X policy, for instance): the caller then leaves the code as it is.
///
/// # Safety
/// The range is text of this object; it stays executable throughout, so threads running it
/// are unaffected, and only the caller writes it while it is writable.
pub unsafe fn code_writable(page: usize, len: usize, writable: bool) -> bool {
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC
    } else {
        libc::PROT_READ | libc::PROT_EXEC
    };
    // SAFETY: the caller names text of ours; changing its protection moves no memory.
    unsafe { libc::mprotect(page as *mut libc::c_void, len, prot) == 0 }
}

/// `membarrier(2)` commands the static key uses (from `linux/membarrier.h`).
pub mod membarrier {
    /// Serializes the instruction stream of every thread of the process.
    pub const PRIVATE_EXPEDITED_SYNC_CORE: i64 = 1 << 5;
    /// Registers the process for `PRIVATE_EXPEDITED_SYNC_CORE`.
    pub const REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: i64 = 1 << 6;

    /// Issues `cmd`; false if the kernel refuses it or does not know it.
    pub fn issue(cmd: i64) -> bool {
        // SAFETY: membarrier takes no pointers; an unknown command fails with EINVAL.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
            ) == 0
        }
    }
}

/// A key whose destructor runs `on_exit` when a thread that armed it exits (a pthread key):
/// how the engine learns of thread exit without a `thread_local!` destructor, which
/// allocates. `None` if the process has no keys left.
pub fn thread_exit_key(on_exit: extern "C" fn(*mut core::ffi::c_void)) -> Option<ThreadExitKey> {
    let mut k: libc::pthread_key_t = 0;
    // SAFETY: `k` is a valid out-pointer; `on_exit` is a valid destructor for the key.
    if unsafe { libc::pthread_key_create(&mut k, Some(on_exit)) } == 0 {
        Some(ThreadExitKey(k))
    } else {
        None
    }
}

/// A key from [`thread_exit_key`].
#[derive(Clone, Copy, Debug)]
pub struct ThreadExitKey(libc::pthread_key_t);

impl ThreadExitKey {
    /// Arms the key for the calling thread: its destructor runs when the thread exits.
    pub fn arm(self) {
        // SAFETY: a key this process created; a non-null value makes the destructor run.
        unsafe { libc::pthread_setspecific(self.0, 1usize as *const libc::c_void) };
    }
}

/// Registers fork handlers (`pthread_atfork`); false if the C library refuses.
pub fn atfork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) -> bool {
    // SAFETY: the handlers are functions of this object, callable at any fork.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) == 0 }
}

// Writing to a descriptor and aborting live in `report.rs`, the layer below this one (so that
// this module can report its own failures); re-exported here for the platform's other users.
pub use crate::platform::report::{abort, write_all, write_stderr};

/// Sleeps while `*word == expected` (spurious wake-ups allowed).
pub fn futex_wait(word: &core::sync::atomic::AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT reads the 32-bit word at a valid address; a null timeout waits
    // indefinitely. The other arguments are ignored for this operation.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            core::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes one thread sleeping in [`futex_wait`] on `word`.
pub fn futex_wake(word: &core::sync::atomic::AtomicU32) {
    futex_wake_n(word, 1);
}

/// Wakes every thread sleeping in [`futex_wait`] on `word`.
pub fn futex_wake_all(word: &core::sync::atomic::AtomicU32) {
    futex_wake_n(word, i32::MAX);
}

fn futex_wake_n(word: &core::sync::atomic::AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        );
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;

    /// Aligned mappings one after the other (the first of the process, if no test before this
    /// one made it, takes the hint), interleaved with small unaligned ones, and with the range
    /// below the lowest of them taken by someone else: every answer is aligned, zeroed,
    /// writable and distinct from the others.
    #[test]
    fn aligned_mappings_are_aligned_zeroed_and_disjoint() {
        const MIB: usize = 1 << 20;
        let mut got: Vec<(usize, usize)> = Vec::new();
        for (i, (size, align)) in [
            (MIB, MIB),
            (2 * MIB, MIB),
            (MIB, 4 * MIB),
            (3 * PAGE, 2 * PAGE),
        ]
        .into_iter()
        .cycle()
        .take(12)
        .enumerate()
        {
            if i % 3 == 2 {
                // Occupy the aligned range below the lowest mapping made here, so that the
                // fallbacks run too.
                let lowest = got.iter().map(|&(a, _)| a).min().expect("mapped before");
                let hint = (lowest - size) & !(align - 1);
                if let Some(q) = map_at(hint as *mut u8, size) {
                    got.push((q.as_ptr() as usize, size));
                }
            }
            let p = map_aligned(size, align).expect("the kernel refused a small mapping");
            let a = p.as_ptr() as usize;
            assert_eq!(
                a % align,
                0,
                "mapping {i} at {a:#x} is not {align:#x}-aligned"
            );
            // SAFETY: `size` bytes at `a` were just mapped for us.
            let bytes = unsafe { core::slice::from_raw_parts_mut(a as *mut u8, size) };
            assert!(bytes.iter().step_by(PAGE).all(|&b| b == 0));
            bytes[size - 1] = 1;
            for &(b, n) in &got {
                assert!(
                    a + size <= b || b + n <= a,
                    "{a:#x}+{size} overlaps {b:#x}+{n}"
                );
            }
            got.push((a, size));
        }
        for (a, n) in got {
            // SAFETY: each range was mapped above and nothing uses it anymore.
            unsafe { unmap(a as *mut u8, n) };
        }
    }
}
