//! What run-time selection costs: instructions per `malloc` + `free` pair through the table
//! that liballoclab.so dispatches on (`select.rs`, compiled here as it is) against the same
//! `Heap<C>` chosen at compile time. Counted by callgrind, which is exact and repeatable on a
//! noisy shared machine, unlike a timer.
//!
//! Three ways to call the same heap, the same workload:
//! - `inlined`: `Heap<C>` called in the loop, inlined and optimized together with it (what a
//!   Rust program with `#[global_allocator]` gets);
//! - `fixed`: one out-of-line function per operation over a `static Heap<C>` (what a C library
//!   built for one configuration would be: C programs call `malloc` through the PLT, never
//!   inlined);
//! - `runtime`: the table of liballoclab.so: one load of the published table and an indirect
//!   call per operation.
//!
//! `cargo bench -p alloclab-preload --bench dispatch` runs this program under
//! `valgrind --tool=callgrind --toggle-collect=<measured function>` once per configuration and
//! mode, twice with different iteration counts (their difference cancels set-up and warm-up),
//! and prints a table. `dispatch <mode> <config> <iterations>` is one measured run.
//!
//! A second table counts the whole C call: `benches/driver.c` (the same workload in C, built
//! with `cc -O2 -fno-builtin`) on glibc and on the release liballoclab.so under several
//! `ALLOCLAB_CONF`s: what an unmodified program pays per `malloc` + `free` pair, `errno`
//! handling and PLT included. Its last row logs every call (`log:<file>`): what recording a
//! trace costs per pair (two lines formatted and appended under the log's lock, the writes
//! amortized over 64 KiB); every other row has logging off, where it costs one load and one
//! branch per call.

#[path = "../src/select.rs"]
#[allow(dead_code)]
mod select;

use alloclab_core::{ArenaChoice, Config, Heap, Options, RunReuse};
use alloclab_policies::{AddrOrdered, CurrentRun, Hashed, Lifo, Mrf, Single, ThreadLocal};
// The run-time table's own heaps (every debug check compiled in, off at run time): the
// compile-time modes use the same type, so the difference is the dispatch alone (what the
// checks cost is `benches/debug_cost.rs`'s question).
use select::Checked;
use select::{Arenas, Ops, Remote, Reuse, Selection};
use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicPtr, Ordering};

const ITERATIONS: usize = 200_000;
/// Live blocks kept while allocating (a ring: each step frees the oldest).
const RING: usize = 256;
/// Request sizes, cycled: mostly small, as in real programs.
const SIZES: [usize; 16] = [
    8, 24, 16, 48, 32, 100, 64, 200, 16, 40, 500, 24, 1000, 72, 2000, 128,
];

// ---- the measured loops ---------------------------------------------------------------------

/// The published table, as `init.rs` keeps it: one acquire load per call.
static OPS: AtomicPtr<Ops> = AtomicPtr::new(std::ptr::null_mut());

#[inline(always)]
fn ops() -> &'static Ops {
    // SAFETY: set by `main` to a table `install` returned (static) before any loop runs.
    unsafe { &*OPS.load(Ordering::Acquire) }
}

/// The ring workload through the run-time table.
#[inline(never)]
fn measured_runtime(n: usize, ring: &mut [*mut u8; RING]) {
    for i in 0..n {
        let slot = &mut ring[i % RING];
        // SAFETY: every slot holds null or a live block of this heap.
        unsafe { (ops().free)(*slot) };
        *slot = (ops().malloc)(black_box(SIZES[i % SIZES.len()]));
    }
}

/// A compile-time heap behind out-of-line functions, as a fixed-configuration C library: with
/// a `calloc` and an aligned entry too, since their presence changes what the compiler inlines
/// into `malloc` (they are referenced, not measured).
trait Fixed {
    fn malloc(size: usize) -> *mut u8;
    fn malloc_zeroed(size: usize) -> *mut u8;
    fn allocate(size: usize, align: usize, zero: bool) -> *mut u8;
    /// # Safety
    /// As for `Heap::free`.
    unsafe fn free(p: *mut u8);
}

macro_rules! fixed {
    ($name:ident, $heap:ident, $c:ty) => {
        static $heap: Heap<$c> = Heap::new();
        struct $name;
        impl Fixed for $name {
            #[inline(never)]
            fn malloc(size: usize) -> *mut u8 {
                $heap.malloc(size)
            }
            #[inline(never)]
            fn malloc_zeroed(size: usize) -> *mut u8 {
                $heap.allocate(size, 16, true)
            }
            #[inline(never)]
            fn allocate(size: usize, align: usize, zero: bool) -> *mut u8 {
                $heap.allocate(size, align, zero)
            }
            #[inline(never)]
            unsafe fn free(p: *mut u8) {
                // SAFETY: forwarded contract.
                unsafe { $heap.free(p) }
            }
        }
    };
}

/// The ring workload through a fixed configuration's out-of-line functions.
#[inline(never)]
fn measured_fixed<F: Fixed>(n: usize, ring: &mut [*mut u8; RING]) {
    for i in 0..n {
        let slot = &mut ring[i % RING];
        // SAFETY: as above.
        unsafe { F::free(*slot) };
        *slot = F::malloc(black_box(SIZES[i % SIZES.len()]));
    }
}

/// The same workload on a `Heap<C>` known at compile time, inlined into the loop.
#[inline(never)]
fn measured_inlined<C: Config>(heap: &Heap<C>, n: usize, ring: &mut [*mut u8; RING]) {
    for i in 0..n {
        let slot = &mut ring[i % RING];
        // SAFETY: as above.
        unsafe { heap.free(*slot) };
        *slot = heap.malloc(black_box(SIZES[i % SIZES.len()]));
    }
}

// ---- configurations -------------------------------------------------------------------------

/// The configurations measured: name, selection for the run-time path.
fn configs() -> [(&'static str, Selection); 4] {
    let sel = |reuse, current_run, arenas| Selection {
        reuse,
        current_run,
        arenas,
        tcache: false,
        remote: Remote::Flush,
        options: Options::DEFAULT,
    };
    [
        ("lifo/thread", sel(Reuse::Lifo, false, Arenas::Thread)),
        ("mrf+current/thread", sel(Reuse::Mrf, true, Arenas::Thread)),
        (
            "addr-ordered+current/single",
            sel(Reuse::AddrOrdered, true, Arenas::Single),
        ),
        ("lifo/hashed", sel(Reuse::Lifo, false, Arenas::Hashed)),
    ]
}

fn run_inlined<R: RunReuse, A: ArenaChoice>(n: usize) {
    let heap: Heap<Checked<R, A>> = Heap::new();
    let mut ring = [std::ptr::null_mut(); RING];
    measured_inlined(&heap, RING * 4, &mut ring); // warm up: runs and arenas exist
    measured_inlined(&heap, n, &mut ring);
    for p in ring {
        // SAFETY: live blocks of `heap`, or null.
        unsafe { heap.free(p) };
    }
}

// One fixed heap per measured configuration (a `static` cannot be generic).
fixed!(Fixed0, HEAP0, Checked<Lifo, ThreadLocal>);
fixed!(Fixed1, HEAP1, Checked<CurrentRun<Mrf>, ThreadLocal>);
fixed!(Fixed2, HEAP2, Checked<CurrentRun<AddrOrdered>, Single>);
fixed!(Fixed3, HEAP3, Checked<Lifo, Hashed>);

fn run_fixed<F: Fixed>(n: usize) {
    // Referenced so that they exist, as they would in a library; never called.
    black_box((
        F::malloc_zeroed as fn(usize) -> *mut u8,
        F::allocate as fn(usize, usize, bool) -> *mut u8,
    ));
    let mut ring = [std::ptr::null_mut(); RING];
    measured_fixed::<F>(RING * 4, &mut ring);
    measured_fixed::<F>(n, &mut ring);
    for p in ring {
        // SAFETY: live blocks of F's heap, or null.
        unsafe { F::free(p) };
    }
}

fn one_run(mode: &str, config: usize, n: usize) {
    let (_, sel) = configs()[config];
    match mode {
        "runtime" => {
            // SAFETY: once in this process, before the table is used.
            let table = unsafe { select::install(&sel) };
            OPS.store(table as *const Ops as *mut Ops, Ordering::Release);
            let mut ring = [std::ptr::null_mut(); RING];
            measured_runtime(RING * 4, &mut ring);
            measured_runtime(n, &mut ring);
            for p in ring {
                // SAFETY: live blocks of the installed heap, or null.
                unsafe { (ops().free)(p) };
            }
        }
        "inlined" => match config {
            0 => run_inlined::<Lifo, ThreadLocal>(n),
            1 => run_inlined::<CurrentRun<Mrf>, ThreadLocal>(n),
            2 => run_inlined::<CurrentRun<AddrOrdered>, Single>(n),
            3 => run_inlined::<Lifo, Hashed>(n),
            _ => unreachable!(),
        },
        "fixed" => match config {
            0 => run_fixed::<Fixed0>(n),
            1 => run_fixed::<Fixed1>(n),
            2 => run_fixed::<Fixed2>(n),
            3 => run_fixed::<Fixed3>(n),
            _ => unreachable!(),
        },
        _ => panic!("mode is runtime, fixed or inlined"),
    }
}

// ---- the orchestration ----------------------------------------------------------------------

/// Runs `cmd` (its program and arguments; valgrind's options are added here) under callgrind,
/// collecting only inside functions matching `toggle`; returns the instructions counted.
fn callgrind_count(
    toggle: &str,
    tag: &str,
    program: &std::path::Path,
    cmd: impl FnOnce(&mut Command),
) -> Option<u64> {
    let out = std::env::temp_dir().join(format!("alloclab-{tag}-{}.cg", std::process::id()));
    let mut c = Command::new("valgrind");
    c.args(["--tool=callgrind", "-q"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(format!("--toggle-collect={toggle}"))
        .arg(program);
    cmd(&mut c);
    let ok = c.status().ok()?.success();
    let text = std::fs::read_to_string(&out).ok()?;
    let _ = std::fs::remove_file(&out);
    if !ok {
        return None;
    }
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary: ")
                .or_else(|| l.strip_prefix("totals: "))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Instructions callgrind counted inside the measured function (inclusive).
fn callgrind(mode: &str, config: usize, n: usize) -> Option<u64> {
    callgrind_count(
        &format!("*measured_{mode}*"),
        &format!("dispatch-{mode}-{config}-{n}"),
        &std::env::current_exe().unwrap(),
        |c| {
            c.args([mode, &config.to_string(), &n.to_string()]);
        },
    )
}

/// Instructions per pair that callgrind counts in `driver` (`conf`: None for glibc).
fn c_driver(driver: &std::path::Path, so: &std::path::Path, conf: Option<String>) -> Option<f64> {
    let count = |n: usize| -> Option<u64> {
        callgrind_count("measured_c", &format!("driver-{n}"), driver, |c| {
            c.arg(n.to_string())
                .env_remove("LD_PRELOAD")
                .env_remove("ALLOCLAB_CONF");
            if let Some(conf) = &conf {
                c.env("LD_PRELOAD", so).env("ALLOCLAB_CONF", conf);
            }
        })
    };
    let (n1, n2) = (ITERATIONS / 2, ITERATIONS);
    Some((count(n2)? - count(n1)?) as f64 / (n2 - n1) as f64)
}

/// Builds the release liballoclab.so next to this benchmark and the C driver; their paths.
fn build_c_side() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let target_dir = profile_dir.parent()?;
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "liballoclab",
            "--target-dir",
        ])
        .arg(target_dir)
        .current_dir(manifest)
        .status()
        .ok()?
        .success();
    let so = target_dir.join("release/liballoclab.so");
    let driver = std::env::temp_dir().join(format!("alloclab-driver-{}", std::process::id()));
    let compiled = Command::new("cc")
        .args(["-O2", "-fno-builtin", "-o"])
        .arg(&driver)
        .arg(manifest.join("benches/driver.c"))
        .status()
        .ok()?
        .success();
    (built && compiled && so.is_file()).then_some((so, driver))
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let [mode, config, n] = args.as_slice() {
        one_run(mode, config.parse().unwrap(), n.parse().unwrap());
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("dispatch: valgrind is not installed; nothing measured");
        return;
    }
    // Each measured run executes the workload twice (warm-up of RING * 4, then n): the
    // difference of two n cancels the warm-up and the set-up exactly.
    let (n1, n2) = (ITERATIONS / 2, ITERATIONS);
    println!(
        "instructions per malloc+free pair (callgrind, {} pairs, ring of {RING} live blocks)",
        n2 - n1
    );
    println!(
        "{:<28} {:>8} {:>8} {:>9} {:>18} {:>18}",
        "config", "inlined", "fixed", "run-time", "run-time - fixed", "run-time - inlined"
    );
    for (i, (name, _)) in configs().iter().enumerate() {
        let per_pair = |mode| -> Option<f64> {
            let a = callgrind(mode, i, n1)?;
            let b = callgrind(mode, i, n2)?;
            Some((b - a) as f64 / (n2 - n1) as f64)
        };
        match (per_pair("inlined"), per_pair("fixed"), per_pair("runtime")) {
            (Some(i), Some(f), Some(r)) => println!(
                "{name:<28} {i:>8.2} {f:>8.2} {r:>9.2} {:>+9.2} ({:+5.1}%) {:>+9.2} ({:+5.1}%)",
                r - f,
                100.0 * (r - f) / f,
                r - i,
                100.0 * (r - i) / i
            ),
            _ => println!("{name:<28} (callgrind failed)"),
        }
    }
    let Some((so, driver)) = build_c_side() else {
        println!("(C driver or release liballoclab.so could not be built: second table skipped)");
        return;
    };
    println!();
    println!("instructions per malloc+free pair from a C program (benches/driver.c, -O2)");
    let log = std::env::temp_dir().join(format!("alloclab-driver-{}.log", std::process::id()));
    for (name, conf) in [
        ("glibc 2.36 (Debian 12)", None),
        (
            "liballoclab.so config:lifo",
            Some("config:lifo".to_string()),
        ),
        (
            "liballoclab.so config:lifo-tcache",
            Some("config:lifo-tcache".to_string()),
        ),
        (
            "liballoclab.so config:mrf-current",
            Some("config:mrf-current".to_string()),
        ),
        (
            "liballoclab.so config:addr-ordered",
            Some("config:addr-ordered".to_string()),
        ),
        (
            "liballoclab.so arenas:single",
            Some("arenas:single".to_string()),
        ),
        (
            "liballoclab.so arenas:hashed",
            Some("arenas:hashed".to_string()),
        ),
        (
            "liballoclab.so config:lifo,log:<file>",
            Some(format!("config:lifo,log:{}", log.display())),
        ),
    ] {
        let _ = std::fs::remove_file(&log);
        match c_driver(&driver, &so, conf) {
            Some(v) => println!("{name:<40} {v:>8.2}"),
            None => println!("{name:<40} (callgrind failed)"),
        }
    }
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&driver);
}
