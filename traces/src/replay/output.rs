//! A replay's report: text for people, JSON for machines (same figures; bytes in JSON are
//! exact, in text MiB). docs/ARCHITECTURE.md ("Statistics") defines every figure, among them
//! the fragmentation: `1 - allocated / active`, a percentage here and a fraction in JSON.

use super::{HeapStats, Report};
use crate::trace::{Form, Func, Trace};
use alloclab_core::size_class::class_size;
use serde_json::{Map, Value as Json};
use std::io::{self, Write};

/// Where the replayed trace came from.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// Its path (or how it was named).
    pub path: &'a str,
    /// Whether it is synthetic (`None`: not known, a user's file).
    pub synthetic: Option<bool>,
    /// The command that made it, if known.
    pub made_by: Option<&'a str>,
}

fn mib(b: Option<usize>) -> String {
    match b {
        Some(b) => format!("{:.2} MiB", b as f64 / (1024.0 * 1024.0)),
        None => "n/a".into(),
    }
}

fn percent(f: Option<f64>) -> String {
    f.map_or_else(|| "n/a".into(), |f| format!("{:.1} %", f * 100.0))
}

fn form_name(form: Option<Form>) -> &'static str {
    match form {
        Some(Form::Raw) => "raw",
        Some(Form::Munged) => "munged",
        None => "no pointers",
    }
}

fn calls_text(trace: &Trace) -> String {
    let counts = trace.counts();
    Func::ALL
        .iter()
        .filter(|f| counts[f.index()] > 0)
        .map(|f| format!("{} {}", f.name(), counts[f.index()]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes the report for people.
pub fn write_text(
    w: &mut dyn Write,
    source: &Source<'_>,
    trace: &Trace,
    r: &Report,
) -> io::Result<()> {
    let origin = match (source.synthetic, source.made_by) {
        (Some(true), Some(how)) => format!(" (synthetic, made by: {how})"),
        (Some(true), None) => " (synthetic)".into(),
        (Some(false), Some(how)) => format!(" (recorded: {how})"),
        _ => String::new(),
    };
    writeln!(w, "trace      {}{origin}", source.path)?;
    writeln!(
        w,
        "           pid {} ({} pid{} in the trace), {} thread{}, {} lines, {}",
        trace.pid,
        trace.pids.len(),
        if trace.pids.len() == 1 { "" } else { "s" },
        trace.threads.len(),
        if trace.threads.len() == 1 { "" } else { "s" },
        trace.lines,
        form_name(trace.form),
    )?;
    writeln!(w, "           calls: {}", calls_text(trace))?;
    if trace.failed_in_recording > 0 || trace.skipped > 0 {
        writeln!(
            w,
            "           not replayed: {} allocations that failed when recorded, {} bad lines skipped",
            trace.failed_in_recording, trace.skipped
        )?;
    }
    writeln!(w, "allocator  {}: {}", r.allocator, r.describe.trim_end())?;
    writeln!(
        w,
        "replay     {}, {}",
        if r.options.threads {
            format!("{} threads (one per recorded thread)", r.threads)
        } else {
            "single-threaded".into()
        },
        if r.options.touch { "touch" } else { "no touch" }
    )?;
    writeln!(
        w,
        "time       {:.6} s for {} calls: {:.2} M calls/s{}",
        r.elapsed.as_secs_f64(),
        r.calls,
        r.calls_per_second() / 1e6,
        if r.failed > 0 {
            format!(" ({} allocations returned null)", r.failed)
        } else {
            String::new()
        }
    )?;
    let added = |v: Option<usize>| match v {
        Some(_) => format!(" (+{})", mib(v)),
        None => String::new(),
    };
    writeln!(
        w,
        "RSS        baseline {}; peak {}{}; end {}{}{}",
        mib(r.rss.baseline),
        mib(r.rss.peak),
        added(r.rss.peak_added()),
        mib(r.rss.end),
        added(r.rss.end_added()),
        if r.peak_reset {
            ""
        } else {
            " (the kernel would not restart the peak: peak not measured)"
        }
    )?;
    let h = &r.heap;
    // Fragmentation: 1 - allocated / active (docs/ARCHITECTURE.md, "Statistics").
    writeln!(
        w,
        "heap       mapped {}, active {}, allocated {}, fragmentation {}",
        mib(h.mapped),
        mib(h.active),
        mib(h.allocated),
        percent(h.fragmentation())
    )?;
    writeln!(
        w,
        "           dirty {}, metadata {}, resident estimate {}",
        mib(h.dirty),
        mib(h.metadata),
        mib(h.resident_estimate)
    )?;
    if let Some(bins) = &h.bins {
        let mut table = String::new();
        // Writing into a String cannot fail.
        let _ = alloclab_core::stats::write_bin_table(bins, &mut table, "           ");
        write!(w, "bins{}", &table[4..])?;
    }
    if !r.snapshots.is_empty() {
        writeln!(
            w,
            "snapshots  {:>10} {:>12} {:>12} {:>12} {:>12} {:>7}",
            "at call", "rss", "mapped", "active", "allocated", "frag"
        )?;
        for s in &r.snapshots {
            writeln!(
                w,
                "           {:>10} {:>12} {:>12} {:>12} {:>12} {:>7}",
                s.op,
                mib(s.rss),
                mib(s.heap.mapped),
                mib(s.heap.active),
                mib(s.heap.allocated),
                percent(s.heap.fragmentation())
            )?;
        }
    }
    match &r.check {
        Ok(()) => writeln!(
            w,
            "check      the allocator's invariants hold after the replay"
        )?,
        Err(e) => writeln!(w, "check      FAILED: {e}")?,
    }
    Ok(())
}

/// A JSON object from `(name, value)` pairs, in that order.
fn object<const N: usize>(fields: [(&str, Json); N]) -> Json {
    Json::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Map<String, Json>>(),
    )
}

fn heap_json(h: &HeapStats) -> Vec<(String, Json)> {
    let fields = [
        ("mapped", h.mapped.into()),
        ("active", h.active.into()),
        ("allocated", h.allocated.into()),
        ("dirty", h.dirty.into()),
        ("metadata", h.metadata.into()),
        ("resident_estimate", h.resident_estimate.into()),
        ("fragmentation", h.fragmentation().into()),
    ];
    fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// The report for machines (`{:#}` prints it indented).
pub fn json(source: &Source<'_>, trace: &Trace, r: &Report) -> Json {
    let counts = trace.counts();
    let calls = Json::Object(
        Func::ALL
            .iter()
            .map(|f| (f.name().to_string(), counts[f.index()].into()))
            .collect::<Map<String, Json>>(),
    );
    let bins: Vec<Json> = r
        .heap
        .bins
        .iter()
        .flat_map(|bins| bins.iter().enumerate())
        .filter(|(_, b)| b.allocations > 0)
        .map(|(i, b)| {
            object([
                ("size", class_size(i).into()),
                ("runs", b.runs.into()),
                ("nonfull_runs", b.nonfull_runs.into()),
                ("live", b.live.into()),
                ("allocations", b.allocations.into()),
                ("frees", b.frees.into()),
            ])
        })
        .collect();
    let snapshots: Vec<Json> = r
        .snapshots
        .iter()
        .map(|s| {
            let mut fields = vec![
                ("op".to_string(), s.op.into()),
                ("rss".to_string(), s.rss.into()),
            ];
            fields.extend(heap_json(&s.heap));
            Json::Object(fields.into_iter().collect())
        })
        .collect();
    let pids: Vec<Json> = trace
        .pids
        .iter()
        .map(|p| object([("pid", p.pid.into()), ("lines", p.lines.into())]))
        .collect();
    object([
        (
            "trace",
            object([
                ("source", source.path.into()),
                ("synthetic", source.synthetic.into()),
                ("made_by", source.made_by.into()),
                ("pid", trace.pid.into()),
                ("pids", pids.into()),
                ("threads", trace.threads.len().into()),
                ("lines", trace.lines.into()),
                ("form", form_name(trace.form).into()),
                ("calls", calls),
                ("failed_in_recording", trace.failed_in_recording.into()),
                ("skipped_bad_lines", trace.skipped.into()),
                ("live_at_end", trace.live_at_end.into()),
            ]),
        ),
        ("allocator", r.allocator.as_str().into()),
        ("describe", r.describe.as_str().into()),
        ("touch", r.options.touch.into()),
        ("threaded", r.options.threads.into()),
        ("threads", r.threads.into()),
        ("calls", r.calls.into()),
        ("failed_allocations", r.failed.into()),
        ("seconds", r.elapsed.as_secs_f64().into()),
        ("calls_per_second", r.calls_per_second().into()),
        (
            "rss",
            object([
                ("baseline", r.rss.baseline.into()),
                ("peak", r.rss.peak.into()),
                ("end", r.rss.end.into()),
                ("peak_added", r.rss.peak_added().into()),
                ("end_added", r.rss.end_added().into()),
            ]),
        ),
        (
            "heap",
            Json::Object(heap_json(&r.heap).into_iter().collect()),
        ),
        ("bins", bins.into()),
        ("snapshots", snapshots.into()),
        (
            "check",
            match &r.check {
                Ok(()) => object([("ok", true.into()), ("error", Json::Null)]),
                Err(e) => object([("ok", false.into()), ("error", e.as_str().into())]),
            },
        ),
    ])
}
