//! From the measurements of `results.json` to what a report says: per workload, thread
//! count and metric, each subject's median with its interval, and each subject against the
//! baseline (ratio of medians with its interval, a rank test, the Holm-adjusted p across the
//! comparisons made of the same metric, a verdict, and the smallest effect the noise allowed
//! to detect).
//! Warm-up rounds are left out. The statistics are those of [`super::stats`].

use super::schema::{Measurement, Metrics, Results};
use super::stats::{self, ConfidenceInterval, TestResult};
use serde::{Deserialize, Serialize};

/// How the analysis is done.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisOptions {
    /// Confidence level of every interval.
    pub level: f64,
    /// Family-wise significance level (Holm-Bonferroni across the comparisons of one metric).
    pub alpha: f64,
    /// Power at which the minimum detectable effect is stated.
    pub power: f64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// Seed of the bootstrap (each interval derives its own from this and its names).
    pub seed: u64,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            level: 0.95,
            alpha: 0.05,
            power: 0.8,
            resamples: 2000,
            seed: 0x5eed,
        }
    }
}

/// Which way a subject differs from the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Significantly lower than the baseline (less time, less memory, fewer operations per
    /// second: whether lower is better depends on the metric).
    Lower,
    /// Significantly higher than the baseline.
    Higher,
    /// The data do not show a difference: the Holm-adjusted p is not below alpha, or the
    /// ratio's interval contains 1.
    NoSignificantDifference,
    /// The baseline's median is zero (a counter the baseline never moves): no ratio exists,
    /// so none is given and no direction is claimed.
    BaselineZero,
}

impl Verdict {
    /// How reports print it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Lower => "lower",
            Verdict::Higher => "higher",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::BaselineZero => "baseline is 0",
        }
    }
}

/// One subject's figures for one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The subject.
    pub subject: String,
    /// Measurements (process invocations) that gave this metric.
    pub n: usize,
    /// Median with its bootstrap interval.
    pub median: ConfidenceInterval,
    /// Smallest value seen.
    pub min: f64,
    /// Largest value seen.
    pub max: f64,
}

/// One subject against the baseline on one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The subject.
    pub subject: String,
    /// `median(subject) / median(baseline)` with its bootstrap interval.
    pub ratio: ConfidenceInterval,
    /// The Mann-Whitney U test of subject against baseline.
    pub test: TestResult,
    /// The test's p adjusted by Holm-Bonferroni across every comparison of the analysis.
    pub p_holm: f64,
    /// What the data show.
    pub verdict: Verdict,
    /// The smallest relative difference of medians (`0.05` = 5%) this comparison would have
    /// detected with the analysis's power, at the strictest level Holm's procedure applies
    /// (`alpha / comparisons`). Infinite when the number of invocations cannot reach it.
    pub min_detectable_effect: f64,
    /// Invocations per subject with which any difference could reach significance at that
    /// strictest level (so an infinite `min_detectable_effect` says how many to run).
    pub min_invocations: Option<usize>,
}

/// Everything about one metric of one workload at one thread count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricAnalysis {
    /// The workload.
    pub workload: String,
    /// Worker threads.
    pub threads: usize,
    /// The metric's name (see [`METRICS`]).
    pub metric: String,
    /// Per subject, in the plan's order.
    pub summaries: Vec<Summary>,
    /// Per subject other than the baseline, when the baseline has figures.
    pub comparisons: Vec<Comparison>,
}

/// The whole analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The subject ratios are taken against.
    pub baseline: String,
    /// How it was done.
    pub options: AnalysisOptions,
    /// Comparisons made, all metrics together (each metric is its own Holm family).
    pub comparisons_made: usize,
    /// Per workload (plan order), thread count and metric ([`METRICS`] order).
    pub metrics: Vec<MetricAnalysis>,
}

impl Analysis {
    /// The analysis of one metric of one cell, if any subject had it.
    pub fn get(&self, workload: &str, threads: usize, metric: &str) -> Option<&MetricAnalysis> {
        self.metrics
            .iter()
            .find(|m| m.workload == workload && m.threads == threads && m.metric == metric)
    }
}

/// A metric: its name in reports and `results.csv`, its unit, and how to read it.
#[derive(Clone, Copy, Debug)]
pub struct MetricDef {
    /// Name (`wall`, `heap.peak_mapped`, `instructions.d1_misses`, ...).
    pub name: &'static str,
    /// Unit (`s`, `bytes`, `1/s`, `ratio`, `count`, `per op`).
    pub unit: &'static str,
    /// Reads it from a measurement's figures, if present.
    pub get: fn(&Metrics) -> Option<f64>,
}

macro_rules! heap {
    ($field:ident) => {
        |m: &Metrics| m.heap.as_ref().map(|h| h.$field as f64)
    };
}
macro_rules! probe {
    ($($field:ident).+) => {
        |m: &Metrics| m.probe.as_ref().map(|p| p.$($field).+ as f64)
    };
}
macro_rules! heap_opt {
    ($field:ident) => {
        |m: &Metrics| m.heap.as_ref().and_then(|h| h.$field).map(|v| v as f64)
    };
}
macro_rules! instr {
    ($field:ident) => {
        |m: &Metrics| m.instructions.as_ref().map(|i| i.$field)
    };
}
macro_rules! per_free {
    ($field:ident) => {
        |m: &Metrics| {
            m.instructions
                .as_ref()
                .and_then(|i| i.per_free.as_ref())
                .map(|f| f.$field)
        }
    };
}

impl MetricDef {
    /// Which direction is an improvement: `Some(true)` when more is better (operations per
    /// second), `Some(false)` when less is (time, memory, fragmentation, instructions, misses),
    /// `None` for policy counters, which describe behaviour rather than rank it.
    pub fn higher_is_better(&self) -> Option<bool> {
        match self.name {
            "ops_per_sec" => Some(true),
            "heap.picks"
            | "heap.new_runs"
            | "heap.runs_released"
            | "heap.purges"
            | "heap.lock_acquisitions"
            | "heap.lock_contended"
            | "heap.lock_contended_max_arena"
            | "alloc_calls" => None,
            // Memory given back after the peak: more is better.
            "rss_returned_bytes" => Some(true),
            _ => Some(false),
        }
    }
}

/// The resident-size fragmentation of a run that counted its live bytes.
fn frag(m: &Metrics) -> Option<&super::schema::Fragmentation> {
    m.memory.as_ref()?.fragmentation.as_ref()
}

/// Every metric analysed, in report order.
pub const METRICS: &[MetricDef] = &[
    MetricDef {
        name: "wall",
        unit: "s",
        get: |m| Some(m.wall),
    },
    MetricDef {
        name: "user",
        unit: "s",
        get: |m| Some(m.user),
    },
    MetricDef {
        name: "sys",
        unit: "s",
        get: |m| Some(m.sys),
    },
    MetricDef {
        name: "ops_per_sec",
        unit: "1/s",
        // A measurement that counts no operations (a whole program's run) has no throughput,
        // rather than a throughput of zero.
        get: |m| (m.ops > 0).then_some(m.ops_per_sec),
    },
    MetricDef {
        name: "peak_rss",
        unit: "bytes",
        get: |m| m.peak_rss.map(|v| v as f64),
    },
    MetricDef {
        name: "final_rss",
        unit: "bytes",
        get: |m| m.final_rss.map(|v| v as f64),
    },
    MetricDef {
        name: "max_rss_process",
        unit: "bytes",
        get: |m| m.max_rss_process.map(|v| v as f64),
    },
    MetricDef {
        name: "rss_mean_bytes",
        unit: "bytes",
        get: |m| m.memory.as_ref().map(|x| x.rss_mean_bytes),
    },
    MetricDef {
        name: "rss_final_bytes",
        unit: "bytes",
        get: |m| m.memory.as_ref().map(|x| x.rss_final_bytes as f64),
    },
    MetricDef {
        name: "rss_returned_bytes",
        unit: "bytes",
        get: |m| m.memory.as_ref().map(|x| x.rss_returned_bytes as f64),
    },
    MetricDef {
        name: "rss_frag_peak",
        unit: "ratio",
        get: |m| frag(m).map(|f| f.peak),
    },
    MetricDef {
        name: "rss_frag_mean",
        unit: "ratio",
        get: |m| frag(m).map(|f| f.mean),
    },
    MetricDef {
        name: "rss_frag_end",
        unit: "ratio",
        get: |m| frag(m).map(|f| f.end),
    },
    MetricDef {
        name: "heap.peak_allocated",
        unit: "bytes",
        get: heap!(peak_allocated),
    },
    MetricDef {
        name: "heap.peak_active",
        unit: "bytes",
        get: heap!(peak_active),
    },
    MetricDef {
        name: "heap.peak_mapped",
        unit: "bytes",
        get: heap!(peak_mapped),
    },
    MetricDef {
        name: "heap.frag_peak",
        unit: "ratio",
        get: heap!(frag_peak),
    },
    MetricDef {
        name: "heap.frag_time_avg",
        unit: "ratio",
        get: heap!(frag_time_avg),
    },
    MetricDef {
        name: "heap.picks",
        unit: "count",
        get: heap!(picks),
    },
    MetricDef {
        name: "heap.new_runs",
        unit: "count",
        get: heap!(new_runs),
    },
    MetricDef {
        name: "heap.runs_released",
        unit: "count",
        get: heap!(runs_released),
    },
    MetricDef {
        name: "heap.purges",
        unit: "count",
        get: heap!(purges),
    },
    MetricDef {
        name: "alloc_ns_per_thread",
        unit: "ns",
        get: probe!(alloc_ns_per_thread),
    },
    MetricDef {
        name: "alloc_ns_per_thread_max",
        unit: "ns",
        get: probe!(alloc_ns_per_thread_max),
    },
    MetricDef {
        name: "alloc_ns_per_op",
        unit: "ns",
        get: probe!(alloc_ns_per_op),
    },
    MetricDef {
        name: "alloc_calls",
        unit: "count",
        get: probe!(alloc_calls),
    },
    MetricDef {
        name: "lat_p50_ns",
        unit: "ns",
        get: probe!(latency.p50),
    },
    MetricDef {
        name: "lat_p90_ns",
        unit: "ns",
        get: probe!(latency.p90),
    },
    MetricDef {
        name: "lat_p99_ns",
        unit: "ns",
        get: probe!(latency.p99),
    },
    MetricDef {
        name: "lat_p999_ns",
        unit: "ns",
        get: probe!(latency.p999),
    },
    MetricDef {
        name: "lat_p9999_ns",
        unit: "ns",
        get: probe!(latency.p9999),
    },
    MetricDef {
        name: "lat_max_ns",
        unit: "ns",
        get: probe!(latency.max),
    },
    MetricDef {
        name: "heap.lock_acquisitions",
        unit: "count",
        get: heap_opt!(lock_acquisitions),
    },
    MetricDef {
        name: "heap.lock_contended",
        unit: "count",
        get: heap_opt!(lock_contended),
    },
    MetricDef {
        name: "heap.lock_contended_max_arena",
        unit: "count",
        get: heap_opt!(lock_contended_max_arena),
    },
    MetricDef {
        // Kept in nanoseconds, shown in seconds.
        name: "heap.lock_wait",
        unit: "s",
        get: |m| {
            m.heap
                .as_ref()
                .and_then(|h| h.lock_wait_ns)
                .map(|v| v as f64 * 1e-9)
        },
    },
    MetricDef {
        name: "heap.lock_wait_max_arena",
        unit: "s",
        get: |m| {
            m.heap
                .as_ref()
                .and_then(|h| h.lock_wait_ns_max_arena)
                .map(|v| v as f64 * 1e-9)
        },
    },
    MetricDef {
        name: "instructions.instructions",
        unit: "per op",
        get: instr!(instructions),
    },
    MetricDef {
        name: "instructions.data_reads",
        unit: "per op",
        get: instr!(data_reads),
    },
    MetricDef {
        name: "instructions.data_writes",
        unit: "per op",
        get: instr!(data_writes),
    },
    MetricDef {
        name: "instructions.d1_misses",
        unit: "per op",
        get: instr!(d1_misses),
    },
    MetricDef {
        name: "instructions.ll_misses",
        unit: "per op",
        get: instr!(ll_misses),
    },
    MetricDef {
        name: "instructions.per_free.instructions",
        unit: "per free",
        get: per_free!(instructions),
    },
    MetricDef {
        name: "instructions.per_free.data_reads",
        unit: "per free",
        get: per_free!(data_reads),
    },
    MetricDef {
        name: "instructions.per_free.data_writes",
        unit: "per free",
        get: per_free!(data_writes),
    },
    MetricDef {
        name: "instructions.per_free.d1_misses",
        unit: "per free",
        get: per_free!(d1_misses),
    },
    MetricDef {
        name: "instructions.per_free.ll_misses",
        unit: "per free",
        get: per_free!(ll_misses),
    },
];

pub use super::schema::is_probe_metric;

/// The definition of the metric called `name`.
pub fn metric(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.name == name)
}

/// Every metric present in `metrics`, by name, in [`METRICS`] order.
pub fn metric_values(metrics: &Metrics) -> Vec<(&'static str, f64)> {
    METRICS
        .iter()
        .filter_map(|d| (d.get)(metrics).map(|v| (d.name, v)))
        .collect()
}

/// Analyses `results` with the default options (95% intervals, alpha 0.05, power 0.8).
pub fn analyze(results: &Results) -> Analysis {
    analyze_with(results, &AnalysisOptions::default())
}

/// Names in first-seen order: those of `preferred` first, then any others in `seen`.
fn ordered<'a>(preferred: &'a [String], seen: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = preferred.iter().map(String::as_str).collect();
    for name in seen {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// A seed per interval, independent of the order cells are analysed in (FNV-1a).
fn derive_seed(seed: u64, parts: &[&str], threads: usize) -> u64 {
    let mut h = super::fnv::Fnv1a::seeded(seed);
    // Each part ends with a byte no UTF-8 text holds, so that ("ab", "c") and ("a", "bc")
    // differ.
    for p in parts {
        h.write(p.as_bytes());
        h.write(&[0xff]);
    }
    h.write(&threads.to_le_bytes());
    h.write(&[0xff]);
    h.finish()
}

/// [`analyze`] with chosen options.
pub fn analyze_with(results: &Results, opts: &AnalysisOptions) -> Analysis {
    let measured: Vec<&Measurement> = results.measurements.iter().filter(|m| !m.warmup).collect();
    let baseline = results.plan.baseline.as_str();
    let workloads = ordered(
        &results.plan.workloads,
        measured.iter().map(|m| m.workload.as_str()),
    );
    let subjects = ordered(
        &results.plan.subjects,
        measured.iter().map(|m| m.subject.as_str()),
    );

    // First pass: summaries and raw tests; the Holm family is known only at the end.
    let mut out = Vec::new();
    let mut samples_for_mde = Vec::new();
    for workload in &workloads {
        let mut threads: Vec<usize> = measured
            .iter()
            .filter(|m| m.workload == *workload)
            .map(|m| m.threads)
            .collect();
        threads.sort_unstable();
        threads.dedup();
        for &t in &threads {
            let cell: Vec<&&Measurement> = measured
                .iter()
                .filter(|m| m.workload == *workload && m.threads == t)
                .collect();
            let chosen = METRICS.iter().filter(|d| {
                results.plan.metrics.is_empty() || results.plan.metrics.iter().any(|m| m == d.name)
            });
            for def in chosen {
                let values = |subject: &str| -> Vec<f64> {
                    cell.iter()
                        .filter(|m| m.subject == subject)
                        .filter_map(|m| (def.get)(&m.metrics))
                        .filter(|v| v.is_finite())
                        .collect()
                };
                let per_subject: Vec<(&str, Vec<f64>)> = subjects
                    .iter()
                    .map(|s| (*s, values(s)))
                    .filter(|(_, v)| !v.is_empty())
                    .collect();
                if per_subject.is_empty() {
                    continue;
                }
                let summaries = per_subject
                    .iter()
                    .map(|(s, v)| Summary {
                        subject: s.to_string(),
                        n: v.len(),
                        median: stats::median_ci(
                            v,
                            opts.level,
                            opts.resamples,
                            derive_seed(opts.seed, &[workload, def.name, s, "median"], t),
                        ),
                        min: v.iter().copied().fold(f64::INFINITY, f64::min),
                        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    })
                    .collect();
                let mut comparisons = Vec::new();
                if let Some((_, base)) = per_subject.iter().find(|(s, _)| *s == baseline) {
                    for (s, v) in per_subject.iter().filter(|(s, _)| *s != baseline) {
                        let ratio = stats::ratio_of_medians_ci(
                            v,
                            base,
                            opts.level,
                            opts.resamples,
                            derive_seed(opts.seed, &[workload, def.name, s, "ratio"], t),
                        );
                        comparisons.push(Comparison {
                            subject: s.to_string(),
                            ratio,
                            test: stats::mann_whitney_u(v, base),
                            p_holm: f64::NAN,
                            verdict: Verdict::NoSignificantDifference,
                            min_detectable_effect: f64::NAN,
                            min_invocations: None,
                        });
                        samples_for_mde.push((v.clone(), base.clone()));
                    }
                }
                out.push(MetricAnalysis {
                    workload: workload.to_string(),
                    threads: t,
                    metric: def.name.to_string(),
                    summaries,
                    comparisons,
                });
            }
        }
    }

    // Holm's family is one metric: every comparison against the baseline of that metric, over
    // all workloads, thread counts and subjects. Each metric answers its own question (is it
    // faster? smaller?), and pooling them would make a quick run unable to find anything.
    let total: usize = out.iter().map(|m| m.comparisons.len()).sum();
    let mut names: Vec<String> = out.iter().map(|m| m.metric.clone()).collect();
    names.sort();
    names.dedup();
    let mut k = 0;
    let mut positions: Vec<(String, usize)> = Vec::with_capacity(total);
    for m in &out {
        for _ in &m.comparisons {
            positions.push((m.metric.clone(), k));
            k += 1;
        }
    }
    let mut adjusted = vec![f64::NAN; total];
    let mut family_size = vec![0usize; total];
    for name in &names {
        let idx: Vec<usize> = positions
            .iter()
            .filter(|(n, _)| n == name)
            .map(|&(_, i)| i)
            .collect();
        let raw: Vec<f64> = out
            .iter()
            .flat_map(|m| m.comparisons.iter())
            .enumerate()
            .filter(|(i, _)| idx.contains(i))
            .map(|(_, c)| c.test.p)
            .collect();
        for (j, p) in stats::holm(&raw).into_iter().enumerate() {
            adjusted[idx[j]] = p;
            family_size[idx[j]] = idx.len();
        }
    }
    let all = out.iter_mut().flat_map(|m| m.comparisons.iter_mut());
    for (k, c) in all.enumerate() {
        c.p_holm = adjusted[k];
        let strictest_alpha = opts.alpha / family_size[k].max(1) as f64;
        let (a, b) = &samples_for_mde[k];
        let significant = c.p_holm < opts.alpha && !c.ratio.contains(1.0);
        c.verdict = match (significant, c.ratio.estimate < 1.0) {
            // A zero median below the ratio: NaN, which no interval contains.
            _ if stats::median(b) == 0.0 => Verdict::BaselineZero,
            (false, _) => Verdict::NoSignificantDifference,
            (true, true) => Verdict::Lower,
            (true, false) => Verdict::Higher,
        };
        c.min_detectable_effect = stats::min_detectable_effect(a, b, strictest_alpha, opts.power);
        c.min_invocations = stats::min_invocations_for(strictest_alpha);
    }
    let raw_len = total;
    Analysis {
        baseline: baseline.to_string(),
        options: *opts,
        comparisons_made: raw_len,
        metrics: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    #[test]
    fn verdicts_on_the_fixture() {
        let results = test_fixture::results(12);
        let a = analyze(&results);
        assert_eq!(a.baseline, "system");
        // churn x {1, 2} + trace x {1}; 16 metrics present (no instructions); heap metrics
        // only for fast and same, so no comparison for them (the baseline lacks them).
        let wall = a
            .get("churn", 1, "wall")
            .expect("wall of churn at 1 thread");
        assert_eq!(wall.summaries.len(), 3);
        assert!(wall.summaries.iter().all(|s| s.n == 12), "warm-up excluded");
        let median_system = wall.summaries[0].median.estimate;
        assert!((0.45..0.55).contains(&median_system), "{median_system}");
        let fast = &wall.comparisons[0];
        assert_eq!(fast.subject, "fast");
        assert_eq!(fast.verdict, Verdict::Lower);
        assert!(fast.ratio.contains(0.8) || (fast.ratio.estimate - 0.8).abs() < 0.02);
        let same = &wall.comparisons[1];
        assert_eq!(same.verdict, Verdict::NoSignificantDifference, "{same:?}");
        assert!(same.min_detectable_effect.is_finite() && same.min_detectable_effect > 0.0);
        assert!(same.min_detectable_effect < 0.2, "{same:?}");
        let ops = a.get("churn", 1, "ops_per_sec").unwrap();
        assert_eq!(ops.comparisons[0].verdict, Verdict::Higher);

        // The failed cell has one invocation fewer.
        let wall2 = a.get("churn", 2, "wall").unwrap();
        assert_eq!(wall2.summaries[2].n, 11);

        // Heap metrics: no baseline figures, so summaries but no comparisons.
        let heap = a.get("churn", 1, "heap.frag_time_avg").unwrap();
        assert_eq!(heap.summaries.len(), 2);
        assert!(heap.comparisons.is_empty());
        assert!(a.get("churn", 1, "instructions.instructions").is_none());

        // Comparisons: 7 non-heap metrics x 3 cells x 2 subjects; Holm per metric (6 each).
        assert_eq!(a.comparisons_made, 7 * 3 * 2);
        for c in a.metrics.iter().flat_map(|m| &m.comparisons) {
            assert!(c.p_holm >= c.test.p);
        }
        assert_eq!(a, analyze(&results), "deterministic");
    }

    #[test]
    fn a_zero_baseline_gives_no_ratio_and_no_direction() {
        let mut results = test_fixture::results(12);
        // The baseline never spends system time; the others do.
        for m in results.measurements.iter_mut() {
            if m.subject == "system" {
                m.metrics.sys = 0.0;
            }
        }
        let a = analyze(&results);
        let sys = a.get("churn", 1, "sys").unwrap();
        for c in &sys.comparisons {
            assert_eq!(c.verdict, Verdict::BaselineZero, "{c:?}");
            assert_eq!(c.verdict.label(), "baseline is 0");
        }
        // The other metrics are untouched.
        let wall = a.get("churn", 1, "wall").unwrap();
        assert_eq!(wall.comparisons[0].verdict, Verdict::Lower);
    }

    #[test]
    fn too_few_invocations_find_nothing_and_say_so() {
        let results = test_fixture::results(3);
        let a = analyze(&results);
        let wall = a.get("churn", 1, "wall").unwrap();
        let fast = &wall.comparisons[0];
        // 3 against 3: the smallest possible p, 0.1, is above any alpha.
        assert_eq!(fast.verdict, Verdict::NoSignificantDifference);
        assert!(fast.min_detectable_effect.is_infinite());
        // Holm over the 6 comparisons of a metric: 5 invocations each are needed.
        assert_eq!(fast.min_invocations, Some(5));
    }

    #[test]
    fn metric_lookup() {
        let m = Metrics {
            wall: 1.0,
            ops: 5,
            ops_per_sec: 5.0,
            peak_rss: Some(10),
            ..Metrics::default()
        };
        let names: Vec<&str> = metric_values(&m).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["wall", "user", "sys", "ops_per_sec", "peak_rss"]);
        // A run that counts no operations (a program's) has no throughput at all.
        let program = Metrics { ops: 0, ..m };
        let names: Vec<&str> = metric_values(&program).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["wall", "user", "sys", "peak_rss"]);
        assert_eq!(metric("heap.purges").unwrap().unit, "count");
        assert!(metric("nonsense").is_none());
        assert_eq!(
            metric("ops_per_sec").unwrap().higher_is_better(),
            Some(true)
        );
        assert_eq!(metric("peak_rss").unwrap().higher_is_better(), Some(false));
        assert_eq!(metric("heap.picks").unwrap().higher_is_better(), None);
    }
}
