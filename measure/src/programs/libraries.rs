//! Where the libraries to preload are: Debian's allocators, and those the workspace builds
//! (liballoclab.so and its variants, the probe), found by environment variable or next to the
//! running binary.

use crate::subjects::{SubjectEntry, SubjectKind};
use std::path::{Path, PathBuf};

/// Where Debian installs its allocators' shared libraries.
const LIB_DIR: &str = "/usr/lib/x86_64-linux-gnu";

/// One allocator for a program: a library to preload (none for glibc) and its environment.
#[derive(Clone, Debug)]
pub struct Preload {
    /// The subject's name.
    pub name: String,
    /// What it is, for the report.
    pub describe: String,
    /// The library to preload (`None`: glibc's malloc).
    pub library: Option<PathBuf>,
    /// Its environment (`ALLOCLAB_CONF`).
    pub env: Vec<(String, String)>,
}

/// How to get liballoclab.so, for the errors of whatever needs it.
pub const LIBALLOCLAB_HINT: &str =
    "build it with `cargo build --release -p liballoclab`, or name it with ALLOCLAB_SO";

/// liballoclab.so: next to the running binary (target/release/ when built with
/// `cargo build --release -p liballoclab`), or named by `ALLOCLAB_SO`.
pub fn liballoclab() -> Option<PathBuf> {
    built_library("ALLOCLAB_SO", "liballoclab.so")
}

/// How to get the two builds of one config the debug-options study runs.
pub const BUILDS_HINT: &str = "build them with `cargo build --release -p liballoclab-production \
     -p liballoclab-debug`, or name them with ALLOCLAB_PRODUCTION_SO and ALLOCLAB_DEBUG_SO";

/// liballoclab_production.so (the `lifo` config, debug checks compiled out): named by
/// `ALLOCLAB_PRODUCTION_SO`, or next to the running binary.
pub fn production_library() -> Option<PathBuf> {
    built_library("ALLOCLAB_PRODUCTION_SO", "liballoclab_production.so")
}

/// liballoclab_debug.so (the `lifo` config, every check compiled in, the debug profile built
/// in): named by `ALLOCLAB_DEBUG_SO`, or next to the running binary.
pub fn debug_library() -> Option<PathBuf> {
    built_library("ALLOCLAB_DEBUG_SO", "liballoclab_debug.so")
}

/// A library the workspace builds: the path in the environment variable `var`, or `file`
/// next to the running binary, in its parent (a test binary's `deps/`) or in the release
/// directory beside it.
fn built_library(var: &str, file: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join(file),
        dir.join("..").join(file),
        dir.join("../release").join(file),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// How to get liballoclab_probe.so, for the errors of whatever needs it.
pub const PROBE_HINT: &str =
    "build it with `cargo build --release -p alloclab-probe-so`, or name it with ALLOCLAB_PROBE_SO";

/// liballoclab_probe.so: named by `ALLOCLAB_PROBE_SO`, or next to the running binary (the
/// same profile's build, or the release one).
pub fn probe_library() -> Option<PathBuf> {
    built_library("ALLOCLAB_PROBE_SO", "liballoclab_probe.so")
}

/// glibc's malloc: nothing preloaded.
pub fn glibc() -> Preload {
    Preload {
        name: "system".into(),
        describe: "glibc malloc (no preload)".into(),
        library: None,
        env: vec![],
    }
}

/// glibc (no preload), then each of Debian's allocators that is installed.
pub fn peer_preloads() -> Vec<Preload> {
    let mut out = vec![glibc()];
    for (name, file) in [
        ("jemalloc", "libjemalloc.so.2"),
        ("mimalloc", "libmimalloc.so.2"),
        ("tcmalloc", "libtcmalloc_minimal.so.4"),
    ] {
        let path = Path::new(LIB_DIR).join(file);
        if path.exists() {
            out.push(Preload {
                name: name.into(),
                describe: format!("Debian's {file} (LD_PRELOAD)"),
                library: Some(path),
                env: vec![],
            });
        }
    }
    out
}

pub(super) fn preloads(entries: &[SubjectEntry]) -> Vec<Preload> {
    let mut out = peer_preloads();
    if let Some(so) = liballoclab() {
        // Only built-in configs: liballoclab.so knows no registered config.
        for name in alloclab_policies::configs::NAMES {
            if entries
                .iter()
                .any(|e| e.name == name && e.kind == SubjectKind::Alloclab)
            {
                out.push(Preload {
                    name: name.to_string(),
                    describe: format!("liballoclab.so, ALLOCLAB_CONF=config:{name}"),
                    library: Some(so.clone()),
                    env: vec![("ALLOCLAB_CONF".into(), format!("config:{name}"))],
                });
            }
        }
    }
    out
}
