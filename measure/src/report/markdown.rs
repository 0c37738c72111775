//! `report.md`: the environment, the plan, and per workload a table of medians, intervals,
//! ratios against the baseline and verdicts; then every failure.

use super::format::{format_interval, format_value, margin_text, p_text, percent_text, ratio_text};
use crate::analysis::{metric, Analysis, Comparison, MetricAnalysis, Verdict};
use crate::schema::{Environment, LoadAverage, Results};
use std::fmt::Write;

/// The metrics of each workload's headline table: those `--metrics` asked for, or else time
/// and the memory figure present.
pub(super) fn headline(results: &Results) -> Vec<&str> {
    if results.plan.metrics.is_empty() {
        vec!["wall", "peak_rss", "max_rss_process"]
    } else {
        results.plan.metrics.iter().map(String::as_str).collect()
    }
}

/// What the probe's figures (`alloc_*`, `lat_*`) are and what the probe itself cost, when
/// the run has them.
fn probe_note(out: &mut String, results: &Results) {
    let probes: Vec<&crate::schema::ProbeMetrics> = results
        .measurements
        .iter()
        .filter_map(|m| m.metrics.probe.as_ref())
        .collect();
    if probes.is_empty() {
        return;
    }
    let overheads = probes.iter().map(|p| p.overhead_ns);
    let lo = overheads.clone().fold(f64::INFINITY, f64::min);
    let hi = overheads.fold(0.0, f64::max);
    let mut clocks: Vec<&str> = probes.iter().map(|p| p.clock.as_str()).collect();
    clocks.sort_unstable();
    clocks.dedup();
    let mut every: Vec<u64> = probes.iter().map(|p| p.every).collect();
    every.sort_unstable();
    every.dedup();
    let subtracted = probes.iter().all(|p| p.subtracted);
    let resolutions = probes.iter().map(|p| p.resolution_ns).filter(|&r| r > 0.0);
    let resolution = match (
        resolutions.clone().fold(f64::INFINITY, f64::min),
        resolutions.fold(0.0, f64::max),
    ) {
        (lo, hi) if hi == 0.0 || !lo.is_finite() => {
            " The timer's resolution was not recorded (a run from before it was).".to_string()
        }
        (lo, hi) if lo == hi => format!(
            " The timer's resolution (its typical step) was {}: a percentile at or below it \
             reads `≤ {}` and is not compared by ratio.",
            format_value(hi, "ns"),
            format_value(hi, "ns")
        ),
        (lo, hi) => format!(
            " The timer's resolution (its typical step) was {} to {}: a percentile at or \
             below it reads `≤` it and is not compared by ratio.",
            format_value(lo, "ns"),
            format_value(hi, "ns")
        ),
    };
    let everywhere = probes.len() == results.measurements.len();
    let mut probed: Vec<&str> = results
        .measurements
        .iter()
        .filter(|m| m.metrics.probe.is_some())
        .map(|m| m.workload.as_str())
        .collect();
    probed.sort_unstable();
    probed.dedup();
    let where_ = if everywhere {
        "The probe runs in every measurement of this report, so its".to_string()
    } else {
        format!(
            "The probe runs only in the measurements of {}, so their",
            probed
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let _ = write!(
        out,
        "\n\nThe `alloc_*` and `lat_*` figures are time inside the allocator: the probe takes a \
         time stamp ({}) before and after every allocator call, per thread. `alloc_ns_per_thread` is the median over the threads that made calls of each thread's \
         total, `alloc_ns_per_thread_max` the largest; latency percentiles are over every call, \
         to within 0.4% (log-linear buckets). The probe's own cost, an empty pair of time \
         stamps, was {} to {} per call in these runs and was {}subtracted from every figure; \
         {}.{resolution} {where_} \
         other figures (wall time, RSS) include its cost too.",
        clocks.join(", "),
        format_value(lo, "ns"),
        format_value(hi, "ns"),
        if subtracted { "" } else { "not " },
        if every == [1] {
            "every call was timed".to_string()
        } else {
            let n: Vec<String> = every.iter().map(u64::to_string).collect();
            format!("one call in {} was timed", n.join(" or "))
        },
    );
}

/// Text made safe for a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A command line as a shell would take it back.
pub(super) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The verdict as every table prints it: one of four words, with whether it is better or
/// worse for the metric, the margin an equivalence was shown within, or, when inconclusive,
/// the smallest difference the data could have detected.
pub fn verdict_text(c: &Comparison, metric_name: &str) -> String {
    let unit = metric(metric_name).map_or("", |d| d.unit);
    let margin = margin_text(c.margin);
    let zero_note = |detail: String| {
        if c.baseline_zero {
            format!(" (baseline 0; {detail})")
        } else {
            String::new()
        }
    };
    if c.below_resolution {
        let r = format_value(c.resolution.unwrap_or(f64::NAN), unit);
        return match c.verdict {
            Verdict::Lower | Verdict::Higher => {
                let better = metric(metric_name).and_then(|d| d.higher_is_better());
                let judged = match better {
                    Some(hb) if hb == (c.verdict == Verdict::Higher) => "better; ",
                    Some(_) => "worse; ",
                    None => "",
                };
                format!(
                    "**{}** ({judged}one side within the timer's resolution, ≤ {r}; by {})",
                    c.verdict.label(),
                    signed(c.difference, unit)
                )
            }
            _ => format!("inconclusive (below the timer's resolution, ≤ {r})"),
        };
    }
    match c.verdict {
        Verdict::Equivalent if c.baseline_zero => "**equivalent** (both always 0)".into(),
        Verdict::Equivalent => format!("**equivalent** within {margin}"),
        Verdict::Inconclusive if c.baseline_zero => format!(
            "inconclusive{}",
            zero_note(format!("difference {}", signed(c.difference, unit)))
        ),
        Verdict::Inconclusive if c.min_detectable_effect.is_infinite() => {
            let family = c.family_size;
            match c.min_invocations {
                Some(n) => format!(
                    "inconclusive (no difference can reach significance in a family of {family}: \
                     {n} invocations per subject needed)"
                ),
                None => format!(
                    "inconclusive (no difference can reach significance in a family of {family})"
                ),
            }
        }
        Verdict::Inconclusive => format!(
            "inconclusive (not within {margin}; detectable: {})",
            percent_text(c.min_detectable_effect)
        ),
        v => {
            let better = metric(metric_name).and_then(|d| d.higher_is_better());
            let judged = match (better, v == Verdict::Higher) {
                (Some(higher_better), higher) if higher_better == higher => {
                    format!("**{}** (better", v.label())
                }
                (Some(_), _) => format!("**{}** (worse", v.label()),
                (None, _) => format!("**{}** (", v.label()),
            };
            let sep = if judged.ends_with('(') { "" } else { "; " };
            let detail = if c.baseline_zero {
                format!("{sep}baseline 0, by {}", signed(c.difference, unit))
            } else if c.equivalence.is_some_and(|e| e.equivalent) {
                format!("{sep}yet within {margin}")
            } else {
                String::new()
            };
            let text = format!("{judged}{detail})");
            text.replace(" ()", "")
        }
    }
}

/// A difference with its sign, in the metric's unit.
fn signed(value: f64, unit: &str) -> String {
    let text = format_value(value, unit);
    if value > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

fn load_text(load: Option<LoadAverage>) -> String {
    load.map_or_else(
        || "unknown".into(),
        |l| format!("{:.2} {:.2} {:.2}", l.one, l.five, l.fifteen),
    )
}

/// The build's commit (with whether the tree was dirty), compiler and binary hashes.
fn built_from(env: &Environment) -> String {
    let commit = env.build.commit.as_deref().unwrap_or("unknown commit");
    let dirty = match env.build.dirty {
        Some(true) => " (dirty tree)",
        Some(false) => " (clean tree)",
        None => "",
    };
    let mut text = format!("{commit}{dirty}");
    for h in &env.hashes {
        let _ = write!(text, "; {} {} {}", h.role, h.path, h.hash);
    }
    text
}

pub(super) fn render(results: &Results, analysis: &Analysis) -> String {
    let mut out = String::new();
    let env = &results.environment;
    let plan = &results.plan;
    // The first line: how many measurements were disturbed, and by how much; then the
    // summary, so that the first screen says who won.
    let _ = writeln!(out, "{}\n", crate::disturbance::title(results));
    let summary = super::summary::markdown(analysis, &headline(results));
    if !summary.is_empty() {
        let _ = writeln!(out, "{summary}");
    }
    let _ = writeln!(out, "## Environment\n\n| | |\n|---|---|");
    let peers = env
        .peers
        .iter()
        .map(|(n, v)| format!("{n} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = [
        ("CPU", env.cpu_model.clone()),
        ("cores", env.cores.to_string()),
        ("memory", format_value(env.memory_bytes as f64, "bytes")),
        ("kernel", env.kernel.clone()),
        ("rustc", env.rustc.clone()),
        ("alloclab", env.alloclab_version.clone()),
        (
            "commit",
            env.commit.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "peers",
            if peers.is_empty() {
                "none".into()
            } else {
                peers
            },
        ),
        ("built from", built_from(env)),
        (
            "load average (1, 5, 15 min)",
            format!(
                "{} before, {} after{}",
                load_text(env.load_before),
                load_text(env.load_after),
                if env.noisy { " (noisy)" } else { "" }
            ),
        ),
        ("host", env.hostname.clone()),
        ("started", env.started.clone()),
        ("command", format!("`{}`", shell_words(&env.command))),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "| {k} | {} |", cell(&v));
    }
    let _ = writeln!(out, "\n## Plan\n");
    let _ = writeln!(out, "- subjects: {}", plan.subjects.join(", "));
    // Each subject as it described itself (a registered config's own `Config::describe`).
    for name in &plan.subjects {
        if let Some(m) = results.measurements.iter().find(|m| &m.subject == name) {
            let _ = writeln!(out, "  - {}: {}", cell(name), cell(&m.describe));
        }
    }
    let _ = writeln!(out, "- workloads: {}", plan.workloads.join(", "));
    let threads: Vec<String> = plan.threads.iter().map(usize::to_string).collect();
    let _ = writeln!(out, "- threads: {}", threads.join(", "));
    let _ = writeln!(
        out,
        "- {} measured invocations per cell after {} warm-up round(s), subjects shuffled per round \
         (seed {}); work scale {}{}{}{}",
        plan.reps,
        plan.warmup,
        plan.seed,
        plan.scale,
        if plan.quick { ", quick grid" } else { "" },
        if plan.instructions { ", under callgrind" } else { "" },
        if plan.syscalls {
            ", under strace (syscalls.*: memory system calls per process; times include \
             strace's stops)"
        } else {
            ""
        },
    );
    if !plan.shards.is_empty() {
        let _ = writeln!(out, "- merged from shards {}", plan.shards.join(", "));
    }
    let _ = writeln!(out, "- baseline: {}", plan.baseline);

    // Each subject as it describes itself (a user's config prints its own description).
    let mut described: Vec<(&str, &str)> = Vec::new();
    for m in &results.measurements {
        if !described.iter().any(|(s, _)| *s == m.subject) {
            described.push((&m.subject, &m.describe));
        }
    }
    if !described.is_empty() {
        let _ = writeln!(out, "\n## Subjects\n\n| subject | what it is |\n|---|---|");
        for (subject, describe) in described {
            let _ = writeln!(out, "| {} | {} |", cell(subject), cell(describe));
        }
    }

    let o = &analysis.options;
    let _ = writeln!(
        out,
        "\n## How to read the tables\n\n\
         Each figure is the median over process invocations (warm-up rounds left out) with a \
         {level}% bootstrap percentile interval ({resamples} resamples). \"vs {base}\" is the \
         ratio of the subject's median to the baseline's, with its {level}% bootstrap interval. \
         p is a two-sided Mann-Whitney U test against the baseline, adjusted by Holm-Bonferroni \
         within its family: the comparisons of one workload and metric, every subject and \
         thread count ({m} comparisons in all; the largest family has {largest}). Each row has \
         one of four verdicts: **lower** or **higher** when the adjusted p is below {alpha} and \
         the ratio's interval excludes 1; **equivalent** within the metric's margin ±m when \
         both one-sided tests of a TOST reject at {alpha} (the ratio's {tost}% interval lies \
         inside [1/(1+m), 1+m]); otherwise **inconclusive**, with the smallest difference the \
         observed noise would have let it detect ({power}% power at the strictest Holm level). \
         A zero baseline has no ratio: its rows are decided by the rank test and the \
         difference of medians. Margins: {margins}. docs/MEASURING.md defines every statistic.",
        level = o.level * 100.0,
        resamples = o.resamples,
        base = analysis.baseline,
        m = analysis.comparisons_made,
        largest = analysis.largest_family,
        alpha = o.alpha,
        tost = (1.0 - 2.0 * o.alpha) * 100.0,
        power = o.power * 100.0,
        margins = margins_text(analysis),
    );
    if let Some(said) = crate::analysis::plan_reachability(&results.plan, o.alpha) {
        let _ = write!(out, "\n\n**This grid cannot show a difference:** {said}.");
    }
    probe_note(&mut out, results);

    let mut workloads: Vec<&str> = Vec::new();
    for m in &analysis.metrics {
        if !workloads.contains(&m.workload.as_str()) {
            workloads.push(&m.workload);
        }
    }
    let chosen = headline(results);
    for workload in workloads {
        let _ = writeln!(out, "\n## Workload `{workload}`");
        let cells: Vec<&MetricAnalysis> = analysis
            .metrics
            .iter()
            .filter(|m| m.workload == workload)
            .collect();
        let mut threads: Vec<usize> = cells.iter().map(|m| m.threads).collect();
        threads.dedup();
        for t in threads {
            let here: Vec<&MetricAnalysis> =
                cells.iter().copied().filter(|m| m.threads == t).collect();
            let _ = writeln!(out, "\n### {t} thread{}\n", if t == 1 { "" } else { "s" });
            let headline: Vec<&MetricAnalysis> = here
                .iter()
                .copied()
                .filter(|m| chosen.contains(&m.metric.as_str()))
                .collect();
            table(&mut out, &headline, &analysis.baseline);
            let rest: Vec<&MetricAnalysis> = here
                .iter()
                .copied()
                .filter(|m| !chosen.contains(&m.metric.as_str()))
                .collect();
            if !rest.is_empty() {
                let _ = writeln!(out, "\n<details><summary>All other metrics</summary>\n");
                table(&mut out, &rest, &analysis.baseline);
                let _ = writeln!(out, "\n</details>");
            }
        }
    }

    let _ = writeln!(out, "\n## Failures\n");
    if results.failures.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(
            out,
            "| subject | workload | threads | round | reason |\n|---|---|---|---|---|"
        );
        for f in &results.failures {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&f.subject),
                cell(&f.workload),
                f.threads,
                f.round,
                cell(&f.reason)
            );
        }
    }
    out
}

/// The margins of the metrics this analysis compared, grouped by value: `±1%: peak_rss,
/// final_rss; ±2%: wall`.
fn margins_text(analysis: &Analysis) -> String {
    let mut groups: Vec<(f64, Vec<&str>)> = Vec::new();
    for m in &analysis.metrics {
        let Some(c) = m.comparisons.first() else {
            continue;
        };
        match groups.iter_mut().find(|(v, _)| *v == c.margin) {
            Some((_, names)) => {
                if !names.contains(&m.metric.as_str()) {
                    names.push(&m.metric)
                }
            }
            None => groups.push((c.margin, vec![&m.metric])),
        }
    }
    if groups.is_empty() {
        return "none (no comparisons)".into();
    }
    groups.sort_by(|a, b| a.0.total_cmp(&b.0));
    groups
        .iter()
        .map(|(v, names)| format!("{} for {}", margin_text(*v), names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// An interval whose ends at or below the timer's resolution `r` read `≤ r`, never `0 ns`.
fn resolved_interval(ci: &crate::stats::ConfidenceInterval, unit: &str, r: f64) -> String {
    let v = |x: f64| {
        if x <= r {
            format!("≤ {}", format_value(r, unit))
        } else {
            format_value(x, unit)
        }
    };
    format!("{} [{}, {}]", v(ci.estimate), v(ci.lo), v(ci.hi))
}

/// One table: a row per metric and subject.
fn table(out: &mut String, metrics: &[&MetricAnalysis], baseline: &str) {
    let _ = writeln!(
        out,
        "| metric | subject | n | median [95% CI] | vs {} [95% CI] | p (Holm) | verdict |\n\
         |---|---|---|---|---|---|---|",
        cell(baseline)
    );
    for m in metrics {
        let unit = metric(&m.metric).map_or("", |d| d.unit);
        for s in &m.summaries {
            let median = match s.resolution {
                Some(r) => resolved_interval(&s.median, unit, r),
                None => format_interval(&s.median, unit),
            };
            let (ratio, p, verdict) = match m.comparisons.iter().find(|c| c.subject == s.subject) {
                Some(c) if c.below_resolution => (
                    "no ratio (within the timer's resolution)".into(),
                    p_text(c.p_holm),
                    verdict_text(c, &m.metric),
                ),
                Some(c) if c.baseline_zero => (
                    "no ratio (baseline 0)".into(),
                    p_text(c.p_holm),
                    verdict_text(c, &m.metric),
                ),
                Some(c) => (
                    ratio_text(c.ratio.estimate, c.ratio.lo, c.ratio.hi),
                    p_text(c.p_holm),
                    verdict_text(c, &m.metric),
                ),
                None if s.subject == baseline => ("baseline".into(), String::new(), String::new()),
                None => ("no baseline figures".into(), String::new(), String::new()),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {median} | {ratio} | {p} | {verdict} |",
                m.metric,
                cell(&s.subject),
                s.n
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_within_the_resolution_never_read_zero() {
        let mut results = crate::test_fixture::results(12);
        for m in results.measurements.iter_mut() {
            m.metrics.probe = Some(crate::schema::ProbeMetrics {
                resolution_ns: 10.0,
                clock: "monotonic".into(),
                every: 1,
                subtracted: true,
                alloc_calls: 1,
                ..Default::default()
            });
        }
        let text = render(&results, &crate::analysis::analyze(&results));
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| lat_p50_ns |"))
            .collect();
        assert!(!rows.is_empty(), "{text}");
        for row in rows {
            assert!(!row.contains(" 0 ns") && !row.contains("[0 ns"), "{row}");
            assert!(row.contains("≤ 10.0 ns"), "{row}");
        }
        assert!(
            text.contains("below the timer's resolution, ≤ 10.0 ns"),
            "{text}"
        );
        assert!(text.contains("timer's resolution"), "{text}");
    }

    #[test]
    fn a_zero_baseline_is_said_not_printed_as_nan() {
        let mut results = crate::test_fixture::results(12);
        for m in results.measurements.iter_mut() {
            if m.subject == "system" {
                m.metrics.sys = 0.0;
            }
        }
        let text = render(&results, &crate::analysis::analyze(&results));
        assert!(!text.contains("NaN"), "{text}");
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| sys | fast |"))
            .collect();
        assert!(!rows.is_empty());
        for row in rows {
            assert!(row.contains("| no ratio (baseline 0) |"), "{row}");
            assert!(
                row.contains("| **higher** (worse; baseline 0, by +"),
                "{row}"
            );
        }
        assert!(!text.contains("no significant difference"), "{text}");
        assert!(!text.contains("no ratio: baseline is 0"), "{text}");
    }

    #[test]
    fn a_noisy_run_says_so_in_the_first_line() {
        let mut results = crate::test_fixture::results(4);
        let analysis = crate::analysis::analyze(&results);
        let quiet = render(&results, &analysis);
        assert_eq!(quiet.lines().next(), Some("# alloclab compare: report"));
        assert!(!quiet.contains("NOISY"));
        let load = |one| LoadAverage {
            one,
            five: 2.0,
            fifteen: 1.0,
        };
        results.environment.load_before = Some(load(3.5));
        results.environment.load_after = Some(load(0.25));
        // A file written before disturbance was measured, judged by the load average.
        results.environment.noisy = true;
        let noisy = render(&results, &analysis);
        let first = noisy.lines().next().unwrap();
        assert!(
            first.starts_with("# alloclab compare: report (NOISY"),
            "{first}"
        );
        assert!(first.contains("load 3.50 2.00 1.00 before"), "{first}");
        assert!(first.contains("0.25 2.00 1.00 after on 2 cores"), "{first}");
        assert_eq!(noisy.matches("NOISY").count(), 1);
        assert!(noisy.contains("| load average (1, 5, 15 min) | 3.50 2.00 1.00 before"));

        // Measured disturbance speaks instead, whatever the load average said.
        let measured = |fraction: f64, disturbed: bool| crate::schema::Disturbance {
            fraction,
            other_cpu_s: fraction * 2.0,
            elapsed_s: 1.0,
            cpus: 2,
            resolution_s: 0.02,
            disturbed,
            ..Default::default()
        };
        for m in &mut results.measurements {
            m.disturbance = Some(measured(0.012, false));
        }
        let quiet = render(&results, &analysis);
        let first = quiet.lines().next().unwrap();
        let n = results.measurements.iter().filter(|m| !m.warmup).count();
        assert_eq!(
            first,
            format!(
                "# alloclab compare: report (undisturbed: other processes took at most 1.2% of \
                 the machine during any of its {n} measurements; threshold 5.0%)"
            )
        );
        let measured_rounds: Vec<usize> = (0..results.measurements.len())
            .filter(|&k| !results.measurements[k].warmup)
            .collect();
        // Above the threshold, yet not certainly (within the resolution): not disturbed, and
        // the line says why the figure may exceed the threshold.
        results.measurements[measured_rounds[0]].disturbance = Some(measured(0.093, false));
        let close = render(&results, &analysis);
        assert_eq!(
            close.lines().next().unwrap(),
            format!(
                "# alloclab compare: report (undisturbed: other processes took at most 9.3% of \
                 the machine during any of its {n} measurements, above the threshold only by \
                 less than /proc/stat's resolution; threshold 5.0%)"
            )
        );
        results.measurements[measured_rounds[0]].disturbance = Some(crate::schema::Disturbance {
            retried: vec![0.4, 0.35],
            ..measured(0.30, true)
        });
        results.measurements[measured_rounds[1]].disturbance = Some(measured(0.10, true));
        // A disturbed warm-up round is left out, as the statistics leave it out.
        let warm = results.measurements.iter().position(|m| m.warmup).unwrap();
        results.measurements[warm].disturbance = Some(measured(0.9, true));
        let disturbed = render(&results, &analysis);
        let first = disturbed.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "# alloclab compare: report (DISTURBED: 2 of {n} measurements, during which \
                 other processes took a median 20.0% of the machine (10.0% to 30.0%; threshold \
                 5.0%; 1 measured again); their figures may be off)"
            )
        );
    }

    #[test]
    fn the_build_is_described() {
        let mut results = crate::test_fixture::results(3);
        let text = render(&results, &crate::analysis::analyze(&results));
        assert!(text.contains("| built from | unknown commit |"), "{text}");
        results.environment.build.commit = Some("f00d".into());
        results.environment.build.dirty = Some(true);
        results.environment.hashes = vec![crate::schema::FileHash {
            role: "binary".into(),
            path: "/x/alloclab".into(),
            hash: "fnv1a64:0000000000000001".into(),
        }];
        let text = render(&results, &crate::analysis::analyze(&results));
        assert!(
            text.contains(
                "| built from | f00d (dirty tree); binary /x/alloclab fnv1a64:0000000000000001 |"
            ),
            "{text}"
        );
    }

    #[test]
    fn shell_quoting() {
        let words: Vec<String> = ["alloclab", "compare", "--out", "my dir", "it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            shell_words(&words),
            "alloclab compare --out 'my dir' 'it'\\''s'"
        );
    }
}
