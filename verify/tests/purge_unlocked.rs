//! Purging runs its `madvise` without the arena lock: shown, not timed.
//!
//! The purge hook of verification builds (`alloclab_core::set_purge_hook`) runs on the purging
//! thread right before each `madvise`. Here it hands the span to a helper thread and waits for
//! its answer; the helper, on the same heap and the same arena (`Single`), allocates, frees and
//! checks the invariants, which all take the arena lock. Had the purging thread kept the lock,
//! the helper could never answer and the hook would fail the test (after a minute, a bound for
//! a broken build only: a passing run waits for nothing but the helper's work). The helper also
//! frees a pointer into the span in flight, which must be refused, not corrupt the heap.
//!
//! The hook is process-wide: this file holds one test, so no other test's purges reach it.
#![cfg(not(loom))]

use alloclab_core::size_class::PAGE;
use alloclab_core::{set_purge_hook, FreeError, Heap};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single};
use std::cell::Cell;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type C = Using<Lifo, Single>;

/// A span in flight, and where the helper answers (`Err`: what it found wrong).
type Request = (usize, usize, Sender<Result<(), String>>);

static HELPER: Mutex<Option<Sender<Request>>> = Mutex::new(None);
static SPANS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

thread_local! {
    /// Set on the helper: its own frees may purge, and must not wait for itself.
    static IS_HELPER: Cell<bool> = const { Cell::new(false) };
}

fn hook(addr: usize, bytes: usize) {
    if IS_HELPER.with(Cell::get) {
        return;
    }
    let Some(helper) = HELPER.lock().unwrap().clone() else {
        return;
    };
    SPANS.lock().unwrap().push((addr, bytes));
    let (tx, rx) = channel();
    helper.send((addr, bytes, tx)).unwrap();
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("while {bytes} bytes at {addr:#x} were being purged: {e}"),
        Err(_) => panic!(
            "the helper could not use the arena while {bytes} bytes at {addr:#x} were being \
             purged: the purging thread holds the arena lock during madvise"
        ),
    }
}

/// The helper's work while a span is in flight: everything that needs the arena lock.
fn visit(heap: &Heap<C>, addr: usize, bytes: usize) -> Result<(), String> {
    let span = addr..addr + bytes;
    for p in [addr, addr + bytes - PAGE] {
        // SAFETY: `p` is not a live allocation; the heap must refuse it without touching it.
        let r = unsafe { heap.try_free(p as *mut u8) };
        if r != Err(FreeError::NotAllocated) {
            return Err(format!("free of {p:#x}, in the span, gave {r:?}"));
        }
        if heap.usable_size(p as *const u8).is_ok() {
            return Err(format!("usable_size of {p:#x}, in the span, succeeded"));
        }
    }
    let q = heap.malloc(2 * PAGE) as usize;
    let small = heap.malloc(100) as usize;
    if q == 0 || span.contains(&q) || span.contains(&small) {
        return Err(format!(
            "allocated {q:#x} and {small:#x}, in the span or null"
        ));
    }
    heap.check_live(&mut [(q, 2 * PAGE), (small, 100)])
        .map_err(|v| v.to_string())?;
    // SAFETY: both are live allocations of `heap`, freed once.
    unsafe {
        heap.free(q as *mut u8);
        heap.free(small as *mut u8);
    }
    heap.check_invariants().map_err(|v| v.to_string())
}

fn helper(heap: Arc<Heap<C>>, requests: Receiver<Request>) {
    IS_HELPER.with(|h| h.set(true));
    for (addr, bytes, answer) in requests {
        answer.send(visit(&heap, addr, bytes)).unwrap();
    }
}

#[test]
fn madvise_runs_without_the_arena_lock() {
    // The threshold rule (the default decay would purge only after a delay).
    let heap = Arc::new(Heap::<C>::with_options(alloclab_core::Options {
        purge: Some(alloclab_core::Purge::Threshold),
        ..alloclab_core::Options::DEFAULT
    }));
    let (tx, rx) = channel();
    *HELPER.lock().unwrap() = Some(tx);
    set_purge_hook(Some(hook));
    let h = heap.clone();
    let helper = std::thread::spawn(move || helper(h, rx));

    // 1. An explicit purge: four dirty pages, one span.
    let p = heap.malloc(4 * PAGE);
    // SAFETY: `p` holds four pages; it is freed once.
    unsafe {
        p.write_bytes(0xa5, 4 * PAGE);
        heap.free(p);
    }
    assert_eq!(heap.stats().dirty, 4 * PAGE);
    heap.purge();
    let st = heap.stats();
    // (The helper's frees in the window made a few dirty pages after the choice: not purged.)
    assert_eq!(
        (st.arena.purges, st.arena.purge_calls, st.arena.purged_pages),
        (1, 1, 4)
    );
    assert_eq!(SPANS.lock().unwrap().as_slice(), &[(p as usize, 4 * PAGE)]);
    // The pages came back purged: reading zero, and handed out again first (best fit).
    let again = heap.malloc(4 * PAGE);
    assert_eq!(again, p);
    // SAFETY: four live pages.
    assert!(unsafe { core::slice::from_raw_parts(again, 4 * PAGE) }
        .iter()
        .all(|&b| b == 0));
    // SAFETY: live, freed once.
    unsafe { heap.free(again) };

    // 2. A free past the dirty limit (256 pages by default) purges on its own, down to half.
    let a = heap.malloc(200 * PAGE);
    let b = heap.malloc(100 * PAGE);
    // SAFETY: live allocations, each freed once.
    unsafe {
        a.write_bytes(1, 200 * PAGE);
        b.write_bytes(2, 100 * PAGE);
        heap.free(a);
        heap.free(b);
    }

    set_purge_hook(None);
    *HELPER.lock().unwrap() = None;
    helper.join().unwrap();
    heap.check_invariants().unwrap();
    let st = heap.stats();
    let spans = SPANS.lock().unwrap();
    assert!(spans.len() >= 2 && st.arena.purges == 2, "{st:?}");
    // Every span the hook saw was purged and counted once, and nothing else was.
    assert_eq!(st.arena.purge_calls as usize, spans.len(), "{st:?}");
    let bytes: usize = spans.iter().map(|s| s.1).sum();
    assert_eq!(st.arena.purged_pages as usize * PAGE, bytes, "{st:?}");
    assert!(st.dirty < 256 * PAGE, "{st:?}");
}
