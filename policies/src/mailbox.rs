//! `Mailbox`: a thread cache hands the blocks it flushes to their arenas' mailboxes, one
//! lock-free list per arena and class, which the next fill of that class from the arena
//! takes before its runs: a message passed to the arena's threads, as mimalloc's remote frees
//! (`free.c`, a page's `xthread_free` list) and snmalloc's message queues are. A block freed by
//! another thread then reaches the allocating thread without a lock or its run's bitmap. A
//! mailbox holds at most an eighth of the cache's bound per class; past it, a flush gives its
//! blocks back to their runs as `FlushToRuns` does. With `tcache_check:light` (whose pushes
//! are not fully checked) every flush goes to the runs, which check each block again.

use alloclab_core::RemoteFree;

/// Flushed blocks go to their arenas' mailboxes, lock-free.
pub struct Mailbox;

impl RemoteFree for Mailbox {
    const NAME: &'static str = "mailbox";
    const MAILBOX: bool = true;
}
