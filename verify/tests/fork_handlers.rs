//! The fork handlers a heap installs on its first use, seen from a child forked while another
//! thread holds an arena lock: the handlers take every lock before `fork()` (so the fork
//! waits for the holder) and reset them in the child, which can then allocate. Without them
//! the child inherits a lock held by a thread it does not have, and its first allocation
//! waits for ever; the parent gives it 10 seconds.
//!
//! Kills two survivors of the mutation campaign's shard 1 (VERIFY.md, "Mutation testing"),
//! which only the root package's fork tests (outside the campaign's test selection) saw:
//! `core/src/heap/fork.rs: replace handlers::install -> bool with false` (nothing installed) and
//! `core/src/heap/fork.rs: replace handlers::postfork_child with ()` (the child keeps the locks
//! the prefork handler took).
//!
//! One test in this file: the fork must not land while another test of the same process
//! holds a lock of its own heap.
#![cfg(not(loom))]

use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn a_child_forked_while_an_arena_lock_is_held_can_allocate() {
    let heap = Arc::new(Heap::<Using<Lifo, Single>>::new());
    // First use makes the arena and installs the handlers (`Options::fork_handlers`).
    // SAFETY: a live allocation of `heap`, freed once.
    unsafe { heap.free(heap.malloc(64)) };
    let (held_tx, held_rx) = channel();
    let holder = {
        let heap = heap.clone();
        std::thread::spawn(move || {
            heap.hold_arena_lock(0, |_| {
                held_tx.send(()).unwrap();
                // Long enough for the main thread to reach fork() while the lock is held.
                std::thread::sleep(Duration::from_millis(300));
            })
        })
    };
    held_rx.recv().unwrap();
    // SAFETY: fork in a test process; the child calls only the heap (which the handlers made
    // safe to use there, the point of the test) and `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let p = heap.malloc(100);
        let code = if p.is_null() || heap.check_invariants().is_err() {
            1
        } else {
            0
        };
        // SAFETY: leaves the child at once, running no destructor of the parent's state.
        unsafe { libc::_exit(code) };
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    let finished = loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break true;
        }
        if Instant::now() > deadline {
            // SAFETY: our own child, which has not been reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(holder.join().unwrap(), Some(()));
    assert!(
        finished,
        "the child's first allocation waited 10 s for an arena lock the parent's thread held \
         at fork(): the fork handlers are missing or did not reset the lock in the child"
    );
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child could not allocate after fork (status {status:#x})"
    );
}
