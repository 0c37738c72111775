//! One measurement in a fresh process: both sides of the protocol.
//!
//! The parent re-executes its own binary (`std::env::current_exe()`, so that the configs a
//! program registered exist in the child too) with the hidden subcommand
//! [`CHILD_COMMAND`] and the [`ChildArgs`]; the child makes the subject, runs the workload
//! inside the heap-statistics sampler, and prints one JSON line ([`ChildReport`]) on standard
//! output. The parent reaps it with `wait4`, which gives the child's lifetime maximum resident
//! size, and pads the child's environment by a given number of bytes: the environment sits at
//! the top of the stack, so its size moves the stack and everything laid out below it
//! (Mytkowicz et al., "Producing wrong data without doing anything obviously wrong!").

use super::schema::{FreeMetrics, InstructionMetrics, Metrics, SyscallCounts};
use super::subjects::SubjectEntry;
use super::workloads::{Params, Workload};
use alloclab_traces::replay::rss;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The hidden subcommand a measuring child runs.
pub const CHILD_COMMAND: &str = "measure-child";

/// The environment variable that carries the layout padding.
pub const PAD_VARIABLE: &str = "ALLOCLAB_ENV_PAD";

/// How often the sampler reads the subject's statistics.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(2);

/// What a child is asked to measure.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct ChildArgs {
    /// Subject name.
    #[arg(long)]
    pub subject: String,
    /// Workload name.
    #[arg(long)]
    pub workload: String,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Amount of work relative to the full workload.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seed of the workload's own random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Runs of the workload in this one process (the pilot's iterations; the first is the
    /// measurement).
    #[arg(long, default_value_t = 1)]
    pub iterations: usize,
    /// The `--heap-conf` subjects' definitions (repeatable): the subject may be one of them.
    #[arg(long)]
    pub heap_conf: Vec<String>,
    /// Time every call of the subject per thread (the probe's metrics).
    #[arg(long)]
    pub probe: bool,
}

/// What a child prints: one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    /// The subject in detail.
    pub describe: String,
    /// The first iteration's figures.
    pub metrics: Metrics,
    /// Wall time of every iteration, in order (one entry unless `iterations` > 1).
    pub iteration_walls: Vec<f64>,
    /// What other processes took of the machine meanwhile: filled in by the parent
    /// ([`Spawn::run`]), never by the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<super::schema::Disturbance>,
}

fn rusage_self() -> (f64, f64) {
    // SAFETY: rusage is plain old data; all-zero is valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    (timeval(u.ru_utime), timeval(u.ru_stime))
}

pub fn timeval(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

/// The `Subject` methods callgrind collects in with `--instructions` (they are kept out of
/// line for that): the replayer's and workloads' own work is left out.
const SUBJECT_CALLS: [&str; 5] = ["malloc", "calloc", "memalign", "realloc", "free"];

/// The child side: runs the measurement `args` asks for.
pub fn run_child(
    entries: &[SubjectEntry],
    workloads: &[Box<dyn Workload>],
    args: &ChildArgs,
) -> Result<ChildReport, String> {
    let entry = entries
        .iter()
        .find(|e| e.name == args.subject)
        .ok_or_else(|| format!("unknown subject `{}`", args.subject))?;
    let workload = workloads
        .iter()
        .find(|w| w.name() == args.workload)
        .ok_or_else(|| format!("unknown workload `{}`", args.workload))?;
    let params = Params {
        threads: args.threads.max(1),
        scale: args.scale,
        seed: args.seed,
    };
    let subject = if args.probe {
        alloclab_probe::clock::init();
        Box::new(super::timed::Timed((entry.make)()))
    } else {
        (entry.make)()
    };
    workload
        .prepare()
        .map_err(|e| format!("{}: {e}", args.workload))?;
    let mut first: Option<Metrics> = None;
    let mut walls = Vec::with_capacity(args.iterations.max(1));
    for _ in 0..args.iterations.max(1) {
        let reset = rss::reset_peak();
        let (user0, sys0) = rusage_self();
        let ((outcome, heap), memory) = super::memory::recorded(super::memory::PERIOD, || {
            super::sampler::sampled(&*subject, SAMPLE_INTERVAL, || {
                workload.run(&*subject, &params)
            })
        });
        let (user1, sys1) = rusage_self();
        let final_rss = rss::current().map(|b| b as u64);
        let peak_rss = if reset {
            rss::peak().map(|b| b as u64)
        } else {
            None
        };
        let outcome = outcome.map_err(|e| format!("{} on {}: {e}", args.workload, args.subject))?;
        let wall = outcome.elapsed.as_secs_f64();
        walls.push(wall);
        if first.is_none() {
            first = Some(Metrics {
                wall,
                user: user1 - user0,
                sys: sys1 - sys0,
                ops: outcome.ops,
                ops_per_sec: if wall > 0.0 {
                    outcome.ops as f64 / wall
                } else {
                    0.0
                },
                peak_rss,
                final_rss,
                max_rss_process: None,
                heap,
                instructions: None,
                memory,
                probe: args
                    .probe
                    .then(|| {
                        let s = alloclab_probe::Summary::of_this_process();
                        super::schema::ProbeMetrics::of(&s, "in-process")
                    })
                    .flatten(),
                // Counted from outside, by the parent ([`Spawn::run`]).
                syscalls: None,
            });
        }
        // A pilot's later iterations are timed afresh, never on top of the first.
        alloclab_probe::record::clear_all();
    }
    subject.check().map_err(|e| {
        format!(
            "{}: invariant broken after {}: {e}",
            args.subject, args.workload
        )
    })?;
    Ok(ChildReport {
        describe: subject.describe(),
        metrics: first.expect("at least one iteration"),
        iteration_walls: walls,
        disturbance: None,
    })
}

/// How the parent runs one child.
#[derive(Clone, Debug)]
pub struct Spawn {
    /// The binary to run (normally `current_exe()`).
    pub exe: PathBuf,
    /// The measurement.
    pub args: ChildArgs,
    /// Bytes of environment padding.
    pub env_pad: usize,
    /// Run under callgrind, writing its counts into this directory.
    pub callgrind_dir: Option<PathBuf>,
    /// Run under `strace -f -c`, writing its summary into this directory (the memory system
    /// calls of the whole process: [`STRACED`]).
    pub strace_dir: Option<PathBuf>,
    /// Kill the child after this long.
    pub timeout: Duration,
}

/// What the parent got back.
#[derive(Debug)]
pub enum ChildResult {
    /// The child's report, with `max_rss_process` (and instructions) filled in.
    Done(Box<ChildReport>),
    /// Why there is no report.
    Failed(String),
}

/// The system calls `--syscalls` counts: those an allocator gets and gives back memory with.
pub const STRACED: [&str; 6] = ["mmap", "munmap", "madvise", "mremap", "mprotect", "brk"];

/// A name for the next strace summary file of this process.
fn strace_file(dir: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!("strace.{}.{n}", std::process::id()))
}

impl Spawn {
    /// The command of the child; with `strace_dir`, and the file strace writes its summary to.
    fn command(&self) -> (Command, Option<PathBuf>) {
        let mut argv: Vec<String> = vec![
            CHILD_COMMAND.to_string(),
            "--subject".into(),
            self.args.subject.clone(),
            "--workload".into(),
            self.args.workload.clone(),
            "--threads".into(),
            self.args.threads.to_string(),
            "--scale".into(),
            self.args.scale.to_string(),
            "--seed".into(),
            self.args.seed.to_string(),
            "--iterations".into(),
            self.args.iterations.to_string(),
        ];
        for conf in &self.args.heap_conf {
            argv.extend(["--heap-conf".to_string(), conf.clone()]);
        }
        if self.args.probe {
            argv.push("--probe".into());
        }
        let mut summary = None;
        let mut cmd = match (&self.callgrind_dir, &self.strace_dir) {
            (None, Some(dir)) => {
                let file = strace_file(dir);
                let mut c = Command::new("strace");
                // `--seccomp-bpf` stops the child at the counted calls only (not at every
                // futex, read or nanosleep): strace costs a few microseconds per counted call
                // and nothing elsewhere. `-f` follows every thread.
                c.arg("-f")
                    .arg("-c")
                    .arg("--seccomp-bpf")
                    .arg("-o")
                    .arg(&file)
                    .arg("-e")
                    .arg(format!("trace={}", STRACED.join(",")))
                    .arg("--")
                    .arg(&self.exe);
                summary = Some(file);
                c
            }
            (Some(dir), _) => {
                let mut c = Command::new("valgrind");
                c.arg("--tool=callgrind")
                    .arg("--cache-sim=yes")
                    .arg("--collect-atstart=no");
                // Collect inside the allocator's entry points only, on every thread: the
                // counts are the allocator's own, per call.
                for f in SUBJECT_CALLS {
                    c.arg(format!("--toggle-collect={}", entry_pattern(f)));
                }
                c.arg(format!(
                    "--callgrind-out-file={}",
                    dir.join("callgrind.out.%p").display()
                ))
                .arg("--quiet")
                .arg(&self.exe);
                c
            }
            (None, None) => Command::new(&self.exe),
        };
        cmd.args(argv.drain(..));
        cmd.env(PAD_VARIABLE, "x".repeat(self.env_pad));
        // A measurement outlives no harness: killed with it (SIGKILL when the thread that
        // started it ends, which waits for it otherwise), it would go on loading the machine
        // beside the measurements of a resumed run.
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the hook runs in the forked child before exec, and calls only prctl, getppid
        // and _exit, which are async-signal-safe; it touches no memory of the parent's.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died before the request: nobody waits for this measurement.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        (cmd, summary)
    }

    /// Runs the child to the end and collects its report, with its disturbance: what other
    /// processes took of the machine from just before its start to just after its exit.
    pub fn run(&self) -> ChildResult {
        let window = super::disturbance::Window::start();
        let (mut command, summary) = self.command();
        let child = match command.spawn() {
            Ok(c) => c,
            Err(e) if summary.is_some() && e.kind() == std::io::ErrorKind::NotFound => {
                return ChildResult::Failed(
                    "--syscalls runs every measurement under strace, which is not installed \
                     (apt-get install strace)"
                        .into(),
                )
            }
            Err(e) => return ChildResult::Failed(format!("cannot start the child: {e}")),
        };
        let pid = child.id();
        let (waited, out, err) = wait_reading(child, self.timeout);
        let (status, max_rss, disturbance) = match waited {
            Ok((status, usage)) => (
                status,
                max_rss_bytes(&usage),
                window.finish(timeval(usage.ru_utime) + timeval(usage.ru_stime)),
            ),
            Err(e) => return ChildResult::Failed(e),
        };
        if !exited_zero(status) {
            return ChildResult::Failed(format!(
                "{}; stderr: {}",
                describe_status(status),
                tail(&err, 600)
            ));
        }
        let Some(line) = out.lines().rev().find(|l| l.starts_with('{')) else {
            return ChildResult::Failed(format!(
                "the child printed no report; stderr: {}",
                tail(&err, 600)
            ));
        };
        let mut report: ChildReport = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => return ChildResult::Failed(format!("unreadable child report: {e}")),
        };
        report.metrics.max_rss_process = Some(max_rss);
        report.disturbance = disturbance;
        if let Some(dir) = &self.callgrind_dir {
            let file = dir.join(format!("callgrind.out.{pid}"));
            match read_callgrind(&file) {
                Ok(c) => report.metrics.instructions = Some(c.metrics(report.metrics.ops)),
                Err(e) => return ChildResult::Failed(e),
            }
            let _ = std::fs::remove_file(&file);
        }
        if let Some(file) = summary {
            let counted = std::fs::read_to_string(&file)
                .map_err(|e| format!("strace summary {}: {e}", file.display()))
                .and_then(|text| {
                    parse_strace_summary(&text)
                        .map_err(|e| format!("strace summary {}: {e}", file.display()))
                });
            let _ = std::fs::remove_file(&file);
            match counted {
                Ok(c) => report.metrics.syscalls = Some(c),
                Err(e) => return ChildResult::Failed(e),
            }
        }
        ChildResult::Done(Box::new(report))
    }
}

/// Reads the table `strace -c` writes (`% time  seconds  usecs/call  calls  errors
/// syscall`, a dashed rule, a row per system call, a rule, the `total` row): the calls of
/// each of [`STRACED`], and their total. A call strace saw none of has no row (0). Anything
/// else (no header, a row whose calls are not a number, no total row, a total that is not
/// the sum of the rows) is an error that says what; an empty file (strace writes none when it
/// saw no call) is all zeros.
pub fn parse_strace_summary(text: &str) -> Result<SyscallCounts, String> {
    // strace writes nothing at all when it saw none of the calls it traced.
    if text.trim().is_empty() {
        return Ok(SyscallCounts::default());
    }
    let mut lines = text.lines().map(str::trim).enumerate();
    // Lines before the header (strace's own notes, as `strace: Process 12 attached`) are
    // skipped.
    let header = lines
        .by_ref()
        .find(|(_, l)| l.contains("calls") && l.ends_with("syscall"))
        .ok_or("no `calls ... syscall` header: not the summary of `strace -c`")?;
    let columns: Vec<&str> = header.1.split_whitespace().collect();
    // `% time` is two words; the calls are the 4th column of numbers, the name the last.
    if columns.first() != Some(&"%") {
        return Err(format!(
            "line {}: unexpected header `{}`",
            header.0 + 1,
            header.1
        ));
    }
    let mut counts = SyscallCounts::default();
    let mut rows_total = 0u64;
    let mut total = None;
    for (i, line) in lines {
        if line.is_empty() || line.starts_with('-') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        // percent, seconds, usecs/call, calls, [errors,] name
        if fields.len() < 5 {
            return Err(format!("line {}: `{line}` is not a summary row", i + 1));
        }
        let name = fields[fields.len() - 1];
        let calls: u64 = fields[3].parse().map_err(|_| {
            format!(
                "line {}: `{}` is not a number of calls (row `{line}`)",
                i + 1,
                fields[3]
            )
        })?;
        if name == "total" {
            total = Some(calls);
            break;
        }
        rows_total += calls;
        let slot = match name {
            "mmap" => &mut counts.mmap,
            "munmap" => &mut counts.munmap,
            "madvise" => &mut counts.madvise,
            "mremap" => &mut counts.mremap,
            "mprotect" => &mut counts.mprotect,
            "brk" => &mut counts.brk,
            other => {
                return Err(format!(
                    "line {}: `{other}` is not one of the counted calls ({})",
                    i + 1,
                    STRACED.join(", ")
                ))
            }
        };
        *slot += calls;
    }
    let total = total.ok_or("no `total` row: the summary is cut short")?;
    if total != rows_total {
        return Err(format!(
            "the `total` row says {total} calls, its rows add up to {rows_total}"
        ));
    }
    counts.total = total;
    Ok(counts)
}

pub fn exited_zero(status: libc::c_int) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

pub fn describe_status(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("the child exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("the child was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("the child ended with wait status {status:#x}")
    }
}

pub fn tail(s: &str, n: usize) -> String {
    let s = s.trim();
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[start..].replace('\n', " | ")
}

/// A child's maximum resident size in bytes (Linux reports `ru_maxrss` in KiB).
pub fn max_rss_bytes(usage: &libc::rusage) -> u64 {
    usage.ru_maxrss.max(0) as u64 * 1024
}

/// What `wait_with_rusage` returns for `child` (spawned with standard output and error piped),
/// with everything it wrote to each: both pipes are drained while it runs, so that neither
/// fills and stalls it.
pub fn wait_reading(
    mut child: std::process::Child,
    timeout: Duration,
) -> (Result<(libc::c_int, libc::rusage), String>, String, String) {
    let pid = child.id() as libc::pid_t;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let waited = wait_with_rusage(pid, timeout);
    // The child is reaped by `wait_with_rusage`; `child` must not wait again.
    drop(child);
    (
        waited,
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
}

/// Waits for `pid`, killing it if it runs longer than `timeout`; returns the wait status and
/// the child's resource usage. The wait blocks (no polling), so the parent's clock around it
/// stays exact; a watchdog thread does the killing.
pub fn wait_with_rusage(
    pid: libc::pid_t,
    timeout: Duration,
) -> Result<(libc::c_int, libc::rusage), String> {
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if stop.recv_timeout(timeout) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            // SAFETY: kill has no memory-safety preconditions. The child is not reaped yet:
            // the waiting thread reaps it only after this thread has finished.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return true;
        }
        false
    });
    // First wait for the exit without reaping: until the watchdog has stopped, the child
    // stays unreaped, so its pid cannot be reused under the watchdog's kill.
    let exited = wait_unreaped(pid);
    let _ = done.send(());
    let killed = watchdog.join().unwrap_or(false);
    exited?;
    let reaped = reap(pid)?;
    if killed {
        return Err(format!("timed out after {} s", timeout.as_secs()));
    }
    Ok(reaped)
}

/// Blocks until the child `pid` has exited, leaving it unreaped (`WNOWAIT`): its pid stays
/// ours, so a watchdog may still kill it safely.
pub fn wait_unreaped(pid: libc::pid_t) -> Result<(), String> {
    loop {
        // SAFETY: siginfo_t is plain old data; all-zero is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid and writable; `pid` is our own child.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("waitid: {e}"));
        }
    }
}

/// Reaps the exited child `pid`: its wait status and resource usage.
pub fn reap(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage), String> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid and writable; `pid` is our own exited child.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    Ok((status, usage))
}

/// Callgrind's counts of one run (or of one function in it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Totals {
    ir: f64,
    dr: f64,
    dw: f64,
    d1: f64,
    ll: f64,
}

impl Totals {
    fn per_op(self, ops: u64) -> InstructionMetrics {
        let n = ops.max(1) as f64;
        InstructionMetrics {
            instructions: self.ir / n,
            data_reads: self.dr / n,
            data_writes: self.dw / n,
            d1_misses: self.d1 / n,
            ll_misses: self.ll / n,
            per_free: None,
        }
    }

    fn per_free(self, frees: u64) -> Option<FreeMetrics> {
        (frees > 0).then(|| {
            let n = frees as f64;
            FreeMetrics {
                frees,
                instructions: self.ir / n,
                data_reads: self.dr / n,
                data_writes: self.dw / n,
                d1_misses: self.d1 / n,
                ll_misses: self.ll / n,
            }
        })
    }

    /// The counts of one cost line's event values, named by the file's `events:` line.
    fn of(events: &[String], values: &[u64]) -> Totals {
        let get = |name: &str| {
            events
                .iter()
                .position(|e| e == name)
                .and_then(|i| values.get(i).copied())
                .unwrap_or(0) as f64
        };
        Totals {
            ir: get("Ir"),
            dr: get("Dr"),
            dw: get("Dw"),
            d1: get("D1mr") + get("D1mw"),
            ll: get("DLmr") + get("DLmw"),
        }
    }

    fn add(&mut self, o: Totals) {
        self.ir += o.ir;
        self.dr += o.dr;
        self.dw += o.dw;
        self.d1 += o.d1;
        self.ll += o.ll;
    }
}

/// What the instruction pass reads from one callgrind output file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Callgrind {
    /// Everything collected (the allocator's entry points).
    totals: Totals,
    /// Inside the `free` entry point only, inclusive of what it calls.
    free: Totals,
    /// Calls of the `free` entry point (from outside it).
    frees: u64,
}

impl Callgrind {
    fn metrics(&self, ops: u64) -> InstructionMetrics {
        InstructionMetrics {
            per_free: self.free.per_free(self.frees),
            ..self.totals.per_op(ops)
        }
    }
}

/// The trait whose methods are collected, as callgrind names it (`alloclab_traces::subject::
/// Subject`), from the type itself: a rename or move of the trait cannot silently leave the
/// patterns matching nothing.
fn subject_trait_path() -> &'static str {
    let name = std::any::type_name::<dyn alloclab_traces::subject::Subject>();
    name.strip_prefix("dyn ").unwrap_or(name)
}

/// `--toggle-collect` pattern of the `Subject` method `method`, every implementation.
fn entry_pattern(method: &str) -> String {
    format!("*as {}>::{method}", subject_trait_path())
}

/// Whether callgrind's function name `name` is an implementation of `Subject::free`.
fn is_free_entry(name: &str) -> bool {
    name.strip_suffix(">::free")
        .and_then(|n| n.strip_suffix(subject_trait_path()))
        .is_some_and(|n| n.ends_with(" as "))
}

/// Reads one callgrind output file (see [`parse_callgrind`]).
fn read_callgrind(path: &Path) -> Result<Callgrind, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("callgrind output {}: {e}", path.display()))?;
    parse_callgrind(&text, is_free_entry)
        .map_err(|e| format!("callgrind output {}: {e}", path.display()))
}

/// Resolves a name of callgrind's compressed form: `(id) name` defines `id`, `(id)` refers to
/// it, a bare name is itself.
fn compressed_name(
    names: &mut std::collections::HashMap<String, String>,
    spec: &str,
    line: usize,
) -> Result<String, String> {
    let spec = spec.trim();
    let Some(rest) = spec.strip_prefix('(') else {
        return Ok(spec.to_string());
    };
    let (id, name) = rest
        .split_once(')')
        .ok_or_else(|| format!("line {line}: unclosed name id in `{spec}`"))?;
    let name = name.trim();
    if name.is_empty() {
        names
            .get(id)
            .cloned()
            .ok_or_else(|| format!("line {line}: name id ({id}) used before it is defined"))
    } else {
        names.insert(id.to_string(), name.to_string());
        Ok(name.to_string())
    }
}

/// Reads a callgrind output file's text (format version 1, as callgrind writes it by default,
/// `--dump-instr=no`): the `events:` names, the `totals:` (or `summary:`) line, and the
/// inclusive cost of the functions `is_free` names: the cost lines of their `fn=` blocks
/// (their own instructions) plus the cost line after each `calls=` line inside them (what the
/// call cost, inclusive), and the calls made to them from other functions (callgrind counts
/// the calls into a collected function even while its caller is not collected). Malformed
/// input is an error naming the line.
fn parse_callgrind(text: &str, is_free: impl Fn(&str) -> bool) -> Result<Callgrind, String> {
    let mut events: Option<Vec<String>> = None;
    let mut positions = 1usize;
    let mut totals: Option<Totals> = None;
    let mut free = Totals::default();
    let mut frees = 0u64;
    let mut fn_names = std::collections::HashMap::new();
    // The current function is a free entry point; the next cost line is a call's of `calls`
    // made to a function that is (`bool`) or is not a free entry point.
    let mut in_free = false;
    let mut call: Option<(u64, bool)> = None;
    let mut callee_free = false;
    // A `jump=`/`jcnd=` line is followed by its source position, which carries no cost.
    let mut skip_position = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.as_bytes()[0];
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            if skip_position {
                skip_position = false;
                continue;
            }
            let names = events
                .as_ref()
                .ok_or_else(|| format!("line {n}: a cost line before the `events:` line"))?;
            let mut fields = line.split_whitespace();
            for _ in 0..positions {
                fields
                    .next()
                    .ok_or_else(|| format!("line {n}: a cost line without its position"))?;
            }
            let values = fields
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| format!("line {n}: `{v}` is not an event count"))
                })
                .collect::<Result<Vec<u64>, String>>()?;
            if values.len() > names.len() {
                return Err(format!(
                    "line {n}: {} counts for {} events",
                    values.len(),
                    names.len()
                ));
            }
            let cost = Totals::of(names, &values);
            match call.take() {
                Some((count, to_free)) => {
                    // A free entry point calling another (or itself) is counted once, in the
                    // callee's own block.
                    if in_free && !to_free {
                        free.add(cost);
                    }
                    if to_free && !in_free {
                        frees += count;
                    }
                }
                None if in_free => free.add(cost),
                None => {}
            }
            continue;
        }
        if call.is_some() {
            return Err(format!(
                "line {n}: a `calls=` line is not followed by its cost line"
            ));
        }
        if let Some(spec) = line.strip_prefix("fn=") {
            in_free = is_free(&compressed_name(&mut fn_names, spec, n)?);
        } else if let Some(spec) = line.strip_prefix("cfn=") {
            callee_free = is_free(&compressed_name(&mut fn_names, spec, n)?);
        } else if let Some(rest) = line.strip_prefix("calls=") {
            let count = rest
                .split_whitespace()
                .next()
                .and_then(|c| c.parse::<u64>().ok())
                .ok_or_else(|| format!("line {n}: `{line}` has no call count"))?;
            call = Some((count, callee_free));
        } else if line.starts_with("jump=") || line.starts_with("jcnd=") {
            skip_position = true;
        } else if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().map(String::from).collect());
        } else if let Some(rest) = line.strip_prefix("positions:") {
            positions = rest.split_whitespace().count().max(1);
        } else if let Some(rest) = line
            .strip_prefix("totals:")
            .or_else(|| line.strip_prefix("summary:"))
        {
            let names = events
                .as_ref()
                .ok_or_else(|| format!("line {n}: totals before the `events:` line"))?;
            let values = rest
                .split_whitespace()
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| format!("line {n}: `{v}` is not an event count"))
                })
                .collect::<Result<Vec<u64>, String>>()?;
            // The first such line counts (`summary:` and `totals:` agree).
            totals.get_or_insert(Totals::of(names, &values));
        }
        // Other lines (`ob=`, `fl=`, `fi=`, `fe=`, `cob=`, `cfi=`, headers) name places or
        // describe the run; they carry no cost.
    }
    if call.is_some() {
        return Err("the file ends after a `calls=` line, without its cost line".into());
    }
    let events = events.ok_or("no `events:` line")?;
    if !events.iter().any(|e| e == "Ir") {
        return Err("no `Ir` event (was callgrind run?)".into());
    }
    let totals = totals.ok_or("no `totals:` or `summary:` line")?;
    Ok(Callgrind {
        totals,
        free,
        frees,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callgrind_totals_are_read_by_event_name() {
        let text = "version: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n\
                    fn=x\n1 2 3\ntotals: 1000 300 200 5 10 20 1 2 3\n";
        let c = parse_callgrind(text, is_free_entry).unwrap();
        let t = c.totals;
        assert_eq!(t.ir, 1000.0);
        assert_eq!(t.d1, 30.0);
        assert_eq!(t.ll, 5.0);
        let per = c.metrics(10);
        assert_eq!(per.instructions, 100.0);
        assert_eq!(per.data_reads, 30.0);
        // No free entry point in the file: nothing per free.
        assert_eq!(c.frees, 0);
        assert!(per.per_free.is_none());
        assert!(parse_callgrind("nothing here", is_free_entry).is_err());
    }

    /// A file as callgrind writes it (`--dump-instr=no`, names compressed), cut down: the
    /// workload `main` (not collected) calls `free` 10 times and `malloc` 10 times; `free`
    /// has two blocks of its own cost (one after an inlined file change) and calls `slow`
    /// (4 times) and `unlock` (10 times); `slow` also appears as its own function.
    const HAND_WRITTEN: &str = "\
# callgrind format
version: 1
positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw

ob=(1) /bin/alloclab
fl=(1) src/heap.rs
fn=(1) <alloclab_core::heap::Heap<C> as alloclab_traces::subject::Subject>::free
10 100 20 10 0 1 0
+2 50 5 5
fi=(2) src/inline.rs
3 7 1 1 0 0 1
fe=(1)
cfn=(2) alloclab_core::heap::Heap<C>::slow
calls=4 40
* 400 80 120 0 4 6 0 1 2
cfl=(3) src/lock.rs
cfn=(3) unlock
calls=10 5
+1 30 10 10

fn=(2)
40 400 80 120 0 4 6 0 1 2

fn=(4) <alloclab_core::heap::Heap<C> as alloclab_traces::subject::Subject>::malloc
20 300 60 60 0 3

fn=(5) main
cfn=(1)
calls=10 10
5 587 116 146 0 5 7 0 1 2
cfn=(4)
calls=10 20
6 300 60 60 0 3

totals: 887 176 206 0 8 7 0 1 2
";

    #[test]
    fn free_is_its_own_cost_plus_its_calls_inclusive_per_free() {
        let c = parse_callgrind(HAND_WRITTEN, is_free_entry).unwrap();
        // By hand: free's own lines 100 + 50 + 7 instructions, its calls 400 + 30.
        assert_eq!(c.free.ir, 100.0 + 50.0 + 7.0 + 400.0 + 30.0);
        assert_eq!(c.free.dr, 20.0 + 5.0 + 1.0 + 80.0 + 10.0);
        assert_eq!(c.free.dw, 10.0 + 5.0 + 1.0 + 120.0 + 10.0);
        // D1mr + D1mw: free's own 1 (line 10), 1 (the inlined line); slow's 4 + 6.
        assert_eq!(c.free.d1, 1.0 + 1.0 + 4.0 + 6.0);
        assert_eq!(c.free.ll, 1.0 + 2.0);
        // The ten calls `main` made; free's own calls out are not frees.
        assert_eq!(c.frees, 10);
        // The inclusive cost callgrind gave main's call arc agrees.
        assert_eq!(c.free.ir, 587.0);
        let m = c.metrics(20);
        assert_eq!(m.instructions, 887.0 / 20.0);
        let f = m.per_free.unwrap();
        assert_eq!(f.frees, 10);
        assert_eq!(f.instructions, 58.7);
        assert_eq!(f.data_writes, 14.6);
        assert_eq!(f.d1_misses, 1.2);
    }

    #[test]
    fn malformed_callgrind_files_are_errors_naming_the_line() {
        let events = "events: Ir Dr\n";
        for (text, says) in [
            (
                format!("{events}fn=(7)\n"),
                "line 2: name id (7) used before",
            ),
            (
                format!("{events}fn=x\n1 2 zz\n"),
                "line 3: `zz` is not an event count",
            ),
            (
                format!("{events}fn=x\n1 2 3 4\n"),
                "line 3: 3 counts for 2 events",
            ),
            (
                format!("{events}cfn=x\ncalls=2 1\nfn=y\n"),
                "line 4: a `calls=`",
            ),
            (
                format!("{events}calls=many\n"),
                "line 2: `calls=many` has no call count",
            ),
            (
                format!("{events}cfn=x\ncalls=2 1\n"),
                "ends after a `calls=` line",
            ),
            (
                "1 2 3\n".to_string(),
                "line 1: a cost line before the `events:` line",
            ),
            (format!("{events}fn=(3 x\n"), "line 2: unclosed name id"),
            (
                format!("{events}fn=x\n1 2\n"),
                "no `totals:` or `summary:` line",
            ),
            ("events: Dr\ntotals: 1\n".to_string(), "no `Ir` event"),
        ] {
            let e = parse_callgrind(&text, is_free_entry).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_entry_patterns_name_the_subject_trait_callgrind_sees() {
        assert_eq!(
            entry_pattern("free"),
            "*as alloclab_traces::subject::Subject>::free"
        );
        assert!(is_free_entry(
            "<alloclab_core::heap::Heap<C> as alloclab_traces::subject::Subject>::free"
        ));
        assert!(!is_free_entry(
            "<alloclab_core::heap::Heap<C> as alloclab_traces::subject::Subject>::malloc"
        ));
        assert!(!is_free_entry("alloclab_core::heap::Heap<C>::free"));
        assert!(!is_free_entry(
            "<x::Y as alloclab_traces::subject::OtherSubject>::free"
        ));
    }

    #[test]
    fn a_hung_child_is_killed_and_a_quick_one_reaped() {
        let spawn = |args: &[&str]| {
            Command::new(args[0])
                .args(&args[1..])
                .spawn()
                .expect("coreutils run")
                .id() as libc::pid_t
        };
        let e = wait_with_rusage(spawn(&["sleep", "30"]), Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("timed out"), "{e}");
        let (status, usage) = wait_with_rusage(spawn(&["true"]), Duration::from_secs(30)).unwrap();
        assert!(exited_zero(status));
        assert!(max_rss_bytes(&usage) > 0);
        let (status, _) = wait_with_rusage(spawn(&["false"]), Duration::from_secs(30)).unwrap();
        assert!(!exited_zero(status));
        assert!(describe_status(status).contains("status 1"));
    }

    /// A summary as strace 6.1 wrote it (`strace -f -c --seccomp-bpf -e trace=mmap,munmap,
    /// madvise,mremap,mprotect,brk`) for a process whose thread allocated 50 MiB.
    const STRACE_SAMPLE: &str = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 46.33    0.003336          66        50           munmap
 36.26    0.002611           2       949           mmap
  9.03    0.000650           4       137           brk
  7.39    0.000532           3       150           mprotect
  0.99    0.000071          71         1           madvise
------ ----------- ----------- --------- --------- ----------------
100.00    0.007200           5      1287           total
";

    /// The summary of a measuring child: `alloclab measure-child --subject lifo --workload
    /// idle-bursts --threads 2` under strace 6.1, as `--syscalls` runs it.
    const STRACE_CHILD: &str = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 98.52    0.259889          17     15018           madvise
  1.00    0.002645          36        73           mmap
  0.38    0.001005          23        43           munmap
  0.09    0.000230          12        19           mprotect
  0.01    0.000017           4         4           brk
------ ----------- ----------- --------- --------- ----------------
100.00    0.263786          17     15157           total
";

    #[test]
    fn a_real_strace_summary_is_read_call_by_call() {
        let c = parse_strace_summary(STRACE_SAMPLE).unwrap();
        assert_eq!(
            c,
            SyscallCounts {
                mmap: 949,
                munmap: 50,
                madvise: 1,
                mremap: 0,
                mprotect: 150,
                brk: 137,
                total: 1287,
            }
        );
        // strace's notes before the table, and a row with errors, read too.
        let noted = format!(
            "strace: Process 12 attached\n{}",
            STRACE_SAMPLE.replace(
                "  0.99    0.000071          71         1           madvise",
                "  0.99    0.000071          71         1         1 madvise"
            )
        );
        assert_eq!(parse_strace_summary(&noted).unwrap(), c);
        // strace writes nothing when it saw no call.
        assert_eq!(parse_strace_summary("").unwrap(), SyscallCounts::default());
        let child = parse_strace_summary(STRACE_CHILD).unwrap();
        assert_eq!(
            (
                child.madvise,
                child.mmap,
                child.munmap,
                child.mprotect,
                child.brk
            ),
            (15018, 73, 43, 19, 4)
        );
        assert_eq!((child.mremap, child.total), (0, 15157));
    }

    #[test]
    fn malformed_strace_summaries_are_clear_errors() {
        let cut = STRACE_SAMPLE.lines().take(5).collect::<Vec<_>>().join("\n");
        for (text, says) in [
            (
                "Segmentation fault\n".to_string(),
                "no `calls ... syscall` header",
            ),
            (cut, "no `total` row"),
            (
                STRACE_SAMPLE.replace("       949   ", "       9x9   "),
                "line 4: `9x9` is not a number of calls",
            ),
            (
                STRACE_SAMPLE.replace("madvise", "futex"),
                "line 7: `futex` is not one of the counted calls",
            ),
            (
                STRACE_SAMPLE.replace("1287", "1288"),
                "the `total` row says 1288 calls, its rows add up to 1287",
            ),
            (
                STRACE_SAMPLE.replace(
                    " 36.26    0.002611           2       949           mmap",
                    "mmap",
                ),
                "line 4: `mmap` is not a summary row",
            ),
        ] {
            let e = parse_strace_summary(&text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn tails_are_short_and_on_one_line() {
        assert_eq!(tail("a\nb\nc", 3), "b | c");
        assert_eq!(tail("é", 1), "");
    }
}
