//! Loom models of arena choice under thread churn and of thread-exit cleanup: leases of
//! thread-local arenas (the pool and its lock), round-robin assignment (a shared counter), and
//! exit hooks handing arenas back through the process-wide registry while heaps come and go.
#![cfg(loom)]

use alloclab_core::{Heap, Options};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, RoundRobin, ThreadLocal};
use alloclab_verify::loom::{model, model_bounded, spawn, PREEMPTION_BOUND_3_THREADS};
use loom::sync::Arc;

type Tl = Using<Lifo, ThreadLocal>;

#[test]
fn thread_arenas_are_distinct_and_handed_back() {
    model(|| {
        let heap = Arc::new(Heap::<Tl>::new());
        let mine = heap.malloc(32);
        let own = heap.arena_of(mine).unwrap();
        let run = |h: Arc<Heap<Tl>>| {
            spawn(move || {
                let p = h.malloc(32);
                let a = h.arena_of(p).unwrap();
                // SAFETY: a live allocation of `h`, freed once.
                unsafe { h.free(p) };
                a
            })
        };
        // A thread leases while this one holds its arena: it gets another one.
        let theirs = run(heap.clone()).join().unwrap();
        assert!(own != 0 && theirs != 0 && own != theirs);
        // Its exit hook ran: only this thread's arena is leased, and a new thread reuses the
        // arena that was handed back instead of making a third.
        assert_eq!(heap.arenas_leased(), 1);
        let next = run(heap.clone()).join().unwrap();
        assert_eq!(next, theirs);
        assert_eq!(heap.arenas_created(), 2);
        // SAFETY: a live allocation of `heap`, freed once.
        unsafe { heap.free(mine) };
        heap.check_invariants().unwrap();
    });
}

#[test]
fn round_robin_gives_two_threads_two_arenas() {
    model(|| {
        let heap = Arc::new(Heap::<Using<Lifo, RoundRobin>>::with_options(Options {
            narenas: 2,
            ..Options::DEFAULT
        }));
        let h = heap.clone();
        let t = spawn(move || h.arena_of(h.malloc(32)).unwrap());
        let mine = heap.arena_of(heap.malloc(32)).unwrap();
        let theirs = t.join().unwrap();
        assert_ne!(mine, theirs, "the shared counter lost an update");
    });
}

#[test]
fn thread_exit_races_another_heaps_registration() {
    model(|| {
        let a = Arc::new(Heap::<Tl>::new());
        let h = a.clone();
        let t = spawn(move || {
            let p = h.malloc(48);
            // SAFETY: a live allocation of `h`, freed once.
            unsafe { h.free(p) };
        });
        // Meanwhile another heap initializes (registers for thread exits) and allocates.
        let b = Heap::<Tl>::new();
        let q = b.malloc(48) as usize;
        t.join().unwrap();
        assert_eq!(
            a.arenas_leased(),
            0,
            "the exiting thread's arena was not handed back"
        );
        assert_eq!(b.arenas_leased(), 1);
        b.check_live(&mut [(q, 48)]).unwrap();
    });
}

#[test]
fn two_threads_come_and_go_while_the_owner_allocates() {
    model_bounded(PREEMPTION_BOUND_3_THREADS, || {
        let heap = Arc::new(Heap::<Tl>::new());
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let h = heap.clone();
                spawn(move || {
                    let p = h.malloc(200);
                    // SAFETY: a live allocation of `h`, freed once.
                    unsafe { h.free(p) };
                })
            })
            .collect();
        let mine = heap.malloc(200) as usize;
        for t in ts {
            t.join().unwrap();
        }
        // Both exit hooks ran: only this thread's lease is left, and at most one arena per
        // thread that was ever alive at once was made.
        assert_eq!(heap.arenas_leased(), 1);
        assert!(heap.arenas_created() <= 3);
        heap.check_live(&mut [(mine, 200)]).unwrap();
    });
}
