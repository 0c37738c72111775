//! Pilot mode: how many process invocations, and how many iterations in each, a target
//! precision needs (Kalibera and Jones, "Rigorous benchmarking in reasonable time", ISMM
//! 2013, the two-level case).
//!
//! A pilot run measures `n` invocations of `r` iterations each (warm-up iterations already
//! removed). Iterations within one process share its memory layout, so they vary less than
//! invocations do; the pilot separates the two variance components, then chooses the number
//! of iterations that buys the most precision per second and the number of invocations that
//! reaches the target.

use super::descriptive::mean;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// What a measurement costs, and how far the advice may go.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PilotCosts {
    /// Seconds of one invocation before its first measured iteration (process start,
    /// set-up, warm-up).
    pub invocation: f64,
    /// Seconds of one measured iteration.
    pub iteration: f64,
    /// The most iterations per invocation to advise.
    pub max_iterations: usize,
    /// The most invocations to advise.
    pub max_invocations: usize,
}

/// The pilot's findings and advice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PilotAdvice {
    /// Invocations to run.
    pub invocations: usize,
    /// Measured iterations per invocation.
    pub iterations: usize,
    /// Grand mean of the pilot.
    pub mean: f64,
    /// Variance between iterations of one invocation (`T1^2 = S1^2`).
    pub within_invocation_variance: f64,
    /// Variance between invocations not explained by iteration noise (`T2^2 = S2^2 - S1^2/r`,
    /// at least 0).
    pub between_invocation_variance: f64,
    /// Half-width of the pilot's own 95% interval of the mean, relative to the mean.
    pub pilot_rel_ci_halfwidth: f64,
    /// The half-width the advice is predicted to reach, relative to the mean.
    pub predicted_rel_ci_halfwidth: f64,
    /// The half-width asked for, relative to the mean.
    pub target_rel_ci_halfwidth: f64,
    /// Whether the target is reached within `max_invocations` (if not, `invocations` is
    /// that maximum).
    pub reachable: bool,
    /// Invocations and iterations the pilot had.
    pub pilot_invocations: usize,
    /// Iterations per invocation used (the smallest count among the pilot's invocations).
    pub pilot_iterations: usize,
}

impl std::fmt::Display for PilotAdvice {
    /// Two lines for a terminal: what the pilot found, and what to run.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total = self.within_invocation_variance / self.pilot_iterations as f64
            + self.between_invocation_variance;
        let between_share = if total > 0.0 {
            100.0 * self.between_invocation_variance / total
        } else {
            0.0
        };
        writeln!(
            f,
            "pilot: {} invocations x {} iterations, mean {:.6}, 95% CI +/-{:.2}%; {:.0}% of the \
             variance of an invocation's mean is between invocations",
            self.pilot_invocations,
            self.pilot_iterations,
            self.mean,
            100.0 * self.pilot_rel_ci_halfwidth,
            between_share
        )?;
        write!(
            f,
            "advice: {} invocations x {} iterations for +/-{:.2}% (predicted +/-{:.2}%){}",
            self.invocations,
            self.iterations,
            100.0 * self.target_rel_ci_halfwidth,
            100.0 * self.predicted_rel_ci_halfwidth,
            if self.reachable {
                ""
            } else {
                "; the target is not reachable within the invocation limit"
            }
        )
    }
}

/// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64)
        .expect("positive degrees of freedom")
        .inverse_cdf(0.975)
}

/// Kalibera and Jones's two-level advice. `samples[i]` holds invocation `i`'s measured
/// iterations; invocations with more iterations than the fewest are cut to that count (the
/// estimators assume a balanced design). With `S1^2` the mean within-invocation variance,
/// `S2^2` the variance of the invocation means and `r` the iterations per invocation:
///
/// - `T1^2 = S1^2` and `T2^2 = max(0, S2^2 - S1^2 / r)` estimate the two components;
/// - iterations `r' = ceil(sqrt(c_invocation T1^2 / (c_iteration T2^2)))` (the cost-optimal
///   split; `max_iterations` when invocations add no variance of their own);
/// - invocations: the smallest `n' >= 2` with
///   `t(0.975, n'-1) sqrt((T2^2 + T1^2 / r') / n') <= target * mean`.
///
/// Errors on fewer than 2 invocations, fewer than 2 iterations, non-finite values, a zero
/// mean, or a target that is not positive.
pub fn pilot(
    samples: &[Vec<f64>],
    target_rel_ci_halfwidth: f64,
    costs: &PilotCosts,
) -> Result<PilotAdvice, String> {
    let n = samples.len();
    if n < 2 {
        return Err(format!(
            "pilot: {n} invocation(s); the variance between invocations needs at least 2"
        ));
    }
    let r = samples.iter().map(Vec::len).min().unwrap_or(0);
    if r < 2 {
        return Err(format!(
            "pilot: an invocation has {r} iteration(s); the variance within one needs at least 2"
        ));
    }
    if !(target_rel_ci_halfwidth > 0.0 && target_rel_ci_halfwidth.is_finite()) {
        return Err(format!(
            "pilot: target half-width {target_rel_ci_halfwidth} is not a positive number"
        ));
    }
    if !(costs.invocation >= 0.0 && costs.iteration > 0.0) {
        return Err("pilot: costs must be non-negative, and an iteration's positive".into());
    }
    let rows: Vec<&[f64]> = samples.iter().map(|s| &s[..r]).collect();
    if rows.iter().flat_map(|s| s.iter()).any(|x| !x.is_finite()) {
        return Err("pilot: a sample is not a finite number".into());
    }
    let means: Vec<f64> = rows.iter().map(|s| mean(s)).collect();
    let grand = mean(&means);
    if grand == 0.0 {
        return Err("pilot: the mean is 0, so a relative precision means nothing".into());
    }
    let s1_sq = rows
        .iter()
        .zip(&means)
        .map(|(s, m)| s.iter().map(|x| (x - m) * (x - m)).sum::<f64>())
        .sum::<f64>()
        / (n * (r - 1)) as f64;
    let s2_sq = means.iter().map(|m| (m - grand) * (m - grand)).sum::<f64>() / (n - 1) as f64;
    let t1_sq = s1_sq;
    let t2_sq = (s2_sq - s1_sq / r as f64).max(0.0);

    let max_iterations = costs.max_iterations.max(1);
    let iterations = if t2_sq == 0.0 {
        max_iterations
    } else {
        let r_opt = (costs.invocation * t1_sq / (costs.iteration * t2_sq))
            .sqrt()
            .ceil();
        (r_opt as usize).clamp(1, max_iterations)
    };
    let invocation_mean_var = t2_sq + t1_sq / iterations as f64;
    let rel_halfwidth =
        |k: usize| t975(k - 1) * (invocation_mean_var / k as f64).sqrt() / grand.abs();
    let max_invocations = costs.max_invocations.max(2);
    let found = (2..=max_invocations).find(|&k| rel_halfwidth(k) <= target_rel_ci_halfwidth);
    let invocations = found.unwrap_or(max_invocations);
    Ok(PilotAdvice {
        invocations,
        iterations,
        mean: grand,
        within_invocation_variance: t1_sq,
        between_invocation_variance: t2_sq,
        pilot_rel_ci_halfwidth: t975(n - 1) * (s2_sq / n as f64).sqrt() / grand.abs(),
        predicted_rel_ci_halfwidth: rel_halfwidth(invocations),
        target_rel_ci_halfwidth,
        reachable: found.is_some(),
        pilot_invocations: n,
        pilot_iterations: r,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const COSTS: PilotCosts = PilotCosts {
        invocation: 10.0,
        iteration: 1.0,
        max_iterations: 1000,
        max_invocations: 10_000,
    };

    #[test]
    fn by_hand() {
        // Means 2 6 10, grand 6; S1^2 = 6 / 3 = 2; S2^2 = 32 / 2 = 16; T2^2 = 16 - 2/2 = 15.
        // r' = ceil(sqrt(10 * 2 / 15)) = 2; invocation-mean variance 15 + 1 = 16; the
        // smallest n with t(.975, n-1) * 4 / sqrt(n) / 6 <= 0.1 is 174 (scipy: 0.09975...);
        // the pilot's own: t(.975, 2) * 4 / sqrt(3) / 6 = 1.65609...
        let samples = vec![vec![1.0, 3.0], vec![5.0, 7.0], vec![9.0, 11.0]];
        let advice = pilot(&samples, 0.1, &COSTS).unwrap();
        assert_eq!(advice.mean, 6.0);
        assert!((advice.within_invocation_variance - 2.0).abs() < 1e-12);
        assert!((advice.between_invocation_variance - 15.0).abs() < 1e-12);
        assert_eq!(advice.iterations, 2);
        assert_eq!(advice.invocations, 174);
        assert!(advice.reachable);
        assert!((advice.predicted_rel_ci_halfwidth - 0.09975414593110314).abs() < 1e-9);
        assert!((advice.pilot_rel_ci_halfwidth - 1.6560918078335536).abs() < 1e-9);
        let text = advice.to_string();
        assert!(
            text.contains("advice: 174 invocations x 2 iterations for +/-10.00%"),
            "{text}"
        );
        // Invocation-mean variance 2/2 + 15 = 16, of which 15 between invocations.
        assert!(text.contains("94% of the variance"), "{text}");
    }

    #[test]
    fn no_variance_between_invocations_means_iterations_are_enough() {
        // Identical invocation means: all variance is within invocations.
        let samples = vec![vec![9.0, 11.0, 10.0]; 4];
        let advice = pilot(&samples, 0.01, &COSTS).unwrap();
        assert_eq!(advice.between_invocation_variance, 0.0);
        assert_eq!(advice.iterations, 1000);
        // Invocation-mean variance 1/1000: t(.975, 1) sqrt(0.001/2) / 10 = 0.028 misses 1%,
        // t(.975, 2) sqrt(0.001/3) / 10 = 0.0079 reaches it.
        assert_eq!(advice.invocations, 3);
    }

    #[test]
    fn unreachable_targets_say_so() {
        let samples = vec![vec![1.0, 3.0], vec![5.0, 7.0], vec![9.0, 11.0]];
        let costs = PilotCosts {
            max_invocations: 50,
            ..COSTS
        };
        let advice = pilot(&samples, 0.1, &costs).unwrap();
        assert!(!advice.reachable);
        assert_eq!(advice.invocations, 50);
        assert!(advice.predicted_rel_ci_halfwidth > 0.1);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(pilot(&[vec![1.0, 2.0]], 0.1, &COSTS).is_err());
        assert!(pilot(&[vec![1.0], vec![2.0, 3.0]], 0.1, &COSTS).is_err());
        assert!(pilot(&[vec![1.0, 2.0], vec![2.0, 3.0]], 0.0, &COSTS).is_err());
        assert!(pilot(&[vec![1.0, f64::NAN], vec![2.0, 3.0]], 0.1, &COSTS).is_err());
        assert!(pilot(&[vec![-1.0, 1.0], vec![1.0, -1.0]], 0.1, &COSTS).is_err());
    }
}
