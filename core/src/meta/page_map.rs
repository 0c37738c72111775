//! `PageMap`: from any address to the chunk that owns it, in O(1), without touching the
//! memory at that address.
//!
//! A two-level radix tree over chunk numbers (address >> 20) of the 48-bit user address space:
//! a root of 2^14 leaf pointers, leaves of 2^14 entries, both mmap'd (untouched parts cost no
//! RSS). An entry is 0 for "not ours", or a tagged word: an arena chunk's own address with
//! `TAG_CHUNK`, or a huge allocation's record with `TAG_HUGE` (set for every chunk the huge
//! mapping covers). Within a chunk, the chunk header's per-page entries take over.
//!
//! Readers never lock: leaves are published with a release compare-exchange and entries are
//! atomic words. Writers are the owners of the chunks they describe.

use crate::meta::size_class::CHUNK;
use crate::platform::os;
use crate::platform::sync::untracked::{AtomicPtr, AtomicUsize};
use crate::platform::sync::Ordering;
use core::ptr::{self, NonNull};

const ADDRESS_BITS: u32 = 48;
const CHUNK_BITS: u32 = CHUNK.trailing_zeros();
const KEY_BITS: u32 = ADDRESS_BITS - CHUNK_BITS;
const LEAF_BITS: u32 = KEY_BITS / 2;
const ROOT_BITS: u32 = KEY_BITS - LEAF_BITS;
const LEAF_LEN: usize = 1 << LEAF_BITS;
const ROOT_LEN: usize = 1 << ROOT_BITS;

/// Entry tag of an arena chunk.
pub const TAG_CHUNK: usize = 1;
/// Entry tag of a huge allocation's record.
pub const TAG_HUGE: usize = 2;
const TAG_MASK: usize = 7;

struct Leaf {
    entries: [AtomicUsize; LEAF_LEN],
}

/// What the page map knows of an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Not this heap's memory.
    None,
    /// Inside an arena chunk, whose header is at this address.
    Chunk(usize),
    /// Inside a huge allocation, whose record is at this address.
    Huge(usize),
}

/// The radix tree. Lives in memory mapped by its owner; see [`PageMap::create`].
pub struct PageMap {
    root: NonNull<AtomicPtr<Leaf>>,
    /// Leaves published so far (for `metadata_bytes`, without scanning the root).
    leaves: AtomicUsize,
}

// SAFETY: all shared state is reached through atomics.
unsafe impl Send for PageMap {}
// SAFETY: as above.
unsafe impl Sync for PageMap {}

impl PageMap {
    /// Maps an empty tree; `None` if the OS refuses the memory.
    pub fn create() -> Option<PageMap> {
        let bytes = ROOT_LEN * core::mem::size_of::<AtomicPtr<Leaf>>();
        let root = os::map(bytes)?.cast::<AtomicPtr<Leaf>>();
        // Zeroed memory is a valid array of null atomic pointers (these are `core`'s atomics).
        Some(PageMap {
            root,
            leaves: AtomicUsize::new(0),
        })
    }

    /// Bytes of metadata mapped for this tree.
    pub fn metadata_bytes(&self) -> usize {
        ROOT_LEN * core::mem::size_of::<AtomicPtr<Leaf>>()
            + self.leaves.load(Ordering::Relaxed) * core::mem::size_of::<Leaf>()
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> &AtomicPtr<Leaf> {
        debug_assert!(i < ROOT_LEN);
        // SAFETY: `i < ROOT_LEN` (keys are masked by the callers) and the root lives as long as
        // `self`.
        unsafe { &*self.root.as_ptr().add(i) }
    }

    #[inline(always)]
    fn split(addr: usize) -> Option<(usize, usize)> {
        let key = addr >> CHUNK_BITS;
        if key >> KEY_BITS != 0 {
            return None;
        }
        Some((key >> LEAF_BITS, key & (LEAF_LEN - 1)))
    }

    /// Who owns `addr`, if this heap does.
    #[inline(always)]
    pub fn lookup(&self, addr: usize) -> Owner {
        let Some((r, l)) = Self::split(addr) else {
            return Owner::None;
        };
        let leaf = self.slot(r).load(Ordering::Acquire);
        if leaf.is_null() {
            return Owner::None;
        }
        // SAFETY: published leaves stay mapped until the tree is dropped; `l < LEAF_LEN`.
        let v = unsafe { (*leaf).entries[l].load(Ordering::Acquire) };
        match v & TAG_MASK {
            // The tag is known here: subtracting it lets the compiler fold it into the
            // displacement of the caller's next load (a mask would be one more instruction).
            TAG_CHUNK => Owner::Chunk(v - TAG_CHUNK),
            TAG_HUGE => Owner::Huge(v - TAG_HUGE),
            _ => Owner::None,
        }
    }

    fn leaf_for(&self, r: usize) -> Option<&Leaf> {
        let slot = self.slot(r);
        let cur = slot.load(Ordering::Acquire);
        if !cur.is_null() {
            // SAFETY: published leaves live as long as the tree.
            return Some(unsafe { &*cur });
        }
        let fresh = os::map(core::mem::size_of::<Leaf>())?.cast::<Leaf>();
        match slot.compare_exchange(
            ptr::null_mut(),
            fresh.as_ptr(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.leaves.fetch_add(1, Ordering::Relaxed);
                // SAFETY: we just published it.
                Some(unsafe { &*fresh.as_ptr() })
            }
            Err(other) => {
                // SAFETY: `fresh` was never published.
                unsafe { Self::free_leaf(fresh.as_ptr()) };
                // SAFETY: `other` was published by the winner.
                Some(unsafe { &*other })
            }
        }
    }

    /// # Safety
    /// `leaf` was mapped by `leaf_for` and is no longer reachable.
    unsafe fn free_leaf(leaf: *mut Leaf) {
        // SAFETY: mapped in `leaf_for` with this size.
        unsafe { os::unmap(leaf.cast(), core::mem::size_of::<Leaf>()) };
    }

    /// Records that the chunks covering `addr..addr+len` (chunk-aligned `addr`) belong to
    /// `value` (an address with a tag). Returns false if the metadata could not be mapped.
    pub fn set(&self, addr: usize, len: usize, value: usize) -> bool {
        debug_assert_eq!(addr % CHUNK, 0);
        let mut a = addr;
        while a < addr + len {
            let Some((r, l)) = Self::split(a) else {
                return false;
            };
            let Some(leaf) = self.leaf_for(r) else {
                return false;
            };
            leaf.entries[l].store(value, Ordering::Release);
            a += CHUNK;
        }
        true
    }

    /// Forgets the chunks covering `addr..addr+len`.
    pub fn clear(&self, addr: usize, len: usize) {
        let mut a = addr;
        while a < addr + len {
            if let Some((r, l)) = Self::split(a) {
                let leaf = self.slot(r).load(Ordering::Acquire);
                if !leaf.is_null() {
                    // SAFETY: published leaves live as long as the tree.
                    unsafe { (*leaf).entries[l].store(0, Ordering::Release) };
                }
            }
            a += CHUNK;
        }
    }
}

impl Drop for PageMap {
    fn drop(&mut self) {
        for i in 0..ROOT_LEN {
            let leaf = self.slot(i).load(Ordering::Relaxed);
            if !leaf.is_null() {
                // SAFETY: we own every published leaf and nobody can reach them anymore.
                unsafe { Self::free_leaf(leaf) };
            }
        }
        // SAFETY: mapped in `create` with this size.
        unsafe {
            os::unmap(
                self.root.as_ptr().cast(),
                ROOT_LEN * core::mem::size_of::<AtomicPtr<Leaf>>(),
            )
        };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn answers_only_for_what_was_set() {
        let m = PageMap::create().unwrap();
        let a = 0x7f12_3450_0000usize & !(CHUNK - 1);
        assert_eq!(m.lookup(a), Owner::None);
        assert!(m.set(a, CHUNK, a | TAG_CHUNK));
        assert_eq!(m.lookup(a), Owner::Chunk(a));
        assert_eq!(m.lookup(a + 12345), Owner::Chunk(a));
        assert_eq!(m.lookup(a + CHUNK), Owner::None);
        assert_eq!(m.lookup(a - 1), Owner::None);
        let h = 0x5000_0000usize;
        assert!(m.set(h, 3 * CHUNK - 4096, 0x1000 | TAG_HUGE));
        assert_eq!(m.lookup(h + 2 * CHUNK + 5), Owner::Huge(0x1000));
        m.clear(h, 3 * CHUNK);
        assert_eq!(m.lookup(h), Owner::None);
        assert_eq!(m.lookup(usize::MAX), Owner::None);
        assert_eq!(m.lookup(1 << 50), Owner::None);
        assert!(m.metadata_bytes() >= core::mem::size_of::<Leaf>() * 2);
    }

    /// Kills the campaign's survivor `replace * with + in PageMap::metadata_bytes`: the root,
    /// then one leaf's bytes per leaf made.
    #[test]
    fn metadata_is_the_root_and_each_leaf() {
        let m = PageMap::create().unwrap();
        let root = ROOT_LEN * core::mem::size_of::<AtomicPtr<Leaf>>();
        assert_eq!(m.metadata_bytes(), root);
        let a = 0x7f12_3450_0000usize & !(CHUNK - 1);
        assert!(m.set(a, CHUNK, a | TAG_CHUNK));
        assert_eq!(m.metadata_bytes(), root + core::mem::size_of::<Leaf>());
    }
}
