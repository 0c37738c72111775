//! The fragmentation-aging study (issue 25): does the order in which runs are reused change
//! how much memory a heap holds beyond what is live, once it has aged? Every run-reuse order
//! of the run-reuse-order study, the default config with its thread cache, and the peers, on
//! the three aging workloads (a phased server, a Robson-style adversary, a trace replayed
//! again and again), with fragmentation read from the resident size against the live bytes
//! the workload counts (`measure/src/live.rs`), so the peers are measured the same way.

use super::{Grid, Question, SeedFigure, Study};
use alloclab_measure::subjects::SubjectEntry;

fn variants() -> Vec<SubjectEntry> {
    // `lifo-current` is the run-reuse-order study's variant, made by that study.
    Vec::new()
}

/// The run-reuse-order study's questions (in this study's order), and the thread cache's.
const QUESTIONS: [Question; 5] = {
    let q = super::run_reuse_order::QUESTIONS;
    [
        q[2],
        q[3],
        q[0],
        q[1],
        Question {
            subject: "lifo-tcache",
            reference: "lifo",
            text: "LIFO: does a thread cache change it?",
            margins: &[],
        },
    ]
};

/// The study.
pub fn study() -> Study {
    Study {
        name: "fragmentation-aging",
        title: "Does run reuse order change fragmentation once a heap has aged?",
        variants,
        subjects: &[
            "addr-ordered",
            "mrf",
            "lifo",
            "mrf-current",
            "lifo-current",
            "lifo-tcache",
            "system",
            "jemalloc",
            "mimalloc",
        ],
        baseline: "lifo",
        full: Grid {
            workloads: vec!["aging-phases", "aging-robson", "aging-trace"],
            threads: vec![1],
            reps: 10,
            // Twice the workloads' full size: twice the requests, cycles and replays (the
            // Robson budget stays at 32 MiB).
            scale: 2.0,
        },
        quick: Grid {
            workloads: vec!["aging-phases", "aging-robson", "aging-trace"],
            threads: vec![1],
            reps: 7,
            scale: 0.25,
        },
        questions: &QUESTIONS,
        metrics: &["rss_frag_end", "rss_frag_peak", "peak_rss"],
        instructions: None,
        programs: None,
        seed: &SEED,
    }
}

/// The seed publishes no figure this study's subjects stand for (see the README's "the seed's
/// question"): its figures are the run-reuse-order study's.
const SEED: [SeedFigure; 0] = [];
