//! What the records say, in nanoseconds with the probe's own cost subtracted: time inside the
//! allocator per thread, per call, and the latency percentiles per kind of call.
//!
//! Subtraction: every timed interval holds the probe's empty-pair cost once (`overhead`); it
//! is taken off each interval, never below zero, and off each percentile (a constant shift
//! moves every percentile by the same amount). Sampled records (one call in N timed) are
//! scaled up by calls over timed calls. Records threads shared past the record limit count in
//! the totals and the percentiles but are not a thread.

use super::clock::{self, Source};
use super::dump::{Dump, ThreadFigures};
use super::histogram;
use super::record::{self, Kind, KINDS};

/// One kind of call, over every thread and process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindSummary {
    /// Calls made.
    pub calls: u64,
    /// Nanoseconds inside them (net, scaled up when sampled).
    pub ns: f64,
    /// Latencies (ns, net) with their counts, ascending.
    pub latencies: Vec<(f64, u64)>,
    /// The longest call (ns, net).
    pub max_ns: f64,
}

/// The probe's figures for one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The clock (of the first process).
    pub clock: Source,
    /// The probe's own cost per timed call (ns), the largest over the processes; already
    /// subtracted from every figure here.
    pub overhead_ns: f64,
    /// The timer's resolution (ns), the coarsest over the processes; 0 when no process recorded
    /// it. A net latency below it cannot be told from zero.
    pub resolution_ns: f64,
    /// One call in how many was timed.
    pub every: u64,
    /// Processes that wrote figures.
    pub processes: usize,
    /// Per thread that made calls: (calls, net nanoseconds inside the allocator).
    pub threads: Vec<(u64, f64)>,
    /// Calls made on the shared record (threads past the record limit, or exiting).
    pub shared_calls: u64,
    /// Per kind, indexed like `Kind::ALL`.
    pub kinds: [KindSummary; KINDS],
}

/// A thread's figures in nanoseconds: (calls, net ns) and each kind's net latencies.
fn add_thread(s: &mut Summary, t: &ThreadFigures, overhead: u64, ns_per_tick: f64) {
    let mut calls = 0;
    let mut ns = 0.0;
    for (sum, k) in s.kinds.iter_mut().zip(&t.kinds) {
        if k.calls == 0 {
            continue;
        }
        let net = k.ticks.saturating_sub(k.timed.saturating_mul(overhead)) as f64;
        let scaled = if k.timed > 0 {
            net * k.calls as f64 / k.timed as f64
        } else {
            0.0
        };
        let kind_ns = scaled * ns_per_tick;
        calls += k.calls;
        ns += kind_ns;
        sum.calls += k.calls;
        sum.ns += kind_ns;
        let net_of = |ticks: f64| (ticks - overhead as f64).max(0.0) * ns_per_tick;
        sum.max_ns = sum.max_ns.max(net_of(k.max as f64));
        sum.latencies.extend(
            k.hist
                .iter()
                .map(|&(i, c)| (net_of(histogram::midpoint(i)), c)),
        );
    }
    if t.shared {
        s.shared_calls += calls;
    } else if calls > 0 {
        s.threads.push((calls, ns));
    }
}

/// Sorts latencies and merges equal values.
fn tidy(v: &mut Vec<(f64, u64)>) {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v.dedup_by(|later, kept| {
        if later.0 == kept.0 {
            kept.1 += later.1;
            true
        } else {
            false
        }
    });
}

impl Summary {
    fn empty(clock: Source, every: u64) -> Summary {
        Summary {
            clock,
            overhead_ns: 0.0,
            resolution_ns: 0.0,
            every,
            processes: 0,
            threads: Vec::new(),
            shared_calls: 0,
            kinds: Default::default(),
        }
    }

    /// The figures of the processes that wrote `dumps`.
    pub fn from_dumps(dumps: &[Dump]) -> Summary {
        let mut s = Summary::empty(
            dumps.first().map_or(Source::Monotonic, |d| d.clock),
            dumps.first().map_or(1, |d| d.every),
        );
        for d in dumps {
            let npt = d.ns_per_tick();
            s.processes += 1;
            s.overhead_ns = s.overhead_ns.max(d.overhead as f64 * npt);
            s.resolution_ns = s.resolution_ns.max(d.resolution as f64 * npt);
            for t in &d.threads {
                add_thread(&mut s, t, d.overhead, npt);
            }
        }
        for k in &mut s.kinds {
            tidy(&mut k.latencies);
        }
        s
    }

    /// The figures this process's records hold now (the in-process subjects' figures).
    pub fn of_this_process() -> Summary {
        let overhead = clock::overhead_ticks();
        let (ticks, ns) = clock::span();
        let d = Dump {
            pid: std::process::id() as u64,
            clock: clock::source(),
            overhead,
            every: record::every(),
            resolution: clock::resolution_ticks(),
            span: (ticks, ns),
            threads: record::records().map(ThreadFigures::of).collect(),
        };
        Summary::from_dumps(std::slice::from_ref(&d))
    }

    /// Calls of every kind.
    pub fn calls(&self) -> u64 {
        self.kinds.iter().map(|k| k.calls).sum()
    }

    /// Nanoseconds inside the allocator, over every thread.
    pub fn ns(&self) -> f64 {
        self.kinds.iter().map(|k| k.ns).sum()
    }

    /// Nanoseconds per call; `None` without calls.
    pub fn ns_per_call(&self) -> Option<f64> {
        let calls = self.calls();
        (calls > 0).then(|| self.ns() / calls as f64)
    }

    /// The median over threads of their nanoseconds inside the allocator (the mean of the
    /// middle two for an even count); `None` without threads.
    pub fn ns_per_thread_median(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.threads.iter().map(|&(_, ns)| ns).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        Some(if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        })
    }

    /// The largest per-thread nanoseconds inside the allocator.
    pub fn ns_per_thread_max(&self) -> Option<f64> {
        self.threads.iter().map(|&(_, ns)| ns).reduce(f64::max)
    }

    /// Latency percentile `q` (0 to 1) of calls of `kind`, or of every call for `None` (ns,
    /// to the histogram's resolution).
    pub fn percentile(&self, kind: Option<Kind>, q: f64) -> Option<f64> {
        let merged;
        let values: &[(f64, u64)] = match kind {
            Some(k) => &self.kinds[k as usize].latencies,
            None => {
                let mut all: Vec<(f64, u64)> = self
                    .kinds
                    .iter()
                    .flat_map(|k| k.latencies.iter().copied())
                    .collect();
                tidy(&mut all);
                merged = all;
                &merged
            }
        };
        let total: u64 = values.iter().map(|&(_, c)| c).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        values.iter().find_map(|&(v, c)| {
            seen += c;
            (seen >= rank).then_some(v)
        })
    }

    /// The longest call of `kind`, or of any kind for `None` (ns).
    pub fn max_ns(&self, kind: Option<Kind>) -> Option<f64> {
        match kind {
            Some(k) => {
                let k = &self.kinds[k as usize];
                (k.calls > 0).then_some(k.max_ns)
            }
            None => {
                (self.calls() > 0).then(|| self.kinds.iter().map(|k| k.max_ns).fold(0.0, f64::max))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(text: &str) -> Dump {
        Dump::parse(text).unwrap()
    }

    #[test]
    fn overhead_is_subtracted_per_call_and_threads_are_told_apart() {
        // Monotonic clock: ticks are nanoseconds. Thread 1: 4 mallocs of 100 ns raw (bucket
        // 100), overhead 20: 320 ns net. Thread 2: 1 free of 1000 raw (bucket of 1000):
        // about 980 net. The shared record counts but is no thread.
        let b1000 = histogram::bucket(1000);
        let text = format!(
            "alloclab-probe 1 pid=1 clock=monotonic overhead=20 every=1\n\
             thread 1 shared=0\nk malloc 4 4 400 100\nh malloc 100:4\nend\n\
             thread 2 shared=0\nk free 1 1 1000 1000\nh free {b1000}:1\nend\n\
             thread 3 shared=1\nk free 2 2 100 50\nh free 50:2\nend\nspan 9 9\n"
        );
        let s = Summary::from_dumps(&[dump(&text)]);
        assert_eq!(s.threads, vec![(4, 320.0), (1, 980.0)]);
        assert_eq!(s.shared_calls, 2);
        assert_eq!(s.calls(), 7);
        assert_eq!(s.ns(), 320.0 + 980.0 + 60.0);
        assert_eq!(s.ns_per_thread_max(), Some(980.0));
        assert_eq!(s.ns_per_thread_median(), Some(650.0));
        assert_eq!(s.percentile(Some(Kind::Malloc), 0.99), Some(80.0));
        // All calls: 30 (x2), 80 (x4), ~980: p50 is 80, p100 the free.
        assert_eq!(s.percentile(None, 0.5), Some(80.0));
        let p100 = s.percentile(None, 1.0).unwrap();
        assert!((p100 - 980.0).abs() < 5.0, "{p100}");
        assert_eq!(s.max_ns(None), Some(980.0));
        assert_eq!(s.overhead_ns, 20.0);
        assert_eq!(
            s.resolution_ns, 0.0,
            "a header without resolution= does not know it"
        );
    }

    #[test]
    fn sampled_time_is_scaled_and_ticks_converted() {
        // TSC at 2 ticks per ns; 10 calls, 2 timed of 120 ticks (overhead 20): 200 net ticks
        // over 2 calls, 1000 over 10, 500 ns.
        let text = "alloclab-probe 1 pid=1 clock=tsc overhead=20 every=5 resolution=40\n\
                    thread 1 shared=0\nk calloc 10 2 240 120\nh calloc 120:2\nend\nspan 2000 1000\n";
        let s = Summary::from_dumps(&[dump(text)]);
        assert_eq!(s.resolution_ns, 20.0, "40 ticks at 2 per ns");
        assert_eq!(s.threads, vec![(10, 500.0)]);
        assert_eq!(s.ns_per_call(), Some(50.0));
        assert_eq!(s.percentile(Some(Kind::Calloc), 0.5), Some(50.0));
        assert_eq!(s.every, 5);
    }
}
