//! The aging workloads count what they hold, so that the memory sampler gives fragmentation
//! figures for any allocator (`measure/src/live.rs`). In a file of its own: the live count
//! is one per process, and the other workload tests run workloads side by side.

use alloclab::configs::Lifo;
use alloclab::measure::memory;
use alloclab::measure::workloads::{self, Params};
use alloclab::Heap;
use std::time::Duration;

#[test]
fn aging_workloads_give_fragmentation_figures_and_others_do_not() {
    let params = Params {
        threads: 1,
        // A hundredth: the aging workloads make 100 million calls and more at full size.
        scale: 0.01,
        seed: 3,
    };
    // As in a measuring process, which runs one workload: what a workload leaves resident in
    // this process (a dropped heap's retained pages, freed tables) is counted before the next
    // run and reused in it, so the workload with the most resident before it (the parsed
    // trace) comes first and each gets a heap of its own.
    // The Robson adversary as the study runs it, without touching (a second Robson run in one
    // process would find its tables' memory already resident, kept by the process's own
    // allocator from the first, and read less resident than live).
    for name in [
        "aging-trace",
        "aging-phases",
        "aging-robson-notouch",
        "churn",
    ] {
        let heap = Heap::<Lifo>::new();
        let w = workloads::by_name(name).unwrap();
        w.prepare().unwrap();
        let (out, m) = memory::recorded(Duration::from_millis(1), || w.run(&heap, &params));
        let out = out.unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = m.expect("the resident size is readable here");
        let f = m.fragmentation.clone();
        if name == "churn" {
            assert!(f.is_none() && m.live_curve.is_empty(), "{name}: {f:?}");
            continue;
        }
        let f = f.unwrap_or_else(|| panic!("{name} counts its live bytes"));
        assert!(f.peak_live_bytes >= 1 << 20, "{name}: {f:?}");
        assert!(f.own_bytes > 0, "{name}: {f:?}");
        // Every live byte is written (or, without touching, every page a block covers), so it
        // is resident: the heap holds at least what is live, less the little the sampler's two
        // reads can miss between them.
        for v in [f.peak, f.mean] {
            assert!(v > -0.05 && v.is_finite(), "{name}: {f:?}");
        }
        assert_eq!(m.live_curve.len(), m.curve.len(), "{name}");
        // Each point says how many calls the run had made: rising to at most the run's count.
        assert_eq!(m.calls_curve.len(), m.curve.len(), "{name}");
        assert!(m.calls_curve.windows(2).all(|w| w[0] <= w[1]), "{name}");
        let last = *m.calls_curve.last().unwrap();
        assert!(last > 0 && last <= out.ops, "{name}: {last} of {}", out.ops);
    }
}
