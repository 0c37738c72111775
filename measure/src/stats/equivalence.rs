//! Equivalence: the evidence that two subjects do *not* differ by more than a stated margin,
//! which a test of difference cannot give (a large p says only that no difference was found).
//!
//! Two one-sided tests (TOST) on the ratio of medians: with the margin `m`, the equivalence
//! region is `[1 / (1 + m), 1 + m]` (symmetric on a log scale, so swapping the samples gives
//! the same answer). The null hypotheses "ratio <= 1 / (1 + m)" and "ratio >= 1 + m" are each
//! rejected at level `alpha` when the bootstrap distribution of the ratio puts less than
//! `alpha` beyond the bound, which is the same as the `1 - 2 alpha` bootstrap percentile
//! interval lying strictly inside the region. Both rejected: equivalent at level `alpha`.

use super::bootstrap::{ratio_of_medians_ci, ConfidenceInterval};
use serde::{Deserialize, Serialize};

/// The outcome of an equivalence test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Equivalence {
    /// The margin asked for (`0.02`: within 2% either way).
    pub margin: f64,
    /// The equivalence region's lower bound, `1 / (1 + margin)`.
    pub lower: f64,
    /// Its upper bound, `1 + margin`.
    pub upper: f64,
    /// The ratio of medians `median(a) / median(b)` with its `1 - 2 alpha` interval.
    pub ratio: ConfidenceInterval,
    /// Whether both one-sided tests rejected: the interval lies strictly inside the region.
    pub equivalent: bool,
}

/// TOST equivalence of `median(a) / median(b)` to 1 within `margin`, at level `alpha` (each
/// one-sided test at `alpha`, so the interval is `1 - 2 alpha`: 90% for `alpha = 0.05`).
/// Never equivalent when a sample is empty, a median is zero, the margin is not positive or
/// `alpha` is outside (0, 0.5).
pub fn tost_ratio(
    a: &[f64],
    b: &[f64],
    margin: f64,
    alpha: f64,
    resamples: usize,
    seed: u64,
) -> Equivalence {
    let (lower, upper) = (1.0 / (1.0 + margin), 1.0 + margin);
    let level = 1.0 - 2.0 * alpha;
    let ratio = ratio_of_medians_ci(a, b, level, resamples, seed);
    let valid = margin > 0.0 && alpha > 0.0 && alpha < 0.5;
    let equivalent = valid
        && ratio.lo.is_finite()
        && ratio.hi.is_finite()
        && ratio.lo > lower
        && ratio.hi < upper;
    Equivalence {
        margin,
        lower,
        upper,
        ratio,
        equivalent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloclab_traces::rng::SplitMix64;

    /// `n` values spread uniformly over `centre * [0.99, 1.01)`.
    fn sample(n: usize, centre: f64, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| centre * (0.99 + rng.below(2000) as f64 / 100_000.0))
            .collect()
    }

    #[test]
    fn same_distribution_is_equivalent_within_a_fair_margin() {
        let (a, b) = (sample(30, 100.0, 1), sample(30, 100.0, 2));
        let e = tost_ratio(&a, &b, 0.02, 0.05, 2000, 7);
        assert!(e.equivalent, "{e:?}");
        assert!((e.ratio.level - 0.9).abs() < 1e-12);
        assert!((e.lower - 1.0 / 1.02).abs() < 1e-15 && e.upper == 1.02);
        // Swapping the samples: the same answer (the region is symmetric on a log scale).
        assert!(tost_ratio(&b, &a, 0.02, 0.05, 2000, 7).equivalent);
    }

    #[test]
    fn a_margin_below_the_noise_or_a_real_difference_is_not_equivalence() {
        let (a, b) = (sample(30, 100.0, 1), sample(30, 100.0, 2));
        // The interval of the ratio is wider than 0.01%.
        assert!(!tost_ratio(&a, &b, 0.0001, 0.05, 2000, 7).equivalent);
        // 5% apart, margin 2%: not equivalent, though a difference test would also say so.
        let c = sample(30, 105.0, 3);
        let e = tost_ratio(&c, &b, 0.02, 0.05, 2000, 7);
        assert!(!e.equivalent && e.ratio.lo > 1.02, "{e:?}");
        // Three invocations each of noisy figures: "no difference found", yet not equivalent.
        let (x, y) = ([80.0, 100.0, 125.0], [85.0, 100.0, 120.0]);
        assert!(!tost_ratio(&x, &y, 0.05, 0.05, 2000, 7).equivalent);
    }

    #[test]
    fn degenerate_inputs_are_never_equivalent() {
        let a = sample(10, 100.0, 1);
        assert!(!tost_ratio(&a, &[], 0.5, 0.05, 500, 1).equivalent);
        assert!(!tost_ratio(&a, &[0.0; 10], 0.5, 0.05, 500, 1).equivalent);
        assert!(!tost_ratio(&a, &a, 0.0, 0.05, 500, 1).equivalent);
        assert!(!tost_ratio(&a, &a, 0.5, 0.5, 500, 1).equivalent);
        assert!(tost_ratio(&a, &a, 0.5, 0.05, 500, 1).equivalent);
    }
}
