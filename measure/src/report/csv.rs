//! `results.csv`: tidy data, one row per measurement and metric, for R, pandas or a
//! spreadsheet. Warm-up rows are kept and marked, as in `results.json`.

use crate::analysis::{metric, metric_values, Analysis};
use crate::schema::Results;

/// The header row.
pub(super) const COLUMNS: [&str; 12] = [
    "subject", "workload", "threads", "round", "warmup", "order", "env_pad", "ops", "metric",
    "unit", "value", "describe",
];

/// A field quoted as RFC 4180 asks when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

pub(super) fn render(results: &Results) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for m in &results.measurements {
        for (name, value) in metric_values(&m.metrics) {
            let unit = metric(name).map_or("", |d| d.unit);
            let row = [
                field(&m.subject),
                field(&m.workload),
                m.threads.to_string(),
                m.round.to_string(),
                m.warmup.to_string(),
                m.order.to_string(),
                m.env_pad.to_string(),
                m.metrics.ops.to_string(),
                name.to_string(),
                unit.to_string(),
                format!("{value}"),
                field(&m.describe),
            ];
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

/// The header row of `comparisons.csv`.
pub(super) const COMPARISON_COLUMNS: [&str; 16] = [
    "workload",
    "threads",
    "metric",
    "subject",
    "baseline",
    "ratio",
    "ratio_lo",
    "ratio_hi",
    "p",
    "p_holm",
    "family_size",
    "margin",
    "equivalent",
    "verdict",
    "min_detectable_effect",
    "difference",
];

/// `comparisons.csv`: one row per comparison against the baseline, with its verdict (lower,
/// higher, equivalent, inconclusive), its Holm family's size and the margin applied.
pub(super) fn comparisons(analysis: &Analysis) -> String {
    let mut out = COMPARISON_COLUMNS.join(",");
    out.push('\n');
    let num = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else {
            String::new()
        }
    };
    for m in &analysis.metrics {
        for c in &m.comparisons {
            let (ratio, lo, hi) = if c.baseline_zero || c.below_resolution {
                (String::new(), String::new(), String::new())
            } else {
                (num(c.ratio.estimate), num(c.ratio.lo), num(c.ratio.hi))
            };
            let row = [
                field(&m.workload),
                m.threads.to_string(),
                m.metric.clone(),
                field(&c.subject),
                field(&analysis.baseline),
                ratio,
                lo,
                hi,
                num(c.test.p),
                num(c.p_holm),
                c.family_size.to_string(),
                num(c.margin),
                c.equivalence.is_some_and(|e| e.equivalent).to_string(),
                c.verdict.label().to_string(),
                num(c.min_detectable_effect),
                num(c.difference),
            ];
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn comparisons_carry_their_verdicts() {
        let results = crate::test_fixture::results(12);
        let text = comparisons(&crate::analysis::analyze(&results));
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap(), COMPARISON_COLUMNS.join(","));
        let wall = lines
            .find(|l| l.starts_with("churn,1,wall,fast,system,"))
            .expect("a row for fast's wall time");
        assert!(wall.contains(",lower,"), "{wall}");
        assert!(text.lines().skip(1).all(|l| {
            ["lower", "higher", "equivalent", "inconclusive"]
                .iter()
                .any(|v| l.contains(&format!(",{v},")))
        }));
    }
}
