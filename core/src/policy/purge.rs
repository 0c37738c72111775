//! Purging as a policy: when an arena's dirty pages, and the heap's cached huge mappings, go
//! back to the OS.
//!
//! A dirty page is a free page that was used since it was last known to be zero. Keeping it
//! costs resident memory; giving it back costs a system call now (`madvise`, `munmap`) and a
//! page fault (a zeroed page) when it is used again. Allocators disagree: mozjemalloc gives
//! back dirty pages beyond a threshold at once, jemalloc lets them decay over time
//! (`dirty_decay_ms`), mimalloc resets them after a delay. [`PurgePolicy`] is that decision.
//!
//! The engine keeps, per arena, a [`DirtyView`]: the dirty pages now, the threshold
//! (`Options::dirty_max_pages`), and a short history of how many pages became dirty in each
//! recent time slot (slots of [`PurgePolicy::slot_ns`]; no clock is read when that is 0).
//! Whenever pages become dirty, and whenever an arena takes pages for a new run or a large
//! allocation, it asks [`PurgePolicy::keep`] how many dirty pages may stay, and purges down to
//! that number if it holds more (choosing under the lock, `madvise` without it: `arena.rs`).
//! No background thread: a policy acts on later allocator activity. Freed huge mappings go to
//! a small per-heap cache (`huge.rs`), bounded by `Options::huge_cache_bytes` and
//! [`HUGE_CACHE_SLOTS`]; [`PurgePolicy::huge_ttl_ns`] says how long one may stay there.
//!
//! The policy is chosen at run time (`Options::purge`, `ALLOCLAB_CONF=purge:...`,
//! `--heap-conf`), so that one build (liballoclab.so) carries every rule: [`Purge`] lists the
//! rules, each a type implementing the trait. A new rule is a type implementing
//! [`PurgePolicy`] and a variant of [`Purge`]. Policy methods run with the arena lock held (or
//! the huge cache's): like every policy they must not allocate, take locks or panic.

/// Time slots in an arena's dirty history.
pub const HISTORY_SLOTS: usize = 8;

/// Freed huge mappings a heap's cache holds at most (its byte bound is
/// `Options::huge_cache_bytes`).
pub const HUGE_CACHE_SLOTS: usize = 8;

/// `Options::huge_cache_bytes`' default: 64 MiB (a loop of blocks up to 64 MiB reuses them).
pub const DEFAULT_HUGE_CACHE_BYTES: usize = 64 << 20;

/// The default delay of [`Purge::Decay`], in milliseconds. One second: jemalloc's
/// `dirty_decay_ms` is 10 s, mimalloc's `purge_delay` 10 ms (v2; its v1 reset after 100 ms).
/// A burst-then-idle program (a producer/consumer with sleeps, a server between requests)
/// reuses its dirty pages within a second far more often than after it, and a second bounds
/// the purge passes of an arena to `HISTORY_SLOTS` per second, however many bursts; 10 s would
/// keep ten times the memory of a phase change for ten times as long. docs/PERFORMANCE.md
/// ("Purging and huge blocks") has the measurements.
pub const DEFAULT_DECAY_MS: u32 = 1000;

/// What a purge policy sees of an arena (with its lock held).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyView {
    /// Dirty pages the arena holds now (not counting pages being purged).
    pub dirty: usize,
    /// `Options::dirty_max_pages` (or the config's `DIRTY_MAX_PAGES`).
    pub dirty_max: usize,
    /// Pages that became dirty during the last `HISTORY_SLOTS` slots of `slot_ns` (the one
    /// going on included); 0 if the policy keeps no history. Pages reused since are still
    /// counted: it is an upper bound on the young dirty pages.
    pub recent: usize,
}

/// A purge policy: how many dirty pages an arena may keep, and how long a freed huge mapping
/// may wait in the heap's cache for reuse.
///
/// The engine calls `keep` with the arena lock held, when pages become dirty (a run emptied, a
/// large allocation freed or shrunk) and when the arena takes pages (a new run, a large
/// allocation); if the arena holds more dirty pages than `keep` returns, it purges down to that
/// many (longest free runs first), its `madvise`s running after the lock is released.
pub trait PurgePolicy: Copy + 'static {
    /// Short name used in reports.
    const NAME: &'static str;
    /// The length in nanoseconds of one slot of the arena's dirty history (`DirtyView::recent`
    /// covers `HISTORY_SLOTS` of them); 0 keeps no history and reads no clock.
    fn slot_ns(&self) -> u64 {
        0
    }
    /// Dirty pages the arena may keep now; at least `view.dirty` means "no purge".
    fn keep(&self, view: &DirtyView) -> usize;
    /// How long a freed huge mapping may stay in the heap's cache, in nanoseconds: `None`
    /// until the cache's bound pushes it out (the oldest first), `Some(0)` not at all.
    fn huge_ttl_ns(&self) -> Option<u64>;
    /// Writes the name and parameters (as `ALLOCLAB_CONF` takes them).
    fn write_name(&self, w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        w.write_str(Self::NAME)
    }
}

/// mozjemalloc's rule: an arena holding more than `dirty_max` dirty pages purges down to half
/// of it at once; freed huge mappings stay cached only within the cache's bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold;

impl PurgePolicy for Threshold {
    const NAME: &'static str = "threshold";
    fn keep(&self, v: &DirtyView) -> usize {
        if v.dirty > v.dirty_max {
            v.dirty_max / 2
        } else {
            v.dirty
        }
    }
    fn huge_ttl_ns(&self) -> Option<u64> {
        None
    }
}

/// A time-based decay, in the spirit of jemalloc's `dirty_decay_ms`: dirty pages older than
/// `ms` milliseconds are purged on later allocator activity. The arena keeps as many dirty
/// pages as became dirty within the last `ms` (in `HISTORY_SLOTS` slots of `ms / 8`, so a
/// page is purged between 7/8 and 8/8 of the delay after it became dirty, once the arena is
/// used); a freed huge mapping stays cached for `ms`. `ms: 0` purges every dirty page at
/// once, and caches no huge mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decay {
    /// The delay in milliseconds.
    pub ms: u32,
}

impl PurgePolicy for Decay {
    const NAME: &'static str = "decay";
    fn slot_ns(&self) -> u64 {
        (self.ms as u64 * 1_000_000).div_ceil(HISTORY_SLOTS as u64)
    }
    fn keep(&self, v: &DirtyView) -> usize {
        if self.ms == 0 {
            0
        } else {
            v.dirty.min(v.recent)
        }
    }
    fn huge_ttl_ns(&self) -> Option<u64> {
        Some(self.ms as u64 * 1_000_000)
    }
    fn write_name(&self, w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        write!(w, "decay:{}", self.ms)
    }
}

/// The purge policy of a heap, chosen at run time (`Options::purge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purge {
    /// [`Threshold`]: mozjemalloc's, what alloclab did before issue 42.
    Threshold,
    /// [`Decay`] with this delay in milliseconds.
    Decay(u32),
}

impl Purge {
    /// The default: a decay of `DEFAULT_DECAY_MS`.
    pub const DEFAULT: Purge = Purge::Decay(DEFAULT_DECAY_MS);

    /// `PurgePolicy::slot_ns` of the chosen policy.
    pub fn slot_ns(self) -> u64 {
        match self {
            Purge::Threshold => Threshold.slot_ns(),
            Purge::Decay(ms) => Decay { ms }.slot_ns(),
        }
    }

    /// `PurgePolicy::keep` of the chosen policy.
    #[inline]
    pub fn keep(self, v: &DirtyView) -> usize {
        match self {
            Purge::Threshold => Threshold.keep(v),
            Purge::Decay(ms) => Decay { ms }.keep(v),
        }
    }

    /// `PurgePolicy::huge_ttl_ns` of the chosen policy.
    pub fn huge_ttl_ns(self) -> Option<u64> {
        match self {
            Purge::Threshold => Threshold.huge_ttl_ns(),
            Purge::Decay(ms) => Decay { ms }.huge_ttl_ns(),
        }
    }

    /// Parses `threshold`, `decay` (the default delay) or `decay:MS` (`MS` up to an hour).
    pub fn parse(v: &[u8]) -> Option<Purge> {
        match v {
            b"threshold" => Some(Purge::Threshold),
            b"decay" => Some(Purge::DEFAULT),
            _ => {
                let ms = v.strip_prefix(b"decay:")?;
                if ms.is_empty() || ms.len() > 7 || !ms.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                let n = ms.iter().fold(0u32, |a, &d| a * 10 + u32::from(d - b'0'));
                (n <= 3_600_000).then_some(Purge::Decay(n))
            }
        }
    }
}

impl Default for Purge {
    fn default() -> Self {
        Purge::DEFAULT
    }
}

impl core::fmt::Display for Purge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Purge::Threshold => Threshold.write_name(f),
            Purge::Decay(ms) => Decay { ms }.write_name(f),
        }
    }
}

/// An arena's dirty history: pages that became dirty per time slot, over the last
/// `HISTORY_SLOTS` slots.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DirtyHistory {
    slots: [usize; HISTORY_SLOTS],
    /// The slot going on.
    cur: usize,
    /// When it started (ns of `os::monotonic_ns`).
    start_ns: u64,
    /// Their sum.
    sum: usize,
}

impl DirtyHistory {
    pub(crate) const fn new() -> Self {
        DirtyHistory {
            slots: [0; HISTORY_SLOTS],
            cur: 0,
            start_ns: 0,
            sum: 0,
        }
    }

    /// Moves the history to `now`: slots older than `HISTORY_SLOTS` slots are forgotten.
    pub(crate) fn advance(&mut self, now: u64, slot_ns: u64) {
        if slot_ns == 0 {
            return;
        }
        let elapsed = now.saturating_sub(self.start_ns) / slot_ns;
        if elapsed == 0 {
            return;
        }
        if elapsed >= HISTORY_SLOTS as u64 {
            self.slots = [0; HISTORY_SLOTS];
            self.sum = 0;
            self.start_ns = now;
            return;
        }
        for _ in 0..elapsed {
            self.cur = (self.cur + 1) % HISTORY_SLOTS;
            self.sum -= self.slots[self.cur];
            self.slots[self.cur] = 0;
        }
        self.start_ns += elapsed * slot_ns;
    }

    /// `n` pages just became dirty (after `advance`).
    pub(crate) fn add(&mut self, n: usize) {
        self.slots[self.cur] += n;
        self.sum += n;
    }

    /// Pages that became dirty within the history.
    pub(crate) fn recent(&self) -> usize {
        self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_purges_to_half_beyond_the_limit() {
        let v = |dirty| DirtyView {
            dirty,
            dirty_max: 256,
            recent: 0,
        };
        assert_eq!(Threshold.keep(&v(256)), 256);
        assert_eq!(Threshold.keep(&v(257)), 128);
        assert_eq!(Threshold.huge_ttl_ns(), None);
    }

    #[test]
    fn decay_keeps_what_became_dirty_within_the_delay() {
        let d = Decay { ms: 800 };
        let slot = d.slot_ns();
        assert_eq!(slot, 100_000_000);
        let mut h = DirtyHistory::new();
        h.advance(0, slot);
        h.add(10);
        h.advance(3 * slot, slot);
        h.add(5);
        let view = |h: &DirtyHistory| DirtyView {
            dirty: 15,
            dirty_max: 1,
            recent: h.recent(),
        };
        assert_eq!(d.keep(&view(&h)), 15);
        // 8 slots after the first pages: they are forgotten, the later ones not yet.
        h.advance(8 * slot, slot);
        assert_eq!(d.keep(&view(&h)), 5);
        h.advance(11 * slot + 1, slot);
        assert_eq!(d.keep(&view(&h)), 0);
        assert_eq!(Decay { ms: 0 }.keep(&view(&h)), 0);
    }

    #[test]
    fn purge_parses_and_prints() {
        assert_eq!(Purge::parse(b"threshold"), Some(Purge::Threshold));
        assert_eq!(Purge::parse(b"decay"), Some(Purge::Decay(DEFAULT_DECAY_MS)));
        assert_eq!(Purge::parse(b"decay:250"), Some(Purge::Decay(250)));
        assert_eq!(Purge::parse(b"decay:0"), Some(Purge::Decay(0)));
        for bad in [
            &b"decay:"[..],
            b"decay:x",
            b"decay:3600001",
            b"decay:99999999",
            b"off",
        ] {
            assert_eq!(Purge::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Purge::Decay(250).to_string(), "decay:250");
        assert_eq!(Purge::Threshold.to_string(), "threshold");
    }
}
