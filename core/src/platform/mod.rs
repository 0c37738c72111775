//! The platform: the bottom layer, the one door to the kernel and the process.
//!
//! Everything that calls libc or the kernel is here: mappings (`mmap`, `madvise`, `mremap`,
//! `munmap`), the futex, the monotonic clock, writes to fd 2, the CPU count, thread ids,
//! signal handlers and `pthread_atfork`. A layer above that needs the OS asks `os.rs`
//! (or `fault.rs` for signals) and never names `libc` itself, so porting the engine means
//! porting this folder, as mimalloc's `prim/` and snmalloc's `pal/` are ported.
//!
//! It uses nothing of the crate above it.
//!
//! | file | owns |
//! |---|---|
//! | `sync.rs` | atomics, cells, thread-locals, globals: std's, loom's or shuttle's |
//! | `os.rs` | system calls, clock, stderr, CPU count, thread ids |
//! | `lock.rs` | `RawLock` (a futex lock, fork-friendly) and `CountedLock` (one that counts) |
//! | `report.rs` | messages and fatal errors without allocating |
//! | `fault.rs` | the SIGSEGV/SIGBUS handler that explains a fault in a guard page |
//! | `error.rs` | `FreeError`: why a pointer cannot be freed |
//! | `seeded.rs` | the seeded bugs' switch (verification builds only) |

pub mod error;
pub mod fault;
pub mod lock;
pub mod os;
pub mod report;
#[cfg(alloclab_seeded)]
pub mod seeded;
pub mod sync;
