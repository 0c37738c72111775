//! `Mailbox`, the remote-free policy whose flushes go to the arenas' lock-free mailboxes,
//! through a real heap: blocks freed by another thread come back to the allocating thread's
//! fills without passing through their runs, stay refused as freed while they wait, are counted
//! as cached, stay within the mailbox's bound, and go back to their runs when asked.

use alloclab_core::size_class::PAGE;
use alloclab_core::{FreeError, Heap, Options, TcacheCheck};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Mailbox, Single, ThreadCache, ThreadLocal};
use std::collections::BTreeSet;
use std::sync::Arc;

type Mailed = Using<Lifo, ThreadLocal, ThreadCache<{ 1024 * 1024 }, Mailbox>>;

/// Allocates `n` blocks of `size` on this thread, frees them on another, which then exits
/// (its cache's flush hands them to this thread's arena's mailbox); returns their addresses.
fn freed_elsewhere<C: alloclab_core::Config>(
    heap: &Arc<Heap<C>>,
    n: usize,
    size: usize,
) -> BTreeSet<usize> {
    let blocks: Vec<usize> = (0..n).map(|_| heap.malloc(size) as usize).collect();
    assert!(blocks.iter().all(|&p| p != 0));
    // What the fills left on this thread's stack goes back to the runs: the next allocations
    // fill again.
    heap.flush_thread_cache();
    let h = heap.clone();
    let given = blocks.clone();
    // Joined, not scoped: `join` returns once the thread's exit (its cache's flush) is over.
    std::thread::spawn(move || {
        for p in given {
            // SAFETY: live blocks of `h`, handed over, each freed once.
            unsafe { h.free(p as *mut u8) };
        }
    })
    .join()
    .unwrap();
    blocks.into_iter().collect()
}

#[test]
fn blocks_freed_by_another_thread_come_back_through_the_mailbox() {
    for size in [32, 1024, 2 * PAGE] {
        let heap = Arc::new(Heap::<Mailed>::new());
        // Empty this thread's stack of the class first, so that the next allocation fills.
        let warm = heap.malloc(size);
        // SAFETY: live, freed once.
        unsafe { heap.free(warm) };
        heap.flush_thread_cache();
        let freed = freed_elsewhere(&heap, 40, size);
        let st = heap.stats();
        assert_eq!(st.allocated, 0, "{size}");
        assert!(st.cached >= 40 * size, "{size}: {}", st.cached);
        // Still freed while they wait: refused, never handed out twice.
        let some = *freed.iter().next().unwrap();
        // SAFETY: a block in a mailbox: refused without a write.
        let again = unsafe { heap.try_free(some as *mut u8) };
        assert_eq!(again, Err(FreeError::Freed));
        assert_eq!(heap.usable_size(some as *const u8), Err(FreeError::Freed));
        heap.check_invariants().unwrap();
        // The next allocations are served from the mailbox: the same blocks.
        let again: BTreeSet<usize> = (0..40).map(|_| heap.malloc(size) as usize).collect();
        assert_eq!(again, freed, "{size}");
        let mut live: Vec<(usize, usize)> = again.iter().map(|&p| (p, size)).collect();
        heap.check_live(&mut live).unwrap();
        for p in again {
            // SAFETY: live, freed once.
            unsafe { heap.free(p as *mut u8) };
        }
        heap.flush_thread_cache();
        let st = heap.stats();
        assert_eq!((st.allocated, st.cached), (0, 0), "{size}");
        assert_eq!((st.arena.small_allocated, st.arena.large_allocated), (0, 0));
        heap.check_invariants().unwrap();
    }
}

#[test]
fn a_full_mailbox_sends_the_rest_back_to_the_runs() {
    let heap = Arc::new(Heap::<
        Using<Lifo, Single, ThreadCache<{ 1024 * 1024 }, Mailbox>>,
    >::new());
    freed_elsewhere(&heap, 5000, 16);
    // A mailbox holds at most 256 blocks of a class (twice the largest batch).
    let st = heap.stats();
    assert!(st.cached <= 256 * 16, "{}", st.cached);
    assert_eq!(st.allocated, 0);
    heap.check_invariants().unwrap();
}

#[test]
fn with_light_checks_flushes_go_back_to_the_runs() {
    let heap = Arc::new(Heap::<Mailed>::with_options(Options {
        tcache_check: TcacheCheck::Light,
        ..Options::DEFAULT
    }));
    freed_elsewhere(&heap, 40, 64);
    let st = heap.stats();
    assert_eq!((st.allocated, st.cached), (0, 0));
    heap.check_invariants().unwrap();
}

#[test]
fn the_config_describes_its_remote_free_policy() {
    let mut d = String::new();
    <alloclab_policies::configs::LifoTcacheMailbox as alloclab_core::Config>::describe(&mut d)
        .unwrap();
    assert_eq!(
        d,
        "lifo-tcache-mailbox (reuse: lifo, arenas: thread, front: thread-cache, remote: mailbox)"
    );
}
