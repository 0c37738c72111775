//! Disturbance, measured: how much of the machine processes other than a measurement's child
//! and the harness took while the measurement ran (issue 41: the one-minute load average it
//! replaces counted the build that had just finished, not what ran beside the measurements).
//!
//! Around each child the harness opens a [`Window`]: it reads `/proc/stat`'s totals over all
//! CPUs and its own CPU time (`getrusage(RUSAGE_SELF)`, every thread of the harness) before the
//! child starts, and again once the child has exited. With `n` CPUs and `t` seconds between the
//! two readings, the machine had `n t` CPU-seconds; of them, `idle + iowait` went unused, the
//! child used its own user and system time (`wait4`'s usage, every thread of it), and the
//! harness its own. The rest is what everything else took:
//!
//! `other = n t - (idle + iowait) - child - harness`, `fraction = other / (n t)`.
//!
//! Everything else is other processes, kernel threads, interrupts and, in a virtual machine,
//! the time the hypervisor gave other guests (`steal`, kept apart too). Idle time comes from
//! the kernel's idle accounting (exact on a tickless kernel) and the child's and harness's
//! from their run times, so the figure does not depend on where the child's threads ran; only
//! `/proc/stat`'s unit (a tick of `1 / CLK_TCK` s, 10 ms) limits it: `idle` and `iowait` are
//! each read to within a tick at both ends, so `other` is known to within
//! [`RESOLUTION_TICKS`] ticks.
//!
//! A measurement is **disturbed** when others certainly took more than [`THRESHOLD`] of the
//! machine: `other - resolution > THRESHOLD n t`. 5% because an idle machine's own background
//! (daemons and kernel threads waking now and then, a hypervisor's steal) stays under it (a
//! build that has ended leaves nothing behind: about 1% right after one, docs/MEASURING.md),
//! while one other busy process takes a whole CPU, `1 / n` of the machine (50% on two cores,
//! 12.5% on eight): every process that competes for a CPU the child wants is caught, and a
//! short one (a `cron` job) only if it runs long enough to take a measurable share. The runner
//! measures a disturbed measurement again, up to `--retry-disturbed` times (2 by default),
//! keeps the least disturbed attempt, and records the fractions of the others; one still
//! disturbed is kept and flagged, and the report's first line counts them.

use super::schema::Disturbance;
use std::time::Instant;

/// Others' share of the machine above which a measurement is disturbed.
pub const THRESHOLD: f64 = 0.05;

/// Attempts after the first that the runner makes of a disturbed measurement by default.
pub const RETRIES: usize = 2;

/// How many of `/proc/stat`'s ticks `other` may be off by: idle and iowait, each truncated to
/// a tick when read at either end (one tick each of the differences).
pub const RESOLUTION_TICKS: f64 = 2.0;

/// `/proc/stat`'s first line (every CPU together), in seconds, and how many CPUs it adds up.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CpuTotals {
    idle: f64,
    iowait: f64,
    steal: f64,
    cpus: usize,
}

/// The ticks per second of `/proc/stat` (`CLK_TCK`, 100 on Linux).
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Parses `/proc/stat`: the `cpu` line's idle, iowait and steal, and the count of `cpuN` lines.
fn parse_stat(text: &str, tick: f64) -> Option<CpuTotals> {
    let mut lines = text.lines();
    let first = lines.next()?;
    let mut fields = first.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal guest guest_nice
    let values: Vec<u64> = fields.map_while(|f| f.parse::<u64>().ok()).collect();
    let at = |i: usize| values.get(i).map_or(0.0, |&v| v as f64 / tick);
    if values.len() < 5 {
        return None;
    }
    let cpus = lines
        .take_while(|l| l.starts_with("cpu"))
        .filter(|l| l[3..].starts_with(|c: char| c.is_ascii_digit()))
        .count();
    Some(CpuTotals {
        idle: at(3),
        iowait: at(4),
        steal: at(7),
        cpus: cpus.max(1),
    })
}

fn cpu_totals(tick: f64) -> Option<CpuTotals> {
    parse_stat(&std::fs::read_to_string("/proc/stat").ok()?, tick)
}

/// The harness's own CPU time (user and system, every thread), in seconds.
fn own_cpu() -> f64 {
    // SAFETY: rusage is plain old data; all-zero is valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    super::child::timeval(u.ru_utime) + super::child::timeval(u.ru_stime)
}

/// The machine's state when a measurement started: open it just before the child is
/// started, [`finish`](Window::finish) it once the child has exited.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    tick: f64,
    totals: Option<CpuTotals>,
    started: Instant,
    own: f64,
}

impl Window {
    /// Reads the totals and the harness's own time now.
    pub fn start() -> Window {
        let tick = ticks_per_second();
        let totals = cpu_totals(tick);
        Window {
            tick,
            totals,
            started: Instant::now(),
            own: own_cpu(),
        }
    }

    /// The disturbance of the window from [`start`](Window::start) to now, of a child that used
    /// `child_cpu` seconds (user and system, every thread: `wait4`'s usage). `None` when
    /// `/proc/stat` cannot be read.
    pub fn finish(self, child_cpu: f64) -> Option<Disturbance> {
        let own = own_cpu() - self.own;
        let elapsed = self.started.elapsed().as_secs_f64();
        let (before, after) = (self.totals?, cpu_totals(self.tick)?);
        let idle = (after.idle + after.iowait) - (before.idle + before.iowait);
        let steal = (after.steal - before.steal).max(0.0);
        Some(judge(
            elapsed,
            after.cpus,
            idle,
            steal,
            child_cpu + own,
            RESOLUTION_TICKS / self.tick,
        ))
    }
}

/// The disturbance of `elapsed` seconds on `cpus` CPUs of which `idle` went unused and `ours`
/// were the child's and the harness's, `other` known to within `resolution` seconds.
fn judge(
    elapsed: f64,
    cpus: usize,
    idle: f64,
    steal: f64,
    ours: f64,
    resolution: f64,
) -> Disturbance {
    let capacity = elapsed * cpus as f64;
    let other = (capacity - idle - ours).max(0.0);
    Disturbance {
        fraction: if capacity > 0.0 {
            (other / capacity).min(1.0)
        } else {
            0.0
        },
        other_cpu_s: other,
        steal_s: steal,
        elapsed_s: elapsed,
        cpus,
        resolution_s: resolution,
        disturbed: other - resolution > THRESHOLD * capacity,
        retried: Vec::new(),
    }
}

/// The disturbance of a run's measurements that the statistics use (no warm-up round).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Measurements with a record.
    pub measured: usize,
    /// The fractions of those still disturbed, ascending.
    pub disturbed: Vec<f64>,
    /// The largest fraction of any.
    pub most: f64,
    /// Measurements taken more than once because an attempt was disturbed.
    pub measured_again: usize,
}

/// The [`Tally`] of `measurements`.
pub fn tally<'a>(measurements: impl IntoIterator<Item = &'a super::schema::Measurement>) -> Tally {
    let mut t = Tally::default();
    for d in measurements
        .into_iter()
        .filter(|m| !m.warmup)
        .filter_map(|m| m.disturbance.as_ref())
    {
        t.measured += 1;
        t.most = t.most.max(d.fraction);
        if d.disturbed {
            t.disturbed.push(d.fraction);
        }
        t.measured_again += usize::from(!d.retried.is_empty());
    }
    t.disturbed.sort_by(f64::total_cmp);
    t
}

/// The first line of a report: how many measurements were disturbed and by how much (nothing
/// to add when none has a record: files written before disturbance was measured, whose load
/// average rule still speaks through `environment.noisy`).
pub fn title(results: &super::schema::Results) -> String {
    let Tally {
        measured,
        disturbed,
        most,
        measured_again,
    } = tally(&results.measurements);
    let pct = |f: f64| format!("{:.1}%", f * 100.0);
    if measured == 0 {
        let env = &results.environment;
        if env.noisy {
            let load = |l: Option<super::schema::LoadAverage>| {
                l.map_or_else(
                    || "unknown".into(),
                    |l| format!("{:.2} {:.2} {:.2}", l.one, l.five, l.fifteen),
                )
            };
            return format!(
                "# alloclab compare: report (NOISY: measured while other work loaded the \
                 machine, load {} before and {} after on {} cores; figures may be disturbed)",
                load(env.load_before),
                load(env.load_after),
                env.cores
            );
        }
        return "# alloclab compare: report".into();
    }
    let again = match measured_again {
        0 => String::new(),
        n => format!("; {n} measured again"),
    };
    if disturbed.is_empty() {
        // A short measurement can read above the threshold and yet not certainly be: `other`
        // is known to two of /proc/stat's ticks, which is much of a measurement's CPU time.
        let within = if most > THRESHOLD {
            ", above the threshold only by less than /proc/stat's resolution"
        } else {
            ""
        };
        return format!(
            "# alloclab compare: report (undisturbed: other processes took at most {} of the \
             machine during any of its {measured} measurements{within}; threshold {}{again})",
            pct(most),
            pct(THRESHOLD)
        );
    }
    let (lo, hi) = (disturbed[0], disturbed[disturbed.len() - 1]);
    let median = super::stats::median(&disturbed);
    format!(
        "# alloclab compare: report (DISTURBED: {} of {measured} measurements, during which \
         other processes took {} of the machine ({} to {}; threshold {}{again}); their figures \
         may be off)",
        disturbed.len(),
        if disturbed.len() == 1 {
            pct(lo)
        } else {
            format!("a median {}", pct(median))
        },
        pct(lo),
        pct(hi),
        pct(THRESHOLD)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    #[test]
    fn proc_stat_parses() {
        let text = "cpu  15118 0 3604 7695 236 0 28 458 0 0\n\
                    cpu0 7463 0 1645 4201 34 0 5 228 0 0\n\
                    cpu1 7654 0 1958 3493 202 0 22 230 0 0\n\
                    intr 1 2 3\nctxt 5\n";
        let t = parse_stat(text, 100.0).unwrap();
        assert_eq!(
            t,
            CpuTotals {
                idle: 76.95,
                iowait: 2.36,
                steal: 4.58,
                cpus: 2
            }
        );
        assert_eq!(parse_stat("intr 1\n", 100.0), None);
        assert_eq!(parse_stat("cpu 1 2\n", 100.0), None);
        let live = cpu_totals(ticks_per_second()).expect("/proc/stat reads");
        assert!(live.cpus >= 1 && live.idle > 0.0, "{live:?}");
    }

    #[test]
    fn the_rule() {
        // Two CPUs for a second, one idle, the child on the other: nothing else ran.
        let d = judge(1.0, 2, 1.0, 0.0, 1.0, 0.02);
        assert_eq!((d.fraction, d.disturbed), (0.0, false));
        // Something took a tenth of a CPU: 5% of the machine, within the threshold's reach
        // only beyond the resolution.
        let d = judge(1.0, 2, 0.9, 0.0, 1.0, 0.02);
        assert!((d.fraction - 0.05).abs() < 1e-9 && !d.disturbed, "{d:?}");
        let d = judge(1.0, 2, 0.85, 0.0, 1.0, 0.02);
        assert!(d.disturbed, "{d:?}");
        // A short measurement: 20 ms of others in 100 ms is within the counters' resolution.
        let d = judge(0.1, 2, 0.08, 0.0, 0.1, 0.02);
        assert!(!d.disturbed, "{d:?}");
        // A whole other CPU busy: half the machine.
        let d = judge(1.0, 2, 0.0, 0.0, 1.0, 0.02);
        assert!((d.fraction - 0.5).abs() < 1e-9 && d.disturbed);
        // Readings a tick apart never make a negative share.
        assert_eq!(judge(1.0, 2, 1.01, 0.0, 1.0, 0.02).fraction, 0.0);
    }

    /// Processes spinning on every CPU, stopped when dropped (a failed assertion included).
    struct Hogs(Vec<Child>);

    impl Hogs {
        fn start() -> Hogs {
            let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
            Hogs((0..cpus).map(|_| sh("while :; do :; done")).collect())
        }
    }

    impl Drop for Hogs {
        fn drop(&mut self) {
            for h in &mut self.0 {
                let _ = h.kill();
                let _ = h.wait();
            }
        }
    }

    fn sh(script: &str) -> Child {
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// A fixed amount of CPU work in a child process (about a third of a second), measured as
    /// the runner measures one: its disturbance, from its own usage.
    fn measure_busy_child() -> Disturbance {
        let window = Window::start();
        let child = sh("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done");
        let pid = child.id() as libc::pid_t;
        let (_, usage) =
            crate::child::wait_with_rusage(pid, Duration::from_secs(60)).expect("the child ran");
        drop(child);
        let cpu = crate::child::timeval(usage.ru_utime) + crate::child::timeval(usage.ru_stime);
        window.finish(cpu).expect("/proc/stat reads")
    }

    /// Issue 41: a CPU hog started beside a measurement marks it disturbed, and the same
    /// measurement alone does not. The hog spins on every CPU, so it takes its share whatever
    /// else runs. Alone is judged on the same machine, which may be busy with other work (this
    /// one is shared with builds, and other tests run beside this one): it must come out less
    /// disturbed than beside the hog, and undisturbed in one attempt of several unless empty
    /// windows (the same length, nothing measured) after the attempts were disturbed at least
    /// half the time, which says the machine, not the rule, was busy. A rule that counted the
    /// child's own time would fail here on any machine quiet half the time.
    #[test]
    fn a_cpu_hog_beside_a_measurement_disturbs_it_and_alone_it_is_not() {
        let hogs = Hogs::start();
        std::thread::sleep(Duration::from_millis(50));
        let hogged = measure_busy_child();
        drop(hogs);
        assert!(hogged.disturbed, "{hogged:?}");
        assert!(hogged.fraction > 0.25, "{hogged:?}");
        assert!(hogged.elapsed_s > 0.0 && hogged.cpus >= 1);

        let mut busy_machine = 0;
        let mut alone = Vec::new();
        for _ in 0..10 {
            let d = measure_busy_child();
            let quiet = !d.disturbed;
            alone.push(d);
            if quiet {
                break;
            }
            // Nothing measured, the same length: what the machine does by itself.
            let window = Window::start();
            std::thread::sleep(Duration::from_secs_f64(alone.last().unwrap().elapsed_s));
            if window.finish(0.0).is_some_and(|e| e.disturbed) {
                busy_machine += 1;
            }
        }
        let least = alone
            .iter()
            .map(|d| d.fraction)
            .fold(f64::INFINITY, f64::min);
        assert!(least < hogged.fraction, "{alone:?} vs {hogged:?}");
        let undisturbed = alone.iter().any(|d| !d.disturbed);
        assert!(
            undisturbed || 2 * busy_machine >= alone.len(),
            "alone, every attempt disturbed while the machine was not always busy: {alone:?}"
        );
        if !undisturbed {
            eprintln!("the machine was busy with other work throughout: {alone:?}");
        }
    }
}
