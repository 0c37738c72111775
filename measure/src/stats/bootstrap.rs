//! Bootstrap percentile confidence intervals, resampled with a seeded generator so that the
//! same data and seed always give the same interval.

use super::descriptive::{median, median_in_place, quantile_sorted};
use alloclab_traces::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// A point estimate with a confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// The statistic on the sample itself.
    pub estimate: f64,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Confidence level (0.95 for a 95% interval).
    pub level: f64,
}

impl ConfidenceInterval {
    /// Whether `x` lies inside the interval (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    fn nan(level: f64) -> ConfidenceInterval {
        ConfidenceInterval {
            estimate: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            level,
        }
    }
}

/// Draws a resample of `xs` (with replacement) into `out`.
fn resample(xs: &[f64], rng: &mut SplitMix64, out: &mut Vec<f64>) {
    out.clear();
    out.extend((0..xs.len()).map(|_| xs[rng.below(xs.len() as u64) as usize]));
}

/// The percentile interval of `replicates` around `estimate`.
fn percentile_interval(mut replicates: Vec<f64>, estimate: f64, level: f64) -> ConfidenceInterval {
    replicates.retain(|r| !r.is_nan());
    replicates.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    ConfidenceInterval {
        estimate,
        lo: quantile_sorted(&replicates, tail),
        hi: quantile_sorted(&replicates, 1.0 - tail),
        level,
    }
}

/// The bootstrap percentile interval of `statistic` over `xs`: `resamples` resamples of the
/// same size drawn with replacement, the statistic computed on each, and the interval taken
/// between the `(1 - level) / 2` and `(1 + level) / 2` quantiles of those replicates.
/// All NaN for an empty sample or a level outside (0, 1).
pub fn bootstrap_ci(
    xs: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    level: f64,
    resamples: usize,
    seed: u64,
) -> ConfidenceInterval {
    resampled(xs, |b| statistic(b), statistic(xs), level, resamples, seed)
}

/// The median of `xs` with its bootstrap percentile interval (the same as
/// `bootstrap_ci(xs, median, ..)`, without an allocation per resample).
pub fn median_ci(xs: &[f64], level: f64, resamples: usize, seed: u64) -> ConfidenceInterval {
    resampled(xs, median_in_place, median(xs), level, resamples, seed)
}

/// The percentile interval of `statistic` over `resamples` resamples of `xs` (each in one
/// reused buffer, which the statistic may reorder), around the estimate `point`.
fn resampled(
    xs: &[f64],
    mut statistic: impl FnMut(&mut [f64]) -> f64,
    point: f64,
    level: f64,
    resamples: usize,
    seed: u64,
) -> ConfidenceInterval {
    if xs.is_empty() || !(level > 0.0 && level < 1.0) || resamples == 0 {
        return ConfidenceInterval::nan(level);
    }
    let mut rng = SplitMix64::new(seed);
    let mut buf = Vec::with_capacity(xs.len());
    let replicates = (0..resamples)
        .map(|_| {
            resample(xs, &mut rng, &mut buf);
            statistic(&mut buf)
        })
        .collect();
    percentile_interval(replicates, point, level)
}

/// `median(a) / median(b)` with a bootstrap percentile interval: each replicate resamples `a`
/// and `b` independently (they are independent invocations) and divides their medians.
/// All NaN when either sample is empty; replicates whose denominator is zero are dropped.
pub fn ratio_of_medians_ci(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> ConfidenceInterval {
    if a.is_empty() || b.is_empty() || !(level > 0.0 && level < 1.0) || resamples == 0 {
        return ConfidenceInterval::nan(level);
    }
    let ratio = |num: f64, den: f64| if den == 0.0 { f64::NAN } else { num / den };
    let mut rng = SplitMix64::new(seed);
    let (mut buf_a, mut buf_b) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    let replicates = (0..resamples)
        .map(|_| {
            resample(a, &mut rng, &mut buf_a);
            resample(b, &mut rng, &mut buf_b);
            ratio(median_in_place(&mut buf_a), median_in_place(&mut buf_b))
        })
        .collect();
    percentile_interval(replicates, ratio(median(a), median(b)), level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| 10.0 + rng.below(1000) as f64 / 100.0)
            .collect()
    }

    #[test]
    fn deterministic_for_a_seed_and_contains_the_estimate() {
        let xs = sample(25, 1);
        let a = median_ci(&xs, 0.95, 2000, 42);
        let b = median_ci(&xs, 0.95, 2000, 42);
        assert_eq!(a, b);
        assert_eq!(a.estimate, median(&xs));
        assert!(a.lo <= a.estimate && a.estimate <= a.hi, "{a:?}");
        // The median's interval ends on order statistics, so compare a mean's instead.
        let m42 = bootstrap_ci(&xs, super::super::mean, 0.95, 2000, 42);
        let m43 = bootstrap_ci(&xs, super::super::mean, 0.95, 2000, 43);
        assert_ne!(m42, m43, "another seed resamples differently");
    }

    #[test]
    fn interval_lies_within_the_sample_and_narrows_with_level() {
        let xs = sample(40, 2);
        let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let wide = median_ci(&xs, 0.99, 2000, 7);
        let narrow = median_ci(&xs, 0.5, 2000, 7);
        assert!(min <= wide.lo && wide.hi <= max);
        assert!(
            wide.lo <= narrow.lo && narrow.hi <= wide.hi,
            "{wide:?} {narrow:?}"
        );
        assert!(narrow.hi - narrow.lo < wide.hi - wide.lo);
    }

    #[test]
    fn median_interval_matches_the_exact_bootstrap_distribution() {
        // For an odd n the bootstrap median is the j-th order statistic or below with
        // probability P(Binomial(n, j/n) >= (n+1)/2). For n = 11 that is 0.0072 at j = 2 and
        // 0.0512 at j = 3, 0.9488 at j = 8 and 0.9928 at j = 9 (scipy.stats.binom), so the
        // 95% percentile interval is [x(3), x(9)], with a margin of 0.018 on each side that
        // 4000 resamples (standard error 0.0025) do not cross.
        let xs = [7.5, 1.5, 15.0, 4.5, 12.0, 3.0, 16.5, 9.0, 6.0, 13.5, 10.5];
        for seed in 0..5 {
            let ci = median_ci(&xs, 0.95, 4000, seed);
            assert_eq!((ci.lo, ci.estimate, ci.hi), (4.5, 9.0, 13.5), "seed {seed}");
        }
    }

    #[test]
    fn median_ci_is_the_generic_bootstrap_of_the_median() {
        let xs = sample(16, 5);
        assert_eq!(
            median_ci(&xs, 0.9, 300, 3),
            bootstrap_ci(&xs, median, 0.9, 300, 3)
        );
    }

    #[test]
    fn constant_sample_has_a_point_interval() {
        let ci = median_ci(&[5.0; 8], 0.95, 500, 1);
        assert_eq!((ci.estimate, ci.lo, ci.hi), (5.0, 5.0, 5.0));
    }

    #[test]
    fn ninety_five_percent_interval_covers_the_true_median_about_that_often() {
        // Uniform on [10, 20): true median 15. Coverage over 200 samples of 30.
        let mut covered = 0;
        for s in 0..200 {
            let xs = sample(30, 1000 + s);
            if median_ci(&xs, 0.95, 400, s).contains(15.0) {
                covered += 1;
            }
        }
        assert!((170..=200).contains(&covered), "covered {covered}/200");
    }

    #[test]
    fn ratio_of_medians() {
        let b = sample(20, 3);
        let a: Vec<f64> = b.iter().map(|x| 2.0 * x).collect();
        let ci = ratio_of_medians_ci(&a, &b, 0.95, 2000, 9);
        assert!((ci.estimate - 2.0).abs() < 1e-12);
        assert!(ci.contains(2.0), "{ci:?}");
        assert!(!ci.contains(1.0), "{ci:?}");
        let same = ratio_of_medians_ci(&b, &sample(20, 4), 0.95, 2000, 9);
        assert!(same.contains(1.0), "{same:?}");
        assert!(ratio_of_medians_ci(&[], &b, 0.95, 10, 1).estimate.is_nan());
    }
}
