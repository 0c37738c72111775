//! `alloclab compare`, `report`, `merge` and the hidden measuring child: the command-line side
//! of `measure::runner`.

use alloclab_measure::child::{self, ChildArgs};
use alloclab_measure::journal::Header;
use alloclab_measure::resume::{self, Mode};
use alloclab_measure::runner::{self, RunOptions, Shard};
use alloclab_measure::schema::{Plan, Results};
use alloclab_measure::subjects::{self, HeapConf, SubjectEntry};
use alloclab_measure::workloads::{self, Workload};
use alloclab_measure::{analysis, campaign, env, merge, peers, pilot, programs, report};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The workloads of `--quick`: one trace replay each way, the thread-arena pattern of the
/// 1436541 seed, a larson-like server loop and producer/consumer frees, and the larson loop
/// again with the probe in front for the latency ladder (chosen so that the whole quick run,
/// every subject included, stays within about four minutes on two cores).
pub const QUICK_WORKLOADS: &[&str] = &[
    "replay-python3-stdlib-notouch",
    "replay-python3-stdlib-touch",
    "thread-arena",
    "larson",
    "producer-consumer",
    "larson+probe",
];
/// The thread counts of `--quick`.
pub const QUICK_THREADS: &[usize] = &[1, 2];
/// The amount of work of `--quick`, relative to the full workloads.
pub const QUICK_SCALE: f64 = 0.1;
/// Measured rounds of `--quick`.
pub const QUICK_REPS: usize = 7;
/// Measured rounds of a full run: enough for a bootstrap interval and a rank test to separate
/// differences of a few percent on a quiet machine (`--pilot` says how many a target needs).
pub const FULL_REPS: usize = 10;

fn thread_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}`: a thread count is a whole number from 1 to 1024"
        )),
    }
}

/// Options of `alloclab compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The CI-sized grid (every subject, five workloads at a tenth of the work and larson again
    /// with the probe in front, 7 rounds, threads 1 and 2): a few minutes on two cores.
    #[arg(long)]
    pub quick: bool,
    /// Directory for results.json, report.md, results.csv, the charts (and table.tex).
    #[arg(long, default_value = "compare-out")]
    pub out: PathBuf,
    /// Subjects, comma separated (default: every alloclab config, registered config and peer).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub subjects: Option<Vec<String>>,
    /// Workloads, comma separated (default: all; with --quick a small set). A name with
    /// `+probe` after it (`larson+probe`) is that workload measured with the probe in front,
    /// reported as a workload of its own, with latency figures and chart.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub workloads: Option<Vec<String>>,
    /// Measured rounds (process invocations per cell), after the warm-up.
    #[arg(long)]
    pub reps: Option<usize>,
    /// Warm-up rounds, run first and left out of the analysis.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// The subject every other is compared with.
    #[arg(long, default_value = "system")]
    pub baseline: String,
    /// Thread counts for threaded workloads, comma separated (default 1,2,4,8; quick 1,2).
    #[arg(long, value_delimiter = ',', num_args = 1.., value_parser = thread_count)]
    pub threads: Option<Vec<usize>>,
    /// Seed of the shuffled order, the environment paddings and the workloads (default: from
    /// the clock, or with --shard a hash of the plan's options, the same for every shard;
    /// always recorded in results.json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Amount of work relative to the full workloads (default 1; quick 0.1).
    #[arg(long)]
    pub scale: Option<f64>,
    /// Also write table.tex, a LaTeX table per workload.
    #[arg(long)]
    pub latex: bool,
    /// Count instructions, data reads and writes and cache misses per operation under
    /// valgrind's callgrind (slow: about 50 times).
    #[arg(long)]
    pub instructions: bool,
    /// Count the memory system calls (mmap, munmap, madvise, mremap, mprotect, brk) of each
    /// measurement's process under `strace -f -c` (needs strace; its stops slow the calls
    /// counted, so the run's times include strace's cost: docs/MEASURING.md).
    #[arg(long, conflicts_with = "instructions")]
    pub syscalls: bool,
    /// Metrics to measure and report, comma separated (default: all but the probe's). The
    /// probe's, time inside the allocator timed around every call per thread, put it in front
    /// of every subject: alloc_ns_per_thread, alloc_ns_per_thread_max, alloc_ns_per_op,
    /// alloc_calls, lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p999_ns, lat_p9999_ns,
    /// lat_max_ns (docs/MEASURING.md).
    #[arg(long, value_delimiter = ',', num_args = 1.., value_parser = metric_name)]
    pub metrics: Vec<String>,
    /// Equivalence margins: `M` for every metric or `METRIC=M`, comma separated, as fractions
    /// (`0.02`: a ratio within ±2% is no difference that matters); defaults per metric in
    /// docs/MEASURING.md. Recorded in results.json; `report --margin` redraws with others.
    #[arg(long, value_delimiter = ',', num_args = 1.., value_parser = analysis::parse_margin)]
    pub margin: Vec<String>,
    /// Pilot mode: measure the variance between invocations and between iterations inside one
    /// and say how many of each a target precision needs (writes pilot.md).
    #[arg(long)]
    pub pilot: bool,
    /// Iterations inside each process in pilot mode.
    #[arg(long, default_value_t = 5)]
    pub pilot_iterations: usize,
    /// The confidence interval's target half-width in pilot mode, relative to the median.
    #[arg(long, default_value_t = 0.02)]
    pub pilot_target: f64,
    /// Run a deterministic slice i/n of the schedule (combine the parts with `alloclab merge`);
    /// with --programs too.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// Continue the run interrupted in --out: keep what its journal (or results.json) holds
    /// and measure only what is missing (the same options; the seed is the recorded one); with
    /// --programs too.
    #[arg(long, conflicts_with = "pilot")]
    pub resume: bool,
    /// Measure installed programs (python3, lua5.4, sqlite3, perl) and a start-up program
    /// (`malloc(64)`, 100 processes per measurement; needs `cc`) under LD_PRELOAD of Debian's
    /// allocators and liballoclab.so instead of the built-in workloads; --workloads picks
    /// among them (`startup`, `python3`, ...).
    #[arg(long)]
    pub programs: bool,
    /// With --programs: one more subject, liballoclab.so under ALLOCLAB_CONF=CONF, named NAME
    /// (repeatable), e.g. `--preload-conf light=config:lifo-tcache,tcache_check:light`.
    #[arg(long, value_name = "NAME=CONF")]
    pub preload_conf: Vec<programs::ConfSubject>,
    /// With --programs: one more subject, the shared library PATH preloaded, named NAME
    /// (repeatable): an allocator of your own build, e.g. `--preload je-dev=/opt/je/lib/libjemalloc.so.2`.
    #[arg(long, value_name = "NAME=PATH")]
    pub preload: Vec<programs::LibrarySubject>,
    /// One more in-process subject: an alloclab config with run-time options, named NAME
    /// (repeatable), e.g. `--heap-conf light=config:lifo-tcache,tcache_check:light`; keys
    /// config, tcache_check, tcache_max, narenas, dirty_max, purge, huge_cache, as in
    /// ALLOCLAB_CONF.
    #[arg(long, value_name = "NAME=CONF", value_parser = parse_heap_conf)]
    pub heap_conf: Vec<String>,
    /// Measure a measurement again, up to this many times, while other processes take more
    /// than 5% of the machine during it (the least disturbed attempt is kept; one still
    /// disturbed is flagged, and the report's first line counts them; docs/MEASURING.md).
    #[arg(long, default_value_t = alloclab_measure::disturbance::RETRIES)]
    pub retry_disturbed: usize,
    /// Kill a measurement after this many seconds (recorded as a failure).
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Options of `alloclab report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// A directory holding results.json (from compare, merge or paper).
    pub dir: PathBuf,
    /// Also write table.tex.
    #[arg(long)]
    pub latex: bool,
    /// Equivalence margins that replace the recorded ones (as `compare --margin`).
    #[arg(long, value_delimiter = ',', num_args = 1.., value_parser = analysis::parse_margin)]
    pub margin: Vec<String>,
}

/// Options of `alloclab merge`.
#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// Directories of `compare --shard` runs, each holding results.json.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged results and reports go.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write table.tex.
    #[arg(long)]
    pub latex: bool,
}

fn fail(cmd: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("alloclab {cmd}: {e}");
    ExitCode::FAILURE
}

pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// Every workload: the built-in ones.
pub fn all_workloads() -> Vec<Box<dyn Workload>> {
    workloads::all()
}

/// The run `args` asks for.
pub fn options(
    entries: &[SubjectEntry],
    workloads: &[Box<dyn Workload>],
    args: &CompareArgs,
) -> Result<RunOptions, String> {
    let subjects = args
        .subjects
        .clone()
        .unwrap_or_else(|| entries.iter().map(|e| e.name.clone()).collect());
    let workload_names = match (&args.workloads, args.quick) {
        (Some(w), _) => w.clone(),
        (None, true) => QUICK_WORKLOADS
            .iter()
            // Under callgrind, or with the probe in every measurement already, the probed
            // copy is refused or redundant.
            .filter(|w| {
                let probe_everywhere = args.metrics.iter().any(|m| analysis::is_probe_metric(m));
                !(workloads::probed(w).1 && (args.instructions || probe_everywhere))
            })
            .map(|s| s.to_string())
            .collect(),
        (None, false) => workloads.iter().map(|w| w.name().to_string()).collect(),
    };
    let threads = args.threads.clone().unwrap_or_else(|| {
        if args.quick {
            QUICK_THREADS.to_vec()
        } else {
            vec![1, 2, 4, 8]
        }
    });
    let scale = args
        .scale
        .unwrap_or(if args.quick { QUICK_SCALE } else { 1.0 });
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(format!("--scale {scale}: must be positive"));
    }
    let reps = args
        .reps
        .unwrap_or(if args.quick { QUICK_REPS } else { FULL_REPS });
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the running binary to re-execute: {e}"))?;
    let mut opts = RunOptions {
        plan: Plan {
            subjects,
            workloads: workload_names,
            threads,
            reps,
            warmup: args.warmup,
            baseline: args.baseline.clone(),
            seed: args.seed.unwrap_or_else(clock_seed),
            scale,
            quick: args.quick,
            instructions: args.instructions,
            syscalls: args.syscalls,
            shards: Vec::new(),
            heap_confs: args.heap_conf.clone(),
            metrics: args.metrics.clone(),
            margins: args.margin.clone(),
        },
        shard: args.shard,
        iterations: if args.pilot {
            args.pilot_iterations.max(3)
        } else {
            1
        },
        exe,
        timeout: Duration::from_secs(args.timeout.max(1)),
        progress: !args.no_progress,
        scratch: args.out.join("callgrind"),
        retry_disturbed: args.retry_disturbed,
    };
    if args.seed.is_none() && args.shard.is_some() {
        // Each shard's clock would give it its own schedule, and merge would refuse them.
        opts.plan.seed = campaign::derived_seed(&opts.plan);
    }
    runner::validate(&opts, entries, workloads)?;
    if !opts.plan.subjects.contains(&args.baseline) {
        return Err(format!(
            "the baseline `{}` is not among the subjects ({}); name it in --subjects or pick \
             another with --baseline",
            args.baseline,
            opts.plan.subjects.join(", ")
        ));
    }
    Ok(opts)
}

/// Writes results.json and every report into `dir`; prints what was written.
pub fn write_outputs(results: &Results, dir: &Path, latex: bool) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let json = dir.join("results.json");
    results
        .write(&json)
        .map_err(|e| format!("{}: {e}", json.display()))?;
    let written = report::write_all(results, dir, &report::ReportOptions { latex })
        .map_err(|e| format!("{}: writing the reports: {e}", dir.display()))?;
    eprintln!("wrote {}", json.display());
    for p in written {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

/// `--heap-conf`'s value, checked when the command line is read; kept as text, which is what
/// the measuring children are passed.
fn metric_name(s: &str) -> Result<String, String> {
    if analysis::metric(s).is_some() {
        return Ok(s.to_string());
    }
    let names: Vec<&str> = analysis::METRICS.iter().map(|m| m.name).collect();
    Err(format!(
        "unknown metric `{s}`; the metrics: {}",
        names.join(", ")
    ))
}

fn parse_heap_conf(s: &str) -> Result<String, String> {
    s.parse::<HeapConf>().map(|_| s.to_string())
}

/// The `compare` command.
pub fn compare(entries: &[SubjectEntry], args: &CompareArgs) -> ExitCode {
    if !args.preload_conf.is_empty() && !args.programs {
        return fail(
            "compare",
            "--preload-conf names a liballoclab.so setting to preload: it needs --programs",
        );
    }
    if !args.preload.is_empty() && !args.programs {
        return fail(
            "compare",
            "--preload names a library to preload into programs: it needs --programs",
        );
    }
    if args.syscalls && args.programs {
        return fail(
            "compare",
            "--syscalls counts the system calls of the built-in workloads' measuring children; \
             --programs does not run them (run a program under `strace -f -c` yourself)",
        );
    }
    if !args.heap_conf.is_empty() && args.programs {
        return fail(
            "compare",
            "--heap-conf makes an in-process subject, which --programs does not measure; \
             preload the same setting with --preload-conf",
        );
    }
    let entries = match subjects::with_heap_confs(entries, &args.heap_conf) {
        Ok(e) => e,
        Err(e) => return fail("compare", e),
    };
    let entries = &entries[..];
    if args.programs {
        return match compare_programs(entries, args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail("compare", e),
        };
    }
    let workloads = all_workloads();
    let mut opts = match options(entries, &workloads, args) {
        Ok(o) => o,
        Err(e) => return fail("compare", e),
    };
    if let Some(warning) =
        analysis::plan_reachability(&opts.plan, analysis::AnalysisOptions::default().alpha)
    {
        eprintln!("alloclab compare: {warning}");
    }
    let environment = env::capture(std::env::args().collect(), peers::versions());
    let header = Header::new(environment.clone(), runner::plan(&opts));
    let mut opened = match open_journal(args, header) {
        Ok(o) => o,
        Err(e) => return fail("compare", e),
    };
    opts.plan.seed = opened.journal.header().plan.seed;
    let run = match runner::run(&opts, &workloads, environment, Some(&mut opened.journal)) {
        Ok(r) => r,
        Err(e) => return fail("compare", e),
    };
    if args.pilot {
        let advice = pilot::advise(&run, args.pilot_target);
        if let Err(e) = std::fs::create_dir_all(&args.out)
            .and_then(|()| std::fs::write(args.out.join("pilot.md"), &advice))
        {
            return fail("compare", format!("{}: {e}", args.out.display()));
        }
        print!("{advice}");
    }
    if let Err(e) = write_outputs(&run.results, &args.out, args.latex) {
        return fail("compare", e);
    }
    if let Err(e) = opened.journal.finish() {
        return fail("compare", e);
    }
    if !run.results.failures.is_empty() {
        eprintln!(
            "alloclab compare: {} measurement(s) failed (listed in report.md)",
            run.results.failures.len()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The journal of a run of `header` in `--out`: continued with `--resume`, else started
/// (`resume::open`); what was found is said on standard error, and so is a seed derived for
/// shards.
fn open_journal(args: &CompareArgs, header: Header) -> Result<resume::Opened, String> {
    let mode = if args.resume {
        Mode::Resume {
            keep_recorded_seed: args.seed.is_none(),
        }
    } else {
        Mode::Fresh
    };
    let waiting = |m: &str| eprintln!("alloclab compare: {m}");
    let opened = resume::open(&args.out, header, mode, waiting)?;
    for note in &opened.notes {
        eprintln!("alloclab compare: {note}");
    }
    if args.seed.is_none() && args.shard.is_some() {
        eprintln!(
            "alloclab compare: seed {} (derived from the plan: every shard of these options \
             has it)",
            opened.journal.header().plan.seed
        );
    }
    Ok(opened)
}

/// `compare --programs`: the programs grid, journaled in `--out` as the built-in workloads'.
/// Failed measurements are listed in the report, not in the exit status.
fn compare_programs(entries: &[SubjectEntry], args: &CompareArgs) -> Result<(), String> {
    let mut grid = programs::ProgramGrid::found(
        entries,
        &args.preload_conf,
        &args.preload,
        args_to_programs(args),
    )?;
    if args.seed.is_none() && args.shard.is_some() {
        // Each shard's clock would give it its own schedule, and merge would refuse them.
        grid.set_seed(campaign::derived_seed(&grid.plan()));
    }
    // Read before the first program runs: the load before the run is part of it.
    let environment = env::capture(std::env::args().collect(), vec![]);
    let mut opened = open_journal(args, Header::new(environment.clone(), grid.plan()))?;
    grid.set_seed(opened.journal.header().plan.seed);
    let results = grid.run(environment, Some(&mut opened.journal))?;
    write_outputs(&results, &args.out, args.latex)?;
    opened.journal.finish()
}

fn args_to_programs(args: &CompareArgs) -> programs::ProgramOptions {
    programs::ProgramOptions {
        reps: args.reps.unwrap_or(if args.quick { 2 } else { 5 }),
        seed: args.seed.unwrap_or_else(clock_seed),
        subjects: args.subjects.clone(),
        baseline: args.baseline.clone(),
        quick: args.quick,
        progress: !args.no_progress,
        workloads: args.workloads.clone(),
        metrics: args.metrics.clone(),
        margins: args.margin.clone(),
        shard: args.shard,
    }
}

/// The `report` command.
pub fn report(args: &ReportArgs) -> ExitCode {
    let path = args.dir.join("results.json");
    let mut results = match Results::read(&path) {
        Ok(r) => r,
        Err(e) => return fail("report", e),
    };
    if !args.margin.is_empty() {
        results.plan.margins = args.margin.clone();
    }
    match report::write_all(
        &results,
        &args.dir,
        &report::ReportOptions { latex: args.latex },
    ) {
        Ok(written) => {
            for p in written {
                eprintln!("wrote {}", p.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("report", format!("{}: {e}", args.dir.display())),
    }
}

/// The `merge` command.
pub fn merge(args: &MergeArgs) -> ExitCode {
    let mut parts = Vec::new();
    for dir in &args.dirs {
        match Results::read(&dir.join("results.json")) {
            Ok(r) => parts.push(r),
            Err(e) => return fail("merge", e),
        }
    }
    let names = || {
        args.dirs
            .iter()
            .enumerate()
            .map(|(k, d)| format!("part {} is {}", k + 1, d.display()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let merged = match merge::merge(parts) {
        Ok(m) => m,
        Err(e) => return fail("merge", format!("{e}\n({})", names())),
    };
    for (copy, first) in &merged.duplicates {
        eprintln!(
            "alloclab merge: {} is the same result as {}: counted once",
            args.dirs[copy - 1].display(),
            args.dirs[first - 1].display()
        );
    }
    match write_outputs(&merged.results, &args.out, args.latex) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("merge", e),
    }
}

/// The hidden measuring child.
pub fn child(entries: &[SubjectEntry], args: &ChildArgs) -> ExitCode {
    let entries = match subjects::with_heap_confs(entries, &args.heap_conf) {
        Ok(e) => e,
        Err(e) => return fail(child::CHILD_COMMAND, e),
    };
    match child::run_child(&entries, &all_workloads(), args) {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(child::CHILD_COMMAND, e),
        },
        Err(e) => fail(child::CHILD_COMMAND, e),
    }
}
