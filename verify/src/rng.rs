//! The random walks' generator: xorshift64*, one per thread, seeded from the walk's seed and
//! the thread's number, so a seed replays every thread's choices (the threaded smoke and the
//! shuttle walks).

/// A small deterministic generator (xorshift64*).
pub(crate) struct Rng(u64);

impl Rng {
    /// Thread `thread`'s generator for the walk seeded `seed`.
    pub(crate) fn new(seed: u64, thread: usize) -> Rng {
        Rng((seed ^ (thread as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}
