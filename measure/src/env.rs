//! The machine and software a result comes from ([`Environment`]), read once by the parent of a
//! `compare` run: CPU model, cores, memory, kernel, compiler, commit, host, start time and the
//! exact command line, so that a report says where its numbers were taken.

use super::schema::Environment;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Reads the environment now. `command` is the command line as given; `peers` each peer's
/// name and library version.
pub fn capture(command: Vec<String>, peers: Vec<(String, String)>) -> Environment {
    Environment {
        cpu_model: cpu_model().unwrap_or_else(|| "unknown".to_string()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: memory_bytes().unwrap_or(0),
        kernel: kernel().unwrap_or_else(|| "unknown".to_string()),
        rustc: command_line("rustc", &["--version"]).unwrap_or_else(|| "unknown".to_string()),
        alloclab_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: command_line("git", &["rev-parse", "--short=12", "HEAD"]),
        peers,
        hostname: hostname().unwrap_or_else(|| "unknown".to_string()),
        started: rfc3339(SystemTime::now()),
        command,
    }
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line[9..].trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

fn c_field(field: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `uname -sr`.
fn kernel() -> Option<String> {
    // SAFETY: utsname is plain old data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    Some(format!("{} {}", c_field(&u.sysname), c_field(&u.release)))
}

fn hostname() -> Option<String> {
    let mut buf = [0 as libc::c_char; 256];
    // SAFETY: `buf` is writable for its length; gethostname truncates to it.
    if unsafe { libc::gethostname(buf.as_mut_ptr(), buf.len() - 1) } != 0 {
        return None;
    }
    Some(c_field(&buf))
}

/// The first line a program prints, if it runs and succeeds.
fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// `time` as RFC 3339 in UTC, to the second.
pub fn rfc3339(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_gregorian() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 12:34:56 UTC, a leap day of a century leap year.
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696);
        assert_eq!(rfc3339(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_761_599);
        assert_eq!(rfc3339(t), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn this_machine_is_described() {
        let e = capture(vec!["alloclab".into()], vec![]);
        assert!(e.cores >= 1);
        assert!(e.started.ends_with('Z'));
        assert!(e.kernel.starts_with("Linux"), "{}", e.kernel);
    }
}
