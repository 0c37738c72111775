//! Two-sample tests of "no difference": Mann-Whitney U and a permutation test on the
//! difference of medians. Both two-sided, both free of any assumption about the shape of
//! the distributions (timings are skewed and often bimodal).

use super::descriptive::median;
use super::std_normal;
use alloclab_traces::rng::SplitMix64;
use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

/// Which test (and which way of computing its p value) produced a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestMethod {
    /// Mann-Whitney U, p from the exact distribution of U (small samples, no ties).
    MannWhitneyExact,
    /// Mann-Whitney U, p from the normal approximation with tie and continuity corrections.
    MannWhitneyNormal,
    /// Mann-Whitney U with ties, p from the exact permutation distribution of the first
    /// sample's sum of mid-ranks (every split of the pooled sample counted, by a dynamic
    /// programme over rank sums).
    MannWhitneyExactTies,
    /// Permutation test, every split of the pooled sample enumerated.
    PermutationExact,
    /// Permutation test, random splits.
    PermutationMonteCarlo,
}

/// A test's statistic and two-sided p value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Mann-Whitney: U of the first sample (pairs `(a_i, b_j)` with `a_i > b_j`, ties
    /// counting one half). Permutation: `median(a) - median(b)`.
    pub statistic: f64,
    /// Two-sided p value; 1 when a sample is empty.
    pub p: f64,
    /// How it was computed.
    pub method: TestMethod,
}

/// Largest `n_a * n_b` for which the exact distribution of U is computed.
const EXACT_U_MAX_PAIRS: usize = 2500;

/// Largest amount of work (element x subset size x rank-sum range, see [`exact_tied_p`]) for
/// which the permutation distribution of a tied rank sum is counted (tens of milliseconds at
/// most, in optimised builds). A pooled sample of 60 split evenly is about 6.6 million steps.
const EXACT_TIES_MAX_WORK: u64 = 20_000_000;

/// Mann-Whitney U test, two-sided. Without ties and with `n_a * n_b <= 2500` the p value comes
/// from the exact distribution of U. With ties, while counting is tractable
/// (`EXACT_TIES_MAX_WORK`), it comes from the exact permutation distribution of the rank sum
/// with mid-ranks: the share of the `C(n_a + n_b, n_a)` splits of the pooled sample whose rank
/// sum lies at least as far from its mean as the observed one. Otherwise from the normal
/// approximation with the tie correction of the variance and a continuity correction of one
/// half (the same choices as scipy's `mannwhitneyu` with `method="asymptotic"`).
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> TestResult {
    let (n_a, n_b) = (a.len(), b.len());
    if n_a == 0 || n_b == 0 {
        return TestResult {
            statistic: f64::NAN,
            p: 1.0,
            method: TestMethod::MannWhitneyNormal,
        };
    }
    let (rank_sum_a, tie_term) = rank_sum_of_first(a, b);
    let u_a = rank_sum_a - (n_a * (n_a + 1)) as f64 / 2.0;
    if tie_term == 0.0 && n_a * n_b <= EXACT_U_MAX_PAIRS {
        let dist = exact_u_distribution(n_a, n_b);
        let u_max = u_a.max((n_a * n_b) as f64 - u_a);
        // P(U >= u_max); u_max is an integer without ties.
        let upper: f64 = dist[u_max.round() as usize..].iter().sum();
        return TestResult {
            statistic: u_a,
            p: (2.0 * upper).min(1.0),
            method: TestMethod::MannWhitneyExact,
        };
    }
    if tie_term != 0.0 {
        if let Some(p) = exact_tied_p(a, b) {
            return TestResult {
                statistic: u_a,
                p,
                method: TestMethod::MannWhitneyExactTies,
            };
        }
    }
    TestResult {
        statistic: u_a,
        p: normal_p(u_a, n_a, n_b, tie_term),
        method: TestMethod::MannWhitneyNormal,
    }
}

/// The two-sided p of `U = u_a` from the normal approximation, with the tie correction of the
/// variance (`tie_term = sum(t^3 - t)`) and a continuity correction of one half.
fn normal_p(u_a: f64, n_a: usize, n_b: usize, tie_term: f64) -> f64 {
    let pairs = (n_a * n_b) as f64;
    let u_max = u_a.max(pairs - u_a);
    let n = (n_a + n_b) as f64;
    let var = pairs / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        1.0
    } else {
        let z = (u_max - pairs / 2.0 - 0.5) / var.sqrt();
        (2.0 * (1.0 - std_normal().cdf(z))).clamp(0.0, 1.0)
    }
}

/// The doubled mid-rank of every pooled value, first sample first (`a` then `b`, in their
/// order). A tie group occupying ranks `s ..= e` shares the mid-rank `(s + e) / 2`, so twice
/// it, `s + e`, is an integer: sums of doubled mid-ranks are compared exactly.
fn doubled_mid_ranks(a: &[f64], b: &[f64]) -> Vec<u64> {
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&x, &y| pooled[x].total_cmp(&pooled[y]));
    let mut ranks = vec![0; pooled.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && pooled[order[end]] == pooled[order[start]] {
            end += 1;
        }
        // Ranks start+1 ..= end; twice their mean is start + 1 + end.
        for &k in &order[start..end] {
            ranks[k] = (start + 1 + end) as u64;
        }
        start = end;
    }
    ranks
}

/// The exact two-sided p value of the rank sum of `a` under the permutation distribution
/// (every split of the pooled sample into groups of the original sizes equally likely), with
/// mid-ranks for ties; `None` when counting is beyond `EXACT_TIES_MAX_WORK`.
///
/// With `r_1 .. r_n` the doubled mid-ranks of the pooled sample and `k` the size of the
/// smaller sample, `count[j][s]` is the number of `j`-element subsets of the ranks seen so far
/// whose sum is `s`; adding rank `r` adds `count[j - 1][s - r]` to `count[j][s]`. The mean of
/// the doubled rank sum of `k` elements is `k (n + 1)`, and the p value is the share of the
/// `C(n, k)` subsets whose sum is at least as far from it as the smaller sample's own. (The
/// distribution with ties need not be symmetric, so both tails are counted, not one doubled.)
/// Counts are exact integers (`u128` holds `C(n, k)` for every size the work bound admits).
fn exact_tied_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let ranks = doubled_mid_ranks(a, b);
    let n = ranks.len();
    // The smaller sample's rank sum: the same distance from its mean as the other's.
    let (k, observed): (usize, u64) = if a.len() <= b.len() {
        (a.len(), ranks[..a.len()].iter().sum())
    } else {
        (b.len(), ranks[a.len()..].iter().sum())
    };
    let max_sum: u64 = ranks.iter().sum();
    let work = (n as u64)
        .saturating_mul(k as u64)
        .saturating_mul(max_sum + 1);
    if work > EXACT_TIES_MAX_WORK {
        return None;
    }
    let width = max_sum as usize + 1;
    // count[j * width + s]
    let mut count = vec![0u128; (k + 1) * width];
    count[0] = 1;
    let mut reachable = 0usize; // largest sum reached so far
    for (i, &r) in ranks.iter().enumerate() {
        let r = r as usize;
        reachable += r;
        for j in (1..=k.min(i + 1)).rev() {
            let (lower, upper) = count.split_at_mut(j * width);
            let from = &lower[(j - 1) * width..];
            let to = &mut upper[..width];
            for s in (r..=reachable).rev() {
                to[s] += from[s - r];
            }
        }
    }
    let mean = (k * (n + 1)) as i128;
    let distance = (observed as i128 - mean).abs();
    let last = &count[k * width..];
    let (mut extreme, mut total) = (0u128, 0u128);
    for (s, &c) in last.iter().enumerate() {
        total += c;
        if (s as i128 - mean).abs() >= distance {
            extreme += c;
        }
    }
    Some((extreme as f64 / total as f64).min(1.0))
}

/// The sum of the first sample's ranks in the pooled sample (ties get their mean rank) and
/// the tie term `sum(t^3 - t)` over groups of `t` equal values.
fn rank_sum_of_first(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum, mut tie_term) = (0.0, 0.0);
    let mut start = 0;
    while start < pooled.len() {
        let mut end = start + 1;
        while end < pooled.len() && pooled[end].0 == pooled[start].0 {
            end += 1;
        }
        // Ranks start+1 ..= end share their mean.
        let mean_rank = (start + 1 + end) as f64 / 2.0;
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        rank_sum += mean_rank * pooled[start..end].iter().filter(|p| p.1).count() as f64;
        start = end;
    }
    (rank_sum, tie_term)
}

/// The probabilities of `U = 0 ..= n_a n_b` when both samples come from one continuous
/// distribution. The largest of the `i + j` pooled values belongs to the first sample with
/// probability `i / (i + j)`, and is then above all `j` values of the second:
/// `P_{i,j}(u) = i/(i+j) P_{i-1,j}(u - j) + j/(i+j) P_{i,j-1}(u)`.
fn exact_u_distribution(n_a: usize, n_b: usize) -> Vec<f64> {
    let len = n_a * n_b + 1;
    // row[j] = distribution for (i, j) of the current i.
    let mut row: Vec<Vec<f64>> = (0..=n_b)
        .map(|_| {
            let mut d = vec![0.0; len];
            d[0] = 1.0;
            d
        })
        .collect();
    for i in 1..=n_a {
        // j = 0: U is 0 whatever i; row[0] already is.
        for j in 1..=n_b {
            let w_a = i as f64 / (i + j) as f64;
            let w_b = j as f64 / (i + j) as f64;
            let mut next = vec![0.0; len];
            for (u, slot) in next.iter_mut().enumerate().take(i * j + 1) {
                let from_a = if u >= j { row[j][u - j] } else { 0.0 };
                *slot = w_a * from_a + w_b * row[j - 1][u];
            }
            row[j] = next;
        }
    }
    row.pop().expect("n_b + 1 rows")
}

/// Largest pooled size whose splits are enumerated (2^20 masks at most).
const EXACT_PERMUTATION_MAX_POOLED: usize = 20;

/// Permutation test of `median(a) - median(b)`, two-sided: the p value is the share of splits
/// of the pooled sample into groups of the original sizes whose difference is at least as
/// large in absolute value as the observed one. Every split is enumerated when there are no
/// more than `resamples` of them; otherwise `resamples` random splits are drawn (seeded) and
/// `p = (1 + count) / (1 + resamples)`, which never reports an impossible zero.
pub fn permutation_test(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> TestResult {
    let (n_a, n_b) = (a.len(), b.len());
    if n_a == 0 || n_b == 0 {
        return TestResult {
            statistic: f64::NAN,
            p: 1.0,
            method: TestMethod::PermutationExact,
        };
    }
    let observed = median(a) - median(b);
    let threshold = observed.abs() * (1.0 - 1e-12);
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let n = pooled.len();
    let (mut group_a, mut group_b) = (Vec::with_capacity(n_a), Vec::with_capacity(n_b));
    let extreme = |group_a: &[f64], group_b: &[f64]| -> bool {
        (median(group_a) - median(group_b)).abs() >= threshold
    };
    if n <= EXACT_PERMUTATION_MAX_POOLED && binomial(n, n_a) <= resamples as f64 {
        let (mut count, mut total) = (0u64, 0u64);
        for mask in 0u32..(1u32 << n) {
            if mask.count_ones() as usize != n_a {
                continue;
            }
            group_a.clear();
            group_b.clear();
            for (k, &x) in pooled.iter().enumerate() {
                if mask & (1 << k) != 0 {
                    group_a.push(x);
                } else {
                    group_b.push(x);
                }
            }
            total += 1;
            count += u64::from(extreme(&group_a, &group_b));
        }
        return TestResult {
            statistic: observed,
            p: count as f64 / total as f64,
            method: TestMethod::PermutationExact,
        };
    }
    let mut rng = SplitMix64::new(seed);
    let mut shuffled = pooled;
    let mut count = 0u64;
    for _ in 0..resamples {
        // Partial Fisher-Yates: the first n_a positions become a uniform random subset.
        for k in 0..n_a {
            let pick = k + rng.below((n - k) as u64) as usize;
            shuffled.swap(k, pick);
        }
        count += u64::from(extreme(&shuffled[..n_a], &shuffled[n_a..]));
    }
    TestResult {
        statistic: observed,
        p: (1 + count) as f64 / (1 + resamples) as f64,
        method: TestMethod::PermutationMonteCarlo,
    }
}

/// `n choose k` as a float (exact below 2^53).
pub(crate) fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(x: f64, y: f64, tol: f64) -> bool {
        (x - y).abs() <= tol
    }

    // Reference values: scipy.stats.mannwhitneyu (scipy 1.17), two-sided.

    #[test]
    fn exact_small_samples() {
        let r = mann_whitney_u(&[19.0, 22.0, 16.0, 29.0, 24.0], &[20.0, 11.0, 17.0, 12.0]);
        assert_eq!(r.method, TestMethod::MannWhitneyExact);
        assert_eq!(r.statistic, 17.0);
        assert!(close(r.p, 0.1111111111111111, 1e-12), "{r:?}");

        // Complete separation of 6 and 6: 2 / C(12, 6) = 0.0021645...
        let a = [1.1, 2.2, 3.3, 4.4, 5.5, 6.6];
        let b = [7.7, 8.8, 9.9, 10.1, 11.2, 12.3];
        let r = mann_whitney_u(&a, &b);
        assert_eq!(r.statistic, 0.0);
        assert!(close(r.p, 0.0021645021645021645, 1e-14), "{r:?}");
        assert!(close(mann_whitney_u(&b, &a).p, r.p, 1e-15));

        let a = [0.8, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let b = [1.15, 0.88, 0.9, 0.74, 1.21];
        let r = mann_whitney_u(&a, &b);
        assert_eq!(r.statistic, 35.0);
        assert!(close(r.p, 0.2544122544122544, 1e-12), "{r:?}");
    }

    #[test]
    fn exact_distribution_sums_to_one_and_is_symmetric() {
        let d = exact_u_distribution(7, 9);
        assert_eq!(d.len(), 64);
        assert!(close(d.iter().sum::<f64>(), 1.0, 1e-12));
        for u in 0..d.len() {
            assert!(close(d[u], d[63 - u], 1e-15));
        }
        // P(U = 0) = 1 / C(16, 7)
        assert!(close(d[0], 1.0 / 11440.0, 1e-18));
    }

    #[test]
    fn normal_approximation_with_ties() {
        // Beyond the exact count's bound (20 and 25 values), so the approximation answers.
        let a: Vec<f64> = (0..20).map(|i| f64::from(i / 3)).collect();
        let b: Vec<f64> = (0..25).map(|i| f64::from(i / 3 + 2)).collect();
        assert!(exact_tied_p(&a, &b).is_some(), "45 values are tractable");
        let a: Vec<f64> = (0..40).map(|i| f64::from(i / 3)).collect();
        let b: Vec<f64> = (0..45).map(|i| f64::from(i / 3 + 2)).collect();
        assert_eq!(exact_tied_p(&a, &b), None, "85 values are not");
        let r = mann_whitney_u(&a, &b);
        assert_eq!(r.method, TestMethod::MannWhitneyNormal);
        let (rank_sum, tie_term) = rank_sum_of_first(&a, &b);
        assert_eq!(r.statistic, rank_sum - 40.0 * 41.0 / 2.0);
        assert!(tie_term > 0.0);
        // The approximation by hand: z = (|U - n_a n_b / 2| - 1/2) / sd.
        let (na, nb, n) = (40.0, 45.0, 85.0);
        let var = na * nb / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
        let z = ((r.statistic - na * nb / 2.0).abs() - 0.5) / f64::sqrt(var);
        let p = 2.0 * (1.0 - std_normal().cdf(z));
        assert!(close(r.p, p, 1e-12), "{r:?} {p}");
    }

    /// The two-sided p of the rank sum of `a` by enumerating every split of the pooled
    /// sample, ranked afresh each time (independent of the counting in `exact_tied_p`).
    fn brute_force_p(a: &[f64], b: &[f64]) -> f64 {
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let (n, k) = (pooled.len(), a.len());
        let mean = k as f64 * (n + 1) as f64 / 2.0;
        let observed = (rank_sum_of_first(a, b).0 - mean).abs();
        let (mut extreme, mut total) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != k {
                continue;
            }
            let (mut x, mut y) = (Vec::new(), Vec::new());
            for (i, &v) in pooled.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    x.push(v);
                } else {
                    y.push(v);
                }
            }
            total += 1;
            // Rank sums are multiples of 1/2: a tolerance far below that is exact.
            if (rank_sum_of_first(&x, &y).0 - mean).abs() >= observed - 1e-9 {
                extreme += 1;
            }
        }
        extreme as f64 / total as f64
    }

    #[test]
    fn exact_with_ties_complete_separation_by_hand() {
        // 7 against 7, every value of `a` below every value of `b`, ties on both sides. Only
        // the observed split and its mirror image are as extreme: p = 2 / C(14, 7) = 2 / 3432.
        let a = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 3.0];
        let b = [4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 6.0];
        let r = mann_whitney_u(&a, &b);
        assert_eq!(r.method, TestMethod::MannWhitneyExactTies);
        assert_eq!(r.statistic, 0.0);
        assert!(close(r.p, 2.0 / 3432.0, 1e-15), "{r:?}");
        let r = mann_whitney_u(&b, &a);
        assert_eq!(r.statistic, 49.0);
        assert!(close(r.p, 2.0 / 3432.0, 1e-15), "{r:?}");
        assert_eq!(brute_force_p(&a, &b), r.p);
    }

    #[test]
    fn exact_with_ties_matches_enumeration_when_samples_overlap() {
        // Page-granular figures: many ties, across the two samples too.
        let cases: [(&[f64], &[f64]); 4] = [
            (
                &[4096.0, 8192.0, 8192.0, 12288.0, 12288.0, 16384.0, 20480.0],
                &[8192.0, 12288.0, 16384.0, 16384.0, 20480.0, 20480.0, 24576.0],
            ),
            (
                &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0],
                &[3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0, 8.0],
            ),
            // Unequal sizes, the larger first (the count takes the smaller sample).
            (
                &[2.0, 2.0, 2.0, 3.0, 5.0, 5.0, 7.0, 7.0, 7.0],
                &[1.0, 2.0, 3.0, 3.0, 4.0],
            ),
            // One tie group holding most of the data: a lopsided distribution.
            (
                &[1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0],
                &[1.0, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0],
            ),
        ];
        for (a, b) in cases {
            let r = mann_whitney_u(a, b);
            assert_eq!(r.method, TestMethod::MannWhitneyExactTies, "{a:?} {b:?}");
            let expected = brute_force_p(a, b);
            assert!(
                close(r.p, expected, 1e-12),
                "{a:?} {b:?}: {r:?}, expected {expected}"
            );
            assert!(
                close(mann_whitney_u(b, a).p, r.p, 1e-12),
                "symmetric in a, b"
            );
        }
    }

    #[test]
    fn doubled_mid_ranks_by_hand() {
        // Pooled 3, 1, 3 | 2, 3: ranks 1 (1), 2 (2), 3-5 (3, mid-rank 4).
        assert_eq!(
            doubled_mid_ranks(&[3.0, 1.0, 3.0], &[2.0, 3.0]),
            [8, 2, 8, 4, 8]
        );
    }

    #[test]
    fn normal_approximation_larger_samples() {
        // numpy default_rng(1): normal(10, 1, 30) and normal(10.5, 1, 35), rounded to 3
        // places (9.518 occurs in both, so the exact method does not apply).
        let x = [
            10.346, 10.822, 10.33, 8.697, 10.905, 10.446, 9.463, 10.581, 10.365, 10.294, 10.028,
            10.547, 9.264, 9.837, 9.518, 10.599, 10.04, 9.708, 9.218, 9.743, 10.008, 9.724, 11.294,
            11.007, 7.289, 8.111, 9.825, 9.578, 10.214, 10.217,
        ];
        let y = [
            12.618, 9.388, 10.122, 12.543, 11.147, 11.163, 9.986, 8.852, 10.667, 10.609, 9.273,
            9.817, 10.428, 9.555, 10.402, 10.595, 10.536, 9.994, 11.094, 11.391, 10.821, 9.682,
            11.232, 9.999, 11.379, 9.428, 11.414, 10.48, 9.251, 10.186, 10.554, 10.773, 9.518,
            9.393, 10.7,
        ];
        let r = mann_whitney_u(&x, &y);
        assert_eq!(r.statistic, 384.5);
        // 65 values are within the exact count's reach; the approximation (scipy's value)
        // is close to the exact p at these sizes.
        assert_eq!(r.method, TestMethod::MannWhitneyExactTies);
        let tie_term = rank_sum_of_first(&x, &y).1;
        let approx = normal_p(r.statistic, x.len(), y.len(), tie_term);
        assert!(close(approx, 0.06543349086092133, 1e-10), "{approx}");
        assert!(close(r.p, approx, 0.005), "{r:?} against {approx}");
        assert_ne!(r.p, approx);
    }

    #[test]
    fn identical_constant_samples_are_no_evidence() {
        let r = mann_whitney_u(&[4.0; 5], &[4.0; 5]);
        assert_eq!(r.p, 1.0);
        assert_eq!(mann_whitney_u(&[], &[1.0]).p, 1.0);
    }

    #[test]
    fn permutation_exact_by_hand() {
        // Of the C(8, 4) = 70 splits four reach |4|: {1,2,3,4} and {1,2,3,5} against the
        // rest (medians 2.5 and 6.5), and their mirror images.
        let r = permutation_test(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 1000, 1);
        assert_eq!(r.method, TestMethod::PermutationExact);
        assert_eq!(r.statistic, -4.0);
        assert!(close(r.p, 4.0 / 70.0, 1e-15), "{r:?}");
    }

    #[test]
    fn permutation_monte_carlo_agrees_with_exact() {
        let a = [3.1, 4.5, 2.2, 5.0, 3.3, 4.1];
        let b = [4.9, 5.5, 3.9, 6.1, 5.2, 4.4];
        let exact = permutation_test(&a, &b, 10_000, 1);
        assert_eq!(exact.method, TestMethod::PermutationExact);
        let mc = permutation_test(&a, &b, 500, 1);
        assert_eq!(mc.method, TestMethod::PermutationMonteCarlo);
        assert!(close(exact.p, mc.p, 0.05), "{exact:?} {mc:?}");
        assert_eq!(mc, permutation_test(&a, &b, 500, 1), "seeded");
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial(12, 6), 924.0);
        assert_eq!(binomial(5, 0), 1.0);
        assert_eq!(binomial(16, 7), 11440.0);
    }
}
