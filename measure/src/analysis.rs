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
    /// Family-wise significance level (Holm-Bonferroni across the comparisons of one workload
    /// and metric); also the level of each one-sided test of the equivalence test.
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

/// What the data show about a subject against the baseline: one of four answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Significantly lower than the baseline (less time, less memory, fewer operations per
    /// second: whether lower is better depends on the metric): the Holm-adjusted p is below
    /// alpha and the ratio's interval excludes 1 (with a zero baseline, the medians differ).
    Lower,
    /// Significantly higher than the baseline.
    Higher,
    /// Equivalent within the metric's margin: both one-sided tests of TOST reject at alpha
    /// (the ratio's `1 - 2 alpha` interval lies inside `[1 / (1 + m), 1 + m]`), or both
    /// subjects measured exactly zero every time.
    Equivalent,
    /// Neither a difference nor equivalence is shown; the comparison says the smallest
    /// difference its noise would have let it detect.
    Inconclusive,
}

impl Verdict {
    /// How reports print it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Lower => "lower",
            Verdict::Higher => "higher",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// The default equivalence margin of a metric (`0.02`: a ratio within `[1/1.02, 1.02]` counts
/// as no difference that matters). Chosen from what each kind of figure can resolve on a quiet
/// machine and what a reviewer would call a difference: memory is stable to a page, so 1%;
/// times and rates vary by a percent or two between invocations, so 2%; system time and
/// tail latencies are small and jittery, so 10%; counters of policy behaviour, 5%;
/// callgrind's counts are deterministic, so 1%. `--margin` overrides them
/// (docs/MEASURING.md).
pub fn default_margin(metric_name: &str) -> f64 {
    match metric_name {
        "wall"
        | "user"
        | "ops_per_sec"
        | "alloc_ns_per_thread"
        | "alloc_ns_per_thread_max"
        | "alloc_ns_per_op" => 0.02,
        "sys" | "rss_returned_bytes" | "heap.lock_wait" | "heap.lock_wait_max_arena" => 0.10,
        m if m.starts_with("lat_") => 0.10,
        m if m.starts_with("instructions.") => 0.01,
        // The studies' short names for callgrind's counts (papers' questions).
        "instructions" | "data_reads" | "data_writes" | "memory_traffic" | "d1_misses"
        | "ll_misses" => 0.01,
        m if m.starts_with("free_") => 0.01,
        "peak_rss"
        | "final_rss"
        | "max_rss_process"
        | "rss_mean_bytes"
        | "rss_final_bytes"
        | "heap.peak_allocated"
        | "heap.peak_active"
        | "heap.peak_mapped" => 0.01,
        m if m.starts_with("rss_frag_") || m.starts_with("heap.frag_") => 0.02,
        _ => 0.05,
    }
}

/// The margins in force: `overrides` are `--margin` values, each `METRIC=M` or a bare `M`
/// for every metric (a later one wins); the defaults fill the rest.
pub fn margin_for(metric_name: &str, overrides: &[String]) -> f64 {
    let mut m = default_margin(metric_name);
    for o in overrides {
        match o.split_once('=') {
            Some((name, v)) if name == metric_name => {
                if let Ok(v) = v.parse() {
                    m = v;
                }
            }
            Some(_) => {}
            None => {
                if let Ok(v) = o.parse() {
                    m = v;
                }
            }
        }
    }
    m
}

/// Checks a `--margin` value: `M` or `METRIC=M`, with `M` a fraction in (0, 1) (`0.02` is
/// 2%) and `METRIC` a known metric.
pub fn parse_margin(text: &str) -> Result<String, String> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) => (Some(n), v),
        None => (None, text),
    };
    if let Some(n) = name {
        if metric(n).is_none() {
            return Err(format!("--margin {text}: unknown metric `{n}`"));
        }
    }
    match value.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(text.to_string()),
        _ => Err(format!(
            "--margin {text}: a margin is a fraction above 0 and below 1 (0.02 is ±2%), \
             optionally after METRIC="
        )),
    }
}

/// What a plan's grid can conclude, said before it runs: `None` when its largest Holm family
/// (every compared subject at every thread count of one workload) can reach significance
/// with its invocations, else a sentence saying how many invocations would.
pub fn plan_reachability(plan: &super::schema::Plan, alpha: f64) -> Option<String> {
    let compared = plan.subjects.len().saturating_sub(1);
    let family = compared * plan.threads.len().max(1);
    if family == 0 {
        return None;
    }
    match reachable(plan.reps, family, alpha) {
        Ok(()) => None,
        Err(need) => Some(format!(
            "with {} invocations per subject no difference can reach significance in a Holm \
             family of {family} comparisons ({compared} subjects against the baseline at {} \
             thread counts) at alpha {alpha}{}; equivalence can still be shown",
            plan.reps,
            plan.threads.len().max(1),
            need.map_or(String::new(), |n| format!(": --reps {n} would reach it")),
        )),
    }
}

/// Whether a grid's families can reach significance: the exact rank test's smallest p with
/// `reps` invocations a side, times the largest Holm family (`family`), must be below `alpha`.
/// `Err(n)`: it cannot, and `n` invocations a side would.
pub fn reachable(reps: usize, family: usize, alpha: f64) -> Result<(), Option<usize>> {
    let strictest = alpha / family.max(1) as f64;
    if stats::min_two_sided_p(reps, reps) < strictest {
        Ok(())
    } else {
        Err(stats::min_invocations_for(strictest))
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
    /// The timer's resolution (ns) for a latency percentile measured by the probe, when the
    /// probe recorded it: a value at or below it cannot be told from zero.
    #[serde(default)]
    pub resolution: Option<f64>,
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
    /// The test's p adjusted by Holm-Bonferroni across the comparisons of its family (the
    /// same workload and metric: every subject and thread count).
    pub p_holm: f64,
    /// Comparisons in its Holm family.
    pub family_size: usize,
    /// What the data show.
    pub verdict: Verdict,
    /// The equivalence margin applied (`0.02`: within ±2%).
    pub margin: f64,
    /// The equivalence test (TOST) on the ratio of medians; `None` when the baseline's median
    /// is zero (no ratio exists).
    pub equivalence: Option<stats::Equivalence>,
    /// The baseline's median is zero: the verdict rests on the rank test and the difference of
    /// the medians, not on a ratio.
    pub baseline_zero: bool,
    /// `median(subject) - median(baseline)`, in the metric's unit.
    pub difference: f64,
    /// For a latency percentile: the timer's resolution (ns), when the probe recorded it.
    #[serde(default)]
    pub resolution: Option<f64>,
    /// A median is within the timer's resolution: no ratio is taken, and the verdict rests on
    /// the rank test and the difference of medians.
    #[serde(default)]
    pub below_resolution: bool,
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
    /// Comparisons made, all metrics together (each workload and metric is its own Holm
    /// family).
    pub comparisons_made: usize,
    /// The largest Holm family.
    pub largest_family: usize,
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
macro_rules! syscalls {
    ($field:ident) => {
        |m: &Metrics| m.syscalls.as_ref().map(|c| c.$field as f64)
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
        name: "syscalls.mmap",
        unit: "count",
        get: syscalls!(mmap),
    },
    MetricDef {
        name: "syscalls.munmap",
        unit: "count",
        get: syscalls!(munmap),
    },
    MetricDef {
        name: "syscalls.madvise",
        unit: "count",
        get: syscalls!(madvise),
    },
    MetricDef {
        name: "syscalls.mremap",
        unit: "count",
        get: syscalls!(mremap),
    },
    MetricDef {
        name: "syscalls.total",
        unit: "count",
        get: syscalls!(total),
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
                // A latency percentile is only as fine as the probe's timer.
                let resolution = def
                    .name
                    .starts_with("lat_")
                    .then(|| {
                        cell.iter()
                            .filter_map(|m| m.metrics.probe.as_ref())
                            .map(|p| p.resolution_ns)
                            .fold(0.0, f64::max)
                    })
                    .filter(|&r| r > 0.0);
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
                        resolution,
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
                            family_size: 0,
                            verdict: Verdict::Inconclusive,
                            margin: margin_for(def.name, &results.plan.margins),
                            equivalence: None,
                            baseline_zero: false,
                            difference: stats::median(v) - stats::median(base),
                            resolution,
                            below_resolution: false,
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

    // Holm's family is one workload and metric: every subject and thread count compared with
    // the baseline on it. A reader can name it ("larson's wall time"), its size does not grow
    // with the number of workloads in the run, and each family answers one question.
    let mut families: Vec<(String, String)> = Vec::new();
    for m in &out {
        let key = (m.workload.clone(), m.metric.clone());
        if !m.comparisons.is_empty() && !families.contains(&key) {
            families.push(key);
        }
    }
    let mut k0 = 0;
    let mut family_of = Vec::new();
    for m in &out {
        let f = families
            .iter()
            .position(|(w, n)| *w == m.workload && *n == m.metric);
        for _ in &m.comparisons {
            family_of.push(f.unwrap_or(usize::MAX));
            k0 += 1;
        }
    }
    let total = k0;
    let raw: Vec<f64> = out
        .iter()
        .flat_map(|m| m.comparisons.iter())
        .map(|c| c.test.p)
        .collect();
    let mut adjusted = vec![f64::NAN; total];
    let mut family_size = vec![0usize; total];
    for f in 0..families.len() {
        let idx: Vec<usize> = (0..total).filter(|&i| family_of[i] == f).collect();
        let ps: Vec<f64> = idx.iter().map(|&i| raw[i]).collect();
        for (j, p) in stats::holm(&ps).into_iter().enumerate() {
            adjusted[idx[j]] = p;
            family_size[idx[j]] = idx.len();
        }
    }
    let mut cells: Vec<(String, String, usize)> = Vec::new();
    for m in &out {
        for _ in &m.comparisons {
            cells.push((m.workload.clone(), m.metric.clone(), m.threads));
        }
    }
    let all = out.iter_mut().flat_map(|m| m.comparisons.iter_mut());
    for (k, c) in all.enumerate() {
        c.p_holm = adjusted[k];
        c.family_size = family_size[k];
        let strictest_alpha = opts.alpha / family_size[k].max(1) as f64;
        let (a, b) = &samples_for_mde[k];
        let (workload, name, t) = &cells[k];
        let seed = derive_seed(opts.seed, &[workload, name, &c.subject, "tost"], *t);
        decide(c, a, b, opts, seed);
        c.min_detectable_effect = stats::min_detectable_effect(a, b, strictest_alpha, opts.power);
        c.min_invocations = stats::min_invocations_for(strictest_alpha);
    }
    let largest_family = family_size.iter().copied().max().unwrap_or(0);
    Analysis {
        baseline: baseline.to_string(),
        options: *opts,
        comparisons_made: total,
        largest_family,
        metrics: out,
    }
}

/// Sets `c.verdict` (and its equivalence test) from the subject's sample `a`, the baseline's
/// `b`, and the Holm-adjusted p already in `c`: **lower**/**higher** when the difference is
/// significant, else **equivalent** when TOST shows the ratio within the margin, else
/// **inconclusive**. A zero baseline median has no ratio: the rank test and the sign of the
/// difference of medians decide, and only two samples of nothing but zeros are equivalent.
pub fn decide(c: &mut Comparison, a: &[f64], b: &[f64], opts: &AnalysisOptions, seed: u64) {
    let (median_a, median_b) = (stats::median(a), stats::median(b));
    c.difference = median_a - median_b;
    c.baseline_zero = median_b == 0.0;
    c.below_resolution = c.resolution.is_some_and(|r| median_a <= r || median_b <= r);
    if c.below_resolution {
        // One tick against another is no ratio; a difference the rank test finds, with one
        // median clear of the resolution, still is a difference.
        let r = c.resolution.unwrap_or(0.0);
        c.equivalence = None;
        c.verdict = if c.p_holm < opts.alpha && c.difference != 0.0 && median_a.max(median_b) > r {
            if c.difference < 0.0 {
                Verdict::Lower
            } else {
                Verdict::Higher
            }
        } else {
            Verdict::Inconclusive
        };
        return;
    }
    if c.baseline_zero {
        c.equivalence = None;
        let all_zero = a.iter().chain(b).all(|&x| x == 0.0);
        c.verdict = if all_zero {
            Verdict::Equivalent
        } else if c.p_holm < opts.alpha && c.difference != 0.0 {
            if c.difference < 0.0 {
                Verdict::Lower
            } else {
                Verdict::Higher
            }
        } else {
            Verdict::Inconclusive
        };
        return;
    }
    let e = stats::tost_ratio(a, b, c.margin, opts.alpha, opts.resamples, seed);
    let significant = c.p_holm < opts.alpha && !c.ratio.contains(1.0);
    c.verdict = match (significant, e.equivalent) {
        (true, _) if c.ratio.estimate < 1.0 => Verdict::Lower,
        (true, _) => Verdict::Higher,
        (false, true) => Verdict::Equivalent,
        (false, false) => Verdict::Inconclusive,
    };
    c.equivalence = Some(e);
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
        assert_ne!(same.verdict, Verdict::Lower, "{same:?}");
        assert_ne!(same.verdict, Verdict::Higher, "{same:?}");
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

        // Comparisons: 7 non-heap metrics x 3 cells x 2 subjects; Holm per workload and
        // metric: churn's families have 2 threads x 2 subjects, trace's 1 x 2.
        assert_eq!(a.comparisons_made, 7 * 3 * 2);
        assert_eq!(a.largest_family, 4);
        for m in &a.metrics {
            for c in &m.comparisons {
                assert!(c.p_holm >= c.test.p);
                let expected = if m.workload == "churn" { 4 } else { 2 };
                assert_eq!(c.family_size, expected, "{}: {c:?}", m.workload);
            }
        }
        assert_eq!(a, analyze(&results), "deterministic");
    }

    /// A cell of two subjects with the given samples, analysed.
    fn two(a: &[f64], b: &[f64]) -> Comparison {
        let mut results = test_fixture::results(1);
        results.measurements.clear();
        results.failures.clear();
        results.plan.subjects = vec!["base".into(), "x".into()];
        results.plan.baseline = "base".into();
        results.plan.workloads = vec!["churn".into()];
        for (subject, sample) in [("base", b), ("x", a)] {
            for (round, &wall) in sample.iter().enumerate() {
                results.measurements.push(Measurement {
                    subject: subject.into(),
                    describe: subject.into(),
                    workload: "churn".into(),
                    threads: 1,
                    round,
                    warmup: false,
                    order: 0,
                    env_pad: 0,
                    metrics: Metrics {
                        wall,
                        ..Metrics::default()
                    },
                    disturbance: None,
                });
            }
        }
        let a = analyze(&results);
        a.get("churn", 1, "wall").unwrap().comparisons[0].clone()
    }

    /// `n` values around `centre`, spread ±0.3% deterministically.
    fn around(centre: f64, n: usize, phase: usize) -> Vec<f64> {
        (0..n)
            .map(|i| centre * (1.0 + ((i * 7 + phase) % 13) as f64 / 13.0 * 0.006 - 0.003))
            .collect()
    }

    #[test]
    fn identical_distributions_are_equivalent() {
        let c = two(&around(1.0, 12, 3), &around(1.0, 12, 0));
        assert_eq!(c.verdict, Verdict::Equivalent, "{c:?}");
        assert_eq!(c.margin, 0.02);
        assert!(c.equivalence.unwrap().equivalent);
    }

    #[test]
    fn a_ten_percent_shift_is_higher() {
        let c = two(&around(1.1, 12, 3), &around(1.0, 12, 0));
        assert_eq!(c.verdict, Verdict::Higher, "{c:?}");
        let c = two(&around(0.9, 12, 3), &around(1.0, 12, 0));
        assert_eq!(c.verdict, Verdict::Lower, "{c:?}");
    }

    #[test]
    fn three_invocations_are_inconclusive() {
        // Even a 10% shift: 3 against 3 cannot reach p < 0.05, and three points give too wide
        // an interval to show equivalence either.
        let c = two(&around(1.1, 3, 3), &around(1.0, 3, 0));
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        assert!(c.min_detectable_effect.is_infinite());
        let c = two(&around(1.0, 3, 3), &around(1.0, 3, 0));
        assert_ne!(c.verdict, Verdict::Lower);
        assert_ne!(c.verdict, Verdict::Higher);
    }

    #[test]
    fn a_wide_spread_is_inconclusive_not_equivalent() {
        let wide: Vec<f64> = (0..12).map(|i| 1.0 + (i % 4) as f64 * 0.1).collect();
        let c = two(&wide, &wide.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        assert!(c.min_detectable_effect.is_finite());
    }

    #[test]
    fn margins_default_per_metric_and_are_overridden() {
        assert_eq!(margin_for("peak_rss", &[]), 0.01);
        assert_eq!(margin_for("wall", &[]), 0.02);
        assert_eq!(margin_for("lat_p99_ns", &[]), 0.10);
        assert_eq!(margin_for("wall", &["0.05".into()]), 0.05);
        assert_eq!(margin_for("wall", &["peak_rss=0.03".into()]), 0.02);
        assert_eq!(
            margin_for("wall", &["0.05".into(), "wall=0.01".into()]),
            0.01
        );
        assert!(parse_margin("0.02").is_ok());
        assert!(parse_margin("wall=0.02").is_ok());
        assert!(parse_margin("nonsense=0.02").is_err());
        assert!(parse_margin("2").is_err());
        assert!(parse_margin("-0.1").is_err());
        // A wider margin makes a 3% difference between tight samples equivalent.
        let mut results = test_fixture::results(12);
        results.plan.margins = vec!["wall=0.5".into()];
        let a = analyze(&results);
        let same = &a.get("churn", 1, "wall").unwrap().comparisons[1];
        assert_eq!(same.margin, 0.5);
        assert_eq!(same.verdict, Verdict::Equivalent, "{same:?}");
    }

    #[test]
    fn a_grid_that_cannot_conclude_says_so_before_it_runs() {
        let mut plan = test_fixture::results(3).plan;
        // 3 subjects, 2 thread counts: families of 4; 3 invocations cannot reach.
        let said = plan_reachability(&plan, 0.05).expect("a warning");
        assert!(
            said.contains("family of 4") && said.contains("--reps 5"),
            "{said}"
        );
        plan.reps = 7;
        assert_eq!(plan_reachability(&plan, 0.05), None);
    }

    #[test]
    fn latencies_within_the_timer_resolution_are_not_ratios() {
        let mut results = test_fixture::results(12);
        for (i, m) in results.measurements.iter_mut().enumerate() {
            // Baseline and "same": one tick (10 ns) or none; "fast": 30 ns every time.
            let p50 = match m.subject.as_str() {
                "fast" => 30.0,
                _ => (i % 2) as f64 * 10.0,
            };
            m.metrics.probe = Some(crate::schema::ProbeMetrics {
                resolution_ns: 10.0,
                latency: crate::schema::Ladder {
                    p50,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let a = analyze(&results);
        let p50 = a.get("churn", 1, "lat_p50_ns").unwrap();
        assert!(p50.summaries.iter().all(|s| s.resolution == Some(10.0)));
        let same = p50
            .comparisons
            .iter()
            .find(|c| c.subject == "same")
            .unwrap();
        assert!(same.below_resolution, "{same:?}");
        assert_eq!(same.verdict, Verdict::Inconclusive);
        let fast = p50
            .comparisons
            .iter()
            .find(|c| c.subject == "fast")
            .unwrap();
        assert!(fast.below_resolution);
        assert_eq!(fast.verdict, Verdict::Higher, "{fast:?}");
        // Other metrics carry no resolution.
        let wall = a.get("churn", 1, "wall").unwrap();
        assert!(wall.summaries.iter().all(|s| s.resolution.is_none()));
    }

    #[test]
    fn reachability_of_a_grid() {
        // 7 a side: smallest p 2/3432 = 0.00058; a family of 90 cannot, one of 18 can.
        assert!(reachable(7, 18, 0.05).is_ok());
        assert_eq!(reachable(7, 90, 0.05), Err(Some(8)));
        assert!(reachable(3, 1, 0.05).is_err());
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
            assert!(c.baseline_zero, "{c:?}");
            assert!(c.equivalence.is_none());
            // The others always spend some: the rank test finds them higher.
            assert_eq!(c.verdict, Verdict::Higher, "{c:?}");
            assert!(c.difference > 0.0);
        }
        // Both always zero: equivalent, nothing to tell apart.
        let c = two(&[0.0; 12], &[0.0; 12]);
        assert!(c.baseline_zero);
        assert_eq!(c.verdict, Verdict::Equivalent);
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
        assert_eq!(fast.verdict, Verdict::Inconclusive);
        assert!(fast.min_detectable_effect.is_infinite());
        // Holm over the 4 comparisons of churn's wall time: 5 invocations each are needed.
        assert_eq!(fast.family_size, 4);
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
