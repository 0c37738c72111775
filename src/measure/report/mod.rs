//! Reports drawn from a `results.json` alone (so `alloclab report DIR` redraws them without
//! rerunning): `report.md`, `results.csv`, SVG charts and, on request, a LaTeX table.

mod charts;
mod csv;
mod format;
mod latex;
mod markdown;

use super::analysis::{self, Analysis};
use super::schema::Results;
use std::path::{Path, PathBuf};

pub use format::{format_value, slug};

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
    written.extend(charts::write(results, analysis, dir)?);
    if opts.latex {
        let path = dir.join("table.tex");
        std::fs::write(&path, latex::render(results, analysis))?;
        written.push(path);
    }
    Ok(written)
}
