//! Seeded engine bugs caught by the shuttle random walk (build with
//! `--cfg shuttle --cfg alloclab_seeded`; `scripts/test.sh` does).
//!
//! | seeded bug (`alloclab_core::seeded::Bug`) | caught by |
//! |---|---|
//! | `UnlockedFree`: `free` touches the arena without its lock | the shim's cell check under shuttle: "data race" (one shared arena, cross-thread frees) |
//! | `LostFlush`: a thread cache's flush loses a region | the walk's end check: every block freed, but the statistics count bytes allocated |
//!
//! Each walk also runs with the bug off first, and must pass. One test runs them in turn:
//! the switch is process-wide.
#![cfg(all(shuttle, alloclab_seeded))]

use alloclab_core::seeded::{self, Bug};
use alloclab_core::Config;
use alloclab_policies::configs::{LifoTcache, Using};
use alloclab_policies::{Lifo, Single};
use alloclab_verify::shuttle::{random_walk_with, Search, Walk};

/// The failure message of `f` with `bug` on (`None`: it passed).
fn failure(bug: Bug, f: impl FnOnce()) -> Option<String> {
    seeded::set(Some(bug));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    seeded::set(None);
    r.err().map(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "(a panic without a message)".into())
    })
}

/// The walk's failure message with `bug` on.
fn walk_failure<C: Config>(bug: Bug) -> Option<String> {
    let search = Search {
        random: 8,
        pct: 8,
        depth: 3,
        seed: alloclab_verify::shuttle::SEED,
    };
    failure(bug, || random_walk_with::<C>(Walk::default(), search))
}

/// The schedule a failure message quotes in its replay line,
/// `alloclab_verify::shuttle::replay::<Config>(walk, "<schedule>");`.
fn printed_schedule(message: &str) -> String {
    let line = message
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("alloclab_verify::shuttle::replay::<")
        })
        .unwrap_or_else(|| panic!("the report has no replay line: {message}"));
    let schedule = line
        .split('"')
        .nth(1)
        .unwrap_or_else(|| panic!("the replay line quotes no schedule: {line}"));
    assert!(
        !schedule.is_empty() && schedule.chars().all(|c| c.is_ascii_hexdigit()),
        "not an encoded schedule: {schedule:?} in {message}"
    );
    // The same schedule the other replay line gives the environment variable.
    assert!(
        message.contains(&format!("ALLOCLAB_SHUTTLE_REPLAY={schedule}")),
        "{message}"
    );
    schedule.to_string()
}

#[test]
fn seeded_bugs_are_caught_by_the_walk() {
    // Controls: the same walks with every bug off.
    alloclab_verify::shuttle::random_walk::<Using<Lifo, Single>>();
    alloclab_verify::shuttle::random_walk::<LifoTcache>();

    type Shared = Using<Lifo, Single>;
    let found =
        walk_failure::<Shared>(Bug::UnlockedFree).expect("shuttle missed the unlocked free");
    assert!(
        found.contains("data race"),
        "caught, but not by the cell check: {found}"
    );
    assert!(
        found.contains("ALLOCLAB_SHUTTLE_SEED="),
        "the report does not name the seed: {found}"
    );
    // The schedule the report prints replays the failure, in one execution.
    replays::<Shared>(Bug::UnlockedFree, &found, "data race");

    let found = walk_failure::<LifoTcache>(Bug::LostFlush).expect("the walk missed the lost flush");
    assert!(
        found.contains("bytes allocated"),
        "caught, but not by the statistics check: {found}"
    );
    // Its printed schedule replays it too (the walk raises its end checks' failures after
    // dropping the heap, so the replay needs no step the schedule lacks).
    replays::<LifoTcache>(Bug::LostFlush, &found, "bytes allocated");
}

/// Replays, with `bug` on, the schedule the failure report `found` prints, in one execution of
/// config `C`: with the line the report prints (`alloclab_verify::shuttle::replay`), and as
/// `shuttle::replay` would if it took a configuration (shuttle's `Runner` with a
/// `ReplayScheduler` of the string, on `execution::<C>(walk)` with the walks' `config`). Both
/// must fail again, with `expected` in the message. Then removes the schedule files.
fn replays<C: Config>(bug: Bug, found: &str, expected: &str) {
    use alloclab_verify::shuttle::{config, execution, replay};
    let schedule = printed_schedule(found);
    let walk = Walk::default();
    let line = format!(
        "alloclab_verify::shuttle::replay::<{}>(alloclab_verify::shuttle::Walk {{ threads: {}, \
         steps: {}, seed: {:#x} }}, \"{schedule}\");",
        alloclab_verify::machine::pastable_type_name(core::any::type_name::<C>()),
        walk.threads,
        walk.steps,
        walk.seed
    );
    assert!(
        found.contains(&line),
        "the report does not print the replay line {line}: {found}"
    );
    let replayed = failure(bug, || replay::<C>(walk, &schedule))
        .unwrap_or_else(|| panic!("the printed {bug:?} schedule replayed without failing"));
    assert!(
        replayed.contains(expected),
        "the replay failed otherwise: {replayed}"
    );
    let replayed = failure(bug, || {
        let scheduler = shuttle::scheduler::ReplayScheduler::new_from_encoded(&schedule);
        shuttle::Runner::new(scheduler, config(None)).run(execution::<C>(walk));
    })
    .unwrap_or_else(|| panic!("shuttle's replay of the {bug:?} schedule did not fail"));
    assert!(
        replayed.contains(expected),
        "shuttle's replay failed otherwise: {replayed}"
    );
    remove_schedules();
}

/// Removes the directory this process's failing schedules went to.
fn remove_schedules() {
    let dir = std::env::temp_dir()
        .join("alloclab-shuttle")
        .join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(dir);
}
