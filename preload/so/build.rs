//! Link-time choices that make liballoclab.so cheaper to load: it is preloaded into every
//! process of a program, so what the dynamic loader does with it is paid at every start-up
//! (issue 11's start-up target). Measured on a tiny program (`malloc(64)`, about 0.75 ms a
//! run under glibc on the two-core test machine), each step against the one before: without
//! libgcc_s, 7 page faults and 9 system calls fewer and about 90 us less a run; the ordering
//! file, 7 page faults and about 30 us; packed relocations, 3 page faults and about 6 us.
//!
//! - The unwinder is linked in instead of depending on libgcc_s.so.1. Rust's standard library
//!   calls `_Unwind_*` (the panic and backtrace machinery; the release profile aborts on panic,
//!   but the precompiled standard library still refers to them), and on `*-linux-gnu` gets them
//!   from libgcc_s.so.1: one more library for the loader to find, map, relocate and initialize,
//!   about a third of what the preload added to a tiny program's start-up. libgcc_eh.a is the
//!   same unwinder as a static archive (what `gcc -static-libgcc` links): taken whole, ahead of
//!   the standard library's `-lgcc_s`, it defines every `_Unwind_*` symbol first, so the linker
//!   (which links shared libraries only as needed) leaves libgcc_s out. The symbols stay local
//!   to the library (rustc exports only the C API from a cdylib). GCC 12's unwinder finds
//!   unwind tables with glibc's `_dl_find_object` (2.35; the library needed 2.34 already).
//! - The code and data that start-up runs and touches are laid out together
//!   (`startup.order`, a symbol ordering file), so that they fault in as a few pages instead of
//!   one page each across 1.3 MB of code. The file names symbols exactly, as this toolchain
//!   mangles them; a name that no longer exists is skipped silently (the layout then degrades
//!   to the linker's default, nothing breaks). `scripts/startup-order.sh` writes it again.
//! - Relative relocations are packed (`DT_RELR`): fewer bytes for the loader to read and
//!   apply. The loader must know `DT_RELR` (glibc 2.36); used only when the library is built
//!   on such a glibc for itself (not cross-compiled).
//!
//! Each linker option is used only if a probe link with it succeeds (the ordering file is an
//! LLD option, and rustc links with LLD on x86_64-unknown-linux-gnu by default).

use std::env;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    // This script is also the build script of liballoclab_production.so and
    // liballoclab_debug.so (their Cargo.toml points here), so that the debug-options study
    // compares builds linked the same way; they have no ordering file. Cargo rebuilds and reruns
    // a build script whose source changed; it need only watch the ordering file, or, where there
    // is none, a file that exists (a path that does not would rerun it on every build).
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    if manifest_dir.join("startup.order").exists() {
        println!("cargo:rerun-if-changed=startup.order");
    } else {
        println!("cargo:rerun-if-changed=Cargo.toml");
    }
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" || target_env != "gnu" {
        return;
    }
    println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");

    let order = manifest_dir.join("startup.order");
    let ordering = [
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    if order.exists() && links_with(&ordering) {
        for arg in &ordering {
            println!("cargo:rustc-link-arg-cdylib={arg}");
        }
    }

    let relr = ["-Wl,-z,pack-relative-relocs".to_string()];
    if loader_knows_relr() && links_with(&relr) {
        println!("cargo:rustc-link-arg-cdylib={}", relr[0]);
    }
}

/// Whether a trivial cdylib links with `args`, with the compiler, target, linker and flags
/// this package is built with.
fn links_with(args: &[String]) -> bool {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let src = out.join("link_probe.rs");
    if std::fs::write(&src, "#[no_mangle]\npub extern \"C\" fn link_probe() {}\n").is_err() {
        return false;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--crate-type=cdylib",
        "--crate-name=link_probe",
        "--edition=2021",
    ])
    .arg("--out-dir")
    .arg(&out)
    .arg(&src);
    if let Ok(target) = env::var("TARGET") {
        cmd.arg("--target").arg(target);
    }
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        cmd.arg(format!("-Clinker={linker}"));
    }
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    for arg in args {
        cmd.arg(format!("-Clink-arg={arg}"));
    }
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the library is built for the machine building it, whose glibc (2.36 or later)
/// applies `DT_RELR` relocations.
fn loader_knows_relr() -> bool {
    if env::var("HOST").ok() != env::var("TARGET").ok() {
        return false;
    }
    host_glibc().is_some_and(|(major, minor)| (major, minor) >= (2, 36))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc() -> Option<(u32, u32)> {
    extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a static NUL-terminated string such as "2.36".
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().ok()?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc() -> Option<(u32, u32)> {
    None
}
