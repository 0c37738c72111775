//! `results.csv`: tidy data, one row per measurement and metric, for R, pandas or a
//! spreadsheet. Warm-up rows are kept and marked, as in `results.json`.

use crate::analysis::{metric, metric_values};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
