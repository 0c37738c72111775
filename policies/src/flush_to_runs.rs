//! `FlushToRuns`: a thread cache gives the blocks it flushes back to their runs, each arena
//! locked once per flush, as jemalloc's tcache does. A block freed by another thread returns
//! to the threads of its arena through its run: the freeing thread's flush puts it there, the
//! next fill of an allocating thread takes it out again.

use alloclab_core::RemoteFree;

/// Flushed blocks go back to their runs under the arena lock.
pub struct FlushToRuns;

impl RemoteFree for FlushToRuns {
    const NAME: &'static str = "flush";
    const MAILBOX: bool = false;
}
