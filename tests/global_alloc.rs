//! This whole test binary allocates through `Heap<Lifo>`: the test harness, std's threads,
//! collections, formatting. The heap must never allocate through itself to get there.

mod common;

use alloclab::{configs::Lifo, Heap};
use common::in_child;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

#[global_allocator]
static GLOBAL: Heap<Lifo> = Heap::new();

#[test]
fn std_collections_run_on_the_heap() {
    let before = GLOBAL.stats().allocations();
    let mut map: HashMap<String, Vec<u64>> = HashMap::new();
    for i in 0..20_000u64 {
        map.entry(format!("key-{}", i % 3000)).or_default().push(i);
    }
    let mut tree = BTreeMap::new();
    for (k, v) in &map {
        tree.insert(k.clone(), v.iter().sum::<u64>());
    }
    assert_eq!(tree.len(), 3000);
    assert_eq!(tree.values().sum::<u64>(), (0..20_000u64).sum::<u64>());
    let set: HashSet<Box<[u8]>> = (0..5000usize)
        .map(|i| vec![i as u8; i % 700].into_boxed_slice())
        .collect();
    assert!(set.len() > 600);
    let mut dq: VecDeque<String> = VecDeque::new();
    for i in 0..10_000 {
        dq.push_back(i.to_string().repeat(i % 17));
        if dq.len() > 100 {
            dq.pop_front();
        }
    }
    // A big buffer grown one push at a time walks through small, large and huge classes.
    let mut big: Vec<u8> = Vec::new();
    for i in 0..(8 << 20) {
        big.push(i as u8);
    }
    assert!(big.iter().enumerate().all(|(i, &b)| b == i as u8));
    drop(big);
    assert!(GLOBAL.stats().allocations() > before + 30_000);
    GLOBAL.check_invariants().unwrap();
}

#[test]
fn threads_and_channels_run_on_the_heap() {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<String>>();
    let producers: Vec<_> = (0..4)
        .map(|t| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    tx.send(vec![format!("{t}:{i}"); i % 5]).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    // Messages allocated on producer threads are freed here: cross-thread frees.
    let total: usize = rx.iter().map(|v| v.len()).sum();
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(total, 4 * (0..2000).map(|i| i % 5).sum::<usize>());
    assert!(
        GLOBAL.stats().arenas >= 2,
        "producer threads should have arenas of their own"
    );
    GLOBAL.check_invariants().unwrap();
}

#[test]
fn many_short_threads() {
    for _ in 0..200 {
        std::thread::spawn(|| (0..100).map(|i| vec![i; i]).collect::<Vec<_>>().len())
            .join()
            .unwrap();
    }
    GLOBAL.check_invariants().unwrap();
}

/// A program whose global allocator is a `Heap` can `fork()` while its threads allocate, with
/// nothing to set up: the heap installed its fork handlers on first use. The child allocates
/// through the global heap (collections, formatting).
#[test]
fn fork_while_threads_allocate_needs_no_setup() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..3)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let v: Vec<String> = (0..(n + t) % 50).map(|i| format!("{i}")).collect();
                    n += v.len() + 1;
                }
                n
            })
        })
        .collect();
    for _ in 0..20 {
        let verdict = in_child(|| {
            let m: HashMap<usize, String> = (0..500).map(|i| (i, "x".repeat(i))).collect();
            if m.values().map(String::len).sum::<usize>() != 499 * 500 / 2 {
                return Err("wrong contents in the child");
            }
            drop(m);
            if GLOBAL.check_invariants().is_err() {
                return Err("invariants broken in the child");
            }
            Ok(())
        });
        assert_eq!(verdict, Ok(()));
    }
    stop.store(true, Ordering::Relaxed);
    for t in busy {
        assert!(t.join().unwrap() > 0);
    }
    GLOBAL.check_invariants().unwrap();
}
