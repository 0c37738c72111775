//! The report's first screen: who won, at a glance. For each headline metric, a table with a
//! row per subject and a column per (workload, threads) cell holding the ratio against the
//! baseline and its verdict, and the same as a heat map (`summary-<metric>.svg`: colour = ratio,
//! mark = verdict).

use super::format::{margin_text, slug};
use crate::analysis::{metric, Analysis, Comparison, Verdict};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The verdict's mark in the summary table and the heat map.
pub(super) fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Lower => "▼",
        Verdict::Higher => "▲",
        Verdict::Equivalent => "≈",
        Verdict::Inconclusive => "?",
    }
}

/// The metrics summarised: the headline ones that have comparisons.
fn summarised<'a>(analysis: &'a Analysis, headline: &[&str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for m in &analysis.metrics {
        if headline.contains(&m.metric.as_str())
            && !m.comparisons.is_empty()
            && !out.contains(&m.metric.as_str())
        {
            out.push(&m.metric);
        }
    }
    out
}

/// The (workload, threads) cells of one metric, in report order.
fn cells<'a>(analysis: &'a Analysis, name: &str) -> Vec<(&'a str, usize)> {
    analysis
        .metrics
        .iter()
        .filter(|m| m.metric == name && !m.comparisons.is_empty())
        .map(|m| (m.workload.as_str(), m.threads))
        .collect()
}

/// The compared subjects of one metric, in first-seen order.
fn subjects<'a>(analysis: &'a Analysis, name: &str) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for m in analysis.metrics.iter().filter(|m| m.metric == name) {
        for c in &m.comparisons {
            if !out.contains(&c.subject.as_str()) {
                out.push(&c.subject);
            }
        }
    }
    out
}

fn find<'a>(
    analysis: &'a Analysis,
    name: &str,
    cell: (&str, usize),
    subject: &str,
) -> Option<&'a Comparison> {
    analysis
        .get(cell.0, cell.1, name)?
        .comparisons
        .iter()
        .find(|c| c.subject == subject)
}

/// A cell of the summary table: `0.952 ▼`, or the difference's sign with a zero baseline.
fn cell_text(c: &Comparison) -> String {
    if c.below_resolution {
        format!("(≤ res.) {}", mark(c.verdict))
    } else if c.baseline_zero {
        format!("(base 0) {}", mark(c.verdict))
    } else {
        format!("{:.3} {}", c.ratio.estimate, mark(c.verdict))
    }
}

/// The summary section of report.md (empty when nothing was compared).
pub(super) fn markdown(analysis: &Analysis, headline: &[&str]) -> String {
    let metrics = summarised(analysis, headline);
    if metrics.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Summary\n\nRatio of each subject's median to {base}'s, per workload and thread \
         count, with its verdict: ▼ lower, ▲ higher (significant after Holm within the \
         workload and metric), ≈ equivalent within the margin, ? inconclusive. The tables \
         below give every interval and p.",
        base = analysis.baseline
    );
    for name in metrics {
        let better = match metric(name).and_then(|d| d.higher_is_better()) {
            Some(true) => "higher is better",
            Some(false) => "lower is better",
            None => "a behaviour count, neither better nor worse",
        };
        let margin = analysis
            .metrics
            .iter()
            .filter(|m| m.metric == name)
            .flat_map(|m| m.comparisons.first())
            .map(|c| c.margin)
            .next()
            .unwrap_or(f64::NAN);
        let cells = cells(analysis, name);
        let _ = writeln!(
            out,
            "\n**{name}** ({better}; margin {}; heat map: [summary-{}.svg](summary-{}.svg))\n",
            margin_text(margin),
            slug(name),
            slug(name)
        );
        let mut header = String::from("| subject |");
        let mut rule = String::from("|---|");
        for (w, t) in &cells {
            let _ = write!(header, " {} ×{t} |", w.replace('|', "\\|"));
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for s in subjects(analysis, name) {
            let mut row = format!("| {} |", s.replace('|', "\\|"));
            for &cell in &cells {
                let text = find(analysis, name, cell, s).map_or(String::new(), cell_text);
                let _ = write!(row, " {text} |");
            }
            let _ = writeln!(out, "{row}");
        }
    }
    out
}

/// Escapes text for SVG.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A ratio's colour: white at 1, blue below, red above, full at ±25% (log scale), so that the
/// eye finds the large differences first; grey when there is no ratio.
fn colour(c: &Comparison) -> String {
    if c.baseline_zero
        || c.below_resolution
        || !c.ratio.estimate.is_finite()
        || c.ratio.estimate <= 0.0
    {
        return "#dddddd".into();
    }
    let x = (c.ratio.estimate.ln() / 1.25f64.ln()).clamp(-1.0, 1.0);
    let fade = |k: f64| (255.0 - k * x.abs() * 200.0).round() as u8;
    if x < 0.0 {
        format!("#{:02x}{:02x}ff", fade(1.0), fade(0.7))
    } else {
        format!("#ff{:02x}{:02x}", fade(0.7), fade(1.0))
    }
}

/// `summary-<metric>.svg`: the summary table as a heat map.
pub(super) fn svg(analysis: &Analysis, name: &str) -> String {
    let cells = cells(analysis, name);
    let subjects = subjects(analysis, name);
    // The column labels slant up at 35 degrees: the longest sets the room above the grid.
    let longest = cells
        .iter()
        .map(|(w, t)| w.chars().count() + t.to_string().len() + 2)
        .max()
        .unwrap_or(0);
    let (cw, ch, left) = (96.0, 26.0, 170.0);
    let top = (50.0 + 4.5 * longest as f64).max(110.0);
    // Room for the title, the legend and the last column's slanted label.
    let width = (left + cw * cells.len() as f64 + 140.0).max(780.0);
    let height = top + ch * subjects.len() as f64 + 60.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"20\" \
         font-size=\"15\">{} against {}: ratio of medians (blue lower, red higher) and verdict</text>",
        xml(name),
        xml(&analysis.baseline)
    );
    for (i, (w, t)) in cells.iter().enumerate() {
        let x = left + cw * i as f64 + cw / 2.0;
        let _ = writeln!(
            out,
            "<text transform=\"translate({x},{y}) rotate(-35)\" text-anchor=\"start\">{} ×{t}</text>",
            xml(w),
            y = top - 8.0
        );
    }
    for (j, s) in subjects.iter().enumerate() {
        let y = top + ch * j as f64;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + ch * 0.65,
            xml(s)
        );
        for (i, &cell) in cells.iter().enumerate() {
            let x = left + cw * i as f64;
            let Some(c) = find(analysis, name, cell, s) else {
                continue;
            };
            let label = if c.below_resolution {
                format!("≤ res. {}", mark(c.verdict))
            } else if c.baseline_zero {
                format!("base 0 {}", mark(c.verdict))
            } else {
                format!("{:.3} {}", c.ratio.estimate, mark(c.verdict))
            };
            let _ = writeln!(
                out,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{cw}\" height=\"{ch}\" fill=\"{}\" \
                 stroke=\"white\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\"{}>{}</text>",
                colour(c),
                x + cw / 2.0,
                y + ch * 0.65,
                if matches!(c.verdict, Verdict::Lower | Verdict::Higher) {
                    " font-weight=\"bold\""
                } else {
                    ""
                },
                xml(&label)
            );
        }
    }
    let _ = writeln!(
        out,
        "<text x=\"10\" y=\"{}\">▼ lower, ▲ higher (bold: significant after Holm), ≈ equivalent \
         within the margin, ? inconclusive; colour saturates at ±25%</text>\n</svg>",
        height - 20.0
    );
    out
}

/// Writes `summary-<metric>.svg` for every summarised metric.
pub(super) fn write(
    analysis: &Analysis,
    headline: &[&str],
    dir: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for name in summarised(analysis, headline) {
        let path = dir.join(format!("summary-{}.svg", slug(name)));
        std::fs::write(&path, svg(analysis, name))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    #[test]
    fn the_summary_has_a_row_per_subject_and_a_column_per_cell() {
        let results = test_fixture::results(12);
        let analysis = crate::analysis::analyze(&results);
        let md = markdown(&analysis, &["wall", "peak_rss"]);
        assert!(md.starts_with("## Summary"), "{md}");
        let header = md
            .lines()
            .find(|l| l.starts_with("| subject |"))
            .expect("a table");
        // churn at 1 and 2 threads, trace at 1.
        assert_eq!(header.matches(" |").count(), 4, "{header}");
        let fast = md.lines().find(|l| l.starts_with("| fast |")).unwrap();
        assert!(fast.contains(" ▼ |"), "fast is lower in wall time: {fast}");
        assert!(!md.lines().any(|l| l.starts_with("| system |")), "{md}");
        let text = svg(&analysis, "wall");
        let doc = roxmltree::Document::parse(&text).unwrap();
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(text.contains("fast") && text.contains("system"));
        assert!(text.contains("▼"));
    }
}
