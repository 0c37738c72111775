//! A study's head-to-head questions answered from its results: for each question, metric,
//! workload and thread count, the ratio of the two medians with its bootstrap 95% interval and
//! a Mann-Whitney U test, p-values Holm-adjusted across everything this file asks.

use super::{SeedFigure, Study};
use alloclab_measure::analysis::{self, AnalysisOptions, Comparison, Verdict};
use alloclab_measure::report::{format_value, p_text, verdict_text};
use alloclab_measure::schema::{FreeMetrics, Measurement, Results};
use alloclab_measure::stats;
use std::fmt::Write;
use std::path::Path;

/// Resamples of the bootstrap intervals.
const RESAMPLES: usize = 10_000;
/// Significance level after adjustment.
const ALPHA: f64 = 0.05;

/// The metrics `metric` knows (every study's are checked against it in the tests).
#[cfg(test)]
pub const METRICS: &[&str] = &[
    "wall",
    "user",
    "sys",
    "ops_per_sec",
    "peak_rss",
    "final_rss",
    "max_rss_process",
    "rss_mean_bytes",
    "rss_frag_peak",
    "rss_frag_mean",
    "rss_frag_end",
    "instructions",
    "data_reads",
    "data_writes",
    "memory_traffic",
    "d1_misses",
    "ll_misses",
    "free_instructions",
    "free_data_reads",
    "free_data_writes",
    "free_memory_traffic",
    "free_d1_misses",
    "free_ll_misses",
    "alloc_ns_per_thread",
    "alloc_ns_per_thread_max",
    "heap.lock_contended",
    "heap.lock_wait",
    "heap.purges",
];

/// Callgrind's counts per free of one measurement, if it has them.
fn per_free(m: &Measurement) -> Option<&FreeMetrics> {
    m.metrics.instructions.as_ref()?.per_free.as_ref()
}

/// A metric's value in one measurement (`memory_traffic`: data reads plus writes; the
/// `free_` ones: per free, inside `free` only).
fn metric(m: &Measurement, name: &str) -> Option<f64> {
    let x = &m.metrics;
    match name {
        "instructions" => x.instructions.as_ref().map(|i| i.instructions),
        "data_reads" => x.instructions.as_ref().map(|i| i.data_reads),
        "data_writes" => x.instructions.as_ref().map(|i| i.data_writes),
        "memory_traffic" => x
            .instructions
            .as_ref()
            .map(|i| i.data_reads + i.data_writes),
        "d1_misses" => x.instructions.as_ref().map(|i| i.d1_misses),
        "ll_misses" => x.instructions.as_ref().map(|i| i.ll_misses),
        // The same inside `free`, per free (the seed's denominator).
        "free_instructions" => per_free(m).map(|f| f.instructions),
        "free_data_reads" => per_free(m).map(|f| f.data_reads),
        "free_data_writes" => per_free(m).map(|f| f.data_writes),
        "free_memory_traffic" => per_free(m).map(|f| f.data_reads + f.data_writes),
        "free_d1_misses" => per_free(m).map(|f| f.d1_misses),
        "free_ll_misses" => per_free(m).map(|f| f.ll_misses),
        // The short names above are the studies' own; the rest are as `compare` names them.
        _ => alloclab_measure::analysis::metric(name).and_then(|d| (d.get)(x)),
    }
}

fn values(r: &Results, subject: &str, workload: &str, threads: usize, name: &str) -> Vec<f64> {
    r.measurements
        .iter()
        .filter(|m| {
            !m.warmup && m.subject == subject && m.workload == workload && m.threads == threads
        })
        .filter_map(|m| metric(m, name))
        .collect()
}

struct Row {
    question: String,
    /// The question's pair, subject first.
    pair: (&'static str, &'static str),
    metric: &'static str,
    workload: String,
    threads: usize,
    n: (usize, usize),
    comparison: Comparison,
    a: Vec<f64>,
    b: Vec<f64>,
    /// Its Holm family: the rows of one question and metric.
    family: usize,
}

/// Every row `questions.md` gives for `study` from its `results`, on `metrics`, decided.
fn rows(study: &Study, results: &Results, metrics: &[&'static str]) -> (Vec<Row>, usize) {
    let mut cells: Vec<(String, usize)> = results
        .measurements
        .iter()
        .map(|m| (m.workload.clone(), m.threads))
        .collect();
    cells.sort();
    cells.dedup();
    let opts = AnalysisOptions {
        resamples: RESAMPLES,
        alpha: ALPHA,
        ..AnalysisOptions::default()
    };
    let mut rows = Vec::new();
    let mut families = 0;
    for q in study.questions {
        for &metric_name in metrics {
            let margin = q
                .margins
                .iter()
                .find(|(m, _)| *m == metric_name)
                .map_or_else(|| analysis::default_margin(metric_name), |&(_, m)| m);
            let before = rows.len();
            for (workload, threads) in &cells {
                let a = values(results, q.subject, workload, *threads, metric_name);
                let b = values(results, q.reference, workload, *threads, metric_name);
                if a.is_empty() || b.is_empty() {
                    continue;
                }
                let seed = results.plan.seed ^ rows.len() as u64;
                let comparison = Comparison {
                    subject: q.subject.to_string(),
                    ratio: stats::ratio_of_medians_ci(&a, &b, 0.95, RESAMPLES, seed),
                    test: stats::mann_whitney_u(&a, &b),
                    p_holm: f64::NAN,
                    family_size: 0,
                    verdict: Verdict::Inconclusive,
                    margin,
                    equivalence: None,
                    baseline_zero: false,
                    difference: f64::NAN,
                    resolution: None,
                    below_resolution: false,
                    min_detectable_effect: f64::NAN,
                    min_invocations: None,
                };
                rows.push(Row {
                    question: format!("{} ({} / {})", q.text, q.subject, q.reference),
                    pair: (q.subject, q.reference),
                    metric: metric_name,
                    workload: workload.clone(),
                    threads: *threads,
                    n: (a.len(), b.len()),
                    comparison,
                    a,
                    b,
                    family: families,
                });
            }
            if rows.len() > before {
                families += 1;
            }
        }
    }
    // Holm per question and metric: each family answers one question about one figure, over
    // the study's workloads and thread counts.
    for f in 0..families {
        let idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].family == f).collect();
        let ps: Vec<f64> = idx.iter().map(|&i| rows[i].comparison.test.p).collect();
        let strictest = ALPHA / idx.len() as f64;
        for (j, p) in stats::holm(&ps).into_iter().enumerate() {
            let r = &mut rows[idx[j]];
            r.comparison.p_holm = p;
            r.comparison.family_size = idx.len();
            let seed = results.plan.seed ^ 0x7057 ^ idx[j] as u64;
            analysis::decide(&mut r.comparison, &r.a, &r.b, &opts, seed);
            r.comparison.min_detectable_effect =
                stats::min_detectable_effect(&r.a, &r.b, strictest, opts.power);
            r.comparison.min_invocations = stats::min_invocations_for(strictest);
        }
    }
    (rows, families)
}

/// `questions.md` for `study` from its `results`, on `metrics`.
pub fn answer(study: &Study, results: &Results, metrics: &[&'static str]) -> String {
    let (rows, families) = rows(study, results, metrics);
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", study.name, study.title);
    let _ = writeln!(
        out,
        "Each row compares two subjects directly: the ratio of their medians (subject / \
         reference; below 1 means less time, memory or work) with a bootstrap 95% interval, and a \
         two-sided Mann-Whitney U test, p Holm-adjusted within its family: the rows of one \
         question and metric ({} comparisons in {} families). Each row has one of four verdicts: \
         **lower** or **higher** (adjusted p below {ALPHA} and the interval excluding 1), \
         **equivalent** within the margin ±m (TOST: the ratio's 90% bootstrap interval inside \
         [1/(1+m), 1+m]), or **inconclusive** with the smallest difference the data could have \
         detected. Warm-up rounds excluded.\n",
        rows.len(),
        families
    );
    let _ = writeln!(
        out,
        "| question | metric | workload | threads | n | ratio | 95% CI | p (Holm) | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---|---:|---|---:|---|");
    for r in &rows {
        let c = &r.comparison;
        let (ratio, interval) = if c.baseline_zero {
            ("n/a".to_string(), "reference is 0".to_string())
        } else {
            (
                format!("{:.3}", c.ratio.estimate),
                format!("[{:.3}, {:.3}]", c.ratio.lo, c.ratio.hi),
            )
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {}+{} | {ratio} | {interval} | {} | {} |",
            r.question,
            r.metric,
            r.workload,
            r.threads,
            r.n.0,
            r.n.1,
            p_text(c.p_holm),
            verdict_text(c, r.metric)
        );
    }
    let label = if results.plan.quick {
        "quick run"
    } else {
        "full run"
    };
    let seed = seed_tables(study, &[(label, results)], metrics);
    if !seed.is_empty() {
        let _ = writeln!(out, "\n## The seed's figures beside ours\n{seed}");
    }
    out
}

/// Whether `name` matches `pattern`, where `*` matches any text (an empty pattern list
/// matches every workload).
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The unit our `metric` is in, for `format_value`.
fn unit_of(metric: &str) -> &'static str {
    analysis::metric(metric).map_or("per op", |d| d.unit)
}

/// A value of the seed's, in its unit.
fn seed_value(v: f64, unit: &str) -> String {
    match unit {
        "s" | "bytes" | "1/s" => format_value(v, unit),
        _ => format!("{} {unit}", format_value(v, "per op")),
    }
}

/// The figures of `study`'s seed that `results` (a run, `label` "full run" or "quick run")
/// can stand beside: one table per pair of ours and metric, the seed's rows first (its values,
/// reference → variant, and their ratio), then ours cell by cell (medians, reference →
/// subject, the ratio of medians with its 95% interval, and the verdict of the question that
/// asks it, if one does). `runs` are the runs to set beside the seed, in order.
pub fn seed_tables(study: &Study, runs: &[(&str, &Results)], metrics: &[&'static str]) -> String {
    let mut out = String::new();
    let mut groups: Vec<(
        &'static str,
        Option<&'static str>,
        &'static str,
        Vec<&SeedFigure>,
    )> = Vec::new();
    for f in study.seed.iter().filter(|f| metrics.contains(&f.metric)) {
        match groups
            .iter_mut()
            .find(|g| (g.0, g.1, g.2) == (f.subject, f.reference, f.metric))
        {
            Some(g) => g.3.push(f),
            None => groups.push((f.subject, f.reference, f.metric, vec![f])),
        }
    }
    for (subject, reference, metric, figures) in groups {
        let _ = writeln!(
            out,
            "\n**{}, {metric}** (the seed's figures, then ours):\n",
            match reference {
                Some(r) => format!("`{subject}` against `{r}`"),
                None => format!("`{subject}`"),
            }
        );
        let _ = writeln!(
            out,
            "| | reference → subject | ratio | verdict |\n|---|---|---|---|"
        );
        for f in &figures {
            let (values, ratio) = match f.seed_reference {
                Some(r) => (
                    format!("{} → {}", seed_value(r, f.unit), seed_value(f.seed, f.unit)),
                    if r != 0.0 {
                        format!("{:.3}", f.seed / r)
                    } else {
                        "n/a".into()
                    },
                ),
                None => (seed_value(f.seed, f.unit), String::new()),
            };
            let _ = writeln!(out, "| seed: {} | {values} | {ratio} | |", f.what);
        }
        let patterns: Vec<&str> = figures
            .iter()
            .flat_map(|f| f.workloads.iter().copied())
            .collect();
        let unit = unit_of(metric);
        for (label, results) in runs {
            let asked = study
                .questions
                .iter()
                .any(|q| Some(q.reference) == reference && q.subject == subject);
            let decided = if asked {
                rows(study, results, &[metric]).0
            } else {
                Vec::new()
            };
            let mut cells: Vec<(String, usize)> = results
                .measurements
                .iter()
                .filter(|m| patterns.is_empty() || patterns.iter().any(|p| matches(p, &m.workload)))
                .map(|m| (m.workload.clone(), m.threads))
                .collect();
            cells.sort();
            cells.dedup();
            for (workload, threads) in cells {
                let a = values(results, subject, &workload, threads, metric);
                if a.is_empty() {
                    continue;
                }
                let here = format!(
                    "{label}: {workload}, {threads} thread{}",
                    if threads == 1 { "" } else { "s" }
                );
                let Some(reference) = reference else {
                    let _ = writeln!(
                        out,
                        "| {here} | {} | | |",
                        format_value(stats::median(&a), unit)
                    );
                    continue;
                };
                let b = values(results, reference, &workload, threads, metric);
                if b.is_empty() {
                    continue;
                }
                let medians = format!(
                    "{} → {}",
                    format_value(stats::median(&b), unit),
                    format_value(stats::median(&a), unit)
                );
                let row = decided.iter().find(|r| {
                    r.pair == (subject, reference) && r.workload == workload && r.threads == threads
                });
                let (ratio, verdict) = match row {
                    Some(r) if !r.comparison.baseline_zero => (
                        format!(
                            "{:.3} [{:.3}, {:.3}]",
                            r.comparison.ratio.estimate,
                            r.comparison.ratio.lo,
                            r.comparison.ratio.hi
                        ),
                        verdict_text(&r.comparison, metric),
                    ),
                    Some(r) => ("reference is 0".into(), verdict_text(&r.comparison, metric)),
                    None => {
                        let ci =
                            stats::ratio_of_medians_ci(&a, &b, 0.95, RESAMPLES, results.plan.seed);
                        (
                            format!("{:.3} [{:.3}, {:.3}]", ci.estimate, ci.lo, ci.hi),
                            "not one of the study's questions".into(),
                        )
                    }
                };
                let _ = writeln!(out, "| {here} | {medians} | {ratio} | {verdict} |");
            }
        }
    }
    out
}

/// The markers around a README's generated block.
pub const BEGIN: &str = "<!-- alloclab:verdicts begin: generated by `alloclab paper <study> --render-readme` from the committed results; do not edit by hand -->";
/// Its end.
pub const END: &str = "<!-- alloclab:verdicts end -->";

/// The README block of `study` in `folder` (its `papers/<study>/`): every question's verdict
/// from the full run's results (`report/`) if there is one, else the quick run's
/// (`quick-report/`), and from the instructions pass beside it. `None` when neither exists.
pub fn readme_block(study: &Study, folder: &Path) -> Result<Option<String>, String> {
    let Some(dir) = ["report", "quick-report"]
        .iter()
        .map(|d| folder.join(d))
        .find(|d| d.join("results.json").is_file())
    else {
        return Ok(None);
    };
    let mut passes = vec![(dir.clone(), study.metrics)];
    if let Some(counted) = &study.instructions {
        if dir.join("instructions/results.json").is_file() {
            passes.push((dir.join("instructions"), counted.metrics));
        }
    }
    let mut out = format!("{BEGIN}\n");
    for (d, metrics) in passes {
        let results = Results::read(&d.join("results.json"))?;
        let b = &results.environment.build;
        let rel = d.strip_prefix(folder).unwrap_or(&d).display().to_string();
        let _ = writeln!(
            out,
            "\nFrom `{rel}/` ({} run of {} invocations per cell, built at {}{}; each row as in its \
             `questions.md`):\n",
            if results.plan.quick { "quick" } else { "full" },
            results.plan.reps,
            b.commit.as_deref().unwrap_or("an unknown commit"),
            match b.dirty {
                Some(false) => ", clean tree",
                Some(true) => ", dirty tree",
                None => "",
            },
        );
        let rows = rows(study, &results, metrics).0;
        out.push_str(&summary(&rows));
        let _ = writeln!(
            out,
            "\n| question | metric | workload | threads | ratio [95% CI] | verdict |\n|---|---|---|---:|---|---|"
        );
        for r in rows {
            let c = &r.comparison;
            let ratio = if c.baseline_zero {
                "reference is 0".to_string()
            } else {
                format!(
                    "{:.3} [{:.3}, {:.3}]",
                    c.ratio.estimate, c.ratio.lo, c.ratio.hi
                )
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {ratio} | {} |",
                r.question,
                r.metric,
                r.workload,
                r.threads,
                verdict_text(c, r.metric)
            );
        }
    }
    // The seed beside the full run beside the quick run, for each pass's metrics.
    let mut seed = String::new();
    let mut passes = vec![("", study.metrics)];
    if let Some(counted) = &study.instructions {
        passes.push(("instructions/", counted.metrics));
    }
    for (sub, metrics) in passes {
        let mut runs = Vec::new();
        for (d, label) in [("report", "full run"), ("quick-report", "quick run")] {
            let path = folder.join(d).join(sub).join("results.json");
            if path.is_file() {
                runs.push((label, Results::read(&path)?));
            }
        }
        let runs: Vec<(&str, &Results)> = runs.iter().map(|(l, r)| (*l, r)).collect();
        seed.push_str(&seed_tables(study, &runs, metrics));
    }
    if let Some(tables) = super::study_tables(study, &dir)? {
        out.push_str(&tables);
    }
    if !seed.is_empty() {
        let _ = writeln!(out, "\nThe seed's figures beside ours:\n{seed}");
    }
    out.push_str(END);
    Ok(Some(out))
}

/// Per question and metric, in `rows`' order: how many of its rows reach each verdict and the
/// range of their ratios, what a README's prose can point at instead of typing figures.
fn summary(rows: &[Row]) -> String {
    let mut out = String::from(
        "In short, per question and metric (rows of each verdict; the ratios' range over its \
         workloads and thread counts):\n\n| question | metric | lower | higher | equivalent | \
         inconclusive | ratios |\n|---|---|---:|---:|---:|---:|---|\n",
    );
    let mut start = 0;
    while start < rows.len() {
        let family = rows[start].family;
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| r.family == family)
                .count();
        let group = &rows[start..end];
        let count = |v: Verdict| group.iter().filter(|r| r.comparison.verdict == v).count();
        let ratios: Vec<f64> = group
            .iter()
            .filter(|r| !r.comparison.baseline_zero)
            .map(|r| r.comparison.ratio.estimate)
            .collect();
        let range = match (
            ratios.iter().copied().reduce(f64::min),
            ratios.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) if lo == hi => format!("{lo:.3}"),
            (Some(lo), Some(hi)) => format!("{lo:.3} to {hi:.3}"),
            _ => "reference is 0".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {range} |",
            group[0].question,
            group[0].metric,
            count(Verdict::Lower),
            count(Verdict::Higher),
            count(Verdict::Equivalent),
            count(Verdict::Inconclusive),
        );
        start = end;
    }
    out
}

/// `readme` with its generated block replaced by `block` (or, without markers, appended under
/// a heading of its own).
pub fn with_block(readme: &str, block: &str) -> String {
    match (readme.find(BEGIN), readme.find(END)) {
        (Some(b), Some(e)) if e > b => {
            format!("{}{block}{}", &readme[..b], &readme[e + END.len()..])
        }
        _ => format!(
            "{}\n## Every question's verdict\n\nGenerated from the committed results; the prose above \
             interprets, this block is what the data show.\n\n{block}\n",
            readme.trim_end()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_patterns_match_as_globs() {
        assert!(matches("replay-*-notouch", "replay-python3-stdlib-notouch"));
        assert!(!matches("replay-*-notouch", "replay-python3-stdlib-touch"));
        assert!(matches("thread-arena", "thread-arena"));
        assert!(!matches("thread-arena", "thread-arenas"));
        assert!(matches("*", "anything"));
        assert!(matches("a*b*c", "aXbYc"));
        assert!(!matches("a*b*c", "aXcYb"));
    }
    use crate::{Grid, Question};
    use alloclab_measure::schema::{Environment, Metrics, Plan, SCHEMA_VERSION};

    fn grid() -> Grid {
        Grid {
            workloads: vec![],
            threads: vec![],
            reps: 0,
            scale: 1.0,
        }
    }

    fn measurement(subject: &str, round: usize, wall: f64, sys: f64) -> Measurement {
        Measurement {
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
                sys,
                ..Metrics::default()
            },
            disturbance: None,
        }
    }

    #[test]
    fn tiny_p_reads_below_the_precision_and_a_zero_reference_gives_no_ratio() {
        let study = Study {
            name: "test",
            title: "a test",
            variants: Vec::new,
            subjects: &["a", "b"],
            baseline: "b",
            full: grid(),
            quick: grid(),
            questions: &[Question {
                subject: "a",
                reference: "b",
                text: "a against b",
                margins: &[],
            }],
            metrics: &["wall", "sys"],
            instructions: None,
            programs: None,
            seed: &[],
        };
        // 8 against 8 that do not overlap: p = 2 / C(16, 8), twice that after Holm over the two
        // rows, 0.0003. b never spends system time.
        let mut measurements = Vec::new();
        for i in 0..8 {
            measurements.push(measurement("a", i, 1.0 + i as f64 / 10.0, 0.5));
            measurements.push(measurement("b", i, 2.0 + i as f64 / 10.0, 0.0));
        }
        let results = Results {
            schema_version: SCHEMA_VERSION,
            environment: Environment::default(),
            plan: Plan::default(),
            measurements,
            failures: vec![],
        };
        let text = answer(&study, &results, study.metrics);
        let row = |metric: &str| {
            text.lines()
                .find(|l| l.contains(&format!("| {metric} | churn |")))
                .unwrap_or_else(|| panic!("no {metric} row in {text}"))
                .to_string()
        };
        let wall = row("wall");
        assert!(wall.contains("| < 0.001 | **lower** (better) |"), "{wall}");
        assert!(!text.contains("0.000 |"), "{text}");
        let sys = row("sys");
        // b never spends system time and a always does: the rank test decides, no ratio.
        assert!(
            sys.contains("| n/a | reference is 0 |")
                && sys.ends_with("| **higher** (worse; baseline 0, by +500 ms) |"),
            "{sys}"
        );
        assert!(!text.contains("NaN"), "{text}");
        assert!(!text.contains("no significant difference"), "{text}");
        // The README's summary of the same rows: one line per question and metric.
        let short = summary(&rows(&study, &results, study.metrics).0);
        assert!(
            short.contains("\n| a against b (a / b) | wall | 1 | 0 | 0 | 0 | 0.574 |\n"),
            "{short}"
        );
        assert!(
            short.contains("\n| a against b (a / b) | sys | 0 | 1 | 0 | 0 | reference is 0 |\n"),
            "{short}"
        );
        assert!(
            text.contains("(16 comparisons in 2 families)")
                || text.contains("(2 comparisons in 2 families)"),
            "{text}"
        );
    }
}
