//! What a run shows while it measures. On a terminal: an indicatif bar with the elapsed time,
//! the count, the time left and the measurement running now. Otherwise (a log file, CI, a
//! Slurm job's output): one line per finished measurement with the same facts, written as it
//! finishes, so that a long run is never silent and its log says how far it got.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Nothing (`--no-progress`).
    Hidden,
    /// A bar redrawn in place.
    Bar,
    /// One line per finished measurement.
    Lines,
}

impl Style {
    /// A bar when standard error is a terminal, lines otherwise; nothing unless `show`.
    pub fn for_stderr(show: bool) -> Style {
        if !show {
            Style::Hidden
        } else if std::io::stderr().is_terminal() {
            Style::Bar
        } else {
            Style::Lines
        }
    }
}

/// Progress over `len` measurements.
pub struct Progress {
    style: Style,
    bar: ProgressBar,
    len: u64,
    done: u64,
    /// Measurements done before this process started (resumed): not in the rate.
    carried: u64,
    started: Instant,
    current: String,
}

impl Progress {
    /// Progress over `len` measurements, shown as `style`.
    pub fn new(len: usize, style: Style) -> Progress {
        let bar = if style == Style::Bar {
            let bar = ProgressBar::new(len as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} (ETA {eta}) {msg}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress {
            style,
            bar,
            len: len as u64,
            done: 0,
            carried: 0,
            started: Instant::now(),
            current: String::new(),
        }
    }

    /// `n` measurements were done by an earlier run (a resumed journal).
    pub fn carried(&mut self, n: usize) {
        self.carried = n as u64;
        self.done = n as u64;
        self.bar.set_position(self.done);
        if self.style == Style::Lines && n > 0 {
            self.line(format_args!("{n} measurement(s) kept from the journal"));
        }
    }

    /// The measurement starting now, in words.
    pub fn start(&mut self, what: String) {
        self.bar.set_message(what.clone());
        self.current = what;
    }

    /// The measurement started last finished (`ok` false: it failed).
    pub fn finished(&mut self, ok: bool) {
        self.done += 1;
        self.bar.inc(1);
        if self.style == Style::Lines {
            let verdict = if ok { "" } else { " FAILED" };
            let eta = self
                .eta()
                .map_or_else(String::new, |t| format!(", {} left", clock(t)));
            let what = std::mem::take(&mut self.current);
            self.line(format_args!(
                "{}/{} {what}{verdict} ({} elapsed{eta})",
                self.done,
                self.len,
                clock(self.started.elapsed())
            ));
        }
    }

    /// A message that must not be drawn over (a failure's reason).
    pub fn println(&self, text: String) {
        match self.style {
            Style::Bar => self.bar.println(text),
            Style::Lines => self.line(format_args!("{text}")),
            Style::Hidden => eprintln!("{text}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Time left at this process's rate so far.
    fn eta(&self) -> Option<Duration> {
        let measured = self.done.checked_sub(self.carried)?;
        if measured == 0 {
            return None;
        }
        let per = self.started.elapsed().as_secs_f64() / measured as f64;
        Some(Duration::from_secs_f64(
            per * self.len.saturating_sub(self.done) as f64,
        ))
    }

    fn line(&self, args: std::fmt::Arguments<'_>) {
        // One write per line, flushed: a log read while the run goes shows every line so far.
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "alloclab: {args}");
        let _ = err.flush();
    }
}

/// `h:mm:ss`.
fn clock(t: Duration) -> String {
    let s = t.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_hours_minutes_seconds() {
        assert_eq!(clock(Duration::from_secs(0)), "0:00:00");
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 7 * 60 + 9)), "3:07:09");
    }

    #[test]
    fn the_time_left_counts_only_what_this_process_measured() {
        let mut p = Progress::new(10, Style::Hidden);
        assert_eq!(p.eta(), None);
        p.carried(4);
        assert_eq!(p.eta(), None, "nothing measured yet in this process");
        p.started = Instant::now() - Duration::from_secs(20);
        p.finished(true);
        p.finished(true);
        // 2 measured in 20 s, 4 left: 40 s.
        let eta = p.eta().unwrap().as_secs_f64();
        assert!((eta - 40.0).abs() < 1.0, "{eta}");
    }
}
