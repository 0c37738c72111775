//! Heap operations as data: what the state machine, the fuzz target and the seeded-bug
//! searches feed to a `Harness`.
//!
//! Slots are taken modulo the number of live allocations (an operation on an empty heap does
//! nothing), so every sequence is valid: the fuzzer needs no preconditions and proptest can
//! shrink freely.

use proptest::prelude::*;

/// Sizes whose runs hold few regions (7 to 14), so that short sequences fill runs, empty them
/// and make them non-full again: every event of the run-reuse protocol happens often.
pub const HOT_SIZES: [usize; 6] = [448, 2304, 1792, 3584, 336, 288];

/// One operation on a heap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `allocate(size, 1 << align_log, zero)`.
    Alloc {
        /// Requested bytes (see [`Op::size`] for how fuzz input is bounded).
        size: u32,
        /// log2 of the alignment (taken modulo 24).
        align_log: u8,
        /// Ask for zeroed memory.
        zero: bool,
    },
    /// Free the live allocation in slot `slot % live`.
    Free {
        /// Which live allocation.
        slot: u16,
    },
    /// Resize the live allocation in slot `slot % live` (C `realloc` semantics).
    Realloc {
        /// Which live allocation.
        slot: u16,
        /// New size in bytes.
        size: u32,
    },
    /// Hand an interior pointer of a live allocation to `try_free`, which must refuse it.
    FreeInterior {
        /// Which live allocation.
        slot: u16,
        /// Offset into it (taken modulo its usable size, never 0).
        offset: u32,
    },
    /// Return dirty pages to the OS.
    Purge,
}

/// Largest request an `Op` makes: a few huge allocations, never gigabytes.
pub const MAX_SIZE: usize = 3 << 20;

impl Op {
    /// The request size an `Alloc` or `Realloc` stands for, bounded by [`MAX_SIZE`].
    pub fn size(raw: u32) -> usize {
        (raw as usize % MAX_SIZE).max(1)
    }

    /// The alignment an `Alloc` stands for: 1 to 2^23.
    pub fn align(align_log: u8) -> usize {
        1 << (align_log % 24)
    }
}

/// A request size: mostly [`HOT_SIZES`], often any small size, sometimes large, rarely huge.
pub fn size_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![
        16 => proptest::sample::select(&HOT_SIZES[..]).prop_map(|s| s as u32),
        8 => 1u32..=3840,
        2 => 3841u32..=300_000,
        1 => 1_100_000u32..=2_200_000,
    ]
}

/// An alignment exponent: mostly the default, sometimes up to 2 MiB.
pub fn align_strategy() -> impl Strategy<Value = u8> {
    prop_oneof![12 => 0u8..=4, 2 => 5u8..=12, 1 => 13u8..=21]
}

/// Large requests that take most of a chunk (1 MiB), so that the runs made after one go to
/// another chunk: one bin's runs then spread over several chunks.
pub const CHUNK_FILLER: core::ops::RangeInclusive<u32> = 500_000..=1_000_000;

/// A request size for a case that focuses on size `focus`: mostly `focus` (so that one bin
/// gets many runs, and picks among many candidates), often another small size, sometimes a
/// chunk filler (so that the bin's runs lie in several chunks), rarely large or huge.
pub fn focused_size_strategy(focus: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        24 => Just(focus),
        4 => proptest::sample::select(&HOT_SIZES[..]).prop_map(|s| s as u32),
        3 => 1u32..=3840,
        3 => CHUNK_FILLER,
        1 => 3841u32..=300_000,
        1 => 1_100_000u32..=2_200_000,
    ]
}

/// The phases of a focused case, in operations: the heap grows for `GROW` operations, then
/// shrinks for `SHRINK`, and so on. Growth makes many runs of the focus bin (over several
/// chunks); shrinking leaves holes in most of them, so that picks choose among many.
pub const GROW: usize = 200;
/// See [`GROW`].
pub const SHRINK: usize = 100;

/// Operation `step` of a case focused on size `focus` (see [`focused_size_strategy`]), in a
/// growing or shrinking phase (see [`GROW`]).
pub fn focused_op_strategy(live: usize, focus: u32, step: usize) -> BoxedStrategy<Op> {
    let alloc = (
        focused_size_strategy(focus),
        align_strategy(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(size, align_log, zero)| Op::Alloc {
            size,
            align_log,
            zero,
        });
    if live == 0 {
        return alloc.boxed();
    }
    let (allocs, frees) = if step % (GROW + SHRINK) < GROW {
        (24, 2)
    } else {
        (5, 14)
    };
    prop_oneof![
        allocs => alloc,
        frees => any::<u16>().prop_map(|slot| Op::Free { slot }),
        2 => (any::<u16>(), focused_size_strategy(focus))
            .prop_map(|(slot, size)| Op::Realloc { slot, size }),
        1 => (any::<u16>(), any::<u32>()).prop_map(|(slot, offset)| Op::FreeInterior { slot, offset }),
        1 => Just(Op::Purge),
    ]
    .boxed()
}

/// An operation, weighted so that the heap grows on average but also shrinks.
pub fn op_strategy(live: usize) -> BoxedStrategy<Op> {
    let alloc = (
        size_strategy(),
        align_strategy(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(size, align_log, zero)| Op::Alloc {
            size,
            align_log,
            zero,
        });
    if live == 0 {
        return alloc.boxed();
    }
    prop_oneof![
        10 => alloc,
        9 => any::<u16>().prop_map(|slot| Op::Free { slot }),
        2 => (any::<u16>(), size_strategy()).prop_map(|(slot, size)| Op::Realloc { slot, size }),
        1 => (any::<u16>(), any::<u32>()).prop_map(|(slot, offset)| Op::FreeInterior { slot, offset }),
        1 => Just(Op::Purge),
    ]
    .boxed()
}

/// Fuzz input to operations, with the same weights as the proptest strategies: raw bytes would
/// otherwise make nearly every request a multi-megabyte mapping.
impl<'a> arbitrary::Arbitrary<'a> for Op {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        fn size(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<u32> {
            Ok(match u.int_in_range(0u8..=26)? {
                0..=15 => HOT_SIZES[u.choose_index(HOT_SIZES.len())?] as u32,
                16..=23 => u.int_in_range(1..=3840)?,
                24..=25 => u.int_in_range(3841..=300_000)?,
                _ => u.int_in_range(1_100_000..=2_200_000)?,
            })
        }
        Ok(match u.int_in_range(0u8..=22)? {
            0..=9 => Op::Alloc {
                size: size(u)?,
                align_log: match u.int_in_range(0u8..=14)? {
                    0..=11 => u.int_in_range(0..=4)?,
                    12..=13 => u.int_in_range(5..=12)?,
                    _ => u.int_in_range(13..=21)?,
                },
                zero: u.ratio(1, 10)?,
            },
            10..=18 => Op::Free {
                slot: u.arbitrary()?,
            },
            19..=20 => Op::Realloc {
                slot: u.arbitrary()?,
                size: size(u)?,
            },
            21 => Op::FreeInterior {
                slot: u.arbitrary()?,
                offset: u.arbitrary()?,
            },
            _ => Op::Purge,
        })
    }
}
