//! The policy against the built-in configs and the peers (glibc, jemalloc, mimalloc, snmalloc,
//! rpmalloc), in process, through the same `Subject` interface `alloclab compare` uses:
//! `cargo bench --bench compare`. Process-level comparisons with statistics (resident sizes,
//! confidence intervals, verdicts) are `cargo run --release -- compare --subjects ...`.

use alloclab::measure::builtin_subjects as builtin;
use alloclab::measure::subjects::SubjectEntry;
use alloclab::subject::Subject;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

/// Allocates `n` blocks of `size` bytes, frees every other one, reallocates them, frees all:
/// enough churn that the reuse policy picks among several non-full runs.
fn churn(s: &dyn Subject, size: usize, n: usize, blocks: &mut Vec<*mut u8>) {
    blocks.clear();
    for _ in 0..n {
        blocks.push(black_box(s.malloc(size)));
    }
    for b in blocks.iter_mut().step_by(2) {
        // SAFETY: `b` is a live block of `s`, freed once and replaced.
        unsafe { s.free(*b) };
        *b = s.malloc(size);
    }
    for &b in blocks.iter() {
        // SAFETY: every block is live and freed once.
        unsafe { s.free(b) };
    }
}

fn bench(c: &mut Criterion) {
    let mut entries = vec![SubjectEntry::alloclab::<policy_template::ChunkLifoConfig>(
        "chunk-lifo",
    )];
    entries.extend(builtin());
    let mut group = c.benchmark_group("churn-64B-x1000");
    group.throughput(Throughput::Elements(2500));
    let mut blocks = Vec::with_capacity(1000);
    for e in &entries {
        let s = (e.make)();
        group.bench_function(BenchmarkId::from_parameter(&e.name), |b| {
            b.iter(|| churn(&*s, 64, 1000, &mut blocks))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
