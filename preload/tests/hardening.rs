//! The debug profiles under LD_PRELOAD: a C program commits each misuse and must end as
//! documented (an abort with its one-line message, or a fault); without a profile the same
//! program shows what would go unnoticed, and bad frees are still refused.

mod common;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// How a run must end.
#[derive(Clone, Copy, Debug)]
enum End {
    /// SIGABRT with one line on stderr starting with this.
    Abort(&'static str),
    /// SIGSEGV (a guard page or inaccessible memory), after one line on stderr starting with
    /// this (the fault handler's report).
    Fault(&'static str),
    /// Exit 0 after the misuse (the profile does not catch it).
    Survives,
}

fn expect(case: &str, conf: &str, end: End) {
    let out = run(preloaded(c_program("hardened"), conf).arg(case), LIMIT);
    let what = format!("{case} under {conf:?}: {out:?}");
    assert!(
        out.stdout.starts_with(&format!("reached: {case}\n")),
        "{what}"
    );
    match end {
        End::Abort(message) => {
            assert_eq!(out.signal(), Some(libc::SIGABRT), "{what}");
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{what}");
            assert!(
                lines[0].starts_with(&format!("alloclab: {message}")),
                "{what}"
            );
        }
        End::Fault(report) => {
            assert_eq!(out.signal(), Some(libc::SIGSEGV), "{what}");
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{what}");
            assert!(
                lines[0].starts_with(&format!("alloclab: {report}")),
                "{what}"
            );
        }
        End::Survives => {
            out.assert_success(&what);
            assert!(out.stdout.contains(&format!("survived: {case}")), "{what}");
        }
    }
}

/// Each misuse, and how it ends under the hardened profile.
const HARDENED: [(&str, End); 13] = [
    ("write-after-free", End::Abort("write after free at 0x")),
    ("write-after-free-large", End::Fault("use after free at 0x")),
    ("read-after-free-large", End::Fault("use after free at 0x")),
    (
        "overflow-1",
        End::Abort("heap overflow: the allocation of 100 bytes"),
    ),
    // Eight bytes reach the canary's size field: the size is lost, not the overflow.
    (
        "overflow-8",
        End::Abort("heap overflow: the allocation at 0x"),
    ),
    ("overflow-large", End::Fault("heap overflow at 0x")),
    ("malloc0-read", End::Fault("malloc(0) access at 0x")),
    ("malloc0-write", End::Fault("malloc(0) access at 0x")),
    ("double-free", End::Abort("free(0x")),
    ("double-free-large", End::Abort("free(0x")),
    ("interior", End::Abort("free(0x")),
    ("foreign", End::Abort("free(0x")),
    ("never-allocated", End::Abort("free(0x")),
];

#[test]
fn the_hardened_profile_stops_every_misuse() {
    for (case, end) in HARDENED {
        expect(case, "profile:hardened", end);
    }
}

#[test]
fn the_debug_profile_stops_them_too() {
    for (case, end) in HARDENED {
        expect(case, "profile:debug,config:mrf", end);
    }
}

#[test]
fn bad_frees_say_what_they_found() {
    for conf in ["profile:hardened", "profile:default"] {
        for (case, why) in [
            ("double-free", "pointer already freed (double free)"),
            ("interior", "pointer into the middle of an allocation"),
            ("foreign", "pointer not allocated by this heap"),
        ] {
            let out = run(preloaded(c_program("hardened"), conf).arg(case), LIMIT);
            assert!(
                out.stderr.ends_with(&format!("): {why}\n")),
                "{case} {conf}: {out:?}"
            );
        }
    }
    let out = run(
        preloaded(c_program("hardened"), "profile:hardened").arg("never-allocated"),
        LIMIT,
    );
    assert!(
        out.stderr
            .ends_with("): pointer never allocated (no allocation was made there)\n"),
        "{out:?}"
    );
}

#[test]
fn without_a_profile_the_same_misuse_goes_unnoticed_and_bad_frees_do_not() {
    // What the checks add: these run to the end on the default profile.
    for case in [
        "write-after-free",
        "overflow-1",
        "overflow-8",
        "malloc0-write",
    ] {
        expect(case, "profile:default", End::Survives);
    }
    for case in ["double-free", "double-free-large", "interior", "foreign"] {
        expect(case, "", End::Abort("free(0x"));
    }
}

#[test]
fn tcache_check_light_refuses_cached_double_frees_and_finds_other_bad_frees_late_or_never() {
    let light = "tcache_check:light";
    // What the light fast path still refuses: a region in a cache (the mark), and anything
    // that is not in a small run's page (the page map and entry); the locked path then
    // names the error as with full checks.
    for (case, why) in [
        ("double-free", "pointer already freed (double free)"),
        ("foreign", "pointer not allocated by this heap"),
    ] {
        expect(case, light, End::Abort("free(0x"));
        let out = run(preloaded(c_program("hardened"), light).arg(case), LIMIT);
        assert!(
            out.stderr.ends_with(&format!("): {why}\n")),
            "{case}: {out:?}"
        );
    }
    expect("double-free-large", light, End::Abort("free(0x"));
    // What it takes unchecked: a 16-byte aligned pointer into a live region, or to a region
    // never handed out. Full checks refuse both on the spot.
    for case in ["interior", "never-allocated"] {
        expect(case, light, End::Survives);
        expect(case, "tcache_check:full", End::Abort("free(0x"));
    }
    // Taken unchecked, found when the region goes back to its run: here at the thread's exit.
    expect(
        "interior-in-thread",
        light,
        End::Abort("thread cache: region 0x"),
    );
    let out = run(
        preloaded(c_program("hardened"), light).arg("interior-in-thread"),
        LIMIT,
    );
    assert!(
        out.stderr
            .contains("(pointer into the middle of an allocation; with tcache_check:light"),
        "{out:?}"
    );
    expect("interior-in-thread", "", End::Abort("free(0x"));
    // Without a thread cache the option changes nothing.
    expect(
        "interior",
        "config:lifo,tcache_check:light",
        End::Abort("free(0x"),
    );
}

#[test]
fn sampled_allocations_fault_with_a_report_and_both_stacks() {
    let prog = c_program("hardened");
    let out = run(
        preloaded(&prog, "sample:1").arg("sampled-off-by-one"),
        LIMIT,
    );
    assert_eq!(out.signal(), Some(libc::SIGSEGV), "{out:?}");
    assert!(
        out.stderr
            .starts_with("alloclab: sampled allocation: heap overflow at 0x")
            || out
                .stderr
                .starts_with("alloclab: sampled allocation: heap underflow at 0x"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("the live allocation of 64 bytes at 0x"),
        "{out:?}"
    );
    assert!(out.stderr.contains("allocated by thread"), "{out:?}");
    assert!(
        out.stderr.contains("hardened"),
        "the stack names the program: {out:?}"
    );
    let out = run(
        preloaded(&prog, "sample:1").arg("sampled-use-after-free"),
        LIMIT,
    );
    assert_eq!(out.signal(), Some(libc::SIGSEGV), "{out:?}");
    assert!(
        out.stderr
            .starts_with("alloclab: sampled allocation: use after free at 0x"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("offset 8 in the freed allocation of 64 bytes"),
        "{out:?}"
    );
    assert!(out.stderr.contains("freed by thread"), "{out:?}");
    // Sampling everything changes nothing for a correct program.
    let out = run(
        preloaded(c_program("semantics"), "sample:1").arg("free"),
        LIMIT,
    );
    out.assert_success("semantics under sample:1");
}

#[test]
fn single_options_work_alone() {
    expect(
        "write-after-free",
        "poison:all,quarantine:0",
        End::Abort("write after free"),
    );
    expect(
        "write-after-free",
        "zero:true",
        End::Abort("write after free"),
    );
    expect("overflow-1", "canary:true", End::Abort("heap overflow"));
    expect(
        "overflow-large",
        "guard:true",
        End::Fault("heap overflow at 0x"),
    );
    expect(
        "write-after-free-large",
        "quarantine:1048576",
        End::Fault("use after free at 0x"),
    );
    // An option can take back what the profile gives.
    expect("overflow-1", "profile:hardened,canary:false", End::Survives);
}

/// Configs with and without a thread cache, the light cache check, and the debug profiles.
const EVERY_FRONT: [&str; 8] = [
    "",
    "config:lifo-tcache",
    "tcache_check:light",
    "config:lifo",
    "config:addr-ordered",
    "profile:hardened",
    "profile:hardened,config:lifo",
    "profile:debug",
];

#[test]
fn malloc_usable_size_of_a_freed_pointer_is_caught_in_every_config() {
    // Small: in the thread cache (its mark), back in its run, or held in the quarantine.
    // Large: free pages, or held.
    for conf in EVERY_FRONT {
        for case in ["usable-size-freed", "usable-size-freed-large"] {
            expect(case, conf, End::Abort("malloc_usable_size(0x"));
            let out = run(preloaded(c_program("hardened"), conf).arg(case), LIMIT);
            assert!(
                out.stderr.ends_with("): pointer was freed\n"),
                "{case} {conf}: {out:?}"
            );
        }
    }
}

#[test]
fn realloc_in_place_moves_the_canary_in_every_profile_and_front_end() {
    for conf in EVERY_FRONT.iter().chain(&[
        "config:lifo-tcache,canary:true",
        "config:mrf,canary:true",
        "config:lifo-tcache,profile:debug",
        "profile:hardened,tcache_check:light",
    ]) {
        expect("realloc-in-place", conf, End::Survives);
    }
}

#[test]
fn a_full_buffer_read_as_a_string_stops_at_the_canary() {
    for conf in [
        "canary:true",
        "profile:hardened",
        "profile:debug,config:lifo",
    ] {
        let out = run(
            preloaded(c_program("hardened"), conf).arg("string-overflow"),
            LIMIT,
        );
        out.assert_success(conf);
        assert!(
            out.stdout.contains("overflow by 0 bytes\n"),
            "{conf}: {out:?}"
        );
    }
}

#[test]
fn every_bit_after_a_small_allocation_is_covered_and_named_at_its_offset() {
    // malloc(8) with its canary takes a 16-byte region: the zero byte at 8, canary bytes 9 to
    // 11, the size record 12 to 15.
    let prog = c_program("hardened");
    for byte in 8..16 {
        for bit in 0..8 {
            let out = run(
                preloaded(&prog, "canary:true")
                    .arg("canary-record")
                    .arg(byte.to_string())
                    .arg(bit.to_string()),
                LIMIT,
            );
            let what = format!("byte {byte}, bit {bit}: {out:?}");
            assert_eq!(out.signal(), Some(libc::SIGABRT), "{what}");
            assert!(
                out.stderr
                    .starts_with("alloclab: heap overflow: the allocation of 8 bytes at 0x"),
                "{what}"
            );
            assert!(
                out.stderr.contains(&format!(
                    " was written at offset {byte} ({} past its end), found when it was freed",
                    byte - 7
                )),
                "{what}"
            );
        }
    }
}

#[test]
fn a_guard_page_fault_says_where_and_in_which_allocation_and_keeps_the_signal() {
    // hardened.c's "overflow-large": malloc(8192), then a write at offset 8192.
    let out = run(
        preloaded(c_program("hardened"), "profile:hardened").arg("overflow-large"),
        LIMIT,
    );
    assert_eq!(out.signal(), Some(libc::SIGSEGV), "{out:?}");
    assert!(
        out.stderr
            .contains(": 0 bytes past the end of the allocation of 8192 bytes at 0x")
            && out.stderr.ends_with(" (its guard page)\n"),
        "{out:?}"
    );
    // "write-after-free-large": malloc(100000), freed, written at offset 5000.
    let out = run(
        preloaded(c_program("hardened"), "profile:hardened").arg("write-after-free-large"),
        LIMIT,
    );
    assert!(
        out.stderr
            .contains(": offset 5000 in the freed allocation of 100000 bytes at 0x"),
        "{out:?}"
    );
    // A program's own SIGSEGV handler still gets the fault, after the report.
    let out = run(
        preloaded(c_program("hardened"), "profile:hardened").arg("overflow-large-handled"),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(42), "{out:?}");
    assert!(
        out.stderr.starts_with("alloclab: heap overflow at 0x"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("handler: the program's own\n"),
        "{out:?}"
    );
    // Without a profile that places guard pages, the handler is not installed at all: the
    // program's handler sees the fault alone (a write past a 8192-byte allocation that lands
    // on an inaccessible page of the program's own).
    let out = run(
        preloaded(c_program("hardened"), "").arg("own-fault-handled"),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(42), "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");
}
