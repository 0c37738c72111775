//! SVG charts (plotters): per workload, the time and the peak resident size of every subject,
//! a point at the median and whiskers spanning its confidence interval, one colour per
//! thread count.

use super::format::slug;
use crate::analysis::{metric, Analysis, MetricAnalysis};
use crate::schema::{Measurement, Results};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

pub(super) fn io_error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("drawing a chart: {e}"))
}

/// The subjects in report order: the plan's, then any others measured.
pub(super) fn subjects(results: &Results) -> Vec<&str> {
    let mut subjects: Vec<&str> = results.plan.subjects.iter().map(String::as_str).collect();
    for m in &results.measurements {
        if !subjects.contains(&m.subject.as_str()) {
            subjects.push(&m.subject);
        }
    }
    subjects
}

/// The (workload, threads) cells, in first-measured order, of measurements that `has`.
pub(super) fn cells(results: &Results, has: impl Fn(&Measurement) -> bool) -> Vec<(&str, usize)> {
    let mut cells: Vec<(&str, usize)> = Vec::new();
    for m in results.measurements.iter().filter(|m| has(m)) {
        let c = (m.workload.as_str(), m.threads);
        if !cells.contains(&c) {
            cells.push(c);
        }
    }
    cells
}

/// The measured (not warm-up) invocations of `subject` in one cell.
pub(super) fn invocations<'a>(
    results: &'a Results,
    subject: &'a str,
    workload: &'a str,
    threads: usize,
) -> impl Iterator<Item = &'a Measurement> {
    results.measurements.iter().filter(move |m| {
        !m.warmup && m.subject == subject && m.workload == workload && m.threads == threads
    })
}

/// One point of a band: (x, median, lowest, highest) of the invocations' values at x.
pub(super) type BandPoint = (f64, f64, f64, f64);

/// A subject's line over a band: its name and its points.
pub(super) type BandLine = (String, Vec<BandPoint>);

/// The band point of `values` at `x`; `None` when no invocation has a value there.
pub(super) fn band_point(x: f64, values: &[f64]) -> Option<BandPoint> {
    if values.is_empty() {
        return None;
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((x, crate::stats::median(values), lo, hi))
}

/// A chart whose axes are both plain numbers.
pub(super) type Plane<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws each subject's median line over a shaded band from its lowest to its highest
/// invocation, one colour each, and the legend at `legend`.
pub(super) fn draw_bands<'a, 'b: 'a>(
    chart: &mut Plane<'a, 'b>,
    lines: &[BandLine],
    legend: SeriesLabelPosition,
) -> std::io::Result<()> {
    for (k, (name, band)) in lines.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        let mut outline: Vec<(f64, f64)> = band.iter().map(|p| (p.0, p.3)).collect();
        outline.extend(band.iter().rev().map(|p| (p.0, p.2)));
        chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                colour.mix(0.15).filled(),
            )))
            .map_err(io_error)?;
        chart
            .draw_series(LineSeries::new(
                band.iter().map(|p| (p.0, p.1)),
                colour.stroke_width(2),
            ))
            .map_err(io_error)?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend)
        .draw()
        .map_err(io_error)?;
    Ok(())
}

/// Writes `<workload>-time.svg` and `<workload>-memory.svg` for every workload with figures.
pub(super) fn write(
    results: &Results,
    analysis: &Analysis,
    dir: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    let mut workloads: Vec<&str> = Vec::new();
    for m in &analysis.metrics {
        if !workloads.contains(&m.workload.as_str()) {
            workloads.push(&m.workload);
        }
    }
    let mut written = Vec::new();
    for workload in workloads {
        let charts = [
            ("time", "wall time", &["wall"][..]),
            (
                "memory",
                "peak resident size",
                &["peak_rss", "max_rss_process"][..],
            ),
        ];
        for (suffix, what, candidates) in charts {
            let Some(name) = candidates.iter().copied().find(|c| {
                analysis
                    .metrics
                    .iter()
                    .any(|m| m.workload == workload && m.metric == *c)
            }) else {
                continue;
            };
            let cells: Vec<&MetricAnalysis> = analysis
                .metrics
                .iter()
                .filter(|m| m.workload == workload && m.metric == name)
                .collect();
            let path = dir.join(format!("{}-{suffix}.svg", slug(workload)));
            let title = format!(
                "{workload}: {what} ({} reps, median and 95% CI; vs {}: ▼ lower ▲ higher ≈ \
                 equivalent ? inconclusive)",
                results.plan.reps, analysis.baseline
            );
            draw(&path, &title, what, name, &cells)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The factor that brings values of `unit` up to `top` into a readable axis unit.
fn axis_scale(unit: &'static str, top: f64) -> (f64, &'static str) {
    match unit {
        "s" if top < 1e-3 => (1e6, "µs"),
        "s" if top < 1.0 => (1e3, "ms"),
        "s" => (1.0, "s"),
        "bytes" if top >= (1u64 << 30) as f64 => (1.0 / (1u64 << 30) as f64, "GiB"),
        "bytes" if top >= (1u64 << 20) as f64 => (1.0 / (1u64 << 20) as f64, "MiB"),
        "bytes" if top >= 1024.0 => (1.0 / 1024.0, "KiB"),
        "bytes" => (1.0, "B"),
        other => (1.0, other),
    }
}

/// One chart: subjects along x, one series per thread count.
fn draw(
    path: &Path,
    title: &str,
    what: &str,
    metric_name: &str,
    cells: &[&MetricAnalysis],
) -> std::io::Result<()> {
    let unit = metric(metric_name).map_or("", |d| d.unit);
    let mut subjects: Vec<&str> = Vec::new();
    for c in cells {
        for s in &c.summaries {
            if !subjects.contains(&s.subject.as_str()) {
                subjects.push(&s.subject);
            }
        }
    }
    let top = cells
        .iter()
        .flat_map(|c| c.summaries.iter())
        .map(|s| s.median.hi.max(s.median.estimate))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (scale, axis_unit) = axis_scale(unit, top);
    // Head room for the legend, one line per series.
    let top = if top > 0.0 {
        top * (1.15 + 0.07 * cells.len() as f64) * scale
    } else {
        1.0
    };
    let n = subjects.len().max(1);
    let width = (110 * n as u32 + 160).max(640);
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(io_error)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top)
        .map_err(io_error)?;
    let y_label = |y: &f64| format!("{y}");
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&y_label)
        .y_desc(format!("{what} ({axis_unit}), {metric_name}"))
        .draw()
        .map_err(io_error)?;

    // Subject names under their slots (plotters' own x labels fall on round numbers, not
    // necessarily on every slot).
    let label_style = ("sans-serif", 14)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, name) in subjects.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, 0.0));
        root.draw(&Text::new(
            name.to_string(),
            (x, y + 8),
            label_style.clone(),
        ))
        .map_err(io_error)?;
    }

    let series = cells.len();
    for (k, cell) in cells.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        // Side by side within a subject's slot.
        let offset = if series > 1 {
            (k as f64 / (series - 1) as f64 - 0.5) * 0.5
        } else {
            0.0
        };
        let points: Vec<(f64, f64, f64, f64)> = cell
            .summaries
            .iter()
            .filter_map(|s| {
                let i = subjects.iter().position(|x| *x == s.subject)?;
                let m = &s.median;
                m.estimate.is_finite().then_some((
                    i as f64 + offset,
                    m.estimate * scale,
                    m.lo * scale,
                    m.hi * scale,
                ))
            })
            .collect();
        let label = format!(
            "{} thread{}",
            cell.threads,
            if cell.threads == 1 { "" } else { "s" }
        );
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(x, y, _, _)| Circle::new((x, y), 4, colour.filled())),
            )
            .map_err(io_error)?
            .label(label)
            .legend(move |(x, y)| Circle::new((x, y), 4, colour.filled()));
        let cap = 0.06;
        chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| p.2.is_finite() && p.3.is_finite())
                    .flat_map(|&(x, _, lo, hi)| {
                        [
                            PathElement::new(vec![(x, lo), (x, hi)], colour.stroke_width(2)),
                            PathElement::new(
                                vec![(x - cap, lo), (x + cap, lo)],
                                colour.stroke_width(2),
                            ),
                            PathElement::new(
                                vec![(x - cap, hi), (x + cap, hi)],
                                colour.stroke_width(2),
                            ),
                        ]
                    }),
            )
            .map_err(io_error)?;
        // Each comparison's verdict over its whisker: ▼ lower, ▲ higher, ≈ equivalent,
        // ? inconclusive (against the baseline, at this thread count).
        let mark_style = ("sans-serif", 13)
            .into_font()
            .color(&colour)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for s in &cell.summaries {
            let Some(c) = cell.comparisons.iter().find(|c| c.subject == s.subject) else {
                continue;
            };
            let Some(i) = subjects.iter().position(|x| *x == s.subject) else {
                continue;
            };
            let y = s.median.hi.max(s.median.estimate);
            if !y.is_finite() {
                continue;
            }
            let (px, py) = chart.backend_coord(&(i as f64 + offset, y * scale));
            root.draw(&Text::new(
                super::summary::mark(c.verdict).to_string(),
                (px, py - 4),
                mark_style.clone(),
            ))
            .map_err(io_error)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(io_error)?;
    root.present().map_err(io_error)?;
    Ok(())
}
