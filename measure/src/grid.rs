//! The one grid runner of `compare`, for the built-in workloads (`runner.rs`) and for
//! installed programs (`programs/`) alike: the cells, run round after round.
//!
//! As Kalibera and Jones prescribe, the process invocation is the unit of repetition, and
//! layout is perturbed between invocations: ASLR stays on and each process's environment is
//! padded by a random number of bytes. Every round runs every cell once, in an order shuffled
//! per round; the first round(s) are a warm-up that is recorded but left out of the analysis.
//! All the randomness derives from one recorded seed, so a run's schedule is reproducible and
//! a shard (`--shard i/n`: every n-th measurement of the canonical schedule) measures exactly
//! the cells, rounds, positions and paddings the unsharded run would have. With a journal
//! (`journal.rs`) each measurement is recorded as it finishes, and the slots a journal already
//! holds are not measured again.
//!
//! What differs between the two kinds of run is only how one invocation of a cell is measured
//! ([`Invoke`]): everything a measurement shares (its slot, journal, progress, failure) is here.

use super::journal::Journal;
use super::progress::{Progress, Style};
use super::schema::{
    CellKey, Disturbance, Environment, Failure, Measurement, Metrics, Plan, Results, SCHEMA_VERSION,
};
use alloclab_traces::rng::SplitMix64;
use std::collections::BTreeMap;

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

/// What one invocation measured, beside what its slot says.
#[derive(Clone, Debug)]
pub struct Taken {
    /// What the subject is, for the report.
    pub describe: String,
    /// Its figures.
    pub metrics: Metrics,
    /// How much of the machine other processes took meanwhile.
    pub disturbance: Option<Disturbance>,
    /// The wall time of each iteration inside the process (none where it has no iterations).
    pub iteration_walls: Vec<f64>,
    /// The parent's clock around the whole process.
    pub process_wall: f64,
}

/// How one invocation came out.
#[derive(Debug)]
pub enum Invocation {
    /// Measured.
    Done(Box<Taken>),
    /// Failed, and why (a crash is a finding: it is reported, not retried).
    Failed(String),
}

/// How one invocation of a cell is measured: the only thing in which the kinds of grid differ.
pub trait Invoke {
    /// The cell in words, for progress and failure lines.
    fn name(&self, cell: &Cell) -> String;

    /// Measures `cell` once, at `slot` (in a warm-up round if `warmup`); `note` prints a line
    /// that a progress bar does not draw over.
    fn invoke(
        &mut self,
        cell: &Cell,
        slot: &Slot,
        warmup: bool,
        note: &mut dyn FnMut(String),
    ) -> Invocation;
}

/// A grid to run.
#[derive(Clone, Debug)]
pub struct Grid {
    /// Rounds, warm-up, seed and what results.json records as the plan (`shards` is filled
    /// from `shard`).
    pub plan: Plan,
    /// Run only this slice of the schedule.
    pub shard: Option<Shard>,
    /// The cells, in canonical order (the schedule's indices point into them).
    pub cells: Vec<Cell>,
    /// Show progress on standard error.
    pub progress: bool,
}

impl Grid {
    /// The plan as recorded in results.json and in a journal's header.
    pub fn recorded_plan(&self) -> Plan {
        recorded_plan(&self.plan, self.shard)
    }
}

/// `plan` as recorded for a run of `shard` of it.
pub fn recorded_plan(plan: &Plan, shard: Option<Shard>) -> Plan {
    Plan {
        shards: shard.map(|s| vec![s.to_string()]).unwrap_or_default(),
        ..plan.clone()
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

/// Runs `grid`'s schedule, each invocation through `invoke`. Failures are recorded, not
/// fatal: the report lists them (and are not journaled, so that a resumed run tries them
/// again: a kill may be what failed them). With a `journal`, the measurements it holds stand
/// for their slots, and each new one is appended to it before the next starts.
pub fn run(
    grid: &Grid,
    invoke: &mut dyn Invoke,
    mut environment: Environment,
    mut journal: Option<&mut Journal>,
) -> Result<Run, String> {
    let plan = &grid.plan;
    let cells = &grid.cells;
    let slots = schedule(cells.len(), plan.warmup + plan.reps, plan.seed, grid.shard);
    let mut carried = carried_over(
        cells,
        &slots,
        journal.as_deref().map_or(&[], Journal::recorded),
    )?;
    let mut progress = Progress::new(slots.len(), Style::for_stderr(grid.progress));
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
        let warmup = slot.round < plan.warmup;
        let name = invoke.name(cell);
        progress.start(format!(
            "round {}{}: {name}",
            slot.round,
            if warmup { " (warm-up)" } else { "" },
        ));
        let invocation = invoke.invoke(cell, slot, warmup, &mut |note| {
            progress.println(format!("{name} (round {}): {note}", slot.round))
        });
        let ok = matches!(invocation, Invocation::Done(_));
        match invocation {
            Invocation::Done(taken) => {
                let m = Measurement {
                    subject: cell.subject.clone(),
                    describe: taken.describe,
                    workload: cell.workload.clone(),
                    threads: cell.threads,
                    round: slot.round,
                    warmup,
                    order: slot.order,
                    env_pad: slot.env_pad,
                    metrics: taken.metrics,
                    disturbance: taken.disturbance,
                };
                if let Some(j) = journal.as_deref_mut() {
                    j.append(&m)?;
                }
                measurements.push(m);
                walls.push(taken.iteration_walls);
                process_walls.push(taken.process_wall);
            }
            Invocation::Failed(reason) => {
                progress.println(format!("failed: {name} (round {}): {reason}", slot.round));
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
            plan: grid.recorded_plan(),
            measurements,
            failures,
        },
        iteration_walls: walls,
        process_walls,
    })
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
