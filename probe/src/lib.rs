//! Time spent inside an allocator, per thread and per kind of call, with a latency histogram
//! per kind: what the thread-arena seed measured ("time in malloc per worker thread"), for any
//! allocator.
//!
//! Two users share this recorder:
//! - `liballoclab_probe.so` (`probe/so`), preloaded in front of any allocator (glibc, a
//!   peer's `.so`, liballoclab.so), which forwards every entry point to the next definition
//!   (`dlsym(RTLD_NEXT)`) and times it; it writes its figures to a file at thread and process
//!   exit ([`dump`]).
//! - the in-process subjects of `compare`, whose calls the measuring child times through the
//!   same [`record::timed`] and reads back directly ([`record::snapshot`]).
//!
//! Nothing on the recording side allocates through the allocator it measures: thread records
//! are anonymous mappings, the dump writes from a stack buffer with `write(2)`, and a call
//! made while the probe is already inside a call on this thread (the C++ `operator new` that
//! calls `malloc`, a `dlsym` that allocates) is forwarded without being counted. Reading the
//! figures back ([`summary`]) is ordinary Rust and runs outside the measured part.
//!
//! | file | what |
//! |---|---|
//! | `histogram.rs` | log-linear latency buckets (128 per power of two: under 0.8% relative width) |
//! | `clock.rs` | the time stamp (TSC when the kernel uses it, else `CLOCK_MONOTONIC`) and the probe's own cost |
//! | `record.rs` | per-thread records, call kinds, `timed` |
//! | `fatal.rs` | a line on standard error and abort, without allocating |
//! | `dump.rs` | the text file the `.so` writes, and its reader |
//! | `summary.rs` | per-thread totals, percentiles, the probe's cost subtracted |

pub mod clock;
pub mod dump;
pub mod fatal;
pub mod histogram;
pub mod record;
pub mod summary;

pub use record::{timed, Kind};
pub use summary::Summary;
