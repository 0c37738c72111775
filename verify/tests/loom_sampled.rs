//! Loom models of the sampled pool's slot bookkeeping (`alloclab_core::slot_ring`, the ring of
//! free slots `sampled.rs` takes from and frees into): two threads sampling at once are handed
//! different slots, freed slots are reused oldest free first, and an exhausted pool says so
//! (the heap then serves an ordinary allocation) and recovers when a slot is freed.
//!
//! Each slot's owner is written in a loom cell inside the take, as the pool writes a slot's
//! record: a slot handed to two threads is a causality violation as well as a failed
//! assertion. With `--cfg alloclab_seeded`, `SplitSlotTake` (the slot read and taken in two
//! critical sections) must be caught by the first model; `scripts/test.sh` runs it.
#![cfg(loom)]

use alloclab_verify::loom::{model, model_bounded, spawn, PREEMPTION_BOUND_3_THREADS};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

use alloclab_core::slot_ring::SlotRing;

/// A pool of `N` slots and each slot's owner (0: none), written under the ring's lock.
struct Pool<const N: usize> {
    ring: SlotRing<N>,
    owner: [UnsafeCell<usize>; N],
    /// Slots in the order they were freed.
    freed: UnsafeCell<Vec<usize>>,
}

// SAFETY: `owner` and `freed` are reached only inside the ring's critical sections.
unsafe impl<const N: usize> Sync for Pool<N> {}
// SAFETY: as above.
unsafe impl<const N: usize> Send for Pool<N> {}

impl<const N: usize> Pool<N> {
    fn new() -> Self {
        Pool {
            ring: SlotRing::new(),
            owner: core::array::from_fn(|_| UnsafeCell::new(0)),
            freed: UnsafeCell::new(Vec::new()),
        }
    }

    /// Takes a slot for thread `me` (1, 2, ...), as `Sampler::alloc` does; `None`: exhausted.
    fn take(&self, me: usize) -> Option<usize> {
        self.ring.take_with(|i| {
            self.owner[i].with_mut(|o| {
                // SAFETY: under the ring's lock.
                let o = unsafe { &mut *o };
                assert_eq!(
                    *o, 0,
                    "slot {i} handed to thread {me} while thread {o} holds it"
                );
                *o = me;
            });
            i
        })
    }

    /// Frees slot `i`, held by `me`, as `Sampler::free` does.
    fn free(&self, me: usize, i: usize) {
        self.ring.locked(|r| {
            self.owner[i].with_mut(|o| {
                // SAFETY: under the ring's lock.
                let o = unsafe { &mut *o };
                assert_eq!(*o, me, "slot {i} freed by {me}, held by {o}");
                *o = 0;
            });
            // SAFETY: under the ring's lock.
            self.freed.with_mut(|f| unsafe { (*f).push(i) });
            r.put(i);
        });
    }

    fn freed(&self) -> Vec<usize> {
        // SAFETY: called after every other thread is joined.
        self.freed.with(|f| unsafe { (*f).clone() })
    }
}

/// Two threads take a slot each at once, from a pool with slots to spare: different slots,
/// the two oldest, and one slot left.
pub fn two_takers_model() {
    model(|| {
        let p = Arc::new(Pool::<3>::new());
        let q = p.clone();
        let t = spawn(move || q.take(2));
        let mine = p.take(1).expect("a free slot");
        let theirs = t.join().unwrap().expect("a free slot");
        assert_ne!(mine, theirs, "two threads were handed the same slot");
        let mut both = [mine, theirs];
        both.sort_unstable();
        assert_eq!(both, [0, 1], "the oldest free slots go first");
        assert_eq!(p.ring.free_slots(), 1);
    });
}

#[test]
fn two_threads_never_get_the_same_slot() {
    two_takers_model();
}

/// Every slot taken; two threads free one each at once; then the slots come back in the order
/// they were freed, and a slot freed last is reused last.
#[test]
fn freed_slots_are_reused_in_fifo_order() {
    model(|| {
        let p = Arc::new(Pool::<3>::new());
        let a = p.take(1).unwrap();
        let b = p.take(1).unwrap();
        let c = p.take(1).unwrap();
        assert_eq!([a, b, c], [0, 1, 2]);
        assert_eq!(p.take(1), None);
        let q = p.clone();
        let t = spawn(move || {
            // Another thread frees what thread 1 allocated: hand it over first.
            q.ring.locked(|_| {
                // SAFETY: under the ring's lock.
                q.owner[b].with_mut(|o| unsafe { *o = 2 })
            });
            q.free(2, b);
        });
        p.free(1, c);
        t.join().unwrap();
        p.free(1, a);
        let order = p.freed();
        assert_eq!(order.len(), 3);
        assert_eq!(order[2], a);
        let again: Vec<usize> = (0..3).map(|_| p.take(3).unwrap()).collect();
        assert_eq!(again, order, "slots reused out of freeing order");
    });
}

/// A free and a take at once on a pool with one free slot: the taker gets the old free slot
/// whether or not the free came first, never the slot freed meanwhile.
#[test]
fn a_slot_freed_during_a_take_waits_its_turn() {
    model(|| {
        let p = Arc::new(Pool::<2>::new());
        let a = p.take(1).unwrap();
        assert_eq!(a, 0);
        let q = p.clone();
        let t = spawn(move || q.take(2));
        p.free(1, a);
        let got = t.join().unwrap();
        assert_eq!(got, Some(1), "the slot free before the free must go first");
        assert_eq!(p.take(1), Some(0));
        assert_eq!(p.take(1), None);
    });
}

/// Three threads take from a pool of two: exactly one is told the pool is exhausted (and falls
/// back to an ordinary allocation); the other two hold different slots; a slot freed then
/// serves the next take.
#[test]
fn exhaustion_falls_back_then_recovers() {
    model_bounded(PREEMPTION_BOUND_3_THREADS, || {
        let p = Arc::new(Pool::<2>::new());
        let ts: Vec<_> = (2..4)
            .map(|me| {
                let q = p.clone();
                spawn(move || q.take(me))
            })
            .collect();
        let mine = p.take(1);
        let got: Vec<Option<usize>> = std::iter::once(mine)
            .chain(ts.into_iter().map(|t| t.join().unwrap()))
            .collect();
        assert_eq!(got.iter().filter(|g| g.is_none()).count(), 1, "{got:?}");
        let held: Vec<(usize, usize)> = got
            .iter()
            .enumerate()
            .filter_map(|(k, g)| g.map(|i| (k + 1, i)))
            .collect();
        assert_ne!(held[0].1, held[1].1, "{got:?}");
        assert_eq!(p.ring.free_slots(), 0);
        let (owner, slot) = held[0];
        p.free(owner, slot);
        assert_eq!(p.take(4), Some(slot));
    });
}

/// The seeded `SplitSlotTake` in a child process (a model failing under loom aborts while
/// unwinding, so a process boundary is the clean way to observe it).
#[cfg(alloclab_seeded)]
mod seeded_split_take {
    use alloclab_core::seeded::{self, Bug};

    const CHILD: &str = "ALLOCLAB_SEEDED_CHILD";

    #[test]
    fn split_slot_take_is_caught() {
        const NAME: &str = "seeded_split_take::split_slot_take_is_caught";
        if std::env::var(CHILD).is_ok_and(|c| c == NAME) {
            seeded::set(Some(Bug::SplitSlotTake));
            super::two_takers_model();
            std::process::exit(0);
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, NAME)
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("run the test binary again");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "loom missed the split slot take:\n{text}"
        );
        assert!(
            text.contains("handed to thread") || text.contains("same slot"),
            "failed, but not on a slot handed out twice:\n{text}"
        );
    }
}
