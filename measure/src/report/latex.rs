//! `table.tex`: each workload's time and memory medians with intervals and verdicts, as a
//! booktabs table ready to `\input` into a paper.

use super::format::{format_interval, p_text};
use crate::analysis::{metric, Analysis, Verdict};
use crate::schema::Results;
use std::fmt::Write;

/// Text with LaTeX's special characters escaped.
fn tex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            'µ' => out.push_str("\\textmu{}"),
            '∞' => out.push_str("$\\infty$"),
            // In text mode '<' prints as another glyph with the default font encoding.
            '<' => out.push_str("$<$"),
            '>' => out.push_str("$>$"),
            _ => out.push(c),
        }
    }
    out
}

pub(super) fn render(results: &Results, analysis: &Analysis) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "% alloclab compare: medians over {} invocations, {}% bootstrap intervals; ratios against \
         {}; p: Mann-Whitney U, Holm-adjusted per workload and metric ({} comparisons in all). Needs \\usepackage{{booktabs}}.",
        results.plan.reps,
        analysis.options.level * 100.0,
        analysis.baseline,
        analysis.comparisons_made
    );
    let _ = writeln!(out, "\\begin{{tabular}}{{llrllll}}\n\\toprule");
    let _ = writeln!(
        out,
        "Workload & Subject & Threads & Metric & Median [95\\% CI] & Ratio [95\\% CI] & p \\\\\n\\midrule"
    );
    let chosen = super::markdown::headline(results);
    for m in &analysis.metrics {
        if !chosen.contains(&m.metric.as_str()) {
            continue;
        }
        let unit = metric(&m.metric).map_or("", |d| d.unit);
        for s in &m.summaries {
            let median = format_interval(&s.median, unit);
            let (ratio, p) = match m.comparisons.iter().find(|c| c.subject == s.subject) {
                Some(c) if c.baseline_zero || c.below_resolution => {
                    let mark = match c.verdict {
                        Verdict::Lower | Verdict::Higher => "$^*$",
                        Verdict::Equivalent => "$^\\approx$",
                        Verdict::Inconclusive => "$^?$",
                    };
                    let why = if c.below_resolution {
                        "within resolution"
                    } else {
                        "baseline 0"
                    };
                    (format!("{why}{mark}"), p_text(c.p_holm))
                }
                Some(c) => {
                    let mark = match c.verdict {
                        Verdict::Lower | Verdict::Higher => "$^*$",
                        Verdict::Equivalent => "$^\\approx$",
                        Verdict::Inconclusive => "$^?$",
                    };
                    (
                        format!(
                            "{:.3} [{:.3}, {:.3}]{mark}",
                            c.ratio.estimate, c.ratio.lo, c.ratio.hi
                        ),
                        p_text(c.p_holm),
                    )
                }
                None => ("---".into(), String::new()),
            };
            let _ = writeln!(
                out,
                "{} & {} & {} & {} & {} & {} & {} \\\\",
                tex(&m.workload),
                tex(&s.subject),
                m.threads,
                tex(&m.metric),
                tex(&median),
                ratio,
                tex(&p)
            );
        }
    }
    let _ = writeln!(
        out,
        "\\bottomrule\n\\end{{tabular}}\n% $^*$: lower or higher (significant after Holm correction \
         within the workload and metric, interval excluding 1); $^\\approx$: equivalent within \
         the metric's margin (TOST); $^?$: inconclusive."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(tex("peak_rss 5% & $x"), "peak\\_rss 5\\% \\& \\$x");
        assert_eq!(tex("12 µs"), "12 \\textmu{}s");
        assert_eq!(tex(&p_text(1e-6)), "$<$ 0.001");
    }
}
