//! quickcheck property of the page map, through `Heap::owns`, `arena_of` and `usable_size`:
//! for any address, the heap claims it exactly when it lies in a chunk that held one of its
//! allocations (chunks are kept) or in a live huge mapping, without touching the memory; and
//! only allocation starts have a usable size.
#![cfg(not(loom))]

use alloclab_core::size_class::{round_up, CHUNK};
use alloclab_core::{FreeError, Heap};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, ThreadLocal};
use quickcheck::{QuickCheck, TestResult};
use std::collections::BTreeSet;

fn size(raw: u32) -> usize {
    match raw % 10 {
        0..=6 => 1 + raw as usize % 3840,
        7..=8 => 3841 + raw as usize % 500_000,
        _ => 1_100_000 + raw as usize % 3_000_000,
    }
}

fn prop(sizes: Vec<u32>, frees: Vec<u16>, probes: Vec<(u16, i32)>, wild: Vec<u64>) -> TestResult {
    let heap = Heap::<Using<Lifo, ThreadLocal>>::new();
    let mut live: Vec<(usize, usize)> = Vec::new();
    let mut chunks = BTreeSet::new();
    for &s in sizes.iter().take(40) {
        let p = heap.malloc(size(s)) as usize;
        let u = heap.usable_size(p as *const u8).unwrap();
        if heap.arena_of(p as *const u8).is_some() {
            chunks.insert(p & !(CHUNK - 1));
        }
        live.push((p, u));
    }
    for &f in &frees {
        if live.is_empty() {
            break;
        }
        let (p, _) = live.swap_remove(f as usize % live.len());
        // SAFETY: a live allocation of `heap`, freed once.
        unsafe { heap.free(p as *mut u8) };
    }
    let huge: Vec<(usize, usize)> = live
        .iter()
        .filter(|&&(p, _)| heap.arena_of(p as *const u8).is_none())
        .map(|&(p, u)| (p, round_up(p + u, CHUNK).unwrap()))
        .collect();
    let claimed = |a: usize| {
        chunks.contains(&(a & !(CHUNK - 1))) || huge.iter().any(|&(s, e)| s <= a && a < e)
    };
    let stack = 0u64;
    let boxed = Box::new(0u64);
    let mut addrs: Vec<usize> = vec![
        0,
        usize::MAX,
        &stack as *const u64 as usize,
        &*boxed as *const u64 as usize,
    ];
    addrs.extend(wild.iter().map(|&w| w as usize));
    for &(i, off) in &probes {
        if let Some(&(p, _)) = live.get(i as usize % live.len().max(1)) {
            addrs.push(p.wrapping_add_signed(off as isize * 64));
        }
    }
    for a in addrs {
        if heap.owns(a as *const u8) != claimed(a) {
            return TestResult::error(format!("owns({a:#x}) = {}", heap.owns(a as *const u8)));
        }
        let is_start = live.iter().any(|&(p, _)| p == a);
        match heap.usable_size(a as *const u8) {
            Ok(_) if !is_start => {
                return TestResult::error(format!("{a:#x} is no allocation but has a size"))
            }
            Err(FreeError::NotOurs) if claimed(a) => {
                return TestResult::error(format!("{a:#x} is ours but said foreign"))
            }
            Err(_) if is_start => {
                return TestResult::error(format!("live {a:#x} has no usable size"))
            }
            _ => {}
        }
    }
    TestResult::passed()
}

#[test]
fn the_heap_claims_exactly_its_chunks_and_huge_mappings() {
    QuickCheck::new()
        .tests(alloclab_verify::machine::cases(100) as u64)
        .quickcheck(prop as fn(Vec<u32>, Vec<u16>, Vec<(u16, i32)>, Vec<u64>) -> TestResult);
}
