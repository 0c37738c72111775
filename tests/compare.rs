//! `alloclab compare`, `report` and `merge` end to end on a tiny grid: the outputs exist and
//! parse, the grid is complete, and shards merged equal the unsharded run's grid. No timing
//! assertions: the figures themselves belong to reports.

use alloclab::measure::schema::{Measurement, Results};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn alloclab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alloclab"))
        .args(args)
        .output()
        .expect("the alloclab binary runs")
}

fn ok(args: &[&str]) {
    let out = alloclab(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("alloclab-compare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Two subjects (one alloclab config, glibc as the baseline), two workloads (one threaded),
/// two rounds after a warm-up, at a small scale.
const GRID: &[&str] = &[
    "--subjects",
    "lifo,system",
    "--workloads",
    "churn,thread-arena",
    "--threads",
    "1,2",
    "--reps",
    "2",
    "--scale",
    "0.02",
    "--seed",
    "42",
    "--no-progress",
];

fn compare(out: &Path, extra: &[&str]) {
    let mut args = vec!["compare", "--out", out.to_str().unwrap()];
    args.extend_from_slice(GRID);
    args.extend_from_slice(extra);
    ok(&args);
}

/// What identifies a measurement in the schedule (figures aside).
type Key = (String, String, usize, usize, bool, usize, usize);

fn key(m: &Measurement) -> Key {
    (
        m.subject.clone(),
        m.workload.clone(),
        m.threads,
        m.round,
        m.warmup,
        m.order,
        m.env_pad,
    )
}

fn keys(r: &Results) -> BTreeSet<Key> {
    r.measurements.iter().map(key).collect()
}

#[test]
fn compare_writes_a_complete_grid_and_shards_merge_into_it() {
    let whole = scratch("whole");
    compare(&whole, &["--latex"]);
    for file in ["results.json", "report.md", "results.csv", "table.tex"] {
        assert!(whole.join(file).is_file(), "{file} written");
    }
    let svgs = std::fs::read_dir(&whole)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("svg".as_ref()))
        .count();
    assert!(svgs >= 2, "charts drawn: {svgs}");
    let r = Results::read(&whole.join("results.json")).expect("results.json parses");
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // Every (subject, workload, threads) cell once per round, in 1 warm-up + 2 rounds; each
    // workload at each thread count it takes (1 only if it ignores threads).
    let cells: BTreeSet<(String, String, usize)> = r
        .measurements
        .iter()
        .map(|m| (m.subject.clone(), m.workload.clone(), m.threads))
        .collect();
    assert!((4..=8).contains(&cells.len()), "{cells:?}");
    assert!(cells.iter().any(|c| c.1 == "thread-arena" && c.2 == 2));
    assert_eq!(r.measurements.len(), 3 * cells.len());
    assert_eq!(keys(&r).len(), r.measurements.len(), "no measurement twice");
    for round in 0..3 {
        let mut orders: Vec<usize> = r
            .measurements
            .iter()
            .filter(|m| m.round == round)
            .map(|m| m.order)
            .collect();
        orders.sort_unstable();
        assert_eq!(
            orders,
            (0..cells.len()).collect::<Vec<_>>(),
            "round {round} complete"
        );
    }
    assert!(r.measurements.iter().all(|m| m.warmup == (m.round == 0)));
    assert!(r
        .measurements
        .iter()
        .all(|m| m.metrics.ops > 0 && m.metrics.max_rss_process.is_some()));
    let lifo = r.measurements.iter().find(|m| m.subject == "lifo").unwrap();
    assert!(lifo.metrics.heap.is_some(), "alloclab subjects are sampled");
    assert_eq!(r.plan.baseline, "system");
    assert_eq!(r.plan.seed, 42);
    let csv = std::fs::read_to_string(whole.join("results.csv")).unwrap();
    assert!(csv.lines().count() > r.measurements.len());
    let md = std::fs::read_to_string(whole.join("report.md")).unwrap();
    assert!(md.contains("churn") && md.contains("thread-arena"), "{md}");
    assert!(
        md.contains("reuse: lifo"),
        "the subject's own description: {md}"
    );

    // `report` redraws from results.json alone.
    std::fs::remove_file(whole.join("report.md")).unwrap();
    ok(&["report", whole.to_str().unwrap()]);
    assert!(whole.join("report.md").is_file());

    // Two shards, merged, are the unsharded grid.
    let (a, b) = (scratch("shard1"), scratch("shard2"));
    compare(&a, &["--shard", "1/2"]);
    compare(&b, &["--shard", "2/2"]);
    let ra = Results::read(&a.join("results.json")).unwrap();
    let rb = Results::read(&b.join("results.json")).unwrap();
    assert!(!ra.measurements.is_empty() && !rb.measurements.is_empty());
    assert!(keys(&ra).is_disjoint(&keys(&rb)));
    let merged = scratch("merged");
    ok(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    let rm = Results::read(&merged.join("results.json")).unwrap();
    assert_eq!(keys(&rm), keys(&r), "merged shards = the unsharded grid");
    assert!(merged.join("report.md").is_file());

    for d in [whole, a, b, merged] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A `--heap-conf` subject is measured in its own processes with its options: the children
/// are told its definition, the reports describe it with the options, and results.json keeps
/// the definition.
#[test]
fn a_heap_conf_subject_is_measured_with_its_options() {
    let out = scratch("heap-conf");
    ok(&[
        "compare",
        "--out",
        out.to_str().unwrap(),
        "--heap-conf",
        "light=config:lifo-tcache,tcache_check:light,tcache_max:65536",
        "--subjects",
        "lifo-tcache,light",
        "--baseline",
        "lifo-tcache",
        "--workloads",
        "churn",
        "--threads",
        "1",
        "--reps",
        "2",
        "--scale",
        "0.02",
        "--no-progress",
    ]);
    let results = Results::read(&out.join("results.json")).unwrap();
    assert_eq!(
        results.plan.heap_confs,
        ["light=config:lifo-tcache,tcache_check:light,tcache_max:65536"]
    );
    let light: Vec<&Measurement> = results
        .measurements
        .iter()
        .filter(|m| m.subject == "light")
        .collect();
    assert_eq!(light.len(), 3, "a warm-up round and two measured");
    for m in &light {
        assert!(
            m.describe.starts_with("lifo-tcache")
                && m.describe
                    .ends_with(" with tcache_check:light,tcache_max:65536"),
            "{}",
            m.describe
        );
    }
    let base = results
        .measurements
        .iter()
        .find(|m| m.subject == "lifo-tcache");
    assert!(!base.unwrap().describe.contains(" with "));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("tcache_check:light"), "{report}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_requests_get_clear_errors() {
    let out = scratch("bad");
    let o = out.to_str().unwrap();
    for (args, expect) in [
        (
            vec!["compare", "--out", o, "--subjects", "nonesuch"],
            "unknown subject",
        ),
        (
            vec![
                "compare",
                "--out",
                o,
                "--subjects",
                "lifo",
                "--workloads",
                "churn",
            ],
            "baseline",
        ),
        (
            vec!["compare", "--out", o, "--workloads", "nonesuch"],
            "unknown workload",
        ),
        (vec!["compare", "--out", o, "--shard", "3/2"], "1 <= i <= n"),
        (
            vec!["compare", "--out", o, "--threads", "0"],
            "thread count",
        ),
        (vec!["report", o], "results.json"),
        (vec!["paper", "nonesuch"], "unknown study"),
        (
            vec![
                "compare",
                "--out",
                o,
                "--heap-conf",
                "x=config:lifo,poison:all",
            ],
            "not an option of an in-process heap",
        ),
        (
            vec!["compare", "--out", o, "--heap-conf", "x=config:mimalloc"],
            "a peer takes no options",
        ),
        (
            vec![
                "compare",
                "--out",
                o,
                "--heap-conf",
                "x=config:lifo",
                "--programs",
            ],
            "--preload-conf",
        ),
    ] {
        let r = alloclab(&args);
        assert!(!r.status.success(), "{args:?} fails");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn pilot_mode_advises_per_cell() {
    let out = scratch("pilot");
    let o = out.to_str().unwrap();
    ok(&[
        "compare",
        "--pilot",
        "--out",
        o,
        "--subjects",
        "lifo,system",
        "--workloads",
        "churn",
        "--threads",
        "1",
        "--reps",
        "2",
        "--scale",
        "0.02",
        "--no-progress",
    ]);
    let pilot = std::fs::read_to_string(out.join("pilot.md")).expect("pilot.md written");
    for subject in ["lifo", "system"] {
        assert!(
            pilot
                .lines()
                .any(|l| l.starts_with("| churn | 1 | ") && l.contains(&format!(" {subject} |"))),
            "a row for {subject}: {pilot}"
        );
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn programs_measure_the_startup_program_alone_when_asked() {
    let out = scratch("startup");
    let o = out.to_str().unwrap();
    ok(&[
        "compare",
        "--programs",
        "--workloads",
        "startup",
        "--subjects",
        "system",
        "--reps",
        "2",
        "--seed",
        "3",
        "--out",
        o,
        "--no-progress",
    ]);
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json written");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["plan"]["workloads"],
        serde_json::json!(["program:startup"])
    );
    let ms = v["measurements"].as_array().unwrap();
    // One warm-up round and two measured ones, each the mean of 100 processes.
    assert_eq!(ms.len(), 3, "{json}");
    for m in ms {
        assert_eq!(m["workload"], "program:startup");
        let wall = m["metrics"]["wall"].as_f64().unwrap();
        assert!(wall > 0.0 && wall < 1.0, "a mean per process: {wall}");
        assert!(m["metrics"]["peak_rss"].is_null(), "{m}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Workload `program:startup`"), "{md}");
    let _ = std::fs::remove_dir_all(&out);

    let r = alloclab(&["compare", "--preload", "x=/bin/true", "--out", o]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("--preload names a library") && err.contains("needs --programs"),
        "{err}"
    );
    let r = alloclab(&["compare", "--programs", "--workloads", "ruby", "--out", o]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("`ruby` is not a program here") && err.contains("startup"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
