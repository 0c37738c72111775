//! The file the `.so` writes, `probe-<pid>.txt` in `ALLOCLAB_PROBE_DIR`, and its reader.
//!
//! Written without allocating: a stack buffer flushed with `write(2)` to a file opened with
//! `O_APPEND`, under a spin lock so that two threads exiting at once do not interleave their
//! blocks. Text, one item per line, integers only:
//!
//! ```text
//! alloclab-probe 1 pid=4242 clock=tsc overhead=18 every=1 resolution=20
//! thread 1 shared=0
//! k malloc 1000 1000 52000 900
//! h malloc 40:12 41:700 ...
//! end
//! span 123456789 45678901
//! ```
//!
//! The first line opens each process's file; then one block per thread (`k KIND calls timed
//! ticks max`, then `h KIND bucket:count ...` lines, which may repeat for one kind); after
//! each block, `span TICKS NS`, the clocks since start, whose ratio converts ticks to
//! nanoseconds (the reader takes the last, longest one).

use super::clock;
use super::record::{self, Kind, ThreadRecord, KINDS};
use core::sync::atomic::{AtomicBool, Ordering};

// ---- writing ----------------------------------------------------------------------------------

/// A line buffer flushed to a file descriptor.
pub struct Writer {
    fd: libc::c_int,
    buf: [u8; 4096],
    len: usize,
}

impl Writer {
    /// A writer to `fd` (which it does not close).
    pub fn new(fd: libc::c_int) -> Writer {
        Writer {
            fd,
            buf: [0; 4096],
            len: 0,
        }
    }

    /// Appends `s`.
    pub fn bytes(&mut self, s: &[u8]) -> &mut Writer {
        for chunk in s.chunks(self.buf.len()) {
            if self.len + chunk.len() > self.buf.len() {
                self.flush();
            }
            self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        self
    }

    /// Appends `v` in decimal.
    pub fn num(&mut self, mut v: u64) -> &mut Writer {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.bytes(&digits[i..])
    }

    /// Writes out what is buffered (a failed write loses it: the probe must not stop the
    /// program it measures).
    pub fn flush(&mut self) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: writes the initialized bytes `off..len` of `buf`.
            let n =
                unsafe { libc::write(self.fd, self.buf[off..].as_ptr().cast(), self.len - off) };
            if n <= 0 {
                break;
            }
            off += n as usize;
        }
        self.len = 0;
    }
}

/// The first line of a process's file.
pub fn header(w: &mut Writer, pid: u64, overhead: u64, resolution: u64) {
    w.bytes(b"alloclab-probe 1 pid=")
        .num(pid)
        .bytes(b" clock=")
        .bytes(clock::source().name().as_bytes())
        .bytes(b" overhead=")
        .num(overhead)
        .bytes(b" every=")
        .num(record::every())
        .bytes(b" resolution=")
        .num(resolution)
        .bytes(b"\n");
}

/// One record's block and the span after it; nothing for a record without calls.
pub fn block(w: &mut Writer, r: &ThreadRecord) {
    if r.calls() == 0 {
        return;
    }
    w.bytes(b"thread ")
        .num(r.serial.load(Ordering::Relaxed))
        .bytes(if r.is_shared() {
            b" shared=1\n"
        } else {
            b" shared=0\n"
        });
    for (kind, k) in Kind::ALL.iter().zip(&r.kinds) {
        let calls = k.calls.load(Ordering::Relaxed);
        if calls == 0 {
            continue;
        }
        let name = kind.name().as_bytes();
        w.bytes(b"k ")
            .bytes(name)
            .bytes(b" ")
            .num(calls)
            .bytes(b" ")
            .num(k.timed.load(Ordering::Relaxed))
            .bytes(b" ")
            .num(k.ticks.load(Ordering::Relaxed))
            .bytes(b" ")
            .num(k.max.load(Ordering::Relaxed))
            .bytes(b"\n");
        let mut on_line = 0;
        for (i, c) in k.hist.nonzero() {
            if on_line == 0 {
                w.bytes(b"h ").bytes(name);
            }
            w.bytes(b" ").num(i as u64).bytes(b":").num(c);
            on_line += 1;
            if on_line == 32 {
                w.bytes(b"\n");
                on_line = 0;
            }
        }
        if on_line > 0 {
            w.bytes(b"\n");
        }
    }
    let (ticks, ns) = clock::span();
    w.bytes(b"end\nspan ")
        .num(ticks)
        .bytes(b" ")
        .num(ns)
        .bytes(b"\n");
}

static WRITING: AtomicBool = AtomicBool::new(false);

/// Runs `f` while no other thread of this process writes a dump.
pub fn exclusively(f: impl FnOnce()) {
    while WRITING
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    f();
    WRITING.store(false, Ordering::Release);
}

/// Frees the lock in a forked child (its holder, if any, is not in the child).
pub fn reset_after_fork() {
    WRITING.store(false, Ordering::Release);
}

// ---- reading ----------------------------------------------------------------------------------

/// One kind's figures in one thread.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindFigures {
    /// Calls made.
    pub calls: u64,
    /// Calls timed.
    pub timed: u64,
    /// Ticks inside the timed calls.
    pub ticks: u64,
    /// The longest timed call (ticks).
    pub max: u64,
    /// Non-empty buckets, ascending.
    pub hist: Vec<(usize, u64)>,
}

/// One thread's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadFigures {
    /// The thread's number in its process.
    pub serial: u64,
    /// Whether this is the record threads shared (not one thread).
    pub shared: bool,
    /// Per kind, indexed like `Kind::ALL`.
    pub kinds: [KindFigures; KINDS],
}

impl ThreadFigures {
    /// A record's figures, read now.
    pub fn of(r: &ThreadRecord) -> ThreadFigures {
        let mut t = ThreadFigures {
            serial: r.serial.load(Ordering::Relaxed),
            shared: r.is_shared(),
            ..ThreadFigures::default()
        };
        for (f, k) in t.kinds.iter_mut().zip(&r.kinds) {
            f.calls = k.calls.load(Ordering::Relaxed);
            f.timed = k.timed.load(Ordering::Relaxed);
            f.ticks = k.ticks.load(Ordering::Relaxed);
            f.max = k.max.load(Ordering::Relaxed);
            f.hist = k.hist.nonzero().collect();
        }
        t
    }

    /// Calls of every kind.
    pub fn calls(&self) -> u64 {
        self.kinds.iter().map(|k| k.calls).sum()
    }
}

/// One process's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Dump {
    /// The process.
    pub pid: u64,
    /// The clock its ticks are of.
    pub clock: clock::Source,
    /// The probe's own cost per timed call (ticks).
    pub overhead: u64,
    /// One call in how many was timed.
    pub every: u64,
    /// The timer's resolution (ticks; 0: not recorded, a file from before it was).
    pub resolution: u64,
    /// Ticks and nanoseconds since the probe started, at its last block.
    pub span: (u64, u64),
    /// Its threads.
    pub threads: Vec<ThreadFigures>,
}

fn field<'a>(word: Option<&'a str>, key: &str, line: usize) -> Result<&'a str, String> {
    word.and_then(|w| w.strip_prefix(key))
        .and_then(|w| w.strip_prefix('='))
        .ok_or_else(|| format!("line {line}: expected `{key}=...`"))
}

fn number(s: Option<&str>, what: &str, line: usize) -> Result<u64, String> {
    let s = s.ok_or_else(|| format!("line {line}: {what} missing"))?;
    s.parse()
        .map_err(|_| format!("line {line}: {what} `{s}` is not a number"))
}

impl Dump {
    /// Reads a dump's text; a malformed line is an error naming it.
    pub fn parse(text: &str) -> Result<Dump, String> {
        // A torn end (the process was killed while writing) loses its last block: the partial
        // line goes here, the block that never reached `end` below.
        let whole = match text.rfind('\n') {
            Some(i) if !text.ends_with('\n') => &text[..=i],
            None if !text.is_empty() => return Err("probe file without a whole line".into()),
            _ => text,
        };
        let mut lines = whole.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (n, first) = lines.next().ok_or("empty probe file")?;
        let mut w = first.split(' ');
        if w.next() != Some("alloclab-probe") || w.next() != Some("1") {
            return Err(format!(
                "line {n}: not an alloclab-probe 1 file (`{first}`)"
            ));
        }
        let pid = number(Some(field(w.next(), "pid", n)?), "pid", n)?;
        let clock_name = field(w.next(), "clock", n)?;
        let clock = clock::Source::from_name(clock_name)
            .ok_or_else(|| format!("line {n}: unknown clock `{clock_name}`"))?;
        let overhead = number(Some(field(w.next(), "overhead", n)?), "overhead", n)?;
        let every = number(Some(field(w.next(), "every", n)?), "every", n)?;
        let resolution = match w.next() {
            None => 0,
            word => number(Some(field(word, "resolution", n)?), "resolution", n)?,
        };
        let mut d = Dump {
            pid,
            clock,
            overhead,
            every: every.max(1),
            resolution,
            span: (0, 0),
            threads: Vec::new(),
        };
        let mut open: Option<ThreadFigures> = None;
        for (n, line) in lines {
            let mut w = line.split(' ');
            let kind_of = |name: Option<&str>| {
                let name = name.unwrap_or("");
                Kind::from_name(name).ok_or_else(|| format!("line {n}: unknown call kind `{name}`"))
            };
            match (w.next(), open.as_mut()) {
                (Some("thread"), None) => {
                    let serial = number(w.next(), "thread number", n)?;
                    let shared = match field(w.next(), "shared", n)? {
                        "0" => false,
                        "1" => true,
                        v => return Err(format!("line {n}: shared={v}: expected 0 or 1")),
                    };
                    open = Some(ThreadFigures {
                        serial,
                        shared,
                        ..ThreadFigures::default()
                    });
                }
                (Some("k"), Some(t)) => {
                    let k = &mut t.kinds[kind_of(w.next())? as usize];
                    k.calls = number(w.next(), "calls", n)?;
                    k.timed = number(w.next(), "timed calls", n)?;
                    k.ticks = number(w.next(), "ticks", n)?;
                    k.max = number(w.next(), "max", n)?;
                    if k.timed > k.calls {
                        return Err(format!("line {n}: more calls timed than made"));
                    }
                }
                (Some("h"), Some(t)) => {
                    let k = &mut t.kinds[kind_of(w.next())? as usize];
                    for pair in w {
                        let (i, c) = pair
                            .split_once(':')
                            .ok_or_else(|| format!("line {n}: `{pair}` is not bucket:count"))?;
                        let i = number(Some(i), "bucket", n)? as usize;
                        if i >= super::histogram::BUCKETS
                            || k.hist.last().is_some_and(|&(last, _)| last >= i)
                        {
                            return Err(format!("line {n}: bucket {i} out of range or order"));
                        }
                        k.hist.push((i, number(Some(c), "count", n)?));
                    }
                }
                (Some("end"), Some(_)) => d.threads.extend(open.take()),
                (Some("span"), None) => {
                    let span = (number(w.next(), "ticks", n)?, number(w.next(), "ns", n)?);
                    if span.1 >= d.span.1 {
                        d.span = span;
                    }
                }
                _ => return Err(format!("line {n}: unexpected `{line}`")),
            }
        }
        for t in &d.threads {
            for k in &t.kinds {
                let in_hist: u64 = k.hist.iter().map(|&(_, c)| c).sum();
                if in_hist != k.timed {
                    return Err(format!(
                        "thread {}: {} timed calls but {in_hist} in the histogram",
                        t.serial, k.timed
                    ));
                }
            }
        }
        Ok(d)
    }

    /// Nanoseconds per tick.
    pub fn ns_per_tick(&self) -> f64 {
        match self.clock {
            clock::Source::Monotonic => 1.0,
            clock::Source::Tsc if self.span.0 > 0 => self.span.1 as f64 / self.span.0 as f64,
            // No span (a process that wrote no block): no figure can use it anyway.
            clock::Source::Tsc => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_reads_back_and_damage_is_named() {
        let text = "alloclab-probe 1 pid=7 clock=tsc overhead=20 every=1\n\
                    thread 1 shared=0\nk malloc 3 3 300 150\nh malloc 40:2 90:1\nend\n\
                    span 1000 500\nthread 2 shared=1\nk free 1 1 10 10\nh free 10:1\nend\n\
                    span 2000 1000\n";
        let d = Dump::parse(text).unwrap();
        assert_eq!((d.pid, d.overhead, d.span), (7, 20, (2000, 1000)));
        assert_eq!(d.ns_per_tick(), 0.5);
        assert_eq!(d.threads.len(), 2);
        assert_eq!(d.threads[0].kinds[0].hist, vec![(40, 2), (90, 1)]);
        assert!(d.threads[1].shared);

        let bad = text.replace("h malloc 40:2", "h malloc 40:1");
        let e = Dump::parse(&bad).unwrap_err();
        assert!(e.contains("3 timed calls but 2"), "{e}");
        let e = Dump::parse(&text.replace("k free", "k frees")).unwrap_err();
        assert!(e.contains("line 8: unknown call kind `frees`"), "{e}");
        assert!(Dump::parse("alloclab-probe 2 pid=1\n").is_err());
        // A torn last block is dropped, not an error.
        let torn = "alloclab-probe 1 pid=7 clock=monotonic overhead=20 every=1\nthread 1 shared=0\nk malloc 3";
        assert!(Dump::parse(torn).unwrap().threads.is_empty());
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let mut w = Writer::new(fds[1]);
        w.num(0).bytes(b" ").num(u64::MAX).bytes(b"\n").flush();
        let mut buf = [0u8; 64];
        // SAFETY: reads into `buf`; both descriptors are ours and closed after.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        // SAFETY: as above.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        assert_eq!(&buf[..n as usize], b"0 18446744073709551615\n");
    }
}
