//! `alloclab merge`: shards of one grid (`compare --shard i/n`) combined into the result an
//! unsharded run would have written.

use super::campaign;
use super::schema::{CellKey, Measurement, Results};
use std::collections::{BTreeMap, BTreeSet};

/// Parses a shard label `i/n`.
fn parse_shard(label: &str) -> Result<(usize, usize), String> {
    let parsed = label.split_once('/').and_then(|(i, n)| {
        let (i, n) = (
            i.trim().parse::<usize>().ok()?,
            n.trim().parse::<usize>().ok()?,
        );
        (n > 0).then_some((i, n))
    });
    parsed.ok_or_else(|| format!("shard label {label:?} is not of the form i/n"))
}

/// What [`merge`] made, and the parts it left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// The combined result.
    pub results: Results,
    /// Parts that are copies of an earlier part (the same directory given twice, say), left
    /// out: `(part, the part it repeats)`, numbered from 1 in the order given.
    pub duplicates: Vec<(usize, usize)>,
}

/// Combines `parts`, given in any order, into one result:
///
/// - a part identical to an earlier one is counted once (and listed in `duplicates`);
/// - every other part must have the same plan apart from its shards (same subjects,
///   workloads, threads, repetitions, warm-up, baseline, seed, scale and modes), the same
///   schema version, and come from the same build (alloclab version, commit, rustc); the
///   error names each field that differs and its value in each part;
/// - no cell (subject, workload, threads, round) may appear in two parts, measured or failed,
///   nor may a shard be in two parts;
/// - when the shards given are all `n` of a split, every (subject, workload, threads) they
///   hold must have every round (warm-up included, `warmup + reps` in all): the merged grid
///   is then complete.
///
/// The merged measurements are in the order an unsharded run has them (by round, then by
/// position in the round's shuffled order); the environment is that of the part with the
/// lowest shard, and `plan.shards` lists the shards merged in order, so the result does not
/// depend on the order of the parts.
pub fn merge(parts: Vec<Results>) -> Result<Merged, String> {
    if parts.is_empty() {
        return Err("merge: no results to merge".into());
    }
    let (parts, duplicates) = without_copies(parts)?;
    let label = |number: usize| format!("part {number}");

    let fields: Vec<_> = parts
        .iter()
        .map(|(_, r)| {
            let mut plan = r.plan.clone();
            plan.shards.clear();
            let mut f = campaign::build_fields(r.schema_version, &r.environment);
            f.extend(campaign::plan_fields(&plan));
            f
        })
        .collect();
    let diffs = campaign::differences(&fields);
    if !diffs.is_empty() {
        let labels: Vec<String> = parts.iter().map(|(k, _)| label(*k)).collect();
        return Err(format!(
            "merge: the parts were not run with one plan and build, so they are not slices \
             of one grid:\n{}",
            campaign::describe(&diffs, &labels)
        ));
    }

    let mut split = None;
    let mut shard_owner: BTreeMap<usize, usize> = BTreeMap::new();
    let mut parts: Vec<(Vec<usize>, usize, Results)> = parts
        .into_iter()
        .map(|(number, part)| {
            let mut indices = Vec::new();
            for l in &part.plan.shards {
                let (i, n) =
                    parse_shard(l).map_err(|e| format!("merge: {}: {e}", label(number)))?;
                if *split.get_or_insert(n) != n {
                    return Err(format!(
                        "merge: shards of different splits ({l} and one of {})",
                        split.unwrap_or(n)
                    ));
                }
                if let Some(other) = shard_owner.insert(i, number) {
                    return Err(format!(
                        "merge: shard {l} is in {} and in {}, which hold different \
                         measurements (the shard was run twice?): give one of them",
                        label(other),
                        label(number)
                    ));
                }
                indices.push(i);
            }
            indices.sort_unstable();
            Ok((indices, number, part))
        })
        .collect::<Result<_, String>>()?;
    parts.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));

    let mut owner: BTreeMap<CellKey, usize> = BTreeMap::new();
    for (_, number, part) in &parts {
        let keys = part.measurements.iter().map(Measurement::cell_key);
        for k in keys.chain(part.failures.iter().map(|f| f.cell_key())) {
            if let Some(other) = owner.insert(k.clone(), *number) {
                let places = if other == *number {
                    format!("twice in {}", label(other))
                } else {
                    format!("in {} and in {}", label(other), label(*number))
                };
                return Err(format!(
                    "merge: subject {} on {} with {} thread(s), round {}, appears {places}",
                    k.0, k.1, k.2, k.3
                ));
            }
        }
    }

    let mut parts = parts.into_iter().map(|(_, _, part)| part);
    let mut merged = parts.next().expect("at least one part");
    for part in parts {
        merged.plan.shards.extend(part.plan.shards);
        merged.measurements.extend(part.measurements);
        merged.failures.extend(part.failures);
    }
    merged
        .plan
        .shards
        .sort_by_key(|l| parse_shard(l).map_or(0, |(i, _)| i));
    if let Some(n) = split {
        if shard_owner.len() == n {
            let cells: BTreeSet<CellKey> = owner.into_keys().collect();
            check_complete(&cells, merged.plan.warmup + merged.plan.reps)?;
        }
    }
    merged.measurements.sort_by(order_of_run);
    merged.failures.sort_by(|a, b| {
        (a.round, &a.subject, &a.workload, a.threads).cmp(&(
            b.round,
            &b.subject,
            &b.workload,
            b.threads,
        ))
    });
    Ok(Merged {
        results: merged,
        duplicates,
    })
}

/// Parts with their number (from 1) on the command line.
type Numbered = Vec<(usize, Results)>;
/// (number of a copy, number of the part it repeats).
type Copies = Vec<(usize, usize)>;

/// The parts, numbered from 1, without those identical to an earlier one (compared as the
/// JSON they are written as, in which NaN figures are equal), and the copies left out.
fn without_copies(parts: Vec<Results>) -> Result<(Numbered, Copies), String> {
    let mut kept: Vec<(usize, Results, String)> = Vec::new();
    let mut copies = Vec::new();
    for (k, part) in parts.into_iter().enumerate() {
        let text = serde_json::to_string(&part).map_err(|e| format!("merge: {e}"))?;
        match kept.iter().find(|(_, _, t)| *t == text) {
            Some((first, _, _)) => copies.push((k + 1, *first)),
            None => kept.push((k + 1, part, text)),
        }
    }
    let kept = kept.into_iter().map(|(k, part, _)| (k, part)).collect();
    Ok((kept, copies))
}

/// The order of an unsharded run: round, then position in the round.
fn order_of_run(a: &Measurement, b: &Measurement) -> std::cmp::Ordering {
    (a.round, a.order, &a.subject, &a.workload, a.threads).cmp(&(
        b.round,
        b.order,
        &b.subject,
        &b.workload,
        b.threads,
    ))
}

/// Every (subject, workload, threads) present has every round any of them has, and there are
/// `rounds` rounds in all.
fn check_complete(cells: &BTreeSet<CellKey>, rounds: usize) -> Result<(), String> {
    let mut combos: BTreeSet<(&str, &str, usize)> = BTreeSet::new();
    let mut all_rounds: BTreeSet<usize> = BTreeSet::new();
    for (s, w, t, r) in cells {
        combos.insert((s, w, *t));
        all_rounds.insert(*r);
    }
    if !cells.is_empty() && all_rounds.len() != rounds {
        return Err(format!(
            "merge: every shard is here but the parts hold {} distinct rounds where the plan \
             has {rounds} (warm-up included): the grid is incomplete",
            all_rounds.len()
        ));
    }
    for (s, w, t) in combos {
        for &round in &all_rounds {
            if !cells.contains(&(s.to_string(), w.to_string(), t, round)) {
                return Err(format!(
                    "merge: every shard is here but subject {s} on {w} with {t} thread(s) lacks \
                     round {round}: the grid is incomplete"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    /// Splits `whole` into `n` shards the way a sharded run would record them: each keeps
    /// the plan, labels itself `i/n`, and holds the measurements of its slice of the grid
    /// (here by position, which is all merging relies on).
    fn shard(whole: &Results, n: usize) -> Vec<Results> {
        (0..n)
            .map(|i| {
                let mut part = whole.clone();
                part.plan.shards = vec![format!("{}/{n}", i + 1)];
                part.measurements = whole
                    .measurements
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| k % n == i)
                    .map(|(_, m)| m.clone())
                    .collect();
                part.failures.retain(|_| i == 0);
                part
            })
            .collect()
    }

    #[test]
    fn shards_merge_back_into_the_unsharded_grid() {
        let whole = test_fixture::results(4);
        let mut parts = shard(&whole, 3);
        parts.reverse();
        let merged = merge(parts).unwrap();
        assert!(merged.duplicates.is_empty());
        let merged = merged.results;
        assert_eq!(merged.measurements, whole.measurements);
        assert_eq!(merged.failures, whole.failures);
        assert_eq!(merged.plan.shards, ["1/3", "2/3", "3/3"]);
        let mut plan = merged.plan.clone();
        plan.shards.clear();
        assert_eq!(plan, whole.plan);
    }

    #[test]
    fn any_order_and_repeated_parts_give_the_same_merge() {
        let whole = test_fixture::results(4);
        let mut parts = shard(&whole, 3);
        // Each part from another host, so that which environment is kept shows.
        for (k, p) in parts.iter_mut().enumerate() {
            p.environment.hostname = format!("node{}", k + 1);
        }
        let in_order = merge(parts.clone()).unwrap().results;
        assert_eq!(in_order.environment.hostname, "node1");
        let shuffled = vec![
            parts[2].clone(),
            parts[0].clone(),
            parts[2].clone(),
            parts[1].clone(),
            parts[0].clone(),
        ];
        let merged = merge(shuffled).unwrap();
        assert_eq!(merged.results, in_order);
        assert_eq!(merged.duplicates, [(3, 1), (5, 2)]);
    }

    #[test]
    fn a_single_unsharded_result_merges_to_itself() {
        let whole = test_fixture::results(3);
        assert_eq!(merge(vec![whole.clone()]).unwrap().results, whole);
        assert!(merge(vec![]).is_err());
    }

    #[test]
    fn overlapping_parts_are_refused() {
        let whole = test_fixture::results(3);
        let mut parts = shard(&whole, 2);
        let duplicate = parts[0].measurements[0].clone();
        parts[1].measurements.push(duplicate);
        let err = merge(parts).unwrap_err();
        assert!(err.contains("appears in part 1 and in part 2"), "{err}");

        // The same shard twice, measured differently (run again): which to keep is the
        // user's choice.
        let parts = shard(&whole, 2);
        let mut again = parts[0].clone();
        again.measurements[0].metrics.wall *= 2.0;
        let err = merge(vec![parts[0].clone(), parts[1].clone(), again]).unwrap_err();
        assert!(
            err.contains("shard 1/2 is in part 1 and in part 3"),
            "{err}"
        );

        let mut parts = shard(&whole, 2);
        let duplicate = parts[1].measurements[0].clone();
        parts[1].measurements.push(duplicate);
        let err = merge(parts).unwrap_err();
        assert!(err.contains("appears twice in part 2"), "{err}");
    }

    #[test]
    fn other_plans_and_incomplete_grids_are_refused() {
        let whole = test_fixture::results(3);
        let mut parts = shard(&whole, 3);
        parts[1].plan.seed += 1;
        parts[2].plan.seed += 2;
        parts[2].plan.reps += 1;
        let err = merge(parts).unwrap_err();
        assert!(
            err.contains("not run with one plan and build")
                && err.contains("\nreps: part 1 and part 2 = 3, part 3 = 4")
                && err.contains("\nseed: part 1 = 42, part 2 = 43, part 3 = 44"),
            "{err}"
        );
        assert!(
            !err.contains("shards"),
            "shards are expected to differ: {err}"
        );

        let mut parts = shard(&whole, 2);
        parts[1].environment.commit = Some("other".into());
        let err = merge(parts).unwrap_err();
        assert!(
            err.contains("commit: part 1 = abc123, part 2 = other"),
            "{err}"
        );

        let mut parts = shard(&whole, 2);
        parts[1].measurements.pop();
        let err = merge(parts).unwrap_err();
        assert!(err.contains("incomplete"), "{err}");

        // Missing shards: nothing to check completeness against, so a partial merge is fine.
        let parts = shard(&whole, 3);
        let partial = merge(parts[..2].to_vec()).unwrap().results;
        assert_eq!(partial.plan.shards, ["1/3", "2/3"]);

        let mut parts = shard(&whole, 2);
        parts[1].plan.shards = vec!["2/4".into()];
        assert!(merge(parts).unwrap_err().contains("different splits"));
        let mut parts = shard(&whole, 2);
        parts[1].plan.shards = vec!["two".into()];
        let err = merge(parts).unwrap_err();
        assert!(
            err.contains("part 2: shard label \"two\" is not of the form i/n"),
            "{err}"
        );
    }
}
