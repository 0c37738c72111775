//! Prints the conformance kit's summary for a built-in policy (LIFO against its model) and
//! how long the kit took: `cargo run --release -p alloclab-verify --example kit_summary`.

fn main() {
    let t = std::time::Instant::now();
    let s = alloclab_verify::verify_run_reuse_against::<
        alloclab_policies::Lifo,
        alloclab_verify::LifoModel,
    >();
    print!("{s}");
    println!("kit took {:.1} s", t.elapsed().as_secs_f64());
}
