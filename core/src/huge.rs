//! Huge allocations: larger than a chunk's usable pages (or aligned beyond what a chunk can
//! offer), each in a mapping of its own, chunk-aligned, sized to whole pages.
//!
//! Each has a record (from the heap's `Base`) that the page map points to for every chunk the
//! mapping covers, so a free or a lookup finds it in O(1) and can tell an interior pointer.
//! Growing tries `mremap` in place, then moves the pages to a fresh aligned reservation with
//! `MREMAP_FIXED` (no copy). Fresh mappings are zero: a zeroed huge allocation is free.
//!
//! The records live in `HUGE_SHARDS` shards, each with its own lock, list and counters: an
//! allocation goes to the shard its thread hashes to and stays there (the record names it), so
//! threads that allocate and free huge blocks at the same time rarely share a lock, and no
//! lock is held across a system call. Statistics and checks visit every shard.

use crate::base::Base;
use crate::error::FreeError;
use crate::invariants::{expect_eq, Violation, ViolationKind};
use crate::lock::RawLock;
use crate::os;
use crate::page_map::{Owner, PageMap, TAG_HUGE};
use crate::size_class::{round_up, CHUNK};
use crate::sync::{loom_const_fn, UnsafeCell};
use core::ptr;

/// Shards of the huge records (a power of two).
const HUGE_SHARDS: usize = 4;

/// One huge allocation.
pub(crate) struct HugeRecord {
    addr: usize,
    size: usize,
    align: usize,
    /// The shard whose list holds the record.
    shard: usize,
    prev: *mut HugeRecord,
    next: *mut HugeRecord,
}

struct HugeInner {
    list: *mut HugeRecord,
    spare: *mut HugeRecord,
    live: usize,
    allocated: usize,
    allocations: u64,
    frees: u64,
}

/// Counters of huge allocations.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HugeStats {
    pub live: usize,
    pub allocated: usize,
    pub allocations: u64,
    pub frees: u64,
}

/// The heap's huge allocations: `HUGE_SHARDS` independent shards.
pub(crate) struct Huge {
    shards: [HugeShard; HUGE_SHARDS],
}

/// One shard: a lock over a list of records and its counters.
struct HugeShard {
    lock: RawLock,
    inner: UnsafeCell<HugeInner>,
}

// SAFETY: `inner` and the records on its lists are reached only with `lock` held (a record's
// address and size are also read by the thread that owns the allocation, which no other
// thread may free concurrently).
unsafe impl Sync for HugeShard {}
// SAFETY: as above.
unsafe impl Send for HugeShard {}

impl Huge {
    loom_const_fn! {
        pub fn new() -> Huge {
            Huge {
                shards: [
                    HugeShard::new(),
                    HugeShard::new(),
                    HugeShard::new(),
                    HugeShard::new(),
                ],
            }
        }
    }

    /// The shard of the calling thread.
    fn mine(&self) -> usize {
        // Thread keys are addresses (or spaced like them): a multiplicative hash's top bits.
        let h = crate::thread::thread_key().wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h >> (usize::BITS - HUGE_SHARDS.trailing_zeros())
    }

    /// The shard that holds `rec`.
    ///
    /// # Safety
    /// `rec` is a live record of this heap (from its page map).
    unsafe fn shard_of(&self, rec: usize) -> &HugeShard {
        // SAFETY: per the contract; the field is fixed while the record is live.
        &self.shards[unsafe { (*(rec as *const HugeRecord)).shard } % HUGE_SHARDS]
    }

    /// Maps `bytes` (a page multiple) aligned to `align`; null if the OS refuses.
    pub fn alloc(&self, bytes: usize, align: usize, base: &Base, map: &PageMap) -> *mut u8 {
        let i = self.mine();
        self.shards[i].alloc(i, bytes, align, base, map)
    }

    /// Unmaps the huge allocation at `addr`.
    ///
    /// # Safety
    /// `rec` came from this heap's page map for `addr` and `usable(rec, addr)` succeeded.
    pub unsafe fn free(&self, rec: usize, map: &PageMap) {
        // SAFETY: forwarded contract.
        unsafe { self.shard_of(rec).free(rec, map) }
    }

    /// Resizes the huge allocation at `rec` to `bytes` (page multiple, beyond `LARGE_MAX`),
    /// moving its pages if needed. Returns the new address, or null if the OS refused (the
    /// allocation is then unchanged).
    ///
    /// # Safety
    /// As for `free`.
    pub unsafe fn resize(&self, rec: usize, bytes: usize, map: &PageMap) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.shard_of(rec).resize(rec, bytes, map) }
    }

    /// Checks that `addr`, whose page-map record is `rec`, starts a live huge allocation;
    /// returns its usable size.
    ///
    /// # Safety
    /// `rec` came from this heap's page map.
    pub unsafe fn usable(rec: usize, addr: usize) -> Result<usize, FreeError> {
        let rec = rec as *const HugeRecord;
        // SAFETY: records referenced by the page map are live (cleared before reuse).
        let (a, s) = unsafe { ((*rec).addr, (*rec).size) };
        if a != addr {
            return Err(FreeError::Interior);
        }
        Ok(s)
    }

    /// The shards' counters, added up (each shard's are read under its lock).
    pub fn stats(&self) -> HugeStats {
        let mut t = HugeStats::default();
        for sh in &self.shards {
            let s = sh.stats();
            t.live += s.live;
            t.allocated += s.allocated;
            t.allocations += s.allocations;
            t.frees += s.frees;
        }
        t
    }

    /// Every shard's records and counters (see `HugeShard::check`).
    pub fn check(&self, map: &PageMap) -> Result<(), Violation> {
        for (i, sh) in self.shards.iter().enumerate() {
            sh.check(i, map)?;
        }
        Ok(())
    }

    /// Unmaps every huge allocation (heap drop).
    ///
    /// # Safety
    /// No huge allocation is used afterwards.
    pub unsafe fn release_all(&self, map: &PageMap) {
        for sh in &self.shards {
            // SAFETY: forwarded contract.
            unsafe { sh.release_all(map) };
        }
    }

    /// Takes every shard's lock, in order (fork).
    pub(crate) fn lock(&self) {
        for sh in &self.shards {
            sh.lock.lock();
        }
    }
    pub(crate) fn unlock(&self) {
        for sh in self.shards.iter().rev() {
            sh.lock.unlock();
        }
    }
    pub(crate) fn reset_lock(&self) {
        for sh in &self.shards {
            sh.lock.reset();
        }
    }
}

impl HugeShard {
    loom_const_fn! {
        fn new() -> HugeShard {
            HugeShard {
                lock: RawLock::new(),
                inner: UnsafeCell::new(HugeInner {
                    list: ptr::null_mut(),
                    spare: ptr::null_mut(),
                    live: 0,
                    allocated: 0,
                    allocations: 0,
                    frees: 0,
                }),
            }
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut HugeInner) -> R) -> R {
        let _g = self.lock.guard();
        // SAFETY: the lock is held for the whole closure.
        self.inner.with_mut(|p| f(unsafe { &mut *p }))
    }

    /// `Huge::alloc`, in this shard (number `shard`).
    fn alloc(
        &self,
        shard: usize,
        bytes: usize,
        align: usize,
        base: &Base,
        map: &PageMap,
    ) -> *mut u8 {
        let align = align.max(CHUNK);
        let Some(mem) = os::map_aligned(bytes, align) else {
            return ptr::null_mut();
        };
        let addr = mem.as_ptr() as usize;
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
                None => {
                    // SAFETY: never published.
                    unsafe { os::unmap(mem.as_ptr(), bytes) };
                    return ptr::null_mut();
                }
            }
        } else {
            rec
        };
        // SAFETY: the record is ours until linked below.
        unsafe {
            rec.write(HugeRecord {
                addr,
                size: bytes,
                align,
                shard,
                prev: ptr::null_mut(),
                next: ptr::null_mut(),
            })
        };
        if !map.set(addr, bytes, rec as usize | TAG_HUGE) {
            map.clear(addr, bytes);
            // SAFETY: never handed out.
            unsafe { os::unmap(mem.as_ptr(), bytes) };
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
            h.allocations += 1;
        });
        mem.as_ptr()
    }

    /// `Huge::free`, for a record of this shard.
    ///
    /// # Safety
    /// As for `Huge::free`.
    unsafe fn free(&self, rec: usize, map: &PageMap) {
        let rec = rec as *mut HugeRecord;
        // SAFETY: the record is live (contract); it is unlinked under the lock.
        let (addr, size) = unsafe { ((*rec).addr, (*rec).size) };
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
            h.frees += 1;
        });
        // SAFETY: the mapping was ours and nothing refers to it anymore.
        unsafe { os::unmap(addr as *mut u8, size) };
    }

    /// `Huge::resize`, for a record of this shard.
    ///
    /// # Safety
    /// As for `Huge::free`.
    unsafe fn resize(&self, rec: usize, bytes: usize, map: &PageMap) -> *mut u8 {
        // Under the lock throughout, so that `check` never sees the record and the page map
        // disagree mid-move.
        self.with(|h| {
            // SAFETY: forwarded contract.
            let p = unsafe { Self::resize_locked(rec as *mut HugeRecord, bytes, map) };
            if !p.is_null() {
                // SAFETY: the record is live.
                let old = unsafe { (*(rec as *mut HugeRecord)).size };
                h.allocated = h.allocated - old + bytes;
                // SAFETY: as above.
                unsafe { (*(rec as *mut HugeRecord)).size = bytes };
            }
            p
        })
    }

    /// # Safety
    /// As for `resize`; the lock is held. Does not update the record's size.
    unsafe fn resize_locked(rec: *mut HugeRecord, bytes: usize, map: &PageMap) -> *mut u8 {
        // SAFETY: the caller owns the allocation, hence the record's fields.
        let (addr, old, align) = unsafe { ((*rec).addr, (*rec).size, (*rec).align) };
        if bytes == old {
            return addr as *mut u8;
        }
        let tag = rec as usize | TAG_HUGE;
        // The page map forgets a range before the range goes back to the OS, never after:
        // once unmapped, another thread's new chunk or huge mapping may land there at once, and
        // a late `clear` would erase its entries.
        if bytes < old {
            Self::forget_from(map, addr + bytes, addr + old);
            // SAFETY: the tail pages are part of our mapping and beyond the new size.
            unsafe { os::unmap((addr + bytes) as *mut u8, old - bytes) };
            return addr as *mut u8;
        }
        // SAFETY: our mapping; without MAYMOVE it only grows into free address space.
        if unsafe { os::remap_in_place(addr as *mut u8, old, bytes) } {
            if map.set(addr, bytes, tag) {
                return addr as *mut u8;
            }
            // Metadata refused: shrink back and report failure.
            Self::forget_from(map, addr + old, addr + bytes);
            // SAFETY: the pages past `old` were just added to our mapping.
            unsafe { os::unmap((addr + old) as *mut u8, bytes - old) };
            return ptr::null_mut();
        }
        let Some(dest) = os::map_aligned(bytes, align) else {
            return ptr::null_mut();
        };
        let dest = dest.as_ptr() as usize;
        // The move unmaps the old range: forget it first (the caller owns the allocation, so
        // nobody looks it up meanwhile), and restore it if the move fails (its leaves exist,
        // so `set` cannot fail there).
        map.clear(addr, old);
        let moved = map.set(dest, bytes, tag)
            // SAFETY: both ranges are ours; the reservation at `dest` is replaced by the pages.
            && unsafe { os::remap_to(addr as *mut u8, old, dest as *mut u8, bytes) };
        if !moved {
            map.clear(dest, bytes);
            map.set(addr, old, tag);
            // SAFETY: the reservation was never handed out.
            unsafe { os::unmap(dest as *mut u8, bytes) };
            return ptr::null_mut();
        }
        // SAFETY: the caller owns the allocation.
        unsafe { (*rec).addr = dest };
        dest as *mut u8
    }

    /// Forgets the chunks holding `from..end`, except the one holding `from - 1`, which still
    /// belongs to the allocation. (A huge mapping starts on a chunk boundary, so no other
    /// mapping of this heap shares a chunk with its tail.)
    fn forget_from(map: &PageMap, from: usize, end: usize) {
        if let Some(keep) = round_up(from, CHUNK) {
            if keep < end {
                map.clear(keep, end - keep);
            }
        }
    }

    fn stats(&self) -> HugeStats {
        self.with(|h| HugeStats {
            live: h.live,
            allocated: h.allocated,
            allocations: h.allocations,
            frees: h.frees,
        })
    }

    /// Every live record of shard `me` names it and is found by the page map for each chunk
    /// it covers; counters add up.
    fn check(&self, me: usize, map: &PageMap) -> Result<(), Violation> {
        self.with(|h| {
            let (mut n, mut bytes) = (0, 0);
            let mut r = h.list;
            while !r.is_null() {
                // SAFETY: records on the list are live, under the lock.
                let (addr, size, next, shard) =
                    unsafe { ((*r).addr, (*r).size, (*r).next, (*r).shard) };
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
    unsafe fn release_all(&self, map: &PageMap) {
        self.with(|h| {
            let mut r = h.list;
            while !r.is_null() {
                // SAFETY: per the contract.
                unsafe {
                    map.clear((*r).addr, (*r).size);
                    os::unmap((*r).addr as *mut u8, (*r).size);
                    r = (*r).next;
                }
            }
            h.list = ptr::null_mut();
        });
    }
}
