//! An intrusive doubly linked list of runs, threaded through the runs' links (in their own
//! headers, or in the chunk map for a policy that keeps them there).
//!
//! The shared mechanism of `Lifo` and `Mrf`, and of a user's FIFO or any other order that
//! works at the ends: O(1) push at either end, removal and move-to-front, no memory of its own.

use alloclab_core::RunRef;
use core::cell::Cell;

/// A run handle whose links are `ListLinks`.
pub type ListRun = RunRef<ListLinks>;

/// The links a list keeps in each run header.
#[derive(Default)]
pub struct ListLinks {
    prev: Cell<Option<ListRun>>,
    next: Cell<Option<ListRun>>,
}

/// A list of runs, front first. The front run's `prev` link points at the back run (the list
/// is otherwise linear: the back run's `next` is `None`), so both ends are O(1) without a
/// field more than the head: a `RunList` stays two words, as each bin holds one.
#[derive(Default)]
pub struct RunList {
    head: Option<ListRun>,
    len: usize,
}

impl RunList {
    /// The first run.
    pub fn front(&self) -> Option<ListRun> {
        self.head
    }

    /// The last run.
    pub fn back(&self) -> Option<ListRun> {
        self.head.and_then(|h| h.links().prev.get())
    }

    /// Runs in the list.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Puts `run` (not in the list) at the front.
    pub fn push_front(&mut self, run: ListRun) {
        match self.head {
            Some(h) => {
                run.links().prev.set(h.links().prev.get());
                h.links().prev.set(Some(run));
            }
            None => run.links().prev.set(Some(run)),
        }
        run.links().next.set(self.head);
        self.head = Some(run);
        self.len += 1;
    }

    /// Puts `run` (not in the list) at the back.
    pub fn push_back(&mut self, run: ListRun) {
        let Some(h) = self.head else {
            self.push_front(run);
            return;
        };
        let tail = h
            .links()
            .prev
            .get()
            .expect("a front run links to the back run");
        tail.links().next.set(Some(run));
        run.links().prev.set(Some(tail));
        run.links().next.set(None);
        h.links().prev.set(Some(run));
        self.len += 1;
    }

    /// Takes `run` (in the list) out.
    pub fn remove(&mut self, run: ListRun) {
        let (prev, next) = (run.links().prev.take(), run.links().next.take());
        if self.head == Some(run) {
            // `prev` is the back run (`run` itself when alone): the new front inherits it.
            self.head = next;
            if let Some(n) = next {
                n.links().prev.set(prev);
            }
        } else {
            let p = prev.expect("a run behind the front has a previous run");
            p.links().next.set(next);
            match next {
                Some(n) => n.links().prev.set(Some(p)),
                // `run` was the back run: the front's link moves to the one before it.
                None => {
                    if let Some(h) = self.head {
                        h.links().prev.set(Some(p));
                    }
                }
            }
        }
        self.len -= 1;
    }

    /// Moves `run` (in the list) to the front.
    pub fn move_to_front(&mut self, run: ListRun) {
        if self.head != Some(run) {
            self.remove(run);
            self.push_front(run);
        }
    }

    /// Calls `f` on each run, front to back.
    pub fn for_each(&self, f: &mut dyn FnMut(ListRun)) {
        let mut cur = self.head;
        while let Some(r) = cur {
            f(r);
            cur = r.links().next.get();
        }
    }

    /// Checks that the back links mirror the forward links, the front links to the back, and
    /// the length is right.
    pub fn check(&self) -> Result<(), &'static str> {
        let mut prev = None;
        let mut cur = self.head;
        let mut n = 0;
        while let Some(r) = cur {
            if prev.is_some() && r.links().prev.get() != prev {
                return Err("list back link does not match");
            }
            n += 1;
            if n > self.len {
                return Err("list longer than its length (a cycle?)");
            }
            prev = Some(r);
            cur = r.links().next.get();
        }
        if n != self.len {
            return Err("list length does not match its count");
        }
        if let Some(h) = self.head {
            if h.links().prev.get() != prev {
                return Err("list front does not link to its back run");
            }
        }
        Ok(())
    }
}
