//! A thread's bindings: the value each heap's arena choice bound for the thread (what
//! `ArenaCtx` gives a policy), kept on a per-thread list of nodes from the registry, and the
//! thread cache a heap keeps for the thread.

use super::*;

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
pub(super) fn bind(key: u64, value: usize) -> bool {
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
pub(super) fn prune(t: &ThreadState, reg: &mut RegistryInner) {
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

pub(super) fn refill(reg: &mut RegistryInner) {
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
