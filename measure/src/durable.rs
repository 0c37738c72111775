//! Files that survive a crash: a whole file replaced by rename, and directory entries synced.
//! A leaf: results.json (`schema`) and the journal (`journal`) both build on it.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Makes a new, renamed or removed entry of `path`'s directory durable.
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// Replaces `path` by `bytes` all at once: written beside it, synced, renamed over it, and the
/// rename synced, so that a reader (or a crash) sees the old file or the new one, never half.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let aside = write_aside(path, bytes)?;
    std::fs::rename(&aside, path)?;
    sync_parent(path)
}

/// Creates `path` holding `bytes`, complete or not at all, the same way as [`replace`] but
/// linked into place instead of renamed: a link refuses (`AlreadyExists`) where a rename would
/// bury the file already there.
pub fn create_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let aside = write_aside(path, bytes)?;
    let linked = std::fs::hard_link(&aside, path);
    let _ = std::fs::remove_file(&aside);
    linked?;
    sync_parent(path)
}

/// `bytes` written and synced to `path` + `.new`.
fn write_aside(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".new");
    let aside = PathBuf::from(aside);
    let mut file = File::create(&aside)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(aside)
}
