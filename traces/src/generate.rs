//! A synthetic trace generator for the premise of the run-reuse study (mozjemalloc bug
//! 1924444): objects of one size are allocated in bursts, "built up and torn down all
//! together" (object trees, temporary structures), while long-lived objects are allocated in
//! between and outlive the bursts, so that runs are left partly used.
//!
//! Each simulated thread repeats: pick a size from the size mix and a burst length; allocate
//! the burst one object per step, each step's object being, by the lifetime mix,
//! - `burst`: of the burst's size, freed when the burst is torn down;
//! - `survivor`: of the burst's size, outliving the burst (it joins the long-lived pool);
//! - `long`: of another size from the mix, allocated in the middle of the burst, long-lived;
//! - `temp`: of another size, freed on the thread's next step;
//!
//! then tear the burst down (in allocation order, reverse order or at random). The long-lived
//! pool is shared by all threads and capped: when full, a random member (possibly another
//! thread's: a cross-thread free) is freed to make room. Pool members are sometimes
//! reallocated to another size. Threads run in random slices of 1 to 32 steps. At the end the
//! pool is still live, as a program's long-lived data is at exit.
//!
//! The output is a munged logalloc trace (pid 1, threads 1..n, slot ids), fully determined by
//! the parameters: the same seed gives the same bytes.

use crate::rng::SplitMix64;
use crate::trace::{write_line, Func, Op, Slot, NO_SLOT};
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

/// One entry of the size mix: sizes from `min` to `max` bytes (uniform), chosen with weight
/// `weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeChoice {
    /// Smallest size.
    pub min: u64,
    /// Largest size.
    pub max: u64,
    /// Relative weight.
    pub weight: u32,
}

/// A size mix: `SIZE[:WEIGHT]` or `MIN-MAX[:WEIGHT]`, comma separated (weight 1 by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeMix(pub Vec<SizeChoice>);

impl SizeMix {
    /// The default mix: mostly small objects of typical sizes, some page-sized and larger.
    pub const DEFAULT: &'static str =
        "16:6,24:4,32:6,48:4,64:4,96:2,128:3,200:2,256:2,512:2,1024:1,3000:1,4096-65536:1";
}

fn parse_u64(what: &str, s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("{what}: expected a whole number, found `{s}`"))
}

impl FromStr for SizeMix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut mix = Vec::new();
        for entry in s.split(',') {
            let (range, weight) = match entry.split_once(':') {
                Some((r, w)) => (r, parse_u64("weight", w)?),
                None => (entry, 1),
            };
            let (min, max) = match range.split_once('-') {
                Some((a, b)) => (parse_u64("size", a)?, parse_u64("size", b)?),
                None => {
                    let v = parse_u64("size", range)?;
                    (v, v)
                }
            };
            if min == 0 || min > max {
                return Err(format!(
                    "size range `{range}`: sizes must be at least 1 and min <= max"
                ));
            }
            let weight = u32::try_from(weight).map_err(|_| format!("weight {weight} too large"))?;
            mix.push(SizeChoice { min, max, weight });
        }
        if mix.iter().all(|c| c.weight == 0) {
            return Err("the size mix needs at least one entry with a positive weight".into());
        }
        Ok(SizeMix(mix))
    }
}

impl fmt::Display for SizeMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            if c.min == c.max {
                write!(f, "{sep}{}:{}", c.min, c.weight)?;
            } else {
                write!(f, "{sep}{}-{}:{}", c.min, c.max, c.weight)?;
            }
        }
        Ok(())
    }
}

/// The lifetime mix: relative weights of the four kinds of object a burst step allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// Dies with its burst.
    pub burst: u32,
    /// Of the burst's size, outlives it.
    pub survivor: u32,
    /// Of another size, long-lived, allocated between burst objects.
    pub long: u32,
    /// Of another size, freed on the next step.
    pub temp: u32,
}

impl Lifetimes {
    /// The default mix.
    pub const DEFAULT: &'static str = "burst:90,survivor:4,long:3,temp:3";

    fn total(&self) -> u64 {
        u64::from(self.burst)
            + u64::from(self.survivor)
            + u64::from(self.long)
            + u64::from(self.temp)
    }
}

impl FromStr for Lifetimes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut l = Lifetimes {
            burst: 0,
            survivor: 0,
            long: 0,
            temp: 0,
        };
        for entry in s.split(',') {
            let (name, weight) = entry
                .split_once(':')
                .ok_or_else(|| format!("`{entry}`: expected KIND:WEIGHT"))?;
            let w = u32::try_from(parse_u64("weight", weight)?)
                .map_err(|_| format!("weight `{weight}` too large"))?;
            match name.trim() {
                "burst" => l.burst = w,
                "survivor" => l.survivor = w,
                "long" => l.long = w,
                "temp" => l.temp = w,
                other => {
                    return Err(format!(
                        "unknown lifetime `{other}` (expected burst, survivor, long, temp)"
                    ))
                }
            }
        }
        if l.burst + l.survivor == 0 {
            return Err("bursts need objects: give burst or survivor a positive weight".into());
        }
        Ok(l)
    }
}

impl fmt::Display for Lifetimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "burst:{},survivor:{},long:{},temp:{}",
            self.burst, self.survivor, self.long, self.temp
        )
    }
}

/// The order in which a burst is torn down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// First allocated, first freed.
    Fifo,
    /// Last allocated, first freed.
    Lifo,
    /// Random order.
    Random,
}

impl FromStr for Teardown {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fifo" => Ok(Teardown::Fifo),
            "lifo" => Ok(Teardown::Lifo),
            "random" => Ok(Teardown::Random),
            _ => Err(format!("unknown order `{s}` (expected fifo, lifo, random)")),
        }
    }
}

/// The generator's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Seed of every random choice.
    pub seed: u64,
    /// Bursts in all (over all threads).
    pub bursts: u64,
    /// Objects per burst: from `.0` to `.1`, uniform.
    pub burst_size: (u32, u32),
    /// A burst's objects hold at most this many bytes together (so bursts of large objects are
    /// short), but a burst has at least one object.
    pub max_burst_bytes: u64,
    /// The size mix.
    pub sizes: SizeMix,
    /// The lifetime mix.
    pub lifetimes: Lifetimes,
    /// Capacity of the long-lived pool.
    pub long_lived: u32,
    /// Teardown order.
    pub teardown: Teardown,
    /// Simulated threads.
    pub threads: u32,
    /// Percent of burst steps that also reallocate a random long-lived object.
    pub realloc_percent: u32,
    /// Emit `jemalloc_stats()` every this many calls (0: never).
    pub stats_every: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            seed: 1,
            bursts: 300,
            burst_size: (20, 1000),
            max_burst_bytes: 1 << 20,
            sizes: SizeMix::DEFAULT
                .parse()
                .expect("the default size mix parses"),
            lifetimes: Lifetimes::DEFAULT
                .parse()
                .expect("the default lifetimes parse"),
            long_lived: 4000,
            teardown: Teardown::Fifo,
            threads: 1,
            realloc_percent: 1,
            stats_every: 0,
        }
    }
}

/// What the generator wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Lines written, per function ([`Func::index`]).
    pub counts: [u64; Func::ALL.len()],
    /// Most objects live at once.
    pub peak_live: u64,
    /// Objects live at the end (the long-lived pool).
    pub live_at_end: u64,
}

impl Summary {
    /// Lines written.
    pub fn lines(&self) -> u64 {
        self.counts.iter().sum()
    }
}

#[derive(Clone, Copy)]
struct Object {
    slot: Slot,
    survivor: bool,
}

#[derive(Default)]
struct ThreadState {
    size: u64,
    to_allocate: u64,
    burst: Vec<Object>,
    tearing_down: bool,
    temp: Option<Slot>,
    active: bool,
}

struct Gen<'w, W: Write + ?Sized> {
    p: &'w Params,
    out: &'w mut W,
    rng: SplitMix64,
    free_slots: Vec<Slot>,
    next_slot: Slot,
    live: u64,
    pool: Vec<Slot>,
    summary: Summary,
    since_stats: u64,
    size_weights: u64,
}

impl<W: Write + ?Sized> Gen<'_, W> {
    fn emit(&mut self, thread: usize, op: Op) -> io::Result<()> {
        write_line(self.out, 1, thread as u64 + 1, &op)?;
        self.summary.counts[op.func.index()] += 1;
        self.since_stats += 1;
        if self.p.stats_every != 0 && self.since_stats >= self.p.stats_every {
            self.since_stats = 0;
            let stats = Op {
                func: Func::JemallocStats,
                thread: thread as u32,
                slot: NO_SLOT,
                old: NO_SLOT,
                size: 0,
                arg: 0,
            };
            write_line(self.out, 1, thread as u64 + 1, &stats)?;
            self.summary.counts[Func::JemallocStats.index()] += 1;
        }
        Ok(())
    }

    fn size(&mut self) -> u64 {
        let mut pick = self.rng.below(self.size_weights);
        for c in &self.p.sizes.0 {
            let w = u64::from(c.weight);
            if pick < w {
                return self.rng.between(c.min, c.max);
            }
            pick -= w;
        }
        unreachable!("the pick is below the total weight")
    }

    fn malloc(&mut self, thread: usize, size: u64) -> io::Result<Slot> {
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.next_slot += 1;
                self.next_slot - 1
            }
        };
        self.live += 1;
        self.summary.peak_live = self.summary.peak_live.max(self.live);
        self.emit(
            thread,
            Op {
                func: Func::Malloc,
                thread: thread as u32,
                slot,
                old: NO_SLOT,
                size,
                arg: 0,
            },
        )?;
        Ok(slot)
    }

    fn free(&mut self, thread: usize, slot: Slot) -> io::Result<()> {
        self.free_slots.push(slot);
        self.live -= 1;
        self.emit(
            thread,
            Op {
                func: Func::Free,
                thread: thread as u32,
                slot,
                old: NO_SLOT,
                size: 0,
                arg: 0,
            },
        )
    }

    /// Puts `slot` in the long-lived pool, freeing a random member if the pool is full.
    fn keep(&mut self, thread: usize, slot: Slot) -> io::Result<()> {
        if self.p.long_lived == 0 {
            return self.free(thread, slot);
        }
        if self.pool.len() >= self.p.long_lived as usize {
            let i = self.rng.below(self.pool.len() as u64) as usize;
            let old = std::mem::replace(&mut self.pool[i], slot);
            return self.free(thread, old);
        }
        self.pool.push(slot);
        Ok(())
    }

    fn realloc_pool_member(&mut self, thread: usize) -> io::Result<()> {
        let i = self.rng.below(self.pool.len() as u64) as usize;
        let old = self.pool[i];
        let size = self.size();
        // As the munger does: the old id is released, then the result takes a free id.
        self.free_slots.push(old);
        let slot = self.free_slots.pop().expect("just pushed");
        self.pool[i] = slot;
        self.emit(
            thread,
            Op {
                func: Func::Realloc,
                thread: thread as u32,
                slot,
                old,
                size,
                arg: 0,
            },
        )
    }

    /// One step of `thread`; returns false when the thread has nothing left to do.
    fn step(
        &mut self,
        threads: &mut [ThreadState],
        t: usize,
        bursts_started: &mut u64,
    ) -> io::Result<bool> {
        if let Some(temp) = threads[t].temp.take() {
            self.free(t, temp)?;
            return Ok(true);
        }
        if !threads[t].active {
            if *bursts_started == self.p.bursts {
                return Ok(false);
            }
            *bursts_started += 1;
            let size = self.size();
            let (lo, hi) = self.p.burst_size;
            let wanted = self.rng.between(u64::from(lo), u64::from(hi));
            let fits = (self.p.max_burst_bytes / size).max(1);
            let th = &mut threads[t];
            th.size = size;
            th.to_allocate = wanted.min(fits);
            th.tearing_down = false;
            th.active = true;
        }
        if threads[t].tearing_down {
            let th = &mut threads[t];
            let obj = match self.p.teardown {
                // (A FIFO burst was reversed when its teardown began.)
                Teardown::Fifo | Teardown::Lifo => {
                    th.burst.pop().expect("a burst being torn down has objects")
                }
                Teardown::Random => {
                    let i = self.rng.below(th.burst.len() as u64) as usize;
                    th.burst.swap_remove(i)
                }
            };
            if th.burst.is_empty() {
                th.active = false;
            }
            return if obj.survivor {
                self.keep(t, obj.slot).map(|()| true)
            } else {
                self.free(t, obj.slot).map(|()| true)
            };
        }
        if !self.pool.is_empty() && self.rng.below(100) < u64::from(self.p.realloc_percent) {
            self.realloc_pool_member(t)?;
        }
        let l = self.p.lifetimes;
        let mut pick = self.rng.below(l.total());
        let kind = [l.burst, l.survivor, l.long, l.temp]
            .iter()
            .position(|&w| {
                let hit = pick < u64::from(w);
                pick = pick.saturating_sub(u64::from(w));
                hit
            })
            .expect("the pick is below the total weight");
        match kind {
            0 | 1 => {
                let size = threads[t].size;
                let slot = self.malloc(t, size)?;
                let th = &mut threads[t];
                th.burst.push(Object {
                    slot,
                    survivor: kind == 1,
                });
                th.to_allocate -= 1;
                if th.to_allocate == 0 {
                    th.tearing_down = true;
                    if self.p.teardown == Teardown::Fifo {
                        th.burst.reverse();
                    }
                }
            }
            2 => {
                let size = self.size();
                let slot = self.malloc(t, size)?;
                self.keep(t, slot)?;
            }
            _ => {
                let size = self.size();
                let slot = self.malloc(t, size)?;
                threads[t].temp = Some(slot);
            }
        }
        Ok(true)
    }
}

/// Writes a synthetic trace with parameters `p` to `out`.
pub fn generate<W: Write + ?Sized>(p: &Params, out: &mut W) -> io::Result<Summary> {
    let invalid = |msg: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, msg.to_string()));
    if p.threads == 0 {
        return invalid("at least one thread");
    }
    if p.burst_size.0 == 0 || p.burst_size.0 > p.burst_size.1 {
        return invalid("burst sizes: at least 1 object, and min <= max");
    }
    let size_weights: u64 = p.sizes.0.iter().map(|c| u64::from(c.weight)).sum();
    if size_weights == 0 || p.lifetimes.burst + p.lifetimes.survivor == 0 {
        return invalid("the size and lifetime mixes need positive weights");
    }
    let mut g = Gen {
        p,
        out,
        rng: SplitMix64::new(p.seed),
        free_slots: Vec::new(),
        next_slot: 0,
        live: 0,
        pool: Vec::new(),
        summary: Summary::default(),
        since_stats: 0,
        size_weights,
    };
    let mut threads: Vec<ThreadState> = (0..p.threads).map(|_| ThreadState::default()).collect();
    let mut running: Vec<usize> = (0..p.threads as usize).collect();
    let mut bursts_started = 0u64;
    while !running.is_empty() {
        let i = g.rng.below(running.len() as u64) as usize;
        let t = running[i];
        let slice = 1 + g.rng.below(32);
        for _ in 0..slice {
            if !g.step(&mut threads, t, &mut bursts_started)? {
                running.swap_remove(i);
                break;
            }
        }
    }
    g.summary.live_at_end = g.live;
    Ok(g.summary)
}
