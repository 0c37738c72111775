//! Subjects of the user's for `--programs`: liballoclab.so under a conf of theirs
//! (`--preload-conf`) and any library of theirs (`--preload`), each checked to load before
//! anything is measured.

use super::libraries::{Preload, LIBALLOCLAB_HINT};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A subject of the user's: liballoclab.so under an `ALLOCLAB_CONF` of their own
/// (`compare --programs --preload-conf NAME=CONF`), so that settings no named config has
/// (`tcache_check:light`, `tcache_max:`, a profile) can be compared as jemalloc's users compare
/// `MALLOC_CONF` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfSubject {
    /// The subject's name in `--subjects`, `--baseline` and the reports.
    pub name: String,
    /// The `ALLOCLAB_CONF` string.
    pub conf: String,
}

/// `NAME=VALUE` as a subject's name (letters, digits, `-`, `_` and `.`) and a non-empty
/// value; `what` names the value and `example` shows one, for the errors.
fn named(s: &str, what: &str, example: &str) -> Result<(String, String), String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!("`{s}`: expected NAME={what}, as {example}"));
    };
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "`{s}`: the name `{name}` must be letters, digits, '-', '_' or '.'"
        ));
    }
    if value.is_empty() {
        return Err(format!("`{s}`: the {what} after '=' is empty"));
    }
    Ok((name.into(), value.into()))
}

impl std::str::FromStr for ConfSubject {
    type Err = String;

    /// `NAME=CONF`: a name of letters, digits, `-`, `_` and `.`, and a non-empty conf.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, conf) = named(
            s,
            "ALLOCLAB_CONF",
            "light=config:lifo-tcache,tcache_check:light",
        )?;
        Ok(ConfSubject { name, conf })
    }
}

/// A subject of the user's: any shared library preloaded in place of glibc's malloc
/// (`compare --programs --preload NAME=PATH`), such as an allocator built from a branch, or a
/// version Debian does not ship.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibrarySubject {
    /// The subject's name in `--subjects`, `--baseline` and the reports.
    pub name: String,
    /// The library.
    pub path: PathBuf,
}

impl std::str::FromStr for LibrarySubject {
    type Err = String;

    /// `NAME=PATH`: a name as `ConfSubject`'s, and a non-empty path.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, path) = named(s, "PATH", "mine=/opt/mymalloc/lib/libmymalloc.so")?;
        Ok(LibrarySubject {
            name,
            path: path.into(),
        })
    }
}

/// Adds a preload for each of `libs` to `preloads`. A name already taken, a path that is not
/// a file, or a library the dynamic loader will not preload (checked by starting `/bin/true`
/// under it: the loader then ignores it with a message, and the program still succeeds) is an
/// error, so that no subject is silently glibc.
pub fn add_library_subjects(
    preloads: &mut Vec<Preload>,
    libs: &[LibrarySubject],
) -> Result<(), String> {
    for l in libs {
        let flag = format!("--preload {}={}", l.name, l.path.display());
        name_free(preloads, &flag, &l.name)?;
        let path = std::fs::canonicalize(&l.path)
            .ok()
            .filter(|p| p.is_file())
            .ok_or_else(|| format!("{flag}: no such file"))?;
        if let Some(why) = refused(&path, &[], &flag)? {
            return Err(format!(
                "{flag}: the dynamic loader does not preload it: {why}"
            ));
        }
        preloads.push(Preload {
            name: l.name.clone(),
            describe: format!("{} (LD_PRELOAD)", path.display()),
            library: Some(path),
            env: vec![],
        });
    }
    Ok(())
}

/// An error if a subject of `preloads` is already called `name` (`flag` is the option that
/// asked for it, for the message).
fn name_free(preloads: &[Preload], flag: &str, name: &str) -> Result<(), String> {
    if preloads.iter().any(|p| p.name == name) {
        return Err(format!("{flag}: the name `{name}` is taken (pick another)"));
    }
    Ok(())
}

/// Starts `/bin/true` with `library` preloaded and `env` set: why it was refused (the
/// program failed, or the dynamic loader ignored the library, which it says on stderr while
/// the program still succeeds), or `None`. Not checked where there is no `/bin/true`.
fn refused(library: &Path, env: &[(&str, &str)], flag: &str) -> Result<Option<String>, String> {
    let probe = Path::new("/bin/true");
    if !probe.exists() {
        return Ok(None);
    }
    let out = Command::new(probe)
        .env("LD_PRELOAD", library)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start /bin/true to check {flag}: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    Ok(
        (!out.status.success() || err.contains("cannot be preloaded"))
            .then(|| err.trim().to_string()),
    )
}

/// Adds a preload for each of `confs` (liballoclab.so at `so`) to `preloads`. A name already
/// taken, or a conf liballoclab.so refuses (checked by starting `/bin/true` under it with
/// `abort_conf:true`), is an error; a bad entry can then not skew a measurement unnoticed.
pub fn add_conf_subjects(
    preloads: &mut Vec<Preload>,
    confs: &[ConfSubject],
    so: Option<&Path>,
) -> Result<(), String> {
    if confs.is_empty() {
        return Ok(());
    }
    let Some(so) = so else {
        return Err(format!(
            "--preload-conf needs liballoclab.so: {LIBALLOCLAB_HINT}"
        ));
    };
    for c in confs {
        let flag = format!("--preload-conf {}={}", c.name, c.conf);
        name_free(preloads, &flag, &c.name)?;
        // `abort_conf` anywhere in the string makes every bad entry fatal.
        let conf = format!("abort_conf:true,{}", c.conf);
        if let Some(why) = refused(so, &[("ALLOCLAB_CONF", &conf)], &flag)? {
            return Err(format!("{flag}: liballoclab.so refuses it: {why}"));
        }
        preloads.push(Preload {
            name: c.name.clone(),
            describe: format!("liballoclab.so, ALLOCLAB_CONF={}", c.conf),
            library: Some(so.to_path_buf()),
            env: vec![("ALLOCLAB_CONF".into(), conf)],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::libraries::peer_preloads;
    use super::{add_conf_subjects, add_library_subjects, ConfSubject, LibrarySubject};
    use std::path::Path;

    #[test]
    fn library_subjects_must_load_and_take_a_free_name() {
        let lib: LibrarySubject = "mine=/opt/x/libmine.so".parse().unwrap();
        assert_eq!(
            (lib.name.as_str(), lib.path.to_str()),
            ("mine", Some("/opt/x/libmine.so"))
        );
        let e = "mine".parse::<LibrarySubject>().unwrap_err();
        assert!(e.contains("expected NAME=PATH"), "{e}");
        let e = "mine=".parse::<LibrarySubject>().unwrap_err();
        assert!(e.contains("the PATH after '=' is empty"), "{e}");

        let dir = std::env::temp_dir().join(format!("alloclab-libsubject-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, so, text) = (
            dir.join("empty.c"),
            dir.join("libempty.so"),
            dir.join("not-elf.so"),
        );
        std::fs::write(&src, "int alloclab_test_empty(void) { return 0; }\n").unwrap();
        std::fs::write(&text, "not a library\n").unwrap();
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src)
            .status()
            .unwrap();
        assert!(built.success());
        let subject = |name: &str, path: &Path| LibrarySubject {
            name: name.into(),
            path: path.into(),
        };

        let mut p = peer_preloads();
        let n = p.len();
        for (bad, why) in [
            (subject("system", &so), "is taken"),
            (subject("gone", &dir.join("missing.so")), "no such file"),
            (subject("text", &text), "does not preload it"),
        ] {
            let e = add_library_subjects(&mut p, &[bad]).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        assert_eq!(p.len(), n, "nothing added by a refused subject");
        add_library_subjects(&mut p, &[subject("empty", &so)]).unwrap();
        let added = p.last().unwrap();
        assert_eq!(added.name, "empty");
        assert_eq!(
            added.library.as_deref(),
            Some(so.canonicalize().unwrap().as_path())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn conf_subjects_parse_and_bad_ones_say_why() {
        let c: ConfSubject = "light=config:lifo-tcache,tcache_check:light"
            .parse()
            .unwrap();
        assert_eq!(c.name, "light");
        assert_eq!(c.conf, "config:lifo-tcache,tcache_check:light");
        for (bad, why) in [
            ("light", "expected NAME=ALLOCLAB_CONF"),
            ("=config:lifo", "must be letters"),
            ("a b=config:lifo", "must be letters"),
            ("light=", "is empty"),
        ] {
            let e = bad.parse::<ConfSubject>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn conf_subjects_need_the_library_and_a_free_name() {
        let c: ConfSubject = "system=config:lifo".parse().unwrap();
        let mut p = peer_preloads();
        let n = p.len();
        let e = add_conf_subjects(&mut p, std::slice::from_ref(&c), None).unwrap_err();
        assert!(e.contains("needs liballoclab.so"), "{e}");
        // "system" is glibc's: taken (refused before the library is started).
        let e = add_conf_subjects(&mut p, &[c], Some(Path::new("/nonexistent.so"))).unwrap_err();
        assert!(e.contains("is taken"), "{e}");
        assert_eq!(p.len(), n);
        add_conf_subjects(&mut p, &[], None).unwrap();
    }
}
