//! malloc+free pairs at a few sizes, each named config against the peers.
//!
//! Two shapes per size:
//! - `pair`: allocate one object and free it, with nothing else live in the heap. For small
//!   sizes this is the worst case of mozjemalloc's design: the run becomes empty at every free
//!   and goes back to the arena, so each pair also makes and unmakes a run.
//! - `pair_warm`: the same, with 64 objects of that size kept live, so the run stays.
//!
//! Criterion interleaves nothing by itself; run the whole group in one invocation so that the
//! subjects are measured back to back on the same machine state.

use alloclab_bench::subjects;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;

const SIZES: [usize; 5] = [16, 128, 1024, 8192, 65536];

fn alloc_free(c: &mut Criterion) {
    let subjects = subjects();
    for shape in ["pair", "pair_warm"] {
        let mut g = c.benchmark_group(format!("alloc_free_{shape}"));
        g.warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
            .sample_size(30);
        for size in SIZES {
            for s in &subjects {
                let warm: Vec<*mut u8> = if shape == "pair_warm" {
                    (0..64).map(|_| s.malloc(size)).collect()
                } else {
                    Vec::new()
                };
                g.bench_with_input(BenchmarkId::new(s.name(), size), &size, |b, &size| {
                    b.iter(|| {
                        let p = s.malloc(size);
                        black_box(p);
                        // SAFETY: `p` comes from `s.malloc` and is freed once.
                        unsafe { s.free(p) };
                    })
                });
                for p in warm {
                    // SAFETY: every pointer comes from `s.malloc` above and is freed once.
                    unsafe { s.free(p) };
                }
            }
        }
        g.finish();
    }
}

criterion_group!(benches, alloc_free);
criterion_main!(benches);
