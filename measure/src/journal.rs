//! The journal of a `compare` run: each finished measurement appended to `journal.jsonl` in
//! the output directory and on disk before the next one starts, so that a run killed
//! (preempted, timed out, out of memory, SIGKILL) keeps what it measured and `--resume`
//! continues it (`resume.rs`). results.json, written at the end, makes it redundant: the run
//! removes it then.
//!
//! Format: JSON lines. The first is the [`Header`] (plan, build, schema version); every other
//! is one [`Measurement`] exactly as results.json holds it. A line counts once its newline is
//! on disk: the writer appends a whole line with its newline and then syncs, so a kill can only
//! leave a torn tail after the last newline, which reading drops. A complete line that is not a
//! record is damage rather than a torn write: reading refuses the file and leaves it untouched.

use super::durable::{self, sync_parent};
use super::schema::{Environment, Measurement, Plan, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The journal's name in the output directory.
pub const FILE_NAME: &str = "journal.jsonl";

/// The version of this format.
pub const JOURNAL_VERSION: u32 = 1;

/// The first line: what run the measurements belong to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`JOURNAL_VERSION`]; its presence is what marks the file as a journal.
    pub alloclab_journal: u32,
    /// The results schema the measurement lines follow.
    pub schema_version: u32,
    /// Where and with what build the run started.
    pub environment: Environment,
    /// The plan, shard included.
    pub plan: Plan,
}

impl Header {
    /// The header of a run of `plan` in `environment`, in this build's versions.
    pub fn new(environment: Environment, plan: Plan) -> Header {
        Header {
            alloclab_journal: JOURNAL_VERSION,
            schema_version: SCHEMA_VERSION,
            environment,
            plan,
        }
    }
}

/// A journal as read back.
#[derive(Clone, Debug)]
pub struct Contents {
    /// Its first line.
    pub header: Header,
    /// Every complete record, in the order written.
    pub measurements: Vec<Measurement>,
    /// Bytes after the last newline (a record torn by a kill), dropped.
    pub torn_bytes: usize,
    /// Bytes up to and including the last newline.
    kept_bytes: u64,
}

/// Reads the journal at `path`; `None` if there is none.
pub fn read(path: &Path) -> Result<Option<Contents>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    let kept = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let damaged = |line: usize, what: String| {
        format!(
            "{}: line {line} {what}: the journal is damaged (it was left as it is; move it \
             away to start the run over)",
            path.display()
        )
    };
    let mut lines = bytes[..kept].split(|&b| b == b'\n');
    let header = match lines.next().filter(|l| !l.is_empty()) {
        Some(line) => parse_header(line).map_err(|e| damaged(1, e))?,
        None => return Err(damaged(1, "is missing: no complete header".into())),
    };
    let mut measurements = Vec::new();
    // The split leaves one empty piece after the final newline.
    for (k, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let m = serde_json::from_slice::<Measurement>(line)
            .map_err(|e| damaged(k + 2, format!("is not a measurement ({e})")))?;
        measurements.push(m);
    }
    Ok(Some(Contents {
        header,
        measurements,
        torn_bytes: bytes.len() - kept,
        kept_bytes: kept as u64,
    }))
}

fn parse_header(line: &[u8]) -> Result<Header, String> {
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| format!("is not JSON ({e})"))?;
    match value
        .get("alloclab_journal")
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if v == u64::from(JOURNAL_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "is a journal of version {v}, but this alloclab reads version {JOURNAL_VERSION}"
            ))
        }
        None => return Err("is not an alloclab journal header".into()),
    }
    let header: Header =
        serde_json::from_value(value).map_err(|e| format!("is not a valid header ({e})"))?;
    if header.schema_version != SCHEMA_VERSION {
        return Err(format!(
            "records results schema version {}, but this alloclab reads version \
             {SCHEMA_VERSION}",
            header.schema_version
        ));
    }
    Ok(header)
}

/// A journal open for appending.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    header: Header,
    recorded: Vec<Measurement>,
}

impl Journal {
    /// Starts the journal at `path`, which must not exist yet, with `header` and the
    /// measurements `carried` over from an earlier result. It appears complete or not at
    /// all: written aside, synced, then linked into place (a link, unlike a rename, refuses to
    /// replace an existing journal).
    pub fn start(
        path: &Path,
        header: Header,
        carried: Vec<Measurement>,
    ) -> Result<Journal, String> {
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut text = line(&header)?;
        for m in &carried {
            text.push_str(&line(m)?);
        }
        durable::create_new(path, text.as_bytes()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                format!("{}: a journal is already there", path.display())
            } else {
                io(e)
            }
        })?;
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
            header,
            recorded: carried,
        })
    }

    /// Opens the journal `contents` was read from, at `path`, to append to it; a torn tail
    /// is cut off first, or the next record would be glued to it.
    pub fn reopen(path: &Path, contents: Contents) -> Result<Journal, String> {
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        if contents.torn_bytes > 0 {
            file.set_len(contents.kept_bytes)
                .and_then(|()| file.sync_all())
                .map_err(io)?;
        }
        Ok(Journal {
            file,
            path: path.to_path_buf(),
            header: contents.header,
            recorded: contents.measurements,
        })
    }

    /// The run this journal is of.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The measurements it held when opened.
    pub fn recorded(&self) -> &[Measurement] {
        &self.recorded
    }

    /// Appends `m` and waits until it is on disk.
    pub fn append(&mut self, m: &Measurement) -> Result<(), String> {
        let text = line(m)?;
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| format!("{}: cannot record a measurement: {e}", self.path.display()))
    }

    /// Removes the journal, once results.json holds everything it did.
    pub fn finish(self) -> Result<(), String> {
        let io = |e: std::io::Error| format!("{}: {e}", self.path.display());
        std::fs::remove_file(&self.path).map_err(io)?;
        sync_parent(&self.path).map_err(io)
    }
}

/// One record: compact JSON (which never holds a raw newline) and its newline.
fn line<T: Serialize>(record: &T) -> Result<String, String> {
    let mut text =
        serde_json::to_string(record).map_err(|e| format!("cannot encode a record: {e}"))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixture;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("alloclab-journal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn header() -> Header {
        let r = test_fixture::results(3);
        Header::new(r.environment, r.plan)
    }

    #[test]
    fn records_read_back_in_order_with_a_torn_tail_dropped() {
        let dir = scratch("torn");
        let path = dir.join(FILE_NAME);
        let ms = test_fixture::results(3).measurements;
        let mut j = Journal::start(&path, header(), ms[..2].to_vec()).unwrap();
        j.append(&ms[2]).unwrap();
        drop(j);
        let whole = std::fs::read(&path).unwrap();
        // A kill in the middle of the next record's write.
        let next = line(&ms[3]).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&next.as_bytes()[..next.len() / 2]).unwrap();
        drop(f);

        let back = read(&path).unwrap().unwrap();
        assert_eq!(back.header, header());
        assert_eq!(back.measurements, ms[..3]);
        assert_eq!(back.torn_bytes, next.len() / 2);
        // Reopening cuts the torn tail, so the next record starts on a line of its own.
        let mut j = Journal::reopen(&path, back).unwrap();
        assert_eq!(j.recorded(), &ms[..3]);
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        j.append(&ms[3]).unwrap();
        let back = read(&path).unwrap().unwrap();
        assert_eq!(back.measurements, ms[..4]);
        assert_eq!(back.torn_bytes, 0);
        j.finish().unwrap();
        assert!(!path.exists());
        assert!(read(&path).unwrap().is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_journal_is_never_replaced_and_damage_is_refused_untouched() {
        let dir = scratch("damage");
        let path = dir.join(FILE_NAME);
        let ms = test_fixture::results(3).measurements;
        Journal::start(&path, header(), ms[..1].to_vec()).unwrap();
        let err = Journal::start(&path, header(), Vec::new()).unwrap_err();
        assert!(err.contains("already there"), "{err}");
        assert_eq!(read(&path).unwrap().unwrap().measurements, ms[..1]);

        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"subject\": \"half\"}\n");
        text.push_str(&line(&ms[1]).unwrap());
        std::fs::write(&path, &text).unwrap();
        let err = read(&path).unwrap_err();
        assert!(
            err.contains("line 3 is not a measurement") && err.contains("damaged"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "left as it is"
        );

        for (bad, expect) in [
            ("", "no complete header"),
            ("{\"alloclab_journal\": 1}", "no complete header"),
            ("not json\n", "is not JSON"),
            (
                "{\"schema_version\": 1}\n",
                "not an alloclab journal header",
            ),
            ("{\"alloclab_journal\": 9}\n", "version 9"),
            ("{\"alloclab_journal\": 1}\n", "not a valid header"),
        ] {
            std::fs::write(&path, bad).unwrap();
            let err = read(&path).unwrap_err();
            assert!(err.contains(expect), "{bad:?}: {err}");
        }
        let mut h = serde_json::to_value(header()).unwrap();
        h["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
        std::fs::write(&path, format!("{h}\n")).unwrap();
        let err = read(&path).unwrap_err();
        assert!(err.contains("schema version 2"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
