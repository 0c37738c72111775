//! Threads: which arena a thread is bound to in which heap, and what happens when it exits.
//!
//! A thread keeps a short list of bindings `(heap id, value)` in a const-initialized
//! thread-local without a destructor (first use neither allocates nor registers anything).
//! Binding nodes come from a process-wide pool of mmap'd pages. The first binding a thread makes
//! arms a `pthread_key_create` destructor (a loom thread-local under loom) that, at thread exit,
//! hands each binding back to its heap's arena-choice policy, if that heap is still alive;
//! heaps register themselves in the process-wide registry while they live.
//!
//! Heaps also initialize under the registry lock (see `under_registry`), which is what lets the
//! fork handlers (`fork.rs`) cover every heap by taking this one lock first.
//!
//! Lock order: registry, then a heap's arena pool. Nothing here allocates.

use crate::platform::lock::RawLock;
use crate::platform::os;
use crate::platform::sync::{loom_const_fn, process_global, thread_local_zeroed, UnsafeCell};
use core::cell::Cell;
use core::ptr;

mod binding;
pub use binding::ArenaCtx;
pub(crate) use binding::{bind_cache, front_cache};

/// Most arenas a heap can have. Indices from `ArenaChoice::choose` are taken modulo this.
#[cfg(not(loom))]
pub const MAX_ARENAS: usize = 1024;
/// Most arenas a heap can have (kept small under loom: each arena slot is a tracked atomic).
#[cfg(loom)]
pub const MAX_ARENAS: usize = 8;

/// Marks a binding as a heap's thread cache (`bind_cache`) rather than the arena-choice
/// policy's value. Heap ids are drawn from a counter starting at 1 and never reach it.
const CACHE_TAG: u64 = 1 << 63;

/// One `(heap, value)` binding of one thread.
struct Binding {
    heap_id: u64,
    value: usize,
    next: *mut Binding,
}

/// What a fork handler (`fork.rs`) asks of one registered heap.
#[derive(Clone, Copy)]
pub(crate) enum Step {
    /// Take every lock (before `fork`).
    Lock,
    /// Release every lock (in the parent, after `fork`).
    Unlock,
    /// Reset every lock to unlocked (in the child, whose other threads are gone).
    Reset,
}

/// A live heap, as the registry knows it: where to deliver thread exits and fork steps.
pub(crate) struct LiveHeap {
    heap_id: u64,
    owner: *const (),
    exit: unsafe fn(*const (), usize),
    cache_exit: unsafe fn(*const (), usize),
    fork: unsafe fn(*const (), Step),
    next: *mut LiveHeap,
}

struct RegistryInner {
    live: *mut LiveHeap,
    free_nodes: *mut Binding,
    #[cfg(not(any(loom, shuttle)))]
    key: Option<os::ThreadExitKey>,
    /// Under loom and shuttle the registry is rebuilt for every explored execution: the pages
    /// of binding nodes are chained here (through each page's first node) and unmapped when it
    /// drops.
    #[cfg(any(loom, shuttle))]
    pages: *mut Binding,
}

struct Registry {
    lock: RawLock,
    inner: UnsafeCell<RegistryInner>,
}

// SAFETY: `inner` is only reached with `lock` held.
unsafe impl Sync for Registry {}
// SAFETY: as above.
unsafe impl Send for Registry {}

impl Registry {
    loom_const_fn! {
        fn new() -> Registry {
            Registry {
                lock: RawLock::new(),
                inner: UnsafeCell::new(RegistryInner {
                    live: ptr::null_mut(),
                    free_nodes: ptr::null_mut(),
                    #[cfg(not(any(loom, shuttle)))]
                    key: None,
                    #[cfg(any(loom, shuttle))]
                    pages: ptr::null_mut(),
                }),
            }
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut RegistryInner) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held for the whole closure.
        self.inner.with_mut(|p| f(unsafe { &mut *p }))
    }
}

#[cfg(any(loom, shuttle))]
impl Drop for Registry {
    fn drop(&mut self) {
        let mut page = self.inner.with_mut(|p| {
            // SAFETY: `&mut self`: nobody else can reach the registry.
            unsafe { (*p).pages }
        });
        while !page.is_null() {
            // SAFETY: each chained page was mapped by `refill`; the execution that used its
            // nodes is over.
            unsafe {
                let next = (*page).next;
                os::unmap(page.cast(), os::PAGE);
                page = next;
            }
        }
    }
}

process_global! { static REGISTRY: Registry = Registry::new(); }

/// Per-thread state.
pub(crate) struct ThreadState {
    bindings: Cell<*mut Binding>,
    hooked: Cell<bool>,
    exiting: Cell<bool>,
    /// The heap whose thread cache `front_cache` is (0: none): a one-entry memo in front of the
    /// binding list, so that the cache's fast path is one thread-local read and a compare.
    front_heap: Cell<u64>,
    front_cache: Cell<usize>,
    /// Under loom and shuttle: this thread's `thread_key` (see there), 0 until first asked.
    #[cfg(any(loom, shuttle))]
    key: Cell<usize>,
}

impl ThreadState {
    const fn new() -> Self {
        ThreadState {
            bindings: Cell::new(ptr::null_mut()),
            hooked: Cell::new(false),
            exiting: Cell::new(false),
            front_heap: Cell::new(0),
            front_cache: Cell::new(0),
            #[cfg(any(loom, shuttle))]
            key: Cell::new(0),
        }
    }
}

/// Under loom and shuttle the exit hook is the thread-local's destructor. Shuttle runs it when
/// the thread's function returns, before a `join` on it returns, and the execution's main
/// thread's before the execution's lazy statics (the registry) go: exactly thread exit. Under
/// loom it comes too late (see `loom_thread_exit`).
#[cfg(any(loom, shuttle))]
impl Drop for ThreadState {
    fn drop(&mut self) {
        thread_exit(self);
    }
}

/// Under loom: runs the calling thread's exit hook now.
///
/// loom drops a thread's thread-locals too late for the `Drop` above to be useful: a spawned
/// thread's after `join` has already returned (the heap may be gone), the model's main thread's
/// after loom has dropped its lazy statics (the registry among them). Loom models therefore call
/// this as the last thing every thread does (`alloclab_verify::loom` wraps `spawn` and `model`
/// to do it); the later `Drop` then finds no binding and does nothing.
#[cfg(loom)]
pub fn loom_thread_exit() {
    THREAD.with(thread_exit);
}

thread_local_zeroed! {
    static THREAD: ThreadState = ThreadState::new();
    symbol = "alloclab_core_thread_state";
    slot = ThreadSlot;
}

/// A word unique to the calling thread among live threads (the address of its state).
#[cfg(not(any(loom, shuttle)))]
#[inline(always)]
pub fn thread_key() -> usize {
    THREAD.with(|t| t as *const ThreadState as usize)
}

#[cfg(any(loom, shuttle))]
process_global! {
    static NEXT_THREAD_KEY: crate::platform::sync::AtomicUsize = crate::platform::sync::AtomicUsize::new(1);
}

/// Under loom and shuttle: threads numbered in the order they first ask, spaced like
/// addresses. The address of a loom thread-local changes from one explored execution to the
/// next, and loom requires every execution of a model to make the same choices given the same
/// schedule; so does a shuttle replay.
#[cfg(any(loom, shuttle))]
pub fn thread_key() -> usize {
    THREAD.with(|t| {
        if t.key.get() == 0 {
            t.key
                .set(NEXT_THREAD_KEY.fetch_add(1, crate::platform::sync::Ordering::Relaxed) * 4096);
        }
        t.key.get()
    })
}

/// The arena index a thread of key `key` shares once all `MAX_ARENAS - 1` leasable ones are
/// held: one of 1..MAX_ARENAS (never 0, the shared arena), threads whose keys are 64 apart (as
/// addresses of thread state are, at least) on consecutive indices.
fn shared_index(key: usize) -> usize {
    1 + key / 64 % (MAX_ARENAS - 1)
}

/// Hands every binding of the exiting thread back to its heap.
fn thread_exit(t: &ThreadState) {
    t.exiting.set(true);
    t.front_heap.set(0);
    let mut b = t.bindings.replace(ptr::null_mut());
    if b.is_null() {
        return;
    }
    REGISTRY.with(|reg| {
        while !b.is_null() {
            // SAFETY: binding nodes belong to this thread until put back on the free list.
            unsafe {
                let next = (*b).next;
                let mut live = reg.live;
                while !live.is_null() {
                    if (*live).heap_id == (*b).heap_id & !CACHE_TAG {
                        let exit = if (*b).heap_id & CACHE_TAG != 0 {
                            (*live).cache_exit
                        } else {
                            (*live).exit
                        };
                        exit((*live).owner, (*b).value);
                        break;
                    }
                    live = (*live).next;
                }
                (*b).next = reg.free_nodes;
                reg.free_nodes = b;
                b = next;
            }
        }
    });
}

#[cfg(not(any(loom, shuttle)))]
extern "C" fn on_thread_exit(_: *mut core::ffi::c_void) {
    THREAD.with(thread_exit);
}

/// Arms the thread-exit hook for the calling thread (once).
// Under loom and shuttle the hook is `ThreadState`'s drop.
#[cfg_attr(any(loom, shuttle), allow(clippy::needless_return))]
fn arm_exit_hook(t: &ThreadState) {
    if t.hooked.replace(true) {
        return;
    }
    #[cfg(not(any(loom, shuttle)))]
    {
        let key = REGISTRY.with(|reg| {
            if reg.key.is_none() {
                reg.key = os::thread_exit_key(on_thread_exit);
            }
            reg.key
        });
        // Outside the registry lock: for high key numbers glibc calls calloc here.
        if let Some(k) = key {
            k.arm();
        }
    }
}

/// The part of a heap that arena-choice policies use: identity, the pool of arena indices that
/// no live thread holds, and the heap's registration for thread exits.
pub struct ArenaPool {
    heap_id: u64,
    narenas: usize,
    /// Online CPUs, counted on first use (0 until then): counting reads a `/sys` file, which
    /// start-up should not pay for when no arena-choice policy asks.
    ncpus: crate::platform::sync::untracked::AtomicUsize,
    lock: RawLock,
    inner: UnsafeCell<PoolInner>,
    live: UnsafeCell<LiveHeap>,
}

struct PoolInner {
    free: [u16; MAX_ARENAS],
    nfree: usize,
    /// Indices `1..next_unused` have been made; each is either free or held.
    next_unused: usize,
    /// Live threads holding each index: past `MAX_ARENAS` threads share indices, and a
    /// sharer's release must not free an index its leaseholder (or another sharer) still uses.
    holders: [u16; MAX_ARENAS],
}

// SAFETY: `inner` is reached only with `lock` held; `live` only under the registry lock.
unsafe impl Sync for ArenaPool {}
// SAFETY: as above.
unsafe impl Send for ArenaPool {}

process_global! { static NEXT_HEAP_ID: crate::platform::sync::AtomicU64 = crate::platform::sync::AtomicU64::new(1); }

/// A process-unique heap id. Drawn outside the registry lock (initializing heaps race for it),
/// so the counter alone keeps ids unique.
pub(crate) fn next_heap_id() -> u64 {
    // alloclab_seeded: the lost update (a read-modify-write split into a load and a store).
    #[cfg(alloclab_seeded)]
    if crate::platform::seeded::active(crate::platform::seeded::Bug::LostHeapId) {
        let id = NEXT_HEAP_ID.load(crate::platform::sync::Ordering::Relaxed);
        NEXT_HEAP_ID.store(id + 1, crate::platform::sync::Ordering::Relaxed);
        return id;
    }
    NEXT_HEAP_ID.fetch_add(1, crate::platform::sync::Ordering::Relaxed)
}

impl ArenaPool {
    /// A pool for a new heap, known as `heap_id` (from `next_heap_id`). Index 0 (the default
    /// arena) is never leased.
    pub(crate) fn new(narenas: usize, heap_id: u64) -> ArenaPool {
        ArenaPool {
            heap_id,
            narenas,
            ncpus: crate::platform::sync::untracked::AtomicUsize::new(0),
            lock: RawLock::new(),
            inner: UnsafeCell::new(PoolInner {
                free: [0; MAX_ARENAS],
                nfree: 0,
                next_unused: 1,
                holders: [0; MAX_ARENAS],
            }),
            live: UnsafeCell::new(LiveHeap {
                heap_id: 0,
                owner: ptr::null(),
                exit: noop_exit,
                cache_exit: noop_exit,
                fork: noop_fork,
                next: ptr::null_mut(),
            }),
        }
    }

    /// Online CPUs, counted once (racing first calls count twice and agree).
    #[inline]
    fn ncpus(&self) -> usize {
        let n = self
            .ncpus
            .load(crate::platform::sync::untracked::Ordering::Relaxed);
        if n != 0 {
            return n;
        }
        self.count_cpus()
    }

    #[cold]
    fn count_cpus(&self) -> usize {
        let n = os::ncpus();
        self.ncpus
            .store(n, crate::platform::sync::untracked::Ordering::Relaxed);
        n
    }

    /// Registers the heap for thread exits and fork steps, in the registry the caller holds.
    /// `self` must not move until `unregister`.
    pub(crate) fn register(
        &self,
        reg: &mut Registered<'_>,
        owner: *const (),
        exit: unsafe fn(*const (), usize),
        cache_exit: unsafe fn(*const (), usize),
        fork: unsafe fn(*const (), Step),
    ) {
        let reg = &mut *reg.0;
        self.live.with_mut(|l| {
            // SAFETY: `live` is only touched under the registry lock, which the caller holds.
            unsafe {
                *l = LiveHeap {
                    heap_id: self.heap_id,
                    owner,
                    exit,
                    cache_exit,
                    fork,
                    next: reg.live,
                };
            }
            reg.live = l;
        })
    }

    /// Stops thread exits and fork steps from reaching this heap; after it returns none is
    /// running.
    pub(crate) fn unregister(&self) {
        REGISTRY.with(|reg| {
            let me = self.live.with_mut(|l| l);
            let mut link: *mut *mut LiveHeap = &mut reg.live;
            // SAFETY: registry list nodes are live heaps' `live` cells, touched under the lock.
            unsafe {
                while !(*link).is_null() {
                    if *link == me {
                        *link = (*me).next;
                        break;
                    }
                    link = ptr::addr_of_mut!((**link).next);
                }
            }
        });
    }

    /// The heap's process-unique id.
    #[inline(always)]
    pub(crate) fn heap_id(&self) -> u64 {
        self.heap_id
    }

    fn with<R>(&self, f: impl FnOnce(&mut PoolInner) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held for the whole closure.
        self.inner.with_mut(|p| f(unsafe { &mut *p }))
    }

    /// Indices currently leased to live threads: every index made and not free.
    pub fn leased(&self) -> usize {
        self.with(|p| p.next_unused - 1 - p.nfree)
    }

    /// Takes the pool lock (for `fork`).
    pub(crate) fn lock(&self) {
        self.lock.lock();
    }
    /// Releases the pool lock (for `fork`).
    pub(crate) fn unlock(&self) {
        self.lock.unlock();
    }
    /// Resets the pool lock in a forked child.
    pub(crate) fn reset_lock(&self) {
        self.lock.reset();
    }
}

unsafe fn noop_exit(_: *const (), _: usize) {}
unsafe fn noop_fork(_: *const (), _: Step) {}

/// The registry, locked: proof for `ArenaPool::register`.
pub(crate) struct Registered<'a>(&'a mut RegistryInner);

/// Runs `f` with the process-wide registry locked. Heaps initialize inside it, so that the
/// fork handlers, which take this lock first, never find a heap half-built.
pub(crate) fn under_registry<R>(f: impl FnOnce(&mut Registered<'_>) -> R) -> R {
    REGISTRY.with(|reg| f(&mut Registered(reg)))
}

/// Applies a fork step to every registered heap, in registration order.
///
/// # Safety
/// The caller holds the registry lock (taken by `registry_lock`).
pub(crate) unsafe fn each_live_heap(step: Step) {
    REGISTRY.inner.with_mut(|p| {
        // SAFETY: the caller holds the registry lock; list nodes are live heaps' `live` cells.
        unsafe {
            let mut live = (*p).live;
            while !live.is_null() {
                ((*live).fork)((*live).owner, step);
                live = (*live).next;
            }
        }
    })
}

/// Locks the process-wide registry (for `fork`: taken first, released last).
pub(crate) fn registry_lock() {
    REGISTRY.lock.lock();
}
/// Unlocks the process-wide registry.
pub(crate) fn registry_unlock() {
    REGISTRY.lock.unlock();
}
/// Resets the registry lock in a forked child.
pub(crate) fn registry_reset() {
    REGISTRY.lock.reset();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `THREAD` lives in a slot the C library zeroes (`thread_local_zeroed!`): its initial
    /// value must be all zero bytes.
    #[test]
    fn initial_thread_state_is_zero_bytes() {
        let t = ThreadState::new();
        // SAFETY: reads the bytes of a live value (its fields have no padding that matters:
        // padding bytes are read as whatever they are, and only compared).
        let bytes = unsafe {
            core::slice::from_raw_parts(
                &t as *const ThreadState as *const u8,
                core::mem::size_of::<ThreadState>(),
            )
        };
        // Padding is not guaranteed zero, so compare the fields' bytes through their values.
        assert!(t.bindings.get().is_null());
        assert!(!t.hooked.get() && !t.exiting.get());
        assert_eq!((t.front_heap.get(), t.front_cache.get()), (0, 0));
        assert!(bytes.len() <= 64);
    }

    /// With every arena held, a thread shares one of 1..MAX_ARENAS: keys 64 apart go round all
    /// of them in order, and none maps to 0 or past the last (mutation testing found the range
    /// unchecked: the test that fills the pool meets only a few keys).
    #[test]
    fn a_sharing_thread_gets_an_arena_in_range() {
        for j in 0..2 * MAX_ARENAS {
            let index = shared_index(j * 64 + 63);
            assert_eq!(index, 1 + j % (MAX_ARENAS - 1), "key {}", j * 64 + 63);
            assert!((1..MAX_ARENAS).contains(&index));
        }
    }

    /// Each thread has its own state, and a new thread's starts as the initial value.
    #[test]
    fn each_thread_has_its_own_state() {
        let here = thread_key();
        THREAD.with(|t| t.front_heap.set(7));
        let (there, fresh) =
            std::thread::spawn(|| (thread_key(), THREAD.with(|t| t.front_heap.get())))
                .join()
                .unwrap();
        assert_ne!(here, there);
        assert_eq!(fresh, 0);
        assert_eq!(THREAD.with(|t| t.front_heap.replace(0)), 7);
    }
}
