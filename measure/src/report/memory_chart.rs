//! `<workload>-<threads>t-memory-over-time.svg`: the resident size over the run, one line per
//! subject. Each invocation's curve is put on normalized time (0 at the start of the work, 1 at
//! its end) and read at 50 evenly spaced points; a subject's line is the median over its
//! invocations at each point, with a band from the lowest to the highest.

use super::charts::{band_point, cells, draw_bands, invocations, io_error, subjects, BandLine};
use super::format::slug;
use crate::schema::{MemoryOverTime, Results};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Points on normalized time.
const POINTS: usize = 50;

/// The curve read at `POINTS` evenly spaced moments of normalized time (each the last sample
/// at or before it).
fn normalized(m: &MemoryOverTime) -> Option<Vec<f64>> {
    let end = m.curve.last()?.0;
    let mut out = Vec::with_capacity(POINTS);
    let mut k = 0;
    for i in 0..POINTS {
        let t = end * i as f64 / (POINTS - 1) as f64;
        while k + 1 < m.curve.len() && m.curve[k + 1].0 <= t {
            k += 1;
        }
        out.push(m.curve[k].1 as f64);
    }
    Some(out)
}

/// Normalized time at point `i`.
fn at_point(i: usize) -> f64 {
    i as f64 / (POINTS - 1) as f64
}

/// Per subject: at each point of normalized time, the median and range of its invocations'
/// resident bytes.
pub(super) fn bands(results: &Results, workload: &str, threads: usize) -> Vec<BandLine> {
    let mut out = Vec::new();
    for s in subjects(results) {
        let curves: Vec<Vec<f64>> = invocations(results, s, workload, threads)
            .filter_map(|m| m.metrics.memory.as_ref().and_then(normalized))
            .collect();
        if curves.is_empty() {
            continue;
        }
        let band = (0..POINTS)
            .filter_map(|i| {
                let v: Vec<f64> = curves.iter().map(|c| c[i]).collect();
                band_point(at_point(i), &v)
            })
            .collect();
        out.push((s.to_string(), band));
    }
    out
}

/// Writes one chart per workload and thread count with memory curves.
pub(super) fn write(results: &Results, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (workload, threads) in cells(results, |m| m.metrics.memory.is_some()) {
        let lines = bands(results, workload, threads);
        let path = dir.join(format!(
            "{}-{threads}t-memory-over-time.svg",
            slug(workload)
        ));
        draw(&path, workload, threads, &lines)?;
        written.push(path);
    }
    Ok(written)
}

fn draw(path: &Path, workload: &str, threads: usize, lines: &[BandLine]) -> std::io::Result<()> {
    let top = lines
        .iter()
        .flat_map(|(_, b)| b.iter().map(|p| p.3))
        .fold(0.0, f64::max)
        .max(1.0);
    let mib = (1u64 << 20) as f64;
    let root = SVGBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(io_error)?;
    let title = format!(
        "{workload}, {threads} thread{}: resident size over the run (median, band: min to max)",
        if threads == 1 { "" } else { "s" }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..1f64, 0f64..top / mib * 1.15)
        .map_err(io_error)?;
    chart
        .configure_mesh()
        .x_desc("normalized time (0: start of the work, 1: its end)")
        .y_desc("RSS (MiB)")
        .draw()
        .map_err(io_error)?;
    let in_mib: Vec<BandLine> = lines
        .iter()
        .map(|(name, band)| {
            let band = band
                .iter()
                .map(|p| (p.0, p.1 / mib, p.2 / mib, p.3 / mib))
                .collect();
            (name.clone(), band)
        })
        .collect();
    draw_bands(&mut chart, &in_mib, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(io_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(f64, u64)]) -> MemoryOverTime {
        MemoryOverTime {
            curve: points.to_vec(),
            ..MemoryOverTime::default()
        }
    }

    #[test]
    fn curves_of_any_length_meet_on_normalized_time() {
        // Twice as long, the same shape: the same normalized curve.
        let a = normalized(&curve(&[(0.0, 10), (0.5, 30), (1.0, 20)])).unwrap();
        let b = normalized(&curve(&[(0.0, 10), (1.0, 30), (2.0, 20)])).unwrap();
        assert_eq!(a, b);
        assert_eq!((a[0], a[POINTS / 2], a[POINTS - 1]), (10.0, 30.0, 20.0));
        assert!(normalized(&curve(&[])).is_none());
    }

    #[test]
    fn a_band_is_the_median_and_range_over_invocations() {
        let mut r = crate::test_fixture::results(3);
        let mut k = 0;
        for m in r.measurements.iter_mut() {
            k += 1;
            m.metrics.memory = Some(curve(&[(0.0, 100 * k), (1.0, 200 * k)]));
        }
        let m0 = r.measurements.iter().find(|m| !m.warmup).unwrap();
        let (w, t, s) = (m0.workload.clone(), m0.threads, m0.subject.clone());
        let starts: Vec<f64> = r
            .measurements
            .iter()
            .filter(|m| !m.warmup && m.subject == s && m.workload == w && m.threads == t)
            .map(|m| m.metrics.memory.as_ref().unwrap().curve[0].1 as f64)
            .collect();
        let lines = bands(&r, &w, t);
        let band = &lines.iter().find(|(n, _)| *n == s).unwrap().1;
        let lo = starts.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = starts.iter().copied().fold(0.0, f64::max);
        assert_eq!((band[0].2, band[0].3), (lo, hi));
        assert!(band[0].2 <= band[0].1 && band[0].1 <= band[0].3);

        let dir = std::env::temp_dir().join(format!("alloclab-memchart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = write(&r, &dir).unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("normalized time") && svg.contains(&s));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
