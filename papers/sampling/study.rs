//! The sampling study (the KFENCE seed): what does a sampled guarded allocator add to the
//! allocation fast path? KFENCE sends one allocation per interval to a guarded slot; its
//! authors measured the kernel's throughput with it off, with the naive per-allocation counter
//! (3% slower), and with static keys at a 100 ms interval (within the noise: medians 0.6%
//! apart over five runs). Here the debug-capable heap samples one allocation in 100, 1000 or
//! 16384, or one per millisecond or per 100 ms, against sampling off and against the checks
//! compiled out; medians of repeated runs with intervals, and callgrind's counts.
//!
//! The seed's own comparison is of decision implementations, on an allocator with a per-CPU
//! fast path: a naive counter on every allocation, a static key opened by a timer, and
//! stealing (the decision where the allocator refills). Here they are `Config::SAMPLE_PATH`s
//! of `lifo-tcache` with only the sampling check compiled in, each sampling one allocation
//! per 100 ms as the seed's static keys did: `Countdown` (naive), `StaticKey` (a 5-byte `nop`
//! in the fast path's code, patched into a `jmp` when the 100 ms clock fires and back once the
//! sample is taken: `core/src/debug/static_key.rs`; a shared flag where the code cannot be patched),
//! `SlowPath` (stealing), and `Gate`, a shared flag read on every allocation (what a static
//! key would cost as a load); against `lifo-tcache` itself (nothing compiled in) and against
//! the same heap with the check compiled in and sampling off.
//!
//! The seed measured throughput, sysbench's requests per second with 8 threads; the
//! `requests` workload is that shape (each thread serving requests, each a fixed batch of 16
//! allocations and their frees, so requests/s is `ops_per_sec` / 32), measured at 1, 2, 4 and
//! 8 threads and asked about on `ops_per_sec` beside wall time; callgrind counts instructions
//! per allocator call on `churn` and `requests`.

use super::checked::{checked_variant, entry};
use super::{Grid, InstructionPass, Question, SeedFigure, Study};
use alloclab_core::{Config, DebugCaps, Safety, SamplePath};
use alloclab_measure::subjects::SubjectEntry;
use alloclab_policies::{Lifo, ThreadCache, ThreadLocal};

/// `lifo-tcache` with only the sampling check compiled in, deciding at `$path`.
macro_rules! sampling_tcache {
    ($name:ident, $path:expr) => {
        /// `lifo-tcache`, only sampling compiled in.
        pub struct $name;
        impl Config for $name {
            type Reuse = Lifo;
            type Arenas = ThreadLocal;
            type Front = ThreadCache;
            const NAME: &'static str = stringify!($name);
            const DEBUG: DebugCaps = DebugCaps::SAMPLE;
            const SAMPLE_PATH: SamplePath = $path;
        }
    };
}
sampling_tcache!(NaiveTcache, SamplePath::Countdown);
sampling_tcache!(GateTcache, SamplePath::Gate);
sampling_tcache!(StaticKeyTcache, SamplePath::StaticKey);
sampling_tcache!(StealTcache, SamplePath::SlowPath);

/// One per 100 ms, the seed's interval.
const EVERY_100_MS: Safety = Safety {
    sample_ms: 100,
    ..Safety::OFF
};

checked_variant!(tcache_check_off, StealTcache, Safety::OFF);
checked_variant!(naive_100ms, NaiveTcache, EVERY_100_MS);
checked_variant!(gate_100ms, GateTcache, EVERY_100_MS);
checked_variant!(static_key_100ms, StaticKeyTcache, EVERY_100_MS);
checked_variant!(steal_100ms, StealTcache, EVERY_100_MS);

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
        entry("tcache-check-off", tcache_check_off),
        entry("naive-100ms", naive_100ms),
        entry("gate-100ms", gate_100ms),
        entry("static-key-100ms", static_key_100ms),
        entry("steal-100ms", steal_100ms),
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
            "tcache-check-off",
            "naive-100ms",
            "static-key-100ms",
            "gate-100ms",
            "steal-100ms",
            "lifo-tcache",
        ],
        baseline: "sample-off",
        full: Grid {
            workloads: vec![
                "churn",
                "larson",
                "requests",
                "replay-python3-stdlib-notouch",
            ],
            // 8: the seed's sysbench threads.
            threads: vec![1, 2, 4, 8],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["churn", "requests"],
            threads: vec![1, 2, 8],
            reps: 7,
            scale: 0.1,
        },
        questions: &[
            Question {
                subject: "naive-100ms",
                reference: "lifo-tcache",
                text: "the seed's naive counter (a countdown on every allocation) against no sampling compiled in",
                margins: &[],
            },
            Question {
                subject: "static-key-100ms",
                reference: "lifo-tcache",
                text: "the seed's static key (a patched nop/jmp) against no sampling compiled in",
                margins: &[],
            },
            Question {
                subject: "naive-100ms",
                reference: "static-key-100ms",
                text: "the seed's naive counter against its static key",
                margins: &[],
            },
            Question {
                subject: "gate-100ms",
                reference: "lifo-tcache",
                text: "a shared flag read on every allocation against no sampling compiled in",
                margins: &[],
            },
            Question {
                subject: "gate-100ms",
                reference: "static-key-100ms",
                text: "a shared flag against the static key (a load against a nop)",
                margins: &[],
            },
            Question {
                subject: "steal-100ms",
                reference: "lifo-tcache",
                text: "the seed's stealing (decided on the slow path) against no sampling compiled in",
                margins: &[],
            },
            Question {
                subject: "tcache-check-off",
                reference: "lifo-tcache",
                text: "only the sampling check compiled in, sampling off, against nothing compiled in",
                margins: &[],
            },
            Question {
                subject: "naive-100ms",
                reference: "steal-100ms",
                text: "the naive counter against stealing",
                margins: &[],
            },
            Question {
                subject: "sample-100",
                reference: "sample-off",
                text: "one in 100 against off",
                margins: &[],
            },
            Question {
                subject: "sample-1000",
                reference: "sample-off",
                text: "one in 1000 against off",
                margins: &[],
            },
            Question {
                subject: "sample-16384",
                reference: "sample-off",
                text: "one in 16384 against off",
                margins: &[],
            },
            Question {
                subject: "sample-ms-1",
                reference: "sample-off",
                text: "one per millisecond against off",
                margins: &[],
            },
            Question {
                subject: "sample-ms-100",
                reference: "sample-off",
                text: "one per 100 ms (KFENCE's interval) against off",
                margins: &[],
            },
            Question {
                subject: "sample-off",
                reference: "lifo",
                text: "checks compiled in and off against compiled out",
                margins: &[],
            },
        ],
        // `ops_per_sec`: the seed's throughput (on `requests`, 32 calls per request).
        metrics: &["wall", "ops_per_sec"],
        instructions: Some(InstructionPass {
            metrics: &["instructions"],
            workloads: vec!["churn", "requests"],
            threads: vec![1],
            scale: 0.2,
            full_reps: 10,
            quick_reps: 6,
        }),
        programs: None,
        seed: &SEED,
    }
}

/// The seed's figures: sysbench's throughput of an 8-thread I/O benchmark (one run of 300 s
/// each), requests per second, KFENCE off (the baseline) against the naive counter and the
/// static keys at a 100 ms interval. Ours: `requests` (`ops_per_sec` counts calls, 32 per
/// request: a ratio is the same in either unit), against `lifo-tcache`, nothing compiled in.
const SEED: [SeedFigure; 2] = [
    SeedFigure {
        what: "sysbench, 8 threads: no KFENCE → naive counter",
        seed: 7842.98,
        seed_reference: Some(8087.29),
        unit: "requests/s",
        subject: "naive-100ms",
        reference: Some("lifo-tcache"),
        metric: "ops_per_sec",
        workloads: &["requests"],
    },
    SeedFigure {
        what: "sysbench, 8 threads: no KFENCE → static keys, 100 ms",
        seed: 8071.08,
        seed_reference: Some(8087.29),
        unit: "requests/s",
        subject: "static-key-100ms",
        reference: Some("lifo-tcache"),
        metric: "ops_per_sec",
        workloads: &["requests"],
    },
];
