//! The smallest effect a comparison could have detected, given the noise it observed.
//!
//! A comparison that finds no significant difference says little unless it also says how
//! large a difference would have been found: "no significant difference, and 2% would have
//! been detected" is a result; "no significant difference, and only a 3x change would have
//! been" is a call for more invocations.

use super::descriptive::{mad, median};
use super::rank_test::binomial;
use super::std_normal;
use statrs::distribution::ContinuousCDF;

/// The smallest two-sided p value a Mann-Whitney U test can give for samples of these sizes
/// (the two complete separations, `2 / C(n_a + n_b, n_a)`, at most 1). When it exceeds the
/// significance level no difference, however large, can be found.
pub fn min_two_sided_p(n_a: usize, n_b: usize) -> f64 {
    if n_a == 0 || n_b == 0 {
        return 1.0;
    }
    (2.0 / binomial(n_a + n_b, n_a)).min(1.0)
}

/// The fewest invocations per subject (equal numbers for both) with which a Mann-Whitney U
/// test can reach a two-sided p below `alpha` at all; `None` beyond 10 000.
pub fn min_invocations_for(alpha: f64) -> Option<usize> {
    (1..=10_000).find(|&n| min_two_sided_p(n, n) < alpha)
}

/// The smallest relative difference of medians (`0.05` = 5%) that a comparison of `a` with
/// `b` detects at significance level `alpha` with probability `power`, given the spread the
/// samples show:
///
/// - each median's relative standard error is estimated robustly as
///   `1.2533 * 1.4826 * MAD / |median| / sqrt(n)` (the normal-theory standard error of a
///   median, with the standard deviation estimated by the scaled median absolute deviation);
/// - the log ratio's standard error is `sqrt(se_a^2 + se_b^2)`;
/// - the detectable log ratio is `(z(1 - alpha/2) + z(power)) * se`, returned as
///   `exp(that) - 1`.
///
/// Infinite when the sample sizes cannot reach `alpha` at all ([`min_two_sided_p`]); NaN when
/// a median is zero or a sample is empty.
pub fn min_detectable_effect(a: &[f64], b: &[f64], alpha: f64, power: f64) -> f64 {
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    if min_two_sided_p(a.len(), b.len()) > alpha {
        return f64::INFINITY;
    }
    let relative_se = |xs: &[f64]| {
        let m = median(xs);
        if m == 0.0 {
            f64::NAN
        } else {
            1.2533 * 1.4826 * mad(xs) / m.abs() / (xs.len() as f64).sqrt()
        }
    };
    let se = relative_se(a).hypot(relative_se(b));
    let normal = std_normal();
    let z = normal.inverse_cdf(1.0 - alpha / 2.0) + normal.inverse_cdf(power);
    (z * se).exp() - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_p_of_small_samples() {
        assert!((min_two_sided_p(3, 3) - 0.1).abs() < 1e-15);
        assert!((min_two_sided_p(6, 6) - 2.0 / 924.0).abs() < 1e-15);
        assert_eq!(min_two_sided_p(1, 1), 1.0);
        assert_eq!(min_two_sided_p(0, 4), 1.0);
        // 2 / C(8, 4) = 0.0286 < 0.05 but 2 / C(6, 3) = 0.1 is not.
        assert_eq!(min_invocations_for(0.05), Some(4));
        // 0.05 / 42 = 0.00119: 2 / C(14, 7) = 0.000583 passes, 2 / C(12, 6) = 0.00216 not.
        assert_eq!(min_invocations_for(0.05 / 42.0), Some(7));
        assert_eq!(min_invocations_for(0.0), None);
    }

    #[test]
    fn by_hand() {
        // Both samples: median 10, MAD 1, n = 9 -> relative se 1.2533 * 1.4826 / 10 / 3
        // = 0.061937..., log-ratio se 0.087592..., z = 1.959964 + 0.841621 = 2.801585,
        // effect exp(0.245397...) - 1 = 0.27813...
        let a = [8.0, 9.0, 9.0, 10.0, 10.0, 10.0, 11.0, 11.0, 12.0];
        let se = 1.2533 * 1.4826 / 10.0 / 3.0 * 2f64.sqrt();
        let want = (2.801585 * se).exp() - 1.0;
        let got = min_detectable_effect(&a, &a, 0.05, 0.8);
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    }

    #[test]
    fn shrinks_with_more_invocations_and_less_noise() {
        let noisy: Vec<f64> = (0..10).map(|i| 100.0 + (i % 5) as f64 * 4.0).collect();
        let quiet: Vec<f64> = (0..10).map(|i| 100.0 + (i % 5) as f64).collect();
        let many: Vec<f64> = (0..40).map(|i| 100.0 + (i % 5) as f64 * 4.0).collect();
        let e_noisy = min_detectable_effect(&noisy, &noisy, 0.05, 0.8);
        assert!(min_detectable_effect(&quiet, &quiet, 0.05, 0.8) < e_noisy);
        assert!(min_detectable_effect(&many, &many, 0.05, 0.8) < e_noisy);
        assert!(min_detectable_effect(&[1.0, 2.0], &[1.0, 2.0], 0.05, 0.8).is_infinite());
        assert!(min_detectable_effect(&[], &quiet, 0.05, 0.8).is_nan());
    }
}
