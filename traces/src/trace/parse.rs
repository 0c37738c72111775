//! The parser: lines to calls (syntax, every pid), calls to operations on slots (meaning, the
//! replayed pid). Each line is checked completely before it changes any state, so that a bad
//! line skipped with `skip_bad` leaves the trace consistent.

use super::error::{snippet, LineError, Problem, TraceError, Written};
use super::input::{decoder, Line, LineReader, MAX_LINE};
use super::mapped::MappedVec;
use super::{Form, Func, Op, PidLines, Slot, Trace, NO_SLOT, VALLOC_ALIGN};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

/// Which process of a multi-process trace to decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pid {
    /// The pid of the first (good) line.
    #[default]
    First,
    /// This pid, as written in the trace.
    Is(u64),
}

/// How to parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// The process to decode.
    pub pid: Pid,
    /// Count and skip bad lines instead of stopping at the first.
    pub skip_bad: bool,
}

/// Bad lines kept in [`Trace::skipped_examples`].
const EXAMPLES: usize = 10;

/// Parses a plain-text trace held in memory. Any bytes give a trace or an error, never a
/// panic: this is the fuzz target's entry point.
pub fn parse(text: &[u8], options: &ParseOptions) -> Result<Trace, TraceError> {
    parse_reader(text, options)
}

/// Parses a plain-text trace from a reader (see [`super::read`] for compressed input).
pub fn parse_reader<R: BufRead>(reader: R, options: &ParseOptions) -> Result<Trace, TraceError> {
    let mut lines = LineReader::new(reader, MAX_LINE);
    let mut p = Parser::new(*options);
    let mut number = 0u64;
    loop {
        let line = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(error) => {
                return Err(TraceError::Io {
                    after_line: number,
                    error,
                })
            }
        };
        number += 1;
        let outcome = match line {
            Line::Text(text) => p.line(text, number),
            Line::TooLong => Err(Problem::LineTooLong { max: MAX_LINE }),
        };
        if let Err(problem) = outcome {
            let e = LineError {
                line: number,
                problem,
            };
            if !options.skip_bad {
                return Err(e.into());
            }
            p.skipped += 1;
            if p.skipped_examples.len() < EXAMPLES {
                p.skipped_examples.push(e);
            }
        }
    }
    p.finish(number)
}

/// A pointer as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Null,
    Raw(u64),
    Munged(u64),
}

impl Value {
    fn written(self) -> Option<Written> {
        match self {
            Value::Null => None,
            Value::Raw(value) => Some(Written {
                value,
                form: Form::Raw,
            }),
            Value::Munged(value) => Some(Written {
                value,
                form: Form::Munged,
            }),
        }
    }
}

/// One line, syntax checked.
struct Call {
    pid: u64,
    tid: u64,
    func: Func,
    /// `realloc` and `free`: the pointer argument.
    ptr: Value,
    /// Sizes, counts, alignments, in the order written (pointer arguments excluded).
    nums: [u64; 2],
    result: Option<Value>,
}

/// What the live map knows of a pointer.
#[derive(Clone, Copy)]
struct Live {
    slot: Slot,
    line: u64,
}

struct Parser {
    options: ParseOptions,
    form: Option<(Form, u64)>,
    pids: Vec<PidLines>,
    pid_index: HashMap<u64, usize>,
    selected: Option<u64>,
    ops: MappedVec<Op>,
    /// Live pointers of the selected pid, by address (raw) or slot id (munged).
    live: HashMap<u64, Live>,
    threads: Vec<u64>,
    thread_index: HashMap<u64, u32>,
    /// Free slots per thread: a slot freed by a thread is reused only by that thread, so that
    /// recycling adds no ordering between threads that the program did not have.
    free_slots: Vec<Vec<Slot>>,
    next_slot: Slot,
    failed_in_recording: u64,
    skipped: u64,
    skipped_examples: Vec<LineError>,
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if matches!(first, b' ' | b'\t' | b'\r') {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if matches!(last, b' ' | b'\t' | b'\r') {
            s = rest;
        } else {
            break;
        }
    }
    s
}

fn is_space(b: &u8) -> bool {
    matches!(b, b' ' | b'\t')
}

fn number(field: &'static str, text: &[u8]) -> Result<u64, Problem> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return Err(Problem::BadNumber {
            field,
            text: snippet(text),
        });
    }
    text.iter()
        .try_fold(0u64, |n, d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .ok_or_else(|| Problem::NumberTooLarge {
            field,
            text: snippet(text),
        })
}

fn pointer(text: &[u8]) -> Result<Value, Problem> {
    let bad = || Problem::BadPointer {
        text: snippet(text),
    };
    match text {
        b"(nil)" | b"0" => Ok(Value::Null),
        [b'#', digits @ ..] => number("slot", digits)
            .map(Value::Munged)
            .map_err(|e| match e {
                Problem::BadNumber { .. } => bad(),
                other => other,
            }),
        [b'0', b'x' | b'X', hex @ ..] => {
            if hex.is_empty() || !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(bad());
            }
            let v = hex
                .iter()
                .try_fold(0u64, |n, &d| {
                    let digit = (d as char).to_digit(16)? as u64;
                    n.checked_mul(16)?.checked_add(digit)
                })
                .ok_or_else(|| Problem::NumberTooLarge {
                    field: "pointer",
                    text: snippet(text),
                })?;
            Ok(if v == 0 { Value::Null } else { Value::Raw(v) })
        }
        _ => Err(bad()),
    }
}

/// Splits `<pid> [<tid>] <func>(<args>)[=<result>]`.
fn split_call(line: &[u8]) -> Result<Call, Problem> {
    let pid_end = line.iter().position(is_space).unwrap_or(line.len());
    let pid = number("pid", &line[..pid_end])?;
    let rest = trim(&line[pid_end..]);
    if rest.is_empty() {
        return Err(Problem::MissingCall);
    }
    let Some(open) = rest.iter().position(|&b| b == b'(') else {
        return Err(Problem::BadCall {
            text: snippet(rest),
        });
    };
    let head = trim(&rest[..open]);
    let (tid, name) = match head.iter().position(is_space) {
        None => (pid, head),
        Some(i) => {
            let name = trim(&head[i..]);
            if name.iter().any(is_space) {
                return Err(Problem::BadCall {
                    text: snippet(rest),
                });
            }
            (number("tid", &head[..i])?, name)
        }
    };
    if name.is_empty() {
        return Err(Problem::BadCall {
            text: snippet(rest),
        });
    }
    let func = Func::from_name(name).ok_or_else(|| Problem::UnknownFunction {
        name: snippet(name),
    })?;
    let after_open = &rest[open + 1..];
    // The matching parenthesis: an argument may itself be `(nil)`.
    let mut depth = 1usize;
    let close = after_open.iter().position(|&b| {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        depth == 0
    });
    let Some(close) = close else {
        return Err(Problem::BadCall {
            text: snippet(rest),
        });
    };
    let args = trim(&after_open[..close]);
    let tail = trim(&after_open[close + 1..]);

    let mut fields: [&[u8]; 2] = [b""; 2];
    let found = if args.is_empty() {
        0
    } else {
        let mut n = 0;
        for a in args.split(|&b| b == b',') {
            if n < 2 {
                fields[n] = trim(a);
            }
            n += 1;
        }
        n
    };
    if found != func.arity() {
        return Err(Problem::ArgumentCount {
            func,
            expected: func.arity(),
            found,
        });
    }
    let mut call = Call {
        pid,
        tid,
        func,
        ptr: Value::Null,
        nums: [0; 2],
        result: None,
    };
    match func {
        Func::Free => call.ptr = pointer(fields[0])?,
        Func::Realloc => {
            call.ptr = pointer(fields[0])?;
            call.nums[0] = number("size", fields[1])?;
        }
        Func::Malloc | Func::Valloc => call.nums[0] = number("size", fields[0])?,
        Func::Calloc => {
            call.nums[0] = number("count", fields[0])?;
            call.nums[1] = number("size", fields[1])?;
        }
        Func::PosixMemalign | Func::AlignedAlloc | Func::Memalign => {
            call.nums[0] = number("alignment", fields[0])?;
            call.nums[1] = number("size", fields[1])?;
        }
        Func::JemallocStats => {}
    }
    match tail {
        [] => {
            if func.returns_pointer() {
                return Err(Problem::MissingResult { func });
            }
        }
        [b'=', value @ ..] => {
            if !func.returns_pointer() {
                return Err(Problem::UnexpectedResult { func });
            }
            call.result = Some(pointer(trim(value))?);
        }
        _ => {
            return Err(Problem::TrailingText {
                text: snippet(tail),
            })
        }
    }
    Ok(call)
}

impl Parser {
    fn new(options: ParseOptions) -> Self {
        Parser {
            options,
            form: None,
            pids: Vec::new(),
            pid_index: HashMap::new(),
            selected: match options.pid {
                Pid::First => None,
                Pid::Is(p) => Some(p),
            },
            ops: MappedVec::new(),
            live: HashMap::new(),
            threads: Vec::new(),
            thread_index: HashMap::new(),
            free_slots: Vec::new(),
            next_slot: 0,
            failed_in_recording: 0,
            skipped: 0,
            skipped_examples: Vec::new(),
        }
    }

    /// Checks that `v` agrees with the trace's form (the first pointer decides it).
    fn check_form(&self, v: Value) -> Result<Option<Form>, Problem> {
        let found = match v {
            Value::Null => return Ok(None),
            Value::Raw(_) => Form::Raw,
            Value::Munged(_) => Form::Munged,
        };
        match self.form {
            Some((form, since)) if form != found => Err(Problem::MixedForms { found, since }),
            _ => Ok(Some(found)),
        }
    }

    fn line(&mut self, text: &[u8], number: u64) -> Result<(), Problem> {
        let text = trim(text);
        if text.is_empty() {
            return Ok(());
        }
        let call = split_call(text)?;
        let mut form = self.check_form(call.ptr)?;
        if let Some(r) = call.result {
            match (form, self.check_form(r)?) {
                (Some(a), Some(b)) if a != b => {
                    return Err(Problem::MixedForms {
                        found: b,
                        since: number,
                    })
                }
                (a, b) => form = a.or(b),
            }
        }
        let selected = self.selected.unwrap_or(call.pid);
        if call.pid == selected {
            self.apply(&call, number)?;
            self.selected = Some(selected);
        }
        // The line is good: only now does it count.
        if let (None, Some(f)) = (self.form, form) {
            self.form = Some((f, number));
        }
        match self.pid_index.get(&call.pid) {
            Some(&i) => self.pids[i].lines += 1,
            None => {
                self.pid_index.insert(call.pid, self.pids.len());
                self.pids.push(PidLines {
                    pid: call.pid,
                    lines: 1,
                });
            }
        }
        Ok(())
    }

    /// Resolves a freed or reallocated pointer to its live slot; `None` means null. A raw
    /// pointer must be live; a munged slot id that holds nothing stands for null (the
    /// munger's encoding of a null pointer).
    fn resolve(&self, func: Func, v: Value) -> Result<Option<(u64, Live)>, Problem> {
        let key = match v {
            Value::Null => return Ok(None),
            Value::Raw(k) | Value::Munged(k) => k,
        };
        match self.live.get(&key) {
            Some(&live) => Ok(Some((key, live))),
            None => match v {
                Value::Raw(_) => Err(Problem::NotLive {
                    func,
                    ptr: v.written().expect("not null"),
                }),
                _ => Ok(None),
            },
        }
    }

    fn thread(&mut self, tid: u64) -> u32 {
        if let Some(&t) = self.thread_index.get(&tid) {
            return t;
        }
        let t = self.threads.len() as u32;
        self.threads.push(tid);
        self.thread_index.insert(tid, t);
        self.free_slots.push(Vec::new());
        t
    }

    fn release(&mut self, thread: u32, key: u64) -> Slot {
        let live = self.live.remove(&key).expect("resolved as live");
        self.free_slots[thread as usize].push(live.slot);
        live.slot
    }

    /// Turns a call of the selected pid into an operation. Checks everything first.
    fn apply(&mut self, call: &Call, number: u64) -> Result<(), Problem> {
        let func = call.func;
        if func == Func::JemallocStats {
            let thread = self.thread(call.tid);
            self.ops.push(Op {
                func,
                thread,
                slot: NO_SLOT,
                old: NO_SLOT,
                size: 0,
                arg: 0,
            });
            return Ok(());
        }
        if func == Func::Free {
            let old = self.resolve(func, call.ptr)?;
            let thread = self.thread(call.tid);
            let slot = match old {
                Some((key, _)) => self.release(thread, key),
                None => NO_SLOT,
            };
            self.ops.push(Op {
                func,
                thread,
                slot,
                old: NO_SLOT,
                size: 0,
                arg: 0,
            });
            return Ok(());
        }

        let (size, arg) = match func {
            Func::Malloc | Func::Realloc => (call.nums[0], 0),
            Func::Valloc => (call.nums[0], VALLOC_ALIGN),
            Func::Calloc => (call.nums[1], call.nums[0]),
            _ => (call.nums[1], call.nums[0]),
        };
        let old = if func == Func::Realloc {
            self.resolve(func, call.ptr)?
        } else {
            None
        };
        let result = call.result.expect("allocations have a result");
        let Some(written) = result.written() else {
            // The recorded call failed. `realloc(p, 0)` returning null is glibc freeing `p`;
            // any other failure leaves the program's memory as it was.
            if let (Func::Realloc, 0, Some((key, _))) = (func, size, old) {
                let thread = self.thread(call.tid);
                let slot = self.release(thread, key);
                self.ops.push(Op {
                    func: Func::Free,
                    thread,
                    slot,
                    old: NO_SLOT,
                    size: 0,
                    arg: 0,
                });
            } else {
                self.failed_in_recording += 1;
            }
            return Ok(());
        };
        match func {
            Func::PosixMemalign | Func::AlignedAlloc | Func::Memalign if !arg.is_power_of_two() => {
                return Err(Problem::AlignmentNotPowerOfTwo { func, align: arg });
            }
            Func::Calloc if arg.checked_mul(size).is_none() => {
                return Err(Problem::CallocOverflow { count: arg, size });
            }
            _ => {}
        }
        if let Some(live) = self.live.get(&written.value) {
            let freed_now = old.is_some_and(|(key, _)| key == written.value);
            if !freed_now {
                return Err(Problem::StillLive {
                    func,
                    ptr: written,
                    since: live.line,
                });
            }
        }
        let no_free_slot = self
            .thread_index
            .get(&call.tid)
            .map_or(true, |&t| self.free_slots[t as usize].is_empty());
        if self.next_slot == NO_SLOT && no_free_slot && old.is_none() {
            return Err(Problem::TooManySlots);
        }
        let thread = self.thread(call.tid);
        let old_slot = match old {
            Some((key, _)) => self.release(thread, key),
            None => NO_SLOT,
        };
        let slot = match self.free_slots[thread as usize].pop() {
            Some(s) => s,
            None => {
                self.next_slot += 1;
                self.next_slot - 1
            }
        };
        self.live.insert(written.value, Live { slot, line: number });
        self.ops.push(Op {
            func,
            thread,
            slot,
            old: old_slot,
            size,
            arg,
        });
        Ok(())
    }

    fn finish(self, lines: u64) -> Result<Trace, TraceError> {
        if let Pid::Is(pid) = self.options.pid {
            if !self.pid_index.contains_key(&pid) {
                return Err(TraceError::PidNotFound {
                    pid,
                    seen: self.pids,
                });
            }
        }
        Ok(Trace {
            ops: self.ops,
            pid: self.selected.unwrap_or(0),
            pids: self.pids,
            threads: self.threads,
            slots: self.next_slot,
            form: self.form.map(|(f, _)| f),
            lines,
            failed_in_recording: self.failed_in_recording,
            skipped: self.skipped,
            skipped_examples: self.skipped_examples,
            live_at_end: self.live.len() as u64,
        })
    }
}

/// Parses a trace from any reader: plain, gzip or zstd.
pub fn read<R: Read>(reader: R, options: &ParseOptions) -> Result<Trace, TraceError> {
    let (_, text) = decoder(reader).map_err(|error| TraceError::Io {
        after_line: 0,
        error,
    })?;
    parse_reader(text, options)
}

/// Parses the trace at `path` (`-` is standard input): plain, gzip or zstd.
pub fn open(path: &Path, options: &ParseOptions) -> Result<Trace, TraceError> {
    if path.as_os_str() == "-" {
        return read(io::stdin().lock(), options);
    }
    let file = File::open(path).map_err(|error| TraceError::Io {
        after_line: 0,
        error,
    })?;
    read(file, options)
}
