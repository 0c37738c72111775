//! Sampled guarded allocations, in the manner of Firefox's PHC, Linux's KFENCE and GWP-ASan
//! (the `sample` and `sample_ms` options).
//!
//! One allocation in N on average (each thread counts down from a random number between 1 and
//! 2N, in a thread-local: no shared write on the fast path), or the first allocation after
//! each interval of `sample_ms` milliseconds (each thread looks at the clock every 64
//! allocations), is served from a pool of one-page slots that alternate with inaccessible
//! guard pages. The allocation sits against one of its two guards, chosen at random (its end
//! against the next guard, to catch overflows, or its start against the previous one, to catch
//! underflows). Freed, its page becomes inaccessible and the slot joins the back of a FIFO, so
//! it is reused only after every other free slot: a use after free faults for as long as
//! possible. When the pool has no free slot, the allocation is an ordinary one.
//!
//! The stack of each sampled allocation and of its free are kept (`backtrace(3)`, raw
//! addresses). The `SIGSEGV` handler (`fault.rs`) asks each pool about a fault; one in a pool
//! is reported with its kind (use after free, overflow, underflow), the address, its offset
//! from an allocation of its size, and both stacks, before the process dies as it would have. A double or invalid free of a sampled
//! allocation is reported the same way by `Heap::free`, then aborts.
//!
//! In a heap with a thread cache, sampling alone leaves the cache on, and `Config::SAMPLE_PATH`
//! says where the countdown runs: on the slow path only (the default: the cache's fast path
//! has no sampling code, and `sample: N` counts cache misses), on every allocation
//! (`Countdown`), or on the slow path opening a shared gate that the next allocation, fast path
//! included, takes (`Gate`). The allocation that starts a heap is never sampled under
//! `Countdown`: the fast path decides, and it runs only in a started heap.
//!
//! Only requests of at most a page, aligned to at most a page, are sampled. The first
//! sampled allocation of the process calls `backtrace(3)` once without a lock held, which
//! makes glibc load `libgcc_s` (allocating): the calling thread samples nothing meanwhile.

use crate::debug::slot_ring::SlotRing;
use crate::meta::size_class::{round_up, PAGE, QUANTUM};
use crate::platform::error::FreeError;
use crate::platform::os;
use crate::platform::sync::untracked::{AtomicBool, AtomicU64, Ordering};
use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::fmt::Write;

/// Slots in a pool.
pub const SLOTS: usize = 256;
/// Frames kept of each stack.
const FRAMES: usize = 24;
/// Allocations between two looks at the clock (`sample_ms`).
const CLOCK_EVERY: u32 = 64;

extern "C" {
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
    fn backtrace_symbols_fd(buffer: *const *mut c_void, size: c_int, fd: c_int);
}

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum State {
    Unused,
    Live,
    Freed,
}

/// One slot's record.
#[repr(C)]
struct Slot {
    state: State,
    /// Where the allocation starts, and its size.
    start: usize,
    size: usize,
    alloc_tid: i32,
    free_tid: i32,
    alloc_n: usize,
    free_n: usize,
    alloc_stack: [*mut c_void; FRAMES],
    free_stack: [*mut c_void; FRAMES],
}

/// A heap's pool; `base` 0 when sampling is off.
pub(crate) struct Sampler {
    /// First guard page; slot `i`'s page is at `base + (2i + 1) * PAGE`.
    base: usize,
    slots: *mut Slot,
    /// Free slots, oldest free first, and the lock the slot records are read and written
    /// under.
    ring: SlotRing<SLOTS>,
    rate: usize,
    interval_ns: u64,
    deadline: AtomicU64,
    /// `SamplePath::Gate`: open when the next allocation is to be sampled. Written once per
    /// sample, read by every allocation: a line of its own, so that the writes to `deadline`
    /// do not take it away from the readers. Under `SamplePath::StaticKey`, read only behind
    /// the patched branch.
    gate: Gate,
    /// `SamplePath::StaticKey` with a patched branch: opening the gate turns the process's
    /// key on (`static_key.rs`), closing it turns it off.
    keyed: bool,
}

#[repr(align(64))]
struct Gate(AtomicBool);

// SAFETY: the slot records are read and written only under the ring's lock (the fault
// handler reads them without it, after the faulting thread stopped: see `on_fault`); the rest
// is immutable or atomic.
unsafe impl Sync for Sampler {}
// SAFETY: as above.
unsafe impl Send for Sampler {}

const POOL_BYTES: usize = (2 * SLOTS + 1) * PAGE;
const META_BYTES: usize = match round_up(SLOTS * core::mem::size_of::<Slot>(), PAGE) {
    Some(b) => b,
    None => PAGE,
};

// ---- the per-thread countdown -------------------------------------------------------------------

struct ThreadSampling {
    countdown: Cell<u32>,
    rng: Cell<u64>,
    busy: Cell<bool>,
}

crate::platform::sync::thread_local_const! {
    static SAMPLING: ThreadSampling = ThreadSampling {
        countdown: Cell::new(0),
        rng: Cell::new(0),
        busy: Cell::new(false),
    };
}

/// The next number of a thread's generator (xorshift64*), seeded from its address and the clock.
fn next_random(t: &ThreadSampling) -> u64 {
    let mut x = t.rng.get();
    if x == 0 {
        x = (t as *const ThreadSampling as u64)
            ^ crate::platform::os::monotonic_ns().rotate_left(17)
            | 1;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t.rng.set(x);
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

impl Sampler {
    /// Off.
    pub fn off() -> Sampler {
        Sampler {
            base: 0,
            slots: core::ptr::null_mut(),
            ring: SlotRing::new(),
            rate: 0,
            interval_ns: 0,
            deadline: AtomicU64::new(0),
            gate: Gate(AtomicBool::new(false)),
            keyed: false,
        }
    }

    /// A pool sampling one allocation in `rate` on average (1: every one; 0: none by count)
    /// and one per `interval_ms` (0: none by time); off if both are 0 or the OS refuses.
    /// `keyed`: its gate is behind the static key (`SamplePath::StaticKey` where patched).
    pub fn new(rate: usize, interval_ms: usize, keyed: bool) -> Sampler {
        if rate == 0 && interval_ms == 0 {
            return Sampler::off();
        }
        let Some(pool) = os::reserve(POOL_BYTES) else {
            return Sampler::off();
        };
        let Some(meta) = os::map(META_BYTES) else {
            // SAFETY: reserved above, never used.
            unsafe { os::unmap(pool.as_ptr(), POOL_BYTES) };
            return Sampler::off();
        };
        // Fresh zero memory is a valid `Slot` (state Unused).
        let slots = meta.as_ptr().cast::<Slot>();
        let interval_ns = interval_ms as u64 * 1_000_000;
        Sampler {
            base: pool.as_ptr() as usize,
            slots,
            ring: SlotRing::new(),
            rate,
            interval_ns,
            deadline: AtomicU64::new(crate::platform::os::monotonic_ns() + interval_ns),
            gate: Gate(AtomicBool::new(false)),
            keyed,
        }
    }

    /// Makes the pool known to the fault handler (installing it on first use). Once the
    /// sampler has its final address (in the heap's shared state).
    pub fn register(&self) {
        if self.base != 0 {
            crate::platform::fault::register(self as *const Sampler as *const (), explain_fault);
        }
    }

    /// Whether sampling is on.
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.base != 0
    }

    /// Whether `addr` lies in the pool.
    #[inline(always)]
    pub fn contains(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base) < POOL_BYTES && self.base != 0
    }

    /// Whether this allocation (of `size` bytes aligned to `align`) is to be sampled.
    #[inline(always)]
    pub fn should_sample(&self, size: usize, align: usize) -> bool {
        if size > PAGE || align > PAGE {
            return false;
        }
        SAMPLING.with(|t| {
            let c = t.countdown.get();
            if c > 1 {
                t.countdown.set(c - 1);
                return false;
            }
            self.countdown_ended(t)
        })
    }

    /// `SamplePath::Gate` and `StaticKey`: lets the next allocation of at most a page, on
    /// any thread, be sampled; under the static key, turns the key on for it. Whether the
    /// caller is to sample its own allocation instead: the key could not be turned on (the
    /// system refuses to patch code), and this call closed the gate again.
    #[cold]
    pub fn open_gate(&self) -> bool {
        if !self.keyed {
            self.gate.0.store(true, Ordering::Relaxed);
            return false;
        }
        // Counted before the gate opens and uncounted after it closes, so the key's count is
        // never below the gates open (a taker on another thread may close it at once).
        crate::debug::static_key::hold();
        if self.gate.0.swap(true, Ordering::AcqRel) {
            // Already open: its opener counted it.
            crate::debug::static_key::release();
            return false;
        }
        if crate::debug::static_key::reconcile() {
            return false;
        }
        // Nobody can take it on the fast path: sample here, unless another thread's slow
        // path took it meanwhile.
        self.close_gate()
    }

    /// `SamplePath::Gate` and `StaticKey`: whether this allocation (of `size` bytes aligned
    /// to `align`) is the one to be sampled: the gate was open and this call closed it. While
    /// it is closed, one relaxed load.
    #[inline(always)]
    pub fn take_gate(&self, size: usize, align: usize) -> bool {
        self.gate.0.load(Ordering::Relaxed) && size <= PAGE && align <= PAGE && self.close_gate()
    }

    /// Closes an open gate; whether this call closed it (under the static key, then turning
    /// the key off, by this thread).
    #[cold]
    fn close_gate(&self) -> bool {
        let closed = self.gate.0.swap(false, Ordering::AcqRel);
        if closed && self.keyed {
            crate::debug::static_key::release();
        }
        closed
    }

    #[cold]
    fn countdown_ended(&self, t: &ThreadSampling) -> bool {
        if t.busy.get() {
            t.countdown.set(1);
            return false;
        }
        if self.rate > 0 {
            let n = if self.rate == 1 {
                1
            } else {
                1 + next_random(t) % (2 * self.rate as u64)
            };
            let n = n.min(u32::MAX as u64) as u32;
            if self.interval_ns == 0 || n <= CLOCK_EVERY {
                t.countdown.set(n);
                return true;
            }
        }
        // Time-based: sample if the interval is over and this thread is the one to move it.
        t.countdown.set(CLOCK_EVERY);
        let now = crate::platform::os::monotonic_ns();
        let d = self.deadline.load(Ordering::Relaxed);
        now >= d
            && self
                .deadline
                .compare_exchange(
                    d,
                    now + self.interval_ns,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    fn slot(&self, i: usize) -> *mut Slot {
        // SAFETY: `i < SLOTS`: a record inside the metadata mapping.
        unsafe { self.slots.add(i) }
    }

    fn page_of(&self, i: usize) -> usize {
        self.base + (2 * i + 1) * PAGE
    }

    /// A sampled allocation, or null if the pool has no free slot.
    pub fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        let mut stack = [core::ptr::null_mut(); FRAMES];
        let n = capture(&mut stack);
        let at_end = SAMPLING.with(|t| next_random(t) & 1 == 0);
        self.ring
            .take_with(|i| self.fill_slot(i, size, align, at_end, stack, n))
            .unwrap_or(core::ptr::null_mut())
    }

    /// Makes taken slot `i` an allocation of `size` bytes; under the ring's lock.
    fn fill_slot(
        &self,
        i: usize,
        size: usize,
        align: usize,
        at_end: bool,
        stack: [*mut c_void; FRAMES],
        n: usize,
    ) -> *mut u8 {
        let page = self.page_of(i);
        let a = align.max(QUANTUM);
        // Against the next guard (as far as alignment allows), or against the previous one.
        let start = if at_end {
            (page + PAGE - round_up(size.max(1), a).unwrap_or(PAGE).min(PAGE)) & !(a - 1)
        } else {
            page
        };
        // SAFETY: the slot's page is ours and unused; it is made accessible for the program.
        unsafe {
            os::protect(page as *mut u8, PAGE, true);
            if (*self.slot(i)).state == State::Freed {
                // Reused: the program must not see the previous allocation's bytes.
                core::ptr::write_bytes(page as *mut u8, 0, PAGE);
            }
            let s = &mut *self.slot(i);
            s.state = State::Live;
            s.start = start;
            // `malloc(0)` is served as one byte, as by the heap.
            s.size = size.max(1);
            s.alloc_tid = crate::platform::os::thread_id();
            s.alloc_n = n;
            s.alloc_stack = stack;
            s.free_n = 0;
        }
        start as *mut u8
    }

    /// The slot of `addr` (in the pool) if it is a slot page, not a guard.
    fn slot_index(&self, addr: usize) -> Option<usize> {
        let k = (addr - self.base) / PAGE;
        (k % 2 == 1).then_some((k - 1) / 2)
    }

    /// The size of the live sampled allocation at `addr`, or why it is not one.
    pub fn live(&self, addr: usize) -> Result<usize, FreeError> {
        self.ring.locked(|_| self.check(addr))
    }

    /// Under the lock.
    fn check(&self, addr: usize) -> Result<usize, FreeError> {
        let Some(i) = self.slot_index(addr) else {
            return Err(FreeError::Interior);
        };
        // SAFETY: under the lock.
        let s = unsafe { &*self.slot(i) };
        match s.state {
            State::Unused => Err(FreeError::NeverAllocated),
            State::Freed if addr == s.start => Err(FreeError::Freed),
            State::Live if addr == s.start => Ok(s.size),
            _ => Err(FreeError::Interior),
        }
    }

    /// Frees the sampled allocation at `addr` (in the pool), or says why it cannot.
    pub fn free(&self, addr: usize) -> Result<(), FreeError> {
        let mut stack = [core::ptr::null_mut(); FRAMES];
        let n = capture(&mut stack);
        self.ring.locked(|ring| {
            self.check(addr)?;
            let i = self.slot_index(addr).unwrap_or(0);
            // SAFETY: under the lock; the slot's page is ours, made inaccessible until reused.
            unsafe {
                let s = &mut *self.slot(i);
                s.state = State::Freed;
                s.free_tid = crate::platform::os::thread_id();
                s.free_n = n;
                s.free_stack = stack;
                os::protect(self.page_of(i) as *mut u8, PAGE, false);
            }
            ring.put(i);
            Ok(())
        })
    }

    /// Prints the report of a bad free of `addr` (in the pool) with what is known of the slot.
    pub fn report_bad_free(&self, addr: usize, e: FreeError) {
        self.ring.locked(|_| self.report_locked(addr, e));
    }

    fn report_locked(&self, addr: usize, e: FreeError) {
        let kind = match e {
            FreeError::Freed => "double free",
            _ => "invalid free",
        };
        self.report(kind, addr);
    }

    /// Prints a report about `addr` (in the pool): the nearest allocation, its stacks.
    fn report(&self, kind: &str, addr: usize) {
        let k = (addr - self.base) / PAGE;
        // A guard page belongs to the allocation placed against it, else to the nearer one.
        let i = if k % 2 == 1 {
            (k - 1) / 2
        } else {
            let left = (k / 2).checked_sub(1);
            let right = (k / 2 < SLOTS).then_some(k / 2);
            // SAFETY: records are only read here (fault handler or under the lock).
            let against = |j: usize, end: bool| unsafe {
                let s = &*self.slot(j);
                s.state != State::Unused
                    && if end {
                        s.start + s.size.max(1) > self.page_of(j) + PAGE - QUANTUM
                    } else {
                        s.start == self.page_of(j)
                    }
            };
            let lower_half = addr - (self.base + k * PAGE) < PAGE / 2;
            let l = left.filter(|&l| against(l, true));
            let r = right.filter(|&r| against(r, false));
            match (l, r) {
                (Some(l), Some(r)) => {
                    if lower_half {
                        l
                    } else {
                        r
                    }
                }
                (Some(l), None) => l,
                (None, Some(r)) => r,
                (None, None) => match (left, right) {
                    (Some(l), Some(_)) if lower_half => l,
                    (_, Some(r)) => r,
                    (Some(l), None) => l,
                    (None, None) => 0,
                },
            }
        };
        // SAFETY: as above.
        let s = unsafe { &*self.slot(i) };
        let mut w = crate::platform::report::StderrWriter::stderr();
        let kind = if kind.is_empty() {
            if s.state == State::Freed {
                "use after free"
            } else if addr >= s.start + s.size {
                "heap overflow"
            } else {
                "heap underflow"
            }
        } else {
            kind
        };
        let _ = write!(w, "alloclab: sampled allocation: {kind} at {addr:#x}: ");
        let _ = if addr < s.start {
            write!(w, "{} bytes before", s.start - addr)
        } else if addr >= s.start + s.size {
            write!(w, "{} bytes past the end of", addr - s.start - s.size)
        } else {
            write!(w, "offset {} in", addr - s.start)
        };
        let _ = writeln!(
            w,
            " the {} allocation of {} bytes at {:#x}",
            if s.state == State::Freed {
                "freed"
            } else {
                "live"
            },
            s.size,
            s.start
        );
        let _ = writeln!(w, "allocated by thread {} at:", s.alloc_tid);
        w.flush();
        print_stack(&s.alloc_stack, s.alloc_n);
        if s.state == State::Freed {
            let _ = writeln!(w, "freed by thread {} at:", s.free_tid);
            w.flush();
            print_stack(&s.free_stack, s.free_n);
        }
    }

    pub(crate) fn lock(&self) {
        self.ring.lock();
    }
    pub(crate) fn unlock(&self) {
        self.ring.unlock();
    }
    pub(crate) fn reset_lock(&self) {
        self.ring.reset_lock();
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.base == 0 {
            return;
        }
        // A sample still pending keeps the key on for every heap: give it back.
        self.close_gate();
        crate::platform::fault::unregister(self as *const Sampler as *const ());
        // SAFETY: mapped by `new`; the heap is being dropped, nothing uses the pool.
        unsafe {
            os::unmap(self.base as *mut u8, POOL_BYTES);
            os::unmap(self.slots.cast(), META_BYTES);
        }
    }
}

/// The calling stack, up to `FRAMES` return addresses (without this function's own frame).
fn capture(stack: &mut [*mut c_void; FRAMES]) -> usize {
    SAMPLING.with(|t| {
        // The first call loads libgcc_s, which allocates: sample nothing meanwhile.
        let was = t.busy.replace(true);
        // SAFETY: `stack` holds FRAMES pointers.
        let n = unsafe { backtrace(stack.as_mut_ptr(), FRAMES as c_int) };
        t.busy.set(was);
        n.max(0) as usize
    })
}

fn print_stack(stack: &[*mut c_void; FRAMES], n: usize) {
    // SAFETY: `n <= FRAMES` addresses captured by `backtrace`; `backtrace_symbols_fd` writes
    // to the descriptor without allocating.
    unsafe { backtrace_symbols_fd(stack.as_ptr(), n.min(FRAMES) as c_int, 2) };
}

/// The fault handler's question (`fault.rs`): a fault in this pool?
///
/// # Safety
/// As for `fault::Explain`, with a registered `Sampler`.
unsafe fn explain_fault(owner: *const (), addr: usize) -> bool {
    // SAFETY: registered pools live until their heap drops (which unregisters them).
    let s = unsafe { &*(owner as *const Sampler) };
    if !s.contains(addr) {
        return false;
    }
    s.report("", addr);
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{next_random, FreeError, Sampler, ThreadSampling, PAGE, QUANTUM, SAMPLING};
    use core::cell::Cell;
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;

    /// Takes the pool's oldest free slot and places an allocation in it as `alloc` does, with
    /// the placement (`at_end`: against the next guard) chosen by the test instead of drawn.
    fn place(s: &Sampler, size: usize, align: usize, at_end: bool) -> usize {
        let stack = [core::ptr::null_mut(); super::FRAMES];
        s.ring
            .take_with(|i| s.fill_slot(i, size, align, at_end, stack, 0))
            .expect("a free slot") as usize
    }

    /// What `f` writes to standard error (file descriptor 2, where the sampler's reports go).
    fn stderr_of(f: impl FnOnce()) -> String {
        let mut file = tempfile_in_tmp();
        // SAFETY: duplicates descriptors this test owns (2 and the temporary file); the saved
        // copy of 2 is put back and closed below.
        let saved = unsafe { libc::dup(2) };
        assert!(saved >= 0);
        // SAFETY: as above.
        assert!(unsafe { libc::dup2(file.as_raw_fd(), 2) } >= 0);
        f();
        // SAFETY: as above.
        unsafe {
            libc::dup2(saved, 2);
            libc::close(saved);
        }
        let mut out = String::new();
        file.rewind().unwrap();
        file.read_to_string(&mut out).unwrap();
        out
    }

    /// A new, already unlinked, file in the temporary directory.
    fn tempfile_in_tmp() -> std::fs::File {
        let path = std::env::temp_dir().join(format!(
            "alloclab-sampled-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }

    /// Kills cargo-mutants' `replace > with < in Sampler::should_sample` and `replace - with +
    /// in Sampler::should_sample` (`core/src/debug/sampled.rs`, survivors of the campaign): a
    /// request of at most a page is sampled once the thread's countdown runs out, one above a
    /// page never is, and the countdown runs down by one per request.
    #[test]
    fn the_countdown_runs_down_to_a_sample_of_at_most_a_page() {
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        SAMPLING.with(|t| t.countdown.set(3));
        let decisions: Vec<bool> = (0..3).map(|_| s.should_sample(64, 8)).collect();
        assert_eq!(decisions, [false, false, true]);
        assert!(s.should_sample(PAGE, PAGE), "a page is sampled");
        assert!(
            !s.should_sample(PAGE + 1, 8),
            "above a page is never sampled"
        );
        assert!(
            !s.should_sample(64, 2 * PAGE),
            "aligned above a page is never sampled"
        );
    }

    /// Kills cargo-mutants' `replace == with != in Sampler::countdown_ended`
    /// (`core/src/debug/sampled.rs`, survivor of the campaign): `sample: 1` samples every
    /// allocation, where a drawn countdown (between 1 and 2) would skip some. The generator is
    /// seeded, so the draws a broken rate would make are always the same.
    #[test]
    fn rate_one_samples_every_allocation() {
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        SAMPLING.with(|t| {
            t.countdown.set(0);
            t.rng.set(0x9e37_79b9_7f4a_7c15);
        });
        for k in 0..64 {
            assert!(s.should_sample(16, 16), "allocation {k} not sampled");
        }
    }

    /// Kills cargo-mutants' `replace Sampler::open_gate with ()` (`core/src/debug/sampled.rs`,
    /// survivor of the campaign; the function now also returns whether the caller samples,
    /// `false` here): under `SamplePath::Gate` the slow path opens the gate and the next
    /// allocation of at most a page takes it, once.
    #[test]
    fn an_opened_gate_is_taken_once_by_an_allocation_of_at_most_a_page() {
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        assert!(!s.take_gate(64, 8), "a closed gate was taken");
        assert!(!s.open_gate(), "an unkeyed gate is for the next allocation");
        assert!(!s.take_gate(PAGE + 1, 8), "above a page took the gate");
        assert!(s.take_gate(64, 8), "the opened gate was not taken");
        assert!(!s.take_gate(64, 8), "the gate was taken twice");
    }

    /// Kills cargo-mutants' `replace * with + in Sampler::page_of`, `replace + with - in
    /// Sampler::page_of`, `replace Sampler::page_of -> usize with 1`, `replace & with | in
    /// Sampler::fill_slot` and `delete ! in Sampler::fill_slot` (`core/src/debug/sampled.rs`,
    /// survivors of the campaign): slot `i` is the page between guards `i` and `i + 1`, and an
    /// allocation sits at its page's start or ends, aligned, as near its page's end as
    /// alignment allows.
    #[test]
    fn allocations_sit_in_their_slot_page_against_a_guard() {
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        let page = |i: usize| s.base + (2 * i + 1) * PAGE;
        // (size, align, against the next guard, where it starts)
        let cases = [
            (100, 8, true, page(0) + PAGE - 112),
            (100, 64, true, page(1) + PAGE - 128),
            (PAGE, 8, true, page(2)),
            (0, 8, true, page(3) + PAGE - QUANTUM),
            (100, 8, false, page(4)),
            (3000, 256, false, page(5)),
        ];
        for (k, &(size, align, at_end, start)) in cases.iter().enumerate() {
            let p = place(&s, size, align, at_end);
            assert_eq!(p, start, "case {k}: {size} bytes aligned to {align}");
            assert_eq!(s.live(p), Ok(size.max(1)), "case {k}");
            // The whole allocation is writable memory.
            // SAFETY: `p..p + size` lies in the slot's page, made accessible by `fill_slot`.
            unsafe { core::ptr::write_bytes(p as *mut u8, 0xa5, size) };
        }
    }

    /// Kills cargo-mutants' `replace Sampler::report_locked with ()` and `replace % with + in
    /// Sampler::report` (`core/src/debug/sampled.rs`, survivors of the campaign): a double free
    /// is reported, and blamed on the allocation of the slot freed, not on the neighbour whose
    /// end lies against the guard below it.
    #[test]
    fn a_double_free_is_reported_against_its_own_allocation() {
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        let below = place(&s, 100, 8, true);
        let freed = place(&s, 200, 8, false);
        assert_eq!(s.free(freed), Ok(()));
        let e = s.free(freed).expect_err("a double free was accepted");
        assert_eq!(e, FreeError::Freed);
        let report = stderr_of(|| s.report_bad_free(freed, e));
        let expected = format!(
            "double free at {freed:#x}: offset 0 in the freed allocation of 200 bytes at {freed:#x}"
        );
        assert!(report.contains(&expected), "{report}");
        assert_eq!(s.live(below), Ok(100));
    }

    /// Kills cargo-mutants' `replace * with +` in `META_BYTES` (`core/src/debug/sampled.rs`,
    /// survivor of the campaign's shard 19): the metadata mapping holds every slot's record,
    /// and with every slot taken at once each still reads its own allocation back.
    #[test]
    fn every_slot_record_fits_the_metadata_mapping() {
        assert!(super::META_BYTES >= super::SLOTS * core::mem::size_of::<super::Slot>());
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        let placed: Vec<usize> = (0..super::SLOTS)
            .map(|i| place(&s, i + 1, 8, i % 2 == 0))
            .collect();
        for (i, &p) in placed.iter().enumerate() {
            assert_eq!(s.live(p), Ok(i + 1), "slot {i}");
        }
    }

    /// Kills cargo-mutants' `replace capture -> usize with 0` (`core/src/debug/sampled.rs`,
    /// survivor of the campaign's shard 19): a sampled allocation keeps the stacks of its
    /// allocation and of its free, which a report prints.
    #[test]
    fn an_allocation_keeps_its_allocating_and_freeing_stacks() {
        let s = Sampler::new(1, 0, false);
        assert!(s.on(), "the OS refused the pool");
        let p = s.alloc(100, 8) as usize;
        assert_ne!(p, 0, "no free slot");
        let i = s.slot_index(p).expect("a slot's page");
        // SAFETY: slot `i` was just filled; no other thread uses this sampler.
        assert!(unsafe { (*s.slot(i)).alloc_n } > 0, "no allocating stack");
        assert_eq!(s.free(p), Ok(()));
        // SAFETY: as above, after the free.
        assert!(unsafe { (*s.slot(i)).free_n } > 0, "no freeing stack");
    }

    /// Kills cargo-mutants' `replace == with != in next_random` (`core/src/debug/sampled.rs`,
    /// survivor of the mutation campaign's shard 1): reseeding from the clock at every call
    /// still looks random, but sampling intervals are then no longer draws of one generator
    /// (two threads' draws in the same nanosecond would agree). A seeded generator follows
    /// xorshift64* from its state, and an unseeded one seeds itself once.
    #[test]
    fn the_generator_is_seeded_once_then_follows_xorshift64_star() {
        let seed = 0x9e37_79b9_7f4a_7c15_u64;
        let t = ThreadSampling {
            countdown: Cell::new(0),
            rng: Cell::new(seed),
            busy: Cell::new(false),
        };
        let mut x = seed;
        for _ in 0..8 {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            assert_eq!(next_random(&t), x.wrapping_mul(0x2545_f491_4f6c_dd1d));
            assert_eq!(t.rng.get(), x);
        }
        let fresh = ThreadSampling {
            countdown: Cell::new(0),
            rng: Cell::new(0),
            busy: Cell::new(false),
        };
        next_random(&fresh);
        let state = fresh.rng.get();
        assert_ne!(state, 0, "an unseeded generator seeds itself");
        let mut y = state;
        y ^= y >> 12;
        y ^= y << 25;
        y ^= y >> 27;
        assert_eq!(next_random(&fresh), y.wrapping_mul(0x2545_f491_4f6c_dd1d));
    }
}
