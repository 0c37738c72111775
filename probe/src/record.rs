//! Per-thread records and the one function that times a call into them.
//!
//! A thread's first timed call takes a record: a free one left by a thread that has exited,
//! or a fresh anonymous mapping (about 210 KiB of address space, of which only the buckets
//! used are ever touched). Records are never unmapped; all of them hang off one list, which
//! the dump and [`snapshot`] walk. Past [`MAX_RECORDS`] live records, threads share one
//! static record and pay for atomic adds on it; it is not counted as a thread.
//!
//! Calls are counted always; their time is taken on one call in [`every`] per thread (1 by
//! default: every call), and totals are scaled back up by `calls / timed`.

use super::clock;
use super::histogram::{bump, Histogram};
use core::cell::Cell;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};

// ---- call kinds -------------------------------------------------------------------------------

/// What kind of allocator call was timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `malloc`, `operator new`.
    Malloc,
    /// `calloc`.
    Calloc,
    /// `realloc`, `reallocarray`.
    Realloc,
    /// `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`, `pvalloc`, aligned `new`.
    Aligned,
    /// `free`, `free_sized`, `free_aligned_sized`, `operator delete`.
    Free,
    /// `malloc_usable_size`.
    UsableSize,
}

/// Kinds of calls.
pub const KINDS: usize = 6;

impl Kind {
    /// Every kind, in index order.
    pub const ALL: [Kind; KINDS] = [
        Kind::Malloc,
        Kind::Calloc,
        Kind::Realloc,
        Kind::Aligned,
        Kind::Free,
        Kind::UsableSize,
    ];

    /// Its name in dumps, results and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Malloc => "malloc",
            Kind::Calloc => "calloc",
            Kind::Realloc => "realloc",
            Kind::Aligned => "aligned",
            Kind::Free => "free",
            Kind::UsableSize => "usable_size",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

// ---- records ----------------------------------------------------------------------------------

/// One kind's figures in one record (ticks of `clock::source`).
pub struct KindRecord {
    /// Calls made.
    pub calls: AtomicU64,
    /// Calls timed (all of them unless sampling).
    pub timed: AtomicU64,
    /// Ticks inside the timed calls.
    pub ticks: AtomicU64,
    /// The longest timed call.
    pub max: AtomicU64,
    /// The timed calls' latencies.
    pub hist: Histogram,
}

/// One thread's figures.
pub struct ThreadRecord {
    /// Per kind, indexed like [`Kind::ALL`].
    pub kinds: [KindRecord; KINDS],
    /// The thread's number in this process, in order of first call (from 1).
    pub serial: AtomicU64,
    /// Calls until the next timed one (sampling only).
    countdown: AtomicU64,
    /// `IN_USE` or `FREE`.
    state: AtomicU8,
    /// The next record of the list.
    next: AtomicPtr<ThreadRecord>,
}

const IN_USE: u8 = 0;
const FREE: u8 = 1;

impl ThreadRecord {
    /// Whether this is the record threads share past [`MAX_RECORDS`] (and after their own
    /// record went back at thread exit).
    pub fn is_shared(&self) -> bool {
        core::ptr::eq(self, shared())
    }

    /// Calls of every kind.
    pub fn calls(&self) -> u64 {
        self.kinds
            .iter()
            .map(|k| k.calls.load(Ordering::Relaxed))
            .sum()
    }

    /// Zeroes every figure.
    pub fn clear(&self) {
        for k in &self.kinds {
            k.calls.store(0, Ordering::Relaxed);
            k.timed.store(0, Ordering::Relaxed);
            k.ticks.store(0, Ordering::Relaxed);
            k.max.store(0, Ordering::Relaxed);
            k.hist.clear();
        }
        self.countdown.store(0, Ordering::Relaxed);
    }
}

/// Live records at most; threads beyond them share one.
pub const MAX_RECORDS: usize = 4096;

static HEAD: AtomicPtr<ThreadRecord> = AtomicPtr::new(core::ptr::null_mut());
static RECORDS: AtomicUsize = AtomicUsize::new(0);
static SERIAL: AtomicU64 = AtomicU64::new(0);
static SHARED: AtomicPtr<ThreadRecord> = AtomicPtr::new(core::ptr::null_mut());
static EVERY: AtomicU64 = AtomicU64::new(1);
/// Called with a thread's new record, inside the probe (`probe/so` registers the thread-exit
/// destructor with it); 0 for none.
static ON_NEW: AtomicUsize = AtomicUsize::new(0);

/// A zero-filled mapping big enough for a record.
fn map_record() -> Option<&'static ThreadRecord> {
    let size = core::mem::size_of::<ThreadRecord>();
    // SAFETY: an anonymous private mapping at no fixed address clobbers nothing.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: fresh zero-filled memory, page-aligned, of the record's size: every field is an
    // atomic or an array of them, for which all-zero bytes are a valid value. Never unmapped.
    Some(unsafe { &*(p as *const ThreadRecord) })
}

fn push(r: &'static ThreadRecord) {
    let p = r as *const ThreadRecord as *mut ThreadRecord;
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        r.next.store(head, Ordering::Relaxed);
        match HEAD.compare_exchange_weak(head, p, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

/// The record threads share (made on first use, and on the list like every other).
pub fn shared() -> &'static ThreadRecord {
    let p = SHARED.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: published records live for the whole process.
        return unsafe { &*p };
    }
    let Some(r) = map_record() else {
        // Out of address space: nothing can be recorded; a leaked static would do, but a
        // process that cannot map 210 KiB is not worth timing. Abort with a line.
        crate::fatal::fatal(b"alloclab-probe: cannot map a thread record\n");
    };
    let mine = r as *const ThreadRecord as *mut ThreadRecord;
    match SHARED.compare_exchange(
        core::ptr::null_mut(),
        mine,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {
            push(r);
            r
        }
        // SAFETY: as above; our mapping is left unused (it was never published).
        Err(other) => unsafe { &*other },
    }
}

/// A record for a new thread: a free one, or a fresh one, or (past the limit) the shared one.
fn take() -> &'static ThreadRecord {
    let mut p = HEAD.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: records on the list live for the whole process.
        let r = unsafe { &*p };
        if r.state.load(Ordering::Relaxed) == FREE
            && r.state
                .compare_exchange(FREE, IN_USE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return stamp(r);
        }
        p = r.next.load(Ordering::Acquire);
    }
    if RECORDS.fetch_add(1, Ordering::Relaxed) >= MAX_RECORDS {
        return shared();
    }
    match map_record() {
        Some(r) => {
            push(r);
            stamp(r)
        }
        None => shared(),
    }
}

fn stamp(r: &'static ThreadRecord) -> &'static ThreadRecord {
    r.serial.store(
        SERIAL.fetch_add(1, Ordering::Relaxed) + 1,
        Ordering::Relaxed,
    );
    r
}

/// Gives a thread's record back (after its figures were written): cleared and free for the
/// next new thread.
pub fn release(r: &'static ThreadRecord) {
    if r.is_shared() {
        return;
    }
    r.clear();
    r.state.store(FREE, Ordering::Release);
}

/// Every record in use, the shared one included (it may be empty).
pub fn records() -> impl Iterator<Item = &'static ThreadRecord> {
    let mut p = HEAD.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        while !p.is_null() {
            // SAFETY: records on the list live for the whole process.
            let r = unsafe { &*p };
            p = r.next.load(Ordering::Acquire);
            if r.state.load(Ordering::Acquire) == IN_USE {
                return Some(r);
            }
        }
        None
    })
}

/// Zeroes every record (between a pilot's iterations; in a forked child, which must not
/// report its parent's calls).
pub fn clear_all() {
    for r in records() {
        r.clear();
    }
}

/// Times one call in `n` per thread from now on (`n` at least 1).
pub fn set_every(n: u64) {
    EVERY.store(n.max(1), Ordering::Relaxed);
}

/// One call in how many is timed.
pub fn every() -> u64 {
    EVERY.load(Ordering::Relaxed)
}

/// Has `hook` called with each thread's new record (once per thread, inside the probe).
pub fn on_new_record(hook: fn(&'static ThreadRecord)) {
    ON_NEW.store(hook as usize, Ordering::Release);
}

// ---- timing -----------------------------------------------------------------------------------

/// This thread's record (null until its first call) and whether it is inside the probe.
struct Tls {
    record: Cell<*const ThreadRecord>,
    busy: Cell<bool>,
}

thread_local! {
    // Constant-initialized and without a destructor: a plain TLS slot, which neither allocates
    // nor registers anything when a thread first touches it.
    static TLS: Tls = const {
        Tls {
            record: Cell::new(core::ptr::null()),
            busy: Cell::new(false),
        }
    };
}

/// Points this thread at `r` from now on (the thread-exit hook points an exiting thread at the
/// shared record after giving its own back).
pub fn set_current(r: &'static ThreadRecord) {
    let _ = TLS.try_with(|t| t.record.set(r));
}

/// Runs `f` (one allocator call of kind `kind`), counting it and timing it into this
/// thread's record. A call made while this thread is already inside the probe runs untimed and
/// uncounted: the inner `malloc` of a C++ `operator new`, or any allocation the probe's own
/// set-up causes.
#[inline]
pub fn timed<R>(kind: Kind, f: impl FnOnce() -> R) -> R {
    let entered = TLS.try_with(|t| {
        if t.busy.get() {
            return None;
        }
        t.busy.set(true);
        let mut r = t.record.get();
        if r.is_null() {
            let new = take();
            r = new;
            t.record.set(r);
            let hook = ON_NEW.load(Ordering::Acquire);
            if hook != 0 {
                // SAFETY: ON_NEW holds 0 or a `fn(&'static ThreadRecord)` (on_new_record).
                let hook: fn(&'static ThreadRecord) = unsafe { core::mem::transmute(hook) };
                hook(new);
            }
        }
        Some(r)
    });
    let Ok(Some(r)) = entered else {
        return f();
    };
    // SAFETY: records live for the whole process.
    let r: &'static ThreadRecord = unsafe { &*r };
    let shared = r.is_shared();
    let k = &r.kinds[kind as usize];
    bump(&k.calls, 1, shared);
    let every = EVERY.load(Ordering::Relaxed);
    let sample = every == 1 || {
        let left = r.countdown.load(Ordering::Relaxed);
        if left == 0 {
            r.countdown.store(every - 1, Ordering::Relaxed);
            true
        } else {
            r.countdown.store(left - 1, Ordering::Relaxed);
            false
        }
    };
    let out = if sample {
        let t0 = clock::now();
        let out = f();
        let d = clock::now().wrapping_sub(t0);
        bump(&k.timed, 1, shared);
        bump(&k.ticks, d, shared);
        if shared {
            k.max.fetch_max(d, Ordering::Relaxed);
        } else if d > k.max.load(Ordering::Relaxed) {
            k.max.store(d, Ordering::Relaxed);
        }
        k.hist.add(d, shared);
        out
    } else {
        f()
    };
    let _ = TLS.try_with(|t| t.busy.set(false));
    out
}

/// Runs `f` inside the probe: allocator calls it makes on this thread are neither counted nor
/// timed (the `.so`'s set-up and dumps).
pub fn untimed<R>(f: impl FnOnce() -> R) -> R {
    let was = TLS.try_with(|t| t.busy.replace(true)).unwrap_or(true);
    let out = f();
    if !was {
        let _ = TLS.try_with(|t| t.busy.set(false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_and_timed_per_thread_nested_ones_not_and_sampled_one_in_n() {
        clock::init();
        let handle = std::thread::spawn(|| {
            for _ in 0..100 {
                timed(Kind::Malloc, || {
                    // A nested call: the inner malloc of an `operator new`.
                    timed(Kind::Malloc, || std::hint::black_box(1))
                });
            }
            timed(Kind::Free, || ());
            let r = TLS.with(|t| t.record.get());
            // SAFETY: records live for the whole process.
            let r = unsafe { &*r };
            let m = &r.kinds[Kind::Malloc as usize];
            (
                m.calls.load(Ordering::Relaxed),
                m.timed.load(Ordering::Relaxed),
                r.kinds[Kind::Free as usize].calls.load(Ordering::Relaxed),
                m.hist.nonzero().map(|(_, c)| c).sum::<u64>(),
                r.serial.load(Ordering::Relaxed),
            )
        });
        let (calls, timed_calls, frees, in_hist, serial) = handle.join().unwrap();
        assert_eq!((calls, timed_calls, frees, in_hist), (100, 100, 1, 100));
        assert!(serial >= 1);

        // Sampling: every call counted, one in ten timed. `every` is global: this is the
        // crate's only test that times calls, so nothing else sees it changed.
        let (calls, timed_calls) = std::thread::spawn(|| {
            set_every(10);
            for _ in 0..100 {
                timed(Kind::Calloc, || ());
            }
            set_every(1);
            let r = TLS.with(|t| t.record.get());
            // SAFETY: records live for the whole process.
            let k = unsafe { &(*r).kinds[Kind::Calloc as usize] };
            (
                k.calls.load(Ordering::Relaxed),
                k.timed.load(Ordering::Relaxed),
            )
        })
        .join()
        .unwrap();
        assert_eq!(calls, 100);
        assert_eq!(timed_calls, 10);
    }
}
