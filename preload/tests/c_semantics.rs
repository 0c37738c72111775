//! The C semantics of issue 3 (point 3), checked by a C program under every configuration,
//! and misuse refused with one line and SIGABRT.

mod common;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn c_semantics_hold_under_every_configuration() {
    let prog = c_program("semantics");
    for conf in all_confs() {
        let out = run(preloaded(&prog, conf).arg("free"), LIMIT);
        out.assert_success(conf);
        assert_eq!(out.stdout, "semantics: ok\n", "{conf}");
        assert_eq!(out.stderr, "", "{conf}");
    }
    // realloc(p, 0) the other way.
    let out = run(
        preloaded(&prog, "zero_realloc:alloc,config:mrf-current").arg("alloc"),
        LIMIT,
    );
    out.assert_success("zero_realloc:alloc");
}

#[test]
fn the_semantics_program_can_fail() {
    // glibc 2.36 has neither free_sized nor an EINVAL aligned_alloc: the same program, not
    // preloaded, must report failures (so a pass above means something).
    let out = run(plain(c_program("semantics")).arg("free"), LIMIT);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("FAIL "), "{}", out.stderr);
}

#[test]
fn misuse_aborts_with_one_line_naming_the_pointer() {
    let prog = c_program("misuse");
    for (case, message) in [
        ("double-free", "free(0x"),
        ("foreign", "free(0x"),
        ("interior", "free(0x"),
        ("interior-large", "free(0x"),
        ("realloc-foreign", "realloc(0x"),
        ("usable-foreign", "malloc_usable_size(0x"),
        ("free-sized-too-big", "free_sized(0x"),
        ("free-aligned-misaligned", "free_aligned_sized(0x"),
    ] {
        for conf in ["config:lifo", "config:addr-ordered,arenas:single"] {
            let out = run(preloaded(&prog, conf).arg(case), LIMIT);
            assert_eq!(out.stdout, format!("reached: {case}\n"), "{case}");
            assert_eq!(out.signal(), Some(libc::SIGABRT), "{case}: {out:?}");
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{case}: {}", out.stderr);
            assert!(
                lines[0].starts_with(&format!("alloclab: {message}")),
                "{case}: {}",
                lines[0]
            );
        }
    }
}
