//! `fork()` while pages are being purged without the arena lock: the child is never left with
//! pages in flight.
//!
//! The purge hook of verification builds (`alloclab_core::set_purge_hook`) runs in the window
//! where a thread has released the arena lock to `madvise` the spans it chose. Two forks land
//! there: one by another thread (the purging thread does not exist in the child, which must
//! take its spans back), and one by the purging thread itself, as a signal handler could
//! (the child takes the spans back when it resets the lock, and the purge that then resumes in
//! the child must not put them back a second time). Each child checks the heap and exits with
//! a status the parent reads; the child allocates nothing through the system allocator after
//! checking.
//!
//! The hook is process-wide: this file holds one test, so no other test's purges reach it.
#![cfg(not(loom))]

use alloclab_core::size_class::PAGE;
use alloclab_core::{set_purge_hook, Heap};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type C = Using<Lifo, Single>;

/// What the hook does on its next call: nothing, fork, or wait for the main thread.
static MODE: AtomicUsize = AtomicUsize::new(NOTHING);
const NOTHING: usize = 0;
const FORK: usize = 1;
const WAIT: usize = 2;
/// Set by the hook's fork: 0 in the child, the child's pid in the parent.
static FORKED: AtomicI32 = AtomicI32::new(-1);
/// For `WAIT`: the hook says it is in the window, then waits to be let go.
static IN_WINDOW: Mutex<Option<Sender<()>>> = Mutex::new(None);
static LET_GO: Mutex<Option<Receiver<()>>> = Mutex::new(None);

fn hook(_addr: usize, _bytes: usize) {
    match MODE.swap(NOTHING, SeqCst) {
        FORK => {
            // SAFETY: fork has no preconditions; the child goes on running this thread only.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            FORKED.store(pid, SeqCst);
        }
        WAIT => {
            IN_WINDOW.lock().unwrap().take().unwrap().send(()).unwrap();
            let go = LET_GO.lock().unwrap().take().unwrap();
            go.recv().unwrap();
        }
        _ => {}
    }
}

/// The child's checks, after a fork in the window: the span it had in flight is a dirty free
/// run again (exactly `dirty` dirty pages, nothing purged), the heap is sound, and a purge in
/// the child returns it.
fn child_checks(heap: &Heap<C>, dirty: usize, purged: u64) -> Result<(), &'static str> {
    heap.check_invariants()
        .map_err(|_| "invariants broken in the child")?;
    let st = heap.stats();
    if st.dirty != dirty * PAGE || st.arena.purged_pages != purged {
        return Err("the span in flight did not come back as dirty pages in the child");
    }
    let p = heap.malloc(4 * PAGE);
    if p.is_null() {
        return Err("allocation failed in the child");
    }
    // SAFETY: a live allocation of `heap`.
    unsafe { heap.free(p) };
    heap.purge();
    heap.check_invariants()
        .map_err(|_| "invariants broken after a purge in the child")?;
    if heap.stats().dirty != 0 {
        return Err("a purge in the child left dirty pages");
    }
    Ok(())
}

/// In the child: exits with 0 if `r` and then `f` succeed, or, after writing the reason to
/// stderr, 1 (a panic too: the child must not return to the test harness).
fn exit_child<T>(r: std::thread::Result<T>, f: impl FnOnce() -> Result<(), &'static str>) -> ! {
    let r = r.map_err(|_| "panic in the child").and_then(|_| {
        std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or(Err("panic in the child"))
    });
    let code = match r {
        Ok(()) => 0,
        Err(msg) => {
            // SAFETY: writes a static string to stderr.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            1
        }
    };
    // SAFETY: ends the child without running the parent's test harness on.
    unsafe { libc::_exit(code) }
}

fn wait_for(pid: i32) {
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child failed (status {status:#x}; its stderr says why)"
    );
}

/// Four dirty pages in the heap's one arena.
fn dirty_four(heap: &Heap<C>) {
    let p = heap.malloc(4 * PAGE);
    // SAFETY: four live pages, freed once.
    unsafe {
        p.write_bytes(0x5a, 4 * PAGE);
        heap.free(p);
    }
}

#[test]
fn a_fork_in_the_purge_window_leaves_no_page_in_flight() {
    // The first use installs the fork handlers (`Options::fork_handlers`).
    // The threshold rule (the default decay would purge only after a delay).
    let heap = Arc::new(Heap::<C>::with_options(alloclab_core::Options {
        purge: Some(alloclab_core::Purge::Threshold),
        ..alloclab_core::Options::DEFAULT
    }));
    set_purge_hook(Some(hook));

    // 1. Another thread is in the window at the fork.
    let (in_tx, in_rx) = channel();
    let (go_tx, go_rx) = channel();
    *IN_WINDOW.lock().unwrap() = Some(in_tx);
    *LET_GO.lock().unwrap() = Some(go_rx);
    dirty_four(&heap);
    MODE.store(WAIT, SeqCst);
    let h = heap.clone();
    let purger = std::thread::spawn(move || h.purge());
    in_rx.recv().unwrap();
    // SAFETY: fork has no preconditions; the child only runs `child_checks` and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        exit_child(Ok(()), || child_checks(&heap, 4, 0));
    }
    go_tx.send(()).unwrap();
    purger.join().unwrap();
    wait_for(pid);
    heap.check_invariants().unwrap();
    let st = heap.stats();
    assert_eq!((st.dirty, st.arena.purged_pages), (0, 4), "{st:?}");

    // 2. The purging thread itself forks in its window.
    dirty_four(&heap);
    MODE.store(FORK, SeqCst);
    // In the child the rest of this purge runs too: catch what it might do wrong.
    let purged = std::panic::catch_unwind(AssertUnwindSafe(|| heap.purge()));
    let pid = FORKED.load(SeqCst);
    if pid == 0 {
        // The child: its lock reset took the span back; the purge that resumed here then
        // found it gone and left it alone.
        exit_child(purged, || child_checks(&heap, 4, 4));
    }
    purged.unwrap();
    wait_for(pid);
    set_purge_hook(None);
    heap.check_invariants().unwrap();
    let st = heap.stats();
    assert_eq!((st.dirty, st.arena.purged_pages), (0, 8), "{st:?}");
}
