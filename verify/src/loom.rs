//! Loom helpers (built only with `--cfg loom`): run a model with alloclab's preemption bound,
//! and spawn threads that run their thread-exit hook as their last act.
//!
//! loom drops a thread's thread-locals after `join` has returned, and the model's main thread's
//! after the registry (a loom lazy static) is gone; so every thread here ends with
//! `alloclab_core::loom_thread_exit()`, which is where "thread exit" happens in a model.

use crate::finding::{Check, Finding};
use crate::harness::fill_pattern;
use crate::threads::{intact, Block};
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
    explore(bound, f);
}

/// Runs `f` under loom with `bound` (unless `LOOM_MAX_PREEMPTIONS` says otherwise), the main
/// thread's exit hook at its end; prints and returns how many executions loom explored.
fn explore(bound: usize, f: impl Fn() + Sync + Send + 'static) -> usize {
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
    let executions = executions.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "loom: {executions} executions in {:.2?} (preemption bound {:?})",
        start.elapsed(),
        b.preemption_bound
    );
    executions
}

/// Runs `f` under loom with `bound` and returns the first finding any execution returned
/// (later executions still run, and their findings are dropped), else how many executions loom
/// explored. A finding comes back as a value: a model that panics under loom may abort the
/// process while unwinding (see `tests/loom_seeded.rs`).
pub fn check_model(
    bound: usize,
    f: impl Fn() -> Result<(), Finding> + Sync + Send + 'static,
) -> Result<usize, Finding> {
    let first = std::sync::Arc::new(std::sync::Mutex::new(None));
    let found = first.clone();
    let executions = explore(bound, move || {
        if let Err(finding) = f() {
            found.lock().unwrap().get_or_insert(finding);
        }
    });
    let finding = first.lock().unwrap().take();
    finding.map_or(Ok(executions), Err)
}

/// Branches a one-thread model may take: one execution runs a whole state-machine case
/// (hundreds of heap operations, each a few dozen loom operations).
pub const SEQUENTIAL_MAX_BRANCHES: usize = 1 << 20;

/// The stack of a one-thread model's thread: the harness's checks and a panic's backtrace
/// overflow loom's default.
pub const STACK_SIZE: usize = 8 << 20;

/// Runs `f` as a loom model of one working thread, so exactly one execution: the engine's
/// atomics, locks and thread-locals are loom's under `--cfg loom` and work only inside a model.
/// `f` runs on a thread of its own with a stack of [`STACK_SIZE`] (a panic's backtrace overflows
/// the model's main thread's), which the main thread only joins; with no preemption allowed
/// that is one schedule. The thread's exit hook runs at its end. Prints nothing; returns what
/// `f` returned.
pub fn sequential<T: Send + 'static>(f: impl Fn() -> T + Sync + Send + 'static) -> T {
    let mut b = loom::model::Builder::new();
    b.max_branches = b.max_branches.max(SEQUENTIAL_MAX_BRANCHES);
    b.preemption_bound = Some(0);
    let out = std::sync::Arc::new(std::sync::Mutex::new(None));
    let result = out.clone();
    let f = std::sync::Arc::new(f);
    b.check(move || {
        let (f, result) = (f.clone(), result.clone());
        loom::thread::Builder::new()
            .stack_size(STACK_SIZE)
            .spawn(move || {
                let r = f();
                alloclab_core::loom_thread_exit();
                *result.lock().unwrap() = Some(r);
            })
            .expect("spawn the model's thread")
            .join()
            .expect("the model's thread returns");
        alloclab_core::loom_thread_exit();
    });
    let r = out.lock().unwrap().take();
    r.expect("loom ran the one-thread model")
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
/// the heap is checked against what is live. Panics on a finding (see [`cross_thread_check`]).
pub fn cross_thread_model<C: Config>() {
    if let Err(f) = cross_thread_check::<C>() {
        panic!("{}: {f}", C::NAME);
    }
}

/// The model of [`cross_thread_model`], returning its first finding (else how many executions
/// loom explored). What the multi-threaded smoke checks (`threads::smoke`), in every
/// interleaving of a small case: each block's contents intact (a pattern of its own), the
/// heap's invariants with the blocks live, and once everything is freed and the thread caches
/// flushed, nothing allocated and nothing cached.
pub fn cross_thread_check<C: Config>() -> Result<usize, Finding> {
    check_model(PREEMPTION_BOUND, || {
        let heap = Arc::new(Heap::<C>::new());
        let p = alloc::<C>(&heap, 1)?;
        let h = heap.clone();
        let t = spawn(move || {
            // The exit hook (after this) flushes the thread's cache, if it has one.
            intact(p)?;
            // SAFETY: `p` is live, allocated by the main thread, freed only here.
            unsafe { h.free(p.ptr as *mut u8) };
            alloc::<C>(&h, 2)
        });
        let r = alloc::<C>(&heap, 3)?;
        let q = t.join().unwrap()?;
        let mut live = [(q.ptr, q.size), (r.ptr, r.size)];
        heap.check_live(&mut live).map_err(violation)?;
        for b in [q, r] {
            intact(b)?;
            // SAFETY: both are live allocations of `heap`, each freed once.
            unsafe { heap.free(b.ptr as *mut u8) };
        }
        heap.check_invariants().map_err(violation)?;
        heap.flush_thread_cache();
        let st = heap.stats();
        if st.allocated != 0 || st.cached != 0 {
            return Err(Finding::new(
                Check::Stats,
                0,
                format!(
                    "everything freed and both threads' caches flushed, but allocated = {}, \
                     cached = {}",
                    st.allocated, st.cached
                ),
            ));
        }
        Ok(())
    })
}

/// The size of the cross-thread model's blocks (one bin).
const BLOCK: usize = 448;

fn alloc<C: Config>(heap: &Heap<C>, tag: u64) -> Result<Block, Finding> {
    let ptr = heap.malloc(BLOCK) as usize;
    if ptr == 0 {
        heap.check_invariants().map_err(violation)?;
        return Err(Finding::new(Check::LiveModel, 0, "malloc failed"));
    }
    let b = Block {
        ptr,
        size: BLOCK,
        tag,
    };
    // SAFETY: a fresh allocation of `BLOCK` bytes.
    unsafe { fill_pattern(b.ptr, b.size, b.tag) };
    Ok(b)
}

fn violation(v: alloclab_core::Violation) -> Finding {
    Finding::new(Check::Invariants(v.kind), 0, v.to_string())
}
