//! Process life under LD_PRELOAD (issue 3, point 4): allocation before `main` and from the
//! loader and thread-exit machinery, dynamic TLS, fork while other threads allocate, and
//! thread churn that must not grow memory.

mod common;
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn early_loader_and_thread_exit_allocations() {
    let prog = c_program("early");
    for conf in all_confs() {
        let out = run(&mut preloaded(&prog, conf), LIMIT);
        out.assert_success(conf);
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("early: ok\n", "")
        );
    }
}

#[test]
fn fork_while_other_threads_allocate() {
    let prog = c_program("fork_threads");
    for conf in all_confs() {
        let out = run(preloaded(&prog, conf).args(["4", "60"]), LIMIT);
        out.assert_success(conf);
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("fork: ok\n", "")
        );
    }
}

#[test]
fn thread_churn_does_not_grow_memory() {
    let prog = c_program("churn");
    for conf in all_confs() {
        let out = run(
            preloaded(&prog, &format!("{conf},stats_print:true")).args(["4000", "8"]),
            LIMIT,
        );
        out.assert_success(conf);
        assert!(
            out.stdout.ends_with("churn: ok\n"),
            "{conf}: {}",
            out.stdout
        );
        let (reports, rest) = split_reports(&out.stderr);
        assert_eq!(rest, "", "{conf}");
        // Thread-local arenas go back to the pool: never many more than threads alive at once.
        assert!(
            reports[0].arenas_created <= 8 + 2,
            "{conf}: {:?}",
            reports[0]
        );
    }
}

#[test]
fn dynamic_tls_of_dlopened_modules_does_not_recurse() {
    // More TLS modules than glibc's DTV has spare slots (14), so threads' DTVs must grow.
    const N: usize = 24;
    let dir = scratch("tls");
    for i in 1..=N {
        let lib = dir.join(format!("libtls{i}.so"));
        if lib.exists() {
            continue;
        }
        let src = dir.join(format!("tls{i}.c"));
        std::fs::write(
            &src,
            format!("__thread long tv{i}[64];\nlong get{i}(void) {{ return ++tv{i}[3]; }}\n"),
        )
        .unwrap();
        let tmp = dir.join(format!("libtls{i}.so.{}", std::process::id()));
        cc(
            &[
                "-shared".as_ref(),
                "-fPIC".as_ref(),
                src.as_os_str(),
                "-o".as_ref(),
                tmp.as_os_str(),
            ],
            &[],
        );
        std::fs::rename(&tmp, &lib).unwrap();
    }
    let prog = c_program("tls_dlopen");
    for conf in NAMED.iter().chain(STRATEGIES.iter()) {
        let out = run(preloaded(&prog, conf).arg(&dir).arg(N.to_string()), LIMIT);
        out.assert_success(conf);
        assert_eq!(out.stdout, "tls: ok\n");
    }
}
