//! What the debug and hardening checks cost: instructions per `malloc` + `free` pair, counted
//! by callgrind (exact and repeatable on a noisy shared machine, unlike a timer), for the same
//! heap and workload with:
//!
//! - the checks compiled out (`Config::DEBUG = DebugCaps::NONE`, the default);
//! - the checks compiled in and off (`DebugCaps::ALL`, `Safety::OFF`: what liballoclab.so's
//!   heaps are when no profile is chosen);
//! - poisoning `some` (256 bytes) and `all` (filled on free, checked when the region is handed
//!   out again), junk, canaries, and the hardened and debug profiles;
//! - sampled guarded allocations at 1 in 16384, 1000, 100 and 1, and once per millisecond
//!   (callgrind counts user-space instructions: the `mprotect` calls of sampled allocations
//!   and frees are counted as the instructions that make them, not the kernel's work).
//!
//! `cargo bench -p alloclab-bench --bench debug_cost` runs this program under
//! `valgrind --tool=callgrind --toggle-collect=*measured*` once per setting and iteration count
//! (two counts: their difference cancels set-up and warm-up) and prints a table;
//! `debug_cost <setting> <iterations>` is one measured run. Same workload as the dispatch
//! benchmark of liballoclab.so: a ring of 256 live blocks, each step frees the oldest and
//! allocates a size from a fixed cycle, mostly small.

use alloclab::policies::configs::Checked;
use alloclab::policies::{Lifo, ThreadLocal};
use alloclab::{Config, Heap, Options, Poison, Safety};
use std::hint::black_box;
use std::process::Command;

const ITERATIONS: usize = 100_000;
const RING: usize = 256;
const SIZES: [usize; 16] = [
    8, 24, 16, 48, 32, 100, 64, 200, 16, 40, 500, 24, 1000, 72, 2000, 128,
];

/// LIFO, thread-local arenas, checks compiled out.
struct Plain;
impl Config for Plain {
    type Reuse = Lifo;
    type Arenas = ThreadLocal;
    type Front = alloclab::policies::NoCache;
    const NAME: &'static str = "plain";
}

/// The settings measured: name, and the options of a `Heap<Checked>` (`None`: `Heap<Plain>`).
fn settings() -> Vec<(&'static str, Option<Safety>)> {
    let with = |f: fn(&mut Safety)| {
        let mut s = Safety::OFF;
        f(&mut s);
        Some(s)
    };
    vec![
        ("compiled out", None),
        ("compiled in, off", Some(Safety::OFF)),
        (
            "poison:some (256 B)",
            with(|s| s.poison = Poison::Some(256)),
        ),
        ("poison:all", with(|s| s.poison = Poison::All)),
        ("zero:true", with(|s| s.zero = true)),
        ("junk:true", with(|s| s.junk = true)),
        ("canary:true", with(|s| s.canary = true)),
        ("profile:hardened", Some(Safety::HARDENED)),
        ("profile:debug", Some(Safety::DEBUG)),
        ("sample:16384", with(|s| s.sample = 16384)),
        ("sample:1000", with(|s| s.sample = 1000)),
        ("sample:100", with(|s| s.sample = 100)),
        ("sample:1", with(|s| s.sample = 1)),
        ("sample_ms:1", with(|s| s.sample_ms = 1)),
    ]
}

#[inline(never)]
fn measured<C: Config>(heap: &Heap<C>, n: usize, ring: &mut [*mut u8; RING]) {
    for i in 0..n {
        let slot = &mut ring[i % RING];
        // SAFETY: every slot holds null or a live block of `heap`.
        unsafe { heap.free(*slot) };
        *slot = heap.malloc(black_box(SIZES[i % SIZES.len()]));
    }
}

fn run<C: Config>(options: Options, n: usize) {
    let heap: Heap<C> = Heap::with_options(options);
    let mut ring = [std::ptr::null_mut(); RING];
    measured(&heap, RING * 4, &mut ring);
    measured(&heap, n, &mut ring);
    for p in ring {
        // SAFETY: live blocks of `heap`, or null.
        unsafe { heap.free(p) };
    }
}

fn one_run(setting: usize, n: usize) {
    match settings()[setting].1 {
        None => run::<Plain>(Options::DEFAULT, n),
        Some(safety) => run::<Checked>(
            Options {
                safety,
                ..Options::DEFAULT
            },
            n,
        ),
    }
}

/// Instructions callgrind counts inside `measured` for one run.
fn callgrind(setting: usize, n: usize) -> Option<u64> {
    let out = std::env::temp_dir().join(format!(
        "alloclab-debug-cost-{setting}-{n}-{}.cg",
        std::process::id()
    ));
    let ok = Command::new("valgrind")
        .args(["--tool=callgrind", "-q", "--toggle-collect=*measured*"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(std::env::current_exe().ok()?)
        .args([setting.to_string(), n.to_string()])
        .status()
        .ok()?
        .success();
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

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let [setting, n] = args.as_slice() {
        one_run(setting.parse().unwrap(), n.parse().unwrap());
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("debug_cost: valgrind is not installed; nothing measured");
        return;
    }
    let (n1, n2) = (ITERATIONS / 2, ITERATIONS);
    println!(
        "instructions per malloc+free pair (callgrind, {} pairs, ring of {RING} live blocks)",
        n2 - n1
    );
    println!(
        "{:<24} {:>10} {:>16}",
        "setting", "per pair", "vs compiled out"
    );
    let mut base = None;
    for (i, (name, _)) in settings().iter().enumerate() {
        let per_pair = (|| {
            let a = callgrind(i, n1)?;
            let b = callgrind(i, n2)?;
            Some((b - a) as f64 / (n2 - n1) as f64)
        })();
        match per_pair {
            Some(v) => {
                let b = *base.get_or_insert(v);
                println!(
                    "{name:<24} {v:>10.2} {:>+9.2} ({:+6.1}%)",
                    v - b,
                    100.0 * (v - b) / b
                );
            }
            None => println!("{name:<24} (callgrind failed)"),
        }
    }
}
