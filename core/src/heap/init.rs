//! A heap's initialization: its shared state mapped on first use, its options resolved, its debug wing set up.

use super::*;

impl<C: Config> Heap<C> {
    #[inline(always)]
    pub(super) fn shared(&self) -> Option<&Shared<C>> {
        let p = self.shared.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: once published, the shared state lives until the heap is dropped.
            return Some(unsafe { &*p });
        }
        self.init()
    }

    /// The shared state if the heap has initialized (frees of foreign pointers into a heap that
    /// never allocated must not initialize it).
    #[inline(always)]
    pub(super) fn shared_if_init(&self) -> Option<&Shared<C>> {
        let p = self.shared.load(Ordering::Acquire);
        // SAFETY: as in `shared`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Builds and publishes the shared state, under the process-wide thread registry's lock:
    /// one heap initializes at a time (rare: once per heap), and a fork in the middle finds
    /// no half-built heap (see `fork.rs`).
    #[cold]
    pub(super) fn init(&self) -> Option<&Shared<C>> {
        // Drawn before taking the lock: the atomic counter alone keeps ids unique (the
        // `LostHeapId` seeded bug breaks exactly that, and loom must be able to see it).
        let heap_id = crate::meta::thread::next_heap_id();
        let shared = crate::meta::thread::under_registry(|reg| {
            let p = self.shared.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: as in `shared`.
                return Some(unsafe { &*p });
            }
            if os::kernel_page_size() != PAGE {
                fatal(format_args!(
                    "the kernel's page size is {}, alloclab is built for {}",
                    os::kernel_page_size(),
                    PAGE
                ));
            }
            let bytes = round_up(core::mem::size_of::<Shared<C>>(), PAGE)?;
            let mem = os::map(bytes)?.cast::<Shared<C>>();
            let Some(map) = PageMap::create() else {
                // SAFETY: never published.
                unsafe { os::unmap(mem.as_ptr().cast(), bytes) };
                return None;
            };
            let safety = self.options.safety;
            Self::check_safety(&safety);
            let dirty_max = if self.options.dirty_max_pages == usize::MAX {
                C::DIRTY_MAX_PAGES
            } else {
                self.options.dirty_max_pages
            };
            let shared = mem.as_ptr();
            // SAFETY: `mem` is a fresh mapping large enough for `Shared<C>`; the slots stay
            // its zero bytes, which are null pointers: `AtomicPtr<T>` has the in-memory
            // representation of `*mut T` (loom's and shuttle's atomics do not, so model builds
            // write them).
            unsafe {
                #[cfg(any(loom, shuttle))]
                ptr::addr_of_mut!((*shared).arenas)
                    .write(core::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())));
                ptr::addr_of_mut!((*shared).fields).write(SharedFields {
                    map,
                    base: Base::new(),
                    huge: Huge::new(
                        self.options.purge_policy(),
                        self.options.huge_cache_bytes,
                        C::DEBUG.contains(DebugCaps::ZERO_CHECK) && safety.checks_zero(true),
                    ),
                    pool: ArenaPool::new(self.options.narenas, heap_id),
                    caches: CachePool::new::<C::Front>(&self.options, heap_id),
                    choice: C::Arenas::init(&self.options),
                    arena_lock: RawLock::new(),
                    dirty_max,
                    purge: self.options.purge_policy(),
                    safety,
                    switches: Switches::of::<C>(&safety),
                    sampler: if C::DEBUG.contains(DebugCaps::SAMPLE) {
                        Sampler::new(
                            safety.sample,
                            safety.sample_ms,
                            C::SAMPLE_PATH == SamplePath::StaticKey
                                && crate::debug::static_key::PATCHED,
                        )
                    } else {
                        Sampler::off()
                    },
                    zero_size: if C::DEBUG.contains(DebugCaps::ZERO_SIZE) && safety.zero_size {
                        ZeroSize::new()
                    } else {
                        ZeroSize::off()
                    },
                });
            }
            // SAFETY: just written; it does not move until the heap drops (which unregisters).
            let shared = unsafe { &*mem.as_ptr() };
            shared.sampler.register();
            if Self::faults_to_explain(&shared.safety) {
                crate::platform::fault::register(mem.as_ptr() as *const (), Self::explain_fault);
            }
            shared.pool.register(
                reg,
                mem.as_ptr() as *const (),
                thread_exit_trampoline::<C>,
                tcache::cache_exit_trampoline::<C, Shared<C>>,
                fork_trampoline::<C>,
            );
            self.shared.store(mem.as_ptr(), Ordering::Release);
            Some(shared)
        });
        // Outside every lock: glibc may allocate to record the handlers.
        #[cfg(not(any(loom, shuttle)))]
        if shared.is_some() && self.options.fork_handlers {
            crate::heap::fork::install();
        }
        shared
    }

    /// Whether options `safety` make memory inaccessible that the fault handler should explain
    /// for this heap (guard pages, quarantined large allocations, `malloc(0)` slots; the
    /// sampler registers its pool itself).
    pub(super) fn faults_to_explain(safety: &Safety) -> bool {
        (C::DEBUG.contains(DebugCaps::GUARD) && safety.guard)
            || (C::DEBUG.contains(DebugCaps::QUARANTINE) && safety.quarantine > 0)
            || (C::DEBUG.contains(DebugCaps::ZERO_SIZE) && safety.zero_size)
    }

    /// The fault handler's question (`fault.rs`): a fault on one of this heap's guard pages,
    /// in a large allocation held inaccessible in its quarantine, or in its `malloc(0)` region?
    /// Prints what the page entries say of the allocation: no stacks are recorded outside the
    /// sampled allocations.
    ///
    /// # Safety
    /// As for `fault::Explain`: `owner` is this heap's registered `Shared<C>`.
    pub(super) unsafe fn explain_fault(owner: *const (), addr: usize) -> bool {
        use core::fmt::Write;
        // SAFETY: registered until the heap drops, which unregisters it first.
        let s = unsafe { &*(owner as *const Shared<C>) };
        let mut w = crate::platform::report::StderrWriter::stderr();
        if s.zero_size.contains(addr) {
            let _ = writeln!(
                w,
                "alloclab: malloc(0) access at {addr:#x}: an allocation of 0 bytes has no bytes to read or write"
            );
            w.flush();
            return true;
        }
        let Owner::Chunk(c) = s.map.lookup(addr) else {
            return false;
        };
        let chunk = c as *mut ChunkHeader;
        let page = ChunkHeader::page_index(addr);
        // Back from the faulting page to the head of its large allocation. Entries are read
        // without the arena lock (see `fault.rs`): a report, not a decision.
        let mut head = page;
        loop {
            if head < CHUNK_HEADER_PAGES {
                return false;
            }
            // SAFETY: a live chunk of ours (page map), a page inside it.
            let e = unsafe { (*ChunkHeader::entry(chunk, head)).get() };
            if e.kind() != LARGE {
                return false;
            }
            if e.head() {
                break;
            }
            head -= 1;
        }
        // SAFETY: as above; `head` is a head page.
        let e = unsafe { (*ChunkHeader::entry(chunk, head)).get() };
        // SAFETY: as above.
        let at = unsafe { guard::headed_at(chunk, head, e, C::DEBUG.contains(DebugCaps::GUARD)) };
        if page >= head + at.pages {
            return false;
        }
        let size = at.request.unwrap_or(at.usable);
        if at.guarded && page == head + at.pages - 1 {
            let _ = writeln!(
                w,
                "alloclab: heap overflow at {addr:#x}: {} bytes past the end of the allocation of {size} bytes at {:#x} (its guard page)",
                addr - at.start - size,
                at.start
            );
        } else if addr < at.start {
            let _ = writeln!(
                w,
                "alloclab: use after free at {addr:#x}: {} bytes before the freed allocation of {size} bytes at {:#x} (held inaccessible in the quarantine)",
                at.start - addr,
                at.start
            );
        } else {
            let _ = writeln!(
                w,
                "alloclab: use after free at {addr:#x}: offset {} in the freed allocation of {size} bytes at {:#x} (held inaccessible in the quarantine)",
                addr - at.start,
                at.start
            );
        }
        w.flush();
        true
    }

    /// Refuses options that ask for a check the config does not compile in, or that are
    /// inconsistent: a heap silently without the checks asked for would mislead.
    #[cold]
    pub(super) fn check_safety(safety: &Safety) {
        if let Err(why) = safety.validate() {
            fatal(format_args!("bad debug options: {why}"));
        }
        let needs = safety.needs();
        if !C::DEBUG.contains(needs) {
            struct Missing(DebugCaps);
            impl core::fmt::Display for Missing {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    self.0.write_names(f)
                }
            }
            fatal(format_args!(
                "config {} does not compile in the debug checks asked for ({}); set Config::DEBUG",
                C::NAME,
                Missing(needs)
            ));
        }
    }
}
