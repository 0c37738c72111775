//! The machine and software a result comes from ([`Environment`]), read once by the parent of a
//! `compare` run: CPU model, cores, memory, kernel, compiler, commit, host, start time and the
//! exact command line, so that a report says where its numbers were taken; and its provenance:
//! the commit and compiler the binary was built from (`build.rs`), a hash of the binary and of
//! every library preloaded, and the machine's load before and after the run ([`finish`]). The
//! load average no longer judges a run: it counts what ran in the minute before (the build of
//! the binary, typically), not what ran beside the measurements; each measurement's own
//! disturbance is measured instead (`disturbance.rs`).

use super::schema::{BuildInfo, Environment, FileHash, LoadAverage};
use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Reads the environment now. `command` is the command line as given; `peers` each peer's
/// name and library version.
pub fn capture(command: Vec<String>, peers: Vec<(String, String)>) -> Environment {
    let build = build_info();
    Environment {
        cpu_model: cpu_model().unwrap_or_else(|| "unknown".to_string()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: memory_bytes().unwrap_or(0),
        kernel: kernel().unwrap_or_else(|| "unknown".to_string()),
        rustc: build.rustc.clone().unwrap_or_else(|| {
            command_line("rustc", &["--version"]).unwrap_or_else(|| "unknown".to_string())
        }),
        alloclab_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: command_line("git", &["rev-parse", "--short=12", "HEAD"]),
        peers,
        hostname: hostname().unwrap_or_else(|| "unknown".to_string()),
        started: rfc3339(SystemTime::now()),
        command,
        build,
        hashes: vec![file_hash("binary", Path::new("/proc/self/exe"))],
        load_before: load_average(),
        load_after: None,
        noisy: false,
    }
}

/// Completes `env` when the run has ended: the load average now (a record; `noisy` stays
/// false, see the module's note).
pub fn finish(env: &mut Environment) {
    env.load_after = load_average();
}

/// Adds the hash of each library in `paths` (preloaded by a `--programs` run), once each.
pub fn add_preload_hashes<'a>(env: &mut Environment, paths: impl IntoIterator<Item = &'a Path>) {
    for path in paths {
        let shown = path.display().to_string();
        if !env
            .hashes
            .iter()
            .any(|h| h.role == "preload" && h.path == shown)
        {
            env.hashes.push(file_hash("preload", path));
        }
    }
}

/// The provenance `build.rs` embedded in this binary.
pub fn build_info() -> BuildInfo {
    let known = |v: &str| (v != "unknown" && !v.is_empty()).then(|| v.to_string());
    BuildInfo {
        commit: known(env!("ALLOCLAB_BUILD_COMMIT")),
        dirty: match env!("ALLOCLAB_BUILD_DIRTY") {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        rustc: known(env!("ALLOCLAB_BUILD_RUSTC")),
    }
}

/// `/proc/loadavg`'s three averages, if it can be read.
pub fn load_average() -> Option<LoadAverage> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// The three averages of a `/proc/loadavg` line (`0.52 0.61 0.70 2/345 6789`).
fn parse_loadavg(text: &str) -> Option<LoadAverage> {
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some(LoadAverage {
        one: fields.next()?.ok()?,
        five: fields.next()?.ok()?,
        fifteen: fields.next()?.ok()?,
    })
}

/// 64-bit FNV-1a ([`super::fnv`]) of everything `reader` yields: enough to tell two builds or
/// two libraries apart, and no dependency.
fn fnv1a64(mut reader: impl Read) -> std::io::Result<u64> {
    let mut hash = super::fnv::Fnv1a::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(hash.finish()),
            Ok(n) => hash.write(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The hash of the file at `path`, recorded under `role`. `/proc/self/exe` is recorded as the
/// path it links to.
fn file_hash(role: &str, path: &Path) -> FileHash {
    let shown = std::fs::read_link(path).unwrap_or_else(|_| path.to_path_buf());
    let hash = std::fs::File::open(path).and_then(fnv1a64).map_or_else(
        |_| "unreadable".to_string(),
        |h| format!("fnv1a64:{h:016x}"),
    );
    FileHash {
        role: role.to_string(),
        path: shown.display().to_string(),
        hash,
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
        let mut e = capture(vec!["alloclab".into()], vec![]);
        assert!(e.cores >= 1);
        assert!(e.started.ends_with('Z'));
        assert!(e.kernel.starts_with("Linux"), "{}", e.kernel);
        assert!(e.load_before.is_some(), "/proc/loadavg is readable");
        let binary = e.hashes[0].clone();
        assert_eq!(binary.role, "binary");
        assert!(binary.hash.starts_with("fnv1a64:"), "{binary:?}");
        let exe = std::env::current_exe().unwrap();
        let direct = fnv1a64(std::fs::File::open(&exe).unwrap()).unwrap();
        assert_eq!(binary.hash, format!("fnv1a64:{direct:016x}"));
        // Built inside this repository: the commit is a full hash.
        let commit = e.build.commit.clone().expect("built from a git checkout");
        assert_eq!(commit.len(), 40, "{commit}");
        assert!(commit.chars().all(|c| c.is_ascii_hexdigit()), "{commit}");
        assert!(e.build.dirty.is_some());
        assert!(e.rustc.starts_with("rustc "), "{}", e.rustc);
        finish(&mut e);
        assert!(e.load_after.is_some());
        add_preload_hashes(&mut e, [exe.as_path(), exe.as_path()]);
        let preloads: Vec<_> = e.hashes.iter().filter(|h| h.role == "preload").collect();
        assert_eq!(preloads.len(), 1, "once each");
        assert_eq!(preloads[0].hash, binary.hash);
        add_preload_hashes(&mut e, [Path::new("/nonexistent/lib.so")]);
        assert_eq!(e.hashes.last().unwrap().hash, "unreadable");
    }

    #[test]
    fn fnv1a64_known_values() {
        // The published FNV-1a test vectors.
        assert_eq!(fnv1a64(&b""[..]).unwrap(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(&b"a"[..]).unwrap(), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(&b"foobar"[..]).unwrap(), 0x8594_4171_f739_67e8);
        // Longer than one read buffer: the chunks join up.
        let long = vec![7u8; (1 << 16) + 3];
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for &b in &long {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        assert_eq!(fnv1a64(&long[..]).unwrap(), h);
    }

    #[test]
    fn loadavg_lines_parse() {
        let l = parse_loadavg("0.52 1.61 2.70 2/345 6789\n").unwrap();
        assert_eq!((l.one, l.five, l.fifteen), (0.52, 1.61, 2.70));
        assert_eq!(parse_loadavg("0.5 x 1"), None);
        assert_eq!(parse_loadavg(""), None);
    }
}
