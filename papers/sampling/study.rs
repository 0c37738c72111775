//! The sampling study (the KFENCE seed): what does a sampled guarded allocator add to the
//! allocation fast path? KFENCE sends one allocation per interval to a guarded slot; its
//! authors measured the kernel's throughput with it off, with the naive per-allocation counter
//! (3% slower), and with static keys at a 100 ms interval (within the noise: medians 0.6%
//! apart over five runs). Here the debug-capable heap samples one allocation in 100, 1000 or
//! 16384, or one per millisecond or per 100 ms, against sampling off and against the checks
//! compiled out; medians of repeated runs with intervals, and callgrind's counts.

use super::checked::{checked_variant, entry};
use super::{Grid, InstructionPass, Question, Study};
use alloclab_core::Safety;
use alloclab_measure::subjects::SubjectEntry;

checked_variant!(sample_off, Safety::OFF);
checked_variant!(
    sample_100,
    Safety {
        sample: 100,
        ..Safety::OFF
    }
);
checked_variant!(
    sample_1000,
    Safety {
        sample: 1000,
        ..Safety::OFF
    }
);
checked_variant!(
    sample_16384,
    Safety {
        sample: 16384,
        ..Safety::OFF
    }
);
checked_variant!(
    sample_ms_1,
    Safety {
        sample_ms: 1,
        ..Safety::OFF
    }
);
checked_variant!(
    sample_ms_100,
    Safety {
        sample_ms: 100,
        ..Safety::OFF
    }
);

fn variants() -> Vec<SubjectEntry> {
    vec![
        entry("sample-off", sample_off),
        entry("sample-100", sample_100),
        entry("sample-1000", sample_1000),
        entry("sample-16384", sample_16384),
        entry("sample-ms-1", sample_ms_1),
        entry("sample-ms-100", sample_ms_100),
    ]
}

/// The study.
pub fn study() -> Study {
    Study {
        name: "sampling",
        title: "What do sampled guarded allocations add to the fast path, by rate and interval?",
        variants,
        subjects: &[
            "sample-off",
            "sample-100",
            "sample-1000",
            "sample-16384",
            "sample-ms-1",
            "sample-ms-100",
            "lifo",
        ],
        baseline: "sample-off",
        full: Grid {
            workloads: vec!["churn", "larson", "replay-python3-stdlib-notouch"],
            threads: vec![1, 2, 4],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["churn"],
            threads: vec![1, 2],
            reps: 7,
            scale: 0.1,
        },
        questions: &[
            Question {
                subject: "sample-100",
                reference: "sample-off",
                text: "one in 100 against off",
            },
            Question {
                subject: "sample-1000",
                reference: "sample-off",
                text: "one in 1000 against off",
            },
            Question {
                subject: "sample-16384",
                reference: "sample-off",
                text: "one in 16384 against off",
            },
            Question {
                subject: "sample-ms-1",
                reference: "sample-off",
                text: "one per millisecond against off",
            },
            Question {
                subject: "sample-ms-100",
                reference: "sample-off",
                text: "one per 100 ms (KFENCE's interval) against off",
            },
            Question {
                subject: "sample-off",
                reference: "lifo",
                text: "checks compiled in and off against compiled out",
            },
        ],
        metrics: &["wall"],
        instructions: Some(InstructionPass {
            metrics: &["instructions"],
            workloads: vec!["churn"],
            scale: 0.2,
            full_reps: 10,
            quick_reps: 6,
        }),
        programs: None,
    }
}
