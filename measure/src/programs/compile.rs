//! C programs compiled for a run with the system's C compiler.

use crate::child::tail;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Writes `source` to `dir/NAME.c` and compiles it with the system's C compiler and `flags`
/// into `dir/NAME`, the path returned; the compiler's complaint if it fails.
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(format!("{name}.c"));
    let binary = dir.join(name);
    std::fs::write(&file, source).map_err(|e| format!("{}: {e}", file.display()))?;
    let out = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the C compiler `cc`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc could not compile {}: {}",
            file.display(),
            tail(&String::from_utf8_lossy(&out.stderr), 400)
        ));
    }
    Ok(binary)
}
