//! What can be wrong with a trace: a line (with its number and the precise problem), the input
//! itself (I/O, decompression), or the choice of pid.

use super::{Form, Func, PidLines};
use std::fmt;

/// A bad line: its number (from 1) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// Line number, counting from 1.
    pub line: u64,
    /// What is wrong.
    pub problem: Problem,
}

/// A pointer as the trace wrote it, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Address (raw) or slot id (munged).
    pub value: u64,
    /// Which of the two.
    pub form: Form,
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.form {
            Form::Raw => write!(f, "{:#x}", self.value),
            Form::Munged => write!(f, "#{}", self.value),
        }
    }
}

/// The problems a line can have.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A field that must be a decimal number is not.
    BadNumber {
        /// Which field.
        field: &'static str,
        /// What was there (shortened).
        text: String,
    },
    /// A number does not fit in 64 bits.
    NumberTooLarge {
        /// Which field.
        field: &'static str,
        /// What was there (shortened).
        text: String,
    },
    /// The line ends before the function call.
    MissingCall,
    /// The call is not `name(arguments)`.
    BadCall {
        /// What was there (shortened).
        text: String,
    },
    /// A function logalloc does not record.
    UnknownFunction {
        /// Its name (shortened).
        name: String,
    },
    /// The wrong number of arguments.
    ArgumentCount {
        /// The function.
        func: Func,
        /// Arguments it takes.
        expected: usize,
        /// Arguments found.
        found: usize,
    },
    /// An allocation without `=<result>`.
    MissingResult {
        /// The function.
        func: Func,
    },
    /// `free` or `jemalloc_stats` with a result.
    UnexpectedResult {
        /// The function.
        func: Func,
    },
    /// Text after the call that is not `=<result>`.
    TrailingText {
        /// What was there (shortened).
        text: String,
    },
    /// A pointer that is neither `0x...`, `#N` nor `(nil)`.
    BadPointer {
        /// What was there (shortened).
        text: String,
    },
    /// A slot id in a raw trace, or an address in a munged one.
    MixedForms {
        /// The form of this pointer.
        found: Form,
        /// The line that set the trace's form.
        since: u64,
    },
    /// An alignment that is not a power of two, in a call that succeeded.
    AlignmentNotPowerOfTwo {
        /// The function.
        func: Func,
        /// The alignment.
        align: u64,
    },
    /// `calloc(count, size)` whose product overflows, in a call that succeeded.
    CallocOverflow {
        /// Element count.
        count: u64,
        /// Element size.
        size: u64,
    },
    /// A raw trace frees or reallocates a pointer that no earlier line returned (or that was
    /// freed already).
    NotLive {
        /// The function.
        func: Func,
        /// The pointer.
        ptr: Written,
    },
    /// A pointer returned while an earlier allocation at the same place is still live.
    StillLive {
        /// The function.
        func: Func,
        /// The pointer or slot.
        ptr: Written,
        /// The line that returned it before.
        since: u64,
    },
    /// More live allocations than the replayer's slot table can number.
    TooManySlots,
    /// More threads than the replayer can number.
    TooManyThreads,
    /// A line longer than the parser accepts.
    LineTooLong {
        /// The limit in bytes.
        max: usize,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::BadNumber { field, text } => {
                write!(f, "{field}: expected a decimal number, found `{text}`")
            }
            Problem::NumberTooLarge { field, text } => {
                write!(f, "{field}: `{text}` does not fit in 64 bits")
            }
            Problem::MissingCall => write!(f, "expected `<pid> <tid> <function>(<args>)`"),
            Problem::BadCall { text } => {
                write!(f, "expected `<function>(<args>)`, found `{text}`")
            }
            Problem::UnknownFunction { name } => write!(
                f,
                "unknown function `{name}` (logalloc records malloc, calloc, realloc, free, \
                 posix_memalign, aligned_alloc, memalign, valloc, jemalloc_stats)"
            ),
            Problem::ArgumentCount {
                func,
                expected,
                found,
            } => write!(
                f,
                "{} takes {expected} argument{}, found {found}",
                func.name(),
                if *expected == 1 { "" } else { "s" }
            ),
            Problem::MissingResult { func } => {
                write!(f, "{} needs a result: `=<pointer>`", func.name())
            }
            Problem::UnexpectedResult { func } => {
                write!(
                    f,
                    "{} returns nothing, but the line gives a result",
                    func.name()
                )
            }
            Problem::TrailingText { text } => {
                write!(
                    f,
                    "unexpected `{text}` after the call (expected `=<pointer>`)"
                )
            }
            Problem::BadPointer { text } => write!(
                f,
                "expected a pointer (`0x<hex>`, `#<slot>` or `(nil)`), found `{text}`"
            ),
            Problem::MixedForms { found, since } => match found {
                Form::Munged => write!(
                    f,
                    "slot id in a raw trace (line {since} gave a hexadecimal address)"
                ),
                Form::Raw => write!(
                    f,
                    "hexadecimal address in a munged trace (line {since} gave a slot id)"
                ),
            },
            Problem::AlignmentNotPowerOfTwo { func, align } => write!(
                f,
                "{}: alignment {align} is not a power of two",
                func.name()
            ),
            Problem::CallocOverflow { count, size } => {
                write!(f, "calloc({count},{size}): the product overflows 64 bits")
            }
            Problem::NotLive { func, ptr } => write!(
                f,
                "{}({ptr}): no earlier line returned this pointer, or it was freed already",
                func.name()
            ),
            Problem::StillLive { func, ptr, since } => write!(
                f,
                "{} returned {ptr}, which line {since} returned and no line freed since \
                 (a free is missing from the trace)",
                func.name()
            ),
            Problem::TooManySlots => write!(f, "more live allocations than the replayer can hold"),
            Problem::TooManyThreads => write!(f, "more threads than the replayer can hold"),
            Problem::LineTooLong { max } => write!(f, "line longer than {max} bytes"),
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

impl std::error::Error for LineError {}

/// Why a trace could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// A bad line.
    Line(LineError),
    /// Reading or decompressing failed.
    Io {
        /// Lines read before the failure.
        after_line: u64,
        /// The failure.
        error: std::io::Error,
    },
    /// The pid asked for does not appear.
    PidNotFound {
        /// The pid asked for.
        pid: u64,
        /// The pids that do appear.
        seen: Vec<PidLines>,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Line(e) => e.fmt(f),
            TraceError::Io { after_line, error } => {
                write!(f, "after line {after_line}: {error}")
            }
            TraceError::PidNotFound { pid, seen } => {
                write!(f, "pid {pid} does not appear in the trace; ")?;
                if seen.is_empty() {
                    return write!(f, "the trace has no calls");
                }
                write!(f, "it has ")?;
                for (i, p) in seen.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    let s = if p.lines == 1 { "" } else { "s" };
                    write!(f, "{sep}pid {} ({} line{s})", p.pid, p.lines)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Line(e) => Some(e),
            TraceError::Io { error, .. } => Some(error),
            TraceError::PidNotFound { .. } => None,
        }
    }
}

impl From<LineError> for TraceError {
    fn from(e: LineError) -> Self {
        TraceError::Line(e)
    }
}

/// At most this many bytes of offending text go into a message, escaped.
const SNIPPET: usize = 40;

/// `bytes` shortened and escaped for a message.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(SNIPPET)];
    let mut s: String = cut.escape_ascii().to_string();
    if bytes.len() > SNIPPET {
        s.push_str("...");
    }
    s
}
