//! Sampling an allocator's own figures while a workload runs: the peaks of live, active and
//! used bytes, Johnstone and Wilson's fragmentation at the peak and averaged over time, and
//! the policy counters at the end.
//!
//! A scoped thread reads `Subject::stats` every `interval`; the calling thread takes one
//! sample before and one after the work, so even a run shorter than the interval has two.
//! The sampler keeps running sums only (no buffer of samples), so it allocates nothing while
//! it samples.
//!
//! "Used" bytes are the pages the allocator holds: pages backing live allocations, free pages
//! not yet returned to the OS, and its own structures (for alloclab, `active + dirty +
//! metadata`, page-exact, rather than the whole chunks it has reserved, whose untouched pages
//! cost nothing). Figures come only from subjects that report live, active and used bytes and
//! policy counters (alloclab's heaps); for the others the result is `None`.

use super::schema::HeapMetrics;
use alloclab_traces::subject::{HeapStats, Subject};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One sample's figures (bytes).
#[derive(Clone, Copy, Debug)]
struct Sample {
    allocated: u64,
    active: u64,
    used: u64,
}

impl Sample {
    fn of(s: &HeapStats) -> Option<Sample> {
        s.policy?;
        Some(Sample {
            allocated: s.allocated? as u64,
            active: s.active? as u64,
            used: s.resident_estimate? as u64,
        })
    }

    /// `used / allocated - 1`, undefined while nothing is live.
    fn fragmentation(&self) -> Option<f64> {
        (self.allocated > 0).then(|| self.used as f64 / self.allocated as f64 - 1.0)
    }
}

/// Running figures over the samples so far.
#[derive(Debug)]
struct Accumulator {
    peak_allocated: u64,
    peak_active: u64,
    peak_used: u64,
    samples: u64,
    /// The latest sample and when it was taken.
    last: Option<(Instant, Sample)>,
    /// Sum of fragmentation × seconds it held.
    frag_seconds: f64,
    /// Seconds over which fragmentation was defined.
    seconds: f64,
}

impl Accumulator {
    fn new() -> Accumulator {
        Accumulator {
            peak_allocated: 0,
            peak_active: 0,
            peak_used: 0,
            samples: 0,
            last: None,
            frag_seconds: 0.0,
            seconds: 0.0,
        }
    }

    /// Credits the latest sample's fragmentation with the time until `now`.
    fn close_interval(&mut self, now: Instant) {
        if let Some((t, s)) = self.last {
            if let Some(f) = s.fragmentation() {
                let dt = now.saturating_duration_since(t).as_secs_f64();
                self.frag_seconds += f * dt;
                self.seconds += dt;
            }
        }
    }

    fn add(&mut self, now: Instant, s: Sample) {
        self.close_interval(now);
        self.peak_allocated = self.peak_allocated.max(s.allocated);
        self.peak_active = self.peak_active.max(s.active);
        self.peak_used = self.peak_used.max(s.used);
        self.samples += 1;
        self.last = Some((now, s));
    }

    fn finish(&self, end: &HeapStats) -> HeapMetrics {
        let frag_peak = if self.peak_allocated > 0 {
            self.peak_used as f64 / self.peak_allocated as f64 - 1.0
        } else {
            0.0
        };
        let frag_time_avg = if self.seconds > 0.0 {
            self.frag_seconds / self.seconds
        } else {
            // Every sample came at one instant: their plain mean.
            self.last
                .and_then(|(_, s)| s.fragmentation())
                .unwrap_or(0.0)
        };
        let policy = end.policy.unwrap_or_default();
        HeapMetrics {
            peak_allocated: self.peak_allocated,
            peak_active: self.peak_active,
            peak_mapped: self.peak_used,
            frag_peak,
            frag_time_avg,
            samples: self.samples,
            picks: policy.picks,
            new_runs: policy.new_runs,
            runs_released: policy.runs_released,
            purges: policy.purges,
            lock_acquisitions: end.locks.map(|l| l.lock_acquisitions),
            lock_contended: end.locks.map(|l| l.lock_contended),
            lock_wait_ns: end.locks.map(|l| l.lock_wait_ns),
            lock_contended_max_arena: end.locks.map(|l| l.lock_contended_max_arena),
            lock_wait_ns_max_arena: end.locks.map(|l| l.lock_wait_ns_max_arena),
        }
    }
}

/// Runs `f`, sampling `subject`'s figures every `interval` on a scoped thread; returns `f`'s
/// result and the figures (`None` when the subject does not report them).
pub fn sampled<R>(
    subject: &dyn Subject,
    interval: Duration,
    f: impl FnOnce() -> R,
) -> (R, Option<HeapMetrics>) {
    let first = subject.stats();
    let Some(s0) = Sample::of(&first) else {
        return (f(), None);
    };
    let acc = Mutex::new(Accumulator::new());
    acc.lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(Instant::now(), s0);
    let stop = AtomicBool::new(false);
    let r = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                std::thread::park_timeout(interval);
                if stop.load(Ordering::Acquire) {
                    break;
                }
                if let Some(s) = Sample::of(&subject.stats()) {
                    acc.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .add(Instant::now(), s);
                }
            }
        });
        // Stops the sampler however `f` ends: a panic in `f` would otherwise leave the scope
        // waiting for the sampler forever.
        struct Stop<'a>(&'a AtomicBool, &'a std::thread::Thread);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
                self.1.unpark();
            }
        }
        let _stop = Stop(&stop, sampler.thread());
        f()
    });
    let end = subject.stats();
    let mut acc = acc.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = Sample::of(&end) {
        acc.add(Instant::now(), s);
    }
    (r, Some(acc.finish(&end)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloclab_core::Heap;
    use alloclab_policies::configs::AddrOrdered;

    #[test]
    fn peaks_cover_the_live_bytes_and_counters_come_from_the_heap() {
        let heap = Heap::<AddrOrdered>::new();
        let (n, m) = sampled(&heap, Duration::from_millis(1), || {
            let ptrs: Vec<*mut u8> = (0..1000).map(|_| Subject::malloc(&heap, 100)).collect();
            // Long enough for the 1 ms sampler to run while the blocks are live even on a
            // loaded machine (5 ms was not, with two builds beside the tests).
            std::thread::sleep(Duration::from_millis(300));
            for p in &ptrs {
                // SAFETY: each pointer was returned by this heap and is freed once.
                unsafe { Subject::free(&heap, *p) };
            }
            ptrs.len()
        });
        assert_eq!(n, 1000);
        let m = m.expect("alloclab heaps report their figures");
        assert!(m.samples >= 2, "{m:?}");
        // 1000 live blocks of 100 bytes (112-byte class) were live at the middle sample.
        assert!(m.peak_allocated >= 100_000, "{m:?}");
        assert!(m.peak_active >= m.peak_allocated, "{m:?}");
        assert!(m.peak_mapped >= m.peak_active, "{m:?}");
        assert!(m.frag_peak >= 0.0, "{m:?}");
        assert!(m.new_runs > 0 && m.runs_released > 0, "{m:?}");
        assert!(m.picks > 0, "{m:?}");
    }

    #[test]
    fn a_panic_in_the_work_ends_the_sampler() {
        let heap = Heap::<AddrOrdered>::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sampled(&heap, Duration::from_millis(1), || {
                panic!("the work failed")
            })
        }));
        assert!(r.is_err());
    }

    #[test]
    fn subjects_without_figures_give_none() {
        let (r, m) = sampled(&crate::peers::System, Duration::from_millis(1), || 7);
        assert_eq!((r, m), (7, None));
    }
}
