//! The run-reuse-order study (the 1924444 seed): which non-full run should serve the next small
//! allocation? The seed's five variants — address-ordered with a current run (old
//! mozjemalloc), strict most-recently-freed, LIFO (mozjemalloc today), MRF with a current run,
//! and that last one with its list links moved into the chunk map (`mrf-current-chunkmap`) —
//! plus LIFO with a current run, which the seed proposed to try, replayed on the bundled
//! traces, touch and no-touch, for time and peak resident size, with the peers for scale. The
//! seed's open questions: "is adding mCurrentRun an advantage?", and is moving the links into
//! the chunk map worth it.

use super::{Grid, Question, SeedFigure, Study};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_policies::configs::Using;
use alloclab_policies::{CurrentRun, Lifo, MrfChunkMap, ThreadLocal};

/// LIFO with a current run (not a named config).
pub type LifoCurrent = Using<CurrentRun<Lifo>, ThreadLocal>;

/// MRF with a current run, its list links in the chunk map: the seed's fifth variant (not a
/// named config). The same order as `mrf-current`; only where the links live differs.
pub type MrfCurrentChunkMap = Using<CurrentRun<MrfChunkMap>, ThreadLocal>;

fn variants() -> Vec<SubjectEntry> {
    vec![
        SubjectEntry::alloclab::<LifoCurrent>("lifo-current"),
        SubjectEntry::alloclab::<MrfCurrentChunkMap>("mrf-current-chunkmap"),
    ]
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
            "mrf-current-chunkmap",
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
        seed: &SEED,
    }
}

/// The study's questions: each order against LIFO, a current run added to MRF and LIFO (the
/// fragmentation-aging study asks them too), and the links moved into the chunk map.
pub const QUESTIONS: [Question; 5] = [
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
    Question {
        subject: "mrf-current-chunkmap",
        reference: "mrf-current",
        text: "MRF + current run: does moving the list links into the chunk map change it?",
        margins: &[],
    },
];

/// Comment 5 of the seed (Paul Bone's benchmarks, mean ± spread of a logalloc replay of one
/// browser session; RSS after the replay): each pair our questions ask, with the seed's
/// variant names. Its "Before" is address-ordered with a current run. Ours replay every bundled
/// trace; the seed's RSS is set beside our peak RSS of the replays that touch their memory.
const SEED: [SeedFigure; 12] = {
    const fn fig(
        what: &'static str,
        seed: f64,
        reference: f64,
        unit: &'static str,
        pair: (&'static str, &'static str),
        metric: &'static str,
        workloads: &'static [&'static str],
    ) -> SeedFigure {
        SeedFigure {
            what,
            seed,
            seed_reference: Some(reference),
            unit,
            subject: pair.0,
            reference: Some(pair.1),
            metric,
            workloads,
        }
    }
    const NOTOUCH: &[&str] = &["replay-*-notouch"];
    const TOUCH: &[&str] = &["replay-*-touch"];
    const MRF_CURRENT: (&str, &str) = ("mrf-current", "mrf");
    const BEFORE: (&str, &str) = ("addr-ordered", "lifo");
    const MRF: (&str, &str) = ("mrf", "lifo");
    const CHUNK_MAP: (&str, &str) = ("mrf-current-chunkmap", "mrf-current");
    [
        fig(
            "replay no touch, MRF → MRF + current run (± 0.077 s, ± 0.073 s)",
            4.001,
            4.001,
            "s",
            MRF_CURRENT,
            "wall",
            NOTOUCH,
        ),
        fig(
            "replay touch, MRF → MRF + current run (± 0.033 s, ± 0.066 s)",
            4.386,
            4.368,
            "s",
            MRF_CURRENT,
            "wall",
            TOUCH,
        ),
        fig(
            "RSS, MRF → MRF + current run",
            169_345_024.0,
            169_664_512.0,
            "bytes",
            MRF_CURRENT,
            "peak_rss",
            TOUCH,
        ),
        fig(
            "replay no touch, LIFO → Before (± 0.051 s, ± 0.058 s)",
            3.998,
            3.959,
            "s",
            BEFORE,
            "wall",
            NOTOUCH,
        ),
        fig(
            "replay touch, LIFO → Before (± 0.093 s, ± 0.104 s)",
            4.421,
            4.334,
            "s",
            BEFORE,
            "wall",
            TOUCH,
        ),
        fig(
            "RSS, LIFO → Before",
            169_967_616.0,
            170_483_712.0,
            "bytes",
            BEFORE,
            "peak_rss",
            TOUCH,
        ),
        fig(
            "replay no touch, LIFO → MRF (± 0.051 s, ± 0.077 s)",
            4.001,
            3.959,
            "s",
            MRF,
            "wall",
            NOTOUCH,
        ),
        fig(
            "replay touch, LIFO → MRF (± 0.093 s, ± 0.033 s)",
            4.368,
            4.334,
            "s",
            MRF,
            "wall",
            TOUCH,
        ),
        fig(
            "RSS, LIFO → MRF",
            169_664_512.0,
            170_483_712.0,
            "bytes",
            MRF,
            "peak_rss",
            TOUCH,
        ),
        fig(
            "replay no touch, MRF + current run → list links in the chunk map (± 0.073 s, \
             ± 0.030 s)",
            3.986,
            4.001,
            "s",
            CHUNK_MAP,
            "wall",
            NOTOUCH,
        ),
        fig(
            "replay touch, MRF + current run → list links in the chunk map (± 0.066 s, \
             ± 0.066 s)",
            4.377,
            4.386,
            "s",
            CHUNK_MAP,
            "wall",
            TOUCH,
        ),
        fig(
            "RSS, MRF + current run → list links in the chunk map",
            169_250_816.0,
            169_345_024.0,
            "bytes",
            CHUNK_MAP,
            "peak_rss",
            TOUCH,
        ),
    ]
};
