//! A shard of the huge allocations: its records, its cache of freed mappings, and the
//! system calls that map, grow, shrink and give them back.

use super::*;

impl HugeShard {
    loom_const_fn! {
        pub(super) fn new() -> HugeShard {
            HugeShard {
                lock: RawLock::new(),
                inner: UnsafeCell::new(HugeInner {
                    list: ptr::null_mut(),
                    spare: ptr::null_mut(),
                    live: 0,
                    allocated: 0,
                    mapped: 0,
                    allocations: 0,
                    frees: 0,
                }),
            }
        }
    }

    pub(super) fn with<R>(&self, f: impl FnOnce(&mut HugeInner) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held for the whole closure.
        self.inner.with_mut(|p| f(unsafe { &mut *p }))
    }

    /// Records the mapping `addr..+mapped` as a huge allocation of `bytes` aligned to `align`
    /// in this shard (number `shard`); null (nothing recorded: the caller unmaps it) if
    /// metadata was refused.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn alloc(
        &self,
        shard: usize,
        addr: usize,
        bytes: usize,
        mapped: usize,
        align: usize,
        base: &Base,
        map: &PageMap,
    ) -> *mut u8 {
        let rec = self.with(|h| {
            let r = h.spare;
            if !r.is_null() {
                // SAFETY: spare records are ours, under the lock.
                h.spare = unsafe { (*r).next };
            }
            r
        });
        let rec = if rec.is_null() {
            match base.alloc(core::mem::size_of::<HugeRecord>(), 8) {
                Some(p) => p.as_ptr().cast::<HugeRecord>(),
                None => return ptr::null_mut(),
            }
        } else {
            rec
        };
        // SAFETY: the record is ours until linked below.
        unsafe {
            rec.write(HugeRecord {
                addr,
                size: bytes,
                mapped,
                align,
                shard,
                prev: ptr::null_mut(),
                next: ptr::null_mut(),
            })
        };
        if !map.set(addr, bytes, rec as usize | TAG_HUGE) {
            map.clear(addr, bytes);
            self.with(|h| {
                // SAFETY: the record is ours; put it on the spare list.
                unsafe { (*rec).next = h.spare };
                h.spare = rec;
            });
            return ptr::null_mut();
        }
        self.with(|h| {
            // SAFETY: linking our record into the list, under the lock.
            unsafe {
                (*rec).next = h.list;
                if !h.list.is_null() {
                    (*h.list).prev = rec;
                }
            }
            h.list = rec;
            h.live += 1;
            h.allocated += bytes;
            h.mapped += mapped;
            h.allocations += 1;
        });
        addr as *mut u8
    }

    /// `Huge::free`, for a record of this shard: forgets the allocation and returns its
    /// mapping (address, bytes), which the caller caches or unmaps.
    ///
    /// # Safety
    /// As for `Huge::free`.
    pub(super) unsafe fn free(&self, rec: usize, map: &PageMap) -> (usize, usize) {
        let rec = rec as *mut HugeRecord;
        // SAFETY: the record is live (contract); it is unlinked under the lock.
        let (addr, size, mapped) = unsafe { ((*rec).addr, (*rec).size, (*rec).mapped) };
        self.with(|h| {
            map.clear(addr, size);
            // SAFETY: our record, under the lock.
            unsafe {
                let (prev, next) = ((*rec).prev, (*rec).next);
                if prev.is_null() {
                    h.list = next;
                } else {
                    (*prev).next = next;
                }
                if !next.is_null() {
                    (*next).prev = prev;
                }
                (*rec).next = h.spare;
                (*rec).addr = 0;
            }
            h.spare = rec;
            h.live -= 1;
            h.allocated -= size;
            h.mapped -= mapped;
            h.frees += 1;
        });
        (addr, mapped)
    }

    /// `Huge::resize`, for a record of this shard.
    ///
    /// # Safety
    /// As for `Huge::free`.
    pub(super) unsafe fn resize(
        &self,
        rec: usize,
        bytes: usize,
        map: &PageMap,
        ctr: &Huge,
    ) -> *mut u8 {
        // Under the lock throughout, so that `check` never sees the record and the page map
        // disagree mid-move.
        self.with(|h| {
            // SAFETY: forwarded contract.
            let r = rec as *mut HugeRecord;
            // SAFETY: the record is live and the caller owns its allocation.
            let old_mapped = unsafe { (*r).mapped };
            // SAFETY: forwarded contract.
            let p = unsafe { Self::resize_locked(r, bytes, map, ctr) };
            if !p.is_null() {
                // SAFETY: the record is live.
                let (old, mapped) = unsafe { ((*r).size, (*r).mapped) };
                h.allocated = h.allocated - old + bytes;
                h.mapped = h.mapped - old_mapped + mapped;
                // SAFETY: as above.
                unsafe { (*r).size = bytes };
            }
            p
        })
    }

    /// # Safety
    /// As for `resize`; the lock is held. Does not update the record's size; updates its
    /// address and `mapped`.
    pub(super) unsafe fn resize_locked(
        rec: *mut HugeRecord,
        bytes: usize,
        map: &PageMap,
        ctr: &Huge,
    ) -> *mut u8 {
        // SAFETY: the caller owns the allocation, hence the record's fields.
        let (addr, old, mapped, align) =
            unsafe { ((*rec).addr, (*rec).size, (*rec).mapped, (*rec).align) };
        if bytes == old {
            return addr as *mut u8;
        }
        let tag = rec as usize | TAG_HUGE;
        // The page map forgets a range before the range goes back to the OS, never after:
        // once unmapped, another thread's new chunk or huge mapping may land there at once, and
        // a late `clear` would erase its entries.
        if bytes < old {
            Self::forget_from(map, addr + bytes, addr + old);
            // Slack up to the new size stays mapped; beyond it, the tail goes back.
            if mapped - bytes > bytes {
                Huge::bump(&ctr.unmaps);
                // SAFETY: the tail pages are part of our mapping and beyond the new size.
                unsafe { os::unmap((addr + bytes) as *mut u8, mapped - bytes) };
                // SAFETY: the caller owns the allocation.
                unsafe { (*rec).mapped = bytes };
            }
            return addr as *mut u8;
        }
        if bytes <= mapped {
            // Growing into the slack: no system call.
            return if map.set(addr, bytes, tag) {
                addr as *mut u8
            } else {
                Self::forget_from(map, addr + old, addr + bytes);
                ptr::null_mut()
            };
        }
        Huge::bump(&ctr.remaps);
        // SAFETY: our mapping; without MAYMOVE it only grows into free address space.
        if unsafe { os::remap_in_place(addr as *mut u8, mapped, bytes) } {
            // SAFETY: the caller owns the allocation.
            unsafe { (*rec).mapped = bytes };
            if map.set(addr, bytes, tag) {
                return addr as *mut u8;
            }
            // Metadata refused: shrink back and report failure.
            Self::forget_from(map, addr + old, addr + bytes);
            // SAFETY: the pages past `mapped` were just added to our mapping.
            unsafe { os::unmap((addr + mapped) as *mut u8, bytes - mapped) };
            // SAFETY: as above.
            unsafe { (*rec).mapped = mapped };
            return ptr::null_mut();
        }
        Huge::bump(&ctr.maps);
        let Some(dest) = os::map_aligned(bytes, align) else {
            return ptr::null_mut();
        };
        let dest = dest.as_ptr() as usize;
        // The move unmaps the old range: forget it first (the caller owns the allocation, so
        // nobody looks it up meanwhile), and restore it if the move fails (its leaves exist,
        // so `set` cannot fail there).
        map.clear(addr, old);
        Huge::bump(&ctr.remaps);
        let moved = map.set(dest, bytes, tag)
            // SAFETY: both ranges are ours; the reservation at `dest` is replaced by the pages.
            && unsafe { os::remap_to(addr as *mut u8, mapped, dest as *mut u8, bytes) };
        if !moved {
            map.clear(dest, bytes);
            map.set(addr, old, tag);
            // SAFETY: the reservation was never handed out.
            unsafe { os::unmap(dest as *mut u8, bytes) };
            return ptr::null_mut();
        }
        // SAFETY: the caller owns the allocation.
        unsafe {
            (*rec).addr = dest;
            (*rec).mapped = bytes;
        }
        dest as *mut u8
    }

    /// Forgets the chunks holding `from..end`, except the one holding `from - 1`, which still
    /// belongs to the allocation. (A huge mapping starts on a chunk boundary, so no other
    /// mapping of this heap shares a chunk with its tail.)
    pub(super) fn forget_from(map: &PageMap, from: usize, end: usize) {
        if let Some(keep) = round_up(from, CHUNK) {
            if keep < end {
                map.clear(keep, end - keep);
            }
        }
    }

    pub(super) fn stats(&self) -> HugeStats {
        self.with(|h| HugeStats {
            live: h.live,
            allocated: h.allocated,
            mapped: h.mapped,
            allocations: h.allocations,
            frees: h.frees,
            ..HugeStats::default()
        })
    }

    /// Every live record of shard `me` names it and is found by the page map for each chunk
    /// it covers; counters add up.
    pub(super) fn check(&self, me: usize, map: &PageMap) -> Result<(), Violation> {
        self.with(|h| {
            let (mut n, mut bytes, mut mapped_sum) = (0, 0, 0);
            let mut r = h.list;
            while !r.is_null() {
                // SAFETY: records on the list are live, under the lock.
                let (addr, size, mapped, next, shard) =
                    unsafe { ((*r).addr, (*r).size, (*r).mapped, (*r).next, (*r).shard) };
                if mapped < size {
                    return Err(Violation::new(ViolationKind::Huge(
                        "a record maps less than its size",
                    ))
                    .at(addr));
                }
                mapped_sum += mapped;
                if shard != me {
                    return Err(Violation::new(ViolationKind::Huge(
                        "a record is on another shard's list than it names",
                    ))
                    .at(addr));
                }
                let mut a = addr;
                while a < addr + size {
                    if map.lookup(a) != Owner::Huge(r as usize) {
                        return Err(Violation::new(ViolationKind::Huge(
                            "page map does not point to the record",
                        ))
                        .at(addr));
                    }
                    a += CHUNK;
                }
                if addr % CHUNK != 0 {
                    return Err(
                        Violation::new(ViolationKind::Huge("mapping not chunk-aligned")).at(addr),
                    );
                }
                n += 1;
                bytes += size;
                r = next;
            }
            expect_eq("huge live", n, h.live)?;
            expect_eq("huge mapped bytes", mapped_sum, h.mapped)?;
            expect_eq("huge allocated bytes", bytes, h.allocated)?;
            expect_eq(
                "huge allocations - frees",
                n,
                (h.allocations - h.frees) as usize,
            )
        })
    }

    /// # Safety
    /// As for `Huge::release_all`.
    pub(super) unsafe fn release_all(&self, map: &PageMap) {
        self.with(|h| {
            let mut r = h.list;
            while !r.is_null() {
                // SAFETY: per the contract.
                unsafe {
                    map.clear((*r).addr, (*r).size);
                    os::unmap((*r).addr as *mut u8, (*r).mapped);
                    r = (*r).next;
                }
            }
            h.list = ptr::null_mut();
        });
    }
}
