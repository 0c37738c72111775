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

/// The schedule file a failure message names (`ALLOCLAB_SHUTTLE_REPLAY=<path>`).
fn schedule_file(message: &str) -> String {
    let path = message
        .split("ALLOCLAB_SHUTTLE_REPLAY=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the report names no schedule: {message}"));
    assert!(
        std::path::Path::new(path).is_file(),
        "the report names {path}, which is not a file: {message}"
    );
    path.to_string()
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
    // The schedule the report names replays the failure, in one execution.
    replays::<Shared>(Bug::UnlockedFree, &found, "data race");

    let found = walk_failure::<LifoTcache>(Bug::LostFlush).expect("the walk missed the lost flush");
    assert!(
        found.contains("bytes allocated"),
        "caught, but not by the statistics check: {found}"
    );
    // Its schedule replays it too (the walk raises its end checks' failures after dropping the
    // heap, so the replay needs no step the schedule lacks).
    replays::<LifoTcache>(Bug::LostFlush, &found, "bytes allocated");
}

/// Replays, with `bug` on, the schedule the failure report `found` names, in one execution of
/// config `C`: it must fail again, with `expected` in its message. Then removes the schedule.
fn replays<C: Config>(bug: Bug, found: &str, expected: &str) {
    let schedule = schedule_file(found);
    let replayed = failure(bug, || {
        alloclab_verify::shuttle::replay::<C>(Walk::default(), &schedule)
    })
    .unwrap_or_else(|| panic!("the failing schedule of {bug:?} replayed without failing"));
    assert!(
        replayed.contains(expected),
        "the replay failed otherwise: {replayed}"
    );
    remove_schedules(&schedule);
}

/// Removes the directory a caught failure left its schedule in.
fn remove_schedules(schedule: &str) {
    if let Some(dir) = std::path::Path::new(schedule).parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
