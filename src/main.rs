//! The `alloclab` command-line tool.

use clap::{Parser, Subcommand};

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
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Tour(args) => tour::main(&args),
    }
}
