//! The run-reuse-tcache study: do the run-reuse orders of the run-reuse-order study still
//! differ once a thread cache sits in front of the arenas? With a cache, most frees and
//! allocations of small sizes never reach a run: the order only decides which run refills or
//! takes a flushed batch. Each of the five orders (address-ordered with a current run, MRF,
//! LIFO, MRF with a current run, LIFO with a current run) is measured without and with
//! `ThreadCache`, on the replayed traces (touch and no-touch) and on larson, a threaded server
//! loop whose frees often come from another thread.

use super::{Grid, Question, SeedFigure, Study};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_policies::configs::Using;
use alloclab_policies::{AddrOrdered, CurrentRun, Lifo, Mrf, ThreadCache, ThreadLocal};

/// Address-ordered runs with a current run, behind a thread cache.
pub type AddrOrderedTcache = Using<CurrentRun<AddrOrdered>, ThreadLocal, ThreadCache>;
/// Strict most-recently-freed runs, behind a thread cache.
pub type MrfTcache = Using<Mrf, ThreadLocal, ThreadCache>;
/// MRF with a current run, behind a thread cache.
pub type MrfCurrentTcache = Using<CurrentRun<Mrf>, ThreadLocal, ThreadCache>;
/// LIFO with a current run, behind a thread cache.
pub type LifoCurrentTcache = Using<CurrentRun<Lifo>, ThreadLocal, ThreadCache>;

/// The cached orders that are not named configs (LIFO behind the cache is `lifo-tcache`; LIFO
/// with a current run and no cache is the run-reuse-order study's `lifo-current`).
fn variants() -> Vec<SubjectEntry> {
    vec![
        SubjectEntry::alloclab::<AddrOrderedTcache>("addr-ordered-tcache"),
        SubjectEntry::alloclab::<MrfTcache>("mrf-tcache"),
        SubjectEntry::alloclab::<MrfCurrentTcache>("mrf-current-tcache"),
        SubjectEntry::alloclab::<LifoCurrentTcache>("lifo-current-tcache"),
    ]
}

/// Does the cache change this order? (one question per order)
const CACHE_QUESTIONS: [Question; 5] = [
    Question {
        subject: "addr-ordered-tcache",
        reference: "addr-ordered",
        text: "address-ordered + current run: with the cache against without",
        margins: &[],
    },
    Question {
        subject: "mrf-tcache",
        reference: "mrf",
        text: "MRF: with the cache against without",
        margins: &[],
    },
    Question {
        subject: "lifo-tcache",
        reference: "lifo",
        text: "LIFO: with the cache against without",
        margins: &[],
    },
    Question {
        subject: "mrf-current-tcache",
        reference: "mrf-current",
        text: "MRF + current run: with the cache against without",
        margins: &[],
    },
    Question {
        subject: "lifo-current-tcache",
        reference: "lifo-current",
        text: "LIFO + current run: with the cache against without",
        margins: &[],
    },
];

/// Do the orders still differ behind the cache? (the run-reuse-order study's questions, cached)
const ORDER_QUESTIONS: [Question; 4] = [
    Question {
        subject: "mrf-current-tcache",
        reference: "mrf-tcache",
        text: "behind the cache, MRF: does adding a current run change it?",
        margins: &[],
    },
    Question {
        subject: "lifo-current-tcache",
        reference: "lifo-tcache",
        text: "behind the cache, LIFO: does adding a current run change it?",
        margins: &[],
    },
    Question {
        subject: "addr-ordered-tcache",
        reference: "lifo-tcache",
        text: "behind the cache, address-ordered (with current run) against LIFO",
        margins: &[],
    },
    Question {
        subject: "mrf-tcache",
        reference: "lifo-tcache",
        text: "behind the cache, MRF against LIFO",
        margins: &[],
    },
];

const QUESTIONS: [Question; 9] = [
    ORDER_QUESTIONS[0],
    ORDER_QUESTIONS[1],
    ORDER_QUESTIONS[2],
    ORDER_QUESTIONS[3],
    CACHE_QUESTIONS[0],
    CACHE_QUESTIONS[1],
    CACHE_QUESTIONS[2],
    CACHE_QUESTIONS[3],
    CACHE_QUESTIONS[4],
];

/// The study.
pub fn study() -> Study {
    Study {
        name: "run-reuse-tcache",
        title: "Do the run-reuse orders still differ once a thread cache sits in front?",
        variants,
        subjects: &[
            "addr-ordered-tcache",
            "mrf-tcache",
            "lifo-tcache",
            "mrf-current-tcache",
            "lifo-current-tcache",
            "addr-ordered",
            "mrf",
            "lifo",
            "mrf-current",
            "lifo-current",
        ],
        baseline: "lifo-tcache",
        full: Grid {
            workloads: super::REPLAYS
                .iter()
                .copied()
                .chain(["larson", "producer-consumer"])
                .collect(),
            threads: vec![1, 2, 4],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec![
                "replay-python3-stdlib-notouch",
                "replay-python3-stdlib-touch",
                "larson",
            ],
            threads: vec![2],
            reps: 7,
            scale: 0.25,
        },
        questions: &QUESTIONS,
        metrics: &["wall", "peak_rss"],
        instructions: None,
        programs: None,
        seed: &SEED,
    }
}

/// The seed publishes no figure this study's subjects stand for (see the README's "the seed's
/// question"): its figures are the run-reuse-order study's.
const SEED: [SeedFigure; 0] = [];
