//! A synthetic `Results` for the tests of the analysis, the reports and merging: made-up
//! figures with known structure (one subject clearly faster than the baseline, one the same),
//! never a measurement.

use super::schema::*;
use alloclab_traces::rng::SplitMix64;

/// Subjects: `system` (the baseline), `fast` (0.8 of its time, less memory), `same`.
pub(crate) const SUBJECTS: [&str; 3] = ["system", "fast", "same"];
/// Workloads: `churn` at 1 and 2 threads, `trace,odd|name` (single-threaded, an awkward name).
pub(crate) const WORKLOADS: [&str; 2] = ["churn", "trace,odd|name"];

/// The cell whose measurement failed (it has a failure record instead of figures).
pub(crate) const FAILED: (&str, &str, usize, usize) = ("same", "churn", 2, 3);

/// The threads each fixture workload runs at.
pub(crate) fn threads_of(workload: &str) -> &'static [usize] {
    if workload == "churn" {
        &[1, 2]
    } else {
        &[1]
    }
}

/// `reps` (at least 3) measured rounds after one warm-up round; warm-up figures are 10x slower
/// so that including them by mistake shows.
pub(crate) fn results(reps: usize) -> Results {
    let mut rng = SplitMix64::new(7);
    let mut noise = move || 1.0 + (rng.below(2001) as f64 - 1000.0) / 1000.0 * 0.03;
    let mut measurements = Vec::new();
    for round in 0..reps + 1 {
        let mut order = 0;
        for workload in WORKLOADS {
            for &threads in threads_of(workload) {
                for subject in SUBJECTS {
                    if (subject, workload, threads, round) == FAILED {
                        continue;
                    }
                    let factor = if subject == "fast" { 0.8 } else { 1.0 };
                    let warm = if round == 0 { 10.0 } else { 1.0 };
                    let wall = 0.5 * factor * warm * noise() / threads as f64;
                    let rss = (50_000_000.0 * factor * noise()) as u64;
                    let heap = (subject != "system").then(|| HeapMetrics {
                        peak_allocated: 40_000_000,
                        peak_active: 42_000_000,
                        peak_mapped: rss,
                        frag_peak: rss as f64 / 40e6 - 1.0,
                        frag_time_avg: 0.2 * noise(),
                        samples: 100,
                        picks: 1000,
                        new_runs: 10,
                        runs_released: 5,
                        purges: 2,
                        ..HeapMetrics::default()
                    });
                    measurements.push(Measurement {
                        subject: subject.into(),
                        describe: format!("{subject}, \"made up\" for tests"),
                        workload: workload.into(),
                        threads,
                        round,
                        warmup: round == 0,
                        order,
                        env_pad: 16 * round,
                        metrics: Metrics {
                            wall,
                            user: wall * 0.9,
                            sys: wall * 0.1,
                            ops: 1_000_000,
                            ops_per_sec: 1e6 / wall,
                            peak_rss: Some(rss),
                            final_rss: Some(rss / 2),
                            max_rss_process: Some(rss + 1_000_000),
                            heap,
                            instructions: None,
                            memory: None,
                            probe: None,
                            syscalls: None,
                        },
                        disturbance: None,
                    });
                    order += 1;
                }
            }
        }
    }
    Results {
        schema_version: SCHEMA_VERSION,
        environment: Environment {
            cpu_model: "Test CPU".into(),
            cores: 2,
            memory_bytes: 8 << 30,
            kernel: "Linux 6.1".into(),
            rustc: "rustc 1.95.0".into(),
            alloclab_version: "0.1.0".into(),
            commit: Some("abc123".into()),
            peers: vec![("jemalloc".into(), "5.3.0".into())],
            hostname: "testhost".into(),
            started: "2026-01-01T00:00:00Z".into(),
            command: vec![
                "alloclab".into(),
                "compare".into(),
                "--out".into(),
                "my dir".into(),
            ],
            ..Environment::default()
        },
        plan: Plan {
            subjects: SUBJECTS.iter().map(|s| s.to_string()).collect(),
            workloads: WORKLOADS.iter().map(|s| s.to_string()).collect(),
            threads: vec![1, 2],
            reps,
            warmup: 1,
            baseline: "system".into(),
            seed: 42,
            scale: 1.0,
            quick: false,
            instructions: false,
            syscalls: false,
            shards: vec![],
            heap_confs: Vec::new(),
            metrics: Vec::new(),
            margins: Vec::new(),
        },
        measurements,
        failures: vec![Failure {
            subject: FAILED.0.into(),
            workload: FAILED.1.into(),
            threads: FAILED.2,
            round: FAILED.3,
            reason: "self-check: pattern | mismatch\nat 0x10".into(),
        }],
    }
}
