//! `<workload>-<threads>t-latency.svg`: the latency ladder of every subject, for runs with the
//! probe's figures. Latency on a logarithmic x axis; on y, the percentile as "nines"
//! (`-log10(1 - q)`: p50 at 0.3, p90 at 1, p99 at 2, p99.9 at 3, p99.99 at 4, and the slowest
//! call on top), so the tail gets as much room as the body. One line per subject through the
//! medians over invocations of each percentile.

use super::charts::{cells, invocations, io_error, subjects};
use super::format::slug;
use crate::schema::{Ladder, Results};
use crate::stats::median;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// The rungs: a name and its height.
const RUNGS: [(&str, f64); 6] = [
    ("p50", 0.301),
    ("p90", 1.0),
    ("p99", 2.0),
    ("p99.9", 3.0),
    ("p99.99", 4.0),
    ("max", 5.0),
];

fn rungs(l: &Ladder) -> [f64; 6] {
    [l.p50, l.p90, l.p99, l.p999, l.p9999, l.max]
}

/// Per subject (plan order), the median over its measured invocations of each rung.
pub(super) fn ladders(
    results: &Results,
    workload: &str,
    threads: usize,
) -> Vec<(String, [f64; 6])> {
    let mut out = Vec::new();
    for s in subjects(results) {
        let mine: Vec<[f64; 6]> = invocations(results, s, workload, threads)
            .filter_map(|m| m.metrics.probe.as_ref().map(|p| rungs(&p.latency)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut l = [0.0; 6];
        for (k, v) in l.iter_mut().enumerate() {
            let finite: Vec<f64> = mine
                .iter()
                .map(|r| r[k])
                .filter(|x| x.is_finite())
                .collect();
            *v = median(&finite);
        }
        out.push((s.to_string(), l));
    }
    out
}

/// Writes one latency chart per workload and thread count that has probe figures.
pub(super) fn write(results: &Results, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (workload, threads) in cells(results, |m| m.metrics.probe.is_some()) {
        let lines = ladders(results, workload, threads);
        let resolution = results
            .measurements
            .iter()
            .filter(|m| m.workload == workload && m.threads == threads)
            .filter_map(|m| m.metrics.probe.as_ref())
            .map(|p| p.resolution_ns)
            .fold(0.0, f64::max);
        let path = dir.join(format!("{}-{threads}t-latency.svg", slug(workload)));
        draw(
            &path,
            workload,
            threads,
            results.plan.reps,
            &lines,
            resolution,
        )?;
        written.push(path);
    }
    Ok(written)
}

/// A ladder's points; a rung at 0 (no slower than the probe's own cost, which is subtracted)
/// sits at the axis's left edge, `floor`, rather than falling off a log scale.
fn points(l: &[f64; 6], floor: f64) -> Vec<(f64, f64)> {
    l.iter()
        .zip(RUNGS)
        .filter(|(v, _)| v.is_finite())
        .map(|(v, (_, h))| (v.max(floor), h))
        .collect()
}

fn draw(
    path: &Path,
    workload: &str,
    threads: usize,
    reps: usize,
    lines: &[(String, [f64; 6])],
    resolution: f64,
) -> std::io::Result<()> {
    let values = lines.iter().flat_map(|(_, l)| l.iter().copied());
    let positive: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
    let lo = positive.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = positive.iter().copied().fold(0.0, f64::max);
    let (lo, hi) = if positive.is_empty() {
        (1.0, 10.0)
    } else {
        ((lo / 1.5).max(0.1), hi * 1.5)
    };
    // The timer's resolution, when recorded, is drawn as a dashed line and the axis starts
    // below it: a rung left of the line is one the timer cannot tell from zero.
    let (lo, hi) = if resolution > 0.0 {
        (lo.min(resolution / 1.5), hi.max(resolution * 3.0))
    } else {
        (lo, hi)
    };
    let root = SVGBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(io_error)?;
    let title = format!(
        "{workload}, {threads} thread{}: latency of one call (median of {reps} invocations)",
        if threads == 1 { "" } else { "s" }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..5.6)
        .map_err(io_error)?;
    let rung_name = |y: &f64| {
        RUNGS
            .iter()
            .find(|(_, h)| (h - y).abs() < 0.05)
            .map_or(String::new(), |(n, _)| n.to_string())
    };
    chart
        .configure_mesh()
        .y_labels(60)
        .y_label_formatter(&rung_name)
        .x_desc(
            "ns inside the allocator (log scale; the probe's cost subtracted, calls within it \
             at the left edge)",
        )
        .y_desc("percentile")
        .draw()
        .map_err(io_error)?;
    if resolution > 0.0 {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(resolution, 0.0), (resolution, 5.6)],
                4,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(io_error)?
            .label(format!(
                "timer resolution, {}",
                super::format::format_value(resolution, "ns")
            ))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    }
    for (k, (name, l)) in lines.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        let points = points(l, lo);
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            .map_err(io_error)?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(io_error)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(io_error)?;
    root.present().map_err(io_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ProbeMetrics;

    #[test]
    fn each_rung_is_the_median_over_invocations_and_the_chart_is_drawn() {
        let mut r = crate::test_fixture::results(3);
        let mut k = 0.0;
        for m in r.measurements.iter_mut() {
            k += 1.0;
            m.metrics.probe = Some(ProbeMetrics {
                latency: Ladder {
                    p50: 10.0 * k,
                    p90: 20.0 * k,
                    p99: 40.0 * k,
                    p999: 80.0 * k,
                    p9999: 160.0 * k,
                    max: 1000.0 * k,
                },
                resolution_ns: 10.0,
                ..ProbeMetrics::default()
            });
        }
        let m0 = &r.measurements[0];
        let (w, t, s) = (m0.workload.clone(), m0.threads, m0.subject.clone());
        let mut p50s: Vec<f64> = r
            .measurements
            .iter()
            .filter(|m| !m.warmup && m.subject == s && m.workload == w && m.threads == t)
            .map(|m| m.metrics.probe.as_ref().unwrap().latency.p50)
            .collect();
        p50s.sort_by(f64::total_cmp);
        let lines = ladders(&r, &w, t);
        let mine = lines.iter().find(|(n, _)| *n == s).unwrap();
        assert_eq!(mine.1[0], median(&p50s));
        assert!(mine.1.windows(2).all(|p| p[0] < p[1]), "{:?}", mine.1);

        let dir = std::env::temp_dir().join(format!("alloclab-latency-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = write(&r, &dir).unwrap();
        assert!(!files.is_empty());
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("p99.9") && svg.contains(&s),
            "rung and subject named"
        );
        assert!(
            svg.contains("timer resolution, 10.0 ns"),
            "resolution marked"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_rung_within_the_probes_cost_is_drawn_at_the_left_edge() {
        let l = [0.0, 0.0, 10.0, f64::NAN, 300.0, 5000.0];
        let p = points(&l, 6.0);
        assert_eq!(
            p,
            vec![
                (6.0, 0.301),
                (6.0, 1.0),
                (10.0, 2.0),
                (300.0, 4.0),
                (5000.0, 5.0)
            ]
        );
    }
}
