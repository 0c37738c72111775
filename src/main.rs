//! The `alloclab` command-line tool: the built-in configs and peers (`alloclab::cli`).

fn main() -> std::process::ExitCode {
    alloclab::cli::Registry::builtin().main()
}
