//! Unmodified Debian programs under `LD_PRELOAD=liballoclab.so` (issue 3, point 5): python3
//! (with `PYTHONMALLOC=malloc`), perl, lua5.4, sqlite3, gcc compiling a C file, and git. Each
//! runs once on glibc, then under every named config and the other arena strategies; exit
//! status, stdout and stderr must match the glibc run exactly, and the statistics each process
//! prints at exit must show that alloclab, with the requested policies, served it.
//!
//! python3 (with and without pymalloc), perl, lua5.4 and sqlite3 also run under each debug
//! profile and the canary alone, each with a config that has a thread cache and one that has
//! none (the front end is a type: a debug option turns the cache off at run time, but the
//! cached config's code paths stay, and realloc in place once broke there).
//!
//! The programs are Debian's, by absolute path (a `python3` or `git` earlier on `PATH` may be
//! someone else's); `.ci/run` installs them.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

fn programs_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs"))
}

/// One program and how to run it in a fresh working directory.
struct Program {
    name: &'static str,
    /// The Debian binary (and the package that has it).
    binary: &'static str,
    package: &'static str,
    /// Files copied from `tests/programs` into the working directory.
    inputs: &'static [&'static str],
    /// The command, run in the working directory.
    command: fn() -> Command,
}

fn sh(script: &str) -> Command {
    let mut c = Command::new("/bin/sh");
    c.arg("-c").arg(script);
    c
}

/// The debug settings every program must run under unchanged, each with a thread-cache
/// config and one without.
const PROFILES: [&str; 6] = [
    "config:lifo-tcache,profile:hardened",
    "config:lifo,profile:hardened",
    "config:lifo-tcache,profile:debug",
    "config:mrf,profile:debug",
    "config:lifo-tcache,canary:true",
    "config:addr-ordered,canary:true",
];

/// The named configs and the other arena strategies.
fn policies() -> Vec<&'static str> {
    NAMED.iter().chain(STRATEGIES.iter()).copied().collect()
}

/// Runs `p` on glibc and under every configuration of `confs`, comparing, in a working
/// directory of its own for each `set` (tests run in parallel).
fn compare(p: &Program, set: &str, confs: &[&str]) {
    assert!(
        Path::new(p.binary).is_file(),
        "{} is missing: apt-get install {} (.ci/run does)",
        p.binary,
        p.package
    );
    let dir = scratch(&format!("real/{}-{set}", p.name));
    let run_in = |conf: Option<&str>| -> Output {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in p.inputs {
            std::fs::copy(programs_dir().join(f), dir.join(f)).unwrap();
        }
        let mut cmd = (p.command)();
        cmd.current_dir(&dir)
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .env("HOME", &dir)
            .env_remove("LD_PRELOAD")
            .env_remove("ALLOCLAB_CONF");
        if let Some(conf) = conf {
            cmd.env("LD_PRELOAD", so())
                .env("ALLOCLAB_CONF", format!("{conf},stats_print:true"));
        }
        run(&mut cmd, LIMIT)
    };
    let glibc = run_in(None);
    glibc.assert_success(&format!("{} on glibc", p.name));
    assert!(!glibc.stdout.is_empty());
    for conf in confs {
        let out = run_in(Some(conf));
        let what = format!("{} under {conf}", p.name);
        assert_eq!(out.status.code(), glibc.status.code(), "{what}: {out:?}");
        if out.stdout != glibc.stdout {
            let (i, (a, b)) = glibc
                .stdout
                .lines()
                .zip(out.stdout.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .unwrap_or((0, ("(length differs)", "")));
            panic!(
                "{what}: stdout differs from glibc's at line {}: {a:?} vs {b:?}",
                i + 1
            );
        }
        let (reports, rest) = split_reports(&out.stderr);
        assert_eq!(rest, glibc.stderr, "{what}: stderr differs from glibc's");
        assert!(!reports.is_empty(), "{what}: no statistics: not preloaded?");
        assert!(
            reports.iter().any(|r| r.allocations > 1000),
            "{what}: alloclab served almost nothing: {reports:?}"
        );
        let want = expected_policies(conf);
        for r in &reports {
            assert!(r.title.contains(&want), "{what}: {} lacks {want}", r.title);
        }
    }
}

fn python3() -> Program {
    Program {
        name: "python3",
        binary: "/usr/bin/python3",
        package: "python3",
        inputs: &["stdlib.py"],
        command: || {
            let mut c = Command::new("/usr/bin/python3");
            // Not -I/-E: they would ignore PYTHONMALLOC. -s: no user site; -B: no .pyc files.
            c.args(["-s", "-B", "stdlib.py"])
                .env("PYTHONMALLOC", "malloc")
                .env("PYTHONHASHSEED", "0");
            c
        },
    }
}

#[test]
fn python3_stdlib_with_pythonmalloc_malloc() {
    compare(&python3(), "policies", &policies());
}

fn perl() -> Program {
    Program {
        name: "perl",
        binary: "/usr/bin/perl",
        package: "perl",
        inputs: &["text.pl"],
        command: || {
            let mut c = Command::new("/usr/bin/perl");
            c.arg("text.pl").env("PERL_HASH_SEED", "0");
            c
        },
    }
}

#[test]
fn perl_text_processing() {
    compare(&perl(), "policies", &policies());
}

fn lua() -> Program {
    Program {
        name: "lua5.4",
        binary: "/usr/bin/lua5.4",
        package: "lua5.4",
        inputs: &["tables.lua"],
        command: || {
            let mut c = Command::new("/usr/bin/lua5.4");
            c.arg("tables.lua");
            c
        },
    }
}

#[test]
fn lua_tables_strings_coroutines() {
    compare(&lua(), "policies", &policies());
}

fn sqlite3() -> Program {
    Program {
        name: "sqlite3",
        binary: "/usr/bin/sqlite3",
        package: "sqlite3",
        inputs: &["queries.sql"],
        command: || {
            let mut c = Command::new("/usr/bin/sqlite3");
            c.args(["-batch", "test.db", ".read queries.sql"]);
            c
        },
    }
}

#[test]
fn sqlite3_file_database() {
    compare(&sqlite3(), "policies", &policies());
}

fn gcc() -> Program {
    Program {
        name: "gcc",
        binary: "/usr/bin/gcc",
        package: "gcc",
        inputs: &["compile_me.c"],
        // cc1, as, collect2 and ld all run preloaded; the assembly must match glibc's too.
        command: || {
            sh("/usr/bin/gcc -O2 -S compile_me.c -o out.s && \
                /usr/bin/gcc -O2 compile_me.c -o prog && ./prog && cat out.s")
        },
    }
}

#[test]
fn gcc_compiles_links_and_runs_a_c_file() {
    compare(&gcc(), "policies", &policies());
}

fn git() -> Program {
    Program {
        name: "git",
        binary: "/usr/bin/git",
        package: "git",
        inputs: &["repo.sh"],
        command: || {
            let mut c = Command::new("/bin/sh");
            c.arg("repo.sh")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "Alloc Lab")
                .env("GIT_AUTHOR_EMAIL", "lab@example.org")
                .env("GIT_COMMITTER_NAME", "Alloc Lab")
                .env("GIT_COMMITTER_EMAIL", "lab@example.org")
                .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
                .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
                .env("GIT_PAGER", "cat");
            c
        },
    }
}

#[test]
fn git_repository_session() {
    compare(&git(), "policies", &policies());
}

/// python3 with its own small-object allocator (the default): what a user runs, and where
/// realloc in place under the hardened profile once stopped it at start-up.
fn python3_pymalloc() -> Program {
    Program {
        name: "python3-pymalloc",
        command: || {
            let mut c = Command::new("/usr/bin/python3");
            c.args(["-s", "-B", "stdlib.py"]).env("PYTHONHASHSEED", "0");
            c
        },
        ..python3()
    }
}

#[test]
fn python3_under_every_debug_profile() {
    compare(&python3(), "profiles", &PROFILES);
}

#[test]
fn python3_with_pymalloc_under_every_debug_profile() {
    compare(&python3_pymalloc(), "profiles", &PROFILES);
}

#[test]
fn perl_under_every_debug_profile() {
    compare(&perl(), "profiles", &PROFILES);
}

#[test]
fn lua_under_every_debug_profile() {
    compare(&lua(), "profiles", &PROFILES);
}

#[test]
fn sqlite3_under_every_debug_profile() {
    compare(&sqlite3(), "profiles", &PROFILES);
}
