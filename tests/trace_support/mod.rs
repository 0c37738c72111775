//! Helpers shared by the trace tests (`tests/trace_*.rs`).
#![allow(dead_code)]

use alloclab::generate::{generate, Params};
use alloclab::trace::{self, ParseOptions, Trace};
use std::path::PathBuf;

/// Parses plain text with default options, panicking with the error's message if it fails.
pub fn parse_ok(text: &str) -> Trace {
    trace::parse(text.as_bytes(), &ParseOptions::default())
        .unwrap_or_else(|e| panic!("trace should parse: {e}\n{text}"))
}

/// Generates a trace and returns its text.
pub fn generated(params: &Params) -> String {
    let mut out = Vec::new();
    generate(params, &mut out).expect("generation succeeds");
    String::from_utf8(out).expect("the generator writes ASCII")
}

/// A fresh path in the temporary directory, unique to this process and `name`.
pub fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("alloclab-trace-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir.join(name)
}

/// A raw log of a random program, with addresses from a simple model heap: each address is
/// handed out at most once while live, and freed addresses come back. Several threads, some
/// cross-thread frees, reallocs in place and moving, calloc and aligned calls, free(NULL),
/// and a `jemalloc_stats()` line every 1000 lines.
pub fn random_raw_log(seed: u64, calls: usize, threads: u64) -> String {
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut live: Vec<u64> = Vec::new();
    let mut free_addrs: Vec<u64> = Vec::new();
    let mut top = 0x7f00_0000_0000u64;
    let mut fresh = |free_addrs: &mut Vec<u64>, pick: u64| -> u64 {
        if !free_addrs.is_empty() && pick % 2 == 0 {
            free_addrs.swap_remove((pick as usize / 2) % free_addrs.len())
        } else {
            top += 0x40;
            top
        }
    };
    let mut out = String::new();
    let pid = 4242;
    for call in 0..calls {
        let r = next();
        if call % 1000 == 999 {
            out += &format!("{pid} {pid} jemalloc_stats()\n");
            continue;
        }
        let tid = pid + (r >> 40) % threads;
        let size = 1 + (r >> 20) % 5000;
        match r % 10 {
            0..=3 => {
                let a = fresh(&mut free_addrs, next());
                live.push(a);
                out += &format!("{pid} {tid} malloc({size})=0x{a:x}\n");
            }
            4 => {
                let a = fresh(&mut free_addrs, next());
                live.push(a);
                out += &format!("{pid} {tid} calloc({},{})=0x{a:x}\n", 1 + size % 7, size);
            }
            5 => {
                let a = fresh(&mut free_addrs, next());
                live.push(a);
                let align = 16u64 << ((r >> 50) % 8);
                out += &format!("{pid} {tid} posix_memalign({align},{size})=0x{a:x}\n");
            }
            6 if !live.is_empty() => {
                let i = (next() as usize) % live.len();
                let old = live[i];
                let new = if next() % 2 == 0 {
                    old
                } else {
                    free_addrs.push(old);
                    fresh(&mut free_addrs, 1)
                };
                live[i] = new;
                out += &format!("{pid} {tid} realloc(0x{old:x},{size})=0x{new:x}\n");
            }
            7 => out += &format!("{pid} {tid} free(0x0)\n"),
            _ if !live.is_empty() => {
                let i = (next() as usize) % live.len();
                let a = live.swap_remove(i);
                free_addrs.push(a);
                out += &format!("{pid} {tid} free(0x{a:x})\n");
            }
            _ => out += &format!("{pid} {tid} jemalloc_stats()\n"),
        }
    }
    out
}
