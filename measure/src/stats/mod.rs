//! The statistics of `alloclab compare`, designed as Kalibera and Jones prescribe ("Rigorous
//! benchmarking in reasonable time", ISMM 2013): the process invocation is the unit of
//! repetition, summaries are medians with bootstrap intervals, effects are ratios of medians
//! with their intervals, differences are tested with rank or permutation tests and corrected
//! for the number of comparisons made.
//!
//! Every function is deterministic: resampling takes an explicit seed.
//! `docs/MEASURING.md` defines each statistic as the reports print it.

mod bootstrap;
mod descriptive;
mod equivalence;
mod multiple;
mod pilot;
mod power;
mod rank_test;

pub use bootstrap::{bootstrap_ci, median_ci, ratio_of_medians_ci, ConfidenceInterval};
pub use descriptive::{mad, mean, median, quantile, variance};
pub use equivalence::{tost_ratio, Equivalence};
pub use multiple::holm;
pub use pilot::{pilot, PilotAdvice, PilotCosts};
pub use power::{min_detectable_effect, min_invocations_for, min_two_sided_p};
pub use rank_test::{mann_whitney_u, permutation_test, TestMethod, TestResult};

/// The standard normal distribution, for z quantiles and tail probabilities.
fn std_normal() -> statrs::distribution::Normal {
    statrs::distribution::Normal::new(0.0, 1.0).expect("mean 0, sd 1 is a valid normal")
}
