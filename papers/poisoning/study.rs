//! The poisoning study (the 1387001 seed): what does overwriting freed memory cost? In the
//! seed, mozjemalloc's poison-on-free added 8.7% instructions per free and 15.1% memory
//! traffic (data reads plus writes), under callgrind, for about 2.5% of a browser benchmark's
//! score. Here the same debug-capable heap runs with poisoning off, the first 64 or 256 bytes
//! of each freed block (mozjemalloc's `some`), and every byte, against the heap with the
//! checks compiled out: callgrind's counts per allocator call and, as the seed counted them,
//! inside `free` per free, and, in separate processes, wall time; on `churn` and on
//! `producer-consumer`, whose frees are cross-thread.

use super::checked::{checked_variant, entry};
use super::{Grid, InstructionPass, Question, SeedFigure, Study};
use alloclab_core::{Poison, Safety};
use alloclab_measure::subjects::SubjectEntry;

checked_variant!(poison_none, Safety::OFF);
checked_variant!(
    poison_some_64,
    Safety {
        poison: Poison::Some(64),
        ..Safety::OFF
    }
);
checked_variant!(
    poison_some_256,
    Safety {
        poison: Poison::Some(256),
        ..Safety::OFF
    }
);
checked_variant!(
    poison_all,
    Safety {
        poison: Poison::All,
        ..Safety::OFF
    }
);

fn variants() -> Vec<SubjectEntry> {
    vec![
        entry("poison-none", poison_none),
        entry("poison-some-64", poison_some_64),
        entry("poison-some-256", poison_some_256),
        entry("poison-all", poison_all),
    ]
}

/// The study.
pub fn study() -> Study {
    Study {
        name: "poisoning",
        title: "What does poisoning freed memory cost in instructions, memory traffic and time?",
        variants,
        subjects: &[
            "poison-none",
            "poison-some-64",
            "poison-some-256",
            "poison-all",
            "lifo",
        ],
        baseline: "poison-none",
        // `producer-consumer` frees nearly every block on a thread other than the one that
        // allocated it at 2 threads; at 1 the same work frees on the same thread.
        full: Grid {
            workloads: vec![
                "churn",
                "bursts",
                "producer-consumer",
                "replay-python3-stdlib-touch",
            ],
            threads: vec![1, 2],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["churn", "producer-consumer", "replay-python3-stdlib-touch"],
            threads: vec![1, 2],
            reps: 7,
            scale: 0.1,
        },
        questions: &[
            Question {
                subject: "poison-all",
                reference: "poison-none",
                text: "poisoning every freed byte against none",
                margins: &[],
            },
            Question {
                subject: "poison-some-256",
                reference: "poison-none",
                text: "poisoning the first 256 bytes against none",
                margins: &[],
            },
            Question {
                subject: "poison-some-64",
                reference: "poison-none",
                text: "poisoning the first 64 bytes against none",
                margins: &[],
            },
            Question {
                subject: "poison-none",
                reference: "lifo",
                text: "checks compiled in and off against compiled out",
                margins: &[],
            },
        ],
        metrics: &["wall"],
        instructions: Some(InstructionPass {
            // Per allocator call, then the seed's own figures: inside `free`, per free.
            metrics: &[
                "instructions",
                "data_reads",
                "data_writes",
                "memory_traffic",
                "d1_misses",
                "free_instructions",
                "free_memory_traffic",
                "free_data_writes",
                "free_d1_misses",
            ],
            workloads: vec!["churn", "producer-consumer"],
            // Two threads: `producer-consumer`'s frees are then cross-thread; `churn` runs two
            // independent workers (callgrind runs the threads one at a time either way).
            threads: vec![2],
            scale: 0.2,
            full_reps: 10,
            quick_reps: 7,
        }),
        programs: None,
        seed: &SEED,
    }
}

/// The seed's figures set beside ours.
const SEED: [SeedFigure; 0] = [];
