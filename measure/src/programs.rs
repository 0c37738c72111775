//! `compare --programs`: unmodified installed programs (python3, lua5.4, sqlite3, perl) and a
//! start-up program (`malloc(64); return 0`, compiled here) under `LD_PRELOAD` of Debian's
//! jemalloc, mimalloc and tcmalloc and of liballoclab.so under each named config, against
//! glibc's malloc (no preload). Wall time is the parent's clock around the process; user and
//! system time and peak resident size come from `wait4`. Each run's output must equal the
//! glibc run's, else the measurement is a failure.

use super::child::{describe_status, exited_zero, max_rss_bytes, tail, timeval, wait_reading};
use super::progress::{Progress, Style};
use super::runner::{schedule, Shard};
use super::schema::{Failure, Measurement, Metrics, Plan, Results, SCHEMA_VERSION};
use super::subjects::{SubjectEntry, SubjectKind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where Debian installs its allocators' shared libraries.
const LIB_DIR: &str = "/usr/lib/x86_64-linux-gnu";

/// How to run `--programs`.
#[derive(Clone, Debug)]
pub struct ProgramOptions {
    /// Measured rounds.
    pub reps: usize,
    /// Seed of the shuffles and paddings.
    pub seed: u64,
    /// Subjects to keep (default: every one found).
    pub subjects: Option<Vec<String>>,
    /// The subject ratios are taken against.
    pub baseline: String,
    /// Whether this is the quick variant (smaller inputs).
    pub quick: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Programs to keep, by name (`python3` or `program:python3`; default: every one found).
    pub workloads: Option<Vec<String>>,
    /// The metrics asked for (`--metrics`); a probe metric preloads liballoclab_probe.so in
    /// front of every subject.
    pub metrics: Vec<String>,
    /// The equivalence margins (`--margin`).
    pub margins: Vec<String>,
}

/// One allocator for a program: a library to preload (none for glibc) and its environment.
#[derive(Clone, Debug)]
pub struct Preload {
    /// The subject's name.
    pub name: String,
    /// What it is, for the report.
    pub describe: String,
    /// The library to preload (`None`: glibc's malloc).
    pub library: Option<PathBuf>,
    /// Its environment (`ALLOCLAB_CONF`).
    pub env: Vec<(String, String)>,
}

/// One program run: what to start and what it is fed.
pub struct Program {
    /// The workload's name is `program:NAME`.
    pub name: String,
    /// The executable.
    pub binary: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment.
    pub env: Vec<(&'static str, &'static str)>,
    /// Whether it writes its own `VmHWM:` line (from `/proc/self/status`) to stderr at exit,
    /// which is then its peak resident size. `wait4`'s maximum cannot be: the kernel starts a
    /// new program's maximum at the resident size of the process that exec'd it, here the
    /// measuring binary (several MiB), which hides the size of a small program.
    pub reports_hwm: bool,
    /// Processes per measurement, one after the other: the measurement's times are their
    /// means. More than one only for a program too short to time alone (the start-up
    /// program), whose output is then not compared (it prints nothing).
    pub runs: usize,
}

fn programs(quick: bool) -> Vec<Program> {
    let n = if quick { 20_000 } else { 200_000 };
    vec![
        Program {
            name: "python3".into(),
            binary: "/usr/bin/python3".into(),
            args: vec![
                "-s".into(),
                "-B".into(),
                "-c".into(),
                format!(
                    "d={{}}\nfor i in range({n}):\n    d[str(i)]=[i]*(i%7)\n    \
                     if i%3==0: d.pop(str(i//2),None)\nprint(len(d), sum(len(v) for v in d.values()))"
                ),
            ],
            // Python's own small-object allocator would hide the malloc under test.
            env: vec![("PYTHONMALLOC", "malloc")],
            reports_hwm: false,
            runs: 1,
        },
        Program {
            name: "lua5.4".into(),
            binary: "/usr/bin/lua5.4".into(),
            args: vec![
                "-e".into(),
                format!(
                    "local t={{}} for i=1,{n} do t[i]=string.rep('x',i%97)..i \
                     if i%3==0 then t[i//2]=nil end end local c=0 for _ in pairs(t) do c=c+1 end print(c)"
                ),
            ],
            env: vec![],
            reports_hwm: false,
            runs: 1,
        },
        Program {
            name: "sqlite3".into(),
            binary: "/usr/bin/sqlite3".into(),
            args: vec![
                ":memory:".into(),
                format!(
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<{n}) \
                     SELECT count(*), sum(length(printf('%0*d', x%200, x))) FROM c;"
                ),
            ],
            env: vec![],
            reports_hwm: false,
            runs: 1,
        },
        Program {
            name: "perl".into(),
            binary: "/usr/bin/perl".into(),
            args: vec![
                "-e".into(),
                format!(
                    "my %h; for my $i (1..{n}) {{ $h{{$i}} = 'y' x ($i % 89); \
                     delete $h{{int($i/2)}} if $i % 3 == 0 }} print scalar(keys %h), \"\\n\";"
                ),
            ],
            env: vec![],
            reports_hwm: false,
            runs: 1,
        },
    ]
}

/// The start-up program: allocates once and exits, so that its time is what loading an
/// allocator and its first allocation cost a process (issue 11's start-up target). The
/// pointer goes through a volatile so that the compiler keeps the call.
const STARTUP_C: &str =
    "#include <stdlib.h>\nint main(void) { void *volatile p = malloc(64); (void)p; return 0; }\n";

/// Processes per start-up measurement: one run (about a millisecond) is too short for the
/// parent's clock and the scheduler's noise; the mean of 100 in a row is what is recorded.
pub const STARTUP_RUNS: usize = 100;

/// Writes `source` to `dir/NAME.c` and compiles it with the system's C compiler and `flags`
/// into `dir/NAME`, the path returned; the compiler's complaint if it fails.
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(format!("{name}.c"));
    let binary = dir.join(name);
    std::fs::write(&file, source).map_err(|e| format!("{}: {e}", file.display()))?;
    let out = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the C compiler `cc`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc could not compile {}: {}",
            file.display(),
            tail(&String::from_utf8_lossy(&out.stderr), 400)
        ));
    }
    Ok(binary)
}

/// The start-up program, to be built into `dir` by `build_startup` (only if it is to run:
/// it needs a C compiler).
pub fn startup_program(dir: &Path) -> Program {
    Program {
        name: "startup".into(),
        binary: dir.join("startup"),
        args: vec![],
        env: vec![],
        reports_hwm: false,
        runs: STARTUP_RUNS,
    }
}

/// Compiles the start-up program into `dir` (`-fno-builtin`: the call to `malloc` stays a
/// call).
pub fn build_startup(dir: &Path) -> Result<(), String> {
    compile_c(dir, "startup", STARTUP_C, &["-O2", "-fno-builtin"]).map(drop)
}

/// Keeps the programs `keep` names; a name that is not among `programs` (every program this
/// machine could run) is an error that lists them.
fn select_programs(
    programs: Vec<Program>,
    keep: Option<&[String]>,
) -> Result<Vec<Program>, String> {
    let Some(keep) = keep else {
        return Ok(programs);
    };
    let names: Vec<&str> = keep
        .iter()
        .map(|k| k.strip_prefix("program:").unwrap_or(k))
        .collect();
    for n in &names {
        if !programs.iter().any(|p| p.name == *n) {
            let available: Vec<&str> = programs.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "`{n}` is not a program here (available: {})",
                available.join(", ")
            ));
        }
    }
    Ok(programs
        .into_iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .collect())
}

/// How to get liballoclab.so, for the errors of whatever needs it.
pub const LIBALLOCLAB_HINT: &str =
    "build it with `cargo build --release -p liballoclab`, or name it with ALLOCLAB_SO";

/// liballoclab.so: next to the running binary (target/release/ when built with
/// `cargo build --release -p liballoclab`), or named by `ALLOCLAB_SO`.
pub fn liballoclab() -> Option<PathBuf> {
    built_library("ALLOCLAB_SO", "liballoclab.so")
}

/// How to get the two builds of one config the debug-options study runs.
pub const BUILDS_HINT: &str = "build them with `cargo build --release -p liballoclab-production \
     -p liballoclab-debug`, or name them with ALLOCLAB_PRODUCTION_SO and ALLOCLAB_DEBUG_SO";

/// liballoclab_production.so (the `lifo` config, debug checks compiled out): named by
/// `ALLOCLAB_PRODUCTION_SO`, or next to the running binary.
pub fn production_library() -> Option<PathBuf> {
    built_library("ALLOCLAB_PRODUCTION_SO", "liballoclab_production.so")
}

/// liballoclab_debug.so (the `lifo` config, every check compiled in, the debug profile built
/// in): named by `ALLOCLAB_DEBUG_SO`, or next to the running binary.
pub fn debug_library() -> Option<PathBuf> {
    built_library("ALLOCLAB_DEBUG_SO", "liballoclab_debug.so")
}

/// A library the workspace builds: the path in the environment variable `var`, or `file`
/// next to the running binary, in its parent (a test binary's `deps/`) or in the release
/// directory beside it.
fn built_library(var: &str, file: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join(file),
        dir.join("..").join(file),
        dir.join("../release").join(file),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// How to get liballoclab_probe.so, for the errors of whatever needs it.
pub const PROBE_HINT: &str =
    "build it with `cargo build --release -p alloclab-probe-so`, or name it with ALLOCLAB_PROBE_SO";

/// liballoclab_probe.so: named by `ALLOCLAB_PROBE_SO`, or next to the running binary (the
/// same profile's build, or the release one).
pub fn probe_library() -> Option<PathBuf> {
    built_library("ALLOCLAB_PROBE_SO", "liballoclab_probe.so")
}

/// `program` under `preload` with liballoclab_probe.so in front of it: the run's figures
/// plus the probe's, read from the files its processes wrote.
fn run_probed(
    program: &Program,
    preload: &Preload,
    env_pad: usize,
    probe: &Path,
) -> Result<Ran, String> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "alloclab-probe-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // LD_PRELOAD takes a space-separated list: the probe first, so that its entry points are
    // the ones the program binds to and the subject's are "next".
    let library = match &preload.library {
        Some(lib) => format!("{} {}", probe.display(), lib.display()),
        None => probe.display().to_string(),
    };
    let mut with_probe = preload.clone();
    with_probe.library = Some(PathBuf::from(library));
    with_probe
        .env
        .push(("ALLOCLAB_PROBE_DIR".into(), dir.display().to_string()));
    let ran = run_one(program, &with_probe, env_pad).and_then(|mut r| {
        let s = read_probe_dir(&dir)?;
        r.metrics.probe = super::schema::ProbeMetrics::of(&s, "preload");
        if r.metrics.probe.is_none() {
            return Err(format!(
                "liballoclab_probe.so recorded no call in {}",
                dir.display()
            ));
        }
        Ok(r)
    });
    let _ = std::fs::remove_dir_all(&dir);
    ran
}

/// Every `probe-*.txt` in `dir`, read and summed.
pub fn read_probe_dir(dir: &Path) -> Result<alloclab_probe::Summary, String> {
    let mut dumps = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let path = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        dumps.push(
            alloclab_probe::dump::Dump::parse(&text)
                .map_err(|e| format!("{}: {e}", path.display()))?,
        );
    }
    dumps.sort_by_key(|d| d.pid);
    Ok(alloclab_probe::Summary::from_dumps(&dumps))
}

/// glibc (no preload), then each of Debian's allocators that is installed.
pub fn peer_preloads() -> Vec<Preload> {
    let mut out = vec![Preload {
        name: "system".into(),
        describe: "glibc malloc (no preload)".into(),
        library: None,
        env: vec![],
    }];
    for (name, file) in [
        ("jemalloc", "libjemalloc.so.2"),
        ("mimalloc", "libmimalloc.so.2"),
        ("tcmalloc", "libtcmalloc_minimal.so.4"),
    ] {
        let path = Path::new(LIB_DIR).join(file);
        if path.exists() {
            out.push(Preload {
                name: name.into(),
                describe: format!("Debian's {file} (LD_PRELOAD)"),
                library: Some(path),
                env: vec![],
            });
        }
    }
    out
}

fn preloads(entries: &[SubjectEntry]) -> Vec<Preload> {
    let mut out = peer_preloads();
    if let Some(so) = liballoclab() {
        // Only built-in configs: liballoclab.so knows no registered config.
        for name in alloclab_policies::configs::NAMES {
            if entries
                .iter()
                .any(|e| e.name == name && e.kind == SubjectKind::Alloclab)
            {
                out.push(Preload {
                    name: name.to_string(),
                    describe: format!("liballoclab.so, ALLOCLAB_CONF=config:{name}"),
                    library: Some(so.clone()),
                    env: vec![("ALLOCLAB_CONF".into(), format!("config:{name}"))],
                });
            }
        }
    }
    out
}

struct Ran {
    stdout: String,
    metrics: Metrics,
}

/// `program` under `preload`, its environment padded by `env_pad` bytes, standard input
/// empty; the caller says where the output goes.
fn command(program: &Program, preload: &Preload, env_pad: usize) -> Command {
    let mut cmd = Command::new(&program.binary);
    cmd.args(&program.args)
        .envs(program.env.iter().copied())
        .envs(preload.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(super::child::PAD_VARIABLE, "x".repeat(env_pad))
        .stdin(Stdio::null());
    if let Some(lib) = &preload.library {
        cmd.env("LD_PRELOAD", lib);
    }
    cmd
}

fn run_one(program: &Program, preload: &Preload, env_pad: usize) -> Result<Ran, String> {
    if program.runs > 1 {
        return run_batch(program, preload, env_pad, BATCH_TIMEOUT);
    }
    let mut cmd = command(program, preload, env_pad);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.binary.display()))?;
    let (waited, stdout, stderr) = wait_reading(child, Duration::from_secs(300));
    let wall = start.elapsed().as_secs_f64();
    let (status, usage) = waited?;
    if !exited_zero(status) {
        return Err(format!(
            "{}; stderr: {}",
            describe_status(status),
            tail(&stderr, 400)
        ));
    }
    let rss = max_rss_bytes(&usage);
    let peak_rss =
        if program.reports_hwm {
            Some(reported_hwm(&stderr).ok_or_else(|| {
                format!("no `VmHWM: N kB` line on stderr: {}", tail(&stderr, 200))
            })?)
        } else {
            Some(rss)
        };
    Ok(Ran {
        stdout,
        metrics: Metrics {
            wall,
            user: timeval(usage.ru_utime),
            sys: timeval(usage.ru_stime),
            ops: 0,
            ops_per_sec: 0.0,
            peak_rss,
            final_rss: None,
            max_rss_process: Some(rss),
            heap: None,
            instructions: None,
            memory: None,
            probe: None,
            syscalls: None,
        },
    })
}

/// `program.runs` processes one after the other, with no pipes (nothing to read, and a
/// reader thread per process would be part of what is timed); the metrics are the means per
/// process. It has no resident sizes: the program is too small to report its own, and
/// `wait4`'s maximum for it is the spawning process's size (see `Program::reports_hwm`), the
/// same for every allocator. Any process that does not exit with 0 fails the measurement, and
/// so does a batch that runs past `timeout` (its process is killed).
fn run_batch(
    program: &Program,
    preload: &Preload,
    env_pad: usize,
    timeout: Duration,
) -> Result<Ran, String> {
    let mut cmd = command(program, preload, env_pad);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    // One watchdog for the whole batch, not one thread per process: a thread started and
    // joined around each process would be timed with it.
    let state = Mutex::new(Batch::Between);
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let totals = std::thread::scope(|scope| {
        let watched = &state;
        scope.spawn(move || {
            if stop.recv_timeout(timeout) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                let mut s = watched.lock().unwrap_or_else(|e| e.into_inner());
                if let Batch::Running(pid) = *s {
                    // SAFETY: kill has no memory-safety preconditions; `pid` is our child and
                    // not reaped yet (`wait_exited` reaps only once it is no longer Running,
                    // under this lock).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                *s = Batch::Expired;
            }
        });
        let totals = run_processes(&mut cmd, program, &state);
        let _ = done.send(());
        totals
    });
    if matches!(
        *state.lock().unwrap_or_else(|e| e.into_inner()),
        Batch::Expired
    ) {
        return Err(format!(
            "{} runs took longer than {:.1} s",
            program.runs,
            timeout.as_secs_f64()
        ));
    }
    let (wall, user, sys) = totals?;
    let n = program.runs as f64;
    Ok(Ran {
        stdout: String::new(),
        metrics: Metrics {
            wall: wall / n,
            user: user / n,
            sys: sys / n,
            ops: 0,
            ops_per_sec: 0.0,
            peak_rss: None,
            final_rss: None,
            max_rss_process: None,
            heap: None,
            instructions: None,
            memory: None,
            probe: None,
            syscalls: None,
        },
    })
}

/// How long a batch of `run_batch` may take in a measurement.
const BATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// Where a batch is, for its watchdog: which process to kill, if any.
enum Batch {
    /// No process alive.
    Between,
    /// This process is alive, or exited and not yet reaped (its pid is still ours).
    Running(libc::pid_t),
    /// The time is up: no more processes.
    Expired,
}

/// Runs `cmd` `program.runs` times, each process awaited before the next; the summed wall,
/// user and system seconds. Stops early (with no error: the caller sees `Expired`) when the
/// watchdog has expired the batch.
fn run_processes(
    cmd: &mut Command,
    program: &Program,
    state: &Mutex<Batch>,
) -> Result<(f64, f64, f64), String> {
    let (mut wall, mut user, mut sys) = (0.0, 0.0, 0.0);
    for i in 0..program.runs {
        let start = Instant::now();
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.binary.display()))?;
        let pid = child.id() as libc::pid_t;
        {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            if let Batch::Expired = *s {
                // Expired while this process was being started: it is killed here instead.
                // SAFETY: kill has no memory-safety preconditions; `pid` is our unreaped child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            } else {
                *s = Batch::Running(pid);
            }
        }
        let (status, usage) = wait_exited(pid, state)?;
        wall += start.elapsed().as_secs_f64();
        if matches!(
            *state.lock().unwrap_or_else(|e| e.into_inner()),
            Batch::Expired
        ) {
            break;
        }
        if !exited_zero(status) {
            return Err(format!(
                "run {} of {}: {}",
                i + 1,
                program.runs,
                describe_status(status)
            ));
        }
        user += timeval(usage.ru_utime);
        sys += timeval(usage.ru_stime);
    }
    Ok((wall, user, sys))
}

/// Waits for `pid` to exit, then, under `state`'s lock, marks the batch between processes
/// (unless it expired) and reaps it: the watchdog never sees a reaped, perhaps reused, pid.
fn wait_exited(
    pid: libc::pid_t,
    state: &Mutex<Batch>,
) -> Result<(libc::c_int, libc::rusage), String> {
    super::child::wait_unreaped(pid)?;
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    if let Batch::Running(_) = *s {
        *s = Batch::Between;
    }
    let reaped = super::child::reap(pid);
    drop(s);
    reaped
}

/// The bytes of the last `VmHWM:  N kB` line in `stderr`.
fn reported_hwm(stderr: &str) -> Option<u64> {
    let line = stderr.lines().rev().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line["VmHWM:".len()..]
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A subject of the user's: liballoclab.so under an `ALLOCLAB_CONF` of their own
/// (`compare --programs --preload-conf NAME=CONF`), so that settings no named config has
/// (`tcache_check:light`, `tcache_max:`, a profile) can be compared as jemalloc's users compare
/// `MALLOC_CONF` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfSubject {
    /// The subject's name in `--subjects`, `--baseline` and the reports.
    pub name: String,
    /// The `ALLOCLAB_CONF` string.
    pub conf: String,
}

/// `NAME=VALUE` as a subject's name (letters, digits, `-`, `_` and `.`) and a non-empty
/// value; `what` names the value and `example` shows one, for the errors.
fn named(s: &str, what: &str, example: &str) -> Result<(String, String), String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!("`{s}`: expected NAME={what}, as {example}"));
    };
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "`{s}`: the name `{name}` must be letters, digits, '-', '_' or '.'"
        ));
    }
    if value.is_empty() {
        return Err(format!("`{s}`: the {what} after '=' is empty"));
    }
    Ok((name.into(), value.into()))
}

impl std::str::FromStr for ConfSubject {
    type Err = String;

    /// `NAME=CONF`: a name of letters, digits, `-`, `_` and `.`, and a non-empty conf.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, conf) = named(
            s,
            "ALLOCLAB_CONF",
            "light=config:lifo-tcache,tcache_check:light",
        )?;
        Ok(ConfSubject { name, conf })
    }
}

/// A subject of the user's: any shared library preloaded in place of glibc's malloc
/// (`compare --programs --preload NAME=PATH`), such as an allocator built from a branch, or a
/// version Debian does not ship.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibrarySubject {
    /// The subject's name in `--subjects`, `--baseline` and the reports.
    pub name: String,
    /// The library.
    pub path: PathBuf,
}

impl std::str::FromStr for LibrarySubject {
    type Err = String;

    /// `NAME=PATH`: a name as `ConfSubject`'s, and a non-empty path.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, path) = named(s, "PATH", "mine=/opt/mymalloc/lib/libmymalloc.so")?;
        Ok(LibrarySubject {
            name,
            path: path.into(),
        })
    }
}

/// Adds a preload for each of `libs` to `preloads`. A name already taken, a path that is not
/// a file, or a library the dynamic loader will not preload (checked by starting `/bin/true`
/// under it: the loader then ignores it with a message, and the program still succeeds) is an
/// error, so that no subject is silently glibc.
pub fn add_library_subjects(
    preloads: &mut Vec<Preload>,
    libs: &[LibrarySubject],
) -> Result<(), String> {
    for l in libs {
        let flag = format!("--preload {}={}", l.name, l.path.display());
        name_free(preloads, &flag, &l.name)?;
        let path = std::fs::canonicalize(&l.path)
            .ok()
            .filter(|p| p.is_file())
            .ok_or_else(|| format!("{flag}: no such file"))?;
        if let Some(why) = refused(&path, &[], &flag)? {
            return Err(format!(
                "{flag}: the dynamic loader does not preload it: {why}"
            ));
        }
        preloads.push(Preload {
            name: l.name.clone(),
            describe: format!("{} (LD_PRELOAD)", path.display()),
            library: Some(path),
            env: vec![],
        });
    }
    Ok(())
}

/// An error if a subject of `preloads` is already called `name` (`flag` is the option that
/// asked for it, for the message).
fn name_free(preloads: &[Preload], flag: &str, name: &str) -> Result<(), String> {
    if preloads.iter().any(|p| p.name == name) {
        return Err(format!("{flag}: the name `{name}` is taken (pick another)"));
    }
    Ok(())
}

/// Starts `/bin/true` with `library` preloaded and `env` set: why it was refused (the
/// program failed, or the dynamic loader ignored the library, which it says on stderr while
/// the program still succeeds), or `None`. Not checked where there is no `/bin/true`.
fn refused(library: &Path, env: &[(&str, &str)], flag: &str) -> Result<Option<String>, String> {
    let probe = Path::new("/bin/true");
    if !probe.exists() {
        return Ok(None);
    }
    let out = Command::new(probe)
        .env("LD_PRELOAD", library)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start /bin/true to check {flag}: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    Ok(
        (!out.status.success() || err.contains("cannot be preloaded"))
            .then(|| err.trim().to_string()),
    )
}

/// Adds a preload for each of `confs` (liballoclab.so at `so`) to `preloads`. A name already
/// taken, or a conf liballoclab.so refuses (checked by starting `/bin/true` under it with
/// `abort_conf:true`), is an error; a bad entry can then not skew a measurement unnoticed.
pub fn add_conf_subjects(
    preloads: &mut Vec<Preload>,
    confs: &[ConfSubject],
    so: Option<&Path>,
) -> Result<(), String> {
    if confs.is_empty() {
        return Ok(());
    }
    let Some(so) = so else {
        return Err(format!(
            "--preload-conf needs liballoclab.so: {LIBALLOCLAB_HINT}"
        ));
    };
    for c in confs {
        let flag = format!("--preload-conf {}={}", c.name, c.conf);
        name_free(preloads, &flag, &c.name)?;
        // `abort_conf` anywhere in the string makes every bad entry fatal.
        let conf = format!("abort_conf:true,{}", c.conf);
        if let Some(why) = refused(so, &[("ALLOCLAB_CONF", &conf)], &flag)? {
            return Err(format!("{flag}: liballoclab.so refuses it: {why}"));
        }
        preloads.push(Preload {
            name: c.name.clone(),
            describe: format!("liballoclab.so, ALLOCLAB_CONF={}", c.conf),
            library: Some(so.to_path_buf()),
            env: vec![("ALLOCLAB_CONF".into(), conf)],
        });
    }
    Ok(())
}

/// Runs every program under every preload (the peers, liballoclab.so under the named configs
/// in `entries`, and under each of `confs`); results in the same schema as `compare`
/// (workloads are named `program:NAME`).
pub fn run_programs(
    entries: &[SubjectEntry],
    confs: &[ConfSubject],
    libs: &[LibrarySubject],
    opts: ProgramOptions,
) -> Result<Results, String> {
    let mut programs: Vec<Program> = programs(opts.quick)
        .into_iter()
        .filter(|p| p.binary.exists())
        .collect();
    let scratch = std::env::temp_dir().join(format!("alloclab-programs-{}", std::process::id()));
    programs.push(startup_program(&scratch));
    let ran = (|| {
        let programs = select_programs(programs, opts.workloads.as_deref())?;
        if programs.iter().any(|p| p.name == "startup") {
            build_startup(&scratch).map_err(|e| format!("the start-up program: {e}"))?;
        }
        let mut preloads = preloads(entries);
        add_conf_subjects(&mut preloads, confs, liballoclab().as_deref())?;
        add_library_subjects(&mut preloads, libs)?;
        run_with(&programs, preloads, opts)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    ran
}

/// Runs `programs` under `preloads` (those `opts.subjects` keeps); results as `run_programs`.
pub fn run_with(
    programs: &[Program],
    mut preloads: Vec<Preload>,
    opts: ProgramOptions,
) -> Result<Results, String> {
    if let Some(keep) = &opts.subjects {
        for k in keep {
            if !preloads.iter().any(|p| &p.name == k) {
                let names: Vec<&str> = preloads.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "`{k}` cannot be preloaded here (available: {}; liballoclab.so comes from \
                     `cargo build --release -p liballoclab` or ALLOCLAB_SO)",
                    names.join(", ")
                ));
            }
        }
        preloads.retain(|p| keep.contains(&p.name));
    }
    if !preloads.iter().any(|p| p.name == opts.baseline) {
        return Err(format!(
            "the baseline `{}` is not among the preloads",
            opts.baseline
        ));
    }
    if programs.is_empty() {
        return Err("no programs to run".into());
    }
    let wants_probe = opts
        .metrics
        .iter()
        .any(|m| super::analysis::is_probe_metric(m));
    let probe =
        if wants_probe {
            Some(probe_library().ok_or_else(|| {
                format!("the probe metrics need liballoclab_probe.so: {PROBE_HINT}")
            })?)
        } else {
            None
        };
    // Read before the first program runs: the load before the run is part of it.
    let mut environment = super::env::capture(std::env::args().collect(), vec![]);
    // The reference output of each program: its glibc run.
    let mut expected = Vec::new();
    for p in programs {
        let r = run_one(p, &preloads[0], 0).map_err(|e| format!("{} under glibc: {e}", p.name))?;
        expected.push(r.stdout);
    }
    let cells: Vec<(usize, usize)> = (0..programs.len())
        .flat_map(|p| (0..preloads.len()).map(move |s| (p, s)))
        .collect();
    let warmup = 1;
    let slots = schedule(cells.len(), warmup + opts.reps, opts.seed, None::<Shard>);
    let mut progress = Progress::new(slots.len(), Style::for_stderr(opts.progress));
    let mut measurements = Vec::new();
    let mut failures = Vec::new();
    for slot in &slots {
        let (pi, si) = cells[slot.cell];
        let (program, preload) = (&programs[pi], &preloads[si]);
        let workload = format!("program:{}", program.name);
        progress.start(format!(
            "round {}: {} under {}",
            slot.round, program.name, preload.name
        ));
        let window = super::disturbance::Window::start();
        let outcome = match &probe {
            Some(so) => run_probed(program, preload, slot.env_pad, so),
            None => run_one(program, preload, slot.env_pad),
        };
        // The processes' own time: a batch's figures are means per process.
        let disturbance = outcome.as_ref().ok().and_then(|r| {
            let runs = program.runs.max(1) as f64;
            window.finish((r.metrics.user + r.metrics.sys) * runs)
        });
        let outcome = outcome.and_then(|r| {
            if r.stdout == expected[pi] {
                Ok(r)
            } else {
                Err(format!(
                    "output differs from the glibc run: {:?} instead of {:?}",
                    tail(&r.stdout, 200),
                    tail(&expected[pi], 200)
                ))
            }
        });
        progress.finished(outcome.is_ok());
        match outcome {
            Ok(r) => measurements.push(Measurement {
                subject: preload.name.clone(),
                describe: preload.describe.clone(),
                workload,
                threads: 1,
                round: slot.round,
                warmup: slot.round < warmup,
                order: slot.order,
                env_pad: slot.env_pad,
                metrics: r.metrics,
                disturbance,
            }),
            Err(reason) => failures.push(Failure {
                subject: preload.name.clone(),
                workload,
                threads: 1,
                round: slot.round,
                reason,
            }),
        }
    }
    progress.finish();
    super::env::add_preload_hashes(
        &mut environment,
        preloads.iter().filter_map(|p| p.library.as_deref()),
    );
    // One program at a time.
    super::env::finish(&mut environment);
    Ok(Results {
        schema_version: SCHEMA_VERSION,
        environment,
        plan: Plan {
            subjects: preloads.iter().map(|p| p.name.clone()).collect(),
            workloads: programs
                .iter()
                .map(|p| format!("program:{}", p.name))
                .collect(),
            threads: vec![1],
            reps: opts.reps,
            warmup,
            baseline: opts.baseline,
            seed: opts.seed,
            scale: 1.0,
            quick: opts.quick,
            instructions: false,
            syscalls: false,
            shards: vec![],
            heap_confs: Vec::new(),
            metrics: opts.metrics.clone(),
            margins: opts.margins.clone(),
        },
        measurements,
        failures,
    })
}

#[cfg(test)]
mod tests {
    use super::{
        add_conf_subjects, add_library_subjects, build_startup, peer_preloads, reported_hwm,
        run_batch, run_one, select_programs, startup_program, ConfSubject, LibrarySubject, Program,
        STARTUP_RUNS,
    };
    use std::path::Path;
    use std::time::{Duration, Instant};

    fn names(programs: &[Program]) -> Vec<&str> {
        programs.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn the_startup_program_builds_runs_and_averages_its_runs() {
        let dir =
            std::env::temp_dir().join(format!("alloclab-startup-test-{}", std::process::id()));
        build_startup(&dir).unwrap();
        let mut p = startup_program(&dir);
        assert_eq!((p.name.as_str(), p.runs), ("startup", STARTUP_RUNS));
        p.runs = 3;
        let glibc = &peer_preloads()[0];
        let r = run_one(&p, glibc, 0).unwrap();
        // A mean per process: a start-up takes well under a second, and more than nothing.
        assert!(
            r.metrics.wall > 0.0 && r.metrics.wall < 1.0,
            "{:?}",
            r.metrics
        );
        assert!(r.metrics.peak_rss.is_none() && r.metrics.max_rss_process.is_none());
        let _ = std::fs::remove_dir_all(&dir);

        // One failing process fails the measurement, and says which.
        let failing = Program {
            name: "false".into(),
            binary: "/bin/false".into(),
            args: vec![],
            env: vec![],
            reports_hwm: false,
            runs: 2,
        };
        let e = run_one(&failing, glibc, 0).err().unwrap();
        assert!(e.contains("run 1 of 2"), "{e}");

        // A batch past its time limit is killed and fails, without waiting for the rest.
        let sleeping = Program {
            name: "sleep".into(),
            binary: "/bin/sleep".into(),
            args: vec!["30".into()],
            runs: 3,
            ..failing
        };
        let began = Instant::now();
        let e = run_batch(&sleeping, glibc, 0, Duration::from_millis(300))
            .err()
            .unwrap();
        assert!(e.contains("3 runs took longer than 0.3 s"), "{e}");
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "the sleeping process was killed"
        );
    }

    #[test]
    fn library_subjects_must_load_and_take_a_free_name() {
        let lib: LibrarySubject = "mine=/opt/x/libmine.so".parse().unwrap();
        assert_eq!(
            (lib.name.as_str(), lib.path.to_str()),
            ("mine", Some("/opt/x/libmine.so"))
        );
        let e = "mine".parse::<LibrarySubject>().unwrap_err();
        assert!(e.contains("expected NAME=PATH"), "{e}");
        let e = "mine=".parse::<LibrarySubject>().unwrap_err();
        assert!(e.contains("the PATH after '=' is empty"), "{e}");

        let dir = std::env::temp_dir().join(format!("alloclab-libsubject-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, so, text) = (
            dir.join("empty.c"),
            dir.join("libempty.so"),
            dir.join("not-elf.so"),
        );
        std::fs::write(&src, "int alloclab_test_empty(void) { return 0; }\n").unwrap();
        std::fs::write(&text, "not a library\n").unwrap();
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src)
            .status()
            .unwrap();
        assert!(built.success());
        let subject = |name: &str, path: &Path| LibrarySubject {
            name: name.into(),
            path: path.into(),
        };

        let mut p = peer_preloads();
        let n = p.len();
        for (bad, why) in [
            (subject("system", &so), "is taken"),
            (subject("gone", &dir.join("missing.so")), "no such file"),
            (subject("text", &text), "does not preload it"),
        ] {
            let e = add_library_subjects(&mut p, &[bad]).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        assert_eq!(p.len(), n, "nothing added by a refused subject");
        add_library_subjects(&mut p, &[subject("empty", &so)]).unwrap();
        let added = p.last().unwrap();
        assert_eq!(added.name, "empty");
        assert_eq!(
            added.library.as_deref(),
            Some(so.canonicalize().unwrap().as_path())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn programs_are_picked_by_name_with_or_without_the_prefix() {
        let program = |name: &str| Program {
            name: name.into(),
            binary: "/bin/true".into(),
            args: vec![],
            env: vec![],
            reports_hwm: false,
            runs: 1,
        };
        let all = || {
            vec![
                program("python3"),
                program("startup"),
                program("perl"),
                program("lua5.4"),
            ]
        };
        assert_eq!(
            names(&select_programs(all(), None).unwrap()),
            ["python3", "startup", "perl", "lua5.4"]
        );
        let keep = ["program:startup".to_string(), "perl".into()];
        assert_eq!(
            names(&select_programs(all(), Some(&keep)).unwrap()),
            ["startup", "perl"]
        );
        let e = select_programs(all(), Some(&["ruby".to_string()]))
            .err()
            .unwrap();
        assert!(
            e.contains("`ruby` is not a program here") && e.contains("lua5.4"),
            "{e}"
        );
    }

    #[test]
    fn conf_subjects_parse_and_bad_ones_say_why() {
        let c: ConfSubject = "light=config:lifo-tcache,tcache_check:light"
            .parse()
            .unwrap();
        assert_eq!(c.name, "light");
        assert_eq!(c.conf, "config:lifo-tcache,tcache_check:light");
        for (bad, why) in [
            ("light", "expected NAME=ALLOCLAB_CONF"),
            ("=config:lifo", "must be letters"),
            ("a b=config:lifo", "must be letters"),
            ("light=", "is empty"),
        ] {
            let e = bad.parse::<ConfSubject>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn conf_subjects_need_the_library_and_a_free_name() {
        let c: ConfSubject = "system=config:lifo".parse().unwrap();
        let mut p = peer_preloads();
        let n = p.len();
        let e = add_conf_subjects(&mut p, std::slice::from_ref(&c), None).unwrap_err();
        assert!(e.contains("needs liballoclab.so"), "{e}");
        // "system" is glibc's: taken (refused before the library is started).
        let e = add_conf_subjects(&mut p, &[c], Some(Path::new("/nonexistent.so"))).unwrap_err();
        assert!(e.contains("is taken"), "{e}");
        assert_eq!(p.len(), n);
        add_conf_subjects(&mut p, &[], None).unwrap();
    }

    #[test]
    fn reads_the_last_vmhwm_line() {
        assert_eq!(
            reported_hwm("x\nVmHWM:\t  1200 kB\nVmHWM:\t  1316 kB\n"),
            Some(1316 * 1024)
        );
        assert_eq!(reported_hwm("VmRSS:\t 12 kB\n"), None);
        assert_eq!(reported_hwm("VmHWM: twelve kB\n"), None);
    }
}
