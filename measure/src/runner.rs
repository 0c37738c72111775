//! The `compare` runner: the grid of (subject × workload × threads) cells, run round after
//! round, one fresh child process per measurement (`child.rs`).
//!
//! As Kalibera and Jones prescribe, the process invocation is the unit of repetition, and
//! layout is perturbed between invocations: ASLR stays on and each child's environment is
//! padded by a random number of bytes. Every round runs every cell once, in an order shuffled
//! per round; the first round(s) are a warm-up that is recorded but left out of the analysis.
//! All the randomness derives from one recorded seed, so a run's schedule is reproducible and
//! a shard (`--shard i/n`: every n-th measurement of the canonical schedule) measures exactly
//! the cells, rounds, positions and paddings the unsharded run would have. With a journal
//! (`journal.rs`) each measurement is recorded as it finishes, and the slots a journal already
//! holds are not measured again.

use super::child::{ChildArgs, ChildReport, ChildResult, Spawn};
use super::journal::Journal;
use super::progress::{Progress, Style};
use super::schema::{CellKey, Failure, Measurement, Plan, Results, SCHEMA_VERSION};
use super::subjects::SubjectEntry;
use super::workloads::Workload;
use alloclab_traces::rng::SplitMix64;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The largest environment padding, in bytes (a page: the stack's offset within a page moves
/// through every value).
pub const MAX_ENV_PAD: usize = 4096;

/// A shard: the `index`-th (1-based) of `count` slices of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 1..=count.
    pub index: usize,
    /// Slices in all.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected i/n, as 2/5"))?;
        let parse = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}`: `{v}` is not a whole number"))
        };
        let (index, count) = (parse(i)?, parse(n)?);
        if count == 0 || index == 0 || index > count {
            return Err(format!("`{s}`: need 1 <= i <= n"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

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

/// One cell of the grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Subject name.
    pub subject: String,
    /// Workload name.
    pub workload: String,
    /// Worker threads.
    pub threads: usize,
}

/// One scheduled measurement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Index into the cells.
    pub cell: usize,
    /// Round (warm-up rounds first).
    pub round: usize,
    /// Position in the round's shuffled order.
    pub order: usize,
    /// Environment padding, bytes.
    pub env_pad: usize,
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

fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut r = SplitMix64::new(seed ^ a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.rotate_left(32));
    r.next_u64()
}

/// The whole schedule, every round, in the order it runs; then cut to the shard.
pub fn schedule(ncells: usize, rounds: usize, seed: u64, shard: Option<Shard>) -> Vec<Slot> {
    let mut out = Vec::new();
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..ncells).collect();
        let mut rng = SplitMix64::new(mix(seed, 1, round as u64));
        // Fisher-Yates.
        for i in (1..order.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        for (pos, &cell) in order.iter().enumerate() {
            let unit = round * ncells + cell;
            if let Some(s) = shard {
                if unit % s.count != s.index - 1 {
                    continue;
                }
            }
            out.push(Slot {
                cell,
                round,
                order: pos,
                env_pad: (mix(seed, 2, unit as u64) % MAX_ENV_PAD as u64) as usize,
            });
        }
    }
    out
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
    Plan {
        shards: opts.shard.map(|s| vec![s.to_string()]).unwrap_or_default(),
        ..opts.plan.clone()
    }
}

/// What a run measured, beside the results: each measurement's per-iteration walls (the
/// pilot's input), in the order of `Results::measurements`. A measurement carried over from a
/// journal has no iteration walls and a NaN process wall (a journal keeps results.json's
/// figures only, which is why `--pilot` does not resume).
pub struct Run {
    /// results.json's content.
    pub results: Results,
    /// Per measurement, the wall time of each iteration inside its process.
    pub iteration_walls: Vec<Vec<f64>>,
    /// Per measurement, the parent's clock around the whole process (start-up and set-up
    /// included).
    pub process_walls: Vec<f64>,
}

/// Runs the schedule. Failures are recorded, not fatal: the report lists them (and are not
/// journaled, so that a resumed run tries them again: a kill may be what failed them).
/// With a `journal`, the measurements it holds stand for their slots, and each new one is
/// appended to it before the next starts.
pub fn run(
    opts: &RunOptions,
    workloads: &[Box<dyn Workload>],
    mut environment: super::schema::Environment,
    mut journal: Option<&mut Journal>,
) -> Result<Run, String> {
    let cells = cells(opts, workloads)?;
    let slots = schedule(
        cells.len(),
        opts.plan.warmup + opts.plan.reps,
        opts.plan.seed,
        opts.shard,
    );
    let mut carried = carried_over(
        &cells,
        &slots,
        journal.as_deref().map_or(&[], Journal::recorded),
    )?;
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
    let mut progress = Progress::new(slots.len(), Style::for_stderr(opts.progress));
    progress.carried(carried.len());
    let mut measurements = Vec::with_capacity(slots.len());
    let mut walls = Vec::with_capacity(slots.len());
    let mut process_walls = Vec::with_capacity(slots.len());
    let mut failures = Vec::new();
    for slot in &slots {
        let cell = &cells[slot.cell];
        if let Some(m) = carried.remove(&slot_key(cell, slot)) {
            measurements.push(m);
            walls.push(Vec::new());
            process_walls.push(f64::NAN);
            continue;
        }
        let warmup = slot.round < opts.plan.warmup;
        progress.start(format!(
            "round {}{}: {} on {} x{}",
            slot.round,
            if warmup { " (warm-up)" } else { "" },
            cell.subject,
            cell.workload,
            cell.threads
        ));
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
            callgrind_dir: callgrind_dir.clone(),
            strace_dir: strace_dir.clone(),
            timeout: opts.timeout,
        };
        // Callgrind's and strace's counts are not disturbed by other processes; warm-up rounds
        // are not used.
        let retries = if warmup || opts.plan.instructions || opts.plan.syscalls {
            0
        } else {
            opts.retry_disturbed
        };
        let (result, process_wall) = least_disturbed(&spawn, retries, |note| {
            progress.println(format!(
                "{} on {} x{} (round {}): {note}",
                cell.subject, cell.workload, cell.threads, slot.round
            ))
        });
        let ok = matches!(result, ChildResult::Done(_));
        match result {
            ChildResult::Done(report) => {
                let m = Measurement {
                    subject: cell.subject.clone(),
                    describe: report.describe,
                    workload: cell.workload.clone(),
                    threads: cell.threads,
                    round: slot.round,
                    warmup,
                    order: slot.order,
                    env_pad: slot.env_pad,
                    metrics: report.metrics,
                    disturbance: report.disturbance,
                };
                if let Some(j) = journal.as_deref_mut() {
                    j.append(&m)?;
                }
                measurements.push(m);
                walls.push(report.iteration_walls);
                process_walls.push(process_wall);
            }
            ChildResult::Failed(reason) => {
                progress.println(format!(
                    "failed: {} on {} x{} (round {}): {reason}",
                    cell.subject, cell.workload, cell.threads, slot.round
                ));
                failures.push(Failure {
                    subject: cell.subject.clone(),
                    workload: cell.workload.clone(),
                    threads: cell.threads,
                    round: slot.round,
                    reason,
                });
            }
        }
        progress.finished(ok);
    }
    progress.finish();
    super::env::finish(&mut environment);
    Ok(Run {
        results: Results {
            schema_version: SCHEMA_VERSION,
            environment,
            plan: plan(opts),
            measurements,
            failures,
        },
        iteration_walls: walls,
        process_walls,
    })
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

fn slot_key(cell: &Cell, slot: &Slot) -> CellKey {
    (
        cell.subject.clone(),
        cell.workload.clone(),
        cell.threads,
        slot.round,
    )
}

/// The `recorded` measurements by slot, each checked to be one of this schedule's slots (at
/// its position and padding) and there only once: a journal of another schedule, or edited,
/// is refused rather than mixed in.
fn carried_over(
    cells: &[Cell],
    slots: &[Slot],
    recorded: &[Measurement],
) -> Result<BTreeMap<CellKey, Measurement>, String> {
    let by_key: BTreeMap<CellKey, &Slot> = slots
        .iter()
        .map(|s| (slot_key(&cells[s.cell], s), s))
        .collect();
    let mut carried = BTreeMap::new();
    for m in recorded {
        let key = m.cell_key();
        let fits = by_key
            .get(&key)
            .is_some_and(|s| (s.order, s.env_pad) == (m.order, m.env_pad));
        if !fits {
            return Err(format!(
                "the journal holds subject {} on {} with {} thread(s), round {}, at position \
                 {} and padding {}, which this run's schedule does not have: it is not of this \
                 run",
                m.subject, m.workload, m.threads, m.round, m.order, m.env_pad
            ));
        }
        if carried.insert(key, m.clone()).is_some() {
            return Err(format!(
                "the journal holds subject {} on {} with {} thread(s), round {}, twice",
                m.subject, m.workload, m.threads, m.round
            ));
        }
    }
    Ok(carried)
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

    #[test]
    fn shards_parse_and_reject_nonsense() {
        assert_eq!(
            "2/3".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 3 }
        );
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rounds_are_shuffled_permutations_reproducible_from_the_seed() {
        let s = schedule(10, 4, 7, None);
        assert_eq!(s.len(), 40);
        for round in 0..4 {
            let mut cells: Vec<usize> = s
                .iter()
                .filter(|x| x.round == round)
                .map(|x| x.cell)
                .collect();
            cells.sort_unstable();
            assert_eq!(cells, (0..10).collect::<Vec<_>>());
        }
        let orders: Vec<Vec<usize>> = (0..4)
            .map(|r| s.iter().filter(|x| x.round == r).map(|x| x.cell).collect())
            .collect();
        assert!(orders.windows(2).any(|w| w[0] != w[1]), "rounds differ");
        assert_eq!(s, schedule(10, 4, 7, None));
        assert_ne!(s, schedule(10, 4, 8, None));
        assert!(s.iter().all(|x| x.env_pad < MAX_ENV_PAD));
    }

    #[test]
    fn carried_measurements_must_be_slots_of_this_schedule_once() {
        let cells: Vec<Cell> = ["a", "b"]
            .map(|s| Cell {
                subject: s.into(),
                workload: "w".into(),
                threads: 1,
            })
            .to_vec();
        let slots = schedule(2, 3, 5, Some(Shard { index: 1, count: 2 }));
        let measured = |slot: &Slot| Measurement {
            subject: cells[slot.cell].subject.clone(),
            describe: String::new(),
            workload: "w".into(),
            threads: 1,
            round: slot.round,
            warmup: slot.round == 0,
            order: slot.order,
            env_pad: slot.env_pad,
            metrics: Default::default(),
            disturbance: None,
        };
        let recorded: Vec<Measurement> = slots.iter().take(2).map(measured).collect();
        let carried = carried_over(&cells, &slots, &recorded).unwrap();
        assert_eq!(carried.len(), 2);
        assert_eq!(carried[&recorded[1].cell_key()], recorded[1]);

        let mut twice = recorded.clone();
        twice.push(recorded[0].clone());
        let err = carried_over(&cells, &slots, &twice).unwrap_err();
        assert!(err.contains("twice"), "{err}");
        let other_shard = schedule(2, 3, 5, Some(Shard { index: 2, count: 2 }));
        let err = carried_over(&cells, &slots, &[measured(&other_shard[0])]).unwrap_err();
        assert!(err.contains("does not have"), "{err}");
        let mut moved = recorded[0].clone();
        moved.env_pad = (moved.env_pad + 1) % MAX_ENV_PAD;
        assert!(carried_over(&cells, &slots, &[moved]).is_err());
    }

    #[test]
    fn shards_partition_the_schedule() {
        let whole = schedule(7, 3, 11, None);
        let mut parts: Vec<Slot> = (1..=3)
            .flat_map(|i| schedule(7, 3, 11, Some(Shard { index: i, count: 3 })))
            .collect();
        assert_eq!(parts.len(), whole.len());
        let key = |s: &Slot| (s.round, s.order);
        parts.sort_by_key(key);
        let mut sorted = whole.clone();
        sorted.sort_by_key(key);
        assert_eq!(parts, sorted);
    }
}
