//! `alloclab paper <study>`: a study of papers/ reproduced by one command: its compare run,
//! the reports, and `questions.md` with the study's head-to-head answers.

use super::compare::{all_workloads, write_outputs};
use crate::measure::subjects::SubjectEntry;
use crate::measure::{env, peers, runner};
use crate::papers;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Options of `alloclab paper`.
#[derive(clap::Args, Debug, Clone)]
pub struct PaperArgs {
    /// The study: run-reuse-order, run-reuse-tcache or thread-arenas.
    pub study: String,
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
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("alloclab paper: {e}");
    ExitCode::FAILURE
}

/// The `paper` command. `entries` must include the studies' variants.
pub fn main(entries: &[SubjectEntry], args: &PaperArgs) -> ExitCode {
    let Some(study) = papers::find(&args.study) else {
        let names: Vec<&str> = papers::all().iter().map(|s| s.name).collect();
        return fail(format!(
            "unknown study `{}` (studies: {})",
            args.study,
            names.join(", ")
        ));
    };
    let grid = if args.quick {
        &study.quick
    } else {
        &study.full
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("paper-out").join(study.name));
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find the running binary: {e}")),
    };
    let opts = runner::RunOptions {
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
        shard: None,
        iterations: 1,
        exe,
        timeout: Duration::from_secs(600),
        progress: !args.no_progress,
        scratch: out.join("callgrind"),
    };
    let workloads = all_workloads();
    if let Err(e) = runner::validate(&opts, entries, &workloads) {
        return fail(e);
    }
    let environment = env::capture(std::env::args().collect(), peers::versions());
    let run = match runner::run(&opts, &workloads, environment) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if let Err(e) = write_outputs(&run.results, &out, args.latex) {
        return fail(e);
    }
    let answers = papers::answer(&study, &run.results);
    let path = out.join("questions.md");
    if let Err(e) = std::fs::write(&path, &answers) {
        return fail(format!("{}: {e}", path.display()));
    }
    eprintln!("wrote {}", path.display());
    print!("{answers}");
    if !run.results.failures.is_empty() {
        return fail(format!(
            "{} measurement(s) failed (listed in report.md)",
            run.results.failures.len()
        ));
    }
    ExitCode::SUCCESS
}
