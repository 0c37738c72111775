//! The debug options' hooks in an arena's small and large paths (under its lock): fill and
//! check on reuse, junk, canaries on free, guard pages and the quarantine on free.
//!
//! Every hook starts with a test of `C::DEBUG`, a constant: a configuration without the
//! capability compiles the hook away (see `safety.rs`).

use crate::back::arena::ArenaInner;
use crate::debug::checks;
use crate::debug::guard::{self, LargeAt};
use crate::debug::quarantine::Held;
use crate::meta::chunk::{ChunkHeader, LARGE, SMALL};
use crate::meta::size_class::PAGE;
use crate::platform::error::FreeError;
use crate::platform::os;
use crate::policy::safety::{DebugCaps, JUNK_BYTE};
use crate::policy::switches::{FILLS, ON_ALLOC, ON_FREE};
use crate::policy::Config;

impl<C: Config> ArenaInner<C> {
    /// After a small region of `size` bytes at `p` was taken: checks its fill if it was
    /// handed out before (`fresh` false), junks it unless `zero`.
    #[inline(always)]
    pub(crate) fn on_alloc_small(&self, p: usize, size: usize, fresh: bool, zero: bool) {
        if !(C::DEBUG.intersects(ON_ALLOC) && self.switches.debug_alloc) {
            return;
        }
        if C::DEBUG.intersects(FILLS) && !fresh {
            if let Some((byte, len)) = self.safety.fill(size) {
                // SAFETY: a region of ours just taken under the lock, `size` bytes.
                unsafe { checks::check_fill(p, size, byte, len) };
                if self.quarantine_on() && len >= core::mem::size_of::<usize>() {
                    // No longer the fill: `maybe_held` will know it is not held, even if the
                    // program never writes its first word.
                    let word = usize::from_ne_bytes([byte; core::mem::size_of::<usize>()]);
                    // SAFETY: as above; regions are 16-aligned.
                    unsafe { *(p as *mut usize) = !word };
                }
            }
        }
        if C::DEBUG.contains(DebugCaps::JUNK) && self.safety.junk && !zero {
            // SAFETY: as above.
            unsafe { checks::fill(p, size, JUNK_BYTE) };
        }
    }

    /// Whether freeing takes the debug path (`free_small_checked`, `free_large_checked`).
    #[inline(always)]
    pub(crate) fn checks_on_free(&self) -> bool {
        C::DEBUG.intersects(ON_FREE) && self.switches.debug_free
    }

    /// Whether the region at `addr` (live as far as its run knows) may be held in the
    /// quarantine: a held region starts with its fill, so when freed memory is filled, a region
    /// that does not is not held (or was written after its free, which its eviction reports),
    /// and the scan of the quarantine is skipped.
    fn maybe_held(&self, addr: usize, size: usize) -> bool {
        match self.safety.fill(size) {
            Some((byte, len)) if len >= core::mem::size_of::<usize>() => {
                let word = usize::from_ne_bytes([byte; core::mem::size_of::<usize>()]);
                // SAFETY: `addr` is a live (or held) region of ours of at least `len` bytes,
                // aligned to 16; the caller holds the lock.
                unsafe { *(addr as *const usize) == word }
            }
            _ => true,
        }
    }

    fn quarantine_on(&self) -> bool {
        C::DEBUG.contains(DebugCaps::QUARANTINE) && self.safety.quarantine > 0
    }

    /// Whether the small region at `addr` of `size` bytes, live as far as its run knows, is
    /// held in the quarantine: freed.
    pub(crate) fn held_small(&self, addr: usize, size: usize) -> bool {
        self.quarantine_on() && self.maybe_held(addr, size) && self.quarantine.contains(addr)
    }

    /// Whether the large allocation headed at `head` is held in the quarantine: freed.
    pub(crate) fn held_large(&self, head: usize) -> bool {
        self.quarantine_on() && self.quarantine.contains(head)
    }

    /// The debug side of freeing the live small region at `addr` of `size` bytes: refuses a
    /// second free of a held region, checks the canary, fills, and holds the region. Returns
    /// `Some` if the free is done (held) or refused; `None` if the region is to be put back now.
    ///
    /// # Safety
    /// `addr` is a live region of ours (validated under the lock, which is held).
    pub(crate) unsafe fn free_small_checked(
        &mut self,
        addr: usize,
        size: usize,
    ) -> Option<Result<(), FreeError>> {
        if self.held_small(addr, size) {
            return Some(Err(FreeError::Freed));
        }
        if C::DEBUG.contains(DebugCaps::CANARY) && self.safety.canary {
            // SAFETY: per the contract; every small region has a canary when canaries are on.
            unsafe { checks::check_canary(addr, size, "freed") };
        }
        if C::DEBUG.intersects(FILLS) {
            if let Some((byte, len)) = self.safety.fill(size) {
                // SAFETY: per the contract.
                unsafe { checks::fill(addr, len, byte) };
            }
        }
        if self.quarantine_on() && self.quarantine.push(Held { addr, bytes: size }) {
            self.evict();
            return Some(Ok(()));
        }
        None
    }

    /// The debug side of freeing the large allocation `at` headed at `page`: refuses a second
    /// free of a held one, poisons, removes the guard, holds it inaccessible or frees it.
    ///
    /// # Safety
    /// `at` is a live large allocation of our chunk `chunk` at `page` (validated under the
    /// lock, which is held).
    pub(crate) unsafe fn free_large_checked(
        &mut self,
        chunk: *mut ChunkHeader,
        page: usize,
        at: LargeAt,
    ) -> Result<(), FreeError> {
        let head = ChunkHeader::page_addr(chunk, page);
        if self.held_large(head) {
            return Err(FreeError::Freed);
        }
        if C::DEBUG.intersects(FILLS) {
            if let Some((byte, len)) = self.safety.fill(at.usable) {
                // SAFETY: the allocation's accessible bytes, ours per the contract.
                unsafe { checks::fill(at.start, len, byte) };
            }
        }
        if self.quarantine_on() {
            // SAFETY: the allocation's pages are ours; nothing may use them while held.
            unsafe { os::protect(head as *mut u8, at.pages * PAGE, false) };
            if self.quarantine.push(Held {
                addr: head,
                bytes: at.pages * PAGE,
            }) {
                self.evict();
                return Ok(());
            }
            // SAFETY: as above; the ring could not be mapped, so it is freed now.
            unsafe { os::protect(head as *mut u8, at.pages * PAGE, true) };
        } else if at.guarded {
            // SAFETY: per the contract.
            unsafe { guard::disarm(chunk, page, at) };
        }
        // SAFETY: per the contract.
        unsafe { self.free_large(chunk, page, at.pages) };
        Ok(())
    }

    /// Frees held allocations, oldest first, until the quarantine is within its bounds.
    fn evict(&mut self) {
        while let Some(h) = self.quarantine.pop_over(self.safety.quarantine) {
            // SAFETY: a held allocation is still live in our chunk, and we hold the lock.
            unsafe { self.release_held(h) };
        }
    }

    /// Frees a held allocation for real: checks a small region's fill first (a write after
    /// free while it was held), makes a large one accessible again.
    ///
    /// # Safety
    /// `h` left our quarantine; the lock is held.
    unsafe fn release_held(&mut self, h: Held) {
        let chunk = ChunkHeader::of(h.addr);
        let page = ChunkHeader::page_index(h.addr);
        // SAFETY: the held allocation's chunk is ours and its entries unchanged since it was
        // held (it stayed live).
        unsafe {
            let e = (*ChunkHeader::entry(chunk, page)).get();
            match e.kind() {
                SMALL => {
                    if let Some((byte, len)) = self.safety.fill(h.bytes) {
                        checks::check_fill(h.addr, h.bytes, byte, len);
                    }
                    let head = page - e.run_offset();
                    let base = ChunkHeader::page_addr(chunk, head);
                    let region = (h.addr - base) / h.bytes;
                    self.put_small(chunk, head, e.bin(), region);
                }
                LARGE => {
                    os::protect(h.addr as *mut u8, h.bytes, true);
                    self.free_large(chunk, page, h.bytes / PAGE);
                }
                _ => crate::platform::report::fatal(format_args!(
                    "quarantined allocation at {:#x} is no longer allocated (heap corrupted)",
                    h.addr
                )),
            }
        }
    }
}
