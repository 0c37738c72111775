//! The process's resident set, read from `/proc/self` without allocating (a stack buffer), so
//! that reading it during a replay disturbs nothing. Linux only; elsewhere every figure is
//! `None`.

use std::fs::File;
use std::io::{Read, Write};

/// Reads a small `/proc` file into `buf`; returns the bytes read.
fn read_proc<'b>(path: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let mut f = File::open(path).ok()?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(&buf[..n])
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Resident bytes now (`/proc/self/statm`).
pub fn current() -> Option<usize> {
    let mut buf = [0u8; 256];
    let text = read_proc("/proc/self/statm", &mut buf)?;
    let pages = text.split(|&b| b == b' ').nth(1)?;
    let pages: usize = std::str::from_utf8(pages).ok()?.trim().parse().ok()?;
    Some(pages * page_size())
}

/// The most resident bytes since the process started or since [`reset_peak`] (`VmHWM`).
pub fn peak() -> Option<usize> {
    let mut buf = [0u8; 4096];
    let text = read_proc("/proc/self/status", &mut buf)?;
    let line = text
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(b"VmHWM:"))?;
    let kib: usize = std::str::from_utf8(&line[6..])
        .ok()?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Restarts the peak from the current resident size (writes 5 to `/proc/self/clear_refs`,
/// Linux 4.0 and later). Returns whether the kernel accepted it.
pub fn reset_peak() -> bool {
    match std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/clear_refs")
    {
        Ok(mut f) => f.write_all(b"5").is_ok(),
        Err(_) => false,
    }
}

/// Resident sizes around a replay (bytes, whole process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RssFigures {
    /// Just before the first replayed call: the binary, the libraries, the decoded trace and
    /// the replayer's tables, all already resident.
    pub baseline: Option<usize>,
    /// The most during the replay (`None` where the peak could not be restarted at the
    /// baseline, since it would then include the parsing).
    pub peak: Option<usize>,
    /// Right after the last replayed call, with the trace's live allocations still live.
    pub end: Option<usize>,
}

impl RssFigures {
    /// Peak above the baseline: what the replay added at most.
    pub fn peak_added(&self) -> Option<usize> {
        Some(self.peak?.saturating_sub(self.baseline?))
    }

    /// End above the baseline: what the replay left resident.
    pub fn end_added(&self) -> Option<usize> {
        Some(self.end?.saturating_sub(self.baseline?))
    }
}
