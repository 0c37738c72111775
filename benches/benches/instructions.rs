//! The instruction budget: instructions per `malloc` + `free` pair, counted by callgrind, for
//! liballoclab.so's default config (`lifo-tcache`) and for mimalloc (libmimalloc-sys), in the
//! same run, at 16, 64, 256, 1024 and 4096 bytes, with the free on the allocating thread
//! (`local`) and on another thread (`cross`). Prints each ratio and fails (exit status 1) when
//! one is above its budget in `benches/instructions.budget`.
//!
//! `cargo bench -p alloclab-bench --bench instructions` runs this program under
//! `valgrind --tool=callgrind --toggle-collect=<measured function>` once per case, twice with
//! different pair counts: the difference of the two counts cancels everything that does not
//! repeat per pair (start-up, the warm-up, the first fills). An empty loop of the same shape is
//! counted the same way and subtracted, so a figure is the allocator's own instructions per
//! pair, its call and return included. `instructions <subject> <mode> <size> <pairs>` is one
//! counted run.
//!
//! Both allocators are called out of line, as a C program calls `malloc`: mimalloc through its
//! static library's `mi_malloc` / `mi_free`, alloclab through one `#[inline(never)]` function
//! per operation over a `static Heap<LifoTcache>` (what `export!(LifoTcache)` would ship,
//! without liballoclab.so's run-time table, whose cost `cargo bench -p alloclab-preload --bench
//! dispatch` measures).
//!
//! - `local`: `free(malloc(size))`, again and again: the thread cache's (and mimalloc's page
//!   free list's) fast paths.
//! - `cross`: the main thread allocates 64 blocks, hands them to a second thread, which frees
//!   them and hands the empty batch back; the two alternate. A pair is one `malloc` on the first
//!   thread plus one `free` on the second, with whatever refills and flushes (alloclab) or
//!   remote frees and their collection (mimalloc) that costs on average.

use alloclab::configs::{LifoTcache, LifoTcacheMailbox};
use alloclab::Heap;
use std::hint::black_box;
use std::process::{Command, ExitCode};
use std::sync::mpsc;

const SIZES: [usize; 5] = [16, 64, 256, 1024, 4096];
/// The two pair counts of each case; their difference is what is counted.
const PAIRS: (usize, usize) = (20_000, 40_000);
/// Pairs run before the measured ones: caches, runs and pages exist.
const WARM_UP: usize = 4096;
/// Blocks per hand-over in `cross`.
const BATCH: usize = 64;

/// An allocator called out of line.
trait Alloc {
    fn malloc(size: usize) -> *mut u8;
    /// # Safety
    /// `p` came from `malloc` of the same allocator and is not used afterwards.
    unsafe fn free(p: *mut u8);
}

static HEAP: Heap<LifoTcache> = Heap::new();

struct Alloclab;
impl Alloc for Alloclab {
    #[inline(never)]
    fn malloc(size: usize) -> *mut u8 {
        HEAP.malloc(size)
    }
    #[inline(never)]
    unsafe fn free(p: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { HEAP.free(p) }
    }
}

static MAILED: Heap<LifoTcacheMailbox> = Heap::new();

/// `lifo-tcache-mailbox`: the same heap with the `Mailbox` remote-free policy.
struct AlloclabMailbox;
impl Alloc for AlloclabMailbox {
    #[inline(never)]
    fn malloc(size: usize) -> *mut u8 {
        MAILED.malloc(size)
    }
    #[inline(never)]
    unsafe fn free(p: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { MAILED.free(p) }
    }
}

struct Mimalloc;
impl Alloc for Mimalloc {
    #[inline(always)]
    fn malloc(size: usize) -> *mut u8 {
        // SAFETY: mi_malloc has no preconditions.
        unsafe { libmimalloc_sys::mi_malloc(size).cast() }
    }
    #[inline(always)]
    unsafe fn free(p: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { libmimalloc_sys::mi_free(p.cast()) }
    }
}

/// The loop alone: what is subtracted.
struct Empty;
impl Alloc for Empty {
    #[inline(always)]
    fn malloc(size: usize) -> *mut u8 {
        black_box(size);
        black_box(core::ptr::NonNull::<u8>::dangling().as_ptr())
    }
    #[inline(always)]
    unsafe fn free(p: *mut u8) {
        black_box(p);
    }
}

// ---- the counted loops (callgrind collects inside `measured_*` only) --------------------------

#[inline(never)]
fn measured_local<A: Alloc>(size: usize, n: usize) {
    for _ in 0..n {
        let p = A::malloc(black_box(size));
        // SAFETY: just allocated, freed once.
        unsafe { A::free(black_box(p)) };
    }
}

#[inline(never)]
fn measured_alloc_batch<A: Alloc>(size: usize, batch: &mut Vec<*mut u8>, k: usize) {
    for _ in 0..k {
        batch.push(A::malloc(black_box(size)));
    }
}

#[inline(never)]
fn measured_free_batch<A: Alloc>(batch: &mut Vec<*mut u8>) {
    while let Some(p) = batch.pop() {
        // SAFETY: allocated by the other thread, handed over, freed once.
        unsafe { A::free(black_box(p)) };
    }
}

struct Batch(Vec<*mut u8>);
// SAFETY: the blocks are plain memory handed from one thread to the other; only the receiver
// touches them.
unsafe impl Send for Batch {}

fn run_local<A: Alloc>(size: usize, n: usize) {
    measured_local::<A>(size, WARM_UP);
    measured_local::<A>(size, n);
}

fn run_cross<A: Alloc>(size: usize, n: usize) {
    let (to_free, freeing) = mpsc::sync_channel::<Batch>(1);
    let (to_fill, filling) = mpsc::sync_channel::<Batch>(1);
    let freer = std::thread::spawn(move || {
        while let Ok(Batch(mut b)) = freeing.recv() {
            measured_free_batch::<A>(&mut b);
            if to_fill.send(Batch(b)).is_err() {
                break;
            }
        }
    });
    let mut batch = Vec::with_capacity(BATCH);
    let mut left = WARM_UP + n;
    while left > 0 {
        let k = left.min(BATCH);
        measured_alloc_batch::<A>(size, &mut batch, k);
        left -= k;
        to_free.send(Batch(batch)).unwrap();
        batch = filling.recv().unwrap().0;
    }
    drop(to_free);
    freer.join().unwrap();
}

fn one_run(subject: &str, mode: &str, size: usize, n: usize) {
    match (subject, mode) {
        ("alloclab", "local") => run_local::<Alloclab>(size, n),
        ("mimalloc", "local") => run_local::<Mimalloc>(size, n),
        ("empty", "local") => run_local::<Empty>(size, n),
        ("alloclab", "cross") => run_cross::<Alloclab>(size, n),
        ("alloclab-mailbox", "cross") => run_cross::<AlloclabMailbox>(size, n),
        ("mimalloc", "cross") => run_cross::<Mimalloc>(size, n),
        ("empty", "cross") => run_cross::<Empty>(size, n),
        _ => panic!("usage: instructions alloclab|alloclab-mailbox|mimalloc|empty local|cross <size> <pairs>"),
    }
}

// ---- the orchestration ------------------------------------------------------------------------

/// Instructions callgrind counts inside the `measured_*` functions of one run.
fn count(subject: &str, mode: &str, size: usize, n: usize) -> Result<u64, String> {
    let out = std::env::temp_dir().join(format!(
        "alloclab-instr-{subject}-{mode}-{size}-{n}-{}.cg",
        std::process::id()
    ));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new("valgrind")
        .args(["--tool=callgrind", "-q", "--toggle-collect=*measured_*"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args([subject, mode, &size.to_string(), &n.to_string()])
        .status()
        .map_err(|e| format!("valgrind: {e}"))?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return Err(format!("{subject} {mode} {size}: {status}"));
    }
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary: ")
                .or_else(|| l.strip_prefix("totals: "))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("{subject} {mode} {size}: no totals in the callgrind file"))
}

/// Instructions per pair (the difference of the two pair counts over their difference).
fn per_pair(subject: &str, mode: &str, size: usize) -> Result<f64, String> {
    let a = count(subject, mode, size, PAIRS.0)?;
    let b = count(subject, mode, size, PAIRS.1)?;
    Ok((b as f64 - a as f64) / (PAIRS.1 - PAIRS.0) as f64)
}

/// The budget: `mode size max_ratio` lines (`#` starts a comment).
fn budget() -> Result<Vec<(String, usize, f64)>, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/instructions.budget");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = || format!("{path}:{}: expected `mode size max_ratio`", i + 1);
        let mut w = line.split_whitespace();
        let (Some(mode), Some(size), Some(max), None) = (w.next(), w.next(), w.next(), w.next())
        else {
            return Err(bad());
        };
        v.push((
            mode.to_string(),
            size.parse().map_err(|_| bad())?,
            max.parse().map_err(|_| bad())?,
        ));
    }
    Ok(v)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let [subject, mode, size, n] = args.as_slice() {
        one_run(subject, mode, size.parse().unwrap(), n.parse().unwrap());
        return ExitCode::SUCCESS;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("instructions: valgrind is not installed; nothing measured");
        return ExitCode::FAILURE;
    }
    let budget = match budget() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("instructions: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "instructions per malloc + free pair (callgrind, {} pairs, empty loop subtracted)",
        PAIRS.1 - PAIRS.0
    );
    println!(
        "{:<6} {:>5} {:>10} {:>10} {:>7} {:>7}  verdict",
        "mode", "size", "alloclab", "mimalloc", "ratio", "budget"
    );
    let mut failed = Vec::new();
    // `cross-mailbox`: the cross shape with `lifo-tcache-mailbox` as alloclab.
    for row in ["local", "cross", "cross-mailbox"] {
        let (mode, alloclab) = match row {
            "cross-mailbox" => ("cross", "alloclab-mailbox"),
            _ => (row, "alloclab"),
        };
        let empty = match per_pair("empty", mode, 16) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("instructions: {e}");
                return ExitCode::FAILURE;
            }
        };
        for size in SIZES {
            let (a, m) = match (
                per_pair(alloclab, mode, size),
                per_pair("mimalloc", mode, size),
            ) {
                (Ok(a), Ok(m)) => (a - empty, m - empty),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("instructions: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let ratio = a / m;
            let max = budget
                .iter()
                .find(|(bm, bs, _)| bm == row && *bs == size)
                .map(|b| b.2);
            let verdict = match max {
                None => "no budget".to_string(),
                Some(max) if ratio <= max => "ok".to_string(),
                Some(max) => {
                    failed.push(format!("{row} {size}: {ratio:.3} > {max}"));
                    "OVER BUDGET".to_string()
                }
            };
            let max = max.map_or("-".to_string(), |m| format!("{m:.2}"));
            println!("{row:<6} {size:>5} {a:>10.2} {m:>10.2} {ratio:>7.3} {max:>7}  {verdict}");
        }
        println!("{row:<6} (empty loop: {empty:.2} per pair, subtracted)");
    }
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!("instructions: over budget: {}", failed.join("; "));
    ExitCode::FAILURE
}
