//! Where a `compare` run starts from: its output directory's journal (`journal.rs`) when it
//! continues an interrupted run (`--resume`), checked to be of the same plan and build, or a
//! new journal when it does not, which must not bury an unfinished one.
//!
//! One run at a time owns an output directory: it holds a lock ([`DirLock`], `flock` on
//! [`LOCK_FILE`]) from before it reads the journal until it exits. A run killed through a
//! parent (`timeout -s KILL 20 cargo run -- compare ...` kills cargo, not alloclab) goes on
//! measuring as an orphan; without the lock a `--resume` started beside it appended to the
//! same journal, and whichever finished second found the journal already removed (issue 41).
//! Now `--resume` waits for such a run to end and then continues from what it left (its
//! results.json), and a fresh run refuses the directory.

use super::campaign;
use super::journal::{self, Header, Journal};
use super::schema::Results;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file in the output directory (never removed: removing a lock file lets two
/// runs lock two different files of one name). It holds the pid of the run that owns it.
pub const LOCK_FILE: &str = "compare.lock";

/// The output directory's lock, held while it lives (the kernel drops it when the process
/// ends, however it ends).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Locks `dir` (which exists). When another process holds it: without `wait`, an error
    /// naming it; with `wait`, `waiting` is called with that message and the lock is waited
    /// for.
    pub fn acquire(
        dir: &Path,
        wait: bool,
        mut waiting: impl FnMut(&str),
    ) -> Result<DirLock, String> {
        let path = dir.join(LOCK_FILE);
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB).map_err(io)? {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => "another process".to_string(),
                pid => format!("process {pid}"),
            };
            let busy = format!(
                "another alloclab compare ({holder}) is running in {}: it may have outlived \
                 what was killed (killing `cargo run` leaves alloclab running)",
                dir.display()
            );
            if !wait {
                return Err(format!(
                    "{busy}; wait for it to end (or stop it), then run this again"
                ));
            }
            waiting(&format!(
                "{busy}; waiting for it to end, then continuing from what it left"
            ));
            flock(&file, libc::LOCK_EX).map_err(io)?;
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(io)?;
        Ok(DirLock { _file: file })
    }
}

/// `flock(file, how)`: `Ok(false)` when a non-blocking request finds the lock held. A file
/// system that cannot lock (some network and FUSE ones) is run on unlocked, as before locks.
fn flock(file: &File, how: libc::c_int) -> std::io::Result<bool> {
    loop {
        // SAFETY: flock has no memory-safety preconditions; the descriptor is `file`'s and
        // open for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::ENOLCK | libc::EINVAL | libc::EOPNOTSUPP) => return Ok(true),
            _ => return Err(e),
        }
    }
}

/// How a run treats what its output directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Start over; an unfinished run's journal is an error (its measurements would be lost).
    Fresh,
    /// Continue the journal there, or, without one, keep results.json's measurements (a run
    /// that finished, requeued anyway); with neither, start.
    Resume {
        /// Take the seed the earlier run recorded (no seed was given: the clock's would differ).
        keep_recorded_seed: bool,
    },
}

/// The journal to run with, and what was found (for the user).
#[derive(Debug)]
pub struct Opened {
    /// Open for appending; its header's plan is the run's (seed included).
    pub journal: Journal,
    /// What was resumed or dropped, one sentence each.
    pub notes: Vec<String>,
    /// The output directory's lock: keep it until the run has written its results and
    /// finished the journal.
    pub lock: DirLock,
}

/// Opens the journal of a run of `header` in `dir` (made if missing), once no other run holds
/// `dir` ([`DirLock`]: a fresh run refuses a directory in use, `--resume` waits for it, saying
/// so through `waiting`).
pub fn open(
    dir: &Path,
    mut header: Header,
    mode: Mode,
    waiting: impl FnMut(&str),
) -> Result<Opened, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let lock = DirLock::acquire(dir, matches!(mode, Mode::Resume { .. }), waiting)?;
    let path = dir.join(journal::FILE_NAME);
    let prior = journal::read(&path)?;
    let mut notes = Vec::new();
    let keep_seed = match mode {
        Mode::Fresh => {
            if let Some(c) = prior {
                return Err(format!(
                    "{}: holds {} measurement(s) of an unfinished run: rerun the same command \
                     with --resume to continue it, or remove the file to start over",
                    path.display(),
                    c.measurements.len()
                ));
            }
            let journal = Journal::start(&path, header, Vec::new())?;
            return Ok(Opened {
                journal,
                notes,
                lock,
            });
        }
        Mode::Resume { keep_recorded_seed } => keep_recorded_seed,
    };
    if let Some(contents) = prior {
        if keep_seed {
            header.plan.seed = contents.header.plan.seed;
        }
        check(&path, &contents.header, &header)?;
        notes.push(format!(
            "resuming {}: {} measurement(s) already taken",
            path.display(),
            contents.measurements.len()
        ));
        if contents.torn_bytes > 0 {
            notes.push(format!(
                "{}: dropped a torn last record ({} bytes): the run was killed while \
                 writing it; that measurement is taken again",
                path.display(),
                contents.torn_bytes
            ));
        }
        let journal = Journal::reopen(&path, contents)?;
        return Ok(Opened {
            journal,
            notes,
            lock,
        });
    }
    let results_path = dir.join("results.json");
    if !results_path.exists() {
        notes.push(format!("nothing to resume in {}: starting", dir.display()));
        let journal = Journal::start(&path, header, Vec::new())?;
        return Ok(Opened {
            journal,
            notes,
            lock,
        });
    }
    let results = Results::read(&results_path)?;
    if keep_seed {
        header.plan.seed = results.plan.seed;
    }
    let recorded = Header {
        schema_version: results.schema_version,
        ..Header::new(results.environment, results.plan)
    };
    check(&results_path, &recorded, &header)?;
    notes.push(format!(
        "resuming {}: {} measurement(s) kept, {} failed one(s) taken again",
        results_path.display(),
        results.measurements.len(),
        results.failures.len()
    ));
    let journal = Journal::start(&path, header, results.measurements)?;
    Ok(Opened {
        journal,
        notes,
        lock,
    })
}

/// Refuses to continue `recorded` (read from `path`) as `current` unless plan and build agree.
fn check(path: &Path, recorded: &Header, current: &Header) -> Result<(), String> {
    // Said apart from the plan's fields: every one of them would differ, burying the reason.
    let kind = |h: &Header| {
        if h.plan.runs_programs() {
            "of installed programs (`compare --programs`)"
        } else {
            "of the built-in workloads"
        }
    };
    if kind(recorded) != kind(current) {
        return Err(format!(
            "{} is of a run {}, and this command is a run {}: its measurements cannot be \
             resumed (run the command it was started with, or give another --out)",
            path.display(),
            kind(recorded),
            kind(current)
        ));
    }
    let fields = |h: &Header| {
        let mut f = campaign::build_fields(h.schema_version, &h.environment);
        f.extend(campaign::plan_fields(&h.plan));
        f
    };
    let diffs = campaign::differences(&[fields(recorded), fields(current)]);
    if diffs.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} was run with another plan or build than this command, so its measurements \
         cannot be resumed (give the options it was run with, or another --out):\n{}",
        path.display(),
        campaign::describe(&diffs, &["recorded".into(), "this command".into()])
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("alloclab-resume-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn open_quietly(dir: &Path, header: Header, mode: Mode) -> Result<Opened, String> {
        open(dir, header, mode, |m| {
            panic!("nothing else holds the directory: {m}")
        })
    }

    fn header() -> Header {
        let r = test_fixture::results(3);
        Header::new(r.environment, r.plan)
    }

    #[test]
    fn a_fresh_run_refuses_an_unfinished_journal_and_resume_continues_it() {
        let dir = scratch("journal");
        let ms = test_fixture::results(3).measurements;
        let mut j = open_quietly(&dir, header(), Mode::Fresh).unwrap().journal;
        j.append(&ms[0]).unwrap();
        drop(j);
        let err = open_quietly(&dir, header(), Mode::Fresh).unwrap_err();
        assert!(
            err.contains("1 measurement(s) of an unfinished run") && err.contains("--resume"),
            "{err}"
        );
        assert_eq!(
            journal::read(&dir.join(journal::FILE_NAME))
                .unwrap()
                .unwrap()
                .measurements,
            ms[..1],
            "nothing lost"
        );

        let mut other = header();
        other.plan.seed = 99;
        let resume = Mode::Resume {
            keep_recorded_seed: true,
        };
        let opened = open_quietly(&dir, other.clone(), resume).unwrap();
        assert_eq!(opened.journal.header().plan.seed, header().plan.seed);
        assert_eq!(opened.journal.recorded(), &ms[..1]);
        drop(opened);

        let err = open_quietly(
            &dir,
            other,
            Mode::Resume {
                keep_recorded_seed: false,
            },
        )
        .unwrap_err();
        assert!(
            err.contains("another plan") && err.contains("seed: recorded = 42, this command = 99"),
            "{err}"
        );
        let mut other = header();
        other.plan.reps = 5;
        other.plan.shards = vec!["2/3".into()];
        other.environment.commit = None;
        let err = open_quietly(&dir, other, resume).unwrap_err();
        for line in [
            "commit: recorded = abc123, this command = unknown",
            "reps: recorded = 3, this command = 5",
            "shards: recorded = [], this command = [2/3]",
        ] {
            assert!(err.contains(line), "{line}: {err}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_journal_of_the_other_kind_of_run_is_refused_as_such() {
        let dir = scratch("kind");
        let workloads = header();
        let mut programs = header();
        programs.plan.workloads = vec!["program:startup".into()];
        let resume = Mode::Resume {
            keep_recorded_seed: false,
        };
        for (first, then, said) in [
            (&workloads, &programs, "of the built-in workloads, and this command is a run of installed programs"),
            (&programs, &workloads, "of installed programs (`compare --programs`), and this command is a run of the built-in"),
        ] {
            let _ = std::fs::remove_dir_all(&dir);
            drop(open_quietly(&dir, first.clone(), Mode::Fresh).unwrap());
            let err = open_quietly(&dir, then.clone(), resume).unwrap_err();
            assert!(err.contains(said) && err.contains("cannot be resumed"), "{err}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn resume_without_a_journal_keeps_results_json_or_starts() {
        let dir = scratch("results");
        let opened = open_quietly(
            &dir,
            header(),
            Mode::Resume {
                keep_recorded_seed: false,
            },
        )
        .unwrap();
        assert!(opened.journal.recorded().is_empty());
        assert!(
            opened.notes[0].contains("nothing to resume"),
            "{:?}",
            opened.notes
        );
        opened.journal.finish().unwrap();
        drop(opened.lock);

        let results = test_fixture::results(3);
        results.write(&dir.join("results.json")).unwrap();
        let opened = open_quietly(
            &dir,
            header(),
            Mode::Resume {
                keep_recorded_seed: false,
            },
        )
        .unwrap();
        assert_eq!(opened.journal.recorded(), results.measurements);
        assert!(opened.notes[0].contains("1 failed one(s) taken again"));
        // The journal now holds them, so a kill from here on loses none.
        drop(opened);
        let contents = journal::read(&dir.join(journal::FILE_NAME))
            .unwrap()
            .unwrap();
        assert_eq!(contents.measurements, results.measurements);

        std::fs::remove_file(dir.join(journal::FILE_NAME)).unwrap();
        let mut other = header();
        other.plan.workloads.pop();
        let err = open_quietly(
            &dir,
            other,
            Mode::Resume {
                keep_recorded_seed: false,
            },
        )
        .unwrap_err();
        assert!(
            err.contains("results.json was run with another plan"),
            "{err}"
        );
        assert!(
            err.contains("workloads: recorded = [churn, trace,odd|name]"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The case of issue 41: a run killed through its parent goes on; a fresh run refuses its
    /// directory, naming it, and `--resume` waits for it and continues from what it left.
    #[test]
    fn one_run_at_a_time_owns_a_directory_and_resume_waits_for_it() {
        let dir = scratch("lock");
        let ms = test_fixture::results(3).measurements;
        let mut running = open_quietly(&dir, header(), Mode::Fresh).unwrap();
        running.journal.append(&ms[0]).unwrap();
        let pid = std::process::id().to_string();
        assert_eq!(
            std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap().trim(),
            pid
        );
        let err = open(&dir, header(), Mode::Fresh, |m| panic!("{m}")).unwrap_err();
        assert!(
            err.contains(&format!(
                "another alloclab compare (process {pid}) is running"
            )),
            "{err}"
        );

        let (told, waiting) = std::sync::mpsc::channel::<String>();
        let resumer = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let resume = Mode::Resume {
                    keep_recorded_seed: true,
                };
                open(&dir, header(), resume, |m| {
                    told.send(m.to_string()).unwrap()
                })
                .map(|o| o.journal.recorded().len())
            })
        };
        let message = waiting.recv().unwrap();
        assert!(message.contains("waiting for it to end"), "{message}");
        // The first run ends as a run does: results.json written, the journal removed.
        running.journal.append(&ms[1]).unwrap();
        let mut results = test_fixture::results(3);
        results.measurements.truncate(2);
        results.failures.clear();
        results.write(&dir.join("results.json")).unwrap();
        running.journal.finish().unwrap();
        drop(running.lock);
        assert_eq!(
            resumer.join().unwrap().unwrap(),
            2,
            "continued from results.json"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
