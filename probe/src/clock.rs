//! The time stamps the probe takes around each call, and what they are worth.
//!
//! On x86-64 the probe reads the time-stamp counter (`rdtsc`, a few nanoseconds) when the
//! kernel itself keeps time with it (its clock source is `tsc`, which it picks only for an
//! invariant, synchronized counter); anywhere else it reads `CLOCK_MONOTONIC` (tens of
//! nanoseconds through the vDSO). Ticks become nanoseconds at the end, by the ratio of the two
//! clocks over the whole run (`span`), so no conversion runs on the measured path.
//!
//! The probe's own cost: `overhead_ticks` times an empty pair of stamps, the part of the probe
//! that falls inside every interval it records. Summaries subtract it per timed call and say so.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

const UNKNOWN: u8 = 0;
const TSC: u8 = 1;
const MONOTONIC: u8 = 2;

static SOURCE: AtomicU8 = AtomicU8::new(UNKNOWN);
static START_TICKS: AtomicU64 = AtomicU64::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

/// Which clock the stamps come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The time-stamp counter.
    Tsc,
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    Monotonic,
}

impl Source {
    /// Its name in dumps and results.
    pub fn name(self) -> &'static str {
        match self {
            Source::Tsc => "tsc",
            Source::Monotonic => "monotonic",
        }
    }

    /// The source called `name`.
    pub fn from_name(name: &str) -> Option<Source> {
        match name {
            "tsc" => Some(Source::Tsc),
            "monotonic" => Some(Source::Monotonic),
            _ => None,
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Whether the kernel's clock source is the TSC (read with `open`/`read`: no allocation).
fn kernel_uses_tsc() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let path = b"/sys/devices/system/clocksource/clocksource0/current_clocksource\0";
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 16];
    // SAFETY: reads at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: `fd` is ours and open.
    unsafe { libc::close(fd) };
    n >= 3 && &buf[..4.min(n as usize)] == b"tsc\n"
}

/// Picks the clock and notes the start (once; later calls change nothing).
pub fn init() {
    if SOURCE.load(Ordering::Acquire) != UNKNOWN {
        return;
    }
    let s = if kernel_uses_tsc() { TSC } else { MONOTONIC };
    if SOURCE
        .compare_exchange(UNKNOWN, s, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        START_NS.store(monotonic_ns(), Ordering::Relaxed);
        START_TICKS.store(now(), Ordering::Release);
    }
}

/// The clock in use (after [`init`]).
pub fn source() -> Source {
    if SOURCE.load(Ordering::Relaxed) == TSC {
        Source::Tsc
    } else {
        Source::Monotonic
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc() -> u64 {
    // SAFETY: every x86-64 processor has `rdtsc`; user mode may run it unless the kernel set
    // CR4.TSD, which it does not when its own clock source is the TSC (checked by `init`).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn tsc() -> u64 {
    monotonic_ns()
}

/// A time stamp, in ticks of [`source`].
#[inline]
pub fn now() -> u64 {
    if SOURCE.load(Ordering::Relaxed) == TSC {
        tsc()
    } else {
        monotonic_ns()
    }
}

/// Ticks and nanoseconds since [`init`]: their ratio converts ticks to nanoseconds.
pub fn span() -> (u64, u64) {
    let ticks = now().saturating_sub(START_TICKS.load(Ordering::Acquire));
    let ns = monotonic_ns().saturating_sub(START_NS.load(Ordering::Relaxed));
    (ticks, ns)
}

/// The median of 1001 empty intervals (two stamps back to back), in ticks: what the probe adds
/// to every interval it records.
pub fn overhead_ticks() -> u64 {
    const N: usize = 1001;
    let mut d = [0u64; N];
    for x in d.iter_mut() {
        let t0 = now();
        let t1 = now();
        *x = t1.saturating_sub(t0);
    }
    d.sort_unstable();
    d[N / 2]
}

/// The timer's resolution, in ticks: the median step between two stamps that differ, over 101
/// tries (each reads until the stamp moves). That is the smallest interval the probe can tell
/// from zero in practice: a coarse clock's tick, or a fine one's read time (a virtual machine's
/// counter sometimes steps by one tick, so the smallest step would claim too much). A latency
/// the probe reports under it (after its cost is subtracted) is only "at most r".
pub fn resolution_ticks() -> u64 {
    const N: usize = 101;
    let mut steps = [0u64; N];
    let mut seen = 0;
    for _ in 0..N {
        let t0 = now();
        let mut t1 = now();
        let mut spins = 0u32;
        while t1 == t0 && spins < 1_000_000 {
            t1 = now();
            spins += 1;
        }
        if t1 > t0 {
            steps[seen] = t1 - t0;
            seen += 1;
        }
    }
    if seen == 0 {
        return 1;
    }
    let steps = &mut steps[..seen];
    steps.sort_unstable();
    steps[seen / 2].max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_advance_and_span_converts_them() {
        init();
        let t0 = now();
        let n0 = monotonic_ns();
        while monotonic_ns() - n0 < 2_000_000 {}
        let t1 = now();
        assert!(t1 > t0);
        let (ticks, ns) = span();
        assert!(ticks > 0 && ns >= 2_000_000, "{ticks} ticks in {ns} ns");
        // One tick is between 0.05 ns (20 GHz) and 1 ns (a nanosecond clock).
        let per = ns as f64 / ticks as f64;
        assert!((0.05..=1.0001).contains(&per), "{per} ns per tick");
        assert!(overhead_ticks() < ticks);
        let r = resolution_ticks();
        assert!(r >= 1 && r < ticks, "resolution {r} ticks");
    }
}
