//! An arena's mailbox: per thread-cache class, a lock-free stack of blocks taken from the
//! arena's runs that thread caches handed back (a flush under `RemoteFree::MAILBOX`), which
//! the next fill of that class from the arena takes before its runs.
//!
//! Blocks are linked through their first word, as on a cache's stack, and keep the cache's
//! mark in their second, so a free of a block in a mailbox is refused as a double free, as one
//! in a cache is. A pusher links a whole chain and publishes it with one compare-exchange
//! (release); a taker takes the whole stack with one swap (acquire) and walks it. There is no
//! single-block pop, so a head that was taken and pushed again between a pusher's load and its
//! compare-exchange (ABA) is harmless: the pusher's chain is linked to whatever the head is
//! when its compare-exchange succeeds.
//!
//! Each class counts its blocks, for the bound and the statistics: a pusher adds its count
//! before it publishes and a taker subtracts what it walked after, so the count is never
//! below what the stack holds (it is above it while a push is in flight).

use crate::meta::size_class::NCACHE;
use crate::platform::sync::untracked::AtomicUsize as Count;
use crate::platform::sync::AtomicUsize;
use crate::platform::sync::Ordering::{Acquire, Relaxed, Release};

/// One class's stack.
struct Slot {
    /// The top block (0: empty). Tracked under loom: the models explore its protocol.
    head: AtomicUsize,
    /// Blocks on the stack, or about to be (see the module's comment).
    count: Count,
}

/// An arena's mailboxes, one per thread-cache class.
pub(crate) struct Mailbox {
    slots: [Slot; NCACHE],
}

impl Mailbox {
    pub(crate) fn new() -> Mailbox {
        Mailbox {
            slots: core::array::from_fn(|_| Slot {
                head: AtomicUsize::new(0),
                count: Count::new(0),
            }),
        }
    }

    /// Pushes the chain `first ..= last` of `n` blocks of class `idx` (each block's first word
    /// links the next; `last`'s is overwritten), unless the class already holds `limit`
    /// blocks or more: then nothing is done and it returns false.
    ///
    /// # Safety
    /// The chain's blocks are taken from this arena's runs, of class `idx`, carry the cache's
    /// mark, and belong to the caller, which gives them up.
    pub(crate) unsafe fn push(
        &self,
        idx: usize,
        first: usize,
        last: usize,
        n: usize,
        limit: usize,
    ) -> bool {
        let slot = &self.slots[idx];
        if slot.count.load(Relaxed) >= limit {
            return false;
        }
        slot.count.fetch_add(n, Relaxed);
        let mut head = slot.head.load(Relaxed);
        loop {
            // SAFETY: per the contract, `last` is ours until the chain is published.
            unsafe { (last as *mut usize).write(head) };
            // Release: a taker that sees the chain sees its links.
            match slot
                .head
                .compare_exchange_weak(head, first, Release, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => head = now,
            }
        }
    }

    /// Takes the whole stack of class `idx`: its top block (0 if empty). The caller walks it
    /// (each block's first word links the next, 0 ends it) and then calls `taken` with the
    /// number of blocks it walked.
    pub(crate) fn take(&self, idx: usize) -> usize {
        // Acquire: pairs with the pushers' release, so their links are visible.
        self.slots[idx].head.swap(0, Acquire)
    }

    /// Says that `n` blocks taken from class `idx` have left the mailbox.
    pub(crate) fn taken(&self, idx: usize, n: usize) {
        self.slots[idx].count.fetch_sub(n, Relaxed);
    }

    /// Blocks of class `idx` in the mailbox, or about to be (for statistics).
    pub(crate) fn held(&self, idx: usize) -> usize {
        self.slots[idx].count.load(Relaxed)
    }
}
