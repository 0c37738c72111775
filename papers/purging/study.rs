//! The purging study (issue 42): when an arena's dirty pages go back to the OS, and whether a
//! freed huge mapping is kept for the next huge allocation. mozjemalloc's rule, alloclab's
//! before issue 42, gives back every dirty page beyond a threshold at once (`purge:threshold`)
//! and unmaps every freed huge block; jemalloc decays dirty pages over time, mimalloc resets
//! them after a delay. The default (`lifo-tcache`) decays over 1000 ms and keeps up to 64 MiB
//! of freed huge mappings. Each rule is measured on the four program shapes of the issue (idle
//! phases, cross-thread transfers, a loop of large blocks, cross-thread frees) and on replays of
//! real programs' traces: time, system time, and the memory each keeps, at its peak and on
//! average over the run (what a decay keeps is the price of the time it saves).

use super::{Grid, Question, SeedFigure, Study};
use alloclab_core::{Options, Purge};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_policies::configs::LifoTcache;

/// `lifo-tcache` with other purge options, under `name`.
fn lifo_tcache_with(name: &str, purge: Purge, huge_cache: bool) -> SubjectEntry {
    let options = Options {
        purge: Some(purge),
        huge_cache_bytes: if huge_cache {
            Options::DEFAULT.huge_cache_bytes
        } else {
            0
        },
        ..Options::DEFAULT
    };
    SubjectEntry::alloclab::<LifoTcache>("lifo-tcache")
        .configured(name, options)
        .expect("an alloclab heap takes options")
}

/// The rules that are not the default (`lifo-tcache`: a decay of 1000 ms, the huge cache).
fn variants() -> Vec<SubjectEntry> {
    vec![
        // The rules before issue 42: exactly its system calls.
        lifo_tcache_with("threshold", Purge::Threshold, false),
        // The threshold with the huge cache: the cache's share of the change.
        lifo_tcache_with("threshold-huge-cache", Purge::Threshold, true),
        lifo_tcache_with("decay-100", Purge::Decay(100), true),
        // jemalloc's default `dirty_decay_ms`.
        lifo_tcache_with("decay-10000", Purge::Decay(10_000), true),
    ]
}

const QUESTIONS: [Question; 7] = [
    Question {
        subject: "lifo-tcache",
        reference: "threshold",
        text: "the default (decay 1000 ms, huge cache) against the rules before issue 42",
        margins: &[],
    },
    Question {
        subject: "threshold-huge-cache",
        reference: "threshold",
        text: "the huge cache alone (threshold purging in both)",
        margins: &[],
    },
    Question {
        subject: "lifo-tcache",
        reference: "threshold-huge-cache",
        text: "decay (1000 ms) against threshold, the huge cache in both",
        margins: &[],
    },
    Question {
        subject: "decay-100",
        reference: "lifo-tcache",
        text: "a shorter decay: 100 ms against 1000 ms",
        margins: &[],
    },
    Question {
        subject: "decay-10000",
        reference: "lifo-tcache",
        text: "a longer decay: 10000 ms (jemalloc's default) against 1000 ms",
        margins: &[],
    },
    Question {
        subject: "lifo-tcache",
        reference: "mimalloc",
        text: "the default against mimalloc",
        margins: &[],
    },
    Question {
        subject: "lifo-tcache",
        reference: "jemalloc",
        text: "the default against jemalloc",
        margins: &[],
    },
];

/// The four shapes of issue 42 and three touched replays (a replay that does not touch its
/// blocks leaves no page resident to purge).
const WORKLOADS: [&str; 7] = [
    "idle-bursts",
    "transfer-stress",
    "large-loop",
    "xthread-free",
    "replay-python3-stdlib-touch",
    "replay-gcc-cc1-touch",
    "replay-synthetic-bursts-touch",
];

/// The study.
pub fn study() -> Study {
    Study {
        name: "purging",
        title: "When should dirty pages go back to the OS: at a threshold, or after a decay?",
        variants,
        subjects: &[
            "threshold",
            "threshold-huge-cache",
            "decay-100",
            "lifo-tcache",
            "decay-10000",
            "jemalloc",
            "mimalloc",
        ],
        baseline: "threshold",
        full: Grid {
            workloads: WORKLOADS.to_vec(),
            threads: vec![1, 2, 4],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["idle-bursts", "large-loop", "replay-synthetic-bursts-touch"],
            threads: vec![2],
            reps: 7,
            scale: 0.25,
        },
        questions: &QUESTIONS,
        // Time, the kernel's share of it (purges and mappings), and the memory kept: at the
        // peak and on average over the run (sampled every 10 ms); the heap's purge count
        // (alloclab subjects only) says why.
        metrics: &["wall", "sys", "peak_rss", "rss_mean_bytes", "heap.purges"],
        instructions: None,
        programs: None,
        seed: &SEED,
    }
}

/// No seed: the question is issue 42's, whose own measurements (real programs under
/// `LD_PRELOAD`) are in docs/PERFORMANCE.md.
const SEED: [SeedFigure; 0] = [];
