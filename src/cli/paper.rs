//! `alloclab paper <study>`: a study of papers/ reproduced by one command: its compare run,
//! the reports, and `questions.md` with the study's head-to-head answers.

use super::compare::{all_workloads, write_outputs};
use crate::papers;
use alloclab_measure::schema::{Plan, Results};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_measure::{analysis, env, peers, programs, runner};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Options of `alloclab paper`.
#[derive(clap::Args, Debug, Clone)]
pub struct PaperArgs {
    /// The study (without one, the studies are listed: `alloclab paper`).
    pub study: Option<String>,
    /// The CI-sized grid (fewer workloads, threads and rounds).
    #[arg(long)]
    pub quick: bool,
    /// Where results and reports go (default: paper-out/<study>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Measured rounds (default: the study's).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Seed of the shuffles, paddings and workloads (default: from the clock; recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also write table.tex.
    #[arg(long)]
    pub latex: bool,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Measure nothing: redraw the reports and `questions.md` of the study's run in DIR from
    /// its results.json (and DIR/instructions/results.json, if the study counts instructions)
    /// with this build's analysis, e.g. `--redraw papers/<study>/report`.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["quick", "out", "reps", "seed"])]
    pub redraw: Option<PathBuf>,
}

/// The studies of the registry, one line each: name, title, and where it lives.
pub fn list() -> String {
    let mut text = String::from("studies (alloclab paper <study> [--quick]):\n");
    for s in papers::all() {
        text.push_str(&format!(
            "  {:<18} {}  (papers/{}/)\n",
            s.name, s.title, s.name
        ));
    }
    text
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("alloclab paper: {e}");
    ExitCode::FAILURE
}

/// The `paper` command. `entries` must include the studies' variants.
pub fn main(entries: &[SubjectEntry], args: &PaperArgs) -> ExitCode {
    let Some(name) = &args.study else {
        print!("{}", list());
        return ExitCode::SUCCESS;
    };
    let Some(study) = papers::find(name) else {
        let names: Vec<&str> = papers::all().iter().map(|s| s.name).collect();
        return fail(format!(
            "unknown study `{name}` (studies: {})",
            names.join(", ")
        ));
    };
    if let Some(dir) = &args.redraw {
        return redraw(&study, dir, args.latex);
    }
    let grid = if args.quick {
        &study.quick
    } else {
        &study.full
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("paper-out").join(study.name));
    if let Some(make) = study.programs {
        return program_study(&study, make, grid, &out, args);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find the running binary: {e}")),
    };
    let opts = runner::RunOptions {
        plan: Plan {
            subjects: study.subjects.iter().map(|s| s.to_string()).collect(),
            workloads: grid.workloads.iter().map(|s| s.to_string()).collect(),
            threads: grid.threads.clone(),
            reps: args.reps.unwrap_or(grid.reps),
            warmup: 1,
            baseline: study.baseline.to_string(),
            seed: args.seed.unwrap_or_else(super::compare::clock_seed),
            scale: grid.scale,
            quick: args.quick,
            instructions: false,
            syscalls: false,
            shards: Vec::new(),
            heap_confs: Vec::new(),
            metrics: probe_metrics(&study),
            margins: Vec::new(),
        },
        shard: None,
        iterations: 1,
        exe,
        timeout: Duration::from_secs(600),
        progress: !args.no_progress,
        scratch: out.join("callgrind"),
        retry_disturbed: alloclab_measure::disturbance::RETRIES,
    };
    let workloads = all_workloads();
    if let Err(e) = runner::validate(&opts, entries, &workloads) {
        return fail(e);
    }
    let mut failed = 0;
    match pass(&study, &opts, &workloads, &out, args.latex, study.metrics) {
        Ok(n) => failed += n,
        Err(e) => return fail(e),
    }
    if let Some(counted) = &study.instructions {
        // Callgrind's counts need no warm-up round; callgrind runs one thread at a time, so
        // the pass has its own thread counts (more only where threads change the work).
        let dir = out.join("instructions");
        let opts = runner::RunOptions {
            plan: Plan {
                workloads: counted.workloads.iter().map(|s| s.to_string()).collect(),
                threads: counted.threads.clone(),
                reps: args.reps.unwrap_or(if args.quick {
                    counted.quick_reps
                } else {
                    counted.full_reps
                }),
                warmup: 0,
                scale: opts.plan.scale * counted.scale,
                instructions: true,
                // Callgrind's pass counts; the probe's timing stays in the first pass.
                metrics: Vec::new(),
                ..opts.plan
            },
            scratch: dir.join("callgrind"),
            ..opts
        };
        if let Err(e) = runner::validate(&opts, entries, &workloads) {
            return fail(e);
        }
        match pass(&study, &opts, &workloads, &dir, args.latex, counted.metrics) {
            Ok(n) => failed += n,
            Err(e) => return fail(e),
        }
        // Each child's callgrind file is read and removed; the emptied directory goes too.
        let _ = std::fs::remove_dir(dir.join("callgrind"));
    }
    if failed > 0 {
        return fail(format!(
            "{failed} measurement(s) failed (listed in report.md)"
        ));
    }
    ExitCode::SUCCESS
}

/// `--redraw DIR`: the reports and answers of a finished run, from its results alone.
fn redraw(study: &papers::Study, dir: &Path, latex: bool) -> ExitCode {
    let mut passes = vec![(dir.to_path_buf(), study.metrics)];
    if let Some(counted) = &study.instructions {
        let sub = dir.join("instructions");
        if sub.join("results.json").is_file() {
            passes.push((sub, counted.metrics));
        }
    }
    for (dir, metrics) in passes {
        let results = match Results::read(&dir.join("results.json")) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        if let Some(s) = results
            .plan
            .subjects
            .iter()
            .find(|s| !study.subjects.contains(&s.as_str()) && !study.baseline.eq(s.as_str()))
        {
            return fail(format!(
                "{}: subject `{s}` is not one of study {}'s: not its results",
                dir.display(),
                study.name
            ));
        }
        if let Err(e) = publish(study, &results, &dir, latex, metrics) {
            return fail(e);
        }
    }
    ExitCode::SUCCESS
}

/// A study asking about time inside the allocator measures with the probe and reports the
/// metrics its questions are on; any other study, the default set (empty).
fn probe_metrics(study: &papers::Study) -> Vec<String> {
    if !study.metrics.iter().any(|m| analysis::is_probe_metric(m)) {
        return Vec::new();
    }
    study.metrics.iter().map(|m| m.to_string()).collect()
}

/// One compare run of `study` with `opts`: results and reports in `out`, and `questions.md`
/// answered on `metrics` (also printed). Returns the number of failed measurements.
fn pass(
    study: &papers::Study,
    opts: &runner::RunOptions,
    workloads: &[Box<dyn alloclab_measure::workloads::Workload>],
    out: &Path,
    latex: bool,
    metrics: &[&'static str],
) -> Result<usize, String> {
    let environment = env::capture(std::env::args().collect(), peers::versions());
    let run = runner::run(opts, workloads, environment, None)?;
    publish(study, &run.results, out, latex, metrics)
}

/// Writes `results`' reports and `questions.md` (answered on `metrics`, also printed) to
/// `out`. Returns the number of failed measurements.
fn publish(
    study: &papers::Study,
    results: &Results,
    out: &Path,
    latex: bool,
    metrics: &[&'static str],
) -> Result<usize, String> {
    write_outputs(results, out, latex)?;
    let answers = papers::answer(study, results, metrics);
    let path = out.join("questions.md");
    std::fs::write(&path, &answers).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    print!("{answers}");
    Ok(results.failures.len())
}

/// A study of whole programs: made in a scratch directory, run under each preload as
/// `compare --programs` runs them.
fn program_study(
    study: &papers::Study,
    make: papers::ProgramSet,
    grid: &papers::Grid,
    out: &Path,
    args: &PaperArgs,
) -> ExitCode {
    let scratch =
        std::env::temp_dir().join(format!("alloclab-{}-{}", study.name, std::process::id()));
    let opts = programs::ProgramOptions {
        reps: args.reps.unwrap_or(grid.reps),
        seed: args.seed.unwrap_or_else(super::compare::clock_seed),
        subjects: Some(study.subjects.iter().map(|s| s.to_string()).collect()),
        baseline: study.baseline.to_string(),
        quick: args.quick,
        progress: !args.no_progress,
        workloads: None,
        metrics: probe_metrics(study),
        margins: Vec::new(),
    };
    let ran = make(&scratch)
        .and_then(|(programs, preloads)| programs::run_with(&programs, preloads, opts));
    let _ = std::fs::remove_dir_all(&scratch);
    let results = match ran {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    match publish(study, &results, out, args.latex, study.metrics) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(n) => fail(format!("{n} measurement(s) failed (listed in report.md)")),
        Err(e) => fail(e),
    }
}
