//! Log-linear latency buckets, in the manner of HdrHistogram: values below 128 have a bucket
//! each; above, every power of two is cut into 128 equal buckets, so a bucket is never wider
//! than 1/128 (0.78%) of its lower bound, and the midpoint that a percentile reports is within
//! 0.4% of any value in it. Values from 2^41 up (about 37 minutes at 1 GHz) share the last
//! bucket; the exact maximum is kept beside the buckets.
//!
//! The buckets are atomics so that the process-exit dump may read a record while its thread
//! still runs; its owner writes them with a plain load and store (no read-modify-write), which
//! costs what an ordinary increment does.

use core::sync::atomic::{AtomicU64, Ordering};

/// Sub-buckets per power of two, as a power of two.
pub const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// The largest power of two with buckets of its own.
const MAX_EXP: u32 = 40;
/// Buckets in a histogram.
pub const BUCKETS: usize = (MAX_EXP - SUB_BITS + 2) as usize * SUB;

/// The bucket that holds `v`.
#[inline]
pub fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    if e > MAX_EXP {
        return BUCKETS - 1;
    }
    let shift = e - SUB_BITS;
    ((shift as usize + 1) << SUB_BITS) + ((v >> shift) as usize - SUB)
}

/// The values bucket `i` holds: `lo..hi`.
pub fn bounds(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, i as u64 + 1);
    }
    let shift = (i >> SUB_BITS) as u32 - 1;
    let m = ((i & (SUB - 1)) + SUB) as u64;
    (m << shift, (m + 1) << shift)
}

/// The value a percentile in bucket `i` reports: the middle of its range.
pub fn midpoint(i: usize) -> f64 {
    let (lo, hi) = bounds(i);
    if hi - lo == 1 {
        lo as f64
    } else {
        (lo as f64 + hi as f64) / 2.0
    }
}

/// Counts per bucket.
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
}

impl Histogram {
    /// Adds one value (the owner's path: load and store, see the module's comment; `shared`
    /// for a record several threads write, which then pays for an atomic add).
    #[inline]
    pub fn add(&self, v: u64, shared: bool) {
        bump(&self.counts[bucket(v)], 1, shared);
    }

    /// The non-empty buckets, as `(bucket, count)`.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.load(Ordering::Relaxed)))
            .filter(|&(_, c)| c > 0)
    }

    /// Empties it.
    pub fn clear(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Adds `v` to a counter: a load and a store for the owner's record, an atomic add for a
/// shared one.
#[inline]
pub fn bump(c: &AtomicU64, v: u64, shared: bool) {
    if shared {
        c.fetch_add(v, Ordering::Relaxed);
    } else {
        c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
    }
}

/// Percentile `q` (0 to 1) of a histogram given as sorted `(bucket, count)` pairs, as a bucket
/// midpoint; `None` when it is empty. The rank is the nearest-rank one: the smallest value with
/// at least `q` of the counts at or below it.
pub fn percentile(buckets: &[(usize, u64)], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|&(_, c)| c).sum();
    if total == 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for &(i, c) in buckets {
        seen += c;
        if seen >= rank {
            return Some(midpoint(i));
        }
    }
    buckets.last().map(|&(i, _)| midpoint(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_a_bucket_that_holds_it_and_is_narrow() {
        let mut v = 0u64;
        while v < 1 << 41 {
            let i = bucket(v);
            let (lo, hi) = bounds(i);
            assert!(lo <= v && v < hi, "{v} in bucket {i} = {lo}..{hi}");
            assert!(
                (hi - lo) as f64 <= (lo as f64 / 128.0).max(1.0),
                "{lo}..{hi}"
            );
            v = v + 1 + v / 37;
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert_eq!(bounds(BUCKETS - 1).1, 1 << 41);
    }

    #[test]
    fn buckets_are_contiguous() {
        for i in 1..BUCKETS {
            assert_eq!(bounds(i - 1).1, bounds(i).0, "between {} and {i}", i - 1);
        }
    }

    #[test]
    fn percentiles_are_nearest_rank_within_half_a_bucket() {
        // 1..=1000 once each: p50 is 500, p99 990, p100 1000.
        let mut counts = vec![0u64; BUCKETS];
        for v in 1..=1000u64 {
            counts[bucket(v)] += 1;
        }
        let sparse: Vec<(usize, u64)> = counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (i, c))
            .collect();
        for (q, want) in [(0.5, 500.0), (0.99, 990.0), (1.0, 1000.0), (0.0, 1.0)] {
            let got = percentile(&sparse, q).unwrap();
            assert!(
                (got - want).abs() <= want * 0.004 + 0.5,
                "p{q}: {got} vs {want}"
            );
        }
        assert_eq!(percentile(&[], 0.5), None);
    }
}
