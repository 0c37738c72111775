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

use super::schema::{InstructionMetrics, Metrics};
use super::subjects::SubjectEntry;
use super::workloads::{Params, Workload};
use alloclab_traces::replay::rss;
use serde::{Deserialize, Serialize};
use std::io::Read;
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

impl Spawn {
    fn command(&self) -> Command {
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
        let mut cmd = match &self.callgrind_dir {
            Some(dir) => {
                let mut c = Command::new("valgrind");
                c.arg("--tool=callgrind")
                    .arg("--cache-sim=yes")
                    .arg("--collect-atstart=no");
                // Collect inside the allocator's entry points only, on every thread: the
                // counts are the allocator's own, per call.
                for f in SUBJECT_CALLS {
                    c.arg(format!(
                        "--toggle-collect=*as alloclab_traces::subject::Subject>::{f}"
                    ));
                }
                c.arg(format!(
                    "--callgrind-out-file={}",
                    dir.join("callgrind.out.%p").display()
                ))
                .arg("--quiet")
                .arg(&self.exe);
                c
            }
            None => Command::new(&self.exe),
        };
        cmd.args(argv.drain(..));
        cmd.env(PAD_VARIABLE, "x".repeat(self.env_pad));
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs the child to the end and collects its report.
    pub fn run(&self) -> ChildResult {
        let child = match self.command().spawn() {
            Ok(c) => c,
            Err(e) => return ChildResult::Failed(format!("cannot start the child: {e}")),
        };
        let pid = child.id();
        let (waited, out, err) = wait_reading(child, self.timeout);
        let (status, max_rss) = match waited {
            Ok((status, usage)) => (status, max_rss_bytes(&usage)),
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
        if let Some(dir) = &self.callgrind_dir {
            let file = dir.join(format!("callgrind.out.{pid}"));
            match callgrind_totals(&file) {
                Ok(t) => report.metrics.instructions = Some(t.per_op(report.metrics.ops)),
                Err(e) => return ChildResult::Failed(e),
            }
            let _ = std::fs::remove_file(&file);
        }
        ChildResult::Done(Box::new(report))
    }
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

/// Callgrind's event totals of one run.
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
        }
    }
}

/// Reads the `events:` and `totals:` (or `summary:`) lines of a callgrind output file.
fn callgrind_totals(path: &Path) -> Result<Totals, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("callgrind output {}: {e}", path.display()))?;
    parse_callgrind(&text).ok_or_else(|| {
        format!(
            "callgrind output {}: no events/totals lines (was --cache-sim=yes given?)",
            path.display()
        )
    })
}

fn parse_callgrind(text: &str) -> Option<Totals> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))?
        .split_whitespace()
        .collect();
    let values: Vec<f64> = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })?
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    let get = |name: &str| {
        events
            .iter()
            .position(|e| *e == name)
            .and_then(|i| values.get(i).copied())
            .unwrap_or(0.0)
    };
    if !events.contains(&"Ir") {
        return None;
    }
    Some(Totals {
        ir: get("Ir"),
        dr: get("Dr"),
        dw: get("Dw"),
        d1: get("D1mr") + get("D1mw"),
        ll: get("DLmr") + get("DLmw"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callgrind_totals_are_read_by_event_name() {
        let text = "version: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n\
                    fn=x\n1 2 3\ntotals: 1000 300 200 5 10 20 1 2 3\n";
        let t = parse_callgrind(text).unwrap();
        assert_eq!(t.ir, 1000.0);
        assert_eq!(t.d1, 30.0);
        assert_eq!(t.ll, 5.0);
        let per = t.per_op(10);
        assert_eq!(per.instructions, 100.0);
        assert_eq!(per.data_reads, 30.0);
        assert!(parse_callgrind("nothing here").is_none());
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

    #[test]
    fn tails_are_short_and_on_one_line() {
        assert_eq!(tail("a\nb\nc", 3), "b | c");
        assert_eq!(tail("é", 1), "");
    }
}
