//! The option table: one row per `ALLOCLAB_CONF` key, in the manner of mimalloc's `options.c`.
//!
//! Each row gives the key, its values, its default and its meaning, and the function that
//! applies a value. Parsing (`parse.rs`), the defaults (`Conf::defaults` applies every row's
//! default through the same function) and the `ALLOCLAB_CONF=help` text all come from this
//! table, so an option is added here and nowhere else. Nothing here allocates.

use crate::select::{Arenas, Remote, Reuse, Selection};
use alloclab_core::safety::CACHE_LINE;
use alloclab_core::{Options, Poison, Purge, Safety, TcacheCheck, ZeroCheck, MAX_ARENAS};
pub use alloclab_policies::configs::Named;
use alloclab_policies::configs::{
    ARENAS, ARENAS_CHOICES, CONFIG_CHOICES, NAMED, NAMES, REMOTE, REMOTE_CHOICES, REUSE,
    REUSE_CHOICES,
};

// ---- the configuration being built ------------------------------------------------------------

/// What `realloc(ptr, 0)` does with a non-null `ptr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroRealloc {
    /// Free `ptr` and return NULL (glibc).
    Free,
    /// Return a minimal allocation and free `ptr` (as `realloc(ptr, 1)`).
    Alloc,
}

/// The parsed configuration. `None` means "as the named config says" (or the engine default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conf {
    /// Named configuration: the base for `reuse`, `current_run` and `arenas`.
    pub config: usize,
    /// Run reuse, if given explicitly.
    pub reuse: Option<Reuse>,
    /// Current-run caching, if given explicitly.
    pub current_run: Option<bool>,
    /// Arena strategy, if given explicitly.
    pub arenas: Option<Arenas>,
    /// Thread cache in front of the arenas, if given explicitly.
    pub tcache: Option<bool>,
    /// How the thread cache's flushes reach their arenas, if given explicitly.
    pub remote: Option<Remote>,
    /// Bytes one thread's cache may hold, if given explicitly.
    pub tcache_max: Option<usize>,
    /// What the cache's lock-free `free` checks.
    pub tcache_check: TcacheCheck,
    /// Arena count for round-robin, per-cpu and hashed; 0 is the strategy's default.
    pub narenas: usize,
    /// Dirty pages an arena keeps before purging, if given explicitly.
    pub dirty_max: Option<usize>,
    /// The purge policy, if given explicitly (else the engine's default: `Options::purge`).
    pub purge: Option<Purge>,
    /// Bytes of freed huge mappings kept for reuse.
    pub huge_cache: usize,
    /// What `realloc(ptr, 0)` does.
    pub zero_realloc: ZeroRealloc,
    /// Print heap statistics to stderr at exit.
    pub stats_print: bool,
    /// Abort on a bad `ALLOCLAB_CONF` entry instead of ignoring it.
    pub abort_conf: bool,
    /// Where to record every allocation call (`log_sink.rs`), if anywhere.
    pub log: LogPath,
    /// The debug profile: the base for the debug options below.
    pub profile: usize,
    /// Poisoning (none, some, all), if given explicitly.
    pub poison: Option<PoisonKind>,
    /// Bytes `poison:some` poisons, if given explicitly.
    pub poison_size: Option<usize>,
    /// Junk on allocation, if given explicitly.
    pub junk: Option<bool>,
    /// Zero on free, if given explicitly.
    pub zero: Option<bool>,
    /// Canaries after small allocations, if given explicitly.
    pub canary: Option<bool>,
    /// Guard pages after large allocations, if given explicitly.
    pub guard: Option<bool>,
    /// Quarantine bytes per arena, if given explicitly.
    pub quarantine: Option<usize>,
    /// Sample one allocation in this many (0: off).
    pub sample: usize,
    /// Sample one allocation per this many milliseconds (0: off).
    pub sample_ms: usize,
    /// Which memory taken as zero is checked (no profile turns it on).
    pub zero_check: ZeroCheck,
}

/// The `poison:` values (the size of `some` is `poison_size:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoisonKind {
    /// Nothing.
    None,
    /// The first `poison_size` bytes.
    Some,
    /// Every byte.
    All,
}

/// The debug profiles: what `profile:` sets.
pub const PROFILES: [(&str, Safety); 3] = [
    ("default", Safety::OFF),
    ("hardened", Safety::HARDENED),
    ("debug", Safety::DEBUG),
];

/// Bytes a `log:` path may have (before `%p` is expanded).
pub const LOG_PATH_MAX: usize = 1024;

/// The `log:` path as written, `%p` and `%%` not yet expanded; empty: not logging. Held by
/// value (parsing must not allocate, and the input does not outlive start-up).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LogPath {
    bytes: [u8; LOG_PATH_MAX],
    len: usize,
}

impl LogPath {
    /// Not logging.
    pub const OFF: LogPath = LogPath {
        bytes: [0; LOG_PATH_MAX],
        len: 0,
    };

    /// Checks a path: not empty, not too long, `%` only in `%p` (the pid) and `%%` (a `%`).
    pub fn new(path: &[u8]) -> Result<LogPath, Refusal> {
        if path.is_empty() {
            return Err("empty path");
        }
        if path.len() > LOG_PATH_MAX {
            return Err("path longer than 1024 bytes");
        }
        let mut i = 0;
        while i < path.len() {
            if path[i] == b'%' {
                match path.get(i + 1) {
                    Some(b'p' | b'%') => i += 1,
                    _ => return Err("a % other than %p (the pid) or %% (a %)"),
                }
            }
            i += 1;
        }
        let mut p = LogPath::OFF;
        p.bytes[..path.len()].copy_from_slice(path);
        p.len = path.len();
        Ok(p)
    }

    /// The path as written; empty when not logging.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Whether logging is off.
    pub fn is_off(&self) -> bool {
        self.len == 0
    }

    /// Whether the path names one file per process (it has `%p`).
    pub fn per_process(&self) -> bool {
        let b = self.as_bytes();
        let mut i = 0;
        while i + 1 < b.len() {
            match (b[i], b[i + 1]) {
                (b'%', b'p') => return true,
                (b'%', _) => i += 2,
                _ => i += 1,
            }
        }
        false
    }
}

impl core::fmt::Debug for LogPath {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match core::str::from_utf8(self.as_bytes()) {
            Ok(s) => write!(f, "LogPath({s:?})"),
            Err(_) => write!(f, "LogPath({:?})", self.as_bytes()),
        }
    }
}

/// Appends `|config` (the value that defers to the named config) to a catalogue's choices, at
/// compile time: the option table is static and its text must not be built at start-up.
macro_rules! or_config {
    ($choices:expr) => {{
        const CHOICES: &str = $choices;
        const SUFFIX: &[u8] = b"|config";
        const LEN: usize = CHOICES.len() + SUFFIX.len();
        const BYTES: [u8; LEN] = {
            let mut out = [0; LEN];
            let head = CHOICES.as_bytes();
            let mut i = 0;
            while i < LEN {
                out[i] = if i < head.len() {
                    head[i]
                } else {
                    SUFFIX[i - head.len()]
                };
                i += 1;
            }
            out
        };
        match core::str::from_utf8(&BYTES) {
            Ok(s) => s,
            Err(_) => panic!("the catalogue's names are UTF-8"),
        }
    }};
}

/// The value that means "as the named config says".
const FROM_CONFIG: &[u8] = b"config";
/// The value that means "as the profile says".
const FROM_PROFILE: &[u8] = b"profile";

const POISON: [(&str, PoisonKind); 3] = [
    ("none", PoisonKind::None),
    ("some", PoisonKind::Some),
    ("all", PoisonKind::All),
];

/// `true`, `false` or `profile`.
fn bool_or_profile(v: &[u8]) -> Result<Option<bool>, Refusal> {
    if v == FROM_PROFILE {
        Ok(None)
    } else {
        boolean(v).map(Some)
    }
}

/// A number of bytes or `profile`.
fn bytes_or_profile(v: &[u8], max: usize) -> Result<Option<usize>, Refusal> {
    if v == FROM_PROFILE {
        Ok(None)
    } else {
        number(v, max).map(Some)
    }
}

impl Conf {
    /// Every option at the default its table row gives.
    pub fn defaults() -> Conf {
        let mut c = Conf {
            config: 0,
            reuse: None,
            current_run: None,
            arenas: None,
            tcache: None,
            remote: None,
            tcache_max: None,
            tcache_check: TcacheCheck::Full,
            narenas: 0,
            dirty_max: None,
            purge: None,
            huge_cache: alloclab_core::purge::DEFAULT_HUGE_CACHE_BYTES,
            zero_realloc: ZeroRealloc::Free,
            stats_print: false,
            abort_conf: false,
            log: LogPath::OFF,
            profile: 0,
            poison: None,
            poison_size: None,
            junk: None,
            zero: None,
            canary: None,
            guard: None,
            quarantine: None,
            sample: 0,
            sample_ms: 0,
            zero_check: ZeroCheck::Off,
        };
        for opt in OPTIONS.iter() {
            // A default that does not parse is a bug of this table; a unit test catches it.
            let _ = (opt.set)(&mut c, opt.default.as_bytes());
        }
        c
    }

    /// The named configuration this one starts from.
    pub fn named(&self) -> &'static Named {
        &NAMED[self.config]
    }

    /// The heap to build: the named config, overridden by explicit entries.
    pub fn selection(&self) -> Selection {
        let n = self.named().policies;
        Selection {
            reuse: self.reuse.unwrap_or(n.reuse),
            current_run: self.current_run.unwrap_or(n.current_run),
            arenas: self.arenas.unwrap_or(n.arenas),
            tcache: self.tcache.unwrap_or(n.tcache),
            remote: self.remote.unwrap_or(n.remote),
            options: Options {
                narenas: self.narenas,
                dirty_max_pages: self.dirty_max.unwrap_or(Options::DEFAULT.dirty_max_pages),
                purge: self.purge,
                huge_cache_bytes: self.huge_cache,
                // Ours (`init.rs`) also take the log's lock, and are registered once the
                // allocator is published (glibc calls `malloc` to record them).
                fork_handlers: false,
                safety: self.safety(),
                tcache_max_bytes: self.tcache_max.unwrap_or(Options::DEFAULT.tcache_max_bytes),
                tcache_check: self.tcache_check,
                // `remote` chooses it (`select::install`).
                remote_mailbox: true,
            },
        }
    }

    /// Whether any entry chose policies (`config`, `reuse`, `current_run`, `arenas`).
    pub fn chooses_policies(&self) -> bool {
        self.config != Conf::defaults().config
            || self.reuse.is_some()
            || self.current_run.is_some()
            || self.arenas.is_some()
    }

    /// The debug options: the profile, overridden by explicit entries.
    pub fn safety(&self) -> Safety {
        let base = PROFILES[self.profile].1;
        let size = match (self.poison_size, base.poison) {
            (Some(n), _) => n,
            (None, Poison::Some(n)) => n,
            (None, _) => alloclab_core::safety::POISON_SOME_DEFAULT,
        };
        let poison = match self.poison {
            None => match (self.poison_size, base.poison) {
                (Some(n), Poison::Some(_)) => Poison::Some(n),
                (_, p) => p,
            },
            Some(PoisonKind::None) => Poison::None,
            Some(PoisonKind::Some) => Poison::Some(size),
            Some(PoisonKind::All) => Poison::All,
        };
        Safety {
            poison,
            junk: self.junk.unwrap_or(base.junk),
            zero: self.zero.unwrap_or(base.zero),
            canary: self.canary.unwrap_or(base.canary),
            guard: self.guard.unwrap_or(base.guard),
            quarantine: self.quarantine.unwrap_or(base.quarantine),
            zero_size: base.zero_size,
            sample: self.sample,
            sample_ms: self.sample_ms,
            zero_check: self.zero_check,
        }
    }

    /// The name of the named configuration the selection is exactly, if any.
    pub fn exact_name(&self) -> Option<&'static str> {
        let s = self.selection().policies();
        NAMED.iter().find(|n| n.policies == s).map(|n| n.name)
    }
}

// ---- the table ------------------------------------------------------------------------------

/// Why a value was refused (the parser adds the option's accepted values).
pub type Refusal = &'static str;

/// One option.
pub struct Opt {
    /// The key before the `:`.
    pub name: &'static str,
    /// The values it accepts, for `help` and error messages.
    pub values: &'static str,
    /// Its default, applied through `set` like any value.
    pub default: &'static str,
    /// What it means, one line.
    pub help: &'static str,
    /// Applies a value.
    pub set: fn(&mut Conf, &[u8]) -> Result<(), Refusal>,
}

/// Every option, in `help` order.
pub static OPTIONS: [Opt; 27] = [
    Opt {
        name: "config",
        values: CONFIG_CHOICES,
        default: "lifo-tcache",
        help: "named configuration: the base for reuse, current_run, arenas and tcache",
        set: |c, v| {
            c.config = pick(v, &NAMES)?;
            Ok(())
        },
    },
    Opt {
        name: "reuse",
        values: or_config!(REUSE_CHOICES),
        default: "config",
        help: "which non-full run serves the next small allocation (overrides config)",
        set: |c, v| {
            c.reuse = from_config_or(v, &REUSE)?;
            Ok(())
        },
    },
    Opt {
        name: "current_run",
        values: "true|false|config",
        default: "config",
        help: "bins cache a current run until it is full (mozjemalloc's mCurrentRun)",
        set: |c, v| {
            c.current_run = from_config_or(v, &[("true", true), ("false", false)])?;
            Ok(())
        },
    },
    Opt {
        name: "arenas",
        values: or_config!(ARENAS_CHOICES),
        default: "config",
        help: "which arena serves a thread (overrides config)",
        set: |c, v| {
            c.arenas = from_config_or(v, &ARENAS)?;
            Ok(())
        },
    },
    Opt {
        name: "tcache",
        values: "true|false|config",
        default: "config",
        help: "a per-thread cache of blocks up to 16 KiB in front of the arenas (overrides config)",
        set: |c, v| {
            c.tcache = from_config_or(v, &[("true", true), ("false", false)])?;
            Ok(())
        },
    },
    Opt {
        name: "remote",
        values: or_config!(REMOTE_CHOICES),
        default: "config",
        help: "how a thread cache's flushes reach their arenas: back to their runs under the lock, or to the arena's lock-free mailbox (overrides config)",
        set: |c, v| {
            c.remote = from_config_or(v, &REMOTE)?;
            Ok(())
        },
    },
    Opt {
        name: "tcache_max",
        values: "bytes|config",
        default: "config",
        help: "bytes one thread's cache may hold; classes start with equal shares of a quarter and grow into the rest (config: 1048576)",
        set: |c, v| {
            c.tcache_max = if v == FROM_CONFIG {
                None
            } else {
                Some(number(v, usize::MAX - 1)?)
            };
            Ok(())
        },
    },
    Opt {
        name: "tcache_check",
        values: "full|light",
        default: "full",
        help: "what the cache's lock-free free checks: full (boundary, bitmap, mark: every bad free refused at once) or light (alignment and mark: a double free of a cached region refused, others found at a flush or never; faster)",
        set: |c, v| {
            c.tcache_check = pick(v, &[("full", TcacheCheck::Full), ("light", TcacheCheck::Light)])?;
            Ok(())
        },
    },
    Opt {
        name: "narenas",
        values: "0..=1024",
        default: "0",
        help: "arenas for round-robin, hashed (0: 4 per CPU) and per-cpu (0: 1 per CPU)",
        set: |c, v| {
            c.narenas = number(v, MAX_ARENAS)?;
            Ok(())
        },
    },
    Opt {
        name: "dirty_max",
        values: "pages|config",
        default: "config",
        help: "dirty pages an arena keeps before returning them to the OS (config: 256)",
        set: |c, v| {
            c.dirty_max = if v == FROM_CONFIG {
                None
            } else {
                Some(number(v, usize::MAX - 1)?)
            };
            Ok(())
        },
    },
    Opt {
        name: "purge",
        values: "default|threshold|decay|decay:ms",
        default: "default",
        help: "when dirty pages and cached huge blocks go back to the OS: threshold (beyond dirty_max, at once), decay:ms (after ms milliseconds, on later activity; decay: 1000); default: decay, or threshold if dirty_max is given",
        set: |c, v| {
            c.purge = if v == b"default" {
                None
            } else {
                Some(Purge::parse(v).ok_or("not threshold, decay or decay:<ms up to 3600000>")?)
            };
            Ok(())
        },
    },
    Opt {
        name: "huge_cache",
        values: "bytes",
        default: "67108864",
        help: "bytes of freed huge blocks (at most 8) kept for reuse instead of unmapped (0: none)",
        set: |c, v| {
            c.huge_cache = number(v, usize::MAX - 1)?;
            Ok(())
        },
    },
    Opt {
        name: "zero_realloc",
        values: "free|alloc",
        default: "free",
        help: "realloc(p, 0): free p and return NULL (glibc), or return a minimal allocation",
        set: |c, v| {
            c.zero_realloc = pick(
                v,
                &[("free", ZeroRealloc::Free), ("alloc", ZeroRealloc::Alloc)],
            )?;
            Ok(())
        },
    },
    Opt {
        name: "stats_print",
        values: "true|false",
        default: "false",
        help: "print heap statistics to stderr when the process exits",
        set: |c, v| {
            c.stats_print = boolean(v)?;
            Ok(())
        },
    },
    Opt {
        name: "abort_conf",
        values: "true|false",
        default: "false",
        help: "abort at start-up if any ALLOCLAB_CONF entry is bad (else it is ignored)",
        set: |c, v| {
            c.abort_conf = boolean(v)?;
            Ok(())
        },
    },
    Opt {
        name: "log",
        values: "off|path",
        default: "off",
        help: "log every malloc-family call to path in logalloc's format (%p in path: the pid)",
        set: |c, v| {
            c.log = if v == b"off" {
                LogPath::OFF
            } else {
                LogPath::new(v)?
            };
            Ok(())
        },
    },
    Opt {
        name: "profile",
        values: "default|hardened|debug",
        default: "default",
        help: "debug checks: none; hardened (poison some, canary, guard, quarantine 1 MiB, malloc(0) inaccessible); debug (also poison all, junk, quarantine 16 MiB)",
        set: |c, v| {
            c.profile = pick(v, &PROFILES.map(|p| p.0))?;
            Ok(())
        },
    },
    Opt {
        name: "poison",
        values: "none|some|all|profile",
        default: "profile",
        help: "fill freed memory with 0xe5 (some: its first poison_size bytes), checked on reuse: write after free",
        set: |c, v| {
            c.poison = if v == FROM_PROFILE {
                None
            } else {
                Some(pick(v, &POISON)?)
            };
            Ok(())
        },
    },
    Opt {
        name: "poison_size",
        values: "bytes|profile",
        default: "profile",
        help: "bytes poison:some fills, a multiple of 64 (profile: 256)",
        set: |c, v| {
            let n = bytes_or_profile(v, 1 << 20)?;
            if n.is_some_and(|n| n == 0 || n % CACHE_LINE != 0) {
                return Err("not a positive multiple of 64");
            }
            c.poison_size = n;
            Ok(())
        },
    },
    Opt {
        name: "junk",
        values: "true|false|profile",
        default: "profile",
        help: "fill new allocations (not calloc's) with 0xe4",
        set: |c, v| {
            c.junk = bool_or_profile(v)?;
            Ok(())
        },
    },
    Opt {
        name: "zero",
        values: "true|false|profile",
        default: "profile",
        help: "fill freed memory with zeros instead of 0xe5 (all of it if poison:none), checked on reuse",
        set: |c, v| {
            c.zero = bool_or_profile(v)?;
            Ok(())
        },
    },
    Opt {
        name: "canary",
        values: "true|false|profile",
        default: "profile",
        help: "canary bytes after each small allocation, checked on free: heap overflow",
        set: |c, v| {
            c.canary = bool_or_profile(v)?;
            Ok(())
        },
    },
    Opt {
        name: "guard",
        values: "true|false|profile",
        default: "profile",
        help: "an inaccessible page right after each large allocation: an overflow faults",
        set: |c, v| {
            c.guard = bool_or_profile(v)?;
            Ok(())
        },
    },
    Opt {
        name: "quarantine",
        values: "bytes|profile",
        default: "profile",
        help: "freed bytes each arena holds back before reuse, large ones inaccessible (0: off; at most 256 allocations)",
        set: |c, v| {
            c.quarantine = bytes_or_profile(v, 1 << 40)?;
            Ok(())
        },
    },
    Opt {
        name: "sample",
        values: "0..=1000000000",
        default: "0",
        help: "one allocation (up to a page) in N on average goes to a slot between guard pages; a fault there is reported with stacks (1: all; 0: off)",
        set: |c, v| {
            c.sample = number(v, 1_000_000_000)?;
            Ok(())
        },
    },
    Opt {
        name: "sample_ms",
        values: "0..=3600000",
        default: "0",
        help: "also sample the first allocation after each interval of this many milliseconds (0: off)",
        set: |c, v| {
            c.sample_ms = number(v, 3_600_000)?;
            Ok(())
        },
    },
    Opt {
        name: "zero_check",
        values: "off|recycled|all",
        default: "off",
        help: "check that memory taken as zero is: recycled (purged pages taken again); all (also every chunk fresh from mmap, read whole: the bug of jemalloc's 2013 debug build)",
        set: |c, v| {
            c.zero_check = pick(
                v,
                &[
                    ("off", ZeroCheck::Off),
                    ("recycled", ZeroCheck::Recycled),
                    ("all", ZeroCheck::All),
                ],
            )?;
            Ok(())
        },
    },
];

/// The option named `key`.
pub fn find(key: &[u8]) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.name.as_bytes() == key)
}

// ---- value parsers --------------------------------------------------------------------------

/// Something that names a choice: a bare name, or a `(name, value)` pair.
trait Choice<T> {
    fn name(&self) -> &str;
    fn value(&self, index: usize) -> T;
}

impl Choice<usize> for &str {
    fn name(&self) -> &str {
        self
    }
    fn value(&self, index: usize) -> usize {
        index
    }
}

impl<T: Copy> Choice<T> for (&str, T) {
    fn name(&self) -> &str {
        self.0
    }
    fn value(&self, _: usize) -> T {
        self.1
    }
}

fn pick<T, C: Choice<T>>(v: &[u8], choices: &[C]) -> Result<T, Refusal> {
    choices
        .iter()
        .enumerate()
        .find(|(_, c)| c.name().as_bytes() == v)
        .map(|(i, c)| c.value(i))
        .ok_or("unknown value")
}

fn from_config_or<T: Copy>(v: &[u8], choices: &[(&str, T)]) -> Result<Option<T>, Refusal> {
    if v == FROM_CONFIG {
        Ok(None)
    } else {
        pick(v, choices).map(Some)
    }
}

fn boolean(v: &[u8]) -> Result<bool, Refusal> {
    pick(v, &[("true", true), ("false", false)])
}

/// A decimal number from 0 to `max`.
fn number(v: &[u8], max: usize) -> Result<usize, Refusal> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err("not a decimal number");
    }
    let mut n: usize = 0;
    for &d in v {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add((d - b'0') as usize))
            .ok_or("out of range")?;
    }
    if n > max {
        return Err("out of range");
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_and_every_listed_value_parses() {
        for opt in OPTIONS.iter() {
            let mut c = Conf::defaults();
            assert_eq!(
                (opt.set)(&mut c, opt.default.as_bytes()),
                Ok(()),
                "{}",
                opt.name
            );
            for v in opt.values.split('|') {
                let v = match v {
                    "0..=1024" => "1024",
                    "pages" => "512",
                    "bytes" => "256",
                    "0..=1000000000" => "1000",
                    "0..=3600000" => "10",
                    "decay:ms" => "decay:250",
                    v => v,
                };
                assert_eq!((opt.set)(&mut c, v.as_bytes()), Ok(()), "{}:{v}", opt.name);
            }
            // A path is free text: anything but the empty string.
            if !opt.values.ends_with("|path") {
                assert!((opt.set)(&mut c, b"bogus").is_err(), "{}", opt.name);
            }
            assert!((opt.set)(&mut c, b"").is_err(), "{}", opt.name);
        }
        let d = Conf::defaults();
        assert_eq!(d.named().name, "lifo-tcache");
        assert_eq!(d.exact_name(), Some("lifo-tcache"));
        assert!(!d.stats_print && !d.abort_conf);
        assert_eq!(d.zero_realloc, ZeroRealloc::Free);
        assert!(d.log.is_off());
    }

    #[test]
    fn purge_and_huge_cache_reach_the_heap_options() {
        let set = |c: &mut Conf, k: &[u8], v: &[u8]| (find(k).unwrap().set)(c, v);
        let d = Conf::defaults().selection().options;
        assert_eq!((d.purge, d.purge_policy()), (None, Purge::DEFAULT));
        assert_eq!(
            d.huge_cache_bytes,
            alloclab_core::purge::DEFAULT_HUGE_CACHE_BYTES
        );
        let mut c = Conf::defaults();
        set(&mut c, b"dirty_max", b"64").unwrap();
        assert_eq!(c.selection().options.purge_policy(), Purge::Threshold);
        set(&mut c, b"purge", b"decay:20").unwrap();
        set(&mut c, b"huge_cache", b"0").unwrap();
        let o = c.selection().options;
        assert_eq!(
            (o.purge_policy(), o.huge_cache_bytes),
            (Purge::Decay(20), 0)
        );
        assert!(set(&mut c, b"purge", b"decay:soon").is_err());
        set(&mut c, b"purge", b"default").unwrap();
        assert_eq!(c.selection().options.purge_policy(), Purge::Threshold);
    }

    #[test]
    fn log_paths_are_checked() {
        let set = |v: &[u8]| {
            let mut c = Conf::defaults();
            (find(b"log").unwrap().set)(&mut c, v).map(|()| c.log)
        };
        let p = set(b"/tmp/a%%b.%p.log").unwrap();
        assert_eq!(p.as_bytes(), b"/tmp/a%%b.%p.log");
        assert!(!p.is_off() && p.per_process());
        assert!(!set(b"trace.log").unwrap().per_process());
        assert!(!set(b"100%%p").unwrap().per_process(), "%%p is a % and a p");
        assert!(set(b"%%%p").unwrap().per_process());
        assert!(set(b"off").unwrap().is_off());
        assert_eq!(set(b""), Err("empty path"));
        for bad in [&b"a%"[..], b"a%d", b"%%%"] {
            assert!(set(bad).unwrap_err().contains("%p"), "{bad:?}");
        }
        assert!(set(&[b'x'; LOG_PATH_MAX]).is_ok());
        assert_eq!(
            set(&[b'x'; LOG_PATH_MAX + 1]),
            Err("path longer than 1024 bytes")
        );
    }

    /// The row of docs/PRELOAD.md's option table for `o`.
    fn readme_row(o: &Opt) -> String {
        format!(
            "| `{}` | {} | `{}` | {} |",
            o.name,
            o.values.replace('|', " \\| "),
            o.default,
            o.help
        )
    }

    #[test]
    fn the_preload_guide_documents_every_option_as_the_table_says() {
        let readme = include_str!("../../docs/PRELOAD.md");
        for o in OPTIONS.iter() {
            let row = readme_row(o);
            assert!(
                readme.contains(&row),
                "docs/PRELOAD.md lacks or misstates:\n{row}"
            );
        }
    }

    #[test]
    fn debug_options_start_from_the_profile_and_override_it() {
        let set = |c: &mut Conf, k: &[u8], v: &[u8]| (find(k).unwrap().set)(c, v);
        let mut c = Conf::defaults();
        assert_eq!(c.safety(), Safety::OFF);
        set(&mut c, b"poison", b"some").unwrap();
        assert_eq!(c.safety().poison, Poison::Some(256));
        set(&mut c, b"poison_size", b"128").unwrap();
        assert_eq!(c.safety().poison, Poison::Some(128));
        assert_eq!(
            set(&mut c, b"poison_size", b"100"),
            Err("not a positive multiple of 64")
        );
        assert_eq!(
            set(&mut c, b"poison_size", b"0"),
            Err("not a positive multiple of 64")
        );
        // Entries win over the profile wherever they stand.
        set(&mut c, b"profile", b"debug").unwrap();
        set(&mut c, b"canary", b"false").unwrap();
        let s = c.safety();
        assert_eq!(s.poison, Poison::Some(128));
        assert!(!s.canary && s.junk && s.guard && s.zero_size);
        assert_eq!(s.quarantine, Safety::DEBUG.quarantine);
        set(&mut c, b"poison", b"profile").unwrap();
        set(&mut c, b"poison_size", b"profile").unwrap();
        assert_eq!(c.safety().poison, Poison::All);
        set(&mut c, b"profile", b"hardened").unwrap();
        set(&mut c, b"poison_size", b"64").unwrap();
        assert_eq!(
            c.safety().poison,
            Poison::Some(64),
            "a size applies to the profile's some"
        );
        set(&mut c, b"quarantine", b"0").unwrap();
        assert_eq!(c.safety().quarantine, 0);
        // No profile checks zeroed memory; the entry does, under any profile.
        assert_eq!(c.safety().zero_check, ZeroCheck::Off);
        set(&mut c, b"zero_check", b"recycled").unwrap();
        assert_eq!(c.safety().zero_check, ZeroCheck::Recycled);
        set(&mut c, b"profile", b"debug").unwrap();
        set(&mut c, b"zero_check", b"all").unwrap();
        assert_eq!(c.safety().zero_check, ZeroCheck::All);
        assert_eq!(set(&mut c, b"zero_check", b"fresh"), Err("unknown value"));
        set(&mut c, b"profile", b"hardened").unwrap();
        set(&mut c, b"zero_check", b"off").unwrap();
        assert_eq!(c.selection().options.safety, c.safety());
        for (_, s) in PROFILES {
            assert_eq!(s.validate(), Ok(()));
            assert_eq!(s.zero_check, ZeroCheck::Off);
        }
    }

    #[test]
    fn numbers_are_checked() {
        assert_eq!(number(b"0", 5), Ok(0));
        assert_eq!(number(b"5", 5), Ok(5));
        assert_eq!(number(b"6", 5), Err("out of range"));
        assert_eq!(
            number(b"99999999999999999999999", usize::MAX),
            Err("out of range")
        );
        assert_eq!(number(b"-1", 5), Err("not a decimal number"));
        assert_eq!(number(b"1k", 5), Err("not a decimal number"));
    }

    #[test]
    fn explicit_entries_override_the_named_config() {
        let mut c = Conf::defaults();
        (find(b"arenas").unwrap().set)(&mut c, b"hashed").unwrap();
        (find(b"config").unwrap().set)(&mut c, b"mrf-current").unwrap();
        let s = c.selection();
        assert_eq!(
            (s.reuse, s.current_run, s.arenas),
            (Reuse::Mrf, true, Arenas::Hashed)
        );
        assert_eq!(c.exact_name(), None);
        (find(b"arenas").unwrap().set)(&mut c, b"config").unwrap();
        assert_eq!(c.exact_name(), Some("mrf-current"));
    }

    #[test]
    fn every_catalogue_name_is_accepted_and_selects_what_it_names() {
        let set = |c: &mut Conf, k: &[u8], v: &str| (find(k).unwrap().set)(c, v.as_bytes());
        for (name, reuse) in REUSE {
            let mut c = Conf::defaults();
            set(&mut c, b"reuse", name).unwrap();
            assert_eq!(c.selection().reuse, reuse, "{name}");
        }
        for (name, arenas) in ARENAS {
            let mut c = Conf::defaults();
            set(&mut c, b"arenas", name).unwrap();
            assert_eq!(c.selection().arenas, arenas, "{name}");
        }
        for n in NAMED {
            let mut c = Conf::defaults();
            set(&mut c, b"config", n.name).unwrap();
            assert_eq!(c.selection().policies(), n.policies, "{}", n.name);
            assert_eq!(c.exact_name(), Some(n.name));
        }
    }
}
