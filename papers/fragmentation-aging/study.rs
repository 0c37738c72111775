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

/// The workloads of both grids.
const FULL_WORKLOADS: [&str; 3] = ["aging-phases", "aging-robson-notouch", "aging-trace"];

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
        // At full size each workload makes at least 100 million allocator calls per
        // invocation (`calls`; the test below): an aged heap, not seconds of one. The Robson
        // adversary writes only its blocks' patterns, which reach every page its blocks (at
        // most 4 KiB) cover, so its resident size reads the same without the memory traffic;
        // the phases' 8..64 KiB buffers and the trace's large blocks span pages a pattern
        // leaves untouched, so those two write every byte. Seven rounds after the warm-up, not
        // ten: the grid takes about 36 minutes on two cores (README, "Sizing").
        full: Grid {
            workloads: FULL_WORKLOADS.to_vec(),
            threads: vec![1],
            reps: 7,
            scale: 1.0,
        },
        quick: Grid {
            workloads: FULL_WORKLOADS.to_vec(),
            threads: vec![1],
            reps: 7,
            // A fiftieth: one to three million calls per invocation.
            scale: 0.02,
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

#[cfg(test)]
mod tests {
    use alloclab_measure::workloads::{self, Params};

    /// The bar: at least 100 million allocator calls per invocation of the full run,
    /// computed from each workload's parameters (its own count, not a timing).
    #[test]
    fn every_full_invocation_makes_a_hundred_million_calls() {
        let study = super::study();
        for name in &study.full.workloads {
            let w = workloads::by_name(name).unwrap();
            for &threads in &study.full.threads {
                let params = Params {
                    threads,
                    scale: study.full.scale,
                    seed: 0,
                };
                let calls = w.calls(&params).unwrap_or(0);
                assert!(calls >= 100_000_000, "{name} at {threads} threads: {calls}");
            }
        }
    }
}
