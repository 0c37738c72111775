//! Memory over time: the process's resident size read every `period` (10 ms by default) while
//! the workload runs, for every subject (peers included), summarized as peak, time-weighted
//! mean, final, and what was returned after the peak (the peak minus the lowest sample after
//! it), with the curve itself kept for charts.
//!
//! The curve has a fixed number of slots, reserved before the run: when they fill up, every
//! other point is dropped and the stride doubles, so a run of any length keeps between half
//! and all of them, evenly spaced, and the sampler never allocates while it samples. The
//! summaries are running figures over every sample, not over the kept points.
//!
//! When the workload counts its live bytes (`live::track`), each point also keeps them and
//! the allocator calls made so far (for fragmentation charted over calls), and
//! the run gets fragmentation figures (`Fragmentation`): at the peak over every sample, and
//! the mean over the kept points (all of them, and the last quarter of the run's time) of the
//! resident bytes the run added over the live bytes.

use super::live::{self, Live};
use super::schema::{Fragmentation, MemoryOverTime};
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
    /// The live bytes at each kept point, while the workload counts them.
    lives: Vec<u64>,
    /// The workload's allocator calls so far at each kept point, likewise.
    calls: Vec<u64>,
    /// The resident size before the run, the workload's own tables, and the most it held live.
    base: u64,
    own: u64,
    peak_live: u64,
    tracked: bool,
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
            lives: Vec::with_capacity(SLOTS),
            calls: Vec::with_capacity(SLOTS),
            base: 0,
            own: 0,
            peak_live: 0,
            tracked: false,
        }
    }

    fn add(&mut self, now: Instant, bytes: u64, live: Option<Live>) {
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        if self.seen == 0 {
            self.base = bytes;
        }
        if let Some(l) = live {
            self.tracked = true;
            self.own = self.own.max(l.own);
            self.peak_live = self.peak_live.max(l.live);
        }
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
                every_other(&mut self.points);
                every_other(&mut self.lives);
                every_other(&mut self.calls);
                self.stride *= 2;
            }
            if self.seen % self.stride == 0 {
                self.points.push((t, bytes));
                self.lives.push(live.map_or(0, |l| l.live));
                self.calls.push(live.map_or(0, |l| l.calls));
            }
        }
        self.seen += 1;
    }

    /// `(resident - base - own) / live - 1` at one point, where anything is live.
    fn fragmentation_at(&self, bytes: u64, live: u64) -> Option<f64> {
        (live > 0).then(|| bytes.saturating_sub(self.base + self.own) as f64 / live as f64 - 1.0)
    }

    fn fragmentation(&self) -> Option<Fragmentation> {
        if !self.tracked || self.peak_live == 0 {
            return None;
        }
        // Points where anything is live: (seconds, resident bytes added, live bytes).
        let at: Vec<(f64, f64, f64)> = self
            .points
            .iter()
            .zip(&self.lives)
            .filter(|&(_, &l)| l > 0)
            .map(|(&(t, b), &l)| (t, b.saturating_sub(self.base + self.own) as f64, l as f64))
            .collect();
        // Over a span: the mean resident bytes added over the mean live bytes, minus one (a
        // ratio of sums, so that moments with almost nothing live do not dominate).
        let over = |v: &[(f64, f64, f64)]| {
            let (added, live) = v.iter().fold((0.0, 0.0), |(a, l), x| (a + x.1, l + x.2));
            added / live - 1.0
        };
        let (first, last) = (at.first()?.0, at.last()?.0);
        let late = first + 0.75 * (last - first);
        let end: Vec<(f64, f64, f64)> = at.iter().copied().filter(|x| x.0 >= late).collect();
        Some(Fragmentation {
            base_bytes: self.base,
            own_bytes: self.own,
            peak_live_bytes: self.peak_live,
            peak: self.fragmentation_at(self.peak, self.peak_live)?,
            mean: over(&at),
            end: over(&end),
        })
    }

    fn finish(self, period: Duration) -> Option<MemoryOverTime> {
        let (t_end, final_bytes) = self.last?;
        let fragmentation = self.fragmentation();
        let (live_curve, calls_curve) = if fragmentation.is_some() {
            (self.lives, self.calls)
        } else {
            (Vec::new(), Vec::new())
        };
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
            live_curve,
            calls_curve,
            fragmentation,
        })
    }
}

/// Keeps the first, third, fifth, ... elements of `v`.
fn every_other<T>(v: &mut Vec<T>) {
    let mut i = 0;
    v.retain(|_| {
        i += 1;
        i % 2 == 1
    });
}

/// Runs `f`, reading the resident size before, every `period` during, and after it.
pub fn recorded<R>(period: Duration, f: impl FnOnce() -> R) -> (R, Option<MemoryOverTime>) {
    let start = Instant::now();
    let mut curve = Curve::new(start);
    live::untrack();
    let Some(first) = rss::current() else {
        return (f(), None);
    };
    curve.add(start, first as u64, None);
    let stop = AtomicBool::new(false);
    let (r, mut curve) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                std::thread::park_timeout(period);
                if stop.load(Ordering::Acquire) {
                    break;
                }
                // Live bytes first: a block freed between the two reads then counts as
                // resident and not live (fragmentation over, never under, stated).
                let l = live::current();
                if let Some(b) = rss::current() {
                    curve.add(Instant::now(), b as u64, l);
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
    let l = live::current();
    live::untrack();
    if let Some(b) = rss::current() {
        curve.add(Instant::now(), b as u64, l);
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
            c.add(start + Duration::from_millis(i), bytes, None);
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
    fn fragmentation_is_the_resident_bytes_added_over_the_live_ones() {
        let start = Instant::now();
        let mut c = Curve::new(start);
        let ms = |i: u64| start + Duration::from_millis(i);
        let live = |live: u64| {
            Some(Live {
                live,
                own: 100,
                calls: live * 2,
            })
        };
        // 1000 resident before the run, 100 of them the workload's tables to come.
        c.add(ms(0), 1000, None);
        // Three quarters of the time: 1000 added over 500 live (frag 1).
        for i in 1..=30 {
            c.add(ms(i), 2100, live(500));
        }
        // The last quarter: 1000 added over 1000 live (frag 0); the peak live is here.
        for i in 31..=40 {
            c.add(ms(i), 2100, live(1000));
        }
        // Everything freed: not counted.
        c.add(ms(41), 1500, live(0));
        let m = c.finish(Duration::from_millis(1)).unwrap();
        let f = m.fragmentation.expect("a tracked run has figures");
        assert_eq!(
            (f.base_bytes, f.own_bytes, f.peak_live_bytes),
            (1000, 100, 1000)
        );
        // Peak resident 2100 - 1100 over peak live 1000.
        assert!(f.peak.abs() < 1e-12, "{f:?}");
        // Sums: 40 points adding 1000 each over 30 * 500 + 10 * 1000 live.
        assert!(
            (f.mean - (40_000.0 / 25_000.0 - 1.0)).abs() < 1e-12,
            "{f:?}"
        );
        // The last quarter of 1..=40 ms starts at 30.25 ms: points 31..=40.
        assert!(f.end.abs() < 1e-12, "{f:?}");
        assert_eq!(m.live_curve.len(), m.curve.len());
        assert_eq!(m.calls_curve.len(), m.curve.len());
        assert_eq!((m.calls_curve[1], m.calls_curve[40]), (1000, 2000));
        // An untracked run has none.
        let mut c = Curve::new(start);
        c.add(ms(0), 1000, None);
        c.add(ms(1), 2000, None);
        let m = c.finish(Duration::from_millis(1)).unwrap();
        assert!(m.fragmentation.is_none() && m.live_curve.is_empty());
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
