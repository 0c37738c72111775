//! liballoclab_probe.so in front of a real allocator, in real processes: a C program whose
//! threads and forked child make known numbers of calls, under a seeded slow allocator (an
//! `aligned_alloc` that spins 20 µs) preloaded after the probe. The probe must count every
//! call of each thread exactly, file the child's calls apart from the parent's, and measure
//! the slow calls as slow and the others as fast.

use alloclab_probe::dump::Dump;
use alloclab_probe::{Kind, Summary};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// liballoclab_probe.so of this test binary's profile, built now (a cdylib of another
/// package is not built for integration tests by itself); `$ALLOCLAB_PROBE_SO` if set.
fn probe_so() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        if let Some(p) = std::env::var_os("ALLOCLAB_PROBE_SO") {
            return std::fs::canonicalize(p).unwrap();
        }
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        let target_dir = profile_dir.parent().unwrap();
        let profile = profile_dir.file_name().unwrap().to_str().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--quiet",
            "-p",
            "alloclab-probe-so",
            "--target-dir",
        ])
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
        match profile {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let out = cmd
            .output()
            .expect("run cargo to build liballoclab_probe.so");
        assert!(
            out.status.success(),
            "building liballoclab_probe.so failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let so = profile_dir.join("liballoclab_probe.so");
        assert!(so.is_file(), "{} was not built", so.display());
        so
    })
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("alloclab-probe-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn cc(args: &[&str]) {
    let out = Command::new("cc").args(args).output().expect("run cc");
    assert!(
        out.status.success(),
        "cc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const PROGRAM: &str = r#"
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void work(long n) {
    for (long i = 0; i < n; i++) {
        void *p = aligned_alloc(64, 64);
        if (!p) abort();
        free(p);
    }
}
static void *thread(void *n) { work((long)n); return 0; }
int main(void) {
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        if (pthread_create(&t[i], 0, thread, (void *)(100 * (i + 1)))) abort();
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    pid_t c = fork();
    if (c == 0) { work(50); exit(0); }
    int status;
    if (waitpid(c, &status, 0) != c || status != 0) abort();
    return 0;
}
"#;

/// A seeded slow allocator: glibc's, but `aligned_alloc` spins 20 µs first.
const SLOW: &str = r#"
#include <stddef.h>
#include <time.h>
extern void *__libc_memalign(size_t, size_t);
void *aligned_alloc(size_t align, size_t size) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000);
    return __libc_memalign(align, size);
}
"#;

fn built(dir: &Path) -> (PathBuf, PathBuf) {
    let (src, exe) = (dir.join("program.c"), dir.join("program"));
    std::fs::write(&src, PROGRAM).unwrap();
    cc(&[
        src.to_str().unwrap(),
        "-O1",
        "-pthread",
        "-o",
        exe.to_str().unwrap(),
    ]);
    let (src, so) = (dir.join("slow.c"), dir.join("libslow.so"));
    std::fs::write(&src, SLOW).unwrap();
    cc(&[
        src.to_str().unwrap(),
        "-O1",
        "-shared",
        "-fPIC",
        "-o",
        so.to_str().unwrap(),
    ]);
    (exe, so)
}

/// Runs `exe` with `preload` after the probe; the dumps of its processes, by pid.
fn run(exe: &Path, preload: Option<&Path>, out: &Path) -> Vec<Dump> {
    let list = match preload {
        Some(p) => format!("{} {}", probe_so().display(), p.display()),
        None => probe_so().display().to_string(),
    };
    let status = Command::new(exe)
        .env("LD_PRELOAD", list)
        .env("ALLOCLAB_PROBE_DIR", out)
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let mut dumps: Vec<Dump> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| Dump::parse(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    dumps.sort_by_key(|d| d.pid);
    dumps
}

fn aligned_calls(d: &Dump) -> Vec<u64> {
    let mut v: Vec<u64> = d
        .threads
        .iter()
        .map(|t| t.kinds[Kind::Aligned as usize].calls)
        .filter(|&c| c > 0)
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn each_thread_is_counted_exactly_the_fork_apart_and_the_slow_allocator_is_slow() {
    let dir = scratch("slow");
    let (exe, slow) = built(&dir);
    let out = dir.join("slow-out");
    std::fs::create_dir(&out).unwrap();
    let dumps = run(&exe, Some(&slow), &out);
    assert_eq!(dumps.len(), 2, "the parent's file and the forked child's");
    // The parent first (the lower pid): three threads with their own counts; the child's
    // file holds its 50 calls and none of its parent's.
    assert_eq!(aligned_calls(&dumps[0]), vec![100, 200, 300]);
    assert_eq!(aligned_calls(&dumps[1]), vec![50]);

    let s = Summary::from_dumps(&dumps);
    assert_eq!(s.kinds[Kind::Aligned as usize].calls, 650);
    assert!(s.kinds[Kind::Free as usize].calls >= 650);
    let slow_p50 = s.percentile(Some(Kind::Aligned), 0.5).unwrap();
    let free_p50 = s.percentile(Some(Kind::Free), 0.5).unwrap();
    assert!(
        slow_p50 >= 19_000.0,
        "aligned_alloc p50 {slow_p50} ns, spins 20 µs"
    );
    assert!(free_p50 < 5_000.0, "free p50 {free_p50} ns");
    // The thread with 300 slow calls spent at least 300 x 20 µs inside the allocator.
    let max = s.ns_per_thread_max().unwrap();
    assert!(max >= 300.0 * 19_000.0, "{max} ns");

    // The same program on glibc alone: the same counts, and fast.
    let fast_out = dir.join("fast-out");
    std::fs::create_dir(&fast_out).unwrap();
    let fast = Summary::from_dumps(&run(&exe, None, &fast_out));
    assert_eq!(fast.kinds[Kind::Aligned as usize].calls, 650);
    let fast_p50 = fast.percentile(Some(Kind::Aligned), 0.5).unwrap();
    assert!(fast_p50 < 5_000.0, "glibc aligned_alloc p50 {fast_p50} ns");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_directory_nothing_is_written_and_the_program_runs() {
    let dir = scratch("nodir");
    let (exe, _) = built(&dir);
    let status = Command::new(&exe)
        .env("LD_PRELOAD", probe_so())
        .env_remove("ALLOCLAB_PROBE_DIR")
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("probe-"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    // A bad sampling rate is refused with a line, not ignored.
    let out = Command::new(&exe)
        .env("LD_PRELOAD", probe_so())
        .env("ALLOCLAB_PROBE_EVERY", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ALLOCLAB_PROBE_EVERY"));
    let _ = std::fs::remove_dir_all(&dir);
}
