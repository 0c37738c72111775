//! The built-in workloads' grid: (subject × workload × threads) cells, each invocation one
//! fresh measuring child process (`child.rs`), run by the one grid runner (`grid.rs`).

use super::child::{ChildArgs, ChildReport, ChildResult, Spawn};
use super::grid::{self, Grid, Invocation, Invoke, Taken};
use super::journal::Journal;
use super::schema::Plan;
use super::subjects::SubjectEntry;
use super::workloads::Workload;
use std::path::PathBuf;
use std::time::Duration;

pub use super::grid::{schedule, Cell, Run, Shard, Slot, MAX_ENV_PAD};

/// A whole `compare` run: what results.json records as its plan, and how to carry it out.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Subjects, workloads, threads, rounds, baseline, seed, scale (`plan.shards` is filled
    /// from `shard` when the results are written).
    pub plan: Plan,
    /// Run only this slice of the schedule.
    pub shard: Option<Shard>,
    /// Runs of the workload inside each process (1 except in pilot mode).
    pub iterations: usize,
    /// The binary children run (normally `current_exe()`).
    pub exe: PathBuf,
    /// Kill a child after this long.
    pub timeout: Duration,
    /// Show a progress bar on standard error.
    pub progress: bool,
    /// Scratch directory for callgrind's files (and strace's summaries in `strace/` under it).
    pub scratch: PathBuf,
    /// Attempts after the first at a measurement that comes back disturbed (other processes
    /// took more than `disturbance::THRESHOLD` of the machine while it ran): the least
    /// disturbed attempt is kept. Warm-up rounds are not measured again.
    pub retry_disturbed: usize,
}

/// The cells in canonical order: workloads, then thread counts (one, 1, for workloads that
/// ignore threads), then subjects.
pub fn cells(opts: &RunOptions, workloads: &[Box<dyn Workload>]) -> Result<Vec<Cell>, String> {
    let mut out = Vec::new();
    for w in &opts.plan.workloads {
        let base = super::workloads::probed(w).0;
        let workload = workloads
            .iter()
            .find(|x| x.name() == base)
            .ok_or_else(|| format!("unknown workload `{w}`"))?;
        let threads: Vec<usize> = if workload.threaded() {
            opts.plan.threads.clone()
        } else {
            vec![1]
        };
        for &t in &threads {
            for s in &opts.plan.subjects {
                out.push(Cell {
                    subject: s.clone(),
                    workload: w.clone(),
                    threads: t,
                });
            }
        }
    }
    Ok(out)
}

/// Checks names against what exists, with a clear message.
pub fn validate(
    opts: &RunOptions,
    entries: &[SubjectEntry],
    workloads: &[Box<dyn Workload>],
) -> Result<(), String> {
    for s in &opts.plan.subjects {
        if !entries.iter().any(|e| &e.name == s) {
            if super::peers::C_PEERS.contains(&s.as_str()) {
                return Err(format!(
                    "`{s}` is a peer built from C sources, left out of this build: rebuild with \
                     the `peers` feature (the default; `cargo run --release -- compare ...`, \
                     several minutes the first time) or leave `{s}` out of --subjects"
                ));
            }
            let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
            return Err(format!(
                "unknown subject `{s}` (known: {})",
                names.join(", ")
            ));
        }
    }
    for w in &opts.plan.workloads {
        let (base, _) = super::workloads::probed(w);
        if !workloads.iter().any(|x| x.name() == base) {
            let names: Vec<&str> = workloads.iter().map(|x| x.name()).collect();
            return Err(format!(
                "unknown workload `{w}` (known: {}; any of them with `{}` after it is measured \
                 with the probe in front)",
                names.join(", "),
                super::workloads::PROBED
            ));
        }
    }
    let probed_workload = opts
        .plan
        .workloads
        .iter()
        .any(|w| super::workloads::probed(w).1);
    if opts.plan.instructions && (opts.plan.probe() || probed_workload) {
        return Err(
            "--instructions and the probe (its metrics, or a workload named `...+probe`) cannot \
             share a run: callgrind would count the probe's timing inside the allocator's calls \
             (run them as two compares)"
                .into(),
        );
    }
    if opts.plan.instructions && opts.plan.syscalls {
        return Err(
            "--instructions and --syscalls cannot share a run: one tool traces a process at a \
             time (run them as two compares)"
                .into(),
        );
    }
    if opts.plan.subjects.is_empty() || opts.plan.workloads.is_empty() {
        return Err("nothing to measure: no subjects or no workloads".into());
    }
    if opts.plan.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    if opts.plan.threads.is_empty() || opts.plan.threads.contains(&0) {
        return Err("--threads needs counts of at least 1".into());
    }
    Ok(())
}

/// The plan as recorded in results.json.
pub fn plan(opts: &RunOptions) -> Plan {
    grid::recorded_plan(&opts.plan, opts.shard)
}

/// Runs the schedule (`grid::run`), each invocation a measuring child.
pub fn run(
    opts: &RunOptions,
    workloads: &[Box<dyn Workload>],
    environment: super::schema::Environment,
    journal: Option<&mut Journal>,
) -> Result<Run, String> {
    let grid = Grid {
        plan: opts.plan.clone(),
        shard: opts.shard,
        cells: cells(opts, workloads)?,
        progress: opts.progress,
    };
    let callgrind_dir = if opts.plan.instructions {
        std::fs::create_dir_all(&opts.scratch)
            .map_err(|e| format!("{}: {e}", opts.scratch.display()))?;
        Some(opts.scratch.clone())
    } else {
        None
    };
    let strace_dir = if opts.plan.syscalls {
        let dir = opts.scratch.join("strace");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Some(dir)
    } else {
        None
    };
    let mut children = Children {
        opts,
        callgrind_dir,
        strace_dir,
    };
    grid::run(&grid, &mut children, environment, journal)
}

/// Invocations as measuring children of the running binary.
struct Children<'a> {
    opts: &'a RunOptions,
    callgrind_dir: Option<PathBuf>,
    strace_dir: Option<PathBuf>,
}

impl Invoke for Children<'_> {
    fn name(&self, cell: &Cell) -> String {
        format!("{} on {} x{}", cell.subject, cell.workload, cell.threads)
    }

    fn invoke(
        &mut self,
        cell: &Cell,
        slot: &Slot,
        warmup: bool,
        note: &mut dyn FnMut(String),
    ) -> Invocation {
        let opts = self.opts;
        let (workload, probed) = super::workloads::probed(&cell.workload);
        let spawn = Spawn {
            exe: opts.exe.clone(),
            args: ChildArgs {
                subject: cell.subject.clone(),
                workload: workload.to_string(),
                threads: cell.threads,
                scale: opts.plan.scale,
                seed: opts.plan.seed,
                iterations: opts.iterations,
                heap_conf: opts.plan.heap_confs.clone(),
                probe: opts.plan.probe() || probed,
            },
            env_pad: slot.env_pad,
            callgrind_dir: self.callgrind_dir.clone(),
            strace_dir: self.strace_dir.clone(),
            timeout: opts.timeout,
        };
        // Callgrind's and strace's counts are not disturbed by other processes; warm-up rounds
        // are not used.
        let retries = if warmup || opts.plan.instructions || opts.plan.syscalls {
            0
        } else {
            opts.retry_disturbed
        };
        match least_disturbed(&spawn, retries, note) {
            (ChildResult::Done(report), process_wall) => Invocation::Done(Box::new(Taken {
                describe: report.describe,
                metrics: report.metrics,
                disturbance: report.disturbance,
                iteration_walls: report.iteration_walls,
                process_wall,
            })),
            (ChildResult::Failed(reason), _) => Invocation::Failed(reason),
        }
    }
}

/// Runs `spawn`, and again up to `retries` times while it comes back disturbed: the least
/// disturbed attempt, its disturbance listing the fractions of the others (`retried`), and its
/// process wall. A failed attempt is the result, whatever came before (a crash is a finding).
fn least_disturbed(
    spawn: &Spawn,
    retries: usize,
    mut note: impl FnMut(String),
) -> (ChildResult, f64) {
    let fraction = |r: &ChildReport| r.disturbance.as_ref().map_or(0.0, |d| d.fraction);
    let mut kept: Option<(Box<ChildReport>, f64, usize)> = None;
    let mut fractions = Vec::new();
    for attempt in 0..=retries {
        let started = std::time::Instant::now();
        let result = spawn.run();
        let wall = started.elapsed().as_secs_f64();
        let report = match result {
            ChildResult::Done(r) => r,
            failed => return (failed, wall),
        };
        let f = fraction(&report);
        let disturbed = report.disturbance.as_ref().is_some_and(|d| d.disturbed);
        fractions.push(f);
        if kept.as_ref().map_or(true, |(k, _, _)| f < fraction(k)) {
            kept = Some((report, wall, attempt));
        }
        if !disturbed {
            break;
        }
        if attempt < retries {
            note(format!(
                "disturbed (other processes took {:.1}% of the machine): measuring again ({}/{retries})",
                f * 100.0,
                attempt + 1
            ));
        }
    }
    let (mut report, wall, index) = kept.expect("at least one attempt");
    if let Some(d) = report.disturbance.as_mut() {
        d.retried = fractions
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != index)
            .map(|(_, &f)| f)
            .collect();
    }
    (ChildResult::Done(report), wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_c_peer_missing_from_the_build_is_named_with_the_fix() {
        let plan = crate::test_fixture::results(1).plan;
        let opts = RunOptions {
            plan: Plan {
                subjects: vec!["system".into(), "mimalloc".into()],
                workloads: vec![super::super::workloads::all()[0].name().to_string()],
                ..plan
            },
            shard: None,
            iterations: 1,
            exe: PathBuf::from("/nonexistent"),
            timeout: Duration::from_secs(1),
            progress: false,
            scratch: PathBuf::from("/nonexistent"),
            retry_disturbed: 0,
        };
        // A build without the `peers` feature has only `system` among the peers.
        let entries: Vec<SubjectEntry> = crate::peers::entries()
            .into_iter()
            .filter(|e| e.name == "system")
            .collect();
        let err = validate(&opts, &entries, &super::super::workloads::all()).unwrap_err();
        assert!(
            err.contains("`mimalloc` is a peer built from C sources") && err.contains("`peers`"),
            "{err}"
        );
        let mut unknown = opts.clone();
        unknown.plan.subjects = vec!["system".into(), "nosuch".into()];
        let err = validate(&unknown, &entries, &super::super::workloads::all()).unwrap_err();
        assert!(err.contains("unknown subject `nosuch`"), "{err}");
        let mut both = opts.clone();
        both.plan.subjects = vec!["system".into()];
        both.plan.instructions = true;
        both.plan.syscalls = true;
        let err = validate(&both, &entries, &super::super::workloads::all()).unwrap_err();
        assert!(
            err.contains("--instructions and --syscalls cannot share"),
            "{err}"
        );
    }
}
