//! Replay: the calls made are exactly the trace's, in order (or, threaded, in an order that
//! honours every cross-thread free), "touch" writes what was requested and nothing else does,
//! and a heap's statistics after a replay are the trace's live set.

mod trace_support;

use alloclab::configs::{Lifo, NAMES};
use alloclab::generate::{Lifetimes, Params};
use alloclab::replay::{self, HeapStats, Options, ReplayError, Subject, TOUCH_BYTE};
use alloclab::size_class::{classify, SizeClass, NBINS};
use alloclab::trace::{Func, Trace, NO_SLOT, VALLOC_ALIGN};
use alloclab::Heap;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::thread::ThreadId;
use trace_support::{generated, parse_ok, random_raw_log};

/// The byte the recorder fills every allocation with before the replay sees it.
const FILL: u8 = 0xab;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Malloc(usize),
    Calloc(usize, usize),
    Memalign(usize, usize),
    Realloc { from_null: bool, size: usize },
    Free { null: bool },
}

#[derive(Default)]
struct Log {
    calls: Vec<Call>,
    /// Live pointers and the bytes the program asked for.
    live: HashMap<usize, usize>,
    threads: HashSet<ThreadId>,
    problems: Vec<String>,
}

/// Wraps a heap and checks what the replayer does with it.
struct Recorder {
    heap: Heap<Lifo>,
    touch: bool,
    log: Mutex<Log>,
}

impl Recorder {
    fn new(touch: bool) -> Self {
        Recorder {
            heap: Heap::new(),
            touch,
            log: Mutex::default(),
        }
    }

    fn returned(&self, p: *mut u8, request: usize, call: Call) -> *mut u8 {
        let mut log = self.log.lock().unwrap();
        log.calls.push(call);
        log.threads.insert(std::thread::current().id());
        if !p.is_null() {
            // SAFETY: `p` is a fresh allocation of at least `request` bytes.
            unsafe { p.write_bytes(FILL, request) };
            if log.live.insert(p as usize, request).is_some() {
                log.problems.push(format!("{p:?} returned twice"));
            }
        }
        p
    }

    /// Checks a pointer handed back by the replayer: live, and holding what touch (or no
    /// touch) leaves there.
    fn handed_back(&self, log: &mut Log, p: *mut u8) {
        match log.live.remove(&(p as usize)) {
            None => log.problems.push(format!("{p:?} handed back but not live")),
            Some(request) => {
                let want = if self.touch { TOUCH_BYTE } else { FILL };
                // SAFETY: `p` is live with at least `request` bytes.
                let bytes = unsafe { std::slice::from_raw_parts(p, request) };
                if let Some(i) = bytes.iter().position(|&b| b != want) {
                    log.problems
                        .push(format!("{p:?}: byte {i} of {request} is {:#x}", bytes[i]));
                }
            }
        }
    }
}

impl Subject for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }
    fn describe(&self) -> String {
        "a lifo heap that checks the replayer".into()
    }
    fn malloc(&self, size: usize) -> *mut u8 {
        self.returned(self.heap.malloc(size), size, Call::Malloc(size))
    }
    fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        self.returned(
            self.heap.calloc(count, size),
            count * size,
            Call::Calloc(count, size),
        )
    }
    fn memalign(&self, align: usize, size: usize) -> *mut u8 {
        let p = self.heap.allocate(size, align, false);
        if !p.is_null() && p as usize % align != 0 {
            self.log
                .lock()
                .unwrap()
                .problems
                .push(format!("{p:?} not aligned"));
        }
        self.returned(p, size, Call::Memalign(align, size))
    }
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        if !ptr.is_null() {
            let mut log = self.log.lock().unwrap();
            self.handed_back(&mut log, ptr);
        }
        // SAFETY: the replayer's contract.
        let p = unsafe { self.heap.realloc_c(ptr, size) };
        self.returned(
            p,
            size,
            Call::Realloc {
                from_null: ptr.is_null(),
                size,
            },
        )
    }
    unsafe fn free(&self, ptr: *mut u8) {
        {
            let mut log = self.log.lock().unwrap();
            if !ptr.is_null() {
                self.handed_back(&mut log, ptr);
            }
            log.calls.push(Call::Free {
                null: ptr.is_null(),
            });
            log.threads.insert(std::thread::current().id());
        }
        // SAFETY: the replayer's contract.
        unsafe { self.heap.free(ptr) }
    }
    fn stats(&self) -> HeapStats {
        Subject::stats(&self.heap)
    }
    fn check(&self) -> Result<(), String> {
        let log = self.log.lock().unwrap();
        match log.problems.first() {
            Some(p) => Err(format!("{} problems, the first: {p}", log.problems.len())),
            None => self.heap.check_invariants().map_err(|v| v.to_string()),
        }
    }
}

/// The calls the trace says the replayer makes, in trace order.
fn expected_calls(t: &Trace) -> Vec<Call> {
    t.ops()
        .iter()
        .filter_map(|op| {
            let size = op.size as usize;
            Some(match op.func {
                Func::Malloc => Call::Malloc(size),
                Func::Calloc => Call::Calloc(op.arg as usize, size),
                Func::Realloc => Call::Realloc {
                    from_null: op.old == NO_SLOT,
                    size,
                },
                Func::Free => Call::Free {
                    null: op.slot == NO_SLOT,
                },
                Func::Valloc => Call::Memalign(VALLOC_ALIGN as usize, size),
                Func::PosixMemalign | Func::AlignedAlloc | Func::Memalign => {
                    Call::Memalign(op.arg as usize, size)
                }
                Func::JemallocStats => return None,
            })
        })
        .collect()
}

#[test]
fn single_threaded_replay_makes_exactly_the_traces_calls() {
    let t = parse_ok(&random_raw_log(11, 20_000, 3));
    for touch in [false, true] {
        let rec = Recorder::new(touch);
        let r = replay::replay(
            &rec,
            &t,
            Options {
                touch,
                threads: false,
            },
        )
        .unwrap();
        assert_eq!(r.check, Ok(()), "touch {touch}");
        let log = rec.log.lock().unwrap();
        assert_eq!(log.calls, expected_calls(&t), "touch {touch}");
        assert_eq!(log.live.len() as u64, t.live_at_end);
        assert_eq!(log.threads.len(), 1);
        assert_eq!(r.calls, t.allocator_calls());
        assert_eq!(r.failed, 0);
        assert_eq!(r.threads, 1);
        let stats_lines = t.counts()[Func::JemallocStats.index()] as usize;
        assert!(stats_lines > 0);
        assert_eq!(r.snapshots.len(), stats_lines);
    }
}

#[test]
fn threaded_replay_runs_each_recorded_thread_apart_and_honours_cross_thread_frees() {
    let text = generated(&Params {
        threads: 4,
        bursts: 60,
        long_lived: 300,
        ..Params::default()
    });
    let t = parse_ok(&text);
    // The shared long-lived pool makes frees cross threads: make sure this trace has some.
    let mut owner: HashMap<u32, u32> = HashMap::new();
    let mut cross = 0;
    for op in t.ops() {
        match op.func {
            Func::Free if op.slot != NO_SLOT => {
                cross += (owner[&op.slot] != op.thread) as usize;
            }
            Func::Free | Func::JemallocStats => {}
            _ => {
                owner.insert(op.slot, op.thread);
            }
        }
    }
    assert!(
        cross > 50,
        "the trace has too few cross-thread frees: {cross}"
    );

    for touch in [false, true] {
        let rec = Recorder::new(touch);
        let r = replay::replay(
            &rec,
            &t,
            Options {
                touch,
                threads: true,
            },
        )
        .unwrap();
        assert_eq!(r.check, Ok(()));
        assert_eq!(r.threads, 4);
        let log = rec.log.lock().unwrap();
        assert_eq!(log.threads.len(), 4, "one OS thread per recorded thread");
        assert!(!log.threads.contains(&std::thread::current().id()));
        // A free that ran before its allocation would have freed null and left the
        // allocation live: the multiset of calls and the live set say it did not happen.
        let mut balance: HashMap<String, i64> = HashMap::new();
        for c in &log.calls {
            *balance.entry(format!("{c:?}")).or_default() += 1;
        }
        for c in expected_calls(&t) {
            *balance.entry(format!("{c:?}")).or_default() -= 1;
        }
        balance.retain(|_, n| *n != 0);
        assert!(
            balance.is_empty(),
            "calls made (+) and expected (-) differ: {:?}",
            balance.iter().take(5).collect::<Vec<_>>()
        );
        assert_eq!(log.live.len() as u64, t.live_at_end);
    }
}

/// Per small class: (allocations, frees, live) that a trace without realloc makes.
fn model_bins(t: &Trace) -> [(u64, u64, usize); NBINS] {
    let mut bins = [(0u64, 0u64, 0usize); NBINS];
    let mut class_of: HashMap<u32, Option<usize>> = HashMap::new();
    for op in t.ops() {
        match op.func {
            Func::Free => {
                if let Some(Some(i)) = class_of.remove(&op.slot) {
                    bins[i].1 += 1;
                    bins[i].2 -= 1;
                }
            }
            Func::Malloc => {
                let class = match classify(op.size as usize, 16) {
                    Some(SizeClass::Small(i)) => Some(i),
                    _ => None,
                };
                if let Some(i) = class {
                    bins[i].0 += 1;
                    bins[i].2 += 1;
                }
                class_of.insert(op.slot, class);
            }
            Func::JemallocStats => {}
            other => panic!("the model covers malloc and free, not {other:?}"),
        }
    }
    bins
}

#[test]
fn every_named_config_ends_with_the_traces_live_set() {
    let t = parse_ok(&generated(&Params {
        threads: 2,
        bursts: 80,
        realloc_percent: 0,
        sizes: "16:3,48:2,100:2,256:1,1000:1,3840:1,5000-20000:1"
            .parse()
            .unwrap(),
        ..Params::default()
    }));
    let model = model_bins(&t);
    for name in NAMES {
        for threads in [false, true] {
            let r = replay::replay_named(
                name,
                &t,
                Options {
                    touch: false,
                    threads,
                },
            )
            .unwrap();
            assert_eq!(r.allocator, name);
            assert_eq!(r.check, Ok(()), "{name}");
            let bins = r.heap.bins.expect("alloclab heaps report bins");
            for (i, (b, m)) in bins.iter().zip(model.iter()).enumerate() {
                assert_eq!(
                    (b.allocations, b.frees, b.live),
                    *m,
                    "{name}, threads {threads}: bin {i}"
                );
            }
            let (allocated, active) = (r.heap.allocated.unwrap(), r.heap.active.unwrap());
            assert!(allocated > 0 && allocated <= active, "{allocated} {active}");
            let frag = r.heap.fragmentation().unwrap();
            assert!((0.0..1.0).contains(&frag));
        }
    }
}

#[test]
fn failed_allocations_are_counted_and_the_replay_goes_on() {
    let t = parse_ok(
        "1 1 malloc(4611686018427387904)=#1\n1 1 malloc(10)=#2\n1 1 free(#1)\n\
         1 1 realloc(#2,4611686018427387904)=#3\n1 1 calloc(2,8)=#4\n",
    );
    for threads in [false, true] {
        let r = replay::replay_named(
            "lifo",
            &t,
            Options {
                touch: true,
                threads,
            },
        )
        .unwrap();
        assert_eq!(r.failed, 2);
        assert_eq!(r.calls, 5);
        assert_eq!(r.check, Ok(()));
        // The failed realloc leaves its 10 bytes allocated; the calloc is live too.
        assert_eq!(
            r.heap.bins.unwrap().iter().map(|b| b.live).sum::<usize>(),
            2
        );
    }
}

#[test]
fn snapshots_follow_the_heap() {
    let t = parse_ok(
        "1 1 jemalloc_stats()\n1 1 malloc(100)=#1\n1 1 malloc(100)=#2\n1 1 jemalloc_stats()\n\
         1 1 free(#1)\n1 1 free(#2)\n1 1 jemalloc_stats()\n",
    );
    let r = replay::replay_named("mrf", &t, Options::default()).unwrap();
    let at: Vec<u64> = r.snapshots.iter().map(|s| s.op).collect();
    assert_eq!(at, vec![0, 3, 6]);
    let allocated: Vec<usize> = r
        .snapshots
        .iter()
        .map(|s| s.heap.allocated.unwrap())
        .collect();
    assert_eq!(allocated, vec![0, 224, 0]);
}

#[test]
fn unknown_configs_are_refused_by_name() {
    let t = parse_ok("1 1 malloc(1)=#1\n");
    let e = replay::replay_named("fifo", &t, Options::default()).unwrap_err();
    assert_eq!(e, ReplayError::UnknownConfig("fifo".into()));
    let msg = e.to_string();
    assert!(NAMES.iter().all(|n| msg.contains(n)), "{msg}");
}

#[test]
fn json_and_text_reports_carry_the_figures() {
    let t = parse_ok(&generated(&Params {
        bursts: 20,
        stats_every: 1000,
        lifetimes: "burst:90,survivor:10".parse::<Lifetimes>().unwrap(),
        ..Params::default()
    }));
    let r = replay::replay_named("addr-ordered", &t, Options::default()).unwrap();
    let source = replay::Source {
        path: "generated",
        synthetic: Some(true),
        made_by: None,
    };
    let printed = replay::json(&source, &t, &r).to_string();
    let j: serde_json::Value = serde_json::from_str(&printed).expect("the report is JSON");
    assert_eq!(j["allocator"], "addr-ordered");
    assert_eq!(j["calls"], t.allocator_calls());
    assert_eq!(
        j["trace"]["calls"]["malloc"],
        t.counts()[Func::Malloc.index()]
    );
    assert_eq!(j["trace"]["synthetic"], true);
    assert_eq!(j["check"]["ok"], true);
    assert_eq!(j["heap"]["allocated"], r.heap.allocated.unwrap());
    let live: u64 = j["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["live"].as_u64().unwrap())
        .sum();
    let reported: usize = r.heap.bins.unwrap().iter().map(|b| b.live).sum();
    assert_eq!(live, reported as u64);
    assert_eq!(
        j["snapshots"].as_array().unwrap().len(),
        t.counts()[Func::JemallocStats.index()] as usize
    );
    assert!(j["calls_per_second"].as_f64().unwrap() > 0.0);

    let mut text = Vec::new();
    replay::write_text(&mut text, &source, &t, &r).unwrap();
    let text = String::from_utf8(text).unwrap();
    for needle in [
        "trace      generated (synthetic)",
        "addr-ordered",
        "M calls/s",
        "fragmentation",
        "invariants hold",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
}
