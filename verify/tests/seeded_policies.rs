//! Seeded policy bugs: buggy run-reuse and arena-choice policies, compiled only here, and the
//! check that catches each. If a check stopped catching its bug, this test fails: the checks
//! are proven able to fail.
//!
//! | seeded bug | caught by |
//! |---|---|
//! | LIFO that forgets to drop a run that became full | `check_invariants`: `FullRunKnown` |
//! | MRF that inserts a run twice (slot stack) | `check_invariants`: `RunKnownTwice` |
//! | MRF or LIFO that re-inserts into its intrusive list | `check_invariants`: `Policy` (`Mrf`'s or `Lifo`'s own check) |
//! | arena choice that a large request resets to the shared arena | kit: arena stable across sizes |
//! | LIFO that keeps full runs out of `for_each`'s sight and picks one | the engine's check on picked runs: `UnusablePick`, a finding (verification builds), not an abort |
//! | address-ordered policy whose `pick` offers nothing, under `CurrentRun` | `check_invariants`: `Policy` (`CurrentRun`'s own check: a run it prefers is not current) |
//!
//! The engine-level seeded bugs (bitmap off-by-one, unlocked free, lost update) are in
//! `seeded_engine.rs` and `loom_seeded.rs`, built with `--cfg alloclab_seeded`.
#![cfg(not(loom))]

use alloclab_core::size_class::{bin, small_index};
use alloclab_core::{
    ArenaChoice, ArenaCtx, Heap, Options, Removal, RunRef, RunReuse, ViolationKind,
};
use alloclab_policies::configs::Using;
use alloclab_policies::{
    AddrOrdered, CurrentRun, Lifo, ListLinks, ListRun, Mrf, RunList, Single, Treap, TreeLinks,
};
use alloclab_verify::machine::find_counterexample;
use alloclab_verify::{check_arena_choice, check_run_reuse, Check, LifoModel, Unmodeled};
use core::cell::Cell;
use core::marker::PhantomData;

/// LIFO whose `remove` ignores runs that became full: they stay in the list.
struct LifoKeepsFull;

// SAFETY: none; this policy breaks the contract on purpose (it keeps full runs). The suite stops
// at the check that sees it, before the engine would allocate from such a run.
unsafe impl RunReuse for LifoKeepsFull {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "seeded-lifo-keeps-full";
    fn insert(bin: &mut RunList, run: ListRun) {
        bin.push_front(run);
    }
    fn pick(bin: &mut RunList) -> Option<ListRun> {
        bin.front()
    }
    fn remove(bin: &mut RunList, run: ListRun, why: Removal) {
        if why != Removal::Full {
            bin.remove(run);
        }
    }
    fn for_each(bin: &RunList, f: &mut dyn FnMut(ListRun)) {
        bin.for_each(f);
    }
    fn check(bin: &RunList) -> Result<(), &'static str> {
        bin.check()
    }
}

/// MRF over a stack of run slots whose `freed` pushes the run again instead of moving it.
struct MrfTwice;

#[derive(Default)]
struct Links;

type Slot = RunRef<Links>;

struct Stack {
    slots: [Cell<Option<Slot>>; 256],
    len: usize,
}

impl Default for Stack {
    fn default() -> Self {
        Stack {
            slots: core::array::from_fn(|_| Cell::new(None)),
            len: 0,
        }
    }
}

impl Stack {
    fn push(&mut self, r: Slot) {
        self.slots[self.len].set(Some(r));
        self.len += 1;
    }
    fn remove_top_most(&mut self, r: Slot) {
        if let Some(i) = (0..self.len)
            .rev()
            .find(|&i| self.slots[i].get() == Some(r))
        {
            for j in i..self.len - 1 {
                self.slots[j].set(self.slots[j + 1].get());
            }
            self.len -= 1;
        }
    }
}

// SAFETY: none; this policy breaks the contract on purpose (it can know a run twice). The
// suite stops at the check that sees it.
unsafe impl RunReuse for MrfTwice {
    type Links = Links;
    type Bin = Stack;
    const NAME: &'static str = "seeded-mrf-twice";
    fn insert(bin: &mut Stack, run: Slot) {
        bin.push(run);
    }
    fn freed(bin: &mut Stack, run: Slot) {
        bin.push(run); // the bug: should take it out first
    }
    fn pick(bin: &mut Stack) -> Option<Slot> {
        bin.len.checked_sub(1).and_then(|i| bin.slots[i].get())
    }
    fn remove(bin: &mut Stack, run: Slot, _: Removal) {
        bin.remove_top_most(run);
    }
    fn for_each(bin: &Stack, f: &mut dyn FnMut(Slot)) {
        for s in &bin.slots[..bin.len] {
            f(s.get().expect("filled slot"));
        }
    }
}

/// LIFO over a slot stack that keeps runs that became full, and hides them from `for_each` (so
/// `check_invariants` cannot see them): its next pick is a full run, which the engine refuses.
struct PicksFullRun;

// SAFETY: none; this policy returns a full run from `pick` on purpose. The engine's check on
// picked runs refuses it (in verification builds: as a violation, not an abort).
unsafe impl RunReuse for PicksFullRun {
    type Links = Links;
    type Bin = Stack;
    const NAME: &'static str = "seeded-picks-full-run";
    fn insert(bin: &mut Stack, run: Slot) {
        if !(0..bin.len).any(|i| bin.slots[i].get() == Some(run)) {
            bin.push(run);
        }
    }
    fn pick(bin: &mut Stack) -> Option<Slot> {
        bin.len.checked_sub(1).and_then(|i| bin.slots[i].get())
    }
    fn remove(bin: &mut Stack, run: Slot, why: Removal) {
        if why != Removal::Full {
            bin.remove_top_most(run);
        }
    }
    fn for_each(bin: &Stack, f: &mut dyn FnMut(Slot)) {
        for s in &bin.slots[..bin.len] {
            let r = s.get().expect("filled slot");
            if r.free() > 0 {
                f(r);
            }
        }
    }
}

/// `R` (`Lifo` or `Mrf`) whose `freed` pushes the run onto the intrusive list again, without
/// unlinking it: the list becomes a cycle. Every other call is `R`'s, `check` included, so the
/// test fails if `R`'s own check stops looking at the list (mutation testing found `Lifo::check`
/// and `Mrf::check` could return `Ok(())` unnoticed).
struct ListReinsert<R>(PhantomData<R>);

// SAFETY: none; breaks the list on purpose. The suite stops at the check that sees it.
unsafe impl<R: RunReuse<Links = ListLinks, Bin = RunList>> RunReuse for ListReinsert<R> {
    type Links = ListLinks;
    type Bin = RunList;
    const NAME: &'static str = "seeded-list-reinsert";
    fn insert(bin: &mut RunList, run: ListRun) {
        R::insert(bin, run);
    }
    fn freed(bin: &mut RunList, run: ListRun) {
        bin.push_front(run); // the bug: `move_to_front` unlinks first, `Lifo` leaves it be
    }
    fn pick(bin: &mut RunList) -> Option<ListRun> {
        R::pick(bin)
    }
    fn remove(bin: &mut RunList, run: ListRun, why: Removal) {
        R::remove(bin, run, why);
    }
    fn for_each(bin: &RunList, f: &mut dyn FnMut(ListRun)) {
        // Past the bug a walk of the list never ends. The engine's invariant check runs the
        // policy's `check` before it walks; should that check miss the cycle, stop the walk
        // where the list's length says it ends (a panic, as `for_each` cannot return early),
        // so that the test fails instead of hanging.
        let mut left = bin.len();
        bin.for_each(&mut |r| {
            assert!(left > 0, "{}: a walk past the list's length", Self::NAME);
            left -= 1;
            f(r);
        });
    }
    fn check(bin: &RunList) -> Result<(), &'static str> {
        R::check(bin)
    }
}

/// Thread-local arenas as in mozilla bug 1436541: a request above 512 bytes re-binds the
/// thread to the shared arena 0, for good.
struct ClobberedThreadArenas;

impl ArenaChoice for ClobberedThreadArenas {
    type State = ();
    const NAME: &'static str = "seeded-clobbered-thread-arenas";
    fn init(_: &Options) {}
    fn choose(ctx: &ArenaCtx<'_>, _: &(), size: usize) -> usize {
        if size > 512 {
            ctx.bind_thread(0); // the bug: the newest binding wins from now on
            return 0;
        }
        match ctx.thread_binding() {
            Some(a) => a,
            None => {
                let a = ctx.lease();
                ctx.bind_thread(a);
                a
            }
        }
    }
    fn thread_exit(ctx: &ArenaCtx<'_>, _: &(), arena: usize) {
        ctx.release(arena);
    }
}

const SEED: Option<u64> = Some(0x5eed);

#[test]
fn lifo_keeping_full_runs_is_caught_as_full_run_known() {
    let (ops, f) = find_counterexample::<Using<LifoKeepsFull, Single>, Unmodeled>(32, 400, SEED)
        .expect("the seeded LIFO bug went unnoticed");
    assert!(
        f.is_violation(ViolationKind::FullRunKnown),
        "{f} after {ops:?}"
    );
    // The kit finds it too, by the same check, deterministically: its state machine searches
    // from a fixed regression seed before a random one, and a pick of the full run (had any
    // sequence reached one first) would be the `UnusablePick` finding, not an abort.
    let f = check_run_reuse::<LifoKeepsFull, Unmodeled>().expect_err("kit missed the bug");
    assert!(f.is_violation(ViolationKind::FullRunKnown), "{f}");
}

#[test]
fn mrf_knowing_a_run_twice_is_caught_as_run_known_twice() {
    let (ops, f) = find_counterexample::<Using<MrfTwice, Single>, Unmodeled>(32, 400, SEED)
        .expect("the seeded MRF bug went unnoticed");
    assert!(
        f.is_violation(ViolationKind::RunKnownTwice),
        "{f} after {ops:?}"
    );
    let f = check_run_reuse::<MrfTwice, Unmodeled>().expect_err("kit missed the bug");
    assert!(f.is_violation(ViolationKind::RunKnownTwice), "{f}");
}

#[test]
fn mrf_reinserting_into_its_list_is_caught_by_the_policy_check() {
    reinserting_into_its_list_is_caught_by_the_policy_check::<Mrf>();
}

#[test]
fn lifo_reinserting_into_its_list_is_caught_by_the_policy_check() {
    reinserting_into_its_list_is_caught_by_the_policy_check::<Lifo>();
}

/// The state machine finds `ListReinsert<R>` out by `R`'s own check (`Policy`), not by a
/// walk of the cycle.
fn reinserting_into_its_list_is_caught_by_the_policy_check<
    R: RunReuse<Links = ListLinks, Bin = RunList>,
>() {
    let (ops, f) = find_counterexample::<Using<ListReinsert<R>, Single>, Unmodeled>(32, 400, SEED)
        .expect("the seeded list bug went unnoticed");
    assert!(
        f.is_violation(ViolationKind::Policy("")),
        "{f} after {ops:?}"
    );
}

#[test]
fn a_large_request_resetting_the_thread_arena_is_caught() {
    let f = check_arena_choice::<ClobberedThreadArenas>().expect_err("kit missed the bug");
    assert_eq!(f.check, Check::ArenaChoice, "{f}");
    assert!(f.detail.contains("513-byte request"), "{f}");
    // The state machine alone cannot see it: one thread, any arena is a valid arena.
    assert!(
        find_counterexample::<Using<Lifo, ClobberedThreadArenas>, LifoModel>(4, 200, SEED)
            .is_none()
    );
}

#[test]
fn a_pick_of_a_full_run_is_a_finding_not_an_abort() {
    let (ops, f) = find_counterexample::<Using<PicksFullRun, Single>, Unmodeled>(8, 400, SEED)
        .expect("the seeded full-run pick went unnoticed");
    assert!(
        f.is_violation(ViolationKind::UnusablePick),
        "{f} after {ops:?}"
    );
    // Runs are named by index and start address.
    assert!(
        f.detail.contains(": run ") && f.detail.contains(" at 0x"),
        "{f}"
    );
    // The kit reports it with the operations that led to it, and this binary goes on.
    let f = check_run_reuse::<PicksFullRun, Unmodeled>().expect_err("kit missed the bug");
    assert!(f.is_violation(ViolationKind::UnusablePick), "{f}");
    assert!(f.detail.contains("Op::Alloc"), "{f}");
}

/// The kit's report for `PicksFullRun`, pasted as printed (only the name and the
/// `should_panic` added): the printed test compiles where the policy is defined and replays the
/// finding.
#[test]
#[should_panic(expected = "UnusablePick")]
fn counterexample() {
    use alloclab_policies::configs::Using;
    use alloclab_policies::Single;
    use alloclab_verify::Harness;
    use alloclab_verify::Op;
    use alloclab_verify::Unmodeled;
    // Fails with: step 10: Invariants(UnusablePick): arena 0: bin 27 (448 B): run 0 at 0x7f8017a02000: run-reuse policy picked this run, which is full or of another bin
    let ops = [vec![
        Op::Alloc {
            size: 448,
            align_log: 0,
            zero: false,
        };
        10
    ]]
    .concat();
    Harness::<Using<PicksFullRun, Single>, Unmodeled>::run(&ops).unwrap();
}

/// Lowest address first, except that `pick` never offers a run. Wrapped in `CurrentRun`, a run
/// that becomes non-full while there is no current run then becomes current even when the
/// policy holds a lower one: what `CurrentRun`'s own check is there to see (mutation testing
/// found that check could be emptied without any test noticing).
struct AddrOrderedBlindPick;

type TreeRun = RunRef<TreeLinks>;

// SAFETY: every call but `pick` is `AddrOrdered`'s, which keeps the contract; a `pick` that
// offers nothing only makes the engine start new runs.
unsafe impl RunReuse for AddrOrderedBlindPick {
    type Links = TreeLinks;
    type Bin = Treap;
    const NAME: &'static str = "seeded-addr-ordered-blind-pick";
    fn insert(bin: &mut Treap, run: TreeRun) {
        AddrOrdered::insert(bin, run);
    }
    fn pick(_: &mut Treap) -> Option<TreeRun> {
        None
    }
    fn remove(bin: &mut Treap, run: TreeRun, why: Removal) {
        AddrOrdered::remove(bin, run, why);
    }
    fn for_each(bin: &Treap, f: &mut dyn FnMut(TreeRun)) {
        AddrOrdered::for_each(bin, f);
    }
    fn check(bin: &Treap) -> Result<(), &'static str> {
        AddrOrdered::check(bin)
    }
    fn prefer(candidate: TreeRun, current: TreeRun) -> bool {
        AddrOrdered::prefer(candidate, current)
    }
}

/// A scenario rather than a search: which run is lower depends on where the OS put the
/// chunks once runs spread over several, so the runs here stay in one chunk, made in address
/// order.
#[test]
fn a_current_run_above_a_preferred_one_is_caught_by_the_wrappers_check() {
    let heap = Heap::<Using<CurrentRun<AddrOrderedBlindPick>, Single>>::new();
    let cap = bin(small_index(64)).capacity as usize;
    // Runs A < B < C, each filled in turn (nothing is ever picked: each next run is new).
    let p: Vec<*mut u8> = (0..3 * cap).map(|_| heap.malloc(64)).collect();
    // SAFETY: live allocations of `heap`, each freed once.
    unsafe {
        // C becomes non-full: current. Then A: preferred to C, so they swap (C to the policy).
        heap.free(p[2 * cap]);
        heap.free(p[0]);
    }
    heap.check_invariants().unwrap();
    // A fills up again; the next request gets a new run D above C, which becomes current
    // while the policy holds C, lower: the wrapper's check must say so.
    heap.malloc(64);
    heap.malloc(64);
    let v = heap
        .check_invariants()
        .expect_err("current run above a preferred one");
    assert!(
        matches!(v.kind, ViolationKind::Policy(m)
            if m.contains("a run the policy prefers to the current run is not current")),
        "{v}"
    );
}

/// LIFO's model with the kind of mistake that panics (a table sized for two runs): once it
/// knows a third run, `pick` panics. The kit must catch the panic, shrink the operations that
/// lead to it, and print them as a test that names this model as code here names it.
#[derive(Default, Debug)]
pub struct PanicsAtThirdRun {
    inner: LifoModel,
    known: usize,
}

impl alloclab_verify::ReuseModel for PanicsAtThirdRun {
    fn insert(&mut self, run: usize, runs: &alloclab_verify::Runs<'_>) {
        self.known += 1;
        self.inner.insert(run, runs);
    }
    fn pick(&mut self, runs: &alloclab_verify::Runs<'_>) -> Option<usize> {
        assert!(self.known < 3, "the model's table has room for 2 runs");
        self.inner.pick(runs)
    }
    fn remove(&mut self, run: usize) {
        self.known -= 1;
        self.inner.remove(run);
    }
}

/// Run in a child process by `a_printed_finding_is_one_line_then_a_pastable_test`, which reads
/// what it prints.
#[test]
#[ignore = "run by a_printed_finding_is_one_line_then_a_pastable_test, in a child process"]
fn kit_on_a_panicking_model() {
    alloclab_verify::verify_run_reuse_against::<Lifo, PanicsAtThirdRun>();
}

/// What a user reads when the kit fails, with `RUST_BACKTRACE=1` set: the one-line finding
/// first, then the minimized operations as a `#[test]` whose types are named as this crate
/// names them (`crate::` for the model defined here), and nothing from the hundreds of failing
/// runs the search and the minimizing made: no panic reports, no backtraces, no proptest
/// "Aborting shrinking" notice.
#[test]
fn a_printed_finding_is_one_line_then_a_pastable_test() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["kit_on_a_panicking_model", "--exact", "--include-ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run this test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "the kit passed the model:\n{text}");
    assert!(!text.contains("Aborting shrinking"), "{text}");
    // One panic report: the kit's own, at the end.
    assert_eq!(text.matches("panicked at").count(), 1, "{text}");
    let report = text.split_once("panicked at").unwrap().1;
    let mut lines = report.lines().skip(1);
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with("lifo: step ")
            && first.contains(": Panic: panicked: the model's table has room for 2 runs")
            && first.contains("minimized to"),
        "the report does not start with the one-line finding: {first}\n{text}"
    );
    let rest: Vec<&str> = lines.collect();
    let start = rest
        .iter()
        .position(|l| *l == "#[test]")
        .unwrap_or_else(|| panic!("no #[test] after the finding:\n{text}"));
    let end = start
        + rest[start..]
            .iter()
            .position(|l| *l == "}")
            .unwrap_or_else(|| panic!("the test does not end:\n{text}"));
    let snippet = rest[start..=end].join("\n");
    assert!(
        snippet.contains("type Model = crate::PanicsAtThirdRun;"),
        "the model is not named through crate::\n{snippet}"
    );
    assert!(
        snippet.contains(
            "type Config = alloclab_verify::policies::configs::Using<alloclab_verify::policies::Lifo, alloclab_verify::policies::Single>;"
        ),
        "the config is not named through alloclab_verify\n{snippet}"
    );
    assert!(
        snippet.contains("vec![Op::Alloc"),
        "no operations in the test\n{snippet}"
    );
    // Between the finding and the end of the test: nothing but the finding's own lines.
    let before: String = rest[..start].join("\n");
    assert!(
        !before.contains("stack backtrace") && !snippet.contains("stack backtrace"),
        "a backtrace inside the report:\n{text}"
    );
}

/// The fuzz target's body (`alloclab_verify::fuzz::heap_ops`) reports a seeded bug as a crash:
/// an input of zero bytes decodes to 256 allocations of 448 bytes, whose runs fill up, and
/// LIFO that keeps full runs then picks its full run: the engine's check of every pick reports
/// it (mutation testing found the body could be emptied unseen: only the fuzz targets called
/// it).
#[test]
fn the_fuzz_body_crashes_on_a_seeded_bug() {
    let data = [0u8; 4096];
    let ops = alloclab_verify::fuzz::ops_from_bytes(&data);
    assert_eq!(ops.len(), alloclab_verify::fuzz::MAX_OPS);
    assert!(
        ops.iter()
            .all(|op| matches!(op, alloclab_verify::Op::Alloc { size: 448, .. })),
        "the decoding changed: {:?}",
        &ops[..4]
    );
    // The control: the same input on LIFO itself passes.
    alloclab_verify::fuzz::heap_ops::<Using<Lifo, Single>>(&data);
    let crash = std::panic::catch_unwind(|| {
        alloclab_verify::fuzz::heap_ops::<Using<LifoKeepsFull, Single>>(&data)
    })
    .expect_err("the fuzz body passed LIFO keeping full runs");
    let message = crash.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("Invariants(UnusablePick)"), "{message}");
}
