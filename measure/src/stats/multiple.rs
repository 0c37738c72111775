//! Correction for making many comparisons at once.

/// Holm-Bonferroni adjusted p values, in the order given: with the `m` p values sorted
/// ascending, the `k`-th (from 0) is multiplied by `m - k`, a running maximum keeps the
/// adjusted values in the same order as the raw ones, and each is capped at 1. Rejecting
/// every hypothesis whose adjusted p is below `alpha` keeps the chance of any false
/// rejection among all `m` at most `alpha`. NaN p values are treated as 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    let value = |i: usize| if p[i].is_nan() { 1.0 } else { p[i] };
    order.sort_by(|&i, &j| value(i).total_cmp(&value(j)));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * value(i)).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_example() {
        // Four tests, p = .01 .04 .03 .005 (Holm 1979 style): sorted .005 .01 .03 .04 times
        // 4 3 2 1 = .02 .03 .06 .04 -> monotone .02 .03 .06 .06
        // (R: p.adjust(c(.01, .04, .03, .005), "holm") = 0.03 0.06 0.06 0.02).
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
    }

    #[test]
    fn caps_at_one_and_keeps_single_values() {
        assert_eq!(holm(&[0.3, 0.6]), vec![0.6, 0.6]);
        assert_eq!(holm(&[0.9, 0.8, 0.7]), vec![1.0, 1.0, 1.0]);
        assert_eq!(holm(&[0.02]), vec![0.02]);
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert!(holm(&[]).is_empty());
    }
}
