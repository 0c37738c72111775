//! `compare --pilot`: Kalibera and Jones's two-level pilot over a finished run. Each cell's
//! invocations ran several iterations in one process; the first iteration of each is dropped
//! as that process's warm-up, and `stats::pilot` splits the remaining variance into its
//! within-process and between-process parts and advises how many invocations and iterations
//! reach the target precision of the median wall time.

use super::runner::Run;
use super::stats::{self, PilotCosts};
use std::fmt::Write;

/// The advice as Markdown, one row per (workload, threads, subject) cell.
pub fn advise(run: &Run, target_rel_ci_halfwidth: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Pilot: invocations and iterations for a ±{:.1}% 95% interval of the wall time\n",
        target_rel_ci_halfwidth * 100.0
    );
    let _ = writeln!(
        out,
        "Each invocation's first iteration is dropped as its warm-up. Variances are of the \
         wall time in seconds squared; costs in seconds (invocation: process start and set-up).\n"
    );
    let _ = writeln!(
        out,
        "| workload | threads | subject | invocations | iterations | within-process var | \
         between-process var | pilot ±% | predicted ±% | reachable |"
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---:|---:|---:|---:|---|");
    let plan = &run.results.plan;
    for workload in &plan.workloads {
        let mut threads: Vec<usize> = run
            .results
            .measurements
            .iter()
            .filter(|m| &m.workload == workload)
            .map(|m| m.threads)
            .collect();
        threads.sort_unstable();
        threads.dedup();
        for t in threads {
            for subject in &plan.subjects {
                let picked: Vec<usize> = run
                    .results
                    .measurements
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| {
                        !m.warmup
                            && &m.workload == workload
                            && m.threads == t
                            && &m.subject == subject
                    })
                    .map(|(i, _)| i)
                    .collect();
                let samples: Vec<Vec<f64>> = picked
                    .iter()
                    .map(|&i| run.iteration_walls[i].iter().skip(1).copied().collect())
                    .collect();
                let iteration = samples.iter().flatten().sum::<f64>()
                    / samples.iter().map(Vec::len).sum::<usize>().max(1) as f64;
                let invocation = picked
                    .iter()
                    .map(|&i| {
                        run.process_walls[i] - run.iteration_walls[i].iter().skip(1).sum::<f64>()
                    })
                    .sum::<f64>()
                    / picked.len().max(1) as f64;
                let costs = PilotCosts {
                    invocation: invocation.max(0.0),
                    iteration: iteration.max(1e-9),
                    max_iterations: 1000,
                    max_invocations: 1000,
                };
                match stats::pilot(&samples, target_rel_ci_halfwidth, &costs) {
                    Ok(a) => {
                        let _ = writeln!(
                            out,
                            "| {workload} | {t} | {subject} | {} | {} | {:.3e} | {:.3e} | {:.2} | {:.2} | {} |",
                            a.invocations,
                            a.iterations,
                            a.within_invocation_variance,
                            a.between_invocation_variance,
                            a.pilot_rel_ci_halfwidth * 100.0,
                            a.predicted_rel_ci_halfwidth * 100.0,
                            if a.reachable { "yes" } else { "no (capped)" }
                        );
                    }
                    Err(e) => {
                        let _ = writeln!(
                            out,
                            "| {workload} | {t} | {subject} | - | - | - | - | - | - | {e} |"
                        );
                    }
                }
            }
        }
    }
    out
}
