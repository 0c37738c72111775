//! The peers answer the C calls correctly, every workload passes on correct allocators, and
//! every workload's self-check catches a broken one: an allocator that corrupts a live block
//! and one that fails an allocation now and then.

use alloclab::configs::Mrf;
use alloclab::measure::builtin_subjects as builtin;
use alloclab::measure::peers;
use alloclab::measure::subjects::SubjectKind;
use alloclab::measure::workloads::{self, Params, Workload};
use alloclab::subject::{HeapStats, Subject};
use alloclab::Heap;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const SMALL: f64 = 0.002;

fn params(w: &dyn Workload) -> Params {
    Params {
        threads: if w.threaded() { 2 } else { 1 },
        scale: SMALL,
        seed: 7,
    }
}

/// Fills `n` bytes at `p` with a pattern of `seed` and checks them (`what` names the call).
fn fill_check(p: *mut u8, n: usize, seed: u8, what: &str) {
    assert!(!p.is_null(), "{what} returned null");
    // SAFETY: `p` is a fresh allocation of at least `n` bytes.
    unsafe {
        for i in 0..n {
            p.add(i).write(seed.wrapping_add(i as u8));
        }
        for i in 0..n {
            assert_eq!(
                p.add(i).read(),
                seed.wrapping_add(i as u8),
                "{what} byte {i}"
            );
        }
    }
}

fn smoke(s: &dyn Subject) {
    let name = s.name();
    let mut live = Vec::new();
    for (k, size) in [0usize, 1, 8, 24, 100, 1000, 5000, 70_000, 3 << 20]
        .into_iter()
        .enumerate()
    {
        let p = s.malloc(size);
        fill_check(p, size, k as u8, &format!("{name} malloc({size})"));
        live.push((p, size, k as u8));

        let c = s.calloc(3, size);
        assert!(!c.is_null(), "{name} calloc(3, {size})");
        // SAFETY: a fresh allocation of 3 * size bytes.
        let zero = unsafe { std::slice::from_raw_parts(c, 3 * size) };
        assert!(
            zero.iter().all(|&b| b == 0),
            "{name} calloc(3, {size}) not zeroed"
        );
        fill_check(c, 3 * size, 99, &format!("{name} calloc"));
        // SAFETY: live, freed once.
        unsafe { s.free(c) };

        for align in [16usize, 64, 4096, 32768] {
            let a = s.memalign(align, size);
            assert!(!a.is_null(), "{name} memalign({align}, {size})");
            assert_eq!(a as usize % align, 0, "{name} memalign({align}, {size})");
            fill_check(a, size, 3, &format!("{name} memalign"));
            // SAFETY: live, freed once.
            unsafe { s.free(a) };
        }
    }
    assert!(
        s.calloc(usize::MAX / 2, 3).is_null(),
        "{name}: calloc overflow"
    );
    // realloc keeps the contents, growing and shrinking, across size classes.
    let mut p = s.malloc(10);
    fill_check(p, 10, 5, &format!("{name} malloc(10)"));
    let mut kept = 10;
    for size in [20usize, 300, 5000, 100_000, 2 << 20, 50, 7] {
        // SAFETY: `p` is live; replaced by the result.
        p = unsafe { s.realloc(p, size) };
        assert!(!p.is_null(), "{name} realloc to {size}");
        let k = kept.min(size);
        for i in 0..k {
            // SAFETY: at least `k` bytes.
            let b = unsafe { p.add(i).read() };
            assert_eq!(
                b,
                5u8.wrapping_add(i as u8),
                "{name} realloc to {size}: byte {i}"
            );
        }
        fill_check(p, size, 5, &format!("{name} realloc"));
        kept = size;
    }
    // SAFETY: live, freed once.
    unsafe { s.free(p) };
    // SAFETY: realloc(null, n) is malloc(n).
    let q = unsafe { s.realloc(std::ptr::null_mut(), 40) };
    fill_check(q, 40, 1, &format!("{name} realloc(null, 40)"));
    // SAFETY: live, freed once; free(null) does nothing.
    unsafe {
        s.free(q);
        s.free(std::ptr::null_mut());
    }
    for (p, size, k) in live {
        // SAFETY: live, at least `size` bytes.
        let ok = (0..size).all(|i| unsafe { p.add(i).read() } == k.wrapping_add(i as u8));
        assert!(ok, "{name}: malloc({size}) block changed while live");
        // SAFETY: live, freed once.
        unsafe { s.free(p) };
    }
    // Another thread frees what this one allocated.
    let blocks: Vec<usize> = (0..1000).map(|i| s.malloc(16 + i % 200) as usize).collect();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            for p in blocks {
                // SAFETY: live blocks of `s`, freed once.
                unsafe { s.free(p as *mut u8) };
            }
        });
    });
}

#[test]
fn every_peer_answers_the_c_calls() {
    let peers = peers::entries();
    let names: Vec<&str> = peers.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names[0], "system");
    #[cfg(feature = "peers")]
    assert_eq!(
        names,
        ["system", "jemalloc", "mimalloc", "snmalloc", "rpmalloc"]
    );
    for e in &peers {
        assert_eq!(e.kind, SubjectKind::Peer);
        let s = (e.make)();
        assert_eq!(s.name(), e.name);
        smoke(s.as_ref());
    }
    let versions = peers::versions();
    assert_eq!(versions.len(), peers.len());
    for (name, v) in versions {
        assert!(!v.is_empty() && !v.contains("unknown"), "{name}: {v}");
    }
}

#[test]
fn builtin_lists_configs_then_peers() {
    let b = builtin();
    let configs = alloclab::configs::NAMES.len();
    assert!(b[..configs].iter().all(|e| e.kind == SubjectKind::Alloclab));
    assert!(b[configs..].iter().all(|e| e.kind == SubjectKind::Peer));
    assert_eq!(b[configs].name, "system");
}

#[test]
fn every_workload_passes_on_correct_allocators() {
    let heap = Heap::<Mrf>::new();
    for w in workloads::all() {
        let p = params(w.as_ref());
        let out = w
            .run(&heap, &p)
            .unwrap_or_else(|e| panic!("{} on mrf: {e}", w.name()));
        assert!(out.ops > 0, "{}", w.name());
        heap.check_invariants()
            .unwrap_or_else(|e| panic!("{} left mrf inconsistent: {e}", w.name()));
    }
    #[cfg(feature = "peers")]
    {
        let rp = peers::entries().into_iter().find(|e| e.name == "rpmalloc");
        let rp = (rp.expect("rpmalloc is a peer").make)();
        for w in workloads::all() {
            w.run(rp.as_ref(), &params(w.as_ref()))
                .unwrap_or_else(|e| panic!("{} on rpmalloc: {e}", w.name()));
        }
    }
}

/// What a broken allocator does wrong.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// Every 50th free also overwrites the first byte of the oldest other live block.
    Corrupt,
    /// Every 200th allocation returns null.
    Fail,
}

/// Live blocks by age (sequence number → address, size), and the age of each address.
type Live = (BTreeMap<u64, (usize, usize)>, HashMap<usize, u64>);

/// An allocator with a fault, around a correct one.
struct Broken {
    inner: Heap<Mrf>,
    fault: Fault,
    calls: AtomicU64,
    allocations: AtomicU64,
    live: Mutex<Live>,
}

impl Broken {
    fn new(fault: Fault) -> Broken {
        Broken {
            inner: Heap::new(),
            fault,
            calls: AtomicU64::new(0),
            allocations: AtomicU64::new(0),
            live: Mutex::new((BTreeMap::new(), HashMap::new())),
        }
    }

    fn fails_now(&self) -> bool {
        self.fault == Fault::Fail && self.allocations.fetch_add(1, Ordering::Relaxed) % 200 == 199
    }

    fn born(&self, p: *mut u8, size: usize) -> *mut u8 {
        if !p.is_null() {
            let mut l = self.live.lock().unwrap();
            let seq = self.calls.fetch_add(1, Ordering::Relaxed);
            l.0.insert(seq, (p as usize, size));
            l.1.insert(p as usize, seq);
        }
        p
    }

    fn dies(&self, p: *mut u8) {
        if p.is_null() {
            return;
        }
        let mut l = self.live.lock().unwrap();
        if let Some(seq) = l.1.remove(&(p as usize)) {
            l.0.remove(&seq);
        }
        if self.fault == Fault::Corrupt && self.calls.fetch_add(1, Ordering::Relaxed) % 50 == 0 {
            let oldest = l.0.iter().find(|(_, &(_, size))| size > 0);
            if let Some((&seq, &(addr, _))) = oldest {
                let q = addr as *mut u8;
                // SAFETY: a live block of the inner heap with at least one byte: the fault
                // this allocator is made to have.
                unsafe { q.write(!q.read()) };
                // Corrupted once: a second flip would undo it.
                l.0.remove(&seq);
                l.1.remove(&addr);
            }
        }
    }
}

impl Subject for Broken {
    fn name(&self) -> String {
        "broken".into()
    }
    fn describe(&self) -> String {
        "an allocator with a fault".into()
    }
    fn malloc(&self, size: usize) -> *mut u8 {
        if self.fails_now() {
            return std::ptr::null_mut();
        }
        self.born(self.inner.malloc(size), size)
    }
    fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        if self.fails_now() {
            return std::ptr::null_mut();
        }
        self.born(self.inner.calloc(count, size), count.saturating_mul(size))
    }
    fn memalign(&self, align: usize, size: usize) -> *mut u8 {
        if self.fails_now() {
            return std::ptr::null_mut();
        }
        self.born(Subject::memalign(&self.inner, align, size), size)
    }
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        if size > 0 && self.fails_now() {
            return std::ptr::null_mut();
        }
        self.dies(ptr);
        // SAFETY: forwarded contract.
        let p = unsafe { Subject::realloc(&self.inner, ptr, size) };
        self.born(p, size)
    }
    unsafe fn free(&self, ptr: *mut u8) {
        self.dies(ptr);
        // SAFETY: forwarded contract.
        unsafe { Subject::free(&self.inner, ptr) }
    }
    fn stats(&self) -> HeapStats {
        Subject::stats(&self.inner)
    }
}

#[test]
fn every_workload_reports_a_broken_allocator() {
    for w in workloads::all() {
        let p = params(w.as_ref());
        let replay = w.name().starts_with("replay-");
        let faults: &[Fault] = if replay && w.name().ends_with("-notouch") {
            // Without touching, a replay writes nothing it could check; it still sees failures.
            // (The aging workloads' twins still write and check each block's pattern.)
            &[Fault::Fail]
        } else {
            &[Fault::Corrupt, Fault::Fail]
        };
        for &fault in faults {
            let broken = Broken::new(fault);
            let r = w.run(&broken, &p);
            let name = match fault {
                Fault::Corrupt => "corrupting",
                Fault::Fail => "failing",
            };
            match r {
                Err(e) => assert!(!e.is_empty(), "{}", w.name()),
                Ok(o) => panic!(
                    "{} did not notice a {name} allocator ({} ops)",
                    w.name(),
                    o.ops
                ),
            }
        }
    }
}

#[test]
fn peers_report_their_own_figures() {
    for e in peers::entries() {
        let s = (e.make)();
        let blocks: Vec<*mut u8> = (0..256).map(|_| s.malloc(4000)).collect();
        let st = s.stats();
        let live = 256 * 4000;
        if let Some(a) = st.allocated {
            assert!(a >= live, "{}: {st:?}", e.name);
        }
        if let Some(m) = st.mapped {
            assert!(m >= live, "{}: {st:?}", e.name);
        }
        let expected = ["system", "jemalloc"].contains(&e.name.as_str());
        assert_eq!(st.allocated.is_some(), expected, "{}: {st:?}", e.name);
        if e.name == "jemalloc" {
            assert!(st.active.is_some() && st.dirty.is_some(), "{st:?}");
            assert!(
                st.resident_estimate.is_some() && st.metadata.is_some(),
                "{st:?}"
            );
        }
        for p in blocks {
            // SAFETY: live, freed once.
            unsafe { s.free(p) };
        }
    }
}

#[test]
fn policy_counters_are_exact() {
    use alloclab::size_class::{bin, small_index};
    // The threshold rule: the default decay purges only after its delay.
    let heap = Heap::<Mrf>::with_options(alloclab::Options {
        purge: Some(alloclab::Purge::Threshold),
        ..alloclab::Options::DEFAULT
    });
    let cap = bin(small_index(64)).capacity as usize;
    let n = 3 * cap + 5;
    let blocks: Vec<*mut u8> = (0..n).map(|_| Subject::malloc(&heap, 64)).collect();
    let runs = n.div_ceil(cap) as u64;
    let c = Subject::stats(&heap).policy.expect("alloclab heaps count");
    // The first allocation of each run makes it; the policy picks a run for every other.
    assert_eq!(
        (c.new_runs, c.picks, c.runs_released),
        (runs, n as u64 - runs, 0)
    );
    for p in blocks {
        // SAFETY: live, freed once.
        unsafe { Subject::free(&heap, p) };
    }
    let c = Subject::stats(&heap).policy.unwrap();
    assert_eq!(c.runs_released, runs);
    assert_eq!((c.purge_passes, c.purges, c.purged_bytes), (0, 0, 0));
    // 4 MiB of large allocations freed: more dirty pages than an arena keeps, so it purges.
    let large: Vec<*mut u8> = (0..64).map(|_| Subject::malloc(&heap, 64 << 10)).collect();
    for p in large {
        // SAFETY: live, freed once.
        unsafe { Subject::free(&heap, p) };
    }
    let c = Subject::stats(&heap).policy.unwrap();
    assert!(c.purge_passes > 0 && c.purges >= c.purge_passes, "{c:?}");
    assert!(c.purged_bytes > 0, "{c:?}");
}

#[test]
fn a_trace_prefix_is_the_trace_cut_short() {
    let t = alloclab::trace::bundled::SQLITE3
        .parse(&Default::default())
        .unwrap();
    let whole = t.prefix(usize::MAX);
    assert_eq!(whole.ops(), t.ops());
    assert_eq!(whole.live_at_end, t.live_at_end);
    let none = t.prefix(0);
    assert_eq!((none.ops().len(), none.live_at_end), (0, 0));
    let half = t.prefix(t.ops().len() / 2);
    assert_eq!(half.ops(), &t.ops()[..t.ops().len() / 2]);
    assert_eq!(half.slots, t.slots);
}

#[test]
fn workload_names_are_unique_and_found() {
    let all = workloads::all();
    let mut names: Vec<&str> = all.iter().map(|w| w.name()).collect();
    // Seventeen synthetic workloads (nine, the three aging ones' no-touch twins, the four
    // shapes of issue 42 and the sampling study's requests) and every bundled trace twice
    // (touch, no touch).
    assert_eq!(names.len(), 17 + 2 * alloclab::trace::bundled::ALL.len());
    for n in &names {
        assert_eq!(
            workloads::by_name(n)
                .map(|w| w.name().to_string())
                .as_deref(),
            Some(*n)
        );
    }
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
    assert!(workloads::by_name("no-such-workload").is_none());
}

/// The four shapes of issue 42 (idle phases, transfers, large buffers, cross-thread frees)
/// run and check themselves under glibc and an alloclab config, on one thread and on three
/// (where every free of the cross-thread ones happens on another thread).
#[test]
fn the_four_shapes_pass_on_system_and_lifo() {
    let shapes = [
        "idle-bursts",
        "transfer-stress",
        "large-loop",
        "xthread-free",
    ];
    let all: Vec<String> = workloads::all()
        .iter()
        .map(|w| w.name().to_string())
        .collect();
    for name in shapes {
        assert!(
            all.iter().any(|n| n == name),
            "{name} is not in workloads::all()"
        );
    }
    let entries = builtin();
    for subject in ["system", "lifo"] {
        let entry = entries
            .iter()
            .find(|e| e.name == subject)
            .unwrap_or_else(|| panic!("no subject {subject}"));
        for name in shapes {
            let w = workloads::by_name(name).unwrap();
            let threads: &[usize] = if w.threaded() { &[1, 3] } else { &[1] };
            for &t in threads {
                let s = (entry.make)();
                let p = Params {
                    threads: t,
                    scale: SMALL,
                    seed: 11,
                };
                let out = w
                    .run(s.as_ref(), &p)
                    .unwrap_or_else(|e| panic!("{name} x{t} on {subject}: {e}"));
                assert!(out.ops > 200, "{name} x{t} on {subject}: {} calls", out.ops);
                s.check()
                    .unwrap_or_else(|e| panic!("{name} x{t} left {subject} inconsistent: {e}"));
            }
        }
    }
}
