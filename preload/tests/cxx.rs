//! C++ under LD_PRELOAD: every `operator new`/`delete` variant is liballoclab.so's, `new`
//! calls the new-handler and throws `std::bad_alloc`, and the hardened profiles check the size
//! given to a sized `delete`.

mod common;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn every_operator_is_ours_and_new_fails_as_the_standard_says() {
    let prog = cxx_program("cxx");
    for conf in ["", "profile:hardened", "profile:debug,arenas:single"] {
        let out = run(preloaded(&prog, conf).arg("semantics"), LIMIT);
        out.assert_success(conf);
        assert_eq!(out.stdout, "cxx: ok\n", "{conf}");
        assert_eq!(out.stderr, "", "{conf}");
    }
    // Not preloaded, the program fails its "the operators are liballoclab's" checks: a pass
    // above means something.
    let out = run(plain(&prog).arg("semantics"), LIMIT);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("_Znwm comes from"), "{out:?}");
}

#[test]
fn a_sized_delete_with_the_wrong_size_is_refused_when_hardened() {
    let prog = cxx_program("cxx");
    for (case, size) in [
        ("sized-delete-wrong", 2000),
        ("sized-delete-wrong-class", 20),
        ("sized-delete-wrong-large", 19990),
        ("sized-delete-wrong-large-aligned", 16374),
    ] {
        for conf in [
            "profile:hardened",
            "profile:hardened,canary:false",
            "profile:hardened,guard:false",
            "profile:debug",
        ] {
            let out = run(preloaded(&prog, conf).arg(case), LIMIT);
            assert_eq!(out.signal(), Some(libc::SIGABRT), "{case} {conf}: {out:?}");
            assert!(
                out.stderr.starts_with("alloclab: operator delete(0x")
                    && out
                        .stderr
                        .contains(&format!(", {size}): the size is not the allocation's")),
                "{case} {conf}: {out:?}"
            );
        }
        // The default profile does not look at the size, as glibc.
        let out = run(preloaded(&prog, "").arg(case), LIMIT);
        out.assert_success(case);
    }
    // The right sizes pass, the large ones too (their requested size is recorded).
    for conf in [
        "profile:hardened",
        "profile:hardened,guard:false",
        "profile:debug",
    ] {
        let out = run(
            preloaded(&prog, conf).arg("sized-delete-right-large"),
            LIMIT,
        );
        out.assert_success(conf);
    }
    // A bad pointer is refused in every profile.
    for conf in ["", "profile:hardened"] {
        let out = run(
            preloaded(&prog, conf).arg("array-delete-of-interior"),
            LIMIT,
        );
        assert_eq!(out.signal(), Some(libc::SIGABRT), "{out:?}");
        assert!(
            out.stderr
                .ends_with("): pointer into the middle of an allocation\n"),
            "{out:?}"
        );
    }
}
