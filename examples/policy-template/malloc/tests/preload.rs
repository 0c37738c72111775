//! The library under a real program: `sort` of a few thousand lines runs on it and gives the
//! same output as on glibc, and the exit statistics name the template's config.

use std::path::PathBuf;
use std::process::Command;

/// Builds libchunklifo.so with the cargo running this test, in the same profile. With the
/// workspace's tests too, so that its dependencies get the features `cargo test --workspace`
/// gave them (dev-dependencies' included) and are not compiled a second time for the library
/// alone: the libraries and tests are already built, and only the library is linked.
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "--workspace",
        "--lib",
        "--tests",
        "--target-dir",
    ])
    .arg(profile_dir.parent().unwrap())
    .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.ends_with("release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let so = profile_dir.join("libchunklifo.so");
    assert!(so.is_file(), "{} was not built", so.display());
    so
}

fn sort(preload: Option<&PathBuf>, input: &str) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("chunklifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("input.txt");
    std::fs::write(&file, input).unwrap();
    let mut cmd = Command::new("sort");
    cmd.arg(&file).env_remove("ALLOCLAB_CONF");
    if let Some(so) = preload {
        cmd.env("LD_PRELOAD", so)
            .env("ALLOCLAB_CONF", "stats_print:true");
    }
    cmd.output().expect("run sort")
}

#[test]
fn sort_runs_on_the_template_heap() {
    let so = library();
    let input: String = (0..5000u64)
        .map(|i| format!("{:x}\n", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    let glibc = sort(None, &input);
    let ours = sort(Some(&so), &input);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_eq!(
        ours.stdout, glibc.stdout,
        "sort's output differs from glibc's run"
    );
    let stats = String::from_utf8_lossy(&ours.stderr);
    assert!(
        stats.contains("config chunk-lifo: reuse chunk-lifo, arenas thread"),
        "the exit statistics should name the config:\n{stats}"
    );
}
