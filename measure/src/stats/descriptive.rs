//! Descriptive statistics: median, quantiles, mean, variance, median absolute deviation.
//!
//! All take unsorted samples and return NaN for an empty one (no value describes nothing);
//! NaN inputs are a caller's bug and make the result NaN.

/// The `q`-quantile (`0 <= q <= 1`) by linear interpolation between order statistics (the
/// definition R calls type 7 and numpy calls "linear"): with the sorted sample `x[0..n]`,
/// `h = (n - 1) q`, the result is `x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])`.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile_sorted(&sorted, q)
}

/// [`quantile`] of an already sorted sample.
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The median: the middle value, or the mean of the two middle values of an even sample.
pub fn median(xs: &[f64]) -> f64 {
    median_in_place(&mut xs.to_vec())
}

/// [`median`] of a scratch buffer, reordering it. Selection instead of a full sort, and no
/// allocation: the bootstrap calls this thousands of times per interval.
pub(crate) fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (below, &mut upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        let lower = below.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// The arithmetic mean.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The unbiased sample variance (divisor `n - 1`); NaN below two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return f64::NAN;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// The median absolute deviation from the median, unscaled (multiply by 1.4826 for a
/// consistent estimate of a normal distribution's standard deviation).
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let deviations: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&deviations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[5.0, -1.0]), 2.0);
        let xs = [9.0, 2.0, 7.0, 4.0, 4.0, 8.0, 1.0, 3.0];
        assert_eq!(median(&xs), quantile(&xs, 0.5));
    }

    #[test]
    fn quantiles_match_type_7() {
        // numpy.quantile([1, 2, 4, 8, 16], [0, .1, .25, .9, 1]) = [1, 1.4, 2, 12.8, 16]
        let xs = [16.0, 1.0, 8.0, 2.0, 4.0];
        let expected = [
            (0.0, 1.0),
            (0.1, 1.4),
            (0.25, 2.0),
            (0.9, 12.8),
            (1.0, 16.0),
        ];
        for (q, want) in expected {
            assert!((quantile(&xs, q) - want).abs() < 1e-12, "q={q}");
        }
        assert!(quantile(&xs, 1.5).is_nan());
    }

    #[test]
    fn mean_variance_mad() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        // statistics.variance of the same = 32/7
        assert!((variance(&xs) - 32.0 / 7.0).abs() < 1e-12);
        // deviations from the median 4.5: 2.5 .5 .5 .5 .5 .5 2.5 4.5 -> median 0.5
        assert_eq!(mad(&xs), 0.5);
        assert!(variance(&[1.0]).is_nan());
    }
}
