//! # Studies reproduced by one command (`alloclab paper <study>`)
//!
//! Each study of `papers/` is defined here, one file each: the subjects it compares
//! (including variants that are not named configs, such as the arena-choice bug of the
//! thread-arenas seed), the workloads, thread counts and baseline, and the head-to-head
//! questions its README answers. Running one is a `compare` run with these settings, plus
//! `questions.md`: each question's pair compared directly (ratio of medians with its bootstrap
//! interval, Mann-Whitney U, Holm-adjusted across the study's questions).
//!
//! Sits above `measure` (which knows nothing of studies), below the command line.

mod questions;
mod run_reuse_order;
mod run_reuse_tcache;
mod thread_arenas;

pub use questions::answer;

use crate::measure::subjects::SubjectEntry;

/// A head-to-head question: is `subject` different from `reference` on this metric?
#[derive(Clone, Copy, Debug)]
pub struct Question {
    /// The subject asked about.
    pub subject: &'static str,
    /// What it is compared with.
    pub reference: &'static str,
    /// In words.
    pub text: &'static str,
}

/// A study's grid at one size.
#[derive(Clone, Debug)]
pub struct Grid {
    /// Workload names.
    pub workloads: Vec<&'static str>,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Measured rounds.
    pub reps: usize,
    /// Amount of work relative to the full workloads.
    pub scale: f64,
}

/// One study.
pub struct Study {
    /// The name given to `alloclab paper`.
    pub name: &'static str,
    /// One line: the seed's question.
    pub title: &'static str,
    /// The study's own subjects (variants that are not named configs), made fresh in each
    /// measuring process.
    pub variants: fn() -> Vec<SubjectEntry>,
    /// The subjects compared, in report order (variants, named configs, peers).
    pub subjects: &'static [&'static str],
    /// The subject ratios are taken against.
    pub baseline: &'static str,
    /// The full grid.
    pub full: Grid,
    /// The `--quick` grid.
    pub quick: Grid,
    /// The head-to-head questions `questions.md` answers.
    pub questions: &'static [Question],
    /// Metrics the questions are asked on (`wall`, `peak_rss`, ...).
    pub metrics: &'static [&'static str],
}

/// Every study.
pub fn all() -> Vec<Study> {
    vec![
        run_reuse_order::study(),
        run_reuse_tcache::study(),
        thread_arenas::study(),
    ]
}

/// The study named `name`.
pub fn find(name: &str) -> Option<Study> {
    all().into_iter().find(|s| s.name == name)
}

/// Every study's variants: the measuring child must be able to make them.
pub fn variants() -> Vec<SubjectEntry> {
    all().iter().flat_map(|s| (s.variants)()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::subjects::named_configs;

    /// Peers a study may name (present when the build has them).
    const PEERS: &[&str] = &["system", "jemalloc", "mimalloc", "snmalloc", "rpmalloc"];

    #[test]
    fn every_study_names_subjects_that_exist() {
        let mut known: Vec<String> = named_configs().into_iter().map(|e| e.name).collect();
        known.extend(variants().into_iter().map(|e| e.name));
        for study in all() {
            assert!(find(study.name).is_some());
            assert!(study.subjects.contains(&study.baseline), "{}", study.name);
            for s in study.subjects {
                assert!(
                    PEERS.contains(s) || known.iter().any(|k| k == s),
                    "{}: unknown subject {s}",
                    study.name
                );
            }
            for q in study.questions {
                assert!(study.subjects.contains(&q.subject), "{}", q.text);
                assert!(study.subjects.contains(&q.reference), "{}", q.text);
            }
        }
    }

    #[test]
    fn variant_names_are_unique() {
        let names: Vec<String> = variants().into_iter().map(|e| e.name).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "variant {n} defined twice");
            assert!(
                !named_configs().iter().any(|e| &e.name == n),
                "variant {n} shadows a named config"
            );
        }
    }
}
