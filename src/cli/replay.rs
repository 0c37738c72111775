//! `alloclab replay`: replays an allocation trace in process against one named config and
//! reports time, calls per second, resident sizes and the heap's statistics.

use alloclab_measure::subjects::SubjectEntry;
use alloclab_traces::replay::{self, Options, Source};
use alloclab_traces::trace::{self, bundled, ParseOptions, Pid, Trace, TraceError};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `alloclab replay`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    /// The trace: a raw or munged logalloc log, plain, gzip or zstd; `-` reads standard input.
    /// Without it, the bundled trace (see traces/README.md).
    pub trace: Option<PathBuf>,
    /// The allocator to replay against: a named config, a peer (system, jemalloc, ...) or a
    /// registered config (one per process: resident sizes are per process).
    #[arg(long, default_value = "lifo")]
    pub config: String,
    /// Write the requested bytes of every allocation ("touch"); the default leaves memory
    /// untouched ("no touch"), as logalloc-replay.
    #[arg(long)]
    pub touch: bool,
    /// Replay each recorded thread on its own thread (cross-thread frees wait for their
    /// allocations); the default replays every call on one thread, in trace order.
    #[arg(long)]
    pub threads: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// The process to replay, as written in the trace (default: the first).
    #[arg(long)]
    pub pid: Option<u64>,
    /// Count and skip bad lines instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
}

/// The trace's name, whether it is synthetic and how it was made (when known), and the trace.
fn load(
    args: &ReplayArgs,
    options: &ParseOptions,
) -> (
    String,
    Option<bool>,
    Option<&'static str>,
    Result<Trace, TraceError>,
) {
    match &args.trace {
        Some(path) => (
            path.display().to_string(),
            None,
            None,
            trace::open(path, options),
        ),
        None => {
            let b = bundled::DEFAULT;
            (
                b.path.to_string(),
                Some(b.synthetic),
                Some(b.made_by),
                b.parse(options),
            )
        }
    }
}

/// The `replay` command, choosing `--config` among `entries`.
pub fn main(entries: &[SubjectEntry], args: &ReplayArgs) -> ExitCode {
    let Some(entry) = entries.iter().find(|e| e.name == args.config) else {
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        eprintln!(
            "alloclab replay: unknown config `{}` (known: {})",
            args.config,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    let options = ParseOptions {
        pid: args.pid.map_or(Pid::First, Pid::Is),
        skip_bad: args.skip_bad,
    };
    let (name, synthetic, made_by, parsed) = load(args, &options);
    let trace = match parsed {
        Ok(t) => t,
        Err(e) => {
            eprintln!("alloclab replay: {name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if trace.skipped > 0 {
        eprintln!(
            "alloclab replay: {name}: skipped {} bad line{}; the first {}:",
            trace.skipped,
            if trace.skipped == 1 { "" } else { "s" },
            trace.skipped_examples.len()
        );
        for e in &trace.skipped_examples {
            eprintln!("  {e}");
        }
    }
    if trace.ops().is_empty() {
        eprintln!(
            "alloclab replay: {name}: no calls to replay for pid {}",
            trace.pid
        );
        return ExitCode::FAILURE;
    }
    let source = Source {
        path: &name,
        synthetic,
        made_by,
    };
    let replay_options = Options {
        touch: args.touch,
        threads: args.threads,
    };
    let subject = (entry.make)();
    let report = match replay::replay(&*subject, &trace, replay_options) {
        Ok(mut r) => {
            r.allocator = entry.name.clone();
            r
        }
        Err(e) => {
            eprintln!("alloclab replay: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{:#}", replay::json(&source, &trace, &report))
    } else {
        replay::write_text(&mut out, &source, &trace, &report)
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        eprintln!("alloclab replay: writing the report: {e}");
        return ExitCode::FAILURE;
    }
    if let Err(e) = &report.check {
        eprintln!(
            "alloclab replay: {}: invariant broken after the replay: {e}",
            report.allocator
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
