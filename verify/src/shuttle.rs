//! Shuttle random walks over a whole heap (built only with `--cfg shuttle`): eight or more
//! threads allocate, fill each block with its own pattern, hand blocks to one another, free
//! them (often on another thread than the one that allocated them) and reallocate them, and
//! after every step a thread checks every live block's pattern and the heap's invariants
//! (`Heap::check_live`). At the end every block is freed, and the heap must hold nothing.
//!
//! Under `--cfg shuttle` the engine's atomics, thread-locals and process globals are
//! shuttle's (`alloclab_core::sync`), so shuttle's schedulers decide every interleaving, at
//! every atomic, lock and cell access, well past loom's preemption bound; and a cell entered
//! by two threads at once panics ("data race"). Each test runs a random scheduler, then PCT
//! (probabilistic concurrency testing, a few preemptions placed at random), both from a fixed
//! seed unless `ALLOCLAB_SHUTTLE_SEED` gives one.
//!
//! A failing execution panics with the scheduler, its seed, the walk's parameters and the
//! failing schedule, as shuttle encodes it, quoted in a line of Rust that replays it:
//! `alloclab_verify::shuttle::replay::<Config>(walk, "<schedule>")`. The
//! seed reruns the same search (`ALLOCLAB_SHUTTLE_SEED`), the schedule reruns the one execution
//! (that line in a test, `ALLOCLAB_SHUTTLE_REPLAY`, or [`replay`]). VERIFY.md ("Shuttle") has
//! the commands.

use crate::rng::Rng;
use alloclab_core::{Config, Heap};
use shuttle::scheduler::{PctScheduler, RandomScheduler, ReplayScheduler, Scheduler};
use shuttle::sync::{Arc, Mutex};
use std::panic::AssertUnwindSafe;

/// What one walk does: its threads, steps and data. Schedules come from the scheduler; the
/// sizes and choices of each thread from `seed`, so a schedule alone replays an execution.
#[derive(Clone, Copy, Debug)]
pub struct Walk {
    /// Threads besides the execution's main thread (at least 2).
    pub threads: usize,
    /// Steps per thread.
    pub steps: usize,
    /// Seeds the threads' choices (sizes, which block, which operation).
    pub seed: u64,
}

impl Default for Walk {
    /// 8 threads of 16 steps: about 130 operations and as many whole-heap checks per execution;
    /// `ALLOCLAB_SHUTTLE_THREADS` and `ALLOCLAB_SHUTTLE_STEPS` override.
    fn default() -> Self {
        Walk {
            threads: env_number("ALLOCLAB_SHUTTLE_THREADS").map_or(8, |n| n as usize),
            steps: env_number("ALLOCLAB_SHUTTLE_STEPS").map_or(16, |n| n as usize),
            seed: 0x5eed_a110c,
        }
    }
}

/// The number in environment variable `name` (decimal or `0x` hexadecimal), if set.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        let v = v.trim();
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        parsed.unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    })
}

/// How many executions of each scheduler, and the PCT depth.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    /// Executions under the random scheduler.
    pub random: usize,
    /// Executions under PCT.
    pub pct: usize,
    /// PCT's bug depth (preemptions it places).
    pub depth: usize,
    /// Seeds both schedulers.
    pub seed: u64,
}

/// Default executions per scheduler (`ALLOCLAB_SHUTTLE_ITERATIONS` overrides).
pub const ITERATIONS: usize = 16;

/// Default PCT depth.
pub const PCT_DEPTH: usize = 3;

/// Default scheduler seed (`ALLOCLAB_SHUTTLE_SEED` overrides).
pub const SEED: u64 = 0xa110_c1ab;

impl Default for Search {
    /// [`ITERATIONS`] of each scheduler from [`SEED`], or what `ALLOCLAB_SHUTTLE_ITERATIONS`
    /// and `ALLOCLAB_SHUTTLE_SEED` say.
    fn default() -> Self {
        let n = env_number("ALLOCLAB_SHUTTLE_ITERATIONS").map_or(ITERATIONS, |n| n as usize);
        Search {
            random: n,
            pct: n,
            depth: PCT_DEPTH,
            seed: env_number("ALLOCLAB_SHUTTLE_SEED").unwrap_or(SEED),
        }
    }
}

/// The kit's shuttle entry point: [`random_walk_with`] with the default walk and search (8
/// threads; both schedulers, [`ITERATIONS`] executions each), or, if `ALLOCLAB_SHUTTLE_REPLAY`
/// holds a schedule, that one execution. Panics with a replayable report on a finding.
pub fn random_walk<C: Config>() {
    random_walk_with::<C>(Walk::default(), Search::default());
}

/// Runs `walk` on a heap of config `C` under the random scheduler, then PCT, as `search` says
/// (or replays `ALLOCLAB_SHUTTLE_REPLAY`, if set). Prints what it ran and how long it took.
///
/// `ALLOCLAB_SHUTTLE_CONFIG=name` skips every config of another name (`C::NAME`; `custom` for
/// `Using<..>`), to replay one config's schedule in a test that walks several.
pub fn random_walk_with<C: Config>(walk: Walk, search: Search) {
    assert!(walk.threads >= 2, "a walk needs at least two threads");
    if std::env::var("ALLOCLAB_SHUTTLE_CONFIG").is_ok_and(|name| name != C::NAME) {
        eprintln!("shuttle: {}: skipped (ALLOCLAB_SHUTTLE_CONFIG)", C::NAME);
        return;
    }
    if let Ok(schedule) = std::env::var("ALLOCLAB_SHUTTLE_REPLAY") {
        eprintln!("shuttle: {}: replaying ALLOCLAB_SHUTTLE_REPLAY", C::NAME);
        replay::<C>(walk, &schedule);
        return;
    }
    if search.random > 0 {
        run::<C, _>(
            walk,
            RandomScheduler::new_from_seed(search.seed, search.random),
            "random",
            Some(search),
        );
    }
    if search.pct > 0 {
        run::<C, _>(
            walk,
            PctScheduler::new_from_seed(search.seed, search.depth, search.pct),
            "pct",
            Some(search),
        );
    }
}

/// Replays one execution of `walk` on config `C`: `schedule` is a failing schedule as shuttle
/// encodes it (the string a report quotes; hex digits, whitespace ignored) or the path of a file
/// that holds one. Panics as the original execution did, if the code under test has not
/// changed. (`shuttle::replay` cannot: it runs with shuttle's default configuration, whose
/// stack is too small for a heap; this is `shuttle::Runner` with a `ReplayScheduler` and
/// [`config`] on [`execution`].)
pub fn replay<C: Config>(walk: Walk, schedule: &str) {
    let schedule = match std::fs::read_to_string(schedule.trim()) {
        Ok(text) => text,
        Err(_) => schedule.to_string(),
    };
    run::<C, _>(
        walk,
        ReplayScheduler::new_from_encoded(&schedule),
        "replay",
        None,
    );
}

/// The directory for this process's failing schedules. One for the whole process: shuttle
/// may write a failure to the directory of an earlier runner in the same process (it did, once
/// the first runner's had been removed), so none is removed while the process runs.
fn schedule_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir()
        .join("alloclab-shuttle")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).expect("create the directory for failing schedules");
    dir
}

/// The schedule files in `dir`, in the order shuttle numbers them.
fn schedule_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn run<C: Config, S: Scheduler + 'static>(
    walk: Walk,
    scheduler: S,
    name: &str,
    search: Option<Search>,
) {
    // A failing schedule goes to a file (its contents are quoted in the report).
    let dir = schedule_dir();
    let config = config(Some(dir.clone()));
    let before = schedule_files(&dir);
    let start = std::time::Instant::now();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        shuttle::Runner::new(scheduler, config).run(execution::<C>(walk))
    }));
    match result {
        Ok(executions) => {
            eprintln!(
                "shuttle: {} ({name}): {executions} executions of {} threads x {} steps in {:.2?}",
                C::NAME,
                walk.threads,
                walk.steps,
                start.elapsed()
            )
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("(a panic without a message)");
            // The file this run's failure added holds the failing execution's schedule.
            let files: Vec<_> = schedule_files(&dir)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            let schedule = files
                .first()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .map(|text| text.split_whitespace().collect::<String>())
                .unwrap_or_else(|| "<the failing schedule printed above>".to_string());
            let again = match search {
                Some(s) => format!(
                    "the same search: ALLOCLAB_SHUTTLE_SEED={:#x} ALLOCLAB_SHUTTLE_ITERATIONS={} \
                     (random, then PCT depth {}),\nor ",
                    s.seed, s.random, s.depth
                ),
                None => String::new(),
            };
            let config = crate::machine::pastable_type_name(core::any::type_name::<C>());
            panic!(
                "shuttle ({name} scheduler) found a failing execution of {} ({} threads x {} \
                 steps, walk seed {:#x}):\n  {what}\nreplay it with {again}the one execution, \
                 in a test:\n    alloclab_verify::shuttle::replay::<{config}>(\
                 alloclab_verify::shuttle::Walk {{ threads: {}, steps: {}, seed: {:#x} }}, \
                 \"{schedule}\");\nor in the test that found it: ALLOCLAB_SHUTTLE_CONFIG={} \
                 ALLOCLAB_SHUTTLE_REPLAY={schedule}",
                C::NAME,
                walk.threads,
                walk.steps,
                walk.seed,
                walk.threads,
                walk.steps,
                walk.seed,
                C::NAME
            );
        }
    }
}

/// Stack of each shuttle thread of a walk, the execution's first thread included (each its own
/// mapping).
pub const STACK_SIZE: usize = 2 << 20;

/// Mostly small sizes (the hot ones first), some large, rarely huge.
fn size(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=54 => crate::ops::HOT_SIZES[rng.below(crate::ops::HOT_SIZES.len())],
        55..=89 => 1 + rng.below(3840),
        90..=98 => 3841 + rng.below(60_000),
        _ => 1_100_000 + rng.below(300_000),
    }
}

/// A live block: where, how big, its pattern's tag, and which thread may free it now.
#[derive(Clone, Copy, Debug)]
struct Block {
    ptr: usize,
    size: usize,
    tag: u64,
    holder: usize,
}

/// Every live block that no thread is working on, by holder.
type Table = Arc<Mutex<Vec<Block>>>;

fn fill(b: &Block) {
    // SAFETY: a live allocation of at least `size` bytes, which only this thread touches now.
    unsafe { crate::harness::fill_pattern(b.ptr, b.size, b.tag) };
}

/// Panics unless the first `len` bytes of `b` hold its pattern.
fn intact(b: &Block, len: usize, when: &str) {
    // SAFETY: a live allocation of at least `len` bytes (`len <= size`).
    if let Some(off) = unsafe { crate::harness::check_pattern(b.ptr, b.size, len, b.tag) } {
        panic!(
            "{when}: block {:#x} ({} B, tag {:#x}) changed at offset {off}",
            b.ptr, b.size, b.tag
        );
    }
}

/// Every block in the table intact, and the heap's invariants with every one of them live.
fn check_all<C: Config>(heap: &Heap<C>, table: &Table, when: &str) {
    let t = table.lock().unwrap();
    for b in t.iter() {
        intact(b, b.size, when);
    }
    let mut live: Vec<(usize, usize)> = t.iter().map(|b| (b.ptr, b.size)).collect();
    if let Err(v) = heap.check_live(&mut live) {
        panic!("{when}: {v}");
    }
}

/// One execution of `walk` on a heap of config `C`, as a function for a shuttle runner: what the
/// schedulers run, and what [`replay`] replays. Run it with [`config`]: shuttle's default
/// configuration (that of `shuttle::replay` and `shuttle::check_random`) gives the execution's
/// first thread a 60 KiB stack, too small for a heap's setup.
pub fn execution<C: Config>(walk: Walk) -> impl Fn() + Send + Sync + 'static {
    move || whole_walk::<C>(walk)
}

/// The shuttle configuration the walks run with: stacks of [`STACK_SIZE`], at most 2,000,000
/// steps per execution, no warning about atomics (shuttle runs every one as `SeqCst`), and
/// failing schedules written to `persist_to` (`None`: printed to stderr).
pub fn config(persist_to: Option<std::path::PathBuf>) -> shuttle::Config {
    let mut config = shuttle::Config::new();
    // The engine's atomics are mostly Relaxed/Acquire/Release; shuttle runs every atomic as
    // SeqCst (VERIFY.md says what that misses) and would warn about it once per process.
    config.silence_warnings = true;
    config.max_steps = shuttle::MaxSteps::FailAfter(2_000_000);
    // Shuttle's default stack is too small for a heap's setup (1024 arena slots).
    config.stack_size = STACK_SIZE;
    config.failure_persistence = match persist_to {
        Some(dir) => shuttle::FailurePersistence::File(Some(dir)),
        None => shuttle::FailurePersistence::Print,
    };
    config
}

/// `walk.threads` threads on one heap, then the end checks.
fn whole_walk<C: Config>(walk: Walk) {
    let heap = Arc::new(Heap::<C>::new());
    let table: Table = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..walk.threads)
        .map(|me| {
            let heap = heap.clone();
            let table = table.clone();
            shuttle::thread::spawn(move || thread_walk(&heap, &table, walk, me))
        })
        .collect();
    for h in handles {
        h.join().expect("a walking thread panicked");
    }
    // Every thread has exited (its exit hook ran: caches flushed, arenas handed back).
    check_all(&heap, &table, "after the walk");
    let blocks = std::mem::take(&mut *table.lock().unwrap());
    for b in &blocks {
        // SAFETY: a live allocation of `heap`, in no thread's hands, freed once.
        unsafe { heap.free(b.ptr as *mut u8) };
    }
    // The end checks' failure is raised last, once the heap is gone: what runs after a panic
    // (a heap's drop takes locks, which are scheduling points) is not in the schedule shuttle
    // records, so a replay of it would end early.
    let result = end_checks(&heap);
    drop(heap);
    drop(table);
    if let Err(f) = result {
        panic!("{f}");
    }
}

/// The checks once every block is freed: invariants, nothing allocated, nothing cached after
/// the calling thread's cache is flushed.
fn end_checks<C: Config>(heap: &Heap<C>) -> Result<(), String> {
    heap.check_invariants()
        .map_err(|v| format!("after freeing every block: {v}"))?;
    let st = heap.stats();
    if st.allocated != 0 {
        return Err(format!(
            "every block freed, but the statistics count {} bytes allocated",
            st.allocated
        ));
    }
    heap.flush_thread_cache();
    let st = heap.stats();
    if st.cached != 0 {
        return Err(format!(
            "every thread exited or flushed, but {} bytes are cached",
            st.cached
        ));
    }
    Ok(())
}

/// Takes a random block held by `me` out of the table (so no other thread checks it while
/// this one frees or reallocates it).
fn take_mine(table: &Table, me: usize, rng: &mut Rng) -> Option<Block> {
    let mut t = table.lock().unwrap();
    let mine: Vec<usize> = (0..t.len()).filter(|&i| t[i].holder == me).collect();
    if mine.is_empty() {
        return None;
    }
    Some(t.swap_remove(mine[rng.below(mine.len())]))
}

fn thread_walk<C: Config>(heap: &Heap<C>, table: &Table, walk: Walk, me: usize) {
    let mut rng = Rng::new(walk.seed, me);
    for step in 0..walk.steps {
        let tag = (me as u64) << 48 | (step as u64) << 8;
        let when = format!("thread {me}, step {step}");
        match rng.below(10) {
            // Allocate (one in four zeroed) and fill.
            0..=3 => {
                let size = size(&mut rng);
                let zero = rng.below(4) == 0;
                let p = if zero {
                    heap.calloc(1, size) as usize
                } else {
                    heap.malloc(size) as usize
                };
                if p == 0 {
                    // A broken policy contract (verification builds) explains it better.
                    heap.check_invariants()
                        .unwrap_or_else(|v| panic!("{when}: allocation failed: {v}"));
                    panic!("{when}: allocation of {size} B failed");
                }
                if zero {
                    // SAFETY: `p` is a live allocation of `size` bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
                    if let Some(off) = bytes.iter().position(|&b| b != 0) {
                        panic!("{when}: calloc({size}) at {p:#x} not zero at offset {off}");
                    }
                }
                let b = Block {
                    ptr: p,
                    size,
                    tag,
                    holder: me,
                };
                fill(&b);
                table.lock().unwrap().push(b);
            }
            // Free one of the blocks this thread holds (allocated here or handed over).
            4..=5 => {
                if let Some(b) = take_mine(table, me, &mut rng) {
                    intact(&b, b.size, &when);
                    // SAFETY: a live allocation of `heap`, taken out of the table, freed once.
                    unsafe { heap.free(b.ptr as *mut u8) };
                }
            }
            // Reallocate one: the common prefix must survive; then the new size is filled.
            6..=7 => {
                if let Some(mut b) = take_mine(table, me, &mut rng) {
                    intact(&b, b.size, &when);
                    let new_size = size(&mut rng);
                    // SAFETY: a live allocation of `heap`, taken out of the table.
                    let q = unsafe { heap.realloc_c(b.ptr as *mut u8, new_size) } as usize;
                    if q == 0 {
                        panic!("{when}: realloc of {:#x} to {new_size} B failed", b.ptr);
                    }
                    let kept = b.size.min(new_size);
                    b.ptr = q;
                    intact(&b, kept, &format!("{when}, after realloc to {new_size} B"));
                    b.size = new_size;
                    b.tag = tag | 1;
                    fill(&b);
                    table.lock().unwrap().push(b);
                }
            }
            // Hand one to another thread, which may free it: a cross-thread free.
            _ => {
                let to = (me + 1 + rng.below(walk.threads - 1)) % walk.threads;
                let mut t = table.lock().unwrap();
                if let Some(b) = t.iter_mut().find(|b| b.holder == me) {
                    b.holder = to;
                }
            }
        }
        check_all(heap, table, &when);
    }
}
