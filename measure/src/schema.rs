//! `results.json`: one record per measurement, versioned. Every report (`report.md`,
//! `results.csv`, charts, LaTeX) is drawn from this file alone, so `alloclab report DIR`
//! redraws them without rerunning, and `alloclab merge` combines shards by concatenating
//! their measurements.
//!
//! Compatibility: a reader accepts files whose `schema_version` equals [`SCHEMA_VERSION`];
//! fields are only ever added with a default (`#[serde(default)]`), and a change to the
//! meaning of a field bumps the version.

use serde::{Deserialize, Serialize};

/// The version of this schema.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// Where and how it was measured.
    pub environment: Environment,
    /// The grid asked for and how it was run.
    pub plan: Plan,
    /// Every measurement, warm-up rounds included (marked), in the order they ran.
    pub measurements: Vec<Measurement>,
    /// Measurements that failed (a workload's self-check, a crash, a timeout).
    #[serde(default)]
    pub failures: Vec<Failure>,
}

/// The machine and software a result comes from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// CPU model (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cores: usize,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// `uname -sr`.
    pub kernel: String,
    /// `rustc --version` of the compiler that built the binary (from the build; `rustc` on the
    /// `PATH` at run time when the build did not record it).
    pub rustc: String,
    /// alloclab's version.
    pub alloclab_version: String,
    /// The git commit checked out in the working directory when the run started, if any
    /// (which need not be what the binary was built from: see `build.commit`).
    pub commit: Option<String>,
    /// Each peer's name and library version.
    pub peers: Vec<(String, String)>,
    /// The host name.
    pub hostname: String,
    /// When the run started (RFC 3339, UTC).
    pub started: String,
    /// The exact command line.
    pub command: Vec<String>,
    /// The build that ran, as recorded when it was compiled (absent in older files).
    #[serde(default)]
    pub build: BuildInfo,
    /// Hashes of the files that ran: the running binary, then each library a `--programs`
    /// run preloaded.
    #[serde(default)]
    pub hashes: Vec<FileHash>,
    /// `/proc/loadavg` when the run started.
    #[serde(default)]
    pub load_before: Option<LoadAverage>,
    /// `/proc/loadavg` when the run ended.
    #[serde(default)]
    pub load_after: Option<LoadAverage>,
    /// Files written before disturbance was measured per measurement (`Measurement::
    /// disturbance`): whether the load average judged the machine busy. Now always false;
    /// an older file's value is kept and its report still says so.
    #[serde(default)]
    pub noisy: bool,
}

/// Where the binary that measured came from, embedded at build time (`measure/build.rs`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// `git rev-parse HEAD` of the sources compiled; `None` outside git or in older files.
    pub commit: Option<String>,
    /// Whether `git status --porcelain` listed changes then; `None` when unknown.
    pub dirty: Option<bool>,
    /// `rustc --version` of the compiler that built it.
    pub rustc: Option<String>,
}

/// A file that ran, and a hash of its bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileHash {
    /// `binary` (the running alloclab) or `preload` (a library under `LD_PRELOAD`).
    pub role: String,
    /// Its path as it was run.
    pub path: String,
    /// `fnv1a64:` and the 64-bit FNV-1a hash of its bytes in hex; `unreadable` if it could not
    /// be read.
    pub hash: String,
}

/// The kernel's load averages: runnable and uninterruptible tasks, averaged over 1, 5 and 15
/// minutes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadAverage {
    /// Over the last minute.
    pub one: f64,
    /// Over the last five minutes.
    pub five: f64,
    /// Over the last fifteen minutes.
    pub fifteen: f64,
}

/// What was asked for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Subjects, in the order given.
    pub subjects: Vec<String>,
    /// Workloads, in the order given.
    pub workloads: Vec<String>,
    /// Thread counts for threaded workloads.
    pub threads: Vec<usize>,
    /// Measured repetitions (process invocations) per cell, warm-up excluded.
    pub reps: usize,
    /// Warm-up rounds run first and discarded.
    pub warmup: usize,
    /// The subject ratios are taken against.
    pub baseline: String,
    /// The seed of the shuffles (and of the environment-size perturbation).
    pub seed: u64,
    /// Amount of work relative to the full workloads.
    pub scale: f64,
    /// Whether the quick (CI-sized) grid was used.
    pub quick: bool,
    /// Whether each measurement ran under callgrind.
    pub instructions: bool,
    /// Whether each measurement ran under strace, counting its memory system calls
    /// (`compare --syscalls`; absent, false, in older files).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub syscalls: bool,
    /// The shards run (`i/n`, one per merged file); empty when unsharded.
    #[serde(default)]
    pub shards: Vec<String>,
    /// The `--heap-conf` subjects' definitions (`NAME=config:BASE,key:value,...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_confs: Vec<String>,
    /// The metrics asked for with `--metrics` (empty: every metric measured); one of the
    /// probe's (`alloc_*`, `lat_*`) puts the probe in front of every subject.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// The `--margin` values of the equivalence tests (`M` for every metric or `METRIC=M`);
    /// empty: every metric's default (`analysis::default_margin`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub margins: Vec<String>,
}

impl Plan {
    /// Whether the measurements time the allocator's calls (`ProbeMetrics`).
    pub fn probe(&self) -> bool {
        self.metrics.iter().any(|m| is_probe_metric(m))
    }

    /// Whether this is a plan of installed programs under `LD_PRELOAD` (`compare --programs`)
    /// rather than of the built-in workloads: its workloads are named [`PROGRAM_PREFIX`]`NAME`,
    /// which no built-in workload is.
    pub fn runs_programs(&self) -> bool {
        self.workloads.iter().any(|w| w.starts_with(PROGRAM_PREFIX))
    }
}

/// What the workloads of `compare --programs` are named with: `program:python3`.
pub const PROGRAM_PREFIX: &str = "program:";

/// Whether `name` is one of the probe's metrics (time inside the allocator): asking for one
/// puts the probe in front of every subject.
pub fn is_probe_metric(name: &str) -> bool {
    name.starts_with("alloc_") || name.starts_with("lat_")
}

/// One process invocation measuring one subject on one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The subject's name.
    pub subject: String,
    /// The subject in detail (policies, version).
    pub describe: String,
    /// The workload's name.
    pub workload: String,
    /// Worker threads.
    pub threads: usize,
    /// Round number: warm-up rounds come first.
    pub round: usize,
    /// Whether this round is a discarded warm-up.
    pub warmup: bool,
    /// Position within the round's shuffled order.
    pub order: usize,
    /// Bytes of padding added to the child's environment (layout perturbation).
    pub env_pad: usize,
    /// The figures.
    pub metrics: Metrics,
    /// How much of the machine other processes took while it ran (`disturbance.rs`); absent
    /// from files written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
}

/// What processes other than a measurement's child and the harness took of the machine while
/// the measurement ran, from `/proc/stat`'s idle time and the child's and the harness's own
/// usage (`disturbance.rs`, docs/MEASURING.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Disturbance {
    /// `other_cpu_s / (elapsed_s * cpus)`: the share of the machine others took, 0 to 1.
    pub fraction: f64,
    /// CPU seconds neither idle nor the child's nor the harness's (never below 0).
    pub other_cpu_s: f64,
    /// Of those, the seconds the hypervisor gave to other guests (`steal`).
    pub steal_s: f64,
    /// From just before the child started to just after it exited.
    pub elapsed_s: f64,
    /// CPUs online (`/proc/stat`'s `cpuN` lines).
    pub cpus: usize,
    /// How far `other_cpu_s` may be off (`/proc/stat` counts in ticks).
    pub resolution_s: f64,
    /// Whether others certainly took more than the threshold (5%) of the machine:
    /// `other_cpu_s - resolution_s > 0.05 * elapsed_s * cpus`.
    pub disturbed: bool,
    /// The fractions of the earlier attempts at this measurement, measured again because
    /// they were disturbed (this one is the least disturbed of all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<f64>,
}

/// What one measurement measured. Times in seconds, sizes in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Wall-clock time of the workload's measured part.
    #[serde(deserialize_with = "null_as_nan")]
    pub wall: f64,
    /// User CPU time of the measured part.
    #[serde(deserialize_with = "null_as_nan")]
    pub user: f64,
    /// System CPU time of the measured part.
    #[serde(deserialize_with = "null_as_nan")]
    pub sys: f64,
    /// Allocator calls made.
    pub ops: u64,
    /// `ops / wall`.
    #[serde(deserialize_with = "null_as_nan")]
    pub ops_per_sec: f64,
    /// The process's peak resident size during the measured part.
    pub peak_rss: Option<u64>,
    /// The process's resident size at the end of the measured part.
    pub final_rss: Option<u64>,
    /// The child's maximum resident size over its whole life (`wait4`).
    pub max_rss_process: Option<u64>,
    /// alloclab's own statistics sampled during the run (alloclab subjects only).
    #[serde(default)]
    pub heap: Option<HeapMetrics>,
    /// Callgrind counts per operation (`--instructions` only).
    #[serde(default)]
    pub instructions: Option<InstructionMetrics>,
    /// The process's resident size over the measured part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryOverTime>,
    /// Time inside the allocator, from the probe (probe metrics asked for only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeMetrics>,
    /// The memory system calls of the whole measuring process, counted by strace
    /// (`--syscalls` only; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<SyscallCounts>,
}

/// The memory system calls a measuring process made, from `strace -f -c` (every thread, the
/// whole process: its start-up and the harness's own threads included, a few dozen calls
/// that are the same for every subject; docs/MEASURING.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallCounts {
    /// `mmap` calls.
    #[serde(default)]
    pub mmap: u64,
    /// `munmap` calls.
    #[serde(default)]
    pub munmap: u64,
    /// `madvise` calls (`MADV_DONTNEED`, `MADV_FREE`, ... alike).
    #[serde(default)]
    pub madvise: u64,
    /// `mremap` calls.
    #[serde(default)]
    pub mremap: u64,
    /// `mprotect` calls.
    #[serde(default)]
    pub mprotect: u64,
    /// `brk` calls.
    #[serde(default)]
    pub brk: u64,
    /// All of the above.
    #[serde(default)]
    pub total: u64,
}

/// The resident size sampled at a fixed period during a run (bytes, seconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryOverTime {
    /// The sampling period.
    pub period_ms: f64,
    /// Samples taken (the first before the work, the last after it).
    pub samples: u64,
    /// The largest sample.
    pub rss_peak_bytes: u64,
    /// The time-weighted mean of the samples.
    pub rss_mean_bytes: f64,
    /// The last sample.
    pub rss_final_bytes: u64,
    /// The peak minus the lowest sample after it: memory given back after the peak.
    pub rss_returned_bytes: u64,
    /// From the first sample to the last.
    pub seconds: f64,
    /// Evenly spaced samples of the curve, (seconds since the first, bytes).
    pub curve: Vec<(f64, u64)>,
    /// The live bytes the workload counted at each point of `curve` (aging workloads only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live_curve: Vec<u64>,
    /// The allocator calls the workload had made at each point of `curve` (aging workloads
    /// only; absent in files written before they were counted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls_curve: Vec<u64>,
    /// Fragmentation over the run, for a workload that counts its live bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<Fragmentation>,
}

/// Johnstone and Wilson's fragmentation of a whole process over a run: the resident bytes
/// the run added (above `base_bytes`, less the workload's own `own_bytes`) over the live
/// bytes, minus one. 0 is a heap that holds exactly what is live; 1 holds twice that.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fragmentation {
    /// The resident size before the run.
    pub base_bytes: u64,
    /// The workload's own tables.
    pub own_bytes: u64,
    /// The most bytes live at a sample.
    pub peak_live_bytes: u64,
    /// At the peak: the largest resident sample over the largest live sample (JW's measure 4).
    pub peak: f64,
    /// Over the curve's points where anything is live: their mean resident bytes added over
    /// their mean live bytes.
    pub mean: f64,
    /// The same over those points in the last quarter of the run: after the heap has aged.
    pub end: f64,
}

/// Percentiles of call latency (ns, the probe's cost subtracted). In results.json each field
/// carries its metric's name (`lat_p99_ns`, `lat_max_ns`, ...), so a script finds a figure by
/// the name `--metrics` takes; files written before that (`p99`, `max`) still read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ladder {
    /// Median.
    #[serde(rename = "lat_p50_ns", alias = "p50")]
    pub p50: f64,
    /// 90th percentile.
    #[serde(rename = "lat_p90_ns", alias = "p90")]
    pub p90: f64,
    /// 99th percentile.
    #[serde(rename = "lat_p99_ns", alias = "p99")]
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "lat_p999_ns", alias = "p999")]
    pub p999: f64,
    /// 99.99th percentile.
    #[serde(rename = "lat_p9999_ns", alias = "p9999")]
    pub p9999: f64,
    /// The longest call.
    #[serde(rename = "lat_max_ns", alias = "max")]
    pub max: f64,
}

impl Ladder {
    /// The ladder of calls of `kind` (every call for `None`); `None` without timed calls.
    pub fn of(s: &alloclab_probe::Summary, kind: Option<alloclab_probe::Kind>) -> Option<Ladder> {
        let p = |q| s.percentile(kind, q);
        Some(Ladder {
            p50: p(0.5)?,
            p90: p(0.9)?,
            p99: p(0.99)?,
            p999: p(0.999)?,
            p9999: p(0.9999)?,
            max: s.max_ns(kind)?,
        })
    }
}

/// One kind of call's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KindLadder {
    /// `malloc`, `calloc`, `realloc`, `aligned`, `free` or `usable_size`.
    pub kind: String,
    /// Calls made.
    pub calls: u64,
    /// Nanoseconds inside them.
    pub ns: f64,
    /// Their latencies.
    pub latency: Ladder,
}

/// Time inside the allocator, as the probe measured it: around each call, per thread, with
/// its own cost per call (`overhead_ns`, an empty pair of time stamps) subtracted from every
/// figure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeMetrics {
    /// `in-process` (the child timed its subject's calls) or `preload` (liballoclab_probe.so
    /// in front of the program's allocator).
    pub how: String,
    /// The clock (`tsc` or `monotonic`).
    pub clock: String,
    /// The probe's own cost per timed call (ns).
    pub overhead_ns: f64,
    /// Whether `overhead_ns` was subtracted from the figures (always, so far).
    pub subtracted: bool,
    /// The timer's resolution (ns): the median step between two stamps that differ. A
    /// latency below it cannot be told from zero. 0 in files from before it was recorded.
    #[serde(default)]
    pub resolution_ns: f64,
    /// One call in how many was timed (the totals are scaled up by it).
    pub every: u64,
    /// Processes that reported (a program may start several).
    pub processes: usize,
    /// Allocator calls made.
    pub alloc_calls: u64,
    /// Nanoseconds inside the allocator, over all threads.
    pub alloc_ns: f64,
    /// `alloc_ns / alloc_calls`.
    pub alloc_ns_per_op: f64,
    /// The median over threads that made calls of their nanoseconds inside the allocator.
    pub alloc_ns_per_thread: f64,
    /// The largest of them.
    pub alloc_ns_per_thread_max: f64,
    /// Each thread's nanoseconds inside the allocator, in the order threads first called.
    pub thread_ns: Vec<f64>,
    /// Latencies of every call.
    pub latency: Ladder,
    /// Per kind of call that was made.
    pub kinds: Vec<KindLadder>,
}

impl ProbeMetrics {
    /// The figures of a probe summary; `None` when it holds no call.
    pub fn of(s: &alloclab_probe::Summary, how: &str) -> Option<ProbeMetrics> {
        if s.calls() == 0 {
            return None;
        }
        Some(ProbeMetrics {
            how: how.to_string(),
            clock: s.clock.name().to_string(),
            overhead_ns: s.overhead_ns,
            subtracted: true,
            resolution_ns: s.resolution_ns,
            every: s.every,
            processes: s.processes,
            alloc_calls: s.calls(),
            alloc_ns: s.ns(),
            alloc_ns_per_op: s.ns_per_call().unwrap_or(0.0),
            alloc_ns_per_thread: s.ns_per_thread_median().unwrap_or(0.0),
            alloc_ns_per_thread_max: s.ns_per_thread_max().unwrap_or(0.0),
            thread_ns: s.threads.iter().map(|&(_, ns)| ns).collect(),
            latency: Ladder::of(s, None).unwrap_or_default(),
            kinds: alloclab_probe::Kind::ALL
                .iter()
                .zip(&s.kinds)
                .filter(|(_, k)| k.calls > 0)
                .map(|(kind, k)| KindLadder {
                    kind: kind.name().to_string(),
                    calls: k.calls,
                    ns: k.ns,
                    latency: Ladder::of(s, Some(*kind)).unwrap_or_default(),
                })
                .collect(),
        })
    }
}

/// Heap statistics sampled during a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeapMetrics {
    /// Most bytes of live allocations seen.
    pub peak_allocated: u64,
    /// Most bytes of pages backing live allocations seen.
    pub peak_active: u64,
    /// Most bytes mapped from the OS seen (exact mapped bytes, not whole chunks).
    pub peak_mapped: u64,
    /// Johnstone and Wilson's fragmentation: memory used at its peak over the peak of live
    /// bytes, minus one (`peak_mapped / peak_allocated - 1`).
    #[serde(deserialize_with = "null_as_nan")]
    pub frag_peak: f64,
    /// Time-averaged variant: mean over samples of `mapped / allocated - 1`, weighted by time.
    #[serde(deserialize_with = "null_as_nan")]
    pub frag_time_avg: f64,
    /// Samples taken.
    pub samples: u64,
    /// Run-reuse picks.
    pub picks: u64,
    /// Runs made.
    pub new_runs: u64,
    /// Runs released to the arena (became empty).
    pub runs_released: u64,
    /// Purges (madvise calls).
    pub purges: u64,
    /// Arena lock acquisitions since the heap started, at the end of the run (`None`: not
    /// reported, as in results written before these counters existed).
    #[serde(default)]
    pub lock_acquisitions: Option<u64>,
    /// Of those, acquisitions that found the lock held and waited.
    #[serde(default)]
    pub lock_contended: Option<u64>,
    /// Nanoseconds spent waiting in contended arena lock acquisitions.
    #[serde(default)]
    pub lock_wait_ns: Option<u64>,
    /// The most contended acquisitions of one arena's lock.
    #[serde(default)]
    pub lock_contended_max_arena: Option<u64>,
    /// The most nanoseconds waited for one arena's lock.
    #[serde(default)]
    pub lock_wait_ns_max_arena: Option<u64>,
}

/// Callgrind's counts, per allocator operation (and, in `per_free`, per free).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstructionMetrics {
    /// Instructions (Ir).
    #[serde(deserialize_with = "null_as_nan")]
    pub instructions: f64,
    /// Data reads (Dr).
    #[serde(deserialize_with = "null_as_nan")]
    pub data_reads: f64,
    /// Data writes (Dw).
    #[serde(deserialize_with = "null_as_nan")]
    pub data_writes: f64,
    /// First-level data cache misses (D1mr + D1mw).
    #[serde(deserialize_with = "null_as_nan")]
    pub d1_misses: f64,
    /// Last-level misses (DLmr + DLmw).
    #[serde(deserialize_with = "null_as_nan")]
    pub ll_misses: f64,
    /// The same counts inside the `free` entry point only (its inclusive cost), per free: the
    /// seed's denominator (Mozilla bug 1387001). `None` in files written before it was
    /// measured, or when the run made no frees.
    #[serde(default)]
    pub per_free: Option<FreeMetrics>,
}

/// Callgrind's counts inside `free` (self cost plus the inclusive cost of what it calls),
/// divided by the number of frees.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FreeMetrics {
    /// Calls of the `free` entry point callgrind counted (the denominator).
    pub frees: u64,
    /// Instructions (Ir) per free.
    #[serde(deserialize_with = "null_as_nan")]
    pub instructions: f64,
    /// Data reads (Dr) per free.
    #[serde(deserialize_with = "null_as_nan")]
    pub data_reads: f64,
    /// Data writes (Dw) per free.
    #[serde(deserialize_with = "null_as_nan")]
    pub data_writes: f64,
    /// First-level data cache misses (D1mr + D1mw) per free.
    #[serde(deserialize_with = "null_as_nan")]
    pub d1_misses: f64,
    /// Last-level misses (DLmr + DLmw) per free.
    #[serde(deserialize_with = "null_as_nan")]
    pub ll_misses: f64,
}

/// One cell of the grid in one round: subject, workload, threads, round. A complete grid has
/// each exactly once, measured or failed.
pub type CellKey = (String, String, usize, usize);

impl Measurement {
    /// The cell and round this measures.
    pub fn cell_key(&self) -> CellKey {
        (
            self.subject.clone(),
            self.workload.clone(),
            self.threads,
            self.round,
        )
    }
}

impl Failure {
    /// The cell and round that failed.
    pub fn cell_key(&self) -> CellKey {
        (
            self.subject.clone(),
            self.workload.clone(),
            self.threads,
            self.round,
        )
    }
}

/// A measurement that did not produce figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The subject's name.
    pub subject: String,
    /// The workload's name.
    pub workload: String,
    /// Worker threads.
    pub threads: usize,
    /// Round number.
    pub round: usize,
    /// What went wrong (the self-check's message, the signal, the child's stderr tail).
    pub reason: String,
}

/// JSON has no NaN or infinity: serde_json writes a non-finite figure (a fragmentation ratio
/// with nothing allocated, a rate over zero time) as `null`, and this reads `null` back as NaN
/// so that such a file still loads.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Results {
    /// Reads a `results.json`. Errors name the file and what is wrong with it, including a
    /// `schema_version` this build does not read.
    pub fn read(path: &std::path::Path) -> Result<Results, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Results::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the text of a `results.json`, checking its `schema_version` first so that a
    /// file from another version gets that error rather than a missing-field one.
    pub fn from_json(text: &str) -> Result<Results, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
        {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "schema_version {v}, but this alloclab reads version {SCHEMA_VERSION}"
                ))
            }
            None => return Err("no schema_version: not an alloclab results file".into()),
        }
        serde_json::from_value(value).map_err(|e| format!("not a valid results file: {e}"))
    }

    /// Writes it as pretty-printed JSON (followed by a newline). The file is replaced whole
    /// and on disk when this returns (written aside, synced, renamed), because a run removes
    /// its journal once results.json holds what the journal did.
    pub fn write(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        text.push('\n');
        super::durable::replace(path, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    #[test]
    fn json_round_trip() {
        let results = test_fixture::results(4);
        let path =
            std::env::temp_dir().join(format!("alloclab-schema-{}.json", std::process::id()));
        results.write(&path).unwrap();
        let back = Results::read(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(back.unwrap(), results);
    }

    #[test]
    fn provenance_round_trips_and_older_files_still_read() {
        let mut results = test_fixture::results(3);
        results.environment.build = BuildInfo {
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            dirty: Some(true),
            rustc: Some("rustc 1.95.0".into()),
        };
        results.environment.hashes = vec![FileHash {
            role: "preload".into(),
            path: "/usr/lib/libjemalloc.so.2".into(),
            hash: "fnv1a64:00ff00ff00ff00ff".into(),
        }];
        results.environment.load_before = Some(LoadAverage {
            one: 0.25,
            five: 1.5,
            fifteen: 3.0,
        });
        results.environment.noisy = true;
        let text = serde_json::to_string(&results).unwrap();
        assert_eq!(Results::from_json(&text).unwrap(), results);

        // A file written before these fields existed.
        let mut value = serde_json::to_value(&results).unwrap();
        let env = value["environment"].as_object_mut().unwrap();
        for field in ["build", "hashes", "load_before", "load_after", "noisy"] {
            assert!(env.remove(field).is_some(), "{field} is written");
        }
        let old = Results::from_json(&value.to_string()).unwrap();
        assert_eq!(old.environment.build, BuildInfo::default());
        assert!(old.environment.hashes.is_empty());
        assert_eq!(old.environment.load_before, None);
        assert!(!old.environment.noisy);
        assert_eq!(old.measurements, results.measurements);
    }

    #[test]
    fn non_finite_figures_come_back_as_nan() {
        let mut results = test_fixture::results(3);
        results.measurements[0].metrics.ops_per_sec = f64::INFINITY;
        if let Some(h) = results.measurements[1].metrics.heap.as_mut() {
            h.frag_peak = f64::NAN;
        }
        let text = serde_json::to_string(&results).unwrap();
        let back = Results::from_json(&text).unwrap();
        assert!(back.measurements[0].metrics.ops_per_sec.is_nan());
        assert!(back.measurements[1]
            .metrics
            .heap
            .as_ref()
            .unwrap()
            .frag_peak
            .is_nan());
        assert_eq!(back.measurements[2], results.measurements[2]);
    }

    #[test]
    fn reading_refuses_other_versions_and_non_results() {
        let mut value = serde_json::to_value(test_fixture::results(3)).unwrap();
        value["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
        let err = Results::from_json(&value.to_string()).unwrap_err();
        assert!(
            err.contains("schema_version 2") && err.contains("reads version 1"),
            "{err}"
        );
        let err = Results::from_json("{\"a\": 1}").unwrap_err();
        assert!(err.contains("no schema_version"), "{err}");
        assert!(Results::from_json("not json")
            .unwrap_err()
            .contains("not JSON"));
        let err = Results::from_json("{\"schema_version\": 1}").unwrap_err();
        assert!(err.contains("not a valid results file"), "{err}");
        let err = Results::read(std::path::Path::new("/nonexistent/results.json")).unwrap_err();
        assert!(
            err.contains("/nonexistent/results.json: cannot read"),
            "{err}"
        );
    }

    #[test]
    fn latency_fields_carry_their_metric_names_and_old_names_still_read() {
        let l = Ladder {
            p50: 1.0,
            p90: 2.0,
            p99: 3.0,
            p999: 4.0,
            p9999: 5.0,
            max: 6.0,
        };
        let json = serde_json::to_value(&l).unwrap();
        for (name, v) in [
            ("lat_p50_ns", 1.0),
            ("lat_p90_ns", 2.0),
            ("lat_p99_ns", 3.0),
            ("lat_p999_ns", 4.0),
            ("lat_p9999_ns", 5.0),
            ("lat_max_ns", 6.0),
        ] {
            assert_eq!(json[name], serde_json::json!(v), "{name} in {json}");
        }
        let old = r#"{"p50": 1.0, "p90": 2.0, "p99": 3.0, "p999": 4.0, "p9999": 5.0, "max": 6.0}"#;
        assert_eq!(serde_json::from_str::<Ladder>(old).unwrap(), l);
    }
}
