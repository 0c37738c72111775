//! `Harness<C, M>`: a real `Heap<C>` driven by [`Op`]s, next to a model of everything the
//! heap should hold, checked after every operation.
//!
//! What the model knows, and checks on every step:
//!
//! - live allocations: aligned, at least the requested (and exactly the class's) usable size,
//!   pairwise disjoint, contents intact (a pattern is written on allocation and read back on
//!   every realloc and free), calloc memory zero, interior and double frees refused;
//! - runs, per arena and bin: a small allocation lands either in a known run, at its lowest
//!   free region (the bitmap's rule), or at the start of a new page-aligned run that overlaps
//!   no known run; run and non-full run counts match the heap's per-bin statistics;
//! - the run-reuse policy's choice, through its reference model `M` (`Unmodeled` skips it);
//! - statistics: allocated bytes, live regions per bin, live huge allocations;
//! - `Heap::check_invariants()` and `Heap::check_live()`.
//!
//! With a thread cache in front (`FrontEnd::CACHE`), which region serves a small allocation
//! is the cache's choice, not the run-reuse policy's: the run model, its predictions and the
//! per-arena counters (which count cached regions as taken) are not checked; the heap-wide
//! statistics are, per bin (live regions exclude cached ones), and `finish` flushes the
//! thread's cache before checking that the arenas hold nothing.

use crate::coverage::Coverage;
use crate::finding::{Check, Finding};
use crate::ops::Op;
use crate::reuse_model::{ReuseModel, Runs, Unmodeled};
use alloclab_core::size_class::{bin, classify, usable, SizeClass, CHUNK, PAGE, QUANTUM};
use alloclab_core::{Config, FrontEnd, Heap, Options, Violation, MAX_ARENAS};
use std::collections::BTreeMap;

/// One live allocation as the model knows it.
#[derive(Clone, Copy, Debug)]
struct Live {
    ptr: usize,
    size: usize,
    tag: u64,
    class: SizeClass,
    arena: Option<usize>,
}

/// The runs of one bin of one arena, and the policy's reference model for them.
#[derive(Default, Debug)]
struct BinModel<M> {
    /// Run start -> which regions are in use.
    used: BTreeMap<usize, Vec<bool>>,
    /// Run start -> free regions.
    free: BTreeMap<usize, usize>,
    /// The run that served the bin's last allocation (current while it stays non-full).
    last_served: Option<usize>,
    policy: M,
}

impl<M> BinModel<M> {
    /// Counts where `run`, which just became non-full, lies among the bin's other non-full
    /// runs, and whether a current run existed.
    fn cover_insert(&self, run: usize, cov: &mut Coverage) {
        let mut others = self.free.iter().filter(|&(&r, &f)| f > 0 && r != run);
        if let Some((&first, _)) = others.next() {
            let last = others.next_back().map_or(first, |(&r, _)| r);
            if run < first {
                cov.nonfull_lowest += 1;
            } else if run > last {
                cov.nonfull_highest += 1;
            } else {
                cov.nonfull_middle += 1;
            }
        }
        if let Some(cur) = self.last_served.filter(|&c| c != run) {
            if self.free.get(&cur).is_some_and(|&f| f > 0) {
                cov.nonfull_beside_current += 1;
            }
        }
    }

    /// Counts the choice an allocation of this bin faces: how many non-full runs, in how many
    /// chunks.
    fn cover_pick(&self, cov: &mut Coverage) {
        let mut candidates = 0;
        let mut chunks = 0;
        let mut last_chunk = None;
        for (&r, _) in self.free.iter().filter(|&(_, &f)| f > 0) {
            candidates += 1;
            if last_chunk != Some(r / CHUNK) {
                chunks += 1;
                last_chunk = Some(r / CHUNK);
            }
        }
        cov.picks_among_2 += u64::from(candidates >= 2);
        cov.picks_among_8 += u64::from(candidates >= 8);
        cov.span_2_chunks += u64::from(chunks >= 2);
        cov.span_4_chunks += u64::from(chunks >= 4);
    }
}

/// The word written at word `i` of an allocation tagged `tag`: different for every position
/// and allocation, so a copy from the wrong offset shows as well as an overwrite.
fn pattern_word(tag: u64, i: usize) -> u64 {
    tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

/// Word indices written and checked in an allocation of `size` bytes: every word of a small
/// one, a sample of a big one (its first 4 KiB, then one word in 64, and its last word).
fn pattern_words(size: usize) -> impl Iterator<Item = usize> {
    let words = size / 8;
    let dense = if size <= 8192 { words } else { 512 };
    (0..dense)
        .chain((dense..words).step_by(64))
        .chain(words.checked_sub(1).filter(|&w| w >= dense))
}

/// Writes the pattern of `tag` over the first `size` bytes at `p` (sampled when large; the
/// bytes past the last whole word too). Words, not bytes: the fuzz build instruments every
/// comparison, and contents are most of its work.
///
/// # Safety
/// `p` points to at least `size` writable bytes.
pub unsafe fn fill_pattern(p: usize, size: usize, tag: u64) {
    for i in pattern_words(size) {
        // SAFETY: word `i` lies within the first `size` bytes (per the contract).
        unsafe { ((p + 8 * i) as *mut u64).write_unaligned(pattern_word(tag, i)) };
    }
    let tail = pattern_word(tag, size / 8).to_le_bytes();
    for (k, &b) in tail.iter().enumerate().take(size % 8) {
        // SAFETY: as above, for the bytes past the last whole word.
        unsafe { *((p + size / 8 * 8 + k) as *mut u8) = b };
    }
}

/// The first byte offset below `len` where the pattern of `tag` written over `size` bytes at
/// `p` is not intact, if any.
///
/// # Safety
/// `p` points to at least `len` readable bytes.
pub unsafe fn check_pattern(p: usize, size: usize, len: usize, tag: u64) -> Option<usize> {
    for i in pattern_words(size).take_while(|&i| 8 * i + 8 <= len) {
        // SAFETY: word `i` lies within the first `len` bytes (per the contract).
        if unsafe { ((p + 8 * i) as *const u64).read_unaligned() } != pattern_word(tag, i) {
            return Some(8 * i);
        }
    }
    if len == size {
        let tail = pattern_word(tag, size / 8).to_le_bytes();
        for (k, &b) in tail.iter().enumerate().take(size % 8) {
            // SAFETY: as above, for the bytes past the last whole word.
            if unsafe { *((p + size / 8 * 8 + k) as *const u8) } != b {
                return Some(size / 8 * 8 + k);
            }
        }
    }
    None
}

/// A heap of config `C` and its model; `M` predicts the run-reuse policy's picks.
pub struct Harness<C: Config, M: ReuseModel = Unmodeled> {
    heap: Heap<C>,
    live: Vec<Live>,
    bins: BTreeMap<(usize, usize), BinModel<M>>,
    step: usize,
    next_tag: u64,
    check_every: usize,
    coverage: Coverage,
    /// Run start -> the run's index (in order of creation), for messages.
    run_ids: BTreeMap<usize, usize>,
    next_run_id: usize,
}

impl<C: Config, M: ReuseModel> Default for Harness<C, M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Config, M: ReuseModel> Harness<C, M> {
    /// Whether a thread cache serves small requests (the run model is then not checked).
    const CACHED: bool = <C::Front as FrontEnd>::CACHE;

    /// A fresh heap with default options.
    pub fn new() -> Self {
        Self::with_options(Options::DEFAULT)
    }

    /// A fresh heap with `options`.
    pub fn with_options(options: Options) -> Self {
        Harness {
            heap: Heap::with_options(options),
            live: Vec::new(),
            bins: BTreeMap::new(),
            step: 0,
            next_tag: 1,
            check_every: 1,
            coverage: Coverage::default(),
            run_ids: BTreeMap::new(),
            next_run_id: 0,
        }
    }

    /// Runs the whole-heap checks (`check_live`, statistics) only every `n` operations and at
    /// the end, instead of after every one: the fuzz target's trade of detection latency for
    /// throughput. The per-operation checks (addresses, regions, the reuse model, contents)
    /// still run on every operation.
    pub fn check_every(mut self, n: usize) -> Self {
        self.check_every = n.max(1);
        self
    }

    /// The heap under test.
    pub fn heap(&self) -> &Heap<C> {
        &self.heap
    }

    /// Live allocations the model holds.
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// Runs `ops` on a fresh heap, then frees everything; the first finding, if any.
    pub fn run(ops: &[Op]) -> Result<(), Finding> {
        Self::run_observed(ops, || {})
    }

    /// As [`Harness::run`], calling `before_each` before each operation is applied (proptest's
    /// state-machine shrinker needs to know how many operations were reached).
    pub fn run_observed(ops: &[Op], before_each: impl FnMut()) -> Result<(), Finding> {
        Self::new().run_with(ops, before_each)
    }

    /// Runs `ops` on this harness (see [`Harness::run_observed`]), then frees everything.
    pub fn run_with(self, ops: &[Op], before_each: impl FnMut()) -> Result<(), Finding> {
        self.run_covered(ops, before_each, &mut Coverage::default())
    }

    /// As [`Harness::run_with`], adding what the run exercised to `coverage` (whether or not
    /// it found something).
    pub fn run_covered(
        mut self,
        ops: &[Op],
        mut before_each: impl FnMut(),
        coverage: &mut Coverage,
    ) -> Result<(), Finding> {
        let mut result = Ok(());
        for op in ops {
            before_each();
            result = self.apply(op);
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = self.finish_checks();
        }
        coverage.add(&self.coverage());
        result
    }

    /// What this harness exercised so far.
    pub fn coverage(&self) -> Coverage {
        let mut arenas: Vec<usize> = self.bins.keys().map(|&(a, _)| a).collect();
        arenas.dedup();
        Coverage {
            arenas: arenas.len(),
            removed_taken: self.bins.values().map(|bm| bm.policy.taken()).sum(),
            ..self.coverage.clone()
        }
    }

    /// How messages name the run starting at `base`: its index (in order of creation in this
    /// harness) and start address.
    pub fn run_name(&self, base: usize) -> String {
        match self.run_ids.get(&base) {
            Some(id) => format!("run {id} at {base:#x}"),
            None => format!("run at {base:#x}"),
        }
    }

    /// The start of the known run (any arena or bin) that contains `addr`.
    fn run_containing(&self, addr: usize) -> Option<usize> {
        self.bins.iter().find_map(|(&(_, idx), bm)| {
            let (&base, _) = bm.used.range(..=addr).next_back()?;
            (addr < base + bin(idx).run_size()).then_some(base)
        })
    }

    /// A violation as a finding, naming its run (if the address lies in a known run) as
    /// [`Harness::run_name`] does.
    fn violation(&self, v: Violation) -> Finding {
        let mut text = v.to_string();
        if let Some(base) = self.run_containing(v.addr) {
            text = text.replacen(
                &format!("{:#x}: ", v.addr),
                &format!("{}: ", self.run_name(base)),
                1,
            );
        }
        self.fail(Check::Invariants(v.kind), text)
    }

    fn fail(&self, check: Check, detail: impl Into<String>) -> Finding {
        Finding::new(check, self.step, detail)
    }

    /// Applies one operation and checks everything.
    pub fn apply(&mut self, op: &Op) -> Result<(), Finding> {
        self.step += 1;
        match *op {
            Op::Alloc {
                size,
                align_log,
                zero,
            } => self.alloc(Op::size(size), Op::align(align_log), zero)?,
            Op::Free { slot } => {
                if !self.live.is_empty() {
                    let i = slot as usize % self.live.len();
                    self.free(i)?;
                }
            }
            Op::Realloc { slot, size } => {
                if !self.live.is_empty() {
                    let i = slot as usize % self.live.len();
                    self.realloc(i, Op::size(size))?;
                }
            }
            Op::FreeInterior { slot, offset } => {
                if !self.live.is_empty() {
                    let i = slot as usize % self.live.len();
                    self.free_interior(i, offset as usize)?;
                }
            }
            Op::Purge => self.heap.purge(),
        }
        if self.step % self.check_every == 0 {
            self.check()?;
        }
        Ok(())
    }

    /// Frees every live allocation (checking each), then checks that the heap holds nothing.
    pub fn finish(mut self) -> Result<(), Finding> {
        self.finish_checks()
    }

    fn finish_checks(&mut self) -> Result<(), Finding> {
        while !self.live.is_empty() {
            self.step += 1;
            self.free(self.live.len() - 1)?;
            if self.step % self.check_every == 0 {
                self.check()?;
            }
        }
        self.heap.flush_thread_cache();
        self.check()?;
        let st = self.heap.stats();
        if st.cached != 0 || st.allocated != 0 || st.arena.active_pages != 0 || st.huge_live != 0 {
            return Err(self.fail(
                Check::Stats,
                format!(
                    "nothing is live but allocated = {}, cached = {}, active pages = {}, huge = {}",
                    st.allocated, st.cached, st.arena.active_pages, st.huge_live
                ),
            ));
        }
        Ok(())
    }

    // ---- operations -------------------------------------------------------------------------

    fn alloc(&mut self, size: usize, align: usize, zero: bool) -> Result<(), Finding> {
        let p = self.heap.allocate(size, align, zero) as usize;
        let live = self.admit(p, size, align)?;
        if zero {
            // SAFETY: `size` bytes of a fresh allocation of at least `size` bytes.
            let bytes = unsafe { core::slice::from_raw_parts(p as *const u8, size) };
            if let Some(off) = bytes.iter().position(|&b| b != 0) {
                return Err(self.fail(
                    Check::Contents,
                    format!(
                        "zeroed allocation {p:#x} ({size} B) has {:#x} at {off}",
                        bytes[off]
                    ),
                ));
            }
        }
        self.fill(&live);
        self.live.push(live);
        Ok(())
    }

    /// Checks a fresh allocation `p` of `size` bytes aligned to `align`, and records it in the
    /// run model (not in the live list).
    fn admit(&mut self, p: usize, size: usize, align: usize) -> Result<Live, Finding> {
        let Some(class) = classify(size, align) else {
            return Err(self.fail(
                Check::LiveModel,
                format!("classify({size}, {align}) failed"),
            ));
        };
        if p == 0 {
            // A policy that broke its contract (a pick the engine cannot use) makes the
            // allocation fail in verification builds; the invariants name the broken pick.
            self.heap
                .check_invariants()
                .map_err(|v| self.violation(v))?;
            return Err(self.fail(
                Check::LiveModel,
                format!("allocate({size}, {align}) returned null"),
            ));
        }
        if p % align.max(QUANTUM) != 0 {
            return Err(self.fail(
                Check::LiveModel,
                format!("{p:#x} ({size} B) is not aligned to {align}"),
            ));
        }
        match self.heap.usable_size(p as *const u8) {
            Ok(u) if u == usable(class) && u >= size => {}
            other => {
                return Err(self.fail(
                    Check::LiveModel,
                    format!(
                    "usable_size({p:#x}) = {other:?} for a {size}-byte request of class {class:?}"
                ),
                ))
            }
        }
        let arena = self.heap.arena_of(p as *const u8);
        if matches!(class, SizeClass::Huge(_)) != arena.is_none() {
            return Err(self.fail(
                Check::LiveModel,
                format!("{p:#x} of class {class:?} reports arena {arena:?}"),
            ));
        }
        if let (SizeClass::Small(idx), Some(a), false) = (class, arena, Self::CACHED) {
            self.small_alloc(p, a, idx)?;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        Ok(Live {
            ptr: p,
            size,
            tag,
            class,
            arena,
        })
    }

    fn free(&mut self, i: usize) -> Result<(), Finding> {
        let l = self.live.swap_remove(i);
        self.verify(&l, l.size)?;
        // SAFETY: a live allocation of this heap, freed once.
        if let Err(e) = unsafe { self.heap.try_free(l.ptr as *mut u8) } {
            return Err(self.fail(
                Check::LiveModel,
                format!("free of live {:#x} refused: {e}", l.ptr),
            ));
        }
        self.forget(&l)?;
        // SAFETY: `try_free` must reject a pointer that is no longer live without touching it.
        if unsafe { self.heap.try_free(l.ptr as *mut u8) }.is_ok() {
            return Err(self.fail(
                Check::LiveModel,
                format!("double free of {:#x} accepted", l.ptr),
            ));
        }
        Ok(())
    }

    /// Removes a freed allocation from the run model.
    fn forget(&mut self, l: &Live) -> Result<(), Finding> {
        if let (SizeClass::Small(idx), Some(a), false) = (l.class, l.arena, Self::CACHED) {
            self.small_free(l.ptr, a, idx)?;
        }
        Ok(())
    }

    fn realloc(&mut self, i: usize, new_size: usize) -> Result<(), Finding> {
        let old = self.live[i];
        // SAFETY: a live allocation of this heap; on success only the result is used.
        let q = unsafe { self.heap.realloc_c(old.ptr as *mut u8, new_size) } as usize;
        if q == 0 {
            self.heap
                .check_invariants()
                .map_err(|v| self.violation(v))?;
            return Err(self.fail(
                Check::LiveModel,
                format!("realloc({:#x}, {new_size}) returned null", old.ptr),
            ));
        }
        let new_class = classify(new_size, QUANTUM);
        let must_stay = matches!((old.class, new_class), (SizeClass::Small(_), Some(c @ SizeClass::Small(_))) if usable(c) == usable(old.class));
        let may_stay = must_stay
            || matches!(
                (old.class, new_class),
                (SizeClass::Large(_), Some(SizeClass::Large(_)))
                    | (SizeClass::Huge(_), Some(SizeClass::Huge(_)))
            );
        if (q == old.ptr && !may_stay) || (q != old.ptr && must_stay) {
            return Err(self.fail(
                Check::LiveModel,
                format!(
                    "realloc({:#x}, {new_size}) of class {:?} returned {q:#x}",
                    old.ptr, old.class
                ),
            ));
        }
        let huge_resize = matches!(
            (old.class, new_class),
            (SizeClass::Huge(_), Some(SizeClass::Huge(_)))
        );
        let mut moved = if q != old.ptr && !huge_resize {
            // A move: the engine allocated the new block, copied, then freed the old one.
            let moved = self.admit(q, new_size, QUANTUM)?;
            self.forget(&old)?;
            moved
        } else {
            // In place, or a huge mapping resized (moved by the kernel, not the arenas).
            let class = new_class.expect("classified above");
            match self.heap.usable_size(q as *const u8) {
                Ok(u) if u == usable(class) && u >= new_size => {}
                other => {
                    return Err(self.fail(
                        Check::LiveModel,
                        format!("after realloc to {new_size}, usable_size({q:#x}) = {other:?}"),
                    ))
                }
            }
            Live {
                ptr: q,
                size: new_size,
                class,
                arena: self.heap.arena_of(q as *const u8),
                ..old
            }
        };
        let kept = Live {
            ptr: q,
            tag: old.tag,
            size: old.size,
            ..moved
        };
        self.verify(&kept, old.size.min(new_size))?;
        moved.tag = self.next_tag;
        self.next_tag += 1;
        self.fill(&moved);
        self.live[i] = moved;
        Ok(())
    }

    fn free_interior(&mut self, i: usize, offset: usize) -> Result<(), Finding> {
        let l = self.live[i];
        let Ok(u) = self.heap.usable_size(l.ptr as *const u8) else {
            return Err(self.fail(Check::LiveModel, format!("{:#x} not live", l.ptr)));
        };
        if u < 2 {
            return Ok(());
        }
        let at = l.ptr + 1 + offset % (u - 1);
        // SAFETY: an interior pointer must be refused without touching anything.
        if unsafe { self.heap.try_free(at as *mut u8) }.is_ok() {
            return Err(self.fail(
                Check::LiveModel,
                format!("interior pointer {at:#x} of {:#x} was freed", l.ptr),
            ));
        }
        Ok(())
    }

    // ---- contents ---------------------------------------------------------------------------

    fn fill(&self, l: &Live) {
        // SAFETY: a live allocation of at least `size` bytes.
        unsafe { fill_pattern(l.ptr, l.size, l.tag) };
    }

    fn verify(&self, l: &Live, len: usize) -> Result<(), Finding> {
        // SAFETY: a live allocation of at least `len` bytes.
        match unsafe { check_pattern(l.ptr, l.size, len, l.tag) } {
            None => Ok(()),
            Some(off) => Err(self.fail(
                Check::Contents,
                format!(
                    "allocation {:#x} ({} B) changed at offset {off} (first {len} bytes checked)",
                    l.ptr, l.size
                ),
            )),
        }
    }

    // ---- runs -------------------------------------------------------------------------------

    /// The known run of arena `a` (any bin) containing `p`: `(bin, run start)`.
    fn run_of(&self, a: usize, p: usize) -> Option<(usize, usize)> {
        self.bins
            .range((a, 0)..(a + 1, 0))
            .find_map(|(&(_, idx), bm)| {
                let (&base, _) = bm.used.range(..=p).next_back()?;
                (p < base + bin(idx).run_size()).then_some((idx, base))
            })
    }

    fn small_alloc(&mut self, p: usize, a: usize, idx: usize) -> Result<(), Finding> {
        let info = bin(idx);
        let found = self.run_of(a, p);
        let step = self.step;
        let bm = self.bins.entry((a, idx)).or_default();
        bm.cover_pick(&mut self.coverage);
        let predicted = M::PREDICTS.then(|| bm.policy.pick(&Runs::new(&bm.free)));
        let served = match found {
            Some((other, _)) if other != idx => {
                return Err(Finding::new(
                    Check::LiveModel,
                    step,
                    format!("{p:#x} of bin {idx} lies in a run of bin {other}"),
                ))
            }
            Some((_, base)) => {
                let used = &self.bins[&(a, idx)].used[&base];
                let lowest = used.iter().position(|u| !u);
                let want = lowest.map(|r| base + r * info.size as usize);
                if want != Some(p) {
                    return Err(self.fail(
                        Check::LiveModel,
                        format!(
                            "bin {idx}: {p:#x} is not the lowest free region of {} ({want:x?})",
                            self.run_name(base)
                        ),
                    ));
                }
                Some(base)
            }
            None => {
                if p % PAGE != 0 {
                    return Err(Finding::new(
                        Check::LiveModel,
                        step,
                        format!("bin {idx}: {p:#x} is in no known run and starts no new run"),
                    ));
                }
                None
            }
        };
        if let Some(expected) = predicted {
            self.coverage.model_checked_picks += 1;
            if expected != served {
                let name = |r: Option<usize>, new: &str| match r {
                    Some(r) => self.run_name(r),
                    None => new.to_string(),
                };
                return Err(self.fail(
                    Check::ReuseModel,
                    format!(
                        "arena {a}, bin {idx} ({} B): the model predicts {} but {} served",
                        info.size,
                        name(expected, "a new run"),
                        name(served, &format!("a new run at {p:#x}")),
                    ),
                ));
            }
        }
        let bm = self.bins.get_mut(&(a, idx)).expect("entered above");
        let base = match served {
            Some(b) => b,
            None => {
                let cap = info.capacity as usize;
                bm.used.insert(p, vec![false; cap]);
                bm.free.insert(p, cap);
                bm.cover_insert(p, &mut self.coverage);
                bm.policy.insert(p, &Runs::new(&bm.free));
                bm.policy.pick(&Runs::new(&bm.free));
                self.run_ids.insert(p, self.next_run_id);
                self.next_run_id += 1;
                p
            }
        };
        let r = (p - base) / info.size as usize;
        bm.used.get_mut(&base).expect("known run")[r] = true;
        bm.last_served = Some(base);
        let free = bm.free.get_mut(&base).expect("known run");
        *free -= 1;
        if *free == 0 {
            bm.policy.remove(base);
            self.coverage.removed_full += 1;
        }
        Ok(())
    }

    fn small_free(&mut self, p: usize, a: usize, idx: usize) -> Result<(), Finding> {
        let info = bin(idx);
        let Some((_, base)) = self.run_of(a, p).filter(|&(b, _)| b == idx) else {
            return Err(self.fail(
                Check::LiveModel,
                format!("freed {p:#x} of bin {idx} lies in no known run"),
            ));
        };
        let bm = self.bins.get_mut(&(a, idx)).expect("run found in it");
        let r = (p - base) / info.size as usize;
        bm.used.get_mut(&base).expect("known run")[r] = false;
        let cap = info.capacity as usize;
        let free = {
            let f = bm.free.get_mut(&base).expect("known run");
            *f += 1;
            *f
        };
        if free == cap {
            if cap > 1 {
                bm.policy.remove(base);
                self.coverage.removed_empty += 1;
            }
            bm.used.remove(&base);
            bm.free.remove(&base);
            self.run_ids.remove(&base);
        } else if free == 1 {
            bm.cover_insert(base, &mut self.coverage);
            bm.policy.insert(base, &Runs::new(&bm.free));
        } else {
            self.coverage.freed_into_known += 1;
            bm.policy.freed(base, &Runs::new(&bm.free));
        }
        Ok(())
    }

    // ---- whole-heap checks ------------------------------------------------------------------

    fn check(&self) -> Result<(), Finding> {
        let mut live: Vec<(usize, usize)> = self.live.iter().map(|l| (l.ptr, l.size)).collect();
        self.heap
            .check_live(&mut live)
            .map_err(|v| self.violation(v))?;
        let st = self.heap.stats();
        let allocated: usize = self.live.iter().map(|l| usable(l.class)).sum();
        // `what` is formatted only on a mismatch: this runs for every bin of every arena.
        let stat = |what: &dyn Fn() -> String, expected: usize, actual: usize| {
            if expected == actual {
                Ok(())
            } else {
                Err(self.fail(
                    Check::Stats,
                    format!(
                        "{}: the model says {expected}, the heap says {actual}",
                        what()
                    ),
                ))
            }
        };
        stat(&|| "allocated bytes".into(), allocated, st.allocated)?;
        let huge = self
            .live
            .iter()
            .filter(|l| matches!(l.class, SizeClass::Huge(_)))
            .count();
        stat(&|| "live huge allocations".into(), huge, st.huge_live)?;
        if Self::CACHED {
            let mut live = [0usize; alloclab_core::size_class::NBINS];
            for l in &self.live {
                if let SizeClass::Small(idx) = l.class {
                    live[idx] += 1;
                }
            }
            for (idx, (&n, b)) in live.iter().zip(st.bins.iter()).enumerate() {
                stat(&|| format!("bin {idx} live regions"), n, b.live)?;
            }
            return Ok(());
        }
        for a in 0..MAX_ARENAS {
            let Some((_, bins)) = self.heap.arena_stats(a) else {
                continue;
            };
            for (idx, b) in bins.iter().enumerate() {
                let (runs, nonfull, used) = match self.bins.get(&(a, idx)) {
                    Some(bm) => (
                        bm.used.len(),
                        bm.free.values().filter(|&&f| f > 0).count(),
                        bm.used.values().flatten().filter(|&&u| u).count(),
                    ),
                    None => (0, 0, 0),
                };
                stat(&|| format!("arena {a} bin {idx} runs"), runs, b.runs)?;
                stat(
                    &|| format!("arena {a} bin {idx} non-full runs"),
                    nonfull,
                    b.nonfull_runs,
                )?;
                stat(
                    &|| format!("arena {a} bin {idx} live regions"),
                    used,
                    b.live,
                )?;
            }
        }
        Ok(())
    }
}
