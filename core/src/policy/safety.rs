//! The debugging and hardening dimension: what a configuration compiles in (`DebugCaps`, the
//! `Config::DEBUG` constant) and what a heap turns on at run time (`Safety`, in `Options`).
//!
//! A check costs nothing when its capability is not compiled in: every hook tests
//! `C::DEBUG` first, a constant, so the compiler removes the hook. When it is compiled in but
//! off at run time, a hook costs one test of a flag the heap already holds.
//!
//! | option | what it does | when it reports |
//! |---|---|---|
//! | poisoning (`none`, `some` = first N bytes, `all`) | fills freed small regions and large allocations with `0xe5` | on reuse, if a poisoned byte changed: "write after free" with the address, size class and offset |
//! | zero | fills freed memory with zeros instead (same extent; `all` if poisoning is `none`) | as poisoning |
//! | junk | fills new allocations with `0xe4` (not `calloc`) | never: it makes reads of uninitialized memory visible |
//! | canary | bytes after every small allocation, checked on free | on free: "heap overflow" with the offset written |
//! | guard | an inaccessible page after every large allocation, which ends right at it (as far as alignment allows) | the overflow faults |
//! | quarantine | freed memory is held back (FIFO, bounded in bytes per arena) before reuse; held large allocations are inaccessible | on eviction (write after free), on access (fault), on a second free |
//! | zero-size | `malloc(0)` returns a unique pointer into an inaccessible region | any access faults |
//! | sample, sample_ms | one allocation in N, or one per interval, goes to a guarded slot (`sampled.rs`) | a fault near it, with both stacks |
//! | zero_check (`off`, `recycled`, `all`) | reads memory the heap takes believing it zero: purged pages it reuses (`recycled`); also every chunk and huge mapping fresh from `mmap` (`all`, the bug of jemalloc's 2013 debug build) | when taken: "memory that should be zero is not" with the address and byte |
//!
//! Fresh pages from the OS are never filled or checked (except by `zero_check: all`, which
//! exists to show what checking them costs): they are zero, and a region that was never handed
//! out is skipped by the reuse check.

/// Where a heap with a thread cache decides whether an allocation is sampled
/// (`Config::SAMPLE_PATH`): the decision implementations KFENCE's authors compared, chosen
/// when the config is compiled. In a heap without a thread cache every allocation takes the
/// slow path, and the three differ only in `Gate` sampling the allocation after the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SamplePath {
    /// Only allocations that miss the thread cache count down and may be sampled: the cache's
    /// fast path has no sampling code at all (KFENCE's "stealing": samples are taken where
    /// the main allocator refills). Sampling by time (`sample_ms`) leaves the cache on; a
    /// count (`sample: N`, one in N allocations) turns it off, so that every allocation
    /// reaches the decision.
    SlowPath,
    /// Every allocation counts down, the fast path included: a thread-local counter and a
    /// branch on every `malloc` (KFENCE's naive per-CPU counter).
    Countdown,
    /// Every allocation tests one shared flag, which the slow path's countdown (or clock)
    /// opens; the next allocation on any thread closes it and is sampled: one load of a
    /// read-mostly cache line on every allocation.
    Gate,
    /// A static key (`static_key.rs`), as KFENCE's: every allocation runs a 5-byte `nop` in
    /// the code, which the slow path's countdown (or clock) patches into a `jmp` to `Gate`'s
    /// test when it opens the gate, and which the allocation that closes the gate patches
    /// back. No load on the fast path while no sample is pending. On x86-64 Linux only;
    /// elsewhere (see `static_key::PATCHED`) it compiles to `Gate`. Where the system refuses
    /// to patch code, the slow path samples its own allocation instead (as `SlowPath`).
    StaticKey,
}

/// Debug capabilities, compiled into a configuration (`Config::DEBUG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DebugCaps(u16);

impl DebugCaps {
    /// Nothing: every hook compiles away.
    pub const NONE: DebugCaps = DebugCaps(0);
    /// Poisoning freed memory and checking it on reuse.
    pub const POISON: DebugCaps = DebugCaps(1);
    /// Junk on allocation.
    pub const JUNK: DebugCaps = DebugCaps(1 << 1);
    /// Zero on free (checked on reuse like poison).
    pub const ZERO: DebugCaps = DebugCaps(1 << 2);
    /// Canaries after small allocations.
    pub const CANARY: DebugCaps = DebugCaps(1 << 3);
    /// Guard pages after large allocations.
    pub const GUARD: DebugCaps = DebugCaps(1 << 4);
    /// Quarantine of freed memory.
    pub const QUARANTINE: DebugCaps = DebugCaps(1 << 5);
    /// `malloc(0)` into an inaccessible region.
    pub const ZERO_SIZE: DebugCaps = DebugCaps(1 << 6);
    /// Sampled guarded allocations (`sampled.rs`).
    pub const SAMPLE: DebugCaps = DebugCaps(1 << 7);
    /// Checking that memory taken as zero is zero (`ZeroCheck`).
    pub const ZERO_CHECK: DebugCaps = DebugCaps(1 << 8);
    /// Everything: every option can be chosen at run time.
    pub const ALL: DebugCaps = DebugCaps((1 << 9) - 1);

    /// Both sets.
    pub const fn union(self, other: DebugCaps) -> DebugCaps {
        DebugCaps(self.0 | other.0)
    }

    /// Whether every capability of `other` is in `self`.
    pub const fn contains(self, other: DebugCaps) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any capability of `other` is in `self`.
    pub const fn intersects(self, other: DebugCaps) -> bool {
        self.0 & other.0 != 0
    }

    /// The capabilities of `self` that are not in `other`.
    pub const fn without(self, other: DebugCaps) -> DebugCaps {
        DebugCaps(self.0 & !other.0)
    }

    /// Whether this is `NONE`.
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The names of the capabilities in `self`, for messages.
    pub fn write_names(self, w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        const NAMES: [&str; 9] = [
            "poison",
            "junk",
            "zero",
            "canary",
            "guard",
            "quarantine",
            "zero-size",
            "sample",
            "zero-check",
        ];
        let mut first = true;
        for (i, n) in NAMES.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                if !first {
                    w.write_str(", ")?;
                }
                w.write_str(n)?;
                first = false;
            }
        }
        Ok(())
    }
}

/// How much of a freed allocation is poisoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poison {
    /// Nothing.
    None,
    /// The first N bytes (a multiple of the 64-byte cache line), as mozjemalloc's `some`.
    Some(usize),
    /// Every byte.
    All,
}

/// Which memory the heap reads to confirm it is zero when it takes it believing so (the
/// `zero_check` option; `arena.rs`, `huge.rs`). jemalloc's debug builds of 2012-13 checked
/// every chunk they obtained as zeroed, fresh ones from `mmap` included: reading a fresh page
/// faults it in, so each process paid for whole chunks it never used (FreeBSD's
/// `MALLOC_PRODUCTION` thread: about 8 MiB per process, start-up 12 times slower). The fix
/// skipped memory known to come fresh from the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroCheck {
    /// Nothing is checked.
    Off,
    /// The fix: only memory that is zero because the heap made it so, and could have been
    /// written since: pages it purged (`MADV_DONTNEED`) and takes again for a run or a zeroed
    /// large allocation. Pages fresh from `mmap` are never read.
    Recycled,
    /// The seed's bug: also every page of every chunk and huge mapping as it comes from
    /// `mmap`, all of it read at once, and fresh pages again when a run or a zeroed large
    /// allocation takes them.
    All,
}

/// The poison byte written over freed memory (mozjemalloc's).
pub const POISON_BYTE: u8 = 0xe5;
/// The junk byte written over new allocations (mozjemalloc's).
pub const JUNK_BYTE: u8 = 0xe4;
/// The byte written after a small allocation's zero byte, up to its size record.
pub const CANARY_BYTE: u8 = 0xca;
/// Bytes a canary takes at least: the zero byte that ends it for string functions, and the
/// four-byte size record (the size twice, under two keys).
pub const CANARY_BYTES: usize = 5;
/// The default size of `Poison::Some`.
pub const POISON_SOME_DEFAULT: usize = 256;
/// The cache line: `Poison::Some` sizes are multiples of it.
pub const CACHE_LINE: usize = 64;

/// The run-time debug options of a heap (part of `Options`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Safety {
    /// Poisoning of freed memory.
    pub poison: Poison,
    /// Junk on allocation.
    pub junk: bool,
    /// Zero on free (instead of the poison byte).
    pub zero: bool,
    /// Canaries after small allocations.
    pub canary: bool,
    /// Guard pages after large allocations.
    pub guard: bool,
    /// Bytes of freed memory each arena holds back before reuse; 0: no quarantine.
    pub quarantine: usize,
    /// `malloc(0)` returns a unique pointer into an inaccessible region.
    pub zero_size: bool,
    /// Sample one allocation in this many on average into guarded slots (1: every eligible
    /// one; 0: none by count).
    pub sample: usize,
    /// Sample the first allocation after each interval of this many milliseconds (0: none).
    pub sample_ms: usize,
    /// Which memory taken as zero is checked to be zero.
    pub zero_check: ZeroCheck,
}

impl Safety {
    /// Every check off (the default profile).
    pub const OFF: Safety = Safety {
        poison: Poison::None,
        junk: false,
        zero: false,
        canary: false,
        guard: false,
        quarantine: 0,
        zero_size: false,
        sample: 0,
        sample_ms: 0,
        zero_check: ZeroCheck::Off,
    };

    /// The hardened profile: cheap checks that catch common misuse in production.
    pub const HARDENED: Safety = Safety {
        poison: Poison::Some(POISON_SOME_DEFAULT),
        junk: false,
        zero: false,
        canary: true,
        guard: true,
        quarantine: 1 << 20,
        zero_size: true,
        sample: 0,
        sample_ms: 0,
        zero_check: ZeroCheck::Off,
    };

    /// The debug profile: every check, full poisoning and junk, a larger quarantine.
    pub const DEBUG: Safety = Safety {
        poison: Poison::All,
        junk: true,
        zero: false,
        canary: true,
        guard: true,
        quarantine: 16 << 20,
        zero_size: true,
        sample: 0,
        sample_ms: 0,
        zero_check: ZeroCheck::Off,
    };

    /// The capabilities these options need compiled in.
    pub const fn needs(&self) -> DebugCaps {
        let mut c = 0;
        if !matches!(self.poison, Poison::None) {
            c |= DebugCaps::POISON.0;
        }
        if self.junk {
            c |= DebugCaps::JUNK.0;
        }
        if self.zero {
            c |= DebugCaps::ZERO.0;
        }
        if self.canary {
            c |= DebugCaps::CANARY.0;
        }
        if self.guard {
            c |= DebugCaps::GUARD.0;
        }
        if self.quarantine > 0 {
            c |= DebugCaps::QUARANTINE.0;
        }
        if self.zero_size {
            c |= DebugCaps::ZERO_SIZE.0;
        }
        if self.sample > 0 || self.sample_ms > 0 {
            c |= DebugCaps::SAMPLE.0;
        }
        if !matches!(self.zero_check, ZeroCheck::Off) {
            c |= DebugCaps::ZERO_CHECK.0;
        }
        DebugCaps(c)
    }

    /// Whether the options are consistent: a `Some` size is a positive multiple of the cache
    /// line. Returns why not.
    pub const fn validate(&self) -> Result<(), &'static str> {
        if let Poison::Some(n) = self.poison {
            if n == 0 || n % CACHE_LINE != 0 {
                return Err("poison size must be a positive multiple of 64 bytes");
            }
        }
        Ok(())
    }

    /// Whether memory taken as zero is checked: pages fresh from the OS (`fresh`) only under
    /// `ZeroCheck::All`, recycled ones under either mode.
    #[inline(always)]
    pub fn checks_zero(&self, fresh: bool) -> bool {
        match self.zero_check {
            ZeroCheck::Off => false,
            ZeroCheck::Recycled => !fresh,
            ZeroCheck::All => true,
        }
    }

    /// The byte freed memory is filled with, and how many bytes of an allocation of `size`
    /// bytes; `None` if freed memory is not filled.
    #[inline(always)]
    pub fn fill(&self, size: usize) -> Option<(u8, usize)> {
        let byte = if self.zero { 0 } else { POISON_BYTE };
        match self.poison {
            Poison::None if self.zero => Some((byte, size)),
            Poison::None => None,
            Poison::Some(n) => Some((byte, n.min(size))),
            Poison::All => Some((byte, size)),
        }
    }
}

impl Default for Safety {
    fn default() -> Self {
        Safety::OFF
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kills the campaign's survivors `replace << with >> in DebugCaps::write_names` and
    /// `delete ! in DebugCaps::write_names`: each capability by its own bit, joined by commas.
    #[test]
    fn names_are_listed_in_bit_order_joined_by_commas() {
        let mut w = String::new();
        DebugCaps::POISON
            .union(DebugCaps::CANARY)
            .union(DebugCaps::ZERO_CHECK)
            .write_names(&mut w)
            .unwrap();
        assert_eq!(w, "poison, canary, zero-check");
        let mut none = String::new();
        DebugCaps::NONE.write_names(&mut none).unwrap();
        assert_eq!(none, "");
    }

    /// Kills the campaign's survivor `replace == with != in Safety::validate` (shard 19): a
    /// poison size is valid exactly when it is a positive multiple of the cache line.
    #[test]
    fn a_poison_size_is_a_positive_multiple_of_the_cache_line() {
        let with = |poison| Safety {
            poison,
            ..Safety::OFF
        };
        for n in [CACHE_LINE, 2 * CACHE_LINE, 64 * CACHE_LINE] {
            assert_eq!(with(Poison::Some(n)).validate(), Ok(()), "{n}");
        }
        for n in [0, 1, CACHE_LINE - 1, CACHE_LINE + 1, 3 * CACHE_LINE / 2] {
            assert!(with(Poison::Some(n)).validate().is_err(), "{n}");
        }
        assert_eq!(with(Poison::None).validate(), Ok(()));
        assert_eq!(with(Poison::All).validate(), Ok(()));
    }
}
