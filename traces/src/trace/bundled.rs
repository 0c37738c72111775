//! Traces shipped with alloclab (in `traces/`, compiled into the library so that `alloclab
//! replay` works from any directory on a fresh checkout). `traces/README.md` says how each was
//! made; `tests/trace_bundled.rs` checks that the command given here remakes it exactly.

use super::{read, ParseOptions, Trace, TraceError};

/// A trace shipped with alloclab.
#[derive(Clone, Copy, Debug)]
pub struct Bundled {
    /// Path in the repository.
    pub path: &'static str,
    /// The file's bytes (compressed).
    pub bytes: &'static [u8],
    /// Whether the trace was generated (`alloclab generate`) rather than recorded from a
    /// program.
    pub synthetic: bool,
    /// The command that made it, run from the repository's root.
    pub made_by: &'static str,
}

impl Bundled {
    /// Decompresses and parses the trace.
    pub fn parse(&self, options: &ParseOptions) -> Result<Trace, TraceError> {
        read(self.bytes, options)
    }
}

/// Synthetic: the run-reuse study's premise (bursts of same-size objects built up and torn
/// down together, among long-lived objects), two threads.
pub const SYNTHETIC_BURSTS: Bundled = Bundled {
    path: "traces/synthetic-bursts.log.zst",
    bytes: include_bytes!("../../synthetic-bursts.log.zst"),
    synthetic: true,
    made_by: "alloclab generate --seed 1 --bursts 300 --threads 2 --stats-every 100000 \
              --output traces/synthetic-bursts.log.zst",
};

/// A trace recorded from a real program by `traces/record.sh <program>`.
macro_rules! recorded {
    ($file:literal, $program:literal) => {
        Bundled {
            path: concat!("traces/", $file),
            bytes: include_bytes!(concat!("../../", $file)),
            synthetic: false,
            made_by: concat!("traces/record.sh ", $program),
        }
    };
}

/// Recorded from python3 (`PYTHONMALLOC=malloc`) running a standard-library-heavy script on 5
/// threads (`traces/inputs/workload.py`).
pub const PYTHON3_STDLIB: Bundled = recorded!("python3-stdlib.log.zst", "python3");

/// Recorded from lua5.4 (`traces/inputs/workload.lua`); Lua allocates through `realloc` only.
pub const LUA54: Bundled = recorded!("lua5.4.log.zst", "lua5.4");

/// Recorded from sqlite3 building and querying a database (`traces/inputs/workload.sql`).
pub const SQLITE3: Bundled = recorded!("sqlite3.log.zst", "sqlite3");

/// Recorded from gcc's cc1 compiling `traces/inputs/workload.c` at `-O2 -g`.
pub const GCC_CC1: Bundled = recorded!("gcc-cc1.log.zst", "gcc");

/// Every bundled trace.
pub const ALL: &[Bundled] = &[PYTHON3_STDLIB, LUA54, SQLITE3, GCC_CC1, SYNTHETIC_BURSTS];

/// The trace `alloclab replay` replays when given none: python3's, the most varied of the
/// recorded ones (malloc, calloc, realloc and free on 5 threads) and the one whose final heap
/// differs most between the run-reuse policies.
pub const DEFAULT: &Bundled = &PYTHON3_STDLIB;
