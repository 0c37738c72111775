//! The catalogue of allocators under test: every alloclab named config, the peers, and any
//! config a user registers (`cli::Registry`). An entry makes a fresh subject; the runner makes
//! exactly one per measuring process, so resident sizes belong to one allocator.

use alloclab_core::{Config, Heap, Options, Purge, TcacheCheck, MAX_ARENAS};
use alloclab_traces::subject::Subject;
use std::sync::Arc;

/// What kind of allocator an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubjectKind {
    /// An alloclab `Heap<C>`.
    Alloclab,
    /// Another allocator, called through its own entry points.
    Peer,
}

/// Makes a fresh subject.
pub type Make = Arc<dyn Fn() -> Box<dyn Subject> + Send + Sync>;

/// One allocator that can be measured.
#[derive(Clone)]
pub struct SubjectEntry {
    /// The name given on the command line (`--subjects`, `--config`).
    pub name: String,
    /// What it is.
    pub kind: SubjectKind,
    /// Makes a fresh one (its full description is `Subject::describe`).
    pub make: Make,
    /// For an alloclab heap: makes one with the given run-time options, which is what a
    /// `--heap-conf` subject derives from this entry ([`SubjectEntry::configured`]).
    pub with_options: Option<fn(Options) -> Box<dyn Subject>>,
}

fn heap_with<C: Config>(options: Options) -> Box<dyn Subject> {
    Box::new(Heap::<C>::with_options(options))
}

impl SubjectEntry {
    /// An alloclab heap with config `C` and default options, under `name`.
    pub fn alloclab<C: Config>(name: &str) -> SubjectEntry {
        SubjectEntry {
            name: name.to_string(),
            kind: SubjectKind::Alloclab,
            make: Arc::new(|| heap_with::<C>(Options::DEFAULT)),
            with_options: Some(heap_with::<C>),
        }
    }

    /// This alloclab heap with `options`, under `name`; `None` for an entry that takes no
    /// options (a peer).
    pub fn configured(&self, name: &str, options: Options) -> Option<SubjectEntry> {
        let with = self.with_options?;
        Some(SubjectEntry {
            name: name.to_string(),
            kind: self.kind,
            make: Arc::new(move || with(options)),
            with_options: Some(with),
        })
    }
}

fn named<C: Config>() -> SubjectEntry {
    SubjectEntry::alloclab::<C>(C::NAME)
}

/// Every alloclab named config, in `configs::NAMES` order.
pub fn named_configs() -> Vec<SubjectEntry> {
    alloclab_policies::for_each_config!(named())
        .into_iter()
        .collect()
}

// ---- run-time options: `--heap-conf` ----------------------------------------------------------

/// An alloclab heap with run-time options, measured in process as a subject of its own:
/// `NAME=config:BASE,key:value,...`, the syntax of `ALLOCLAB_CONF`, so that the same setting
/// can be compared in process (`compare --heap-conf`) and preloaded (`--preload-conf`). `BASE`
/// is any alloclab config the command knows (named or registered); the keys are the heap's
/// `Options` that a config does not fix (see [`HEAP_CONF_KEYS`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HeapConf {
    /// The subject's name.
    pub name: String,
    /// The config it derives from.
    pub base: String,
    /// Its options.
    pub options: Options,
}

/// The keys `--heap-conf` takes besides `config`, with their values.
pub const HEAP_CONF_KEYS: [(&str, &str); 6] = [
    ("tcache_check", "full|light"),
    (
        "tcache_max",
        "bytes one thread's cache may hold (0: no cache)",
    ),
    (
        "narenas",
        "0..=1024 (arenas of the fixed-count strategies; 0: their default)",
    ),
    ("dirty_max", "pages an arena keeps dirty before purging"),
    (
        "purge",
        "threshold|decay|decay:MS (when dirty pages and cached huge blocks go back to the OS)",
    ),
    (
        "huge_cache",
        "bytes of freed huge blocks kept for reuse (0: none)",
    ),
];

fn decimal(key: &str, v: &str, max: usize) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n <= max && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(format!(
            "`{key}:{v}`: expected a decimal number from 0 to {max}"
        )),
    }
}

impl std::str::FromStr for HeapConf {
    type Err = String;

    fn from_str(s: &str) -> Result<HeapConf, String> {
        let usage = "expected NAME=config:BASE,key:value,..., as \
                     light=config:lifo-tcache,tcache_check:light";
        let (name, conf) = s.split_once('=').ok_or_else(|| format!("`{s}`: {usage}"))?;
        if name.is_empty() || name.contains(|c: char| c == ',' || c.is_whitespace()) {
            return Err(format!(
                "`{s}`: `{name}` cannot be a subject name (non-empty, no commas or spaces)"
            ));
        }
        let mut base = None;
        let mut options = Options::DEFAULT;
        for entry in conf.split(',') {
            let (key, v) = entry
                .split_once(':')
                .ok_or_else(|| format!("`{s}`: `{entry}` is not key:value; {usage}"))?;
            match key {
                "config" => base = Some(v.to_string()),
                "tcache_check" => {
                    options.tcache_check = match v {
                        "full" => TcacheCheck::Full,
                        "light" => TcacheCheck::Light,
                        _ => return Err(format!("`{s}`: `{entry}`: expected full or light")),
                    }
                }
                "tcache_max" => options.tcache_max_bytes = decimal(key, v, usize::MAX - 1)?,
                "narenas" => options.narenas = decimal(key, v, MAX_ARENAS)?,
                "dirty_max" => options.dirty_max_pages = decimal(key, v, usize::MAX - 1)?,
                "purge" => {
                    options.purge = Some(Purge::parse(v.as_bytes()).ok_or_else(|| {
                        format!("`{s}`: `{entry}`: expected threshold, decay or decay:MS")
                    })?)
                }
                "huge_cache" => options.huge_cache_bytes = decimal(key, v, usize::MAX - 1)?,
                _ => {
                    let keys: Vec<&str> = HEAP_CONF_KEYS.iter().map(|k| k.0).collect();
                    return Err(format!(
                        "`{s}`: `{key}` is not an option of an in-process heap (config, {}); \
                         liballoclab.so's other options are measured with --programs \
                         --preload-conf",
                        keys.join(", ")
                    ));
                }
            }
        }
        let base = base.ok_or_else(|| format!("`{s}`: no config:BASE; {usage}"))?;
        Ok(HeapConf {
            name: name.to_string(),
            base,
            options,
        })
    }
}

/// `entries` and, after them, one subject per conf in `confs` (text as `HeapConf` parses it).
/// A conf whose name is taken, or whose base is not an alloclab config of `entries`, is an
/// error naming it.
pub fn with_heap_confs(
    entries: &[SubjectEntry],
    confs: &[String],
) -> Result<Vec<SubjectEntry>, String> {
    let mut all = entries.to_vec();
    for text in confs {
        let conf: HeapConf = text.parse().map_err(|e| format!("--heap-conf {e}"))?;
        if all.iter().any(|e| e.name == conf.name) {
            return Err(format!(
                "--heap-conf {text}: the name `{}` is already taken",
                conf.name
            ));
        }
        let base = all.iter().find(|e| e.name == conf.base).ok_or_else(|| {
            format!(
                "--heap-conf {text}: `{}` is not a config this command knows",
                conf.base
            )
        })?;
        let entry = base.configured(&conf.name, conf.options).ok_or_else(|| {
            format!(
                "--heap-conf {text}: `{}` is not an alloclab config (a peer takes no options)",
                conf.base
            )
        })?;
        all.push(entry);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heap_conf_reads_as_alloclab_conf_does() {
        let c: HeapConf = "light=config:lifo-tcache,tcache_check:light,narenas:4"
            .parse()
            .unwrap();
        assert_eq!((c.name.as_str(), c.base.as_str()), ("light", "lifo-tcache"));
        assert_eq!(c.options.tcache_check, TcacheCheck::Light);
        assert_eq!(c.options.narenas, 4);
        assert_eq!(c.options.tcache_max_bytes, usize::MAX);
        let c: HeapConf = "small=tcache_max:4096,config:lifo-tcache,dirty_max:0"
            .parse()
            .unwrap();
        assert_eq!(c.options.tcache_max_bytes, 4096);
        assert_eq!(c.options.dirty_max_pages, 0);
        assert_eq!(c.options.tcache_check, TcacheCheck::Full);
        assert_eq!(
            c.options.purge_policy(),
            Purge::Threshold,
            "dirty_max sets a threshold"
        );
        let c: HeapConf = "decay=config:lifo-tcache,purge:decay:250,huge_cache:0"
            .parse()
            .unwrap();
        assert_eq!(c.options.purge, Some(Purge::Decay(250)));
        assert_eq!(c.options.huge_cache_bytes, 0);
        let c: HeapConf = "t=config:lifo,purge:threshold".parse().unwrap();
        assert_eq!(c.options.purge_policy(), Purge::Threshold);
    }

    #[test]
    fn bad_heap_confs_are_refused_naming_the_fault() {
        for (text, says) in [
            ("config:lifo", "expected NAME="),
            ("=config:lifo", "cannot be a subject name"),
            ("a b=config:lifo", "cannot be a subject name"),
            ("x=tcache_check:light", "no config:BASE"),
            ("x=config:lifo,tcache_check", "is not key:value"),
            (
                "x=config:lifo,tcache_check:medium",
                "expected full or light",
            ),
            ("x=config:lifo,narenas:1025", "from 0 to 1024"),
            ("x=config:lifo,narenas:-1", "decimal number"),
            ("x=config:lifo,narenas:+4", "decimal number"),
            ("x=config:lifo,dirty_max:", "decimal number"),
            ("x=config:lifo,purge:never", "threshold, decay or decay:MS"),
            ("x=config:lifo,huge_cache:lots", "decimal number"),
            ("x=config:lifo,poison:all", "--preload-conf"),
        ] {
            let e = text.parse::<HeapConf>().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_heap_conf_subject_is_its_base_with_the_options() {
        let entries = crate::builtin_subjects();
        let all = with_heap_confs(
            &entries,
            &["light=config:lifo-tcache,tcache_check:light".to_string()],
        )
        .unwrap();
        assert_eq!(all.len(), entries.len() + 1);
        let light = all.last().unwrap();
        assert_eq!(
            (light.name.as_str(), light.kind),
            ("light", SubjectKind::Alloclab)
        );
        let s = (light.make)();
        assert_eq!(s.name(), "lifo-tcache");
        assert!(
            s.describe().contains("tcache_check:light"),
            "{}",
            s.describe()
        );
        let p = s.malloc(48);
        assert!(!p.is_null());
        // SAFETY: `p` came from this subject's malloc and is freed once.
        unsafe { s.free(p) };
        // The base itself is unchanged.
        let base = entries.iter().find(|e| e.name == "lifo-tcache").unwrap();
        assert!(!(base.make)().describe().contains("tcache_check"));

        for (conf, says) in [
            ("lifo=config:lifo-tcache", "already taken"),
            ("x=config:nonesuch", "not a config this command knows"),
            ("x=config:system", "a peer takes no options"),
        ] {
            let e = match with_heap_confs(&entries, &[conf.to_string()]) {
                Ok(_) => panic!("{conf}: accepted"),
                Err(e) => e,
            };
            assert!(e.contains(says), "{conf}: {e}");
        }
    }
}
