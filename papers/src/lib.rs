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

mod checked;
#[path = "../debug-options/study.rs"]
mod debug_options;
#[path = "../fragmentation-aging/study.rs"]
mod fragmentation_aging;
#[path = "../poisoning/study.rs"]
mod poisoning;
pub mod publication;
#[path = "../purging/study.rs"]
mod purging;
mod questions;
#[path = "../run-reuse-order/study.rs"]
mod run_reuse_order;
#[path = "../run-reuse-tcache/study.rs"]
mod run_reuse_tcache;
#[path = "../sampling/study.rs"]
mod sampling;
#[path = "../thread-arenas/study.rs"]
mod thread_arenas;

pub use questions::{answer, readme_block, with_block};

use alloclab_measure::programs::{Preload, Program};
use alloclab_measure::subjects::SubjectEntry;

/// A head-to-head question: is `subject` different from `reference` on this metric?
#[derive(Clone, Copy, Debug)]
pub struct Question {
    /// The subject asked about.
    pub subject: &'static str,
    /// What it is compared with.
    pub reference: &'static str,
    /// In words.
    pub text: &'static str,
    /// Equivalence margins for this question, `(metric, margin)` (`0.02`: within ±2%); a
    /// metric not listed takes `alloclab_measure::analysis::default_margin`.
    pub margins: &'static [(&'static str, f64)],
}

/// A figure the seed published, kept as data so that `questions.md` and the README's generated
/// block set ours beside it (no number of the seed's or ours typed into prose). The seed's
/// values are compared through their ratio (machines differ; a ratio travels), and ours are the
/// medians of `subject` and `reference` on `metric`, cell by cell.
#[derive(Clone, Copy, Debug)]
pub struct SeedFigure {
    /// What the seed measured, in its words: benchmark, variants, how the value was read.
    pub what: &'static str,
    /// The seed's value for the variant it asked about.
    pub seed: f64,
    /// The seed's value for what it compared that variant with, if it compared two.
    pub seed_reference: Option<f64>,
    /// The unit of the seed's values, as `analysis::METRICS` names units (`s`, `bytes`,
    /// `1/s`), or another (`requests/s`, `instructions per free`), written as it is.
    pub unit: &'static str,
    /// Our subject standing for the seed's variant.
    pub subject: &'static str,
    /// Our subject standing for the seed's reference (`None`: only the subject's median is
    /// set beside the seed's value).
    pub reference: Option<&'static str>,
    /// Our metric standing for the seed's measure.
    pub metric: &'static str,
    /// The workloads standing for the seed's benchmark (`*` matches any text; empty: every
    /// workload of the run).
    pub workloads: &'static [&'static str],
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
    /// A second pass under callgrind, if the study counts instructions.
    pub instructions: Option<InstructionPass>,
    /// For a study of whole programs under `LD_PRELOAD` (as `compare --programs`), instead of
    /// workloads in process: makes the programs (building what it must in the directory
    /// given) and the allocators to preload, which `subjects` names.
    pub programs: Option<ProgramSet>,
    /// The seed's published figures, set beside ours in `questions.md` and the README.
    pub seed: &'static [SeedFigure],
}

/// Makes a program study's programs (in the directory given) and preloads.
pub type ProgramSet = fn(&std::path::Path) -> Result<(Vec<Program>, Vec<Preload>), String>;

/// A study's callgrind pass (`compare --instructions`): the same subjects, each call's
/// instructions, data reads and writes and cache misses counted (per call and per free), at
/// the grid's scale times `scale`, on `threads`. Its results and answers go to
/// `instructions/` beside the timed pass's.
#[derive(Clone, Debug)]
pub struct InstructionPass {
    /// Metrics the questions are asked on (`instructions`, `data_writes`, ...).
    pub metrics: &'static [&'static str],
    /// Workloads (a subset of the grid's: callgrind runs some fifty times slower).
    pub workloads: Vec<&'static str>,
    /// Thread counts (callgrind runs one thread at a time, so more than one only for a
    /// workload whose threads change what the allocator does, such as cross-thread frees;
    /// workloads that ignore threads run at 1).
    pub threads: Vec<usize>,
    /// Amount of work relative to the grid's (callgrind's counts per call settle long before
    /// a timer's medians do).
    pub scale: f64,
    /// Measured rounds of the full run (no warm-up round: the counts need none).
    pub full_reps: usize,
    /// Measured rounds of `--quick`.
    pub quick_reps: usize,
}

/// Every bundled trace, each replayed without and with touching the memory: the full grid of
/// the run-reuse studies.
pub const REPLAYS: &[&str] = &[
    "replay-python3-stdlib-notouch",
    "replay-python3-stdlib-touch",
    "replay-lua5.4-notouch",
    "replay-lua5.4-touch",
    "replay-sqlite3-notouch",
    "replay-sqlite3-touch",
    "replay-gcc-cc1-notouch",
    "replay-gcc-cc1-touch",
    "replay-synthetic-bursts-notouch",
    "replay-synthetic-bursts-touch",
];

/// Every study.
pub fn all() -> Vec<Study> {
    vec![
        run_reuse_order::study(),
        run_reuse_tcache::study(),
        thread_arenas::study(),
        poisoning::study(),
        sampling::study(),
        debug_options::study(),
        fragmentation_aging::study(),
        purging::study(),
    ]
}

/// The study named `name`.
pub fn find(name: &str) -> Option<Study> {
    all().into_iter().find(|s| s.name == name)
}

/// A study's own tables beside its seed's numbers, rendered from the results in `dir` into
/// its README's generated block (`None`: the study has none).
fn study_tables(study: &Study, dir: &std::path::Path) -> Result<Option<String>, String> {
    match study.name {
        "poisoning" => poisoning::mode_for_mode(dir),
        _ => Ok(None),
    }
}

/// Every study's variants: the measuring child must be able to make them.
pub fn variants() -> Vec<SubjectEntry> {
    all().iter().flat_map(|s| (s.variants)()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloclab_measure::builtin_subjects as builtin;

    #[test]
    fn every_study_names_subjects_and_metrics_that_exist() {
        let mut known: Vec<String> = builtin().into_iter().map(|e| e.name).collect();
        known.extend(variants().into_iter().map(|e| e.name));
        if !cfg!(feature = "peers") {
            // Built without the C peers (`cargo test -p alloclab-papers` alone): a study may
            // still name them; `compare` refuses them in such a build, saying why.
            known.extend(alloclab_measure::peers::C_PEERS.map(String::from));
        }
        for s in all().into_iter().filter(|s| s.programs.is_none()) {
            for name in s.subjects {
                assert!(known.iter().any(|k| k == name), "{}: {name}", s.name);
            }
            assert!(s.subjects.contains(&s.baseline), "{}", s.name);
            for q in s.questions {
                assert!(s.subjects.contains(&q.subject), "{}", s.name);
                assert!(s.subjects.contains(&q.reference), "{}", s.name);
            }
            let counted = s.instructions.iter().flat_map(|p| p.metrics.iter());
            for m in s.metrics.iter().chain(counted) {
                assert!(questions::METRICS.contains(m), "{}: metric {m}", s.name);
            }
            for w in s.instructions.iter().flat_map(|p| &p.workloads) {
                assert!(s.full.workloads.contains(w), "{}: {w}", s.name);
            }
            // The seed's figures stand beside subjects and metrics the study measures.
            let measured: Vec<&str> = s
                .metrics
                .iter()
                .chain(s.instructions.iter().flat_map(|p| p.metrics.iter()))
                .copied()
                .collect();
            for f in s.seed {
                assert!(
                    s.subjects.contains(&f.subject),
                    "{}: seed {}",
                    s.name,
                    f.what
                );
                if let Some(r) = f.reference {
                    assert!(s.subjects.contains(&r), "{}: seed {}", s.name, f.what);
                }
                assert!(measured.contains(&f.metric), "{}: seed {}", s.name, f.what);
            }
        }
    }

    #[test]
    fn every_study_lives_in_its_own_folder_with_its_readme() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut folders: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                path.join("study.rs")
                    .exists()
                    .then(|| path.file_name().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        folders.sort();
        let mut names: Vec<String> = all().iter().map(|s| s.name.to_string()).collect();
        names.sort();
        assert_eq!(
            folders, names,
            "one folder with a study.rs per registered study"
        );
        for name in &names {
            assert!(
                root.join(name).join("README.md").exists(),
                "papers/{name}/README.md"
            );
        }
    }

    /// Every README's generated block is what its committed results give: editing a number in
    /// it, or committing new results without `alloclab paper <study> --render-readme`, fails.
    #[test]
    fn every_readme_block_is_rendered_from_the_committed_results() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for study in all() {
            let folder = root.join(study.name);
            let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
            let Some(block) = readme_block(&study, &folder).unwrap() else {
                assert!(!readme.contains(questions::BEGIN), "{}", study.name);
                continue;
            };
            assert!(
                readme.contains(&block),
                "papers/{}/README.md: its generated block differs from what its results give; \
                 run `alloclab paper {} --render-readme`",
                study.name,
                study.name
            );
            assert_eq!(with_block(&readme, &block), readme, "{}", study.name);
        }
    }

    #[test]
    fn variant_names_are_unique_and_not_builtin() {
        let builtin: Vec<String> = builtin().into_iter().map(|e| e.name).collect();
        let mut names: Vec<String> = variants().into_iter().map(|e| e.name).collect();
        for n in &names {
            assert!(!builtin.contains(n), "{n} shadows a built-in subject");
        }
        let before = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), before);
    }

    #[test]
    fn hardening_variants_run_with_their_options() {
        for s in [poisoning::study(), sampling::study()] {
            for v in (s.variants)() {
                let heap = (v.make)();
                let p = heap.malloc(300);
                assert!(!p.is_null(), "{}", v.name);
                // SAFETY: `p` came from this subject's malloc and is freed once.
                unsafe { heap.free(p) };
                // The poisoning variants share `Checked`; the sampling study adds
                // `lifo-tcache` configs that compile in sampling alone.
                let configs = [
                    "checked",
                    "NaiveTcache",
                    "GateTcache",
                    "StaticKeyTcache",
                    "StealTcache",
                ];
                assert!(
                    configs.contains(&heap.name().as_str()),
                    "{}: {}",
                    v.name,
                    heap.name()
                );
            }
        }
    }
}
