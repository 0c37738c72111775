//! Blocks the synthetic workloads allocate, and the pattern each carries: every block gets an
//! id, and bytes derived from it are written at its start, its middle and its end when it is
//! made and checked before it is freed or after it is moved by `realloc`. The pattern costs a
//! few dozen bytes per block whatever its size, so the allocator's work stays what is measured,
//! yet a block handed out twice, overwritten by the allocator's own bookkeeping, or copied
//! wrongly by `realloc` is found and reported.

use alloclab_traces::subject::Subject;

/// Bytes checked at each end (and in the middle) of a block.
const EDGE: usize = 16;

/// A live block of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its address (kept as an integer so that blocks can move between threads).
    pub addr: usize,
    /// The bytes asked for.
    pub size: usize,
    /// Its id: which bytes its pattern has.
    pub id: u64,
}

/// The pattern's byte at offset `i` of block `id`.
#[inline(always)]
fn pattern(id: u64, i: usize) -> u8 {
    let x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (x >> 56) as u8 ^ (x as u8)
}

/// The offsets carrying the pattern in a block of `size` bytes, each once, in order.
#[inline(always)]
fn offsets(size: usize) -> impl Iterator<Item = usize> {
    let head = 0..size.min(EDGE);
    let mid_start = (size / 2).max(EDGE).min(size);
    let mid = mid_start..(mid_start + EDGE).min(size);
    let tail_start = size.saturating_sub(EDGE).max(mid.end);
    let tail = tail_start..size;
    head.chain(mid).chain(tail)
}

impl Block {
    /// Writes the pattern of `id` into the `size` bytes at `p`, a fresh allocation.
    ///
    /// # Safety
    /// `p` points to at least `size` writable bytes that nobody else uses.
    #[inline]
    pub unsafe fn fill(p: *mut u8, size: usize, id: u64) -> Block {
        for i in offsets(size) {
            // SAFETY: `i < size` (see `offsets`) and the block is ours.
            unsafe { p.add(i).write(pattern(id, i)) };
        }
        Block {
            addr: p as usize,
            size,
            id,
        }
    }

    /// Checks the pattern of the first `len` bytes (at most `size`); `what` names the
    /// workload and the moment for the error.
    ///
    /// # Safety
    /// The block is live and `len <= size`.
    #[inline]
    pub unsafe fn verify_prefix(&self, len: usize, what: &str) -> Result<(), String> {
        let p = self.addr as *const u8;
        for i in offsets(self.size).filter(|&i| i < len) {
            // SAFETY: `i < len <= size` and the block is live.
            let got = unsafe { p.add(i).read() };
            let want = pattern(self.id, i);
            if got != want {
                return Err(format!(
                    "{what}: block {} ({} bytes at {:#x}) has byte {i} = {got:#04x}, written as \
                     {want:#04x}: the allocator handed out memory still in use or overwrote it",
                    self.id, self.size, self.addr
                ));
            }
        }
        Ok(())
    }

    /// Checks the whole pattern.
    ///
    /// # Safety
    /// The block is live.
    #[inline]
    pub unsafe fn verify(&self, what: &str) -> Result<(), String> {
        // SAFETY: forwarded.
        unsafe { self.verify_prefix(self.size, what) }
    }

    /// Checks the pattern, then frees the block.
    ///
    /// # Safety
    /// The block is a live allocation of `s`, not used afterwards.
    #[inline]
    pub unsafe fn verify_and_free(self, s: &dyn Subject, what: &str) -> Result<(), String> {
        // SAFETY: the caller's contract.
        unsafe {
            self.verify(what)?;
            s.free(self.addr as *mut u8);
        }
        Ok(())
    }
}

/// `malloc(size)` with its pattern; an error if the allocator returned null.
#[inline]
pub fn alloc(s: &dyn Subject, size: usize, id: u64, what: &str) -> Result<Block, String> {
    let p = s.malloc(size);
    if p.is_null() {
        return Err(format!("{what}: malloc({size}) returned null (block {id})"));
    }
    // SAFETY: a fresh allocation of `size` bytes.
    Ok(unsafe { Block::fill(p, size, id) })
}

/// `calloc(1, size)`: checks that the bytes the pattern will use are zero, then fills.
#[inline]
pub fn alloc_zeroed(s: &dyn Subject, size: usize, id: u64, what: &str) -> Result<Block, String> {
    let p = s.calloc(1, size);
    if p.is_null() {
        return Err(format!(
            "{what}: calloc(1, {size}) returned null (block {id})"
        ));
    }
    for i in offsets(size) {
        // SAFETY: `i < size`, a fresh allocation.
        let b = unsafe { p.add(i).read() };
        if b != 0 {
            return Err(format!(
                "{what}: calloc(1, {size}) at {:#x} has byte {i} = {b:#04x}, not zero",
                p as usize
            ));
        }
    }
    // SAFETY: as above.
    Ok(unsafe { Block::fill(p, size, id) })
}

/// `memalign(align, size)`: checks the alignment, then fills.
#[inline]
pub fn alloc_aligned(
    s: &dyn Subject,
    align: usize,
    size: usize,
    id: u64,
    what: &str,
) -> Result<Block, String> {
    let p = s.memalign(align, size);
    if p.is_null() {
        return Err(format!(
            "{what}: memalign({align}, {size}) returned null (block {id})"
        ));
    }
    if p as usize % align != 0 {
        return Err(format!(
            "{what}: memalign({align}, {size}) returned {:#x}, not aligned",
            p as usize
        ));
    }
    // SAFETY: a fresh allocation of `size` bytes.
    Ok(unsafe { Block::fill(p, size, id) })
}

/// `realloc` to `size`: checks that the kept bytes moved with the block, then writes the
/// pattern of a new id over the new size.
///
/// # Safety
/// `b` is a live allocation of `s`, not used afterwards.
#[inline]
pub unsafe fn realloc(
    s: &dyn Subject,
    b: Block,
    size: usize,
    id: u64,
    what: &str,
) -> Result<Block, String> {
    // SAFETY: the caller's contract.
    let p = unsafe { s.realloc(b.addr as *mut u8, size) };
    if p.is_null() {
        return Err(format!(
            "{what}: realloc({:#x}, {size}) returned null (block {})",
            b.addr, b.id
        ));
    }
    let moved = Block {
        addr: p as usize,
        ..b
    };
    // SAFETY: `p` holds at least `min(b.size, size)` of the old block's bytes.
    unsafe {
        moved
            .verify_prefix(b.size.min(size), what)
            .map_err(|e| format!("{e} (after realloc to {size} bytes)"))?;
        Ok(Block::fill(p, size, id))
    }
}

/// Runs `f(thread)` on `threads` scoped threads (on the calling thread when there is one) and
/// returns the total of their counts, or the first error.
pub fn on_threads(
    threads: usize,
    f: impl Fn(usize) -> Result<u64, String> + Sync,
) -> Result<u64, String> {
    if threads <= 1 {
        return f(0);
    }
    on_new_threads(threads, f)
}

/// As [`on_threads`], always on new threads (even one), for workloads whose point is that
/// threads end and others free what they allocated.
pub fn on_new_threads(
    threads: usize,
    f: impl Fn(usize) -> Result<u64, String> + Sync,
) -> Result<u64, String> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                scope.spawn(move || f(t))
            })
            .collect();
        let mut total = 0;
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(n)) => total += n,
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert("a worker thread panicked".to_string());
                }
            }
        }
        first_err.map_or(Ok(total), Err)
    })
}

/// The run of a workload whose threads each do an equal share of `units` of work with
/// `worker(subject, share, seed)`, which returns the allocator calls it made: the whole run
/// timed, the calls added up.
pub fn timed_shares(
    subject: &dyn Subject,
    params: &super::Params,
    units: u64,
    worker: fn(&dyn Subject, u64, u64) -> Result<u64, String>,
) -> Result<super::Outcome, String> {
    let threads = params.threads.max(1);
    let share = scaled(units, params.scale).div_ceil(threads as u64);
    let start = std::time::Instant::now();
    let ops = on_threads(threads, |t| {
        worker(subject, share, thread_seed(params.seed, t))
    })?;
    Ok(super::Outcome {
        ops,
        elapsed: start.elapsed(),
    })
}

/// `n` scaled by `scale`, at least 1.
pub fn scaled(n: u64, scale: f64) -> u64 {
    ((n as f64 * scale).round() as u64).max(1)
}

/// The seed of thread `t` of a run seeded `seed`.
pub fn thread_seed(seed: u64, t: usize) -> u64 {
    seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_stay_inside_and_never_repeat() {
        for size in 0..200 {
            let v: Vec<usize> = offsets(size).collect();
            assert!(v.iter().all(|&i| i < size), "{size}: {v:?}");
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{size}: {v:?}");
            assert!(v.len() <= 3 * EDGE, "{size}: {v:?}");
            if size > 0 {
                assert_eq!((v[0], v[v.len() - 1]), (0, size - 1), "{size}");
            }
        }
    }
}
