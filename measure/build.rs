//! Records the versions of the crates that build the peer allocators (from Cargo.lock), for
//! peers whose library reports no version of its own (`peers::versions`).

use std::path::Path;

fn main() {
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
