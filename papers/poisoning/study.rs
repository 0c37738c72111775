//! The poisoning study (the 1387001 seed): what does overwriting freed memory cost? In the
//! seed, mozjemalloc's poison-on-free added 8.7% instructions per free and 15.1% memory
//! traffic (data reads plus writes), under callgrind, for about 2.5% of a browser benchmark's
//! score. Here the same debug-capable heap runs with poisoning off, the first 64 or 256 bytes
//! of each freed block (mozjemalloc's `some`), and every byte, against the heap with the
//! checks compiled out: callgrind's counts per allocator call and, as the seed counted them,
//! inside `free` per free, and, in separate processes, wall time; on `churn` and on
//! `producer-consumer`, whose frees are cross-thread.

use super::checked::{checked_variant, entry};
use super::{Grid, InstructionPass, Question, SeedFigure, Study};
use alloclab_core::{Poison, Safety};
use alloclab_measure::schema::{FreeMetrics, Results};
use alloclab_measure::stats::median;
use alloclab_measure::subjects::SubjectEntry;
use alloclab_measure::workloads::{self, Params};
use alloclab_traces::subject::{HeapStats, Subject};
use std::fmt::Write;
use std::path::Path;
use std::sync::Mutex;

checked_variant!(poison_none, Safety::OFF);
checked_variant!(
    poison_some_64,
    Safety {
        poison: Poison::Some(64),
        ..Safety::OFF
    }
);
checked_variant!(
    poison_some_256,
    Safety {
        poison: Poison::Some(256),
        ..Safety::OFF
    }
);
checked_variant!(
    poison_all,
    Safety {
        poison: Poison::All,
        ..Safety::OFF
    }
);

fn variants() -> Vec<SubjectEntry> {
    vec![
        entry("poison-none", poison_none),
        entry("poison-some-64", poison_some_64),
        entry("poison-some-256", poison_some_256),
        entry("poison-all", poison_all),
    ]
}

/// The study.
pub fn study() -> Study {
    Study {
        name: "poisoning",
        title: "What does poisoning freed memory cost in instructions, memory traffic and time?",
        variants,
        subjects: &[
            "poison-none",
            "poison-some-64",
            "poison-some-256",
            "poison-all",
            "lifo",
        ],
        baseline: "poison-none",
        // `producer-consumer` frees nearly every block on a thread other than the one that
        // allocated it at 2 threads; at 1 the same work frees on the same thread.
        full: Grid {
            workloads: vec![
                "churn",
                "bursts",
                "producer-consumer",
                "replay-python3-stdlib-touch",
            ],
            threads: vec![1, 2],
            reps: 10,
            scale: 1.0,
        },
        quick: Grid {
            workloads: vec!["churn", "producer-consumer", "replay-python3-stdlib-touch"],
            threads: vec![1, 2],
            reps: 7,
            scale: 0.1,
        },
        questions: &[
            Question {
                subject: "poison-all",
                reference: "poison-none",
                text: "poisoning every freed byte against none",
                margins: &[],
            },
            Question {
                subject: "poison-some-256",
                reference: "poison-none",
                text: "poisoning the first 256 bytes against none",
                margins: &[],
            },
            Question {
                subject: "poison-some-64",
                reference: "poison-none",
                text: "poisoning the first 64 bytes against none",
                margins: &[],
            },
            Question {
                subject: "poison-none",
                reference: "lifo",
                text: "checks compiled in and off against compiled out",
                margins: &[],
            },
        ],
        metrics: &["wall"],
        instructions: Some(InstructionPass {
            // Per allocator call, then the seed's own figures: inside `free`, per free.
            metrics: &[
                "instructions",
                "data_reads",
                "data_writes",
                "memory_traffic",
                "d1_misses",
                "free_instructions",
                "free_memory_traffic",
                "free_data_writes",
                "free_d1_misses",
            ],
            workloads: vec!["churn", "producer-consumer"],
            // Two threads: `producer-consumer`'s frees are then cross-thread; `churn` runs two
            // independent workers (callgrind runs the threads one at a time either way).
            threads: vec![2],
            scale: 0.2,
            full_reps: 10,
            quick_reps: 7,
        }),
        programs: None,
        seed: &SEED,
    }
}

/// The seed's figures are per-free callgrind counts of a whole browser, which no ratio of
/// medians stands beside: `mode_for_mode` sets them (`SEED_ALL`, `SEED_OFF`) beside ours in
/// the README's generated block instead.
const SEED: [SeedFigure; 0] = [];

/// One of the seed's two callgrind runs (bug 1387001, comment 0): Speedometer steps 45 to 52,
/// the whole browser's counts, as printed there.
#[derive(Clone, Copy, Debug)]
pub struct SeedRun {
    /// Frees in the stretch: the seed's denominator.
    pub frees: f64,
    /// Instructions (callgrind's Ir), the whole browser.
    pub instructions: f64,
    /// Data reads.
    pub data_reads: f64,
    /// Data writes.
    pub data_writes: f64,
    /// D1 read plus write misses.
    pub d1_misses: f64,
}

impl SeedRun {
    fn per_free(&self, x: f64) -> f64 {
        x / self.frees
    }
}

/// The seed's run as shipped: every freed byte poisoned (mozjemalloc had no other mode then;
/// its `some` mode, the first cache lines only, came years later).
pub const SEED_ALL: SeedRun = SeedRun {
    frees: 1_132_636.0,
    instructions: 13_224e6,
    data_reads: 3_520e6,
    data_writes: 2_773e6,
    d1_misses: 130.3e6 + 37.6e6,
};

/// The seed's run with poisoning disabled.
pub const SEED_OFF: SeedRun = SeedRun {
    frees: 1_225_786.0,
    instructions: 13_163e6,
    data_reads: 3_660e6,
    data_writes: 2_256e6,
    d1_misses: 138.9e6 + 29.0e6,
};

/// The size above which this machine's glibc `memset` (`__memset_avx2_unaligned_erms`) turns
/// to `rep stosb` (its `x86_rep_stosb_threshold`, 2048 by default). callgrind counts every
/// iteration of a `rep` instruction as one instruction and one write, so a fill above it costs
/// one counted instruction per byte, where below it a 32-byte store covers 32 bytes: measured
/// here, a 2,048-byte memset is 126 instructions and 64 writes, a 2,049-byte one 2,065 and
/// 2,049 (README, "Why our all-bytes cost per free is five times the seed's").
pub const REP_STOSB_THRESHOLD: usize = 2048;

/// Bytes the poisoning modes write over the blocks a run frees, counted from the heap's own
/// accounting (the usable bytes each `free` takes out of `allocated`, the size `fill` is asked
/// to cover), not measured under callgrind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Poisoned {
    /// Calls of `free` on a live block.
    pub frees: u64,
    /// Bytes `Poison::All` writes: every usable byte freed.
    pub all: u64,
    /// Of those, the bytes of fills longer than [`REP_STOSB_THRESHOLD`].
    pub all_rep_stosb: u64,
    /// Bytes `Poison::Some(64)` writes: at most the first 64 of each block.
    pub first_64: u64,
}

/// A subject that serializes every call and tallies, per free, the usable bytes the free takes
/// out of the heap's `allocated` figure. Serialized so that no other thread's call moves the
/// figure between the two reads; the tally is then exact, whatever the threads' interleaving.
struct Tally {
    inner: Box<dyn Subject>,
    counts: Mutex<Poisoned>,
}

impl Tally {
    fn allocated(&self) -> usize {
        let HeapStats { allocated, .. } = self.inner.stats();
        allocated.expect("an alloclab heap reports its allocated bytes")
    }
}

impl Subject for Tally {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn malloc(&self, size: usize) -> *mut u8 {
        let _held = self.counts.lock().unwrap();
        self.inner.malloc(size)
    }
    fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        let _held = self.counts.lock().unwrap();
        self.inner.calloc(count, size)
    }
    fn memalign(&self, align: usize, size: usize) -> *mut u8 {
        let _held = self.counts.lock().unwrap();
        self.inner.memalign(align, size)
    }
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        let _held = self.counts.lock().unwrap();
        // SAFETY: forwarded contract.
        unsafe { self.inner.realloc(ptr, size) }
    }
    unsafe fn free(&self, ptr: *mut u8) {
        let mut c = self.counts.lock().unwrap();
        if ptr.is_null() {
            return;
        }
        let before = self.allocated();
        // SAFETY: forwarded contract.
        unsafe { self.inner.free(ptr) };
        let usable = before - self.allocated();
        c.frees += 1;
        c.all += usable as u64;
        if usable > REP_STOSB_THRESHOLD {
            c.all_rep_stosb += usable as u64;
        }
        c.first_64 += usable.min(64) as u64;
    }
    fn stats(&self) -> HeapStats {
        self.inner.stats()
    }
}

/// The bytes each poisoning mode writes per run of `workload` as the instruction pass runs it
/// (`threads`, `scale`, `seed`), on the study's baseline heap (the modes share its size
/// classes, so the usable bytes freed are the same in each).
pub fn poisoned(workload: &str, threads: usize, scale: f64, seed: u64) -> Result<Poisoned, String> {
    let w = workloads::by_name(workload).ok_or_else(|| format!("no workload `{workload}`"))?;
    w.prepare()?;
    let tally = Tally {
        inner: poison_none(),
        counts: Mutex::new(Poisoned::default()),
    };
    w.run(
        &tally,
        &Params {
            threads,
            scale,
            seed,
        },
    )?;
    let counted = *tally.counts.lock().unwrap();
    Ok(counted)
}

/// Medians per free inside `free` of one subject on one workload of the instruction pass.
struct PerFree {
    frees: f64,
    instructions: f64,
    data_reads: f64,
    data_writes: f64,
}

fn per_free(r: &Results, subject: &str, workload: &str) -> Option<PerFree> {
    let ms: Vec<&FreeMetrics> = r
        .measurements
        .iter()
        .filter(|m| !m.warmup && m.subject == subject && m.workload == workload)
        .filter_map(|m| m.metrics.instructions.as_ref()?.per_free.as_ref())
        .collect();
    let med = |f: fn(&FreeMetrics) -> f64| median(&ms.iter().map(|m| f(m)).collect::<Vec<_>>());
    (!ms.is_empty()).then(|| PerFree {
        frees: med(|m| m.frees as f64),
        instructions: med(|m| m.instructions),
        data_reads: med(|m| m.data_reads),
        data_writes: med(|m| m.data_writes),
    })
}

/// `12,345` for 12345.4.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 && digits != "0" {
        format!("-{out}")
    } else {
        out
    }
}

fn signed(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", grouped(x))
    } else {
        grouped(x)
    }
}

/// The README's mode-for-mode tables: the seed's all-bytes run beside our all-bytes subject,
/// our first-64-bytes subject beside the seed's nothing (it had no such mode), per free as the
/// seed counted, with the bytes each mode poisons per free and the added instructions and
/// writes per poisoned byte; then the seed's totals, which its per-free figures divide by two
/// different numbers of frees. From the instruction pass's results in `dir` (`None` without
/// them).
pub fn mode_for_mode(dir: &Path) -> Result<Option<String>, String> {
    let file = dir.join("instructions/results.json");
    if !file.is_file() {
        return Ok(None);
    }
    let r = Results::read(&file)?;
    let mut out = String::new();
    let rel = dir
        .file_name()
        .map_or(String::new(), |d| d.to_string_lossy().into_owned());
    let _ = writeln!(
        out,
        "\nMode for mode with the seed, per free (the seed: its whole browser's counts over \
         Speedometer steps 45-52 divided by that run's frees, from `SEED_ALL` and `SEED_OFF` in \
         `study.rs`; ours: medians inside `free`, per free, from `{rel}/instructions/`; bytes \
         poisoned per free counted from the heap's accounting by replaying the same workload, \
         seed and scale; \"> {REP_STOSB_THRESHOLD} B\": bytes in fills longer than that, which \
         glibc's memset writes with `rep stosb`, one counted instruction and write per byte \
         under callgrind):\n"
    );
    let _ = writeln!(
        out,
        "| run | poisoning | frees | instructions | added | data writes | added | data reads | \
         bytes poisoned | of them > {REP_STOSB_THRESHOLD} B | added instructions per byte | \
         added writes per byte |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let (a, o) = (SEED_ALL, SEED_OFF);
    let seed = "seed (whole browser)";
    let _ = writeln!(
        out,
        "| {seed} | off | {} | {} | | {} | | {} | 0 | 0 | | |",
        grouped(o.frees),
        grouped(o.per_free(o.instructions)),
        grouped(o.per_free(o.data_writes)),
        grouped(o.per_free(o.data_reads)),
    );
    let _ = writeln!(
        out,
        "| {seed} | all bytes | {} | {} | {} | {} | {} | {} | not reported | not reported | \
         n/a | n/a |",
        grouped(a.frees),
        grouped(a.per_free(a.instructions)),
        signed(a.per_free(a.instructions) - o.per_free(o.instructions)),
        grouped(a.per_free(a.data_writes)),
        signed(a.per_free(a.data_writes) - o.per_free(o.data_writes)),
        grouped(a.per_free(a.data_reads)),
    );
    let _ = writeln!(
        out,
        "| {seed} | first 64 B | no such mode in 2017 | | | | | | | | | |"
    );
    let threads = r.plan.threads.first().copied().unwrap_or(1);
    for w in &r.plan.workloads {
        let Some(none) = per_free(&r, "poison-none", w) else {
            continue;
        };
        let bytes = poisoned(w, threads, r.plan.scale, r.plan.seed)?;
        let n = bytes.frees.max(1) as f64;
        let _ = writeln!(
            out,
            "| {w}, {threads} threads | none | {} | {} | | {} | | {} | 0 | 0 | | |",
            grouped(none.frees),
            grouped(none.instructions),
            grouped(none.data_writes),
            grouped(none.data_reads),
        );
        for (subject, mode, poisoned_bytes, rep) in [
            ("poison-all", "all bytes", bytes.all, bytes.all_rep_stosb),
            ("poison-some-64", "first 64 B", bytes.first_64, 0),
        ] {
            let Some(m) = per_free(&r, subject, w) else {
                continue;
            };
            let per_byte = |added: f64| added / (poisoned_bytes as f64 / n);
            let _ = writeln!(
                out,
                "| {w}, {threads} threads | {mode} | {} | {} | {} | {} | {} | {} | {} | {} | \
                 {:.2} | {:.2} |",
                grouped(m.frees),
                grouped(m.instructions),
                signed(m.instructions - none.instructions),
                grouped(m.data_writes),
                signed(m.data_writes - none.data_writes),
                grouped(m.data_reads),
                grouped(poisoned_bytes as f64 / n),
                grouped(rep as f64 / n),
                per_byte(m.instructions - none.instructions),
                per_byte(m.data_writes - none.data_writes),
            );
        }
    }
    let _ = writeln!(
        out,
        "\nThe seed's totals over the stretch (its per-free rows divide each by its own run's \
         frees, and the two runs made different numbers of frees):\n"
    );
    let _ = writeln!(
        out,
        "| seed, whole browser | poisoning off | all bytes | difference |\n|---|---:|---:|---:|"
    );
    for (what, off, all) in [
        ("frees", o.frees, a.frees),
        ("instructions", o.instructions, a.instructions),
        ("data reads", o.data_reads, a.data_reads),
        ("data writes", o.data_writes, a.data_writes),
        ("D1 misses", o.d1_misses, a.d1_misses),
    ] {
        let _ = writeln!(
            out,
            "| {what} | {} | {} | {} ({:+.1}%) |",
            grouped(off),
            grouped(all),
            signed(all - off),
            (all / off - 1.0) * 100.0
        );
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The totals in `SEED_ALL` and `SEED_OFF` give the per-free figures the seed printed:
    /// a mistyped total shows here. The seed printed its totals to three or four significant
    /// digits (millions) and truncated some per-free figures, hence the tolerance of 0.05%.
    #[test]
    fn the_seed_totals_give_its_printed_per_free_figures() {
        let printed = [
            (SEED_ALL.per_free(SEED_ALL.instructions), 11_675.0),
            (SEED_OFF.per_free(SEED_OFF.instructions), 10_738.0),
            (SEED_ALL.per_free(SEED_ALL.data_reads), 3_108.0),
            (SEED_OFF.per_free(SEED_OFF.data_reads), 2_985.0),
            (SEED_ALL.per_free(SEED_ALL.data_writes), 2_448.0),
            (SEED_OFF.per_free(SEED_OFF.data_writes), 1_840.0),
            (SEED_ALL.per_free(SEED_ALL.d1_misses), 148.2),
            (SEED_OFF.per_free(SEED_OFF.d1_misses), 137.0),
        ];
        for (derived, seed) in printed {
            assert!(
                (derived / seed - 1.0).abs() <= 5e-4,
                "{derived} against {seed}"
            );
        }
    }

    /// The tally counts the usable bytes of each free: blocks of known size classes, one
    /// above the `rep stosb` threshold.
    #[test]
    fn the_tally_counts_usable_bytes_per_free() {
        let t = Tally {
            inner: poison_none(),
            counts: Mutex::new(Poisoned::default()),
        };
        // 100 B is served from the 112-byte class, 3000 B from the 3072-byte one.
        let (a, b) = (t.malloc(100), t.malloc(3000));
        assert!(!a.is_null() && !b.is_null());
        // SAFETY: both came from `t` and are freed once.
        unsafe {
            t.free(a);
            t.free(b);
            t.free(std::ptr::null_mut());
        }
        let c = *t.counts.lock().unwrap();
        assert_eq!(
            c,
            Poisoned {
                frees: 2,
                all: 112 + 3072,
                all_rep_stosb: 3072,
                first_64: 64 + 64,
            }
        );
    }

    #[test]
    fn churn_poisons_kilobytes_per_free_mostly_above_the_threshold() {
        let p = poisoned("churn", 1, 0.01, 1).unwrap();
        assert!(p.frees > 10_000, "{p:?}");
        let per_free = p.all as f64 / p.frees as f64;
        // 3% of churn's sizes are 8..256 KiB (mean 132 KiB): about 4 KiB per free from them.
        assert!((3_000.0..7_000.0).contains(&per_free), "{per_free}");
        assert!(p.all_rep_stosb as f64 > 0.8 * p.all as f64, "{p:?}");
    }

    #[test]
    fn grouped_numbers() {
        assert_eq!(grouped(11_675.4), "11,675");
        assert_eq!(grouped(61e6), "61,000,000");
        assert_eq!(signed(-140e6), "-140,000,000");
        assert_eq!(grouped(999.0), "999");
    }
}
