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

use crate::lock::RawLock;
use crate::os;
use crate::policy::Options;
use crate::sync::{loom_const_fn, process_global, thread_local_zeroed, UnsafeCell};
use core::cell::Cell;
use core::ptr;

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
    key: Option<libc::pthread_key_t>,
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
    static NEXT_THREAD_KEY: crate::sync::AtomicUsize = crate::sync::AtomicUsize::new(1);
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
                .set(NEXT_THREAD_KEY.fetch_add(1, crate::sync::Ordering::Relaxed) * 4096);
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
extern "C" fn on_thread_exit(_: *mut libc::c_void) {
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
                let mut k: libc::pthread_key_t = 0;
                // SAFETY: `k` is a valid out-pointer; the destructor is an `extern "C"` fn.
                if unsafe { libc::pthread_key_create(&mut k, Some(on_thread_exit)) } == 0 {
                    reg.key = Some(k);
                }
            }
            reg.key
        });
        // Outside the registry lock: for high key numbers glibc calls calloc here.
        if let Some(k) = key {
            // SAFETY: `k` is a key created above; a non-null value makes the destructor run.
            unsafe { libc::pthread_setspecific(k, 1usize as *const libc::c_void) };
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
    ncpus: crate::sync::untracked::AtomicUsize,
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

process_global! { static NEXT_HEAP_ID: crate::sync::AtomicU64 = crate::sync::AtomicU64::new(1); }

/// A process-unique heap id. Drawn outside the registry lock (initializing heaps race for it),
/// so the counter alone keeps ids unique.
pub(crate) fn next_heap_id() -> u64 {
    // alloclab_seeded: the lost update (a read-modify-write split into a load and a store).
    #[cfg(alloclab_seeded)]
    if crate::seeded::active(crate::seeded::Bug::LostHeapId) {
        let id = NEXT_HEAP_ID.load(crate::sync::Ordering::Relaxed);
        NEXT_HEAP_ID.store(id + 1, crate::sync::Ordering::Relaxed);
        return id;
    }
    NEXT_HEAP_ID.fetch_add(1, crate::sync::Ordering::Relaxed)
}

impl ArenaPool {
    /// A pool for a new heap, known as `heap_id` (from `next_heap_id`). Index 0 (the default
    /// arena) is never leased.
    pub(crate) fn new(options: &Options, heap_id: u64) -> ArenaPool {
        ArenaPool {
            heap_id,
            narenas: options.narenas,
            ncpus: crate::sync::untracked::AtomicUsize::new(0),
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
        let n = self.ncpus.load(core::sync::atomic::Ordering::Relaxed);
        if n != 0 {
            return n;
        }
        self.count_cpus()
    }

    #[cold]
    fn count_cpus(&self) -> usize {
        let n = os::ncpus();
        self.ncpus.store(n, core::sync::atomic::Ordering::Relaxed);
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

/// What an arena-choice policy may ask of the engine while it chooses.
pub struct ArenaCtx<'a> {
    pool: &'a ArenaPool,
}

impl<'a> ArenaCtx<'a> {
    pub(crate) fn new(pool: &'a ArenaPool) -> Self {
        ArenaCtx { pool }
    }

    /// The value the current thread bound in this heap, if any.
    #[inline(always)]
    pub fn thread_binding(&self) -> Option<usize> {
        let id = self.pool.heap_id;
        THREAD.with(|t| {
            let head = t.bindings.get();
            // SAFETY: the nodes on a thread's list belong to that thread.
            if !head.is_null() && unsafe { (*head).heap_id } == id {
                // SAFETY: as above.
                return Some(unsafe { (*head).value });
            }
            Self::find_binding(t, id)
        })
    }

    #[cold]
    fn find_binding(t: &ThreadState, id: u64) -> Option<usize> {
        let mut prev: *mut Binding = ptr::null_mut();
        let mut b = t.bindings.get();
        // SAFETY: the nodes on a thread's list belong to that thread.
        unsafe {
            while !b.is_null() {
                if (*b).heap_id == id {
                    if !prev.is_null() {
                        // Move to front: the next lookup takes the fast path.
                        (*prev).next = (*b).next;
                        (*b).next = t.bindings.get();
                        t.bindings.set(b);
                    }
                    return Some((*b).value);
                }
                prev = b;
                b = (*b).next;
            }
        }
        None
    }

    /// Binds `value` to the current thread in this heap; `ArenaChoice::thread_exit` receives it
    /// when the thread exits. Returns false (and binds nothing) if the thread is exiting or the
    /// OS refused memory for the binding.
    pub fn bind_thread(&self, value: usize) -> bool {
        bind(self.pool.heap_id, value)
    }

    /// An arena index that no live thread holds (never 0), made on demand. When `MAX_ARENAS`
    /// are all held, the thread shares one (chosen by its thread key).
    pub fn lease(&self) -> usize {
        self.pool.with(|p| {
            let i = if p.nfree > 0 {
                p.nfree -= 1;
                p.free[p.nfree] as usize
            } else if p.next_unused < MAX_ARENAS {
                p.next_unused += 1;
                p.next_unused - 1
            } else {
                shared_index(thread_key())
            };
            p.holders[i] = p.holders[i].saturating_add(1);
            i
        })
    }

    /// Returns a leased index to the pool once its last holder releases it. An index nobody
    /// holds (0, past the last, or released by every holder already) is ignored: a policy's
    /// extra release must not free an arena twice.
    pub fn release(&self, index: usize) {
        self.pool.with(|p| {
            if index == 0 || index >= MAX_ARENAS || p.holders[index] == 0 {
                return;
            }
            p.holders[index] -= 1;
            if p.holders[index] == 0 {
                p.free[p.nfree] = index as u16;
                p.nfree += 1;
            }
        })
    }

    /// The `narenas` option, or `default` when it is 0.
    pub fn narenas_or(&self, default: usize) -> usize {
        let n = if self.pool.narenas == 0 {
            default
        } else {
            self.pool.narenas
        };
        n.clamp(1, MAX_ARENAS)
    }

    /// Online CPUs, as counted the first time a policy of this heap asked.
    #[inline]
    pub fn ncpus(&self) -> usize {
        self.pool.ncpus()
    }

    /// The CPU the calling thread runs on (a hint).
    pub fn current_cpu(&self) -> usize {
        os::current_cpu()
    }

    /// A word unique to the calling thread among live threads.
    pub fn thread_key(&self) -> usize {
        thread_key()
    }

    /// Whether the calling thread is past its exit hook (its bindings are gone).
    pub fn thread_exiting(&self) -> bool {
        THREAD.with(|t| t.exiting.get())
    }
}

/// Binds `value` to the calling thread under `key` (a heap id, tagged or not); false if the
/// thread is exiting or the OS refused memory for the binding.
fn bind(key: u64, value: usize) -> bool {
    THREAD.with(|t| {
        if t.exiting.get() {
            return false;
        }
        let node = REGISTRY.with(|reg| {
            prune(t, reg);
            if reg.free_nodes.is_null() {
                refill(reg);
            }
            let n = reg.free_nodes;
            if !n.is_null() {
                // SAFETY: free-list nodes are owned by the registry, whose lock we hold.
                reg.free_nodes = unsafe { (*n).next };
            }
            n
        });
        if node.is_null() {
            return false;
        }
        // SAFETY: the node was just taken off the free list and now belongs to this thread.
        unsafe {
            node.write(Binding {
                heap_id: key,
                value,
                next: t.bindings.get(),
            })
        };
        t.bindings.set(node);
        arm_exit_hook(t);
        true
    })
}

/// Drops this thread's bindings to heaps that no longer exist.
fn prune(t: &ThreadState, reg: &mut RegistryInner) {
    let mut link: *mut *mut Binding = t.bindings.as_ptr();
    // SAFETY: the list belongs to this thread; the registry lock is held by the caller.
    unsafe {
        while !(*link).is_null() {
            let b = *link;
            let mut live = reg.live;
            while !live.is_null() && (*live).heap_id != (*b).heap_id & !CACHE_TAG {
                live = (*live).next;
            }
            if live.is_null() {
                *link = (*b).next;
                (*b).next = reg.free_nodes;
                reg.free_nodes = b;
            } else {
                link = ptr::addr_of_mut!((*b).next);
            }
        }
    }
}

fn refill(reg: &mut RegistryInner) {
    let Some(page) = os::map(os::PAGE) else {
        return;
    };
    let n = os::PAGE / core::mem::size_of::<Binding>();
    let base = page.as_ptr().cast::<Binding>();
    #[cfg(not(any(loom, shuttle)))]
    let first = 0;
    #[cfg(any(loom, shuttle))]
    let first = {
        // SAFETY: the page is fresh and ours; its first node links the pages (see `pages`).
        unsafe {
            base.write(Binding {
                heap_id: 0,
                value: 0,
                next: reg.pages,
            })
        };
        reg.pages = base;
        1
    };
    for i in first..n {
        // SAFETY: `i < n` nodes fit in the fresh page, which the registry now owns forever.
        unsafe {
            base.add(i).write(Binding {
                heap_id: 0,
                value: 0,
                next: reg.free_nodes,
            })
        };
        // SAFETY: as above.
        reg.free_nodes = unsafe { base.add(i) };
    }
}

/// The value of the calling thread's cache binding in heap `heap_id`, if it is the one in the
/// thread's one-entry memo (the fast path: one thread-local read and a compare).
#[inline(always)]
pub(crate) fn front_cache(heap_id: u64) -> Option<usize> {
    THREAD.with(|t| (t.front_heap.get() == heap_id).then(|| t.front_cache.get()))
}

/// The calling thread's cache binding in heap `heap_id`, made with `make` (a non-zero value, or
/// 0 if it cannot) if there is none yet; `None` while the thread exits (its caches are being, or
/// have been, flushed), or if `make` or the binding failed (`undo` then receives the value). The
/// binding is remembered in the thread's memo, and `cache_exit` of the heap's registration
/// receives it when the thread exits.
#[cold]
pub(crate) fn bind_cache(
    heap_id: u64,
    make: impl FnOnce() -> usize,
    undo: impl FnOnce(usize),
) -> Option<usize> {
    let key = heap_id | CACHE_TAG;
    let found = THREAD.with(|t| {
        if t.exiting.get() {
            return Err(());
        }
        let mut b = t.bindings.get();
        // SAFETY: the nodes on a thread's list belong to that thread.
        unsafe {
            while !b.is_null() {
                if (*b).heap_id == key {
                    return Ok(Some((*b).value));
                }
                b = (*b).next;
            }
        }
        Ok(None)
    });
    let value = match found {
        Err(()) => return None,
        Ok(Some(v)) => v,
        Ok(None) => {
            let v = make();
            if v == 0 {
                return None;
            }
            if !bind(key, v) {
                undo(v);
                return None;
            }
            v
        }
    };
    THREAD.with(|t| {
        t.front_heap.set(heap_id);
        t.front_cache.set(value);
    });
    Some(value)
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
