//! # The `alloclab` command line
//!
//! The whole tool as a library, so that a policy author's own `fn main` gets every command
//! with their configs beside the built-in ones:
//!
//! ```no_run
//! use alloclab::policies::{configs::Using, Lifo, ThreadLocal};
//!
//! type Mine = Using<Lifo, ThreadLocal>;
//!
//! fn main() -> std::process::ExitCode {
//!     alloclab::cli::Registry::builtin().add::<Mine>("mine").main()
//! }
//! ```
//!
//! `mine` is then accepted wherever a config or subject is named (`replay --config mine`,
//! `compare --subjects mine,lifo,jemalloc`, `tour`), and reports print its own description
//! (`Config::describe`). `compare` measures in child processes that re-run the same binary, so
//! registered configs work there too.

mod compare;
mod generate;
mod paper;
mod replay;
mod tour;

use alloclab_core::Config;
use alloclab_measure::subjects::SubjectEntry;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The allocators the command line knows: alloclab's named configs, the peers, and the
/// configs a program registers.
#[derive(Clone)]
pub struct Registry {
    entries: Vec<SubjectEntry>,
}

impl Registry {
    /// alloclab's named configs and the peers.
    pub fn builtin() -> Registry {
        Registry {
            entries: alloclab_measure::builtin_subjects(),
        }
    }

    /// Registers the alloclab config `C` under `name`.
    ///
    /// # Panics
    /// If `name` is empty, contains a comma or whitespace (names are listed with commas on
    /// the command line), or is already taken.
    // The name the registration API is known by (`Registry::builtin().add::<C>("name")`);
    // it takes a type parameter and a name, so it cannot be mistaken for `ops::Add`.
    #[allow(clippy::should_implement_trait)]
    pub fn add<C: Config>(mut self, name: &str) -> Registry {
        assert!(
            !name.is_empty() && !name.contains(|c: char| c == ',' || c.is_whitespace()),
            "alloclab::cli::Registry::add: `{name}` cannot be a config name \
             (non-empty, no commas or spaces)"
        );
        assert!(
            self.find(name).is_none(),
            "alloclab::cli::Registry::add: the name `{name}` is already taken"
        );
        self.entries.push(SubjectEntry::alloclab::<C>(name));
        self
    }

    /// Every allocator, built-in first, then registered ones in registration order.
    pub fn entries(&self) -> &[SubjectEntry] {
        &self.entries
    }

    /// The allocator named `name`.
    pub fn find(&self, name: &str) -> Option<&SubjectEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The entries plus the studies' variants (not listed by `compare`, but made by measuring
    /// children and named by `paper`).
    fn with_variants(&self) -> Vec<SubjectEntry> {
        let mut all = self.entries.clone();
        for v in alloclab_papers::variants() {
            if !all.iter().any(|e| e.name == v.name) {
                all.push(v);
            }
        }
        all
    }

    /// Parses the process's arguments and runs the command.
    pub fn main(self) -> ExitCode {
        self.run(Cli::parse())
    }

    /// Runs the command given by `args` (the first being the program's name).
    pub fn main_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        match Cli::try_parse_from(args) {
            Ok(cli) => self.run(cli),
            Err(e) => {
                let _ = e.print();
                ExitCode::from(e.exit_code().clamp(0, 255) as u8)
            }
        }
    }

    fn run(self, cli: Cli) -> ExitCode {
        match cli.command {
            Command::Tour(args) => {
                tour::main(&self.entries, &args);
                ExitCode::SUCCESS
            }
            Command::Replay(args) => replay::main(&self.entries, &args),
            Command::Generate(args) => generate::main(&args),
            Command::Compare(args) => compare::compare(&self.entries, &args),
            Command::Report(args) => compare::report(&args),
            Command::Merge(args) => compare::merge(&args),
            Command::Paper(args) => paper::main(&self.with_variants(), &args),
            Command::MeasureChild(args) => compare::child(&self.with_variants(), &args),
        }
    }
}

/// A laboratory for memory-allocator policies.
#[derive(Parser, Debug)]
#[command(name = "alloclab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a built-in allocation workload under each alloclab config and compare time and
    /// memory (one run each; `compare` for statistics).
    Tour(tour::TourArgs),
    /// Replay an allocation trace (logalloc format) against one allocator: time, calls per
    /// second, resident sizes, heap statistics.
    Replay(replay::ReplayArgs),
    /// Write a synthetic allocation trace: bursts of same-size objects built up and torn down
    /// together, among long-lived objects.
    Generate(generate::GenerateArgs),
    /// Measure allocators head to head on workloads, one fresh process per measurement, with
    /// confidence intervals and significance tests; writes results.json and the reports.
    Compare(Box<compare::CompareArgs>),
    /// Redraw the reports of a compare run from its results.json, without rerunning.
    Report(compare::ReportArgs),
    /// Combine the results of `compare --shard i/n` runs into one.
    Merge(compare::MergeArgs),
    /// Reproduce a study of papers/ with one command (run-reuse-order, run-reuse-tcache,
    /// thread-arenas, poisoning, sampling, debug-options, fragmentation-aging).
    Paper(paper::PaperArgs),
    /// One measurement in a fresh process (run by `compare`; prints one JSON line).
    #[command(name = "measure-child", hide = true)]
    MeasureChild(alloclab_measure::child::ChildArgs),
}
