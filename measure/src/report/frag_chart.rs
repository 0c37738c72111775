//! `<workload>-<threads>t-fragmentation-over-calls.svg`: fragmentation as the heap ages, over
//! the allocator calls made so far (not time: a slow allocator is not older for being slow),
//! one line per subject, for workloads that count their live bytes and calls (the aging
//! workloads). At each sample, fragmentation is the resident bytes the run added over the live
//! bytes, minus one (`memory.rs`). Each invocation is read at 50 evenly spaced call counts
//! (the last sample at or before each); a subject's line is the median over its invocations,
//! with a band from the lowest to the highest.

use super::charts::{band_point, cells, draw_bands, invocations, io_error, subjects, BandLine};
use super::format::slug;
use crate::schema::{MemoryOverTime, Results};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Points on the calls axis.
const POINTS: usize = 50;

/// (calls made, fragmentation) at each sample of one invocation where anything was live.
type Samples = Vec<(u64, f64)>;

/// An invocation's samples where anything was live.
fn samples(m: &MemoryOverTime) -> Option<Samples> {
    let f = m.fragmentation.as_ref()?;
    if m.calls_curve.len() != m.curve.len() || m.live_curve.len() != m.curve.len() {
        return None;
    }
    let v: Samples = m
        .curve
        .iter()
        .zip(&m.live_curve)
        .zip(&m.calls_curve)
        .filter(|&((_, &live), _)| live > 0)
        .map(|((&(_, rss), &live), &calls)| {
            let added = rss.saturating_sub(f.base_bytes + f.own_bytes) as f64;
            (calls, added / live as f64 - 1.0)
        })
        .collect();
    (!v.is_empty()).then_some(v)
}

/// The value at `calls`: the last sample at or before it; `None` before the first sample or
/// past the invocation's last call.
fn at(v: &[(u64, f64)], calls: f64) -> Option<f64> {
    if calls > v.last()?.0 as f64 {
        return None;
    }
    v.iter()
        .take_while(|p| p.0 as f64 <= calls)
        .last()
        .map(|p| p.1)
}

/// Per subject: at each point some invocation reaches, the median and range of its
/// invocations' fragmentation there.
fn bands(results: &Results, workload: &str, threads: usize) -> (f64, Vec<BandLine>) {
    let runs: Vec<(String, Vec<Samples>)> = subjects(results)
        .into_iter()
        .map(|s| {
            let v = invocations(results, s, workload, threads)
                .filter_map(|m| m.metrics.memory.as_ref().and_then(samples))
                .collect();
            (s.to_string(), v)
        })
        .collect();
    let end = runs
        .iter()
        .flat_map(|(_, v)| v.iter().filter_map(|c| c.last().map(|p| p.0)))
        .max()
        .unwrap_or(0) as f64;
    let mut out = Vec::new();
    for (s, curves) in runs {
        if curves.is_empty() {
            continue;
        }
        let band: Vec<_> = (0..POINTS)
            .filter_map(|i| {
                let x = end * i as f64 / (POINTS - 1) as f64;
                let v: Vec<f64> = curves.iter().filter_map(|c| at(c, x)).collect();
                band_point(x, &v)
            })
            .collect();
        if !band.is_empty() {
            out.push((s, band));
        }
    }
    (end, out)
}

/// Writes one chart per workload and thread count whose runs counted live bytes and calls.
pub(super) fn write(results: &Results, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let counted = |m: &crate::schema::Measurement| {
        m.metrics
            .memory
            .as_ref()
            .is_some_and(|x| x.fragmentation.is_some() && !x.calls_curve.is_empty())
    };
    for (workload, threads) in cells(results, counted) {
        let (end, lines) = bands(results, workload, threads);
        if lines.is_empty() || end <= 0.0 {
            continue;
        }
        let path = dir.join(format!(
            "{}-{threads}t-fragmentation-over-calls.svg",
            slug(workload)
        ));
        draw(&path, workload, threads, end, &lines)?;
        written.push(path);
    }
    Ok(written)
}

fn draw(
    path: &Path,
    workload: &str,
    threads: usize,
    end: f64,
    lines: &[BandLine],
) -> std::io::Result<()> {
    let points = || lines.iter().flat_map(|(_, b)| b.iter());
    let top = points().map(|p| p.3).fold(0.0, f64::max).max(0.1);
    let bottom = points().map(|p| p.2).fold(0.0, f64::min);
    let million = 1e6;
    let root = SVGBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(io_error)?;
    let title = format!(
        "{workload}, {threads} thread{}: fragmentation over allocator calls (median, band: min to max)",
        if threads == 1 { "" } else { "s" }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..end / million, bottom * 1.1..top * 1.15)
        .map_err(io_error)?;
    chart
        .configure_mesh()
        .x_desc("allocator calls made (millions)")
        .y_desc("resident added / live - 1")
        .draw()
        .map_err(io_error)?;
    let in_millions: Vec<BandLine> = lines
        .iter()
        .map(|(name, band)| {
            let band = band
                .iter()
                .map(|p| (p.0 / million, p.1, p.2, p.3))
                .collect();
            (name.clone(), band)
        })
        .collect();
    draw_bands(&mut chart, &in_millions, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(io_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Fragmentation;

    /// A curve of (rss, live, calls) samples over a base of 1000 resident bytes.
    fn memory(points: &[(u64, u64, u64)]) -> MemoryOverTime {
        MemoryOverTime {
            curve: points
                .iter()
                .enumerate()
                .map(|(i, p)| (i as f64, p.0))
                .collect(),
            live_curve: points.iter().map(|p| p.1).collect(),
            calls_curve: points.iter().map(|p| p.2).collect(),
            fragmentation: Some(Fragmentation {
                base_bytes: 1000,
                ..Fragmentation::default()
            }),
            ..MemoryOverTime::default()
        }
    }

    #[test]
    fn fragmentation_is_read_at_call_counts() {
        // Nothing live at first (skipped), then 1000 added over 500 live (1), then over 1000 (0).
        let m = memory(&[(1000, 0, 0), (2000, 500, 100), (2000, 1000, 300)]);
        let v = samples(&m).unwrap();
        assert_eq!(v, vec![(100, 1.0), (300, 0.0)]);
        assert_eq!(at(&v, 50.0), None);
        assert_eq!(at(&v, 100.0), Some(1.0));
        assert_eq!(at(&v, 299.0), Some(1.0));
        assert_eq!(at(&v, 300.0), Some(0.0));
        assert_eq!(at(&v, 301.0), None);
        // Without calls (a file from before they were counted): no curve.
        let old = MemoryOverTime {
            calls_curve: Vec::new(),
            ..m
        };
        assert!(samples(&old).is_none());
    }

    #[test]
    fn a_chart_is_written_per_cell_with_counted_runs() {
        let mut r = crate::test_fixture::results(3);
        for m in r.measurements.iter_mut() {
            m.metrics.memory = Some(memory(&[(2000, 500, 1_000_000), (3000, 1000, 2_000_000)]));
        }
        let dir = std::env::temp_dir().join(format!("alloclab-fragchart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = write(&r, &dir).unwrap();
        assert!(!files.is_empty());
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("allocator calls made"), "{svg}");
        let m0 = r.measurements.iter().find(|m| !m.warmup).unwrap();
        let (end, lines) = bands(&r, &m0.workload, m0.threads);
        assert_eq!(end, 2e6);
        // At the last point every invocation reads 2000 added over 1000 live.
        let last = lines[0].1.last().unwrap();
        assert_eq!((last.0, last.1), (2e6, 1.0));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
