//! The run-reuse-order study (the 1924444 seed): which non-full run should serve the next small
//! allocation? Five variants — address-ordered with a current run (old mozjemalloc), strict
//! most-recently-freed, LIFO (mozjemalloc today), and MRF and LIFO each with a current run —
//! replayed on the bundled traces, touch and no-touch, for time and peak resident size, with
//! the peers for scale. The seed's open question: "is adding mCurrentRun an advantage?"

use super::{Grid, Question, Study};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_policies::configs::Using;
use alloclab_policies::{CurrentRun, Lifo, ThreadLocal};

/// LIFO with a current run: the one variant of the five that is not a named config.
pub type LifoCurrent = Using<CurrentRun<Lifo>, ThreadLocal>;

fn variants() -> Vec<SubjectEntry> {
    vec![SubjectEntry::alloclab::<LifoCurrent>("lifo-current")]
}

/// The study.
pub fn study() -> Study {
    Study {
        name: "run-reuse-order",
        title: "Which non-full run should serve the next allocation, and does a current run help?",
        variants,
        subjects: &[
            "addr-ordered",
            "mrf",
            "lifo",
            "mrf-current",
            "lifo-current",
            "system",
            "jemalloc",
            "mimalloc",
        ],
        baseline: "lifo",
        full: Grid {
            workloads: super::REPLAYS.to_vec(),
            threads: vec![1],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec![
                "replay-python3-stdlib-notouch",
                "replay-python3-stdlib-touch",
                "replay-synthetic-bursts-notouch",
                "replay-synthetic-bursts-touch",
            ],
            threads: vec![1],
            reps: 7,
            scale: 0.25,
        },
        questions: &QUESTIONS,
        metrics: &["wall", "peak_rss"],
        instructions: None,
        programs: None,
    }
}

/// The study's questions: each order against LIFO, and a current run added to MRF and LIFO
/// (the fragmentation-aging study asks them too).
pub const QUESTIONS: [Question; 4] = [
    Question {
        subject: "mrf-current",
        reference: "mrf",
        text: "MRF: does adding a current run change it?",
        margins: &[],
    },
    Question {
        subject: "lifo-current",
        reference: "lifo",
        text: "LIFO: does adding a current run change it?",
        margins: &[],
    },
    Question {
        subject: "addr-ordered",
        reference: "lifo",
        text: "address-ordered (with current run) against LIFO",
        margins: &[],
    },
    Question {
        subject: "mrf",
        reference: "lifo",
        text: "MRF against LIFO",
        margins: &[],
    },
];
