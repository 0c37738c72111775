//! The two libraries built for one config: liballoclab_production.so (every debug check
//! compiled out) and liballoclab_debug.so (every check compiled in, the debug profile built
//! in). What each does with a misuse, with and without `ALLOCLAB_CONF`, shows that the
//! built-in conf applies, that the environment still overrides it, and that a production
//! build refuses to be talked into checking.

mod common;
use common::*;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn production() -> &'static PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        library(
            "liballoclab-production",
            "liballoclab_production.so",
            "ALLOCLAB_PRODUCTION_SO",
        )
    })
}

fn debug() -> &'static PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        library(
            "liballoclab-debug",
            "liballoclab_debug.so",
            "ALLOCLAB_DEBUG_SO",
        )
    })
}

/// Runs the misuse `case` of hardened.c on `lib`, with `ALLOCLAB_CONF=conf` or none.
fn misuse(lib: &PathBuf, conf: Option<&str>, case: &str) -> Output {
    let mut cmd = plain(c_program("hardened"));
    cmd.env("LD_PRELOAD", lib).arg(case);
    if let Some(conf) = conf {
        cmd.env("ALLOCLAB_CONF", conf);
    }
    let out = run(&mut cmd, LIMIT);
    assert!(
        out.stdout.starts_with(&format!("reached: {case}\n")),
        "{case}: {out:?}"
    );
    out
}

fn aborts_with(out: &Output, message: &str) {
    assert_eq!(out.signal(), Some(libc::SIGABRT), "{out:?}");
    assert!(
        out.stderr.starts_with(&format!("alloclab: {message}")),
        "{out:?}"
    );
}

fn survives(out: &Output, case: &str) {
    out.assert_success(case);
    assert!(out.stdout.contains(&format!("survived: {case}")), "{out:?}");
}

#[test]
fn the_debug_build_checks_without_being_asked() {
    let out = misuse(debug(), None, "write-after-free");
    aborts_with(&out, "write after free at 0x");
    let out = misuse(debug(), None, "overflow-1");
    aborts_with(&out, "heap overflow: the allocation of 100 bytes");
}

#[test]
fn the_environment_overrides_the_debug_build_s_conf() {
    let out = misuse(debug(), Some("profile:default"), "write-after-free");
    survives(&out, "write-after-free");
    // One option turned back on alone: the canary catches the overflow, poisoning stays off.
    let out = misuse(debug(), Some("profile:default,canary:true"), "overflow-1");
    aborts_with(&out, "heap overflow: the allocation of 100 bytes");
}

#[test]
fn the_production_build_refuses_checks_it_lacks_and_still_refuses_bad_frees() {
    for case in ["write-after-free", "overflow-1"] {
        let out = misuse(production(), None, case);
        survives(&out, case);
    }
    let out = misuse(production(), None, "double-free");
    aborts_with(&out, "free(0x");
    // Asked for checks it was built without, it says so and stops before the program runs.
    let mut cmd = plain(c_program("hardened"));
    cmd.env("LD_PRELOAD", production())
        .env("ALLOCLAB_CONF", "profile:debug")
        .arg("write-after-free");
    let out = run(&mut cmd, LIMIT);
    assert_eq!(out.signal(), Some(libc::SIGABRT), "{out:?}");
    assert!(
        out.stderr
            .starts_with("alloclab: config lifo does not compile in the debug checks asked for"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("reached"), "{out:?}");
}
