//! Loom helpers (built only with `--cfg loom`): run a model with alloclab's preemption bound,
//! and spawn threads that run their thread-exit hook as their last act.
//!
//! loom drops a thread's thread-locals after `join` has returned, and the model's main thread's
//! after the registry (a loom lazy static) is gone; so every thread here ends with
//! `alloclab_core::loom_thread_exit()`, which is where "thread exit" happens in a model.

use alloclab_core::{Config, Heap};
use loom::sync::Arc;

/// Preemptions loom explores per execution unless `LOOM_MAX_PREEMPTIONS` says otherwise.
///
/// Bounded exploration finds nearly all concurrency bugs with two or three preemptions
/// (Musuvathi and Qadeer, "Iterative context bounding", PLDI 2007; tokio's CI uses 2). The
/// engine's shared state sits behind a few locks, so two-thread models afford five: the whole
/// suite explores about 30,000 executions in seconds (at 10 it takes minutes). Raise it for a
/// campaign (VERIFY.md); every seeded concurrency bug is found at 1.
pub const PREEMPTION_BOUND: usize = 5;

/// The default bound of models with three threads.
pub const PREEMPTION_BOUND_3_THREADS: usize = 1;

/// Branches loom allows in one execution (at least; `LOOM_MAX_BRANCHES` may raise it).
pub const MAX_BRANCHES: usize = 20_000;

/// Runs `f` under loom with [`PREEMPTION_BOUND`]; the main thread's exit hook runs at its end.
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(PREEMPTION_BOUND, f);
}

/// [`model`] with another default bound: models with three threads explode past a bound of 1
/// (minutes at 2), so they use [`PREEMPTION_BOUND_3_THREADS`].
pub fn model_bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(bound);
    }
    // A contended `RawLock` under loom waits by yielding, and each wait is a branch: with three
    // threads, paths run past loom's default of 1000 branches.
    b.max_branches = b.max_branches.max(MAX_BRANCHES);
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = executions.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f();
        alloclab_core::loom_thread_exit();
    });
    eprintln!(
        "loom: {} executions in {:.2?} (preemption bound {:?})",
        executions.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed(),
        b.preemption_bound
    );
}

/// `loom::thread::spawn`, with the thread's exit hook run after `f`.
pub fn spawn<T: 'static>(f: impl FnOnce() -> T + 'static) -> loom::thread::JoinHandle<T> {
    loom::thread::spawn(move || {
        let r = f();
        alloclab_core::loom_thread_exit();
        r
    })
}

/// The conformance kit's loom model for config `C`: two threads allocate from the same heap,
/// one frees a block the other allocated (a cross-thread free) while the other allocates, and
/// the heap is checked against what is live.
pub fn cross_thread_model<C: Config>() {
    model(|| {
        let heap = Arc::new(Heap::<C>::new());
        let p = heap.malloc(448) as usize;
        let h = heap.clone();
        let t = spawn(move || {
            // SAFETY: `p` is live, allocated by the main thread, freed only here.
            unsafe { h.free(p as *mut u8) };
            h.malloc(448) as usize
        });
        let r = heap.malloc(448) as usize;
        let q = t.join().unwrap();
        let mut live = [(q, 448), (r, 448)];
        heap.check_live(&mut live).unwrap();
        // SAFETY: both are live allocations of `heap`, each freed once.
        unsafe {
            heap.free(q as *mut u8);
            heap.free(r as *mut u8);
        }
        heap.check_invariants().unwrap();
    });
}
