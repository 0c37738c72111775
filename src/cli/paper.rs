//! `alloclab paper <study>`: a study of papers/ reproduced by one command: its compare run,
//! the reports, and `questions.md` with the study's head-to-head answers.

use super::compare::{all_workloads, write_outputs};
use crate::papers;
use alloclab_measure::journal::{self, Header};
use alloclab_measure::resume::{self, Mode};
use alloclab_measure::schema::{Plan, Results};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_measure::{analysis, env, peers, programs, runner};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Options of `alloclab paper`.
#[derive(clap::Args, Debug, Clone)]
pub struct PaperArgs {
    /// The study (without one, the studies are listed: `alloclab paper`); `all`: every study
    /// in turn into papers/<study>/report (quick-report with --quick), skipping those this
    /// build already made, resuming an interrupted one, and refusing a full run from a binary
    /// built on a dirty tree; `check`: whether the committed runs can be published as one set
    /// (one commit, clean trees, no disturbed measurement; exit 1 with what stands in the way).
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
    /// Measure nothing: rewrite the generated block of papers/<study>/README.md (every
    /// question's verdict) from the committed results (report/, else quick-report/); run from
    /// the repository's root. A test fails when a README's block and its results disagree.
    #[arg(long, conflicts_with_all = ["quick", "out", "reps", "seed", "redraw"])]
    pub render_readme: bool,
}

/// The studies of the registry, one line each: name, title, and where it lives.
pub fn list() -> String {
    let mut text = String::from(
        "studies (alloclab paper <study> [--quick]; `alloclab paper all` makes every one):\n",
    );
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
    if name == "all" {
        return all(entries, args);
    }
    if name == "check" {
        return check();
    }
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
    if args.render_readme {
        return render_readme(&study);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("paper-out").join(study.name));
    match run(entries, &study, args, &out) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(n) => fail(format!("{n} measurement(s) failed (listed in report.md)")),
        Err(e) => fail(e),
    }
}

/// One study's run (both passes, when it counts instructions) into `out`: the number of
/// failed measurements.
fn run(
    entries: &[SubjectEntry],
    study: &papers::Study,
    args: &PaperArgs,
    out: &Path,
) -> Result<usize, String> {
    let grid = if args.quick {
        &study.quick
    } else {
        &study.full
    };
    if let Some(make) = study.programs {
        return program_study(study, make, grid, out, args);
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the running binary: {e}"))?;
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
            metrics: probe_metrics(study),
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
    runner::validate(&opts, entries, &workloads)?;
    let mut failed = pass(study, &opts, &workloads, out, args, study.metrics)?;
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
        runner::validate(&opts, entries, &workloads)?;
        failed += pass(study, &opts, &workloads, &dir, args, counted.metrics)?;
        // Each child's callgrind file is read and removed; the emptied directory goes too.
        let _ = std::fs::remove_dir(dir.join("callgrind"));
    }
    Ok(failed)
}

/// Where `paper all` publishes a study: its folder's `report/` (full) or `quick-report/`, or
/// `--out DIR/<study>`.
fn published_dir(study: &papers::Study, args: &PaperArgs) -> Result<PathBuf, String> {
    if let Some(o) = &args.out {
        return Ok(o.join(study.name));
    }
    let folder = Path::new("papers").join(study.name);
    if !folder.is_dir() {
        return Err(format!(
            "{} is not here: run `paper all` from the repository's root, or give --out",
            folder.display()
        ));
    }
    Ok(folder.join(if args.quick { "quick-report" } else { "report" }))
}

/// Whether `dir` already holds a complete run of this build: made at this binary's commit from
/// a clean tree, nothing failed (and, for a study that counts instructions, the same of its
/// instructions pass). `Err`: not up to date, and why.
fn up_to_date(
    study: &papers::Study,
    dir: &Path,
    build: &alloclab_measure::schema::BuildInfo,
) -> Result<(), String> {
    let mut dirs = vec![dir.to_path_buf()];
    if study.instructions.is_some() {
        dirs.push(dir.join("instructions"));
    }
    for d in dirs {
        if d.join(journal::FILE_NAME).is_file() {
            return Err("an interrupted run's journal is there: resuming it".into());
        }
        let r = Results::read(&d.join("results.json"))
            .map_err(|_| format!("no results in {}", d.display()))?;
        let made = &r.environment.build;
        let same = match (&made.commit, &build.commit) {
            (Some(a), Some(b)) => same_source(a, b),
            _ => false,
        };
        if !same || made.dirty != Some(false) {
            return Err(format!(
                "{} was made at {}{}",
                d.display(),
                made.commit.as_deref().unwrap_or("an unknown commit"),
                if made.dirty == Some(false) {
                    ""
                } else {
                    " (not a clean tree)"
                }
            ));
        }
        if !r.failures.is_empty() {
            return Err(format!(
                "{} has {} failure(s)",
                d.display(),
                r.failures.len()
            ));
        }
    }
    Ok(())
}

/// `paper all`: every study in turn, each into its folder (`published_dir`);
/// a study already made by this build is skipped, an interrupted one resumed. A full run
/// publishes, so it needs a binary built from a clean tree; `--quick` takes any.
fn all(entries: &[SubjectEntry], args: &PaperArgs) -> ExitCode {
    if args.redraw.is_some() {
        return fail("--redraw takes one study's directory, not `all`");
    }
    let build = env::build_info();
    if !args.quick && build.dirty != Some(false) {
        return fail(format!(
            "this binary was built from {} tree ({}): a full run is published, so build it \
             from a clean tree (commit or stash first), or use --quick",
            if build.dirty == Some(true) {
                "a dirty"
            } else {
                "an unknown"
            },
            build.commit.as_deref().unwrap_or("unknown commit")
        ));
    }
    let mut times = Vec::new();
    let mut failed = 0;
    for study in papers::all() {
        let dir = match published_dir(&study, args) {
            Ok(d) => d,
            Err(e) => return fail(e),
        };
        match up_to_date(&study, &dir, &build) {
            Ok(()) => {
                eprintln!(
                    "alloclab paper all: {}: up to date in {} (this build, clean tree)",
                    study.name,
                    dir.display()
                );
                times.push((study.name, None));
                continue;
            }
            Err(why) => eprintln!("alloclab paper all: {}: running ({why})", study.name),
        }
        let started = std::time::Instant::now();
        match run(entries, &study, args, &dir) {
            Ok(n) => failed += n,
            Err(e) => return fail(format!("{}: {e}", study.name)),
        }
        times.push((study.name, Some(started.elapsed().as_secs_f64())));
    }
    eprintln!("alloclab paper all: time per study");
    for (name, secs) in times {
        match secs {
            Some(s) => eprintln!("  {name:<20} {:>8.0} s", s),
            None => eprintln!("  {name:<20}  skipped (up to date)"),
        }
    }
    if failed > 0 {
        return fail(format!(
            "{failed} measurement(s) failed (listed in the studies' report.md)"
        ));
    }
    ExitCode::SUCCESS
}

/// Whether commits `a` and `b` build the same binary and studies: they differ at most in the
/// committed results (papers/*/report, papers/*/quick-report), the mutation campaign's
/// outcomes and Markdown. A set of studies is made in pieces, each committed as it finishes,
/// so the commit a later piece is built at differs from the first only so. False when git
/// cannot tell (no repository, an unknown commit).
pub fn same_source(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    std::process::Command::new("git")
        .args(["diff", "--quiet", a, b, "--", "."])
        .args([
            ":(exclude,glob)papers/*/report/**",
            ":(exclude,glob)papers/*/quick-report/**",
            ":(exclude)verify/mutants",
            ":(exclude,glob)**/*.md",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `alloclab paper check`: whether the committed studies can be published as one set (run
/// from the repository's root); exit 1 with what stands in the way.
fn check() -> ExitCode {
    let problems = papers::publication::problems(&papers::all(), Path::new("papers"), &same_source);
    if problems.is_empty() {
        println!(
            "every study has a full and a quick run, built at one commit from a clean tree,              no measurement disturbed"
        );
        return ExitCode::SUCCESS;
    }
    for p in &problems {
        println!("{p}");
    }
    fail(format!(
        "{} thing(s) stand in the way of publishing the set",
        problems.len()
    ))
}

/// `--render-readme`: papers/<study>/README.md's generated block from its committed results.
fn render_readme(study: &papers::Study) -> ExitCode {
    let folder = Path::new("papers").join(study.name);
    let path = folder.join("README.md");
    let readme = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            return fail(format!(
                "{}: {e} (run from the repository's root)",
                path.display()
            ))
        }
    };
    let block = match papers::readme_block(study, &folder) {
        Ok(Some(b)) => b,
        Ok(None) => return fail(format!("{}: no committed results", folder.display())),
        Err(e) => return fail(e),
    };
    let new = papers::with_block(&readme, &block);
    if new == readme {
        eprintln!("{}: up to date", path.display());
    } else if let Err(e) = std::fs::write(&path, new) {
        return fail(format!("{}: {e}", path.display()));
    } else {
        eprintln!("wrote {}", path.display());
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
/// answered on `metrics` (also printed). Returns the number of failed measurements. The run
/// keeps a journal in `out`, so that a killed run is continued by running it again (with the
/// seed it recorded, unless `--seed` says otherwise).
fn pass(
    study: &papers::Study,
    opts: &runner::RunOptions,
    workloads: &[Box<dyn alloclab_measure::workloads::Workload>],
    out: &Path,
    args: &PaperArgs,
    metrics: &[&'static str],
) -> Result<usize, String> {
    let environment = env::capture(std::env::args().collect(), peers::versions());
    let header = Header::new(environment.clone(), runner::plan(opts));
    let mut opened = open_journal(study, header, out, args)?;
    let mut opts = opts.clone();
    opts.plan.seed = opened.journal.header().plan.seed;
    let run = runner::run(&opts, workloads, environment, Some(&mut opened.journal))?;
    let failed = publish(study, &run.results, out, args.latex, metrics)?;
    opened.journal.finish()?;
    Ok(failed)
}

/// The journal of `study`'s run of `header` in `out`: resumed if an interrupted run left one
/// there (with its recorded seed, unless `--seed` is given), else started; what was found is
/// said on standard error.
fn open_journal(
    study: &papers::Study,
    header: Header,
    out: &Path,
    args: &PaperArgs,
) -> Result<resume::Opened, String> {
    let mode = if out.join(journal::FILE_NAME).is_file() {
        Mode::Resume {
            keep_recorded_seed: args.seed.is_none(),
        }
    } else {
        Mode::Fresh
    };
    let waiting = |m: &str| eprintln!("alloclab paper: {m}");
    let opened = resume::open(out, header, mode, waiting)?;
    for note in &opened.notes {
        eprintln!("alloclab paper: {}: {note}", study.name);
    }
    Ok(opened)
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
) -> Result<usize, String> {
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
        shard: None,
    };
    let ran = make(&scratch).and_then(|(programs, preloads)| {
        let grid = programs::ProgramGrid::new(programs, preloads, opts)?;
        journaled_programs(study, grid, out, args)
    });
    let _ = std::fs::remove_dir_all(&scratch);
    ran
}

/// Runs a program study's `grid` as `pass` runs a workload study's: journaled in `out`, so
/// that a killed run is continued by running it again (with the seed it recorded, unless
/// `--seed` says otherwise); its reports and `questions.md` written there. Returns the number
/// of failed measurements.
fn journaled_programs(
    study: &papers::Study,
    mut grid: programs::ProgramGrid,
    out: &Path,
    args: &PaperArgs,
) -> Result<usize, String> {
    // Read before the first program runs: the load before the run is part of it.
    let environment = env::capture(std::env::args().collect(), vec![]);
    let header = Header::new(environment.clone(), grid.plan());
    let mut opened = open_journal(study, header, out, args)?;
    grid.set_seed(opened.journal.header().plan.seed);
    let results = grid.run(environment, Some(&mut opened.journal))?;
    let failed = publish(study, &results, out, args.latex, study.metrics)?;
    opened.journal.finish()?;
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloclab_measure::schema::{BuildInfo, Environment, SCHEMA_VERSION};

    fn made_at(dir: &Path, commit: &str, dirty: bool) {
        std::fs::create_dir_all(dir).unwrap();
        let results = Results {
            schema_version: SCHEMA_VERSION,
            environment: Environment {
                build: BuildInfo {
                    commit: Some(commit.into()),
                    dirty: Some(dirty),
                    rustc: None,
                },
                ..Environment::default()
            },
            plan: Plan::default(),
            measurements: vec![],
            failures: vec![],
        };
        results.write(&dir.join("results.json")).unwrap();
    }

    #[test]
    fn a_study_made_by_this_clean_build_is_up_to_date_and_nothing_else_is() {
        let study = papers::find("run-reuse-order").unwrap();
        assert!(study.instructions.is_none());
        let dir = std::env::temp_dir().join(format!("alloclab-uptodate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let build = BuildInfo {
            commit: Some("abc".into()),
            dirty: Some(false),
            rustc: None,
        };
        assert!(up_to_date(&study, &dir, &build)
            .unwrap_err()
            .contains("no results"));
        made_at(&dir, "abc", false);
        assert_eq!(up_to_date(&study, &dir, &build), Ok(()));
        made_at(&dir, "abc", true);
        assert!(up_to_date(&study, &dir, &build)
            .unwrap_err()
            .contains("not a clean tree"));
        made_at(&dir, "old", false);
        assert!(up_to_date(&study, &dir, &build)
            .unwrap_err()
            .contains("made at old"));
        made_at(&dir, "abc", false);
        std::fs::write(dir.join(journal::FILE_NAME), "").unwrap();
        assert!(up_to_date(&study, &dir, &build)
            .unwrap_err()
            .contains("journal"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
