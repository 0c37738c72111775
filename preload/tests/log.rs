//! The allocation log, `ALLOCLAB_CONF=log:<path>` (issue 5, point 1), through the real
//! library: every call of a C program with threads and forked children, counted two ways
//! (what the program says it did, what the log says) and equal; the log read back by the
//! trace parser of the `alloclab` package, every process of it, strictly; descriptors the
//! program closes or reuses; `%p` files and `exec`; bad paths; and real Debian programs whose
//! logs must agree with the heap's own statistics at exit.

mod common;
use alloclab_facade::trace::{parse, ParseOptions, Pid, Trace};
use common::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

/// The sizes `log_calls.c` marks its own calls with (for a free: the block's size).
const MARK: std::ops::RangeInclusive<u64> = 28672..=32768;

/// The functions, in the order `log_calls.c` prints them.
const KINDS: [&str; 8] = [
    "malloc",
    "calloc",
    "realloc",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "free",
];

/// Marked calls per (pid, tid), per function of `KINDS`.
type Counts = BTreeMap<(u64, u64), [u64; 8]>;

/// What `log_calls` says each of its threads did (lines starting with `label`).
fn reported(stdout: &str, label: &str) -> Counts {
    let mut counts = Counts::new();
    for line in stdout.lines() {
        let mut words = line.split(' ');
        if words.next() != Some(label) {
            continue;
        }
        let pid = words.next().unwrap().parse().unwrap();
        let tid = words.next().unwrap().parse().unwrap();
        let mut n = [0u64; 8];
        for (k, w) in words.enumerate() {
            let (name, v) = w.split_once('=').unwrap();
            assert_eq!(name, KINDS[k], "{line}");
            n[k] = v.parse().unwrap();
        }
        assert!(counts.insert((pid, tid), n).is_none(), "{pid} {tid} twice");
    }
    counts
}

/// One line of a raw log, read here independently of the trace parser.
struct Line<'a> {
    pid: u64,
    tid: u64,
    func: &'a str,
    args: Vec<&'a str>,
    result: Option<u64>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.strip_prefix("0x").unwrap_or_else(|| panic!("{s}")), 16).unwrap()
}

fn split(line: &str) -> Line<'_> {
    let mut w = line.splitn(3, ' ');
    let pid = w.next().unwrap().parse().unwrap();
    let tid = w.next().unwrap().parse().unwrap();
    let call = w.next().unwrap_or_else(|| panic!("{line:?}"));
    let open = call.find('(').unwrap();
    let close = call.find(')').unwrap();
    let args = &call[open + 1..close];
    Line {
        pid,
        tid,
        func: &call[..open],
        args: if args.is_empty() {
            Vec::new()
        } else {
            args.split(',').collect()
        },
        result: call[close + 1..].strip_prefix('=').map(hex),
    }
}

/// What the log says `log_calls` did: its marked calls per (pid, tid), following each
/// process's live marked blocks through frees and reallocs.
fn logged(log: &str) -> Counts {
    let mut counts = Counts::new();
    let mut live: BTreeMap<u64, HashSet<u64>> = BTreeMap::new();
    for text in log.lines() {
        let l = split(text);
        let live = live.entry(l.pid).or_default();
        let size = |i: usize| -> u64 { l.args[i].parse().unwrap() };
        let ptr = |i: usize| -> u64 { hex(l.args[i]) };
        let marked = match l.func {
            "malloc" | "valloc" => MARK.contains(&size(0)),
            "calloc" | "posix_memalign" | "aligned_alloc" | "memalign" => MARK.contains(&size(1)),
            "realloc" => live.contains(&ptr(0)) || MARK.contains(&size(1)),
            "free" => live.contains(&ptr(0)),
            other => panic!("unexpected function {other} in {text:?}"),
        };
        match (l.func, l.result) {
            ("free", _) => {
                live.remove(&ptr(0));
            }
            ("realloc", Some(q)) => {
                if q != 0 || size(1) == 0 {
                    live.remove(&ptr(0));
                }
                if q != 0 && marked {
                    live.insert(q);
                }
            }
            (_, Some(q)) if q != 0 && marked => {
                live.insert(q);
            }
            _ => {}
        }
        if marked {
            let k = KINDS.iter().position(|k| *k == l.func).unwrap();
            counts.entry((l.pid, l.tid)).or_default()[k] += 1;
        }
    }
    counts
}

/// The pids of a log, in order of first appearance.
fn pids(log: &str) -> Vec<u64> {
    let mut seen = Vec::new();
    for line in log.lines() {
        let pid = split(line).pid;
        if !seen.contains(&pid) {
            seen.push(pid);
        }
    }
    seen
}

/// Parses process `pid` of `log` strictly (every line of every pid checked for syntax, every
/// call of this one for meaning), as `alloclab replay --pid` does.
fn parse_pid(log: &str, pid: u64) -> Trace {
    parse(
        log.as_bytes(),
        &ParseOptions {
            pid: Pid::Is(pid),
            skip_bad: false,
        },
    )
    .unwrap_or_else(|e| panic!("pid {pid}: {e}"))
}

fn fresh(path: &Path) {
    let _ = std::fs::remove_file(path);
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_call_of_threads_and_forked_children_is_logged_in_a_valid_order() {
    let prog = c_program("log_calls");
    let log = scratch("log").join("calls.log");
    let (threads, forks) = (4, 6);
    for conf in ["", "config:mrf-current,arenas:round-robin,narenas:2,"] {
        fresh(&log);
        let out = run(
            preloaded(&prog, &format!("{conf}log:{}", log.display())).args([
                &threads.to_string(),
                "20000",
                &forks.to_string(),
            ]),
            LIMIT,
        );
        out.assert_success(conf);
        assert!(out.stdout.ends_with("log_calls: ok\n"), "{}", out.stdout);
        assert_eq!(out.stderr, "", "{conf}");
        let text = read(&log);
        let want = reported(&out.stdout, "calls");
        // The parent's threads and main thread, each child's main thread and thread.
        assert_eq!(want.len(), threads + 1 + 2 * forks);
        assert_eq!(
            logged(&text),
            want,
            "{conf}: the log and the program disagree"
        );
        let pids = pids(&text);
        assert_eq!(pids.len(), 1 + forks, "{conf}");
        for &pid in &pids {
            let t = parse_pid(&text, pid);
            let threads_seen: BTreeSet<u64> = t.threads.iter().copied().collect();
            let threads_reported: BTreeSet<u64> = want
                .keys()
                .filter(|(p, _)| *p == pid)
                .map(|&(_, t)| t)
                .collect();
            assert!(
                threads_reported.is_subset(&threads_seen),
                "{conf}: pid {pid}: threads {threads_seen:?}, reported {threads_reported:?}"
            );
        }
        // Every line whole and ended.
        assert!(text.ends_with('\n'));
    }
}

#[test]
fn a_pipe_shared_by_every_process_gets_whole_lines() {
    // The program's stdout is a pipe, read slowly so that it is often full (a write larger
    // than PIPE_BUF into a full pipe may then be split, and another process's write land in
    // between); the log opens it again. The log's lines, the program's and its forked
    // children's share it while the parent's threads keep logging: every line must arrive
    // whole.
    use std::io::Read;
    let prog = c_program("log_calls");
    let mut child = preloaded(&prog, "log:/dev/stdout")
        .args(["4", "6000", "6"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 1024];
    let start = std::time::Instant::now();
    loop {
        let n = pipe.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_micros(100));
        assert!(start.elapsed() < LIMIT, "log_calls did not finish");
    }
    assert!(child.wait().unwrap().success());
    let stdout = String::from_utf8(bytes).unwrap();
    let (log, program): (Vec<&str>, Vec<&str>) = stdout
        .lines()
        .partition(|l| l.starts_with(|c: char| c.is_ascii_digit()));
    let log = log.join("\n") + "\n";
    assert_eq!(program.last(), Some(&"log_calls: ok"));
    assert_eq!(
        logged(&log),
        reported(&(program.join("\n") + "\n"), "calls")
    );
    for pid in pids(&log) {
        parse_pid(&log, pid);
    }
}

#[test]
fn pid_in_the_path_gives_each_process_its_own_file() {
    let prog = c_program("log_calls");
    let dir = scratch("log-per-process");
    for f in std::fs::read_dir(&dir).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let forks = 4;
    let conf = format!("log:{}/calls.%p.log", dir.display());
    let out = run(
        preloaded(&prog, &conf).args(["2", "5000", &forks.to_string()]),
        LIMIT,
    );
    out.assert_success("per-process files");
    let want = reported(&out.stdout, "calls");
    let mut all = String::new();
    let mut files = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let pid: u64 = name
            .strip_prefix("calls.")
            .and_then(|n| n.strip_suffix(".log"))
            .unwrap_or_else(|| panic!("unexpected file {name}"))
            .parse()
            .unwrap();
        let text = read(&path);
        assert_eq!(pids(&text), [pid], "{name} holds other processes' lines");
        parse_pid(&text, pid);
        all.push_str(&text);
        files += 1;
    }
    assert_eq!(files, 1 + forks);
    assert_eq!(logged(&all), want);

    // A process that execs keeps its pid: its new image starts the file again, so the file
    // holds that image's calls only, and parses.
    let out = run(
        preloaded(&prog, &conf).args(["1", "3000", "0", "exec"]),
        LIMIT,
    );
    out.assert_success("exec");
    let before = reported(&out.stdout, "before-exec");
    let after = reported(&out.stdout, "calls");
    let pid = after.keys().next().unwrap().0;
    assert!(before.keys().all(|k| k.0 == pid) && !before.is_empty());
    let text = read(&dir.join(format!("calls.{pid}.log")));
    assert_eq!(logged(&text), after);
    parse_pid(&text, pid);
}

#[test]
fn descriptors_the_program_closes_or_reuses_are_noticed() {
    let prog = c_program("log_calls");
    let dir = scratch("log-fds");
    let log = dir.join("calls.log");
    let data = dir.join("data.txt");
    fresh(&log);
    let out = run(
        preloaded(&prog, &format!("log:{}", log.display())).args([
            "1",
            "4000",
            "1",
            "fds",
            data.to_str().unwrap(),
        ]),
        LIMIT,
    );
    out.assert_success("fds");
    // The program's file got the program's lines only (it was on the log's old number).
    assert_eq!(read(&data), "program data\n".repeat(2));
    let text = read(&log);
    assert_eq!(logged(&text), reported(&out.stdout, "calls"));
    for pid in pids(&text) {
        parse_pid(&text, pid);
    }
}

#[test]
fn bad_paths_and_unwritable_files_are_one_line_and_the_program_runs_on() {
    let prog = c_program("log_calls");
    let dir = scratch("log-bad");
    let missing = dir.join("no-such-dir/calls.log");
    let out = run(
        preloaded(&prog, &format!("log:{}", missing.display())).args(["1", "100", "0"]),
        LIMIT,
    );
    out.assert_success("unopenable");
    assert!(out.stdout.ends_with("log_calls: ok\n"));
    assert_eq!(
        out.stderr,
        format!(
            "alloclab: ALLOCLAB_CONF entry 'log:{0}': cannot open {0}: ENOENT, no such file \
             or directory; not logging\n",
            missing.display()
        )
    );
    // A relative path names the same file from the working directory.
    let out = run(
        preloaded(&prog, "log:no-such-dir/calls.log")
            .args(["1", "100", "0"])
            .current_dir(&dir),
        LIMIT,
    );
    assert!(out
        .stderr
        .contains(&format!("cannot open {}", missing.display())));
    // A directory.
    let out = run(
        preloaded(&prog, &format!("log:{}", dir.display())).args(["1", "100", "0"]),
        LIMIT,
    );
    assert!(out
        .stderr
        .contains(": EISDIR, is a directory; not logging\n"));
    // abort_conf:true makes it fatal, before the program runs.
    let out = run(
        preloaded(&prog, &format!("abort_conf:true,log:{}", missing.display()))
            .args(["1", "100", "0"]),
        LIMIT,
    );
    assert_eq!(out.signal(), Some(libc::SIGABRT));
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
    assert!(out.stderr.ends_with("abort_conf:true; aborting\n"));
    // A file that cannot be written: one line, then the program runs on unlogged.
    let out = run(
        preloaded(&prog, "log:/dev/full").args(["2", "3000", "1"]),
        LIMIT,
    );
    out.assert_success("/dev/full");
    assert!(out.stdout.ends_with("log_calls: ok\n"));
    assert_eq!(
        out.stderr,
        "alloclab: log /dev/full: cannot write: ENOSPC, no space left on device; logging \
         stops\n"
    );
    // Bad values are bad entries.
    for (entry, why) in [
        ("log:", "empty path"),
        ("log:a%d", "a % other than %p (the pid) or %% (a %)"),
    ] {
        let out = run(preloaded(&prog, entry).args(["1", "100", "0"]), LIMIT);
        out.assert_success(entry);
        assert_eq!(
            out.stderr,
            format!(
                "alloclab: ALLOCLAB_CONF entry '{entry}': {why} (expected off|path); ignored\n"
            )
        );
    }
}

#[test]
fn the_call_that_starts_the_heap_is_logged() {
    // Another preloaded library whose constructor runs before liballoclab.so's: its malloc is
    // the process's first call into the library, the one that chooses the heap.
    let dir = scratch("log-first");
    let src = dir.join("early.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n\
         static void *block;\n\
         __attribute__((constructor)) static void early(void) { block = malloc(28673); }\n\
         __attribute__((destructor)) static void late(void) { free(block); }\n",
    )
    .unwrap();
    let lib = dir.join(format!("libearly-{}.so", std::process::id()));
    cc(
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            lib.as_os_str(),
        ],
        &[],
    );
    let log = dir.join("first.log");
    fresh(&log);
    let mut cmd = Command::new("/bin/true");
    let preload = format!("{} {}", so().display(), lib.display());
    cmd.env("LD_PRELOAD", preload)
        .env("ALLOCLAB_CONF", format!("log:{}", log.display()));
    run(&mut cmd, LIMIT).assert_success("early constructor");
    let text = read(&log);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.contains(" malloc(28673)=0x"), "first line: {first:?}");
    let t = parse_pid(&text, pids(&text)[0]);
    assert_eq!(t.live_at_end, 0, "{text}");
}

// ---- real programs ----------------------------------------------------------------------------

/// Live blocks in one statistics report: bins' live regions, large allocations not freed,
/// live huge allocations.
fn live_in_report(lines: &[&str]) -> u64 {
    let mut live = 0;
    for line in lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let Some(rest) = line.strip_prefix("large: ") {
            // "N live bytes, A allocations, F frees; huge: H live (B bytes), ..."
            let r: Vec<&str> = rest.split_whitespace().collect();
            let allocations: u64 = r[3].parse().unwrap();
            let frees: u64 = r[5].parse().unwrap();
            let huge: u64 = r[8].parse().unwrap();
            live += allocations - frees + huge;
        } else if w.len() == 6 && w.iter().all(|x| x.parse::<u64>().is_ok()) {
            live += w[3].parse::<u64>().unwrap();
        }
    }
    live
}

/// Each statistics report of `stderr`: pid and live blocks.
fn reports(stderr: &str) -> Vec<(u64, u64)> {
    let lines: Vec<&str> = stderr.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(title) = line.strip_prefix("___ alloclab statistics: pid ") else {
            continue;
        };
        let pid = title.split(' ').next().unwrap().parse().unwrap();
        let end = lines[i + 1..]
            .iter()
            .position(|l| l.starts_with("___ "))
            .map_or(lines.len(), |n| i + 1 + n);
        out.push((pid, live_in_report(&lines[i + 1..end])));
    }
    out
}

/// Runs `cmd` in `dir` logging to `log` with `stats_print:true`; checks that every process's
/// log parses strictly and that, where the heap printed statistics at exit (marked in the log
/// by a `jemalloc_stats()` line), the blocks the log leaves live there are the heap's.
fn record_real(name: &str, mut cmd: Command, dir: &Path) -> String {
    let log = dir.join("real.log");
    fresh(&log);
    cmd.current_dir(dir)
        .env("LC_ALL", "C")
        .env("HOME", dir)
        .env("LD_PRELOAD", so())
        .env(
            "ALLOCLAB_CONF",
            format!("log:{},stats_print:true", log.display()),
        );
    let out = run(&mut cmd, LIMIT);
    out.assert_success(name);
    let text = read(&log);
    let reports = reports(&out.stderr);
    assert!(!reports.is_empty(), "{name}: no statistics");
    for &pid in &pids(&text) {
        let t = parse_pid(&text, pid);
        assert!(t.allocator_calls() > 0);
    }
    for &(pid, heap_live) in &reports {
        // The log up to this process's marker: the calls before the snapshot.
        let mut upto = String::new();
        let mut marked = false;
        for line in text.lines() {
            upto.push_str(line);
            upto.push('\n');
            if line.starts_with(&format!("{pid} ")) && line.ends_with(" jemalloc_stats()") {
                marked = true;
                break;
            }
        }
        assert!(
            marked,
            "{name}: pid {pid} printed statistics, the log has no marker"
        );
        let t = parse_pid(&upto, pid);
        assert_eq!(
            t.live_at_end, heap_live,
            "{name}: pid {pid}: the log leaves {} blocks live at exit, the heap has {heap_live}",
            t.live_at_end
        );
    }
    let most = pids(&text)
        .iter()
        .map(|&pid| parse_pid(&text, pid).allocator_calls())
        .max();
    assert!(most > Some(10_000), "{name}: few calls logged: {most:?}");
    text
}

fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

#[test]
fn python3_log_agrees_with_the_heap() {
    let dir = scratch("log-python3");
    std::fs::copy(programs_dir().join("stdlib.py"), dir.join("stdlib.py")).unwrap();
    let mut c = Command::new("/usr/bin/python3");
    c.args(["-s", "-B", "stdlib.py"])
        .env("PYTHONMALLOC", "malloc")
        .env("PYTHONHASHSEED", "0");
    let text = record_real("python3", c, &dir);
    // stdlib.py runs 8 threads.
    let t = parse_pid(&text, pids(&text)[0]);
    assert!(t.threads.len() >= 9, "{:?}", t.threads);
}

#[test]
fn gcc_log_has_each_process_agreeing_with_its_heap() {
    let dir = scratch("log-gcc");
    std::fs::copy(
        programs_dir().join("compile_me.c"),
        dir.join("compile_me.c"),
    )
    .unwrap();
    let mut c = Command::new("/usr/bin/gcc");
    c.args(["-O2", "-c", "compile_me.c", "-o", "compile_me.o"]);
    let text = record_real("gcc", c, &dir);
    // The driver, cc1 and as.
    assert!(pids(&text).len() >= 3, "{:?}", pids(&text));
}
