//! Reports drawn from a `results.json` alone (so `alloclab report DIR` redraws them without
//! rerunning): `report.md`, `results.csv`, SVG charts and, on request, a LaTeX table.

mod charts;
mod csv;
mod format;
mod frag_chart;
mod latency_chart;
mod latex;
mod markdown;
mod memory_chart;
mod summary;

use super::analysis::{self, Analysis};
use super::schema::Results;
use std::path::{Path, PathBuf};

pub use format::{format_value, margin_text, p_text, slug, P_DECIMALS};
pub use markdown::verdict_text;

/// What to write besides the defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Also write `table.tex`, a table ready for a paper.
    pub latex: bool,
}

/// Writes every report of `results` into `dir` (created if missing): `report.md`,
/// `results.csv`, one `<workload>-time.svg` and one `<workload>-memory.svg` per workload and,
/// with `opts.latex`, `table.tex`. It does not write `results.json`. Returns the paths
/// written.
pub fn write_all(
    results: &Results,
    dir: &Path,
    opts: &ReportOptions,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let analysis = analysis::analyze(results);
    write_all_analysed(results, &analysis, dir, opts)
}

/// [`write_all`] with an analysis already made (for example with other options).
pub fn write_all_analysed(
    results: &Results,
    analysis: &Analysis,
    dir: &Path,
    opts: &ReportOptions,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let path = dir.join("report.md");
    std::fs::write(&path, markdown::render(results, analysis))?;
    written.push(path);
    let path = dir.join("results.csv");
    std::fs::write(&path, csv::render(results))?;
    written.push(path);
    let path = dir.join("comparisons.csv");
    std::fs::write(&path, csv::comparisons(analysis))?;
    written.push(path);
    written.extend(summary::write(analysis, &markdown::headline(results), dir)?);
    written.extend(charts::write(results, analysis, dir)?);
    written.extend(latency_chart::write(results, dir)?);
    written.extend(memory_chart::write(results, dir)?);
    written.extend(frag_chart::write(results, dir)?);
    if opts.latex {
        let path = dir.join("table.tex");
        std::fs::write(&path, latex::render(results, analysis))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "alloclab-report-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Splits one CSV line into fields (RFC 4180 quoting).
    fn csv_fields(line: &str) -> Vec<String> {
        let (mut fields, mut field, mut quoted, mut chars) =
            (Vec::new(), String::new(), false, line.chars().peekable());
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => fields.push(std::mem::take(&mut field)),
                _ => field.push(c),
            }
        }
        fields.push(field);
        fields
    }

    #[test]
    fn writes_every_output_and_each_parses() {
        let results = test_fixture::results(4);
        let dir = TempDir::new("all");
        let written = write_all(&results, &dir.0, &ReportOptions { latex: true }).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for want in [
            "report.md",
            "results.csv",
            "table.tex",
            "churn-time.svg",
            "churn-memory.svg",
            "trace_odd_name-time.svg",
            "trace_odd_name-memory.svg",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
        assert!(
            !dir.0.join("results.json").exists(),
            "results.json is the runner's"
        );
        for p in &written {
            assert!(p.exists(), "{}", p.display());
        }

        // results.csv: the header, then one row per measurement and metric present.
        let csv = std::fs::read_to_string(dir.0.join("results.csv")).unwrap();
        let mut lines = csv.lines();
        assert_eq!(csv_fields(lines.next().unwrap()), csv::COLUMNS);
        let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
        let expected: usize = results
            .measurements
            .iter()
            .map(|m| crate::analysis::metric_values(&m.metrics).len())
            .sum();
        assert_eq!(rows.len(), expected);
        for row in &rows {
            assert_eq!(row.len(), csv::COLUMNS.len(), "{row:?}");
            assert!(row[10].parse::<f64>().is_ok(), "{row:?}");
        }
        assert!(
            rows.iter().any(|r| r[1] == "trace,odd|name"),
            "quoted field read back"
        );

        // SVG: well-formed XML whose root is an <svg>, naming the subjects.
        for p in written
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        {
            let text = std::fs::read_to_string(p).unwrap();
            let doc = roxmltree::Document::parse(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(doc.root_element().tag_name().name(), "svg");
            for subject in test_fixture::SUBJECTS {
                assert!(text.contains(subject), "{} lacks {subject}", p.display());
            }
        }

        // report.md: environment, a table per workload, verdicts, the failure.
        let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
        assert!(md.contains("| CPU | Test CPU |"));
        assert!(md.contains("`alloclab compare --out 'my dir'`"));
        assert!(
            md.contains("| fast | fast, \"made up\" for tests |"),
            "subjects described"
        );
        for workload in test_fixture::WORKLOADS {
            let heading = format!("## Workload `{workload}`");
            let at = md
                .find(&heading)
                .unwrap_or_else(|| panic!("no section {heading}"));
            let section = &md[at..];
            let table = section.find("| metric | subject | n | median [95% CI] |");
            assert!(table.is_some(), "no table under {heading}");
        }
        assert!(md.contains("| wall | fast | 4 |"));
        assert!(
            !md.contains("| **lower** |"),
            "4 invocations cannot pass Holm over the 4 comparisons of churn's wall time"
        );
        assert!(md.contains(
            "inconclusive (no difference can reach significance in a family of 4: 5 invocations \
             per subject needed)"
        ));
        assert!(!md.contains("no significant difference"));
        assert!(
            md.contains("pattern \\| mismatch at 0x10"),
            "failure listed, escaped"
        );

        let tex = std::fs::read_to_string(dir.0.join("table.tex")).unwrap();
        assert!(tex.contains("\\begin{tabular}") && tex.contains("\\end{tabular}"));
        assert!(tex.contains("trace,odd|name & fast"));
    }

    #[test]
    fn enough_invocations_state_the_detectable_effect() {
        let dir = TempDir::new("detectable");
        write_all(
            &test_fixture::results(12),
            &dir.0,
            &ReportOptions::default(),
        )
        .unwrap();
        let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
        assert!(md.contains("| wall | fast | 12 |"));
        assert!(md.contains("| **lower** (better) |"));
        assert!(md.contains("| **higher** (better) |"), "ops_per_sec");
        assert!(
            !md.contains("(worse)"),
            "the fixture's fast subject is better throughout"
        );
        assert!(
            md.contains("inconclusive (not within ±2%; detectable: "),
            "{md}"
        );
        assert!(!md.contains("no significant difference"));
    }

    #[test]
    fn a_run_where_everything_failed_still_reports() {
        let mut results = test_fixture::results(3);
        results.measurements.clear();
        let dir = TempDir::new("failed");
        let written = write_all(&results, &dir.0, &ReportOptions { latex: true }).unwrap();
        assert_eq!(
            written.len(),
            4,
            "report.md, results.csv, comparisons.csv, table.tex; no charts"
        );
        let md = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
        assert!(md.contains("## Failures") && md.contains("| same | churn | 2 | 3 |"));
        assert!(!md.contains("## Workload"));
    }

    #[test]
    fn latex_only_when_asked() {
        let dir = TempDir::new("nolatex");
        let written =
            write_all(&test_fixture::results(3), &dir.0, &ReportOptions::default()).unwrap();
        assert!(!dir.0.join("table.tex").exists());
        assert!(written
            .iter()
            .all(|p| p.extension().is_some_and(|e| e != "tex")));
    }
}
