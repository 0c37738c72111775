//! Allocation traces in the format of Firefox's logalloc: parsing raw and munged logs
//! (plain, gzip or zstd), the decoded form that `replay` runs, and writing traces back.
//!
//! # The format
//!
//! One call per line, as logalloc writes it:
//!
//! ```text
//! <pid> <tid> <function>(<args>)[=<result>]
//! 18545 18545 malloc(32)=0x7f90495120e0
//! 18545 18546 calloc(4,8)=0x7f9049537480
//! 18545 18545 realloc(0x7f90495120e0,64)=0x7f9049536680
//! 18545 18545 posix_memalign(256,240)=0x7f9049583300
//! 18545 18545 jemalloc_stats()
//! 18545 18546 free(0x7f9049536680)
//! ```
//!
//! | function | arguments | result |
//! |---|---|---|
//! | `malloc`, `valloc` | size | pointer |
//! | `calloc` | count, size | pointer |
//! | `realloc` | pointer, size | pointer |
//! | `posix_memalign`, `aligned_alloc`, `memalign` | alignment, size | pointer |
//! | `free` | pointer | none |
//! | `jemalloc_stats` | none | none |
//!
//! - Sizes, counts, alignments, pids and tids are decimal. The `<tid>` field may be left out
//!   (logalloc's first format): the thread is then the pid.
//! - A **raw** log writes pointers in hexadecimal with `0x`; `0x0`, `0` and `(nil)` are null.
//! - A **munged** log (logalloc_munge.py) writes slot ids `#N` instead of pointers and numbers
//!   pids (and tids) from 1. A slot referred to while it holds nothing stands for null, as in
//!   logalloc-replay (the munger turns `free(0x0)` into the free of a never-used slot).
//! - One form per file. Spaces or tabs separate the fields; blank lines are ignored; a
//!   trailing `\r` is ignored.
//!
//! A raw log is checked as it is read: a pointer must be returned before it is freed or
//! reallocated, and must not be returned again while live. A failed allocation (null result)
//! is counted and not replayed; `realloc(p,0)=0x0` is glibc's free of `p`.
//!
//! Several processes may share one log: one is replayed (`pid`, by default the first seen).
//! Every line is checked for syntax whatever its pid.
//!
//! # Entry points
//!
//! - [`parse`]: plain text bytes (the fuzz target's entry point: any input gives a `Trace` or
//!   a [`TraceError`], never a panic);
//! - [`read`]: any reader, gzip and zstd recognized by their magic numbers;
//! - [`open`]: a path (`-` for standard input);
//! - [`bundled::DEFAULT`]: the trace `alloclab replay` uses when given none;
//! - [`write_munged`]: a decoded trace back to munged text.

pub mod bundled;
mod error;
mod input;
pub(crate) mod mapped;
mod parse;
mod write;

pub use error::{LineError, TraceError};
pub use input::{decoder, Compression};
pub use parse::{open, parse, parse_reader, read, ParseOptions, Pid};
pub use write::{munged_id, write_line, write_munged};

use mapped::{MappedVec, Plain};

/// A function of the malloc family, as named in a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Func {
    /// `malloc(size)`
    Malloc = 0,
    /// `calloc(count, size)`
    Calloc,
    /// `realloc(ptr, size)`
    Realloc,
    /// `free(ptr)`
    Free,
    /// `posix_memalign(alignment, size)`
    PosixMemalign,
    /// `aligned_alloc(alignment, size)`
    AlignedAlloc,
    /// `memalign(alignment, size)`
    Memalign,
    /// `valloc(size)`: page-aligned
    Valloc,
    /// `jemalloc_stats()`: a statistics snapshot
    JemallocStats,
}

impl Func {
    /// Every function, in `index` order.
    pub const ALL: [Func; 9] = [
        Func::Malloc,
        Func::Calloc,
        Func::Realloc,
        Func::Free,
        Func::PosixMemalign,
        Func::AlignedAlloc,
        Func::Memalign,
        Func::Valloc,
        Func::JemallocStats,
    ];

    /// The name a trace uses.
    pub const fn name(self) -> &'static str {
        match self {
            Func::Malloc => "malloc",
            Func::Calloc => "calloc",
            Func::Realloc => "realloc",
            Func::Free => "free",
            Func::PosixMemalign => "posix_memalign",
            Func::AlignedAlloc => "aligned_alloc",
            Func::Memalign => "memalign",
            Func::Valloc => "valloc",
            Func::JemallocStats => "jemalloc_stats",
        }
    }

    /// The function a trace names `name`, if any.
    pub fn from_name(name: &[u8]) -> Option<Func> {
        Func::ALL.into_iter().find(|f| f.name().as_bytes() == name)
    }

    /// Position in [`Func::ALL`] (for per-function counters).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Arguments the function takes.
    pub const fn arity(self) -> usize {
        match self {
            Func::Malloc | Func::Valloc | Func::Free => 1,
            Func::JemallocStats => 0,
            _ => 2,
        }
    }

    /// Whether the function returns a pointer.
    pub const fn returns_pointer(self) -> bool {
        !matches!(self, Func::Free | Func::JemallocStats)
    }
}

/// A slot of the replayer's pointer table; [`NO_SLOT`] is the null pointer.
pub type Slot = u32;

/// The null pointer, where an operation takes or returns a slot.
pub const NO_SLOT: Slot = u32::MAX;

/// Page size assumed by `valloc`.
pub const VALLOC_ALIGN: u64 = 4096;

/// One decoded call. Pointers are slots: dense indices, recycled per thread, so that the
/// replayer's pointer table is as small as the peak number of live allocations allows and a
/// recycled slot never ties two threads together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// The function.
    pub func: Func,
    /// Index of the calling thread in [`Trace::threads`].
    pub thread: u32,
    /// Allocations: the slot that receives the result. `free`: the slot freed ([`NO_SLOT`]:
    /// `free(NULL)`). `jemalloc_stats`: [`NO_SLOT`].
    pub slot: Slot,
    /// `realloc`: the slot reallocated ([`NO_SLOT`]: `realloc(NULL, size)`). Others:
    /// [`NO_SLOT`].
    pub old: Slot,
    /// Bytes requested (`calloc`: the element size).
    pub size: u64,
    /// `calloc`: the element count. Aligned functions: the alignment (`valloc`: 4096).
    /// Others: 0.
    pub arg: u64,
}

// SAFETY: `Op` has no drop glue, holds no pointers, and all-zero bytes are a valid `Op`
// (`Func::Malloc` is discriminant 0).
unsafe impl Plain for Op {}

impl Op {
    /// Bytes the call hands to the program: `count * size` for `calloc` (saturating), the size
    /// otherwise.
    pub fn request(&self) -> u64 {
        if self.func == Func::Calloc {
            self.arg.saturating_mul(self.size)
        } else {
            self.size
        }
    }
}

/// How a trace writes pointers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Hexadecimal addresses, as logalloc records them.
    Raw,
    /// Slot ids `#N`, as logalloc_munge.py writes them.
    Munged,
}

/// A pid seen in a trace and how many lines it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PidLines {
    /// The pid as written.
    pub pid: u64,
    /// Its lines.
    pub lines: u64,
}

/// The calls of one process, decoded and checked, ready to replay.
#[derive(Debug)]
pub struct Trace {
    pub(crate) ops: MappedVec<Op>,
    /// The pid replayed, as written in the trace.
    pub pid: u64,
    /// Every pid seen, in order of first appearance.
    pub pids: Vec<PidLines>,
    /// The replayed process's thread ids as written, in order of first appearance;
    /// [`Op::thread`] indexes this.
    pub threads: Vec<u64>,
    /// Slots the replayer's pointer table needs (one more than the largest slot used).
    pub slots: u32,
    /// How the trace writes pointers (`None` if it names none).
    pub form: Option<Form>,
    /// Lines read, all pids, blank lines included.
    pub lines: u64,
    /// Allocation calls of the replayed pid that failed when recorded (null result): not
    /// replayed.
    pub failed_in_recording: u64,
    /// Bad lines skipped (with [`ParseOptions::skip_bad`]).
    pub skipped: u64,
    /// The first few of those, to show.
    pub skipped_examples: Vec<LineError>,
    /// Allocations still live at the end of the trace.
    pub live_at_end: u64,
}

impl Trace {
    /// The decoded calls, in trace order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The trace's first `len` calls (all of them if it has fewer), as a trace of its own:
    /// a shorter replay of the same program (`compare`'s workloads scale traces this way).
    pub fn prefix(&self, len: usize) -> Trace {
        let len = len.min(self.ops.len());
        let mut ops = MappedVec::zeroed(len, false);
        ops.copy_from_slice(&self.ops[..len]);
        let mut live = vec![false; self.slots as usize];
        let mut live_at_end = 0u64;
        for op in ops.iter() {
            let mut kill = |slot: u32| {
                if slot != NO_SLOT && std::mem::replace(&mut live[slot as usize], false) {
                    live_at_end -= 1;
                }
            };
            match op.func {
                Func::JemallocStats => continue,
                Func::Free => {
                    kill(op.slot);
                    continue;
                }
                Func::Realloc => kill(op.old),
                _ => {}
            }
            if op.slot != NO_SLOT && !std::mem::replace(&mut live[op.slot as usize], true) {
                live_at_end += 1;
            }
        }
        Trace {
            ops,
            pid: self.pid,
            pids: self.pids.clone(),
            threads: self.threads.clone(),
            slots: self.slots,
            form: self.form,
            lines: self.lines,
            failed_in_recording: self.failed_in_recording,
            skipped: self.skipped,
            skipped_examples: self.skipped_examples.clone(),
            live_at_end,
        }
    }

    /// Calls per function, indexed by [`Func::index`].
    pub fn counts(&self) -> [u64; Func::ALL.len()] {
        let mut counts = [0u64; Func::ALL.len()];
        for op in self.ops.iter() {
            counts[op.func.index()] += 1;
        }
        counts
    }

    /// Calls to the allocator (everything but `jemalloc_stats`).
    pub fn allocator_calls(&self) -> u64 {
        self.ops
            .iter()
            .filter(|op| op.func != Func::JemallocStats)
            .count() as u64
    }

    /// Bytes of bookkeeping the decoded calls occupy (mapped, outside any allocator).
    pub fn mapped_bytes(&self) -> usize {
        self.ops.mapped_bytes()
    }
}
