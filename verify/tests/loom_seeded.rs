//! Seeded concurrency bugs caught by loom (build with `--cfg loom --cfg alloclab_seeded`;
//! `scripts/test.sh` does, in a target directory of its own).
//!
//! | seeded bug (`alloclab_core::seeded::Bug`) | caught by |
//! |---|---|
//! | `UnlockedFree`: `free` touches the arena without its lock | loom's cell tracking (a causality violation) in the cross-thread free model |
//! | `LostHeapId`: heap ids taken by load + store | the model's assertion that a thread's binding in one heap is not mistaken for one in another |
//!
//! Each model is also run with the bug off (`*_control`), and must pass. The bugs run in a child
//! process each (see `in_child`), so the process-wide switch never leaks into another test.
#![cfg(all(loom, alloclab_seeded))]

use alloclab_core::seeded::{self, Bug};
use alloclab_core::Heap;
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadLocal};
use alloclab_verify::loom::{cross_thread_model, model, spawn};
use loom::sync::Arc;

/// Runs model `name` with `bug` on in a child process (a model that fails under loom panics
/// again while unwinding through loom's torn-down state, which aborts: a process boundary is
/// the only clean way to observe it); returns whether the child failed, and its output.
fn in_child(name: &str, bug: Option<Bug>, model: fn()) -> (bool, String) {
    const CHILD: &str = "ALLOCLAB_SEEDED_CHILD";
    if let Ok(child) = std::env::var(CHILD) {
        if child == name {
            seeded::set(bug);
            model();
            std::process::exit(0);
        }
        return (false, String::new());
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the test binary again");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (!out.status.success(), text)
}

#[test]
fn unlocked_free_control() {
    cross_thread_model::<Using<Lifo, Single>>();
}

#[test]
fn unlocked_free_is_caught_by_loom_cell_tracking() {
    let (failed, out) = in_child(
        "unlocked_free_is_caught_by_loom_cell_tracking",
        Some(Bug::UnlockedFree),
        cross_thread_model::<Using<Lifo, Single>>,
    );
    if std::env::var("ALLOCLAB_SEEDED_CHILD").is_ok() {
        return;
    }
    assert!(failed, "loom missed the unlocked free:\n{out}");
    assert!(
        out.contains("Causality violation"),
        "caught, but not by loom's cell tracking:\n{out}"
    );
}

/// Two threads initialize two heaps at once; then one thread allocates in both. With unique
/// heap ids each heap leases it an arena of its own; with a shared id, the second heap takes
/// the first heap's binding for its own and leases nothing.
fn heap_ids_model() {
    model(|| {
        type Tl = Using<Lifo, ThreadLocal>;
        let (a, b) = (Arc::new(Heap::<Tl>::new()), Arc::new(Heap::<Tl>::new()));
        let ha = a.clone();
        let t = spawn(move || ha.malloc(16) as usize);
        let q = b.malloc(16) as usize;
        let p = t.join().unwrap();
        let pa = a.malloc(16) as usize;
        for (name, h) in [("A", &a), ("B", &b)] {
            assert_eq!(
                h.arenas_leased(),
                1,
                "heap {name} leased the main thread no arena: the heaps share an id (lost update)"
            );
        }
        a.check_live(&mut [(p, 16), (pa, 16)]).unwrap();
        b.check_live(&mut [(q, 16)]).unwrap();
    });
}

#[test]
fn lost_heap_id_control() {
    heap_ids_model();
}

#[test]
fn lost_heap_id_update_is_caught_by_the_binding_model() {
    let (failed, out) = in_child(
        "lost_heap_id_update_is_caught_by_the_binding_model",
        Some(Bug::LostHeapId),
        heap_ids_model,
    );
    if std::env::var("ALLOCLAB_SEEDED_CHILD").is_ok() {
        return;
    }
    assert!(failed, "loom missed the lost update:\n{out}");
    assert!(
        out.contains("the heaps share an id (lost update)"),
        "caught, but not by the model's check:\n{out}"
    );
}
