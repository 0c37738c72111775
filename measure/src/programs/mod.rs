//! `compare --programs`: unmodified installed programs (python3, lua5.4, sqlite3, perl) and a
//! start-up program (`malloc(64); return 0`, compiled here) under `LD_PRELOAD` of Debian's
//! jemalloc, mimalloc and tcmalloc and of liballoclab.so under each named config, against
//! glibc's malloc (no preload). Wall time is the parent's clock around the process; user and
//! system time and peak resident size come from `wait4`. Each run's output must equal the
//! glibc run's, else the measurement is a failure.
//!
//! The grid of (preload × program) cells runs on the one grid runner (`grid.rs`), so a
//! programs run has the built-in workloads' schedule, journal, `--resume` and `--shard`; only
//! how one invocation is measured ([`process`]) is its own.

mod catalog;
mod compile;
mod libraries;
mod process;
mod subjects;

pub use catalog::{build_startup, startup_program, Program, STARTUP_RUNS};
pub use compile::compile_c;
pub use libraries::{
    debug_library, glibc, liballoclab, peer_preloads, probe_library, production_library, Preload,
    BUILDS_HINT, LIBALLOCLAB_HINT, PROBE_HINT,
};
pub use process::read_probe_dir;
pub use subjects::{add_conf_subjects, add_library_subjects, ConfSubject, LibrarySubject};

use super::grid::{self, Cell, Grid, Invocation, Invoke, Shard, Slot, Taken};
use super::journal::Journal;
use super::schema::{Environment, Plan, Results, PROGRAM_PREFIX};
use super::subjects::SubjectEntry;
use std::path::PathBuf;

/// How to run `--programs`.
#[derive(Clone, Debug)]
pub struct ProgramOptions {
    /// Measured rounds.
    pub reps: usize,
    /// Seed of the shuffles and paddings (a shard's must be every shard's: see
    /// `campaign::derived_seed`).
    pub seed: u64,
    /// Subjects to keep (default: every one found).
    pub subjects: Option<Vec<String>>,
    /// The subject ratios are taken against.
    pub baseline: String,
    /// Whether this is the quick variant (smaller inputs).
    pub quick: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Programs to keep, by name (`python3` or `program:python3`; default: every one found).
    pub workloads: Option<Vec<String>>,
    /// The metrics asked for (`--metrics`); a probe metric preloads liballoclab_probe.so in
    /// front of every subject.
    pub metrics: Vec<String>,
    /// The equivalence margins (`--margin`).
    pub margins: Vec<String>,
    /// Run only this slice of the schedule.
    pub shard: Option<Shard>,
}

/// A directory removed when dropped: the start-up program's build lives as long as the grid
/// that runs it, however the run ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `compare --programs` grid, ready to run: its programs found (and built), its preloads
/// checked, its plan made.
pub struct ProgramGrid {
    programs: Vec<Program>,
    preloads: Vec<Preload>,
    /// Per cell of `grid`, its program and preload (indices into the two).
    members: Vec<(usize, usize)>,
    /// liballoclab_probe.so, when a probe metric was asked for.
    probe: Option<PathBuf>,
    grid: Grid,
    _scratch: Option<Scratch>,
}

impl ProgramGrid {
    /// Every program installed here (those `opts.workloads` keeps) under every preload (the
    /// peers, liballoclab.so under the named configs in `entries`, and under each of `confs`,
    /// and each of `libs`; those `opts.subjects` keeps). Builds the start-up program if it is
    /// kept.
    pub fn found(
        entries: &[SubjectEntry],
        confs: &[ConfSubject],
        libs: &[LibrarySubject],
        opts: ProgramOptions,
    ) -> Result<ProgramGrid, String> {
        let mut programs: Vec<Program> = catalog::programs(opts.quick)
            .into_iter()
            .filter(|p| p.binary.exists())
            .collect();
        let scratch =
            Scratch(std::env::temp_dir().join(format!("alloclab-programs-{}", std::process::id())));
        programs.push(startup_program(&scratch.0));
        let programs = catalog::select_programs(programs, opts.workloads.as_deref())?;
        if programs.iter().any(|p| p.name == "startup") {
            build_startup(&scratch.0).map_err(|e| format!("the start-up program: {e}"))?;
        }
        let mut preloads = libraries::preloads(entries);
        add_conf_subjects(&mut preloads, confs, liballoclab().as_deref())?;
        add_library_subjects(&mut preloads, libs)?;
        let mut grid = ProgramGrid::new(programs, preloads, opts)?;
        grid._scratch = Some(scratch);
        Ok(grid)
    }

    /// `programs` under `preloads` (those `opts.subjects` keeps).
    pub fn new(
        programs: Vec<Program>,
        mut preloads: Vec<Preload>,
        opts: ProgramOptions,
    ) -> Result<ProgramGrid, String> {
        if let Some(keep) = &opts.subjects {
            for k in keep {
                if !preloads.iter().any(|p| &p.name == k) {
                    let names: Vec<&str> = preloads.iter().map(|p| p.name.as_str()).collect();
                    return Err(format!(
                        "`{k}` cannot be preloaded here (available: {}; liballoclab.so comes \
                         from `cargo build --release -p liballoclab` or ALLOCLAB_SO)",
                        names.join(", ")
                    ));
                }
            }
            preloads.retain(|p| keep.contains(&p.name));
        }
        if !preloads.iter().any(|p| p.name == opts.baseline) {
            return Err(format!(
                "the baseline `{}` is not among the preloads",
                opts.baseline
            ));
        }
        if programs.is_empty() {
            return Err("no programs to run".into());
        }
        let wants_probe = opts
            .metrics
            .iter()
            .any(|m| super::analysis::is_probe_metric(m));
        let probe = if wants_probe {
            Some(probe_library().ok_or_else(|| {
                format!("the probe metrics need liballoclab_probe.so: {PROBE_HINT}")
            })?)
        } else {
            None
        };
        let mut cells = Vec::new();
        let mut members = Vec::new();
        for (pi, program) in programs.iter().enumerate() {
            for (si, preload) in preloads.iter().enumerate() {
                cells.push(Cell {
                    subject: preload.name.clone(),
                    workload: workload_name(program),
                    threads: 1,
                });
                members.push((pi, si));
            }
        }
        let plan = Plan {
            subjects: preloads.iter().map(|p| p.name.clone()).collect(),
            workloads: programs.iter().map(workload_name).collect(),
            threads: vec![1],
            reps: opts.reps,
            warmup: 1,
            baseline: opts.baseline,
            seed: opts.seed,
            scale: 1.0,
            quick: opts.quick,
            instructions: false,
            syscalls: false,
            shards: vec![],
            heap_confs: Vec::new(),
            metrics: opts.metrics,
            margins: opts.margins,
        };
        Ok(ProgramGrid {
            programs,
            preloads,
            members,
            probe,
            grid: Grid {
                plan,
                shard: opts.shard,
                cells,
                progress: opts.progress,
            },
            _scratch: None,
        })
    }

    /// The plan as results.json and a journal's header record it.
    pub fn plan(&self) -> Plan {
        self.grid.recorded_plan()
    }

    /// Runs with `seed` instead (a resumed run's is the one its journal recorded).
    pub fn set_seed(&mut self, seed: u64) {
        self.grid.plan.seed = seed;
    }

    /// Runs the grid; `environment` is read before the first program runs (the load before
    /// the run is part of it). With a `journal`, as `grid::run`.
    pub fn run(
        &self,
        mut environment: Environment,
        journal: Option<&mut Journal>,
    ) -> Result<Results, String> {
        // glibc's run, even where glibc is no subject: the output every allocator must give.
        let reference = glibc();
        let mut expected = Vec::new();
        for p in &self.programs {
            let r = process::run_one(p, &reference, 0)
                .map_err(|e| format!("{} under glibc: {e}", p.name))?;
            expected.push(r.stdout);
        }
        super::env::add_preload_hashes(
            &mut environment,
            self.preloads.iter().filter_map(|p| p.library.as_deref()),
        );
        let mut invocations = Invocations {
            grid: self,
            expected,
        };
        grid::run(&self.grid, &mut invocations, environment, journal).map(|run| run.results)
    }
}

/// A program's name as a workload of the grid.
fn workload_name(program: &Program) -> String {
    format!("{PROGRAM_PREFIX}{}", program.name)
}

/// Invocations as a program's processes under a preload.
struct Invocations<'a> {
    grid: &'a ProgramGrid,
    /// Per program, its output under glibc.
    expected: Vec<String>,
}

impl Invoke for Invocations<'_> {
    fn name(&self, cell: &Cell) -> String {
        let program = cell
            .workload
            .strip_prefix(PROGRAM_PREFIX)
            .unwrap_or(&cell.workload);
        format!("{program} under {}", cell.subject)
    }

    fn invoke(
        &mut self,
        _cell: &Cell,
        slot: &Slot,
        _warmup: bool,
        _note: &mut dyn FnMut(String),
    ) -> Invocation {
        let (pi, si) = self.grid.members[slot.cell];
        let (program, preload) = (&self.grid.programs[pi], &self.grid.preloads[si]);
        let window = super::disturbance::Window::start();
        let started = std::time::Instant::now();
        let outcome = match &self.grid.probe {
            Some(so) => process::run_probed(program, preload, slot.env_pad, so),
            None => process::run_one(program, preload, slot.env_pad),
        };
        let process_wall = started.elapsed().as_secs_f64();
        // The processes' own time: a batch's figures are means per process.
        let disturbance = outcome.as_ref().ok().and_then(|r| {
            let runs = program.runs.max(1) as f64;
            window.finish((r.metrics.user + r.metrics.sys) * runs)
        });
        let expected = &self.expected[pi];
        match outcome {
            Ok(r) if r.stdout == *expected => Invocation::Done(Box::new(Taken {
                describe: preload.describe.clone(),
                metrics: r.metrics,
                disturbance,
                iteration_walls: Vec::new(),
                process_wall,
            })),
            Ok(r) => Invocation::Failed(format!(
                "output differs from the glibc run: {:?} instead of {:?}",
                crate::child::tail(&r.stdout, 200),
                crate::child::tail(expected, 200)
            )),
            Err(reason) => Invocation::Failed(reason),
        }
    }
}

/// Runs `programs` under `preloads` (those `opts.subjects` keeps), without a journal; results
/// in the same schema as `compare` (workloads are named `program:NAME`).
pub fn run_with(
    programs: Vec<Program>,
    preloads: Vec<Preload>,
    opts: ProgramOptions,
) -> Result<Results, String> {
    let grid = ProgramGrid::new(programs, preloads, opts)?;
    grid.run(
        super::env::capture(std::env::args().collect(), vec![]),
        None,
    )
}
