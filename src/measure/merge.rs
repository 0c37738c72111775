//! `alloclab merge`: shards of one grid (`compare --shard i/n`) combined into the result an
//! unsharded run would have written.

use super::schema::{Measurement, Results};
use std::collections::BTreeSet;

/// One cell of the grid: subject, workload, threads, round.
type CellKey = (String, String, usize, usize);

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

/// Combines `parts` into one result:
///
/// - every part must have the same plan apart from its shards (same subjects, workloads,
///   threads, repetitions, warm-up, baseline, seed, scale and modes), the same schema
///   version, and come from the same build (alloclab version, commit, rustc);
/// - no cell (subject, workload, threads, round) may appear in two parts, measured or failed,
///   nor may a shard be given twice;
/// - when the shards given are all `n` of a split, every (subject, workload, threads) they
///   hold must have every round (warm-up included, `warmup + reps` in all): the merged grid
///   is then complete.
///
/// The merged measurements are in the order an unsharded run has them (by round, then by
/// position in the round's shuffled order); the environment is the first part's, and
/// `plan.shards` lists the shards merged.
pub fn merge(parts: Vec<Results>) -> Result<Results, String> {
    let mut parts = parts.into_iter();
    let mut merged = parts.next().ok_or("merge: no results to merge")?;
    let mut plan_key = merged.plan.clone();
    plan_key.shards.clear();
    let mut cells: BTreeSet<CellKey> = BTreeSet::new();
    let key = |subject: &str, workload: &str, threads: usize, round: usize| -> CellKey {
        (subject.to_string(), workload.to_string(), threads, round)
    };
    let claim = |cells: &mut BTreeSet<CellKey>, k: CellKey| -> Result<(), String> {
        if cells.insert(k.clone()) {
            Ok(())
        } else {
            Err(format!(
                "merge: subject {} on {} with {} thread(s), round {}, appears in two parts",
                k.0, k.1, k.2, k.3
            ))
        }
    };
    let first_cells: Vec<CellKey> = merged
        .measurements
        .iter()
        .map(|m| key(&m.subject, &m.workload, m.threads, m.round))
        .chain(
            merged
                .failures
                .iter()
                .map(|f| key(&f.subject, &f.workload, f.threads, f.round)),
        )
        .collect();
    for k in first_cells {
        claim(&mut cells, k)?;
    }
    for (index, part) in parts.enumerate() {
        let mut other = part.plan.clone();
        other.shards.clear();
        if other != plan_key {
            return Err(format!(
                "merge: part {} was run with another plan than the first (subjects, workloads, \
                 threads, reps, warm-up, baseline, seed, scale or modes differ)",
                index + 2
            ));
        }
        let (a, b) = (&merged.environment, &part.environment);
        if (&a.alloclab_version, &a.commit, &a.rustc) != (&b.alloclab_version, &b.commit, &b.rustc)
        {
            return Err(format!(
                "merge: part {} was measured with another build than the first (alloclab {} \
                 commit {:?} {} against alloclab {} commit {:?} {})",
                index + 2,
                b.alloclab_version,
                b.commit,
                b.rustc,
                a.alloclab_version,
                a.commit,
                a.rustc
            ));
        }
        if part.schema_version != merged.schema_version {
            return Err(format!(
                "merge: part {} has schema version {}, the first {}",
                index + 2,
                part.schema_version,
                merged.schema_version
            ));
        }
        for m in &part.measurements {
            claim(&mut cells, key(&m.subject, &m.workload, m.threads, m.round))?;
        }
        for f in &part.failures {
            claim(&mut cells, key(&f.subject, &f.workload, f.threads, f.round))?;
        }
        merged.plan.shards.extend(part.plan.shards);
        merged.measurements.extend(part.measurements);
        merged.failures.extend(part.failures);
    }

    let mut seen_shards = BTreeSet::new();
    let mut split = None;
    for label in &merged.plan.shards {
        let (i, n) = parse_shard(label)?;
        if *split.get_or_insert(n) != n {
            return Err(format!(
                "merge: shards of different splits ({label} and one of {})",
                split.unwrap_or(n)
            ));
        }
        if !seen_shards.insert(i) {
            return Err(format!("merge: shard {label} is given twice"));
        }
    }
    if let Some(n) = split {
        if seen_shards.len() == n {
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
    Ok(merged)
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
    use crate::measure::test_fixture;

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
        assert_eq!(merged.measurements, whole.measurements);
        assert_eq!(merged.failures, whole.failures);
        assert_eq!(merged.plan.shards, ["3/3", "2/3", "1/3"]);
        let mut plan = merged.plan.clone();
        plan.shards.clear();
        assert_eq!(plan, whole.plan);
    }

    #[test]
    fn a_single_unsharded_result_merges_to_itself() {
        let whole = test_fixture::results(3);
        assert_eq!(merge(vec![whole.clone()]).unwrap(), whole);
        assert!(merge(vec![]).is_err());
    }

    #[test]
    fn overlapping_parts_are_refused() {
        let whole = test_fixture::results(3);
        let mut parts = shard(&whole, 2);
        let duplicate = parts[0].measurements[0].clone();
        parts[1].measurements.push(duplicate);
        let err = merge(parts).unwrap_err();
        assert!(err.contains("appears in two parts"), "{err}");

        let parts = shard(&whole, 2);
        let err = merge(vec![parts[0].clone(), parts[0].clone()]).unwrap_err();
        assert!(
            err.contains("two parts") || err.contains("given twice"),
            "{err}"
        );
    }

    #[test]
    fn other_plans_and_incomplete_grids_are_refused() {
        let whole = test_fixture::results(3);
        let mut parts = shard(&whole, 2);
        parts[1].plan.seed += 1;
        assert!(merge(parts).unwrap_err().contains("another plan"));

        let mut parts = shard(&whole, 2);
        parts[1].environment.commit = Some("other".into());
        assert!(merge(parts).unwrap_err().contains("another build"));

        let mut parts = shard(&whole, 2);
        parts[1].measurements.pop();
        let err = merge(parts).unwrap_err();
        assert!(err.contains("incomplete"), "{err}");

        // Missing shards: nothing to check completeness against, so a partial merge is fine.
        let parts = shard(&whole, 3);
        let partial = merge(parts[..2].to_vec()).unwrap();
        assert_eq!(partial.plan.shards, ["1/3", "2/3"]);

        let mut parts = shard(&whole, 2);
        parts[1].plan.shards = vec!["2/4".into()];
        assert!(merge(parts).unwrap_err().contains("different splits"));
        let mut parts = shard(&whole, 2);
        parts[1].plan.shards = vec!["two".into()];
        assert!(merge(parts).unwrap_err().contains("not of the form i/n"));
    }
}
