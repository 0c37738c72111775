//! Whether the committed studies can be published as one set (issue 43): every study has a
//! full run (`report/`) and a quick run (`quick-report/`), all built at one commit from a clean
//! tree, each in the size its folder says, with no timed measurement that other work disturbed
//! beyond the threshold (`Disturbance::disturbed`, docs/MEASURING.md) or made before
//! disturbance was measured (callgrind's counts are exempt: they do not depend on the load).
//! `alloclab paper check` prints what stands in the way.

use super::Study;
use alloclab_measure::schema::Results;
use std::collections::BTreeSet;
use std::path::Path;

/// What stands in the way of publishing `studies` from `root` (papers/), one line each; empty
/// when nothing does.
/// `same_source(a, b)` says whether two commits build the same binary and studies (they may
/// differ in committed results and prose: the set is made in pieces, each committed).
pub fn problems(
    studies: &[Study],
    root: &Path,
    same_source: &dyn Fn(&str, &str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut commits: BTreeSet<String> = BTreeSet::new();
    for study in studies {
        let folder = root.join(study.name);
        let mut dirs = vec![("report", false), ("quick-report", true)];
        if study.instructions.is_some() {
            dirs.push(("report/instructions", false));
            dirs.push(("quick-report/instructions", true));
        }
        for (dir, quick) in dirs {
            let path = folder.join(dir).join("results.json");
            let here = format!("{}/{dir}", study.name);
            if !path.is_file() {
                out.push(format!(
                    "{here}: no results.json (`alloclab paper {}{}`)",
                    study.name,
                    if quick { " --quick" } else { "" }
                ));
                continue;
            }
            let results = match Results::read(&path) {
                Ok(r) => r,
                Err(e) => {
                    out.push(format!("{here}: {e}"));
                    continue;
                }
            };
            let build = &results.environment.build;
            match &build.commit {
                Some(c) => {
                    commits.insert(c.clone());
                }
                None => out.push(format!("{here}: built at an unknown commit")),
            }
            match build.dirty {
                Some(false) => {}
                Some(true) => out.push(format!("{here}: built from a dirty tree")),
                None => out.push(format!("{here}: no record of whether the tree was clean")),
            }
            if results.plan.quick != quick {
                out.push(format!(
                    "{here}: a {} run in the {} run's folder",
                    if results.plan.quick { "quick" } else { "full" },
                    if quick { "quick" } else { "full" }
                ));
            }
            // Callgrind's counts do not depend on what else runs: disturbance concerns timed runs.
            if dir.ends_with("instructions") {
                continue;
            }
            // Warm-up rounds are discarded by every analysis, so what disturbed them does not
            // matter (the report's first line counts the same measurements).
            let timed: Vec<_> = results.measurements.iter().filter(|m| !m.warmup).collect();
            let measured = timed.len();
            let unknown = timed.iter().filter(|m| m.disturbance.is_none()).count();
            let disturbed = timed
                .iter()
                .filter(|m| m.disturbance.as_ref().is_some_and(|d| d.disturbed))
                .count();
            if disturbed > 0 {
                out.push(format!(
                    "{here}: {disturbed} of {measured} measurements disturbed by other work"
                ));
            }
            if unknown > 0 {
                out.push(format!(
                    "{here}: {unknown} of {measured} measurements made before disturbance was measured"
                ));
            }
        }
    }
    let first = commits.iter().next().cloned();
    if let Some(first) = first {
        if commits.iter().any(|c| !same_source(&first, c)) {
            let list: Vec<&str> = commits.iter().map(|c| &c[..c.len().min(12)]).collect();
            out.push(format!(
                "built at {} commits whose source differs ({}): the set is published from one",
                commits.len(),
                list.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Grid;
    use alloclab_measure::schema::{Disturbance, Measurement, Plan, SCHEMA_VERSION};

    fn grid() -> Grid {
        Grid {
            workloads: vec![],
            threads: vec![],
            reps: 0,
            scale: 1.0,
        }
    }

    fn study(name: &'static str) -> Study {
        Study {
            name,
            title: "a test",
            variants: Vec::new,
            subjects: &["a"],
            baseline: "a",
            full: grid(),
            quick: grid(),
            questions: &[],
            metrics: &["wall"],
            instructions: None,
            programs: None,
            seed: &[],
        }
    }

    fn write(root: &Path, dir: &str, commit: &str, dirty: bool, quick: bool, disturbed: bool) {
        let mut results = Results {
            schema_version: SCHEMA_VERSION,
            environment: Default::default(),
            plan: Plan {
                quick,
                ..Plan::default()
            },
            measurements: vec![Measurement {
                subject: "a".into(),
                describe: "a".into(),
                workload: "w".into(),
                threads: 1,
                round: 0,
                warmup: false,
                order: 0,
                env_pad: 0,
                metrics: Default::default(),
                disturbance: Some(Disturbance {
                    disturbed,
                    ..Disturbance::default()
                }),
            }],
            failures: vec![],
        };
        results.environment.build.commit = Some(commit.into());
        results.environment.build.dirty = Some(dirty);
        std::fs::create_dir_all(root.join(dir)).unwrap();
        results.write(&root.join(dir).join("results.json")).unwrap();
    }

    #[test]
    fn one_clean_undisturbed_commit_is_publishable_and_each_fault_is_named() {
        let root =
            std::env::temp_dir().join(format!("alloclab-publication-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let studies = [study("s1"), study("s2")];
        for s in ["s1", "s2"] {
            write(&root, &format!("{s}/report"), "aaaa", false, false, false);
            write(
                &root,
                &format!("{s}/quick-report"),
                "aaaa",
                false,
                true,
                false,
            );
        }
        let exact = |a: &str, b: &str| a == b;
        assert_eq!(problems(&studies, &root, &exact), Vec::<String>::new());

        write(&root, "s2/report", "bbbb", false, false, false);
        let p = problems(&studies, &root, &exact);
        assert!(p.iter().any(|l| l.contains("built at 2 commits")), "{p:?}");
        // Commits that differ only in results and prose count as one.
        assert_eq!(
            problems(&studies, &root, &|_, _| true),
            Vec::<String>::new()
        );

        write(&root, "s2/report", "aaaa", true, false, true);
        let p = problems(&studies, &root, &exact);
        assert!(
            p.iter().any(|l| l == "s2/report: built from a dirty tree"),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|l| l.contains("1 of 1 measurements disturbed")),
            "{p:?}"
        );
        // The same disturbed measurement as a warm-up, which no analysis reads: no matter.
        let path = root.join("s2/report/results.json");
        let mut warm = Results::read(&path).unwrap();
        warm.environment.build.dirty = Some(false);
        warm.measurements[0].warmup = true;
        warm.write(&path).unwrap();
        assert_eq!(problems(&studies, &root, &exact), Vec::<String>::new());

        write(&root, "s2/report", "aaaa", false, true, false);
        let p = problems(&studies, &root, &exact);
        assert_eq!(
            p,
            vec!["s2/report: a quick run in the full run's folder".to_string()]
        );

        std::fs::remove_dir_all(root.join("s1/quick-report")).unwrap();
        let p = problems(&studies, &root, &exact);
        assert!(
            p.iter()
                .any(|l| l.starts_with("s1/quick-report: no results.json")),
            "{p:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
