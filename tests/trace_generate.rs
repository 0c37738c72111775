//! The synthetic generator: deterministic, and each parameter shapes the trace as documented
//! (burst sizes and teardown order, size mix, lifetime mix, long-lived pool, threads,
//! jemalloc_stats lines).

mod trace_support;

use alloclab::generate::{generate, Lifetimes, Params, SizeMix, Teardown};
use alloclab::trace::{Func, Trace, NO_SLOT};
use trace_support::{generated, parse_ok};

fn pure_bursts(teardown: Teardown) -> Params {
    Params {
        seed: 7,
        bursts: 60,
        burst_size: (5, 50),
        sizes: "16:1,100:1,3000:1,40000:1".parse().unwrap(),
        lifetimes: "burst:1".parse().unwrap(),
        teardown,
        realloc_percent: 0,
        max_burst_bytes: 200_000,
        ..Params::default()
    }
}

/// Splits a single-thread trace of pure bursts into bursts: (size, allocation slots in order,
/// free slots in order).
fn bursts(t: &Trace) -> Vec<(u64, Vec<u32>, Vec<u32>)> {
    let mut out: Vec<(u64, Vec<u32>, Vec<u32>)> = Vec::new();
    for op in t.ops() {
        match op.func {
            Func::Malloc => {
                // A malloc after the burst's first free starts the next burst.
                let starts_new = out.last().map_or(true, |b| !b.2.is_empty());
                if starts_new {
                    out.push((op.size, Vec::new(), Vec::new()));
                }
                let b = out.last_mut().unwrap();
                assert_eq!(b.0, op.size, "a burst mixes sizes");
                b.1.push(op.slot);
            }
            Func::Free => out
                .last_mut()
                .expect("free before any burst")
                .2
                .push(op.slot),
            other => panic!("unexpected {other:?} in a pure-burst trace"),
        }
    }
    out
}

#[test]
fn the_same_parameters_give_the_same_trace() {
    let p = Params {
        threads: 3,
        bursts: 40,
        ..Params::default()
    };
    assert_eq!(generated(&p), generated(&p));
    let other = Params {
        seed: 2,
        ..p.clone()
    };
    assert_ne!(generated(&p), generated(&other));
}

#[test]
fn bursts_are_built_up_then_torn_down_in_the_chosen_order() {
    for teardown in [Teardown::Fifo, Teardown::Lifo, Teardown::Random] {
        let p = pure_bursts(teardown);
        let t = parse_ok(&generated(&p));
        let bs = bursts(&t);
        assert_eq!(bs.len() as u64, p.bursts, "{teardown:?}");
        let mut shuffled = 0;
        for (size, allocs, frees) in &bs {
            let n = allocs.len() as u64;
            assert!(n <= 50, "burst of {n}");
            if n > 1 {
                assert!(n * size <= p.max_burst_bytes, "{n} x {size} bytes");
            }
            if size * 5 <= p.max_burst_bytes {
                assert!(n >= 5, "burst of {n} objects of {size} bytes");
            }
            let mut sorted_a = allocs.clone();
            let mut sorted_f = frees.clone();
            sorted_a.sort_unstable();
            sorted_f.sort_unstable();
            assert_eq!(sorted_a, sorted_f, "a burst frees what it allocated");
            match teardown {
                Teardown::Fifo => assert_eq!(frees, allocs),
                Teardown::Lifo => {
                    let rev: Vec<u32> = allocs.iter().rev().copied().collect();
                    assert_eq!(*frees, rev);
                }
                Teardown::Random => {
                    let rev: Vec<u32> = allocs.iter().rev().copied().collect();
                    shuffled += (*frees != *allocs && *frees != rev) as usize;
                }
            }
        }
        if teardown == Teardown::Random {
            assert!(shuffled > bs.len() / 2, "random teardown looks ordered");
        }
        assert_eq!(t.live_at_end, 0);
    }
}

#[test]
fn sizes_come_from_the_mix() {
    let p = Params {
        sizes: "100-200:3,7:0,5000:1".parse().unwrap(),
        bursts: 50,
        ..Params::default()
    };
    let t = parse_ok(&generated(&p));
    let mut big = 0;
    for op in t.ops() {
        if matches!(op.func, Func::Malloc | Func::Realloc) {
            assert!(
                (100..=200).contains(&op.size) || op.size == 5000,
                "size {} is not in the mix",
                op.size
            );
            big += (op.size == 5000) as usize;
        }
    }
    assert!(big > 0);
}

#[test]
fn long_lived_objects_fill_the_pool_and_stay_live() {
    let p = Params {
        long_lived: 50,
        bursts: 100,
        lifetimes: "burst:70,survivor:20,long:10".parse().unwrap(),
        realloc_percent: 5,
        ..Params::default()
    };
    let mut text = Vec::new();
    let summary = generate(&p, &mut text).unwrap();
    let t = parse_ok(std::str::from_utf8(&text).unwrap());
    assert_eq!(t.live_at_end, 50);
    assert_eq!(summary.live_at_end, 50);
    assert_eq!(summary.counts, t.counts());
    assert!(t.counts()[Func::Realloc.index()] > 0);
    // The peak the summary gives is the peak the trace has.
    let mut live = 0i64;
    let mut peak = 0i64;
    for op in t.ops() {
        match op.func {
            Func::Malloc => live += 1,
            Func::Free if op.slot != NO_SLOT => live -= 1,
            _ => {}
        }
        peak = peak.max(live);
    }
    assert_eq!(summary.peak_live, peak as u64);
}

#[test]
fn temporaries_die_on_the_next_step() {
    let p = Params {
        lifetimes: "burst:50,temp:50".parse().unwrap(),
        realloc_percent: 0,
        bursts: 20,
        ..Params::default()
    };
    let t = parse_ok(&generated(&p));
    let ops = t.ops();
    let mut temps = 0;
    for (i, op) in ops.iter().enumerate() {
        // Within a burst of one size, an allocation of another size is a temporary: the next
        // call frees it.
        if op.func == Func::Malloc && i > 0 && ops[i - 1].func == Func::Malloc {
            if let Some(next) = ops.get(i + 1) {
                if next.func == Func::Free && next.slot == op.slot {
                    temps += 1;
                }
            }
        }
    }
    assert!(temps > 100, "{temps} temporaries");
    assert_eq!(t.live_at_end, 0);
}

#[test]
fn threads_share_the_work_and_stats_lines_come_every_n_calls() {
    let p = Params {
        threads: 3,
        bursts: 30,
        stats_every: 700,
        ..Params::default()
    };
    let t = parse_ok(&generated(&p));
    let mut tids = t.threads.clone();
    tids.sort_unstable();
    assert_eq!(tids, vec![1, 2, 3]);
    let counts = t.counts();
    let stats = counts[Func::JemallocStats.index()];
    let calls = t.allocator_calls();
    assert_eq!(stats, calls / 700);
    for thread in 0..3 {
        assert!(t.ops().iter().filter(|o| o.thread == thread).count() > 100);
    }
}

#[test]
fn mixes_parse_and_print_back() {
    let mix: SizeMix = SizeMix::DEFAULT.parse().unwrap();
    assert_eq!(mix.to_string().parse::<SizeMix>().unwrap(), mix);
    let l: Lifetimes = Lifetimes::DEFAULT.parse().unwrap();
    assert_eq!(l.to_string().parse::<Lifetimes>().unwrap(), l);
    for bad in ["", "0", "5-3", "abc", "16:x", "16:0"] {
        assert!(bad.parse::<SizeMix>().is_err(), "`{bad}` parsed");
    }
    for bad in ["burst", "burst:x", "old:3", "long:5,temp:5"] {
        assert!(bad.parse::<Lifetimes>().is_err(), "`{bad}` parsed");
    }
    assert!("sideways".parse::<Teardown>().is_err());
}

#[test]
fn impossible_parameters_are_refused() {
    for p in [
        Params {
            threads: 0,
            ..Params::default()
        },
        Params {
            burst_size: (10, 5),
            ..Params::default()
        },
    ] {
        let e = generate(&p, &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
