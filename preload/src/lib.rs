//! # liballoclab.so: alloclab as a drop-in C allocator
//!
//! `LD_PRELOAD=target/release/liballoclab.so program` runs an unmodified program on an alloclab
//! heap whose policies `ALLOCLAB_CONF` chooses at start-up (`ALLOCLAB_CONF=help` lists them).
//!
//! ## Files, one concern each (each uses only the ones above it)
//!
//! | file | owns |
//! |---|---|
//! | `line.rs` | one-line messages to stderr without allocating |
//! | `env.rs` | finding `ALLOCLAB_CONF` without allocating, even before libc sets `environ` |
//! | `select.rs` | the monomorphized heaps of the catalogue's policies and the table of operations of the chosen one |
//! | `options.rs` | the option table: keys, values, defaults, help, how each value applies |
//! | `parse.rs` | `ALLOCLAB_CONF` parsing, bad-entry messages, `help` text |
//! | `log_line.rs` | one line of the allocation log (logalloc's format), without allocating |
//! | `log_sink.rs` | the allocation log's buffer and file: lock, flushes, fork, exit |
//! | `init.rs` | start-up, fork handlers, statistics at exit |
//! | `entry.rs` | C semantics of each entry point (`errno`, alignment rules, overflow) |
//! | `log.rs` | each entry point plus its line in the allocation log (`log:`) |
//! | `cxx.rs` | C++ `operator new`/`delete`: new-handler, `std::bad_alloc`, sized checks |
//! | `installer.rs` | which heap a library builds: the `ALLOCLAB_CONF` selection, or one config |
//! | `exports.rs` | the `export!` macro: the exported symbols, one line each, and the hooks |
//! | `alloc_count.rs` | unit tests only: counts allocations, to prove parsing makes none |
//!
//! ## Rules
//!
//! - Nothing allocates through anything while initializing or holding a lock: the engine maps
//!   its memory, messages are written with `write(2)` from stack buffers.
//! - Thread identity and thread exit are the engine's (a const thread-local without `Drop`, a
//!   `pthread_key_create` destructor): no Rust runtime facility that allocates is used.
//! - The release profile aborts on panic; the C entry points cannot unwind.

#![deny(unsafe_op_in_unsafe_fn)]
// The unit-test binary leaves the exported symbols out (below), so their callees look unused.
#![cfg_attr(test, allow(dead_code))]

mod entry;
mod env;
#[doc(hidden)]
pub mod init;
#[doc(hidden)]
pub mod installer;
mod line;
#[doc(hidden)]
pub mod log;
mod log_line;
mod log_sink;
#[doc(hidden)]
pub mod options;
mod parse;
#[doc(hidden)]
pub mod select;

// x86-64 only: the throwing `new` is a few lines of assembly (`cxx.rs`).
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub mod cxx;
mod exports;

#[cfg(test)]
mod alloc_count;
