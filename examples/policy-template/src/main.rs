//! The whole `alloclab` command with `chunk-lifo` beside the built-in configs and the peers:
//! `cargo run --release -- replay --config chunk-lifo`,
//! `cargo run --release -- compare --quick --subjects chunk-lifo,lifo,system`.

fn main() -> std::process::ExitCode {
    alloclab::cli::Registry::builtin()
        .add::<policy_template::ChunkLifoConfig>("chunk-lifo")
        .main()
}
