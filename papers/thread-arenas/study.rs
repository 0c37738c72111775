//! The thread-arenas study (the 1436541 seed): worker threads allocating small objects, with an
//! occasional request above 512 bytes. In the seed, that one large request re-pointed the
//! thread at the shared arena for good, and malloc time per worker thread went from about 125
//! to about 20 units once fixed, the figure this study measures (`alloc_ns_per_thread`, from the
//! probe; every worker does the same fixed work at any thread count). The buggy arena choice (`LargeResetsShared<512>`) is measured
//! against `ThreadLocal<496>` (large requests to the shared arena, the thread keeps its own),
//! `ThreadLocal`, `Single` and the peers.

use super::{Grid, Question, SeedFigure, Study};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_policies::configs::Using;
use alloclab_policies::{LargeResetsShared, Lifo, Single, ThreadLocal};

/// The seed's bug: a request above 512 bytes resets the thread to the shared arena.
pub type ArenaResetBug = Using<Lifo, LargeResetsShared<512>>;
/// The fix as mozjemalloc made it: requests above 496 bytes go to the shared arena, the thread
/// keeps its own arena for the rest.
pub type ThreadSmall = Using<Lifo, ThreadLocal<496>>;
/// An arena per thread for every size.
pub type Thread = Using<Lifo, ThreadLocal>;
/// One arena for every thread.
pub type Shared = Using<Lifo, Single>;

fn variants() -> Vec<SubjectEntry> {
    vec![
        SubjectEntry::alloclab::<ArenaResetBug>("arena-reset-bug"),
        SubjectEntry::alloclab::<ThreadSmall>("thread-small-496"),
        SubjectEntry::alloclab::<Thread>("thread"),
        SubjectEntry::alloclab::<Shared>("single"),
    ]
}

/// The study.
pub fn study() -> Study {
    Study {
        name: "thread-arenas",
        title: "What does resetting a worker thread to the shared arena cost, and what fixes it?",
        variants,
        subjects: &[
            "arena-reset-bug",
            "thread-small-496",
            "thread",
            "single",
            "system",
            "jemalloc",
            "mimalloc",
        ],
        baseline: "arena-reset-bug",
        full: Grid {
            workloads: vec!["thread-arena"],
            threads: vec![1, 2, 4, 8],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["thread-arena"],
            threads: vec![2, 4, 8],
            reps: 7,
            scale: 0.1,
        },
        questions: &[
            Question {
                subject: "thread-small-496",
                reference: "arena-reset-bug",
                text: "the fix (ThreadLocal<496>) against the bug",
                margins: &[],
            },
            Question {
                subject: "thread",
                reference: "arena-reset-bug",
                text: "an arena per thread for every size against the bug",
                margins: &[],
            },
            Question {
                subject: "single",
                reference: "arena-reset-bug",
                text: "one shared arena against the bug",
                margins: &[],
            },
            Question {
                subject: "thread-small-496",
                reference: "thread",
                text: "the fix against an arena per thread for every size",
                margins: &[],
            },
        ],
        // Time inside the allocator per worker thread is the seed's figure (it puts the probe
        // in front of every subject); wall time and peak RSS ("whether the memory wins
        // evaporate") beside it, and the arena locks' contended acquisitions and wait, which
        // say why (alloclab subjects only).
        metrics: &[
            "alloc_ns_per_thread",
            "alloc_ns_per_thread_max",
            "wall",
            "peak_rss",
        ],
        instructions: None,
        programs: None,
        seed: &SEED,
    }
}

/// The seed's figures (comments 1 and 6): malloc time per worker thread, bug → fix, read
/// by its authors off profiles ("~"), on four browser benchmarks; the first gives no unit.
const SEED: [SeedFigure; 4] = {
    const fn fig(what: &'static str, fix: f64, bug: f64, unit: &'static str) -> SeedFigure {
        SeedFigure {
            what,
            seed: fix,
            seed_reference: Some(bug),
            unit,
            subject: "thread-small-496",
            reference: Some("arena-reset-bug"),
            metric: "alloc_ns_per_thread",
            workloads: &["thread-arena"],
        }
    }
    [
        fig(
            "MotionMark, malloc time per worker (~)",
            20.0,
            125.0,
            "(no unit given)",
        ),
        fig("HTML spec, malloc time per worker (~)", 0.015, 0.045, "s"),
        fig(
            "StyleBench, malloc time per worker (~, \"to zero\")",
            0.0,
            0.030,
            "s",
        ),
        fig(
            "large GitHub diff, malloc time per worker (~)",
            0.002,
            0.025,
            "s",
        ),
    ]
};
