//! Replays of the bundled traces (recorded from real programs, and one synthetic), with and
//! without touching the allocated bytes, through the same replayer as `alloclab replay`.
//! Parsing happens before the measured part; the measured time is the replay's own.
//!
//! The self-check comes after each replay, outside the measured time: every allocation the
//! trace leaves live must be non-null, none may overlap another, and, when touching, each
//! must still hold the byte the replay wrote into all of it; then they are freed. Any
//! allocation that returned null during the replay, or a consistency check the allocator
//! fails, is an error too.

use super::{Outcome, Params, Workload};
use alloclab_traces::replay::{replay_keeping_live, Options, TOUCH_BYTE};
use alloclab_traces::subject::Subject;
use alloclab_traces::trace::bundled::Bundled;
use alloclab_traces::trace::{Func, ParseOptions, Trace, NO_SLOT};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A bundled trace replayed, touching or not.
pub struct TraceReplay {
    name: String,
    describe: String,
    trace: &'static Bundled,
    touch: bool,
    /// Whole replays at full size.
    reps: u32,
}

/// The name of a bundled trace: its file name without `.log.zst`.
pub fn trace_name(b: &Bundled) -> &'static str {
    let file = b.path.rsplit('/').next().unwrap_or(b.path);
    file.split(".log").next().unwrap_or(file)
}

impl TraceReplay {
    /// Replays of `trace`, `reps` whole replays at full size.
    pub fn new(trace: &'static Bundled, touch: bool, reps: u32) -> TraceReplay {
        let mode = if touch { "touch" } else { "notouch" };
        let stem = trace_name(trace);
        TraceReplay {
            name: format!("replay-{stem}-{mode}"),
            describe: format!(
                "replay of the bundled trace {stem} ({}), {}",
                if trace.synthetic {
                    "synthetic"
                } else {
                    "recorded from the program"
                },
                if touch {
                    "writing every allocated byte"
                } else {
                    "touching nothing"
                }
            ),
            trace,
            touch,
            reps,
        }
    }
}

/// The bundled trace, parsed once per process: the touch and no-touch replays share it, and
/// a process running several workloads (tests, the benchmarks) parses each trace once.
pub(super) fn parsed(b: &'static Bundled) -> Result<Arc<Trace>, String> {
    static PARSED: OnceLock<Mutex<HashMap<&'static str, Arc<Trace>>>> = OnceLock::new();
    let cache = PARSED.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = cache.get(b.path) {
        return Ok(Arc::clone(t));
    }
    let t = Arc::new(
        b.parse(&ParseOptions::default())
            .map_err(|e| format!("the bundled trace {} does not parse: {e}", b.path))?,
    );
    cache.insert(b.path, Arc::clone(&t));
    Ok(t)
}

/// Checks the allocations a replay left live, then frees them; returns how many.
fn check_and_free_live(
    s: &dyn Subject,
    trace: &Trace,
    live: &[usize],
    touch: bool,
    what: &str,
) -> Result<u64, String> {
    // The requested size of what each slot last received.
    let mut size = vec![0u64; live.len()];
    for op in trace.ops() {
        if !matches!(op.func, Func::Free | Func::JemallocStats) && op.slot != NO_SLOT {
            size[op.slot as usize] = op.request();
        }
    }
    let mut blocks: Vec<(usize, usize)> = live
        .iter()
        .zip(&size)
        .filter(|(&p, _)| p != 0)
        .map(|(&p, &n)| (p, usize::try_from(n).unwrap_or(usize::MAX)))
        .collect();
    blocks.sort_unstable();
    for w in blocks.windows(2) {
        let ((a, n), (b, m)) = (w[0], w[1]);
        if a.saturating_add(n) > b {
            return Err(format!(
                "{what}: live allocations overlap: {n} bytes at {a:#x} and {m} bytes at {b:#x}"
            ));
        }
    }
    if touch {
        for &(p, n) in &blocks {
            // SAFETY: a live allocation of at least `n` bytes (the replay wrote all of them).
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
            if let Some(i) = bytes.iter().position(|&b| b != TOUCH_BYTE) {
                return Err(format!(
                    "{what}: the allocation of {n} bytes at {p:#x} has byte {i} = {:#04x}, \
                     written as {TOUCH_BYTE:#04x}: the allocator overwrote memory in use",
                    bytes[i]
                ));
            }
        }
    }
    for &(p, _) in &blocks {
        // SAFETY: each live allocation of the replay, freed once.
        unsafe { s.free(p as *mut u8) };
    }
    Ok(blocks.len() as u64)
}

impl Workload for TraceReplay {
    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> &str {
        &self.describe
    }

    fn threaded(&self) -> bool {
        false
    }

    fn prepare(&self) -> Result<(), String> {
        parsed(self.trace).map(drop)
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let what = self.name.as_str();
        let full = parsed(self.trace).map_err(|e| format!("{what}: {e}"))?;
        let full = full.as_ref();
        // The amount of work in replays: whole ones, then a prefix for the fraction left.
        let amount = params.scale * f64::from(self.reps);
        let whole = amount.floor() as u64;
        let part = ((amount - amount.floor()) * full.ops().len() as f64).round() as usize;
        let prefix = (part > 0).then(|| full.prefix(part));
        let runs = (0..whole)
            .map(|_| full)
            .chain(prefix.as_ref())
            .collect::<Vec<&Trace>>();
        let runs = if runs.is_empty() { vec![full] } else { runs };
        let options = Options {
            touch: self.touch,
            threads: false,
        };
        let mut ops = 0;
        let mut elapsed = Duration::ZERO;
        for trace in runs {
            let (report, live) =
                replay_keeping_live(subject, trace, options).map_err(|e| format!("{what}: {e}"))?;
            if report.failed > 0 {
                return Err(format!(
                    "{what}: {} allocations returned null during the replay",
                    report.failed
                ));
            }
            report
                .check
                .map_err(|e| format!("{what}: the allocator's consistency check: {e}"))?;
            ops += report.calls;
            elapsed += report.elapsed;
            check_and_free_live(subject, trace, &live, self.touch, what)?;
        }
        Ok(Outcome { ops, elapsed })
    }
}
