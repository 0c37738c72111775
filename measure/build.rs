//! Records the versions of the crates that build the peer allocators (from Cargo.lock), for
//! peers whose library reports no version of its own (`peers::versions`), and the build's
//! provenance for `results.json` (`env::capture`): the commit, whether the tree was dirty, and
//! the compiler's version.

use std::path::Path;
use std::process::Command;

fn main() {
    provenance();
    // Read at run time, not baked in with `env!`: a build script's binary may be reused for
    // another checkout sharing the target directory.
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    // The workspace's lock file, one level up.
    let lock = Path::new(&dir).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let Ok(text) = std::fs::read_to_string(&lock) else {
        return;
    };
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let Some(v) = line.strip_prefix("version = ") {
            let var = match name.as_deref() {
                Some("snmalloc-sys") => "ALLOCLAB_SNMALLOC_SYS_VERSION",
                Some("rpmalloc-sys") => "ALLOCLAB_RPMALLOC_SYS_VERSION",
                _ => continue,
            };
            println!("cargo:rustc-env={var}={}", v.trim_matches('"'));
        }
    }
}

/// The output of `program args` in `dir`, if it runs and succeeds.
fn output(program: &str, args: &[&str], dir: &Path) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ALLOCLAB_BUILD_COMMIT` (`git rev-parse HEAD`, or `unknown` outside git),
/// `ALLOCLAB_BUILD_DIRTY` (`true` when `git status --porcelain` lists anything, `false`, or
/// `unknown`) and `ALLOCLAB_BUILD_RUSTC` (`$RUSTC --version`).
///
/// Cargo reruns this when HEAD, the branch it names, the index, or a source directory of the
/// workspace changes, so the commit and the dirty flag describe the sources this build compiled.
fn provenance() {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let crate_dir = Path::new(&dir);
    let root = crate_dir.join("..");
    let commit = output("git", &["rev-parse", "HEAD"], &root)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let dirty = commit
        .as_ref()
        .and_then(|_| output("git", &["status", "--porcelain"], &root))
        .map(|s| (!s.trim().is_empty()).to_string());
    println!(
        "cargo:rustc-env=ALLOCLAB_BUILD_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=ALLOCLAB_BUILD_DIRTY={}",
        dirty.as_deref().unwrap_or("unknown")
    );
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(&rustc, &["--version"], crate_dir)
        .and_then(|s| s.lines().next().map(str::trim).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ALLOCLAB_BUILD_RUSTC={version}");
    if commit.is_some() {
        // In a worktree `.git` is a file: ask git where HEAD, the index and the branch are.
        let mut watched = vec!["HEAD".to_string(), "index".to_string()];
        if let Some(branch) = output("git", &["symbolic-ref", "-q", "HEAD"], &root) {
            watched.push(branch.trim().to_string());
        }
        for name in watched {
            if let Some(path) = output("git", &["rev-parse", "--git-path", &name], &root) {
                let path = root.join(path.trim());
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    // An edit to a source file that is not staged changes neither HEAD nor the index. The
    // studies' folders are not watched whole: running a study writes its reports there.
    let mut sources: Vec<std::path::PathBuf> = [
        "core",
        "policies",
        "traces",
        "measure/src",
        "papers/src",
        "src",
        "preload",
    ]
    .iter()
    .map(|sub| root.join(sub))
    .collect();
    if let Ok(studies) = std::fs::read_dir(root.join("papers")) {
        sources.extend(studies.flatten().map(|d| d.path().join("study.rs")));
    }
    for path in sources.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-env-changed=RUSTC");
}
