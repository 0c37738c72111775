//! The programs `--programs` runs: the installed ones with what they are fed, and the
//! start-up program compiled for the run.

use super::compile::compile_c;
use std::path::{Path, PathBuf};

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

pub(super) fn programs(quick: bool) -> Vec<Program> {
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
pub(super) fn select_programs(
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

#[cfg(test)]
mod tests {
    use super::{select_programs, Program};

    fn names(programs: &[Program]) -> Vec<&str> {
        programs.iter().map(|p| p.name.as_str()).collect()
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
}
