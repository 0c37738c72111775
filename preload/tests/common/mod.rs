//! Shared by the preload tests: the library under test, C test programs built on demand, runs
//! with a deadline, and reading the statistics report the library prints at exit.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

// ---- the library under test -----------------------------------------------------------------

/// `liballoclab.so`: `$ALLOCLAB_SO` if set (scripts/test.sh points it at the release build),
/// else the library of this test binary's own profile and target directory, built now with
/// the cargo that runs the tests (a cdylib is not built for integration tests by itself).
pub fn so() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| library("liballoclab", "liballoclab.so", "ALLOCLAB_SO"))
}

/// The cdylib `file` of workspace package `package`: the path in `$var` if set, else built
/// now, as [`so`] builds liballoclab.so.
pub fn library(package: &str, file: &str, var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{var}={} does not exist", p.display());
        return std::fs::canonicalize(p).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let profile = profile_dir.file_name().unwrap().to_str().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", package, "--target-dir"])
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
    let out = cmd.output().expect("run cargo to build a cdylib");
    assert!(
        out.status.success(),
        "building {file} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let so = profile_dir.join(file);
    assert!(so.is_file(), "{} was not built", so.display());
    so
}

/// A scratch directory for this test binary.
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("preload")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---- C test programs ------------------------------------------------------------------------

/// Compiles `tests/programs/<name>.c` (once per test binary) with `-O0 -fno-builtin`, so that
/// the compiler neither folds nor deletes the allocation calls under test.
pub fn c_program(name: &str) -> PathBuf {
    built_once(name, "c", |src, out| {
        cc(&[src.as_os_str(), "-o".as_ref(), out.as_os_str()], &[])
    })
}

/// Compiles `tests/programs/<name>.cpp` with `g++` (once per test binary), with the C
/// programs' flags and C++17.
pub fn cxx_program(name: &str) -> PathBuf {
    built_once(name, "cpp", |src, out| {
        let res = Command::new("g++")
            .args([
                "-O0",
                "-fno-builtin",
                "-std=c++17",
                "-Wall",
                "-Wno-free-nonheap-object",
            ])
            .arg(src)
            .arg("-o")
            .arg(out)
            .arg("-ldl")
            .output()
            .expect("run g++ (install g++)");
        assert!(
            res.status.success(),
            "g++ {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&res.stderr)
        );
    })
}

/// The binary of `tests/programs/<name>.<ext>`, made by `build(source, output)` the first time
/// this test binary asks for it.
fn built_once(name: &str, ext: &str, build: impl FnOnce(&Path, &Path)) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    let key = format!("{name}.{ext}");
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(&key);
    let out = scratch("bin").join(format!("{name}-{ext}-{}", std::process::id()));
    build(&src, &out);
    built.insert(key, out.clone());
    out
}

/// Runs `cc` with the test programs' flags plus `args` (and `libs` at the end).
pub fn cc(args: &[&std::ffi::OsStr], libs: &[&str]) {
    let out = Command::new("cc")
        .args([
            "-O0",
            "-fno-builtin",
            "-pthread",
            "-Wall",
            "-Wno-alloc-size-larger-than",
        ])
        .args(["-Wno-use-after-free"])
        .args(args)
        .args(["-ldl"])
        .args(libs)
        .output()
        .expect("run cc (install gcc)");
    assert!(
        out.status.success(),
        "cc {:?} failed:\n{}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---- running ----------------------------------------------------------------------------------

/// What a run produced.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The signal that killed the process, if any.
    pub fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal()
    }

    /// Panics with everything the run printed unless it exited 0.
    pub fn assert_success(&self, what: &str) -> &Self {
        assert!(
            self.status.success(),
            "{what}: {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// A command with neither `LD_PRELOAD` nor `ALLOCLAB_CONF` inherited (a glibc run).
pub fn plain(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_remove("LD_PRELOAD").env_remove("ALLOCLAB_CONF");
    c
}

/// A command run on liballoclab.so with `ALLOCLAB_CONF=conf`.
pub fn preloaded(program: impl AsRef<std::ffi::OsStr>, conf: &str) -> Command {
    let mut c = Command::new(program);
    c.env("LD_PRELOAD", so()).env("ALLOCLAB_CONF", conf);
    c
}

/// Runs `cmd` to completion, killing it (and failing the test) after `limit`.
pub fn run(cmd: &mut Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err_reader.join().unwrap();
            panic!(
                "{cmd:?} did not finish in {limit:?} (deadlock?)\n--- stderr\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
    }
}

// ---- configurations ---------------------------------------------------------------------------

/// The named configs, each with its thread-local arenas.
pub const NAMED: [&str; 6] = [
    "config:addr-ordered",
    "config:lifo",
    "config:mrf",
    "config:mrf-current",
    "config:lifo-tcache",
    "config:lifo-tcache-mailbox",
];

/// The other arena strategies, each over a different run-reuse policy.
pub const STRATEGIES: [&str; 4] = [
    "config:mrf-current,arenas:single",
    "config:addr-ordered,arenas:round-robin,narenas:3",
    "config:mrf,arenas:per-cpu",
    "config:lifo,arenas:hashed,narenas:5",
];

/// Combinations no named config gives.
pub const CUSTOM: [&str; 4] = [
    "reuse:addr-ordered,current_run:false,arenas:hashed",
    "reuse:lifo,current_run:true,arenas:round-robin,narenas:2",
    "reuse:mrf,tcache:true,tcache_max:8192,arenas:single",
    "reuse:addr-ordered,tcache:true,remote:mailbox,arenas:single",
];

/// Every configuration the tests run under.
pub fn all_confs() -> Vec<&'static str> {
    NAMED
        .iter()
        .chain(STRATEGIES.iter())
        .chain(CUSTOM.iter())
        .copied()
        .collect()
}

/// The policies a configuration string asks for, as the statistics title names them
/// (`reuse mrf+current-run, arenas single`): an independent reading of the option semantics.
pub fn expected_policies(conf: &str) -> String {
    let mut base = ("lifo", false, "thread", false, "flush");
    let (mut reuse, mut current, mut arenas, mut tcache, mut remote) =
        (None, None, None, None, None);
    for entry in conf.split(',') {
        match entry.split_once(':') {
            Some(("config", "addr-ordered")) => {
                base = ("addr-ordered", true, "thread", false, "flush")
            }
            Some(("config", "lifo")) => base = ("lifo", false, "thread", false, "flush"),
            Some(("config", "mrf")) => base = ("mrf", false, "thread", false, "flush"),
            Some(("config", "mrf-current")) => base = ("mrf", true, "thread", false, "flush"),
            Some(("config", "lifo-tcache")) => base = ("lifo", false, "thread", true, "flush"),
            Some(("config", "lifo-tcache-mailbox")) => {
                base = ("lifo", false, "thread", true, "mailbox")
            }
            Some(("tcache", v)) => tcache = Some(v == "true"),
            Some(("remote", v)) => remote = Some(v),
            Some(("reuse", v)) => reuse = Some(v),
            Some(("current_run", v)) => current = Some(v == "true"),
            Some(("arenas", v)) => arenas = Some(v),
            _ => {}
        }
    }
    let reuse = reuse.unwrap_or(base.0);
    let current = if current.unwrap_or(base.1) {
        "+current-run"
    } else {
        ""
    };
    let front = match (tcache.unwrap_or(base.3), remote.unwrap_or(base.4)) {
        (false, _) => "",
        (true, "mailbox") => ", front thread-cache, remote mailbox",
        (true, _) => ", front thread-cache",
    };
    format!(
        "reuse {reuse}{current}, arenas {}{front}",
        arenas.unwrap_or(base.2)
    )
}

// ---- statistics reports ---------------------------------------------------------------------

/// One `stats_print` report.
#[derive(Debug, Default)]
pub struct Report {
    pub title: String,
    pub arenas_created: usize,
    /// Small (sum of the bins), large and huge allocations.
    pub allocations: u64,
}

/// Splits stderr into the statistics reports and every other line (in order).
pub fn split_reports(stderr: &str) -> (Vec<Report>, String) {
    let mut reports = Vec::new();
    let mut rest = String::new();
    let mut in_report = false;
    for line in stderr.lines() {
        if let Some(t) = line.strip_prefix("___ alloclab statistics: ") {
            reports.push(Report {
                title: t.trim_end_matches(" ___").to_string(),
                ..Report::default()
            });
            in_report = true;
            continue;
        }
        if in_report {
            let r = reports.last_mut().unwrap();
            let nums: Vec<u64> = line
                .split_whitespace()
                .map_while(|w| w.parse().ok())
                .collect();
            if let Some(a) = line.strip_prefix("arenas: ") {
                r.arenas_created = a.split_whitespace().next().unwrap().parse().unwrap();
                continue;
            }
            if let Some(l) = line.strip_prefix("large: ") {
                let w: Vec<&str> = l.split_whitespace().collect();
                // "N live bytes, N allocations, N frees; huge: N live (N bytes), N allocations"
                r.allocations += w[3].parse::<u64>().unwrap() + w[12].parse::<u64>().unwrap();
                continue;
            }
            if line.starts_with("allocated:")
                || line.starts_with("resident:")
                || line.starts_with("thread caches:")
                || line.starts_with("huge cache:")
                || line.starts_with("system calls (process):")
                || line.trim_start().starts_with("bin ")
            {
                continue;
            }
            if nums.len() == 6 && line.split_whitespace().count() == 6 {
                r.allocations += nums[4];
                continue;
            }
            in_report = false;
        }
        rest.push_str(line);
        rest.push('\n');
    }
    (reports, rest)
}
