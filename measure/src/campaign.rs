//! What makes separate runs parts of one campaign: the same plan and the same build, compared
//! field by field so that a refusal (by `merge`, or by `compare --resume`) can name what
//! differs; and the seed that the shards of one plan share when none is given.

use super::fnv::Fnv1a;
use super::schema::{Environment, Plan};

/// The fields of a plan, each rendered as text. Rendering is what both the comparison and the
/// derived seed work on, so a field added to [`Plan`] must be added here (the destructuring
/// makes that a compile error rather than a silent gap).
pub fn plan_fields(plan: &Plan) -> Vec<(&'static str, String)> {
    let Plan {
        subjects,
        workloads,
        threads,
        reps,
        warmup,
        baseline,
        seed,
        scale,
        quick,
        instructions,
        syscalls,
        shards,
        heap_confs,
        metrics,
        // The margins change what the analysis concludes, not what is measured: runs that
        // differ only in them are still parts of one campaign.
        margins: _,
    } = plan;
    let mut fields = vec![
        ("subjects", list(subjects)),
        ("workloads", list(workloads)),
        ("threads", list(threads)),
        ("reps", reps.to_string()),
        ("warm-up", warmup.to_string()),
        ("baseline", baseline.clone()),
        ("seed", seed.to_string()),
        ("scale", scale.to_string()),
        ("quick", quick.to_string()),
        ("instructions", instructions.to_string()),
        ("heap confs", list(heap_confs)),
        ("shards", list(shards)),
        ("metrics", list(metrics)),
    ];
    // Named only when asked for, so that the plans (and derived seeds) of runs without it
    // read as they did before it existed.
    if *syscalls {
        fields.push(("syscalls", "true".to_string()));
    }
    fields
}

/// The fields that say which build measured: measurements of two builds are not one sample.
pub fn build_fields(schema_version: u32, environment: &Environment) -> Vec<(&'static str, String)> {
    vec![
        ("schema version", schema_version.to_string()),
        ("alloclab version", environment.alloclab_version.clone()),
        (
            "commit",
            environment
                .commit
                .clone()
                .unwrap_or_else(|| "unknown".into()),
        ),
        ("rustc", environment.rustc.clone()),
    ]
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(T::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// A field whose value is not the same in every run compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The field's name, as [`plan_fields`] and [`build_fields`] give it.
    pub field: &'static str,
    /// Its value in each run, in the order given.
    pub values: Vec<String>,
}

/// The fields on which `runs` (each a list of rendered fields, all of the same fields in the
/// same order) do not all agree.
pub fn differences(runs: &[Vec<(&'static str, String)>]) -> Vec<Difference> {
    // By name, not position: a field named only when set (`syscalls`) makes runs' lists of
    // different lengths, and a missing one differs from any value given.
    let mut fields: Vec<&'static str> = Vec::new();
    for (field, _) in runs.iter().flatten() {
        if !fields.contains(field) {
            fields.push(field);
        }
    }
    fields
        .into_iter()
        .filter_map(|field| {
            let values: Vec<String> = runs
                .iter()
                .map(|r| {
                    r.iter()
                        .find(|(f, _)| *f == field)
                        .map_or_else(|| NOT_GIVEN.to_string(), |(_, v)| v.clone())
                })
                .collect();
            values
                .iter()
                .any(|v| *v != values[0])
                .then_some(Difference { field, values })
        })
        .collect()
}

/// The value `differences` gives a field that a run does not name.
pub const NOT_GIVEN: &str = "(not given)";

/// One line per difference, `field: A = value, B = other`, where runs holding the same
/// value are named together (`part 1 and part 3 = ...`): with many shards, the odd one out is
/// what the reader looks for. `labels` names the runs, in the order of the values.
pub fn describe(diffs: &[Difference], labels: &[String]) -> String {
    let mut lines = Vec::new();
    for d in diffs {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for (value, label) in d.values.iter().zip(labels) {
            match groups.iter_mut().find(|(v, _)| v == value) {
                Some((_, names)) => names.push(label),
                None => groups.push((value, vec![label])),
            }
        }
        let groups: Vec<String> = groups
            .into_iter()
            .map(|(value, names)| format!("{} = {value}", and_list(&names)))
            .collect();
        lines.push(format!("{}: {}", d.field, groups.join(", ")));
    }
    lines.join("\n")
}

fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The seed of `plan` when none is given and it runs in shards: every shard of one command
/// line must derive the same schedule, and the clock gives each its own. A hash of the plan's
/// options, without its seed and shards: the shard index must not change it, and neither does
/// the split, so an unsharded run of the same options with `--seed` set to it is the grid
/// the shards merge into. The hash is FNV-1a, spelt out here because std's hashers may change
/// between releases and a seed must not.
pub fn derived_seed(plan: &Plan) -> u64 {
    let mut hash = Fnv1a::new();
    for (field, value) in plan_fields(plan) {
        // No `--metrics` hashes as before the option existed, so that a plan's seed stays.
        let unset_metrics = field == "metrics" && value == "[]";
        if field != "seed" && field != "shards" && !unset_metrics {
            hash.write(field.as_bytes());
            hash.write(b"=");
            hash.write(value.as_bytes());
            hash.write(b"\n");
        }
    }
    hash.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    fn fnv(bytes: &[u8]) -> u64 {
        let mut h = Fnv1a::new();
        h.write(bytes);
        h.finish()
    }

    #[test]
    fn fnv1a_gives_the_published_values() {
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_derived_seed_ignores_seed_and_shards_only() {
        let plan = test_fixture::results(3).plan;
        let seed = derived_seed(&plan);
        // Pinned: a change here changes the schedule of every unseeded sharded campaign,
        // which must not happen by accident.
        assert_eq!(seed, 0xf4bf_8ae6_f794_446d);
        let mut same = plan.clone();
        same.seed = 7;
        same.shards = vec!["2/3".into()];
        assert_eq!(derived_seed(&same), seed);
        let mut other = plan.clone();
        other.reps += 1;
        assert_ne!(derived_seed(&other), seed);
        let mut other = plan.clone();
        other.subjects.swap(0, 1);
        assert_ne!(
            derived_seed(&other),
            seed,
            "subject order is part of the plan"
        );
        let mut other = plan;
        other.scale = 0.5;
        assert_ne!(derived_seed(&other), seed);
    }

    #[test]
    fn differences_name_each_field_and_group_equal_values() {
        let a = test_fixture::results(3).plan;
        let mut b = a.clone();
        b.seed = 456;
        b.reps = 4;
        let mut c = a.clone();
        c.seed = 789;
        let runs: Vec<_> = [&a, &b, &a, &c].iter().map(|p| plan_fields(p)).collect();
        let diffs = differences(&runs);
        let fields: Vec<&str> = diffs.iter().map(|d| d.field).collect();
        assert_eq!(fields, ["reps", "seed"]);
        let labels: Vec<String> = (1..=4).map(|i| format!("part {i}")).collect();
        assert_eq!(
            describe(&diffs, &labels),
            "reps: part 1, part 3 and part 4 = 3, part 2 = 4\n\
             seed: part 1 and part 3 = 42, part 2 = 456, part 4 = 789"
        );
        assert!(differences(&runs[..1]).is_empty());
    }

    #[test]
    fn a_field_named_in_one_run_only_is_a_difference_in_either_order() {
        let a = test_fixture::results(3).plan;
        let mut b = a.clone();
        b.syscalls = true;
        for (first, second) in [(&a, &b), (&b, &a)] {
            let runs = vec![plan_fields(first), plan_fields(second)];
            let diffs = differences(&runs);
            let fields: Vec<&str> = diffs.iter().map(|d| d.field).collect();
            assert_eq!(fields, ["syscalls"]);
            let given = |p: &Plan| if p.syscalls { "true" } else { NOT_GIVEN };
            assert_eq!(diffs[0].values, [given(first), given(second)]);
        }
        assert!(differences(&[]).is_empty());
    }
}
