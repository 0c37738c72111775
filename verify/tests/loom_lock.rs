//! Loom models of `RawLock`, the futex lock every arena, the registry, the base and the huge
//! list use: mutual exclusion (loom's cell tracking sees any unprotected access), and the
//! contended path (a thread that finds the lock held sleeps, then gets it).
#![cfg(loom)]

use alloclab_core::lock::RawLock;
use alloclab_verify::loom::{model, spawn};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

struct Counter {
    lock: RawLock,
    value: UnsafeCell<usize>,
}

// SAFETY: `value` is only reached with `lock` held.
unsafe impl Sync for Counter {}
// SAFETY: as above.
unsafe impl Send for Counter {}

fn bump(c: &Counter) {
    let _g = c.lock.guard();
    // SAFETY: the lock is held.
    c.value.with_mut(|v| unsafe { *v += 1 });
}

#[test]
fn excludes_two_threads() {
    model(|| {
        let c = Arc::new(Counter {
            lock: RawLock::new(),
            value: UnsafeCell::new(0),
        });
        let ts: Vec<_> = (0..1)
            .map(|_| {
                let c = c.clone();
                spawn(move || bump(&c))
            })
            .collect();
        bump(&c);
        for t in ts {
            t.join().unwrap();
        }
        assert!(!c.lock.is_locked());
        // SAFETY: every other thread is joined.
        assert_eq!(c.value.with(|v| unsafe { *v }), 2);
    });
}

#[test]
fn try_lock_never_enters_a_held_lock() {
    model(|| {
        let c = Arc::new(Counter {
            lock: RawLock::new(),
            value: UnsafeCell::new(0),
        });
        let c2 = c.clone();
        let t = spawn(move || {
            if c2.lock.try_lock() {
                // SAFETY: the lock is held.
                c2.value.with_mut(|v| unsafe { *v += 1 });
                c2.lock.unlock();
                true
            } else {
                false
            }
        });
        bump(&c);
        let got = t.join().unwrap();
        // SAFETY: the other thread is joined.
        assert_eq!(c.value.with(|v| unsafe { *v }), 1 + usize::from(got));
        assert!(!c.lock.is_locked());
    });
}
