//! The `alloclab` command-line tool.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_generate;
mod cmd_replay;
mod tour;

/// A laboratory for memory-allocator policies.
#[derive(Parser, Debug)]
#[command(name = "alloclab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a built-in allocation workload under each named config and compare time and memory.
    Tour(tour::TourArgs),
    /// Replay an allocation trace (logalloc format) against a named config: time, calls per
    /// second, resident sizes, heap statistics.
    Replay(cmd_replay::ReplayArgs),
    /// Write a synthetic allocation trace: bursts of same-size objects built up and torn down
    /// together, among long-lived objects.
    Generate(cmd_generate::GenerateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Tour(args) => {
            tour::main(&args);
            ExitCode::SUCCESS
        }
        Command::Replay(args) => cmd_replay::main(&args),
        Command::Generate(args) => cmd_generate::main(&args),
    }
}
