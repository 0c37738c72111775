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
    // The tests run side by side and disturb one another: measuring again would only slow them.
    "--retry-disturbed",
    "0",
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
    // Every measurement has its disturbance (the machine may be busy: no figure asserted).
    for m in &r.measurements {
        let d = m.disturbance.as_ref().expect("disturbance measured");
        assert!((0.0..=1.0).contains(&d.fraction), "{d:?}");
        assert!(
            d.cpus >= 1 && d.elapsed_s > 0.0 && d.resolution_s > 0.0,
            "{d:?}"
        );
        assert_eq!(
            d.disturbed,
            d.other_cpu_s - d.resolution_s > 0.05 * d.elapsed_s * d.cpus as f64
        );
    }
    assert_eq!(r.plan.baseline, "system");
    assert_eq!(r.plan.seed, 42);
    let csv = std::fs::read_to_string(whole.join("results.csv")).unwrap();
    assert!(csv.lines().count() > r.measurements.len());
    let md = std::fs::read_to_string(whole.join("report.md")).unwrap();
    assert!(md.contains("churn") && md.contains("thread-arena"), "{md}");
    let first = md.lines().next().unwrap();
    assert!(
        first.contains("undisturbed: other processes took at most")
            || first.contains("DISTURBED: "),
        "the first line says how disturbed: {first}"
    );
    assert!(
        md.contains("reuse: lifo"),
        "the subject's own description: {md}"
    );

    // `report` redraws from results.json alone, with other margins if asked.
    std::fs::remove_file(whole.join("report.md")).unwrap();
    ok(&["report", whole.to_str().unwrap(), "--margin", "wall=0.3"]);
    let md = std::fs::read_to_string(whole.join("report.md")).unwrap();
    assert!(md.contains("±30% for wall"), "{md}");
    assert!(md.starts_with("# alloclab compare: report") && md.contains("\n## Summary\n"));
    let comparisons = std::fs::read_to_string(whole.join("comparisons.csv")).unwrap();
    assert!(comparisons.lines().count() > 1, "{comparisons}");

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
            vec!["compare", "--out", o, "--margin", "2"],
            "a margin is a fraction above 0 and below 1",
        ),
        (
            vec!["compare", "--out", o, "--margin", "walltime=0.02"],
            "unknown metric `walltime`",
        ),
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
        (
            vec!["compare", "--out", o, "--syscalls", "--programs"],
            "--programs does not run them",
        ),
        (
            vec!["compare", "--out", o, "--syscalls", "--instructions"],
            "cannot be used with",
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

/// A grid small enough to run in seconds several times over: two in-process subjects, one
/// cheap workload, one thread count.
fn small_grid(reps: &str) -> Vec<String> {
    [
        "--subjects",
        "lifo,system",
        "--workloads",
        "churn",
        "--threads",
        "1",
        "--reps",
        reps,
        "--scale",
        "0.02",
        "--no-progress",
        "--retry-disturbed",
        "0",
    ]
    .map(String::from)
    .to_vec()
}

fn compare_args(out: &Path, grid: &[String], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["compare".to_string(), "--out".into(), path(out)];
    args.extend_from_slice(grid);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

fn run(args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    alloclab(&args)
}

fn run_ok(args: &[String]) -> Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The three-shell sequence of issue 27: shards without --seed share one seed, and merge
/// (given the parts out of order, one twice) makes the unsharded grid of that seed.
#[test]
fn unseeded_shards_share_one_seed_and_merge_into_the_unsharded_grid() {
    let grid = small_grid("2");
    let dirs: Vec<PathBuf> = (1..=3).map(|i| scratch(&format!("unseeded{i}"))).collect();
    for (i, dir) in dirs.iter().enumerate() {
        let out = run_ok(&compare_args(
            dir,
            &grid,
            &["--shard", &format!("{}/3", i + 1)],
        ));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("derived from the plan"), "{err}");
    }
    let parts: Vec<Results> = dirs
        .iter()
        .map(|d| Results::read(&d.join("results.json")).unwrap())
        .collect();
    let seed = parts[0].plan.seed;
    assert!(parts.iter().all(|p| p.plan.seed == seed), "one seed");

    let merged = scratch("unseeded-merged");
    let out = run_ok(&[
        "merge".to_string(),
        path(&dirs[2]),
        path(&dirs[0]),
        path(&dirs[1]),
        path(&dirs[0]),
        "--out".into(),
        path(&merged),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("counted once"),
        "the repeated part is reported: {err}"
    );
    let rm = Results::read(&merged.join("results.json")).unwrap();
    assert_eq!(rm.plan.shards, ["1/3", "2/3", "3/3"]);
    assert_eq!(keys(&rm).len(), rm.measurements.len(), "no cell twice");

    let whole = scratch("unseeded-whole");
    run_ok(&compare_args(&whole, &grid, &["--seed", &seed.to_string()]));
    let rw = Results::read(&whole.join("results.json")).unwrap();
    assert_eq!(keys(&rm), keys(&rw), "merged shards = the unsharded grid");
    assert_eq!(rw.measurements.len(), 2 * 3, "two subjects, three rounds");

    // A shard of other options gets another seed, and merge says which fields differ.
    let odd = scratch("unseeded-odd");
    run_ok(&compare_args(&odd, &small_grid("3"), &["--shard", "2/3"]));
    let r = run(&[
        "merge".to_string(),
        path(&dirs[0]),
        path(&odd),
        "--out".into(),
        path(&merged),
    ]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("reps: part 1 = 2, part 2 = 3") && err.contains("seed: part 1 = "),
        "{err}"
    );
    for d in dirs.iter().chain([&merged, &whole, &odd]) {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A shard SIGKILLed mid-run keeps what it measured: `--resume` measures only the rest
/// (dropping a torn last record), refuses other options, and the result merges with the
/// other shard into the unsharded grid, no cell twice.
#[test]
fn a_killed_shard_resumes_and_merges_into_the_full_grid() {
    let grid = small_grid("4");
    let seeded = ["--seed", "7"];
    let (a, b) = (scratch("killed1"), scratch("killed2"));
    let shard1 = compare_args(&a, &grid, &[&seeded[..], &["--shard", "1/2"]].concat());
    let journal = a.join(alloclab::measure::journal::FILE_NAME);

    let mut child = Command::new(env!("CARGO_BIN_EXE_alloclab"))
        .args(&shard1)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the header and one record, then kill: the shard has five measurements, so it
    // is still running unless it finished them all in the time of one poll.
    loop {
        let lines = std::fs::read(&journal)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0);
        if lines >= 2 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the shard ended before it recorded a measurement"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !a.join("results.json").exists(),
        "killed before the end (grow the grid if this fails)"
    );
    let before = alloclab::measure::journal::read(&journal).unwrap().unwrap();
    assert!(!before.measurements.is_empty());
    // A record torn by the kill.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"subject\":\"lifo\",\"descr").unwrap();
    drop(f);
    let journal_text = std::fs::read(&journal).unwrap();

    // Without --resume the journal is not overwritten.
    let r = run(&shard1);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("unfinished run") && err.contains("--resume"),
        "{err}"
    );
    // Other options are refused, naming them.
    let other = compare_args(
        &a,
        &small_grid("5"),
        &[&seeded[..], &["--shard", "1/2", "--resume"]].concat(),
    );
    let r = run(&other);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("reps: recorded = 4, this command = 5"),
        "{err}"
    );
    assert_eq!(std::fs::read(&journal).unwrap(), journal_text, "untouched");

    let resumed = [&shard1[..], &["--resume".to_string()]].concat();
    let out = run_ok(&resumed);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dropped a torn last record"), "{err}");
    assert!(!journal.exists(), "results.json holds everything now");
    let ra = Results::read(&a.join("results.json")).unwrap();
    assert_eq!(
        ra.measurements.len(),
        5,
        "half of two subjects by five rounds"
    );
    assert_eq!(keys(&ra).len(), ra.measurements.len(), "no cell twice");
    for m in &before.measurements {
        assert!(
            ra.measurements.contains(m),
            "kept as measured before the kill, not measured again: {m:?}"
        );
    }
    // Resuming a finished shard measures nothing more.
    run_ok(&resumed);
    let again = Results::read(&a.join("results.json")).unwrap();
    assert_eq!(again.measurements, ra.measurements);

    run_ok(&compare_args(
        &b,
        &grid,
        &[&seeded[..], &["--shard", "2/2"]].concat(),
    ));
    let merged = scratch("killed-merged");
    run_ok(&[
        "merge".to_string(),
        path(&a),
        path(&b),
        "--out".into(),
        path(&merged),
    ]);
    let rm = Results::read(&merged.join("results.json")).unwrap();
    let whole = scratch("killed-whole");
    run_ok(&compare_args(&whole, &grid, &seeded));
    let rw = Results::read(&whole.join("results.json")).unwrap();
    assert_eq!(keys(&rm), keys(&rw), "merged = the unsharded grid");
    assert_eq!(
        rm.measurements.len(),
        rw.measurements.len(),
        "no cell twice"
    );
    for d in [a, b, merged, whole] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `compare` started the way a user or a job script starts it: under a parent that waits for
/// it (`cargo run`, a shell), in a process group of its own, so that a signal can take the whole
/// tree (the parent, alloclab and its measuring child) or the parent alone.
fn spawn_under_a_parent(args: &[String]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    Command::new("sh")
        .arg("-c")
        .arg("\"$0\" \"$@\"; exit $?")
        .arg(env!("CARGO_BIN_EXE_alloclab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Waits until `journal` holds its header and `records` measurements; the run must still be
/// going then (else the grid is too small for the test).
fn wait_for_records(journal: &Path, records: usize, child: &mut std::process::Child) {
    loop {
        let lines = std::fs::read(journal)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0);
        if lines > records {
            return;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the shard ended before it recorded {records} measurement(s)"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Issue 41, item 6: `compare --shard 2/3` SIGKILLed mid-run and resumed exits 0 and merges
/// with shards 1 and 3. Twice: the whole process tree killed (a job's cgroup, `kill -9 -PGID`),
/// and the parent alone (`timeout -s KILL 20 cargo run -- compare ...` kills cargo and leaves
/// alloclab measuring: the case, where the resumed run and the orphan shared the
/// journal and the later one to finish exited 1 with `journal.jsonl: No such file or
/// directory`; now `--resume` waits for the orphan and continues from what it left).
#[test]
fn a_shard_killed_with_its_process_tree_resumes_with_exit_0_and_merges() {
    let grid = [&small_grid("6")[..], &["--seed".into(), "11".into()]].concat();
    let shard = |dir: &Path, i: usize| compare_args(dir, &grid, &["--shard", &format!("{i}/3")]);
    let dirs: Vec<PathBuf> = (1..=3).map(|i| scratch(&format!("tree{i}"))).collect();
    let journal = dirs[1].join(alloclab::measure::journal::FILE_NAME);

    // The whole tree, SIGKILLed after its first record.
    let mut parent = spawn_under_a_parent(&shard(&dirs[1], 2));
    wait_for_records(&journal, 1, &mut parent);
    let group = -(parent.id() as i32);
    // SAFETY: kill has no memory-safety preconditions; the group is the one just started.
    let killed = unsafe { libc::kill(group, libc::SIGKILL) };
    assert_eq!(killed, 0);
    parent.wait().unwrap();
    assert!(!dirs[1].join("results.json").exists(), "killed mid-run");
    let resumed = [&shard(&dirs[1], 2)[..], &["--resume".to_string()]].concat();
    let out = run(&resumed);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit 0 after a resume: {err}");
    assert!(err.contains("resuming"), "{err}");
    assert!(!journal.exists());
    let first = Results::read(&dirs[1].join("results.json")).unwrap();

    // The parent alone: alloclab goes on as an orphan, and the resumed run waits for it.
    std::fs::remove_dir_all(&dirs[1]).unwrap();
    let mut parent = spawn_under_a_parent(&shard(&dirs[1], 2));
    wait_for_records(&journal, 1, &mut parent);
    parent.kill().unwrap();
    parent.wait().unwrap();
    let out = run(&resumed);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit 0 beside an orphan: {err}");
    assert!(!journal.exists());
    let second = Results::read(&dirs[1].join("results.json")).unwrap();
    assert_eq!(
        keys(&second),
        keys(&first),
        "the same shard, whole, either way"
    );
    assert_eq!(
        keys(&second).len(),
        second.measurements.len(),
        "no cell twice"
    );

    run_ok(&shard(&dirs[0], 1));
    run_ok(&shard(&dirs[2], 3));
    let merged = scratch("tree-merged");
    let mut merge = vec!["merge".to_string()];
    merge.extend(dirs.iter().map(|d| path(d)));
    merge.extend(["--out".to_string(), path(&merged)]);
    run_ok(&merge);
    let rm = Results::read(&merged.join("results.json")).unwrap();
    assert_eq!(rm.plan.shards, ["1/3", "2/3", "3/3"]);
    assert_eq!(rm.measurements.len(), 2 * 7, "two subjects by seven rounds");
    assert_eq!(keys(&rm).len(), rm.measurements.len(), "no cell twice");
    for d in dirs.iter().chain([&merged]) {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The smallest programs grid: the start-up program (100 processes per measurement, a few
/// tenths of a second) under glibc, one cell, a warm-up and `reps` rounds.
fn programs_grid(reps: &str) -> Vec<String> {
    [
        "--programs",
        "--workloads",
        "startup",
        "--subjects",
        "system",
        "--reps",
        reps,
        "--no-progress",
    ]
    .map(String::from)
    .to_vec()
}

/// A `compare --programs` run SIGKILLed mid-run keeps what it measured: `--resume` measures
/// only the rest, no measurement twice, into the grid an uninterrupted run of the seed
/// measures; a resume as a run of the built-in workloads is refused, saying why.
#[test]
fn a_killed_programs_run_resumes_with_every_measurement_once() {
    let grid = [&programs_grid("4")[..], &["--seed".into(), "9".into()]].concat();
    let (dir, whole) = (scratch("programs-killed"), scratch("programs-whole"));
    let args = compare_args(&dir, &grid, &[]);
    let journal = dir.join(alloclab::measure::journal::FILE_NAME);

    let mut child = Command::new(env!("CARGO_BIN_EXE_alloclab"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_records(&journal, 1, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!dir.join("results.json").exists(), "killed mid-run");
    let before = alloclab::measure::journal::read(&journal).unwrap().unwrap();
    assert!(
        before.header.plan.runs_programs(),
        "{:?}",
        before.header.plan
    );
    assert!(!before.measurements.is_empty());
    let journal_text = std::fs::read(&journal).unwrap();

    let r = run(&args);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("unfinished run") && err.contains("--resume"),
        "{err}"
    );
    let r = run(&compare_args(&dir, &small_grid("4"), &["--resume"]));
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("is of a run of installed programs")
            && err.contains("this command is a run of the built-in workloads"),
        "{err}"
    );
    assert_eq!(std::fs::read(&journal).unwrap(), journal_text, "untouched");

    let out = run_ok(&[&args[..], &["--resume".to_string()]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("resuming"), "{err}");
    assert!(!journal.exists(), "results.json holds everything now");
    let resumed = Results::read(&dir.join("results.json")).unwrap();
    assert_eq!(resumed.measurements.len(), 5, "a warm-up and four rounds");
    assert_eq!(keys(&resumed).len(), 5, "no measurement twice");
    for m in &before.measurements {
        assert!(
            resumed.measurements.contains(m),
            "kept as measured before the kill, not measured again: {m:?}"
        );
    }
    run_ok(&compare_args(&whole, &grid, &[]));
    let uninterrupted = Results::read(&whole.join("results.json")).unwrap();
    assert_eq!(keys(&resumed), keys(&uninterrupted), "the same grid");
    for d in [dir, whole] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `compare --programs --shard 1/2` and `2/2`, without a seed, share the seed derived from the
/// plan and merge into the grid of an unsharded run of that seed.
#[test]
fn programs_shards_merge_into_the_unsharded_grid() {
    let grid = programs_grid("3");
    let dirs: Vec<PathBuf> = (1..=2)
        .map(|i| scratch(&format!("programs-shard{i}")))
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        let out = run_ok(&compare_args(
            dir,
            &grid,
            &["--shard", &format!("{}/2", i + 1)],
        ));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("derived from the plan"), "{err}");
    }
    let parts: Vec<Results> = dirs
        .iter()
        .map(|d| Results::read(&d.join("results.json")).unwrap())
        .collect();
    assert_eq!(parts[0].plan.seed, parts[1].plan.seed, "one seed");
    assert_eq!(parts[0].measurements.len(), 2, "half of four rounds");
    let merged = scratch("programs-merged");
    run_ok(&[
        "merge".to_string(),
        path(&dirs[1]),
        path(&dirs[0]),
        "--out".into(),
        path(&merged),
    ]);
    let rm = Results::read(&merged.join("results.json")).unwrap();
    assert_eq!(rm.plan.shards, ["1/2", "2/2"]);
    assert_eq!(keys(&rm).len(), 4, "every round once");

    let whole = scratch("programs-unsharded");
    let seed = parts[0].plan.seed.to_string();
    run_ok(&compare_args(&whole, &grid, &["--seed", &seed]));
    let rw = Results::read(&whole.join("results.json")).unwrap();
    assert_eq!(keys(&rm), keys(&rw), "merged shards = the unsharded grid");
    for d in dirs.iter().chain([&merged, &whole]) {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Issue 41, item 3: measurements taken beside a CPU hog (spinning on every CPU) are disturbed,
/// measured again as often as asked, kept flagged, and counted in the report's first line.
#[test]
fn a_run_beside_a_cpu_hog_is_measured_again_and_flagged() {
    /// Stopped when dropped, a failed assertion included.
    struct Hogs(Vec<std::process::Child>);
    impl Drop for Hogs {
        fn drop(&mut self) {
            for h in &mut self.0 {
                let _ = h.kill();
                let _ = h.wait();
            }
        }
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs = Hogs(
        (0..cpus)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    let dir = scratch("hogged");
    // Measurements of a few tenths of a second: far longer than `/proc/stat`'s resolution.
    let grid = [
        "--subjects",
        "lifo,system",
        "--workloads",
        "churn",
        "--threads",
        "1",
        "--reps",
        "1",
        "--scale",
        "0.3",
        "--no-progress",
        "--retry-disturbed",
        "1",
    ]
    .map(String::from);
    let out = run(&compare_args(&dir, &grid, &[]));
    drop(hogs);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("measuring again (1/1)"), "{err}");
    let r = Results::read(&dir.join("results.json")).unwrap();
    for m in &r.measurements {
        let d = m.disturbance.as_ref().unwrap();
        assert!(d.disturbed, "{d:?}");
        // Warm-up rounds are not measured again.
        assert_eq!(d.retried.len(), usize::from(!m.warmup), "{m:?}");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let first = md.lines().next().unwrap();
    assert!(
        first.starts_with("# alloclab compare: report (DISTURBED: 2 of 2 measurements"),
        "{first}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Off a terminal (here: a pipe), progress is one line per finished measurement, written as
/// it finishes, with the count and the measurement; `--no-progress` silences it.
#[test]
fn progress_off_a_terminal_is_one_line_per_measurement() {
    // 2 subjects x (1 warm-up + 2 rounds).
    let run = |name: &str, extra: &[&str]| {
        let dir = scratch(name);
        let mut args = vec![
            "compare",
            "--subjects",
            "lifo,system",
            "--workloads",
            "churn",
            "--threads",
            "1",
            "--reps",
            "2",
            "--scale",
            "0.01",
            "--seed",
            "5",
            "--retry-disturbed",
            "0",
        ];
        args.extend_from_slice(extra);
        let out_dir = dir.to_str().unwrap().to_owned();
        args.extend_from_slice(&["--out", &out_dir]);
        let out = alloclab(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run("progress-lines", &[]);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("alloclab: "))
        .collect();
    assert_eq!(lines.len(), 6, "{err}");
    for (k, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("alloclab: {}/6 round ", k + 1)),
            "{line}"
        );
        assert!(line.contains(" on churn x1 "), "{line}");
    }
    let err = run("progress-quiet", &["--no-progress"]);
    assert!(!err.lines().any(|l| l.contains("/6 round")), "{err}");
}

/// liballoclab_probe.so: `$ALLOCLAB_PROBE_SO` (scripts/test.sh sets it), else the library of
/// this test binary's profile, built now (`cargo test` does not build another package's cdylib
/// for an integration test).
fn probe_so() -> PathBuf {
    if let Some(p) = std::env::var_os("ALLOCLAB_PROBE_SO") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let profile = profile_dir
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "alloclab-probe-so",
        "--target-dir",
    ])
    .arg(profile_dir.parent().unwrap());
    if profile != "debug" {
        cmd.args([
            "--profile",
            if profile == "release" {
                "release"
            } else {
                &profile
            },
        ]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    profile_dir.join("liballoclab_probe.so")
}

#[test]
fn the_probe_times_in_process_subjects_and_programs_alike() {
    let out = scratch("probe");
    let o = out.to_str().unwrap();
    ok(&[
        "compare",
        "--out",
        o,
        "--metrics",
        "alloc_ns_per_thread,lat_p99_ns",
        "--subjects",
        "lifo,system",
        "--workloads",
        "thread-arena",
        "--threads",
        "2",
        "--reps",
        "2",
        "--scale",
        "0.02",
        "--seed",
        "5",
        "--no-progress",
    ]);
    let results = Results::read(&out.join("results.json")).unwrap();
    assert_eq!(results.plan.metrics, ["alloc_ns_per_thread", "lat_p99_ns"]);
    assert_eq!(results.measurements.len(), 6);
    for m in &results.measurements {
        let p = m.metrics.probe.as_ref().expect("probe figures");
        assert_eq!(p.how, "in-process");
        // Every call the workload made went through the probe, on its two worker threads.
        assert_eq!(p.alloc_calls, m.metrics.ops, "{}", m.subject);
        assert_eq!(p.thread_ns.len(), 2, "{p:?}");
        assert!(p.alloc_ns_per_thread > 0.0 && p.alloc_ns_per_thread <= p.alloc_ns_per_thread_max);
        assert!(p.latency.p50 <= p.latency.p99 && p.latency.p99 <= p.latency.max);
        assert!(p.subtracted && p.overhead_ns > 0.0);
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| alloc_ns_per_thread | lifo | 2 |"), "{md}");
    assert!(md.contains("was subtracted from every figure"), "{md}");
    let _ = std::fs::remove_dir_all(&out);

    // A program under LD_PRELOAD: liballoclab_probe.so in front of the subject.
    let r = Command::new(env!("CARGO_BIN_EXE_alloclab"))
        .args([
            "compare",
            "--programs",
            "--workloads",
            "startup",
            "--subjects",
            "system",
            "--metrics",
            "alloc_calls,lat_max_ns",
            "--reps",
            "1",
            "--seed",
            "3",
            "--out",
            o,
            "--no-progress",
        ])
        .env("ALLOCLAB_PROBE_SO", probe_so())
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let results = Results::read(&out.join("results.json")).unwrap();
    for m in &results.measurements {
        let p = m.metrics.probe.as_ref().expect("probe figures");
        assert_eq!(p.how, "preload");
        // 100 processes of the start-up program, each with at least its malloc(64).
        assert!(p.processes >= 100 && p.alloc_calls >= 100, "{p:?}");
    }
    let _ = std::fs::remove_dir_all(&out);

    for (args, says) in [
        (
            &["--metrics", "lat_p42_ns"][..],
            "unknown metric `lat_p42_ns`",
        ),
        (
            &["--metrics", "lat_p99_ns", "--instructions"][..],
            "cannot share a run",
        ),
    ] {
        let mut all = vec![
            "compare",
            "--out",
            o,
            "--subjects",
            "system",
            "--workloads",
            "churn",
        ];
        all.extend_from_slice(args);
        let r = alloclab(&all);
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_probed_workload_is_reported_apart_with_its_latency_chart() {
    let out = scratch("probed");
    let o = out.to_str().unwrap();
    ok(&[
        "compare",
        "--out",
        o,
        "--subjects",
        "lifo,system",
        "--workloads",
        "churn,churn+probe",
        "--threads",
        "1",
        "--reps",
        "2",
        "--scale",
        "0.02",
        "--seed",
        "9",
        "--no-progress",
    ]);
    let results = Results::read(&out.join("results.json")).unwrap();
    assert!(results.plan.metrics.is_empty());
    // Two subjects, two workloads, a warm-up round and two measured ones.
    assert_eq!(results.measurements.len(), 12);
    for m in &results.measurements {
        let probed = m.workload == "churn+probe";
        assert!(probed || m.workload == "churn", "{}", m.workload);
        assert_eq!(
            m.metrics.probe.is_some(),
            probed,
            "{} {}",
            m.subject,
            m.workload
        );
        if let Some(p) = &m.metrics.probe {
            assert_eq!(p.alloc_calls, m.metrics.ops, "{}", m.subject);
            assert!(p.latency.p99 <= p.latency.max && p.latency.max > 0.0);
        }
        let mem = m.metrics.memory.as_ref().expect("memory over time");
        assert!(mem.rss_mean_bytes > 0.0 && mem.rss_final_bytes > 0);
    }
    let svg = std::fs::read_to_string(out.join("churn_probe-1t-latency.svg")).unwrap();
    assert!(
        svg.contains("lifo") && svg.contains("system"),
        "every subject drawn"
    );
    assert!(!out.join("churn-1t-latency.svg").exists());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("runs only in the measurements of `churn+probe`"),
        "{md}"
    );
    assert!(md.contains("| lat_p99_ns | lifo |"), "{md}");
    let _ = std::fs::remove_dir_all(&out);

    for (args, says) in [
        (
            &["--workloads", "nonesuch+probe"][..],
            "unknown workload `nonesuch+probe`",
        ),
        (
            &["--workloads", "churn+probe", "--instructions"][..],
            "cannot share a run",
        ),
    ] {
        let mut all = vec!["compare", "--out", o, "--subjects", "system"];
        all.extend_from_slice(args);
        let r = alloclab(&all);
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(says), "{err}");
    }
}

/// Whether valgrind can be run here (the callgrind tests need it; without it they say so and
/// check nothing else).
fn valgrind_runs() -> bool {
    let found = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("valgrind not found: the callgrind checks are skipped");
    }
    found
}

#[test]
fn instructions_are_counted_per_call_and_per_free() {
    if !valgrind_runs() {
        return;
    }
    let out = scratch("instructions");
    ok(&[
        "compare",
        "--out",
        out.to_str().unwrap(),
        "--subjects",
        "lifo",
        "--baseline",
        "lifo",
        "--workloads",
        "churn",
        "--reps",
        "1",
        "--scale",
        "0.001",
        "--seed",
        "7",
        "--instructions",
        "--no-progress",
    ]);
    let results = Results::read(&out.join("results.json")).unwrap();
    assert!(results.failures.is_empty(), "{:?}", results.failures);
    assert!(!results.measurements.is_empty());
    for m in &results.measurements {
        let i = m.metrics.instructions.as_ref().expect("callgrind's counts");
        assert!(i.instructions > 0.0 && i.data_writes > 0.0, "{i:?}");
        let f = i.per_free.as_ref().expect("counts per free");
        // churn frees what it allocates: about half its calls are frees.
        assert!(
            f.frees > 0 && f.frees <= m.metrics.ops && 2 * f.frees >= m.metrics.ops / 2,
            "{} frees of {} calls",
            f.frees,
            m.metrics.ops
        );
        assert!(f.instructions > 0.0 && f.data_reads > 0.0, "{f:?}");
        // Inside free only, per free, is part of every call's cost, per call: never more in
        // total than all of it.
        assert!(
            f.instructions * f.frees as f64 <= i.instructions * m.metrics.ops as f64,
            "{i:?}"
        );
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("instructions.per_free.instructions"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn poisoning_every_byte_costs_more_instructions_per_free_than_none() {
    use alloclab::measure::child::{ChildArgs, ChildResult, Spawn};
    if !valgrind_runs() {
        return;
    }
    let dir = scratch("poison-callgrind");
    std::fs::create_dir_all(&dir).unwrap();
    // The poisoning study's variants, which the measuring child knows (`compare` does not
    // list them), on churn at a tiny scale under callgrind.
    let per_free = |subject: &str| {
        let spawn = Spawn {
            exe: PathBuf::from(env!("CARGO_BIN_EXE_alloclab")),
            args: ChildArgs {
                subject: subject.into(),
                workload: "churn".into(),
                threads: 1,
                scale: 0.001,
                seed: 3,
                iterations: 1,
                heap_conf: Vec::new(),
                probe: false,
            },
            env_pad: 0,
            callgrind_dir: Some(dir.clone()),
            strace_dir: None,
            timeout: std::time::Duration::from_secs(300),
        };
        match spawn.run() {
            ChildResult::Done(r) => r
                .metrics
                .instructions
                .and_then(|i| i.per_free)
                .unwrap_or_else(|| panic!("{subject}: no counts per free")),
            ChildResult::Failed(e) => panic!("{subject}: {e}"),
        }
    };
    let none = per_free("poison-none");
    let all = per_free("poison-all");
    // The same workload and seed: the same frees.
    assert_eq!(none.frees, all.frees);
    assert!(none.instructions > 0.0, "{none:?}");
    assert!(
        all.instructions > none.instructions && all.data_writes > none.data_writes,
        "poison-all {all:?} against poison-none {none:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether strace can be run here (the `--syscalls` test needs it; scripts/test.sh installs
/// it, so CI runs the test; without it the test says so and checks nothing else).
fn strace_runs() -> bool {
    let found = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("strace not found: the --syscalls check is skipped (apt-get install strace)");
    }
    found
}

#[test]
fn syscalls_are_counted_per_measurement_and_reported() {
    if !strace_runs() {
        return;
    }
    let out = scratch("syscalls");
    ok(&[
        "compare",
        "--out",
        out.to_str().unwrap(),
        "--subjects",
        "system,lifo",
        "--workloads",
        "large-loop",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--scale",
        "0.001",
        "--seed",
        "5",
        "--syscalls",
        "--no-progress",
        "--retry-disturbed",
        "0",
    ]);
    let results = Results::read(&out.join("results.json")).unwrap();
    assert!(results.failures.is_empty(), "{:?}", results.failures);
    assert!(results.plan.syscalls);
    assert_eq!(results.measurements.len(), 2);
    for m in &results.measurements {
        let c = m.metrics.syscalls.expect("strace's counts");
        // The loader maps the binary and its libraries; large-loop's buffers of 2..32 MiB are
        // mapped by both allocators (glibc: above its mmap threshold at first).
        assert!(c.mmap > 0, "{}: {c:?}", m.subject);
        assert_eq!(
            c.total,
            c.mmap + c.munmap + c.madvise + c.mremap + c.mprotect + c.brk,
            "{}: {c:?}",
            m.subject
        );
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for metric in [
        "syscalls.mmap",
        "syscalls.munmap",
        "syscalls.madvise",
        "syscalls.total",
    ] {
        assert!(report.contains(metric), "{metric} missing from report.md");
    }
    assert!(report.contains("under strace"), "{report}");
    // No strace summaries are left behind.
    let left: Vec<_> = std::fs::read_dir(out.join("callgrind").join("strace"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&out);
}
