//! A static key for the sampling decision (`SamplePath::StaticKey`): a branch patched in the
//! code, in the manner of Linux's `static_branch_unlikely` (`arch_static_branch`), which
//! KFENCE's allocation fast path uses. While the key is off, each branch site is a 5-byte
//! `nop` that the fast path runs through: no load, no compare, no conditional branch. When a
//! heap's sampling clock (the slow path's countdown, as for `Gate`) says the next allocation
//! is to be sampled, it opens its gate and turns the key on: every site becomes a `jmp` to the
//! code after it that takes the gate. The allocation that takes the gate turns the key off
//! again, so the fast path pays for the key only between a decision and the sample.
//!
//! The key is one per copy of this crate in the process (per shared object), not per heap: the
//! sites are in code, which every heap of a configuration runs. It counts the gates open in
//! all heaps and is on while any is; a heap whose own gate is closed finds it so behind the
//! `jmp` and goes on (one load, as under `Gate`, and only while another heap's sample is
//! pending).
//!
//! # How a site is found and patched
//!
//! Each site (one per inlined copy of [`branch`]) records itself in the section
//! `alloclab_sample_sites`: the site's address and its target, each as an offset from the
//! entry (no dynamic relocation). The section is flagged `R` (`SHF_GNU_RETAIN`), so that the
//! linker's garbage collection keeps it although no code refers to it, and a sentinel entry
//! (all zero, emitted here) makes it exist in every object that links this crate, so that the
//! linker always defines `__start_`/`__stop_alloclab_sample_sites`. Both are referred to as
//! hidden symbols: the table is the one of the shared object (or executable) the code is in,
//! never one interposed from another.
//!
//! # Why patching is safe while other threads run the sites (x86-64 Linux)
//!
//! - **One store.** Each site is aligned so that its 5 bytes lie inside one naturally aligned
//!   8-byte word (`.balign 8, , 4` pads only when they would cross one; checked again before
//!   every patch). The patch reads the word and writes it back with the 5 bytes changed, as
//!   one aligned 8-byte store, which x86-64 performs atomically. A thread fetching the
//!   instruction meanwhile sees either the whole `nop` or the whole `jmp`, never a mix: the
//!   same property that JIT compilers' call patching relies on. The word's other 3 bytes are
//!   other code that nothing ever writes; no two sites share a word (5 + 5 > 8).
//! - **Serialization.** Intel's protocol for cross-modifying code (SDM vol. 3, 9.1.3) has every
//!   other processor execute a serializing instruction before it runs the modified code. After
//!   writing, the patching thread calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)`
//!   (Linux 4.16), which returns only once every other running thread of the process has
//!   executed a core-serializing instruction: from then on all of them run the new bytes.
//!   Until then a thread may run either instruction, and both are correct (below). Where
//!   membarrier is refused (an older kernel, a sandbox), nothing is patched.
//! - **Both states are correct.** Falling through skips the sample for one allocation; the
//!   `jmp` leads to a test of the heap's gate, which is exactly `Gate`. So a thread that runs a
//!   stale instruction, a site left as a `jmp` after a failed patch, or the gate stores and the
//!   code store becoming visible in either order, can only delay a sample or cost a load; a
//!   sample is taken once per opening because the gate is closed by a swap.
//! - **Page protection.** The text page is made readable, writable and executable for the
//!   store (never non-executable: other threads are running it), then readable and executable
//!   again. The first write copies the page (the text is a private file mapping); the copy
//!   has the same bytes, so threads running it across the copy see no difference. A system that
//!   forbids a writable executable page (an SELinux `execmod` denial) refuses the `mprotect`:
//!   the key then never turns on, and the slow path samples its own allocation instead
//!   (`SamplePath::StaticKey`'s fallback, as `SlowPath`).
//! - **One patcher.** Patches are made under a spin lock that is taken after every heap lock
//!   (the fork handlers take it last and reset it in the child), and the patching code
//!   allocates nothing and takes no other lock, so the allocator never allocates through
//!   itself while holding it. A thread that changes the count of open gates reconciles the
//!   sites with it under the lock afterwards, so the last reconciliation sees the final count.
//!
//! # Elsewhere
//!
//! On other architectures and systems (and under loom and shuttle, which model no code
//! patching), [`PATCHED`] is false, [`branch`] is not used and `SamplePath::StaticKey` compiles
//! to `Gate`'s shared flag: a load on every allocation, documented as such.

use crate::platform::sync::untracked::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// Whether this build patches a branch in the code; if not, `SamplePath::StaticKey` is `Gate`.
pub const PATCHED: bool = cfg!(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(loom),
    not(shuttle)
));

/// Gates open in all heaps that use the key: it is on while this is above zero.
static OPEN: AtomicUsize = AtomicUsize::new(0);
/// The patch lock.
static LOCK: AtomicBool = AtomicBool::new(false);
/// Whether the sites are jumps, as last written under the lock.
static ON: AtomicBool = AtomicBool::new(false);
/// Patching has not been tried, works, or failed once (and is not tried again).
static STATE: AtomicU8 = AtomicU8::new(UNTRIED);
const UNTRIED: u8 = 0;
const WORKS: u8 = 1;
const BROKEN: u8 = 2;
/// Patches written (sites changed), for tests and diagnostics.
static PATCHES: AtomicUsize = AtomicUsize::new(0);

/// The branch site: `true` only while the key is on (or on a thread that has not yet run the
/// patched instruction: see the module doc).
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(loom), not(shuttle)))]
#[inline(always)]
pub(crate) fn branch() -> bool {
    // SAFETY: the code emitted in the function is a 5-byte `nop` (patched only to a `jmp` to
    // the label operand, which Rust's `asm goto` makes a valid way out) and padding `nop`s;
    // it reads and writes no register, memory or flag. The table entry goes to a data section
    // of its own.
    unsafe {
        core::arch::asm!(
            ".balign 8, , 4",
            "2:",
            ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
            ".pushsection alloclab_sample_sites, \"aR\"",
            ".balign 4",
            ".long 2b - .",
            ".long {taken} - .",
            ".popsection",
            taken = label { return true; },
            options(nomem, nostack, preserves_flags),
        );
    }
    false
}

/// Not patched here: never taken (`SamplePath::StaticKey` is `Gate`, which does not call it).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(loom), not(shuttle))))]
#[inline(always)]
pub(crate) fn branch() -> bool {
    false
}

/// Counts one more open gate; [`reconcile`] then turns the key on.
pub(crate) fn hold() {
    OPEN.fetch_add(1, Ordering::AcqRel);
}

/// One open gate fewer: the key turns off when none is left.
pub(crate) fn release() {
    let was = OPEN.fetch_sub(1, Ordering::AcqRel);
    debug_assert!(was > 0, "static key released more often than held");
    reconcile();
}

/// Whether the sites are jumps (the key is on), as last patched.
pub fn enabled() -> bool {
    ON.load(Ordering::Acquire)
}

/// Gates open in all heaps under the key (the key is on while there is one).
pub fn open_gates() -> usize {
    OPEN.load(Ordering::Acquire)
}

/// Whether this build and system can patch the sites: false on other architectures, and
/// once a patch was refused (by `mprotect` or `membarrier`).
pub fn patchable() -> bool {
    PATCHED && STATE.load(Ordering::Acquire) != BROKEN
}

/// Sites changed so far, in either direction (each site counts once per patch).
pub fn patches() -> usize {
    PATCHES.load(Ordering::Relaxed)
}

/// One branch site of this object: where its instruction is and where its `jmp` goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// Address of the 5-byte instruction.
    pub addr: usize,
    /// Address it jumps to when the key is on.
    pub target: usize,
}

impl Site {
    /// The instruction's bytes as they are now.
    pub fn bytes(&self) -> [u8; 5] {
        let mut b = [0; 5];
        for (i, v) in b.iter_mut().enumerate() {
            // SAFETY: `addr` is an instruction of this object's text, mapped and readable for
            // as long as the object is loaded; a volatile read, as another thread may patch it.
            *v = unsafe { core::ptr::read_volatile((self.addr + i) as *const u8) };
        }
        b
    }

    /// The `jmp` this site becomes when the key is on.
    pub fn jump(&self) -> Option<[u8; 5]> {
        let rel = i32::try_from(self.target as isize - (self.addr as isize + 5)).ok()?;
        let r = rel.to_le_bytes();
        Some([0xe9, r[0], r[1], r[2], r[3]])
    }
}

/// The 5-byte `nop` a site is while the key is off.
pub const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// Every branch site of the object this code is in (empty where nothing is patched).
pub fn sites() -> impl Iterator<Item = Site> {
    imp::table().iter().filter_map(|e| e.site())
}

/// Takes the patch lock. Held only for a patch (a few system calls), so spinning with a yield
/// is enough; no allocation, no other lock.
fn lock() {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        crate::platform::os::yield_now();
    }
}

fn unlock() {
    LOCK.store(false, Ordering::Release);
}

/// Makes the sites what the count of open gates asks; whether the key can be on (`false`:
/// this build or system cannot patch, and the sites stay as they are).
pub(crate) fn reconcile() -> bool {
    if !PATCHED {
        return false;
    }
    lock();
    let want = OPEN.load(Ordering::Acquire) > 0;
    let ok = if STATE.load(Ordering::Relaxed) == BROKEN {
        false
    } else if ON.load(Ordering::Relaxed) == want {
        true
    } else {
        match imp::patch(want) {
            Ok(()) => {
                STATE.store(WORKS, Ordering::Release);
                ON.store(want, Ordering::Release);
                true
            }
            Err(()) => {
                STATE.store(BROKEN, Ordering::Release);
                false
            }
        }
    };
    unlock();
    ok
}

/// `fork.rs`: before a fork, after every heap lock.
pub(crate) fn prefork() {
    lock();
}

/// `fork.rs`: in the parent.
pub(crate) fn postfork_parent() {
    unlock();
}

/// `fork.rs`: in the child, the only thread left. Its registration with `membarrier` is made
/// again (it belongs to the parent's address space).
pub(crate) fn postfork_child() {
    imp::forget_registration();
    unlock();
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(loom), not(shuttle)))]
mod imp {
    use super::{Site, NOP5, PATCHES};
    use crate::platform::os::membarrier;
    use crate::platform::sync::untracked::{AtomicBool, AtomicU64, Ordering};

    // The sentinel: the section exists in every object that links this crate, so its bounds
    // are always defined. An all-zero entry is skipped.
    core::arch::global_asm!(
        ".pushsection alloclab_sample_sites, \"aR\"",
        ".balign 4",
        ".long 0, 0",
        ".popsection",
    );

    /// One entry, as `branch` emits it: offsets from each field to the site and to its target.
    #[repr(C)]
    pub(super) struct Entry {
        site: i32,
        target: i32,
    }

    impl Entry {
        pub(super) fn site(&self) -> Option<Site> {
            if self.site == 0 {
                return None;
            }
            let base = self as *const Entry as isize;
            Some(Site {
                addr: (base + self.site as isize) as usize,
                target: (base + 4 + self.target as isize) as usize,
            })
        }
    }

    pub(super) fn table() -> &'static [Entry] {
        let (start, stop): (usize, usize);
        // SAFETY: only computes two addresses, PC-relative; the symbols are the linker's
        // bounds of this object's section (hidden: never another object's).
        unsafe {
            core::arch::asm!(
                ".hidden __start_alloclab_sample_sites",
                ".hidden __stop_alloclab_sample_sites",
                "lea {start}, [rip + __start_alloclab_sample_sites]",
                "lea {stop}, [rip + __stop_alloclab_sample_sites]",
                start = out(reg) start,
                stop = out(reg) stop,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        let n = (stop - start) / core::mem::size_of::<Entry>();
        // SAFETY: the section holds only 8-byte entries aligned to 4, read-only and mapped
        // for the object's lifetime.
        unsafe { core::slice::from_raw_parts(start as *const Entry, n) }
    }

    static REGISTERED: AtomicBool = AtomicBool::new(false);

    pub(super) fn forget_registration() {
        REGISTERED.store(false, Ordering::Relaxed);
    }

    /// Rewrites every site to a `jmp` (`on`) or the `nop`, then serializes every thread;
    /// under the patch lock. `Err` leaves some sites changed, which is correct either way.
    pub(super) fn patch(on: bool) -> Result<(), ()> {
        if !REGISTERED.load(Ordering::Relaxed) {
            if !membarrier::issue(membarrier::REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) {
                return Err(());
            }
            REGISTERED.store(true, Ordering::Relaxed);
        }
        let page = crate::platform::os::kernel_page_size();
        let mut changed = false;
        for site in super::sites() {
            let jump = site.jump().ok_or(())?;
            let (from, to) = if on { (NOP5, jump) } else { (jump, NOP5) };
            let now = site.bytes();
            if now == to {
                continue;
            }
            let offset = site.addr & 7;
            // Anything else than the two expected instructions, or a site that the store
            // would not cover in one word, is not ours to write.
            if now != from || offset > 3 {
                return Err(());
            }
            let word = site.addr - offset;
            let start = word & !(page - 1);
            // SAFETY: `start` is the page holding the site, in this object's text; it stays
            // executable throughout, so threads running it are unaffected.
            if !unsafe { crate::platform::os::code_writable(start, page, true) } {
                return Err(());
            }
            // SAFETY: `word` is 8-aligned, inside the page just made writable, and only this
            // thread writes it (the patch lock); the store is one atomic 8-byte write that
            // changes the site's 5 bytes and rewrites the other 3 as they were (see the module
            // doc for why other threads may run it meanwhile).
            unsafe {
                let w = &*(word as *const AtomicU64);
                let mut bytes = w.load(Ordering::Relaxed).to_le_bytes();
                bytes[offset..offset + 5].copy_from_slice(&to);
                w.store(u64::from_le_bytes(bytes), Ordering::Release);
            }
            // SAFETY: as above; back to the text's own protection.
            let restored = unsafe { crate::platform::os::code_writable(start, page, false) };
            PATCHES.fetch_add(1, Ordering::Relaxed);
            changed = true;
            if !restored {
                return Err(());
            }
        }
        if changed && !membarrier::issue(membarrier::PRIVATE_EXPEDITED_SYNC_CORE) {
            return Err(());
        }
        Ok(())
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(loom), not(shuttle))))]
mod imp {
    use super::Site;

    pub(super) struct Entry;

    impl Entry {
        pub(super) fn site(&self) -> Option<Site> {
            None
        }
    }

    pub(super) fn table() -> &'static [Entry] {
        &[]
    }

    pub(super) fn forget_registration() {}

    pub(super) fn patch(_on: bool) -> Result<(), ()> {
        Err(())
    }
}
