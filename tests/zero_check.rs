//! `zero_check`, through the `Heap` API: the fix (`recycled`) catches a write into a purged
//! page that the heap later takes as zero, and leaves fresh pages untouched; the seed's bug
//! (`all`) reads every fresh chunk and huge mapping whole, so their pages become resident
//! before the program uses them (`mincore`, which says whether a page is mapped in, without
//! touching it).

mod common;

use alloclab::policies::{configs, Lifo, NoCache, Single};
use alloclab::{Config, DebugCaps, Heap, Options, Safety, ZeroCheck};
use common::{expect_abort, in_child, residency};

const PAGE: usize = 4096;
const CHUNK: usize = 1 << 20;

/// LIFO, one arena, every debug check compiled in (chosen at run time).
type Checked = configs::Checked<Lifo, Single>;

fn heap(zero_check: ZeroCheck) -> Heap<Checked> {
    Heap::with_options(Options {
        safety: Safety {
            zero_check,
            ..Safety::OFF
        },
        ..Options::DEFAULT
    })
}

/// Resident pages among the `pages` pages from `addr`.
fn resident(addr: usize, pages: usize) -> usize {
    (0..pages)
        .filter(|i| residency(addr + i * PAGE) == Some(true))
        .count()
}

/// Whether the kernel may back a 1 MiB chunk with a huge page on its first touch (then a
/// page of it being resident says nothing of what touched it).
fn huge_pages_always() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]"))
}

/// Frees a large allocation of `pages` pages, purges it (its pages become clean, `PURGED`),
/// and writes `byte` at `offset` through the dangling pointer: memory the heap will take as
/// zero is not. Returns the pointer.
fn plant(h: &Heap<Checked>, pages: usize, offset: usize, byte: u8) -> *mut u8 {
    let p = h.malloc(pages * PAGE);
    assert!(!p.is_null());
    // SAFETY: `p` is live; the write after it is the misuse under test, into a page that
    // stays mapped (purging keeps the mapping).
    unsafe {
        h.free(p);
        h.purge();
        p.add(offset).write(byte);
    }
    p
}

#[test]
fn a_write_into_a_purged_page_is_caught_when_the_heap_takes_it_as_zero() {
    for mode in [ZeroCheck::Recycled, ZeroCheck::All] {
        // A zeroed large allocation over the planted page.
        let h = heap(mode);
        let p = plant(&h, 8, 100, 7);
        let out = expect_abort(|| {
            let _ = h.calloc(1, 8 * PAGE);
        });
        let want = format!(
            "alloclab: memory that should be zero is not at {:#x}: byte 100 of the purged page of 4096 bytes at {:#x} is 0x07",
            p as usize + 100,
            p as usize
        );
        assert!(out.starts_with(&want), "{mode:?}: {out:?}");
        // A new small run over it: its regions will serve calloc without a memset.
        let h = heap(mode);
        let p = plant(&h, 8, PAGE + 8, 0x41);
        let out = expect_abort(|| {
            for _ in 0..4 {
                let _ = h.malloc(3000);
            }
        });
        assert!(
            out.starts_with(&format!(
                "alloclab: memory that should be zero is not at {:#x}: byte 8 of the purged page",
                p as usize + PAGE + 8
            )),
            "{mode:?}: {out:?}"
        );
    }
}

#[test]
fn without_the_check_calloc_returns_the_planted_byte() {
    // What the check is for: the heap trusts a purged page to be zero, and calloc skips it.
    let h = heap(ZeroCheck::Off);
    let p = plant(&h, 8, 100, 7);
    let q = h.calloc(1, 8 * PAGE);
    assert_eq!(q, p, "calloc takes the purged pages back");
    // SAFETY: `q` is a live allocation of 8 pages.
    assert_eq!(unsafe { *q.add(100) }, 7);
    // SAFETY: live, freed once.
    unsafe { h.free(q) };
}

#[test]
fn the_seeds_check_makes_a_fresh_chunk_resident_and_the_fix_does_not() {
    let got = in_child(|| {
        let all = heap(ZeroCheck::All);
        let fixed = heap(ZeroCheck::Recycled);
        let a = all.malloc(64) as usize;
        let f = fixed.malloc(64) as usize;
        // The two heaps' first chunks, each holding only the one small run.
        let (ca, cf) = (a & !(CHUNK - 1), f & !(CHUNK - 1));
        let pages = CHUNK / PAGE;
        if resident(ca, pages) != pages {
            return Err("zero_check:all left a page of its fresh chunk untouched");
        }
        if !huge_pages_always() && resident(cf, pages) > 8 {
            return Err("zero_check:recycled faulted in pages of a fresh chunk it did not use");
        }
        // A zeroed large allocation from fresh pages: the fix takes them as zero unread.
        let big = fixed.calloc(1, 64 * PAGE) as usize;
        if !huge_pages_always() && resident(big, 64) != 0 {
            return Err("zero_check:recycled read fresh pages of a zeroed large allocation");
        }
        Ok(())
    });
    assert_eq!(got, Ok(()));
}

#[test]
fn the_seeds_check_reads_a_fresh_huge_mapping_whole_and_the_fix_does_not() {
    let got = in_child(|| {
        let pages = (4 << 20) / PAGE;
        let (h_all, h_fixed) = (heap(ZeroCheck::All), heap(ZeroCheck::Recycled));
        let all = h_all.malloc(4 << 20) as usize;
        if resident(all, pages) != pages {
            return Err("zero_check:all left a page of a fresh huge mapping untouched");
        }
        let fixed = h_fixed.malloc(4 << 20) as usize;
        if !huge_pages_always() && resident(fixed, pages) != 0 {
            return Err("zero_check:recycled read a fresh huge mapping");
        }
        Ok(())
    });
    assert_eq!(got, Ok(()));
}

#[test]
fn the_check_needs_its_capability_and_no_profile_turns_it_on() {
    struct SampleOnly;
    impl Config for SampleOnly {
        type Reuse = Lifo;
        type Arenas = Single;
        type Front = NoCache;
        const NAME: &'static str = "sample-only";
        const DEBUG: DebugCaps = DebugCaps::SAMPLE;
    }
    let h = Heap::<SampleOnly>::with_options(Options {
        safety: Safety {
            zero_check: ZeroCheck::Recycled,
            ..Safety::OFF
        },
        ..Options::DEFAULT
    });
    let out = expect_abort(|| {
        let _ = h.malloc(1);
    });
    assert!(
        out.starts_with(
            "alloclab: config sample-only does not compile in the debug checks asked for (zero-check)"
        ),
        "{out:?}"
    );
    for s in [Safety::OFF, Safety::HARDENED, Safety::DEBUG] {
        assert_eq!(s.zero_check, ZeroCheck::Off);
        assert!(!s.needs().contains(DebugCaps::ZERO_CHECK));
    }
}
