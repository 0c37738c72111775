//! One invocation of a program under a preload: its processes started, timed, awaited and
//! checked, and the probe's files read when it is in front.

use super::catalog::Program;
use super::libraries::Preload;
use crate::child::{describe_status, exited_zero, max_rss_bytes, tail, timeval, wait_reading};
use crate::schema::Metrics;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `program` under `preload` with liballoclab_probe.so in front of it: the run's figures
/// plus the probe's, read from the files its processes wrote.
pub(super) fn run_probed(
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
        r.metrics.probe = crate::schema::ProbeMetrics::of(&s, "preload");
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

/// What one invocation of a program gave.
pub(super) struct Ran {
    /// Its standard output (empty for a batch, whose output is not read).
    pub(super) stdout: String,
    /// Its figures.
    pub(super) metrics: Metrics,
}

/// `program` under `preload`, its environment padded by `env_pad` bytes, standard input
/// empty; the caller says where the output goes.
fn command(program: &Program, preload: &Preload, env_pad: usize) -> Command {
    let mut cmd = Command::new(&program.binary);
    cmd.args(&program.args)
        .envs(program.env.iter().copied())
        .envs(preload.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(crate::child::PAD_VARIABLE, "x".repeat(env_pad))
        .stdin(Stdio::null());
    if let Some(lib) = &preload.library {
        cmd.env("LD_PRELOAD", lib);
    }
    cmd
}

pub(super) fn run_one(program: &Program, preload: &Preload, env_pad: usize) -> Result<Ran, String> {
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
pub(super) fn run_batch(
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
    crate::child::wait_unreaped(pid)?;
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    if let Batch::Running(_) = *s {
        *s = Batch::Between;
    }
    let reaped = crate::child::reap(pid);
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

#[cfg(test)]
mod tests {
    use super::super::catalog::{build_startup, startup_program, STARTUP_RUNS};
    use super::super::libraries::peer_preloads;
    use super::{reported_hwm, run_batch, run_one, Program};
    use std::time::{Duration, Instant};

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
    fn reads_the_last_vmhwm_line() {
        assert_eq!(
            reported_hwm("x\nVmHWM:\t  1200 kB\nVmHWM:\t  1316 kB\n"),
            Some(1316 * 1024)
        );
        assert_eq!(reported_hwm("VmRSS:\t 12 kB\n"), None);
        assert_eq!(reported_hwm("VmHWM: twelve kB\n"), None);
    }
}
