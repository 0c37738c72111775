//! Memory over time: the process's resident size read every `period` (10 ms by default) while
//! the workload runs, for every subject (peers included), summarized as peak, time-weighted
//! mean, final, and what was returned after the peak (the peak minus the lowest sample after
//! it), with the curve itself kept for charts.
//!
//! The curve has a fixed number of slots, reserved before the run: when they fill up, every
//! other point is dropped and the stride doubles, so a run of any length keeps between half
//! and all of them, evenly spaced, and the sampler never allocates while it samples. The
//! summaries are running figures over every sample, not over the kept points.

use super::schema::MemoryOverTime;
use alloclab_traces::replay::rss;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The default period.
pub const PERIOD: Duration = Duration::from_millis(10);
/// Points a curve keeps at most.
const SLOTS: usize = 256;

struct Curve {
    start: Instant,
    points: Vec<(f64, u64)>,
    /// Keep one sample in this many.
    stride: u64,
    seen: u64,
    /// The latest sample, for the time-weighted mean.
    last: Option<(f64, u64)>,
    byte_seconds: f64,
    seconds: f64,
    peak: u64,
    /// The lowest sample since the peak.
    low_after_peak: u64,
}

impl Curve {
    fn new(start: Instant) -> Curve {
        Curve {
            start,
            points: Vec::with_capacity(SLOTS),
            stride: 1,
            seen: 0,
            last: None,
            byte_seconds: 0.0,
            seconds: 0.0,
            peak: 0,
            low_after_peak: 0,
        }
    }

    fn add(&mut self, now: Instant, bytes: u64) {
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        if let Some((t0, b0)) = self.last {
            self.byte_seconds += b0 as f64 * (t - t0);
            self.seconds += t - t0;
        }
        self.last = Some((t, bytes));
        if bytes >= self.peak {
            self.peak = bytes;
            self.low_after_peak = bytes;
        } else {
            self.low_after_peak = self.low_after_peak.min(bytes);
        }
        if self.seen % self.stride == 0 {
            if self.points.len() == SLOTS {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
            if self.seen % self.stride == 0 {
                self.points.push((t, bytes));
            }
        }
        self.seen += 1;
    }

    fn finish(self, period: Duration) -> Option<MemoryOverTime> {
        let (t_end, final_bytes) = self.last?;
        Some(MemoryOverTime {
            period_ms: period.as_secs_f64() * 1e3,
            samples: self.seen,
            rss_peak_bytes: self.peak,
            rss_mean_bytes: if self.seconds > 0.0 {
                self.byte_seconds / self.seconds
            } else {
                final_bytes as f64
            },
            rss_final_bytes: final_bytes,
            rss_returned_bytes: self.peak - self.low_after_peak,
            seconds: t_end,
            curve: self.points,
        })
    }
}

/// Runs `f`, reading the resident size before, every `period` during, and after it.
pub fn recorded<R>(period: Duration, f: impl FnOnce() -> R) -> (R, Option<MemoryOverTime>) {
    let start = Instant::now();
    let mut curve = Curve::new(start);
    let Some(first) = rss::current() else {
        return (f(), None);
    };
    curve.add(start, first as u64);
    let stop = AtomicBool::new(false);
    let (r, mut curve) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                std::thread::park_timeout(period);
                if stop.load(Ordering::Acquire) {
                    break;
                }
                if let Some(b) = rss::current() {
                    curve.add(Instant::now(), b as u64);
                }
            }
            curve
        });
        // Stops the sampler however `f` ends (see `sampler::sampled`).
        struct Stop<'a>(&'a AtomicBool, &'a std::thread::Thread);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
                self.1.unpark();
            }
        }
        let r = {
            let _stop = Stop(&stop, sampler.thread());
            f()
        };
        (
            r,
            sampler.join().expect("the memory sampler does not panic"),
        )
    });
    if let Some(b) = rss::current() {
        curve.add(Instant::now(), b as u64);
    }
    (r, curve.finish(period))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_keeps_its_slots_evenly_and_the_summaries_are_exact() {
        let start = Instant::now();
        let mut c = Curve::new(start);
        // 0..1000 bytes rising then falling to 100, a sample per ms.
        for i in 0..1000u64 {
            let bytes = if i < 500 { i * 2 } else { 100 };
            c.add(start + Duration::from_millis(i), bytes);
        }
        let m = c.finish(Duration::from_millis(1)).unwrap();
        assert_eq!(m.samples, 1000);
        assert!(
            m.curve.len() > SLOTS / 2 && m.curve.len() <= SLOTS,
            "{}",
            m.curve.len()
        );
        let gaps: Vec<f64> = m.curve.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(
            gaps.iter().all(|g| (g - gaps[0]).abs() < 1e-9),
            "evenly spaced"
        );
        assert_eq!((m.rss_peak_bytes, m.rss_final_bytes), (998, 100));
        assert_eq!(m.rss_returned_bytes, 898);
        // Time-weighted: half the time rising (mean ~499), half at 100.
        assert!(
            (m.rss_mean_bytes - 299.0).abs() < 2.0,
            "{}",
            m.rss_mean_bytes
        );
    }

    #[test]
    fn a_run_is_sampled_while_it_grows() {
        let (v, m) = recorded(Duration::from_millis(2), || {
            let mut v: Vec<Vec<u8>> = Vec::new();
            for _ in 0..40 {
                v.push(vec![1u8; 1 << 20]);
                std::thread::sleep(Duration::from_millis(2));
            }
            v.len()
        });
        assert_eq!(v, 40);
        let m = m.unwrap();
        assert!(m.samples >= 3, "{m:?}");
        assert!(m.rss_peak_bytes >= m.curve[0].1 + (30 << 20), "{m:?}");
        // The 40 MiB were freed before the last sample.
        assert!(m.rss_returned_bytes >= 30 << 20, "{m:?}");
    }
}
