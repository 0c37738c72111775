//! The debug-options study (the MALLOC_PRODUCTION seed): what does a malloc built with its
//! debug checks cost a tiny program that only starts, allocates once and exits? In the seed,
//! FreeBSD's jemalloc without MALLOC_PRODUCTION gave every program a resident size of about
//! 8 MiB, and 100 runs of `int main(void) { malloc(64); return 0; }` took 24 s against 2 s
//! once a zero-check of fresh memory was skipped. liballoclab.so has every check compiled in
//! and chosen at run time; here the same tiny program runs under it with the options off, the
//! hardened profile and the debug profile, against glibc and Debian's jemalloc, mimalloc and
//! tcmalloc: the parent's clock around each process, and the peak resident size the program
//! reads from `/proc/self/status` before it exits.
//!
//! The seed's bug itself is a pair of subjects: the debug profile with `zero_check:all`, which
//! reads every chunk fresh from `mmap` whole to confirm it is zero, as jemalloc's debug build
//! did (every page of the process's first chunk is faulted in before the one `malloc` returns),
//! and with `zero_check:recycled`, the fix, which reads only pages the heap purged and takes
//! again (none in a program that allocates once). Their head-to-head is the seed's 24 s
//! against 2 s.

use super::{Grid, Question, SeedFigure, Study};
use alloclab_measure::programs::{
    compile_c, debug_library, liballoclab, peer_preloads, production_library, Preload, Program,
    BUILDS_HINT, LIBALLOCLAB_HINT,
};
use alloclab_measure::subjects::SubjectEntry;
use std::path::Path;

/// The seed's program, which then writes its own peak resident size (the `VmHWM:` line of
/// `/proc/self/status`) to stderr, with system calls only: no further allocation.
const TINY_C: &str = r#"#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    if (malloc(64) == NULL)
        return 1;
    char buf[8192];
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0)
        return 2;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 3;
    buf[n] = 0;
    char *line = strstr(buf, "VmHWM:");
    if (line == NULL)
        return 4;
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line + 1) : strlen(line);
    return write(2, line, len) == (ssize_t)len ? 0 : 5;
}
"#;

/// liballoclab.so's settings measured: subject name and `ALLOCLAB_CONF`. The last two are the
/// seed's debug build with its bug (fresh chunks read whole) and with the fix (only recycled
/// pages read), on the debug profile as the seed's were on all of jemalloc's debug checks.
const ALLOCLAB: [(&str, &str); 5] = [
    ("alloclab-off", "config:lifo"),
    ("alloclab-hardened", "config:lifo,profile:hardened"),
    ("alloclab-debug", "config:lifo,profile:debug"),
    (
        "alloclab-zero-check-all",
        "config:lifo,profile:debug,zero_check:all",
    ),
    (
        "alloclab-zero-check-recycled",
        "config:lifo,profile:debug,zero_check:recycled",
    ),
];

/// Compiles the tiny program into `dir` with the system's C compiler, and lists the
/// allocators to run it under.
fn programs(dir: &Path) -> Result<(Vec<Program>, Vec<Preload>), String> {
    let Some(so) = liballoclab() else {
        return Err(format!("liballoclab.so not found: {LIBALLOCLAB_HINT}"));
    };
    let binary = compile_c(dir, "tiny-malloc", TINY_C, &["-O2"])?;
    let mut preloads = peer_preloads();
    for (name, conf) in ALLOCLAB {
        preloads.push(Preload {
            name: name.into(),
            describe: format!("liballoclab.so, ALLOCLAB_CONF={conf}"),
            library: Some(so.clone()),
            env: vec![("ALLOCLAB_CONF".into(), conf.into())],
        });
    }
    // The seed's two builds: checks compiled out, and compiled in and on by default. Both run
    // on an empty ALLOCLAB_CONF, so that one in the caller's environment cannot reach them.
    let (Some(production), Some(debug)) = (production_library(), debug_library()) else {
        return Err(format!(
            "liballoclab_production.so or liballoclab_debug.so not found: {BUILDS_HINT}"
        ));
    };
    preloads.push(Preload {
        name: "alloclab-production".into(),
        describe: "liballoclab_production.so: config lifo, debug checks compiled out".into(),
        library: Some(production),
        env: vec![("ALLOCLAB_CONF".into(), String::new())],
    });
    preloads.push(Preload {
        name: "alloclab-debug-build".into(),
        describe: "liballoclab_debug.so: config lifo, checks compiled in, profile:debug built in"
            .into(),
        library: Some(debug),
        env: vec![("ALLOCLAB_CONF".into(), String::new())],
    });
    let tiny = Program {
        name: "tiny-malloc".into(),
        binary,
        args: vec![],
        env: vec![],
        reports_hwm: true,
        runs: 1,
    };
    Ok((vec![tiny], preloads))
}

fn variants() -> Vec<SubjectEntry> {
    Vec::new()
}

/// The study.
pub fn study() -> Study {
    Study {
        name: "debug-options",
        title: "What do run-time debug options cost a tiny program's start-up and resident size?",
        variants,
        subjects: &[
            "system",
            "jemalloc",
            "mimalloc",
            "tcmalloc",
            "alloclab-production",
            "alloclab-off",
            "alloclab-hardened",
            "alloclab-debug",
            "alloclab-debug-build",
            "alloclab-zero-check-all",
            "alloclab-zero-check-recycled",
        ],
        baseline: "system",
        full: Grid {
            workloads: vec!["program:tiny-malloc"],
            threads: vec![1],
            reps: 1000,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["program:tiny-malloc"],
            threads: vec![1],
            reps: 100,
            scale: 1.0,
        },
        questions: &[
            Question {
                subject: "alloclab-debug-build",
                reference: "alloclab-production",
                text: "the seed's question: a debug build against a production build",
                margins: &[],
            },
            Question {
                subject: "alloclab-off",
                reference: "alloclab-production",
                text: "checks compiled in and off at run time against compiled out",
                margins: &[],
            },
            Question {
                subject: "alloclab-debug",
                reference: "alloclab-debug-build",
                text: "the debug profile chosen at run time against built in",
                margins: &[],
            },
            Question {
                subject: "alloclab-hardened",
                reference: "alloclab-off",
                text: "the hardened profile against options off",
                margins: &[],
            },
            Question {
                subject: "alloclab-debug",
                reference: "alloclab-off",
                text: "the debug profile against options off",
                margins: &[],
            },
            Question {
                subject: "alloclab-off",
                reference: "system",
                text: "liballoclab.so, options off, against glibc",
                margins: &[],
            },
            Question {
                subject: "alloclab-debug",
                reference: "system",
                text: "liballoclab.so, debug profile, against glibc",
                margins: &[],
            },
            Question {
                subject: "alloclab-off",
                reference: "jemalloc",
                text: "liballoclab.so, options off, against jemalloc",
                margins: &[],
            },
            // Appended after the questions of the committed results: their rows (and the seeds
            // of their intervals, which count rows) stay as they were.
            Question {
                subject: "alloclab-zero-check-all",
                reference: "alloclab-zero-check-recycled",
                text: "the seed's bug against its fix: fresh chunks zero-checked against recycled pages only",
                margins: &[],
            },
            Question {
                subject: "alloclab-zero-check-recycled",
                reference: "alloclab-debug",
                text: "the fixed zero-check against none, in the debug profile",
                margins: &[],
            },
            Question {
                subject: "alloclab-zero-check-all",
                reference: "alloclab-production",
                text: "the seed's debug build, its bug included, against a production build",
                margins: &[],
            },
        ],
        metrics: &["wall", "peak_rss"],
        instructions: None,
        programs: Some(programs),
        seed: &SEED,
    }
}

/// The seed's figures (Ian Lepore's message): 100 runs of the tiny program on "a
/// medium-wimpy embedded arm system", without and with the patch that skips the zero-check of
/// fresh memory (per run here: our wall time is one process's), and the minimum resident size
/// "of about 8MiB" every program had with the check.
const SEED: [SeedFigure; 2] = [
    SeedFigure {
        what: "100 runs of `malloc(64)`, per run: the patch skipping the check → without it",
        seed: 0.24,
        seed_reference: Some(0.02),
        unit: "s",
        subject: "alloclab-zero-check-all",
        reference: Some("alloclab-zero-check-recycled"),
        metric: "wall",
        workloads: &[],
    },
    SeedFigure {
        what: "minimum resident size of every program, with the check (\"about 8MiB\")",
        seed: 8.0 * 1024.0 * 1024.0,
        seed_reference: None,
        unit: "bytes",
        subject: "alloclab-zero-check-all",
        reference: None,
        metric: "peak_rss",
        workloads: &[],
    },
];
