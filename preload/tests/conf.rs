//! `ALLOCLAB_CONF` through the real library: help, bad entries, `abort_conf`, `stats_print`,
//! and that each configuration really builds the heap it names.

mod common;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// coreutils' echo: a real program, and one that closes stderr at exit (the report must
/// still come out).
const ECHO: &str = "/bin/echo";

#[test]
fn help_lists_every_option_and_the_program_runs_on() {
    let out = run(preloaded(ECHO, "help").arg("still here"), LIMIT);
    out.assert_success("help");
    assert_eq!(out.stdout, "still here\n");
    for (key, values) in [
        ("config", "addr-ordered|lifo|mrf|mrf-current"),
        ("reuse", "addr-ordered|lifo|mrf"),
        ("current_run", "true|false"),
        ("arenas", "single|thread|round-robin|per-cpu|hashed"),
        ("narenas", ""),
        ("tcache_check", "full|light"),
        ("stats_print", "true|false"),
        ("abort_conf", "true|false"),
    ] {
        let at = out
            .stderr
            .find(&format!("\n  {key} "))
            .unwrap_or_else(|| panic!("help does not list {key}:\n{}", out.stderr));
        let entry: String = out.stderr[at + 1..].lines().take(2).collect();
        assert!(
            entry.contains("values: ") && entry.contains(values),
            "{entry}"
        );
        assert!(entry.contains("default: "), "{entry}");
    }
}

#[test]
fn bad_entries_print_one_line_each_and_the_rest_applies() {
    let conf = "reuse:fifo,bogus:1,narenas:many,arenas,stats_print:true,arenas:single";
    let out = run(preloaded(ECHO, conf).arg("ran"), LIMIT);
    out.assert_success("bad entries");
    assert_eq!(out.stdout, "ran\n");
    let (reports, rest) = split_reports(&out.stderr);
    let lines: Vec<&str> = rest.lines().collect();
    assert_eq!(lines.len(), 4, "one line per bad entry:\n{rest}");
    for (line, entry) in lines
        .iter()
        .zip(["reuse:fifo", "bogus:1", "narenas:many", "arenas"])
    {
        assert!(
            line.starts_with(&format!("alloclab: ALLOCLAB_CONF entry '{entry}': ")),
            "{line}"
        );
        assert!(line.ends_with("; ignored"), "{line}");
    }
    assert!(
        lines[0].contains("expected addr-ordered|lifo|mrf"),
        "{}",
        lines[0]
    );
    // The good entries took effect: statistics printed, one arena, default reuse.
    assert_eq!(reports.len(), 1, "{}", out.stderr);
    assert!(
        reports[0].title.ends_with(
            "reuse lifo, arenas single, front thread-cache, narenas 0, purge decay:1000"
        ),
        "{}",
        reports[0].title
    );
}

#[test]
fn abort_conf_makes_a_bad_entry_fatal_wherever_it_stands() {
    for conf in ["reuse:fifo,abort_conf:true", "abort_conf:true,config:nope"] {
        let out = run(preloaded(ECHO, conf).arg("should not print"), LIMIT);
        assert_eq!(out.signal(), Some(libc::SIGABRT), "{conf}: {out:?}");
        assert_eq!(out.stdout, "", "{conf}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{conf}: {}", out.stderr);
        assert!(lines[0].contains("ALLOCLAB_CONF entry '"), "{}", lines[0]);
        assert!(
            lines[1].contains("abort_conf:true; aborting"),
            "{}",
            lines[1]
        );
    }
    // Without a bad entry, abort_conf changes nothing.
    let out = run(
        preloaded(ECHO, "abort_conf:true,config:mrf").arg("ok"),
        LIMIT,
    );
    out.assert_success("abort_conf without errors");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("ok\n", ""));
}

#[test]
fn empty_and_absent_conf_are_silent() {
    for conf in ["", ",,", " "] {
        let out = run(preloaded(ECHO, conf).arg("x"), LIMIT);
        out.assert_success(conf);
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("x\n", ""),
            "{conf:?}"
        );
    }
    let out = run(
        preloaded(ECHO, "").env_remove("ALLOCLAB_CONF").arg("y"),
        LIMIT,
    );
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("y\n", ""));
}

#[test]
fn every_configuration_builds_the_heap_it_names() {
    for conf in all_confs() {
        let out = run(
            preloaded(ECHO, &format!("{conf},stats_print:true")).arg("hello"),
            LIMIT,
        );
        out.assert_success(conf);
        assert_eq!(out.stdout, "hello\n");
        let (reports, rest) = split_reports(&out.stderr);
        assert_eq!(rest, "", "{conf}");
        assert_eq!(reports.len(), 1, "{conf}");
        let want = expected_policies(conf);
        assert!(
            reports[0].title.contains(&want),
            "{conf}: {} lacks {want}",
            reports[0].title
        );
        assert!(
            reports[0].allocations > 0,
            "{conf}: echo allocated nothing through us?"
        );
        let named = NAMED.contains(&conf);
        assert_eq!(
            reports[0].title.contains(", config "),
            named,
            "{}",
            reports[0].title
        );
    }
}

/// The configurations above read the options independently of the library, but a config
/// added to the catalogue must still be run by them.
#[test]
fn the_tests_run_every_named_config_of_the_catalogue() {
    let catalogue = alloclab_policies::configs::NAMES.map(|n| format!("config:{n}"));
    assert_eq!(NAMED.map(String::from), catalogue);
}

/// The arena strategy is not just a name: count the arenas a multi-threaded program creates.
#[test]
fn arena_strategies_bound_the_arenas_created() {
    let churn = c_program("churn");
    for (conf, max, min) in [
        ("arenas:single", 1, 1),
        ("arenas:round-robin,narenas:3", 3, 3),
        ("arenas:hashed,narenas:2", 2, 1),
        // Thread-local: one per live thread (8 at once, plus main), reused as threads exit.
        ("arenas:thread", 8 + 2, 2),
    ] {
        let out = run(
            preloaded(&churn, &format!("{conf},stats_print:true")).args(["400", "8"]),
            LIMIT,
        );
        out.assert_success(conf);
        let (reports, _) = split_reports(&out.stderr);
        let n = reports[0].arenas_created;
        assert!((min..=max).contains(&n), "{conf}: {n} arenas created");
    }
}

/// Programs that close stderr at exit (coreutils) still get their report, on the stderr they
/// started with.
#[test]
fn stats_survive_a_program_closing_stderr() {
    let out = run(preloaded("/bin/ls", "stats_print:true").arg("/"), LIMIT);
    out.assert_success("ls");
    let (reports, _) = split_reports(&out.stderr);
    assert_eq!(reports.len(), 1, "{}", out.stderr);
}
